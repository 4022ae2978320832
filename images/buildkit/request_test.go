package buildkit

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	bkclient "github.com/moby/buildkit/client"
	digest "github.com/opencontainers/go-digest"
)

// writeFile writes content to dir/name, creating parent directories.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// contextDir returns a build context holding a Dockerfile.
func contextDir(t *testing.T, dockerfile string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "Dockerfile", dockerfile)
	return dir
}

// layoutWithImage writes a small random image into a new OCI layout and
// returns the layout directory and the image's digest.
func layoutWithImage(t *testing.T) (string, v1.Hash) {
	t.Helper()
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return dir, d
}

func TestRequestValidate(t *testing.T) {
	ctxDir := contextDir(t, "FROM scratch\n")
	layoutDir, dgst := layoutWithImage(t)
	otherDir := t.TempDir()
	aFile := writeFile(t, t.TempDir(), "file", "x")
	missingDigest := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}

	for _, tc := range []struct {
		name    string
		req     Request
		wantErr string // a fragment the user must see; "" for a valid request
	}{
		{name: "minimal", req: Request{ContextDir: ctxDir}},
		{name: "everything", req: Request{
			ContextDir:     ctxDir,
			Dockerfile:     filepath.Join(ctxDir, "Dockerfile"),
			Target:         "final",
			Platform:       "linux/arm64/v8",
			BuildArgs:      map[string]string{"A": "1"},
			Labels:         map[string]string{"ssebench.task-files": "abc"},
			LocalContexts:  map[string]string{"workspace": otherDir},
			LayoutContexts: map[string]LayoutImage{"ssebench-agent": {Dir: layoutDir, Digest: dgst}},
			ImageContexts:  map[string]string{"os": "127.0.0.1:5000/ssebench/os/debian:bookworm"},
			NoCache:        true,
			Push:           "127.0.0.1:5000/ssebench/x:1",
		}},
		{name: "no context", req: Request{}, wantErr: "build context directory is empty"},
		{name: "missing context", req: Request{ContextDir: filepath.Join(otherDir, "nope")}, wantErr: "reading build context"},
		{name: "context is a file", req: Request{ContextDir: aFile}, wantErr: "is not a directory"},
		{name: "no Dockerfile", req: Request{ContextDir: otherDir}, wantErr: "reading Dockerfile"},
		{name: "Dockerfile is a directory", req: Request{ContextDir: ctxDir, Dockerfile: otherDir}, wantErr: "not a regular file"},
		{name: "platform without arch", req: Request{ContextDir: ctxDir, Platform: "linux"}, wantErr: `invalid platform "linux"`},
		{name: "build arg with =", req: Request{ContextDir: ctxDir, BuildArgs: map[string]string{"A=B": "1"}}, wantErr: "invalid build argument name"},
		{name: "empty build arg", req: Request{ContextDir: ctxDir, BuildArgs: map[string]string{"": "1"}}, wantErr: "invalid build argument name"},
		{name: "empty label", req: Request{ContextDir: ctxDir, Labels: map[string]string{"": "1"}}, wantErr: "label name is empty"},
		{name: "reserved local name", req: Request{ContextDir: ctxDir, LocalContexts: map[string]string{"context": otherDir}}, wantErr: "reserved"},
		{name: "missing local dir", req: Request{ContextDir: ctxDir, LocalContexts: map[string]string{"w": filepath.Join(otherDir, "nope")}}, wantErr: `local context "w"`},
		{name: "empty context name", req: Request{ContextDir: ctxDir, ImageContexts: map[string]string{"": "alpine"}}, wantErr: "invalid image context name"},
		{name: "name used twice", req: Request{
			ContextDir:    ctxDir,
			LocalContexts: map[string]string{"base": otherDir},
			ImageContexts: map[string]string{"base": "alpine"},
		}, wantErr: `context "base" is given twice (local and image)`},
		{name: "layout without index", req: Request{ContextDir: ctxDir, LayoutContexts: map[string]LayoutImage{"a": {Dir: otherDir, Digest: dgst}}}, wantErr: "is not an OCI image layout"},
		{name: "layout without digest", req: Request{ContextDir: ctxDir, LayoutContexts: map[string]LayoutImage{"a": {Dir: layoutDir}}}, wantErr: "image digest is empty"},
		{name: "layout without the blob", req: Request{ContextDir: ctxDir, LayoutContexts: map[string]LayoutImage{"a": {Dir: layoutDir, Digest: missingDigest}}}, wantErr: "has no blob"},
		{name: "bad image reference", req: Request{ContextDir: ctxDir, ImageContexts: map[string]string{"a": "UPPER/Case"}}, wantErr: `image context "a"`},
		{name: "bad push reference", req: Request{ContextDir: ctxDir, Push: "bad ref"}, wantErr: "invalid push reference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("validate() = %v, want nil", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("validate() = nil, want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("validate() = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewSolveOptLayoutOutput(t *testing.T) {
	ctxDir := contextDir(t, "FROM scratch\n")
	dfDir := t.TempDir()
	df := writeFile(t, dfDir, "case.Dockerfile", "FROM scratch\n")
	workspace := t.TempDir()
	layoutDir, dgst := layoutWithImage(t)
	out := t.TempDir()

	req := Request{
		ContextDir:    ctxDir,
		Dockerfile:    df,
		Target:        "final",
		Platform:      "linux/amd64",
		BuildArgs:     map[string]string{"SSEBENCH_REGISTRY": "127.0.0.1:5000/ssebench"},
		Labels:        map[string]string{"ssebench.task-files": "abc"},
		LocalContexts: map[string]string{"workspace": workspace},
		// Two names from one layout share one store.
		LayoutContexts: map[string]LayoutImage{
			"ssebench-agent": {Dir: layoutDir, Digest: dgst},
			"other":          {Dir: layoutDir, Digest: dgst},
		},
		ImageContexts: map[string]string{"os": "127.0.0.1:5000/ssebench/os/debian:bookworm"},
		NoCache:       true,
	}
	if err := req.validate(); err != nil {
		t.Fatalf("validate() = %v", err)
	}
	opt, err := newSolveOpt(req, out, nil)
	if err != nil {
		t.Fatalf("newSolveOpt() = %v", err)
	}

	wantAttrs := map[string]string{
		"filename":                    "case.Dockerfile",
		"target":                      "final",
		"platform":                    "linux/amd64",
		"no-cache":                    "",
		"build-arg:SSEBENCH_REGISTRY": "127.0.0.1:5000/ssebench",
		"label:ssebench.task-files":   "abc",
		"context:workspace":           "local:workspace",
		"context:ssebench-agent":      "oci-layout://ssebench-layout-0@" + dgst.String(),
		"context:other":               "oci-layout://ssebench-layout-0@" + dgst.String(),
		"context:os":                  "docker-image://127.0.0.1:5000/ssebench/os/debian:bookworm",
	}
	if opt.Frontend != "dockerfile.v0" {
		t.Errorf("Frontend = %q, want dockerfile.v0", opt.Frontend)
	}
	if diff := cmp.Diff(wantAttrs, opt.FrontendAttrs); diff != "" {
		t.Errorf("FrontendAttrs (-want +got):\n%s", diff)
	}
	wantExports := []bkclient.ExportEntry{{
		Type:      "oci",
		Attrs:     map[string]string{"tar": "false", "oci-mediatypes": "true", "compression": "gzip", "compression-level": "1"},
		OutputDir: out,
	}}
	if diff := cmp.Diff(wantExports, opt.Exports); diff != "" {
		t.Errorf("Exports (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"context", "dockerfile", "workspace"}, sortedKeys(opt.LocalMounts)); diff != "" {
		t.Errorf("LocalMounts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ssebench-layout-0"}, sortedKeys(opt.OCIStores)); diff != "" {
		t.Errorf("OCIStores (-want +got):\n%s", diff)
	}

	// The Dockerfile's own directory is what the frontend reads it from.
	var names []string
	if err := opt.LocalMounts["dockerfile"].Walk(context.Background(), "", func(p string, _ os.DirEntry, err error) error {
		names = append(names, p)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "case.Dockerfile") {
		t.Errorf("dockerfile mount holds %q, want case.Dockerfile among them", names)
	}
}

func TestNewSolveOptSourceDateEpoch(t *testing.T) {
	ctxDir := contextDir(t, "FROM scratch\n")
	epoch := time.Unix(1750000000, 0)
	for _, push := range []string{"", "127.0.0.1:5000/ssebench/x:1"} {
		opt, err := newSolveOpt(Request{ContextDir: ctxDir, Push: push, SourceDateEpoch: epoch}, t.TempDir(), nil)
		if err != nil {
			t.Fatalf("newSolveOpt() = %v", err)
		}
		if got := opt.FrontendAttrs["build-arg:SOURCE_DATE_EPOCH"]; got != "1750000000" {
			t.Errorf("push %q: build-arg:SOURCE_DATE_EPOCH = %q, want 1750000000", push, got)
		}
		if got := opt.Exports[0].Attrs["rewrite-timestamp"]; got != "true" {
			t.Errorf("push %q: export rewrite-timestamp = %q, want true", push, got)
		}
	}
}

func TestNewSolveOptPush(t *testing.T) {
	ctxDir := contextDir(t, "FROM scratch\n")
	for _, tc := range []struct {
		ref  string
		want map[string]string
	}{
		{"127.0.0.1:5000/ssebench/x:1", map[string]string{"name": "127.0.0.1:5000/ssebench/x:1", "push": "true", "oci-mediatypes": "true", "registry.insecure": "true"}},
		{"localhost:5000/x", map[string]string{"name": "localhost:5000/x", "push": "true", "oci-mediatypes": "true", "registry.insecure": "true"}},
		{"ghcr.io/acme/x:1", map[string]string{"name": "ghcr.io/acme/x:1", "push": "true", "oci-mediatypes": "true"}},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			opt, err := newSolveOpt(Request{ContextDir: ctxDir, Push: tc.ref}, "", nil)
			if err != nil {
				t.Fatalf("newSolveOpt() = %v", err)
			}
			want := []bkclient.ExportEntry{{Type: "image", Attrs: tc.want}}
			if diff := cmp.Diff(want, opt.Exports); diff != "" {
				t.Errorf("Exports (-want +got):\n%s", diff)
			}
			if opt.OCIStores != nil {
				t.Errorf("OCIStores = %v, want none", opt.OCIStores)
			}
		})
	}
}

func TestIsLoopbackRegistry(t *testing.T) {
	for _, tc := range []struct {
		ref  string
		want bool
	}{
		{"127.0.0.1:5000/a/b:1", true},
		{"127.0.0.2/a", true},
		{"localhost:5000/a", true},
		{"localhost/a", true},
		{"[::1]:5000/a", true},
		{"ghcr.io/a/b", false},
		{"10.0.0.1:5000/a", false},
		{"alpine", false},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			got, err := isLoopbackRegistry(tc.ref)
			if err != nil {
				t.Fatalf("isLoopbackRegistry(%q) = %v", tc.ref, err)
			}
			if got != tc.want {
				t.Errorf("isLoopbackRegistry(%q) = %v, want %v", tc.ref, got, tc.want)
			}
		})
	}
}

