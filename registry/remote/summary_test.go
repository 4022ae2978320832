package remote_test

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// TestPlanTable: a dry run's table says per image whether its tag is new,
// unchanged or moves, and ends with what would be uploaded.
func TestPlanTable(t *testing.T) {
	d1, d2 := "sha256:"+strings.Repeat("1", 64), "sha256:"+strings.Repeat("2", 64)
	plan := &remote.Plan{Images: []remote.PlannedImage{
		{Target: "r/a:1", Digest: d1},
		{Target: "r/b:1", Digest: d1, Current: d1},
		{Target: "r/c:1", Digest: d1, Current: d2, Blobs: 2, Bytes: 2048, Upload: 1, UploadBytes: 1024},
	}, Missing: []string{"r/gone:1"}, UploadBlobs: 1, UploadBytes: 1024}
	var b strings.Builder
	if err := plan.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for i, want := range []string{"TARGET", " new", " unchanged", " moves from sha256:222222"} {
		if !strings.Contains(lines[i], want) || (i > 0 && !strings.HasPrefix(lines[i], plan.Images[i-1].Target)) {
			t.Errorf("line %d %q: want %q", i, lines[i], want)
		}
	}
	for _, want := range []string{"missing from the source registry: r/gone:1\n", "dry run: would upload 1.0 KiB (1 blob) for 3 images; nothing was written\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestCopiedSummary: a copy that wrote something says what it moved; a tag
// made in the store, which wrote nothing anywhere, has no push.
func TestCopiedSummary(t *testing.T) {
	c := &remote.Copied{Source: "r/a:1", Target: "r/a:2", FromStore: true}
	if s := c.Summary(); s.Push != nil || !s.FromStore {
		t.Errorf("store tag: summary %+v, want no push", s)
	}
	c.Push = remote.PushReport{Manifests: 1, Skipped: 10, SkippedBlobs: 1}
	if s := c.Summary(); s.Push == nil || s.Push.Manifests != 1 || s.Push.Skipped != 10 {
		t.Errorf("copy: summary push %+v, want the manifest and the blob skipped", s.Push)
	}
	if (*remote.PushReport)(nil).Summary() != nil {
		t.Error("a nil report has a summary")
	}
	m := &remote.MirrorReport{Images: []remote.MirroredImage{{Source: "a/x:1", Target: "b/x:1", Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("3", 64)}}}}
	if s := m.Summary(); len(s.Images) != 1 || s.Images[0].Digest != "sha256:"+strings.Repeat("3", 64) || s.Push == nil {
		t.Errorf("mirror summary %+v", s)
	}
}

// TestParseNewTag: a bare tag names the source's repository; a digest is
// no tag.
func TestParseNewTag(t *testing.T) {
	src, _ := name.ParseReference("localhost:5000/ssebench/runtime:1.0")
	for arg, want := range map[string]string{
		"stable":                       "localhost:5000/ssebench/runtime:stable",
		"localhost:5000/other/repo:v2": "localhost:5000/other/repo:v2",
		"two words":                    "",
		"localhost:5000/x@sha256:" + strings.Repeat("a", 64): "",
	} {
		got, err := remote.ParseNewTag(src, arg)
		switch {
		case want == "" && err == nil:
			t.Errorf("ParseNewTag(%q) = %v, want an error", arg, got)
		case want != "" && (err != nil || got.Name() != want):
			t.Errorf("ParseNewTag(%q) = %v, %v; want %s", arg, got, err, want)
		}
	}
}
