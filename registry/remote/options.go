package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Option configures a Resolver, an Access (New), Push, PushAll, Mirror,
// Fetch or Tag. An option that does not apply to an entry point is ignored
// there (Push ignores WithPullPolicy, for example).
type Option func(*options) error

// PullPolicy says when Resolve asks the registry for an image.
type PullPolicy string

const (
	// PullMissing uses the local store when it has the image and the
	// registry otherwise.
	PullMissing PullPolicy = "missing"
	// PullAlways asks the registry every time; blobs the store already has
	// are still read locally.
	PullAlways PullPolicy = "always"
	// PullNever uses the local store only.
	PullNever PullPolicy = "never"
)

// ParsePullPolicy parses the value of a --pull flag: "missing", "always"
// or "never".
func ParsePullPolicy(s string) (PullPolicy, error) {
	switch p := PullPolicy(strings.ToLower(strings.TrimSpace(s))); p {
	case PullMissing, PullAlways, PullNever:
		return p, nil
	}
	return "", fmt.Errorf("unknown pull policy %q: use missing, always or never", s)
}

// String implements fmt.Stringer.
func (p PullPolicy) String() string { return string(p) }

const (
	// defaultUserAgent names us in registry logs; WithUserAgent adds to it.
	defaultUserAgent = "ssebench"
	// defaultJobs matches remote's own default: enough to fill a link
	// without opening dozens of connections to one registry.
	defaultJobs = 4
	// defaultChunkSize is the size of one PATCH of a chunked upload. A
	// blob up to this size goes in one PUT. Every job holds one chunk in
	// memory, so that a chunk whose connection broke can be sent again
	// without reading the source again.
	defaultChunkSize = 8 << 20
)

type options struct {
	store     *store.Store
	policy    PullPolicy
	insecure  []string
	keychain  authn.Keychain
	platform  v1.Platform
	transport http.RoundTripper
	userAgent string
	jobs      int
	progress  chan<- v1.Update
	// stall bounds a registry's silence (see defaultStall).
	stall time.Duration
	// deadline, when not zero, ends every registry request (see
	// WithDeadline).
	deadline time.Time
	// guarded is the transport of every request, made once, so that
	// every request of these options shares its connections.
	guardOnce sync.Once
	guarded   http.RoundTripper
	// move holds the options of moving images (see moveOptions).
	move moveOptions
	// notice hears what Resolve does before it asks a registry.
	notice func(msg string)
	// localPrefix names images Resolve takes from the store only, unless
	// the policy is PullAlways; localWhy says why, for the error.
	localPrefix, localWhy string
}

// moveOptions are the options of Push, PushAll and Mirror, and of Fetch
// (WithIndexPlatform); package archive's Save and PushLoaded reach them
// through its WithRemote.
type moveOptions struct {
	mountFrom     []string
	reporter      Progress
	chunkSize     int64
	attempts      int
	backoff       time.Duration
	indexPlatform *v1.Platform
}

func defaultMoveOptions() moveOptions {
	return moveOptions{chunkSize: defaultChunkSize, attempts: defaultAttempts, backoff: defaultBackoff}
}

// WithLocalOnly makes Resolve take images whose name starts with prefix
// (a registry host and path, e.g. "registry.example/team") from the store
// only, as PullNever does, unless the policy is PullAlways; a miss fails
// with an error matching store.ErrNotFound that ends with hint. ssebench
// uses it for the default REGISTRY when nothing configured one, so that
// the registry is never asked unless the user said so.
func WithLocalOnly(prefix, hint string) Option {
	return func(o *options) error {
		o.localPrefix, o.localWhy = strings.TrimSuffix(prefix, "/"), hint
		return nil
	}
}

// WithNotice makes Resolve tell fn, before it asks a registry for an
// image, that the local store lacks it: a command then says why it goes to
// the network (and which registry), not only when that fails.
func WithNotice(fn func(msg string)) Option {
	return func(o *options) error {
		o.notice = fn
		return nil
	}
}

