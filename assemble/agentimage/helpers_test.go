package agentimage

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"golang.org/x/sys/unix"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// toolTime is the creation time of the test tool image.
var toolTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// srcTime is the modification time of every file of the test contexts.
var srcTime = time.Date(2021, 2, 3, 4, 5, 6, 0, time.UTC)

// toolEntries is the filesystem of the stand-in tool image.
func toolEntries() []oci.Entry {
	file := func(name, content string, mode int64, uid, gid int) oci.Entry {
		return oci.Entry{
			Header: &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Uid: uid, Gid: gid, Size: int64(len(content)), ModTime: toolTime},
			Open:   func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(content)), nil },
		}
	}
	dir := func(name string, mode int64, uid, gid int) oci.Entry {
		return oci.Entry{Header: &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: gid, ModTime: toolTime}}
	}
	link := func(name, target string) oci.Entry {
		return oci.Entry{Header: &tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: toolTime}}
	}
	return []oci.Entry{
		dir("etc", 0o755, 0, 0),
		file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\nagent:x:1234:2345::/home/agent:/bin/sh\n", 0o644, 0, 0),
		file("etc/group", "root:x:0:\nstaff:x:50:\nagents:x:2345:\n", 0o644, 0, 0),
		dir("opt", 0o755, 0, 0),
		dir("opt/keep", 0o700, 7, 7),
		file("opt/keep/old", "old\n", 0o600, 7, 7),
		dir("usr", 0o755, 0, 0),
		dir("usr/bin", 0o755, 0, 0),
		file("usr/bin/sh", "#!fake shell\n", 0o755, 0, 0),
		dir("usr/local", 0o755, 0, 0),
		dir("usr/local/bin", 0o755, 0, 0),
		file("usr/local/bin/entrypoint", "#!/bin/sh\nexec \"$@\"\n", 0o755, 0, 0),
		link("bin", "usr/bin"),
		dir("tmp", 0o1777, 0, 0),
		dir("home", 0o755, 0, 0),
		dir("home/agent", 0o750, 1234, 2345),
	}
}

// toolImage returns the stand-in tool image: one layer of toolEntries, a
// config like a tool image's (entrypoint, env, a label).
func toolImage(t testing.TB) v1.Image {
	t.Helper()
	l, err := oci.WriteLayer(context.Background(), t.TempDir(), toolEntries())
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: l, History: v1.History{CreatedBy: "tool layer", Created: v1.Time{Time: toolTime}}})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: toolTime}
	cf.Config = v1.Config{
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"},
		Entrypoint: []string{"/usr/local/bin/entrypoint"},
		Labels:     map[string]string{"tool": "yes"},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// writeTree creates files under dir: a name ending in "/" is a directory,
// "name -> target" a symlink, anything else a file with the given content;
// every entry gets srcTime. Modes are set with chmod when given as
// "name|0755".
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	var all []string
	for spec, content := range files {
		name, mode, _ := strings.Cut(spec, "|")
		p := filepath.Join(dir, name)
		switch {
		case strings.HasSuffix(name, "/"):
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(content, "-> "):
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(strings.TrimPrefix(content, "-> "), p); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if mode != "" {
			var m uint32
			for _, c := range mode {
				m = m*8 + uint32(c-'0')
			}
			if err := os.Chmod(p, os.FileMode(m&0o777)|modeBits(m)); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, p)
	}
	// Times last, deepest first, so that creating children does not
	// change a directory's time afterwards.
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			all = append(all, p)
		}
		return nil
	})
	for i := len(all) - 1; i >= 0; i-- {
		ts := unix.NsecToTimespec(srcTime.UnixNano())
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, all[i], []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
	}
}

func modeBits(m uint32) os.FileMode {
	var fm os.FileMode
	if m&0o4000 != 0 {
		fm |= os.ModeSetuid
	}
	if m&0o2000 != 0 {
		fm |= os.ModeSetgid
	}
	if m&0o1000 != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

// fileInfo is what the tests compare of one path of a flattened filesystem.
type fileInfo struct {
	Type     string
	Mode     int64
	UID, GID int
	Size     int64
	SHA256   string
	Link     string
	MTime    time.Time
}

func typeName(b byte) string {
	switch b {
	case tar.TypeReg:
		return "file"
	case tar.TypeDir:
		return "dir"
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hardlink"
	}
	return string(b)
}

// flatten merges layers (only these, bottom first) and describes every
// path, with the content hash of regular files.
func flatten(t testing.TB, layers []v1.Layer) map[string]fileInfo {
	t.Helper()
	ctx := context.Background()
	var idxs []*oci.LayerIndex
	for _, l := range layers {
		idx, err := oci.IndexLayer(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		idxs = append(idxs, idx)
	}
	view, err := oci.Merge(idxs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]fileInfo{}
	var files []oci.Node
	err = view.Walk(func(n oci.Node) error {
		h := n.Header
		fi := fileInfo{Type: typeName(h.Typeflag), Mode: h.Mode, UID: h.Uid, GID: h.Gid, Size: h.Size, Link: h.Linkname, MTime: h.ModTime.Truncate(time.Second).UTC()}
		if n.Implicit {
			fi.Type = "implicit dir"
		}
		out["/"+n.Path] = fi
		if h.Typeflag == tar.TypeReg {
			files = append(files, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = oci.ReadFiles(ctx, layers, files, func(n oci.Node, r io.Reader) error {
		h := sha256.New()
		if _, err := io.Copy(h, r); err != nil {
			return err
		}
		fi := out["/"+n.Path]
		fi.SHA256 = hex.EncodeToString(h.Sum(nil))[:16]
		out["/"+n.Path] = fi
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newLayers returns the layers img adds to the tool image.
func newLayers(t testing.TB, img, tool v1.Image) []v1.Layer {
	t.Helper()
	all, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	base, err := tool.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < len(base) {
		t.Fatalf("image has %d layers, fewer than the tool image's %d", len(all), len(base))
	}
	return all[len(base):]
}
