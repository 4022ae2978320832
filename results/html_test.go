package results

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/browsertest"
)

// CheckHTMLReport opens an HTML report in headless Chromium and checks what
// a reader sees: every agent's name, a pass-rate chart with one bar per
// agent, a bar per run in the time chart, and no error on the console. It
// leaves a screenshot as an artifact named shot.
func CheckHTMLReport(t *testing.T, path string, agents []string, runs int, shot string) {
	t.Helper()
	p := browsertest.Open(t, path)
	for _, a := range agents {
		if !strings.Contains(p.DOM, `<td class="agent">`+a+`</td>`) {
			t.Errorf("the report does not show agent %q", a)
		}
	}
	if m := regexp.MustCompile(`<canvas id="pass-rate"[^>]*data-bars="(\d+)"`).FindStringSubmatch(p.DOM); m == nil || m[1] != strconv.Itoa(len(agents)) {
		t.Errorf("pass-rate chart bars = %v, want %d (one per agent)", m, len(agents))
	}
	if m := regexp.MustCompile(`<canvas id="run-time"[^>]*data-bars="(\d+)"`).FindStringSubmatch(p.DOM); m == nil || m[1] != strconv.Itoa(runs) {
		t.Errorf("run-time chart bars = %v, want %d (one per run)", m, runs)
	}
	if !strings.Contains(p.DOM, `data-count="0"`) {
		t.Errorf("the page caught errors: %s", regexp.MustCompile(`(?s)<pre id="page-errors".*?</pre>`).FindString(p.DOM))
	}
	if len(p.Console) > 0 {
		t.Errorf("console messages: %q", p.Console)
	}
	browsertest.Screenshot(t, path, shot)
}

func TestHTMLReport(t *testing.T) {
	rep := NewReport("eval-x", mustList(t, evalFolder(t)))
	var buf bytes.Buffer
	if err := Write(&buf, rep, "html"); err != nil {
		t.Fatal(err)
	}
	// Self-contained: nothing is fetched.
	if regexp.MustCompile(`(?i)<(script|link|img)[^>]+(src|href)=`).Match(buf.Bytes()) {
		t.Error("the report loads something from outside")
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	CheckHTMLReport(t, path, []string{"dummy", "patcher"}, 8, "results-report.png")
}
