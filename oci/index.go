package oci

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const (
	// whiteoutPrefix marks a removal: ".wh.<name>" removes <name> from the
	// lower layers.
	whiteoutPrefix = ".wh."
	// whiteoutMetaPrefix marks entries that are markers for the applier,
	// never files.
	whiteoutMetaPrefix = whiteoutPrefix + whiteoutPrefix
	// whiteoutOpaque makes its directory opaque: the lower layers' children
	// of the directory are hidden.
	whiteoutOpaque = whiteoutMetaPrefix + ".opq"
	// paxXattrPrefix prefixes the PAX records that carry extended attributes.
	paxXattrPrefix = "SCHILY.xattr."
)

// IndexFormat is the version of the LayerIndex encoding. A cache keyed by
// layer digest must also key (or invalidate) by IndexFormat: Merge refuses
// an index of another format.
const IndexFormat = 1

// Marker says whether an index entry is a whiteout marker.
type Marker uint8

const (
	// NotMarker is an ordinary entry: a file, directory, link or device.
	NotMarker Marker = iota
	// Whiteout removes Name from the lower layers (the tar entry was
	// "<dir>/.wh.<base>", Name is "<dir>/<base>").
	Whiteout
	// Opaque hides the lower layers' children of directory Name (the tar
	// entry was "<Name>/.wh..wh..opq"; Name is "" for the root).
	Opaque
)

// String returns "", "whiteout" or "opaque".
func (m Marker) String() string {
	switch m {
	case NotMarker:
		return ""
	case Whiteout:
		return "whiteout"
	case Opaque:
		return "opaque"
	}
	return fmt.Sprintf("Marker(%d)", uint8(m))
}

