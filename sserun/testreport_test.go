package sserun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

const goJSONReport = `{"Action":"start","Package":"example.com/kv"}
{"Action":"run","Package":"example.com/kv","Test":"TestParse"}
{"Action":"output","Package":"example.com/kv","Test":"TestParse","Output":"=== RUN   TestParse\n"}
{"Action":"run","Package":"example.com/kv","Test":"TestParse/empty"}
{"Action":"pass","Package":"example.com/kv","Test":"TestParse/empty"}
{"Action":"pass","Package":"example.com/kv","Test":"TestParse"}
{"Action":"run","Package":"example.com/kv","Test":"TestSkipped"}
{"Action":"skip","Package":"example.com/kv","Test":"TestSkipped"}
{"Action":"run","Package":"example.com/kv/internal/io","Test":"TestParse"}
{"Action":"fail","Package":"example.com/kv/internal/io","Test":"TestParse"}
{"Action":"run","Package":"example.com/kv","Test":"TestPanics"}
{"Action":"output","Package":"example.com/kv","Output":"FAIL\texample.com/kv\n"}
{"Action":"fail","Package":"example.com/kv"}
`

func TestParseGoTestJSON(t *testing.T) {
	rep, err := ParseTestReport(strings.NewReader(goJSONReport), FormatGoTestJSON)
	if err != nil {
		t.Fatal(err)
	}
	want := []TestResult{
		{Group: "example.com/kv", Name: "TestParse/empty", Outcome: TestPass},
		{Group: "example.com/kv", Name: "TestParse", Outcome: TestPass},
		{Group: "example.com/kv", Name: "TestSkipped", Outcome: TestSkip},
		{Group: "example.com/kv/internal/io", Name: "TestParse", Outcome: TestFail},
		{Group: "example.com/kv", Name: "TestPanics", Outcome: TestUnfinished},
	}
	if diff := cmp.Diff(want, rep.Tests); diff != "" {
		t.Errorf("tests (-want +got):\n%s", diff)
	}
	if got := rep.Output.String(); got != "=== RUN   TestParse\nFAIL\texample.com/kv\n" {
		t.Errorf("output = %q", got)
	}
	for _, tt := range []struct {
		names []string
		ok    bool
		probs []string
	}{
		{[]string{"TestParse/empty", "example.com/kv.TestParse"}, true, nil},
		// Unqualified: every package's TestParse must pass.
		{[]string{"TestParse"}, false, []string{"fail_to_pass TestParse: failed"}},
		{[]string{"TestSkipped", "TestPanics", "TestGone", "example.com/kv.TestParse/none"}, false, []string{
			"fail_to_pass TestSkipped: was skipped",
			"fail_to_pass TestPanics: did not finish",
			"fail_to_pass TestGone: did not run (not in the test report)",
			"fail_to_pass example.com/kv.TestParse/none: did not run (not in the test report)",
		}},
	} {
		j := rep.Judge(NamedList{"fail_to_pass", tt.names})
		if j.OK != tt.ok || !cmp.Equal(j.Problems, tt.probs) {
			t.Errorf("Judge(%q) = %+v, want ok %t and %q", tt.names, j, tt.ok, tt.probs)
		}
	}
}

func TestParseJUnit(t *testing.T) {
	const report = `<?xml version="1.0"?>
<testsuites><testsuite name="qs">
  <testcase classname="qs" name="decode_plain" time="0.01"/>
  <testcase classname="qs" name="decode_truncated"><failure message="boom">at qs.c:10</failure></testcase>
  <testcase classname="qs" name="decode_later"><skipped/></testcase>
  <testcase classname="other" name="decode_plain"><error/></testcase>
</testsuite></testsuites>`
	rep, err := ParseTestReport(strings.NewReader(report), FormatJUnitXML)
	if err != nil {
		t.Fatal(err)
	}
	want := []TestResult{
		{Group: "qs", Name: "decode_plain", Outcome: TestPass},
		{Group: "qs", Name: "decode_truncated", Outcome: TestFail},
		{Group: "qs", Name: "decode_later", Outcome: TestSkip},
		{Group: "other", Name: "decode_plain", Outcome: TestFail},
	}
	if diff := cmp.Diff(want, rep.Tests); diff != "" {
		t.Errorf("tests (-want +got):\n%s", diff)
	}
	if j := rep.Judge(NamedList{"pass_to_pass", []string{"qs.decode_plain"}}); !j.OK {
		t.Errorf("qs.decode_plain: %+v", j)
	}
	if j := rep.Judge(NamedList{"pass_to_pass", []string{"decode_plain"}}); j.OK {
		t.Errorf("decode_plain, failed in other: %+v", j)
	}
}

