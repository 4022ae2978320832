//go:build tools

// Package tools pins kube-network-policies, the NetworkPolicy agent of the
// test cluster (scripts/k8s-up.sh): the bridge CNI plugin does not enforce
// NetworkPolicies, and the Kubernetes backend's restricted runs rely on
// them. It runs as a host-network pod on the node and filters the pods'
// traffic with nftables and nfqueue.
package tools

import _ "sigs.k8s.io/kube-network-policies/cmd"
