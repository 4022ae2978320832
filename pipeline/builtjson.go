package pipeline

import "github.com/42-b3yond-6ug/ssebench/registry/remote"

// BuiltSummary is a Built image as `assemble tool --json` and `assemble
// agent --json` print it.
type BuiltSummary struct {
	Name        string              `json:"name"`
	Digest      string              `json:"digest"`
	How         string              `json:"how"`
	Reused      bool                `json:"reused"`
	TookSeconds float64             `json:"took_seconds"`
	Push        *remote.PushSummary `json:"push,omitempty"`
}

// Summary is b's summary.
func (b *Built) Summary() *BuiltSummary {
	return &BuiltSummary{Name: b.Name, Digest: b.Digest.String(), How: b.How, Reused: b.Reused,
		TookSeconds: b.Took.Seconds(), Push: b.Push.Summary()}
}
