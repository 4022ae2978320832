// Package ci_test runs the CI job of docs/ci.md, docs/ci/rebuild-tools.sh,
// against the test registry, as a CI machine would run it.
package ci_test

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/registry/trust"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// TestRebuildToolsScript runs docs/ci/rebuild-tools.sh twice on fresh
// "machines" (an empty store and facts cache each time), with a custom
// runtime: first with runtime 1, when every tool image is new, then after a
// runtime bump that changes only the arm64 runtime (a fix for one
// platform), when only the task whose case image is arm64 gets a new tool
// image. The second run must push and sign that one alone, leave the others
// as they are (same manifest, same signature), upload only a fraction of
// what the first did, and say so in its figures.
func TestRebuildToolsScript(t *testing.T) {
	reg := testenv.RequireRegistry(t)
	_, err := exec.LookPath("bash")
	testenv.Need(t, err == nil, "bash is not installed")
	root := testenv.ModuleRoot()
	work := t.TempDir()

	bin := filepath.Join(work, "ssebench")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/ssebench")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ssebench: %v\n%s", err, out)
	}

	// A prefix of this run's own: nothing is there before it starts.
	prefix := fmt.Sprintf("%s/ssebench-ci-%x", reg, time.Now().UnixNano())
	dataset := filepath.Join(work, "examples")
	if err := os.CopyFS(dataset, os.DirFS(filepath.Join(root, "datasets", "examples"))); err != nil {
		t.Fatal(err)
	}
	ds, err := task.LoadDataset(dataset)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Tasks) < 2 {
		t.Fatalf("datasets/examples has %d tasks, the test needs at least 2", len(ds.Tasks))
	}

	// The CI's key pair: the private half signs, anyone with the public
	// half checks.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv, _, err := trust.EncodeKeys(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(work, "ci-sign.pem")
	if err := os.WriteFile(keyFile, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	check := &trust.Policy{Key: &key.PublicKey}

	// The published case images: the last task's is arm64, the others are
	// the other architecture, so a fix of the arm64 runtime reaches one.
	host, other := runtime.GOARCH, "arm64"
	if host == "arm64" {
		host, other = "amd64", "arm64"
	}
	archOf := map[string]string{}
	for i, tk := range ds.Tasks {
		arch := host
		if i == len(ds.Tasks)-1 {
			arch = other
		}
		archOf[tk.ID] = arch
		ref := fmt.Sprintf("%s/case/%s/%s:%s", prefix, ds.Name, strings.ToLower(tk.ID), ds.Version)
		write(t, ref, caseImage(t, arch, tk.Config.Source, int64(i)))
	}
	fixed := ds.Tasks[len(ds.Tasks)-1].ID

	// Runtime 1, and runtime 2: the same amd64 image, arm64 with a fix.
	rt := map[string]v1.Image{host: runtimeImage(t, host), other: runtimeImage(t, other)}
	runtime1 := prefix + "/custom-runtime:1"
	write(t, runtime1, index(t, rt[host], rt[other], host, other))
	bumped, err := mutate.AppendLayers(rt[other], layer(t, file("ssebench/fix", 0o644, []byte("the arm64 fix\n"))))
	if err != nil {
		t.Fatal(err)
	}
	runtime2 := prefix + "/custom-runtime:2"
	write(t, runtime2, index(t, rt[host], bumped, host, other))

	run := func(n int, rtRef string) ciRun {
		t.Helper()
		machine := filepath.Join(work, fmt.Sprintf("machine-%d", n))
		if err := os.MkdirAll(filepath.Join(machine, "home"), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", filepath.Join(root, "docs", "ci", "rebuild-tools.sh"), dataset)
		cmd.Dir = machine
		cmd.Env = append(cleanEnv(),
			"HOME="+filepath.Join(machine, "home"),
			"SSEBENCH="+bin,
			"SSEBENCH_REGISTRY="+prefix,
			"SSEBENCH_SIGN_KEY="+keyFile,
			"SSEBENCH_RUNTIME_IMAGE="+rtRef,
			"SSEBENCH_STORE="+filepath.Join(machine, "store"),
			"SSEBENCH_CACHE="+filepath.Join(machine, "cache"),
		)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("run %d of rebuild-tools.sh: %v\nstdout:\n%s\nstderr:\n%s", n, err, stdout.String(), stderr.String())
		}
		t.Logf("run %d of rebuild-tools.sh:\n%s", n, stdout.String())
		return parseRun(t, stdout.String())
	}

	first := run(1, runtime1)
	if first.rebuilt != len(ds.Tasks) || first.unchanged != 0 {
		t.Errorf("first run: %d rebuilt, %d unchanged; want %d rebuilt, 0 unchanged", first.rebuilt, first.unchanged, len(ds.Tasks))
	}
	// What the first run learnt from the case layers is published, signed,
	// for the next machine that assembles a tool image without one.
	facts, err := ggremote.List(mustRef(t, prefix+"/layer-facts:x").Context(), ggremote.WithContext(t.Context()))
	if err != nil || len(facts) == 0 {
		t.Errorf("first run: no layer facts in %s/layer-facts (%v)", prefix, err)
	}
	sigs := map[string]string{}
	for _, tk := range ds.Tasks {
		ref := toolRef(prefix, tk.ID)
		if got := first.result[ref]; got != "pushed" {
			t.Errorf("first run: %s was %q, want pushed", ref, got)
		}
		d := headDigest(t, ref)
		if err := check.Check(t.Context(), mustRef(t, ref).Context(), d); err != nil {
			t.Errorf("first run: the signature of %s does not verify: %v", ref, err)
		}
		sigs[tk.ID] = headDigest(t, trust.SignatureTag(mustRef(t, ref).Context(), d).Name()).String()
	}

	second := run(2, runtime2)
	if second.rebuilt != 1 || second.unchanged != len(ds.Tasks)-1 {
		t.Errorf("after the arm64 runtime fix: %d rebuilt, %d unchanged; want 1 rebuilt (%s), %d unchanged", second.rebuilt, second.unchanged, fixed, len(ds.Tasks)-1)
	}
	for _, tk := range ds.Tasks {
		ref := toolRef(prefix, tk.ID)
		d := headDigest(t, ref)
		if err := check.Check(t.Context(), mustRef(t, ref).Context(), d); err != nil {
			t.Errorf("second run: the signature of %s does not verify: %v", ref, err)
		}
		sig := headDigest(t, trust.SignatureTag(mustRef(t, ref).Context(), d).Name()).String()
		if tk.ID == fixed {
			if got := second.result[ref]; got != "pushed" {
				t.Errorf("second run: %s (%s) was %q, want pushed", ref, archOf[tk.ID], got)
			}
			continue
		}
		if got := second.result[ref]; got != "unchanged" {
			t.Errorf("second run: %s (%s, its runtime did not change) was %q, want unchanged", ref, archOf[tk.ID], got)
		}
		if sig != sigs[tk.ID] {
			t.Errorf("second run: %s was signed again (signature %s, was %s): an unchanged image must be left alone", ref, sig, sigs[tk.ID])
		}
	}
	// The changed image's case, system and source layers are in the
	// registry: only the fix layer, the config and the manifest move.
	if second.uploaded <= 0 || second.uploaded*4 > first.uploaded {
		t.Errorf("second run uploaded %d bytes, first %d: want something, and at most a quarter of the first", second.uploaded, first.uploaded)
	}
	if second.skipped <= first.skipped {
		t.Errorf("second run skipped %d bytes, first %d: the unchanged images and the changed one's old layers should count as skipped", second.skipped, first.skipped)
	}
	if !second.timed {
		t.Error("the second run printed no time")
	}
}

