package sserun

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// TestForwardRevokes closes a gateway's forwarder as the phase end does:
// the gateway gets one POST to its revoke path with the run's token,
// straight to its socket, before the forwarder is gone; a second Close
// sends nothing more.
func TestForwardRevokes(t *testing.T) {
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
	var mu sync.Mutex
	var got []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(l)
	defer srv.Close()

	f, err := Forward("127.0.0.1:0", sock)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	f.token, f.note = "run-token", func(format string, args ...any) { notes = append(notes, format) }
	f.Close()
	f.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "POST "+contract.GatewayRevokePath+" Bearer run-token" {
		t.Errorf("the gateway got %q, want one POST %s with the run's token", got, contract.GatewayRevokePath)
	}
	if len(notes) != 0 {
		t.Errorf("notes %q", notes)
	}
}
