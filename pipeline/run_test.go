package pipeline_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	gremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/archive"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// snoop runs as the agent: it checks, as model, what SPEC.md section 12
// and the tool image contract promise, and prints ALL GOOD when every check
// holds.
const snoop = `#!/bin/sh
fail=0
bad() { echo "BAD: $*"; fail=1; }
[ "$(id -u):$(id -g)" = "1000:1000" ] || bad "runs as $(id)"
[ -z "$(id -G | tr ' ' '\n' | grep -v '^1000$')" ] || bad "supplementary groups $(id -G)"
for p in /ssebench/config.yaml /ssebench /ssebench-repo /var/lib/ssebench; do
	ls "$p" >/dev/null 2>&1 && bad "can list $p"
	cat "$p" >/dev/null 2>&1 && bad "can read $p"
done
cd /src/kvconf || bad "no SOURCE_DIR"
[ -z "$(git status --porcelain)" ] || bad "git status: $(git status --porcelain | head -3)"
[ "$(git log --oneline | wc -l)" = 1 ] || bad "history: $(git log --oneline | head -3)"
[ "$(git log -1 --format=%an%ae%s)" = "SSEBench Agentagent@ssebench.invalidbuggy commit" ] || bad "commit $(git log -1 --format='%an %ae %s')"
# Nothing outside SOURCE_DIR, /home/model and sticky directories is writable.
w=$(find / -xdev \( -path /proc -o -path /sys -o -path /dev \) -prune -o -writable ! -type l ! -type s ! -perm -1000 -print 2>/dev/null |
	grep -v -e '^/src/kvconf' -e '^/home/model' -e '^/tmp/' -e '^/var/tmp/' -e '^/run/lock' | head -5)
[ -z "$w" ] || bad "writable: $w"
touch /usr/local/bin/evil 2>/dev/null && bad "wrote /usr/local/bin"
touch /src/kvconf/agent-was-here || bad "cannot write SOURCE_DIR"
[ $fail = 0 ] && echo "ALL GOOD"
exit $fail
`

type e2e struct {
	env   *pipeline.Env
	home  string
	runs  string
	store *store.Store
}

func setup(t *testing.T) *e2e {
	t.Helper()
	bkAddr := testenv.RequireBuildKit(t)
	testenv.RequireContainerd(t)
	reg := testenv.RequireRegistry(t)
	osImage := testenv.OSImage(t)
	ctx := context.Background()
	repo := moduleDir(t)

	home := exampleHome(t, repo)
	cp(t, filepath.Join(repo, "agents", "dummy"), filepath.Join(home, "agents", "dummy"))
	agentDir(t, home, "sleeper", "FROM ssebench-agent\nCMD [\"sleep 600\"]\n", nil)
	// An agent image that names another user: the entrypoint must still
	// start as root, or the daemon would grade as the agent.
	agentDir(t, home, "userflip", "FROM ssebench-agent\nUSER model\nCMD [\"echo who=$(id -un)\"]\n", nil)
	agentDir(t, home, "patcher", "FROM ssebench-agent\nCOPY fix.diff /opt/fix.diff\nCMD [\"patch -p1 < /opt/fix.diff\"]\n",
		map[string]string{"fix.diff": read(t, filepath.Join(repo, "datasets", "examples", e2eTask, "sse", "diffs", "patch.diff"))})
	agentDir(t, home, "snooper", "FROM ssebench-agent\nCOPY --chmod=0755 snoop.sh /opt/snoop.sh\nCMD [\"/opt/snoop.sh\"]\n",
		map[string]string{"snoop.sh": snoop})

	// A prefix of its own, for newEnv's clean-up of containerd.
	e := newEnv(t, home, home, testenv.Unique(reg+"/ssebench-e2e"), bkAddr)
	// The Go base image, into the store: the case build takes it from there.
	buildGoBase(t, ctx, e, repo, osImage)
	// Our own runtime, built from this checkout.
	buildRuntime(t, ctx, e, repo)
	return &e2e{env: e, home: home, runs: filepath.Join(home, "runs"), store: e.Store}
}

