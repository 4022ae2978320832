package sserun

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type fileState struct {
	Mode    fs.FileMode
	Link    string
	Content string
	MTime   time.Time
}

// treeState lists a tree: mode, symlink target, content and (for files)
// modification time of every entry below dir.
func treeState(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		s := fileState{Mode: fi.Mode()}
		switch fi.Mode().Type() {
		case fs.ModeSymlink:
			s.Link, _ = os.Readlink(p)
		case 0:
			b, _ := os.ReadFile(p)
			s.Content, s.MTime = string(b), fi.ModTime().UTC()
		}
		out[rel] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func write(t *testing.T, name, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, mode); err != nil {
		t.Fatal(err)
	}
}

func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	write(t, filepath.Join(src, "a.txt"), "a", 0o640)
	write(t, filepath.Join(src, "bin", "tool"), "#!/bin/sh\n", 0o755|os.ModeSetuid)
	write(t, filepath.Join(src, "deep", "er", "f"), "f", 0o600)
	if err := os.Chtimes(filepath.Join(src, "a.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "deep"), 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(src, "deep"), 0o755) })
	for link, target := range map[string]string{"secret": "/etc/hostname", "rel": "a.txt", "dangling": "nope"} {
		if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := copyTree(src, dst, ".", copyOpts{uid: os.Getuid(), gid: os.Getgid()}); err != nil {
		t.Fatalf("copyTree() = %v", err)
	}
	got := treeState(t, dst)
	for k, s := range got {
		if s.Mode.IsRegular() && k != "a.txt" {
			s.MTime = time.Time{} // only a.txt's time is known
			got[k] = s
		}
	}
	want := map[string]fileState{
		"a.txt":     {Mode: 0o640, Content: "a", MTime: old},
		"bin":       {Mode: fs.ModeDir | 0o755},
		"bin/tool":  {Mode: 0o755, Content: "#!/bin/sh\n"}, // no setuid bit
		"deep":      {Mode: fs.ModeDir | 0o700},            // open to its owner
		"deep/er":   {Mode: fs.ModeDir | 0o755},
		"deep/er/f": {Mode: 0o600, Content: "f"},
		"secret":    {Mode: fs.ModeSymlink | 0o777, Link: "/etc/hostname"}, // copied as a link, never followed
		"rel":       {Mode: fs.ModeSymlink | 0o777, Link: "a.txt"},
		"dangling":  {Mode: fs.ModeSymlink | 0o777, Link: "nope"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("copy (-want +got):\n%s", diff)
	}
}

func TestCopyTreeReadOnly(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, filepath.Join(src, "scripts", "build.sh"), "b", 0o700)
	write(t, filepath.Join(src, "scripts", "env.sh"), "e", 0o600)
	write(t, filepath.Join(src, "pocs", "p"), "p", 0o600)
	write(t, filepath.Join(src, "diffs", "patch.diff"), "secret", 0o600)
	for _, rel := range []string{"scripts", "pocs/p"} {
		if err := copyTree(src, dst, rel, copyOpts{uid: os.Getuid(), gid: os.Getgid(), readOnly: true}); err != nil {
			t.Fatal(err)
		}
	}
	got := treeState(t, dst)
	for k, s := range got {
		s.MTime = time.Time{}
		got[k] = s
	}
	want := map[string]fileState{
		"scripts":          {Mode: fs.ModeDir | 0o755},
		"scripts/build.sh": {Mode: 0o755, Content: "b"},
		"scripts/env.sh":   {Mode: 0o644, Content: "e"},
		"pocs":             {Mode: fs.ModeDir | 0o755},
		"pocs/p":           {Mode: 0o644, Content: "p"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("copy (-want +got):\n%s", diff)
	}
}

func TestCopyTreeReadableOnly(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, filepath.Join(src, "mine"), "m", 0o400)
	write(t, filepath.Join(src, "closed"), "c", 0o000)
	write(t, filepath.Join(src, "group"), "g", 0o040)
	write(t, filepath.Join(src, "world"), "w", 0o004)
	uid, gid := os.Getuid(), os.Getgid()
	for _, tt := range []struct {
		name   string
		reader [2]int
		want   []string
	}{
		{"owner", [2]int{uid, gid}, []string{"mine"}},
		{"group", [2]int{uid + 1, gid}, []string{"group"}}, // the group class rules, not other
		{"other", [2]int{uid + 1, gid + 1}, []string{"world"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reader[0] != uid && os.Geteuid() != 0 {
				t.Skip("the copier must read what the reader cannot: needs root, as the daemon is")
			}
			out := filepath.Join(dst, tt.name)
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := copyTree(src, out, ".", copyOpts{uid: uid, gid: gid, reader: &tt.reader}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for k := range treeState(t, out) {
				got = append(got, k)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("copied (-want +got):\n%s", diff)
			}
		})
	}
}
