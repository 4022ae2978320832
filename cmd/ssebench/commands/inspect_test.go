package commands_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// inspectImage is a random two-layer image with a config and a history line
// per layer.
func inspectImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(64, 2)
	if err != nil {
		t.Fatal(err)
	}
	img = hostPlatform(t, img, v1.Config{
		Entrypoint: []string{"/usr/local/bin/entrypoint"},
		Cmd:        []string{"echo", "hi"},
		Env:        []string{"PATH=/usr/bin", "SSE=1"},
		WorkingDir: "/src/proj",
		User:       "model",
		Labels:     map[string]string{"b.label": "2", "a.label": "1"},
	})
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.History = []v1.History{
		{CreatedBy: "COPY   src/ /src/proj/"},
		{CreatedBy: "ENV A=1", EmptyLayer: true},
		{Comment: "ssebench tool layer"},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

type inspectedLayer struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	DiffID string `json:"diff_id"`
	What   string `json:"what"`
}

// wantLayers lists img's layers as inspect should show them.
func wantLayers(t *testing.T, img v1.Image) []inspectedLayer {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	what := []string{"COPY src/ /src/proj/", "ssebench tool layer"}
	var out []inspectedLayer
	for i, l := range ls {
		d, _ := l.Digest()
		s, _ := l.Size()
		di, _ := l.DiffID()
		out = append(out, inspectedLayer{Digest: d.String(), Size: s, DiffID: di.String(), What: what[i]})
	}
	return out
}

func TestInspect(t *testing.T) {
	c := newCLI(t)
	const ref = "localhost:5000/ssebench/tool/proj-1:1.0.0"
	img := inspectImage(t)
	c.storeImage(t, ref, img)
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	layers := wantLayers(t, img)
	platform := "linux/" + runtime.GOARCH

	t.Run("text", func(t *testing.T) {
		out, _ := c.mustRun(t, "inspect", "--pull=never", ref)
		want := []string{
			"Name:        " + ref + "\n",
			"Digest:      " + d.String() + " (from the store)\n",
			"Platform:    " + platform + "\n",
			"Entrypoint:  [\"/usr/local/bin/entrypoint\"]\n",
			"Cmd:         [\"echo\",\"hi\"]\n",
			"WorkingDir:  /src/proj\n",
			"User:        model\n",
			"Env:\n  PATH=/usr/bin\n  SSE=1\n",
			"Labels:\n  a.label=1\n  b.label=2\n",
		}
		for i, l := range layers {
			if l.Size >= 1024 {
				t.Fatalf("test layer %d has %d bytes; the size check expects under 1 KiB", i, l.Size)
			}
			want = append(want, fmt.Sprintf("  %2d  %s  %9s  diffID %s\n      %s\n", i+1, l.Digest, fmt.Sprintf("%d B", l.Size), l.DiffID, l.What))
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("inspect output lacks %q:\n%s", w, out)
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		out, _ := c.mustRun(t, "inspect", "--json", "--pull=never", ref)
		var got struct {
			Name, Digest, Source, Platform string
			Entrypoint                     []string
			Labels                         map[string]string
			Layers                         []inspectedLayer
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("inspect --json printed no JSON: %v\n%s", err, out)
		}
		if got.Name != ref || got.Digest != d.String() || got.Source != "store" || got.Platform != platform {
			t.Errorf("inspect --json = name %q digest %q source %q platform %q, want %q %q store %q", got.Name, got.Digest, got.Source, got.Platform, ref, d, platform)
		}
		if diff := cmp.Diff(layers, got.Layers); diff != "" {
			t.Errorf("inspect --json layers mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]string{"a.label": "1", "b.label": "2"}, got.Labels); diff != "" {
			t.Errorf("inspect --json labels mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestInspectMissingNeverPulled(t *testing.T) {
	c := newCLI(t)
	// A host nobody listens on: the test fails fast if it is dialled.
	const ref = "127.0.0.1:1/ssebench/tool/absent:1.0.0"
	out, _, err := c.run(t, "inspect", "--pull=never", ref)
	oneLine(t, err)
	for _, want := range []string{ref, "not in the local store", c.store, "--pull=missing"} {
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if out != "" {
		t.Errorf("inspect printed %q on stdout", out)
	}
}

// TestInspectCreatesNoStore: a command that only looks leaves no store
// behind where there was none.
func TestInspectCreatesNoStore(t *testing.T) {
	c := newCLI(t)
	_, _, err := c.run(t, "inspect", "--pull=never", "127.0.0.1:1/ssebench/tool/absent:1.0.0")
	if err == nil || !strings.Contains(err.Error(), "not in the local store") {
		t.Errorf("inspect = %v, want not in the local store", err)
	}
	if _, err := os.Stat(c.store); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("inspect created the store %s (stat: %v)", c.store, err)
	}
}

// TestInspectOnFullDisk: inspect of a stored image needs to write nothing,
// so a full file system under the store does not stop it.
func TestInspectOnFullDisk(t *testing.T) {
	c := newCLI(t)
	if err := os.MkdirAll(c.store, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m,nr_inodes=200", "tmpfs", c.store).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mounting a small tmpfs (CI=true runs as root): %v %s", err, out)
		}
		t.Skipf("needs root to mount a small tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", c.store).Run() })
	const ref = "localhost:5000/ssebench/tool/full-1:1.0.0"
	img := inspectImage(t)
	c.storeImage(t, ref, img)
	// Fill the file system to the last byte.
	f, err := os.Create(filepath.Join(c.store, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	// And every inode: a new directory needs one.
	for i := 0; ; i++ {
		if err := os.WriteFile(filepath.Join(c.store, fmt.Sprintf("inode-%d", i)), nil, 0o644); err != nil {
			break
		}
	}
	if err := os.Mkdir(filepath.Join(c.store, "probe"), 0o755); err == nil {
		t.Fatal("the file system is not full: the test tests nothing")
	}
	out, stderr, err := c.run(t, "inspect", "--pull=never", ref)
	if err != nil {
		t.Fatalf("inspect on a full disk: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "Name:        "+ref) {
		t.Errorf("inspect printed:\n%s", out)
	}
}
