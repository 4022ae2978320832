package buildkit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bkclient "github.com/moby/buildkit/client"
	digest "github.com/opencontainers/go-digest"
)

const fakeDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// newFakeClient returns a Client over fake whose progress goes to the
// returned buffer and whose output directories go under the returned dir.
func newFakeClient(t *testing.T, fake *fakeSolver) (*Client, *bytes.Buffer, string) {
	t.Helper()
	fake.workers = oneWorker()
	var progress bytes.Buffer
	tmp := t.TempDir()
	c, err := New(context.Background(), withSolver(fake), WithProgress(&progress), WithProgressMode(ProgressPlain), WithTempDir(tmp))
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, &progress, tmp
}

func runStatus() []*bkclient.SolveStatus {
	v := digest.FromString("run")
	start := time.Unix(100, 0)
	end := start.Add(1500 * time.Millisecond)
	return []*bkclient.SolveStatus{
		{Vertexes: []*bkclient.Vertex{{Digest: v, Name: "[1/1] RUN echo hello", Started: &start}}},
		{Logs: []*bkclient.VertexLog{
			{Vertex: v, Data: []byte("hel"), Timestamp: start},
			{Vertex: v, Data: []byte("lo\n"), Timestamp: start},
		}},
		{Vertexes: []*bkclient.Vertex{{Digest: v, Name: "[1/1] RUN echo hello", Started: &start, Completed: &end}}},
	}
}

func TestBuildToLayout(t *testing.T) {
	fake := &fakeSolver{
		statuses: runStatus(),
		resp:     &bkclient.SolveResponse{ExporterResponse: map[string]string{"containerimage.digest": fakeDigest}},
	}
	c, progress, tmp := newFakeClient(t, fake)
	ctxDir := contextDir(t, "FROM scratch\n")

	res, err := c.Build(context.Background(), Request{ContextDir: ctxDir})
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	if res.Digest.String() != fakeDigest {
		t.Errorf("Digest = %s, want %s", res.Digest, fakeDigest)
	}
	if res.Pushed != "" {
		t.Errorf("Pushed = %q, want empty", res.Pushed)
	}
	if filepath.Dir(res.LayoutDir) != tmp {
		t.Errorf("LayoutDir = %q, want a new directory under %q", res.LayoutDir, tmp)
	}
	if got := fake.gotOpt.Exports[0].OutputDir; got != res.LayoutDir {
		t.Errorf("exporter wrote to %q, want the result's LayoutDir %q", got, res.LayoutDir)
	}
	// The step, its log line (joined from two chunks) and how it ended, in
	// that order; the display may add timestamps.
	out := progress.String()
	rest := out
	for _, want := range []string{"#1 [1/1] RUN echo hello\n", " hello\n", "#1 DONE 1.5s\n"} {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("progress = %q, want %q in it (after the lines before)", out, want)
		}
		rest = rest[i+len(want):]
	}

	if err := res.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if _, err := os.Stat(res.LayoutDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LayoutDir after Close: %v, want it removed", err)
	}
	if err := res.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
}

func TestBuildPush(t *testing.T) {
	fake := &fakeSolver{resp: &bkclient.SolveResponse{ExporterResponse: map[string]string{"containerimage.digest": fakeDigest}}}
	c, _, tmp := newFakeClient(t, fake)
	ref := "127.0.0.1:5000/ssebench/x:1"

	res, err := c.Build(context.Background(), Request{ContextDir: contextDir(t, "FROM scratch\n"), Push: ref})
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	if res.Digest.String() != fakeDigest || res.Pushed != ref || res.LayoutDir != "" {
		t.Errorf("Build() = %+v, want digest %s pushed to %s and no layout", res, fakeDigest, ref)
	}
	if _, err := res.Image(); err == nil {
		t.Error("Image() of a pushed result = nil error, want one")
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("a push left %d entries in the temp dir, want none", len(entries))
	}
}