func (x *e2e) run(t *testing.T, ctx context.Context, agentFolder string, mod func(*pipeline.RunRequest)) (*pipeline.RunResult, string, error) {
	t.Helper()
	var out bytes.Buffer
	// As the CLI does by default (--keep-images under its budget): the
	// images stay in containerd for the next run, which then unpacks
	// nothing; the test's clean-up removes them.
	req := pipeline.RunRequest{
		Task: e2eTask, Agent: agentFolder, RunsDir: x.runs, Timeout: 300,
		Output: &out, KeepImages: true, ImageBudget: runner.DefaultImageBudget,
	}
	if mod != nil {
		mod(&req)
	}
	res, err := x.env.Run(ctx, req)
	return res, out.String(), err
}

type result struct {
	AgentExit int  `json:"agent_exit"`
	TimedOut  bool `json:"timed_out"`
	Passed    bool `json:"passed"`
	Build     *struct {
		OK bool `json:"ok"`
	} `json:"build"`
	Test *struct {
		OK bool `json:"ok"`
	} `json:"test"`
	PoC *struct {
		OK   bool `json:"ok"`
		Exit int  `json:"exit"`
	} `json:"poc"`
	IntentTest *check `json:"intent_test"`
}

type check struct {
	OK   bool   `json:"ok"`
	Exit int    `json:"exit"`
	Log  string `json:"log"`
}

