package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const helperEnv = "SSEBENCH_REGISTRY_TEST_HELPER"

func TestStoreConcurrentGoroutines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	var want []string
	for i := range writers {
		ref := fmt.Sprintf("localhost:5000/g/img%d:1", i)
		want = append(want, ref)
		img := randomImage(t, 2000, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer opens its own Store, as separate commands would.
			s, err := Open(dir)
			if err == nil {
				err = s.Write(context.Background(), mustRef(t, ref), img)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Write: %v", err)
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, entryNames(t, s)); diff != "" {
		t.Errorf("entries after concurrent writes (-want +got):\n%s", diff)
	}
	checkStore(t, dir)
}

// TestHelperProcess is not a test: other tests run the test binary again
// with helperEnv set, to get a second process writing to a store.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for other tests")
	}
	dir := os.Getenv(helperEnv + "_DIR")
	s, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	switch mode {
	case "write-many":
		id := os.Getenv(helperEnv + "_ID")
		for i := range 5 {
			ref := mustRef(t, fmt.Sprintf("localhost:5000/p%s/img%d:1", id, i))
			if err := s.Write(ctx, ref, randomImage(t, 3000, 2)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	case "write-slow":
		if err := s.Write(ctx, mustRef(t, "localhost:5000/done:1"), randomImage(t, 1000, 1)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		slow := &slowLayer{marker: os.Getenv(helperEnv + "_MARKER")}
		err := s.Write(ctx, mustRef(t, "localhost:5000/killed:1"), imageWith(t, slow))
		fmt.Fprintln(os.Stderr, "the slow write was not killed:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// slowLayer writes a marker file once it has produced a megabyte, then
// trickles zeros until its process is killed.
type slowLayer struct{ marker string }

func (l *slowLayer) Digest() (v1.Hash, error) {
	return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ef", 32)}, nil
}

func (l *slowLayer) Size() (int64, error) { return 1 << 40, nil }

func (l *slowLayer) DiffID() (v1.Hash, error) { return fakeDiffID, nil }

func (l *slowLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }

func (l *slowLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(&trickle{marker: l.marker}), nil
}

type trickle struct {
	marker string
	n      int64
}

func (r *trickle) Read(p []byte) (int, error) {
	if r.n >= 1<<20 {
		if r.n < 1<<20+int64(len(p)) {
			os.WriteFile(r.marker, nil, 0o644)
		}
		time.Sleep(5 * time.Millisecond)
	}
	p = p[:min(len(p), 64<<10)]
	clear(p)
	r.n += int64(len(p))
	return len(p), nil
}

func helperCommand(t *testing.T, mode, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperEnv+"_DIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func TestStoreConcurrentProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for _, id := range []string{"1", "2"} {
		cmd := helperCommand(t, "write-many", dir, helperEnv+"_ID="+id)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer process %d: %v: %s", i+1, err, outs[i])
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, id := range []string{"1", "2"} {
		for i := range 5 {
			want = append(want, fmt.Sprintf("localhost:5000/p%s/img%d:1", id, i))
		}
	}
	if diff := cmp.Diff(want, entryNames(t, s)); diff != "" {
		t.Errorf("entries after two processes wrote (-want +got):\n%s", diff)
	}
	checkStore(t, dir)
}

func TestStoreSurvivesSIGKILL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	marker := filepath.Join(t.TempDir(), "halfway")
	cmd := helperCommand(t, "write-slow", dir, helperEnv+"_MARKER="+marker)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the writer never got halfway: %s", &out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// The killed write left its temporary file in its own directory.
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".tmp", "p*", ingestPrefix+"*"))
	if len(leftovers) == 0 {
		t.Fatal("no temporary file left by the killed write; did it write straight into the pool?")
	}
	// The next command finds the directory of a dead process and
	// removes it: .tmp holds nothing but its own.
	checkStore(t, dir)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"localhost:5000/done:1"}, entryNames(t, s)); diff != "" {
		t.Errorf("entries after the writer was killed (-want +got):\n%s", diff)
	}
	for _, p := range leftovers {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the killed write's %s is still there after the next Open", p)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, ".tmp"))
	for _, e := range ents {
		if p := filepath.Join(dir, ".tmp", e.Name()); p != s.TempDir() && p != s.TempDir()+".lock" && !strings.HasPrefix(p, filepath.Join(dir, ".tmp", fmt.Sprintf("p%d-", os.Getpid()))) {
			t.Errorf(".tmp holds %s after the next command", e.Name())
		}
	}
	checkStore(t, dir)
}
