package ssebench

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// module is this module's import path.
const module = "github.com/42-b3yond-6ug/ssebench"

// TestImportLayers keeps the architecture the README draws: each room
// imports only rooms below it. The rules that matter most: contract is the
// leaf every side shares, so the host side never needs the in-image
// runtime (sserun) to speak the contract, and the reader of run folders
// (results) never pulls in the run machinery (pipeline).
func TestImportLayers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	rules := []struct {
		pkgs      []string // packages (patterns) whose dependencies are checked
		forbidden []string // rooms none of them may depend on, directly or not
	}{
		{[]string{"./contract"}, []string{""}}, // nothing of ours at all
		{[]string{"./oci/...", "./registry/..."}, []string{"sserun", "pipeline", "evaluate", "assemble", "runner", "results", "cmd"}},
		{[]string{"./assemble/...", "./task/...", "./runner/..."}, []string{"sserun", "pipeline", "evaluate", "release", "cmd"}},
		{[]string{"./results/..."}, []string{"sserun", "pipeline", "evaluate", "release", "cmd"}},
		{[]string{"./release/..."}, []string{"sserun", "cmd"}},
		{[]string{"./sserun/..."}, []string{"assemble", "pipeline", "evaluate", "registry", "oci", "runner", "results", "cmd"}},
		{[]string{"./pipeline/...", "./evaluate/...", "./cmd/..."}, []string{"examples", "tools"}},
		// The host side speaks the contract; the in-image runtime is built
		// into the runtime image, never linked into ssebench.
		{[]string{"./cmd/ssebench/...", "./pipeline/...", "./evaluate/...", "./gateway/..."}, []string{"sserun"}},
	}
	for _, r := range rules {
		args := append([]string{"list", "-deps", "-test=false", "-f", "{{.ImportPath}}"}, r.pkgs...)
		out, err := exec.Command("go", args...).Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		self := map[string]bool{}
		for _, p := range r.pkgs {
			self[strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/...")] = true
		}
		for _, dep := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(dep, module+"/")
			if !ok || self[rel] || self[strings.SplitN(rel, "/", 2)[0]] {
				continue
			}
			if strings.HasPrefix(rel, "internal/") {
				continue // helpers, allowed everywhere
			}
			for _, f := range r.forbidden {
				if f == "" || rel == f || strings.HasPrefix(rel, f+"/") {
					t.Errorf("%s depends on %s, a room it must not import (see the README's Architecture)", strings.Join(r.pkgs, " "), rel)
				}
			}
		}
	}
}

// TestCLILinksNoClientset keeps client-go's clientset out of the ssebench
// binary: the scheme under k8s.io/client-go/kubernetes registers every
// API group of Kubernetes in its package inits, which ran in every
// command (`ssebench --version` too) and kept their pages resident. The
// Kubernetes backend speaks to the API with its own small client
// (runner/kube/client.go); tests and tools may use the clientset.
func TestCLILinksNoClientset(t *testing.T) {
	_, err := exec.LookPath("go")
	testenv.Need(t, err == nil, "no go command on PATH: install Go")
	out, err := exec.Command("go", "list", "-deps", "-test=false", "-f", "{{.ImportPath}}", "./cmd/ssebench").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/ssebench: %v", err)
	}
	var linked []string
	for _, dep := range strings.Fields(string(out)) {
		if dep == "k8s.io/client-go/kubernetes" || strings.HasPrefix(dep, "k8s.io/client-go/kubernetes/") || dep == "k8s.io/client-go/discovery" {
			linked = append(linked, dep)
		}
	}
	if len(linked) > 0 {
		t.Errorf("ssebench links %d packages of client-go's clientset (%s, ...), which register every Kubernetes API group at start-up; use runner/kube's own client", len(linked), linked[0])
	}
}
