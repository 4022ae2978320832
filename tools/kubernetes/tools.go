//go:build tools

// Package tools pins the Kubernetes control plane and kubelet that
// scripts/k8s-up.sh builds for the Kubernetes backend's tests. k8s.io/kubernetes
// cannot be built with `go install pkg@version`: its go.mod replaces its 33
// staging modules with ./staging/src/k8s.io/X, which only works inside its own
// repository. This module copies its require blocks and points each staging
// module at the release published with the same tag (v1.37.2 -> v0.37.2), so
// go.sum pins every dependency.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
