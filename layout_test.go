package ssebench

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// module is this module's import path.
const module = "github.com/42-b3yond-6ug/ssebench"

// A layer is a row of the README's Architecture diagram: the packages
// (paths relative to the module) that sit at one height.
type layer struct {
	name string
	pkgs []string
	// allow lists the imports inside the layer that are allowed, as
	// "importer -> imported"; any other import between two packages of
	// one layer fails.
	allow []string
	// only, when set, lists who may import the layer besides the layer
	// itself (packages, or path prefixes ending in "/"): the in-image
	// runtime sits low, but nothing of the host side may link it.
	only []string
	// testOnly marks test support: only tests and tools import it.
	testOnly bool
}

// runtimeUsers may import the in-image runtime: its programs, built into
// the runtime image by runtimebin, and the examples and tools.
var runtimeUsers = []string{"cmd/ssebench-daemon", "cmd/ssebench-entrypoint", "cmd/ssebench-mcp", "examples/", "tools/"}

// layers is the architecture the README draws, top first: a package
// imports (test files aside) only packages of the layers below its own,
// and inside its own layer only what allow says. Every package of the
// module is in exactly one layer.
var layers = []layer{
	{name: "tools", pkgs: []string{"tools", "tools/bench", "tools/hostile-summary", "tools/osimage", "tools/pause", "tools/podfilter", "docs/ci"}},
	// Test support sits under tools alone, so that no production package
	// can import it; it may import anything below.
	{name: "test support", testOnly: true, pkgs: []string{"internal/testing/browsertest", "internal/testing/faultproxy", "internal/testing/hostile", "internal/testing/imagetest", "internal/testing/runtest", "internal/testing/testenv", "runner/kube/kubetest"},
		allow: []string{"runner/kube/kubetest -> internal/testing/testenv"}},
	{name: "examples", pkgs: []string{"examples", "examples/cmd/ssebench-example", "examples/cmd/ssebench-entrypoint-example", "examples/toollayer", "examples/entrypointmode"},
		allow: []string{"examples/cmd/ssebench-example -> examples/toollayer", "examples/cmd/ssebench-entrypoint-example -> examples/entrypointmode"}},
	{name: "programs", pkgs: []string{"cmd/ssebench", "cmd/ssebench-daemon", "cmd/ssebench-entrypoint", "cmd/ssebench-mcp", "cmd/ssebench-gateway", "agents/loop"}},
	{name: "cli", pkgs: []string{"cmd/ssebench/commands", "cmd/ssebench/commands/options"},
		allow: []string{"cmd/ssebench/commands -> cmd/ssebench/commands/options"}},
	{name: "release", pkgs: []string{"release"}},
	{name: "evaluate", pkgs: []string{"evaluate", "evaluate/predictions"},
		allow: []string{"evaluate/predictions -> evaluate"}},
	{name: "pipeline", pkgs: []string{"pipeline", "pipeline/preflight"}},
	{name: "results", pkgs: []string{"results"}},
	{name: "agent, base and case images", pkgs: []string{"assemble/agentimage", "images/casebuild"}},
	{name: "tool image, BuildKit, backends", pkgs: []string{"assemble", "images", "images/buildkit", "runner", "runner/kube"},
		allow: []string{"runner/kube -> runner"}},
	{name: "runtime image, assembly's parts, gateway", pkgs: []string{"runtimebin", "assemble/accounts", "assemble/gitrepo", "gateway", "gateway/gatewaytest"}},
	{name: "catalogs, importers, agents", pkgs: []string{"task/catalog", "task/importer/govulndb", "agent"}},
	{name: "registry", pkgs: []string{"registry", "registry/naming", "registry/remote", "registry/archive", "registry/trust"},
		allow: []string{"registry/archive -> registry/remote"}},
	{name: "task", pkgs: []string{"task"}},
	{name: "store", pkgs: []string{"oci/store"}},
	{name: "oci", pkgs: []string{"oci"}},
	{name: "in-image runtime", pkgs: []string{"sserun/entrypoint", "sserun/ssemcp"},
		allow: []string{"sserun/entrypoint -> sserun/ssemcp"}, only: runtimeUsers},
	{name: "in-image runtime core", pkgs: []string{"sserun", "sserun/audit"}, only: append([]string{"sserun/"}, runtimeUsers...)},
	{name: "contract helpers", pkgs: []string{"internal/limitevents"}},
	{name: "contract", pkgs: []string{"contract"}},
	{name: "leaves", pkgs: []string{".", "internal/gobuild", "internal/safefile", "internal/suggest", "internal/term", "internal/units", "internal/yamlerr"}},
}

