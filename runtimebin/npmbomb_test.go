package runtimebin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// TestHostileNPMTarballs: the integrity of a dependency's tarball is
// whatever the registry publishes, so it bounds nothing. A tarball that
// is too large to download, unpacks to too much or holds too many entries
// is refused in one line, before the staging folder fills the disk.
func TestHostileNPMTarballs(t *testing.T) {
	ctx := context.Background()
	const tp = "tarballs/opencode-linux-x64-1.2.3.tgz"
	lower := func(t *testing.T, p *int64, v int64) {
		old := *p
		*p = v
		t.Cleanup(func() { *p = old })
	}
	many := map[string]string{}
	for i := range 300 {
		many[fmt.Sprintf("bin/f%03d", i)] = ""
	}
	for _, c := range []struct {
		name  string
		files map[string]string
		limit func(t *testing.T)
		want  string
	}{
		{"a download past the size cap", map[string]string{"bin/opencode": noise(64 << 10)},
			func(t *testing.T) { lower(t, &maxNPMTarball, 1<<10) }, "larger than"},
		{"a tarball that unpacks past the cap", map[string]string{"bin/opencode": strings.Repeat("\x00", 4<<20)},
			func(t *testing.T) { lower(t, &maxNPMUnpacked, 1<<20) }, "unpacks to more than"},
		{"a tarball of too many entries", many,
			func(t *testing.T) {
				old := maxNPMFiles
				maxNPMFiles = 100
				t.Cleanup(func() { maxNPMFiles = old })
			}, "more than 100 entries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hostile.Case(t, "npm tarballs")
			f := newFakeNPM(t, "1.2.3")
			// The registry publishes the bomb's own integrity: it matches.
			b := tgz(t, c.files)
			f.tarballs[tp] = b
			doc := f.docs[escapeName("opencode-linux-x64")+"/1.2.3"].(map[string]any)
			doc["dist"] = map[string]string{"tarball": f.URL + "/" + tp, "integrity": integrity(b)}
			c.limit(t)
			_, err := Build(ctx, WithModuleDir(moduleRoot), WithTempDir(t.TempDir()), withCompiler(fakeCompile),
				WithOpenCode("1.2.3"), withPinnedLock(f.pinned(t)), WithNPMRegistry(f.URL), WithNPMCache(t.TempDir()))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Build = %v, want an error saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("not one line: %q", err)
			}
		})
	}
}

// noise is n bytes that gzip cannot shrink much.
func noise(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}
