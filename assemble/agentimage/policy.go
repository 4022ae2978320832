package agentimage

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

// ErrRefused marks an agent layer or config that the agent policy refuses
// (docs/agents.md, "What an agent folder may not do"). Match it with
// errors.Is; the message is a *RefusedError's.
var ErrRefused = errors.New("refused by the agent policy")

// RefusedError names what the policy refused: the layer (or "config"), the
// entry (or the setting) and the rule, in one line.
type RefusedError struct {
	// Layer is "agent layer N (sha256:…)", or "the config".
	Layer string
	// Entry is the layer entry's path ("/etc/shadow") or the setting
	// ("ENV LD_PRELOAD").
	Entry string
	// Rule says what the entry breaks and why it matters.
	Rule string
}

// Error implements error.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Layer, e.Entry, e.Rule)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// protectedPaths are the paths no agent layer may add, change or remove,
// nor anything under them (without the leading slash): the task's answers
// and the runtime's state, the programs that grade (the entrypoint, the
// daemon and the MCP server live under /ssebench or here), the accounts
// and what decides who may become whom, and what the loader reads before
// any program's own code runs.
var protectedPaths = []string{
	strings.TrimPrefix(contract.TaskRoot, "/"),
	strings.TrimPrefix(contract.RepoDir, "/"),
	strings.TrimPrefix(contract.StateDir, "/"),
	strings.TrimPrefix(runtimebin.Entrypoint, "/"),
	strings.TrimPrefix(contract.SidecarMCPDir, "/"),
	strings.TrimPrefix(contract.SidecarScript, "/"),
	"etc/passwd", "etc/shadow", "etc/group", "etc/gshadow", "etc/subuid", "etc/subgid",
	"etc/sudoers", "etc/sudoers.d", "etc/doas.conf",
	"etc/pam.conf", "etc/pam.d", "etc/security", "etc/login.defs",
	"etc/ld.so.preload", "etc/ld.so.conf", "etc/ld.so.conf.d",
}

// allowedUsers are the USER values an agent image may end with besides
// the tool image's own: model, by name or number.
var allowedUsers = []string{
	contract.ModelName,
	fmt.Sprint(contract.ModelUID),
	contract.ModelName + ":" + contract.ModelName,
	fmt.Sprintf("%d:%d", contract.ModelUID, contract.ModelGID),
}

// allowedEnvNames are the variables an agent image may set besides those
// starting with AGENT_ and PATH (only lengthened): names no compiler, test
// tool, shell or loader reads.
var allowedEnvNames = []string{"NO_COLOR", "NO_UPDATE_NOTIFIER"}

// Policy is what an agent's layers and config may do to the tool image
// they are grafted on. The same policy checks the layers built natively,
// those BuildKit built, the sidecar agent image's and a prebuilt image's
// (ssebench verify --tool).
type Policy struct {
	tool   *v1.ConfigFile
	layers []v1.Layer
	facts  *assemble.Facts
	view   *oci.View

	pathDirs map[string]bool // PATH directories, literal and resolved
	trees    []string        // toolchain trees: GOROOT, GOPATH, ...
	resolved bool
	// links are the symlinks the agent layers checked so far made: an
	// applier writes an entry under one where the link leads.
	links map[string]bool
}

// PolicyOption configures NewPolicy.
type PolicyOption func(*Policy)

// WithPolicyFacts sets the layer facts cache through which the tool
// image's layers are indexed, when an agent layer puts something in a
// directory of PATH. The default is no cache.
func WithPolicyFacts(f *assemble.Facts) PolicyOption {
	return func(p *Policy) { p.facts = f }
}

// WithPolicyView gives the merged view of the tool image's layers when the
// caller has it, or of its blind image's (see Blind): they differ only in
// the paths the policy protects whatever the view says, so the native
// path indexes once for the assembly and the check.
func WithPolicyView(v *oci.View) PolicyOption {
	return func(p *Policy) { p.view = v }
}

