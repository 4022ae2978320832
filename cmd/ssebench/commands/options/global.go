package options

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	ssebench "github.com/42-b3yond-6ug/ssebench"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/registry/trust"
)

// HomeEnv names the SSEBench home: the folder holding datasets/, agents/ and
// images/. Without it the home is the nearest parent of the working directory
// that has a VERSION file next to datasets/ or agents/.
const HomeEnv = "SSEBENCH_HOME"

// Global holds the flags every command shares.
type Global struct {
	Registry string
	Store    string
	Home     string
	Pull     string
	Insecure []string
	Verbose  bool
	// Quiet leaves out progress (bars, periodic lines, build logs);
	// results and errors are still printed.
	Quiet bool
	// Trusted, VerifyKey and SignKey make the trust policy (see Trust).
	Trusted   []string
	VerifyKey string
	SignKey   string
	// BuildKitAddr and ContainerdAddr reach the daemons; "" means the
	// libraries' defaults (BUILDKIT_HOST, CONTAINERD_ADDRESS, the usual
	// sockets).
	BuildKitAddr   string
	ContainerdAddr string
	// Notices, when set, hears why a command goes to a registry (an
	// image missing from the store); see remote.WithNotice.
	Notices io.Writer
	// RegistryTimeout bounds all the registry requests of a command
	// together (see remote.WithDeadline); 0 is the command's default
	// (DefaultRegistryTimeout), which is none for most.
	RegistryTimeout time.Duration
	// DefaultRegistryTimeout is the command's RegistryTimeout when the
	// flag is not given: a command that only reads manifests and configs
	// (inspect) sets one.
	DefaultRegistryTimeout time.Duration
	// registryDeadline is the deadline of this invocation, fixed by the
	// first RegistryOptions: every client of the command shares it.
	registryDeadline time.Time
}

// AddGlobal binds the shared flags to cmd's persistent flags.
func AddGlobal(cmd *cobra.Command, g *Global) {
	f := cmd.PersistentFlags()
	f.StringVar(&g.Registry, "registry", "", "image name prefix (default $SSEBENCH_REGISTRY, then .env, then "+naming.DefaultRegistry+")")
	f.StringVar(&g.Store, "store", "", "local OCI layout store (default $SSEBENCH_STORE, else ${XDG_DATA_HOME:-~/.local/share}/ssebench/store)")
	f.StringVar(&g.Home, "home", "", "SSEBench home holding datasets/ and agents/ (default $"+HomeEnv+", else found from the working directory)")
	f.StringVar(&g.Pull, "pull", "missing", "when to pull images from the registry: missing, always or never")
	f.StringSliceVar(&g.Insecure, "insecure-registry", nil, "registry host reached over plain HTTP (localhost and 127.0.0.1 always are)")
	f.BoolVarP(&g.Verbose, "verbose", "v", false, "log each registry request and decisions to stderr (credentials and signed upload state left out)")
	f.BoolVarP(&g.Quiet, "quiet", "q", false, "print no progress, only results and errors")
	f.StringSliceVar(&g.Trusted, "trust-registry", nil, "registry host whose layer facts and tool images are believed unsigned (default $SSEBENCH_TRUSTED_REGISTRIES)")
	f.StringVar(&g.VerifyKey, "verify-key", "", "PEM public key that signatures of registry-borne facts and tool images must verify with (default $SSEBENCH_VERIFY_KEY)")
	f.StringVar(&g.SignKey, "sign-key", "", "PEM private key that signs the layer facts and tool images this machine pushes (default $SSEBENCH_SIGN_KEY)")
	f.StringVar(&g.BuildKitAddr, "buildkit-addr", "", "buildkitd address (default $BUILDKIT_HOST, else unix:///run/buildkit/buildkitd.sock)")
	f.StringVar(&g.ContainerdAddr, "containerd-addr", "", "containerd socket (default $CONTAINERD_ADDRESS, else /run/containerd/containerd.sock)")
	f.DurationVar(&g.RegistryTimeout, "registry-timeout", 0, "time all the registry requests of the command may take together, as in 30m; 0 is none, and inspect takes 10m")
}

