package runtimebin

import (
	"fmt"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/contract"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Env names the runtime image to use instead of REGISTRY/runtime:VERSION.
const Env = "SSEBENCH_RUNTIME_IMAGE"

// Entrypoint is the path every runtime image must hold: the tool image's
// ENTRYPOINT.
const Entrypoint = contract.Entrypoint

// Daemon is the path of the daemon in a runtime image.
const Daemon = "/ssebench/ssebench-daemon"

// MCP is the path of the agent's MCP server in a runtime image: under
// /ssebench, which only root can enter, in a directory of its own.
const MCP = "/ssebench/mcp/ssebench-mcp"

// Ref returns the runtime image reference: flag when set, else env (the
// value of SSEBENCH_RUNTIME_IMAGE), else def (REGISTRY/runtime:VERSION).
func Ref(flag, env, def string) string {
	for _, v := range []string{flag, env} {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return def
}

// Platform picks the manifest for p from idx. The error lists the platforms
// the index has, so the user can pick one or build the missing one.
func Platform(ref string, idx v1.ImageIndex, p v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading index of %s: %w", ref, err)
	}
	var have []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			continue
		}
		if d.Platform.Satisfies(p) && d.MediaType.IsImage() {
			img, err := idx.Image(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("reading %s for %s: %w", ref, p, err)
			}
			return img, nil
		}
		have = append(have, d.Platform.String())
	}
	return nil, fmt.Errorf("%s has no image for %s (it has: %s): build the runtime for that platform with `ssebench runtime build --platform %s`", ref, p, strings.Join(have, ", "), p)
}

// CheckPlatform returns an error when a single-platform image is not for p.
func CheckPlatform(ref string, img v1.Image, p v1.Platform) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("reading config of %s: %w", ref, err)
	}
	got := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	if got.OS == "" && got.Architecture == "" {
		return nil // FROM scratch images built by hand may not say; trust the caller.
	}
	if !got.Satisfies(p) {
		return fmt.Errorf("%s is for %s, not %s: pass a runtime image for %s with --runtime", ref, got.String(), p, p)
	}
	return nil
}
