package commands_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// mainStdin runs ssebench as the binary does, with stdin.
func mainStdin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	root := commands.New()
	root.SetIn(strings.NewReader(stdin))
	var out, errb bytes.Buffer
	code = commands.MainCommand(context.Background(), root, args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestLoginAgainstAuthRegistry: a push to a registry that wants
// credentials says how to log in; a wrong password saves nothing; login
// writes the Docker config (DOCKER_CONFIG honoured) that the push then
// uses; logout removes it.
func TestLoginAgainstAuthRegistry(t *testing.T) {
	c := newCLI(t)
	docker := filepath.Join(c.root, "docker")
	t.Setenv("DOCKER_CONFIG", docker)
	host := testenv.StartAuthRegistry(t, "ci", "s3cret-token")
	ref := host + "/login/tool/proj-1:1.0.0"
	c.storeImage(t, ref, toolImage(t))

	code, _, errOut := mainRun(t, "push", ref)
	want := "log in with `ssebench login " + host + " -u USER --password-stdin`"
	_, errLine, _ := strings.Cut(errOut, "Error: ")
	if code != 1 || !strings.Contains(errLine, want) || strings.Count(errLine, "\n") != 1 {
		t.Errorf("push without credentials: exit %d, stderr %q; want 1 and an Error: line with %q", code, errOut, want)
	}

	code, _, errOut = mainStdin(t, "wrong\n", "login", host, "-u", "ci", "--password-stdin")
	if code != 1 || !strings.Contains(errOut, "refused user ci") {
		t.Errorf("login with a wrong password: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(docker, "config.json")); err == nil {
		t.Error("a refused login wrote the Docker config")
	}

	code, out, errOut := mainStdin(t, "s3cret-token\n", "login", host, "-u", "ci", "--password-stdin")
	if code != 0 || !strings.Contains(out, "logged in to "+host) {
		t.Fatalf("login: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(docker, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Auths map[string]struct {
			Auth string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.Auths[host].Auth != "Y2k6czNjcmV0LXRva2Vu" { // base64("ci:s3cret-token")
		t.Errorf("config.json = %s (%v), want auths[%s].auth for ci:s3cret-token", b, err, host)
	}
	if st, err := os.Stat(filepath.Join(docker, "config.json")); err == nil && st.Mode().Perm()&0o077 != 0 {
		t.Errorf("config.json has mode %v, readable by others", st.Mode().Perm())
	}

	if code, out, errOut := mainRun(t, "push", ref); code != 0 || !strings.Contains(out, ref+"@sha256:") {
		t.Errorf("push after login: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	if code, out, _ := mainRun(t, "logout", host); code != 0 || !strings.Contains(out, "logged out of "+host) {
		t.Errorf("logout: exit %d, stdout %q", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(docker, "config.json")); strings.Contains(string(b), host) {
		t.Errorf("config.json still names %s after logout: %s", host, b)
	}
	if code, out, _ := mainRun(t, "logout", host); code != 0 || !strings.Contains(out, "not logged in") {
		t.Errorf("second logout: exit %d, stdout %q", code, out)
	}
}

func TestLoginUsage(t *testing.T) {
	newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"login", "127.0.0.1:1"}, "-u is required"},
		{[]string{"login", "127.0.0.1:1", "-u", "ci"}, "--password-stdin"},
		{[]string{"login", "127.0.0.1:1/repo", "-u", "ci", "--password-stdin"}, "is not a registry host"},
	} {
		code, _, errOut := mainStdin(t, "", tc.args...)
		if code != 1 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("ssebench %s: exit %d, stderr %q; want one line with %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}
