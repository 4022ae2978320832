package archive

import (
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// Option configures Save, Load and PushLoaded.
type Option func(*options)

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

func makeOptions(opts ...Option) *options {
	o := &options{}
	for _, opt := range opts {
		opt(o)
	}
	return o
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
func WithStore(s *store.Store) Option {
	return func(o *options) { o.store = s }
}

// WithRemote sets how registries are reached: images Save does not find in
// the store are fetched with these options, and PushLoaded pushes with them.
func WithRemote(opts ...remote.Option) Option {
	return func(o *options) { o.remote = append(o.remote, opts...) }
}

// WithPlatform makes Save take only p's image out of an image index; the
// saved name then names that image. The default saves whole indexes.
func WithPlatform(p *v1.Platform) Option {
	return func(o *options) { o.platform = p }
}

// WithSince makes Save leave out the blobs that the archives at paths
// carried (or themselves left out): an archive of what changed since.
func WithSince(paths ...string) Option {
	return func(o *options) { o.since = append(o.since, paths...) }
}

// WithRegistryPrefix tells Save the REGISTRY prefix the names it saves start
// with; it is recorded in the archive so that a push after Load can replace
// it (see remote.Retarget).
func WithRegistryPrefix(prefix string) Option {
	return func(o *options) { o.prefix = strings.TrimRight(prefix, "/") }
}

// WithNameCheck makes Load refuse an archive naming an image that check
// rejects (task.CheckImageName: no "..", no empty component), before any
// name is tagged.
func WithNameCheck(check func(ref string) error) Option {
	return func(o *options) { o.checkName = check }
}

// WithProtected makes Load refuse to point a name that protected reports
// (the runtime image, tool images) at other content than the store has,
// unless WithForce; other replaced names are listed in the report.
func WithProtected(protected func(ref string) bool) Option {
	return func(o *options) { o.protected = protected }
}

// WithForce lets Load replace protected names.
func WithForce(force bool) Option {
	return func(o *options) { o.force = force }
}
