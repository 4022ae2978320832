package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/plugins"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
)

// runtimeName is the shim that runs tasks. Setting it explicitly keeps
// the client from looking up a per-namespace default label on every
// container it creates.
const runtimeName = "io.containerd.runc.v2"

// ErrUnreachable means containerd did not answer at the configured address.
// Match it with errors.Is.
var ErrUnreachable = errors.New("containerd is unreachable")

// Runner runs images with one containerd, in one namespace. It is safe for
// concurrent use by several goroutines as long as their container IDs
// differ. Close it when done.
type Runner struct {
	client      *client.Client
	opts        options
	snapshotter string
	version     string
}

// New connects to containerd, checks that it answers, creates the
// namespace when it is missing and chooses the snapshotter (see
// WithSnapshotter). When containerd does not answer, the error matches
// ErrUnreachable and says how to start it.
func New(ctx context.Context, opts ...Option) (_ *Runner, retErr error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	// The gRPC client connects lazily and would retry until its timeout;
	// dialing the socket first turns a missing daemon into an immediate,
	// precise error.
	if err := probe(ctx, o.address, o.timeout); err != nil {
		return nil, err
	}
	c, err := client.New(o.address,
		client.WithDefaultNamespace(o.namespace),
		client.WithDefaultRuntime(runtimeName),
		client.WithDefaultPlatform(platforms.Only(o.platform)),
		client.WithTimeout(o.timeout),
	)
	if err != nil {
		return nil, unreachable(o.address, err)
	}
	defer func() {
		if retErr != nil {
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	ctx = namespaces.WithNamespace(ctx, o.namespace)
	v, err := c.Version(ctx)
	if err != nil {
		return nil, unreachable(o.address, err)
	}
	if err := c.NamespaceService().Create(ctx, o.namespace, map[string]string{}); err != nil && !errdefs.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating containerd namespace %q: %w", o.namespace, err)
	}
	sn, err := chooseSnapshotter(ctx, c, o.snapshotter)
	if err != nil {
		return nil, err
	}
	return &Runner{client: c, opts: *o, snapshotter: sn, version: v.Version}, nil
}

// Close closes the connection to containerd.
func (r *Runner) Close() error { return r.client.Close() }

// Snapshotter returns the snapshotter that images are unpacked into.
func (r *Runner) Snapshotter() string { return r.snapshotter }

// Namespace returns the containerd namespace the runner works in.
func (r *Runner) Namespace() string { return r.opts.namespace }

// ServerVersion returns the version containerd reported, e.g. "1.6.20".
func (r *Runner) ServerVersion() string { return r.version }

// Platform returns the platform images are run for, e.g. "linux/amd64".
func (r *Runner) Platform() string { return platforms.Format(r.opts.platform) }

// Client returns the underlying containerd client, for callers that need
// more than Run (inspecting a kept container, for example). The Runner
// owns it: do not close it.
func (r *Runner) Client() *client.Client { return r.client }

// withNamespace puts the runner's namespace on ctx. The client adds it to
// every gRPC call anyway, but parts of the client library (snapshot keys,
// leases) read it from the context.
func (r *Runner) withNamespace(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.opts.namespace)
}

func socketPath(addr string) string {
	return strings.TrimPrefix(addr, "unix://")
}

// probe dials containerd's socket once.
func probe(ctx context.Context, addr string, timeout time.Duration) error {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "unix", socketPath(addr))
	if err != nil {
		// The caller gave up (Ctrl-C): that is not containerd's fault.
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("connecting to containerd at %s: %w", addr, cerr)
		}
		return unreachable(addr, err)
	}
	return conn.Close()
}

// unreachable is the one-line error for a containerd that does not
// answer: where, why when it is not the usual "not running", and what to
// do.
func unreachable(addr string, err error) error {
	e := &unreachableError{addr: addr, err: err}
	switch {
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		e.why = "permission denied"
		e.fix = "run as root or get access to the socket"
	case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED):
		e.fix = "start it with scripts/setup.sh"
	default:
		e.why = err.Error()
		e.fix = "start it with scripts/setup.sh"
	}
	return e
}

type unreachableError struct {
	addr, why, fix string
	err            error
}

func (e *unreachableError) Error() string {
	why := ""
	if e.why != "" {
		why = " (" + e.why + ")"
	}
	return fmt.Sprintf("cannot reach containerd at %s%s: %s (or set %s)", e.addr, why, e.fix, AddressEnv)
}

// Unwrap returns the dial or gRPC error.
func (e *unreachableError) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrUnreachable) match.
func (e *unreachableError) Is(target error) bool { return target == ErrUnreachable }

// chooseSnapshotter returns want when containerd reports it working; with
// no choice made, overlayfs, else native.
func chooseSnapshotter(ctx context.Context, c *client.Client, want string) (string, error) {
	if want != "" {
		if err := snapshotterWorks(ctx, c, want); err != nil {
			return "", err
		}
		return want, nil
	}
	err := snapshotterWorks(ctx, c, SnapshotterOverlayFS)
	if err == nil {
		return SnapshotterOverlayFS, nil
	}
	if nerr := snapshotterWorks(ctx, c, SnapshotterNative); nerr != nil {
		return "", fmt.Errorf("%w; and %w", err, nerr)
	}
	return SnapshotterNative, nil
}

// snapshotterWorks asks containerd's introspection service whether the
// snapshotter plugin is loaded and initialised.
func snapshotterWorks(ctx context.Context, c *client.Client, name string) error {
	resp, err := c.IntrospectionService().Plugins(ctx, fmt.Sprintf("type==%s,id==%s", plugins.SnapshotPlugin, name))
	if err != nil {
		return fmt.Errorf("asking containerd for snapshotter %q: %w", name, err)
	}
	if len(resp.Plugins) == 0 {
		return fmt.Errorf("containerd has no snapshotter %q", name)
	}
	if ie := resp.Plugins[0].GetInitErr(); ie != nil {
		return fmt.Errorf("containerd's snapshotter %q does not work here: %s", name, ie.GetMessage())
	}
	return nil
}