// defaultPlatform is linux/<host arch>: SPEC.md section 9 runs every image
// as linux, and the host's architecture avoids emulation.
func defaultPlatform() v1.Platform {
	return v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		policy:    PullMissing,
		keychain:  authn.DefaultKeychain,
		platform:  defaultPlatform(),
		transport: remote.DefaultTransport,
		userAgent: defaultUserAgent,
		jobs:      defaultJobs,
		stall:     defaultStall,
		move:      defaultMoveOptions(),
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.store != nil {
		// What the store recorded without its bytes is fetched with
		// these very options: one policy for every registry request.
		o.store.Lend(&Access{o: o})
	}
	return o, nil
}

// WithStore names the local image store that Resolve reads first and that
// pulled images are recorded in, and lends the store these options'
// registry access for the layers it records without their bytes (see
// store.Store.Lend). The default is no store: every image comes from its
// registry and nothing is kept.
func WithStore(s *store.Store) Option {
	return func(o *options) error {
		o.store = s
		return nil
	}
}

// WithPullPolicy sets when Resolve asks the registry (see ParsePullPolicy).
// The default value is PullMissing.
func WithPullPolicy(p PullPolicy) Option {
	return func(o *options) error {
		if _, err := ParsePullPolicy(string(p)); err != nil {
			return err
		}
		o.policy = p
		return nil
	}
}

// WithInsecureRegistries names registries (host or host:port) that may be
// reached over plain HTTP, or over HTTPS without certificate verification.
// Loopback hosts (localhost, 127.0.0.1, [::1], any port) always may. A host
// without a port matches every port of that host. The default is none.
func WithInsecureRegistries(hosts ...string) Option {
	return func(o *options) error {
		for _, h := range hosts {
			h = strings.TrimSpace(h)
			if h == "" || strings.ContainsAny(h, "/ ") {
				return fmt.Errorf("insecure registry %q is not a host or host:port", h)
			}
			o.insecure = append(o.insecure, strings.ToLower(h))
		}
		return nil
	}
}

// WithKeychain sets where registry credentials come from. The default is
// authn.DefaultKeychain: the Docker config file and its credential helpers.
func WithKeychain(k authn.Keychain) Option {
	return func(o *options) error {
		if k == nil {
			return errors.New("keychain is nil: use authn.DefaultKeychain or authn.NewMultiKeychain()")
		}
		o.keychain = k
		return nil
	}
}

// WithPlatform sets the platform picked from an image index. A nil platform
// means the default, linux/<host architecture> (runtime.GOARCH).
func WithPlatform(p *v1.Platform) Option {
	return func(o *options) error {
		if p == nil {
			o.platform = defaultPlatform()
			return nil
		}
		if p.OS == "" || p.Architecture == "" {
			return fmt.Errorf("platform %q needs an OS and an architecture, as in linux/amd64", p.String())
		}
		o.platform = *p
		return nil
	}
}

// WithTransport sets the HTTP transport under the retries, the user agent
// and the plain-HTTP guard. The default is remote.DefaultTransport.
func WithTransport(t http.RoundTripper) Option {
	return func(o *options) error {
		if t == nil {
			return errors.New("transport is nil")
		}
		o.transport = t
		return nil
	}
}

// WithUserAgent adds ua to the User-Agent sent to registries, which starts
// with "ssebench". The default adds nothing.
func WithUserAgent(ua string) Option {
	return func(o *options) error {
		if ua = strings.TrimSpace(ua); ua != "" {
			o.userAgent = defaultUserAgent + " " + ua
		}
		return nil
	}
}

// WithDeadline ends every registry request of these options at t: none
// starts after it, and one still running stops there, with an error that
// says so. A command sets one so that a registry that answers slowly but
// never stops (a byte every few seconds, within the stall limit, on one
// blob after another) cannot hold it for hours. The zero time means none,
// the default.
func WithDeadline(t time.Time) Option {
	return func(o *options) error {
		o.deadline = t
		return nil
	}
}

