// Package yamlerr turns yaml.v3's decoding errors into one line a user can
// act on. yaml.v3 reports a strict decode's problems as several lines that
// name Go types ("line 4: field flavor not found in type gateway.ModelFile"),
// which mean nothing to whoever wrote the file.
package yamlerr

import (
	"errors"
	"regexp"
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
