// Command podfilter enforces the NetworkPolicies of the test cluster that
// scripts/k8s-up.sh starts, with iptables, where kube-network-policies
// cannot (a kernel without nftables' queue expression). It is a test
// fixture, not a general NetworkPolicy implementation: it understands what
// ssebench's Kubernetes backend creates, policies that select pods by
// matchLabels and allow TCP to or from pods selected by matchLabels (none:
// deny all), and it is fail-closed: traffic of a pod IP it has not
// classified yet is dropped.
//
// Every second it lists the pods and policies and rewrites three iptables
// chains in one transaction. FORWARD and INPUT (a pod's connections to the
// node itself) send the pod network's traffic to SSEBENCH-NETPOL, which
// accepts the replies of allowed connections and sends a new one through
// SSEBENCH-NETPOL-EG (may its source send it?) and SSEBENCH-NETPOL-IN (may
// its destination take it?): each returns for a pod no policy of that
// direction selects and for the allowed peers and TCP ports of those that
// do, and drops the rest of the pod network.
//
// Usage:
//
//	podfilter --kubeconfig admin.kubeconfig --pod-cidr 10.88.0.0/24
//	podfilter --remove --pod-cidr 10.88.0.0/24
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The chains: the entry, the egress and the ingress check.
const (
	chain   = "SSEBENCH-NETPOL"
	egChain = chain + "-EG"
	inChain = chain + "-IN"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	cidr := flag.String("pod-cidr", "", "the pod network (required)")
	remove := flag.Bool("remove", false, "remove the chain and its jumps, then exit")
	flag.Parse()
	prefix, err := netip.ParsePrefix(*cidr)
	if err != nil {
		fail(fmt.Errorf("--pod-cidr %q: %w", *cidr, err))
	}
	if *remove {
		removeChain(prefix)
		return
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// Fail-closed from the start: the chain drops the pod network until
	// the first listing classified its pods.
	if err := apply([]string{"-A " + chain + " -s " + prefix.String() + " -j DROP", "-A " + chain + " -d " + prefix.String() + " -j DROP"}, nil, nil); err != nil {
		fail(err)
	}
	if err := ensureJumps(prefix); err != nil {
		fail(err)
	}
	var last string
	for ctx.Err() == nil {
		eg, in, err := compute(ctx, cs, prefix)
		if err != nil {
			fmt.Fprintln(os.Stderr, "podfilter:", err)
		} else if key := strings.Join(eg, "\n") + "\n--\n" + strings.Join(in, "\n"); key != last {
			entry := []string{
				"-A " + chain + " -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
				"-A " + chain + " -j " + egChain,
				"-A " + chain + " -j " + inChain,
			}
			if err := apply(entry, eg, in); err != nil {
				fmt.Fprintln(os.Stderr, "podfilter:", err)
			} else {
				last = key
				fmt.Fprintf(os.Stderr, "podfilter: %d egress and %d ingress rules\n", len(eg), len(in))
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "podfilter:", err)
	os.Exit(1)
}

// compute returns the egress and ingress chains' rules for the cluster
// as it is.
func compute(ctx context.Context, cs kubernetes.Interface, prefix netip.Prefix) (eg, in []string, err error) {
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	pols, err := cs.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	type pod struct {
		ns, ip string
		labels labels.Set
	}
	var all []pod
	for _, p := range pods.Items {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if p.Spec.HostNetwork || err != nil || !prefix.Contains(ip) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		all = append(all, pod{p.Namespace, ip.String(), labels.Set(p.Labels)})
	}
	selects := func(ns string, sel metav1.LabelSelector, p pod) bool {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		return err == nil && p.ns == ns && s.Matches(p.labels)
	}
	peers := func(ns string, ps []networkingv1.NetworkPolicyPeer) []string {
		var ips []string
		for _, peer := range ps {
			if peer.PodSelector == nil || peer.NamespaceSelector != nil || peer.IPBlock != nil {
				continue // not what ssebench creates: allows nothing
			}
			for _, q := range all {
				if selects(ns, *peer.PodSelector, q) {
					ips = append(ips, q.ip)
				}
			}
		}
		return ips
	}
	ports := func(ps []networkingv1.NetworkPolicyPort) []string {
		var out []string
		for _, p := range ps {
			if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP || p.Port == nil || p.Port.IntValue() == 0 {
				continue
			}
			out = append(out, fmt.Sprint(p.Port.IntValue()))
		}
		return out
	}
	c := prefix.String()
	// Traffic from outside the pod network has no egress to check, and
	// traffic to outside it (the node, other hosts) no ingress.
	eg = []string{"-A " + egChain + " ! -s " + c + " -j RETURN"}
	in = []string{"-A " + inChain + " ! -d " + c + " -j RETURN"}
	for _, p := range all {
		egress, ingress := false, false
		for _, pol := range pols.Items {
			if !selects(pol.Namespace, pol.Spec.PodSelector, p) {
				continue
			}
			for _, t := range pol.Spec.PolicyTypes {
				egress = egress || t == networkingv1.PolicyTypeEgress
				ingress = ingress || t == networkingv1.PolicyTypeIngress
			}
			for _, e := range pol.Spec.Egress {
				for _, to := range peers(pol.Namespace, e.To) {
					for _, port := range ports(e.Ports) {
						eg = append(eg, fmt.Sprintf("-A %s -s %s -d %s -p tcp --dport %s -j RETURN", egChain, p.ip, to, port))
					}
				}
			}
			for _, r := range pol.Spec.Ingress {
				for _, from := range peers(pol.Namespace, r.From) {
					for _, port := range ports(r.Ports) {
						in = append(in, fmt.Sprintf("-A %s -s %s -d %s -p tcp --dport %s -j RETURN", inChain, from, p.ip, port))
					}
				}
			}
		}
		if !egress {
			eg = append(eg, fmt.Sprintf("-A %s -s %s -j RETURN", egChain, p.ip))
		}
		if !ingress {
			in = append(in, fmt.Sprintf("-A %s -d %s -j RETURN", inChain, p.ip))
		}
	}
	sort.Strings(eg[1:])
	sort.Strings(in[1:])
	// Fail-closed: a pod IP not classified yet sends and takes nothing.
	return append(eg, "-A "+egChain+" -j DROP"), append(in, "-A "+inChain+" -j DROP"), nil
}

// apply replaces the chains' rules in one iptables-restore transaction.
func apply(entry, eg, in []string) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*filter\n:%s - [0:0]\n:%s - [0:0]\n:%s - [0:0]\n", chain, egChain, inChain)
	for _, r := range append(append(entry, eg...), in...) {
		b.WriteString(r + "\n")
	}
	b.WriteString("COMMIT\n")
	cmd := exec.Command("iptables-restore", "--noflush")
	cmd.Stdin = &b
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore: %v: %s", err, out)
	}
	return nil
}

// jumps are where the pod network's traffic enters the chain.
func jumps(prefix netip.Prefix) [][]string {
	c := prefix.String()
	return [][]string{{"FORWARD", "-s", c}, {"FORWARD", "-d", c}, {"INPUT", "-s", c}}
}

func ensureJumps(prefix netip.Prefix) error {
	for _, j := range jumps(prefix) {
		spec := append(j[1:], "-j", chain)
		if exec.Command("iptables", append([]string{"-C", j[0]}, spec...)...).Run() == nil {
			continue
		}
		if out, err := exec.Command("iptables", append([]string{"-I", j[0], "1"}, spec...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables -I %s: %v: %s", j[0], err, out)
		}
	}
	return nil
}

func removeChain(prefix netip.Prefix) {
	for _, j := range jumps(prefix) {
		spec := append(j[1:], "-j", chain)
		for exec.Command("iptables", append([]string{"-D", j[0]}, spec...)...).Run() == nil {
		}
	}
	for _, c := range []string{chain, egChain, inChain} {
		exec.Command("iptables", "-F", c).Run()
	}
	for _, c := range []string{chain, egChain, inChain} {
		exec.Command("iptables", "-X", c).Run()
	}
}
