package task

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// Config is a task's sse/config.yaml (SPEC.md section 3). Paths in Scripts,
// Files and TaskDescription.CrashReport are relative to /ssebench in the
// case image, which the task's Dockerfile fills from the folder's sse/.
//
// The field order and JSON names are those of the "metadata" object of a
// manifest entry, which the original implementation writes with every key
// present: optional values are pointers or nil slices so that an absent or
// null key stays null rather than becoming "" or [].
type Config struct {
	ID              string          `yaml:"id" json:"id"`
	Project         string          `yaml:"project" json:"project"`
	Repository      string          `yaml:"repository" json:"repository"`
	Language        string          `yaml:"language" json:"language"`
	Source          string          `yaml:"source" json:"source"`
	TaskDescription TaskDescription `yaml:"task_description" json:"task_description"`
	Scripts         Scripts         `yaml:"scripts" json:"scripts"`
	Files           ConfigFiles     `yaml:"files" json:"files"`
	Sanitizer       *string         `yaml:"sanitizer" json:"sanitizer"`
	Type            *string         `yaml:"type" json:"type"`
	Binary          *string         `yaml:"binary" json:"binary"`
	TriggerCommit   *string         `yaml:"trigger_commit" json:"trigger_commit"`
	PatchCommit     *string         `yaml:"patch_commit" json:"patch_commit"`
	Reference       []string        `yaml:"reference" json:"reference"`
	Originality     *string         `yaml:"originality" json:"originality"`
	// Tests names the tests the grade judges by name; nil: the test
	// checks are judged by the test script's exit code alone.
	Tests *Tests `yaml:"tests" json:"tests,omitempty"`
	// Caps raise what the snapshot reads of the agent's tree
	// (contract.TreeCaps) for a task whose fix legitimately writes more;
	// nil: the defaults.
	Caps *Caps `yaml:"caps" json:"caps,omitempty"`
}

// Caps are config.yaml's caps. Sizes are a number of bytes or a number
// with Ki, Mi or Gi ("512Mi"); a missing key keeps its default.
type Caps struct {
	ChangedBytes string `yaml:"changed_bytes,omitempty" json:"changed_bytes,omitempty"`
	FileBytes    string `yaml:"file_bytes,omitempty" json:"file_bytes,omitempty"`
	ChangedFiles int64  `yaml:"changed_files,omitempty" json:"changed_files,omitempty"`
}

// Tests are the tests a task names, SWE-bench style, and the format of
// the report its test script writes to $SSE_TEST_REPORT (docs/tasks.md,
// "Hidden tests judged by name"). A name is a test's name (TestX, TestX/sub,
// tests::decode) or, to pick one package or class, GROUP.NAME (the Go
// package's import path or the JUnit classname, then a dot).
type Tests struct {
	// Format is the report's format, one of contract.TestFormats.
	Format string `yaml:"format" json:"format"`
	// FailToPass must fail (or not run) on the buggy tree with the hidden
	// tests applied, and pass with the fix: intent_test judges them.
	FailToPass []string `yaml:"fail_to_pass,omitempty" json:"fail_to_pass"`
	// PassToPass pass before and after the fix, with and without the
	// hidden tests: test and intent_test judge them.
	PassToPass []string `yaml:"pass_to_pass,omitempty" json:"pass_to_pass"`
	// Protected are the paths a fix may not change, as globs relative to
	// SOURCE_DIR (contract.CheckGlob): the graded tree and the agent's
	// test tool take the pristine version of each. nil, the key absent,
	// means the language's defaults (contract.ProtectedPaths); a pointer
	// to an empty list protects nothing. (A pointer, so that `protected:
	// []` survives `dataset verify --write-tests` and the manifest.)
	Protected *[]string `yaml:"protected,omitempty" json:"protected,omitempty"`
}

// ProtectedPaths returns the globs of the paths a fix may not change:
// tests.protected when the key is present, even as an empty list, else
// the defaults of the task's language.
func (c *Config) ProtectedPaths() []string {
	if c.Tests != nil && c.Tests.Protected != nil {
		return slices.Clone(*c.Tests.Protected)
	}
	return contract.ProtectedPaths(c.Language)
}

// Listed reports whether the task names any test to judge.
func (t *Tests) Listed() bool {
	return t != nil && (len(t.FailToPass) > 0 || len(t.PassToPass) > 0)
}

