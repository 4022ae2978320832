package main

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
)

func pod(ns, name, ip string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
}

// TestCompute: a pod a deny-all policy selects gets no RETURN of its own
// (so the chains' final DROP takes it), an unselected pod returns both
// ways, and an allowed peer and port return for the selected pod only.
func TestCompute(t *testing.T) {
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(4000)
	cs := fake.NewClientset(
		pod("runs", "agent", "10.88.0.5", map[string]string{"ssebench.job": "a"}),
		pod("runs", "open", "10.88.0.6", map[string]string{"ssebench.job": "b"}),
		pod("runs", "gateway", "10.88.0.7", map[string]string{"app": "gateway"}),
		pod("other", "elsewhere", "192.0.2.9", nil), // not in the pod network
		&networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "runs", Name: "a"},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"ssebench.job": "a"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{{
					To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "gateway"}}}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
				}},
			},
		},
	)
	eg, in, err := compute(context.Background(), cs, netip.MustParsePrefix("10.88.0.0/24"))
	if err != nil {
		t.Fatal(err)
	}
	egs, ins := strings.Join(eg, "\n"), strings.Join(in, "\n")
	for _, want := range []string{
		"-A SSEBENCH-NETPOL-EG -s 10.88.0.5 -d 10.88.0.7 -p tcp --dport 4000 -j RETURN",
		"-A SSEBENCH-NETPOL-EG -s 10.88.0.6 -j RETURN",
		"-A SSEBENCH-NETPOL-EG -s 10.88.0.7 -j RETURN",
	} {
		if !strings.Contains(egs, want) {
			t.Errorf("egress rules lack %q:\n%s", want, egs)
		}
	}
	for _, want := range []string{"-A SSEBENCH-NETPOL-IN -d 10.88.0.6 -j RETURN", "-A SSEBENCH-NETPOL-IN -d 10.88.0.7 -j RETURN"} {
		if !strings.Contains(ins, want) {
			t.Errorf("ingress rules lack %q:\n%s", want, ins)
		}
	}
	for _, bad := range []string{"-s 10.88.0.5 -j RETURN", "-d 10.88.0.5 -j RETURN", "192.0.2.9"} {
		if strings.Contains(egs+ins, bad) {
			t.Errorf("rules have %q:\n%s\n%s", bad, egs, ins)
		}
	}
	if eg[len(eg)-1] != "-A SSEBENCH-NETPOL-EG -j DROP" || in[len(in)-1] != "-A SSEBENCH-NETPOL-IN -j DROP" {
		t.Errorf("the chains do not end in DROP: %q, %q", eg[len(eg)-1], in[len(in)-1])
	}
}