// deadline is the registry deadline of this invocation (see
// RegistryTimeout), or the zero time for none.
func (g *Global) deadline() time.Time {
	t := g.RegistryTimeout
	if t <= 0 {
		t = g.DefaultRegistryTimeout
	}
	if t > 0 && g.registryDeadline.IsZero() {
		g.registryDeadline = time.Now().Add(t)
	}
	return g.registryDeadline
}

// HomeDir returns the SSEBench home. It is an error only when --home or
// SSEBENCH_HOME names a folder that does not exist; with neither, and no home
// above the working directory, it returns the working directory.
func (g *Global) HomeDir() (string, error) {
	h := g.Home
	if h == "" {
		h = os.Getenv(HomeEnv)
	}
	if h != "" {
		st, err := os.Stat(h)
		if err != nil || !st.IsDir() {
			return "", fmt.Errorf("SSEBench home %q is not a folder: pass --home or set %s to the checkout that holds datasets/ and agents/", h, HomeEnv)
		}
		return filepath.Abs(h)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the working directory: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isHome(d) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return wd, nil
		}
	}
}

func isHome(d string) bool {
	if _, err := os.Stat(filepath.Join(d, "VERSION")); err != nil {
		return false
	}
	for _, sub := range []string{"datasets", "agents"} {
		if st, err := os.Stat(filepath.Join(d, sub)); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}

// Settings returns the environment-then-.env lookup for this invocation:
// the working directory's .env, then the home's.
func (g *Global) Settings() *naming.Settings {
	wd, _ := os.Getwd()
	home, _ := g.HomeDir()
	return naming.NewSettings(wd, home)
}

// Names returns the image names for this invocation's REGISTRY and VERSION.
func (g *Global) Names() (naming.Names, error) {
	reg, err := g.Settings().Registry(g.Registry)
	if err != nil {
		return naming.Names{}, err
	}
	if err := checkScheme(reg, g.Registry != ""); err != nil {
		return naming.Names{}, err
	}
	return naming.NewNames(reg, ssebench.Version()), nil
}

// Lookup reads a setting from the environment or a .env file.
func (g *Global) Lookup(key string) string {
	v, _, err := g.Settings().Lookup(key)
	if err != nil {
		return ""
	}
	return v
}

// ErrUsage marks errors in how a command was called.
var ErrUsage = errors.New("usage")

// OpenStore opens the local image store: --store, else SSEBENCH_STORE,
// else the default under XDG_DATA_HOME.
func (g *Global) OpenStore() (*store.Store, error) {
	dir := g.Store
	if dir == "" {
		var err error
		if dir, err = store.DefaultDir(); err != nil {
			return nil, err
		}
	}
	acc, err := g.Access()
	if err != nil {
		return nil, err
	}
	// Layers the store recorded without their bytes come through the
	// same registry policy as everything else.
	return store.Open(dir, store.WithFetcher(acc))
}

// LookStore opens the store for a command that only looks (inspect,
// verify): it returns nil, and creates nothing, when there is no store
// yet; readOnly opens it without claiming a temporary directory, so that
// nothing is written even on a full disk.
func (g *Global) LookStore(readOnly bool) (*store.Store, error) {
	dir := g.Store
	if dir == "" {
		var err error
		if dir, err = store.DefaultDir(); err != nil {
			return nil, err
		}
	}
	s, err := store.Open(dir, store.ReadOnly())
	if errors.Is(err, store.ErrNoStore) {
		// A folder with other files is a wrong --store, not a store
		// yet to make: say so rather than go to a registry.
		if ents, rerr := os.ReadDir(dir); rerr == nil && len(ents) > 0 {
			return nil, fmt.Errorf("opening image store %s: the folder holds files but no oci-layout: pass --store with an image store, or a new folder", dir)
		}
		return nil, nil
	}
	if err != nil || readOnly {
		return s, err
	}
	s.Close()
	return g.OpenStore()
}

// Access is this invocation's one way to reach registries (plain-HTTP
// hosts, credentials, retries): the resolver, pushes, the store's fetches,
// BuildKit's pushes and containerd's pulls all take it from here.
func (g *Global) Access() (*remote.Access, error) {
	opts, err := g.RegistryOptions(nil, nil)
	if err != nil {
		return nil, err
	}
	return remote.New(opts...)
}

// RegistryOptions turns the shared flags into registry options: the store,
// the pull policy, plain-HTTP hosts and, when p is not nil, the platform.
func (g *Global) RegistryOptions(s *store.Store, p *v1.Platform) ([]remote.Option, error) {
	pull := g.Pull
	if pull == "" {
		pull = string(remote.PullMissing) // the flag's default
	}
	policy, err := remote.ParsePullPolicy(pull)
	if err != nil {
		return nil, err
	}
	opts := []remote.Option{
		remote.WithPullPolicy(policy),
		remote.WithInsecureRegistries(g.Insecure...),
		remote.WithUserAgent("ssebench/" + ssebench.Version()),
		remote.WithDeadline(g.deadline()),
	}
	if s != nil {
		opts = append(opts, remote.WithStore(s))
	}
	if p != nil {
		opts = append(opts, remote.WithPlatform(p))
	}
	if g.Notices != nil {
		opts = append(opts, remote.WithNotice(g.notice))
	}
	if !g.registryConfigured() {
		opts = append(opts, remote.WithLocalOnly(naming.DefaultRegistry, localOnlyHint))
	}
	return opts, nil
}

// ParsePlatform parses "linux/amd64"-style platforms; "" is nil (the
// library default).
func ParsePlatform(s string) (*v1.Platform, error) {
	if s == "" {
		return nil, nil
	}
	p, err := v1.ParsePlatform(s)
	if err != nil || p.OS == "" || p.Architecture == "" {
		return nil, fmt.Errorf("platform %q is not OS/ARCH: use linux/amd64 or linux/arm64", s)
	}
	return p, nil
}

// StoreOptions opens the local store and returns it with the registry
// options of RegistryOptions (p may be nil). The caller closes the store.
func (g *Global) StoreOptions(p *v1.Platform) (*store.Store, []remote.Option, error) {
	s, err := g.OpenStore()
	if err != nil {
		return nil, nil, err
	}
	opts, err := g.RegistryOptions(s, p)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, opts, nil
}

// Trust returns the trust policy of the flags, else of
// SSEBENCH_TRUSTED_REGISTRIES (comma separated), SSEBENCH_VERIFY_KEY and
// SSEBENCH_SIGN_KEY from the environment or .env. A signing key also
// verifies.
func (g *Global) Trust() (*trust.Policy, error) {
	p := &trust.Policy{Registries: g.Trusted}
	if len(p.Registries) == 0 {
		for _, r := range strings.Split(g.Lookup("SSEBENCH_TRUSTED_REGISTRIES"), ",") {
			if r = strings.TrimSpace(r); r != "" {
				p.Registries = append(p.Registries, r)
			}
		}
	}
	if f := cmp.Or(g.VerifyKey, g.Lookup("SSEBENCH_VERIFY_KEY")); f != "" {
		k, err := trust.LoadPublicKey(f)
		if err != nil {
			return nil, err
		}
		p.Key = k
	}
	if f := cmp.Or(g.SignKey, g.Lookup("SSEBENCH_SIGN_KEY")); f != "" {
		k, err := trust.LoadPrivateKey(f)
		if err != nil {
			return nil, err
		}
		p.Signer = k
		if p.Key == nil {
			p.Key = &k.PublicKey
		}
	}
	return p, nil
}

// checkScheme refuses a registry prefix written as a URL, before anything
// is built under it: image names have no scheme, and how a registry is
// reached is said apart (plain HTTP for loopback, --insecure-registry for
// another host). fromFlag says whether --registry gave it.
func checkScheme(reg string, fromFlag bool) error {
	scheme, rest, ok := strings.Cut(reg, "://")
	if !ok {
		return nil
	}
	where := "--registry"
	if !fromFlag {
		where = naming.RegistryEnv
	}
	how := "HTTPS is the default"
	if strings.EqualFold(scheme, "http") {
		host, _, _ := strings.Cut(rest, "/")
		how = "a loopback registry is reached over plain HTTP as it is; another host needs --insecure-registry " + host
	}
	return fmt.Errorf("%s %s: a registry prefix has no scheme: pass %s (%s)", where, reg, rest, how)
}
