package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

const testToolImage = "localhost:5000/ssebench/tool/kvconf-12-afb9ee1@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

// testPair is a run's two containers as pipeline makes them.
func testPair(t *testing.T) runner.PairSpec {
	agent := testSpec(t)
	agent.ID += "-agent"
	agent.Env = append(agent.Env, contract.EnvRole+"="+contract.RoleAgent, contract.EnvAgentSocket+"="+contract.SidecarAgentSocket)
	task := agent
	task.ID = strings.TrimSuffix(agent.ID, "-agent") + "-task"
	task.Image = testToolImage
	task.Mounts = agent.Mounts[:1]
	task.Env = []string{"SSE_RESULTS=" + contract.Results, "TIMEOUT=600", contract.EnvSourceDir + "=/src/kvconf",
		contract.EnvRole + "=" + contract.RoleTask, contract.EnvAdminSocket + "=" + contract.SidecarAdminSocket}
	return runner.PairSpec{Task: task, Agent: agent, SourceDir: "/src/kvconf"}
}

// TestPlanPairPod: the pod of a run has the seed, the task container and
// the agent container; the agent container sees only the agent socket's
// directory (read-only) and the hand-over directory of the run directory,
// shares SOURCE_DIR with the task container, and has neither the results
// token nor the admin socket; only the task container's log carries the
// results.
func TestPlanPairPod(t *testing.T) {
	o, err := makeOptions(WithPlatform("linux/amd64"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := o.planPair(testPair(t), "token0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	ps := p.job.Spec.Template.Spec
	if len(ps.InitContainers) != 1 || len(ps.Containers) != 2 {
		t.Fatalf("pod has %d init containers and %d containers, want the seed, the task's and the agent's", len(ps.InitContainers), len(ps.Containers))
	}
	if ps.ShareProcessNamespace != nil && *ps.ShareProcessNamespace {
		t.Error("the pod shares one process namespace: the agent would see the grader")
	}
	seed, task, agent := ps.InitContainers[0], ps.Containers[0], ps.Containers[1]
	if seed.Image != testToolImage || task.Image != testToolImage || agent.Image != testImage {
		t.Errorf("images: seed %s, task %s, agent %s; want the tool image twice and the agent image", seed.Image, task.Image, agent.Image)
	}
	if len(seed.Command) < 2 || seed.Command[0] != contract.Entrypoint || seed.Command[1] != contract.SeedFlag {
		t.Errorf("seed command = %v, want the tool image's entrypoint %s", seed.Command, contract.SeedFlag)
	}
	env := func(c corev1.Container) map[string]string {
		m := map[string]string{}
		for _, e := range c.Env {
			m[e.Name] = e.Value
		}
		return m
	}
	te, ae := env(task), env(agent)
	if te[contract.EnvResultsStream] != "token0123456789abcdef" || te[contract.EnvHandoverDir] != contract.HandoverTaskDir {
		t.Errorf("task env = %v: want the plan's token and the hand-over directory", te)
	}
	if _, ok := ae[contract.EnvResultsStream]; ok {
		t.Errorf("the agent container has the results token: %v", ae)
	}
	if _, ok := ae[contract.EnvAdminSocket]; ok {
		t.Errorf("the agent container has the admin socket: %v", ae)
	}
	if ae[contract.EnvHandoverDir] != contract.HandoverAgentDir || ae[contract.EnvRole] != contract.RoleAgent {
		t.Errorf("agent env = %v", ae)
	}
	mounts := func(c corev1.Container) map[string]corev1.VolumeMount {
		m := map[string]corev1.VolumeMount{}
		for _, v := range c.VolumeMounts {
			m[v.MountPath] = v
		}
		return m
	}
	tm, am := mounts(task), mounts(agent)
	if m := tm[contract.SidecarDir]; m.Name != runVolume || m.SubPath != "" {
		t.Errorf("task's %s = %+v, want the whole run directory", contract.SidecarDir, m)
	}
	if m := am[contract.SidecarDir]; m.Name != runVolume || m.SubPath != "agent" || !m.ReadOnly {
		t.Errorf("agent's %s = %+v, want the agent/ directory only, read-only", contract.SidecarDir, m)
	}
	if m := am[contract.HandoverAgentDir]; m.Name != runVolume || m.SubPath != "handover" {
		t.Errorf("agent's %s = %+v, want the hand-over directory", contract.HandoverAgentDir, m)
	}
	if tm["/src/kvconf"].Name != srcVolume || am["/src/kvconf"].Name != srcVolume {
		t.Errorf("SOURCE_DIR is not the shared volume: task %+v, agent %+v", tm["/src/kvconf"], am["/src/kvconf"])
	}
	if m := tm[contract.Archive]; m.Name != contract.StreamArchive || !m.ReadOnly {
		t.Errorf("the task container's archive = %+v, want the agent's, read-only, to stream it back", m)
	}
	if p.dest[contract.StreamArchive] == "" || p.dest[contract.StreamResults] == "" {
		t.Errorf("dest = %v, want the results and the archive brought back", p.dest)
	}
	if p.agent != agentContainer {
		t.Errorf("the gateway's address would go to %q, want the agent container", p.agent)
	}
}

// TestPlanPairRefuses: an agent image a cluster cannot pull, or not
// pinned, is refused before anything is created.
func TestPlanPairRefuses(t *testing.T) {
	o, err := makeOptions()
	if err != nil {
		t.Fatal(err)
	}
	ps := testPair(t)
	ps.Agent.Pull = false
	if _, err := o.planPair(ps, "t"); err == nil || !strings.Contains(err.Error(), "--registry") {
		t.Errorf("planPair of a local agent image = %v, want it refused, naming --registry", err)
	}
	ps = testPair(t)
	ps.Agent.Image = "localhost:5000/ssebench/agent-dummy/kvconf:1"
	if _, err := o.planPair(ps, "t"); err == nil || !strings.Contains(err.Error(), "pinned by digest") {
		t.Errorf("planPair of an unpinned agent image = %v, want it refused", err)
	}
	ps = testPair(t)
	ps.SourceDir = "relative"
	if _, err := o.planPair(ps, "t"); err == nil {
		t.Error("planPair with a relative SOURCE_DIR succeeded")
	}
}

// TestPlanPairNetwork: the pod's network is the agent's, for both
// containers of it: an open run's pod gets no NetworkPolicy, a restricted
// one's does.
func TestPlanPairNetwork(t *testing.T) {
	o, err := makeOptions()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []runner.Network{runner.NetworkOpen, runner.NetworkRestricted} {
		ps := testPair(t)
		ps.Agent.Network, ps.Task.Network = n, runner.NetworkRestricted
		p, err := o.planPair(ps, "t")
		if err != nil {
			t.Fatal(err)
		}
		if got := p.policy != nil; got != (n == runner.NetworkRestricted) {
			t.Errorf("a %s run's pod has a NetworkPolicy: %v", n, got)
		}
	}
}
