package entrypoint

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// TestSidecarAgentNoNewPrivs runs the agent container's side with an agent
// that reads its own status: it runs with no_new_privs, so a setuid
// program of the agent's image cannot make it root even where the
// container's spec does not say so (containerd's default does). As the
// side runs in this process, this process keeps no_new_privs afterwards.
func TestSidecarAgentNoNewPrivs(t *testing.T) {
	defer func(d time.Duration) { daemonWait = d }(daemonWait)
	daemonWait = 200 * time.Millisecond
	r := newTestRun(t)
	r.vars[contract.EnvSourceDir] = r.src
	e, err := newEntrypoint([]string{"--mode", "sidecar", "--", "grep '^NoNewPrivs:' /proc/self/status > nnp.txt"},
		func(k string) string { return r.vars[k] }, os.Environ(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e.agent, e.workDir = nil, r.base
	if code := e.run(context.Background()); code != 0 {
		t.Fatalf("agent side: exit %d", code)
	}
	if got := strings.Join(strings.Fields(readFile(t, filepath.Join(r.src, "nnp.txt"))), " "); got != "NoNewPrivs: 1" {
		t.Errorf("the agent's status says %q, want NoNewPrivs: 1", got)
	}
}
