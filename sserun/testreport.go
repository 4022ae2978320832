package sserun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// The report formats a task's tests.format may name (contract.TestFormats).
const (
	EnvTestReport    = contract.EnvTestReport
	FormatGoTestJSON = contract.TestFormatGoJSON
	FormatJUnitXML   = contract.TestFormatJUnit
	FormatLibtest    = contract.TestFormatLibtest
)

// DefaultReportLimit bounds the report the daemon reads: a larger one is a
// failed check, not a daemon that runs out of memory.
const DefaultReportLimit = 64 << 20

// maxTests bounds how many test results a report may hold.
const maxTests = 200000

// Test outcomes, as a report gives them (contract.TestPass, ...).
const (
	TestPass       = contract.TestPass
	TestFail       = contract.TestFail
	TestSkip       = contract.TestSkip
	TestUnfinished = contract.TestUnfinished
)

// TestResult is one test's outcome in a report (contract.TestResult: the
// host reads the outcomes back from the checks' logs).
type TestResult = contract.TestResult

// TestReport is a parsed report, in the order the tests ended.
type TestReport struct {
	Format string
	Tests  []TestResult
	// Output is the tests' own text when the format carries it (go test
	// -json's output events), for people to read; at most its limit.
	Output *tailBuffer
	// packages are, for go-test-json, the packages the report has any
	// event of, each with whether its test binary ran to its end.
	packages map[string]bool
}

// RanToEnd reports whether the report has the package pkg (go-test-json
// only) and its test binary ran to its end: it printed its closing PASS or
// FAIL line, and no test of it is unfinished. A binary that crashed (a
// panic, os.Exit, a timeout) or never built did not.
func (rep *TestReport) RanToEnd(pkg string) (present, ended bool) {
	ended, present = rep.packages[pkg]
	return present, ended
}

// ReadTestReport parses the report in file, at most limit bytes, in
// format. The file must be a regular file, not a symlink, and when owner is
// not -1 it must be owner's: the script's user can replace it with a link
// to what only the daemon may read. Memory stays bounded: the file is read
// as a stream, and only the names and outcomes are kept.
func ReadTestReport(file, format string, limit int64, owner int) (*TestReport, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("the test script wrote no test report to $%s", EnvTestReport)
		}
		if errors.Is(err, syscall.ELOOP) {
			return nil, errors.New("the test report is a symlink, not a file")
		}
		return nil, fmt.Errorf("reading the test report: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the test report: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("the test report is not a regular file")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && owner >= 0 && int(st.Uid) != owner {
		return nil, fmt.Errorf("the test report is owned by uid %d, not by the test script's user", st.Uid)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("the test report is %d bytes, more than the %d allowed", fi.Size(), limit)
	}
	return ParseTestReport(io.LimitReader(f, limit), format)
}