// ciRun is what one run of the script printed.
type ciRun struct {
	result                     map[string]string // tool image name → pushed, unchanged
	rebuilt, unchanged         int
	uploaded, mounted, skipped int64
	timed                      bool
}

var (
	imageLine   = regexp.MustCompile(`^(\S+)@sha256:[0-9a-f]{64} (\S+)$`)
	countsLine  = regexp.MustCompile(`^tool images: (\d+) rebuilt and pushed, (\d+) unchanged$`)
	bytesLine   = regexp.MustCompile(`^bytes: (.+) uploaded, (.+) mounted, (.+) skipped`)
	tookLine    = regexp.MustCompile(`^took \S+$`)
	sizePattern = regexp.MustCompile(`^([0-9.]+) (B|KiB|MiB|GiB)$`)
)

func parseRun(t *testing.T, out string) ciRun {
	t.Helper()
	r := ciRun{result: map[string]string{}}
	counted, sized := false, false
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if m := imageLine.FindStringSubmatch(l); m != nil {
			r.result[m[1]] = m[2]
		} else if m := countsLine.FindStringSubmatch(l); m != nil {
			r.rebuilt, _ = strconv.Atoi(m[1])
			r.unchanged, _ = strconv.Atoi(m[2])
			counted = true
		} else if m := bytesLine.FindStringSubmatch(l); m != nil {
			r.uploaded, r.mounted, r.skipped = size(t, m[1]), size(t, m[2]), size(t, m[3])
			sized = true
		} else if tookLine.MatchString(l) {
			r.timed = true
		}
	}
	if !counted || !sized {
		t.Fatalf("the script printed no figures (tool images …, bytes …):\n%s", out)
	}
	return r
}

// size reads "12.3 KiB" back, to within the rounding of the print.
func size(t *testing.T, s string) int64 {
	t.Helper()
	m := sizePattern.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%q is not a size", s)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	shift := map[string]float64{"B": 0, "KiB": 10, "MiB": 20, "GiB": 30}[m[2]]
	return int64(f * math.Exp2(shift))
}

