package agentimage

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// instruction is one Dockerfile instruction as BuildKit's parser sees it.
// The parser's `instructions` package would type these for us, but it pulls
// in modules this project does not carry, so the AST is walked here, the
// way instructions.ParseInstruction reads it.
type instruction struct {
	cmd      string // lower case: "copy"
	line     int    // first line, 1-based
	original string // the line as written (continuations joined)
	flags    []string
	args     []string
	json     bool
	heredocs []parser.Heredoc
}

// name is the instruction in upper case, as users write it.
func (in *instruction) name() string { return strings.ToUpper(in.cmd) }

// parseDockerfile runs BuildKit's parser and flattens its AST.
func parseDockerfile(dockerfile []byte) ([]*instruction, rune, error) {
	errEmpty := &Error{Err: errors.New("the Dockerfile is empty: an agent Dockerfile starts FROM ssebench-agent")}
	if len(bytes.TrimSpace(dockerfile)) == 0 {
		return nil, 0, errEmpty
	}
	res, err := parser.Parse(bytes.NewReader(dockerfile))
	if err != nil && strings.Contains(err.Error(), "file with no instructions") {
		// Comments only. BuildKit's parser has no sentinel or type for
		// this case: it returns errors.New("file with no instructions")
		// wrapped with its location (frontend/dockerfile/parser/parser.go,
		// v0.34.2), so its text is all there is to match. TestNewPlanErrors
		// ("empty") fails if an upgrade changes it.
		return nil, 0, errEmpty
	}
	if err != nil {
		return nil, 0, &Error{Line: errorLine(err), Err: errors.New(oneLine(err.Error()))}
	}
	var out []*instruction
	for _, n := range res.AST.Children {
		in := &instruction{
			cmd:      strings.ToLower(n.Value),
			line:     n.StartLine,
			original: strings.TrimSpace(n.Original),
			flags:    n.Flags,
			json:     n.Attributes["json"],
			heredocs: n.Heredocs,
		}
		in.args = nodeArgs(n)
		out = append(out, in)
	}
	return out, res.EscapeToken, nil
}

// nodeArgs collects an instruction's arguments as instructions.nodeArgs
// does (a sub-command, as in ONBUILD, contributes its own words).
func nodeArgs(node *parser.Node) []string {
	var out []string
	for ; node.Next != nil; node = node.Next {
		arg := node.Next
		switch len(arg.Children) {
		case 0:
			out = append(out, arg.Value)
		case 1:
			out = append(out, arg.Children[0].Value)
			out = append(out, nodeArgs(arg.Children[0])...)
		}
	}
	return out
}

// errorLine digs the line out of a parser error, or returns 0.
func errorLine(err error) int {
	var le *parser.LocationError
	if errors.As(err, &le) {
		for _, rs := range le.Locations {
			if len(rs) > 0 {
				return rs[0].Start.Line
			}
		}
	}
	return 0
}

// oneLine joins a multi-line message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// flagKind says how a builder flag takes its value.
type flagKind int

const (
	stringFlag flagKind = iota
	boolFlag
	stringsFlag
)

// flagValues holds parsed builder flags ("--chown=1:1"). Only flags that
// were given are present; a bool flag's value is "true" or "false".
type flagValues map[string][]string

func (f flagValues) get(name string) string {
	if v := f[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

func (f flagValues) has(name string) bool { _, ok := f[name]; return ok }

// flagsOf defines the builder flags of the instructions the planner reads,
// as BuildKit's instructions package defines them.
var flagsOf = map[string]map[string]flagKind{
	"copy": {"chown": stringFlag, "from": stringFlag, "chmod": stringFlag, "link": boolFlag, "parents": boolFlag, "exclude": stringsFlag},
	"add":  {"chown": stringFlag, "chmod": stringFlag, "link": boolFlag, "keep-git-dir": boolFlag, "checksum": stringFlag, "unpack": boolFlag, "exclude": stringsFlag},
	"from": {"platform": stringFlag},
}

// parseFlags parses in's builder flags the way BFlags.Parse does.
func parseFlags(in *instruction) (flagValues, error) {
	defs := flagsOf[in.cmd]
	out := flagValues{}
	for _, a := range in.flags {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "--") {
			return nil, fmt.Errorf("%s: flag should start with --: %s", in.name(), a)
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		kind, ok := defs[name]
		if !ok {
			return nil, fmt.Errorf("%s: unknown flag: --%s", in.name(), name)
		}
		if _, dup := out[name]; dup && kind != stringsFlag {
			return nil, fmt.Errorf("%s: duplicate flag specified: --%s", in.name(), name)
		}
		switch kind {
		case boolFlag:
			if hasValue && value == "" {
				return nil, fmt.Errorf("%s: missing a value on flag: --%s", in.name(), name)
			}
			switch strings.ToLower(value) {
			case "true", "":
				value = "true"
			case "false":
				value = "false"
			default:
				return nil, fmt.Errorf("%s: expecting boolean value for flag --%s, not: %s", in.name(), name, value)
			}
		default:
			if !hasValue {
				return nil, fmt.Errorf("%s: missing a value on flag: --%s", in.name(), name)
			}
		}
		out[name] = append(out[name], value)
	}
	return out, nil
}

// keyValues splits ENV and LABEL arguments, which the parser gives as
// (key, value, delimiter) triples.
func keyValues(in *instruction) ([][2]string, error) {
	if len(in.args) == 0 {
		return nil, fmt.Errorf("%s requires at least one argument", in.name())
	}
	if len(in.args)%3 != 0 {
		return nil, fmt.Errorf("bad input to %s, too many arguments", in.name())
	}
	var out [][2]string
	for i := 0; i < len(in.args); i += 3 {
		if in.args[i] == "" {
			return nil, fmt.Errorf("%s names can not be blank", in.name())
		}
		out = append(out, [2]string{in.args[i], in.args[i+1]})
	}
	return out, nil
}

// commandLine returns the words of CMD, ENTRYPOINT or SHELL: the JSON
// array, or the whole shell-form line as one word.
func commandLine(in *instruction) []string {
	if len(in.args) == 0 {
		return []string{}
	}
	if in.json {
		return in.args
	}
	return []string{strings.Join(in.args, " ")}
}
