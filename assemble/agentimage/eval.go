package agentimage

import (
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	"github.com/moby/sys/signal"
)

// defaultPathEnv is the PATH BuildKit gives an image whose base has none.
const defaultPathEnv = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// defaultShell is the shell of shell-form CMD and ENTRYPOINT when the image
// sets no SHELL.
var defaultShell = []string{"/bin/sh", "-c"}

// Variables BuildKit reserves for its SBOM scanner: ARG never puts them in
// the environment.
var nonEnvArgs = map[string]bool{"BUILDKIT_SBOM_SCAN_CONTEXT": true, "BUILDKIT_SBOM_SCAN_STAGE": true}

// envList is an ordered environment with replace-or-append updates, like
// BuildKit's llb.EnvList.
type envList []string

func (e envList) getter() shell.EnvGetter { return shell.EnvsFromSlice(e) }

func (e envList) get(k string) (string, bool) {
	for i := len(e) - 1; i >= 0; i-- {
		if key, v, _ := strings.Cut(e[i], "="); key == k {
			return v, true
		}
	}
	return "", false
}

// add replaces k's value in place, or appends it: the order of an image's
// Env is kept, as Docker and BuildKit keep it.
func (e envList) add(k, v string) envList {
	for i, kv := range e {
		if key, _, _ := strings.Cut(kv, "="); key == k {
			out := slices.Clone(e)
			out[i] = k + "=" + v
			return out
		}
	}
	return append(slices.Clone(e), k+"="+v)
}

// step is one evaluated instruction after FROM: its history entry and, for
// COPY, ADD and WORKDIR, the layer to write.
type step struct {
	in        *instruction
	createdBy string
	op        *layerOp // nil for a config-only instruction
}

// layerOp is a COPY, ADD or WORKDIR with its variables expanded.
type layerOp struct {
	line int
	kind string // "copy", "add" or "workdir"
	// srcs are the source paths as expanded; fromWorkspace says they are
	// in the workspace context rather than the build context.
	srcs          []string
	fromWorkspace bool
	// dest is the absolute destination, with a trailing "/" kept (COPY)
	// or the new working directory (WORKDIR).
	dest string
	// chown is --chown as expanded (COPY, ADD) or the image's USER when
	// WORKDIR runs (its new directories belong to that user).
	chown string
	// chmod is --chmod, or nil.
	chmod *uint32
	// chmodText is --chmod as written, for history.
	chmodText string
}

// evaluator plays the Dockerfile's instructions over an image config, as
// BuildKit's dispatcher does, without touching any file.
type evaluator struct {
	p   *Plan
	lex *shell.Lex
	// env is what variables expand from: the image's Env, then ARG and
	// ENV values in order.
	env envList
	cfg v1.Config
	// cmdSet says a CMD came earlier in this Dockerfile, so ENTRYPOINT
	// keeps it.
	cmdSet bool
	// dry skips checks of values whose variables may come from the tool
	// image (the planner runs without it).
	dry bool
}

// evaluate plays the plan over base, the tool image's config file, for the
// target platform; build is BuildKit's build platform (BUILDPLATFORM).
func (p *Plan) evaluate(base *v1.ConfigFile, build v1.Platform, dry bool) (v1.Config, []step, error) {
	target := v1.Platform{OS: base.OS, Architecture: base.Architecture, Variant: base.Variant}
	if target.OS == "" {
		target.OS = "linux"
	}
	global, err := p.globalArgs(target, build)
	if err != nil {
		return v1.Config{}, nil, err
	}
	ev := &evaluator{p: p, lex: shell.NewLex(p.escape), cfg: *base.Config.DeepCopy(), dry: dry}
	// BuildKit makes sure PATH is set, in the image too.
	if _, ok := envList(ev.cfg.Env).get("PATH"); !ok {
		ev.cfg.Env = append(ev.cfg.Env, "PATH="+defaultPathEnv)
	}
	ev.env = slices.Clone(envList(ev.cfg.Env))
	var steps []step
	for _, in := range p.stage {
		s, err := ev.dispatch(in, global)
		if err != nil {
			return v1.Config{}, nil, p.lineError(in.line, err)
		}
		steps = append(steps, s)
	}
	return ev.cfg, steps, nil
}

