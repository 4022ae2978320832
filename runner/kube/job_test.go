package kube

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

const testImage = "localhost:5000/ssebench/agent-dummy/kvconf-12-afb9ee1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func testSpec(t *testing.T) runner.RunSpec {
	dir := t.TempDir()
	return runner.RunSpec{
		Image: testImage, Pull: true, ID: "ssebench-20261202-kvconf-12-afb9ee1-dummy-abc123",
		Env: []string{"SSE_RESULTS=" + contract.Results, "TIMEOUT=600", "SSE_MODEL_NAME=none", "SSE_RESULTS_STREAM=from-the-caller"},
		Labels: map[string]string{
			"ssebench.task-id": "kvconf-12-afb9ee1", "ssebench.agent": "dummy",
			"ssebench.run-id": "20261202-kvconf-12-afb9ee1-dummy-abc123", "ssebench.model": "none",
			"ssebench.results": dir, "ssebench.eval": "20261202-000000-abcdef",
		},
		Mounts: []runner.Mount{{Source: dir, Target: contract.Results}, {Source: dir + "/archive", Target: contract.Archive}},
	}
}

func TestPlanRunJob(t *testing.T) {
	o, err := makeOptions(WithPlatform("linux/arm64"))
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t)
	p, err := o.planRun(spec, "token0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	js := p.job.Spec
	if *js.BackoffLimit != 0 {
		t.Errorf("backoffLimit = %d, want 0", *js.BackoffLimit)
	}
	if want := int64((600*time.Second + DefaultDeadlineMargin) / time.Second); *js.ActiveDeadlineSeconds != want {
		t.Errorf("activeDeadlineSeconds = %d, want TIMEOUT + margin = %d", *js.ActiveDeadlineSeconds, want)
	}
	ps := js.Template.Spec
	if ps.RestartPolicy != corev1.RestartPolicyNever || *ps.AutomountServiceAccountToken || *ps.EnableServiceLinks {
		t.Errorf("pod spec: restart %s, service account token %v, service links %v; want Never, false, false",
			ps.RestartPolicy, *ps.AutomountServiceAccountToken, *ps.EnableServiceLinks)
	}
	if ps.NodeSelector[corev1.LabelArchStable] != "arm64" {
		t.Errorf("node selector = %v, want the run's arch", ps.NodeSelector)
	}
	c := ps.Containers[0]
	if c.Image != testImage || c.Command != nil {
		t.Errorf("container image %q command %v; want the pinned image and its own entrypoint", c.Image, c.Command)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("env %s twice", e.Name)
		}
		env[e.Name] = e.Value
	}
	if env["SSE_RESULTS"] != contract.Results || env["TIMEOUT"] != "600" || env[contract.EnvResultsStream] != "token0123456789abcdef" {
		t.Errorf("env = %v: want the run's variables and the plan's token (not the caller's)", env)
	}
	// The results folder and the archive are emptyDirs at their paths.
	vols := map[string]string{}
	for _, m := range c.VolumeMounts {
		vols[m.MountPath] = m.Name
	}
	for _, v := range ps.Volumes {
		if v.EmptyDir == nil {
			t.Errorf("volume %s is not an emptyDir", v.Name)
		}
	}
	if len(ps.Volumes) != 2 || vols[contract.Results] == "" || vols[contract.Archive] == "" {
		t.Errorf("volumes %v mounted at %v; want emptyDirs at %s and %s", ps.Volumes, vols, contract.Results, contract.Archive)
	}
	// SPEC.md section 10's labels: every one an annotation; those whose
	// value a label can hold, labels too.
	meta := js.Template.ObjectMeta
	for k, v := range spec.Labels {
		if meta.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, meta.Annotations[k], v)
		}
	}
	for _, k := range []string{"ssebench.task-id", "ssebench.agent", "ssebench.run-id", "ssebench.eval", RunLabel} {
		if meta.Labels[k] == "" {
			t.Errorf("pod label %s missing: %v", k, meta.Labels)
		}
	}
	if _, ok := meta.Labels["ssebench.results"]; ok {
		t.Errorf("a path became a label value: %v", meta.Labels)
	}
	if p.job.Labels[ManagedLabel] != managedBy || p.name != jobName(spec.ID) || len(p.name) > 63 {
		t.Errorf("job %q labels %v", p.name, p.job.Labels)
	}
	if p.dest[contract.StreamResults] != spec.Mounts[0].Source || p.dest[contract.StreamArchive] != spec.Mounts[1].Source {
		t.Errorf("results go to %v, want the mounts' folders", p.dest)
	}
}

