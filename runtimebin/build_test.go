package runtimebin

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// moduleRoot is the ssebench module, seen from this package's directory.
const moduleRoot = ".."

// fakeCompile writes small files that name the platform instead of
// running the Go toolchain.
func fakeCompile(_ context.Context, _ *buildOptions, p v1.Platform, dir string) error {
	for _, name := range []string{"entrypoint", "daemon", "mcp"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name+" for "+p.Architecture+"\n"), 0o700); err != nil {
			return err
		}
	}
	return nil
}

type tarEntry struct {
	Name    string
	Type    byte
	Mode    int64
	UID     int
	GID     int
	ModTime time.Time
	Content string
}

// layerFiles lists the single layer of img.
func layerFiles(t *testing.T, img v1.Image, content bool) []tarEntry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("image has %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []tarEntry
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		e := tarEntry{Name: h.Name, Type: h.Typeflag, Mode: h.Mode, UID: h.Uid, GID: h.Gid, ModTime: h.ModTime.UTC()}
		if content && h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			e.Content = string(b)
		}
		out = append(out, e)
	}
	return out
}

func TestBuild(t *testing.T) {
	when := time.Unix(1700000000, 0).UTC()
	build := func() v1.ImageIndex {
		t.Helper()
		idx, err := Build(context.Background(), WithModuleDir(moduleRoot), WithTempDir(t.TempDir()),
			WithTime(when), withCompiler(fakeCompile))
		if err != nil {
			t.Fatalf("Build() = %v", err)
		}
		return idx
	}
	idx := build()
	if err := validate.Index(idx); err != nil {
		t.Fatalf("validate.Index() = %v", err)
	}
	if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type = %s, want %s", mt, types.OCIImageIndex)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		got = append(got, d.Platform.String()+" "+string(d.MediaType))
	}
	want := []string{"linux/amd64 " + string(types.OCIManifestSchema1), "linux/arm64 " + string(types.OCIManifestSchema1)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("index manifests (-want +got):\n%s", diff)
	}

	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			img, err := Platform("runtime", idx, v1.Platform{OS: "linux", Architecture: arch})
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckPlatform("runtime", img, v1.Platform{OS: "linux", Architecture: arch}); err != nil {
				t.Error(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"/usr/local/bin/entrypoint"}, cf.Config.Entrypoint); diff != "" {
				t.Errorf("entrypoint (-want +got):\n%s", diff)
			}
			if cf.Config.Cmd != nil || !cf.Created.Time.Equal(when) {
				t.Errorf("config: cmd %q, created %v; want no cmd, created %v", cf.Config.Cmd, cf.Created.Time, when)
			}
			dir := func(name string) tarEntry {
				return tarEntry{Name: name, Type: tar.TypeDir, Mode: 0o755, ModTime: when}
			}
			file := func(name, content string) tarEntry {
				return tarEntry{Name: name, Type: tar.TypeReg, Mode: 0o755, ModTime: when, Content: content}
			}
			want := []tarEntry{
				dir("ssebench/"),
				{Name: "ssebench/mcp/", Type: tar.TypeDir, Mode: 0o700, ModTime: when},
				{Name: "ssebench/mcp/ssebench-mcp", Type: tar.TypeReg, Mode: 0o700, ModTime: when, Content: "mcp for " + arch + "\n"},
				file("ssebench/ssebench-daemon", "daemon for "+arch+"\n"),
				dir("usr/"),
				dir("usr/local/"),
				dir("usr/local/bin/"),
				file("usr/local/bin/entrypoint", "entrypoint for "+arch+"\n"),
			}
			if diff := cmp.Diff(want, layerFiles(t, img, true)); diff != "" {
				t.Errorf("runtime layer (-want +got):\n%s", diff)
			}
		})
	}

	d1, _ := idx.Digest()
	d2, _ := build().Digest()
	if d1 != d2 {
		t.Errorf("two builds gave indexes %s and %s, want the same", d1, d2)
	}
}

