package runtimebin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// buildWith builds the runtime with OpenCode 1.2.3 from f, checked
// against pinned.
func buildWith(t *testing.T, f *fakeNPM, pinned []byte, tmp string) error {
	t.Helper()
	_, err := Build(context.Background(), WithModuleDir(moduleRoot), WithTempDir(tmp), withCompiler(fakeCompile),
		WithOpenCode("1.2.3"), withPinnedLock(pinned), WithNPMRegistry(f.URL), WithNPMCache(t.TempDir()))
	return err
}

// TestHostileNPMDependencyName: a registry that names a dependency
// "../../../pwned" had its package unpacked outside the staging folder.
// The name is refused before it is used in a path or a URL.
func TestHostileNPMDependencyName(t *testing.T) {
	for _, name := range []string{"../../../pwned", "@x/../../../pwned", "a/b", ".hidden", "x\nY"} {
		t.Run(name, func(t *testing.T) {
			hostile.Case(t, "npm tarballs")
			f := newFakeNPM(t, "1.2.3")
			f.add(t, name, "1.0.0", map[string]string{"x": "pwned"}, nil, nil)
			doc := f.docs[escapeName("@opencode-ai/plugin")+"/1.2.3"].(map[string]any)
			doc["dependencies"] = map[string]string{"zod": "^4.1.0", name: "1.0.0"}
			tmp := t.TempDir()
			err := buildWith(t, f, f.pinned(t), tmp)
			if err == nil || !strings.Contains(err.Error(), "is not an npm package name") {
				t.Errorf("Build = %v, want the name refused", err)
			}
			if _, err := os.Stat(filepath.Join(tmp, "pwned")); err == nil {
				t.Errorf("the dependency was unpacked outside the staging folder")
			}
		})
	}
}

// TestUnpackTarballStaysInRoot: nothing a tarball or the place the
// registry gives it names is written outside the staging folder, not
// through "..", not through a symlink in the folder.
func TestUnpackTarballStaysInRoot(t *testing.T) {
	hostile.Case(t, "npm tarballs")
	base := t.TempDir()
	stage := filepath.Join(base, "stage")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{stage, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(stage, "node_modules")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "p.tgz")
	if err := os.WriteFile(file, tgz(t, map[string]string{"index.js": "pwned"}), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(stage)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, dir := range []string{"../outside", "node_modules/zod"} {
		if _, err := unpackTarball(file, root, dir, nil); err == nil {
			t.Errorf("unpackTarball(into %q) = nil error", dir)
		}
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 0 {
		t.Errorf("%d entries written outside the staging folder", len(ents))
	}
}

// TestPinnedLock: the registry's answer is checked against the lock
// committed with the code, not only against the integrity the same
// registry publishes: other bytes for a package (with an integrity to
// match), a dependency the lock does not name, a version the lock does
// not have, each stop the build.
func TestPinnedLock(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, f *fakeNPM)
		pinned func(f *fakeNPM, good []byte) []byte
		want   string
	}{
		{"other bytes, their own integrity", func(t *testing.T, f *fakeNPM) {
			f.add(t, "zod", "4.1.8", map[string]string{"package.json": `{"name":"zod"}`, "index.js": "evil"}, nil, nil)
		}, nil, "serves other bytes than when the lock was written"},
		{"a dependency the lock does not name", func(t *testing.T, f *fakeNPM) {
			f.add(t, "left-pad", "1.0.0", map[string]string{"index.js": "evil"}, nil, nil)
			doc := f.docs[escapeName("@opencode-ai/plugin")+"/1.2.3"].(map[string]any)
			doc["dependencies"] = map[string]string{"zod": "^4.1.0", "left-pad": "1.0.0"}
		}, nil, "does not name"},
		{"a version the lock does not have", nil, func(f *fakeNPM, good []byte) []byte {
			return []byte(strings.Replace(string(good), `"1.2.3":`, `"9.9.9":`, 1))
		}, "is not in the lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "npm tarballs")
			f := newFakeNPM(t, "1.2.3")
			pinned := f.pinned(t) // before the registry changes
			if tc.change != nil {
				tc.change(t, f)
			}
			if tc.pinned != nil {
				pinned = tc.pinned(f, pinned)
			}
			err := buildWith(t, f, pinned, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestPinnedLockCommitted: the committed lock reads, and has the pinned
// OpenCode version with its amd64 binary and its plugin SDK.
func TestPinnedLockCommitted(t *testing.T) {
	f, err := readPinned(pinnedLock)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := f.Versions[DefaultOpenCodeVersion]
	if !ok {
		t.Fatalf("the lock has no OpenCode %s", DefaultOpenCodeVersion)
	}
	if b := v.Binaries["amd64"]; b.Name != openCodePlatformPackages["amd64"] || b.Version != DefaultOpenCodeVersion {
		t.Errorf("the lock's amd64 binary is %s", b)
	}
	found := false
	for _, p := range v.SDK {
		found = found || (p.Name == openCodeSDK && p.Version == DefaultOpenCodeVersion && p.Path == "node_modules/"+openCodeSDK)
	}
	if !found {
		t.Errorf("the lock's SDK has no %s@%s", openCodeSDK, DefaultOpenCodeVersion)
	}
	// A lock that names a place outside node_modules is refused.
	bad, _ := json.Marshal(pinnedFile{Versions: map[string]pinnedVersion{"1.0.0": {SDK: []pinnedPackage{{Path: "node_modules/../../x", Name: "x", Version: "1.0.0", Integrity: integrity(nil)}}}}})
	if _, err := readPinned(bad); err == nil {
		t.Errorf("readPinned(a path outside node_modules) = nil error")
	}
}

func TestCheckNPMNames(t *testing.T) {
	for name, ok := range map[string]bool{"zod": true, "@opencode-ai/plugin": true, "JSONStream": true, "find-my-way-ts": true,
		"..": false, "../x": false, "@a/b/c": false, "": false, "_x": false, "a b": false, "@/x": false} {
		if got := checkNPMName(name) == nil; got != ok {
			t.Errorf("checkNPMName(%q) ok = %t, want %t", name, got, ok)
		}
	}
	for v, ok := range map[string]bool{"1.2.3": true, "4.0.0-beta.83": true, "1.2": false, "v1.2.3": false, "1.2.3+b": false, "1.2.3/..": false} {
		if got := checkNPMVersion(v) == nil; got != ok {
			t.Errorf("checkNPMVersion(%q) ok = %t, want %t", v, got, ok)
		}
	}
}
