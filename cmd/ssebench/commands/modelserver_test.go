package commands_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// docCommands returns the ssebench command lines of the fenced block
// that follows marker in the doc, split into arguments ("&" dropped).
func docCommands(t *testing.T, doc, marker string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, doc))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("%s has no %q", doc, marker)
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	var cmds [][]string
	for _, line := range strings.Split(block, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "ssebench" {
			continue
		}
		if f[len(f)-1] == "&" {
			f = f[:len(f)-1]
		}
		cmds = append(cmds, f[1:])
	}
	return cmds
}

// TestModelServerFlow runs docs/models.md's two command lines as they are
// written: the scripted model server from the example script, and a run
// of agents/loop on the example task with the example model file, which
// passes with no key and no network. Only the port differs (a free one,
// in the server's --listen and the copied model file), so that the test
// takes no fixed port of the machine.
func TestModelServerFlow(t *testing.T) {
	s := requireServices(t)
	c := newCLI(t)
	// The folder as it is in the repository: ssebench compiles its
	// go_build program, which needs the module around it.
	if err := os.MkdirAll(filepath.Join(c.home, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repoRoot, "agents", "loop"), filepath.Join(c.home, "agents", "loop")); err != nil {
		t.Fatal(err)
	}
	cmds := docCommands(t, "docs/models.md", "<!-- TestModelServerFlow")
	if len(cmds) != 2 || cmds[0][0] != "model-server" || cmds[1][0] != "run" {
		t.Fatalf("docs/models.md's block is %q, want model-server then run", cmds)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// The examples, relative to the working directory as in the doc.
	copyTree(t, "examples/models", filepath.Join(c.wd, "examples", "models"))
	for _, f := range []string{"scripted.yaml", "scripted-responses.yaml"} {
		p := filepath.Join(c.wd, "examples", "models", f)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("127.0.0.1:4010")) {
			t.Fatalf("%s does not name 127.0.0.1:4010, the server's default address", f)
		}
		if err := os.WriteFile(p, bytes.ReplaceAll(b, []byte("127.0.0.1:4010"), []byte(addr)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var srvErr bytes.Buffer
	srvDone := make(chan error, 1)
	go func() {
		cmd := commands.New()
		cmd.SetArgs(append(cmds[0], "--listen", addr, "--home", c.home))
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&srvErr)
		srvDone <- cmd.ExecuteContext(ctx)
	}()
	for i := 0; ; i++ {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case err := <-srvDone:
			t.Fatalf("model-server ended: %v\n%s", err, srvErr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if i > 100 {
			t.Fatalf("model-server does not listen on %s", addr)
		}
	}
	// The images the run needs, while the server waits.
	daemons := buildWorld(t, c, s)
	runs := filepath.Join(c.root, "runs")
	out, stderr, err := c.run(t, append(cmds[1], append([]string{"--runs-dir", runs, "--timeout", "600"}, daemons...)...)...)
	cancel()
	if serr := <-srvDone; serr != nil {
		t.Errorf("model-server stopped with %v\n%s", serr, srvErr.String())
	}
	if err != nil || !strings.Contains(stderr, "PASSED") {
		t.Fatalf("run = %v, want PASSED\n%s%s", err, out, stderr)
	}
	all, err := results.List(runs)
	if err != nil || len(all) != 1 {
		t.Fatalf("runs: %d (%v), want 1", len(all), err)
	}
	r := all[0]
	if r.Agent() != "loop" || r.Model() != "scripted" || !r.Passed() {
		t.Errorf("the run: agent %s, model %s, %s; want loop, scripted, PASSED", r.Agent(), r.Model(), r.Grade())
	}
	if u := r.Summary.ModelUsage; u == nil || u.Requests != 2 || u.InputTokens != 2500 || u.OutputTokens != 100 {
		t.Errorf("model_usage = %+v, want the script's 2 requests, 2500+100 tokens", u)
	}
	// The example model file is priced: $3 and $15 per million tokens.
	if want := 0.0075 + 0.0015; !r.Priced || r.CostUSD < want-1e-9 || r.CostUSD > want+1e-9 {
		t.Errorf("the run's cost = %v (priced %v), want $%.4f", r.CostUSD, r.Priced, want)
	}
	if _, err := contract.ReadRunResult(r.Dir); err != nil {
		t.Error(err)
	}
}
