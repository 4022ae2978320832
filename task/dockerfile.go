package task

import (
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// RegistryArg is the build argument that carries REGISTRY into a task's
// Dockerfile: its last FROM must be ${SSEBENCH_REGISTRY}/<base>.
const RegistryArg = "SSEBENCH_REGISTRY"

// ImageRoot is where a case image holds the task files, copied from sse/.
const ImageRoot = contract.TaskRoot

// registryMark stands for ${SSEBENCH_REGISTRY} while the last FROM is
// expanded, so that the registry prefix can be recognised after the other
// global ARG defaults are substituted. No image name contains a NUL.
const registryMark = "\x00registry\x00"

var (
	sha256Digest   = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	parseErrorLine = regexp.MustCompile(`^dockerfile parse error on line \d+: `)
)

// stage is one FROM of a Dockerfile and the instructions under it.
type stage struct {
	line  int    // line of the FROM
	image string // the FROM's image, unexpanded
	name  string // the AS name, lowercased, or ""
	cmds  []*parser.Node
}

// dockerfile holds what the task checks need from a parsed Dockerfile.
//
// It works on BuildKit's syntax tree rather than on its instructions
// package, which would pull four more modules into go.mod for what is a
// walk over FROM, ARG, WORKDIR and COPY.
type dockerfile struct {
	stages   []stage
	metaArgs []*parser.Node // ARG instructions before the first FROM
	escape   rune
}

func parseDockerfile(r io.Reader) (*dockerfile, error) {
	res, err := parser.Parse(r)
	if err != nil {
		return nil, dockerfileError(err)
	}
	d := &dockerfile{escape: res.EscapeToken}
	for _, n := range res.AST.Children {
		switch strings.ToLower(n.Value) {
		case "from":
			args := words(n)
			st := stage{line: n.StartLine}
			switch {
			case len(args) == 1:
			case len(args) == 3 && strings.EqualFold(args[1], "as"):
				st.name = strings.ToLower(args[2])
			default:
				return nil, Problem{Line: n.StartLine, Msg: "FROM requires either one or three arguments"}
			}
			st.image = args[0]
			d.stages = append(d.stages, st)
		case "arg":
			if len(d.stages) == 0 {
				d.metaArgs = append(d.metaArgs, n)
			} else {
				d.stages[len(d.stages)-1].cmds = append(d.stages[len(d.stages)-1].cmds, n)
			}
		default:
			if len(d.stages) == 0 {
				return nil, Problem{Line: n.StartLine, Msg: fmt.Sprintf("%s before the first FROM (only ARG may come first)", strings.ToUpper(n.Value))}
			}
			d.stages[len(d.stages)-1].cmds = append(d.stages[len(d.stages)-1].cmds, n)
		}
	}
	if len(d.stages) == 0 {
		return nil, Problem{Msg: "has no FROM instruction"}
	}
	return d, nil
}

// words returns the arguments of an instruction.
func words(n *parser.Node) []string {
	var out []string
	for a := n.Next; a != nil; a = a.Next {
		out = append(out, a.Value)
	}
	return out
}

// dockerfileError turns a BuildKit parse error into a Problem with the
// line it names.
func dockerfileError(err error) Problem {
	p := Problem{Msg: err.Error()}
	var le *parser.LocationError
	if errors.As(err, &le) && len(le.Locations) > 0 && len(le.Locations[0]) > 0 {
		p.Line = le.Locations[0][0].Start.Line
	}
	p.Msg = parseErrorLine.ReplaceAllString(p.Msg, "")
	return p
}

// chain returns the final stage and the stages it is built FROM, final
// stage first, following FROM <stage name> references (which can only
// name an earlier stage, so the walk ends).
func (d *dockerfile) chain() []*stage {
	i := len(d.stages) - 1
	out := []*stage{&d.stages[i]}
	for {
		ref := strings.ToLower(d.stages[i].image)
		j := slices.IndexFunc(d.stages[:i], func(s stage) bool { return s.name == ref })
		if j < 0 {
			return out
		}
		i = j
		out = append(out, &d.stages[i])
	}
}

// base returns the image the final stage builds on, without the registry
// prefix, or the problem with it.
func (d *dockerfile) base() (string, Problem) {
	chain := d.chain()
	from := chain[len(chain)-1]
	at := from.line

	// Expand with the global ARG defaults, in order, as BuildKit does for
	// FROM; the registry stays a mark.
	env := map[string]string{}
	lex := shell.NewLex(d.escape)
	for _, a := range d.metaArgs {
		for _, w := range words(a) {
			key, value, hasValue := strings.Cut(w, "=")
			switch {
			case key == RegistryArg:
				env[key] = registryMark
			case hasValue:
				if v, _, err := lex.ProcessWord(value, envGetter(env)); err == nil {
					env[key] = v
				}
			}
		}
	}
	if _, ok := env[RegistryArg]; !ok {
		env[RegistryArg] = registryMark
	}
	image, unmatched, err := lex.ProcessWord(from.image, envGetter(env))
	if err != nil {
		return "", Problem{Line: at, Msg: fmt.Sprintf("FROM %s: %v", from.image, err)}
	}
	if len(unmatched) > 0 {
		names := sortedKeys(unmatched)
		return "", Problem{Line: at, Msg: fmt.Sprintf("FROM %s: $%s has no default value", from.image, names[0])}
	}
	rest, ok := strings.CutPrefix(image, registryMark+"/")
	if !ok || strings.Contains(rest, registryMark) {
		return "", Problem{Line: at, Msg: fmt.Sprintf("the last FROM must be ${%s}/<base image>, not %s", RegistryArg, from.image)}
	}
	if msg := checkPinned(rest); msg != "" {
		return "", Problem{Line: at, Msg: fmt.Sprintf("the base image %s %s", rest, msg)}
	}
	return rest, Problem{}
}

// checkPinned says why image (name[:tag][@digest]) is not pinned, or
// returns "". A digest pins it; otherwise it needs a tag other than
// latest, because latest moves with every release of the base images.
func checkPinned(image string) string {
	name, digest, hasDigest := strings.Cut(image, "@")
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	switch {
	case name == "" || strings.HasSuffix(name, "/"):
		return "has no name"
	case hasDigest && !sha256Digest.MatchString(digest):
		return fmt.Sprintf("has an invalid digest %q (want sha256:<64 hex digits>)", digest)
	case hasDigest:
		return ""
	case tag == "":
		return "is not pinned: add a version tag (such as :1.0.0) or a digest"
	case tag == "latest":
		return "is pinned to latest, which moves: use a version tag (such as :1.0.0) or a digest"
	}
	return ""
}

type envGetter map[string]string

func (e envGetter) Get(k string) (string, bool) { v, ok := e[k]; return v, ok }
func (e envGetter) Keys() []string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	return keys
}

