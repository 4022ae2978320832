package pipeline

import (
	"context"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

// LockRefusal is a case image the catalog's images lock refuses: the
// registry's tag names another image than the one the lock pins, and the
// pinned one is not there. It is never replaced by a build on its own:
// someone changed what the catalog published.
type LockRefusal struct {
	Ref, Pinned, Found string
}

func (e *LockRefusal) Error() string {
	return fmt.Sprintf("refusing the case image %s: the registry has %s under that tag, but the catalog's images lock pins %s, which the registry does not have; the image is not the one published (pass --build to build it from a task folder whose files match)", e.Ref, e.Found, e.Pinned)
}

// Catalog opens the catalog at loc once per Env (an evaluation's runs
// share it) and prints its warnings once.
func (e *Env) Catalog(ctx context.Context, loc string) (*catalog.Catalog, error) {
	e.catMu.Lock()
	defer e.catMu.Unlock()
	if c, ok := e.cats[loc]; ok {
		return c, nil
	}
	opts := append([]catalog.Option{catalog.WithRemote(e.RegistryOptions...)}, e.CatalogOptions...)
	c, err := catalog.Open(ctx, loc, opts...)
	if err != nil {
		return nil, err
	}
	for _, w := range c.Warnings {
		e.logf("warning: %s", w)
	}
	if e.cats == nil {
		e.cats = map[string]*catalog.Catalog{}
	}
	e.cats[loc] = c
	return c, nil
}

// catalogCase resolves task id's case image from catalog c (SPEC.md
// section 11): by digest when the lock pins it, else by the dataset
// version's tag. When the pinned digest cannot be pulled and the tag names
// another image, the error is a *LockRefusal.
func (e *Env) catalogCase(ctx context.Context, c *catalog.Catalog, id string, plat *v1.Platform) (string, error) {
	ref, byDigest, warning, err := c.CaseRef(e.Names.Registry, id)
	if err != nil {
		return "", err
	}
	if warning != "" {
		e.logf("warning: %s", warning)
	}
	r, err := e.Resolver(plat)
	if err != nil {
		return "", err
	}
	_, perr := r.Resolve(ctx, ref)
	if perr == nil {
		if byDigest {
			e.logf("case image %s (pinned by the catalog's images lock)", ref)
		}
		return ref, nil
	}
	if byDigest {
		name, pinned, _ := strings.Cut(ref, "@")
		tagged := name + ":" + c.Manifest.Version
		if found, ok := e.tagDigest(ctx, tagged); ok && found != pinned {
			return "", &LockRefusal{Ref: tagged, Pinned: pinned, Found: found}
		}
	}
	return "", fmt.Errorf("pulling the case image %s failed: %w", ref, perr)
}

// tagDigest asks the registry which manifest ref names (a HEAD request).
func (e *Env) tagDigest(ctx context.Context, ref string) (string, bool) {
	acc, err := remote.New(e.RegistryOptions...)
	if err != nil {
		return "", false
	}
	name, tag, ok := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	if !ok {
		return "", false
	}
	repo, ropts, err := acc.Repository(ctx, ref[:strings.LastIndex(ref, "/")+1]+name)
	if err != nil {
		return "", false
	}
	d, err := ggremote.Head(repo.Tag(tag), ropts...)
	if err != nil {
		return "", false
	}
	return d.Digest.String(), true
}
