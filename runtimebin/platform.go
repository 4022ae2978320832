package runtimebin

import (
	"fmt"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// AllPlatforms is the --platform value that builds every platform of
// DefaultPlatforms into the index.
const AllPlatforms = "all"

// HostPlatform is linux/<the host's architecture>: what `runtime build`
// makes when no platform is named, as `docker build` does. A build for
// both platforms needs OpenCode's package for each at the pinned version,
// which an npm mirror may lack for the other one; a run only needs its
// own.
func HostPlatform() v1.Platform {
	return v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
}

// ParsePlatforms reads the --platform values of `runtime build`: none
// means HostPlatform, "all" DefaultPlatforms, anything else OS/ARCH each.
func ParsePlatforms(values []string) ([]v1.Platform, error) {
	if len(values) == 0 {
		return []v1.Platform{HostPlatform()}, nil
	}
	var out []v1.Platform
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == AllPlatforms {
			if len(values) > 1 {
				return nil, fmt.Errorf("--platform %s builds every platform: name no other", AllPlatforms)
			}
			return append([]v1.Platform(nil), DefaultPlatforms...), nil
		}
		p, err := v1.ParsePlatform(v)
		if err != nil {
			return nil, fmt.Errorf("--platform %q: %w", v, err)
		}
		if p.OS == "" {
			p.OS = "linux"
		}
		out = append(out, *p)
	}
	return out, nil
}
