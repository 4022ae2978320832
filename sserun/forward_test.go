package sserun

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// TestForward relays HTTP through the forwarder to a Unix socket, and a
// reply the server cuts short reaches the client as an error, not a hang.
func TestForward(t *testing.T) {
	dir, err := os.MkdirTemp("", "fwd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cut" {
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "only part")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		io.WriteString(w, "hello "+r.URL.Path)
	})}
	go srv.Serve(l)
	defer srv.Close()

	f, err := Forward("127.0.0.1:0", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &http.Client{Timeout: 5 * time.Second}
	base := "http://" + f.Addr().String()
	for i := 0; i < 3; i++ { // kept-alive connections are relayed too
		resp, err := c.Get(base + "/x")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "hello /x" {
			t.Fatalf("GET /x through the forwarder = %q", b)
		}
	}
	start := time.Now()
	resp, err := c.Get(base + "/cut")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil || strings.Contains(err.Error(), "Timeout") || time.Since(start) > 3*time.Second {
		t.Fatalf("a reply cut short: err %v after %s, want an error at once", err, time.Since(start))
	}
	if err := f.Close(); err != nil && !strings.Contains(err.Error(), "closed") {
		t.Errorf("Close: %v", err)
	}
	if _, err := c.Get(base + "/x"); err == nil {
		t.Errorf("the forwarder still answers after Close")
	}
}

func TestForwardGatewayUnset(t *testing.T) {
	var notes []string
	f := ForwardGateway(func(string) string { return "" }, func(s string, a ...any) { notes = append(notes, s) })
	if f != nil || len(notes) != 0 {
		t.Errorf("ForwardGateway without %s = %v, notes %v", contract.EnvGatewaySocket, f, notes)
	}
	f = ForwardGateway(func(string) string { return "/nonexistent/model.sock" }, func(s string, a ...any) { notes = append(notes, s) })
	if f != nil || len(notes) != 1 {
		t.Errorf("ForwardGateway with a missing socket = %v, notes %v", f, notes)
	}
	f.Close() // a nil forwarder closes
}

// TestForwardGatewayAddr: with SSE_GATEWAY_ADDR (a run on a cluster), the
// forwarder relays contract.GatewayAddr's connections to that TCP address.
func TestForwardGatewayAddr(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "gateway "+r.URL.Path) })}
	go srv.Serve(l)
	defer srv.Close()
	f, err := ForwardTCP("127.0.0.1:0", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + f.Addr().String() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "gateway /v1/models" {
		t.Errorf("through the forwarder: %q", b)
	}
	var notes []string
	env := map[string]string{contract.EnvGatewayAddr: "no-port-here"}
	if f := ForwardGateway(func(k string) string { return env[k] }, func(s string, a ...any) { notes = append(notes, s) }); f != nil || len(notes) != 1 {
		t.Errorf("ForwardGateway with a bad %s = %v, notes %v", contract.EnvGatewayAddr, f, notes)
	}
}
