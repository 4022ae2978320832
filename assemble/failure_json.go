package assemble

// VerifyReport is what Verify found of an image, as `ssebench verify
// --json` prints it: every failure and warning, and whether the image
// meets the contract (no failure).
type VerifyReport struct {
	Image    string        `json:"image"`
	OK       bool          `json:"ok"`
	Failures []FailureJSON `json:"failures"`
	Warnings []FailureJSON `json:"warnings"`
}

// FailureJSON is one finding of a VerifyReport.
type FailureJSON struct {
	Check   string `json:"check"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	Rule    string `json:"rule,omitempty"`
}

// NewVerifyReport is the report of fails, the findings of Verify (or of
// an agent image's check) of the image ref.
func NewVerifyReport(ref string, fails []Failure) *VerifyReport {
	out := &VerifyReport{Image: ref, Failures: []FailureJSON{}, Warnings: []FailureJSON{}}
	for _, f := range fails {
		j := FailureJSON{Check: f.Check, Path: f.Path, Message: f.Msg, Rule: f.Rule}
		if f.Warning {
			out.Warnings = append(out.Warnings, j)
		} else {
			out.Failures = append(out.Failures, j)
		}
	}
	out.OK = len(out.Failures) == 0
	return out
}
