package results

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// JUnit XML as CI systems read it (the JUnit.xsd that Jenkins and most CI
// importers follow): <testsuites> holds one <testsuite> per agent and
// model, with one <testcase> per run; a graded failure is a <failure>
// naming the failed checks with their logs' tails, a run left without a
// grade an <error>, and so is a run with an integrity verdict (type
// "integrity": counted apart from the failures). A test case has no
// output of its own in the schema, so the suite's system-out lists the
// runs to read (forged, flagged by the audit, judged by exit status). The schema wants properties, system-out and system-err
// in every suite, and a timestamp without a zone.

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Package    string          `xml:"package,attr"`
	ID         int             `xml:"id,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Hostname   string          `xml:"hostname,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out"`
	SystemErr  string          `xml:"system-err"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// logTailLines is how much of a failed check's log a report quotes.
const logTailLines = 20

func writeJUnit(w io.Writer, rep *Report) error {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	out := junitSuites{}
	for i, a := range rep.Agents {
		s := junitSuite{
			Name: a.Label(), Package: "ssebench." + a.Agent, ID: i, Hostname: host,
			Timestamp: rep.Started.UTC().Format("2006-01-02T15:04:05"),
			Properties: []junitProperty{{Name: "agent", Value: a.Agent}, {Name: "model", Value: a.Model},
				{Name: "tokens", Value: tokens(a.Tokens)}, {Name: "cost_usd", Value: strings.TrimPrefix(cost(a.CostUSD), "$")}, {Name: "unpriced_runs", Value: fmt.Sprint(a.Unpriced)},
				{Name: "build_seconds", Value: fmt.Sprintf("%.3f", a.BuildSeconds)}, {Name: "agent_seconds", Value: fmt.Sprintf("%.3f", a.AgentSeconds)},
				{Name: "grade_seconds", Value: fmt.Sprintf("%.3f", a.GradeSeconds)}},
		}
		if p := rep.Partial; p != nil {
			s.Properties = append(s.Properties, junitProperty{Name: "partial", Value: p.Text()})
		}
		if ev := rep.Evaluation; ev != nil {
			n := 0
			for _, ns := range ev.NotStarted {
				if ns.Agent == a.Agent {
					n++
				}
			}
			if n > 0 {
				s.Properties = append(s.Properties, junitProperty{Name: "not_started", Value: fmt.Sprintf("%d (%s)", n, ev.NotStarted[0].Reason)})
			}
		}
		s.Properties = append(s.Properties, junitProperty{Name: "forged", Value: fmt.Sprint(a.Forged)}, junitProperty{Name: "flagged", Value: fmt.Sprint(a.Flagged)})
		var secs float64
		var toRead strings.Builder
		for _, e := range rep.Entries {
			if e.Agent != a.Agent || e.Model != a.Model {
				continue
			}
			c := junitCase{Name: caseName(e), Classname: e.Task, Time: fmt.Sprintf("%.3f", e.DurationSeconds)}
			secs += e.DurationSeconds
			if e.Integrity != "" || len(e.Flags()) > 0 {
				toRead.WriteString(readText(e))
			}
			switch {
			case e.Integrity != "":
				c.Error = &junitProblem{Message: e.Grade, Type: "integrity", Text: readText(e)}
				s.Errors++
			case !e.Graded:
				c.Error = &junitProblem{Message: e.Grade, Type: "not-graded", Text: "run " + e.ID + " in " + e.Dir}
				s.Errors++
			case e.NotApplied:
				// A failure (the unchanged source was graded), of a type
				// of its own: the patch never reached the tree.
				c.Failure = &junitProblem{Message: e.Grade, Type: "not-applied", Text: failureText(e)}
				s.Failures++
			case !e.Passed:
				c.Failure = &junitProblem{Message: e.Grade, Type: "grade", Text: failureText(e)}
				s.Failures++
			}
			s.Cases = append(s.Cases, c)
			s.Tests++
		}
		s.Time = fmt.Sprintf("%.3f", secs)
		s.SystemOut = toRead.String()
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func caseName(e Entry) string {
	n := e.Task
	if e.Attempt > 0 {
		n += fmt.Sprintf(" #%d", e.Attempt)
	}
	return n
}

// readText is what a reader must know of a forged or flagged run: its
// verdict, what it means, the paths dropped and the audit's findings.
func readText(e Entry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s (%s) in %s: %s\n", e.ID, caseName(e), e.Dir, e.Grade)
	if e.Integrity != "" {
		b.WriteString("  " + IntegrityText(e.Integrity) + "\n")
	}
	if f := e.Flags(); len(f) > 0 {
		b.WriteString("  " + strings.Join(f, "; ") + "\n")
	}
	for _, p := range e.DroppedPaths {
		b.WriteString("  dropped: " + PathText(p) + "\n")
	}
	for _, f := range e.Audit {
		b.WriteString("  audit: " + FindingText(f) + "\n")
	}
	return b.String()
}

// failureText names each failed check with the tail of its log.
func failureText(e Entry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s in %s\n", e.ID, e.Dir)
	for _, f := range e.Audit {
		b.WriteString("audit: " + FindingText(f) + "\n")
	}
	for _, c := range e.Checks {
		if c.OK() || c.Status == "skipped" {
			continue
		}
		fmt.Fprintf(&b, "\n%s: %s (exit %d)\n", c.Name, c.Status, c.Exit)
		if c.Log != "" {
			b.WriteString(Tail(filepath.Join(e.Dir, c.Log), logTailLines))
		}
	}
	return b.String()
}

// tailBytes bounds what Tail reads of a log: its end only.
const tailBytes = 64 << 10

// Tail returns the last n lines of the file at path ("" when it cannot be
// read), reading at most its last 64 KiB.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > tailBytes {
		f.Seek(st.Size()-tailBytes, io.SeekStart)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	lines := strings.SplitAfter(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "") + "\n"
}
