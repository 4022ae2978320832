package contract

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// EnvTestReport names, in the environment of the task's test script, the
// file the script writes its structured test report to (tests.format of the
// task config). The file is in the daemon's scratch area, outside the tree;
// the daemon reads it once the script ended and judges the listed tests by
// name (docs/tasks.md, "Hidden tests judged by name").
const EnvTestReport = "SSE_TEST_REPORT"

// The formats a task's tests.format may name.
const (
	// TestFormatGoJSON is the output of `go test -json`.
	TestFormatGoJSON = "go-test-json"
	// TestFormatJUnit is a JUnit XML report (<testsuite>/<testcase>), what
	// most C, C++ and Java harnesses and cargo-nextest write.
	TestFormatJUnit = "junit-xml"
	// TestFormatLibtest is the plain output of Rust's libtest on stable
	// (`cargo test`): one `test NAME ... ok|FAILED|ignored` line a test.
	TestFormatLibtest = "libtest"
)

// TestFormats are the values tests.format may take.
var TestFormats = []string{TestFormatGoJSON, TestFormatJUnit, TestFormatLibtest}

// Test outcomes, as a report gives them. A test that started but has no
// end (its binary crashed) is "unfinished".
const (
	TestPass       = "pass"
	TestFail       = "fail"
	TestSkip       = "skip"
	TestUnfinished = "unfinished"
)

// TestResult is one test's outcome in a report. Group is what qualifies the
// name: the Go package's import path, the JUnit classname; empty for
// libtest.
type TestResult struct {
	Group, Name, Outcome string
}

// ID is how a task's lists name the test when it must be qualified:
// "group.name".
func (t TestResult) ID() string {
	if t.Group == "" {
		return t.Name
	}
	return t.Group + "." + t.Name
}

// Matches reports whether the listed name names t: the bare name in any
// group, or group.name.
func (t TestResult) Matches(listed string) bool {
	if listed == t.Name {
		return true
	}
	// group.name, compared in place: verify asks this of every result
	// for every listed name.
	g := len(t.Group)
	return g > 0 && len(listed) == g+1+len(t.Name) && listed[g] == '.' && listed[:g] == t.Group && listed[g+1:] == t.Name
}

// testOutcomesHeader starts the block of every test's outcome that the
// daemon appends to a judged check's log; ReadTestOutcomes finds it there.
const testOutcomesHeader = "[ssebench: test report"

// WriteTestOutcomes writes the block of every test's outcome, one line
// each: "=== test pass: NAME\t(GROUP)".
func WriteTestOutcomes(w io.Writer, format string, tests []TestResult) {
	fmt.Fprintf(w, "%s (%s): %d test result(s)]\n", testOutcomesHeader, format, len(tests))
	for _, t := range tests {
		name := strings.ReplaceAll(t.Name, "\t", " ")
		if t.Group != "" {
			fmt.Fprintf(w, "=== test %s: %s\t(%s)\n", t.Outcome, name, strings.ReplaceAll(t.Group, "\t", " "))
		} else {
			fmt.Fprintf(w, "=== test %s: %s\n", t.Outcome, name)
		}
	}
}

// ReadTestOutcomes reads the last outcome block of a check's log, as
// WriteTestOutcomes wrote it; ok is false when the log has none. `dataset
// verify` reads the lists of a task out of its runs' logs so.
func ReadTestOutcomes(r io.Reader) (tests []TestResult, ok bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, testOutcomesHeader) {
			tests, ok = nil, true
			continue
		}
		rest, found := strings.CutPrefix(line, "=== test ")
		if !found || !ok {
			continue
		}
		outcome, name, found := strings.Cut(rest, ": ")
		if !found {
			continue
		}
		t := TestResult{Name: name, Outcome: outcome}
		if i := strings.LastIndex(name, "\t("); i >= 0 && strings.HasSuffix(name, ")") {
			t.Name, t.Group = name[:i], name[i+2:len(name)-1]
		}
		tests = append(tests, t)
	}
	return tests, ok, sc.Err()
}
