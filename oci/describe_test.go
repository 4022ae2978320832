package oci_test

import (
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// TestDescribe: each layer is described with what made it (the history
// entries that made a layer, empty ones skipped), and an index's
// platforms are listed; the text form says the same.
func TestDescribe(t *testing.T) {
	base, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := base.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "arm64"
	cf.Config.Entrypoint = []string{"/usr/local/bin/entrypoint"}
	cf.Config.Labels = map[string]string{"b": "2", "a": "1"}
	cf.History = []v1.History{{CreatedBy: "COPY  sse /ssebench"}, {CreatedBy: "ENV X=1", EmptyLayer: true}, {Comment: "buildkit.dockerfile.v0"}}
	img, err := mutate.ConfigFile(base, cf)
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	d, err := oci.Describe(img, idx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Platform != "linux/arm64" || len(d.Platforms) != 1 || d.Platforms[0] != "linux/arm64" || d.IndexDigest == "" {
		t.Errorf("platform %q, platforms %v, index %q: want linux/arm64 picked from an index of it", d.Platform, d.Platforms, d.IndexDigest)
	}
	if len(d.Layers) != 2 || d.Layers[0].What != "COPY sse /ssebench" || d.Layers[1].What != "buildkit.dockerfile.v0" {
		t.Errorf("layers %+v: want each with the history entry that made it", d.Layers)
	}
	var b strings.Builder
	d.WriteText(&b)
	for _, want := range []string{"Entrypoint:  [\"/usr/local/bin/entrypoint\"]\n", "Cmd:         (none)\n", "  a=1\n  b=2\n", "Platforms:   linux/arm64\n", "   1  sha256:", "      COPY sse /ssebench\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}
