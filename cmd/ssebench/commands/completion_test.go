package commands_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// complete runs `ssebench __complete ARGS...` as a shell does and returns
// the candidates (the lines before the ":DIRECTIVE" line).
func complete(t *testing.T, c *cli, args ...string) []string {
	t.Helper()
	out, _, err := runRoot(t, append([]string{"__complete"}, args...)...)
	if err != nil {
		t.Fatalf("__complete %v: %v", args, err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, ":") {
			break
		}
		name, _, _ := strings.Cut(l, "\t")
		got = append(got, name)
	}
	return got
}

func TestCompletionOfNames(t *testing.T) {
	c := newCLI(t)
	writeFiles(t, c.home, map[string]string{
		"VERSION":                             "1.0.0\n",
		"agents/dummy/agent.yaml":             "name: dummy\n",
		"agents/loop/agent.yaml":              "name: loop\n",
		"agents/notes/README":                 "not an agent\n",
		"datasets/ex/dataset.yaml":            "name: ex\n",
		"datasets/ex/kvconf-12/Dockerfile":    "FROM x\n",
		"datasets/ex/libqs-3/sse/config.yaml": "id: libqs-3\n",
		"datasets/ex/notes/README":            "not a task\n",
		"datasets/other/gocsv-1/Dockerfile":   "FROM x\n",
	})
	c.storeImage(t, "localhost:5000/ssebench/tool/proj-1:1.0.0", toolImage(t))
	c.storeImage(t, "localhost:5000/ssebench/case/pilot/proj-1", caseImage(t))
	// From inside the checkout, as a user types.
	t.Chdir(filepath.Join(c.home, "datasets"))

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--agent", ""}, []string{"dummy", "loop"}},
		{[]string{"names", "--agent", ""}, []string{"dummy", "loop"}},
		{[]string{"eval", "--agents", ""}, []string{"dummy", "loop"}},
		{[]string{"eval", "--agents", "loop,"}, []string{"loop,dummy"}},
		{[]string{"run", "--task", ""}, []string{"gocsv-1", "kvconf-12", "libqs-3"}},
		{[]string{"names", "--dataset", "ex", "--task", ""}, []string{"kvconf-12", "libqs-3"}},
		{[]string{"build-case", "--benchmarks", filepath.Join(c.home, "datasets", "other"), "--tasks", ""}, []string{"gocsv-1"}},
		{[]string{"names", "--dataset", ""}, []string{"ex"}},
		{[]string{"inspect", ""}, []string{"localhost:5000/ssebench/case/pilot/proj-1:latest", "localhost:5000/ssebench/tool/proj-1:1.0.0"}},
		{[]string{"verify", ""}, []string{"localhost:5000/ssebench/case/pilot/proj-1:latest", "localhost:5000/ssebench/tool/proj-1:1.0.0"}},
		{[]string{"push", "localhost:5000/ssebench/case/pilot/proj-1", ""}, []string{"localhost:5000/ssebench/tool/proj-1:1.0.0"}},
		{[]string{"assemble", "tool", "--case", ""}, []string{"localhost:5000/ssebench/case/pilot/proj-1:latest", "localhost:5000/ssebench/tool/proj-1:1.0.0"}},
		{[]string{"inspect", "--pull", ""}, []string{"missing", "always", "never"}},
	} {
		got := complete(t, c, tc.args...)
		// The shell filters by prefix; cobra returns every candidate.
		if !slices.Equal(got, tc.want) {
			t.Errorf("__complete %s = %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
}

func TestCompletionCreatesNoStore(t *testing.T) {
	c := newCLI(t)
	if got := complete(t, c, "inspect", ""); len(got) != 0 {
		t.Errorf("__complete inspect with no store = %q, want nothing", got)
	}
	if _, err := os.Stat(c.store); err == nil {
		t.Errorf("completing created the store %s", c.store)
	}
}

// TestBashCompletionWithoutPackage: the bash script completes in a bash
// without the bash-completion package (a plain `bash --norc`), where
// cobra's script alone failed on _get_comp_words_by_ref at every <TAB>.
func TestBashCompletionWithoutPackage(t *testing.T) {
	bash, err := exec.LookPath("bash")
	testenv.Need(t, err == nil, "the completion test needs bash on PATH")
	script, _, err := runRoot(t, "completion", "bash")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "ssebench.bash")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// ssebench stands for the binary: it answers __complete as ssebench
	// would, with one agent folder.
	prog := `source "$1"
ssebench() { printf 'dummy\n:4\n'; }
COMP_WORDS=(ssebench run --agent d); COMP_CWORD=3
COMP_LINE="ssebench run --agent d"; COMP_POINT=${#COMP_LINE}
__start_ssebench ssebench d --agent 2>/dev/null
echo "reply=${COMPREPLY[*]}"
`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog, "bash", f)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "reply=dummy") {
		t.Errorf("the completion in a bash without bash-completion gave:\n%s", out)
	}
}
