package runtimebin

import (
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// TestParsePlatforms: `runtime build` makes the host's platform unless
// told otherwise (issue 40: the default two-platform build failed where
// npm lacked the other platform's OpenCode package); "all" is both.
func TestParsePlatforms(t *testing.T) {
	host := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	for _, c := range []struct {
		name string
		in   []string
		want []v1.Platform
	}{
		{"default", nil, []v1.Platform{host}},
		{"all", []string{"all"}, DefaultPlatforms},
		{"named", []string{"linux/arm64", "linux/amd64"}, []v1.Platform{{OS: "linux", Architecture: "arm64"}, {OS: "linux", Architecture: "amd64"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParsePlatforms(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("ParsePlatforms(%q) (-want +got):\n%s", c.in, diff)
			}
		})
	}
	if _, err := ParsePlatforms([]string{"all", "linux/amd64"}); err == nil {
		t.Error(`ParsePlatforms("all", "linux/amd64") was accepted`)
	}
}
