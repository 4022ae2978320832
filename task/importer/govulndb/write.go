package govulndb

import (
	"fmt"
	"sort"
	"strings"

	"golang.org/x/mod/module"
	"gopkg.in/yaml.v3"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// addressSpaceKiB is the scripts' limit on each process's address space
// (ulimit -v, in KiB): far above what a package's tests need, far below
// what any host backs with memory.
const addressSpaceKiB = "16777216"

// baseImage is the generic-go base of every imported task, pinned as the
// example datasets pin it.
const baseImage = "base-generic-go:0.1.0-dev"

// TaskID is the task id of a report: its id in lower case, as image names
// need it.
func TaskID(reportID string) string { return strings.ToLower(reportID) }

// files renders the task folder: each file's path in the folder and its
// contents. Nothing depends on the time or the machine: the same report
// and zips give the same bytes.
func (p *plan) files() (map[string][]byte, error) {
	cfg, err := p.config()
	if err != nil {
		return nil, err
	}
	scripts := p.scripts()
	out := map[string][]byte{
		"Dockerfile":           []byte(p.dockerfile()),
		"sse/config.yaml":      cfg,
		"sse/diffs/patch.diff": []byte(p.patch),
		"sse/diffs/test.diff":  []byte(p.test),
	}
	for name, s := range scripts {
		out["sse/scripts/"+name] = []byte(s)
	}
	if p.stubs != "" {
		out[task.StubsFile] = []byte(p.stubs)
	}
	if p.variant != "" {
		out[task.VariantFile] = []byte(p.variant)
	}
	return out, nil
}

func (p *plan) source() string { return "/src/" + project(p.mod.Module) }

// shq quotes s for sh. Every value is checked before (ParseReport), so
// this is belt and braces.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (p *plan) dockerfile() string {
	m := p.mod
	esc, _ := module.EscapePath(m.Module)
	ver := "v" + m.VulnerableAt
	var b strings.Builder
	fmt.Fprintf(&b, `# %s: %s at %s, the version before the fix, as the Go
# vulnerability database names it. Written by "ssebench dataset import
# govulndb": import it again rather than edit it.
ARG SSEBENCH_REGISTRY=ghcr.io/42-b3yond-6ug/ssebench
FROM ${SSEBENCH_REGISTRY}/%s

# The module and its dependencies come from the Go module proxy: the module's
# zip is checked against the checksum database, its dependencies against its
# go.sum (the checksum database adds a line go.sum lacks). They are vendored,
# so that the task's builds and tests run offline (sse/scripts/env.sh).
# The affected packages and their tests are compiled once, into a build
# cache of root's that the scripts copy as their own cache's seed: each
# grade then compiles only what the agent changed.
ARG GOPROXY=https://proxy.golang.org
ARG GOSUMDB=sum.golang.org
WORKDIR %s
RUN set -eu; \
    export GONOSUMDB= GONOSUMCHECK= GOPRIVATE= GOINSECURE= GOFLAGS=-mod=mod; \
    go mod download %s; \
    cp -R "$(go env GOMODCACHE)"/%s/. .; \
    chmod -R u+w,go-w .; \
    go mod vendor || { go mod tidy -e && go mod vendor; }; \
    [ -e vendor/modules.txt ] || { mkdir -p vendor && : >vendor/modules.txt; }; \
    go clean -modcache; \
    export GOFLAGS=-mod=vendor GOPROXY=off GOCACHE=/usr/local/go-build-task; \
    mkdir -p "$GOCACHE"; cp -R "$GO_BUILD_CACHE_SEED/." "$GOCACHE/"; \
    go build -o /dev/null %s; \
    go test -count=1 -vet=off -run '^$' %s >/dev/null; \
    chmod -R a+rX,go-w "$GOCACHE"

# One commit of the module as the proxy serves it, vendored, dated as the
# version is (the tool layer makes its own commit of the tree).
RUN set -eu; \
    export GIT_AUTHOR_NAME="ssebench import" GIT_AUTHOR_EMAIL="import@ssebench.invalid"; \
    export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"; \
    export GIT_AUTHOR_DATE=%s GIT_COMMITTER_DATE=%s; \
    git init -q -b main; \
    git add -A -f .; \
    git commit -q -m %s; \
    git log --oneline

COPY sse/ /ssebench/
`, p.report.ID, m.Module, ver, baseImage, p.source(),
		shq(m.Module+"@"+ver), shq(esc+"@"+ver),
		strings.Join(quoteAll(p.pkgArgs()), " "), strings.Join(quoteAll(p.pkgArgs()), " "),
		shq(p.time), shq(p.time), shq(m.Module+" "+ver))
	return b.String()
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = shq(s)
	}
	return out
}

