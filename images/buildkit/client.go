package buildkit

import (
	"context"
	"errors"
	"fmt"

	bkclient "github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/llb"
)

// ErrUnreachable is returned (wrapped) by New when no buildkitd answers at the
// address. Match it with errors.Is.
var ErrUnreachable = errors.New("cannot reach buildkitd")

// UnreachableError reports that no buildkitd answered at Address. Its message
// is one line that says how to start the daemon; Err holds the cause.
type UnreachableError struct {
	Address string
	Err     error
}

// Error implements error.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach buildkitd at %s: start it with scripts/setup.sh (or set %s)", e.Address, EnvHost)
}

// Unwrap returns the cause, so that errors.Is(err, context.DeadlineExceeded)
// and the like see through it.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// solver is the part of BuildKit's client that this package uses; unit tests
// put a fake in its place with withSolver.
type solver interface {
	ListWorkers(ctx context.Context, opts ...bkclient.ListWorkersOption) ([]*bkclient.WorkerInfo, error)
	Solve(ctx context.Context, def *llb.Definition, opt bkclient.SolveOpt, statusChan chan *bkclient.SolveStatus) (*bkclient.SolveResponse, error)
	Close() error
}

var _ solver = (*bkclient.Client)(nil)

// Client builds images with one buildkitd. It is safe for concurrent use; the
// caller should Close it to free the connection.
type Client struct {
	opts   *options
	solver solver
}

// New connects to buildkitd and checks, within the connect timeout, that it
// answers. When it does not, the error is an *UnreachableError (and
// errors.Is(err, ErrUnreachable) holds).
func New(ctx context.Context, opts ...Option) (_ *Client, retErr error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	s := o.solver
	if s == nil {
		bc, err := bkclient.New(ctx, o.address)
		if err != nil {
			return nil, fmt.Errorf("connecting to buildkitd at %s: %w", o.address, err)
		}
		s = bc
	}
	defer func() {
		if retErr != nil {
			s.Close()
		}
	}()

	// The gRPC connection is made lazily, so a missing daemon would only
	// show up as a failed build, after the display has started. Asking for
	// the workers is cheap and fails fast.
	pingCtx, cancel := context.WithTimeout(ctx, o.connectTimeout)
	defer cancel()
	workers, err := s.ListWorkers(pingCtx)
	if err != nil {
		return nil, &UnreachableError{Address: o.address, Err: err}
	}
	if len(workers) == 0 {
		return nil, fmt.Errorf("buildkitd at %s has no workers: check its configuration (scripts/setup.sh)", o.address)
	}
	return &Client{opts: o, solver: s}, nil
}

// Address returns the address of the buildkitd this client talks to.
func (c *Client) Address() string { return c.opts.address }

// Close closes the connection to buildkitd.
func (c *Client) Close() error { return c.solver.Close() }
