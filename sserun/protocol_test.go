package sserun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// echoHandler answers every op with its name and the socket it came on.
type echoHandler struct{}

func (echoHandler) Handle(_ context.Context, req Request, admin bool) Response {
	op := req.Op
	if op == "fail" {
		return Response{Result: Result{Exit: -1}, Error: "no"}
	}
	out := op
	if admin {
		out += " (admin)"
	}
	return Response{Result: Result{OK: true, Output: out}}
}

// serve listens on a new socket and serves h until the test ends.
func serve(t *testing.T, h Handler, admin bool, allow PeerFilter) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l, h, admin, allow) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
	return sock
}

func TestCall(t *testing.T) {
	ctx := context.Background()
	sock := serve(t, echoHandler{}, true, nil)
	for _, tt := range []struct {
		op   string
		want Response
	}{
		{"build", Response{Result: Result{OK: true, Output: "build (admin)"}}},
		{"fail", Response{Result: Result{Exit: -1}, Error: "no"}},
	} {
		got, err := Call(ctx, sock, tt.op)
		if err != nil {
			t.Fatalf("Call(%s) = %v", tt.op, err)
		}
		if diff := cmp.Diff(&tt.want, got); diff != "" {
			t.Errorf("Call(%s) (-want +got):\n%s", tt.op, diff)
		}
	}
	if err := WaitReady(ctx, sock); err != nil {
		t.Errorf("WaitReady() = %v", err)
	}
}

// TestProtocolLines speaks the wire format by hand: one JSON object per
// line each way, several requests on one connection, bad lines answered
// with an error.
func TestProtocolLines(t *testing.T) {
	sock := serve(t, echoHandler{}, false, nil)
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("{\"op\":\"ping\"}\nnot json\n{\"op\":\"test\"}\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	var got []string
	for range 3 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line)
	}
	want := []string{
		`{"ok":true,"exit":0,"output":"ping","duration_ms":0}` + "\n",
		`{"ok":false,"exit":-1,"output":"","duration_ms":0,"error":"reading request: invalid character 'o' in literal null (expecting 'u')"}` + "\n",
		`{"ok":true,"exit":0,"output":"test","duration_ms":0}` + "\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
}

func TestResponseJSON(t *testing.T) {
	r := Response{Result: Result{OK: false, Exit: 1, Output: "x", DurationMS: 3}, Grade: &Grade{
		Build: &Result{OK: true}, Test: &Result{Exit: 124, TimedOut: true},
	}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ok":false,"exit":1,"output":"x","duration_ms":3,"grade":{"build":{"ok":true,"exit":0,"output":"","duration_ms":0},"test":{"ok":false,"exit":124,"output":"","duration_ms":0,"timed_out":true},"poc":null}}`
	if string(b) != want {
		t.Errorf("json.Marshal(Response) =\n%s\nwant\n%s", b, want)
	}
}

func TestServePeerFilter(t *testing.T) {
	sock := serve(t, echoHandler{}, true, func(uid int) error {
		return errors.New("not you")
	})
	resp, err := Call(context.Background(), sock, "ping")
	if err != nil {
		t.Fatal(err)
	}
	if resp.OK || resp.Error != "not you" {
		t.Errorf("Call() = %+v, want the filter's refusal", resp)
	}
	me := os.Getuid()
	sock = serve(t, echoHandler{}, true, func(uid int) error {
		if uid != me {
			t.Errorf("peer uid = %d, want %d", uid, me)
		}
		return nil
	})
	if resp, err := Call(context.Background(), sock, "ping"); err != nil || !resp.OK {
		t.Errorf("Call() = %+v, %v; want ok", resp, err)
	}
}

func TestListen(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "sub", "a.sock")
	l, err := Listen(sock, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	// Closing a listener removes its socket; a crashed daemon leaves it.
	l.SetUnlinkOnClose(false)
	l.Close()
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("stale socket: %v, %v", fi, err)
	}
	l, err = Listen(sock, 0o666)
	if err != nil {
		t.Fatalf("Listen() over a stale socket = %v", err)
	}
	defer l.Close()
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o666 {
		t.Errorf("socket mode = %v, %v; want 0666", fi.Mode().Perm(), err)
	}

	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file, 0o600); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen(regular file) = %v, want a refusal", err)
	}
}

func TestCallContext(t *testing.T) {
	// A handler that never answers: Call must give up when ctx ends.
	block := make(chan struct{})
	defer close(block)
	sock := serve(t, handlerFunc(func(ctx context.Context, op string, admin bool) Response {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return Response{}
	}), false, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Call(ctx, sock, "build"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call() = %v, want a deadline error", err)
	}
	if _, err := Call(context.Background(), filepath.Join(t.TempDir(), "none.sock"), "ping"); err == nil {
		t.Error("Call(no socket) succeeded")
	}
}

type handlerFunc func(ctx context.Context, op string, admin bool) Response

func (f handlerFunc) Handle(ctx context.Context, req Request, admin bool) Response {
	return f(ctx, req.Op, admin)
}

// TestGradeChecks checks that every name of contract.Checks has a field of
// its own in Grade, reached by Check, under the same JSON key: the daemon
// stores a check by its name, and a name without a field would be dropped
// from the grade the entrypoint reads.
func TestGradeChecks(t *testing.T) {
	for i, name := range contract.Checks {
		t.Run(name, func(t *testing.T) {
			var g Grade
			r := &Result{Exit: i + 1}
			g.setCheck(name, r)
			if got := g.Check(name); got != r {
				t.Fatalf("Check(%q) after setCheck(%q, r) = %v, want r", name, name, got)
			}
			for _, other := range contract.Checks {
				if other != name && g.Check(other) != nil {
					t.Errorf("setCheck(%q) set Check(%q) too: the two share a field", name, other)
				}
			}
			data, err := json.Marshal(&g)
			if err != nil {
				t.Fatal(err)
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(data, &keys); err != nil {
				t.Fatal(err)
			}
			var got Result
			if err := json.Unmarshal(keys[name], &got); err != nil || got.Exit != r.Exit {
				t.Errorf("the grade's JSON %q = %s, want the check set by setCheck(%q) (exit %d)", name, keys[name], name, r.Exit)
			}
		})
	}
	var g Grade
	g.setCheck(contract.ManifestTestCheck, &Result{OK: true})
	if diff := cmp.Diff(Grade{}, g); diff != "" {
		t.Errorf("setCheck(%q) changed the grade (-want +got):\n%s", contract.ManifestTestCheck, diff)
	}
}
