// Package entrypointmode is an example of an entrypoint mode added by an
// extension: `--mode example` leaves a file in the results, then runs
// sandbox mode. examples/cmd/ssebench-entrypoint-example is the program around it;
// `ssebench runtime build --entrypoint ./examples/cmd/ssebench-entrypoint-example`
// builds a runtime whose entrypoint knows the mode.
package entrypointmode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/sserun/entrypoint"
)

// Name is the mode's name; File the file it leaves in $SSE_RESULTS.
const (
	Name = "example"
	File = "example-mode.txt"
)

func init() { entrypoint.RegisterMode(Name, run) }

func run(ctx context.Context, e *entrypoint.Entrypoint) int {
	msg := fmt.Sprintf("the example mode ran %q\n", e.Command())
	if err := os.MkdirAll(e.Env().Results, 0o755); err != nil {
		fmt.Fprintln(e.Log(), "entrypoint:", err)
	} else if err := safefile.WriteBytes(filepath.Join(e.Env().Results, File), []byte(msg), 0o644); err != nil {
		fmt.Fprintln(e.Log(), "entrypoint:", err)
	}
	return e.Sandbox(ctx)
}
