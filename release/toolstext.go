package release

import (
	"fmt"
	"io"
	"time"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
)

// WriteFigures writes r's figures to w as `dataset tools` ends: the tool
// images rebuilt and unchanged and the bytes moved when pushed, else
// those assembled; then took, the time it all took.
func (r *ToolsReport) WriteFigures(w io.Writer, pushed bool, took time.Duration) {
	if pushed {
		fmt.Fprintf(w, "tool images: %d rebuilt and pushed, %d unchanged\n", r.Rebuilt, r.Unchanged)
		fmt.Fprintf(w, "bytes: %s uploaded, %s mounted, %s skipped (already there)\n",
			units.Bytes(r.Push.Uploaded), units.Bytes(r.Push.Mounted), units.Bytes(r.Push.Skipped))
	} else {
		fmt.Fprintf(w, "tool images: %d assembled (not pushed: add --push)\n", len(r.Images))
	}
	fmt.Fprintf(w, "took %s\n", took.Round(100*time.Millisecond))
}
