package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

// PublishOptions say where Publish pushes and what from.
type PublishOptions struct {
	// Registry is the prefix the images and the catalog go under, e.g.
	// localhost:5000/ssebench. Required.
	Registry string
	// Revision is the commit the dataset is published from (7 to 64 hex
	// digits). Required.
	Revision string
	// Store holds the verified case images.
	Store *store.Store
	// Remote are the registry options (plain-HTTP hosts, credentials).
	Remote []remote.Option
	// Log receives one line per image.
	Log io.Writer
}

// Published is one case image Publish handled.
type Published struct {
	Task string
	// Immutable is the <version>-<revision> tag, Moving the <version> one.
	Immutable, Moving string
	Digest            string
	// Pushed is false when Immutable already named the same image.
	Pushed bool
}

// Publish publishes the verified case images of dataset dir under
// o.Registry: each first as <version>-<7-char revision>, which is refused
// when it already names another image (published tags are never
// rewritten), then as <version>, which moves. An image is refused when the
// store's differs from the one that verified, or when its folder changed
// since; nothing is pushed until every image passed these checks. The
// digests are merged into dir/images.lock.json, and manifest.json and the
// lock are pushed as the catalog artifact REGISTRY/catalog/<dataset>:
// <version>. It returns the lock written.
func Publish(ctx context.Context, dir string, rec *Record, o PublishOptions) (*task.Lock, []Published, error) {
	if o.Registry == "" {
		return nil, nil, errors.New("publishing needs a registry: pass --registry PREFIX, e.g. --registry localhost:5000/ssebench")
	}
	if err := CheckRevision(o.Revision); err != nil {
		return nil, nil, err
	}
	prefix := strings.TrimSuffix(o.Registry, "/")
	ds, err := task.LoadDataset(dir)
	if err != nil {
		return nil, nil, err
	}
	if ps, err := task.CheckManifest(dir); err != nil {
		return nil, nil, err
	} else if len(ps) > 0 {
		return nil, nil, fmt.Errorf("%s is out of date (%s): run `ssebench dataset manifest %s` first, so that the catalog lists the tasks as they are", filepath.Join(dir, task.ManifestFile), ps[0].Msg, dir)
	}
	old, err := ReadOldLock(dir)
	if err != nil {
		return nil, nil, err
	}
	fresh, unverified, err := Lock(ds, rec, nil, o.Revision)
	if err != nil {
		return nil, nil, err
	}
	if len(unverified) > 0 {
		return nil, nil, fmt.Errorf("%s cannot be published: %s", units.Plural(len(unverified), "task"), strings.Join(unverified, "; "))
	}
	acc, err := remote.New(o.Remote...)
	if err != nil {
		return nil, nil, err
	}
	// Every check before the first push: a refused image leaves the
	// registry as it was.
	var todo []Published
	for _, t := range ds.Tasks {
		v := rec.Tasks[t.ID]
		ref, err := name.ParseReference(v.Image, name.WeakValidation)
		if err != nil {
			return nil, nil, fmt.Errorf("the verified image name %q: %w", v.Image, err)
		}
		desc, err := o.Store.Descriptor(ref)
		if err != nil {
			return nil, nil, fmt.Errorf("the verified case image of %s: %w (verify it again)", t.ID, err)
		}
		if desc.Digest.String() != v.Digest {
			return nil, nil, fmt.Errorf("refusing %s: the store's %s is %s, but %s verified: verify it again", t.ID, v.Image, desc.Digest, v.Digest)
		}
		repo := prefix + "/" + t.Image(ds.Name)
		p := Published{Task: t.ID, Digest: v.Digest, Immutable: repo + ":" + ds.Version + "-" + o.Revision[:7], Moving: repo + ":" + ds.Version, Pushed: true}
		found, err := headDigest(ctx, acc, p.Immutable)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case found == v.Digest:
			p.Pushed = false
		case found != "":
			return nil, nil, fmt.Errorf("refusing to publish %s: %s already names %s, and published tags are never rewritten (commit and publish a new revision)", t.ID, p.Immutable, found)
		}
		todo = append(todo, p)
	}
	for _, p := range todo {
		if p.Pushed {
			ref, _ := name.ParseReference(rec.Tasks[p.Task].Image, name.WeakValidation)
			img, err := o.Store.Image(ref)
			if err != nil {
				return nil, nil, err
			}
			if _, err := remote.Push(ctx, p.Immutable, img, append([]remote.Option{remote.WithStore(o.Store)}, o.Remote...)...); err != nil {
				return nil, nil, fmt.Errorf("publishing %s: %w", p.Task, err)
			}
		}
		if err := remote.Tag(ctx, p.Immutable, p.Moving, o.Remote...); err != nil {
			return nil, nil, fmt.Errorf("publishing %s: %w", p.Task, err)
		}
		if o.Log != nil {
			how := "pushed"
			if !p.Pushed {
				how = "already there"
			}
			fmt.Fprintf(o.Log, "%s %s@%s (%s), tagged %s\n", how, p.Immutable, p.Digest, p.Task, p.Moving[strings.LastIndex(p.Moving, ":")+1:])
		}
	}

	// The lock keeps what it said of other tasks of this version.
	lock := fresh
	if old != nil && old.Dataset == ds.Name && old.Version == ds.Version {
		for id, img := range old.Images {
			if _, ok := lock.Images[id]; !ok && ds.Task(id) != nil {
				lock.Images[id] = img
			}
		}
	}
	if err := task.WriteLock(dir, lock); err != nil {
		return nil, nil, err
	}
	mdata, err := os.ReadFile(filepath.Join(dir, task.ManifestFile))
	if err != nil {
		return nil, nil, err
	}
	ldata, err := lock.Marshal()
	if err != nil {
		return nil, nil, err
	}
	art, err := catalog.Artifact(mdata, ldata)
	if err != nil {
		return nil, nil, err
	}
	cref := CatalogRef(prefix, ds.Name, ds.Version)
	if _, err := remote.Push(ctx, cref, art, o.Remote...); err != nil {
		return nil, nil, fmt.Errorf("pushing the catalog: %w", err)
	}
	if o.Log != nil {
		fmt.Fprintf(o.Log, "pushed the catalog %s\n", cref)
	}
	return lock, todo, nil
}

// CatalogRef is the catalog artifact of dataset at version under prefix.
func CatalogRef(prefix, dataset, version string) string {
	return strings.TrimSuffix(prefix, "/") + "/" + catalog.Repository + "/" + strings.ToLower(dataset) + ":" + version
}

// headDigest returns the digest ref names in its registry, "" when it
// names nothing.
func headDigest(ctx context.Context, acc *remote.Access, ref string) (string, error) {
	i := strings.LastIndex(ref, ":")
	repo, ropts, err := acc.Repository(ctx, ref[:i])
	if err != nil {
		return "", err
	}
	d, err := ggremote.Head(repo.Tag(ref[i+1:]), ropts...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
			return "", nil
		}
		return "", fmt.Errorf("asking the registry for %s: %w", ref, err)
	}
	return d.Digest.String(), nil
}
