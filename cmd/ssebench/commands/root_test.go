package commands_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
)

func TestVersion(t *testing.T) {
	newCLI(t)
	b, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(b)) + "\n"
	got, _, err := runRoot(t, "--version")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("ssebench --version = %q, want %q (the VERSION file)", got, want)
	}
}

// allCommands walks the command tree New builds, root first.
func allCommands() []*cobra.Command {
	var out []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(commands.New())
	return out
}

func TestEveryCommandDocumented(t *testing.T) {
	for _, c := range allCommands() {
		t.Run(c.CommandPath(), func(t *testing.T) {
			if strings.TrimSpace(c.Short) == "" {
				t.Error("Short is empty")
			}
			if strings.TrimSpace(c.Example) == "" {
				t.Error("Example is empty")
			}
			// Examples call this command, so that they can be pasted.
			for _, line := range strings.Split(c.Example, "\n") {
				line = strings.TrimSpace(line)
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				if c.HasParent() && line != c.CommandPath() && !strings.HasPrefix(line, c.CommandPath()+" ") {
					t.Errorf("example %q does not start with %q", line, c.CommandPath())
				}
			}
			check := func(f *pflag.Flag) {
				if strings.TrimSpace(f.Usage) == "" {
					t.Errorf("--%s has no help text", f.Name)
				}
				// pflag turns a `word` of the help text into the
				// flag's value name and drops the backquotes.
				if strings.Contains(f.Usage, "`") {
					t.Errorf("--%s help %q has a backquote: pflag shows it as the value name", f.Name, f.Usage)
				}
				// pflag prints "(default X)" itself for a non-zero
				// default; help text that states one too would say it
				// twice, or contradict it.
				zero := map[string]bool{"": true, "0": true, "false": true, "[]": true}
				if !zero[f.DefValue] && strings.Contains(f.Usage, "default") {
					t.Errorf("--%s help %q states a default beside pflag's (default %s)", f.Name, f.Usage, f.DefValue)
				}
			}
			c.LocalFlags().VisitAll(check)
		})
	}
}

func TestHelp(t *testing.T) {
	newCLI(t)
	for _, c := range allCommands() {
		path := strings.Fields(c.CommandPath())[1:]
		t.Run(c.CommandPath(), func(t *testing.T) {
			out, _, err := runRoot(t, append(path, "--help")...)
			if err != nil {
				t.Fatalf("%s --help: %v", c.CommandPath(), err)
			}
			text := c.Long
			if text == "" {
				text = c.Short
			}
			for _, want := range []string{"Usage:", "Examples:", text} {
				if !strings.Contains(out, want) {
					t.Errorf("%s --help lacks %q:\n%s", c.CommandPath(), want, out)
				}
			}
		})
	}
}

func TestGroupCommandsAlone(t *testing.T) {
	newCLI(t)
	tests := []struct {
		args []string
		want string
	}{
		{nil, "Available Commands:"},
		{[]string{"dataset"}, "manifest"},
		{[]string{"assemble"}, "agent"},
		{[]string{"runtime"}, "build"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(append([]string{"ssebench"}, tt.args...), " "), func(t *testing.T) {
			out, _, err := runRoot(t, tt.args...)
			if err != nil {
				t.Fatalf("ssebench %v = %v, want the help", tt.args, err)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("ssebench %v printed no %q:\n%s", tt.args, tt.want, out)
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	newCLI(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			out, _, err := runRoot(t, "completion", shell)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "ssebench") || len(out) < 1000 {
				t.Errorf("ssebench completion %s printed %d bytes, no script for ssebench", shell, len(out))
			}
		})
	}
}

// TestBadInputIsOneLine runs commands with wrong arguments: each fails
// before reaching a daemon or the network, with one line that says what to
// do.
func TestBadInputIsOneLine(t *testing.T) {
	c := newCLI(t)
	writeFiles(t, c.home, map[string]string{
		"agents/dummy/agent.yaml": "name: dummy\n",
		"agents/dummy/Dockerfile": "FROM ssebench-agent\nCMD [\"echo dummy_QAQ\"]\n",
		"datasets/d/t/Dockerfile": "FROM scratch\n",
	})
	notStore := filepath.Join(c.root, "not-a-store")
	writeFiles(t, notStore, map[string]string{"file.txt": "x"})
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"nmes"}, `unknown command "nmes" for "ssebench": did you mean "names"?`},
		{"unknown subcommand", []string{"dataset", "valdate", "x"}, `unknown command "valdate" for "ssebench dataset": did you mean "validate"?`},
		{"unknown subcommand without suggestion", []string{"runtime", "zzzzzz"}, `unknown command "zzzzzz" for "ssebench runtime" (run 'ssebench runtime --help' for the commands)`},
		{"unknown flag", []string{"names", "--frob"}, "unknown flag: --frob"},
		{"missing argument", []string{"inspect"}, "accepts 1 arg(s), received 0"},
		{"names without task", []string{"names"}, "--task is required"},
		{"names unknown agent", []string{"names", "--task", "t", "--agent", "dumy"}, `unknown agent "dumy": did you mean "dummy"?`},
		{"home missing", []string{"names", "--task", "t", "--home", filepath.Join(c.root, "nope")}, "is not a folder: pass --home"},
		{"registry only slashes", []string{"names", "--task", "t", "--registry", "/"}, "empty once trailing slashes are removed"},
		{"bad reference", []string{"inspect", "UP PER::"}, `parsing image reference "UP PER::"`},
		{"bad platform", []string{"inspect", "--platform", "amd64", "x"}, `platform "amd64" is not OS/ARCH`},
		{"bad pull policy", []string{"inspect", "--pull", "sometimes", "x"}, `unknown pull policy "sometimes"`},
		{"store is not a layout", []string{"inspect", "--store", notStore, "x"}, "opening image store"},
		{"verify missing image", []string{"verify", "--pull=never", "localhost:5000/ssebench/tool/x:1"}, "is not in the local store"},
		{"assemble tool without case", []string{"assemble", "tool"}, "--case is required"},
		{"assemble agent without tool", []string{"assemble", "agent", "--agent", "dummy"}, "--tool and --agent are required"},
		{"bad build-arg", []string{"assemble", "agent", "--tool", "x", "--agent", "dummy", "--build-arg", "K"}, `--build-arg "K" is not KEY=VALUE`},
		{"dataset missing", []string{"dataset", "validate", filepath.Join(c.root, "nope")}, "the dataset has problems"},
		{"base-images without an OS image", []string{"base-images", "go"}, "no OS image: pass --os-image"},
		{"build-case without benchmarks", []string{"build-case"}, "--benchmarks is required"},
		{"save without output", []string{"save", "x"}, "-o is required"},
		{"load missing archive", []string{"load", filepath.Join(c.root, "nope.tar")}, "reading the archive"},
		{"mirror without target", []string{"mirror"}, "--to is required"},
		{"push missing image", []string{"push", "--pull=never", "localhost:5000/ssebench/tool/x:1"}, "is not in the local store"},
		{"runtime build outside the source tree", []string{"runtime", "build"}, "needs the ssebench source tree"},
		{"run bad egress", []string{"run", "--task", "t", "--agent", "dummy", "--egress", "wide"}, `--egress: unknown network "wide"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := c.run(t, tt.args...)
			oneLine(t, err)
			if err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ssebench %s: error %q lacks %q", strings.Join(tt.args, " "), err, tt.want)
			}
		})
	}
}
