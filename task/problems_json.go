package task

import "errors"

// ValidateReport is a dataset's validation as `ssebench dataset validate
// --json` prints it: OK and its task count, or every problem.
type ValidateReport struct {
	Dataset  string        `json:"dataset"`
	OK       bool          `json:"ok"`
	Tasks    int           `json:"tasks"`
	Problems []ProblemJSON `json:"problems"`
}

// ProblemJSON is one problem of a ValidateReport.
type ProblemJSON struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// NewValidateReport is the report of the dataset folder dir from what
// LoadDataset returned: the dataset d, or err, whose Problems it lists;
// another error is returned as it is.
func NewValidateReport(dir string, d *Dataset, err error) (*ValidateReport, error) {
	out := &ValidateReport{Dataset: dir, Problems: []ProblemJSON{}}
	var ps Problems
	switch {
	case err == nil:
		out.OK, out.Tasks = true, len(d.Tasks)
	case errors.As(err, &ps):
		for _, p := range ps {
			out.Problems = append(out.Problems, ProblemJSON{File: p.File, Line: p.Line, Message: p.Msg})
		}
	default:
		return nil, err
	}
	return out, nil
}
