package pipeline

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

type tarEntry struct {
	name, body, link string
	typ              byte
}

func layer(t *testing.T, entries ...tarEntry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.link, Mode: 0o644, ModTime: time.Unix(1700000000, 0)}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if e.typ == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, e.body)
	}
	tw.Close()
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestReferencePatch copies the task's patch out of a case image, the last
// layer's copy winning, and refuses what is not a file of the image.
func TestReferencePatch(t *testing.T) {
	ctx := t.Context()
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image,
		layer(t, tarEntry{name: "ssebench/", typ: tar.TypeDir}, tarEntry{name: "ssebench/diffs/", typ: tar.TypeDir},
			tarEntry{name: "ssebench/diffs/patch.diff", body: "old\n", typ: tar.TypeReg},
			tarEntry{name: "etc/", typ: tar.TypeDir}, tarEntry{name: "etc/shadow", body: "root:secret\n", typ: tar.TypeReg}),
		layer(t, tarEntry{name: "ssebench/diffs/patch.diff", body: "--- a/x\n+++ b/x\n", typ: tar.TypeReg},
			tarEntry{name: "ssebench/diffs/escape.diff", link: "../../etc/shadow", typ: tar.TypeSymlink}),
	)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf.OS, cf.Architecture = "linux", "amd64"
	img, _ = mutate.ConfigFile(img, cf)
	ref := "registry.invalid/ssebench/case/examples/t"
	r, _ := name.ParseReference(ref, name.WeakValidation)
	if err := st.Write(ctx, r, img); err != nil {
		t.Fatal(err)
	}
	e := &Env{Store: st}
	plat := &v1.Platform{OS: "linux", Architecture: "amd64"}

	p, cleanup, err := e.referencePatch(ctx, ref, "diffs/patch.diff", plat)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "--- a/x\n+++ b/x\n" {
		t.Errorf("the copied patch = %q, want the last layer's", got)
	}
	cleanup()
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("cleanup left %s (%v)", p, err)
	}

	// A symlink resolves inside the image: to its /etc/shadow, never the
	// host's; a path that leaves /ssebench through ".." stays in it.
	for _, tt := range []struct{ patch, want string }{
		{"diffs/missing.diff", "has no file /ssebench/diffs/missing.diff"},
		{"../etc/shadow", "has no file /ssebench/etc/shadow"},
		{"", "names none"},
	} {
		if _, _, err := e.referencePatch(ctx, ref, tt.patch, plat); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("referencePatch(%q) = %v, want %q", tt.patch, err, tt.want)
		}
	}
	p, cleanup, err = e.referencePatch(ctx, ref, "diffs/escape.diff", plat)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if got, _ := os.ReadFile(p); string(got) != "root:secret\n" {
		t.Errorf("a symlinked patch gave %q, want the image's own file", got)
	}
}
