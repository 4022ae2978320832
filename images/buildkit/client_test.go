package buildkit

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bkclient "github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/llb"
)

// fakeSolver stands in for buildkitd. Solve sends statuses, closes the
// channel as BuildKit's Solve does, and returns resp or err.
type fakeSolver struct {
	workers    []*bkclient.WorkerInfo
	workersErr error
	statuses   []*bkclient.SolveStatus
	resp       *bkclient.SolveResponse
	err        error
	// block makes Solve wait for its context to end.
	block bool

	gotOpt bkclient.SolveOpt
	closed bool
}

var _ solver = (*fakeSolver)(nil)

func (f *fakeSolver) ListWorkers(context.Context, ...bkclient.ListWorkersOption) ([]*bkclient.WorkerInfo, error) {
	return f.workers, f.workersErr
}

func (f *fakeSolver) Solve(ctx context.Context, def *llb.Definition, opt bkclient.SolveOpt, ch chan *bkclient.SolveStatus) (*bkclient.SolveResponse, error) {
	defer close(ch)
	f.gotOpt = opt
	for _, s := range f.statuses {
		ch <- s
	}
	if f.block {
		<-ctx.Done()
		return nil, errors.New("failed to solve: rpc error: code = Canceled desc = context canceled")
	}
	return f.resp, f.err
}

func (f *fakeSolver) Close() error {
	f.closed = true
	return nil
}

func oneWorker() []*bkclient.WorkerInfo { return []*bkclient.WorkerInfo{{ID: "w0"}} }

func TestNewUnreachableDaemon(t *testing.T) {
	addr := "unix://" + filepath.Join(t.TempDir(), "buildkitd.sock")
	start := time.Now()
	_, err := New(context.Background(), WithAddress(addr), WithConnectTimeout(3*time.Second))
	if err == nil {
		t.Fatal("New() with no daemon = nil error, want one")
	}
	want := "cannot reach buildkitd at " + addr + ": start it with scripts/setup.sh (or set BUILDKIT_HOST)"
	if err.Error() != want {
		t.Errorf("New() error = %q, want %q", err, want)
	}
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("errors.Is(%v, ErrUnreachable) = false, want true", err)
	}
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Err == nil {
		t.Errorf("New() error = %#v, want an *UnreachableError with its cause", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("New() took %s to give up, want at most the connect timeout", d)
	}
}

func TestNewChecksWorkers(t *testing.T) {
	for _, tc := range []struct {
		name          string
		fake          *fakeSolver
		wantErr       string
		wantUnreached bool
	}{
		{name: "reachable", fake: &fakeSolver{workers: oneWorker()}},
		{name: "no answer", fake: &fakeSolver{workersErr: context.DeadlineExceeded}, wantErr: "cannot reach buildkitd at tcp://127.0.0.1:1", wantUnreached: true},
		{name: "no workers", fake: &fakeSolver{}, wantErr: "has no workers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(context.Background(), WithAddress("tcp://127.0.0.1:1"), withSolver(tc.fake))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("New() = %v", err)
				}
				if c.Address() != "tcp://127.0.0.1:1" {
					t.Errorf("Address() = %q, want tcp://127.0.0.1:1", c.Address())
				}
				if err := c.Close(); err != nil || !tc.fake.closed {
					t.Errorf("Close() = %v, closed = %v; want the connection closed", err, tc.fake.closed)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New() = %v, want an error containing %q", err, tc.wantErr)
			}
			if got := errors.Is(err, ErrUnreachable); got != tc.wantUnreached {
				t.Errorf("errors.Is(err, ErrUnreachable) = %v, want %v", got, tc.wantUnreached)
			}
			if !tc.fake.closed {
				t.Error("the connection was left open after New failed")
			}
		})
	}
}