// globalArgs returns BuildKit's predefined platform arguments and the ARGs
// before FROM, overridden by the build arguments.
func (p *Plan) globalArgs(target, build v1.Platform) (envList, error) {
	stage := p.stageName
	if stage == "" {
		stage = "default"
	}
	predefined := [][2]string{
		{"BUILDPLATFORM", formatPlatform(build)},
		{"BUILDOS", build.OS},
		{"BUILDOSVERSION", build.OSVersion},
		{"BUILDARCH", build.Architecture},
		{"BUILDVARIANT", build.Variant},
		{"TARGETPLATFORM", formatPlatform(target)},
		{"TARGETOS", target.OS},
		{"TARGETOSVERSION", target.OSVersion},
		{"TARGETARCH", target.Architecture},
		{"TARGETVARIANT", target.Variant},
		{"TARGETSTAGE", stage},
	}
	var env envList
	for _, kv := range predefined {
		v := kv[1]
		if ov, ok := p.buildArgs[kv[0]]; ok {
			v = ov
		}
		env = env.add(kv[0], v)
	}
	lex := shell.NewLex(p.escape)
	for _, in := range p.meta {
		args, err := argPairs(in)
		if err != nil {
			return nil, p.lineError(in.line, err)
		}
		for _, a := range args {
			if v, ok := p.buildArgs[a.key]; ok {
				env = env.add(a.key, v)
				continue
			}
			if a.value == nil {
				continue
			}
			v, _, err := lex.ProcessWord(*a.value, env.getter())
			if err != nil {
				return nil, p.lineError(in.line, err)
			}
			env = env.add(a.key, v)
		}
	}
	return env, nil
}

