package results

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// Formats are the report formats Write knows.
var Formats = []string{"md", "json", "junit", "html"}

// Write writes rep to w in format (one of Formats).
func Write(w io.Writer, rep *Report, format string) error {
	switch format {
	case "md", "":
		return writeMarkdown(w, rep)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	case "junit":
		return writeJUnit(w, rep)
	case "html":
		return writeHTML(w, rep)
	}
	return fmt.Errorf("unknown report format %q: use one of %s", format, strings.Join(Formats, ", "))
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

func tokens(t *int64) string {
	if t == nil {
		return "-"
	}
	return fmt.Sprint(*t)
}

// cost is "$0.0123", "-" when unknown (no price).
func cost(c *float64) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("$%.4f", *c)
}

// spendCost is a total's cost: "$0.0123"; "≥ $0.0123 (2 runs unpriced)"
// when runs that used the model had no price, which the sum leaves out;
// "- (2 runs unpriced)" when none had one; "-" without a model.
func spendCost(s Spend) string {
	if s.Unpriced == 0 {
		return cost(s.CostUSD)
	}
	unpriced := Plural(s.Unpriced, "run", "runs") + " unpriced"
	if s.CostUSD == nil {
		return "- (" + unpriced + ")"
	}
	return "≥ " + cost(s.CostUSD) + " (" + unpriced + ")"
}

func writeMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Evaluation report: %s\n\n", rep.Title)
	fmt.Fprintf(&b, "%s of %s on %s.\n\n", Plural(rep.Runs, "run", "runs"), Plural(len(rep.Agents), "agent", "agents"), Plural(len(rep.Tasks), "task", "tasks"))
	if p := rep.Partial; p != nil {
		b.WriteString("**" + p.Text() + "**\n\n")
	}
	if ev := rep.Evaluation; ev != nil {
		writeBudgetMarkdown(&b, ev)
	}
	if v := verdictsLine(rep); v != "" {
		b.WriteString("**" + v + "**\n\n")
	}
	b.WriteString("## Pass rate\n\n")
	b.WriteString("| agent | model | passed | attempts | rate | 95% CI (Wilson) | not graded | forged | flagged | tokens | cost | mean agent time | total time | building | agent | grading |\n")
	b.WriteString("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, a := range rep.Agents {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s–%s | %d | %d | %d | %s | %s | %.1f s | %.1f s | %.1f s | %.1f s | %.1f s |\n",
			a.Agent, a.Model, a.Passed, a.Attempts, pct(a.Rate), pct(a.Low), pct(a.High), a.NotGraded, a.Forged, a.Flagged, tokens(a.Tokens), spendCost(a.Spend),
			a.MeanAgentSeconds, a.Seconds, a.BuildSeconds, a.AgentSeconds, a.GradeSeconds)
	}
	b.WriteString("\nTime: building is images built and imported and the container started; agent is the agent's own time; grading the checks.\n")
	if st := rep.Startup; st != nil {
		b.WriteString(st.Text() + "\n")
	}
	b.WriteString("Forged: runs with an integrity verdict (the grade's evidence was forged), neither passed nor failed. Flagged: runs whose patch the audit flagged.\n")
	attentionMarkdown(&b, rep)
	b.WriteString("\n## Checks\n\n| agent | model |")
	for _, n := range contract.Checks {
		b.WriteString(" " + n + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---:|", len(contract.Checks)) + "\n")
	for _, a := range rep.Agents {
		fmt.Fprintf(&b, "| %s | %s |", a.Agent, a.Model)
		for _, n := range contract.Checks {
			cell := "-"
			for _, c := range a.Checks {
				if c.Name == n {
					cell = fmt.Sprintf("%d/%d", c.Passed, c.Of)
				}
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Tasks (passed/attempts)\n\n| task |")
	for _, a := range rep.Agents {
		b.WriteString(" " + a.Label() + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(rep.Agents)) + "\n")
	for _, row := range rep.Matrix {
		b.WriteString("| " + row.Task + " |")
		for _, c := range row.Cells {
			fmt.Fprintf(&b, " %s |", cellText(c))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Tokens and cost per task\n\n| task |")
	for _, a := range rep.Agents {
		b.WriteString(" " + a.Label() + " |")
	}
	b.WriteString(" all |\n|---|" + strings.Repeat("---:|", len(rep.Agents)+1) + "\n")
	for _, row := range rep.Matrix {
		b.WriteString("| " + row.Task + " |")
		for _, c := range row.Cells {
			b.WriteString(" " + spendText(c.Spend) + " |")
		}
		b.WriteString(" " + spendText(row.Spend) + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// spendText is "1234 tokens, $0.0123", "-" when nothing is known.
func spendText(s Spend) string {
	switch {
	case s.Tokens == nil:
		return "-"
	case s.CostUSD == nil && s.Unpriced == 0:
		return tokens(s.Tokens) + " tokens"
	}
	return tokens(s.Tokens) + " tokens, " + spendCost(s)
}

func writeBudgetMarkdown(b *strings.Builder, ev *Evaluation) {
	if ev.Budget != nil {
		fmt.Fprintf(b, "Budget: %s spent.", ev.Budget.Text())
	}
	if n := len(ev.NotStarted); n > 0 {
		fmt.Fprintf(b, " **%s not started: %s.**\n\n", Plural(n, "run was", "runs were"), ev.NotStarted[0].Reason)
		b.WriteString("| task | agent | attempt | why |\n|---|---|---:|---|\n")
		for _, r := range ev.NotStarted {
			fmt.Fprintf(b, "| %s | %s | %d | %s |\n", r.Task, r.Agent, r.Attempt, r.Reason)
		}
	}
	b.WriteString("\n")
}

// cellText is a matrix cell: "1/2", "0/2 (1 forged)", "0/1 (1 not
// applied)"; "-" when the pair has no attempt (an evaluation stopped
// before it), which is no pass and no failure.
func cellText(c Cell) string {
	if c.Attempts == 0 {
		return "-"
	}
	t := fmt.Sprintf("%d/%d", c.Passed, c.Attempts)
	var more []string
	if c.Forged > 0 {
		more = append(more, fmt.Sprintf("%d forged", c.Forged))
	}
	if c.NotApplied > 0 {
		more = append(more, fmt.Sprintf("%d not applied", c.NotApplied))
	}
	if len(more) > 0 {
		t += " (" + strings.Join(more, ", ") + ")"
	}
	return t
}

// cellClass is a matrix cell's class in the HTML report: "none" for a
// pair with no attempt (grey, not a green 0/0), "forged", "pass" when
// every attempt passed, else "fail".
func cellClass(c Cell) string {
	switch {
	case c.Attempts == 0:
		return "none"
	case c.Forged > 0:
		return "forged"
	case c.Passed == c.Attempts:
		return "pass"
	}
	return "fail"
}
