package govulndb

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// variantFixed is a fix with private names of every kind: a func that a
// local variable shadows, a type embedded in another, its method.
const variantFixed = `package retry

import (
	"fmt"
	"net/url"
)

type cleaner struct{ n int }

func (c *cleaner) clean(s string) string {
	c.n++
	return s
}

type wrapped struct {
	*cleaner
}

// Do fails as a client that gives up.
func Do(u *url.URL, attempts int) error {
	w := wrapped{cleaner: &cleaner{}}
	s := w.clean(redactURL(u))
	_ = w.cleaner.n
	return fmt.Errorf("%s giving up after %d attempt(s)", s, attempts)
}

// redactURL hides a URL's password.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	ru := *u
	if _, has := ru.User.Password(); has {
		ru.User = url.UserPassword(ru.User.Username(), "xxxxx")
	}
	return ru.String()
}

// Attempts is how often Do tries.
func Attempts(n int) int { return n + 1 }

func shadow() int {
	redactURL := 2
	return redactURL
}

var _ = shadow
`

const variantOldTest = `package retry

import (
	"net/url"
	"strings"
	"testing"
)

func TestDo(t *testing.T) {
	u, _ := url.Parse("http://user:pass@host/")
	if err := Do(u, 3); strings.Contains(err.Error(), "pass@") {
		t.Fatal(err)
	}
}
`

func TestRenameVariant(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string][]byte
		private []string
		salt    string
		want    []string // in the output
		gone    []string // not in it
		hidden  string   // an expression of a hidden test that no longer compiles
		lacks   string   // the name it lacks then
	}{{
		name:    "func, type and method",
		files:   map[string][]byte{"client.go": []byte(variantFixed)},
		private: []string{"redactURL", "cleaner", "cleaner.clean"},
		want:    []string{"// redactURLAlt hides a URL's password.\nfunc redactURLAlt(u *url.URL) string", "type cleanerAlt struct", "func (c *cleanerAlt) cleanAlt(s string)", "w.cleanAlt(redactURLAlt(u))", "w.cleanerAlt.n", "redactURL := 2\n\treturn redactURL\n"},
		gone:    []string{"redactURL(", "*cleaner)", " clean("},
		hidden:  "(&cleaner{}).clean",
		lacks:   "cleaner",
	}, {
		name:    "salted, and the new name taken, also by a test",
		files:   map[string][]byte{"client.go": []byte(variantFixed), "alt.go": []byte("package retry\n\nfunc redactURLAlt7() {}\n"), "alt_test.go": []byte("package retry\n\nfunc redactURLAlt72() {}\n")},
		private: []string{"redactURL"},
		salt:    "7",
		want:    []string{"func redactURLAlt73(u *url.URL) string", "w.clean(redactURLAlt73(u))"},
		hidden:  "redactURL",
		lacks:   "redactURL",
	}, {
		name:    "a func that ends its file moves to its start",
		files:   map[string][]byte{"client.go": []byte(retryFixed)},
		private: []string{"scrub"},
		want:    []string{")\n\nfunc scrubAlt(s string) string { return s }\n\n// Do fails"},
		hidden:  "scrub",
		lacks:   "scrub",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renameVariant(tt.files, tt.private, tt.salt)
			if err != nil {
				t.Fatal(err)
			}
			all := ""
			for _, src := range got {
				all += string(src)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("the variant lacks %q:\n%s", w, all)
				}
			}
			for _, g := range tt.gone {
				if strings.Contains(all, g) {
					t.Errorf("the variant still has %q:\n%s", g, all)
				}
			}
			if order(t, got["client.go"]) == order(t, tt.files["client.go"]) {
				t.Errorf("the variant keeps the fix's order of declarations:\n%s", got["client.go"])
			}
			// The variant builds and passes a test that does not name
			// the private names; a hidden test that does fails to
			// compile on it.
			dir := writeModule(t, "retry", got, files1("do_test.go", variantOldTest))
			if out, err := goCmd(dir, "vet", "./..."); err != nil {
				t.Fatalf("go vet on the variant: %v\n%s", err, out)
			}
			if out, err := goCmd(dir, "test", "-count=1", "./..."); err != nil {
				t.Fatalf("go test on the variant: %v\n%s", err, out)
			}
			hidden := "package retry\n\nimport \"testing\"\n\nfunc TestHidden(t *testing.T) { _ = " + tt.hidden + " }\n"
			undefined := "undefined: " + tt.lacks
			dir = writeModule(t, "retry", tt.files, files1("hidden_test.go", hidden))
			if out, err := goCmd(dir, "vet", "./..."); err != nil {
				t.Fatalf("go vet with the hidden test on the fix: %v\n%s", err, out)
			}
			dir = writeModule(t, "retry", got, files1("hidden_test.go", hidden))
			if out, err := goCmd(dir, "vet", "./..."); err == nil || !strings.Contains(out, undefined) {
				t.Errorf("go vet with a hidden test of %s: %v\n%s\nwant %s", tt.hidden, err, out, undefined)
			}
		})
	}
}