// WithJobs sets how many blobs Push uploads at once. The default value is 4.
func WithJobs(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("jobs must be at least 1, got %d", n)
		}
		o.jobs = n
		return nil
	}
}

// withProgress makes Push send upload progress to ch. Push closes ch when it
// returns; give ch a buffer or read it from another goroutine. The default is
// no progress.
func withProgress(ch chan<- v1.Update) Option {
	return func(o *options) error {
		o.progress = ch
		return nil
	}
}

// parseReference parses s and marks its registry insecure (plain HTTP
// allowed) when it is a loopback host or an insecure registry.
func (o *options) parseReference(s string) (name.Reference, error) {
	ref, err := name.ParseReference(s)
	if err != nil {
		return nil, fmt.Errorf("parsing image reference %q: %w", s, err)
	}
	if o.allowHTTP(ref.Context().RegistryStr()) {
		if ref, err = name.ParseReference(s, name.Insecure); err != nil {
			return nil, fmt.Errorf("parsing image reference %q: %w", s, err)
		}
	}
	return ref, nil
}

// parseRepository parses a repository name, allowing plain HTTP as
// parseReference does.
func (o *options) parseRepository(s string) (name.Repository, error) {
	r, err := name.NewRepository(s)
	if err != nil {
		return r, fmt.Errorf("parsing repository name %q: %w", s, err)
	}
	if o.allowHTTP(r.RegistryStr()) {
		return name.NewRepository(s, name.Insecure)
	}
	return r, nil
}

// allowHTTP reports whether host (host or host:port) may be reached over
// plain HTTP.
func (o *options) allowHTTP(host string) bool {
	return isLoopback(host) || o.isInsecure(host)
}

func (o *options) isInsecure(host string) bool {
	host = strings.ToLower(host)
	bare := hostOnly(host)
	for _, h := range o.insecure {
		if h == host {
			return true
		}
		// An entry without a port matches every port of its host.
		if hb := hostOnly(h); hb == strings.Trim(h, "[]") && hb == bare {
			return true
		}
	}
	return false
}

// hostOnly strips the port (and IPv6 brackets) from host:port.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

func isLoopback(host string) bool {
	h := hostOnly(host)
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// remoteOptions turns the options into go-containerregistry remote options.
// ctx is kept by remote for lazy reads (layers fetched after Resolve
// returns), as remote.WithContext documents.
func (o *options) remoteOptions(ctx context.Context) []remote.Option {
	ro := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(o.keychain),
		// Logged here, as every other request (log.go), after a
		// loopback URL became plain HTTP.
		remote.WithTransport(plainLoopback{logRequests(o.guardedTransport())}),
		remote.WithUserAgent(o.userAgent),
		remote.WithJobs(o.jobs),
		// One retry loop per request, ours (see retryTransport): theirs
		// would wait 1 s and 3 s whatever the Retry-After, and multiply
		// our attempts.
		remote.WithRetryBackoff(remote.Backoff{Steps: 1}),
		remote.WithRetryStatusCodes(),
		remote.WithRetryPredicate(func(error) bool { return false }),
	}
	if o.progress != nil {
		ro = append(ro, remote.WithProgress(o.progress))
	}
	return ro
}

// guardedTransport returns the transport under every request of o, made
// the first time: one connection pool for all of them. (A transport per
// request kept a connection open for each repository a mirror --all
// listed, and ran out of file descriptors at about 20,000.)
func (o *options) guardedTransport() http.RoundTripper {
	o.guardOnce.Do(func() { o.guarded = o.newGuardedTransport() })
	return o.guarded
}

func (o *options) newGuardedTransport() http.RoundTripper {
	g := &httpGuard{base: plainLoopback{o.retrying(manifestCheck{base: stallTransport(o.transport, o.stall, o.deadline)})}, opts: o}
	// Insecure registries may use self-signed certificates, as Docker's
	// insecure-registries setting allows; everyone else is verified.
	if t, ok := o.transport.(*http.Transport); ok && len(o.insecure) > 0 {
		c := t.Clone()
		if c.TLSClientConfig == nil {
			c.TLSClientConfig = &tls.Config{}
		}
		c.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // only for registries the user named insecure
		g.skipVerify = o.retrying(manifestCheck{base: stallTransport(c, o.stall, o.deadline)})
	}
	return g
}

