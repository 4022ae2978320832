package runtimebin

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// The registry names a dependency and publishes its integrity: both
// could be anything a hostile or broken registry (or mirror) says, and a
// name such as "../../x" placed its package outside the staging folder.
// So every name and version is checked before it is used in a path or a
// URL, the tarballs are unpacked through an os.Root, and what the layers
// are made of is checked against opencode.lock.json, committed with the
// code: a registry that serves other bytes than when the lock was
// written, or one more dependency, stops the build.

// pinnedLock is opencode.lock.json.
//
//go:embed opencode.lock.json
var pinnedLock []byte

// pinnedFile is the lock's format: per OpenCode version, the binary's
// package per architecture and the plugin SDK's packages.
type pinnedFile struct {
	Versions map[string]pinnedVersion `json:"versions"`
}

type pinnedVersion struct {
	Binaries map[string]pinnedPackage `json:"binaries"`
	SDK      []pinnedPackage          `json:"sdk"`
}

// pinnedPackage is one package: its place under node_modules (the SDK's
// only), name, version and integrity.
type pinnedPackage struct {
	Path      string `json:"path,omitempty"`
	Name      string `json:"name"`
	Version   string `json:"version"`
	Integrity string `json:"integrity"`
}

func (p pinnedPackage) String() string { return p.Name + "@" + p.Version }

// readPinned reads a lock, every name, version and path of it checked.
func readPinned(b []byte) (*pinnedFile, error) {
	var f pinnedFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("reading the OpenCode lock: %w", err)
	}
	for v, pv := range f.Versions {
		if err := checkNPMVersion(v); err != nil {
			return nil, fmt.Errorf("the OpenCode lock: %w", err)
		}
		for _, p := range append(slices.Collect(maps.Values(pv.Binaries)), pv.SDK...) {
			if err := checkPackage(p.Name, p.Version); err != nil {
				return nil, fmt.Errorf("the OpenCode lock: %w", err)
			}
			if p.Path != "" {
				if err := checkSDKPath(p.Path, p.Name); err != nil {
					return nil, fmt.Errorf("the OpenCode lock: %w", err)
				}
			}
			if _, err := sha512Integrity(p.Integrity); err != nil {
				return nil, fmt.Errorf("the OpenCode lock: %s: %w", p, err)
			}
		}
	}
	return &f, nil
}

// checkPinned checks lock, as the registry or the cache resolved it for
// archs, against the pinned lock: the same packages, at the same places,
// with the same sha512 digests.
func (lock *openCodeLock) checkPinned(pinned []byte, archs []string) error {
	f, err := readPinned(pinned)
	if err != nil {
		return err
	}
	pv, ok := f.Versions[lock.Version]
	if !ok {
		return fmt.Errorf("OpenCode %s is not in the lock of this ssebench (runtimebin/opencode.lock.json), which names what each version's layers are made of: build the pinned %s, or add %s to the lock", lock.Version, DefaultOpenCodeVersion, lock.Version)
	}
	mismatch := func(got npmVersion, want pinnedPackage) error {
		if got.Name != want.Name || got.Version != want.Version {
			return fmt.Errorf("OpenCode %s: the registry resolved %s@%s where the lock (runtimebin/opencode.lock.json) has %s: check the npm registry (NPM_CONFIG_REGISTRY or ~/.npmrc)", lock.Version, got.Name, got.Version, want)
		}
		g, err := sha512Integrity(got.Dist.Integrity)
		if err != nil {
			return fmt.Errorf("%s@%s: %w", got.Name, got.Version, err)
		}
		w, _ := sha512Integrity(want.Integrity)
		if string(g) != string(w) {
			return fmt.Errorf("OpenCode %s: the registry publishes %s@%s with integrity %s, the lock (runtimebin/opencode.lock.json) %s: the registry or the npm cache serves other bytes than when the lock was written", lock.Version, got.Name, got.Version, got.Dist.Integrity, want.Integrity)
		}
		return nil
	}
	for _, a := range archs {
		want, ok := pv.Binaries[a]
		if !ok {
			return fmt.Errorf("OpenCode %s has no package for linux/%s in the lock (runtimebin/opencode.lock.json)", lock.Version, a)
		}
		if err := mismatch(lock.Binaries[a], want); err != nil {
			return err
		}
	}
	got := map[string]npmVersion{}
	for _, p := range lock.SDK {
		got[p.Path] = p.npmVersion
	}
	for _, want := range pv.SDK {
		g, ok := got[want.Path]
		if !ok {
			return fmt.Errorf("OpenCode %s: the registry's plugin SDK has no %s, which the lock (runtimebin/opencode.lock.json) has at %s", lock.Version, want, want.Path)
		}
		if err := mismatch(g, want); err != nil {
			return err
		}
		delete(got, want.Path)
	}
	for p, g := range got {
		return fmt.Errorf("OpenCode %s: the registry's plugin SDK needs %s@%s (at %s), which the lock (runtimebin/opencode.lock.json) does not name", lock.Version, g.Name, g.Version, p)
	}
	return nil
}

// npmNameRE is an npm package name: an optional @scope/, then a name
// that starts with a letter or digit (never "." or "_", so never ".."),
// of URL-safe characters. Legacy names may have capitals.
var npmNameRE = regexp.MustCompile(`^(?:@[a-z0-9][a-z0-9._~-]*/)?[a-zA-Z0-9][a-zA-Z0-9._~-]*$`)

// npmVersionRE is an exact version: three numbers and an optional
// prerelease, no build metadata.
var npmVersionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?$`)

// checkNPMName refuses a name that is not an npm package name: it goes
// into paths (node_modules/NAME, the cache's file names) and URLs.
func checkNPMName(name string) error {
	if len(name) > 214 || !npmNameRE.MatchString(name) {
		return fmt.Errorf("%q is not an npm package name: check the npm registry (NPM_CONFIG_REGISTRY or ~/.npmrc)", cut(name, 80))
	}
	return nil
}

// checkNPMVersion refuses what is not an exact version.
func checkNPMVersion(v string) error {
	if len(v) > 64 || !npmVersionRE.MatchString(v) || !semver.IsValid("v"+v) {
		return fmt.Errorf("%q is not an exact npm version: check the npm registry (NPM_CONFIG_REGISTRY or ~/.npmrc)", cut(v, 80))
	}
	return nil
}

func checkPackage(name, version string) error {
	if err := checkNPMName(name); err != nil {
		return err
	}
	return checkNPMVersion(version)
}

// checkSDKPath refuses a place for package name that is not
// node_modules/NAME, below the node_modules of another package or none.
func checkSDKPath(p, name string) error {
	bad := fmt.Errorf("%q is not a place under node_modules for %s", cut(p, 120), cut(name, 80))
	rest, ok := strings.CutPrefix(p, "node_modules/")
	if !ok {
		return bad
	}
	parts := strings.Split(rest, "/node_modules/")
	for _, part := range parts {
		if checkNPMName(part) != nil {
			return bad
		}
	}
	if parts[len(parts)-1] != name {
		return bad
	}
	return nil
}

// cut shortens s to n bytes for a message.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
