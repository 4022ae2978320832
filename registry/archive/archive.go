package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// AnnotationArchiveRegistry, on an archive's index.json, is the
	// REGISTRY prefix its image names were saved under; Load's push
	// replaces it with the new prefix.
	AnnotationArchiveRegistry = "dev.ssebench.archive.registry"
	// AnnotationArchiveOmitted, on an archive's index.json, lists (space
	// separated, sorted) the blobs left out because an earlier archive
	// carried them (save --since): loading needs them in the store.
	AnnotationArchiveOmitted = "dev.ssebench.archive.omitted"
)

// The files of an OCI image layout (image-spec's image-layout.md).
const (
	layoutFile = "oci-layout"
	layoutJSON = `{"imageLayoutVersion":"1.0.0"}`
	indexFile  = "index.json"
	// maxManifestSize bounds what is read into memory as index.json.
	maxManifestSize = 32 << 20
)

func emptyIndex() *v1.IndexManifest {
	return &v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{}}
}

// archiveTime is every entry's modification time: fixed, so that the same
// images give the same archive bytes.
var archiveTime = time.Unix(0, 0).UTC()

// ArchivedImage is one image of an archive.
type ArchivedImage struct {
	// Name is the full reference it was saved under.
	Name string
	// Descriptor is its index.json entry.
	Descriptor v1.Descriptor
}

// Report says what Save wrote or Load read.
type Report struct {
	// Images are the archive's images, sorted by name.
	Images []ArchivedImage
	// Registry is the REGISTRY prefix recorded in the archive.
	Registry string
	// Blobs and Bytes count the blobs in the archive.
	Blobs int
	Bytes int64
	// Omitted and OmittedBytes count the blobs left out (--since).
	Omitted      int
	OmittedBytes int64
	// Stored counts the blobs Load added to the store (the others were
	// there already).
	Stored int
	// Replaced are the names Load pointed at other content than the
	// store had under them.
	Replaced []Replacement
}

// Replacement is a name whose content Load changed.
type Replacement struct {
	Name     string
	Old, New v1.Hash
}

// String is the summary line.
func (r *Report) String() string {
	s := fmt.Sprintf("%s, %s in %s", units.Plural(len(r.Images), "image"), units.Bytes(r.Bytes), units.Plural(r.Blobs, "blob"))
	if r.Omitted > 0 {
		s += fmt.Sprintf(", %s (%s) left out as already carried", units.Plural(r.Omitted, "blob"), units.Bytes(r.OmittedBytes))
	}
	return s
}

// archiveBlob is one blob to write: its size and how to read it.
type archiveBlob struct {
	size     int64
	open     func() (io.ReadCloser, error)
	manifest bool
}

