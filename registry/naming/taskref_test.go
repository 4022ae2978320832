package naming

import "testing"

// TestTaskOfRef: the task is the repository's last component, whatever
// the tag, digest or registry port.
func TestTaskOfRef(t *testing.T) {
	for ref, want := range map[string]string{
		"localhost:5000/ssebench/case/examples/kvconf-12-afb9ee1":           "kvconf-12-afb9ee1",
		"localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0":              "kvconf-12-afb9ee1",
		"r.example/case/x/a-1@sha256:" + "0123456789abcdef0123456789abcdef": "a-1",
		"r.example/case/x/a-1:v1@sha256:00":                                 "a-1",
		"a-1":                                                               "a-1",
	} {
		if got := TaskOfRef(ref); got != want {
			t.Errorf("TaskOfRef(%q) = %q, want %q", ref, got, want)
		}
	}
}
