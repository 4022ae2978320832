package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// Labels of every object a run creates.
const (
	// RunLabel selects a run's objects: its Job, pod and NetworkPolicy.
	RunLabel = "ssebench.job"
	// ManagedLabel marks what ssebench created.
	ManagedLabel = "app.kubernetes.io/managed-by"
	managedBy    = "ssebench"
	// containerName is the run's container in the pod.
	containerName = "run"
)

// ErrNotInRegistry means the image to run is not in a registry: a cluster
// cannot pull from this machine's store. Match it with errors.Is.
var ErrNotInRegistry = errors.New("the image is only in the local store")

// jobName is the name of the run's objects: short and DNS-safe whatever
// the run id (task ids are longer than a label allows).
func jobName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "ssebench-" + hex.EncodeToString(sum[:8])
}

// plan is what one run creates.
type plan struct {
	name   string
	token  string
	job    *batchv1.Job
	policy *networkingv1.NetworkPolicy // nil: open network
	// gateway is the run's model gateway; nil: none.
	gateway *gatewayPlan
	// dest maps the stream's directories to the run's folders.
	dest map[string]string
	// agent is the container of the run's agent: the one the gateway's
	// address goes to (containerName, or agentContainer in a pair).
	agent string
}

// planRun turns a run's spec into the objects of one Job. The image must
// come from a registry (spec.Pull) and be pinned by digest; the mounts may
// be the run's results folder and its archive only, which become emptyDir
// volumes brought back through the log.
func (o *options) planRun(spec runner.RunSpec, token string) (*plan, error) {
	if !spec.Pull {
		return nil, fmt.Errorf("%w: %s cannot be pulled by a cluster; pass --registry (one the cluster reaches, e.g. --registry localhost:5000/ssebench) so that it is pushed there first", ErrNotInRegistry, spec.Image)
	}
	if !strings.Contains(spec.Image, "@sha256:") {
		return nil, fmt.Errorf("the image %s is not pinned by digest: a Job runs name@sha256:... only", spec.Image)
	}
	if spec.ID == "" {
		return nil, errors.New("the run has no ID")
	}
	p := &plan{name: jobName(spec.ID), token: token, dest: map[string]string{}, agent: containerName}
	labels := map[string]string{RunLabel: p.name, ManagedLabel: managedBy, RoleLabel: roleRun}
	annotations := map[string]string{}
	for k, v := range spec.Labels {
		// SPEC.md section 10's labels: as labels where Kubernetes takes
		// the value (a results path or a long task id it does not), and
		// always as annotations. Never over the labels this backend
		// selects its objects by: a run's pod that lost its role would
		// not be the pod its NetworkPolicy restricts.
		if _, ours := labels[k]; ours {
			continue
		}
		annotations[k] = v
		if len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0 {
			labels[k] = v
		}
	}

	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	for _, m := range spec.Mounts {
		var vol string
		switch path.Clean(m.Target) {
		case contract.Results:
			vol = contract.StreamResults
		case contract.Archive:
			vol = contract.StreamArchive
		default:
			return nil, fmt.Errorf("the Kubernetes backend cannot mount %s from this machine into the pod at %s", m.Source, m.Target)
		}
		p.dest[vol] = m.Source
		volumes = append(volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mounts = append(mounts, corev1.VolumeMount{Name: vol, MountPath: path.Clean(m.Target)})
	}

	timeout := defaultTimeout
	var env []corev1.EnvVar
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k == contract.EnvResultsStream {
			continue
		}
		if k == contract.EnvTimeout {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				timeout = time.Duration(n) * time.Second
			}
		}
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	env = append(env, corev1.EnvVar{Name: contract.EnvResultsStream, Value: token})
	sort.SliceStable(env, func(i, j int) bool { return env[i].Name < env[j].Name })

	c := corev1.Container{
		Name:            containerName,
		Image:           spec.Image,
		Env:             env,
		VolumeMounts:    mounts,
		ImagePullPolicy: corev1.PullIfNotPresent,
		// The entrypoint runs as root and drops to model for the agent
		// (SPEC.md section 10): the image's user, as with containerd.
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
	c.Resources = podResources(spec.Limits)
	if spec.Entrypoint != nil {
		c.Command = spec.Entrypoint
	}
	if len(spec.Args) > 0 {
		c.Args = spec.Args
	}
	_, arch, _ := strings.Cut(o.platform, "/")
	deadline := int64((timeout + o.deadlineMargin) / time.Second)
	ttl := int32(o.ttl / time.Second)
	grace := int64(runner.DefaultStopTimeout / time.Second)
	p.job = &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: labels, Annotations: annotations},
		Spec: batchv1.JobSpec{
			// One attempt: a failed run is a result (or the caller's to
			// retry), never the cluster's to repeat.
			BackoffLimit:            ptr(int32(0)),
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{c},
					Volumes:       volumes,
					// Nothing of the cluster reaches the agent: no API
					// token, no Service addresses in the environment.
					AutomountServiceAccountToken:  ptr(false),
					EnableServiceLinks:            ptr(false),
					TerminationGracePeriodSeconds: &grace,
					NodeSelector:                  map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: arch},
				},
			},
		},
	}
	if spec.Network != runner.NetworkOpen {
		// No rule: every connection in and out is denied (where the
		// network plugin enforces policies; see the README).
		p.policy = &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: labels},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{RunLabel: p.name, RoleLabel: roleRun}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			},
		}
	}
	if spec.Gateway != nil {
		if err := o.planGateway(p, spec.Gateway, deadline); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func ptr[T any](v T) *T { return &v }

// podResources are the run's limits as the pod's container limits. Its
// requests are small (a limit alone would make them equal to it, and a
// 2-CPU limit could then never be scheduled beside anything on a 2-core
// node): the limits are a ceiling for a hostile agent, not a reservation.
// A process limit is the kubelet's (podPidsLimit), per node, not the
// pod's: the README says so.
func podResources(l contract.Limits) corev1.ResourceRequirements {
	limits, requests := corev1.ResourceList{}, corev1.ResourceList{}
	if l.MemoryBytes > 0 {
		limits[corev1.ResourceMemory] = *resource.NewQuantity(l.MemoryBytes, resource.BinarySI)
		requests[corev1.ResourceMemory] = *resource.NewQuantity(min(l.MemoryBytes, podMemoryRequest), resource.BinarySI)
	}
	if l.CPUs > 0 {
		milli := int64(l.CPUs * 1000)
		limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
		requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(min(milli, podCPURequestMilli), resource.DecimalSI)
	}
	if l.DiskBytes > 0 {
		// The kubelet evicts a pod past its ephemeral-storage limit:
		// its writable layer, logs and emptyDir volumes.
		limits[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(l.DiskBytes, resource.BinarySI)
		requests[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(min(l.DiskBytes, podDiskRequest), resource.BinarySI)
	}
	if len(limits) == 0 {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Limits: limits, Requests: requests}
}

// What a run's pod asks the scheduler for, at most.
const (
	podDiskRequest     = 1 << 30
	podMemoryRequest   = 256 << 20
	podCPURequestMilli = 100
)
