package kube

import (
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/runner"
)

const testGatewayImage = "localhost:5000/ssebench/gateway@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestPlanGateway: the key's Secret is mounted by the gateway's pod only,
// which runs as non-root; the run's pod may reach the gateway's pod on its
// port and nothing else, and the gateway takes connections from the run's
// pod only.
func TestPlanGateway(t *testing.T) {
	o, _ := makeOptions()
	spec := testSpec(t)
	spec.Gateway = &runner.Gateway{Image: testGatewayImage, Config: []byte(`{"key":"sk-real"}`)}
	p, err := o.planRun(spec, "token0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	g := p.gateway
	if g == nil {
		t.Fatal("a run with a gateway plans none")
	}
	if string(g.secret.Data[gatewayConfig]) != `{"key":"sk-real"}` {
		t.Errorf("the Secret holds %q", g.secret.Data)
	}
	for _, v := range p.job.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			t.Errorf("the run's pod mounts the Secret %s", v.Secret.SecretName)
		}
	}
	for _, e := range p.job.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil || strings.Contains(e.Value, "sk-real") {
			t.Errorf("the run's pod gets %s from the gateway's set-up", e.Name)
		}
	}
	gs := g.pod.Spec
	if len(gs.Volumes) != 1 || gs.Volumes[0].Secret == nil || gs.Volumes[0].Secret.SecretName != g.secret.Name {
		t.Errorf("the gateway's pod does not mount the Secret: %+v", gs.Volumes)
	}
	if sc := gs.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser == 0 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("the gateway's pod may run as root: %+v", sc)
	}
	if gs.AutomountServiceAccountToken == nil || *gs.AutomountServiceAccountToken {
		t.Error("the gateway's pod gets an API token")
	}
	if gs.Containers[0].Image != testGatewayImage {
		t.Errorf("the gateway runs %s", gs.Containers[0].Image)
	}

	// Every object carries the run's labels: `eval --resume` deletes a
	// killed evaluation's by its label.
	for what, l := range map[string]map[string]string{"Secret": g.secret.Labels, "pod": g.pod.Labels, "Service": g.service.Labels, "NetworkPolicy": g.policy.Labels} {
		if l["ssebench.eval"] != "20261202-000000-abcdef" || l[RunLabel] != p.name || l[ManagedLabel] != managedBy {
			t.Errorf("the gateway's %s is labelled %v, without the run's labels", what, l)
		}
	}

	// Selectors: the run's and the gateway's pods are told apart.
	runLabels := p.job.Spec.Template.Labels
	gwLabels := g.pod.Labels
	matches := func(sel, labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
	pol := p.policy.Spec
	if !matches(pol.PodSelector.MatchLabels, runLabels) || matches(pol.PodSelector.MatchLabels, gwLabels) {
		t.Errorf("the run's policy selects %v", pol.PodSelector.MatchLabels)
	}
	if len(pol.Ingress) != 0 || len(pol.Egress) != 1 || len(pol.Egress[0].To) != 1 || len(pol.Egress[0].Ports) != 1 {
		t.Fatalf("the run's policy = %+v, want one egress rule to the gateway", pol)
	}
	if to := pol.Egress[0].To[0]; to.PodSelector == nil || !matches(to.PodSelector.MatchLabels, gwLabels) || matches(to.PodSelector.MatchLabels, runLabels) || to.IPBlock != nil || to.NamespaceSelector != nil {
		t.Errorf("the run's pod may reach %+v", to)
	}
	if port := pol.Egress[0].Ports[0].Port; port == nil || port.IntValue() != GatewayPort {
		t.Errorf("the run's pod may reach port %v", port)
	}
	if !matches(g.service.Spec.Selector, gwLabels) || matches(g.service.Spec.Selector, runLabels) {
		t.Errorf("the Service selects %v", g.service.Spec.Selector)
	}
	gp := g.policy.Spec
	if !matches(gp.PodSelector.MatchLabels, gwLabels) || len(gp.Ingress) != 1 || !matches(gp.Ingress[0].From[0].PodSelector.MatchLabels, runLabels) || len(gp.Egress) != 0 {
		t.Errorf("the gateway's policy = %+v, want ingress from the run's pod only", gp)
	}

	// Refused: an image not pinned, an open run.
	spec.Gateway = &runner.Gateway{Image: "localhost:5000/ssebench/gateway:1", Config: []byte("{}")}
	if _, err := o.planRun(spec, "token0123456789abcdef"); err == nil || !strings.Contains(err.Error(), "pinned") {
		t.Errorf("a gateway image by tag: %v", err)
	}
	spec.Gateway.Image, spec.Network = testGatewayImage, runner.NetworkOpen
	if _, err := o.planRun(spec, "token0123456789abcdef"); err == nil {
		t.Error("an open run with a gateway is planned")
	}
}
