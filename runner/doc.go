// Package runner provides running an image with containerd: it gets the
// image into containerd (importing only the blobs containerd lacks from the
// local image store, or pulling it from a registry), unpacks it once,
// creates a container with the mounts, environment, labels and network of a
// run, streams its output, returns its exit status and cleans up: the
// container, and (RunSpec.RemoveImage) the image it put into containerd once
// no run of the process uses it. Prune removes what runs left behind.
//
// The client is containerd's v2 Go client; the daemon may be containerd 1.6
// or newer. Only APIs that 1.6 serves are used: the content, images,
// leases, snapshots, diff, containers, tasks, namespaces and introspection
// services. Neither the transfer service nor the sandbox API is used.
//
// Runner is one of the two backends that run a run's images; the other,
// on a Kubernetes cluster, is package kube under this one.
package runner