// TestLayout keeps the architecture the README draws (see layers): every
// package of the module has a layer, and imports only what its layer
// allows. The rules that matter most: contract is the leaf every side
// shares, so the host side never needs the in-image runtime (sserun) to
// speak the contract; the reader of run folders (results) never pulls in
// the run machinery (pipeline); no production package imports test
// support.
func TestLayout(t *testing.T) {
	_, err := exec.LookPath("go")
	testenv.Need(t, err == nil, "no go command on PATH: install Go")
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	type place struct {
		index int
		layer *layer
	}
	where := map[string]place{}
	for i := range layers {
		for _, p := range layers[i].pkgs {
			if prev, ok := where[p]; ok {
				t.Errorf("%s is in two layers, %q and %q: keep it in one", p, prev.layer.name, layers[i].name)
			}
			where[p] = place{i, &layers[i]}
		}
	}
	rel := func(path string) (string, bool) {
		if path == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(path, module+"/")
		return r, ok
	}
	describe := func(p string) string {
		return fmt.Sprintf("%s (layer %d, %q)", p, where[p].index+1, where[p].layer.name)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, _ := rel(f[0])
		seen[pkg] = true
		from, ok := where[pkg]
		if !ok {
			t.Errorf("package %s is in no layer: add it to the layers of layout_test.go, where the README's Architecture puts it, or move it where it belongs", pkg)
			continue
		}
		for _, imp := range f[1:] {
			dep, ours := rel(imp)
			if !ours {
				continue
			}
			to, ok := where[dep]
			if !ok {
				continue // reported as a package in no layer
			}
			if to.layer.only != nil && to.layer != from.layer && !matchAny(pkg, to.layer.only) {
				t.Errorf("%s imports %s, which only %s may import: the host side speaks the contract, it does not link the in-image runtime; move what both need into contract", describe(pkg), describe(dep), strings.Join(to.layer.only, ", "))
			}
			switch {
			case to.layer.testOnly && to.layer != from.layer && from.index > 0: // tools, the top layer, may
				t.Errorf("%s imports %s, which is test support: only _test.go files and tools may import it; put the helper in a _test.go file, or move what production code needs out of internal/testing", describe(pkg), describe(dep))
			case to.index > from.index:
				// A lower layer: allowed.
			case to.index == from.index && slices.Contains(from.layer.allow, pkg+" -> "+dep):
				// Allowed inside the layer.
			case to.index == from.index:
				t.Errorf("%s imports %s, of the same layer: move what both need down a layer, or, if this import belongs to the design, add %q to the layer's allow in layout_test.go", describe(pkg), describe(dep), pkg+" -> "+dep)
			default:
				t.Errorf("%s imports %s, a layer above it: a package imports only layers below its own; move what %s needs from %s down to a lower layer (or to a new leaf), or, if the architecture changed, move the packages in layout_test.go's layers and in the README's Architecture", describe(pkg), describe(dep), pkg, dep)
			}
		}
	}
	for p := range where {
		if !seen[p] {
			t.Errorf("layer %q lists %s, which is no package of the module: remove it from layout_test.go", where[p].layer.name, p)
		}
	}
}

// matchAny says whether pkg is one of pats or under one that ends in "/".
func matchAny(pkg string, pats []string) bool {
	for _, p := range pats {
		if pkg == p || strings.HasSuffix(p, "/") && strings.HasPrefix(pkg, p) {
			return true
		}
	}
	return false
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
