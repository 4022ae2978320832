package casebuild

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// TestOutcomesJSON: each case image with its action and digest; a failed
// one says so with its error redacted; none is [].
func TestOutcomesJSON(t *testing.T) {
	d := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}
	rows := OutcomesJSON([]CaseOutcome{
		{Task: "a-1", Image: "case/x/a-1", Action: "built", Digest: d},
		{Task: "b-2", Image: "case/x/b-2", Action: "built", Err: errors.New("GET https://h/blob?sig=secret: 403")},
	}, func(s string) string { return strings.Replace(s, "?sig=secret", "?…", 1) })
	b, _ := json.Marshal(rows)
	want := `[{"task":"a-1","image":"case/x/a-1","action":"built","digest":"sha256:` + d.Hex + `"},{"task":"b-2","image":"case/x/b-2","action":"failed","error":"GET https://h/blob?…: 403"}]`
	if string(b) != want {
		t.Errorf("OutcomesJSON =\n%s\nwant\n%s", b, want)
	}
	if b, _ := json.Marshal(OutcomesJSON(nil, nil)); string(b) != "[]" {
		t.Errorf("OutcomesJSON(nil) = %s, want []", b)
	}
}
