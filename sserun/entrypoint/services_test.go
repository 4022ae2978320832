package entrypoint

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// TestFlowMCPUnprivileged runs the entrypoint as root with an agent that
// reads, through /proc, the uid of the MCP server the entrypoint started:
// it is neither root nor model nor the scripts' account, and the log the
// server writes stays root's.
func TestFlowMCPUnprivileged(t *testing.T) {
	f := newFlow(t)
	testenv.Need(t, f.root, "dropping to another account needs root")
	mcp := filepath.Join(f.task, "mcp", "ssebench-mcp")
	// The agent (model) sees every process's status; only this flow's
	// server has this path in its command line.
	agent := `for p in /proc/[0-9]*; do
	if tr '\0' ' ' <$p/cmdline 2>/dev/null | grep -q '^` + mcp + ` *$'; then
		echo "mcp $(awk '/^Uid:/ {print $2":"$3":"$4":"$5}' $p/status)"
	fi
done 2>/dev/null`
	out, err := f.command(agent).CombinedOutput()
	log := readFile(t, filepath.Join(f.results, contract.AgentLog))
	if err != nil {
		t.Fatalf("entrypoint: %v\n%s\nagent.log:\n%s", err, out, log)
	}
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "mcp ") {
			lines = append(lines, l)
		}
	}
	// The flow's scripts run as nobody (65534): the server is 65533.
	if len(lines) != 1 || lines[0] != "mcp 65533:65533:65533:65533" {
		t.Errorf("MCP server processes (uid real:effective:saved:fs) = %q, want one, not root, not model, not nobody\nagent.log:\n%s\nmcp.log:\n%s",
			lines, log, readFile(t, filepath.Join(f.results, contract.MCPLog)))
	}
}