// NewPolicy returns the policy for agent layers grafted on tool. The tool
// image's layers are read only if an agent layer writes into a directory
// of its PATH.
func NewPolicy(tool v1.Image, opts ...PolicyOption) (*Policy, error) {
	cf, err := tool.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of the tool image: %w", err)
	}
	layers, err := tool.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading the layers of the tool image: %w", err)
	}
	p := &Policy{tool: cf, layers: layers, pathDirs: map[string]bool{}, links: map[string]bool{}}
	for _, o := range opts {
		o(p)
	}
	for _, kv := range cf.Config.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH":
			for _, d := range strings.Split(v, ":") {
				if path.IsAbs(d) {
					p.pathDirs[strings.TrimPrefix(path.Clean(d), "/")] = true
				}
			}
		case slices.Contains(toolchainVars, k):
			for _, d := range strings.Split(v, ":") {
				if path.IsAbs(d) && path.Clean(d) != "/" {
					p.trees = append(p.trees, strings.TrimPrefix(path.Clean(d), "/"))
				}
			}
		}
	}
	return p, nil
}

// toolchainVars name the trees a check's toolchain reads: an agent layer
// adds nothing there (a module in the module cache is a dependency
// substituted; see assemble's guard for the same list).
var toolchainVars = []string{"GOROOT", "GOPATH", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME"}

// lower returns the tool image's merged view, with the PATH directories
// resolved through it; it is read on first use.
func (p *Policy) lower(ctx context.Context) (*oci.View, error) {
	if p.view == nil {
		v, err := p.facts.View(ctx, p.layers)
		if err != nil {
			return nil, fmt.Errorf("reading the tool image: %w", err)
		}
		p.view = v
	}
	if !p.resolved {
		for _, d := range keysOf(p.pathDirs) {
			if n, ok := p.view.Resolve(d); ok && n.Header.IsDir() {
				p.pathDirs[n.Path] = true
			}
		}
		p.resolved = true
	}
	return p.view, nil
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// under reports whether p is dir or inside it ("" is the root).
func under(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

// protected says which rule keeps an agent layer away from p, or "".
func (p *Policy) protected(name string) string {
	for _, q := range protectedPaths {
		if under(name, q) {
			return fmt.Sprintf("/%s is the runtime's or the accounts': an agent layer adds, changes or removes nothing there", q)
		}
	}
	for _, t := range p.trees {
		if under(name, t) {
			return fmt.Sprintf("/%s is a toolchain tree of the tool image, which the grader's checks read: an agent layer adds nothing there", t)
		}
	}
	if isLoader(name) {
		return "the dynamic loader runs before every program the grader starts: an agent layer does not replace it"
	}
	if isPAMModuleDir(name) {
		return "PAM modules decide who may become whom: an agent layer adds none"
	}
	return ""
}

// isLoader reports whether name is a dynamic loader (ld-linux-x86-64.so.2,
// ld-musl-aarch64.so.1, ld64.so.2) in a library directory.
func isLoader(name string) bool {
	dir, base := path.Split(name)
	if !strings.HasPrefix(dir, "lib") && !strings.HasPrefix(dir, "usr/lib") {
		return false
	}
	return strings.HasPrefix(base, "ld-linux") || strings.HasPrefix(base, "ld-musl") || strings.HasPrefix(base, "ld64.so") || base == "ld.so"
}

// isPAMModuleDir reports whether name is in a PAM module directory:
// lib/security, usr/lib/x86_64-linux-gnu/security and the like.
func isPAMModuleDir(name string) bool {
	parts := strings.Split(name, "/")
	if len(parts) > 0 && parts[0] == "usr" {
		parts = parts[1:]
	}
	if len(parts) < 2 || (parts[0] != "lib" && parts[0] != "lib64") {
		return false
	}
	return parts[1] == "security" || (len(parts) > 2 && parts[2] == "security")
}

// isAncestor reports whether name is a parent directory of a path the
// policy keeps: a protected path, a PATH directory or a toolchain tree.
// Such an entry must stay a root-owned directory that only root writes.
func (p *Policy) isAncestor(name string) bool {
	for _, q := range protectedPaths {
		if under(q, name) {
			return true
		}
	}
	for d := range p.pathDirs {
		if under(d, name) {
			return true
		}
	}
	for _, t := range p.trees {
		if under(t, name) {
			return true
		}
	}
	return false
}

// CheckLayer reads one agent layer (uncompressed, in one pass) and returns
// a *RefusedError for the first entry the policy refuses. what names the
// layer in the message ("agent layer 2 (sha256:…)").
func (p *Policy) CheckLayer(ctx context.Context, what string, l v1.Layer) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	defer rc.Close()
	return p.checkTar(ctx, what, rc)
}

func (p *Policy) checkTar(ctx context.Context, what string, r io.Reader) error {
	tr := tar.NewReader(r)
	files := map[string]bool{} // regular files of this layer, for hard links
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", what, err)
		}
		if err := p.checkEntry(ctx, h, files); err != nil {
			var r *RefusedError
			if errors.As(err, &r) {
				r.Layer = what
			}
			return err
		}
		name := cleanEntry(h.Name)
		dir, base := path.Split(name)
		switch {
		case strings.HasPrefix(base, ".wh."):
			delete(p.links, path.Join(dir, strings.TrimPrefix(base, ".wh.")))
		case h.Typeflag == tar.TypeSymlink:
			p.links[name] = true
		default:
			// A directory or file in the link's place replaces it.
			delete(p.links, name)
			if h.Typeflag == tar.TypeReg {
				files[name] = true
			}
		}
	}
}

