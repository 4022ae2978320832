package pipeline

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
)

// makeRunFolder creates the run's folder, <runsDir>/<runID>/ ("" means
// ./runs), with archive/ in it, and returns its absolute path: the
// container writes its results there.
func makeRunFolder(runsDir, runID string) (string, error) {
	dir, err := filepath.Abs(filepath.Join(firstNonEmpty(runsDir, "runs"), runID))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "archive"), 0o755); err != nil {
		return "", fmt.Errorf("creating the run folder: %w", err)
	}
	return dir, nil
}

func newRunID(taskID, agentFolder string, t time.Time) string {
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%s-%s-%s-%s", t.UTC().Format("20060102-150405"), strings.ToLower(taskID), agentFolder, hex.EncodeToString(b))
}

// annotateResult adds to the container's result.json what the host knows
// of the run: its id, agent, model and case image. A run whose
// container wrote no result.json is left as it is.
//
// killed is the limit the host saw the container hit (runner.Result): the
// container cannot always see its own cgroup's counters, the host can.
func annotateResult(dir string, req RunRequest, runID string, ri *RunImages, killed string) error {
	r, err := contract.ReadRunResult(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if r.Killed == "" && killed != "" {
		r.Killed = killed
		r.Notes = append(r.Notes, fmt.Sprintf("killed: %s: the run's containers hit their %s (see summary.json's config.limits)", killed, killed))
	}
	// The difficulty is the container's own (it read SSE_DIFFICULTY).
	r.RunID, r.Agent, r.Model = runID, req.agentName(), modelName(req.Model)
	if ri != nil {
		r.CaseImage = ri.Case
		if ri.CaseDigest != "" {
			r.CaseImage = caseWithDigest(ri.Case, ri.CaseDigest)
		}
	}
	return contract.WriteRunResult(dir, r)
}

// caseWithDigest pins ref to digest d (a reference already pinned keeps
// its digest).
func caseWithDigest(ref, d string) string {
	if strings.Contains(ref, "@") {
		return ref
	}
	return ref + "@" + d
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteBytes(path, append(b, '\n'), 0o644)
}
