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
