package commands_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// docBlocks returns the ssebench command lines of the first n fenced sh
// blocks after marker in the doc, each split into arguments, with
// "$VAR" expanded and its quotes dropped.
func docBlocks(t *testing.T, doc, marker string, n int) [][][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, doc))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("%s has no %q", doc, marker)
	}
	var blocks [][][]string
	for i := 0; i < n; i++ {
		var block string
		_, rest, _ = strings.Cut(rest, "```sh\n")
		block, rest, _ = strings.Cut(rest, "```")
		var cmds [][]string
		for _, line := range strings.Split(block, "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || f[0] != "ssebench" {
				continue
			}
			for j := range f {
				f[j] = os.ExpandEnv(strings.Trim(f[j], `"`))
			}
			cmds = append(cmds, f[1:])
		}
		blocks = append(blocks, cmds)
	}
	return blocks
}

// TestRegistryFlow runs docs/registries.md's way from an empty prefix to
// a graded --prebuilt run, its command lines as they are written (the
// registry prefix made the test's own): tasks check names every image a
// run needs and prints exactly the commands the doc runs next; after them
// a run builds the rest and pushes; then, on an empty store as on another
// machine, the --prebuilt run is refused without --trust-registry, naming
// it, and graded with it.
func TestRegistryFlow(t *testing.T) {
	s := requireServices(t)
	c := newCLI(t)
	const docPrefix, docHost = "127.0.0.1:5000/team", "127.0.0.1:5000"
	prefix := s.reg + "/ssebench-flow40-" + randomHex(4)
	t.Setenv("SSEBENCH_OS_IMAGE", s.osImage)
	testenv.RemoveImagesAfter(t, s.ctrd, prefix+"/")
	blocks := docBlocks(t, "docs/registries.md", "<!-- TestRegistryFlow", 2)
	build, use := blocks[0], blocks[1]
	if len(build) != 4 || build[0][0] != "tasks" || build[1][0] != "base-images" || build[2][0] != "runtime" || build[3][0] != "run" || len(use) != 1 {
		t.Fatalf("docs/registries.md's blocks are %q and %q, want tasks check, base-images, runtime build, run; then a run", build, use)
	}
	fix := func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			a = strings.ReplaceAll(a, docPrefix, prefix)
			out[i] = strings.ReplaceAll(a, docHost, s.reg)
		}
		return out
	}
	// The flow runs from the checkout, as the doc says: its datasets,
	// agents and source tree (runtime build compiles it).
	daemons := []string{"--home", repoRoot, "--buildkit-addr", s.bk, "--containerd-addr", s.ctrd}
	runs := filepath.Join(c.root, "runs")
	run := func(args []string) (string, string, error) {
		t.Helper()
		args = append(fix(args), daemons...)
		if args[0] == "run" {
			args = append(args, "--runs-dir", runs, "--timeout", "600")
		}
		t.Logf("ssebench %s", strings.Join(args, " "))
		return c.run(t, args...)
	}
	graded := func(what string, stderr string, err error) {
		t.Helper()
		var exit *commands.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.Code == commands.ExitFailed) {
			t.Fatalf("%s = %v\n%s", what, err, stderr)
		}
		if !strings.Contains(stderr, "FAILED: poc, intent_test (build ✓ test ✓)") {
			t.Errorf("%s did not end with the dummy's grade:\n%s", what, stderr)
		}
	}

	// tasks check: everything missing, and the next two lines of the doc
	// are what it prints to make what a run does not.
	out, stderr, err := run(build[0])
	var exit *commands.ExitError
	if !errors.As(err, &exit) || exit.Code != commands.ExitMustBuild {
		t.Fatalf("tasks check = %v, want exit %d\n%s%s", err, commands.ExitMustBuild, out, stderr)
	}
	for _, want := range build[1:3] {
		if line := "  ssebench " + strings.Join(fix(want), " ") + "\n"; !strings.Contains(out, line) {
			t.Errorf("tasks check does not print the doc's next command %q:\n%s", line, out)
		}
	}
	for _, args := range build[1:3] {
		if out, stderr, err := run(args); err != nil {
			t.Fatalf("ssebench %s = %v\n%s%s", strings.Join(args, " "), err, out, stderr)
		}
	}
	out, _, _ = run(build[0])
	if !strings.Contains(out, "runtime") || strings.Contains(out, " make ") {
		t.Errorf("after the doc's commands tasks check still has images to make:\n%s", out)
	}
	_, stderr, err = run(build[3])
	graded("the run that builds", stderr, err)

	// Another machine: an empty store, nothing to build with.
	t.Setenv("SSEBENCH_STORE", filepath.Join(c.root, "other-store"))
	t.Setenv("SSEBENCH_CACHE", filepath.Join(c.root, "other-cache"))
	daemons[3] = "unix://" + filepath.Join(c.root, "no-buildkit.sock")
	untrusted := make([]string, 0, len(use[0]))
	for i := 0; i < len(use[0]); i++ {
		if use[0][i] == "--trust-registry" {
			i++
			continue
		}
		untrusted = append(untrusted, use[0][i])
	}
	_, stderr, err = run(untrusted)
	if err == nil || !strings.Contains(err.Error(), "pass --trust-registry "+s.reg+" if") {
		t.Errorf("--prebuilt without --trust-registry = %v, want a refusal naming --trust-registry %s\n%s", err, s.reg, stderr)
	}
	_, stderr, err = run(use[0])
	graded("the --prebuilt run", stderr, err)
	all, err := results.List(runs)
	if err != nil {
		t.Fatal(err)
	}
	prebuilt := 0
	for _, r := range all {
		if r.Summary.Config.Prebuilt && r.Graded() {
			prebuilt++
		}
	}
	if prebuilt != 1 {
		t.Errorf("%d graded --prebuilt runs under %s, want 1", prebuilt, runs)
	}
}
