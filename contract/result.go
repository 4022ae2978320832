package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
)

// result.json and the files beside it are what a run leaves in its
// results directory: the entrypoint writes them inside the image, and the
// host reads them after the container ends (the pipeline adds what only
// it knows, results and release verification grade from them). Both
// sides use these names and types, so they live here rather than in the
// runtime.

// Files the entrypoint writes in the results directory.
const (
	ResultFile  = "result.json"
	PatchFile   = "final.patch"
	AgentLog    = "agent.log"
	DaemonLog   = "daemon.log"
	MCPLog      = "mcp.log"
	checkLogFmt = "%s.log" // build.log, test.log, poc.log, intent_test.log: each check's output
)

// CheckLog returns the name of the file that holds a check's output.
func CheckLog(check string) string { return fmt.Sprintf(checkLogFmt, check) }

// RunResult is result.json: what the agent did and how its tree graded.
type RunResult struct {
	TaskID string `json:"task_id"`
	// Mode is "sandbox" or "sidecar".
	Mode string `json:"mode"`
	// Command is the agent command as run by `sh -c`.
	Command string `json:"command"`
	// AgentExit is the agent's exit status (TimeoutStatus, 124, when
	// it timed out, 128+N after signal N); the container exits with it.
	AgentExit int  `json:"agent_exit"`
	TimedOut  bool `json:"timed_out"`
	// Killed names the limit of the run (KilledMemory, KilledPids) that
	// the agent hit: the kernel killed its processes for memory, or
	// refused them new ones. Empty when none was hit.
	Killed          string `json:"killed,omitempty"`
	AgentDurationMS int64  `json:"agent_duration_ms"`
	// Difficulty is the level the run gave the agent (SSE_DIFFICULTY).
	Difficulty int `json:"difficulty"`
	// ToolCalls is how many tool calls the agent made (each is a line of
	// tool_calls.jsonl).
	ToolCalls int `json:"tool_calls"`
	// PatchBytes and PatchSHA256 describe final.patch, the agent's change
	// to the buggy commit (untracked files included, ignored ones not).
	PatchBytes  int64  `json:"patch_bytes"`
	PatchSHA256 string `json:"patch_sha256"`
	// Build, Test and PoC are the checks; null when the task has none or
	// when grading failed (see GradeError).
	Build *Check `json:"build"`
	Test  *Check `json:"test"`
	PoC   *Check `json:"poc"`
	// IntentTest is the hidden tests: the task's future_test diff applied
	// to a copy of the agent's tree, and the test script run there; absent
	// when the task has no future_test.
	IntentTest *Check `json:"intent_test,omitempty"`
	// Sandbox is how the grade's scripts ran: "namespaces" (each in
	// namespaces of its own: a private /tmp and loopback), or "none: "
	// and why the kernel or the container runtime refused them. Empty
	// when nothing was graded or the daemon is not root.
	Sandbox string `json:"sandbox,omitempty"`
	// Passed is true when every check that applies passed and the grade
	// found nothing wrong with its evidence (Integrity is empty).
	Passed     bool   `json:"passed"`
	GradeError string `json:"grade_error,omitempty"`
	// Judged says how the test checks were judged (JudgedByName, ...);
	// empty when no test check ran.
	Judged string `json:"judged,omitempty"`
	// Integrity is a verdict of its own (IntegrityReportForged, ...): the
	// grade's evidence was forged or could not be had because of what the
	// agent did. Passed is then false, and reports count the run apart
	// from the failed ones. Empty when nothing was wrong.
	Integrity string `json:"integrity,omitempty"`
	// DroppedPaths are the paths the agent changed that a fix may not
	// change (the task's protected paths: test files, test data, vendored
	// code, ...): final.patch shows the changes, and the graded tree has
	// the pristine version of each (added ones removed).
	DroppedPaths []string `json:"dropped_paths,omitempty"`
	// Audit lists what final.patch holds that a fix never needs (a
	// TestMain or init added, a re-exec of the test binary, ...); it does
	// not change Passed, unless `eval --fail-on-audit` says so.
	Audit []AuditFinding `json:"audit,omitempty"`
	// Notes are things a reader of the result should know (no git, no
	// daemon, ...).
	Notes []string `json:"notes,omitempty"`

	// The host adds these after the container exits (the container does
	// not know them): the run id, the agent folder, the model and the
	// case image as name@digest.
	RunID     string `json:"run_id,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Model     string `json:"model,omitempty"`
	CaseImage string `json:"case_image,omitempty"`
	// ModelUsage is the model gateway's totals (pipeline adds them), kept
	// as they are by whoever rewrites the file.
	ModelUsage json.RawMessage `json:"model_usage,omitempty"`
}

// Check is the outcome of one check in result.json. Its output is in Log,
// a file of the results directory.
type Check struct {
	OK         bool   `json:"ok"`
	Exit       int    `json:"exit"`
	DurationMS int64  `json:"duration_ms"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	Skipped    string `json:"skipped,omitempty"`
	Log        string `json:"log,omitempty"`
}

// WriteRunResult writes r as dir/result.json, indented, mode 0644.
func WriteRunResult(dir string, r *RunResult) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// The command is shell: keep its < > & readable.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encoding %s: %w", ResultFile, err)
	}
	return safefile.WriteBytes(filepath.Join(dir, ResultFile), buf.Bytes(), 0o644)
}

// ReadRunResult reads dir/result.json.
func ReadRunResult(dir string) (*RunResult, error) {
	data, err := os.ReadFile(filepath.Join(dir, ResultFile))
	if err != nil {
		return nil, fmt.Errorf("reading run result: %w", err)
	}
	var r RunResult
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reading run result %s: %w", filepath.Join(dir, ResultFile), err)
	}
	return &r, nil
}
