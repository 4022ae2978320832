package entrypoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunOpenCodeNotWanted: a run that says its agent does not use
// OpenCode (SSE_OPENCODE=0) gets no server and no note of one, though the
// image has the binary.
func TestRunOpenCodeNotWanted(t *testing.T) {
	r := newTestRun(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	old := openCodeBinary
	openCodeBinary = self
	defer func() { openCodeBinary = old }()
	rec := filepath.Join(t.TempDir(), "opencode.json")
	t.Setenv(fakeOpenCodeEnv, rec)
	t.Setenv(OpenCodeEnv, "0")
	code, res, log := r.run(t, "true")
	if code != 0 || strings.Contains(strings.Join(res.Notes, "\n"), "OpenCode server") {
		t.Errorf("exit %d, notes %q\n%s", code, res.Notes, log)
	}
	if _, err := os.Stat(rec); err == nil {
		t.Errorf("the OpenCode server started with %s=0", OpenCodeEnv)
	}
}

func TestOpenCodeWanted(t *testing.T) {
	for _, c := range []struct {
		environ []string
		want    bool
	}{
		{nil, true},
		{[]string{"SSE_OPENCODE=1"}, true},
		{[]string{"SSE_OPENCODE=0"}, false},
		{[]string{"SSE_OPENCODE=0", "SSE_OPENCODE=1"}, true},
		{[]string{"SSE_OPENCODEX=0"}, true},
	} {
		if got := openCodeWanted(c.environ); got != c.want {
			t.Errorf("openCodeWanted(%q) = %v, want %v", c.environ, got, c.want)
		}
	}
}
