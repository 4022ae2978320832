package yamlerr

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type file struct {
	Name   string   `yaml:"name"`
	Models []string `yaml:"models"`
	Prices map[string]struct {
		Input float64 `yaml:"input"`
	} `yaml:"prices"`
}

func decode(t *testing.T, s string) error {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader([]byte(s)))
	dec.KnownFields(true)
	var f file
	err := dec.Decode(&f)
	if err == nil {
		t.Fatalf("%q decoded", s)
	}
	return err
}

func TestMessage(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"name: x\nflavor: y\nbogus: 1\n", `line 2: unknown key "flavor"; line 3: unknown key "bogus"`},
		{"name: [a, b]\n", "line 1: a list where a string belongs"},
		{"models: abc\n", "line 1: a string where a list belongs"},
		{"prices:\n  m:\n    input: cheap\n", "line 3: a string where a number belongs"},
		{"name: x\n  bad: indent\n", "line 2: mapping values are not allowed in this context"},
	} {
		got := Message(decode(t, c.in))
		if got != c.want {
			t.Errorf("Message(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.ContainsAny(got, "\n") || strings.Contains(got, "file") || strings.Contains(got, "yaml:") {
			t.Errorf("Message(%q) = %q: more than one line, or a Go type or the library's prefix", c.in, got)
		}
	}
}

// TestSyntaxLine: a syntax error names the line of the mistake, counted
// from 1, where yaml.v3's parser errors name the line before it.
func TestSyntaxLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// The second item is indented less than the first.
		{"a: 1\nb:\n  - x\n - y\n", "line 4: did not find expected key"},
		// A list item where a key belongs.
		{"a: 1\nb: 2\n- c\n", "line 3: did not find expected key"},
		// A flow list opened on line 2 and never closed.
		{"name: x\nmodels: [a, b\nother: 1\n", "line 2: did not find expected ',' or ']'"},
		{"- a\nb: 1\n", "line 2: did not find expected '-' indicator"},
		// Scanner errors were right already and stay so.
		{"a: 1\nb: 2\nc\nd: 4\n", "line 3: could not find expected ':'"},
		{"a: 1\nb: 2\nc: 3: 4\n", "line 3: mapping values are not allowed in this context"},
	} {
		var v map[string]any
		err := yaml.Unmarshal([]byte(c.in), &v)
		if err == nil {
			t.Fatalf("%q parsed", c.in)
		}
		if got := Message(err); got != c.want {
			t.Errorf("Message(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
