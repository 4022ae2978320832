package oci

import (
	"archive/tar"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
)

// MaxEntrySizeEnv names the variable that sets the largest regular file a
// layer may hold (bytes, or a number with K, M, G or T for KiB … TiB). It
// is for the rare image that really holds a file beyond the default.
const MaxEntrySizeEnv = "SSEBENCH_MAX_ENTRY_SIZE"

// DefaultMaxEntrySize is the largest regular file a layer may hold unless
// MaxEntrySizeEnv says otherwise: 64 GiB, beyond the largest files real
// images carry (model weights come in shards of a few GiB). A tar header
// can claim up to 8 EiB, and a sparse entry (or a compression bomb) makes
// that claim cheap: a layer of 10 KB whose one file every applier, hasher
// and copier would read for ever.
const DefaultMaxEntrySize int64 = 64 << 30

// maxSparseBytes bounds what the sparse entries of one layer may expand
// to, in all. No builder writes sparse entries (BuildKit, Docker and
// go-containerregistry never do; only GNU tar --sparse does), so a layer
// that holds more than a few holes' worth is a bomb: its holes cost
// nothing to send and everything to apply.
const maxSparseBytes int64 = 1 << 30

// MaxEntrySize returns the largest regular file a layer may hold:
// MaxEntrySizeEnv when it is set and valid, else DefaultMaxEntrySize.
func MaxEntrySize() int64 {
	if n, err := parseSize(os.Getenv(MaxEntrySizeEnv)); err == nil && n > 0 {
		return n
	}
	return DefaultMaxEntrySize
}

// parseSize reads "1048576", "512M", "64G", "1T" (binary units).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I"))
	shift := 0
	if s != "" {
		switch s[len(s)-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		case 'T':
			shift = 40
		}
		if shift > 0 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return n << shift, nil
}

// sizeGuard checks the sizes of one layer's entries, in tar order.
type sizeGuard struct {
	max    int64
	sparse int64 // logical bytes of the sparse entries so far
}

func newSizeGuard() *sizeGuard { return &sizeGuard{max: MaxEntrySize()} }

// IsSparse reports whether hdr is a GNU sparse file in one of its PAX
// forms (0.0, 0.1, 1.0): archive/tar then reports it as a regular file of
// its logical size, filling the holes with zeros as it is read. (The old
// GNU form, type 'S', is refused as an unsupported entry type.)
func IsSparse(hdr *tar.Header) bool {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// check refuses an entry whose size no real tree has, and sparse entries
// that expand beyond sense.
func (g *sizeGuard) check(hdr *tar.Header) error {
	if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeRegA && hdr.Typeflag != tar.TypeGNUSparse {
		return nil
	}
	if hdr.Size > g.max {
		return fmt.Errorf("entry %q: a file of %s (%d bytes), more than any real image holds (the limit is %s; set %s to raise it)", shorten(hdr.Name), units.Bytes(hdr.Size), hdr.Size, units.Bytes(g.max), MaxEntrySizeEnv)
	}
	if IsSparse(hdr) {
		g.sparse += hdr.Size
		if g.sparse > maxSparseBytes {
			return fmt.Errorf("entry %q: a sparse file of %s, which brings the layer's sparse files to more than %s: no builder writes such holes, and applying them costs what sending them did not", shorten(hdr.Name), units.Bytes(hdr.Size), units.Bytes(maxSparseBytes))
		}
	}
	return nil
}