// Save writes refs as one OCI image layout archive (a tar of oci-layout,
// index.json and blobs/sha256/...) to w, each unique blob once. An image
// comes from the store (WithStore) when it is there, else from its
// registry; indexes are saved whole unless WithPlatform picks one
// platform. Blobs are streamed, never held in memory, and the tar is
// deterministic: sorted entries, fixed times and owners, so the same images
// give the same bytes. index.json names each image with its full reference
// (org.opencontainers.image.ref.name), and records WithRegistryPrefix and
// the blobs WithSince left out.
func Save(ctx context.Context, w io.Writer, refs []string, opts ...Option) (*Report, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	rep := &Report{Registry: o.prefix}
	since := map[v1.Hash]bool{}
	for _, p := range o.since {
		if err := archiveBlobs(p, since); err != nil {
			return nil, err
		}
	}
	blobs := map[v1.Hash]*archiveBlob{}
	index := emptyIndex()
	seen := map[string]bool{}
	for _, s := range refs {
		ref, err := name.ParseReference(s)
		if err != nil {
			return nil, fmt.Errorf("parsing image reference %q: %w", s, err)
		}
		if seen[ref.Name()] {
			continue
		}
		seen[ref.Name()] = true
		content, desc, err := o.saveSource(ctx, ref)
		if err != nil {
			return nil, err
		}
		if err := addArchiveBlobs(ctx, content, blobs); err != nil {
			return nil, fmt.Errorf("saving %s: %w", ref.Name(), err)
		}
		desc.Annotations = map[string]string{store.AnnotationRefName: ref.Name(), store.AnnotationContainerdName: ref.Name()}
		index.Manifests = append(index.Manifests, desc)
		rep.Images = append(rep.Images, ArchivedImage{Name: ref.Name(), Descriptor: desc})
	}
	sort.SliceStable(index.Manifests, func(i, j int) bool {
		return store.EntryName(index.Manifests[i]) < store.EntryName(index.Manifests[j])
	})
	sort.SliceStable(rep.Images, func(i, j int) bool { return rep.Images[i].Name < rep.Images[j].Name })

	digests := make([]v1.Hash, 0, len(blobs))
	var omitted []string
	for h, b := range blobs {
		// Manifests always travel: they are small, and they let load
		// say which image a missing blob belongs to.
		if since[h] && !b.manifest {
			omitted = append(omitted, h.String())
			rep.Omitted++
			rep.OmittedBytes += b.size
			continue
		}
		digests = append(digests, h)
	}
	sort.Slice(digests, func(i, j int) bool { return digests[i].String() < digests[j].String() })
	sort.Strings(omitted)
	index.Annotations = map[string]string{}
	if o.prefix != "" {
		index.Annotations[AnnotationArchiveRegistry] = o.prefix
	}
	if len(omitted) > 0 {
		index.Annotations[AnnotationArchiveOmitted] = strings.Join(omitted, " ")
	}
	if len(index.Annotations) == 0 {
		index.Annotations = nil
	}

	tw := tar.NewWriter(w)
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(archiveHeader(dir, tar.TypeDir, 0)); err != nil {
			return nil, fmt.Errorf("writing the archive: %w", err)
		}
	}
	for _, h := range digests {
		b := blobs[h]
		if err := writeArchiveBlob(ctx, tw, h, b); err != nil {
			return nil, err
		}
		rep.Blobs++
		rep.Bytes += b.size
	}
	ij, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{indexFile, append(ij, '\n')}, {layoutFile, []byte(layoutJSON)}} {
		if err := tw.WriteHeader(archiveHeader(f.name, tar.TypeReg, int64(len(f.data)))); err != nil {
			return nil, fmt.Errorf("writing the archive: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("writing the archive: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing the archive: %w", err)
	}
	return rep, nil
}

func archiveHeader(name string, typ byte, size int64) *tar.Header {
	mode := int64(0o644)
	if typ == tar.TypeDir {
		mode = 0o755
	}
	return &tar.Header{
		Typeflag: typ, Name: name, Size: size, Mode: mode,
		ModTime: archiveTime, Format: tar.FormatPAX,
	}
}

func writeArchiveBlob(ctx context.Context, tw *tar.Writer, h v1.Hash, b *archiveBlob) error {
	if err := tw.WriteHeader(archiveHeader("blobs/sha256/"+h.Hex, tar.TypeReg, b.size)); err != nil {
		return fmt.Errorf("writing blob %s to the archive: %w", h, err)
	}
	rc, err := b.open()
	if err != nil {
		return fmt.Errorf("reading blob %s: %w", h, err)
	}
	defer rc.Close()
	d := sha256.New()
	n, err := io.Copy(io.MultiWriter(tw, d), oci.ContextReader(ctx, rc))
	if err != nil {
		return fmt.Errorf("writing blob %s to the archive: %w", h, err)
	}
	if got := hex.EncodeToString(d.Sum(nil)); n != b.size || got != h.Hex {
		return fmt.Errorf("blob %s read as %d bytes with digest sha256:%s, expected %d bytes", h, n, got, b.size)
	}
	return nil
}

// saveSource finds ref in the store, else in its registry, and returns it
// with its index.json descriptor.
func (o *options) saveSource(ctx context.Context, ref name.Reference) (ggremote.Taggable, v1.Descriptor, error) {
	if s := o.store; s != nil {
		desc, err := s.Descriptor(ref)
		if err == nil {
			desc.Annotations = nil
			if desc.MediaType.IsIndex() {
				idx, err := s.IndexAt(desc, ref.Name())
				if err != nil {
					return nil, desc, err
				}
				return o.pickSaved(idx, desc, ref)
			}
			img, err := s.ImageAt(desc, ref.Name())
			return img, desc, err
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, desc, err
		}
	}
	return remote.Fetch(ctx, ref.String(), o.remoteOptions()...)
}

func (o *options) pickSaved(idx v1.ImageIndex, desc v1.Descriptor, ref name.Reference) (ggremote.Taggable, v1.Descriptor, error) {
	if o.platform == nil {
		return idx, desc, nil
	}
	child, err := remote.PickPlatform(idx, *o.platform, ref.Name())
	if err != nil {
		return nil, desc, err
	}
	img, err := idx.Image(child.Digest)
	child.Annotations = nil
	return img, child, err
}

// addArchiveBlobs adds every blob of content (manifests included) to bs.
func addArchiveBlobs(ctx context.Context, content ggremote.Taggable, bs map[v1.Hash]*archiveBlob) error {
	return oci.WalkContent(ctx, content, func(c oci.Content) error {
		raw, err := c.RawManifest()
		if err != nil {
			return err
		}
		h, _, err := v1.SHA256(bytes.NewReader(raw))
		if err != nil {
			return err
		}
		bs[h] = &archiveBlob{size: int64(len(raw)), manifest: true, open: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(raw)), nil
		}}
		img, ok := c.(v1.Image)
		if !ok {
			return nil
		}
		cfg, err := img.RawConfigFile()
		if err != nil {
			return err
		}
		ch, err := img.ConfigName()
		if err != nil {
			return err
		}
		bs[ch] = &archiveBlob{size: int64(len(cfg)), open: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(cfg)), nil
		}}
		ls, err := img.Layers()
		if err != nil {
			return err
		}
		for _, l := range ls {
			d, err := l.Digest()
			if err != nil {
				return err
			}
			mt, err := l.MediaType()
			if err != nil {
				return err
			}
			if !mt.IsDistributable() || bs[d] != nil {
				continue
			}
			n, err := l.Size()
			if err != nil {
				return err
			}
			bs[d] = &archiveBlob{size: n, open: l.Compressed}
		}
		return nil
	})
}

