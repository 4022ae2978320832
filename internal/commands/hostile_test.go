package commands_test

import (
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/hostile"
)

// TestHostileTaskFlag: a --task that is not an id is refused before it
// becomes part of an image name or a path.
func TestHostileTaskFlag(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{
		{"names", "--task", "../../etc"},
		{"names", "--task", "a/b"},
		{"run", "--task", "..", "--agent", "dummy"},
		{"assemble", "tool", "--case", "localhost:5000/x/case/ds/ok", "--task", "x/../y", "--source", "/src"},
		{"assemble", "agent", "--tool", "localhost:5000/x/tool/ok:1", "--agent", "dummy", "--task", "../runtime"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			hostile.Case(t, "names: ids")
			_, _, err := c.run(t, args...)
			oneLine(t, err)
			if err == nil || !strings.Contains(err.Error(), "--task") || !strings.Contains(err.Error(), "is not a valid id") {
				t.Errorf("error = %v, want --task ... is not a valid id", err)
			}
		})
	}
}
