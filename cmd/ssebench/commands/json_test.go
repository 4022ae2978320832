package commands_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// oneJSON fails unless out is exactly one JSON document, and decodes it
// into v.
func oneJSON(t *testing.T, what, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s --json printed no JSON document: %v\n%s", what, err, out)
	}
	if dec.More() {
		t.Fatalf("%s --json printed more than one JSON document:\n%s", what, out)
	}
}

func TestJSONVerify(t *testing.T) {
	const (
		good = "localhost:5000/ssebench/tool/proj-1:1.0.0"
		bad  = "localhost:5000/ssebench/case/pilot/proj-1"
	)
	c := newCLI(t)
	c.storeImage(t, good, toolImage(t))
	c.storeImage(t, bad, caseImage(t))
	var v struct {
		Image    string `json:"image"`
		OK       bool   `json:"ok"`
		Failures []struct {
			Check, Path, Message, Rule string
		} `json:"failures"`
		Warnings []any `json:"warnings"`
	}
	out, _ := c.mustRun(t, "verify", "--pull=never", "--json", good)
	oneJSON(t, "verify", out, &v)
	if !v.OK || v.Image != good || len(v.Failures) != 0 || v.Warnings == nil {
		t.Errorf("verify --json of a good image = %+v", v)
	}
	out, _, err := c.run(t, "verify", "--pull=never", "--json", "--source", "/src/proj", bad)
	if err == nil {
		t.Error("verify --json of a bad image succeeded")
	}
	v.OK, v.Failures = true, nil
	oneJSON(t, "verify", out, &v)
	found := false
	for _, f := range v.Failures {
		found = found || f.Check == "owner" && f.Path == "/src/proj/main.go"
	}
	if v.OK || !found {
		t.Errorf("verify --json of a case image = %+v, want ok false and the owner failure of /src/proj/main.go", v)
	}
}

func TestJSONDatasetValidate(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.root, "examples")
	copyTree(t, "datasets/examples", dir)
	var v struct {
		OK       bool `json:"ok"`
		Tasks    int  `json:"tasks"`
		Problems []struct {
			File    string `json:"file"`
			Line    int    `json:"line"`
			Message string `json:"message"`
		} `json:"problems"`
	}
	out, _ := c.mustRun(t, "dataset", "validate", "--json", dir)
	oneJSON(t, "dataset validate", out, &v)
	if !v.OK || v.Tasks == 0 || len(v.Problems) != 0 {
		t.Errorf("dataset validate --json of the examples = %+v", v)
	}
	writeFiles(t, dir, map[string]string{"dataset.yaml": "version: Examples V1\n"})
	out, _, err := c.run(t, "dataset", "validate", "--json", dir)
	if err == nil {
		t.Error("dataset validate --json of a broken dataset succeeded")
	}
	oneJSON(t, "dataset validate", out, &v)
	if v.OK || len(v.Problems) == 0 || v.Problems[0].File != filepath.Join(dir, "dataset.yaml") || v.Problems[0].Line != 1 {
		t.Errorf("dataset validate --json of a broken dataset = %+v", v)
	}
}

type builtOut struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
	How    string `json:"how"`
}

func TestJSONAssemble(t *testing.T) {
	const (
		rt   = "localhost:5000/ssebench/runtime:1.0.0"
		cref = "localhost:5000/ssebench/case/ds/proj-1"
	)
	c := newCLI(t)
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	c.storeImage(t, cref, caseImage(t))
	c.storeImage(t, rt, runtimeImage(t))
	var tool builtOut
	out, _ := c.mustRun(t, "assemble", "tool", "--json", "--case", cref, "--source", "/src/proj", "--runtime", rt, "--pull=never", "--registry", "localhost:5000/ssebench")
	oneJSON(t, "assemble tool", out, &tool)
	if !strings.Contains(tool.Name, "/tool/proj-1:") || !strings.HasPrefix(tool.Digest, "sha256:") || tool.How == "" {
		t.Errorf("assemble tool --json = %+v", tool)
	}
	var ag builtOut
	out, _ = c.mustRun(t, "assemble", "agent", "--json", "--tool", tool.Name, "--agent", "dummy", "--pull=never", "--registry", "localhost:5000/ssebench")
	oneJSON(t, "assemble agent", out, &ag)
	if !strings.Contains(ag.Name, "/agent-dummy/proj-1:") || !strings.HasPrefix(ag.Digest, "sha256:") {
		t.Errorf("assemble agent --json = %+v", ag)
	}
}

type pushOut struct {
	Images []struct{ Name, Digest string } `json:"images"`
	Push   *struct {
		Uploaded      int64 `json:"uploaded_bytes"`
		UploadedBlobs int   `json:"uploaded_blobs"`
		Manifests     int   `json:"manifests"`
	} `json:"push"`
}

