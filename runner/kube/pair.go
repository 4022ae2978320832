package kube

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// The containers and volumes of a pair's pod (SPEC.md section 17.1).
const (
	// agentContainer is the agent container; the task container is
	// containerName, whose log carries the results.
	agentContainer = "agent"
	// seedContainer is the init container that seeds the volumes.
	seedContainer = "seed"
	// runVolume is /run/ssebench: the sockets, ready, the hand-over.
	runVolume = "run"
	// srcVolume is SOURCE_DIR, seeded from the tool image.
	srcVolume = "src"
	// seedDir is where the seed mounts the two volumes.
	seedDir = "/ssebench-seed"
)

// planPair turns a pair into the objects of one Job whose pod has both
// containers: an init container from the task's image first copies its
// SOURCE_DIR into a volume both containers mount there (the tree's owners
// and modes kept) and makes the run directory; the task container then
// serves the agent's tools and grades, the agent container runs the
// agent. They share no process namespace; the agent container sees only
// the agent socket's directory of the run directory, read-only, and the
// hand-over directory, which only its root (the entrypoint) may write.
// Both images must be pinned by digest and in a registry.
func (o *options) planPair(ps runner.PairSpec, token string) (*plan, error) {
	if !path.IsAbs(ps.SourceDir) || path.Clean(ps.SourceDir) == "/" {
		return nil, fmt.Errorf("the task's SOURCE_DIR %q is not an absolute path below /", ps.SourceDir)
	}
	srcDir := path.Clean(ps.SourceDir)
	ag := ps.Agent
	if !ag.Pull {
		return nil, fmt.Errorf("%w: %s cannot be pulled by a cluster; pass --registry (one the cluster reaches, e.g. --registry localhost:5000/ssebench) so that it is pushed there first", ErrNotInRegistry, ag.Image)
	}
	if !strings.Contains(ag.Image, "@sha256:") {
		return nil, fmt.Errorf("the image %s is not pinned by digest: a Job runs name@sha256:... only", ag.Image)
	}
	task := ps.Task
	task.Gateway = nil
	// One pod, one network namespace: the agent's network is the pod's
	// (an open run's pod gets no NetworkPolicy). The task container's
	// scripts have a loopback of their own, and the daemon listens on
	// Unix sockets only.
	task.Network = ag.Network
	task.Env = append(slices.Clone(task.Env), contract.EnvHandoverDir+"="+contract.HandoverTaskDir)
	p, err := o.planRun(task, token)
	if err != nil {
		return nil, err
	}
	pod := &p.job.Spec.Template.Spec
	vols := map[string]bool{}
	for _, v := range pod.Volumes {
		vols[v.Name] = true
	}
	addVolume := func(name string) {
		if !vols[name] {
			vols[name] = true
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
	}
	addVolume(runVolume)
	addVolume(srcVolume)

	tc := &pod.Containers[0]
	tc.VolumeMounts = append(tc.VolumeMounts,
		corev1.VolumeMount{Name: runVolume, MountPath: contract.SidecarDir},
		corev1.VolumeMount{Name: srcVolume, MountPath: srcDir})

	// The agent container: its results and archive are the same volumes
	// (the task container streams both back), the rest is its own.
	var mounts []corev1.VolumeMount
	for _, m := range ag.Mounts {
		var vol string
		switch path.Clean(m.Target) {
		case contract.Results:
			vol = contract.StreamResults
		case contract.Archive:
			vol = contract.StreamArchive
			// The archive comes back through the task container's
			// stream; it only reads it.
			tc.VolumeMounts = append(tc.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: contract.Archive, ReadOnly: true})
		default:
			return nil, fmt.Errorf("the Kubernetes backend cannot mount %s from this machine into the pod at %s", m.Source, m.Target)
		}
		p.dest[vol] = m.Source
		addVolume(vol)
		mounts = append(mounts, corev1.VolumeMount{Name: vol, MountPath: path.Clean(m.Target)})
	}
	mounts = append(mounts,
		corev1.VolumeMount{Name: runVolume, MountPath: contract.SidecarDir, SubPath: path.Base(contract.SidecarAgentDir), ReadOnly: true},
		corev1.VolumeMount{Name: runVolume, MountPath: contract.HandoverAgentDir, SubPath: path.Base(contract.HandoverTaskDir)},
		corev1.VolumeMount{Name: srcVolume, MountPath: srcDir})
	var env []corev1.EnvVar
	for _, kv := range ag.Env {
		k, v, _ := strings.Cut(kv, "=")
		// The results come back through the task container alone.
		if k == contract.EnvResultsStream || k == contract.EnvHandoverDir {
			continue
		}
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	env = append(env, corev1.EnvVar{Name: contract.EnvHandoverDir, Value: contract.HandoverAgentDir})
	sort.SliceStable(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	ac := corev1.Container{
		Name:                     agentContainer,
		Image:                    ag.Image,
		Env:                      env,
		VolumeMounts:             mounts,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		Resources:                podResources(ag.Limits),
	}
	if ag.Entrypoint != nil {
		ac.Command = ag.Entrypoint
	}
	if len(ag.Args) > 0 {
		ac.Args = ag.Args
	}
	pod.Containers = append(pod.Containers, ac)

	// The seed: the task's image, its entrypoint, its SOURCE_DIR.
	var seedEnv []corev1.EnvVar
	for _, e := range tc.Env {
		if e.Name == contract.EnvSourceDir || e.Name == contract.EnvTaskRoot {
			seedEnv = append(seedEnv, e)
		}
	}
	pod.InitContainers = []corev1.Container{{
		Name:    seedContainer,
		Image:   tc.Image,
		Command: []string{contract.Entrypoint, contract.SeedFlag, seedDir + "/" + srcVolume, seedDir + "/" + runVolume},
		Env:     seedEnv,
		VolumeMounts: []corev1.VolumeMount{
			{Name: srcVolume, MountPath: seedDir + "/" + srcVolume},
			{Name: runVolume, MountPath: seedDir + "/" + runVolume},
		},
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		Resources:                tc.Resources,
	}}
	p.agent = agentContainer
	if ag.Gateway != nil {
		deadline := int64(0)
		if d := p.job.Spec.ActiveDeadlineSeconds; d != nil {
			deadline = *d
		}
		if err := o.planGateway(p, ag.Gateway, deadline); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// RunPair runs the pair ps as one Job whose pod has both containers (see
// planPair) and waits for the task container to end; the results and the
// archive come back through its log into the folders of the specs'
// mounts. It returns the task container's result and the agent
// container's (its exit status and the limit it hit, as the kubelet
// says). An agent container the cluster cannot start (its image cannot be
// pulled) ends the run at once with an error. Everything created is
// deleted, whatever happens.
func (r *Runner) RunPair(ctx context.Context, ps runner.PairSpec) (taskRes, agentRes *runner.Result, err error) {
	start := time.Now()
	token, err := newToken()
	if err != nil {
		return nil, nil, err
	}
	p, err := r.opts.planPair(ps, token)
	if err != nil {
		return nil, nil, err
	}
	// The watch runs beside runPlan, and once more at its end.
	var mu sync.Mutex
	var last *corev1.Pod
	watch := func(pod *corev1.Pod) error {
		mu.Lock()
		last = pod
		mu.Unlock()
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == agentContainer && cs.State.Waiting != nil && fatalWaiting[cs.State.Waiting.Reason] {
				return fmt.Errorf("the cluster cannot start the agent container of pod %s: %s: %s", pod.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			}
		}
		return nil
	}
	taskRes, podName, err := r.runPlan(ctx, p, ps.Task.ID, ps.Task.Output, ps.Agent.Gateway, start, watch)
	mu.Lock()
	defer mu.Unlock()
	if podName != "" && taskRes != nil {
		agentRes = &runner.Result{ContainerID: p.name + "/" + agentContainer, Stopped: taskRes.Stopped}
		if last != nil {
			for _, cs := range last.Status.ContainerStatuses {
				if cs.Name == agentContainer && cs.State.Terminated != nil {
					agentRes.ExitCode = int(cs.State.Terminated.ExitCode)
					agentRes.Killed = podKilled(last, cs.State.Terminated)
				}
			}
		}
	}
	if taskRes == nil && err == nil {
		err = errors.New("the pod ended without a result")
	}
	return taskRes, agentRes, err
}
