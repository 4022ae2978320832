package commands_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/commands"
)

// mainRun runs ssebench as the binary does (commands.Main) and returns its
// exit status and output.
func mainRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = commands.Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestNamesUnknownTaskSuggests(t *testing.T) {
	c := newCLI(t)
	namesHome(t, c, "name: dummy\n")
	code, out, errOut := mainRun(t, "names", "--task", "RUSTSEC-2019-009", "--home", c.home)
	if code == 0 {
		t.Fatalf("names with an unknown task exited 0, printing %q", out)
	}
	if want := `did you mean "RUSTSEC-2019-0009"?`; !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr %q, want one line with %s", errOut, want)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	// Within a named dataset too.
	code, _, errOut = mainRun(t, "names", "--task", "Other-3", "--dataset", "Pilot", "--home", c.home)
	if code == 0 || !strings.Contains(errOut, `did you mean "Other-2"?`) {
		t.Errorf("names --dataset Pilot --task Other-3 = exit %d, %q; want a did-you-mean of Other-2", code, errOut)
	}
}

func TestNoHomeMessage(t *testing.T) {
	newCLI(t) // the working directory is no home, and nothing names one
	const want = "Error: no SSEBench home here; pass --home or run from a checkout\n"
	for _, args := range [][]string{
		{"names", "--task", "t1"},
		{"run", "--task", "t1", "--agent", "dummy"},
		{"eval", "--agents", "dummy"},
		{"assemble", "agent", "--tool", "localhost:5000/x/tool/t1:1", "--agent", "dummy"},
		{"assemble", "tool", "--case", "localhost:5000/x/case/d/t1"},
		{"base-images", "--os-image", "localhost:5000/os:1"},
		{"runtime", "build"},
		{"mirror", "--to", "localhost:5000/y"},
	} {
		code, _, errOut := mainRun(t, args...)
		if code != 1 || errOut != want {
			t.Errorf("ssebench %s outside a home: exit %d, stderr %q; want 1, %q", strings.Join(args, " "), code, errOut, want)
		}
	}
}
