package agentimage

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/moby/buildkit/frontend/dockerfile/shell"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
)

// maxDockerfile bounds an agent's Dockerfile, which is read whole.
const maxDockerfile = 1 << 20

// Names of the build contexts an agent Dockerfile sees.
const (
	// BaseContext is the named context the Dockerfile starts FROM: the
	// tool image.
	BaseContext = "ssebench-agent"
	// workspaceContext is the named context that holds the SSEBench home.
	workspaceContext = "workspace"
	// WorkspaceContext is the named context COPY --from reads the
	// SSEBench home from.
	WorkspaceContext = workspaceContext
)

// Plan is how an agent's Dockerfile is built: natively (Assemble) or by
// BuildKit (BuildKit), and why.
type Plan struct {
	// Dockerfile is the path of the Dockerfile, for messages.
	Dockerfile string
	// Native is true when Assemble can build the Dockerfile.
	Native bool
	// Reason says, when Native is false, which instruction needs BuildKit
	// and why, e.g. "line 3: RUN needs a container".
	Reason string
	// Steps lists the Dockerfile's instructions in order.
	Steps []Step

	escape    rune
	buildArgs map[string]string
	meta      []*instruction // ARGs before FROM
	stage     []*instruction // after FROM
	stageName string
}

// Step is one instruction of a Plan.
type Step struct {
	// Line is the instruction's first line.
	Line int
	// Instruction is its keyword in upper case ("COPY").
	Instruction string
	// Text is the instruction as written.
	Text string
	// Effect is what the native path makes of it: "base", "argument",
	// "config", "layer", or "BuildKit" for an instruction it cannot do.
	Effect string
}

// PlanOption configures NewPlan and LoadPlan.
type PlanOption func(*planOptions) error

type planOptions struct {
	dockerfile string
}

// WithDockerfilePath names the Dockerfile in messages. The default value
// is "Dockerfile" (LoadPlan passes the real path).
func WithDockerfilePath(p string) PlanOption {
	return func(o *planOptions) error { o.dockerfile = p; return nil }
}

// NewPlan parses dockerfile (an agent's Dockerfile) with BuildKit's parser
// and decides whether Assemble can build it; buildArgs are the --build-arg
// values.
//
// A Dockerfile no builder can use is an *Error naming the line: one that
// does not start FROM ssebench-agent (after global ARGs), has a second
// FROM, an unknown instruction, a COPY source outside its context, or an
// argument BuildKit would reject. A Dockerfile that only BuildKit can build
// is not an error: the plan says so in Native and Reason.
func NewPlan(dockerfile []byte, buildArgs map[string]string, opts ...PlanOption) (*Plan, error) {
	var o planOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	p := &Plan{Dockerfile: o.dockerfile, buildArgs: maps.Clone(buildArgs), Native: true}
	if p.buildArgs == nil {
		p.buildArgs = map[string]string{}
	}
	instrs, escape, err := parseDockerfile(dockerfile)
	if err != nil {
		return nil, p.lineError(0, err)
	}
	p.escape = escape

	var from *instruction
	for _, in := range instrs {
		st := Step{Line: in.line, Instruction: in.name(), Text: in.original}
		reason, err := p.classify(in, from, &st)
		if err != nil {
			return nil, p.lineError(in.line, err)
		}
		switch {
		case in.cmd == "from":
			from = in
		case from == nil:
			p.meta = append(p.meta, in)
		default:
			p.stage = append(p.stage, in)
		}
		if reason != "" {
			st.Effect = "BuildKit"
			if p.Native {
				p.Native = false
				p.Reason = fmt.Sprintf("line %d: %s", in.line, reason)
			}
		}
		p.Steps = append(p.Steps, st)
	}
	if from == nil {
		return nil, p.lineError(0, errors.New("no FROM instruction: an agent Dockerfile starts FROM "+BaseContext))
	}
	if err := p.checkFrom(from); err != nil {
		return nil, p.lineError(from.line, err)
	}
	if p.Native {
		// A dry run finds the errors BuildKit would report, and values
		// (a symbolic --chmod) that only it handles.
		base := &v1.ConfigFile{OS: "linux", Architecture: runtime.GOARCH}
		if _, _, err := p.evaluate(base, hostPlatform(), true); err != nil {
			var e *Error
			if errors.Is(err, ErrNeedsBuildKit) && errors.As(err, &e) {
				p.Native = false
				p.Reason = fmt.Sprintf("line %d: %s", e.Line, strings.TrimSuffix(e.Err.Error(), ": "+ErrNeedsBuildKit.Error()))
				return p, nil
			}
			return nil, err
		}
	}
	return p, nil
}

