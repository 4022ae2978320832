package predictions

import (
	"testing"

	"github.com/42-b3yond-6ug/ssebench/results"
)

// TestAppliedOutcome: what grade records in prediction.json for each of
// apply.sh's exits, which gives a patch that was not applied the verdict
// NOT APPLIED in every report.
func TestAppliedOutcome(t *testing.T) {
	for _, c := range []struct {
		exit int
		kind string
		want results.Prediction
	}{
		{0, "", results.Prediction{Patch: results.PatchApplied}},
		{applyEmpty, KindEmpty, results.Prediction{Patch: results.PatchEmpty}},
		{applyRejected, KindNotDiff, results.Prediction{Patch: results.PatchNotApplied, Why: KindNotDiff}},
		{applyRejected, "", results.Prediction{Patch: results.PatchNotApplied, Why: "the patch does not apply"}},
	} {
		if got := appliedOutcome(c.exit, &Prediction{Kind: c.kind}); got != c.want {
			t.Errorf("appliedOutcome(%d, %q) = %+v, want %+v", c.exit, c.kind, got, c.want)
		}
	}
}
