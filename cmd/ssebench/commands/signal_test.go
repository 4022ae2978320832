package commands_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// blockEnv makes the test binary block opening the FIFO it names, under
// SignalContext as main runs a command: what a command stuck in a syscall
// (an open of a FIFO, a read no context reaches) looks like.
const blockEnv = "SSEBENCH_TEST_BLOCK_FIFO"

func blockOnFIFO(fifo string) {
	ctx, stop := commands.SignalContext(context.Background())
	defer stop()
	go func() {
		<-ctx.Done()
		fmt.Println("cancelled")
	}()
	fmt.Println("ready")
	f, err := os.Open(fifo) // blocks until a writer comes: none will
	if err == nil {
		f.Close()
	}
	os.Exit(3)
}

// TestHostileSecondInterrupt: the first Ctrl-C cancels the command's
// context; a second one ends the process at once even when the command is
// blocked where no context reaches (here, opening a FIFO). Before, the
// second signal was swallowed and only kill -9 stopped it.
func TestHostileSecondInterrupt(t *testing.T) {
	hostile.Case(t, "signals: content loops and a second Ctrl-C")
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), blockEnv+"="+fifo)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("the child said %q, want %q", lines.Text(), want)
		}
	}
	expect("ready")
	time.Sleep(100 * time.Millisecond) // into the open
	cmd.Process.Signal(os.Interrupt)
	expect("cancelled")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("the first Ctrl-C ended the process (%v): it should only cancel the context", err)
	case <-time.After(300 * time.Millisecond):
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
			t.Errorf("the process ended with %v, want killed by SIGINT", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the process still runs 5 s after the second Ctrl-C")
	}
}

// TestHostileInspectDeadline: inspect against a registry that answers
// every request late, and its manifest a few bytes at a time, ends at the
// command's deadline (--registry-timeout) in one line that names it.
func TestHostileInspectDeadline(t *testing.T) {
	hostile.Case(t, "registry: slow reads and deadlines")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second): // under the stall limit
		}
	}))
	defer srv.Close()
	c := newCLI(t)
	start := time.Now()
	_, _, err := c.run(t, "inspect", "--registry-timeout", "1s", strings.TrimPrefix(srv.URL, "http://")+"/slow/img:1")
	if err == nil || !strings.Contains(err.Error(), "past this command's deadline for registry requests") || strings.Contains(err.Error(), "\n") {
		t.Errorf("inspect = %v, want one line saying the deadline passed", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("inspect took %s past a deadline of 1 s", d.Round(time.Millisecond))
	}
}