func TestPlanRunNetwork(t *testing.T) {
	o, _ := makeOptions()
	spec := testSpec(t)
	p, err := o.planRun(spec, "token0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	// Restricted (the default): a policy of the pod with no rule, in or
	// out.
	pol := p.policy
	if pol == nil {
		t.Fatal("a restricted run has no NetworkPolicy")
	}
	if pol.Spec.PodSelector.MatchLabels[RunLabel] != p.name || len(pol.Spec.Egress) != 0 || len(pol.Spec.Ingress) != 0 || len(pol.Spec.PolicyTypes) != 2 {
		t.Errorf("policy = %+v, want deny-all of the run's pod", pol.Spec)
	}
	spec.Network = runner.NetworkOpen
	if p, _ := o.planRun(spec, "token0123456789abcdef"); p.policy != nil {
		t.Error("an open run has a NetworkPolicy")
	}
}

func TestPlanRunRefuses(t *testing.T) {
	o, _ := makeOptions()
	for _, tc := range []struct {
		name string
		edit func(*runner.RunSpec)
		want string
	}{
		{"local store only", func(s *runner.RunSpec) { s.Pull = false }, "pass --registry"},
		{"not pinned", func(s *runner.RunSpec) { s.Image = "localhost:5000/ssebench/agent-dummy/x:1.0.0" }, "pinned by digest"},
		{"host mount", func(s *runner.RunSpec) {
			s.Mounts = append(s.Mounts, runner.Mount{Source: t.TempDir(), Target: "/run/ssebench-gateway"})
		}, "cannot mount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec(t)
			tc.edit(&spec)
			_, err := o.planRun(spec, "token0123456789abcdef")
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("planRun = %v, want one line saying %q", err, tc.want)
			}
			if tc.name == "local store only" && !errors.Is(err, ErrNotInRegistry) {
				t.Errorf("error %v does not match ErrNotInRegistry", err)
			}
		})
	}
}

// TestPlanRunLimits: a run's memory and CPU limits are its pod's
// container limits, with small requests so that it can be scheduled.
func TestPlanRunLimits(t *testing.T) {
	o, _ := makeOptions()
	spec := testSpec(t)
	spec.Limits = contract.Limits{MemoryBytes: 4 << 30, Pids: 4096, CPUs: 2, DiskBytes: 10 << 30}
	p, err := o.planRun(spec, "token0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	r := p.job.Spec.Template.Spec.Containers[0].Resources
	if got := r.Limits.Memory().Value(); got != 4<<30 {
		t.Errorf("memory limit = %d, want 4Gi", got)
	}
	if got := r.Limits.Cpu().MilliValue(); got != 2000 {
		t.Errorf("cpu limit = %dm, want 2000m", got)
	}
	if got := r.Limits.StorageEphemeral().Value(); got != 10<<30 {
		t.Errorf("ephemeral-storage limit = %d, want 10Gi", got)
	}
	if got := r.Requests.StorageEphemeral().Value(); got != 1<<30 {
		t.Errorf("ephemeral-storage request = %d, want 1Gi", got)
	}
	if r.Requests.Cpu().MilliValue() > 100 || r.Requests.Memory().Value() > 256<<20 {
		t.Errorf("requests = %v, want at most 100m and 256Mi", r.Requests)
	}
}

// TestPodKilled: the kubelet's reasons become result.json's killed.
func TestPodKilled(t *testing.T) {
	evicted := &corev1.Pod{Status: corev1.PodStatus{Reason: "Evicted", Message: "Pod ephemeral local storage usage exceeds the total limit of containers 64Mi."}}
	if got := podKilled(evicted, &corev1.ContainerStateTerminated{ExitCode: 137}); got != contract.KilledDisk {
		t.Errorf("evicted for storage: %q, want %q", got, contract.KilledDisk)
	}
	if got := podKilled(&corev1.Pod{}, &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}); got != contract.KilledMemory {
		t.Errorf("OOMKilled: %q, want %q", got, contract.KilledMemory)
	}
	if got := podKilled(&corev1.Pod{}, &corev1.ContainerStateTerminated{Reason: "Completed"}); got != "" {
		t.Errorf("a plain exit: %q, want none", got)
	}
}

// TestHostileRunLabels: a run's labels (the caller's, or an image's that
// reach them) cannot take over the labels the backend selects its objects
// by: a pod that lost its role would not be the pod its NetworkPolicy
// restricts.
func TestHostileRunLabels(t *testing.T) {
	o, err := makeOptions()
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t)
	spec.Labels[RoleLabel] = "task"
	spec.Labels[RunLabel] = "another-run"
	spec.Labels[ManagedLabel] = "someone-else"
	p, err := o.planRun(spec, "token")
	if err != nil {
		t.Fatal(err)
	}
	got := p.job.Spec.Template.Labels
	if got[RoleLabel] != roleRun || got[RunLabel] != p.name || got[ManagedLabel] != managedBy {
		t.Errorf("pod labels = %v: the run's own labels were overridden", got)
	}
	for k, v := range p.policy.Spec.PodSelector.MatchLabels {
		if got[k] != v {
			t.Errorf("the NetworkPolicy selects %s=%s, the pod has %q: it restricts nothing", k, v, got[k])
		}
	}
}