// MarshalText implements encoding.TextMarshaler.
func (m Marker) MarshalText() ([]byte, error) {
	if m > Opaque {
		return nil, fmt.Errorf("unknown marker %d", uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Marker) UnmarshalText(b []byte) error {
	switch string(b) {
	case "":
		*m = NotMarker
	case "whiteout":
		*m = Whiteout
	case "opaque":
		*m = Opaque
	default:
		return fmt.Errorf("unknown layer index marker %q", b)
	}
	return nil
}

// Header is the normalised metadata of a tar entry: what an applier uses
// when it creates the file. Names, user and group names, access and change
// times, and PAX records other than extended attributes are not kept.
type Header struct {
	// Typeflag is one of tar.TypeReg, TypeLink, TypeSymlink, TypeChar,
	// TypeBlock, TypeDir, TypeFifo (TypeRegA is read as TypeReg).
	Typeflag byte `json:"type"`
	// Mode holds the permission, setuid, setgid and sticky bits (07777).
	Mode int64 `json:"mode"`
	Uid  int   `json:"uid"`
	Gid  int   `json:"gid"`
	// Size is the content size of a regular file, 0 for other types.
	Size int64 `json:"size,omitempty"`
	// Linkname is a symlink's target as written, or a hard link's target
	// as a clean path relative to the root.
	Linkname string    `json:"linkname,omitempty"`
	ModTime  time.Time `json:"mtime"`
	Devmajor int64     `json:"devmajor,omitempty"`
	Devminor int64     `json:"devminor,omitempty"`
	// Xattrs maps extended attribute names ("security.capability") to
	// values, from the entry's SCHILY.xattr PAX records. Values are bytes,
	// not strings, because many are binary (file capabilities are); JSON
	// carries them as base64.
	Xattrs map[string][]byte `json:"xattrs,omitempty"`
}

// TarHeader returns a tar header with h's metadata and the given name, for
// writing the entry again (for example through LayerWriter).
func (h *Header) TarHeader(name string) *tar.Header {
	t := &tar.Header{
		Typeflag: h.Typeflag,
		Name:     name,
		Mode:     h.Mode,
		Uid:      h.Uid,
		Gid:      h.Gid,
		Size:     h.Size,
		Linkname: h.Linkname,
		ModTime:  h.ModTime,
		Devmajor: h.Devmajor,
		Devminor: h.Devminor,
		Format:   tar.FormatPAX,
	}
	if len(h.Xattrs) > 0 {
		t.PAXRecords = make(map[string]string, len(h.Xattrs))
		for k, v := range h.Xattrs {
			t.PAXRecords[paxXattrPrefix+k] = string(v)
		}
	}
	return t
}

// IsDir reports whether h describes a directory.
func (h *Header) IsDir() bool { return h.Typeflag == tar.TypeDir }

// IndexEntry is one entry of a layer as IndexLayer records it.
type IndexEntry struct {
	// Name is the clean path relative to the root ("usr/bin/env"), with no
	// leading "/" or "./" and no trailing "/". For a marker it is the path
	// the marker applies to (see Marker).
	Name   string `json:"name"`
	Marker Marker `json:"marker,omitempty"`
	Header
}

// TarName returns the entry's name as a tar member, for messages:
// Name for an ordinary entry, the ".wh." name for a marker.
func (e *IndexEntry) TarName() string {
	switch e.Marker {
	case Whiteout:
		dir, base := path.Split(e.Name)
		return dir + whiteoutPrefix + base
	case Opaque:
		return path.Join(e.Name, whiteoutOpaque)
	}
	return e.Name
}

// LayerIndex records what one layer contains: its entries' normalised
// headers in tar order, never their content. It depends only on the layer's
// bytes, so a cache can store it (as JSON) keyed by Digest and IndexFormat.
type LayerIndex struct {
	// Format is IndexFormat when the index was made.
	Format int `json:"format"`
	// Digest is the digest of the layer's compressed blob.
	Digest string `json:"digest"`
	// DiffID is the digest of the uncompressed tar stream, as read: what
	// an image config's rootfs.diff_ids must say of the layer. Empty in
	// an index made before it was recorded.
	DiffID string `json:"diff_id,omitempty"`
	// entries are the layer's entries in tar order (Len, Entry, Append),
	// packed. Entries that an applier ignores are left out: the root
	// directory itself, PAX global headers, and the AUFS metadata under
	// ".wh..wh." names other than the opaque marker. JSON carries them as
	// the list "entries" of IndexEntry.
	entries packedEntries
}

// NewLayerIndex returns an index of format IndexFormat of the layer with
// the given digest, holding entries (see Append).
func NewLayerIndex(digest string, entries ...IndexEntry) (*LayerIndex, error) {
	idx := &LayerIndex{Format: IndexFormat, Digest: digest}
	idx.entries.listed = entries != nil
	for i := range entries {
		if err := idx.Append(entries[i]); err != nil {
			return nil, err
		}
	}
	idx.entries.done()
	return idx, nil
}

// Len returns the number of entries.
func (idx *LayerIndex) Len() int { return idx.entries.len() }

// Entry returns entry i (0 <= i < Len). Its strings and Xattrs are shared
// with the index: treat them as read-only.
func (idx *LayerIndex) Entry(i int) IndexEntry { return idx.entries.entry(i) }

// Entries returns every entry, for tests and small layers: a large
// layer's entries take far more memory this way than in the index.
func (idx *LayerIndex) Entries() []IndexEntry {
	if idx.entries.len() == 0 {
		if idx.entries.listed {
			return []IndexEntry{}
		}
		return nil
	}
	out := make([]IndexEntry, idx.entries.len())
	for i := range out {
		out[i] = idx.entries.entry(i)
	}
	return out
}

// Append adds e after the last entry. It fails only for a name or link
// target of 64 KiB or more, or for more than 4 GiB of names.
func (idx *LayerIndex) Append(e IndexEntry) error { return idx.entries.add(&e) }

// IndexLayer reads l's tar stream once (decompressing it once, extracting
// nothing) and records its entries. While reading it checks the blob
// against l's digest, so a corrupt or truncated blob is an error that
// names the layer.
//
// Entries an applier could not apply safely are rejected, with an error
// naming the layer and the entry: a name or hard link target that climbs
// above the root, a malformed whiteout, an unsupported entry type.
func IndexLayer(ctx context.Context, l v1.Layer) (*LayerIndex, error) {
	idx, _, err := IndexLayerCapture(ctx, l, nil)
	return idx, err
}

// IndexLayerCapture is IndexLayer that also keeps the content of the
// regular files want accepts (given the entry's clean name and size), keyed
// by name; when one layer holds a name twice the last entry's content is
// kept, as an applier would. It saves a second pass over a layer for the
// few small files a caller needs (account files, .gitignore files); want
// must bound what it accepts, since the content is held in memory.
func IndexLayerCapture(ctx context.Context, l v1.Layer, want func(name string, size int64) bool) (*LayerIndex, map[string][]byte, error) {
	idx, files, err := indexLayer(ctx, l, want)
	if err != nil {
		return nil, nil, err
	}
	return idx, files, nil
}

func indexLayer(ctx context.Context, l v1.Layer, want func(name string, size int64) bool) (*LayerIndex, map[string][]byte, error) {
	var files map[string][]byte
	s, err := openLayerStream(ctx, l, true)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	idx := &LayerIndex{Format: IndexFormat, Digest: s.digest.String()}
	sizes := newSizeGuard()
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		hdr, err := s.tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, s.readError(err)
		}
		if err := sizes.check(hdr); err != nil {
			return nil, nil, fmt.Errorf("layer %s: %w", s.digest, err)
		}
		e, keep, err := indexEntry(hdr)
		if err != nil {
			return nil, nil, fmt.Errorf("layer %s: %w", s.digest, err)
		}
		if !keep {
			continue
		}
		if err := idx.Append(e); err != nil {
			return nil, nil, fmt.Errorf("layer %s: %w", s.digest, err)
		}
		if e.Marker == NotMarker && files != nil {
			// A later entry of the same name replaces the earlier one,
			// captured or not.
			delete(files, e.Name)
		}
		if want != nil && e.Marker == NotMarker && e.Typeflag == tar.TypeReg && want(e.Name, e.Size) {
			b, err := io.ReadAll(s.tr)
			if err != nil {
				return nil, nil, s.readError(err)
			}
			if files == nil {
				files = map[string][]byte{}
			}
			files[e.Name] = b
		}
	}
	if err := s.verify(true); err != nil {
		return nil, nil, err
	}
	idx.DiffID = s.diffID()
	idx.entries.done()
	return idx, files, nil
}

