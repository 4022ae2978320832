package entrypoint

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// fakeOpenCodeEnv makes this test binary a fake `opencode serve`: it
// writes its arguments and config to the file the variable names, its pid
// next to it, says it listens, and serves TCP on OpenCodeAddr until killed.
const fakeOpenCodeEnv = "SSEBENCH_TEST_FAKE_OPENCODE"

func TestMain(m *testing.M) {
	if out := os.Getenv(fakeOpenCodeEnv); out != "" {
		fakeOpenCode(out)
		return
	}
	os.Exit(m.Run())
}

func fakeOpenCode(out string) {
	rec := map[string]string{"args": strings.Join(os.Args[1:], " "), "config": os.Getenv("OPENCODE_CONFIG_CONTENT"), "key": os.Getenv(contract.EnvAPIKey)}
	b, _ := json.Marshal(rec)
	os.WriteFile(out, b, 0o644)
	os.WriteFile(out+".pid", []byte(strconv.Itoa(os.Getpid())), 0o644)
	l, err := net.Listen("tcp", OpenCodeAddr)
	if err != nil {
		fmt.Println("fake opencode:", err)
		os.Exit(1)
	}
	fmt.Println("fake opencode listening on", OpenCodeAddr)
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		c.Close()
	}
}

// TestRunOpenCode: with the binary in the image, the entrypoint starts the
// server before the agent, on OpenCodeAddr, with the gateway as its
// provider (the token by reference, not by value), logs it to
// opencode.log, and no process of it is left once the run is over.
func TestRunOpenCode(t *testing.T) {
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
	t.Setenv("SSE_BASE_URL", "http://127.0.0.1:4000")
	t.Setenv("SSE_MODEL_NAME", "scripted")
	t.Setenv(contract.EnvAPIKey, "run-token-123")

	code, res, log := r.run(t, `bash -c 'exec 3<>/dev/tcp/127.0.0.1/4096 && echo server-up'`)
	if code != 0 {
		t.Fatalf("exit %d: %+v\n%s", code, res, log)
	}
	if got := readFile(t, filepath.Join(r.results, contract.AgentLog)); got != "server-up\n" {
		t.Errorf("agent.log = %q, want the agent to reach the server", got)
	}
	if got := readFile(t, filepath.Join(r.results, OpenCodeLog)); !strings.Contains(got, "fake opencode listening on 127.0.0.1:4096") {
		t.Errorf("opencode.log = %q", got)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(readFile(t, rec)), &got); err != nil {
		t.Fatal(err)
	}
	if got["args"] != "serve --hostname 127.0.0.1 --port 4096 --print-logs --log-level INFO" {
		t.Errorf("args %q", got["args"])
	}
	var cfg struct {
		Model    string `json:"model"`
		Provider map[string]struct {
			NPM     string            `json:"npm"`
			Options map[string]string `json:"options"`
		} `json:"provider"`
	}
	if err := json.Unmarshal([]byte(got["config"]), &cfg); err != nil {
		t.Fatalf("OPENCODE_CONFIG_CONTENT %q: %v", got["config"], err)
	}
	p := cfg.Provider["ssebench"]
	if cfg.Model != "ssebench/scripted" || p.NPM != "@ai-sdk/openai-compatible" || p.Options["baseURL"] != "http://127.0.0.1:4000" || p.Options["apiKey"] != "{env:SSE_API_KEY}" {
		t.Errorf("config %s: want the gateway as provider ssebench, model ssebench/scripted, the key by reference", got["config"])
	}
	if strings.Contains(got["config"], "run-token-123") {
		t.Errorf("the config holds the token itself")
	}
	pid, _ := strconv.Atoi(readFile(t, rec+".pid"))
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the OpenCode server (pid %d) outlived the run", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRunNoOpenCode: without the binary nothing starts and nothing is said.
func TestRunNoOpenCode(t *testing.T) {
	r := newTestRun(t)
	old := openCodeBinary
	openCodeBinary = filepath.Join(t.TempDir(), "none")
	defer func() { openCodeBinary = old }()
	if code, res, _ := r.run(t, "true"); code != 0 || strings.Contains(strings.Join(res.Notes, "\n"), "OpenCode server") {
		t.Errorf("exit %d, notes %q", code, res.Notes)
	}
	if _, err := os.Stat(filepath.Join(r.results, OpenCodeLog)); err == nil {
		t.Errorf("opencode.log exists without OpenCode")
	}
}