func TestLayoutStoreIsReadOnly(t *testing.T) {
	ctxDir := contextDir(t, "FROM ssebench-agent\n")
	layoutDir, dgst := layoutWithImage(t)
	opt, err := newSolveOpt(Request{ContextDir: ctxDir, LayoutContexts: map[string]LayoutImage{"ssebench-agent": {Dir: layoutDir, Digest: dgst}}}, t.TempDir(), nil)
	if err != nil {
		t.Fatalf("newSolveOpt() = %v", err)
	}
	cs := opt.OCIStores["ssebench-layout-0"]
	ctx := context.Background()
	info, err := cs.Info(ctx, digestOf(dgst))
	if err != nil {
		t.Fatalf("Info(%s) = %v, want the image's manifest", dgst, err)
	}
	if info.Size == 0 {
		t.Errorf("Info(%s).Size = 0, want the manifest's size", dgst)
	}
	if _, err := cs.Writer(ctx); err == nil {
		t.Error("Writer() = nil error, want the store to refuse writes")
	}
	if err := cs.Delete(ctx, digestOf(dgst)); err == nil {
		t.Error("Delete() = nil error, want the store to refuse")
	}
	if _, err := os.Stat(filepath.Join(layoutDir, "blobs", dgst.Algorithm, dgst.Hex)); err != nil {
		t.Errorf("manifest blob after Delete: %v", err)
	}
}

func digestOf(h v1.Hash) digest.Digest { return digest.Digest(h.String()) }