func TestParseLibtest(t *testing.T) {
	report := "   Compiling netstrings v0.1.0\n" +
		"running 3 tests\n" +
		"test tests::decode_ok ... ok\n" +
		"test tests::decode_huge ... FAILED\n" +
		"test tests::slow ... ignored, takes a minute\n" +
		"test " + strings.Repeat("x", 100<<10) + " ... ok\n" +
		"test src/lib.rs - decode (line 10) ... ok\n" +
		"test result: FAILED. 1 passed; 1 failed; 1 ignored\n" +
		"test decode_ok ... ok"
	rep, err := ParseTestReport(strings.NewReader(report), FormatLibtest)
	if err != nil {
		t.Fatal(err)
	}
	want := []TestResult{
		{Group: "", Name: "tests::decode_ok", Outcome: TestPass},
		{Group: "", Name: "tests::decode_huge", Outcome: TestFail},
		{Group: "", Name: "tests::slow", Outcome: TestSkip},
		{Group: "", Name: "src/lib.rs - decode (line 10)", Outcome: TestPass},
		{Group: "", Name: "decode_ok", Outcome: TestPass},
	}
	if diff := cmp.Diff(want, rep.Tests); diff != "" {
		t.Errorf("tests (-want +got):\n%s", diff)
	}
}

func TestOutcomesRoundTrip(t *testing.T) {
	rep, err := ParseTestReport(strings.NewReader(goJSONReport), FormatGoTestJSON)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("=== test pass: forged before the block\n")
	rep.WriteOutcomes(&b)
	got, ok, err := ParseOutcomes(strings.NewReader(b.String()))
	if err != nil || !ok {
		t.Fatalf("ParseOutcomes = %v, %t", err, ok)
	}
	if diff := cmp.Diff(rep.Tests, got); diff != "" {
		t.Errorf("outcomes (-written +read):\n%s", diff)
	}
}

// TestHostileTestReports: a report the agent's code garbled, swapped for a
// link, or blew up is a failed check with a one-line reason, read within
// its size cap.
func TestHostileTestReports(t *testing.T) {
	hostile.Case(t, "hostile test reports")
	dir := t.TempDir()
	garbled := filepath.Join(dir, "garbled")
	write(t, garbled, `{"Action":"pass","Test":"TestX"`+"\n{not json", 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(garbled, link); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	write(t, huge, strings.Repeat("test x ... ok\n", 1000), 0o644)
	for _, tt := range []struct {
		file, format, want string
		limit              int64
	}{
		{garbled, FormatGoTestJSON, "the test report is not go-test-json", 1 << 20},
		{garbled, FormatJUnitXML, "the test report is not junit-xml", 1 << 20},
		{link, FormatLibtest, "symlink", 1 << 20},
		{huge, FormatLibtest, "more than the 100 allowed", 100},
		{filepath.Join(dir, "none"), FormatLibtest, "wrote no test report to $SSE_TEST_REPORT", 100},
		{dir, FormatLibtest, "not a regular file", 100},
	} {
		_, err := ReadTestReport(tt.file, tt.format, tt.limit, -1)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ReadTestReport(%s, %s) = %v, want one line with %q", filepath.Base(tt.file), tt.format, err, tt.want)
		}
	}
	if _, err := ReadTestReport(garbled, FormatLibtest, 1<<20, os.Getuid()+1); err == nil || !strings.Contains(err.Error(), "owned by uid") {
		t.Errorf("a report of another user's = %v, want refused", err)
	}
}
