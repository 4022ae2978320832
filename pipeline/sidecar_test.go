package pipeline_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/42-b3yond-6ug/ssebench/examples/toollayer"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// sidecarProbe runs as the agent in the agent container of a sidecar run
// and prints SIDECAR GOOD when the container holds what SPEC.md section 7
// and section 12 promise.
const sidecarProbe = `#!/bin/sh
fail=0
bad() { echo "BAD: $*"; fail=1; }
[ "$(id -u):$(id -g)" = "1000:1000" ] || bad "runs as $(id)"
for p in /ssebench /ssebench-repo; do
	[ -e "$p" ] && bad "$p exists"
done
d=$(find / -xdev -name ssebench-daemon 2>/dev/null | head -3)
[ -z "$d" ] || bad "a daemon binary: $d"
[ "$(stat -c '%u:%g %a' /run/ssebench)" = "0:0 755" ] || bad "/run/ssebench is $(stat -c '%u:%g %a' /run/ssebench)"
[ -S /run/ssebench/sse.sock ] || bad "no agent socket"
rm -f /run/ssebench/sse.sock 2>/dev/null
[ -S /run/ssebench/sse.sock ] || bad "model removed the agent socket"
mv /run/ssebench/admin.sock /run/ssebench/x 2>/dev/null && bad "model moved the admin socket"
touch /run/ssebench/agent-exit 2>/dev/null && bad "model wrote the hand-over file"
ln -s /tmp/x /run/ssebench/evil 2>/dev/null && bad "model wrote /run/ssebench"
[ -e /run/ssebench/admin.sock ] && bad "the admin socket is in the agent container"
[ -z "$SSE_ADMIN_SOCKET" ] || bad "SSE_ADMIN_SOCKET=$SSE_ADMIN_SOCKET"
[ "$(ls /run/ssebench | tr '\n' ' ')" = "ready sse.sock " ] || bad "/run/ssebench holds $(ls /run/ssebench)"
grep -q '^NoNewPrivs:[[:space:]]*1' /proc/self/status || bad "the agent runs without no_new_privs"
mcp=
for p in /proc/[0-9]*; do
	case "$(tr '\0' ' ' <$p/cmdline 2>/dev/null)" in
	*/ssebench-mcp*) mcp="$mcp $(awk '/^Uid:/ {print $2":"$3}' $p/status)";;
	esac
done
[ "$mcp" = " 65534:65534" ] || bad "MCP server uids:$mcp, want nobody's"
[ "$(pwd)" = /src/kvconf ] || bad "working directory $(pwd)"
[ -f /src/kvconf/unquote.go ] || bad "no source tree"
touch /src/kvconf/agent-was-here || bad "cannot write SOURCE_DIR"
/usr/local/bin/entrypoint --call ping >/dev/null || bad "the daemon does not answer"
[ $fail = 0 ] && echo "SIDECAR GOOD"
exit $fail
`

// fixedUnquote is the example task's unquote.go with the reference patch
// applied, made with patch(1) on the host: the OS image of the sidecar
// agent has no patch, so the fixing agent copies the file.
func fixedUnquote(t *testing.T, repo string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(repo, "datasets", "examples", e2eTask)
	cp(t, filepath.Join(src, "src", "unquote.go"), filepath.Join(dir, "unquote.go"))
	cmd := exec.Command("patch", "-p1", "-i", filepath.Join(src, "sse", "diffs", "patch.diff"))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patch: %v\n%s", err, out)
	}
	return read(t, filepath.Join(dir, "unquote.go"))
}

type grade struct {
	Passed, Build, Test, PoC, Intent bool
}

func gradeOf(t *testing.T, dir string) grade {
	t.Helper()
	r := readResult(t, dir)
	ok := func(c *check) bool { return c != nil && c.OK }
	g := grade{Passed: r.Passed, Intent: ok(r.IntentTest)}
	if r.Build != nil {
		g.Build = r.Build.OK
	}
	if r.Test != nil {
		g.Test = r.Test.OK
	}
	if r.PoC != nil {
		g.PoC = r.PoC.OK
	}
	return g
}