// order is a file's top-level declarations' names, without the suffixes
// renameVariant adds.
func order(t *testing.T, src []byte) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			names = append(names, fd.Name.Name)
		}
	}
	return regexp.MustCompile(`Alt[0-9]*`).ReplaceAllString(strings.Join(names, " "), "")
}

func TestRenameVariantRefuses(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		private []string
		want    string // in the error
	}{{
		name: "a method another type's method shares",
		src: `package p

type t struct{}

func (t) clean() {}

type cleaner interface{ clean() }

var _ cleaner = t{}
`,
		private: []string{"t.clean"},
		want:    "clean is also the name of a field or method of another type",
	}, {
		name: "a selector on a value of an imported type",
		src: `package p

import "slices"

type t struct{}

func (t) clean() {}

func f(ts []t) { slices.Clone(ts)[0].clean() }
`,
		private: []string{"t.clean"},
		want:    "cannot tell what clean at x.go:9:",
	}, {
		name:    "an exported name",
		src:     "package p\n\nfunc Clean() {}\n",
		private: []string{"Clean"},
		want:    "it is exported",
	}, {
		name:    "a name the package lacks",
		src:     "package p\n",
		private: []string{"clean"},
		want:    "the package does not declare it",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renameVariant(files1("x.go", tt.src), tt.private, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("renameVariant = %v, %v, want an error with %q", slices.Collect(mapKeys(got)), err, tt.want)
			}
		})
	}
}

func mapKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestRenameVariantBuildTags checks a name declared once for each build
// tag, and used where go/types records nothing: in a literal of an
// imported type.
func TestRenameVariantBuildTags(t *testing.T) {
	files := map[string][]byte{
		"cert_old.go": []byte("//go:build !go1.20\n\npackage p\n\n// isCertError says whether err is a certificate's.\nfunc isCertError(err error) bool { return false }\n"),
		"cert_new.go": []byte("//go:build go1.20\n\npackage p\n\nfunc isCertError(err error) bool { return err != nil }\n"),
		"p.go": []byte(`package p

import "reflect"

var checks = map[reflect.Kind]func(error) bool{reflect.Bool: isCertError}

// Check checks err.
func Check(err error) bool { return checks[reflect.Bool](err) }
`),
	}
	got, err := renameVariant(files, []string{"isCertError"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"cert_old.go": "// isCertErrorAlt says whether err is a certificate's.\nfunc isCertErrorAlt(err error) bool",
		"cert_new.go": "func isCertErrorAlt(err error) bool",
		"p.go":        "{reflect.Bool: isCertErrorAlt}",
	} {
		if !strings.Contains(string(got[name]), want) {
			t.Errorf("%s lacks %q:\n%s", name, want, got[name])
		}
	}
	dir := writeModule(t, "p", got)
	if out, err := goCmd(dir, "vet", "./..."); err != nil {
		t.Fatalf("go vet on the variant: %v\n%s", err, out)
	}
}
