package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// A restricted run with model access gets its gateway as three objects of
// its own next to the Job: a Secret with the gateway's set-up (the real
// key among it), a pod that alone mounts it, and a Service in front of the
// pod. The run's NetworkPolicy lets the run's pod reach the gateway's pod
// on GatewayPort and nothing else; the gateway's lets in the run's pod
// only. The run's pod gets the Service's address (SSE_GATEWAY_ADDR), which
// its entrypoint forwards 127.0.0.1:4000 to, and the per-run token: the
// agent sees what it sees on containerd.
const (
	// RoleLabel tells a run's pod from its gateway's.
	RoleLabel   = "ssebench.role"
	roleRun     = "run"
	roleGateway = "gateway"
	// GatewayPort is the gateway's port, on its pod and its Service.
	GatewayPort = 4000
	// gatewayContainer is the gateway's container in its pod.
	gatewayContainer = "gateway"
	gatewayConfigDir = "/etc/ssebench-gateway"
	gatewayConfig    = "gateway.json"
	// gatewayUID runs the gateway: not root, no account of the image.
	gatewayUID = 65532
	// gatewayGrace is what the gateway gets to finish the requests in
	// flight and report its totals once the run has ended.
	gatewayGrace = 10
	// gatewayReadyTimeout bounds the wait for the gateway's pod to take
	// connections (its image is pulled first).
	gatewayReadyTimeout = 5 * time.Minute
	// reportTimeout bounds the wait for the gateway's last report once
	// its pod was told to stop.
	reportTimeout = 30 * time.Second
)

// gatewayPlan is what a run's gateway creates.
type gatewayPlan struct {
	secret  *corev1.Secret
	pod     *corev1.Pod
	service *corev1.Service
	policy  *networkingv1.NetworkPolicy
}

// planGateway adds the gateway's objects to p and opens the run's policy
// to the gateway's pod.
func (o *options) planGateway(p *plan, gw *runner.Gateway, deadline int64) error {
	if !strings.Contains(gw.Image, "@sha256:") {
		return fmt.Errorf("the gateway image %s is not pinned by digest", gw.Image)
	}
	if len(gw.Config) == 0 {
		return errors.New("the gateway has no set-up")
	}
	if p.policy == nil {
		return errors.New("a run with open network needs no model gateway")
	}
	name := p.name + "-gw"
	// The run's labels (its evaluation's among them, which `eval
	// --resume` deletes a killed evaluation's objects by): a Secret with
	// the key must never outlive its run.
	labels, gwLabels := map[string]string{}, map[string]string{RoleLabel: roleGateway}
	for k, v := range p.job.Labels {
		if k != RoleLabel {
			labels[k], gwLabels[k] = v, v
		}
	}
	gwSelector := map[string]string{RunLabel: p.name, RoleLabel: roleGateway}
	runSelector := p.policy.Spec.PodSelector.MatchLabels
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(GatewayPort)
	_, arch, _ := strings.Cut(o.platform, "/")
	uid := int64(gatewayUID)
	grace := int64(gatewayGrace)

	g := &gatewayPlan{}
	g.secret = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Immutable:  ptr(true),
		Data:       map[string][]byte{gatewayConfig: gw.Config},
	}
	g.pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: gwLabels},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			TerminationGracePeriodSeconds: &grace,
			ActiveDeadlineSeconds:         &deadline,
			NodeSelector:                  map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: arch},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr(true), RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            gatewayContainer,
				Image:           gw.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            []string{"--config", gatewayConfigDir + "/" + gatewayConfig, "--listen", ":" + strconv.Itoa(GatewayPort)},
				Ports:           []corev1.ContainerPort{{Name: "gateway", ContainerPort: GatewayPort, Protocol: tcp}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}},
					PeriodSeconds: 1,
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr(false),
					ReadOnlyRootFilesystem:   ptr(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: gatewayConfigDir, ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: name, DefaultMode: ptr(int32(0o440))},
			}}},
		},
	}
	g.service = &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: gwSelector,
			Ports:    []corev1.ServicePort{{Name: "gateway", Port: GatewayPort, TargetPort: port, Protocol: tcp}},
		},
	}
	// The gateway takes connections from the run's pod only; its own
	// egress (the upstream, wherever it is) stays open.
	g.policy = &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: gwSelector},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: runSelector}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
			}},
		},
	}
	// The run's pod reaches the gateway's pod and nothing else (no DNS
	// either: it is given the Service's address).
	p.policy.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{
		To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: gwSelector}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
	}}
	p.gateway = g
	return nil
}