// AddsLayers reports whether a native plan writes a layer (a COPY, ADD or
// WORKDIR), so needs the tool image's filesystem.
func (p *Plan) AddsLayers() bool {
	for _, s := range p.Steps {
		if s.Effect == "layer" {
			return true
		}
	}
	return false
}

// LoadPlan reads the Dockerfile of the agent folder dir and plans it (see
// NewPlan). It also looks at the sources of ADD in the folder: ADD unpacks
// a local tar archive, which BuildKit does.
func LoadPlan(dir string, buildArgs map[string]string, opts ...PlanOption) (*Plan, error) {
	df := filepath.Join(dir, "Dockerfile")
	// Read without leaving the folder: a Dockerfile that is a symlink to
	// a host file must not be read (and echoed in a parse error).
	b, err := safefile.Read(dir, "Dockerfile", maxDockerfile)
	if err != nil {
		return nil, fmt.Errorf("reading the agent's Dockerfile: %w", err)
	}
	p, err := NewPlan(b, buildArgs, append([]PlanOption{WithDockerfilePath(df)}, opts...)...)
	if err != nil {
		return nil, err
	}
	if p.Native {
		if line, reason := p.findArchive(dir); reason != "" {
			p.Native = false
			p.Reason = fmt.Sprintf("line %d: %s", line, reason)
			for i := range p.Steps {
				if p.Steps[i].Line == line {
					p.Steps[i].Effect = "BuildKit"
				}
			}
		}
	}
	return p, nil
}

func hostPlatform() v1.Platform {
	return v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
}

// classify checks one instruction and returns why it needs BuildKit ("" if
// it does not). from is the FROM seen so far, if any.
func (p *Plan) classify(in *instruction, from *instruction, st *Step) (string, error) {
	if from == nil && in.cmd != "from" && in.cmd != "arg" {
		if _, known := knownInstructions[in.cmd]; !known {
			return "", fmt.Errorf("unknown instruction: %s", in.name())
		}
		return "", fmt.Errorf("%s comes before FROM %s: an agent Dockerfile starts FROM %s (only ARG may come first)", in.name(), BaseContext, BaseContext)
	}
	switch in.cmd {
	case "from":
		if from != nil {
			return "", fmt.Errorf("a second FROM (the first is on line %d): an agent Dockerfile has one stage, FROM %s", from.line, BaseContext)
		}
		st.Effect = "base"
		flags, err := parseFlags(in)
		if err != nil {
			return "", err
		}
		if flags.has("platform") {
			return "FROM --platform is left to BuildKit", nil
		}
		return "", nil
	case "arg":
		st.Effect = "argument"
		if from == nil {
			_, err := argPairs(in)
			return "", err
		}
		st.Effect = "config"
		return "", nil
	case "env", "label", "user", "cmd", "entrypoint", "expose", "shell", "stopsignal":
		st.Effect = "config"
		if len(in.flags) > 0 {
			return "", fmt.Errorf("%s: unknown flag: %s", in.name(), in.flags[0])
		}
		return "", checkInstruction(in)
	case "workdir":
		st.Effect = "layer"
		return "", nil
	case "copy", "add":
		st.Effect = "layer"
		return p.classifyCopy(in)
	case "run":
		return "RUN needs a container", nil
	case "volume", "healthcheck", "onbuild", "maintainer":
		return in.name() + " is not assembled natively", nil
	}
	return "", fmt.Errorf("unknown instruction: %s", in.name())
}