func TestBuildFailure(t *testing.T) {
	solveErr := errors.New("failed to solve: process \"/bin/sh -c exit 3\" did not complete successfully: exit code: 3")
	fake := &fakeSolver{statuses: runStatus(), err: solveErr}
	c, _, tmp := newFakeClient(t, fake)
	df := filepath.Join(contextDir(t, "FROM scratch\n"), "Dockerfile")

	_, err := c.Build(context.Background(), Request{ContextDir: filepath.Dir(df), Target: "test"})
	if err == nil {
		t.Fatal("Build() = nil error, want one")
	}
	want := `building "` + df + `" (target "test"): process "/bin/sh -c exit 3" did not complete successfully: exit code: 3`
	if err.Error() != want {
		t.Errorf("Build() error = %q, want %q", err, want)
	}
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("Build() error is %T, want *BuildError", err)
	}
	if !errors.Is(err, solveErr) || be.Dockerfile != df {
		t.Errorf("BuildError = %+v, want the solve error and the Dockerfile", be)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("a failed build left %d entries in the temp dir, want none", len(entries))
	}
}

func TestBuildCancelled(t *testing.T) {
	fake := &fakeSolver{statuses: runStatus(), block: true}
	c, _, tmp := newFakeClient(t, fake)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)

	_, err := c.Build(ctx, Request{ContextDir: contextDir(t, "FROM scratch\n")})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Build() = %v, want an error that matches context.Canceled", err)
	}
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Errorf("Build() error spans lines: %q", err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("a cancelled build left %d entries in the temp dir, want none", len(entries))
	}
}

func TestBuildInvalidRequestSendsNothing(t *testing.T) {
	fake := &fakeSolver{}
	c, progress, _ := newFakeClient(t, fake)
	_, err := c.Build(context.Background(), Request{ContextDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "reading Dockerfile") {
		t.Errorf("Build() = %v, want an error about the missing Dockerfile", err)
	}
	if fake.gotOpt.Frontend != "" || progress.Len() != 0 {
		t.Error("an invalid request reached the solver")
	}
}

func TestBuildMissingDigest(t *testing.T) {
	fake := &fakeSolver{resp: &bkclient.SolveResponse{}}
	c, _, _ := newFakeClient(t, fake)
	_, err := c.Build(context.Background(), Request{ContextDir: contextDir(t, "FROM scratch\n")})
	if err == nil || !strings.Contains(err.Error(), "no image digest") {
		t.Errorf("Build() = %v, want an error about the missing digest", err)
	}
}

func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"failed to solve: exit code: 1", "exit code: 1"},
		{"dockerfile parse error on line 2:\n  unknown instruction: FOO\n", "dockerfile parse error on line 2: unknown instruction: FOO"},
		{"context canceled\nfailed to solve: context canceled", "context canceled"},
		{"first\nsecond", "first; second"},
		{"plain", "plain"},
	} {
		if got := oneLine(tc.in); got != tc.want {
			t.Errorf("oneLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestBuildFailureKeepsStepOutput: the error of a failed build ends with
// the last lines the failing step printed (its partial last line too),
// not those of a step that succeeded, for a build nobody watched.
func TestBuildFailureKeepsStepOutput(t *testing.T) {
	ok, bad := digest.FromString("ok"), digest.FromString("bad")
	var logs []*bkclient.VertexLog
	for i := range 7 {
		logs = append(logs, &bkclient.VertexLog{Vertex: bad, Data: []byte("line " + string(rune('1'+i)) + "\n")})
	}
	logs = append(logs, &bkclient.VertexLog{Vertex: bad, Data: []byte("cannot find libfoo.so")},
		&bkclient.VertexLog{Vertex: ok, Data: []byte("all good\n")})
	fake := &fakeSolver{statuses: []*bkclient.SolveStatus{
		{Logs: logs},
		{Vertexes: []*bkclient.Vertex{{Digest: ok, Name: "[1/2] RUN true"}, {Digest: bad, Name: "[2/2] RUN make", Error: "exit code: 2"}}},
	}, err: errors.New("failed to solve: process \"/bin/sh -c make\" did not complete successfully: exit code: 2")}
	c, _, _ := newFakeClient(t, fake)
	df := filepath.Join(contextDir(t, "FROM scratch\n"), "Dockerfile")
	_, err := c.Build(context.Background(), Request{ContextDir: filepath.Dir(df)})
	want := `building "` + df + `": process "/bin/sh -c make" did not complete successfully: exit code: 2; its last output: line 4 | line 5 | line 6 | line 7 | cannot find libfoo.so`
	if err == nil || err.Error() != want {
		t.Errorf("Build() error = %v, want %q", err, want)
	}
}