// indexEntry normalises one tar header. keep is false for entries an
// applier ignores.
func indexEntry(hdr *tar.Header) (e IndexEntry, keep bool, err error) {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return e, false, nil
	}
	name, err := cleanName(hdr.Name)
	if err != nil {
		return e, false, fmt.Errorf("entry %q: %w", shorten(hdr.Name), err)
	}
	if err := checkLength("its name", name); err != nil {
		return e, false, fmt.Errorf("entry %q: %w", shorten(hdr.Name), err)
	}
	if name == "" {
		// Appliers skip the root: its metadata comes from the runtime.
		return e, false, nil
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	for _, c := range strings.Split(dir, "/") {
		if strings.HasPrefix(c, whiteoutMetaPrefix) {
			// Inside AUFS metadata such as ".wh..wh.plnk/": not files.
			return e, false, nil
		}
		if strings.HasPrefix(c, whiteoutPrefix) {
			return e, false, fmt.Errorf("entry %q: a directory name starting with %q is reserved for whiteouts", hdr.Name, whiteoutPrefix)
		}
	}
	switch {
	case base == whiteoutOpaque:
		return IndexEntry{Name: dir, Marker: Opaque}, true, nil
	case strings.HasPrefix(base, whiteoutMetaPrefix):
		// Other AUFS metadata (".wh..wh.aufs", ".wh..wh.plnk"): ignored,
		// as containerd and Docker do.
		return e, false, nil
	case strings.HasPrefix(base, whiteoutPrefix):
		orig := base[len(whiteoutPrefix):]
		if orig == "" || orig == "." || orig == ".." {
			return e, false, fmt.Errorf("entry %q: invalid whiteout name", hdr.Name)
		}
		return IndexEntry{Name: path.Join(dir, orig), Marker: Whiteout}, true, nil
	}

	h := Header{
		Typeflag: hdr.Typeflag,
		Mode:     hdr.Mode & 07777,
		Uid:      hdr.Uid,
		Gid:      hdr.Gid,
		ModTime:  hdr.ModTime.UTC(),
	}
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeRegA:
		h.Typeflag = tar.TypeReg
		h.Size = hdr.Size
	case tar.TypeDir, tar.TypeFifo:
	case tar.TypeSymlink:
		// The kernel refuses a symlink target of PATH_MAX bytes or more.
		if len(hdr.Linkname) >= PathMax {
			return e, false, fmt.Errorf("entry %q: symlink target is %d bytes long: beyond PATH_MAX (%d), no runtime can unpack it", shorten(hdr.Name), len(hdr.Linkname), PathMax)
		}
		h.Linkname = hdr.Linkname
	case tar.TypeLink:
		target, err := cleanName(hdr.Linkname)
		if err != nil {
			return e, false, fmt.Errorf("entry %q: hard link target %q: %w", hdr.Name, hdr.Linkname, err)
		}
		if target == "" {
			return e, false, fmt.Errorf("entry %q: hard link to the root directory", hdr.Name)
		}
		if err := checkLength("its hard link target", target); err != nil {
			return e, false, fmt.Errorf("entry %q: %w", shorten(hdr.Name), err)
		}
		h.Linkname = target
	case tar.TypeChar, tar.TypeBlock:
		h.Devmajor, h.Devminor = hdr.Devmajor, hdr.Devminor
	default:
		// containerd refuses these too ("unhandled tar header type").
		return e, false, fmt.Errorf("entry %q: unsupported tar entry type %q", hdr.Name, hdr.Typeflag)
	}
	for k, v := range hdr.PAXRecords {
		if x, ok := strings.CutPrefix(k, paxXattrPrefix); ok {
			if h.Xattrs == nil {
				h.Xattrs = make(map[string][]byte)
			}
			h.Xattrs[x] = []byte(v)
		}
	}
	return IndexEntry{Name: name, Header: h}, true, nil
}