func readResult(t *testing.T, dir string) result {
	t.Helper()
	var r result
	if err := json.Unmarshal([]byte(read(t, filepath.Join(dir, "result.json"))), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRun runs agents on an example task end to end: case image with
// BuildKit, tool and agent images assembled, containerd running them.
func TestRun(t *testing.T) {
	x := setup(t)
	ctx := context.Background()

	t.Run("dummy", func(t *testing.T) {
		// --keep-images=all: the second run below starts without an
		// import, and the image stays labelled kept.
		res, out, err := x.run(t, ctx, "dummy", func(r *pipeline.RunRequest) { r.Difficulty, r.Model, r.ImageBudget = 3, "test-model", 0 })
		if err != nil {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		s := res.Summary
		if s.ExitCode != 0 || s.Status != "ok" {
			t.Errorf("exit %d status %q, want 0 ok\n%s", s.ExitCode, s.Status, out)
		}
		if log := read(t, filepath.Join(res.Dir, "agent.log")); !strings.Contains(log, "dummy_QAQ") {
			t.Errorf("agent.log = %q, want dummy_QAQ", log)
		}
		r := readResult(t, res.Dir)
		if r.Build == nil || !r.Build.OK || r.PoC == nil || r.PoC.OK || r.Passed {
			t.Errorf("result.json of the buggy tree = %+v: want the build to pass and the PoC to fail", r)
		}
		// The hidden tests (the task's future_test) test the fix: they
		// fail on the buggy tree, and the log says why.
		if r.IntentTest == nil || r.IntentTest.OK || r.IntentTest.Log != "intent_test.log" {
			t.Errorf("intent_test of the buggy tree = %+v, want a failure with its log", r.IntentTest)
		} else if log := read(t, filepath.Join(res.Dir, "intent_test.log")); !strings.Contains(log, "FAIL") {
			t.Errorf("intent_test.log = %q, want the failing test's output", log)
		}
		if s.Config.ToolLayer != "sandbox" || s.Images["tool"] == "" || s.Images["agent"] == "" {
			t.Errorf("summary = %+v", s)
		}
		// The host adds what the container cannot know to result.json.
		var host struct {
			RunID      string `json:"run_id"`
			Agent      string `json:"agent"`
			Model      string `json:"model"`
			Difficulty *int   `json:"difficulty"`
			CaseImage  string `json:"case_image"`
		}
		if err := json.Unmarshal([]byte(read(t, filepath.Join(res.Dir, "result.json"))), &host); err != nil {
			t.Fatal(err)
		}
		if host.RunID != s.RunID || host.Agent != "dummy" || host.Model != "test-model" || host.Difficulty == nil || *host.Difficulty != 3 ||
			!strings.HasPrefix(host.CaseImage, s.Images["case"]+"@sha256:") {
			t.Errorf("result.json's host fields = %+v, want run id %s, agent dummy, model test-model, difficulty 3, case image %s@sha256:…", host, s.RunID, s.Images["case"])
		}
		if _, err := os.Stat(filepath.Join(res.Dir, "archive")); err != nil {
			t.Errorf("no archive folder: %v", err)
		}

		// The same images again: nothing new is unpacked.
		res2, out, err := x.run(t, ctx, "dummy", nil)
		if err != nil || res2.Summary.ExitCode != 0 {
			t.Fatalf("second run: %v\n%s", err, out)
		}
		t.Logf("start-up: first run %.2fs (%d layers unpacked), second run %.2fs", s.Timings["startup"], s.LayersUnpacked, res2.Summary.Timings["startup"])
		if n := res2.Summary.LayersUnpacked; n != 0 {
			t.Errorf("the second run of the same images unpacked %d layers, want 0", n)
		}
		// The image was there before the second run, which leaves it.
		if img := inContainerd(t, res2.Summary.Images["agent"]); img == nil || img.Labels[runner.LabelKept] != "true" {
			t.Errorf("after a run with --keep-images and one without, containerd has %+v, want the image labelled %s", img, runner.LabelKept)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		res, out, err := x.run(t, ctx, "sleeper", func(r *pipeline.RunRequest) { r.Timeout, r.KeepImages = 3, false })
		if err != nil {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		if res.Summary.ExitCode != 124 || res.Summary.Status != "timeout" {
			t.Errorf("exit %d status %q, want 124 timeout", res.Summary.ExitCode, res.Summary.Status)
		}
		if r := readResult(t, res.Dir); !r.TimedOut {
			t.Errorf("result.json does not say timed_out: %+v", r)
		}
		t.Logf("a 3 s timeout ended the run in %s", time.Since(start).Round(time.Second))
	})

	t.Run("patcher", func(t *testing.T) {
		res, out, err := x.run(t, ctx, "patcher", func(r *pipeline.RunRequest) { r.KeepImages = false })
		if err != nil || res.Summary.ExitCode != 0 {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		r := readResult(t, res.Dir)
		if !r.Passed || r.Test == nil || !r.Test.OK || r.PoC == nil || !r.PoC.OK {
			t.Errorf("result.json of the fixed tree = %+v, want every check to pass", r)
		}
		if r.IntentTest == nil || !r.IntentTest.OK {
			t.Errorf("intent_test of the fixed tree = %+v, want it to pass", r.IntentTest)
		}
		patch := read(t, filepath.Join(res.Dir, "final.patch"))
		if !strings.Contains(patch, "diff --git") {
			t.Errorf("final.patch = %q, want the agent's diff", patch)
		}
		// With --keep-images=none a run takes its image out of
		// containerd again.
		if img := inContainerd(t, res.Summary.Images["agent"]); img != nil {
			t.Errorf("after the run containerd still has its image %s", img.Name)
		}
	})

	t.Run("user", func(t *testing.T) {
		res, out, err := x.run(t, ctx, "userflip", nil)
		if err != nil {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		log := read(t, filepath.Join(res.Dir, "agent.log"))
		daemon := read(t, filepath.Join(res.Dir, "daemon.log"))
		if !strings.Contains(log, "who=model") || strings.Contains(daemon, "not root") {
			t.Errorf("USER model in the agent image: agent.log %q, daemon.log %q; want the agent as model and the daemon as root", log, daemon)
		}
		if r := readResult(t, res.Dir); r.Build == nil || !r.Build.OK {
			t.Errorf("result.json = %+v, want the build graded", r)
		}
	})

	t.Run("integrity", func(t *testing.T) {
		res, out, err := x.run(t, ctx, "snooper", nil)
		if err != nil {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		log := read(t, filepath.Join(res.Dir, "agent.log"))
		if res.Summary.ExitCode != 0 || !strings.Contains(log, "ALL GOOD") {
			t.Errorf("as model (exit %d):\n%s", res.Summary.ExitCode, log)
		}
	})

	t.Run("redteam", func(t *testing.T) { testRedTeam(t, x) })
	t.Run("gateway", func(t *testing.T) { testGatewayRun(t, x) })
	t.Run("loop", func(t *testing.T) { testLoopRun(t, x) })
	t.Run("examples", func(t *testing.T) { testExampleAgents(t, x) })
	t.Run("codex", func(t *testing.T) { testCodexRun(t, x) })

	t.Run("registry", func(t *testing.T) {
		res, out, err := x.run(t, ctx, "dummy", func(r *pipeline.RunRequest) { r.ViaRegistry = true })
		if err != nil || res.Summary.ExitCode != 0 {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		// The image is in the registry under its name, and what ran is it.
		r, err := remote.NewResolver(remote.WithPullPolicy(remote.PullAlways))
		if err != nil {
			t.Fatal(err)
		}
		img, err := r.Image(ctx, x.env.Names.Agent("dummy", e2eTask, ""))
		if err != nil {
			t.Fatalf("the agent image is not in the registry: %v", err)
		}
		d, _ := img.Digest()
		if got := res.Summary.Images["agent"]; !strings.HasSuffix(got, "@"+d.String()) {
			t.Errorf("ran %s, the registry has %s", got, d)
		}
	})

	t.Run("ctrl-c", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		earlier := map[string]bool{} // folders of the runs before this one
		dirs, _ := filepath.Glob(filepath.Join(x.runs, "*"))
		for _, d := range dirs {
			earlier[d] = true
		}
		done := make(chan struct{})
		var res *pipeline.RunResult
		var err error
		go func() {
			res, _, err = x.run(t, cctx, "sleeper", func(r *pipeline.RunRequest) { r.KeepImages = false })
			close(done)
		}()
		// Ctrl-C once the agent runs: the entrypoint creates agent.log in
		// the run's folder when it starts the agent command.
		started := false
		for deadline := time.Now().Add(5 * time.Minute); !started && time.Now().Before(deadline); {
			logs, _ := filepath.Glob(filepath.Join(x.runs, "*", "agent.log"))
			for _, l := range logs {
				started = started || !earlier[filepath.Dir(l)]
			}
			if started {
				break
			}
			select {
			case <-done:
				t.Fatalf("the run ended before it was cancelled: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
		}
		if !started {
			t.Fatal("the agent did not start within 5 minutes")
		}
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("the run did not stop within a minute of Ctrl-C")
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run() error = %v, want context.Canceled", err)
		}
		if res == nil {
			t.Fatal("no result for the stopped run")
		}
		if res.Summary.Status != "stopped" {
			t.Errorf("status %q, want stopped", res.Summary.Status)
		}
		c, cerr := client.New(os.Getenv(testenv.ContainerdAddressEnv))
		if cerr != nil {
			t.Fatal(cerr)
		}
		defer c.Close()
		nctx := namespaces.WithNamespace(ctx, runner.DefaultNamespace)
		if _, err := c.LoadContainer(nctx, "ssebench-"+res.Summary.RunID); err == nil {
			t.Errorf("container ssebench-%s is still there", res.Summary.RunID)
		}
		// An interrupted run removes its image as a finished one does
		// (--keep-images=none, as the timeout's run before it).
		if img := inContainerd(t, x.env.Names.Agent("sleeper", e2eTask, "")); img != nil {
			t.Errorf("after the interrupted run containerd still has its image %s", img.Name)
		}
	})

	t.Run("save-load", func(t *testing.T) {
		// Air-gapped: the agent image goes into an archive, the archive
		// into a second registry under another prefix, and containerd
		// pulls and runs it from there.
		agentRef := x.env.Names.Agent("dummy", e2eTask, "")
		if _, _, err := x.run(t, ctx, "dummy", nil); err != nil {
			t.Fatal(err)
		}
		tarball := filepath.Join(t.TempDir(), "agent.tar")
		f, err := os.Create(tarball)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := archive.Save(ctx, f, []string{agentRef}, archive.WithStore(x.store), archive.WithRegistryPrefix(x.env.Names.Registry)); err != nil {
			t.Fatalf("Save() = %v", err)
		}
		f.Close()

		mirror := testenv.StartRegistry(t)
		other, err := store.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		in, err := os.Open(tarball)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		rep, err := archive.Load(ctx, in, archive.WithStore(other))
		if err != nil {
			t.Fatalf("Load() = %v", err)
		}
		prefix := mirror + "/airgap"
		if _, err := archive.PushLoaded(ctx, rep, prefix, archive.WithStore(other)); err != nil {
			t.Fatalf("PushLoaded() = %v", err)
		}
		moved, err := remote.Retarget(agentRef, x.env.Names.Registry, prefix)
		if err != nil {
			t.Fatal(err)
		}

		// A namespace of its own, so that containerd has none of the
		// image and must fetch it all from the second registry.
		// The namespace is removed with what it holds when the test ends.
		ns := testenv.ContainerdNamespace(t, os.Getenv(testenv.ContainerdAddressEnv), "ssebench-airgap")
		rn, err := runner.New(ctx, runner.WithNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		defer rn.Close()
		var out bytes.Buffer
		res, err := rn.Run(ctx, runner.RunSpec{
			Image: moved, Pull: true, Output: &out,
			Entrypoint: []string{"/bin/sh", "-c", "id -u; ls /usr/local/bin/entrypoint"},
		})
		if err != nil {
			t.Fatalf("running %s pulled from the second registry: %v", moved, err)
		}
		if res.ExitCode != 0 || !strings.Contains(out.String(), "/usr/local/bin/entrypoint") {
			t.Errorf("exit %d, output %q, stats %+v", res.ExitCode, out.String(), res.Image.Stats)
		}
		if res.Image.Stats.BlobsWritten == 0 {
			t.Error("containerd fetched nothing: the image did not come from the second registry")
		}
	})

	t.Run("prebuilt", func(t *testing.T) {
		// Nothing is built: the agent image comes from the registry
		// (pushed by the registry subtest) or this machine.
		res, out, err := x.run(t, ctx, "dummy", func(r *pipeline.RunRequest) { r.Prebuilt = true })
		if err != nil || res.Summary.ExitCode != 0 {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		// The task container runs the tool image the agent image was
		// checked against, pulled as it is: nothing is assembled.
		for _, step := range []string{"case", "tool", "agent"} {
			if _, ok := res.Summary.Timings[step]; ok {
				t.Errorf("a prebuilt run built its %s image", step)
			}
		}
		if !strings.Contains(res.Summary.Images["tool"], "@sha256:") {
			t.Errorf("the task container ran %q, want the tool image pinned", res.Summary.Images["tool"])
		}
		_, _, err = x.run(t, ctx, "patcher", func(r *pipeline.RunRequest) {
			r.Prebuilt = true
			r.Plugins = []string{"x"}
		})
		if err == nil || !strings.Contains(err.Error(), "cannot be combined") {
			t.Errorf("--prebuilt with --plugin: %v", err)
		}
	})

	t.Run("prebuilt breaking the agent policy", func(t *testing.T) {
		hostile.Attack(t, "agent folder", "a --prebuilt image's agent layers are checked against the graft policy before it runs")
		// The dummy's image, plus a layer that replaces the entrypoint,
		// published under the name of an agent folder of its own.
		dummy, err := x.env.Resolver(nil)
		if err != nil {
			t.Fatal(err)
		}
		good, err := dummy.Resolve(ctx, x.env.Names.Agent("dummy", e2eTask, ""))
		if err != nil {
			t.Fatal(err)
		}
		evil := singleFileLayer(t, "usr/local/bin/entrypoint", "#!/bin/sh\necho PASSED\n", 0o755)
		img, err := mutate.AppendLayers(good.Image, evil)
		if err != nil {
			t.Fatal(err)
		}
		agentDir(t, x.home, "evil-prebuilt", "FROM ssebench-agent\n", nil)
		ref, err := name.ParseReference(x.env.Names.Agent("evil-prebuilt", e2eTask, ""), name.WeakValidation)
		if err != nil {
			t.Fatal(err)
		}
		if err := x.store.Write(ctx, ref, img); err != nil {
			t.Fatal(err)
		}
		_, out, err := x.run(t, ctx, "evil-prebuilt", func(r *pipeline.RunRequest) { r.Prebuilt = true })
		if err == nil || !strings.Contains(err.Error(), "breaks the agent policy") || !strings.Contains(err.Error(), "/usr/local/bin/entrypoint") {
			t.Fatalf("Run(--prebuilt) of an image that replaces the entrypoint = %v, want it refused naming the entry\n%s", err, out)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("the refusal is not one line: %q", err)
		}
	})

	t.Run("prebuilt on a forged tool image", func(t *testing.T) { prebuiltOnForgedTool(t, ctx, x) })
}

// TestRun's subtest above shows a --prebuilt agent image's own layers are
// checked; prebuiltOnForgedTool shows the image under them is not simply
// believed either.
func prebuiltOnForgedTool(t *testing.T, ctx context.Context, x *e2e) {
	hostile.Attack(t, "registry", "a --prebuilt run checks the agent's layers against a tool image only when it was made here, comes from a trusted registry or is signed")
	reg := testenv.RequireRegistry(t)
	rr, err := x.env.Resolver(nil)
	if err != nil {
		t.Fatal(err)
	}
	tool, err := rr.Resolve(ctx, x.env.Names.Tool(e2eTask))
	if err != nil {
		t.Fatal(err)
	}
	agent, err := rr.Resolve(ctx, x.env.Names.Agent("dummy", e2eTask, ""))
	if err != nil {
		t.Fatal(err)
	}
	// The forger publishes a tool image whose entrypoint (the grader's
	// side) always passes, and the dummy's layers on top of it: against
	// that tool image the agent's layers are clean.
	forged, err := mutate.AppendLayers(tool.Image, singleFileLayer(t, "usr/local/bin/entrypoint", "#!/bin/sh\necho PASSED\n", 0o755))
	if err != nil {
		t.Fatal(err)
	}
	toolLayers, err := tool.Image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	agentLayers, err := agent.Image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	evil, err := mutate.AppendLayers(forged, agentLayers[len(toolLayers):]...)
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("%s/ssebench-e2e-forged-%d", reg, time.Now().UnixNano())
	dir := t.TempDir()
	e := newEnv(t, x.home, dir, prefix, testenv.RequireBuildKit(t))
	for n, img := range map[string]v1.Image{e.Names.Tool(e2eTask): forged, e.Names.Agent("dummy", e2eTask, ""): evil} {
		ref, err := name.ParseReference(n, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := gremote.Write(ref, img, gremote.WithContext(ctx)); err != nil {
			t.Fatalf("publishing %s: %v", n, err)
		}
	}
	var out bytes.Buffer
	_, err = e.Run(ctx, pipeline.RunRequest{Task: e2eTask, Agent: "dummy", RunsDir: filepath.Join(dir, "runs"), Timeout: 300, Output: &out, Prebuilt: true})
	if err == nil || !strings.Contains(err.Error(), "cannot be believed") || !strings.Contains(err.Error(), "--trust-registry or --verify-key") {
		t.Fatalf("Run(--prebuilt) on a tool image from an untrusted registry = %v, want it refused\n%s", err, out.String())
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the refusal is not one line: %q", err)
	}
	if runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "result.json")); len(runs) > 0 {
		t.Errorf("the refused run left a result: %v", runs)
	}
}

// singleFileLayer is a layer of one regular file.
func singleFileLayer(t *testing.T, name, content string, mode int64) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(content)), ModTime: time.Unix(1700000000, 0)}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(content))
	tw.Close()
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func agentDir(t *testing.T, home, folder, dockerfile string, files map[string]string) {
	t.Helper()
	d := filepath.Join(home, "agents", folder)
	os.MkdirAll(d, 0o755)
	os.WriteFile(filepath.Join(d, "agent.yaml"), []byte(fmt.Sprintf("name: %s\n", folder)), 0o644)
	os.WriteFile(filepath.Join(d, "Dockerfile"), []byte(dockerfile), 0o644)
	for n, c := range files {
		os.WriteFile(filepath.Join(d, n), []byte(c), 0o644)
	}
}

// inContainerd returns ssebench's containerd record of the image ref
// (name or name@digest), or nil.
func inContainerd(t *testing.T, ref string) *images.Image {
	t.Helper()
	name, _, _ := strings.Cut(ref, "@")
	c, err := client.New(os.Getenv(testenv.ContainerdAddressEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	img, err := c.ImageService().Get(namespaces.WithNamespace(context.Background(), runner.DefaultNamespace), name)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &img
}
