package release

import (
	"time"

	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// ToolsSummary is what Tools did, as `dataset tools --json` prints it:
// each image, then the figures.
type ToolsSummary struct {
	Dataset   string              `json:"dataset"`
	Images    []ToolImageJSON     `json:"images"`
	Rebuilt   int                 `json:"rebuilt"`
	Unchanged int                 `json:"unchanged"`
	Push      *remote.PushSummary `json:"push"`
	Seconds   float64             `json:"seconds"`
}

// ToolImageJSON is one tool image of a ToolsSummary.
type ToolImageJSON struct {
	Task   string              `json:"task"`
	Name   string              `json:"name"`
	Digest string              `json:"digest"`
	Result string              `json:"result"` // assembled, pushed or unchanged
	Signed bool                `json:"signed"`
	Push   *remote.PushSummary `json:"push,omitempty"`
}

// Summary is r's summary for the dataset named dataset, which took took.
func (r *ToolsReport) Summary(dataset string, took time.Duration) ToolsSummary {
	out := ToolsSummary{Dataset: dataset, Images: []ToolImageJSON{}, Rebuilt: r.Rebuilt, Unchanged: r.Unchanged,
		Push: r.Push.Summary(), Seconds: took.Seconds()}
	for _, img := range r.Images {
		out.Images = append(out.Images, ToolImageJSON{Task: img.Task, Name: img.Name, Digest: img.Digest.String(),
			Result: img.Result, Signed: img.Signed, Push: img.Push.Summary()})
	}
	return out
}