// startGateway creates the gateway's objects, waits until its pod takes
// connections and gives the run's container the Service's address; the
// gateway's report is read from then on. The caller stops it with
// stopGateway (and deleteRun removes what is left).
func (r *Runner) startGateway(ctx context.Context, p *plan, gw *runner.Gateway) (*reportReader, error) {
	ns := r.opts.namespace
	g := p.gateway
	if err := r.api.networkPolicies(ns).create(ctx, g.policy, nil); err != nil {
		return nil, fmt.Errorf("creating the gateway's NetworkPolicy in namespace %s: %w", ns, err)
	}
	if err := r.api.secrets(ns).create(ctx, g.secret, nil); err != nil {
		return nil, fmt.Errorf("creating the gateway's Secret in namespace %s: %w", ns, err)
	}
	svc := &corev1.Service{}
	if err := r.api.services(ns).create(ctx, g.service, svc); err != nil {
		return nil, fmt.Errorf("creating the gateway's Service in namespace %s: %w", ns, err)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return nil, fmt.Errorf("the gateway's Service %s got no cluster address", svc.Name)
	}
	if err := r.api.pods(ns).create(ctx, g.pod, nil); err != nil {
		return nil, fmt.Errorf("creating the gateway's pod in namespace %s: %w", ns, err)
	}
	rctx, cancel := context.WithTimeout(ctx, gatewayReadyTimeout)
	defer cancel()
	if err := r.waitReady(rctx, g.pod.Name, gatewayContainer); err != nil {
		if ctx.Err() == nil && rctx.Err() != nil {
			return nil, fmt.Errorf("the model gateway's pod %s took no connection within %s", g.pod.Name, gatewayReadyTimeout)
		}
		return nil, err
	}
	addr := svc.Spec.ClusterIP + ":" + strconv.Itoa(GatewayPort)
	cs := p.job.Spec.Template.Spec.Containers
	for i := range cs {
		if cs[i].Name == p.agent {
			cs[i].Env = append(cs[i].Env, corev1.EnvVar{Name: contract.EnvGatewayAddr, Value: addr})
		}
	}
	return r.readReport(context.WithoutCancel(ctx), g.pod.Name, gw), nil
}

// waitReady waits until the pod's container is ready; a container that
// cannot start, or that ended, is an error at once.
func (r *Runner) waitReady(ctx context.Context, pod, container string) error {
	for {
		p := &corev1.Pod{}
		if err := r.api.pods(r.opts.namespace).get(ctx, pod, p); err != nil {
			return fmt.Errorf("reading pod %s: %w", pod, err)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name != container {
				continue
			}
			switch {
			case cs.Ready:
				return nil
			case cs.State.Terminated != nil:
				return fmt.Errorf("the model gateway's pod %s ended before it took a connection: %s (exit %d): %s", pod, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.State.Terminated.Message)
			case cs.State.Waiting != nil && fatalWaiting[cs.State.Waiting.Reason]:
				return fmt.Errorf("the cluster cannot start the model gateway's pod %s: %s: %s", pod, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			}
		}
		if p.Status.Phase == corev1.PodFailed {
			return fmt.Errorf("the model gateway's pod %s failed: %s: %s", pod, p.Status.Reason, p.Status.Message)
		}
		if err := sleep(ctx, r.opts.pollInterval); err != nil {
			return err
		}
	}
}

// reportReader follows the gateway's log in the background.
type reportReader struct {
	cancel context.CancelFunc
	done   chan error
}

// readReport follows the gateway pod's log until the gateway ends,
// writing its records to gw.Records and its report to gw.Report. A log
// stream that breaks is opened again; records it had already are not
// written twice.
func (r *Runner) readReport(ctx context.Context, pod string, gw *runner.Gateway) *reportReader {
	ctx, cancel := context.WithCancel(ctx)
	rr := &reportReader{cancel: cancel, done: make(chan error, 1)}
	records := gw.Records
	if records == nil {
		records = io.Discard
	}
	go func() {
		// Only lines signed with the set-up's key are the report.
		key, err := gateway.ReportKey(gw.Config)
		for attempt := 0; attempt < 5 && key != nil; attempt++ {
			var stream io.ReadCloser
			stream, err = r.api.pods(r.opts.namespace).logs(ctx, pod, &corev1.PodLogOptions{Container: gatewayContainer, Follow: true})
			if err == nil {
				err = gateway.ReadReport(stream, key, records, nil, 0, &gw.Report)
				stream.Close()
				if err == nil {
					break // the gateway ended
				}
			}
			if ctx.Err() != nil || sleep(ctx, time.Second) != nil {
				break
			}
		}
		rr.done <- err
	}()
	return rr
}

// stopGateway tells the gateway to stop (its pod is deleted: SIGTERM, then
// gatewayGrace seconds) and waits for its last report.
func (r *Runner) stopGateway(ctx context.Context, p *plan, rr *reportReader) error {
	grace := int64(gatewayGrace)
	err := r.api.pods(r.opts.namespace).delete(ctx, p.gateway.pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if err != nil {
		rr.cancel()
		<-rr.done
		return fmt.Errorf("stopping the model gateway's pod %s: %w", p.gateway.pod.Name, err)
	}
	t := time.NewTimer(reportTimeout)
	defer t.Stop()
	select {
	case err = <-rr.done:
	case <-t.C:
		rr.cancel()
		<-rr.done
		err = fmt.Errorf("the model gateway's pod %s sent no last report within %s", p.gateway.pod.Name, reportTimeout)
	}
	if err != nil {
		return fmt.Errorf("reading the model gateway's records: %w", err)
	}
	return nil
}