var knownInstructions = map[string]struct{}{
	"add": {}, "arg": {}, "cmd": {}, "copy": {}, "entrypoint": {}, "env": {}, "expose": {}, "from": {},
	"healthcheck": {}, "label": {}, "maintainer": {}, "onbuild": {}, "run": {}, "shell": {},
	"stopsignal": {}, "user": {}, "volume": {}, "workdir": {},
}

func (p *Plan) classifyCopy(in *instruction) (string, error) {
	flags, err := parseFlags(in)
	if err != nil {
		return "", err
	}
	if len(in.args) < 2 {
		return "", fmt.Errorf("%s requires at least two arguments, but only one was provided. Destination could not be determined", in.name())
	}
	// Sources outside the context are refused whoever builds the file.
	for _, src := range in.args[:len(in.args)-1] {
		if strings.HasPrefix(src, "<<") || isRemote(src) || strings.Contains(src, "$") {
			continue
		}
		if _, err := cleanSource(src); err != nil {
			return "", fmt.Errorf("%s source %q: %w", in.name(), src, err)
		}
	}
	for _, f := range []string{"link", "parents", "exclude", "keep-git-dir", "checksum", "unpack"} {
		if flags.has(f) {
			return fmt.Sprintf("%s --%s is left to BuildKit", in.name(), f), nil
		}
	}
	if from := flags.get("from"); flags.has("from") && from != workspaceContext {
		return fmt.Sprintf("%s --from=%s copies from an image or stage", in.name(), from), nil
	}
	if len(in.heredocs) > 0 {
		return in.name() + " of a here-document is left to BuildKit", nil
	}
	for _, src := range in.args[:len(in.args)-1] {
		if in.cmd == "add" && isRemote(src) {
			return fmt.Sprintf("ADD %s downloads", src), nil
		}
	}
	return "", nil
}

// checkFrom makes sure FROM names the tool image, after expanding the
// global ARGs as BuildKit does.
func (p *Plan) checkFrom(from *instruction) error {
	if len(from.args) != 1 && !(len(from.args) == 3 && strings.EqualFold(from.args[1], "as")) {
		return errors.New("FROM requires either one or three arguments")
	}
	if len(from.args) == 3 {
		p.stageName = strings.ToLower(from.args[2])
	}
	global, err := p.globalArgs(hostPlatform(), hostPlatform())
	if err != nil {
		return err
	}
	base, _, err := shell.NewLex(p.escape).ProcessWord(from.args[0], global.getter())
	if err != nil {
		return err
	}
	if base != BaseContext {
		return fmt.Errorf("FROM %s: an agent Dockerfile starts FROM %s (the tool image)", base, BaseContext)
	}
	return nil
}

// Explain describes the plan for humans (ssebench assemble agent
// --explain): which builder, why, and what each instruction becomes.
func (p *Plan) Explain() string {
	var b strings.Builder
	name := p.Dockerfile
	if name == "" {
		name = "Dockerfile"
	}
	if p.Native {
		fmt.Fprintf(&b, "%s: assembled natively (no instruction needs a container)\n", name)
	} else {
		fmt.Fprintf(&b, "%s: built with BuildKit (%s)\n", name, p.Reason)
	}
	width := 0
	for _, s := range p.Steps {
		width = max(width, len(fmt.Sprint(s.Line)))
	}
	for _, s := range p.Steps {
		effect := s.Effect
		switch {
		case !p.Native:
			effect = ""
		case effect == "base":
			effect = "the tool image"
		case effect == "argument":
			effect = "global argument"
		case effect == "layer":
			effect = "one layer"
		case effect == "config":
			effect = "image config"
		}
		text := s.Text
		if len(text) > 72 {
			text = text[:69] + "..."
		}
		if effect != "" {
			fmt.Fprintf(&b, "  line %*d  %-72s  -> %s\n", width, s.Line, text, effect)
		} else {
			fmt.Fprintf(&b, "  line %*d  %s\n", width, s.Line, text)
		}
	}
	return b.String()
}
