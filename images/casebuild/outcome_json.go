package casebuild

import v1 "github.com/google/go-containerregistry/pkg/v1"

// CaseJSON is one case image of `ssebench build-case --json`.
type CaseJSON struct {
	Task   string `json:"task"`
	Image  string `json:"image"`
	Action string `json:"action"`
	Digest string `json:"digest,omitempty"`
	Error  string `json:"error,omitempty"`
}

// OutcomesJSON are the outcomes of BuildCases as `build-case --json`
// prints them ([] for none): a failed one with its error, passed through
// redact (which drops what a log must not show, such as a signed URL's
// query).
func OutcomesJSON(out []CaseOutcome, redact func(string) string) []CaseJSON {
	rows := []CaseJSON{}
	for _, oc := range out {
		r := CaseJSON{Task: oc.Task, Image: oc.Image, Action: oc.Action}
		if oc.Digest != (v1.Hash{}) {
			r.Digest = oc.Digest.String()
		}
		if oc.Err != nil {
			r.Action, r.Error = "failed", redact(oc.Err.Error())
		}
		rows = append(rows, r)
	}
	return rows
}
