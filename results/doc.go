// Package results provides the reading of run folders (runs/<run-id>/ with
// summary.json and result.json, as `ssebench run` and `ssebench eval` leave
// them) and the reports made from many runs: pass rates with confidence
// intervals, per-check rates, a task-by-agent matrix and what the runs cost,
// as Markdown, JSON, JUnit XML or one self-contained HTML page.
package results