// archiveBlobs adds to set the blobs the archive at p carried or left
// out. It reads only tar headers and index.json.
func archiveBlobs(p string, set map[v1.Hash]bool) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("reading the earlier archive: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	sawIndex := false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the earlier archive %s: %w", p, err)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if h, ok := blobName(name); ok && hdr.Typeflag == tar.TypeReg {
			set[h] = true
			continue
		}
		if name == indexFile {
			sawIndex = true
			var im v1.IndexManifest
			if err := json.NewDecoder(io.LimitReader(tr, maxManifestSize)).Decode(&im); err != nil {
				return fmt.Errorf("reading index.json of the earlier archive %s: %w", p, err)
			}
			for _, s := range strings.Fields(im.Annotations[AnnotationArchiveOmitted]) {
				if h, err := v1.NewHash(s); err == nil {
					set[h] = true
				}
			}
		}
	}
	if !sawIndex {
		return fmt.Errorf("%s is not an image archive: it has no index.json", p)
	}
	return nil
}

// blobName parses "blobs/sha256/<hex>".
func blobName(n string) (v1.Hash, bool) {
	hx, ok := strings.CutPrefix(n, "blobs/sha256/")
	if !ok || len(hx) != 64 || strings.Trim(hx, "0123456789abcdef") != "" {
		return v1.Hash{}, false
	}
	return v1.Hash{Algorithm: "sha256", Hex: hx}, true
}

// PushLoaded pushes the images of a loaded archive from the store of
// WithStore to a registry: each name under the archive's REGISTRY gets
// prefix instead, any other keeps its repository path under prefix (see
// Retarget). Blobs shared between the images are uploaded once and
// mounted for the others.
func PushLoaded(ctx context.Context, rep *Report, prefix string, opts ...Option) (*remote.PushReport, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	s := o.store
	if s == nil {
		return nil, errors.New("pushing loaded images needs the local image store they were loaded into: see WithStore")
	}
	var targets []remote.Target
	for _, im := range rep.Images {
		t, err := remote.Retarget(im.Name, rep.Registry, prefix)
		if err != nil {
			return nil, err
		}
		var content ggremote.Taggable
		if im.Descriptor.MediaType.IsIndex() {
			content, err = s.IndexAt(im.Descriptor, im.Name)
		} else {
			content, err = s.ImageAt(im.Descriptor, im.Name)
		}
		if err != nil {
			return nil, err
		}
		targets = append(targets, remote.Target{Ref: t, Content: content})
	}
	return remote.PushAll(ctx, targets, o.remoteOptions()...)
}
