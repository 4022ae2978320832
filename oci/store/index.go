package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func emptyIndex() *v1.IndexManifest {
	return &v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{}}
}

func (s *Store) readIndexFile() (*v1.IndexManifest, error) {
	f, err := os.Open(filepath.Join(s.dir, indexFile))
	if err != nil {
		return nil, fmt.Errorf("reading the image store index: %w", err)
	}
	defer f.Close()
	im, err := v1.ParseIndexManifest(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(s.dir, indexFile), err)
	}
	return im, nil
}

// writeIndexFile replaces index.json by rename; callers hold indexLock.
func (s *Store) writeIndexFile(im *v1.IndexManifest) error {
	// Sorted by name so that the same set of entries gives the same bytes
	// whatever order concurrent writers committed in.
	sort.SliceStable(im.Manifests, func(i, j int) bool {
		return EntryName(im.Manifests[i]) < EntryName(im.Manifests[j])
	})
	b, err := json.MarshalIndent(im, "", "  ")
	if err != nil {
		return err
	}
	return s.writeFileAtomic(indexFile, append(b, '\n'))
}

// writeFileAtomic replaces file, at the root of the store, durably.
func (s *Store) writeFileAtomic(file string, b []byte) error {
	// In this command's own temporary directory, so that a kill between
	// create and rename leaves nothing the next command does not remove;
	// while the store is being created it has none yet.
	dir := s.tmpRoot()
	if s.temp != nil {
		dir = s.temp.dir
	}
	return safefile.WriteBytes(filepath.Join(s.dir, file), b, 0o644, safefile.Sync(), safefile.TempDir(dir))
}

// EntryName is the image name an index.json entry carries.
func EntryName(d v1.Descriptor) string {
	if n := d.Annotations[AnnotationRefName]; n != "" {
		return n
	}
	return d.Annotations[AnnotationContainerdName]
}

// matches reports whether index entry d is ref: its ref.name (or
// containerd name) annotation parses to the same reference, or, for a
// digest reference, it has that digest.
func matches(d v1.Descriptor, ref name.Reference) bool {
	if dg, ok := ref.(name.Digest); ok && d.Digest.String() == dg.DigestStr() {
		return true
	}
	for _, k := range []string{AnnotationRefName, AnnotationContainerdName} {
		v := d.Annotations[k]
		if v == "" {
			continue
		}
		if v == ref.Name() {
			return true
		}
		// Other tools may write short forms ("ubuntu:24.04").
		if r, err := name.ParseReference(v); err == nil && r.Name() == ref.Name() {
			return true
		}
	}
	return false
}

// SetEntry points ref at desc in index.json. The caller has made sure the
// blobs desc needs are in the pool (or recorded with a holder).
func (s *Store) SetEntry(ctx context.Context, ref name.Reference, desc v1.Descriptor) error {
	if err := s.writable(); err != nil {
		return err
	}
	return s.setEntry(ctx, ref, desc, "")
}

// SetEntries points each ref at its descriptor in index.json, under one
// lock and in one write: a load of thousands of entries rewrites the index
// once, not once per entry.
func (s *Store) SetEntries(ctx context.Context, refs []name.Reference, descs []v1.Descriptor) error {
	if err := s.writable(); err != nil {
		return err
	}
	if len(refs) != len(descs) {
		return fmt.Errorf("SetEntries: %d references for %d descriptors", len(refs), len(descs))
	}
	return s.setEntries(ctx, refs, descs, "")
}

// setEntry points ref at desc, noting source (the repository the entry was
// pulled from) when it is not "".
func (s *Store) setEntry(ctx context.Context, ref name.Reference, desc v1.Descriptor, source string) error {
	return s.setEntries(ctx, []name.Reference{ref}, []v1.Descriptor{desc}, source)
}

func (s *Store) setEntries(ctx context.Context, refs []name.Reference, descs []v1.Descriptor, source string) error {
	unlock, err := s.lock(ctx, indexLock, true)
	if err != nil {
		return err
	}
	defer unlock()
	im, err := s.readIndexFile()
	if err != nil {
		return err
	}
	replaced := map[string]bool{}
	var added []v1.Descriptor
	for i, ref := range refs {
		desc := descs[i]
		desc.Annotations = map[string]string{
			AnnotationRefName:        ref.Name(),
			AnnotationContainerdName: ref.Name(),
		}
		if source != "" {
			desc.Annotations[AnnotationSource] = source
		}
		if _, ok := ref.(name.Digest); ok {
			// A digest names content, not an entry: keep the other
			// entries with this digest.
			delete(desc.Annotations, AnnotationContainerdName)
		}
		replaced[ref.Name()] = true
		added = append(added, desc)
	}
	kept := im.Manifests[:0]
	for _, d := range im.Manifests {
		if !replaced[EntryName(d)] {
			kept = append(kept, d)
		}
	}
	// A name given twice keeps its last descriptor.
	last := map[string]int{}
	for i, d := range added {
		last[EntryName(d)] = i
	}
	for i, d := range added {
		if last[EntryName(d)] == i {
			kept = append(kept, d)
		}
	}
	im.Manifests = kept
	if err := s.writeIndexFile(im); err != nil {
		return fmt.Errorf("updating the image store index: %w", err)
	}
	return nil
}

// List returns the store's entries, sorted by name.
func (s *Store) List() ([]Entry, error) {
	im, err := s.readIndexFile()
	if err != nil {
		return nil, err
	}
	es := make([]Entry, 0, len(im.Manifests))
	for _, d := range im.Manifests {
		es = append(es, Entry{Name: EntryName(d), Descriptor: d})
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	return es, nil
}

// Descriptor returns the index.json entry of ref, or an error matching
// ErrNotFound.
func (s *Store) Descriptor(ref name.Reference) (v1.Descriptor, error) {
	im, err := s.readIndexFile()
	if err != nil {
		return v1.Descriptor{}, err
	}
	for i := len(im.Manifests) - 1; i >= 0; i-- {
		if matches(im.Manifests[i], ref) {
			return im.Manifests[i], nil
		}
	}
	return v1.Descriptor{}, fmt.Errorf("image %s is %w (%s)", ref.Name(), ErrNotFound, s.dir)
}

// Tag points dst at the entry of src.
func (s *Store) Tag(ctx context.Context, src, dst name.Reference) error {
	if err := s.writable(); err != nil {
		return err
	}
	desc, err := s.Descriptor(src)
	if err != nil {
		return err
	}
	return s.SetEntry(ctx, dst, desc)
}

// Delete removes the entry of ref (for a digest reference, every entry
// with that digest), or fails with ErrNotFound. Its blobs stay until GC.
func (s *Store) Delete(ctx context.Context, ref name.Reference) error {
	if err := s.writable(); err != nil {
		return err
	}
	unlock, err := s.lock(ctx, indexLock, true)
	if err != nil {
		return err
	}
	defer unlock()
	im, err := s.readIndexFile()
	if err != nil {
		return err
	}
	kept := im.Manifests[:0]
	for _, d := range im.Manifests {
		if !matches(d, ref) {
			kept = append(kept, d)
		}
	}
	if len(kept) == len(im.Manifests) {
		return fmt.Errorf("deleting image %s: %w (%s)", ref.Name(), ErrNotFound, s.dir)
	}
	im.Manifests = kept
	return s.writeIndexFile(im)
}
