package archive

import (
	"errors"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// Option configures Save, Load and PushLoaded. An option that does not
// apply to an entry point is ignored there (Load ignores WithSince, for
// example); one with a bad value makes every entry point fail before it
// reads or writes anything.
type Option func(*options) error

type options struct {
	store    *store.Store
	since    []string
	prefix   string
	platform *v1.Platform
	remote   []remote.Option
	// checkName, protected and force are Load's guards (WithNameCheck,
	// WithProtected, WithForce).
	checkName func(string) error
	protected func(string) bool
	force     bool
}

// makeOptions applies opts over the defaults: no store, no earlier
// archives, no prefix, whole indexes, registry access with remote's own
// defaults, and no guards on Load.
func makeOptions(opts ...Option) (*options, error) {
	o := &options{}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// remoteOptions are the registry options, with the platform of
// WithPlatform for fetches.
func (o *options) remoteOptions() []remote.Option {
	ro := append([]remote.Option(nil), o.remote...)
	if o.platform != nil {
		ro = append(ro, remote.WithIndexPlatform(o.platform))
	}
	return ro
}

// WithStore names the local store Save reads first and Load writes into.
// The default is no store: Save fetches every image from its registry, and
// Load and PushLoaded refuse to run.
func WithStore(s *store.Store) Option {
	return func(o *options) error {
		o.store = s
		return nil
	}
}

// WithRemote sets how registries are reached: images Save does not find in
// the store are fetched with these options, and PushLoaded pushes with them.
// The default is remote's defaults.
func WithRemote(opts ...remote.Option) Option {
	return func(o *options) error {
		o.remote = append(o.remote, opts...)
		return nil
	}
}

// WithPlatform makes Save take only p's image out of an image index; the
// saved name then names that image. A nil p, the default, saves whole
// indexes.
func WithPlatform(p *v1.Platform) Option {
	return func(o *options) error {
		if p != nil && (p.OS == "" || p.Architecture == "") {
			return fmt.Errorf("platform %q needs an OS and an architecture, as in linux/amd64", p.String())
		}
		o.platform = p
		return nil
	}
}

// WithSince makes Save leave out the blobs that the archives at paths
// carried (or themselves left out): an archive of what changed since. The
// default leaves out nothing.
func WithSince(paths ...string) Option {
	return func(o *options) error {
		for _, p := range paths {
			if strings.TrimSpace(p) == "" {
				return errors.New("the path of an earlier archive is empty")
			}
		}
		o.since = append(o.since, paths...)
		return nil
	}
}

// WithRegistryPrefix tells Save the REGISTRY prefix the names it saves start
// with; it is recorded in the archive so that a push after Load can replace
// it (see remote.Retarget). The default records none.
func WithRegistryPrefix(prefix string) Option {
	return func(o *options) error {
		o.prefix = strings.TrimRight(prefix, "/")
		return nil
	}
}

// WithNameCheck makes Load refuse an archive naming an image that check
// rejects (task.CheckImageName: no "..", no empty component), before any
// name is tagged. The default checks only that each name parses.
func WithNameCheck(check func(ref string) error) Option {
	return func(o *options) error {
		o.checkName = check
		return nil
	}
}

// WithProtected makes Load refuse to point a name that protected reports
// (the runtime image, tool images) at other content than the store has,
// unless WithForce; other replaced names are listed in the report. The
// default protects no name.
func WithProtected(protected func(ref string) bool) Option {
	return func(o *options) error {
		o.protected = protected
		return nil
	}
}

// WithForce lets Load replace protected names. The default is false.
func WithForce(force bool) Option {
	return func(o *options) error {
		o.force = force
		return nil
	}
}
