package runner

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/pkg/identifiers"
	"github.com/containerd/platforms"
	"github.com/google/go-containerregistry/pkg/authn"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// AddressEnv is the environment variable that names containerd's socket
// when WithAddress is not given.
const AddressEnv = "CONTAINERD_ADDRESS"

// DefaultAddress is containerd's socket when neither WithAddress nor
// CONTAINERD_ADDRESS says otherwise: where a packaged containerd listens.
const DefaultAddress = "/run/containerd/containerd.sock"

// DefaultNamespace is the containerd namespace ssebench works in, so that
// its images, containers and snapshots never mix with those of other
// containerd users (Kubernetes uses k8s.io, Docker moby).
const DefaultNamespace = "ssebench"

// NamespaceEnv is the environment variable that names another namespace
// when WithNamespace is not given: a benchmark's, so that what it measures
// (and prunes) is its own.
const NamespaceEnv = "SSEBENCH_CONTAINERD_NAMESPACE"

// Namespace is the namespace a Runner works in without WithNamespace:
// $SSEBENCH_CONTAINERD_NAMESPACE, else DefaultNamespace.
func Namespace() string {
	if ns := strings.TrimSpace(os.Getenv(NamespaceEnv)); ns != "" {
		return ns
	}
	return DefaultNamespace
}

// Snapshotter names.
const (
	// SnapshotterOverlayFS is the default snapshotter: a layer is unpacked
	// once and each container's root file system is an overlay on top.
	SnapshotterOverlayFS = "overlayfs"
	// SnapshotterNative copies the parent snapshot for every container.
	// It works on any file system, so it is the fallback when overlayfs
	// is unavailable (for example inside some containers).
	SnapshotterNative = "native"
)

// DefaultStopTimeout is how long a task has between SIGTERM and SIGKILL
// when a run is cancelled: the same grace period as `docker stop`.
const DefaultStopTimeout = 10 * time.Second

// defaultConnectTimeout bounds the first contact with containerd. The
// daemon runs on this machine and answers in milliseconds when it is up.
const defaultConnectTimeout = 10 * time.Second

// Option configures a Runner.
type Option func(*options) error

type options struct {
	address     string
	namespace   string
	snapshotter string // "" means overlayfs, falling back to native
	store       *store.Store
	plainHTTP   func(host string) bool
	platform    ocispec.Platform
	keychain    authn.Keychain
	stopTimeout time.Duration
	timeout     time.Duration
	// unpackInDaemon has containerd unpack every layer from its content
	// store, as a pull does (tests compare the two).
	unpackInDaemon bool
}

// makeOptions fills in every default, applies opts and checks the result.
func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		address:     addressFromEnv(),
		namespace:   Namespace(),
		platform:    defaultPlatform(),
		keychain:    authn.DefaultKeychain,
		stopTimeout: DefaultStopTimeout,
		timeout:     defaultConnectTimeout,
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if err := identifiers.Validate(o.namespace); err != nil {
		return nil, fmt.Errorf("invalid containerd namespace %q (%s): use letters, digits and single '.', '_' or '-' between them", o.namespace, NamespaceEnv)
	}
	return o, nil
}

func addressFromEnv() string {
	if a := strings.TrimSpace(os.Getenv(AddressEnv)); a != "" {
		return a
	}
	return DefaultAddress
}

// defaultPlatform is the host's platform on Linux; containers are Linux
// containers even when a developer reads this code elsewhere.
func defaultPlatform() ocispec.Platform {
	p := platforms.DefaultSpec()
	p.OS = "linux"
	return platforms.Normalize(p)
}

// WithAddress sets containerd's socket (a path or a unix:// address), as
// the CLI's --containerd-addr flag does. The default value is
// $CONTAINERD_ADDRESS, else /run/containerd/containerd.sock.
func WithAddress(addr string) Option {
	return func(o *options) error {
		addr = strings.TrimSpace(addr)
		if addr == "" {
			return errors.New("containerd address is empty: give a socket path such as " + DefaultAddress)
		}
		o.address = addr
		return nil
	}
}

// WithNamespace sets the containerd namespace for images, containers and
// snapshots. The default value is "ssebench".
func WithNamespace(ns string) Option {
	return func(o *options) error {
		if err := identifiers.Validate(ns); err != nil {
			return fmt.Errorf("invalid containerd namespace %q: use letters, digits and single '.', '_' or '-' between them", ns)
		}
		o.namespace = ns
		return nil
	}
}

// WithSnapshotter sets the containerd snapshotter that images are unpacked
// into, for example "overlayfs" or "native". An explicit snapshotter must
// work; New fails otherwise. The default is overlayfs, or native when
// containerd reports that overlayfs does not work on this machine.
func WithSnapshotter(name string) Option {
	return func(o *options) error {
		if err := identifiers.Validate(name); err != nil {
			return fmt.Errorf("invalid snapshotter name %q", name)
		}
		o.snapshotter = name
		return nil
	}
}

// WithStore sets the local image store that Run and Import take images
// from. Without a store, only RunSpec.Pull runs (and Pull) work.
func WithStore(s *store.Store) Option {
	return func(o *options) error {
		if s == nil {
			return errors.New("image store is nil")
		}
		o.store = s
		return nil
	}
}

// WithPlatform sets the platform ("linux/amd64", "linux/arm64") whose
// manifest is imported, pulled, unpacked and run. The default value is the
// host's platform.
func WithPlatform(platform string) Option {
	return func(o *options) error {
		p, err := platforms.Parse(platform)
		if err != nil {
			return fmt.Errorf("invalid platform %q: want os/arch such as linux/amd64", platform)
		}
		if p.OS != "linux" {
			return fmt.Errorf("invalid platform %q: containers run on linux", platform)
		}
		o.platform = platforms.Normalize(p)
		return nil
	}
}

// WithKeychain sets where registry credentials for pulls come from. The
// default is authn.DefaultKeychain: the Docker config file and its
// credential helpers.
func WithKeychain(k authn.Keychain) Option {
	return func(o *options) error {
		if k == nil {
			return errors.New("keychain is nil: use authn.DefaultKeychain or authn.NewMultiKeychain()")
		}
		o.keychain = k
		return nil
	}
}

// WithStopTimeout sets how long a cancelled run's task has to exit after
// SIGTERM before it gets SIGKILL. The default value is 10s.
func WithStopTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("stop timeout must be positive, got %s", d)
		}
		o.stopTimeout = d
		return nil
	}
}

// WithConnectTimeout bounds how long New waits for containerd to answer.
// The default value is 10s.
func WithConnectTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("connect timeout must be positive, got %s", d)
		}
		o.timeout = d
		return nil
	}
}

// WithPlainHTTP says which registries containerd pulls from over plain
// HTTP: the same policy as the rest of ssebench (remote.Access.PlainHTTP).
// Loopback hosts always are.
func WithPlainHTTP(f func(host string) bool) Option {
	return func(o *options) error {
		o.plainHTTP = f
		return nil
	}
}

// withUnpackInDaemon makes Import hand every layer to containerd to unpack
// (written to its content store first), as before unpackFromStore.
func withUnpackInDaemon() Option {
	return func(o *options) error {
		o.unpackInDaemon = true
		return nil
	}
}
