package evaluate

import (
	"testing"

	"github.com/containerd/containerd/v2/pkg/filters"
)

// TestEvalFilter: the filter Cleanup gives containerd picks the
// evaluation's containers and no other's.
func TestEvalFilter(t *testing.T) {
	f, err := filters.Parse(evalFilter("20261201-211000-ab12cd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{EvalLabel: "20261201-211000-ab12cd", "ssebench.task-id": "x"}, true},
		{map[string]string{EvalLabel: "20261201-211000-ffffff"}, false},
		{map[string]string{"ssebench.task-id": "x"}, false},
	} {
		got := f.Match(filters.AdapterFunc(func(fs []string) (string, bool) {
			if len(fs) == 2 && fs[0] == "labels" {
				v, ok := tc.labels[fs[1]]
				return v, ok
			}
			return "", false
		}))
		if got != tc.want {
			t.Errorf("filter on %v = %v, want %v", tc.labels, got, tc.want)
		}
	}
}
