package govulndb

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The fixtures are small modules, example.com/m, in the shape of real
// fixes: a private helper the test calls (GO-2024-2947), an exported
// method (GO-2022-0380), a new field and a new type (GO-2024-2958).

const retryBuggy = `package retry

import (
	"fmt"
	"net/url"
)

// Do fails as a client that gives up.
func Do(u *url.URL, attempts int) error {
	return fmt.Errorf("%s giving up after %d attempt(s)", u, attempts)
}

// Attempts is how often Do tries.
func Attempts(n int) int { return n + 1 }
`

const retryFixed = `package retry

import (
	"fmt"
	"net/url"
)

// Do fails as a client that gives up.
func Do(u *url.URL, attempts int) error {
	return fmt.Errorf("%s giving up after %d attempt(s)", redactURL(u), attempts)
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

func scrub(s string) string { return s }
`

const retryTest = `package retry

import (
	"net/url"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	u, _ := url.Parse("http://user:pass@host/")
	err := Do(u, 3)
	if want := redactURL(u) + " giving up after 3 attempt(s)"; err.Error() != want {
		t.Fatalf("Do = %v, want %v", err, want)
	}
	if strings.Contains(err.Error(), "pass@") {
		t.Fatal("the password leaks")
	}
}

func TestAttempts(t *testing.T) {
	if Attempts(2) != 3 {
		t.Fatal("Attempts(2) != 3")
	}
}
`

const jwtBuggy = `package jwt

// Claims are a token's claims.
type Claims struct {
	Revocations map[string]int64
	IssuedAt    int64
}

// IsRevoked says whether key is revoked.
func (c *Claims) IsRevoked(key string) bool {
	_, ok := c.Revocations[key]
	return ok
}
`

const jwtFixed = `package jwt

import (
	"strings"
	"time"
)

// Claims are a token's claims.
type Claims struct {
	Revocations map[string]int64
	IssuedAt    int64
}

// IsRevoked says whether key is revoked.
func (c *Claims) IsRevoked(key string) bool {
	return true
}

// IsClaimRevoked says whether key is revoked at now.
func (c *Claims) IsClaimRevoked(key string, now time.Time) bool {
	at, ok := c.Revocations[strings.TrimSpace(key)]
	return ok && at >= c.IssuedAt && now.Unix() >= at
}
`

const jwtTest = `package jwt_test

import (
	"testing"
	"time"

	"example.com/m/jwt"
)

func TestRevoked(t *testing.T) {
	c := &jwt.Claims{Revocations: map[string]int64{"k": 10}, IssuedAt: 5}
	if !c.IsClaimRevoked("k", time.Unix(20, 0)) {
		t.Fatal("not revoked")
	}
}
`

const decodeBuggy = `package decode

import "fmt"

// Decoder decodes.
type Decoder struct {
	cache map[string]int
}

func NewDecoder() *Decoder { return &Decoder{cache: map[string]int{}} }

// Decode decodes s.
func (d *Decoder) Decode(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("decode: empty input")
	}
	return len(s), nil
}
`

const decodeFixed = `package decode

import "fmt"

// Decoder decodes.
type Decoder struct {
	cache   map[string]int
	MaxSize int // the longest input Decode takes, if positive
}

func NewDecoder() *Decoder { return &Decoder{cache: map[string]int{}} }

// Options configure a Decoder.
type Options struct {
	Limit  limit // the longest input
	Strict bool
}

type limit int

const defaultLimit limit = 16000

// NewDecoderWith is a decoder with options.
func NewDecoderWith(o Options) *Decoder {
	if o.Limit == 0 {
		o.Limit = defaultLimit
	}
	return &Decoder{cache: map[string]int{}, MaxSize: int(o.Limit)}
}

// Decode decodes s.
func (d *Decoder) Decode(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("decode: empty input")
	}
	if d.MaxSize > 0 && len(s) > d.MaxSize {
		return 0, fmt.Errorf("decode: input of %d bytes exceeds the max size %d", len(s), d.MaxSize)
	}
	return len(s), nil
}
`

