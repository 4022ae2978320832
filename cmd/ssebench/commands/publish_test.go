package commands_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/task"
)

const pubTask = "kvconf-12-afb9ee1"

// accessLog is a registry in front of the shared one: a reverse proxy that
// records every request, the "second registry" of a mirror.
type accessLog struct {
	mu    sync.Mutex
	lines []string
}

func (a *accessLog) add(r *http.Request) {
	a.mu.Lock()
	a.lines = append(a.lines, r.Method+" "+r.URL.Path)
	a.mu.Unlock()
}

// take returns the lines so far and forgets them.
func (a *accessLog) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.lines
	a.lines = nil
	return l
}

func secondRegistry(t *testing.T, reg string) (string, *accessLog) {
	t.Helper()
	u, _ := url.Parse("http://" + reg)
	log := &accessLog{}
	p := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), log
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// TestPublishMirrorRunCatalog is the maintainer's and the user's way end to
// end: verify the example task with the reference and dummy agents (and
// see broken copies fail, naming the task and check), lock, publish,
// mirror to a second registry, list the tasks of the mirrored catalog, and
// run the reference agent from it on a machine that builds nothing; a
// tampered case image is refused by the lock.
func TestPublishMirrorRunCatalog(t *testing.T) {
	bk := testenv.RequireBuildKit(t)
	ctrd := testenv.RequireContainerd(t)
	reg := testenv.RequireRegistry(t)
	osImage := testenv.OSImage(t)
	c := newCLI(t)
	ds := filepath.Join(c.home, "datasets", "examples")
	writeFiles(t, ds, map[string]string{"dataset.yaml": "version: examples-v1\n"})
	copyTree(t, "datasets/examples/"+pubTask, filepath.Join(ds, pubTask))
	copyTree(t, "agents/reference", filepath.Join(c.home, "agents", "reference"))
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	copyTree(t, "images", filepath.Join(c.home, "images"))
	writeFiles(t, c.home, map[string]string{"VERSION": "0.1.0-dev\n"})
	// The example dataset's manifest says the arch; the copy keeps it.
	m, err := task.ReadManifest(filepath.Join(repoRoot, "datasets", "examples", task.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	m.Tasks = []task.ManifestTask{*m.Task(pubTask)}
	if err := task.WriteManifest(ds, m); err != nil {
		t.Fatal(err)
	}
	c.mustRun(t, "dataset", "manifest", "--check", ds)

	pub := reg + "/ssebench-pub-" + randomHex(4)
	daemons := []string{"--buildkit-addr", bk, "--containerd-addr", ctrd}
	t.Setenv("SSEBENCH_REGISTRY", pub)
	testenv.RemoveImagesAfter(t, ctrd, pub+"/")
	c.mustRun(t, append([]string{"base-images", "go", "--os-image", osImage}, daemons...)...)
	// The runtime is built from this checkout's source.
	c.mustRun(t, append([]string{"runtime", "build", "--platform", "linux/" + goruntime.GOARCH, "--push", "--home", repoRoot}, daemons...)...)

	// Broken copies fail, naming the task and the check.
	bad := filepath.Join(c.root, "broken")
	writeFiles(t, bad, map[string]string{"dataset.yaml": "version: broken-v1\n"})
	for _, id := range []string{"kvconf-12-badpatch", "kvconf-12-badpoc"} {
		copyTree(t, "datasets/examples/"+pubTask, filepath.Join(bad, id))
		cfg := filepath.Join(bad, id, "sse", "config.yaml")
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, bad, map[string]string{id + "/sse/config.yaml": strings.Replace(string(b), "id: "+pubTask, "id: "+id, 1)})
	}
	writeFiles(t, bad, map[string]string{
		// A hunk whose context is not in the file.
		"kvconf-12-badpatch/sse/diffs/patch.diff": "--- a/unquote.go\n+++ b/unquote.go\n@@ -31,3 +31,4 @@\n no such line\n+added\n no such line either\n no such line at all\n",
		// A well-formed file: the buggy tree reads it without a panic.
		"kvconf-12-badpoc/sse/pocs/short-hex-escape.conf": "[server]\nname = \"front\"\n",
	})
	out, stderr, err := c.run(t, append([]string{"dataset", "verify", bad, "--jobs", "2", "--runs-dir", filepath.Join(c.root, "runs"), "--timeout", "600"}, daemons...)...)
	if err == nil {
		t.Fatalf("dataset verify of the broken copies passed:\n%s%s", out, stderr)
	}
	oneLine(t, err)
	for _, want := range []string{"kvconf-12-badpatch reference apply (the reference patch does not apply", "kvconf-12-badpoc dummy poc pocs/short-hex-escape.conf (no longer triggers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("dataset verify = %v, want it to name %q\n%s", err, want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^kvconf-12-badpoc\s+reference\s+poc\s+ok`).MatchString(out) {
		t.Errorf("the table does not say the reference patch of kvconf-12-badpoc passes its poc check:\n%s", out)
	}

	// The example task verifies, and the lock pins what verified.
	out, stderr = c.mustRun(t, append([]string{"dataset", "verify", ds, "--runs-dir", filepath.Join(c.root, "runs"), "--timeout", "600"}, daemons...)...)
	for _, want := range []string{`reference\s+apply\s+ok`, `reference\s+intent_test\s+ok`, `dummy\s+function_test\s+ok`, `dummy\s+poc pocs/short-hex-escape.conf\s+ok`} {
		if !regexp.MustCompile(pubTask + `\s+` + want).MatchString(out) {
			t.Errorf("dataset verify printed no line %q:\n%s%s", want, out, stderr)
		}
	}
	rev := randomHex(20)
	c.mustRun(t, "dataset", "lock", ds, "--revision", rev)
	c.mustRun(t, "dataset", "lock", "--check", ds)
	lock, err := task.ReadLock(filepath.Join(ds, task.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	digest := lock.Images[pubTask].Digest
	if digest == "" || lock.Images[pubTask].Revision != rev {
		t.Fatalf("images.lock.json = %+v, want %s pinned at revision %s", lock, pubTask, rev)
	}

	// Publish: the immutable tag, then the moving one, then the catalog.
	out, _ = c.mustRun(t, "--registry", pub, "dataset", "publish", ds, "--revision", rev)
	caseRepo := pub + "/case/examples/" + pubTask
	if !strings.Contains(out, caseRepo+":examples-v1-"+rev[:7]+"@"+digest) {
		t.Errorf("dataset publish printed %q, want %s:examples-v1-%s@%s", out, caseRepo, rev[:7], digest)
	}
	for _, tag := range []string{"examples-v1", "examples-v1-" + rev[:7]} {
		if got := headDigest(t, caseRepo+":"+tag); got != digest {
			t.Errorf("%s:%s = %s, want %s", caseRepo, tag, got, digest)
		}
	}
	// A published tag is never rewritten: another image under the tag of
	// a revision makes publishing that revision fail.
	rev2 := randomHex(20)
	pushRandom(t, caseRepo+":examples-v1-"+rev2[:7])
	_, _, err = c.run(t, "--registry", pub, "dataset", "publish", ds, "--revision", rev2)
	if err == nil || !strings.Contains(err.Error(), "published tags are never rewritten") {
		t.Errorf("publishing over another image's tag = %v, want a refusal", err)
	}
	if got := headDigest(t, caseRepo+":examples-v1"); got != digest {
		t.Errorf("after the refused publish %s:examples-v1 = %s, want it unmoved at %s", caseRepo, got, digest)
	}

	// Mirror to a second registry: the case image, the runtime and the
	// catalog.
	host, access := secondRegistry(t, reg)
	second := host + "/ssebench-second-" + randomHex(4)
	catalogRef := "/catalog/examples:examples-v1"
	c.mustRun(t, "--registry", pub, "mirror", "--to", second, "--only-args",
		caseRepo+":examples-v1", pub+catalogRef, pub+"/runtime:0.1.0-dev")

	// A user machine: a store and caches of its own, no BuildKit.
	t.Setenv("SSEBENCH_STORE", filepath.Join(c.root, "user-store"))
	t.Setenv("SSEBENCH_CACHE", filepath.Join(c.root, "user-cache"))
	t.Setenv("SSEBENCH_REGISTRY", second)
	noBuild := []string{"--buildkit-addr", "unix://" + filepath.Join(c.root, "no-buildkit.sock"), "--containerd-addr", ctrd}
	out, _ = c.mustRun(t, "tasks", "list", "--catalog", "oci://"+second+catalogRef)
	if want := second + "/case/examples/" + pubTask + "@" + digest; !strings.Contains(out, want) {
		t.Errorf("tasks list printed\n%s\nwant the case image pinned: %s", out, want)
	}
	access.take()
	out, stderr, err = c.run(t, append([]string{"run", "--task", pubTask, "--agent", "reference", "--catalog", "oci://" + second + catalogRef,
		"--runs-dir", filepath.Join(c.root, "user-runs"), "--timeout", "600"}, noBuild...)...)
	if err != nil {
		t.Fatalf("run --catalog = %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(stderr, "PASSED") {
		t.Errorf("run --catalog of reference did not pass:\n%s", stderr)
	}
	log := strings.Join(access.take(), "\n")
	if want := strings.TrimPrefix(second, host) + "/case/examples/" + pubTask + "/manifests/" + digest; !strings.Contains(log, want) {
		t.Errorf("the second registry's access log has no %q:\n%s", want, log)
	}
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "/case/") && strings.Contains(l, "/manifests/examples-v1") {
			t.Errorf("the case image was asked for by tag: %s", l)
		}
		if m, _, _ := strings.Cut(l, " "); m == http.MethodPut || m == http.MethodPost || m == http.MethodPatch {
			t.Errorf("the run wrote to the registry: %s", l)
		}
	}

	// A tampered mirror: the same catalog, another image under the tag.
	tamp := host + "/ssebench-tamp-" + randomHex(4)
	t.Setenv("SSEBENCH_REGISTRY", pub)
	testenv.RemoveImagesAfter(t, ctrd, pub+"/")
	c.mustRun(t, "mirror", "--to", tamp, "--only-args", pub+catalogRef, pub+"/runtime:0.1.0-dev")
	pushRandom(t, tamp+"/case/examples/"+pubTask+":examples-v1")
	t.Setenv("SSEBENCH_REGISTRY", tamp)
	t.Setenv("SSEBENCH_STORE", filepath.Join(c.root, "tamp-store"))
	_, stderr, err = c.run(t, append([]string{"run", "--task", pubTask, "--agent", "reference", "--catalog", "oci://" + tamp + catalogRef,
		"--runs-dir", filepath.Join(c.root, "tamp-runs")}, noBuild...)...)
	if err == nil {
		t.Fatalf("a run of the tampered case image happened:\n%s", stderr)
	}
	oneLine(t, err)
	if want := fmt.Sprintf("the catalog's images lock pins %s, which the registry does not have", digest); !strings.Contains(err.Error(), want) {
		t.Errorf("run of a tampered case image = %v, want %q", err, want)
	}
}

func headDigest(t *testing.T, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ggremote.Head(r)
	if err != nil {
		return ""
	}
	return d.Digest.String()
}

func pushRandom(t *testing.T, ref string) {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ggremote.Write(r, img); err != nil {
		t.Fatal(err)
	}
}