// TestSidecar runs agents in sidecar mode end to end: tool-sidecar and
// tool-sidecar-agent assembled, the two containers in containerd.
func TestSidecar(t *testing.T) {
	x := setup(t)
	osImage := testenv.OSImage(t)
	ctx := context.Background()
	repo := moduleDir(t)
	agentDir(t, x.home, "fixer", "FROM ssebench-agent\nCOPY unquote.go /opt/fix/unquote.go\nCMD [\"cp /opt/fix/unquote.go unquote.go\"]\n",
		map[string]string{"unquote.go": fixedUnquote(t, repo)})
	agentDir(t, x.home, "prober", "FROM ssebench-agent\nCOPY --chmod=0755 probe.sh /opt/probe.sh\nCMD [\"/opt/probe.sh\"]\n",
		map[string]string{"probe.sh": sidecarProbe})
	sidecar := func(r *pipeline.RunRequest) { r.Mode, r.OSImage = pipeline.ModeSidecar, osImage }

	t.Run("same grades as sandbox", func(t *testing.T) {
		for _, a := range []string{"dummy", "fixer"} {
			sres, out, err := x.run(t, ctx, a, nil)
			if err != nil {
				t.Fatalf("%s in sandbox mode: %v\n%s", a, err, out)
			}
			res, out, err := x.run(t, ctx, a, sidecar)
			if err != nil {
				t.Fatalf("%s in sidecar mode: %v\n%s", a, err, out)
			}
			want, got := gradeOf(t, sres.Dir), gradeOf(t, res.Dir)
			if got != want {
				t.Errorf("%s: sidecar grade %+v, sandbox grade %+v", a, got, want)
			}
			if a == "fixer" && !got.Passed {
				t.Errorf("fixer did not pass in sidecar mode: %+v\n%s", got, read(t, filepath.Join(res.Dir, "result.json")))
			}
			if a == "dummy" && (got.Passed || !got.Build) {
				t.Errorf("dummy: %+v, want the build to pass and the run to fail", got)
			}
			s := res.Summary
			if s.Config.Mode != "sidecar" || s.Config.ToolLayer != "" || s.ExitCode != 0 || s.Status != "ok" {
				t.Errorf("summary: mode %q tool layer %q exit %d status %q", s.Config.Mode, s.Config.ToolLayer, s.ExitCode, s.Status)
			}
			if !strings.HasPrefix(s.Images["tool"], x.env.Names.SidecarTask(e2eTask)+"@sha256:") ||
				!strings.HasPrefix(s.Images["agent"], x.env.Names.SidecarAgent(a, "")+"@sha256:") {
				t.Errorf("images = %v", s.Images)
			}
			if p := read(t, filepath.Join(res.Dir, "final.patch")); a == "fixer" && !strings.Contains(p, "short \\\\x escape") {
				t.Errorf("final.patch of fixer lacks the fix:\n%s", p)
			}
			if _, err := os.Stat(filepath.Join(res.Dir, "daemon.log")); err != nil {
				t.Errorf("no daemon.log: %v", err)
			}
		}
	})

	t.Run("agent container", func(t *testing.T) {
		res, out, err := x.run(t, ctx, "prober", sidecar)
		if err != nil {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		log := read(t, filepath.Join(res.Dir, "agent.log"))
		if !strings.Contains(log, "SIDECAR GOOD") || res.Summary.ExitCode != 0 {
			t.Errorf("exit %d; agent.log:\n%s", res.Summary.ExitCode, log)
		}
		noContainers(t, ctx, res.Summary.RunID)
	})

	t.Run("attacks", func(t *testing.T) {
		testSidecarAttacks(t, x, fixedUnquote(t, repo))
	})

	t.Run("agent container killed", func(t *testing.T) {
		runID := "sidecar-kill-" + time.Now().UTC().Format("150405.000")
		runID = strings.ReplaceAll(runID, ".", "")
		dir := filepath.Join(x.runs, runID)
		killed := make(chan error, 1)
		go func() {
			// Once the agent runs, kill its container from outside.
			deadline := time.Now().Add(5 * time.Minute)
			for time.Now().Before(deadline) {
				if _, err := os.Stat(filepath.Join(dir, "agent.log")); err == nil {
					killed <- killContainer(ctx, "ssebench-"+runID+"-agent")
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
			killed <- context.DeadlineExceeded
		}()
		res, out, err := x.run(t, ctx, "sleeper", func(r *pipeline.RunRequest) { sidecar(r); r.RunID = runID })
		if kerr := <-killed; kerr != nil {
			t.Fatalf("killing the agent container: %v", kerr)
		}
		if err != nil {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		g := gradeOf(t, res.Dir)
		if !g.Build || g.Passed {
			t.Errorf("grade after the kill = %+v, want the untouched tree graded (build ok, not passed)\n%s", g, read(t, filepath.Join(res.Dir, "result.json")))
		}
		if r := read(t, filepath.Join(res.Dir, "result.json")); !strings.Contains(r, "without its report") {
			t.Errorf("result.json does not say the agent container was killed:\n%s", r)
		}
		if res.Summary.ExitCode != 128+int(syscall.SIGKILL) {
			t.Errorf("exit %d, want %d", res.Summary.ExitCode, 128+int(syscall.SIGKILL))
		}
		noContainers(t, ctx, runID)
	})

	t.Run("stopped", func(t *testing.T) {
		runID := strings.ReplaceAll("sidecar-stop-"+time.Now().UTC().Format("150405.000"), ".", "")
		dir := filepath.Join(x.runs, runID)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			for cctx.Err() == nil {
				if _, err := os.Stat(filepath.Join(dir, "agent.log")); err == nil {
					cancel() // Ctrl-C
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
		_, _, err := x.run(t, cctx, "sleeper", func(r *pipeline.RunRequest) { sidecar(r); r.RunID = runID })
		if err == nil {
			t.Errorf("a stopped run returned no error")
		}
		noContainers(t, ctx, runID)
	})

	t.Run("prebuilt", func(t *testing.T) {
		// The images as an evaluation builds them, once for many runs.
		req := pipeline.RunRequest{Task: e2eTask, Agent: "dummy"}
		sidecar(&req)
		ti, err := x.env.BuildTask(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		ri, err := x.env.BuildAgent(ctx, req, ti)
		if err != nil {
			t.Fatal(err)
		}
		if ri.SourceDir != "/src/kvconf" || !strings.HasPrefix(ri.Tool, x.env.Names.SidecarTask(e2eTask)+"@") ||
			!strings.HasPrefix(ri.AgentRuntime, x.env.Names.SidecarAgentRuntime()+"@") || !strings.HasPrefix(ri.Agent, x.env.Names.SidecarAgent("dummy", "")+"@") {
			t.Errorf("images %+v", ri)
		}
		// Nothing is built: the two sidecar images are pulled, and as the
		// registry does not have them, the copies in the store are run.
		var log bytes.Buffer
		saved := x.env.Log
		x.env.Log = io.MultiWriter(&log, testWriter{t})
		defer func() { x.env.Log = saved }()
		res, out, err := x.run(t, ctx, "dummy", func(r *pipeline.RunRequest) { sidecar(r); r.Prebuilt = true })
		if err != nil {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		// The agent image is pulled by the digest its policy check read.
		agentImg := x.env.Names.SidecarAgent("dummy", "")
		agentRepo := agentImg[:strings.LastIndex(agentImg, ":")]
		for _, want := range []string{x.env.Names.SidecarTask(e2eTask) + " failed", agentRepo + "@sha256:"} {
			if !strings.Contains(log.String(), "pulling the prebuilt image "+want) {
				t.Errorf("no pull of %s:\n%s", want, log.String())
			}
		}
		if strings.Contains(log.String(), "assembled") {
			t.Errorf("a prebuilt run assembled images:\n%s", log.String())
		}
		if g := gradeOf(t, res.Dir); !g.Build || g.Passed || !res.Summary.Config.Prebuilt {
			t.Errorf("grade %+v, prebuilt %v", g, res.Summary.Config.Prebuilt)
		}
	})

	t.Run("images", func(t *testing.T) {
		// tool-sidecar-agent: the same bytes from another store (another
		// machine) with the same inputs.
		rt1, err := x.env.SidecarAgent(ctx, pipeline.SidecarAgentRequest{OSImage: osImage})
		if err != nil {
			t.Fatal(err)
		}
		e2 := newEnv(t, x.home, t.TempDir(), x.env.Names.Registry, "")
		idx, err := x.store.Index(mustRef(t, x.env.Names.Runtime()))
		if err != nil {
			t.Fatal(err)
		}
		if err := e2.Store.WriteIndex(ctx, mustRef(t, e2.Names.Runtime()), idx); err != nil {
			t.Fatal(err)
		}
		rt2, err := e2.SidecarAgent(ctx, pipeline.SidecarAgentRequest{OSImage: osImage})
		if err != nil {
			t.Fatal(err)
		}
		if rt1.Digest != rt2.Digest {
			t.Errorf("tool-sidecar-agent from two stores: %s and %s", rt1.Digest, rt2.Digest)
		}
		img, err := x.store.Image(mustRef(t, rt1.Name))
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(cf.Config.Entrypoint, " "); got != "/usr/local/bin/entrypoint --mode sidecar --" || cf.Config.User != "" {
			t.Errorf("tool-sidecar-agent: entrypoint %q user %q", got, cf.Config.User)
		}
		// One agent-<name>/sidecar for every task.
		var digests []string
		for _, task := range []string{e2eTask, "libqs-3-b2a739e", "netstrings-7-bbfbbfe"} {
			b, err := x.env.Agent(ctx, pipeline.AgentRequest{Tool: rt1.Name, Folder: "dummy", Task: task, Sidecar: true})
			if err != nil {
				t.Fatal(err)
			}
			if b.Name != x.env.Names.SidecarAgent("dummy", "") {
				t.Errorf("agent image %s", b.Name)
			}
			digests = append(digests, b.Digest.String())
		}
		if digests[0] != digests[1] || digests[1] != digests[2] {
			t.Errorf("agent-dummy/sidecar differs between tasks: %v", digests)
		}
	})

	t.Run("example tool layer", func(t *testing.T) {
		res, out, err := x.run(t, ctx, "dummy", func(r *pipeline.RunRequest) { r.ToolLayer = toollayer.Name })
		if err != nil {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		var s struct {
			Config struct {
				ToolLayer string `json:"tool_layer"`
			} `json:"config"`
			Images map[string]string `json:"images"`
		}
		if err := json.Unmarshal([]byte(read(t, filepath.Join(res.Dir, "summary.json"))), &s); err != nil {
			t.Fatal(err)
		}
		if s.Config.ToolLayer != toollayer.Name || !strings.HasPrefix(s.Images["tool"], x.env.Names.ToolLayer(toollayer.Kind, e2eTask)+"@") {
			t.Errorf("summary.json: tool layer %q, images %v", s.Config.ToolLayer, s.Images)
		}
		// The file and the variable are in the image the agent ran in.
		tool, err := x.store.Image(mustRef(t, x.env.Names.ToolLayer(toollayer.Kind, e2eTask)))
		if err != nil {
			t.Fatal(err)
		}
		if got := fileIn(t, tool, toollayer.File); got != toollayer.Content {
			t.Errorf("%s in the tool image = %q", toollayer.File, got)
		}
		cf, err := tool.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(cf.Config.Env, "\n"), toollayer.EnvVar+"="+toollayer.Name) {
			t.Errorf("env %v lacks %s", cf.Config.Env, toollayer.EnvVar)
		}
		if g := gradeOf(t, res.Dir); !g.Build || g.Passed {
			t.Errorf("grade = %+v", g)
		}
	})
}

// sidecarAttacks are the attacks on the task container from the agent
// container: as its root (an agent image's Dockerfile runs as root; here
// the run's ENTRYPOINT, RunRequest.Entrypoint, stands for it) and as
// model through a setuid program of the agent's image. Each must leave
// the grade the honest one.
var sidecarAttacks = []struct {
	name string
	// root is the attack sidecar-attack makes as root before the
	// entrypoint; "" runs the entrypoint directly.
	root string
	// agent is the agent's command, as model.
	agent string
	// passed is the honest grade: the agent fixes the bug, or not.
	passed bool
}{
	// The admin socket's grade runs the hidden tests: its answer is the
	// answer, and it ends the phase.
	{name: "admin grade", root: "grade", agent: "cat /tmp/attack.log; echo attack done"},
	// A fake daemon on both sockets, then agent-exit so that the task
	// container grades at once, with the fake.
	{name: "fake daemon", root: "fake", agent: "cat /tmp/attack.log; [ ! -e /tmp/fake-up ] || sleep 20; echo attack done"},
	// agent-exit before the agent has fixed anything: the tree is graded
	// while the agent still works on it.
	{name: "early agent-exit", root: "exit", agent: "cat /tmp/attack.log; cp /opt/fix/unquote.go unquote.go; echo attack done", passed: true},
}

// testSidecarAttacks runs each of sidecarAttacks in containerd.
func testSidecarAttacks(t *testing.T, x *e2e, fixed string) {
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "sidecar-attack")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./testdata/sidecar-attack")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the attack: %v\n%s", err, out)
	}
	agentDir(t, x.home, "sidecar-attacker", "FROM ssebench-agent\n"+
		"COPY --chmod=0755 attack /opt/attack\nCOPY unquote.go /opt/fix/unquote.go\nCMD [\"true\"]\n",
		map[string]string{"attack": read(t, bin), "unquote.go": fixed})
	// A setuid-root program in the agent's image never gets there: the
	// graft refuses the layer (and, were it there, no_new_privs, which
	// containerd's spec sets and the entrypoint sets again, would keep it
	// model's: TestSidecarAgentNoNewPrivs checks the entrypoint's).
	t.Run("setuid", func(t *testing.T) {
		hostile.Attack(t, "sidecar setuid", "the graft policy refuses set-id files; no_new_privs besides")
		agentDir(t, x.home, "sidecar-suid", "FROM ssebench-agent\nCOPY --chmod=4755 attack /opt/attack-suid\nCMD [\"/opt/attack-suid euid\"]\n",
			map[string]string{"attack": read(t, bin)})
		_, out, err := x.run(t, ctx, "sidecar-suid", func(r *pipeline.RunRequest) {
			r.Mode, r.OSImage = pipeline.ModeSidecar, testenv.OSImage(t)
		})
		if err == nil || !strings.Contains(err.Error(), "/opt/attack-suid: a setuid or setgid file") {
			t.Errorf("Run() of an agent with a setuid program = %v, want the graft's refusal\n%s", err, out)
		}
	})
	for _, a := range sidecarAttacks {
		t.Run(a.name, func(t *testing.T) {
			hostile.Attack(t, "sidecar "+a.name, "the agent container gets only the agent socket, read-only; the task container alone holds the admin socket and the hand-over files")
			ep := []string{"/usr/local/bin/entrypoint", "--mode", "sidecar", "--", a.agent}
			if a.root != "" {
				ep = append([]string{"/opt/attack", "root", a.root, "--"}, ep...)
			}
			res, out, err := x.run(t, ctx, "sidecar-attacker", func(r *pipeline.RunRequest) {
				r.Mode, r.OSImage = pipeline.ModeSidecar, testenv.OSImage(t)
				r.Entrypoint = ep
			})
			if res == nil {
				t.Fatalf("Run() = %v\n%s", err, out)
			}
			log := read(t, filepath.Join(res.Dir, "agent.log"))
			if !strings.Contains(log, "attack done") {
				t.Errorf("the attack did not run to its end (%v):\n%s", err, log)
			}
			for _, got := range []string{"ADMIN ANSWERED", "REMOVED", "FAKE LISTENING", "AGENT-EXIT WRITTEN", "euid=0"} {
				if strings.Contains(log, got) {
					t.Errorf("the attack got through (%s):\n%s", got, log)
				}
			}
			if r := readResult(t, res.Dir); r.Passed != a.passed {
				t.Errorf("passed = %v, want the honest grade %v (run error %v)\nagent.log:\n%s\nresult.json:\n%s", r.Passed, a.passed, err, log, read(t, filepath.Join(res.Dir, "result.json")))
			}
		})
	}
}

// killContainer kills every process of a running container, as an
// out-of-memory kill or an operator would.
func killContainer(ctx context.Context, id string) error {
	c, err := client.New(os.Getenv(testenv.ContainerdAddressEnv))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx = namespaces.WithNamespace(ctx, runner.DefaultNamespace)
	ctr, err := c.LoadContainer(ctx, id)
	if err != nil {
		return err
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return err
	}
	return task.Kill(ctx, syscall.SIGKILL, client.WithKillAll)
}

// noContainers fails when containerd still holds a container or snapshot
// of the run.
func noContainers(t *testing.T, ctx context.Context, runID string) {
	t.Helper()
	c, err := client.New(os.Getenv(testenv.ContainerdAddressEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx = namespaces.WithNamespace(ctx, runner.DefaultNamespace)
	cs, err := c.Containers(ctx, "labels.\"ssebench.run-id\"=="+runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ctr := range cs {
		t.Errorf("container %s is left in containerd", ctr.ID())
	}
	for _, suffix := range []string{"-task", "-agent"} {
		for _, sn := range []string{"overlayfs", "native"} {
			if _, err := c.SnapshotService(sn).Stat(ctx, "ssebench-"+runID+suffix); err == nil {
				t.Errorf("snapshot %s of %s is left", "ssebench-"+runID+suffix, sn)
			}
		}
	}
}

// fileIn returns the content of the regular file p in img's merged layers
// ("" when absent).
func fileIn(t *testing.T, img v1.Image, p string) string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimPrefix(p, "/")
	got := ""
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			if strings.TrimPrefix(h.Name, "./") == want && h.Typeflag == tar.TypeReg {
				b, _ := io.ReadAll(tr)
				got = string(b)
			}
		}
		rc.Close()
	}
	return got
}

// fakeToolEnv is a tool layer's ToolEnv without the pipeline behind it:
// Sandbox stores a random image, and Push records what it was asked to
// push.
type fakeToolEnv struct {
	names  naming.Names
	store  *store.Store
	pushed []string
}

var _ pipeline.ToolEnv = (*fakeToolEnv)(nil)

func (f *fakeToolEnv) Names() naming.Names { return f.names }
func (f *fakeToolEnv) Store() *store.Store { return f.store }

func (f *fakeToolEnv) Sandbox(ctx context.Context, in pipeline.ToolInput) (*pipeline.Built, error) {
	img, err := random.Image(256, 1)
	if err != nil {
		return nil, err
	}
	// The layer's file times are the sandbox image's creation time.
	if img, err = mutate.CreatedAt(img, v1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}); err != nil {
		return nil, err
	}
	out := f.names.Tool(in.Task)
	ref, err := name.ParseReference(out, name.WeakValidation)
	if err != nil {
		return nil, err
	}
	if err := f.store.Write(ctx, ref, img); err != nil {
		return nil, err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	return &pipeline.Built{Name: out, Digest: d, How: "random"}, nil
}

func (f *fakeToolEnv) Push(_ context.Context, ref string, _ v1.Image, mountFrom ...string) (*remote.PushReport, error) {
	f.pushed = append(f.pushed, ref+" from "+strings.Join(mountFrom, ","))
	return &remote.PushReport{}, nil
}

// TestExampleToolLayerEnv runs the example tool layer on the narrow value
// a tool layer gets (pipeline.ToolEnv), with no containerd, registry or
// BuildKit: what it reads and writes goes through that value alone.
func TestExampleToolLayerEnv(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	env := &fakeToolEnv{names: naming.Names{Registry: "localhost:5000/sse", Version: "1.0.0"}, store: st}
	b, err := toollayer.Layer{}.Tool(ctx, env, pipeline.ToolInput{Task: e2eTask, Push: true})
	if err != nil {
		t.Fatal(err)
	}
	want := env.names.ToolLayer(toollayer.Kind, e2eTask)
	if b.Name != want {
		t.Errorf("Tool() made %s, want %s", b.Name, want)
	}
	img, err := st.Image(mustRef(t, want))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := img.Digest(); err != nil || d != b.Digest {
		t.Errorf("stored digest %v (%v), Tool() says %v", d, err, b.Digest)
	}
	if got := fileIn(t, img, toollayer.File); got != toollayer.Content {
		t.Errorf("%s = %q", toollayer.File, got)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cf.Config.Env, toollayer.EnvVar+"="+toollayer.Name) {
		t.Errorf("env %v lacks %s", cf.Config.Env, toollayer.EnvVar)
	}
	sandboxRepo := mustRef(t, env.names.Tool(e2eTask)).Context().Name()
	if len(env.pushed) != 1 || env.pushed[0] != want+" from "+sandboxRepo {
		t.Errorf("pushed %q, want %s mounting from %s", env.pushed, want, sandboxRepo)
	}
}
