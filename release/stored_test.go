package release_test

import (
	"context"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/release"
)

// TestPublishRevision: --revision is taken as given; without it a folder
// outside a git checkout is refused with what to pass.
func TestPublishRevision(t *testing.T) {
	if rev, err := release.PublishRevision(context.Background(), t.TempDir(), "0123abc"); err != nil || rev != "0123abc" {
		t.Errorf("PublishRevision(given) = %q, %v", rev, err)
	}
	if _, err := release.PublishRevision(context.Background(), t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "pass --revision") {
		t.Errorf("PublishRevision(no checkout) = %v, want --revision asked for", err)
	}
}

// TestRecordVerified: a task verified when the record has it with the
// files digest given; a record without a files digest verifies nothing.
func TestRecordVerified(t *testing.T) {
	rec := &release.Record{Tasks: map[string]release.VerifiedTask{"a": {FilesSHA256: "f1"}, "b": {}}}
	for _, tc := range []struct {
		id, files string
		want      bool
	}{{"a", "f1", true}, {"a", "f2", false}, {"b", "", false}, {"c", "f1", false}} {
		if got := rec.Verified(tc.id, tc.files); got != tc.want {
			t.Errorf("Verified(%q, %q) = %v, want %v", tc.id, tc.files, got, tc.want)
		}
	}
}
