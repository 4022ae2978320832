package contract

// The checks of a grade (SPEC.md section 17, docs/tasks.md "How a run is
// graded"), named once: result.json's keys, the logs' names, the daemon's
// grade, the reports' columns and manifest.json's checks all come from
// here.
const (
	// CheckBuild runs the task's build script on the graded tree.
	CheckBuild = "build"
	// CheckTest runs the task's test script on the graded tree; its
	// pass_to_pass tests are judged by name. manifest.json calls it
	// ManifestTestCheck.
	CheckTest = "test"
	// CheckPoC runs the task's run script once per proof of concept.
	CheckPoC = "poc"
	// CheckIntentTest applies the hidden tests (files.future_test) to a
	// copy of the graded tree and runs the test script there.
	CheckIntentTest = "intent_test"
)

// ManifestTestCheck is CheckTest as manifest.json's checks name it (the
// original implementation's name for it).
const ManifestTestCheck = "function_test"

// Checks are every check of a grade, in the order they run.
var Checks = []string{CheckBuild, CheckTest, CheckPoC, CheckIntentTest}

// TimeoutStatus is the exit status of a process killed at its time limit,
// as timeout(1) reports it: the agent's, and a check's.
const TimeoutStatus = 124

// TaskChecks says which scripts and files a task has; ChecksFor turns it
// into the checks its grade runs.
type TaskChecks struct {
	Build, Test, Run bool // scripts.build, scripts.test, scripts.run set
	PoCs             bool // files.poc not empty
	FutureTest       bool // files.future_test set
}

// ChecksFor returns the checks the grader runs for a task, in Checks
// order: build when it has a build script; test when it has a test
// script; poc when it has a run script and proofs of concept; intent_test
// when it has a test script and hidden tests (which run through the test
// script). files.security_test and files.intent_test are reference
// material and add none.
func ChecksFor(t TaskChecks) []string {
	var out []string
	for _, c := range Checks {
		var on bool
		switch c {
		case CheckBuild:
			on = t.Build
		case CheckTest:
			on = t.Test
		case CheckPoC:
			on = t.Run && t.PoCs
		case CheckIntentTest:
			on = t.Test && t.FutureTest
		}
		if on {
			out = append(out, c)
		}
	}
	return out
}

// Check returns the check called name of r: nil when the task has none,
// the grade did not get that far, or name is not one of Checks.
func (r *RunResult) Check(name string) *Check {
	if p := r.checkField(name); p != nil {
		return *p
	}
	return nil
}

// SetCheck sets the check called name of r; a name that is not one of
// Checks is ignored.
func (r *RunResult) SetCheck(name string, c *Check) {
	if p := r.checkField(name); p != nil {
		*p = c
	}
}

func (r *RunResult) checkField(name string) **Check {
	switch name {
	case CheckBuild:
		return &r.Build
	case CheckTest:
		return &r.Test
	case CheckPoC:
		return &r.PoC
	case CheckIntentTest:
		return &r.IntentTest
	}
	return nil
}

// How a run's tests were judged (RunResult.Judged).
const (
	// JudgedByName: the listed tests were judged by name from the test
	// tool's report, and the report carried the grader's canary.
	JudgedByName = "by name"
	// JudgedByNameNoCanary: judged by name, but the task's report format
	// has no canary the grader can add (junit-xml): a report the test
	// binary forged would not be caught.
	JudgedByNameNoCanary = "by name, no canary"
	// JudgedExitStatus: the task lists no tests (tests.fail_to_pass and
	// pass_to_pass are empty), so the test script's exit status alone
	// decided; an init that exits 0 under the test tool passes it.
	// `ssebench dataset verify --write-tests` writes the lists.
	JudgedExitStatus = "exit status"
)

// Integrity verdicts (RunResult.Integrity): the grade found the run's
// evidence untrustworthy, which is never a passed run and is counted
// apart from failed ones.
const (
	// IntegrityReportForged: the test report got the grader's canary
	// wrong (the test that must fail passed, or either is missing from a
	// report that ran to its end): the test binary, which holds the
	// agent's code, rewrote its own report.
	IntegrityReportForged = "report forged"
	// IntegrityTreeTooLarge starts the verdict of a run whose tree went
	// past one of its caps (TreeCaps) or could not be read within
	// SnapshotTimeout: "tree too large: sparse.bin 20 GiB". Nothing was
	// graded, because reading such a tree would have held the run (and
	// the machine) far longer than a fix ever does; the run counts as an
	// attempt that did not pass, not as one the machine failed.
	IntegrityTreeTooLarge = "tree too large"
)

// AuditFinding is one line of final.patch that a fix never needs
// (RunResult.Audit): Path and Line (in the new file; 0 for a path) say
// where, Rule says what.
type AuditFinding struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
	Rule string `json:"rule"`
}