// Warnings are what is not wrong with the config but makes the task's
// grade weaker than it could be, one line each.
func (c *Config) Warnings() []string {
	var out []string
	switch {
	case !set(c.Scripts.Test) || c.Tests.Listed():
	case set(c.Files.FutureTest):
		// The hidden tests are judged the same way: the run whose
		// agent added `func init() { os.Exit(0) }` passes intent_test.
		out = append(out, "judged by exit status: an init that exits 0 passes; write the lists with `ssebench dataset verify --write-tests`")
	default:
		out = append(out, "tests: no fail_to_pass or pass_to_pass: the test checks are judged by the test script's exit code only, which the agent's code can forge (fill them with `ssebench dataset verify --write-tests`)")
	}
	return out
}

// TaskDescription is what the agent is told; at least one field must be set.
// Issue and BugDescription are text; CrashReport lists report files.
type TaskDescription struct {
	Issue          *string  `yaml:"issue" json:"issue"`
	CrashReport    []string `yaml:"crash_report" json:"crash_report"`
	BugDescription *string  `yaml:"bug_description" json:"bug_description"`
}

// Scripts are the task's scripts, run by the daemon.
type Scripts struct {
	// Build builds the project. Required.
	Build *string `yaml:"build" json:"build"`
	// Run runs one proof of concept, given as its argument.
	Run *string `yaml:"run" json:"run"`
	// Test runs the project's tests. Required.
	Test *string `yaml:"test" json:"test"`
}

// ConfigFiles is the reference material of a task, none of it shown to the
// agent.
type ConfigFiles struct {
	Patch        *string  `yaml:"patch" json:"patch"`
	FutureTest   *string  `yaml:"future_test" json:"future_test"`
	SecurityTest *string  `yaml:"security_test" json:"security_test"`
	IntentTest   *string  `yaml:"intent_test" json:"intent_test"`
	Poc          []string `yaml:"poc" json:"poc"`
}

// Languages are the values "language" may take, one per base image.
var Languages = []string{"c", "go", "rust"}

// MaxIDLength is the longest task id allowed.
const MaxIDLength = 128