var _ shell.EnvGetter = envGetter(nil)

// check returns every problem with the Dockerfile's shape, and the base
// image when it is valid.
func (d *dockerfile) check() (string, Problems) {
	var ps Problems
	declared := false
	for _, a := range d.metaArgs {
		for _, w := range words(a) {
			key, _, _ := strings.Cut(w, "=")
			declared = declared || key == RegistryArg
		}
	}
	if !declared {
		ps = append(ps, Problem{Line: d.stages[0].line, Msg: fmt.Sprintf("ARG %s must be declared before the first FROM", RegistryArg)})
	}
	base, p := d.base()
	if p.Msg != "" {
		ps = append(ps, p)
	}
	if !d.copiesTaskFiles() {
		ps = append(ps, Problem{Msg: fmt.Sprintf("the final stage must copy sse/ to %s (COPY sse/ %s/)", ImageRoot, ImageRoot)})
	}
	return base, ps
}

// copiesTaskFiles reports whether the final stage (or a stage it is built
// FROM) copies the build context's sse/ to /ssebench.
func (d *dockerfile) copiesTaskFiles() bool {
	for _, st := range d.chain() {
		workdir := "/"
		for _, n := range st.cmds {
			switch strings.ToLower(n.Value) {
			case "workdir":
				if args := words(n); len(args) == 1 {
					workdir = path.Join(workdir, args[0])
					if path.IsAbs(args[0]) {
						workdir = path.Clean(args[0])
					}
				}
			case "copy":
				if slices.ContainsFunc(n.Flags, func(f string) bool { return strings.HasPrefix(f, "--from") }) {
					continue
				}
				args := words(n)
				if len(args) < 2 {
					continue
				}
				dest := args[len(args)-1]
				if !path.IsAbs(dest) {
					dest = path.Join(workdir, dest)
				}
				if path.Clean(dest) != ImageRoot {
					continue
				}
				for _, src := range args[:len(args)-1] {
					if path.Clean("/"+src) == "/sse" {
						return true
					}
				}
			}
		}
	}
	return false
}

// Base returns the base image of a task's Dockerfile: its last FROM
// without the registry prefix, such as "base-generic-go:1.0.0" or
// "base-generic-go@sha256:…". Global ARG defaults other than
// SSEBENCH_REGISTRY are substituted. It fails, with the line, when the
// last FROM does not start with ${SSEBENCH_REGISTRY}/ or is not pinned by a
// digest or a tag other than latest.
func Base(r io.Reader) (string, error) {
	d, err := parseDockerfile(r)
	if err != nil {
		return "", err
	}
	base, p := d.base()
	if p.Msg != "" {
		return "", p
	}
	return base, nil
}

// CheckDockerfile returns the base image of a task's Dockerfile (see
// [Base]) and every problem with it: no ARG SSEBENCH_REGISTRY before the
// first FROM, a last FROM that is not ${SSEBENCH_REGISTRY}/<base> pinned by
// digest or by a tag other than latest, no COPY of sse/ to /ssebench.
// name is the file's path as problems should show it.
func CheckDockerfile(name string, r io.Reader) (string, Problems) {
	d, err := parseDockerfile(r)
	if err != nil {
		var p Problem
		if !errors.As(err, &p) {
			p = Problem{Msg: err.Error()}
		}
		p.File = name
		return "", Problems{p}
	}
	base, ps := d.check()
	for i := range ps {
		ps[i].File = name
	}
	return base, ps
}