// layerStream is a layer's tar stream read from its compressed blob, with
// the blob's bytes hashed on the way so that verify can compare them with
// the digest.
type layerStream struct {
	ctx    context.Context
	digest v1.Hash
	size   int64 // -1 when unknown
	raw    io.ReadCloser
	hashed *hashingReader
	tarRC  io.ReadCloser
	// untar hashes the uncompressed stream, for the diffID.
	untar *hashingReader
	tr    *tar.Reader
}

// openLayerStream opens l's tar stream; with diffID it also hashes the
// stream for the diffID, which ReadFiles does not need: a tool assembly
// reads its source tree's layer a second time, and that sha256 bought
// nothing.
func openLayerStream(ctx context.Context, l v1.Layer, diffID bool) (*layerStream, error) {
	digest, err := l.Digest()
	if err != nil {
		return nil, fmt.Errorf("getting layer digest: %w", err)
	}
	size, err := l.Size()
	if err != nil {
		size = -1
	}
	h, err := v1.Hasher(digest.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", digest, err)
	}
	raw, err := l.Compressed()
	if err != nil {
		return nil, fmt.Errorf("opening layer %s: %w", digest, err)
	}
	if vb, ok := raw.(VerifiedBlob); ok && vb.VerifiedDigest() == digest {
		// The reader checks the digest itself (the store's do): a second
		// sha256 of the blob was a tenth of a cold tool assembly's CPU.
		h = nil
	}
	s := &layerStream{ctx: ctx, digest: digest, size: size, raw: raw}
	s.hashed = &hashingReader{ctx: ctx, r: raw, h: h}
	tarRC, err := decompress(io.NopCloser(s.hashed))
	if err != nil {
		raw.Close()
		return nil, s.readError(err)
	}
	s.tarRC = tarRC
	s.untar = &hashingReader{ctx: ctx, r: tarRC}
	if diffID {
		s.untar.h = sha256.New()
	}
	s.tr = tar.NewReader(s.untar)
	return s, nil
}

// verify reads what is left of the compressed blob (without decompressing
// it) and checks its digest and size.
//
// With untar, it first reads the rest of the uncompressed stream, so that
// diffID covers it all (what follows the end-of-archive marker counts
// too); without, nothing more is decompressed.
func (s *layerStream) verify(untar bool) error {
	if untar {
		if _, err := io.Copy(io.Discard, s.untar); err != nil {
			return s.readError(err)
		}
	}
	if _, err := io.Copy(io.Discard, s.hashed); err != nil {
		return s.readError(err)
	}
	if s.hashed.h == nil {
		// The blob's reader has checked it at its end (VerifiedBlob).
		if s.size >= 0 && s.hashed.n != s.size {
			return fmt.Errorf("layer %s: blob does not match its size (read %d bytes, want %d); the stored copy is corrupt or truncated: re-pull or re-build the image", s.digest, s.hashed.n, s.size)
		}
		return nil
	}
	got := v1.Hash{Algorithm: s.digest.Algorithm, Hex: fmt.Sprintf("%x", s.hashed.h.Sum(nil))}
	if got != s.digest || (s.size >= 0 && s.hashed.n != s.size) {
		return fmt.Errorf("layer %s: blob does not match its digest (read %d bytes with digest %s); the stored copy is corrupt or truncated: re-pull or re-build the image", s.digest, s.hashed.n, got)
	}
	return nil
}

// diffID returns the digest of the uncompressed stream read so far (all
// of it, after verify).
func (s *layerStream) diffID() string {
	return fmt.Sprintf("sha256:%x", s.untar.h.Sum(nil))
}

// readError describes a failure to read the layer, which almost always
// means a damaged blob.
func (s *layerStream) readError(err error) error {
	if cerr := s.ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return err
	}
	return fmt.Errorf("reading layer %s: %w (the blob may be corrupt or truncated: re-pull or re-build the image)", s.digest, err)
}

func (s *layerStream) Close() error {
	if s.tarRC != nil {
		s.tarRC.Close()
	}
	return s.raw.Close()
}

// VerifiedBlob is a blob reader that checks the blob against a digest
// itself: its last Read returns an error instead of io.EOF when the bytes
// do not match the digest (or the size it was given). A layer read from
// one (the store's readers are) is not hashed a second time.
type VerifiedBlob interface {
	// VerifiedDigest returns the digest the reader checks the blob
	// against.
	VerifiedDigest() v1.Hash
}

// hashingReader hashes (unless h is nil) and counts what is read through
// it, and stops with ctx's error once ctx is done.
type hashingReader struct {
	ctx context.Context
	r   io.Reader
	h   hash.Hash
	n   int64
}

func (r *hashingReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.r.Read(p)
	r.n += int64(n)
	if r.h != nil {
		r.h.Write(p[:n])
	}
	return n, err
}