// ParseTestReport parses a report from r in format.
func ParseTestReport(r io.Reader, format string) (*TestReport, error) {
	rep := &TestReport{Format: format, Output: newTailBuffer(DefaultOutputLimit)}
	var err error
	switch format {
	case FormatGoTestJSON:
		err = rep.parseGoJSON(r)
	case FormatJUnitXML:
		err = rep.parseJUnit(r)
	case FormatLibtest:
		err = rep.parseLibtest(r)
	default:
		return nil, fmt.Errorf("unknown test report format %q: use one of %s", format, strings.Join(contract.TestFormats, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("the test report is not %s: %w", format, err)
	}
	return rep, nil
}

func (rep *TestReport) add(t TestResult) error {
	if len(rep.Tests) >= maxTests {
		return fmt.Errorf("more than %d test results", maxTests)
	}
	rep.Tests = append(rep.Tests, t)
	return nil
}

// parseGoJSON reads test2json events (go doc test2json). A test that ran
// but has no pass, fail or skip event ended with its binary (a panic, an
// os.Exit): it is unfinished. A package ran to its end when its binary
// printed the line testing.M ends with, "PASS" or "FAIL" (test2json gives
// it as the package's output): a panic's trace, a timeout or an os.Exit
// ends the binary without it.
func (rep *TestReport) parseGoJSON(r io.Reader) error {
	dec := json.NewDecoder(r)
	type key struct{ pkg, test string }
	running := map[key]bool{}
	var order []key
	rep.packages = map[string]bool{}
	for {
		var ev struct {
			Action  string
			Package string
			Test    string
			Output  string
		}
		if err := dec.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		if ev.Output != "" {
			_, _ = rep.Output.Write([]byte(ev.Output))
		}
		if ev.Package != "" {
			if _, ok := rep.packages[ev.Package]; !ok {
				if len(rep.packages) >= maxTests {
					return fmt.Errorf("more than %d packages", maxTests)
				}
				rep.packages[ev.Package] = false
			}
		}
		if ev.Test == "" {
			if ev.Package != "" && ev.Action == "output" && (ev.Output == "PASS\n" || ev.Output == "FAIL\n") {
				rep.packages[ev.Package] = true
			}
			continue
		}
		k := key{ev.Package, ev.Test}
		switch ev.Action {
		case "run":
			if !running[k] {
				if len(running) >= maxTests {
					return fmt.Errorf("more than %d test results", maxTests)
				}
				running[k] = true
				order = append(order, k)
			}
		case "pass", "fail", "skip":
			delete(running, k)
			if err := rep.add(TestResult{Group: ev.Package, Name: ev.Test, Outcome: ev.Action}); err != nil {
				return err
			}
		}
	}
	for _, k := range order {
		if running[k] {
			rep.packages[k.pkg] = false
			if err := rep.add(TestResult{Group: k.pkg, Name: k.test, Outcome: TestUnfinished}); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseJUnit reads <testcase> elements wherever they are (a <testsuites>
// of <testsuite>s, or one <testsuite>): one with <failure> or <error> failed,
// one with <skipped> was skipped, any other passed.
func (rep *TestReport) parseJUnit(r io.Reader) error {
	dec := xml.NewDecoder(r)
	var cur *TestResult
	seen := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "testsuite", "testsuites":
				seen = true
			case "testcase":
				seen = true
				t := TestResult{Outcome: TestPass}
				for _, a := range el.Attr {
					switch a.Name.Local {
					case "name":
						t.Name = strings.TrimSpace(a.Value)
					case "classname":
						t.Group = strings.TrimSpace(a.Value)
					}
				}
				cur = &t
			case "failure", "error":
				if cur != nil {
					cur.Outcome = TestFail
				}
			case "skipped":
				if cur != nil && cur.Outcome == TestPass {
					cur.Outcome = TestSkip
				}
			}
		case xml.EndElement:
			if el.Name.Local == "testcase" && cur != nil {
				if err := rep.add(*cur); err != nil {
					return err
				}
				cur = nil
			}
		}
	}
	if !seen {
		return errors.New("no <testsuite> or <testcase> element")
	}
	return nil
}

// maxLine bounds one line of a libtest report; longer lines (a test's own
// output) are skipped.
const maxLine = 64 << 10

// parseLibtest reads `test NAME ... ok` lines (ok, FAILED, ignored, the
// latter possibly with a reason). Other lines are the tests' and cargo's
// own text.
func (rep *TestReport) parseLibtest(r io.Reader) error {
	br := bufio.NewReaderSize(r, maxLine)
	long := false
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = true
			continue
		}
		if !long && len(line) > 0 {
			if err := rep.libtestLine(bytes.TrimRight(line, "\r\n")); err != nil {
				return err
			}
		}
		long = false
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (rep *TestReport) libtestLine(line []byte) error {
	rest, ok := bytes.CutPrefix(line, []byte("test "))
	if !ok {
		return nil
	}
	i := bytes.LastIndex(rest, []byte(" ... "))
	if i < 0 {
		return nil
	}
	name, state := string(rest[:i]), string(rest[i+len(" ... "):])
	var outcome string
	switch {
	case state == "ok":
		outcome = TestPass
	case state == "FAILED":
		outcome = TestFail
	case state == "ignored" || strings.HasPrefix(state, "ignored, "):
		outcome = TestSkip
	default:
		return nil
	}
	return rep.add(TestResult{Name: name, Outcome: outcome})
}

// TestLists are the tests a task names (its config's tests): those that
// must fail before the fix and pass after, and those that must pass both;
// and the paths a fix may not change.
type TestLists struct {
	Format     string   `yaml:"format"`
	FailToPass []string `yaml:"fail_to_pass"`
	PassToPass []string `yaml:"pass_to_pass"`
	// Protected are globs of the paths a fix may not change
	// (contract.Globs); nil, the key absent, means the language's
	// defaults, an empty list none (TaskConfig.ProtectedPaths).
	Protected []string `yaml:"protected"`
}

// Listed reports whether the task names any test.
func (l *TestLists) Listed() bool {
	return l != nil && (len(l.FailToPass) > 0 || len(l.PassToPass) > 0)
}

// Judgement is how the listed tests fared in a report.
type Judgement struct {
	OK bool
	// Problems has one line for each listed test that did not pass:
	// "fail_to_pass TestX: failed".
	Problems []string
	Passed   int
	Listed   int
}

// Judge checks that every test of each list has a result in rep, and that
// every result it has is a pass: a test that failed, was skipped, did not
// finish or is missing fails the judgement. Each list carries its config
// key, which the problems name.
func (rep *TestReport) Judge(lists ...NamedList) Judgement {
	j := Judgement{OK: true}
	for _, l := range lists {
		for _, name := range l.Names {
			j.Listed++
			var outcomes []string
			for _, t := range rep.Tests {
				if t.Matches(name) && !slices.Contains(outcomes, t.Outcome) {
					outcomes = append(outcomes, t.Outcome)
				}
			}
			why := ""
			switch {
			case len(outcomes) == 0:
				why = "did not run (not in the test report)"
			case slices.Contains(outcomes, TestFail):
				why = "failed"
			case slices.Contains(outcomes, TestUnfinished):
				why = "did not finish"
			case slices.Contains(outcomes, TestSkip):
				why = "was skipped"
			}
			if why == "" {
				j.Passed++
				continue
			}
			j.OK = false
			j.Problems = append(j.Problems, fmt.Sprintf("%s %s: %s", l.List, name, why))
		}
	}
	return j
}

// NamedList is one list of a task's tests with the key it has in the
// config.
type NamedList struct {
	List  string
	Names []string
}

// WriteOutcomes writes the block of every test's outcome that the daemon
// appends to a judged check's output (contract.WriteTestOutcomes).
func (rep *TestReport) WriteOutcomes(w io.Writer) {
	contract.WriteTestOutcomes(w, rep.Format, rep.Tests)
}

// ParseOutcomes reads the last outcome block of a check's log
// (contract.ReadTestOutcomes).
func ParseOutcomes(r io.Reader) (tests []TestResult, ok bool, err error) {
	return contract.ReadTestOutcomes(r)
}