// retrying wraps base in the retries of retryTransport.
func (o *options) retrying(base http.RoundTripper) http.RoundTripper {
	return &retryTransport{base: base, attempts: o.move.attempts, backoff: o.move.backoff}
}

// httpGuard refuses plain HTTP to hosts that are neither loopback nor named
// insecure. go-containerregistry itself falls back to HTTP for private
// (RFC 1918) addresses too; we do not, so credentials never cross a network
// in clear text unless the user asked for it.
type httpGuard struct {
	base       http.RoundTripper
	skipVerify http.RoundTripper
	opts       *options
}

var _ http.RoundTripper = (*httpGuard)(nil)

// RoundTrip implements http.RoundTripper.
func (g *httpGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	host := req.URL.Host
	if req.URL.Scheme == "http" && !g.opts.allowHTTP(host) {
		return nil, fmt.Errorf("refusing plain HTTP to %s: only loopback hosts and insecure registries may use HTTP (add it with --insecure-registry %s)", host, host)
	}
	if req.URL.Scheme == "https" && g.skipVerify != nil && g.opts.isInsecure(host) {
		return g.skipVerify.RoundTrip(req)
	}
	return g.base.RoundTrip(req)
}

// WithMountFrom names repositories (full names, e.g.
// localhost:5000/ssebench/case/examples/gocsv-1) that probably hold some of
// the blobs Push uploads, such as the case image's repository for a tool
// image. Push asks the registry to mount a missing blob from them before
// uploading it; a repository of another registry is ignored.
func WithMountFrom(repos ...string) Option {
	return func(o *options) error {
		for _, r := range repos {
			if _, err := name.NewRepository(r); err != nil {
				return fmt.Errorf("mount source %q is not a repository name: %w", r, err)
			}
			o.move.mountFrom = append(o.move.mountFrom, r)
		}
		return nil
	}
}

// WithBlobProgress makes Push, PushAll and Mirror report each blob to p as
// it is checked, mounted or uploaded (the CLI's is a ProgressPrinter).
// The default is no reports.
func WithBlobProgress(p Progress) Option {
	return func(o *options) error {
		o.move.reporter = p
		return nil
	}
}

// withChunkSize sets the size of one request of a chunked upload; blobs up
// to n bytes go in a single request. The default value is 8 MiB.
func withChunkSize(n int64) Option {
	return func(o *options) error {
		if n < 1024 {
			return fmt.Errorf("chunk size must be at least 1024 bytes, got %d", n)
		}
		o.move.chunkSize = n
		return nil
	}
}

// withRetries sets how many times a registry request is tried when the
// registry answers 5xx or 429 or the connection breaks, and the wait before
// the first retry, which doubles each time. The default is 5 attempts,
// 500ms apart at first.
func withRetries(attempts int, backoff time.Duration) Option {
	return func(o *options) error {
		if attempts < 1 || backoff < 0 {
			return fmt.Errorf("retries need at least 1 attempt and a backoff of 0 or more, got %d and %s", attempts, backoff)
		}
		o.move.attempts, o.move.backoff = attempts, backoff
		return nil
	}
}

// WithIndexPlatform makes Mirror and Fetch (and so package archive's Save)
// take only p's image out of an image index; the copied name then names
// that image. The default copies
// whole indexes.
func WithIndexPlatform(p *v1.Platform) Option {
	return func(o *options) error {
		if p != nil && (p.OS == "" || p.Architecture == "") {
			return fmt.Errorf("platform %q needs an OS and an architecture, as in linux/amd64", p.String())
		}
		o.move.indexPlatform = p
		return nil
	}
}