func formatPlatform(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

type argPair struct {
	key   string
	value *string
}

func argPairs(in *instruction) ([]argPair, error) {
	if len(in.args) == 0 {
		return nil, errors.New("ARG requires at least one argument")
	}
	var out []argPair
	for _, a := range in.args {
		k, v, hasValue := strings.Cut(a, "=")
		if k == "" {
			return nil, errors.New("ARG names can not be blank")
		}
		p := argPair{key: k}
		if hasValue {
			p.value = &v
		}
		out = append(out, p)
	}
	return out, nil
}

// expand expands word with the current environment. unresolved reports a
// variable that is not set, which in a dry run may still come from the tool
// image.
func (ev *evaluator) expand(word string) (value string, unresolved bool, err error) {
	res, err := ev.lex.ProcessWordWithMatches(word, ev.env.getter())
	if err != nil {
		return "", false, err
	}
	return res.Result, len(res.Unmatched) > 0, nil
}

func (ev *evaluator) dispatch(in *instruction, global envList) (step, error) {
	s := step{in: in}
	switch in.cmd {
	case "arg":
		args, err := argPairs(in)
		if err != nil {
			return s, err
		}
		var commit []string
		for _, a := range args {
			v, hasValue := ev.p.buildArgs[a.key]
			switch {
			case hasValue:
				a.value = &v
			case a.value != nil:
				x, _, err := ev.expand(*a.value)
				if err != nil {
					return s, err
				}
				a.value = &x
			default:
				if g, ok := global.get(a.key); ok {
					a.value = &g
				}
			}
			c := a.key
			if a.value != nil {
				if !nonEnvArgs[a.key] {
					ev.env = ev.env.add(a.key, *a.value)
				}
				c += "=" + *a.value
			}
			commit = append(commit, c)
		}
		s.createdBy = "ARG " + strings.Join(commit, " ")

	case "env", "label":
		kvs, err := keyValues(in)
		if err != nil {
			return s, err
		}
		// Every pair expands with the environment from before the
		// instruction: ENV A=1 B=$A sees the old A.
		for i, kv := range kvs {
			for j := range kv {
				if kvs[i][j], _, err = ev.expand(kv[j]); err != nil {
					return s, err
				}
			}
		}
		commit := strings.ToUpper(in.cmd)
		for _, kv := range kvs {
			commit += " " + kv[0] + "=" + kv[1]
			if in.cmd == "env" {
				ev.env = ev.env.add(kv[0], kv[1])
				ev.cfg.Env = envList(ev.cfg.Env).add(kv[0], kv[1])
			} else {
				if ev.cfg.Labels == nil {
					ev.cfg.Labels = map[string]string{}
				}
				ev.cfg.Labels[kv[0]] = kv[1]
			}
		}
		s.createdBy = commit

	case "workdir":
		if len(in.args) != 1 {
			return s, errors.New("WORKDIR requires exactly one argument")
		}
		p, _, err := ev.expand(in.args[0])
		if err != nil {
			return s, err
		}
		wd := normalizePath(ev.cfg.WorkingDir, p, false)
		ev.cfg.WorkingDir = wd
		s.createdBy = "WORKDIR " + wd
		if wd != "/" {
			s.op = &layerOp{line: in.line, kind: "workdir", dest: wd, chown: ev.cfg.User}
		}

	case "user":
		if len(in.args) != 1 {
			return s, errors.New("USER requires exactly one argument")
		}
		u, _, err := ev.expand(in.args[0])
		if err != nil {
			return s, err
		}
		ev.cfg.User = u
		s.createdBy = "USER " + u

	case "cmd":
		args := commandLine(in)
		if !in.json {
			args = ev.withShell(args)
		}
		ev.cfg.Cmd = args
		ev.cfg.ArgsEscaped = true
		ev.cmdSet = true
		s.createdBy = fmt.Sprintf("CMD %q", args)

	case "entrypoint":
		args := commandLine(in)
		if len(args) == 0 {
			args = nil
		}
		if !in.json {
			args = ev.withShell(args)
		}
		ev.cfg.Entrypoint = args
		// As in Docker, a new ENTRYPOINT drops the CMD it inherited.
		if !ev.cmdSet {
			ev.cfg.Cmd = nil
		}
		s.createdBy = fmt.Sprintf("ENTRYPOINT %q", args)

	case "shell":
		args := commandLine(in)
		switch {
		case len(args) == 0:
			return s, errors.New("SHELL requires at least one argument")
		case !in.json:
			return s, errors.New("SHELL requires the arguments to be in JSON form")
		}
		ev.cfg.Shell = args
		s.createdBy = fmt.Sprintf("SHELL %v", args)

	case "stopsignal":
		if len(in.args) != 1 {
			return s, errors.New("STOPSIGNAL requires exactly one argument")
		}
		sig, unresolved, err := ev.expand(in.args[0])
		if err != nil {
			return s, err
		}
		if !(ev.dry && unresolved) {
			if _, err := signal.ParseSignal(sig); err != nil {
				return s, err
			}
		}
		ev.cfg.StopSignal = sig
		s.createdBy = "STOPSIGNAL " + sig

	case "expose":
		if len(in.args) == 0 {
			return s, errors.New("EXPOSE requires at least one argument")
		}
		raw := slices.Clone(in.args)
		slices.Sort(raw)
		var ports []string
		for _, r := range raw {
			words, err := ev.lex.ProcessWords(r, ev.env.getter())
			if err != nil {
				return s, err
			}
			for _, w := range words {
				ps, err := parsePort(w)
				if err != nil {
					return s, err
				}
				ports = append(ports, ps...)
			}
		}
		if ev.cfg.ExposedPorts == nil {
			ev.cfg.ExposedPorts = map[string]struct{}{}
		}
		for _, p := range ports {
			ev.cfg.ExposedPorts[p] = struct{}{}
		}
		s.createdBy = fmt.Sprintf("EXPOSE %v", ports)

	case "copy", "add":
		op, createdBy, err := ev.copyOp(in)
		if err != nil {
			return s, err
		}
		s.op, s.createdBy = op, createdBy

	default:
		// The planner lets nothing else through.
		return s, fmt.Errorf("%s cannot be assembled natively", in.name())
	}
	return s, nil
}

func (ev *evaluator) withShell(args []string) []string {
	sh := defaultShell
	if len(ev.cfg.Shell) > 0 {
		sh = ev.cfg.Shell
	}
	return append(slices.Clone(sh), strings.Join(args, " "))
}

func (ev *evaluator) copyOp(in *instruction) (*layerOp, string, error) {
	flags, err := parseFlags(in)
	if err != nil {
		return nil, "", err
	}
	if len(in.args) < 2 {
		return nil, "", fmt.Errorf("%s requires at least two arguments, but only one was provided. Destination could not be determined", in.name())
	}
	op := &layerOp{line: in.line, kind: in.cmd, fromWorkspace: flags.get("from") == workspaceContext}
	if op.chown, _, err = ev.expand(flags.get("chown")); err != nil {
		return nil, "", err
	}
	chmod, unresolved, err := ev.expand(flags.get("chmod"))
	if err != nil {
		return nil, "", err
	}
	if chmod != "" {
		m, err := parseChmod(chmod)
		switch {
		case errors.Is(err, ErrNeedsBuildKit) && ev.dry && unresolved:
			// It may be octal once the tool image's variables are known.
		case err != nil:
			return nil, "", err
		default:
			op.chmod = &m
		}
	}
	op.chmodText = chmod
	for _, src := range in.args[:len(in.args)-1] {
		x, _, err := ev.expand(src)
		if err != nil {
			return nil, "", err
		}
		if in.cmd == "add" && isRemote(x) {
			return nil, "", needsBuildKit("ADD %s downloads", x)
		}
		if _, err := cleanSource(x); err != nil {
			return nil, "", fmt.Errorf("%s source %q: %w", in.name(), x, err)
		}
		op.srcs = append(op.srcs, x)
	}
	rawDest, _, err := ev.expand(in.args[len(in.args)-1])
	if err != nil {
		return nil, "", err
	}
	dest := rawDest
	if dest == "." || dest == "" {
		dest = "./"
	}
	op.dest = normalizePath(ev.cfg.WorkingDir, dest, true)

	commit := in.name()
	if op.chown != "" {
		commit += " --chown=" + op.chown
	}
	if chmod != "" {
		commit += " --chmod=" + chmod
	}
	for _, s := range op.srcs {
		commit += " " + s
	}
	commit += " " + rawDest + " # buildkit"
	return op, commit, nil
}

// normalizePath resolves p against the directory parent as BuildKit's
// system.NormalizePath does: an absolute p is kept as written, a relative
// one is joined to parent; with keepSlash a trailing "/" or "/." stays.
func normalizePath(parent, p string, keepSlash bool) string {
	if parent == "" {
		parent = "/"
	}
	if !path.IsAbs(parent) {
		parent = path.Join("/", parent)
	}
	orig := p
	if p == "" {
		p = parent
	}
	if !path.IsAbs(p) {
		p = path.Join(parent, p)
	}
	if keepSlash {
		if strings.HasSuffix(orig, "/") && !strings.HasSuffix(p, "/") {
			p += "/"
		} else if strings.HasSuffix(orig, "/.") {
			if p != "/" {
				p += "/"
			}
			p += "."
		}
	}
	return p
}

// parseChmod reads --chmod: an octal mode up to 07777. A symbolic mode
// (u+x) is BuildKit's business.
func parseChmod(s string) (uint32, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	bad := fmt.Errorf("invalid chmod parameter: '%v'. it should be octal string and between 0 and 07777", s)
	if err == nil {
		if m > 0o7777 {
			return 0, bad
		}
		return uint32(m), nil
	}
	if strings.Trim(s, "0123456789") == "" {
		return 0, bad
	}
	return 0, needsBuildKit("--chmod=%s is a symbolic mode", s)
}

// isRemote tells an ADD source BuildKit downloads (a URL or a git
// repository) from a local path.
func isRemote(src string) bool {
	for _, p := range []string{"http://", "https://", "git@", "git://", "ssh://"} {
		if strings.HasPrefix(src, p) {
			return true
		}
	}
	return false
}

// cleanSource turns a COPY source into a path relative to its context's
// root ("" is the root). BuildKit would clamp "../x" to "x"; here climbing
// above the root is an error, because it never means what it says.
func cleanSource(src string) (string, error) {
	depth := 0
	for _, c := range strings.Split(src, "/") {
		switch c {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return "", errors.New("it is outside the context: a COPY reads only files below its context's root")
			}
		default:
			depth++
		}
	}
	return strings.TrimPrefix(path.Clean("/"+src), "/"), nil
}

