package archive

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// Load reads an image archive (as Save writes it, or any OCI image layout
// in a tar) from r into the store of WithStore. Every blob is verified
// against its digest while it is read and written to the store
// atomically; the images are tagged only at the end, once every blob of
// every image is in the store, so a truncated or tampered archive tags
// nothing and fails with one line naming the blob. Blobs the archive left
// out (save --since) must be in the store already.
//
// When r is a file (an io.ReaderAt and io.Seeker, as *os.File is), Load
// first reads the archive's headers, index.json and manifests, without
// writing anything, and checks every entry's graph (the caps of
// oci.WalkManifests, names, missing blobs, sizes): an archive refused for
// any of these leaves the store as it was. It then writes only the blobs
// the entries reach. A tar entry the archive cannot really hold (a sparse
// file, a size beyond oci.MaxEntrySize) is refused before it is read.
func Load(ctx context.Context, r io.Reader, opts ...Option) (*Report, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	s := o.store
	if s == nil {
		return nil, errors.New("loading an archive needs a local image store: see WithStore")
	}
	unlock, err := s.HoldGC(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	// needed is nil when r cannot be read twice: then every blob is
	// written, and the graph is checked once they are.
	var needed map[v1.Hash]bool
	if f, ok := r.(readSeekerAt); ok {
		if start, err := f.Seek(0, io.SeekCurrent); err == nil {
			end, err := f.Seek(0, io.SeekEnd)
			if err == nil && end >= start {
				if needed, err = survey(ctx, io.NewSectionReader(f, start, end-start), o); err != nil {
					return nil, err
				}
			}
			if _, err := f.Seek(start, io.SeekStart); err != nil {
				return nil, fmt.Errorf("reading the archive again: %w", err)
			}
		}
	}

	rep := &Report{}
	index, err := scan(ctx, r, func(h v1.Hash, hdr *tar.Header, tr io.Reader) error {
		rep.Blobs++
		rep.Bytes += hdr.Size
		if needed != nil && !needed[h] {
			return nil // no entry reaches it: not ours to keep
		}
		stored, err := loadBlob(ctx, s, tr, h, hdr.Size)
		if err != nil {
			return err
		}
		if stored {
			rep.Stored++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.Registry = index.Annotations[AnnotationArchiveRegistry]
	omitted := omittedBlobs(index)
	rep.Omitted = len(omitted)
	inStore := blobSource{has: s.HasBlob, read: func(d v1.Descriptor, image string) ([]byte, error) { return s.ReadBlob(d.Digest, d.Size, image) }}
	entries, omittedSizes, err := checkEntries(ctx, o, index, inStore, omitted, nil)
	if err != nil {
		return nil, err
	}
	for _, n := range omittedSizes {
		rep.OmittedBytes += n
	}
	refs, descs := make([]name.Reference, 0, len(entries)), make([]v1.Descriptor, 0, len(entries))
	for _, e := range entries {
		d := e.desc
		d.Annotations = nil
		refs, descs = append(refs, e.ref), append(descs, d)
		rep.Images = append(rep.Images, ArchivedImage{Name: e.ref.Name(), Descriptor: d})
	}
	for _, e := range entries {
		if old, err := s.Descriptor(e.ref); err == nil && old.Digest != e.desc.Digest {
			rep.Replaced = append(rep.Replaced, Replacement{Name: e.ref.Name(), Old: old.Digest, New: e.desc.Digest})
		}
	}
	if err := s.SetEntries(ctx, refs, descs); err != nil {
		return nil, err
	}
	sort.SliceStable(rep.Images, func(i, j int) bool { return rep.Images[i].Name < rep.Images[j].Name })
	return rep, nil
}

// readSeekerAt is what Load reads twice: a file.
type readSeekerAt interface {
	io.ReaderAt
	io.Seeker
}

// scan reads the archive's tar stream, checks oci-layout, reads index.json
// and passes each blob entry to blob (its digest, header and content). It
// refuses an entry no archive really holds before its content is read.
func scan(ctx context.Context, r io.Reader, blob func(h v1.Hash, hdr *tar.Header, content io.Reader) error) (*v1.IndexManifest, error) {
	var index *v1.IndexManifest
	layout := false
	tr := tar.NewReader(r)
	var current string // the entry being read, for errors
	maxSize := oci.MaxEntrySize()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if current != "" {
				return nil, fmt.Errorf("the archive is damaged after %s: %w", current, err)
			}
			return nil, fmt.Errorf("the archive is damaged: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		current = name
		// Save writes plain files; a sparse entry (GNU tar --sparse)
		// of a few bytes would stand for gigabytes of zeros written to
		// the store.
		if oci.IsSparse(hdr) || hdr.Typeflag == tar.TypeGNUSparse {
			return nil, fmt.Errorf("the archive's %q is a sparse file of %s: image archives hold plain files; refused", shortName(name), units.Bytes(hdr.Size))
		}
		if hdr.Size > maxSize {
			return nil, fmt.Errorf("the archive's %q is %s, more than any image holds (the limit is %s; set %s to raise it); refused", shortName(name), units.Bytes(hdr.Size), units.Bytes(maxSize), oci.MaxEntrySizeEnv)
		}
		switch {
		case hdr.Typeflag == tar.TypeDir:
		case name == layoutFile:
			b, err := io.ReadAll(io.LimitReader(tr, 4096))
			if err != nil {
				return nil, fmt.Errorf("the archive is truncated in %s: %w", layoutFile, err)
			}
			var l struct {
				Version string `json:"imageLayoutVersion"`
			}
			if json.Unmarshal(b, &l) != nil || l.Version != "1.0.0" {
				return nil, fmt.Errorf("the archive's %s is %q: expected image layout version 1.0.0", layoutFile, b)
			}
			layout = true
		case name == indexFile:
			im, err := v1.ParseIndexManifest(io.LimitReader(oci.ContextReader(ctx, tr), maxManifestSize))
			if err != nil {
				return nil, fmt.Errorf("the archive's index.json is damaged: %w", err)
			}
			index = im
		default:
			h, ok := blobName(name)
			if !ok || hdr.Typeflag != tar.TypeReg {
				continue // other files are not ours to read
			}
			current = h.String()
			if err := blob(h, hdr, tr); err != nil {
				return nil, err
			}
		}
	}
	if index == nil || !layout {
		missing := indexFile
		if index != nil {
			missing = layoutFile
		}
		return nil, fmt.Errorf("the archive has no %s: it is truncated or not an image archive", missing)
	}
	return index, nil
}

// shortName keeps a hostile entry name short in a message.
func shortName(n string) string {
	if len(n) > 100 {
		return n[:100] + "…"
	}
	return n
}

// survey reads the archive at sr without writing anything: where each
// blob is, index.json, and every entry's graph (read from the archive, or
// from the store for what the archive leaves out), checked as Load checks
// it at the end. It returns the blobs the entries reach.
func survey(ctx context.Context, sr *io.SectionReader, o *options) (map[v1.Hash]bool, error) {
	type at struct{ off, size int64 }
	blobs := map[v1.Hash]at{}
	index, err := scan(ctx, sr, func(h v1.Hash, hdr *tar.Header, _ io.Reader) error {
		off, err := sr.Seek(0, io.SeekCurrent)
		if err != nil {
			return err
		}
		if off+hdr.Size > sr.Size() {
			return archiveBlobError(h, io.ErrUnexpectedEOF)
		}
		if _, ok := blobs[h]; !ok {
			blobs[h] = at{off, hdr.Size}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s := o.store
	src := blobSource{
		has: func(h v1.Hash) bool { _, ok := blobs[h]; return ok || s.HasBlob(h) },
		read: func(d v1.Descriptor, image string) ([]byte, error) {
			b, ok := blobs[d.Digest]
			if !ok {
				return s.ReadBlob(d.Digest, d.Size, image)
			}
			if b.size > store.MaxManifestSize {
				return nil, fmt.Errorf("blob %s of %s is %s, too large for a manifest", d.Digest, image, units.Bytes(b.size))
			}
			raw := make([]byte, b.size)
			if _, err := sr.ReadAt(raw, b.off); err != nil {
				return nil, archiveBlobError(d.Digest, err)
			}
			if got := sha256.Sum256(raw); hex.EncodeToString(got[:]) != d.Digest.Hex {
				return nil, fmt.Errorf("blob %s in the archive is corrupt (it has digest sha256:%x)", d.Digest, got)
			}
			return raw, nil
		},
		size: func(h v1.Hash) (int64, bool) { b, ok := blobs[h]; return b.size, ok },
	}
	needed := map[v1.Hash]bool{}
	if _, _, err := checkEntries(ctx, o, index, src, omittedBlobs(index), needed); err != nil {
		return nil, err
	}
	return needed, nil
}

// blobSource is where checkEntries finds blobs: has reports whether a
// blob is there, read returns a manifest's bytes, and size (when not nil)
// the size of a blob the archive holds.
type blobSource struct {
	has  func(v1.Hash) bool
	read func(d v1.Descriptor, image string) ([]byte, error)
	size func(v1.Hash) (int64, bool)
}

// loadEntry is one index.json entry of an archive.
type loadEntry struct {
	ref  name.Reference
	desc v1.Descriptor
}

// omittedBlobs returns the blobs index.json says the archive left out.
func omittedBlobs(index *v1.IndexManifest) map[string]bool {
	omitted := map[string]bool{}
	for _, d := range strings.Fields(index.Annotations[AnnotationArchiveOmitted]) {
		omitted[d] = true
	}
	return omitted
}

// checkEntries checks each entry of index (its name, that it may replace
// what the store has under it, and that src holds every blob its graph
// reaches, under one budget) and returns them, with the size of each
// omitted blob they need. With needed, it records every blob reached.
func checkEntries(ctx context.Context, o *options, index *v1.IndexManifest, src blobSource, omitted map[string]bool, needed map[v1.Hash]bool) ([]loadEntry, map[string]int64, error) {
	s := o.store
	var entries []loadEntry
	// The entries' walks share what they visited: entries that name one
	// graph (or each other's) read it once, under one cap.
	seen, budget := map[string]bool{}, oci.NewBudget(oci.MaxStoreNodes)
	// The index lists the omitted blobs by digest only; their sizes are
	// in the manifests that name them.
	omittedSizes := map[string]int64{}
	for _, d := range index.Manifests {
		n := store.EntryName(d)
		if n == "" {
			return nil, nil, fmt.Errorf("index.json entry %s has no %s annotation: cannot tell which name to load it under", d.Digest, store.AnnotationRefName)
		}
		if o.checkName != nil {
			if err := o.checkName(n); err != nil {
				return nil, nil, fmt.Errorf("index.json entry %s: %w", d.Digest, err)
			}
		}
		ref, err := name.ParseReference(n)
		if err != nil {
			return nil, nil, fmt.Errorf("index.json entry %s: %w", d.Digest, err)
		}
		if err := checkComplete(ctx, src, d, ref.Name(), omitted, omittedSizes, needed, oci.WithSeen(seen), oci.WithBudget(budget)); err != nil {
			return nil, nil, err
		}
		if old, err := s.Descriptor(ref); err == nil && old.Digest != d.Digest {
			if o.protected != nil && o.protected(ref.Name()) && !o.force {
				return nil, nil, fmt.Errorf("the archive would replace %s (%s in the store) with %s: pass --force to replace a runtime or tool image", ref.Name(), old.Digest, d.Digest)
			}
		}
		entries = append(entries, loadEntry{ref: ref, desc: d})
	}
	return entries, omittedSizes, nil
}

// loadBlob verifies one blob of the archive and puts it into the store. It
// reports whether the store lacked it.
func loadBlob(ctx context.Context, s *store.Store, r io.Reader, h v1.Hash, size int64) (bool, error) {
	if s.HasBlob(h) {
		// Still read and check it: a tampered archive is an error
		// even when the store could do without its copy.
		d := sha256.New()
		n, err := io.Copy(d, oci.ContextReader(ctx, r))
		if err != nil {
			return false, archiveBlobError(h, err)
		}
		if got := hex.EncodeToString(d.Sum(nil)); got != h.Hex || n != size {
			return false, fmt.Errorf("blob %s in the archive is corrupt (it has digest sha256:%s)", h, got)
		}
		return false, nil
	}
	if _, _, err := s.PutBlob(ctx, r, h, size); err != nil {
		if errors.Is(err, store.ErrCorruptBlob) {
			return false, fmt.Errorf("blob %s in the archive is corrupt (%v)", h, err)
		}
		return false, archiveBlobError(h, err)
	}
	return true, nil
}

func archiveBlobError(h v1.Hash, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("the archive is truncated inside blob %s", h)
	}
	return fmt.Errorf("reading blob %s from the archive: %w", h, err)
}

// checkComplete makes sure src holds every blob the entry d needs, and
// records in omittedSizes the size of each omitted blob it needs (and in
// needed, when not nil, every blob it reaches).
func checkComplete(ctx context.Context, src blobSource, d v1.Descriptor, image string, omitted map[string]bool, omittedSizes map[string]int64, needed map[v1.Hash]bool, opts ...oci.WalkOption) error {
	read := func(d v1.Descriptor) ([]byte, error) { return src.read(d, image) }
	return oci.WalkManifests(ctx, d, image, read, func(d v1.Descriptor, manifest bool) error {
		if omitted[d.Digest.String()] {
			omittedSizes[d.Digest.String()] = d.Size
		}
		if !src.has(d.Digest) {
			if omitted[d.Digest.String()] {
				return fmt.Errorf("blob %s of %s was left out of the archive (saved with --since) and is not in the store: load the earlier archive first", d.Digest, image)
			}
			return fmt.Errorf("blob %s of %s is missing from the archive", d.Digest, image)
		}
		if src.size != nil {
			if n, ok := src.size(d.Digest); ok && d.Size >= 0 && n != d.Size {
				return fmt.Errorf("blob %s of %s has %d bytes in the archive, but its descriptor says %d: the archive is damaged or forged", d.Digest, image, n, d.Size)
			}
		}
		if manifest && !d.MediaType.IsIndex() && !d.MediaType.IsImage() {
			return fmt.Errorf("entry %s of %s has media type %q, which is neither an image nor an index", d.Digest, image, d.MediaType)
		}
		if needed != nil {
			needed[d.Digest] = true
		}
		return nil
	}, opts...)
}