func TestBuildPlatforms(t *testing.T) {
	idx, err := Build(context.Background(), WithModuleDir(moduleRoot), WithTempDir(t.TempDir()),
		WithPlatforms(v1.Platform{OS: "linux", Architecture: "arm64"}), withCompiler(fakeCompile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Platform.String() != "linux/arm64" {
		t.Errorf("index lists %+v, want linux/arm64 only", m.Manifests)
	}
	if _, err := Platform("runtime", idx, v1.Platform{OS: "linux", Architecture: "amd64"}); err == nil {
		t.Error("Platform(linux/amd64) found an image in an arm64-only index")
	}
}

func TestBuildOptionErrors(t *testing.T) {
	tests := []struct {
		name string
		opts []BuildOption
		want string
	}{
		{"no module", []BuildOption{WithTempDir("/tmp")}, "see runtimebin.WithModuleDir"},
		{"not a module", []BuildOption{WithModuleDir("/"), WithTempDir("/tmp")}, "no go.mod"},
		{"no temp dir", []BuildOption{WithModuleDir(moduleRoot)}, "see runtimebin.WithTempDir"},
		{"other os", []BuildOption{WithPlatforms(v1.Platform{OS: "windows", Architecture: "amd64"})}, "cannot build the runtime for windows/amd64"},
		{"other arch", []BuildOption{WithPlatforms(v1.Platform{OS: "linux", Architecture: "riscv64"})}, "use linux/amd64 or linux/arm64"},
		{"twice", []BuildOption{WithPlatforms(DefaultPlatforms[0], DefaultPlatforms[0])}, "named twice"},
		{"none", []BuildOption{WithPlatforms()}, "no platform"},
		{"zero time", []BuildOption{WithTime(time.Time{})}, "zero time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(context.Background(), append(tt.opts, withCompiler(fakeCompile))...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestBuildCompileError(t *testing.T) {
	tmp := t.TempDir()
	boom := errors.New("boom")
	_, err := Build(context.Background(), WithModuleDir(moduleRoot), WithTempDir(tmp),
		withCompiler(func(context.Context, *buildOptions, v1.Platform, string) error { return boom }))
	if !errors.Is(err, boom) {
		t.Fatalf("Build() = %v, want %v", err, boom)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("a failed build left %d files in the temp dir", len(ents))
	}
}

// TestBuildGo compiles the real programs for both platforms twice: the
// runtime must be reproducible, static, and for the right machine.
func TestBuildGo(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the runtime four times; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var digests []v1.Hash
	var idx v1.ImageIndex
	for range 2 {
		var err error
		idx, err = Build(ctx, WithModuleDir(moduleRoot), WithTempDir(t.TempDir()))
		if err != nil {
			t.Fatalf("Build() = %v", err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds gave indexes %s and %s, want the same", digests[0], digests[1])
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("validate.Index() = %v", err)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for arch, machine := range machines {
		img, err := Platform("runtime", idx, v1.Platform{OS: "linux", Architecture: arch})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range layerFiles(t, img, true) {
			if e.Type != tar.TypeReg {
				continue
			}
			f, err := elf.NewFile(bytes.NewReader([]byte(e.Content)))
			if err != nil {
				t.Errorf("%s/%s: not an ELF file: %v", arch, e.Name, err)
				continue
			}
			if f.Machine != machine {
				t.Errorf("%s/%s: machine %v, want %v", arch, e.Name, f.Machine, machine)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s/%s: has an ELF interpreter: not static", arch, e.Name)
				}
			}
		}
	}
}

// TestBuildEntrypointPackage checks that --entrypoint PKG is what `go
// build` compiles into /usr/local/bin/entrypoint, with a go command that
// records its arguments.
func TestBuildEntrypointPackage(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "args")
	fakeGo := filepath.Join(dir, "go")
	// The last argument is the package, the one after -o the output.
	script := "#!/bin/sh\necho \"$@\" >> " + record + "\nwhile [ $# -gt 2 ]; do shift; done\nprintf x > \"$1\"\n"
	if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), WithModuleDir(moduleRoot), WithTempDir(t.TempDir()), WithGo(fakeGo),
		WithPlatforms(DefaultPlatforms[0]), WithEntrypointPackage("./examples/cmd/ssebench-entrypoint-example"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], "/entrypoint ./examples/cmd/ssebench-entrypoint-example") {
		t.Errorf("go was run as:\n%s", b)
	}
	if _, err := Build(context.Background(), WithEntrypointPackage(" ")); err == nil || !strings.Contains(err.Error(), "is not a Go package") {
		t.Errorf("Build(WithEntrypointPackage(\" \")) = %v", err)
	}
}