// parsePort turns an EXPOSE word ([ip:][hostPort:]port[-end][/proto]) into
// "port/proto" entries, as BuildKit does.
func parsePort(raw string) ([]string, error) {
	parts := strings.Split(raw, ":")
	var ip, hostPort, containerPort string
	switch n := len(parts); n {
	case 1:
		containerPort = parts[0]
	case 2:
		hostPort, containerPort = parts[0], parts[1]
	case 3:
		ip, hostPort, containerPort = parts[0], parts[1], parts[2]
	default:
		ip, hostPort, containerPort = strings.Join(parts[:n-2], ":"), parts[n-2], parts[n-1]
	}
	port, proto, _ := strings.Cut(containerPort, "/")
	if port == "" {
		return nil, fmt.Errorf("invalid port: %q: no port specified", raw)
	}
	switch strings.ToLower(proto) {
	case "":
		proto = "tcp"
	case "tcp", "udp", "sctp":
	default:
		return nil, fmt.Errorf("invalid port: %q: invalid proto: %s", raw, proto)
	}
	if ip != "" && ip[0] == '[' {
		h, _, err := net.SplitHostPort(ip + ":")
		if err != nil {
			return nil, fmt.Errorf("invalid IP address %v", ip)
		}
		ip = h
	}
	if ip != "" && net.ParseIP(ip) == nil {
		return nil, errors.New("invalid IP address: " + ip)
	}
	start, end, err := portRange(port)
	if err != nil {
		return nil, errors.New("invalid containerPort: " + port)
	}
	if hostPort != "" {
		hs, he, err := portRange(hostPort)
		if err != nil {
			return nil, errors.New("invalid hostPort: " + hostPort)
		}
		if end-start != he-hs && end != start {
			return nil, fmt.Errorf("invalid ranges specified for container and host Ports: %s and %s", port, hostPort)
		}
	}
	var out []string
	for p := start; p <= end; p++ {
		out = append(out, strconv.Itoa(p)+"/"+strings.ToLower(proto))
	}
	return out, nil
}

func portRange(s string) (int, int, error) {
	if s == "" {
		return 0, 0, errors.New("empty port")
	}
	a, b, isRange := strings.Cut(s, "-")
	start, err := portNumber(a)
	if err != nil {
		return 0, 0, err
	}
	if !isRange || a == b {
		return start, start, nil
	}
	end, err := portNumber(b)
	if err != nil {
		return 0, 0, err
	}
	if end < start {
		return 0, 0, errors.New("invalid port range")
	}
	return start, end, nil
}

func portNumber(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 0)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port %q", s)
	}
	return int(n), nil
}