// cleanEntry is a tar name as a clean path without the leading slash; ""
// is the root.
func cleanEntry(n string) string {
	n = path.Clean("/" + n)
	return strings.TrimPrefix(n, "/")
}

func (p *Policy) checkEntry(ctx context.Context, h *tar.Header, files map[string]bool) error {
	// The PATH directories resolved first: an ancestor of /usr/bin is
	// one of /bin when /bin leads there.
	if _, err := p.lower(ctx); err != nil {
		return err
	}
	name := cleanEntry(h.Name)
	refuse := func(rule string) error {
		return &RefusedError{Entry: "/" + name, Rule: rule}
	}
	if strings.Contains(h.Name, "..") && slices.Contains(strings.Split(h.Name, "/"), "..") {
		return refuse("an entry name with \"..\" climbs out of the root")
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	target := name // what the entry adds, replaces or removes
	whiteout := false
	switch {
	case base == ".wh..wh..opq":
		target, whiteout = dir, true
	case strings.HasPrefix(base, ".wh."):
		target, whiteout = path.Join(dir, strings.TrimPrefix(base, ".wh.")), true
	}
	// An applier follows symlinks in an entry's parent directories: one of
	// the agent's own is refused (its target could be anything), one of
	// the tool image's is followed here too.
	for d := dir; d != "" && d != "."; d = path.Dir(d) {
		if p.links[d] {
			return refuse(fmt.Sprintf("its parent /%s is a symlink an agent layer made: an agent layer writes through no symlink of its own", d))
		}
	}
	if n, ok := p.view.Resolve(dir); ok && dir != "" && n.Path != dir {
		real := path.Join(n.Path, path.Base(target))
		if target == dir {
			real = n.Path
		}
		if rule := p.protected(real); rule != "" {
			return refuse(rule + " (reached through the tool image's symlink /" + dir + ")")
		}
		if p.isAncestor(real) && (whiteout || h.Typeflag != tar.TypeDir) {
			return refuse("reached through the tool image's symlink /" + dir + ", this leads to the runtime, the accounts, PATH or a toolchain: an agent layer does not replace or remove it")
		}
	}
	if rule := p.protected(target); rule != "" {
		return refuse(rule)
	}
	if whiteout && p.isAncestor(target) {
		return refuse("a whiteout of a directory that holds the runtime, the accounts, the loader's settings, PATH or a toolchain: an agent layer removes nothing of the tool image's there")
	}
	if !whiteout && p.isAncestor(name) {
		if h.Typeflag != tar.TypeDir {
			return refuse("this directory leads to the runtime, the accounts, PATH or a toolchain: an agent layer does not replace it with a file or a symlink")
		}
		if h.Uid != 0 || h.Mode&0o022 != 0 {
			return refuse(fmt.Sprintf("this directory leads to the runtime, the accounts, PATH or a toolchain: an agent layer leaves it root's and writable by root only (it has uid %d, mode %04o)", h.Uid, h.Mode&0o7777))
		}
	}
	if !whiteout {
		switch h.Typeflag {
		case tar.TypeChar, tar.TypeBlock:
			return refuse("a device file: an agent layer holds none")
		case tar.TypeLink:
			if !files[cleanEntry(h.Linkname)] {
				return refuse(fmt.Sprintf("a hard link to /%s, which is not a file of this layer: an agent layer links only to its own files", cleanEntry(h.Linkname)))
			}
		}
		if h.Typeflag != tar.TypeDir && h.Mode&(0o4000|0o2000) != 0 {
			return refuse(fmt.Sprintf("a setuid or setgid file (mode %04o): the agent runs as model and gets no way back to root", h.Mode&0o7777))
		}
		for k := range h.PAXRecords {
			if k == "SCHILY.xattr.security.capability" {
				return refuse("a file with capabilities (security.capability), which act as setuid: an agent layer sets none")
			}
		}
	}
	if target != "" {
		tdir, tbase := path.Split(target)
		if err := p.checkShadow(ctx, strings.TrimSuffix(tdir, "/"), tbase, refuse); err != nil {
			return err
		}
	}
	return nil
}

// checkShadow refuses an entry of a PATH directory that replaces, removes
// or hides a command the tool image has in any PATH directory: the
// grader's scripts find programs through PATH.
func (p *Policy) checkShadow(ctx context.Context, dir, base string, refuse func(string) error) error {
	if !p.pathDirs[dir] {
		return nil
	}
	v, err := p.lower(ctx)
	if err != nil {
		return err
	}
	for _, d := range keysOf(p.pathDirs) {
		if n, ok := v.Resolve(path.Join(d, base)); ok && !n.Header.IsDir() {
			return refuse(fmt.Sprintf("the tool image has the command /%s, which the grader's scripts run through PATH: an agent layer adds new commands only", n.Path))
		}
	}
	return nil
}

// CheckConfig checks the agent image's config against the tool image's:
// the entrypoint (CheckConfig), then the ENV allow-list (the tool image's
// variables unchanged; PATH only lengthened at its end; else only AGENT_*
// and allowedEnvNames: the grader's scripts inherit this environment),
// USER (the tool image's or model) and VOLUME (none added).
func (p *Policy) CheckConfig(agent v1.Config) error {
	if err := CheckConfig(p.tool.Config, agent); err != nil {
		return err
	}
	refuse := func(entry, rule string) error {
		return &RefusedError{Layer: "the config", Entry: entry, Rule: rule}
	}
	had := map[string]string{}
	for _, kv := range p.tool.Config.Env {
		k, v, _ := strings.Cut(kv, "=")
		had[k] = v
	}
	seen := map[string]bool{}
	for _, kv := range agent.Env {
		k, v, _ := strings.Cut(kv, "=")
		seen[k] = true
		old, ok := had[k]
		switch {
		case ok && old == v:
		case k == "PATH" && ok:
			extra, isPrefix := strings.CutPrefix(v, old+":")
			if !isPrefix {
				return refuse("ENV PATH", "an agent may only add directories at the end of the tool image's PATH ("+old+"): the grader's scripts must find the toolchain's programs first")
			}
			for _, d := range strings.Split(extra, ":") {
				if !path.IsAbs(d) {
					return refuse("ENV PATH", fmt.Sprintf("%q is not an absolute directory: a check would look for programs in the directory it runs in", d))
				}
			}
		case ok:
			return refuse("ENV "+k, "the tool image sets "+k+" and the grader's scripts inherit it: an agent image does not change it")
		case strings.HasPrefix(k, "AGENT_") || slices.Contains(allowedEnvNames, k):
		default:
			return refuse("ENV "+k, "not on the allow-list (AGENT_*, "+strings.Join(allowedEnvNames, ", ")+", PATH lengthened at its end): the grader's scripts inherit the image's environment; set it in the agent's command or script instead")
		}
	}
	for k := range had {
		if !seen[k] {
			return refuse("ENV "+k, "the tool image sets "+k+" and the agent image drops it: an agent image does not change it")
		}
	}
	if agent.User != p.tool.Config.User && !slices.Contains(allowedUsers, agent.User) {
		return refuse("USER "+agent.User, "an agent image's USER is the tool image's or model: the entrypoint starts as root and runs the agent as model")
	}
	for v := range agent.Volumes {
		if _, ok := p.tool.Config.Volumes[v]; !ok {
			return refuse("VOLUME "+v, "a volume would hide the image's files at that path at run time: an agent image declares none")
		}
	}
	return nil
}
