package commands_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// mainEnv makes the test binary run ssebench itself, with the arguments
// JSON-encoded in it: the kill and concurrency tests need real processes.
const mainEnv = "SSEBENCH_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if fifo := os.Getenv(blockEnv); fifo != "" {
		blockOnFIFO(fifo)
	}
	if a := os.Getenv(mainEnv); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		ctx, stop := commands.SignalContext(context.Background())
		code := commands.Main(ctx, args, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// command is ssebench as a child process, with the test's environment.
func (c *cli) command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	b, _ := json.Marshal(append(args, "--home", c.home))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), mainEnv+"="+string(b), "SSEBENCH_STORE="+c.store)
	cmd.Dir = c.wd
	return cmd
}

// bigCase is caseImage with a layer of incompressible bytes, so that an
// assembly, a push or a save takes long enough to be killed in the middle.
func (c *cli) bigCase(t *testing.T, ref string) {
	t.Helper()
	blob := make([]byte, 24<<20)
	rand.Read(blob)
	img, err := mutate.AppendLayers(caseImage(t), tarLayer(t, folder("data", 0o755), file("data/blob", 0o644, string(blob))))
	if err != nil {
		t.Fatal(err)
	}
	c.storeImage(t, ref, img)
}

// verifyStore asserts that the store is whole and that .tmp holds nothing
// of dead commands once a command has run.
func verifyStore(t *testing.T, dir string) {
	t.Helper()
	s, err := store.Open(dir)
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	defer s.Close()
	probs, err := s.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Errorf("store verify: %s", p)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, ".tmp"))
	for _, e := range ents {
		p := filepath.Join(dir, ".tmp", e.Name())
		if p != s.TempDir() && p != s.TempDir()+".lock" {
			t.Errorf(".tmp holds %s after a command ran", e.Name())
		}
	}
}

// TestKillLoop kills assemble, push, save, load and mirror at random
// moments, 50 times in all: after each kill the store verifies and holds no
// leftovers once the next command ran, no name points at a broken image,
// and a rerun without a kill gives the digests of a serial run.
func TestKillLoop(t *testing.T) {
	reg := testenv.RequireRegistry(t)
	c := newCLI(t)
	prefix := fmt.Sprintf("%s/ssebench-kill-%x", reg, time.Now().UnixNano())
	caseRef, rtRef := prefix+"/case/examples/proj-1", prefix+"/runtime:1"
	c.bigCase(t, caseRef)
	c.storeImage(t, rtRef, runtimeImage(t))
	toolRef := prefix + "/tool/proj-1:" + strings.TrimSpace(string(mustRead(t, filepath.Join(repoRoot, "VERSION"))))
	archive := filepath.Join(c.root, "images.tar")
	assemble := []string{"assemble", "tool", "--case", caseRef, "--task", "proj-1", "--source", "/src/proj", "--runtime", rtRef, "--registry", prefix, "--pull=never"}
	push := []string{"push", toolRef, "--registry", prefix}
	save := []string{"save", "-o", archive, toolRef, "--registry", prefix}
	load := []string{"load", archive, "--force", "--registry", prefix}
	mirror := []string{"mirror", "--to", prefix + "-mirror", "--registry", prefix, toolRef}

	// The serial run: what every rerun must give.
	c.mustRun(t, assemble...)
	c.mustRun(t, push...)
	c.mustRun(t, save...)
	want := c.storedDigest(t, toolRef)
	if err := os.Remove(archive); err != nil {
		t.Fatal(err)
	}

	steps := [][]string{assemble, push, save, load, mirror}
	kills := 0
	for i := 0; kills < 50 && i < 400; i++ {
		args := steps[i%len(steps)]
		if args[0] == "load" {
			if _, err := os.Stat(archive); err != nil {
				c.mustRun(t, save...)
			}
		}
		cmd := c.command(t, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			// Finished before the kill: it must have succeeded.
			if err != nil {
				t.Fatalf("%v (not killed) failed: %v\n%s", args[:2], err, &out)
			}
		case <-time.After(time.Duration(mrand.IntN(150)) * time.Millisecond):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			kills++
		}
		// The next command (here: store verify) finds a whole store, and
		// the tool image, if named, is the one a serial run makes.
		c.mustRun(t, "store", "verify")
		if d, ok := c.storedDigestOK(t, toolRef); ok && d != want {
			t.Fatalf("after a kill of %v the store names %s as %s, want %s", args[:2], toolRef, d, want)
		}
	}
	t.Logf("%d kills", kills)
	if kills < 50 {
		t.Fatalf("only %d kills landed in 400 commands", kills)
	}
	// Reruns without a kill finish and give the serial run's digests.
	for _, args := range steps {
		c.mustRun(t, args...)
	}
	if got := c.storedDigest(t, toolRef); got != want {
		t.Errorf("after the kills the tool image is %s, want %s", got, want)
	}
	verifyStore(t, c.store)
}

// TestConcurrentCommands runs eight commands on one store at once: the
// same assembly twice, the same push four times, and two saves while the
// assemblies run. All succeed, the store verifies, and the digests equal a
// serial run's.
func TestConcurrentCommands(t *testing.T) {
	reg := testenv.RequireRegistry(t)
	c := newCLI(t)
	prefix := fmt.Sprintf("%s/ssebench-conc-%x", reg, time.Now().UnixNano())
	caseRef, rtRef := prefix+"/case/examples/proj-1", prefix+"/runtime:1"
	c.bigCase(t, caseRef)
	c.storeImage(t, rtRef, runtimeImage(t))
	version := strings.TrimSpace(string(mustRead(t, filepath.Join(repoRoot, "VERSION"))))
	toolRef := prefix + "/tool/proj-1:" + version
	assemble := []string{"assemble", "tool", "--case", caseRef, "--task", "proj-1", "--source", "/src/proj", "--runtime", rtRef, "--registry", prefix, "--pull=never"}

	// The serial run: what the concurrent ones must give.
	c.mustRun(t, assemble...)
	want := c.storedDigest(t, toolRef)

	var jobs [][]string
	jobs = append(jobs, assemble, assemble)
	for range 4 {
		jobs = append(jobs, []string{"push", toolRef, "--registry", prefix})
	}
	for i := range 2 {
		jobs = append(jobs, []string{"save", "-o", filepath.Join(c.root, fmt.Sprintf("s%d.tar", i)), caseRef, "--registry", prefix})
	}
	var wg sync.WaitGroup
	errs := make([]string, len(jobs))
	for i, args := range jobs {
		wg.Go(func() {
			cmd := c.command(t, args...)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Sprintf("%v: %v\n%s", args[:2], err, out)
			}
		})
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	if got := c.storedDigest(t, toolRef); got != want {
		t.Errorf("concurrent assemblies made %s, a serial one %s", got, want)
	}
	verifyStore(t, c.store)
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// storedDigest is the digest the store names ref with.
func (c *cli) storedDigest(t *testing.T, ref string) string {
	t.Helper()
	d, ok := c.storedDigestOK(t, ref)
	if !ok {
		t.Fatalf("the store has no %s", ref)
	}
	return d
}

func (c *cli) storedDigestOK(t *testing.T, ref string) (string, bool) {
	t.Helper()
	s, err := store.Open(c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := s.Descriptor(r)
	if err != nil {
		return "", false
	}
	return desc.Digest.String(), true
}
