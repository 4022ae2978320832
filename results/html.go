package results

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// chartJS is Chart.js's UMD build, vendored (see assets/README.md).
//
//go:embed assets/chart.umd.min.js
var chartJS string

// chartJSVersion is the version of the vendored Chart.js.
const chartJSVersion = "4.6.1"

// chartData is what the page's script draws.
type chartData struct {
	Agents    []string  `json:"agents"`
	Rates     []float64 `json:"rates"`
	Low       []float64 `json:"low"`
	High      []float64 `json:"high"`
	RunLabels []string  `json:"run_labels"`
	RunSecs   []float64 `json:"run_seconds"`
	RunBuild  []float64 `json:"run_build_seconds"`
	RunAgentS []float64 `json:"run_agent_seconds"`
	RunGrade  []float64 `json:"run_grade_seconds"`
	// RunOther is the rest of a run's wall time (the container's own
	// start and end, copying results), so a bar is the whole run.
	RunOther  []float64 `json:"run_other_seconds"`
	RunAgent  []int     `json:"run_agent"`
	RunPassed []bool    `json:"run_passed"`
}

func writeHTML(w io.Writer, rep *Report) error {
	d := chartData{}
	index := map[string]int{}
	for i, a := range rep.Agents {
		d.Agents = append(d.Agents, a.Label())
		d.Rates = append(d.Rates, 100*a.Rate)
		d.Low = append(d.Low, 100*a.Low)
		d.High = append(d.High, 100*a.High)
		index[a.Agent+"\x00"+a.Model] = i
	}
	for _, e := range rep.Entries {
		d.RunLabels = append(d.RunLabels, fmt.Sprintf("%s · %s", caseName(e), e.Agent))
		d.RunSecs = append(d.RunSecs, e.DurationSeconds)
		d.RunBuild = append(d.RunBuild, e.BuildSeconds)
		d.RunAgentS = append(d.RunAgentS, e.AgentSeconds)
		d.RunGrade = append(d.RunGrade, e.GradeSeconds)
		d.RunOther = append(d.RunOther, round(max(0, e.DurationSeconds-e.BuildSeconds-e.AgentSeconds-e.GradeSeconds), 3))
		d.RunAgent = append(d.RunAgent, index[e.Agent+"\x00"+e.Model])
		d.RunPassed = append(d.RunPassed, e.Passed)
	}
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return pageTemplate.Execute(w, map[string]any{
		"R": rep, "Checks": contract.Checks, "ChartJS": template.JS(chartJS), "ChartJSVersion": chartJSVersion,
		"Data": template.JS(data),
	})
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct": pct, "tokens": tokens, "cost": cost, "spendCost": spendCost, "spend": spendText, "plural": Plural,
	"check": func(a AgentStats, name string) string {
		for _, c := range a.Checks {
			if c.Name == name {
				return fmt.Sprintf("%d/%d", c.Passed, c.Of)
			}
		}
		return "-"
	},
	"secs": func(x float64) string { return fmt.Sprintf("%.1f s", x) },
	"cell": cellText, "cellClass": cellClass, "verdicts": verdictsLine, "finding": FindingText, "path": PathText,
	"join": strings.Join,
	"gradeClass": func(e Entry) string {
		switch {
		case e.Integrity != "":
			return "forged"
		case e.Passed:
			return "pass"
		}
		return "fail"
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ssebench report: {{.R.Title}}</title>
<script>
// Errors of this page are listed in #page-errors, for whoever checks the
// report without a console.
window.pageErrors = [];
window.addEventListener("error", function (e) { window.pageErrors.push(String(e.message)); });
(function () {
	var orig = console.error;
	console.error = function () { window.pageErrors.push(Array.prototype.join.call(arguments, " ")); return orig.apply(console, arguments); };
})();
</script>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.pass { background: #e3f6e3; } td.fail { background: #fbe4e4; } td.none { background: #eee; color: #777; }
td.forged, .forged strong { background: #f6d9f6; font-weight: bold; }
#verdicts { background: #fff4d6; padding: 0.5em 1em; }
#to-read li { margin: 0.4em 0; } #to-read code { background: #f4f4f4; }
#runs td { text-align: left; } #runs td:nth-child(n+6) { text-align: right; white-space: nowrap; }
.charts { display: flex; flex-wrap: wrap; gap: 2em; }
.chart { width: 520px; height: 320px; }
footer { color: #777; font-size: 0.85em; margin-top: 3em; }
</style>
</head>
<body>
<h1>Evaluation report: {{.R.Title}}</h1>
<p>{{plural .R.Runs "run" "runs"}} of {{plural (len .R.Agents) "agent" "agents"}} on {{plural (len .R.Tasks) "task" "tasks"}}{{if not .R.Started.IsZero}}, {{.R.Started.UTC.Format "2006-01-02 15:04"}} to {{.R.Finished.UTC.Format "2006-01-02 15:04"}} UTC{{end}}.</p>
{{with .R.Partial}}<p id="partial"><strong>{{.Text}}</strong></p>
{{end}}{{with verdicts .R}}<p id="verdicts"><strong>{{.}}</strong></p>
{{end}}<div class="charts">
<div class="chart"><canvas id="pass-rate" aria-label="pass rate per agent" role="img"></canvas></div>
<div class="chart"><canvas id="run-time" aria-label="time per run" role="img"></canvas></div>
</div>
{{with .R.Evaluation}}<section id="budget">{{with .Budget}}<p>Budget: {{.Text}} spent.</p>{{end}}
{{if .NotStarted}}<p><strong>{{plural (len .NotStarted) "run was" "runs were"}} not started: {{(index .NotStarted 0).Reason}}.</strong></p>
<table id="not-started"><tr><th>task</th><th>agent</th><th>attempt</th><th>why</th></tr>
{{range .NotStarted}}<tr><td>{{.Task}}</td><td>{{.Agent}}</td><td>{{.Attempt}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>{{end}}</section>
{{end}}<h2>Pass rate</h2>
<table id="agents">
<tr><th>agent</th><th>model</th><th>passed</th><th>attempts</th><th>rate</th><th>95% CI (Wilson)</th><th>not graded</th><th>forged</th><th>flagged</th><th>tokens</th><th>cost</th><th>mean agent time</th><th>total time</th><th>building</th><th>agent</th><th>grading</th></tr>
{{range .R.Agents}}<tr><td class="agent">{{.Agent}}</td><td>{{.Model}}</td><td>{{.Passed}}</td><td>{{.Attempts}}</td><td>{{pct .Rate}}</td><td>{{pct .Low}}–{{pct .High}}</td><td>{{.NotGraded}}</td><td class="forged-count">{{.Forged}}</td><td class="flagged-count">{{.Flagged}}</td><td class="tokens">{{tokens .Tokens}}</td><td class="cost">{{spendCost .Spend}}</td><td>{{secs .MeanAgentSeconds}}</td><td>{{secs .Seconds}}</td><td>{{secs .BuildSeconds}}</td><td>{{secs .AgentSeconds}}</td><td>{{secs .GradeSeconds}}</td></tr>
{{end}}</table>
<p>Forged: runs with an integrity verdict (the grade's evidence was forged), neither passed nor failed. Flagged: runs whose patch the audit flagged.</p>
{{with .R.ToRead}}<section id="to-read">
<h2>Runs to read</h2>
<p>Forged runs have an integrity verdict: the grade found their evidence forged; they are counted apart from the failed ones. Flagged runs' patches hold what a fix never needs (the audit); a run judged by exit status had no test list, so its test check is weak.{{if $.R.FailOnAudit}} Flagged runs count as failed here (--fail-on-audit).{{end}}</p>
<ul>
{{range .}}<li class="{{gradeClass .}}"><strong>{{.ID}}</strong> {{.Task}}, {{.Agent}}: <strong>{{.Grade}}</strong>{{with .Flags}}; {{join . "; "}}{{end}}
{{if or .DroppedPaths .Audit}}<ul>{{range .DroppedPaths}}<li>dropped: <code>{{path .}}</code></li>{{end}}{{range .Audit}}<li><code>{{finding .}}</code></li>{{end}}</ul>{{end}}</li>
{{end}}</ul>
</section>
{{end}}<h2>Checks</h2>
<table id="checks">
<tr><th>agent</th>{{range .Checks}}<th>{{.}}</th>{{end}}</tr>
{{range $a := .R.Agents}}<tr><td>{{$a.Label}}</td>{{range $.Checks}}<td>{{check $a .}}</td>{{end}}</tr>
{{end}}</table>
<h2>Tasks</h2>
<table id="matrix">
<tr><th>task</th>{{range .R.Agents}}<th>{{.Label}}</th>{{end}}<th>tokens and cost</th></tr>
{{range .R.Matrix}}<tr><td>{{.Task}}</td>{{range .Cells}}<td class="{{cellClass .}}" title="{{spend .Spend}}">{{cell .}}</td>{{end}}<td class="spend">{{spend .Spend}}</td></tr>
{{end}}</table>
<h2>Runs</h2>
<table id="runs">
<tr><th>run</th><th>task</th><th>agent</th><th>grade</th><th>to read</th><th>time</th><th>building</th><th>agent</th><th>grading</th><th>tokens</th><th>cost</th></tr>
{{range .R.Entries}}<tr><td>{{.ID}}</td><td>{{.Task}}</td><td>{{.Agent}}</td><td class="{{gradeClass .}}">{{.Grade}}</td><td class="flags">{{join .Flags "; "}}</td><td>{{secs .DurationSeconds}}</td><td>{{secs .BuildSeconds}}</td><td>{{secs .AgentSeconds}}</td><td>{{secs .GradeSeconds}}</td><td class="tokens">{{tokens .Tokens}}</td><td class="cost">{{cost .CostUSD}}</td></tr>
{{end}}</table>
<pre id="page-errors" hidden></pre>
<footer>Made by ssebench; charts by Chart.js {{.ChartJSVersion}} (MIT licence), inlined: this page needs no network.</footer>
<script>{{.ChartJS}}</script>
<script>
(function () {
	var d = {{.Data}};
	var palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"];
	Chart.defaults.animation = false;
	var rate = new Chart(document.getElementById("pass-rate"), {
		type: "bar",
		data: { labels: d.agents, datasets: [{ label: "pass rate (%)", data: d.rates,
			backgroundColor: d.agents.map(function (_, i) { return palette[i % palette.length]; }) }] },
		options: { maintainAspectRatio: false, scales: { y: { min: 0, max: 100, title: { display: true, text: "% of attempts passed" } } },
			plugins: { title: { display: true, text: "Pass rate per agent (%)" }, legend: { display: false },
				tooltip: { callbacks: { afterLabel: function (c) { return "95% CI " + d.low[c.dataIndex].toFixed(0) + "–" + d.high[c.dataIndex].toFixed(0) + "%"; } } } } }
	});
	var time = new Chart(document.getElementById("run-time"), {
		type: "bar",
		// Stacked: building (images, import, start), the agent, grading.
		data: { labels: d.run_labels, datasets: [
			{ label: "agent", data: d.run_agent_seconds, backgroundColor: d.run_agent.map(function (i) { return palette[i % palette.length]; }) },
			{ label: "grading", data: d.run_grade_seconds, backgroundColor: "#999" },
			{ label: "building", data: d.run_build_seconds, backgroundColor: "#ddd" },
			{ label: "other", data: d.run_other_seconds, backgroundColor: "#f3f3f3" }] },
		options: { maintainAspectRatio: false, plugins: { title: { display: true, text: "Time per run (s): agent, grading, building, other" } },
			scales: { x: { stacked: true }, y: { min: 0, stacked: true } } }
	});
	// How many bars each chart drew, for checks of the page.
	document.getElementById("pass-rate").dataset.bars = rate.getDatasetMeta(0).data.length;
	document.getElementById("run-time").dataset.bars = time.getDatasetMeta(0).data.length;
	var pe = document.getElementById("page-errors");
	pe.textContent = window.pageErrors.join("\n");
	pe.dataset.count = window.pageErrors.length;
})();
</script>
</body>
</html>
`))
