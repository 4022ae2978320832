package results

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
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

func writeMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Evaluation report: %s\n\n", rep.Title)
	fmt.Fprintf(&b, "%d runs of %d agents on %d tasks.\n\n", rep.Runs, len(rep.Agents), len(rep.Tasks))
	b.WriteString("## Pass rate\n\n")
	b.WriteString("| agent | model | passed | attempts | rate | 95% CI (Wilson) | not graded | mean time | total time | tokens |\n")
	b.WriteString("|---|---|---:|---:|---:|---|---:|---:|---:|---:|\n")
	for _, a := range rep.Agents {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s–%s | %d | %.1f s | %.1f s | %s |\n",
			a.Agent, a.Model, a.Passed, a.Attempts, pct(a.Rate), pct(a.Low), pct(a.High), a.NotGraded, a.MeanSeconds, a.Seconds, tokens(a.Tokens))
	}
	b.WriteString("\n## Checks\n\n| agent | model |")
	for _, n := range CheckNames {
		b.WriteString(" " + n + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---:|", len(CheckNames)) + "\n")
	for _, a := range rep.Agents {
		fmt.Fprintf(&b, "| %s | %s |", a.Agent, a.Model)
		for _, n := range CheckNames {
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
			fmt.Fprintf(&b, " %d/%d |", c.Passed, c.Attempts)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
