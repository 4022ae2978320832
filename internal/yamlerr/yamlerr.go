// Package yamlerr turns yaml.v3's decoding errors into one line a user can
// act on. yaml.v3 reports a strict decode's problems as several lines that
// name Go types ("line 4: field flavor not found in type gateway.ModelFile"),
// which mean nothing to whoever wrote the file.
package yamlerr

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var notFound = regexp.MustCompile(`field (\S+) not found in type \S+`)

// cannotUnmarshal matches "cannot unmarshal !!seq into string" (or
// "!!str `abc` into int"): the YAML kind found and the Go type wanted.
var cannotUnmarshal = regexp.MustCompile("cannot unmarshal !!(\\w+)(?: `[^`]*`)? into (\\S+)")

var kinds = map[string]string{
	"seq": "a list", "map": "a mapping", "str": "a string", "int": "a number",
	"float": "a number", "bool": "true or false", "null": "nothing", "timestamp": "a time",
}

// wanted names a Go type as the YAML it is read from.
func wanted(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["), strings.Contains(goType, "."):
		return "a mapping"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "float"):
		return "a number"
	}
	return "another kind of value"
}

// Message is err as one line: every problem of a strict decode joined with
// "; ", each unknown key as `unknown key "x"`, without Go type names.
func Message(err error) string {
	var te *yaml.TypeError
	var parts []string
	if errors.As(err, &te) {
		parts = te.Errors
	} else {
		parts = []string{err.Error()}
	}
	for i, p := range parts {
		p = strings.TrimPrefix(strings.TrimSpace(p), "yaml: ")
		if te == nil {
			if line, msg := Split(p); line > 0 {
				p = fmt.Sprintf("line %d: %s", line, msg)
			}
		}
		p = notFound.ReplaceAllString(p, `unknown key "$1"`)
		p = cannotUnmarshal.ReplaceAllStringFunc(p, func(m string) string {
			sub := cannotUnmarshal.FindStringSubmatch(m)
			got, ok := kinds[sub[1]]
			if !ok {
				got = "a value"
			}
			return got + " where " + wanted(sub[2]) + " belongs"
		})
		parts[i] = strings.Join(strings.Fields(p), " ")
	}
	return strings.Join(parts, "; ")
}

// parserProblems are the problems yaml.v3's parser (not its scanner)
// reports. For those, yaml.v3 v3.0.1 prints a line number counted from 0
// (decode.go's fail adds 1 only to scanner errors), so "line 3" means the
// fourth line: the user looks one line too early.
var parserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found undefined tag handle",
	"found incompatible YAML document",
	"found duplicate %YAML directive",
	"found duplicate %TAG directive",
}

var lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// Split turns a syntax error of yaml.v3 ("yaml: line 3: did not find
// expected key") into the line it is about, counted from 1, and its
// message. It corrects yaml.v3's parser errors, which count from 0 (and
// print no line at all for the first one). line is 0 when the error names
// no line.
func Split(s string) (line int, msg string) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "yaml: ")
	msg = s
	if m := lineRE.FindStringSubmatch(s); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	for _, p := range parserProblems {
		if msg == p {
			return line + 1, msg
		}
	}
	return line, msg
}