func (p *plan) scripts() map[string]string {
	pkgs := strings.Join(quoteAll(p.pkgArgs()), " ")
	return map[string]string{
		"env.sh": `# env.sh: sourced by the other scripts. The scripts run in the project tree
# (the current directory) as a user with a fresh home, or none that is
# writable: then the Go build cache goes to a private temporary directory,
# seeded from a read-only cache the case image compiled.
# The modules are vendored and nothing is fetched: the run is offline.
export GOFLAGS=-mod=vendor GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local GOWORK=off
# The same address-space limit on every host (16 GiB for each process): a
# huge allocation, which a denial-of-service bug's test makes on the buggy
# tree, then fails here whatever the host's vm.overcommit_memory says,
# instead of passing where the kernel hands out memory it does not have.
ulimit -v ` + addressSpaceKiB + ` 2>/dev/null || true
if [ -z "${GOCACHE:-}" ]; then
	GOCACHE=$(go env GOCACHE)
	if ! mkdir -p "$GOCACHE" 2>/dev/null || [ ! -w "$GOCACHE" ]; then
		GOCACHE="${TMPDIR:-/tmp}/govuln-go-build-$(id -u)"
	fi
	export GOCACHE
fi
# The case image's cache of the affected packages (root's, read-only), else
# the base image's of the standard library.
seed=/usr/local/go-build-task
[ -d "$seed" ] || seed=${GO_BUILD_CACHE_SEED:-}
if [ ! -e "$GOCACHE/.ssebench-seeded" ] && [ -d "$seed" ]; then
	mkdir -p "$GOCACHE" && cp -R "$seed/." "$GOCACHE/" 2>/dev/null &&
		: >"$GOCACHE/.ssebench-seeded" || true
fi
`,
		"build.sh": `#!/bin/sh
# build.sh: build the affected packages (project tree = cwd).
set -eu
. "$(dirname "$0")/env.sh"
go build ` + pkgs + `
`,
		"test.sh": `#!/bin/sh
# test.sh: build, then test the affected packages (project tree = cwd).
# Under the grader, $SSE_TEST_REPORT names the file for the test report
# (tests.format: go-test-json); the grader judges the listed tests by name.
# -vet=off: the tests judge the fix; a vet check newer than the module is
# not the task's bug, and vetting every run costs a build. -timeout 240s: a
# denial-of-service fix's test loops on the buggy tree; that is a failure,
# and it must not hold the grade for long.
set -eu
here=$(dirname "$0")
"$here/build.sh"
. "$here/env.sh"
if [ -n "${SSE_TEST_REPORT:-}" ]; then
	go test -count=1 -vet=off -timeout 240s -json ` + pkgs + ` >"$SSE_TEST_REPORT"
else
	go test -count=1 -vet=off -timeout 240s ` + pkgs + `
fi
`,
	}
}

// The config's shape, in the order of the example tasks' configs.
type configOut struct {
	ID              string     `yaml:"id"`
	Project         string     `yaml:"project"`
	Repository      string     `yaml:"repository"`
	Language        string     `yaml:"language"`
	Source          string     `yaml:"source"`
	TaskDescription descOut    `yaml:"task_description"`
	Scripts         scripts    `yaml:"scripts"`
	Files           filesOut   `yaml:"files"`
	Type            string     `yaml:"type"`
	Reference       []string   `yaml:"reference"`
	Originality     string     `yaml:"originality"`
	Tests           task.Tests `yaml:"tests"`
}

type descOut struct {
	Issue          string `yaml:"issue"`
	BugDescription string `yaml:"bug_description"`
}

type scripts struct {
	Build string `yaml:"build"`
	Test  string `yaml:"test"`
}

type filesOut struct {
	Patch      string `yaml:"patch"`
	FutureTest string `yaml:"future_test"`
}

// config is sse/config.yaml. The difficulty levels pick the text: the
// issue (every level, alone at 4) is the report's summary and description;
// the bug description (levels 0 to 3) adds the affected packages and
// symbols, which point at the code to change.
func (p *plan) config() ([]byte, error) {
	r := p.report
	issue := strings.TrimSpace(r.Summary)
	if d := strings.TrimSpace(r.Description); d != "" {
		issue += "\n\n" + d
	}
	ids := append([]string{r.ID}, r.CVEs...)
	ids = append(ids, r.GHSAs...)
	issue += fmt.Sprintf("\n\nReported as %s, in %s at v%s.\n", strings.Join(ids, ", "), p.mod.Module, p.mod.VulnerableAt)
	if p.api != nil {
		// What the tests need of any fix, at every level: without it
		// only the reference's own names would pass.
		if s := p.api.IssueText(); s != "" {
			issue += "\n" + s
		}
	}

	var bug strings.Builder
	bug.WriteString(strings.TrimSpace(r.Summary))
	bug.WriteString("\n\nThe vulnerable code:\n")
	pkgs := append([]Package(nil), p.mod.Packages...)
	sort.SliceStable(pkgs, func(i, j int) bool { return pkgs[i].Package < pkgs[j].Package })
	for _, pk := range pkgs {
		syms := append(append([]string(nil), pk.Symbols...), pk.DerivedSymbols...)
		if len(syms) == 0 {
			fmt.Fprintf(&bug, "- package %s\n", pk.Package)
			continue
		}
		fmt.Fprintf(&bug, "- package %s: %s\n", pk.Package, strings.Join(syms, ", "))
	}

	c := configOut{
		ID:              TaskID(r.ID),
		Project:         project(p.mod.Module),
		Repository:      "https://" + p.mod.Module,
		Language:        "go",
		Source:          p.source(),
		TaskDescription: descOut{Issue: issue, BugDescription: bug.String()},
		Scripts:         scripts{Build: "scripts/build.sh", Test: "scripts/test.sh"},
		Files:           filesOut{Patch: "diffs/patch.diff", FutureTest: "diffs/test.diff"},
		Type:            "Vulnerability",
		Reference:       []string{"https://pkg.go.dev/vuln/" + r.ID},
		Originality:     "public",
		Tests:           task.Tests{Format: "go-test-json", FailToPass: p.tests.FailToPass, PassToPass: p.tests.PassToPass},
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return []byte(b.String()), enc.Close()
}
