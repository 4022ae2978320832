package commands_test

import (
	"strconv"
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	const (
		good = "localhost:5000/ssebench/tool/proj-1:1.0.0"
		bad  = "localhost:5000/ssebench/case/pilot/proj-1"
	)
	c := newCLI(t)
	c.storeImage(t, good, toolImage(t))
	c.storeImage(t, bad, caseImage(t))

	t.Run("assembled tool image", func(t *testing.T) {
		out, stderr := c.mustRun(t, "verify", "--pull=never", good)
		if want := "ok " + good + "\n"; out != want {
			t.Errorf("verify printed %q, want %q (stderr %q)", out, want, stderr)
		}
	})

	t.Run("case image", func(t *testing.T) {
		out, stderr, err := c.run(t, "verify", "--pull=never", "--source", "/src/proj", bad)
		oneLine(t, err)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		for _, l := range lines {
			if !strings.HasPrefix(l, "FAIL ") {
				t.Errorf("line %q is not a FAIL line", l)
			}
		}
		for _, want := range []string{
			"FAIL entrypoint: ENTRYPOINT is []",
			"FAIL mode: /var/lib/ssebench: missing",
			"FAIL other-write: /usr/bin/tool: mode 0777",
			"FAIL owner: /src/proj/main.go: owned by 0:0, want 1000:1000",
			"FAIL accounts: /etc/passwd: no user sse-runner",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("verify output lacks %q:\n%s", want, out)
			}
		}
		if want := bad + ": " + strconv.Itoa(len(lines)) + " check(s) failed\n"; stderr != want {
			t.Errorf("stderr = %q, want %q", stderr, want)
		}
	})

	t.Run("no SOURCE_DIR recorded", func(t *testing.T) {
		_, _, err := c.run(t, "verify", "--pull=never", bad)
		oneLine(t, err)
		if err != nil && !strings.Contains(err.Error(), "pass --source") {
			t.Errorf("error %q does not say to pass --source", err)
		}
	})
}
