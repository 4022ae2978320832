package assemble_test

import (
	"encoding/json"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/assemble"
)

// TestVerifyReport: failures and warnings apart, OK when no failure, and
// empty lists as [] for a script to read, not null.
func TestVerifyReport(t *testing.T) {
	r := assemble.NewVerifyReport("img", []assemble.Failure{
		{Check: "mode", Path: "/ssebench", Msg: "mode 0777, want 0755", Rule: "SPEC.md §12"},
		{Check: "path", Msg: "a directory early in PATH", Warning: true},
	})
	b, _ := json.Marshal(r)
	want := `{"image":"img","ok":false,"failures":[{"check":"mode","path":"/ssebench","message":"mode 0777, want 0755","rule":"SPEC.md §12"}],"warnings":[{"check":"path","message":"a directory early in PATH"}]}`
	if string(b) != want {
		t.Errorf("report =\n%s\nwant\n%s", b, want)
	}
	if b, _ := json.Marshal(assemble.NewVerifyReport("img", nil)); string(b) != `{"image":"img","ok":true,"failures":[],"warnings":[]}` {
		t.Errorf("report of a sound image = %s", b)
	}
}