func TestJSONSaveLoadPush(t *testing.T) {
	const ref = "localhost:5000/ssebench/tool/proj-1:1.0.0"
	c := newCLI(t)
	c.storeImage(t, ref, toolImage(t))
	archive := filepath.Join(c.root, "images.tar")
	c.mustRun(t, "save", "-o", archive, "--pull=never", "--registry", "localhost:5000/ssebench", ref)

	// Into another store.
	c.store = filepath.Join(c.root, "store2")
	t.Setenv("SSEBENCH_STORE", c.store)
	var l struct {
		Images []struct{ Name, Digest string } `json:"images"`
		Blobs  int                             `json:"blobs"`
	}
	out, _ := c.mustRun(t, "load", "--json", archive)
	oneJSON(t, "load", out, &l)
	if len(l.Images) != 1 || l.Images[0].Name != ref || l.Blobs == 0 {
		t.Errorf("load --json = %+v", l)
	}

	host := testenv.StartRegistry(t)
	target := host + "/json/tool/proj-1:1.0.0"
	var p pushOut
	out, _ = c.mustRun(t, "load", "--json", "--push", host+"/json", archive)
	oneJSON(t, "load --push", out, &p)
	if len(p.Images) != 1 || p.Images[0].Name != target || p.Push == nil || p.Push.UploadedBlobs == 0 {
		t.Errorf("load --push --json = %+v", p)
	}

	p = pushOut{}
	again := host + "/json/again:1"
	c.retag(t, ref, again)
	out, _ = c.mustRun(t, "push", "--json", again)
	oneJSON(t, "push", out, &p)
	if len(p.Images) != 1 || p.Images[0].Name != again || !strings.HasPrefix(p.Images[0].Digest, "sha256:") || p.Push == nil || p.Push.Manifests != 1 {
		t.Errorf("push --json = %+v", p)
	}
}

// retag names the store's image from as to too.
func (c *cli) retag(t *testing.T, from, to string) {
	t.Helper()
	c.storeImage(t, to, c.storedImage(t, from))
}

// TestJSONBuildCase: build-case --json prints one document even when a
// build fails (here: the base image is nowhere, and --pull=never), with the
// failure in its row.
func TestJSONBuildCase(t *testing.T) {
	addr := testenv.RequireBuildKit(t)
	c := newCLI(t)
	dir := filepath.Join(c.root, "examples")
	copyTree(t, "datasets/examples", dir)
	out, _, err := c.run(t, "build-case", "--json", "--benchmarks", dir, "--tasks", "kvconf-12-afb9ee1",
		"--pull=never", "--registry", "127.0.0.1:1/ssebench-json", "--buildkit-addr", addr)
	if err == nil {
		t.Fatal("build-case without its base image succeeded")
	}
	var rows []struct {
		Task, Image, Action, Error string
	}
	oneJSON(t, "build-case", out, &rows)
	if len(rows) != 1 || rows[0].Task != "kvconf-12-afb9ee1" || rows[0].Action != "failed" || rows[0].Error == "" ||
		!strings.HasPrefix(rows[0].Image, "127.0.0.1:1/ssebench-json/case/examples/") {
		t.Errorf("build-case --json = %+v, want one failed row for kvconf-12-afb9ee1 with its error", rows)
	}
}

// TestBuildCaseQuietSaysWhy: build-case -q prints no BuildKit log, so the
// error says why the build failed: the failing step and its last output.
func TestBuildCaseQuietSaysWhy(t *testing.T) {
	addr := testenv.RequireBuildKit(t)
	osImage := testenv.OSImage(t)
	prefix, base, ok := strings.Cut(osImage, "/os/")
	testenv.Need(t, ok, "the OS image "+osImage+" is not under a PREFIX/os/ to build FROM ${SSEBENCH_REGISTRY}/os/...: set SSEBENCH_TEST_OS_IMAGE to one")
	c := newCLI(t)
	dir := filepath.Join(c.root, "examples")
	copyTree(t, "datasets/examples", dir)
	writeFiles(t, dir, map[string]string{"kvconf-12-afb9ee1/Dockerfile": "ARG SSEBENCH_REGISTRY=127.0.0.1:1/none\n" +
		"FROM ${SSEBENCH_REGISTRY}/os/" + base + "\nCOPY sse/ /ssebench/\n" +
		"RUN echo 'cannot find libfoo.so' >&2; exit 3\n"})
	out, stderr, err := c.run(t, "build-case", "-q", "--benchmarks", dir, "--tasks", "kvconf-12-afb9ee1",
		"--registry", prefix, "--buildkit-addr", addr)
	oneLine(t, err)
	for _, want := range []string{"1 case image failed to build: kvconf-12-afb9ee1 (building", "exit code: 3", "its last output: cannot find libfoo.so"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("build-case -q error = %q, want %q in it", err, want)
		}
	}
	if stderr != "Error: "+err.Error()+"\n" || !strings.HasPrefix(out, "failed\tkvconf-12-afb9ee1\t") {
		t.Errorf("build-case -q printed %q and %q on stderr, want one failed row and only the error on stderr", out, stderr)
	}
}
