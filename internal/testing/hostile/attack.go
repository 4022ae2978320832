package hostile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// RedTeamPrefix starts the class of every red-team attack: an agent (or
// an agent folder) written to cheat, not to fix. Attack records them under
// it, so they count in the hostile table too.
const RedTeamPrefix = "red team: "

// Outcome is what one attack came to, as the red-team table prints it.
type Outcome struct {
	mu      sync.Mutex
	verdict string
}

// Verdict sets what the run said of the attacking agent (for example
// "FAILED: intent_test" or "killed: memory limit"), the table's result
// column. Without one the column says only whether the test passed.
func (o *Outcome) Verdict(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.verdict = fmt.Sprintf(format, args...)
}

// Attack records t as a red-team attack of class (RedTeamPrefix is added
// when missing) that stoppedBy names the defence of, and returns the
// Outcome on which the test sets the run's verdict. Like Case, call it
// first in the attack's subtest; the attack also counts as a hostile case.
func Attack(t testing.TB, class, stoppedBy string) *Outcome {
	t.Helper()
	if !strings.HasPrefix(class, RedTeamPrefix) {
		class = RedTeamPrefix + class
	}
	Case(t, class)
	o := &Outcome{}
	dir := os.Getenv(SummaryEnv)
	if dir == "" {
		return o
	}
	t.Cleanup(func() {
		res := outcome(t)
		o.mu.Lock()
		verdict := o.verdict
		o.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d.attacks", os.Getpid())), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Errorf("recording the attack: %v", err)
			return
		}
		defer f.Close()
		fmt.Fprintf(f, "%s\t%s\t%s\t%s\t%s\n", clean(strings.TrimPrefix(class, RedTeamPrefix)), clean(t.Name()), clean(stoppedBy), res, clean(verdict))
	})
	return o
}

// AttackRow is one attack of the red-team table.
type AttackRow struct {
	Class, Test, StoppedBy string
	// Result is pass, fail or skip: whether the attack's test passed
	// (the attack was stopped).
	Result  string
	Verdict string
}

// Attacks reads the attacks recorded in dir, by class then test.
func Attacks(dir string) ([]AttackRow, error) {
	var rows []AttackRow
	err := eachLine(dir, "*.attacks", func(parts []string) {
		if len(parts) == 5 {
			rows = append(rows, AttackRow{Class: parts[0], Test: parts[1], StoppedBy: parts[2], Result: parts[3], Verdict: parts[4]})
		}
	})
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Class != rows[j].Class {
			return rows[i].Class < rows[j].Class
		}
		return rows[i].Test < rows[j].Test
	})
	return rows, err
}

// PrintAttacks writes rows as the red-team table: the attack, what stopped
// it, what the run said, and whether its test passed.
func PrintAttacks(w io.Writer, rows []AttackRow) {
	head := []string{"attack", "stopped by", "result", "test"}
	cells := make([][]string, 0, len(rows))
	stopped := 0
	for _, r := range rows {
		name := r.Test[strings.LastIndex(r.Test, "/")+1:]
		verdict := r.Verdict
		if verdict == "" {
			verdict = "-"
		}
		if r.Result == "pass" {
			stopped++
		}
		cells = append(cells, []string{r.Class + ": " + name, r.StoppedBy, verdict, r.Result})
	}
	width := make([]int, len(head))
	for i, h := range head {
		width[i] = len(h)
	}
	for _, c := range cells {
		for i, s := range c {
			width[i] = max(width[i], len(s))
		}
	}
	line := func(c []string) {
		fmt.Fprintf(w, "%-*s  %-*s  %-*s  %s\n", width[0], c[0], width[1], c[1], width[2], c[2], c[3])
	}
	line(head)
	for _, c := range cells {
		line(c)
	}
	fmt.Fprintf(w, "%d attacks, %d stopped\n", len(rows), stopped)
}