// cleanEnv is the test's environment without SSEBench's settings, so that
// the script sees only what the test gives it.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SSEBENCH_") || k == "SOURCE_DATE_EPOCH" || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func toolRef(prefix, id string) string {
	data, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(), "VERSION"))
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%s/tool/%s:%s", prefix, strings.ToLower(id), strings.TrimSpace(string(data)))
}

func mustRef(t *testing.T, ref string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func headDigest(t *testing.T, ref string) v1.Hash {
	t.Helper()
	d, err := ggremote.Head(mustRef(t, ref), ggremote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("HEAD %s: %v", ref, err)
	}
	return d.Digest
}

func write(t *testing.T, ref string, img ggremote.Taggable) {
	t.Helper()
	var err error
	switch v := img.(type) {
	case v1.Image:
		err = ggremote.Write(mustRef(t, ref), v, ggremote.WithContext(t.Context()))
	case v1.ImageIndex:
		err = ggremote.WriteIndex(mustRef(t, ref), v, ggremote.WithContext(t.Context()))
	}
	if err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
}

type entry struct {
	name string
	mode int64
	body []byte // nil: a folder
}

func file(name string, mode int64, body []byte) entry { return entry{name, mode, body} }
func folder(name string) entry                        { return entry{name: name, mode: 0o755} }

func layer(t *testing.T, entries ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	when := time.Unix(1750000000, 0)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: when, Typeflag: tar.TypeDir}
		if e.body != nil {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// platformed gives img a config of arch, created at a fixed time.
func platformed(t *testing.T, img v1.Image, arch string, cfg v1.Config) v1.Image {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", arch, cfg
	cf.Created = v1.Time{Time: time.Unix(1750000000, 0).UTC()}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// caseImage is a small case image of arch: accounts and a project at
// source with 256 KiB of incompressible data, so that what a push moves
// shows in bytes.
func caseImage(t *testing.T, arch, source string, seed int64) v1.Image {
	t.Helper()
	src := strings.Trim(source, "/")
	data := make([]byte, 256<<10)
	rng := mrand.New(mrand.NewPCG(uint64(seed), 28))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	parts := strings.Split(src, "/")
	entries := []entry{
		folder("etc"),
		file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/bash\n")),
		file("etc/group", 0o644, []byte("root:x:0:\n")),
		{name: "tmp", mode: 0o1777},
	}
	for i := range parts {
		entries = append(entries, folder(strings.Join(parts[:i+1], "/")))
	}
	entries = append(entries, file(src+"/main.c", 0o644, []byte("int main(void) { return 0; }\n")), file(src+"/data.bin", 0o644, data))
	img, err := mutate.AppendLayers(empty.Image, layer(t, entries...))
	if err != nil {
		t.Fatal(err)
	}
	return platformed(t, img, arch, v1.Config{WorkingDir: source, Cmd: []string{"bash"}, Env: []string{"PATH=/usr/bin:/bin"}})
}

// runtimeImage is a stand-in runtime image of arch: the daemon and the
// entrypoint (their bytes name the architecture, as real binaries differ).
func runtimeImage(t *testing.T, arch string) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layer(t,
		folder("ssebench"), file("ssebench/ssebench-daemon", 0o755, []byte("daemon for "+arch+"\n")),
		folder("usr"), folder("usr/local"), folder("usr/local/bin"),
		file("usr/local/bin/entrypoint", 0o755, []byte("entrypoint for "+arch+"\n")),
	))
	if err != nil {
		t.Fatal(err)
	}
	return platformed(t, img, arch, v1.Config{})
}

func index(t *testing.T, a, b v1.Image, archA, archB string) v1.ImageIndex {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	return mutate.AppendManifests(idx,
		mutate.IndexAddendum{Add: a, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: archA}}},
		mutate.IndexAddendum{Add: b, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: archB}}},
	)
}

// TestWorkflowRunsTheScript keeps the GitHub Actions form and the shell
// form one job: the workflow's rebuild step runs the script, and names no
// registry host (it comes from the repository's variables).
func TestWorkflowRunsTheScript(t *testing.T) {
	wf, err := os.ReadFile("rebuild-tools.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s+bash docs/ci/rebuild-tools\.sh "\$DATASET"`).Match(wf) {
		t.Error("rebuild-tools.yml does not run `bash docs/ci/rebuild-tools.sh \"$DATASET\"`: the workflow and the script must be the same job")
	}
	if !strings.Contains(string(wf), "SSEBENCH_REGISTRY: ${{ vars.SSEBENCH_REGISTRY }}") {
		t.Error("rebuild-tools.yml does not take SSEBENCH_REGISTRY from the repository's variables")
	}
}
