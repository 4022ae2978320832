package results

import (
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
)

// Summary is runs/<run-id>/summary.json: the host's record of a run, which
// pipeline writes when the run ends and Load reads back. It lives here, with
// its reader, so that reading run folders does not need the package that
// builds and runs images.
type Summary struct {
	RunID    string            `json:"run_id"`
	Task     string            `json:"task"`
	Agent    string            `json:"agent"`
	Platform string            `json:"platform"`
	Images   map[string]string `json:"images"`
	Config   SummaryConfig     `json:"config"`
	// ModelUsage is the model gateway's totals; absent when the run had
	// no gateway.
	ModelUsage *gateway.Totals    `json:"model_usage,omitempty"`
	Timings    map[string]float64 `json:"timings_seconds"`
	// LayersUnpacked is how many layers containerd had to unpack: none
	// when the same images ran before.
	LayersUnpacked int `json:"layers_unpacked"`
	// OpenCode is the OpenCode version the agent's image carries from the
	// runtime image; absent when it carries none.
	OpenCode string `json:"opencode,omitempty"`
	// Attempt is the run's attempt number within an evaluation.
	Attempt  int       `json:"attempt,omitempty"`
	Status   string    `json:"status"`
	ExitCode int       `json:"exit_code"`
	Results  string    `json:"results"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
}

// SummaryConfig is summary.json's "config": how the run was asked for.
type SummaryConfig struct {
	ToolLayer string `json:"tool_layer"`
	Mode      string `json:"mode"`
	Backend   string `json:"backend,omitempty"`
	Prebuilt  bool   `json:"prebuilt"`
	Network   string `json:"network"`
	Timeout   int    `json:"timeout"`
	// Limits are the run's memory, process and CPU limits.
	Limits     contract.Limits `json:"limits"`
	Difficulty int             `json:"difficulty"`
	Model      string          `json:"model"`
	Plugins    []string        `json:"plugins,omitempty"`
}