var (
	// idPattern keeps a task id usable as a path component of an image
	// name once lowercased (case/<dataset>/<id>).
	idPattern      = regexp.MustCompile(`^[A-Za-z0-9]+(?:(?:[._]|__|-+)[A-Za-z0-9]+)*$`)
	versionPattern = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*$`)
	yamlLine       = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	notFound       = regexp.MustCompile(`^field (.+) not found in type `)
)

// ValidID reports whether id is a valid task (or dataset) id.
func ValidID(id string) bool { return len(id) <= MaxIDLength && idPattern.MatchString(id) }

// ConfigPath is one path that a config names, with where it is named, such
// as {"files.poc[0]", "pocs/poc.go"}.
type ConfigPath struct {
	Key  string
	Path string
}

// Paths returns every path the config names, relative to /ssebench, in a
// fixed order: scripts, files, then crash reports. Unset entries are left out.
func (c *Config) Paths() []ConfigPath {
	var out []ConfigPath
	add := func(key string, p *string) {
		if p != nil {
			out = append(out, ConfigPath{key, *p})
		}
	}
	add("scripts.build", c.Scripts.Build)
	add("scripts.run", c.Scripts.Run)
	add("scripts.test", c.Scripts.Test)
	add("files.patch", c.Files.Patch)
	add("files.future_test", c.Files.FutureTest)
	add("files.security_test", c.Files.SecurityTest)
	add("files.intent_test", c.Files.IntentTest)
	for i, p := range c.Files.Poc {
		out = append(out, ConfigPath{fmt.Sprintf("files.poc[%d]", i), p})
	}
	for i, p := range c.TaskDescription.CrashReport {
		out = append(out, ConfigPath{fmt.Sprintf("task_description.crash_report[%d]", i), p})
	}
	return out
}

// Checks returns the checks the grader runs for the task
// (contract.ChecksFor of its scripts and files), as the original implementation
// records them in the manifest: in manifestOrder, and with
// contract.CheckTest called contract.ManifestTestCheck ("function_test").
// result.json, the logs and the reports use the contract's names.
func (c *Config) Checks() []string {
	run := contract.ChecksFor(c.taskChecks())
	checks := []string{}
	for _, n := range manifestOrder {
		if !slices.Contains(run, n) {
			continue
		}
		if n == contract.CheckTest {
			n = contract.ManifestTestCheck
		}
		checks = append(checks, n)
	}
	return checks
}

// manifestOrder is the order manifest.json lists checks in: the original
// implementation's, which puts the security check before the function
// tests (the grade runs them the other way round, contract.Checks). Every
// check of contract.Checks has a place here, or the manifest would drop it.
var manifestOrder = []string{contract.CheckBuild, contract.CheckPoC, contract.CheckTest, contract.CheckIntentTest}

// taskChecks says which of the scripts and files that decide the grade's
// checks the task has; an empty script or file is not set.
func (c *Config) taskChecks() contract.TaskChecks {
	return contract.TaskChecks{
		Build:      set(c.Scripts.Build),
		Test:       set(c.Scripts.Test),
		Run:        set(c.Scripts.Run),
		PoCs:       len(c.Files.Poc) > 0,
		FutureTest: set(c.Files.FutureTest),
	}
}

func set(p *string) bool { return p != nil && *p != "" }

// ParseConfig parses and checks a task config. name is the file's path as
// problems should show it. It returns every problem found; the Config is
// nil only when the text is not YAML at all.
//
// Unknown keys are errors, at any depth. Checks that need the task folder
// (the id equals the folder name, the named paths exist) are done by
// [Validate] and [Load].
func ParseConfig(name string, data []byte) (*Config, Problems) {
	cfg, _, ps := parseConfig(name, data)
	return cfg, ps
}

// parseConfig is ParseConfig that also returns the line of every key, by
// dotted path ("files.poc[0]"), for the checks that need the task folder.
func parseConfig(name string, data []byte) (*Config, map[string]int, Problems) {
	var cfg Config
	lines, ps, ok := decodeStrict(name, data, &cfg)
	if !ok {
		return nil, nil, ps
	}
	trimStrings(reflect.ValueOf(&cfg).Elem())
	ps = append(ps, cfg.check(name, lines)...)
	return &cfg, lines, ps
}

// decodeStrict decodes the YAML document data into out, a pointer to a
// struct, rejecting unknown keys at any depth. It returns the line of every
// key met, by dotted path, and the problems found; ok is false when what
// was decoded cannot be checked further (not YAML, not a mapping, or a
// decoding error the walk does not explain), and out must not be used.
func decodeStrict(name string, data []byte, out any) (lines map[string]int, ps Problems, ok bool) {
	add := func(line int, format string, args ...any) {
		ps = append(ps, Problem{File: name, Line: line, Msg: fmt.Sprintf(format, args...)})
	}

	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := splitYAMLError(err.Error())
		add(line, "%s", msg)
		return nil, ps, false
	}
	if len(doc.Content) == 0 {
		add(0, "is empty")
		return nil, ps, false
	}

	// Walk the tree first: it names every unknown key with its full path
	// and line, where yaml.v3's own errors give only the last key and the
	// Go type it was looking at.
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		add(root.Line, "the document: expected a mapping, got %s", yamlKind(root))
		return nil, ps, false
	}
	lines = map[string]int{}
	walkYAML(root, reflect.TypeOf(out).Elem(), "", lines, func(line int, key, format string, args ...any) {
		// A key with a value of the wrong shape gets no further checks:
		// one problem per mistake.
		lines[key] = -line
		add(line, format, args...)
	})

	// Then decode strictly. Anything the walk let through but yaml.v3
	// refuses is still reported.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			line, msg := splitYAMLError(err.Error())
			add(line, "%s", msg)
			return nil, ps, false
		}
		if len(ps) == 0 {
			// Something the walk does not look for, such as a key given
			// twice: what was decoded cannot be trusted, so stop here.
			for _, e := range te.Errors {
				line, msg := splitYAMLError(e)
				if m := notFound.FindStringSubmatch(msg); m != nil {
					msg = fmt.Sprintf("unknown key %q", m[1])
				}
				add(line, "%s", msg)
			}
			return nil, ps, false
		}
	}
	return lines, ps, true
}

// splitYAMLError turns "yaml: line 3: did not find expected key" into
// (3, "did not find expected key").
func splitYAMLError(s string) (int, string) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "yaml: ")
	if m := yamlLine.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, m[2]
	}
	return 0, s
}

// walkYAML checks the shape of node against the Go type t (mappings for
// structs, sequences for slices, scalars for strings), reporting unknown
// keys and wrong shapes with their dotted path, and records the line of
// every key it meets in lines.
func walkYAML(n *yaml.Node, t reflect.Type, at string, lines map[string]int, report func(line int, key, format string, args ...any)) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	label := at
	if label == "" {
		label = "the document"
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			report(n.Line, at, "%s: expected a mapping, got %s", label, yamlKind(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := joinKey(at, k.Value)
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				report(k.Line, key, "unknown key %q", key)
				continue
			}
			lines[key] = k.Line
			walkYAML(v, f.Type, key, lines, report)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			report(n.Line, at, "%s: expected a list, got %s", label, yamlKind(n))
			return
		}
		for i, c := range n.Content {
			key := fmt.Sprintf("%s[%d]", at, i)
			lines[key] = c.Line
			walkYAML(c, t.Elem(), key, lines, report)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			report(n.Line, at, "%s: expected a string, got %s", label, yamlKind(n))
		}
	}
}

func joinKey(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return "a scalar"
	}
}

// trimStrings trims the whitespace around every string in v, as the
// original's schema does (str_strip_whitespace), so that a value of blanks
// counts as empty and the manifest's metadata matches.
func trimStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(strings.TrimSpace(v.String()))
	case reflect.Pointer:
		if !v.IsNil() {
			trimStrings(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			trimStrings(v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			trimStrings(v.Index(i))
		}
	}
}

// check validates the values of a decoded config. lines maps dotted keys
// to the line they are on; a key that is absent has no line, and a key
// whose value had the wrong shape has a negative line and is not checked
// again.
func (c *Config) check(name string, lines map[string]int) Problems {
	var ps Problems
	add := func(key, format string, args ...any) {
		line := lines[key]
		if line < 0 {
			return
		}
		ps = append(ps, Problem{File: name, Line: line, Msg: key + ": " + fmt.Sprintf(format, args...)})
	}

	switch {
	case c.ID == "":
		add("id", "is required")
	case len(c.ID) > MaxIDLength:
		add("id", "is %d characters long, more than %d", len(c.ID), MaxIDLength)
	case !idPattern.MatchString(c.ID):
		add("id", "%q is not a valid task id: use letters and digits, separated by '.', '_', '__' or dashes", c.ID)
	}

	if c.Project == "" {
		add("project", "is required")
	}

	if c.Repository == "" {
		add("repository", "is required")
	} else if u, err := url.Parse(c.Repository); err != nil || u.Scheme != "https" || u.Host == "" || strings.ContainsAny(c.Repository, " \t\n") {
		add("repository", "%q is not an https URL", c.Repository)
	}

	switch {
	case c.Language == "":
		add("language", "is required (one of %s)", strings.Join(Languages, ", "))
	case !slices.Contains(Languages, c.Language):
		add("language", "%q is not one of %s", c.Language, strings.Join(Languages, ", "))
	}

	// source is the project tree in the case image and becomes the tool
	// layer's SOURCE_DIR, which is moved, re-owned and re-committed: it
	// must name one directory unambiguously, and never the root.
	switch s := c.Source; {
	case s == "":
		add("source", "is required")
	case !strings.HasPrefix(s, "/"):
		add("source", "%q must be an absolute path", s)
	case s == "/":
		add("source", "must not be /")
	case path.Clean(s) != s || strings.ContainsAny(s, " \t\n"):
		add("source", "%q is not a clean path (use %q)", s, path.Clean(strings.TrimSpace(s)))
	default:
		if r := ReservedSource(s); r != "" {
			add("source", "%q %s: SOURCE_DIR is given to model, so it must be the project's own folder", s, r)
		}
	}

	if _, ok := lines["task_description"]; !ok {
		add("task_description", "is required")
	} else if td := c.TaskDescription; !set(td.Issue) && len(td.CrashReport) == 0 && !set(td.BugDescription) {
		add("task_description", "at least one of issue, crash_report and bug_description must be set")
	}

	// build and test are required: without them the grader has neither a
	// build check nor a function test, and the agent's test tool has
	// nothing to run. run is optional: a task without proofs of concept
	// has no poc check (see Checks). The files are all optional; the
	// original schema requires only that the "files" mapping is present.
	if l, ok := lines["scripts"]; !ok {
		add("scripts", "is required (with build and test)")
	} else if l > 0 {
		if c.Scripts.Build == nil {
			add("scripts.build", "is required")
		}
		if c.Scripts.Test == nil {
			add("scripts.test", "is required")
		}
	}
	if _, ok := lines["files"]; !ok {
		add("files", "is required")
	}

	for _, p := range c.Paths() {
		if msg := checkImagePath(p.Path); msg != "" {
			add(p.Key, "%s", msg)
		}
	}

	c.checkTests(add)
	c.checkCaps(add)

	if o := c.Originality; o != nil && *o != "public" && *o != "crafted" {
		add("originality", "%q is not one of public, crafted", *o)
	}
	return ps
}

// checkImagePath says what is wrong with a path relative to /ssebench, or
// returns "".
func checkImagePath(p string) string {
	switch {
	case p == "":
		return "is empty"
	case strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%q must be relative to /ssebench", p)
	}
	c := path.Clean(p)
	switch {
	case c == "..", strings.HasPrefix(c, "../"):
		return fmt.Sprintf("%q is outside /ssebench", p)
	case c == ".":
		return fmt.Sprintf("%q names /ssebench itself, not a file in it", p)
	}
	return ""
}

// checkCaps checks the caps: sizes the runtime can read, counts not
// negative.
func (c *Config) checkCaps(add func(key, format string, args ...any)) {
	if c.Caps == nil {
		return
	}
	for _, f := range []struct{ key, v string }{{"caps.changed_bytes", c.Caps.ChangedBytes}, {"caps.file_bytes", c.Caps.FileBytes}} {
		if f.v == "" {
			continue
		}
		if _, err := contract.ParseBytes(f.v); err != nil {
			add(f.key, "%v", err)
		}
	}
	if c.Caps.ChangedFiles < 0 {
		add("caps.changed_files", "%d is negative", c.Caps.ChangedFiles)
	}
}

// checkTests checks the tests mapping: a known format, lists only with a
// format and a test script, no empty or repeated name, no name in both
// lists, and protected paths that are valid globs inside SOURCE_DIR.
func (c *Config) checkTests(add func(key, format string, args ...any)) {
	t := c.Tests
	if t == nil {
		return
	}
	switch {
	case t.Format == "" && t.Listed():
		add("tests.format", "is required when tests are listed (one of %s)", strings.Join(contract.TestFormats, ", "))
	case t.Format != "" && !slices.Contains(contract.TestFormats, t.Format):
		add("tests.format", "%q is not one of %s", t.Format, strings.Join(contract.TestFormats, ", "))
	}
	if t.Listed() && !set(c.Scripts.Test) {
		add("tests", "lists tests, but there is no scripts.test to run them")
	}
	if len(t.FailToPass) > 0 && !set(c.Files.FutureTest) {
		add("tests.fail_to_pass", "lists tests, but there is no files.future_test: intent_test, which judges them, needs the hidden tests")
	}
	seen := map[string]string{}
	for _, l := range []struct {
		key   string
		names []string
	}{{"tests.fail_to_pass", t.FailToPass}, {"tests.pass_to_pass", t.PassToPass}} {
		for i, n := range l.names {
			key := fmt.Sprintf("%s[%d]", l.key, i)
			switch prev, dup := seen[n]; {
			case n == "":
				add(key, "is empty")
			case strings.ContainsAny(n, "\t\n"):
				add(key, "%q has a tab or a newline, which no test name has", n)
			case dup:
				add(key, "%q is already listed as %s", n, prev)
			default:
				seen[n] = key
			}
		}
	}
	if t.Protected != nil {
		globs := map[string]string{}
		for i, g := range *t.Protected {
			key := fmt.Sprintf("tests.protected[%d]", i)
			if err := contract.CheckGlob(g); err != nil {
				add(key, "%v", err)
			} else if prev, dup := globs[g]; dup {
				add(key, "%q is already listed as %s", g, prev)
			} else {
				globs[g] = key
			}
		}
	}
}