const decodeOptionsTest = `package decode

import "testing"

func TestOptions(t *testing.T) {
	d := NewDecoderWith(Options{Limit: 3})
	if _, err := d.Decode("abcdef"); err == nil {
		t.Fatal("no error")
	}
}

func TestEmpty(t *testing.T) {
	if _, err := NewDecoder().Decode(""); err == nil || err.Error() != "decode: empty input" {
		t.Fatalf("err = %v", err)
	}
}
`

const decodeMaxTest = `package decode

import (
	"strings"
	"testing"
)

func TestMaxSize(t *testing.T) {
	d := NewDecoder()
	d.MaxSize = 2
	_, err := d.Decode("abcdef")
	if err == nil || !strings.Contains(err.Error(), "exceeds the max size 2") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "%d") {
		t.Fatal("short")
	}
}
`

func TestAnalyzeFix(t *testing.T) {
	tests := []struct {
		name     string
		pkg      pkgFiles
		want     fixAPI // but for Stubs
		stubs    []string
		issue    string // a part of the issue text
		runTests map[string]string
		stubFile string // the file with the stubs: ssebench_stubs.go unless set
	}{{
		name: "private helper the test calls",
		pkg: pkgFiles{Path: "example.com/m/retry", Dir: "retry",
			Buggy: files1("client.go", retryBuggy), Fixed: files1("client.go", retryFixed), Tests: files1("client_test.go", retryTest)},
		want: fixAPI{
			Needed:  []apiName{{Path: "example.com/m/retry", Dir: "retry", Key: "redactURL", Kind: "func", Decl: "func redactURL(u *url.URL) string"}},
			Private: []apiName{{Path: "example.com/m/retry", Dir: "retry", Key: "scrub", Kind: "func", Decl: "func scrub(s string) string"}},
		},
		stubs:    []string{`import "net/url"`, "func redactURL(u *url.URL) string {\n\tpanic(\"not implemented: redactURL\")\n}"},
		issue:    "- `func redactURL(u *url.URL) string` in package `example.com/m/retry`\n",
		runTests: map[string]string{"TestAttempts": "ok", "TestRedact": "not implemented: redactURL"},
	}, {
		name: "exported method from an external test package",
		pkg: pkgFiles{Path: "example.com/m/jwt", Dir: "jwt",
			Buggy: files1("claims.go", jwtBuggy), Fixed: files1("claims.go", jwtFixed), Tests: files1("claims_test.go", jwtTest)},
		want: fixAPI{
			Needed: []apiName{{Path: "example.com/m/jwt", Dir: "jwt", Key: "Claims.IsClaimRevoked", Kind: "method", Decl: "func (c *Claims) IsClaimRevoked(key string, now time.Time) bool"}},
		},
		stubs:    []string{`import "time"`, "func (c *Claims) IsClaimRevoked(key string, now time.Time) bool {"},
		issue:    "The tests use these, which the fix must add:\n- `func (c *Claims) IsClaimRevoked(key string, now time.Time) bool` in package `example.com/m/jwt`\n",
		runTests: map[string]string{"TestRevoked": "not implemented: Claims.IsClaimRevoked"},
	}, {
		name: "new type, with the type its field needs",
		pkg: pkgFiles{Path: "example.com/m/decode", Dir: "decode",
			Buggy: files1("decode.go", decodeBuggy), Fixed: files1("decode.go", decodeFixed), Tests: files1("decode_test.go", decodeOptionsTest)},
		want: fixAPI{
			Needed: []apiName{
				{Path: "example.com/m/decode", Dir: "decode", Key: "Options", Kind: "type", Decl: "type Options struct { Limit limit; Strict bool }"},
				{Path: "example.com/m/decode", Dir: "decode", Key: "limit", Kind: "type", Decl: "type limit int", Note: "used by Options"},
				{Path: "example.com/m/decode", Dir: "decode", Key: "NewDecoderWith", Kind: "func", Decl: "func NewDecoderWith(o Options) *Decoder"},
			},
			Private: []apiName{{Path: "example.com/m/decode", Dir: "decode", Key: "defaultLimit", Kind: "const", Decl: "const defaultLimit limit = 16000"}},
		},
		stubs:    []string{"type Options struct {\n\tLimit  limit // the longest input\n", "type limit int\n", "func NewDecoderWith(o Options) *Decoder {\n\tpanic("},
		runTests: map[string]string{"TestEmpty": "ok", "TestOptions": "not implemented: NewDecoderWith"},
	}, {
		name: "new field of an existing struct, and the message only the fix makes",
		pkg: pkgFiles{Path: "example.com/m/decode", Dir: "decode",
			Buggy: files1("decode.go", decodeBuggy), Fixed: files1("decode.go", decodeFixed), Tests: files1("decode_test.go", decodeMaxTest)},
		want: fixAPI{
			Needed:   []apiName{{Path: "example.com/m/decode", Dir: "decode", Key: "Decoder.MaxSize", Kind: "field", Decl: "MaxSize int"}},
			Messages: []string{"exceeds the max size 2"},
			Private: []apiName{
				{Path: "example.com/m/decode", Dir: "decode", Key: "limit", Kind: "type", Decl: "type limit int"},
				{Path: "example.com/m/decode", Dir: "decode", Key: "defaultLimit", Kind: "const", Decl: "const defaultLimit limit = 16000"},
			},
		},
		issue: "- field `MaxSize int` of struct `Decoder` in package `example.com/m/decode`\n\nThe tests expect these messages:\n- `exceeds the max size 2`\n",
		// The field goes where the vulnerable tree declares the struct.
		stubFile: "decode.go",
		stubs:    []string{"type Decoder struct {\n\tcache map[string]int\n\n\t// MaxSize is the fix's: declared for the tests, read by nothing here.\n\tMaxSize int\n}"},
		runTests: map[string]string{"TestMaxSize": "err = <nil>"},
	}, {
		name: "a new type that the tests need to have a method they do not call",
		pkg: pkgFiles{Path: "example.com/m/p", Dir: "p",
			Buggy: files1("p.go", "package p\n\ntype Sink interface{ Put(string) }\n\nfunc Drain(s Sink) { s.Put(\"x\") }\n"),
			Fixed: files1("p.go", "package p\n\ntype Sink interface{ Put(string) }\n\nfunc Drain(s Sink) { s.Put(\"x\") }\n\ntype memSink struct{ got []string }\n\nfunc (m *memSink) Put(s string) { m.got = append(m.got, s) }\n\nfunc newMemSink() *memSink { return &memSink{} }\n"),
			Tests: files1("p_test.go", "package p\n\nimport \"testing\"\n\nfunc TestDrain(t *testing.T) { Drain(newMemSink()) }\n")},
		want: fixAPI{
			Needed: []apiName{
				{Path: "example.com/m/p", Dir: "p", Key: "memSink", Kind: "type", Decl: "type memSink struct{ got []string }", Note: "used by newMemSink"},
				{Path: "example.com/m/p", Dir: "p", Key: "newMemSink", Kind: "func", Decl: "func newMemSink() *memSink"},
			},
			TestErrors: []string{"p/p_test.go:5:38: cannot use newMemSink() (value of type *memSink) as Sink value in argument to Drain: *memSink does not implement Sink (missing method Put)"},
		},
		stubs: []string{"type memSink struct{ got []string }", "func newMemSink() *memSink {"},
	}, {
		name: "a func and a field the fix changes",
		pkg: pkgFiles{Path: "example.com/m/p", Dir: "p",
			Buggy: files1("p.go", "package p\n\ntype D struct{ MaxSize int }\n\nfunc F(a int) int { return a }\n\nfunc G(n int) int { return n }\n"),
			Fixed: files1("p.go", "package p\n\ntype D struct{ max int }\n\nfunc (d *D) MaxSize(n int) { d.max = n }\n\nfunc F(a, b int) int { return a + b }\n\n// G's parameter is renamed, which callers do not see.\nfunc G(_ int) int { return 0 }\n"),
			Tests: files1("p_test.go", "package p\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) {\n\tvar d D\n\td.MaxSize(F(1, G(2)))\n}\n")},
		want: fixAPI{
			Changed: []apiName{
				{Path: "example.com/m/p", Dir: "p", Key: "D.MaxSize", Kind: "method", Decl: "func (d *D) MaxSize(n int)", Note: "the vulnerable tree has field MaxSize int"},
				{Path: "example.com/m/p", Dir: "p", Key: "F", Kind: "func", Decl: "func F(a, b int) int", Note: "the vulnerable tree has func F(a int) int"},
			},
			TestErrors: []string{"p/p_test.go:7:2: invalid operation: cannot call d.MaxSize (variable of type int): int is not a function"},
		},
		issue: "The tests use these as the fix changes them:\n- `func (d *D) MaxSize(n int)` in package `example.com/m/p`\n- `func F(a, b int) int` in package `example.com/m/p`\n",
	}, {
		// jwx's aescbc (GO-2023-1859): the fix replaces unpad, and the
		// package's own test, which the function test runs, calls it.
		name: "a name the package's own tests use, which the fix removes",
		pkg: pkgFiles{Path: "example.com/m/p", Dir: "p",
			Buggy:      files1("p.go", "package p\n\nimport \"strings\"\n\nfunc unpad(s string) string { return strings.TrimRight(s, \"=\") }\n\nfunc Open(s string) string { return unpad(s) }\n"),
			Fixed:      files1("p.go", "package p\n\nimport \"strings\"\n\nfunc Open(s string) string { return strings.TrimRight(s, \"=\") }\n"),
			BuggyTests: map[string][]byte{"p_test.go": []byte("package p\n\nimport (\n\t\"testing\"\n\t\"strings\"\n)\n\nfunc TestUnpad(t *testing.T) { _ = strings.ToUpper(unpad(\"a=\")) }\n"), "x_test.go": []byte("package p_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/p\"\n)\n\nfunc TestOpen(t *testing.T) { _ = p.Open(\"a=\") }\n")},
			Tests:      files1("p_test.go", "package p\n\nimport \"testing\"\n\nfunc TestOpen(t *testing.T) { _ = Open(\"a=\") }\n")},
		want: fixAPI{
			OldTestErrors: []string{"p/p_test.go:8:52: undefined: unpad"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := analyzeFix([]pkgFiles{tt.pkg})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *got, cmpopts.IgnoreFields(fixAPI{}, "Stubs"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("analyzeFix (-want +got):\n%s", diff)
			}
			if len(tt.stubs) == 0 {
				if len(got.Stubs) != 0 {
					t.Errorf("analyzeFix stubs %s, want none", got.Stubs[0].Src)
				}
			} else if want := tt.stubFile; len(got.Stubs) != 1 || got.Stubs[0].Dir != tt.pkg.Dir || got.Stubs[0].Name != want && !(want == "" && got.Stubs[0].Name == "ssebench_stubs.go") {
				t.Fatalf("analyzeFix stubs %+v, want one in %s", got.Stubs, tt.pkg.Dir)
			}
			for _, s := range tt.stubs {
				if !strings.Contains(string(got.Stubs[0].Src), s) {
					t.Errorf("the stubs lack %q:\n%s", s, got.Stubs[0].Src)
				}
			}
			if !strings.Contains(got.IssueText(), tt.issue) {
				t.Errorf("IssueText() = %q, want it to contain %q", got.IssueText(), tt.issue)
			}
			if tt.runTests == nil {
				return
			}
			// The hidden tests compile on the vulnerable tree with the
			// stubs, and those of the fix's new names fail.
			dir := writeModule(t, tt.pkg.Dir, tt.pkg.Buggy, tt.pkg.Tests, map[string][]byte{got.Stubs[0].Name: got.Stubs[0].Src})
			for name, want := range tt.runTests {
				out, err := goCmd(dir, "test", "-count=1", "-run", "^"+name+"$", "./"+tt.pkg.Dir)
				if (err == nil) != (want == "ok") || !strings.Contains(out, want) {
					t.Errorf("go test -run %s: %v\n%s\nwant %q", name, err, out, want)
				}
			}
		})
	}
}

// TestAnalyzeFixStubsTwoPackages checks that a test of one affected
// package resolves the new names of another, and that each package gets
// its own stubs.
func TestAnalyzeFixStubsTwoPackages(t *testing.T) {
	useTest := `package use_test

import (
	"testing"

	"example.com/m/jwt"
)

func TestUse(t *testing.T) { _ = (&jwt.Claims{}).IsClaimRevoked }
`
	got, err := analyzeFix([]pkgFiles{
		{Path: "example.com/m/jwt", Dir: "jwt", Buggy: files1("claims.go", jwtBuggy), Fixed: files1("claims.go", jwtFixed)},
		{Path: "example.com/m/use", Dir: "use", Buggy: files1("use.go", "package use\n"), Fixed: files1("use.go", "package use\n"), Tests: files1("use_test.go", useTest)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Needed) != 1 || got.Needed[0].Key != "Claims.IsClaimRevoked" || len(got.Stubs) != 1 || got.Stubs[0].Dir != "jwt" {
		t.Errorf("analyzeFix = %+v, want IsClaimRevoked stubbed in jwt", got)
	}
}

func TestMessages(t *testing.T) {
	buggy := `package p

import "errors"

var errOld = errors.New("ssh: packet too large")
`
	fixed := `package p

import (
	"errors"
	"fmt"
)

var errOld = errors.New("ssh: packet too large")

var errEmpty = errors.New("ssh: empty packet")

func depth(n int) error { return fmt.Errorf("yaml: exceeded max depth of %d", n) }
`
	test := `package p

import "testing"

func TestP(t *testing.T) {
	for _, s := range []string{
		"ssh: empty packet",                 // only the fix says it
		"yaml: exceeded max depth of 10000", // the fix's format
		"ssh: packet too large",             // the vulnerable tree says it too
		"packet",                            // too short
		"12345678",                          // no letters
		"got %v, want ssh: empty packet",    // a format
		"unrelated text here",
	} {
		_ = s
	}
	_ = errEmpty
	_ = depth
}
`
	got, err := analyzeFix([]pkgFiles{{Path: "example.com/m/p", Dir: "p", Buggy: files1("p.go", buggy), Fixed: files1("p.go", fixed), Tests: files1("p_test.go", test)}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ssh: empty packet", "yaml: exceeded max depth of 10000"}
	if diff := cmp.Diff(want, got.Messages); diff != "" {
		t.Errorf("Messages (-want +got):\n%s", diff)
	}
	// The new var the test names is stubbed as the fix has it; the
	// func panics.
	if len(got.Stubs) != 1 || !strings.Contains(string(got.Stubs[0].Src), `var errEmpty = errors.New("ssh: empty packet")`) {
		t.Errorf("stubs %+v, want errEmpty copied", got.Stubs)
	}
}

// TestAnalyzeFixUnknownTypes checks names in a literal of an imported
// type, which go/types does not record without the import, and that an
// imported name is not taken for a new method of the same name.
func TestAnalyzeFixUnknownTypes(t *testing.T) {
	fixed := `package p

import "reflect"

// Set is a set.
type Set map[string]bool

// Contains says whether s has k.
func (s Set) Contains(k string) bool { return s[k] }

func kindName(k reflect.Kind) string { return k.String() }
`
	test := `package p

import (
	"reflect"
	"strings"
	"testing"
)

func TestKinds(t *testing.T) {
	names := map[reflect.Kind]func(reflect.Kind) string{reflect.Int: kindName}
	if !strings.Contains(names[reflect.Int](reflect.Int), "int") {
		t.Fatal("no int")
	}
}
`
	buggy := "package p\n\n// Set is a set.\ntype Set map[string]bool\n"
	got, err := analyzeFix([]pkgFiles{{Path: "example.com/m/p", Dir: "p", Buggy: files1("p.go", buggy), Fixed: files1("p.go", fixed), Tests: files1("p_test.go", test)}})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, n := range got.Needed {
		keys = append(keys, n.Key)
	}
	if diff := cmp.Diff([]string{"kindName"}, keys); diff != "" {
		t.Errorf("Needed (-want +got):\n%s", diff)
	}
}

// TestAnalyzeFixStubsTypeCheck checks that no stub file is written that
// does not type-check: here a var's value is a const that joins an iota
// group the vulnerable tree has, which no stub can declare.
func TestAnalyzeFixStubsTypeCheck(t *testing.T) {
	buggy := "package p\n\ntype mode int\n\nconst (\n\tmodeLax mode = iota\n)\n"
	fixed := "package p\n\ntype mode int\n\nconst (\n\tmodeLax mode = iota\n\tmodeStrict\n)\n\n// DefaultMode is the mode.\nvar DefaultMode = modeStrict\n"
	test := "package p\n\nimport \"testing\"\n\nfunc TestMode(t *testing.T) { _ = DefaultMode }\n"
	got, err := analyzeFix([]pkgFiles{{Path: "example.com/m/p", Dir: "p", Buggy: files1("p.go", buggy), Fixed: files1("p.go", fixed), Tests: files1("p_test.go", test)}})
	if err != nil {
		t.Fatal(err)
	}
	var unstub []string
	for _, n := range got.Unstubbable {
		unstub = append(unstub, n.Key+": "+n.Note)
	}
	want := []string{
		"modeStrict: its value depends on its group, which has modeLax, which the vulnerable tree declares",
		"DefaultMode: the stubs do not type-check: ssebench_stubs.go:6:19: undefined: modeStrict",
	}
	if diff := cmp.Diff(want, unstub); diff != "" {
		t.Errorf("Unstubbable (-want +got):\n%s", diff)
	}
	if len(got.Stubs) != 0 {
		t.Errorf("stubs %s, want none", got.Stubs[0].Src)
	}
}

func files1(name, src string) map[string][]byte { return map[string][]byte{name: []byte(src)} }

// writeModule writes module example.com/m with the files of package
// directory dir, and returns its directory.
func writeModule(t *testing.T, dir string, fileSets ...map[string][]byte) string {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, fs := range fileSets {
		for name, src := range fs {
			if err := os.WriteFile(filepath.Join(root, dir, name), src, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// goCmd runs the go command offline in dir.
func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// corsFixed is trimmed from github.com/gin-contrib/cors v1.6.0 (MIT
// License, Copyright (c) 2016 Gin-Gonic), the fix of GO-2024-2955, whose
// tests also set a field the release adds.
const corsFixed = `package cors

import (
	"errors"
	"strings"

	"github.com/gin-gonic/gin"
)

// Config represents all available options for the middleware.
type Config struct {
	AllowOrigins []string

	// Allows to add origins like http://some-domain/*, https://api.* or http://some.*.subdomain.com
	AllowWildcard bool

	// Allows usage of popular browser extensions schemas
	AllowBrowserExtensions bool

	// Allows to add custom schema like tauri://
	CustomSchemas []string
}

var (
	DefaultSchemas   = []string{"http://", "https://"}
	ExtensionSchemas = []string{"chrome-extension://", "safari-extension://"}
)

func (c Config) getAllowedSchemas() []string {
	allowedSchemas := DefaultSchemas
	if c.AllowBrowserExtensions {
		allowedSchemas = append(allowedSchemas, ExtensionSchemas...)
	}
	if c.CustomSchemas != nil {
		allowedSchemas = append(allowedSchemas, c.CustomSchemas...)
	}
	return allowedSchemas
}

func (c Config) validateAllowedSchemas(origin string) bool {
	for _, schema := range c.getAllowedSchemas() {
		if strings.HasPrefix(origin, schema) {
			return true
		}
	}
	return false
}

// Validate is check configuration of user defined.
func (c Config) Validate() error {
	for _, origin := range c.AllowOrigins {
		if !strings.Contains(origin, "*") && !c.validateAllowedSchemas(origin) {
			return errors.New("bad origin: origins must contain '*' or include " + strings.Join(c.getAllowedSchemas(), ","))
		}
	}
	return nil
}

func (c Config) parseWildcardRules() [][]string {
	var wRules [][]string
	if !c.AllowWildcard {
		return wRules
	}
	for _, o := range c.AllowOrigins {
		if !strings.Contains(o, "*") {
			continue
		}
		if c := strings.Count(o, "*"); c > 1 {
			panic(errors.New("only one * is allowed").Error())
		}
		i := strings.Index(o, "*")
		if i == 0 {
			wRules = append(wRules, []string{"*", o[1:]})
			continue
		}
		if i == (len(o) - 1) {
			wRules = append(wRules, []string{o[:i], "*"})
			continue
		}
		wRules = append(wRules, []string{o[:i], o[i+1:]})
	}
	return wRules
}

// New returns the location middleware with user-defined custom configuration.
func New(config Config) gin.HandlerFunc {
	return func(c *gin.Context) {}
}
`

const corsTest = `package cors

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidateTauri(t *testing.T) {
	c := Config{
		AllowOrigins:           []string{"tauri://localhost:1234"},
		AllowBrowserExtensions: true,
	}
	err := c.Validate()
	assert.Error(t, err)

	c = Config{
		AllowOrigins:           []string{"tauri://localhost:1234"},
		AllowBrowserExtensions: true,
		CustomSchemas:          []string{"tauri"},
	}
	assert.Nil(t, c.Validate())
}

func TestParseWildcardRules(t *testing.T) {
	config := Config{AllowWildcard: true, AllowOrigins: []string{"http://example.com/*"}}
	if got := config.parseWildcardRules(); !reflect.DeepEqual(got, [][]string{{"http://example.com/", "*"}}) {
		t.Errorf("Expected %v, got %v", [][]string{{"http://example.com/", "*"}}, got)
	}
}
`

// TestAnalyzeFixCors checks the analysis of a real fix, trimmed, whose
// imports are not at hand: its tests need a new field, which no stub can
// declare.
func TestAnalyzeFixCors(t *testing.T) {
	buggy := strings.NewReplacer(
		"\n\t// Allows to add custom schema like tauri://\n\tCustomSchemas []string\n", "",
		"\tif c.CustomSchemas != nil {\n\t\tallowedSchemas = append(allowedSchemas, c.CustomSchemas...)\n\t}\n", "",
		"[]string{o[:i], \"*\"}", "[]string{o[:i-1], \"*\"}",
	).Replace(corsFixed)
	if strings.Contains(buggy, "CustomSchemas") {
		t.Fatal("the fixture's vulnerable tree has the new field")
	}
	got, err := analyzeFix([]pkgFiles{{Path: "github.com/gin-contrib/cors", Dir: ".", Buggy: files1("cors.go", buggy), Fixed: files1("cors.go", corsFixed), Tests: files1("cors_test.go", corsTest)}})
	if err != nil {
		t.Fatal(err)
	}
	field := apiName{Path: "github.com/gin-contrib/cors", Dir: ".", Key: "Config.CustomSchemas", Kind: "field", Decl: "CustomSchemas []string"}
	want := fixAPI{Needed: []apiName{field}}
	if diff := cmp.Diff(want, *got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(fixAPI{}, "Stubs")); diff != "" {
		t.Errorf("analyzeFix (-want +got):\n%s", diff)
	}
	// The vulnerable cors.go, with the field: nothing else changes.
	wantSrc := strings.Replace(buggy, "\tAllowBrowserExtensions bool\n}", "\tAllowBrowserExtensions bool\n\n\t// CustomSchemas is the fix's: declared for the tests, read by nothing here.\n\tCustomSchemas []string\n}", 1)
	if len(got.Stubs) != 1 || got.Stubs[0].Name != "cors.go" || string(got.Stubs[0].Src) != wantSrc {
		t.Errorf("stubs %+v, want cors.go with the field:\n%s", got.Stubs, wantSrc)
	}
	wantText := "The tests use these, which the fix must add:\n- field `CustomSchemas []string` of struct `Config` in package `github.com/gin-contrib/cors`\n"
	if got.IssueText() != wantText {
		t.Errorf("IssueText() = %q, want %q", got.IssueText(), wantText)
	}
}

// TestIsMessage: what the task text may state as a message the tests
// expect: text of a message's length, not a fixture, an escape sequence
// or a line break (the agent reads the task text).
func TestIsMessage(t *testing.T) {
	for s, want := range map[string]bool{
		"yaml: exceeded max depth of 10000":   true,
		"short":                               false,
		"12345678901":                         false,
		strings.Repeat("a long fixture ", 20): false,
		"\x1b[2Jcleared the screen":           false,
		"two lines\nof a message":             false,
		"invalid \xff utf-8 in a literal":     false,
		"ssh: empty packet":                   true,
	} {
		if got := isMessage(s); got != want {
			t.Errorf("isMessage(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestMDCode: a code span of the task text is one line, bounded, whatever
// the module's source holds.
func TestMDCode(t *testing.T) {
	for in, want := range map[string]string{
		"func f(a int) int":            "`func f(a int) int`",
		"a `b` c":                      "``a `b` c``",
		"x\x1b[2J\ny":                  "`x [2J y`",
		strings.Repeat("x", maxSpan+9): "`" + strings.Repeat("x", maxSpan) + "…`",
	} {
		if got := mdCode(in); got != want {
			t.Errorf("mdCode(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFieldStubImports: a new field whose type the vulnerable file does
// not import gets the import with it; the stubbed tree compiles the
// hidden tests. A field of a type that is not a struct there is not
// stubbed.
func TestFieldStubImports(t *testing.T) {
	// W's method has a type error without the imports (http is a
	// stand-in): the field stub moves it down, and it still counts as
	// the vulnerable tree's own.
	w := "\n// W writes.\ntype W struct{ http.ResponseWriter }\n\nfunc (w W) H() { w.Header() }\n"
	buggy := "package p\n\nimport \"net/http\"\n\n// C configures.\ntype C struct {\n\tA int\n}\n\nfunc (c C) Run() int { return c.A }\n" + w
	fixed := "package p\n\nimport (\n\t\"net/http\"\n\t\"time\"\n)\n\n// C configures.\ntype C struct {\n\tA    int\n\tWait time.Duration `json:\"wait\"`\n}\n\nfunc (c C) Run() int { return c.A + int(c.Wait) }\n" + w
	test := "package p\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestWait(t *testing.T) {\n\tif (C{Wait: time.Nanosecond}).Run() != 1 {\n\t\tt.Fatal(\"wait ignored\")\n\t}\n}\n"
	pkg := pkgFiles{Path: "example.com/m/p", Dir: "p", Buggy: files1("p.go", buggy), Fixed: files1("p.go", fixed), Tests: files1("p_test.go", test)}
	got, err := analyzeFix([]pkgFiles{pkg})
	if err != nil {
		t.Fatal(err)
	}
	if got.blocked() || len(got.Stubs) != 1 || got.Stubs[0].Name != "p.go" {
		t.Fatalf("analyzeFix = %+v, want p.go with the field", got)
	}
	src := string(got.Stubs[0].Src)
	if !strings.Contains(src, "import \"time\"") || !strings.Contains(src, "Wait time.Duration `json:\"wait\"`") || !strings.Contains(src, "func (c C) Run() int { return c.A }") || !strings.Contains(src, w) {
		t.Errorf("stubbed p.go:\n%s", src)
	}
	dir := writeModule(t, "p", pkg.Buggy, pkg.Tests, map[string][]byte{"p.go": got.Stubs[0].Src})
	if out, err := goCmd(dir, "test", "-count=1", "./p"); err == nil || !strings.Contains(out, "wait ignored") {
		t.Errorf("go test on the stubbed tree: %v\n%s", err, out)
	}

	pkg.Buggy = files1("p.go", "package p\n\nimport \"net/http\"\n\n// C configures.\ntype C map[string]int\n\nfunc (c C) Run() int { return c[\"A\"] }\n"+w)
	if got, err := analyzeFix([]pkgFiles{pkg}); err != nil || len(got.Changed)+len(got.Unstubbable) == 0 {
		t.Errorf("a field of what is a map on the vulnerable tree: %+v, %v; want it refused", got, err)
	}
}
