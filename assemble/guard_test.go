package assemble

import (
	"context"
	"strings"
	"testing"
)

// TestToolGuardsToolchains: the directories of PATH and everything under
// GOPATH, CARGO_HOME and the other toolchain variables lose the other-write
// bit even when sticky (the Go base image makes GOPATH 1777, as upstream
// golang images do), so model cannot plant a `go` that the grader's
// scripts run; other sticky directories keep it; and verify passes the
// result.
func TestToolGuardsToolchains(t *testing.T) {
	env := []string{"PATH=/go/bin:/usr/local/cargo/bin:/usr/bin", "GOPATH=/go", "CARGO_HOME=/usr/local/cargo"}
	c := hostileCase(t, okPasswd, okGroup, env,
		dir("tmp", 0o1777),
		dir("go", 0o1777), dir("go/bin", 0o1777), dir("go/pkg", 0o1777), dir("go/pkg/mod", 0o1777),
		dir("go/pkg/mod/cache", 0o1777),
		dir("usr", 0o755), dir("usr/bin", 0o755), dir("usr/local", 0o755),
		dir("usr/local/cargo", 0o1777), dir("usr/local/cargo/bin", 0o1777),
		dir("opt", 0o755), dir("opt/sticky", 0o1777),
	)
	ti := assembleTool(t, c, runtimeImage(t))
	f := flatten(t, ti)
	for p, want := range map[string]int64{
		"go": 0o1775, "go/bin": 0o1775, "go/pkg": 0o1775, "go/pkg/mod": 0o1775, "go/pkg/mod/cache": 0o1775,
		"usr/local/cargo": 0o1775, "usr/local/cargo/bin": 0o1775,
		"tmp": 0o1777, "opt/sticky": 0o1777, // not a toolchain's: left as step 4 leaves them
	} {
		if got := f.node(t, p).Header.Mode; got != want {
			t.Errorf("/%s: mode %04o, want %04o", p, got, want)
		}
	}
	fails, err := Verify(context.Background(), ti, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range fails {
		t.Errorf("Verify() = %s", fl)
	}
}

// TestToolRefusesUnguardablePath: what the tool layer cannot lock (a
// relative PATH entry, a scratch directory every user writes, SOURCE_DIR)
// is refused in one line that names it and says what to change.
func TestToolRefusesUnguardablePath(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"relative entry", []string{"PATH=/usr/bin:."}, `entry 2 of the PATH of case is ".", not an absolute path`},
		{"empty entry", []string{"PATH=:/usr/bin"}, `entry 1 of the PATH of case is "", not an absolute path`},
		{"/tmp on PATH", []string{"PATH=/tmp:/usr/bin"}, "entry 1 of the PATH of case is /tmp, inside /tmp, which model can write"},
		{"SOURCE_DIR on PATH", []string{"PATH=/usr/bin:/src/proj"}, "entry 2 of the PATH of case is /src/proj, inside /src/proj"},
		{"GOPATH in SOURCE_DIR", []string{"PATH=/usr/bin", "GOPATH=/src/proj"}, "GOPATH of case is /src/proj, inside /src/proj"},
		{"CARGO_HOME in /var/tmp", []string{"PATH=/usr/bin", "CARGO_HOME=/var/tmp/cargo"}, "CARGO_HOME of case is /var/tmp/cargo, inside /var/tmp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hostileCase(t, okPasswd, okGroup, tc.env, dir("tmp", 0o1777), dir("var", 0o755), dir("var/tmp", 0o1777), dir("var/tmp/cargo", 0o755))
			ti, err := Tool(context.Background(), c, runtimeImage(t), WithSourceDir("/src/proj"), WithTempDir(t.TempDir()), WithRefs("case", ""))
			if err == nil {
				ti.Close()
				t.Fatalf("Tool() = nil error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Tool() = %q, want one line with %q", err, tc.want)
			}
		})
	}
}
