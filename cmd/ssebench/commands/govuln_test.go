package commands_test

import (
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// govulnSample are three tasks of datasets/govuln, of three modules, whose
// verify is among the quickest: the case build fetches each module and its
// dependencies through the Go module proxy. go-2024-2947's hidden tests
// call redactURL, which the fix adds: its verify runs them on the buggy
// tree with the stubs the import wrote.
var govulnSample = []string{"go-2020-0016", "go-2026-4503", "go-2024-2947"}

// TestGovulnSample verifies a sample of the imported Go vulnerability
// database tasks as a dataset author would: the case image is built from
// the recipe (the module fetched and vendored), the reference patch passes
// the hidden tests by name, and the unchanged tree fails them. One run
// each; the three reruns are for the whole dataset's verify.
func TestGovulnSample(t *testing.T) {
	bk := testenv.RequireBuildKit(t)
	ctrd := testenv.RequireContainerd(t)
	reg := testenv.RequireRegistry(t)
	osImage := testenv.OSImage(t)
	c := newCLI(t)
	ds := filepath.Join(c.home, "datasets", "govuln")
	writeFiles(t, ds, map[string]string{"dataset.yaml": "version: govuln-v1\n"})
	for _, id := range govulnSample {
		copyTree(t, "datasets/govuln/"+id, filepath.Join(ds, id))
	}
	copyTree(t, "agents/reference", filepath.Join(c.home, "agents", "reference"))
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	copyTree(t, "agents/prediction", filepath.Join(c.home, "agents", "prediction"))
	copyTree(t, "images", filepath.Join(c.home, "images"))
	writeFiles(t, c.home, map[string]string{"VERSION": "0.1.0-dev\n"})
	c.mustRun(t, "dataset", "manifest", ds)

	daemons := []string{"--buildkit-addr", bk, "--containerd-addr", ctrd}
	prefix := reg + "/ssebench-govuln-" + randomHex(4)
	t.Setenv("SSEBENCH_REGISTRY", prefix)
	testenv.RemoveImagesAfter(t, ctrd, prefix+"/")
	c.mustRun(t, append([]string{"base-images", "go", "--os-image", osImage}, daemons...)...)
	c.mustRun(t, append([]string{"runtime", "build", "--platform", "linux/" + goruntime.GOARCH, "--push", "--home", repoRoot}, daemons...)...)

	out, stderr, err := c.run(t, append([]string{"dataset", "verify", ds, "--jobs", "2", "--runs-dir", filepath.Join(c.root, "runs"), "--timeout", "900"}, daemons...)...)
	if err != nil {
		t.Fatalf("dataset verify: %v\n%s\n%s", err, out, stderr)
	}
	if strings.Contains(out, "FAILED") {
		t.Fatalf("a check failed:\n%s", out)
	}
	ok := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 4 && f[3] == "ok" {
			ok[f[0]+" "+f[1]+" "+f[2]] = true
		}
	}
	for _, id := range govulnSample {
		// The reference passes the hidden tests; the unchanged tree
		// builds and passes its own tests (and fails the hidden ones:
		// verify checks that under "tests").
		for _, want := range []string{"reference intent_test", "dummy function_test", "- tests"} {
			if !ok[id+" "+want] {
				t.Errorf("no ok %q row for %s:\n%s", want, id, out)
			}
		}
	}
	if !ok["go-2024-2947 stubs apply"] {
		t.Errorf("go-2024-2947's stubs did not run:\n%s", out)
	}
	if !strings.Contains(stderr, "3 tasks verified") {
		t.Errorf("stderr:\n%s", stderr)
	}
}
