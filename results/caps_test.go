package results

import (
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// TestNoSandboxShown: a run graded without its sandbox (the user allowed
// it) is flagged for the reader of a report, with the machine's reason.
func TestNoSandboxShown(t *testing.T) {
	for _, tc := range []struct {
		sandbox string
		want    string
	}{
		{"none: creating namespaces: operation not permitted", "graded without a sandbox (creating namespaces: operation not permitted)"},
		{"namespaces", ""},
		{"", ""},
	} {
		got := strings.Join(Entry{Sandbox: tc.sandbox}.Flags(), "; ")
		if got != tc.want {
			t.Errorf("Entry{Sandbox: %q}.Flags() = %q, want %q", tc.sandbox, got, tc.want)
		}
	}
}

// TestTreeTooLargeText: the tree's verdict is explained as what it is,
// not as a forged report.
func TestTreeTooLargeText(t *testing.T) {
	got := IntegrityText(contract.IntegrityTreeTooLarge + ": sparse.bin 20 GiB")
	if !strings.Contains(got, "caps") || strings.Contains(got, "canary") {
		t.Errorf("IntegrityText(tree too large) = %q", got)
	}
}
