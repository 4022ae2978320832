// Package kube runs ssebench's runs on a Kubernetes cluster: one Job per
// run, from an image a registry holds, pinned by digest (SPEC.md section
// 15). The results directory and the archive are emptyDir volumes; when
// the agent and its grading end, the entrypoint writes them to its output
// (contract.EnvResultsStream), and Run reads them back through the pod's log
// into the run's folder on the machine that started it, so no volume
// needs to be shared with the cluster. A restricted run's pod gets a
// NetworkPolicy that denies every connection. Everything a run creates
// carries its labels and is deleted when the run ends, whichever way.
package kube
