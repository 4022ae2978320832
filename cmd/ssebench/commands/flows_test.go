package commands_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// TestTimeoutDurations: every --timeout takes what run's does, a duration
// as well as seconds (issue 40: `dataset verify --timeout 90m` was
// refused).
func TestTimeoutDurations(t *testing.T) {
	for _, path := range [][]string{{"run"}, {"eval"}, {"dataset", "verify"}, {"grade"}} {
		t.Run(strings.Join(path, " "), func(t *testing.T) {
			cmd, _, err := commands.New().Find(path)
			if err != nil {
				t.Fatal(err)
			}
			f := cmd.Flags().Lookup("timeout")
			if f == nil {
				t.Fatalf("%s has no --timeout", strings.Join(path, " "))
			}
			if err := f.Value.Set("90m"); err != nil {
				t.Fatalf("%s --timeout 90m: %v", strings.Join(path, " "), err)
			}
			if got := f.Value.String(); got != "1h30m0s" {
				t.Errorf("%s --timeout 90m = %s, want 1h30m0s", strings.Join(path, " "), got)
			}
		})
	}
}

// TestMirrorDryRunMissing: a dry run with a missing source image fails as
// the copy would, after printing its plan (it exited 0).
func TestMirrorDryRunMissing(t *testing.T) {
	c := newCLI(t)
	p := testPrefix(t)
	pushImage(t, p+"/src/a:v1")
	for _, dry := range []bool{true, false} {
		args := []string{"mirror", "--to", p + "/dst", "--only-args", p + "/src/a:v1", p + "/src/gone:v1"}
		if dry {
			args = append(args, "--dry-run")
		}
		out, _, err := c.run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "1 image is missing from the source registry: "+p+"/src/gone:v1") {
			t.Errorf("mirror (dry run %v) of a missing image = %v, want it named in the error", dry, err)
		}
		if dry && !strings.Contains(out, "missing from the source registry: "+p+"/src/gone:v1") {
			t.Errorf("mirror --dry-run printed no plan line for the missing image:\n%s", out)
		}
	}
}

// TestLocalMissing: a --local folder that does not exist is said to be
// missing, by run and by eval, before anything else.
func TestLocalMissing(t *testing.T) {
	c := newCLI(t)
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	gone := filepath.Join(c.root, "no-such-dataset")
	for _, args := range [][]string{
		{"run", "--task", "kvconf-12-afb9ee1", "--agent", "dummy", "--local", gone},
		{"eval", "--agents", "dummy", "--local", gone},
		{"eval", "--agents", "dummy", "--tasks", "kvconf-12-afb9ee1", "--local", gone},
	} {
		_, _, err := c.run(t, args...)
		if want := "--local " + gone + ": no such folder"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s = %v, want %q", strings.Join(args, " "), err, want)
		}
	}
}

// TestTagSaysWhere: a tag added in the local store says so (it printed
// what a registry's tag prints), and a tag in another registry is
// refused, for a store image as for a registry's.
func TestTagSaysWhere(t *testing.T) {
	c := newCLI(t)
	p := testPrefix(t)
	c.storeImage(t, p+"/local:v1", caseImage(t))
	_, stderr := c.mustRun(t, "tag", p+"/local:v1", "stable")
	if !strings.Contains(stderr, "tagged in the local store only") || !strings.Contains(stderr, "ssebench push "+p+"/local:stable") {
		t.Errorf("tag in the store printed on stderr %q, want it to say the store only and how to push", stderr)
	}
	pushImage(t, p+"/remote:v1")
	for _, src := range []string{p + "/local:v1", p + "/remote:v1"} {
		_, _, err := c.run(t, "tag", src, "other.example:5000/x/y:v1")
		oneLine(t, err)
		if want := "a tag stays in its registry; copy it there with `ssebench copy " + src + " other.example:5000/x/y:v1`"; !strings.Contains(err.Error(), want) {
			t.Errorf("tag %s into another registry = %v, want %q", src, err, want)
		}
	}
	s, err := store.Open(c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Descriptor(name.MustParseReference("other.example:5000/x/y:v1")); err == nil {
		t.Error("the refused tag is in the store")
	}
}
