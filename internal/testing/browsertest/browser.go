// Package browsertest provides the opening of a page in headless Chromium
// (Debian's chromium package) for tests: its DOM after the scripts ran,
// what it wrote to the console, and a screenshot.
package browsertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ArtifactsEnv names the folder where tests leave artifacts (screenshots);
// unset, they go to $TMPDIR/ssebench-test-artifacts.
const ArtifactsEnv = "SSEBENCH_TEST_ARTIFACTS"

// timeout bounds one Chromium invocation.
const timeout = 90 * time.Second

// Page is what Chromium made of a page.
type Page struct {
	// DOM is the document after its scripts ran.
	DOM string
	// Console is what the page wrote to the console (errors included),
	// one message a line.
	Console []string
}

// Chromium returns the chromium binary; it skips the test when there is
// none, or fails it under CI=true (scripts/install-deps.sh installs it).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is missing (Debian's chromium package; scripts/install-deps.sh installs it)")
	}
	t.Skip("skipping: chromium is missing (apt-get install chromium)")
	return ""
}

// flags keep Chromium off the network and away from any profile: a fresh
// user data dir per call.
func flags(t testing.TB) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}
}

var consoleLine = regexp.MustCompile(`:CONSOLE\(\d+\)\] (.*)`)

// Open loads the file at path in headless Chromium and returns its DOM and
// console messages.
func Open(t testing.TB, path string) *Page {
	t.Helper()
	bin := Chromium(t)
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := append(flags(t), "--virtual-time-budget=5000", "--dump-dom", "file://"+abs)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", path, err, stderr.String())
	}
	p := &Page{DOM: stdout.String()}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if m := consoleLine.FindStringSubmatch(l); m != nil {
			p.Console = append(p.Console, m[1])
		}
	}
	return p
}

// Screenshot renders the file at path to a PNG named name in the artifacts
// folder, and returns its path.
func Screenshot(t testing.TB, path, name string) string {
	t.Helper()
	bin := Chromium(t)
	dir := os.Getenv(ArtifactsEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "ssebench-test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(path)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := append(flags(t), "--virtual-time-budget=5000", "--hide-scrollbars", "--window-size=1280,1600", "--screenshot="+out, "file://"+abs)
	if b, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, b)
	}
	st, err := os.Stat(out)
	if err != nil || st.Size() == 0 {
		t.Fatalf("chromium wrote no screenshot at %s: %v", out, err)
	}
	t.Logf("screenshot of %s: %s", path, out)
	return out
}
