package remote

// Mirror copies a set of images from one registry prefix to another,
// digests unchanged, each unique blob at most once (see Mirror); the blobs
// travel with the pusher of push.go.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// MirroredImage is one image Mirror copied.
type MirroredImage struct {
	// Source and Target are full references.
	Source, Target string
	// Digest is the manifest's digest, the same on both sides.
	Digest v1.Hash
}

// MirrorReport says what Mirror copied and how much it moved.
type MirrorReport struct {
	// Images lists the images copied, in the order they were.
	Images []MirroredImage
	// Missing lists source images that do not exist, sorted.
	Missing []string
	// UniqueBlobs and UniqueBytes count the distinct blobs of all images
	// copied: what an ideal copy moves into an empty target.
	UniqueBlobs int
	UniqueBytes int64
	// Push says what was uploaded, mounted and skipped.
	Push PushReport
}

// Ratio is the bytes uploaded over the unique bytes of the images: 1.00
// when each unique blob crossed once into an empty target, less when the
// target had some blobs, more if a blob was sent twice.
func (r *MirrorReport) Ratio() float64 {
	if r.UniqueBytes == 0 {
		return 0
	}
	return float64(r.Push.Uploaded) / float64(r.UniqueBytes)
}

// String is the summary line.
func (r *MirrorReport) String() string {
	return fmt.Sprintf("mirrored %s: %s; %s unique in %s, moved/unique %.2f",
		units.Plural(len(r.Images), "image"), r.Push.String(), units.Bytes(r.UniqueBytes), units.Plural(r.UniqueBlobs, "blob"), r.Ratio())
}

// MissingError lists the source images a Mirror did not find.
type MissingError struct{ Refs []string }

func (e *MissingError) Error() string {
	verb := "are"
	if len(e.Refs) == 1 {
		verb = "is"
	}
	return fmt.Sprintf("%s %s missing from the source registry: %s", units.Plural(len(e.Refs), "image"), verb, strings.Join(e.Refs, ", "))
}

// Retarget returns ref with the prefix from replaced by to: a reference
// under from (from itself, then "/") keeps the rest of its path; any other
// keeps its repository path under to. Tags and digests are kept.
func Retarget(ref, from, to string) (string, error) {
	from, to = strings.TrimRight(from, "/"), strings.TrimRight(to, "/")
	if to == "" {
		return "", errors.New("the target prefix is empty")
	}
	if from != "" && strings.HasPrefix(ref, from+"/") {
		return to + ref[len(from):], nil
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	sep := ":"
	if _, ok := r.(name.Digest); ok {
		sep = "@"
	}
	return to + "/" + r.Context().RepositoryStr() + sep + r.Identifier(), nil
}

// Mirror copies each image of refs (full references under fromPrefix, such
// as REGISTRY) to the same name under toPrefix, keeping its digest: the
// manifests are copied byte for byte. Each unique blob crosses at most once:
// a blob another image of the set already carried to the target registry is
// mounted there, and when source and target are one registry every blob is
// mounted from its source repository, so no layer bytes move. Images go one
// after the other, their blobs WithJobs at a time; indexes are copied whole
// unless WithIndexPlatform picks one platform.
//
// Source images that do not exist are all reported at the end, in the
// report and as a *MissingError; any other failure stops Mirror.
func Mirror(ctx context.Context, refs []string, fromPrefix, toPrefix string, opts ...Option) (*MirrorReport, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	p := newPusher(o)
	defer p.close()
	rep := &MirrorReport{}
	// The images go one at a time, each fetched, copied and let go
	// before the next: what Mirror keeps is a line per image and a
	// digest per unique blob, however many images the set holds.
	unique := map[v1.Hash]int64{}
	err = o.eachMirrorJob(ctx, refs, fromPrefix, toPrefix, &rep.Missing, func(j mirrorJob) error {
		bs, err := collectBlobs(ctx, j.content, nil)
		if err != nil {
			return fmt.Errorf("reading %s: %w", j.src.Name(), err)
		}
		for _, b := range bs {
			if _, ok := unique[b.digest]; !ok {
				unique[b.digest] = b.size
				rep.UniqueBlobs++
				rep.UniqueBytes += b.size
			}
		}
		// The repositories copied so far may serve as mount sources
		// for the next image: ask for pull access to them.
		p.addScopes(j.dst.Context(), j.src.Context())
		origin := j.src.Context()
		if err := p.push(ctx, j.dst, j.content, &origin); err != nil {
			return fmt.Errorf("mirroring %s: %w", j.src.Name(), err)
		}
		p.forget(j.dst.Context())
		d, err := digestOfTaggable(j.content)
		if err != nil {
			return err
		}
		rep.Images = append(rep.Images, MirroredImage{Source: j.src.Name(), Target: j.dst.Name(), Digest: d})
		return nil
	})
	rep.Push = *p.report()
	if err != nil {
		return rep, err
	}
	if len(rep.Missing) > 0 {
		sort.Strings(rep.Missing)
		return rep, &MissingError{Refs: rep.Missing}
	}
	return rep, nil
}

func digestOfTaggable(t remote.Taggable) (v1.Hash, error) {
	if d, ok := t.(interface{ Digest() (v1.Hash, error) }); ok {
		return d.Digest()
	}
	raw, err := t.RawManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	h, _, err := v1.SHA256(strings.NewReader(string(raw)))
	return h, err
}

// isNotFound reports whether err says an image does not exist.
func isNotFound(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	if te.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range te.Errors {
		if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
			return true
		}
	}
	return false
}

// mirrorJob is one image of a Mirror: where it comes from and goes to.
type mirrorJob struct {
	src, dst name.Reference
	content  remote.Taggable
}

// eachMirrorJob finds each image of refs (once each) and where it goes
// under toPrefix, and passes it to fn, one at a time; images that do not
// exist are added to missing. An error of fn stops it.
func (o *options) eachMirrorJob(ctx context.Context, refs []string, fromPrefix, toPrefix string, missing *[]string, fn func(mirrorJob) error) error {
	seen := map[string]bool{}
	for _, s := range refs {
		if err := ctx.Err(); err != nil {
			return err
		}
		src, err := o.parseReference(s)
		if err != nil {
			return err
		}
		if seen[src.Name()] {
			continue
		}
		seen[src.Name()] = true
		t, err := Retarget(s, fromPrefix, toPrefix)
		if err != nil {
			return err
		}
		dst, err := o.parseReference(t)
		if err != nil {
			return err
		}
		content, err := o.fetch(ctx, src)
		if isNotFound(err) {
			*missing = append(*missing, src.Name())
			continue
		}
		if err != nil {
			return err
		}
		if err := fn(mirrorJob{src: src, dst: dst, content: content}); err != nil {
			return err
		}
	}
	return nil
}
