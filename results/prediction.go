package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
)

// PredictionFile is what `ssebench grade` records in a run folder about
// the prediction's patch: whether it was applied. Runs of agents have
// none.
const PredictionFile = "prediction.json"

// Outcomes of a prediction's patch (Prediction.Patch).
const (
	PatchApplied = "applied"
	PatchEmpty   = "empty"
	// PatchNotApplied: the patch is not a diff, or a hunk of it does not
	// apply with no fuzz: nothing of it was applied. SWE-bench users read
	// this apart from a failed fix: the model never got its change onto
	// the tree.
	PatchNotApplied = "not applied"
)

// Prediction is prediction.json.
type Prediction struct {
	// Patch is PatchApplied, PatchEmpty or PatchNotApplied.
	Patch string `json:"patch"`
	// Why says more: "not a diff", "the patch does not apply".
	Why string `json:"why,omitempty"`
}

// WritePrediction writes dir/prediction.json.
func WritePrediction(dir string, p Prediction) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteBytes(filepath.Join(dir, PredictionFile), append(b, '\n'), 0o644)
}

// readPrediction reads dir/prediction.json; nil when there is none.
func readPrediction(dir string) (*Prediction, error) {
	b, err := os.ReadFile(filepath.Join(dir, PredictionFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the run's %s: %w", PredictionFile, err)
	}
	var p Prediction
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, PredictionFile), err)
	}
	return &p, nil
}

// NotApplied says the run graded a prediction whose patch was not
// applied (not a diff, or a hunk without its context): a verdict of its
// own, VerdictNotApplied, not a failed fix.
func (r *Run) NotApplied() bool {
	return r.Prediction != nil && r.Prediction.Patch == PatchNotApplied && r.Graded() && !r.Forged()
}
