package release

import (
	"strings"
	"testing"
)

// TestRerunsKeepOnlyStableTasks: with reruns, a task is verified only when
// every run verified it on the same case image; a failure of a later run
// (a flaky test) fails it, naming the run.
func TestRerunsKeepOnlyStableTasks(t *testing.T) {
	run := func(flakyOK bool, digest string) *Report {
		r := &Report{
			Findings: []Finding{
				{Task: "flaky", Agent: "reference", Check: "intent_test", OK: flakyOK, Why: map[bool]string{false: "TestRace failed"}[flakyOK]},
				{Task: "rebuilt", Agent: "reference", Check: "intent_test", OK: true},
				{Task: "stable", Agent: "reference", Check: "intent_test", OK: true},
			},
			Verified: map[string]VerifiedTask{"stable": {Digest: "sha256:a"}, "rebuilt": {Digest: digest}},
		}
		if flakyOK {
			r.Verified["flaky"] = VerifiedTask{Digest: "sha256:f"}
		}
		return r
	}
	all := run(true, "sha256:b")
	all.markRerun(1, 3)
	all.mergeRerun(run(false, "sha256:b"), 2, 3)
	all.mergeRerun(run(true, "sha256:c"), 3, 3)
	if _, ok := all.Verified["stable"]; !ok || len(all.Verified) != 1 {
		t.Fatalf("verified: %v, want only the stable task", all.Verified)
	}
	failed := all.Failed()
	if len(failed) != 1 || failed[0].Task != "flaky" || !strings.HasPrefix(failed[0].Why, "run 2 of 3: TestRace failed") {
		t.Fatalf("failed: %+v", failed)
	}
}
