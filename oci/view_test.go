package oci

import (
	"archive/tar"
	"context"
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layers [][]te
		want   []string
	}{{
		name: "single layer",
		layers: [][]te{{
			dir("etc/"), file("etc/passwd", "root"), file("etc/group", "g"),
		}},
		want: []string{"etc d 0755 @0", "etc/group r1 0644 @0", "etc/passwd r4 0644 @0"},
	}, {
		name: "dot-slash and absolute names",
		layers: [][]te{{
			dir("./a/"), file("./a/b", "x"), file("/c", "y"), dir("/d/"), file("a//e/../f", "z"),
		}},
		want: []string{"a d 0755 @0", "a/b r1 0644 @0", "a/f r1 0644 @0", "c r1 0644 @0", "d d 0755 @0"},
	}, {
		name: "missing parents are implicit directories",
		layers: [][]te{{
			file("a/b/c", "x"),
		}, {
			dirMode("a/", 0o700),
		}},
		want: []string{"a d 0700 @1", "a/b d 0755 @0 implicit", "a/b/c r1 0644 @0"},
	}, {
		name: "whiteout of a file",
		layers: [][]te{{
			dir("a/"), file("a/x", "x"), file("a/y", "y"),
		}, {
			file("a/.wh.x", ""),
		}},
		want: []string{"a d 0755 @0", "a/y r1 0644 @0"},
	}, {
		name: "whiteout of a directory removes its subtree",
		layers: [][]te{{
			dir("a/"), dir("a/b/"), dir("a/b/c/"), file("a/b/c/bar", "x"), file("keep", "k"),
		}, {
			file(".wh.a", ""),
		}},
		want: []string{"keep r1 0644 @0"},
	}, {
		name: "whiteout of a missing path creates its parent",
		layers: [][]te{{
			file("x", "x"),
		}, {
			file("p/q/.wh.gone", ""),
		}},
		want: []string{"p d 0755 @1 implicit", "p/q d 0755 @1 implicit", "x r1 0644 @0"},
	}, {
		name: "whiteout does not hide an entry of its own layer",
		layers: [][]te{{
			file("x", "old"),
		}, {
			file("x", "new!"), file(".wh.x", ""),
		}},
		want: []string{"x r4 0644 @1"},
	}, {
		name: "opaque directory hides lower children only",
		layers: [][]te{{
			dir("a/"), file("a/x", "x"), dir("a/sub/"), file("a/sub/y", "y"), file("b", "b"),
		}, {
			dirMode("a/", 0o700), file("a/.wh..wh..opq", ""), file("a/new", "n"),
		}},
		want: []string{"a d 0700 @1", "a/new r1 0644 @1", "b r1 0644 @0"},
	}, {
		// The image spec: the opaque marker applies first, wherever it is.
		name: "opaque marker after the layer's own entries",
		layers: [][]te{{
			dir("a/"), dir("a/b/"), dir("a/b/c/"), file("a/b/c/bar", "x"),
		}, {
			dir("a/"), dir("a/b/"), dir("a/b/c/"), file("a/b/c/foo", "y"), file("a/.wh..wh..opq", ""),
		}},
		want: []string{"a d 0755 @1", "a/b d 0755 @1", "a/b/c d 0755 @1", "a/b/c/foo r1 0644 @1"},
	}, {
		name: "opaque root",
		layers: [][]te{{
			file("a", "a"), dir("d/"),
		}, {
			file(".wh..wh..opq", ""), file("b", "b"),
		}},
		want: []string{"b r1 0644 @1"},
	}, {
		name: "whiteout then re-creation in a later layer",
		layers: [][]te{{
			file("f", "v1"), dir("d/"), file("d/old", "o"),
		}, {
			file(".wh.f", ""), file(".wh.d", ""),
		}, {
			file("f", "v2!"), dir("d/"), file("d/new", "n"),
		}},
		want: []string{"d d 0755 @2", "d/new r1 0644 @2", "f r3 0644 @2"},
	}, {
		name: "hard link within a layer shares metadata",
		layers: [][]te{{
			fileMode("a", "alpha", 0o644), hardlinkMode("b", "a", 0o755),
		}},
		want: []string{"a r5 0755 @0", "b r5 0755 @0=a"},
	}, {
		name: "hard link keeps content after its target is removed",
		layers: [][]te{{
			dir("usr/"), file("usr/a", "alpha"),
		}, {
			hardlink("b", "/usr/a"),
		}, {
			file("usr/.wh.a", ""),
		}},
		want: []string{"b r5 0644 @0=usr/a", "usr d 0755 @0"},
	}, {
		name: "hard link to the original file, not a later replacement",
		layers: [][]te{{
			file("a", "v1"), hardlink("b", "a"), file("a", "v2!"),
		}},
		want: []string{"a r3 0644 @0", "b r2 0644 @0=a"},
	}, {
		name: "replacing one name breaks the link",
		layers: [][]te{{
			file("a", "alpha"), hardlink("b", "a"),
		}, {
			fileMode("a", "new", 0o600),
		}, {
			hardlinkMode("c", "b", 0o700),
		}},
		want: []string{"a r3 0600 @1", "b r5 0700 @0=a", "c r5 0700 @0=a"},
	}, {
		name: "hard link to a hard link",
		layers: [][]te{{
			file("a", "alpha"), hardlink("b", "a"),
		}, {
			hardlink("c", "b"), file(".wh.a", ""),
		}},
		want: []string{"b r5 0644 @0=a", "c r5 0644 @0=a"},
	}, {
		name: "hard link to a symlink is the symlink",
		layers: [][]te{{
			symlink("s", "target"), hardlink("h", "s"),
		}},
		want: []string{"h l->target 0644 @0=s", "s l->target 0644 @0"},
	}, {
		name: "entry below a relative symlink",
		layers: [][]te{{
			dir("usr/"), dir("usr/lib/"), symlink("lib", "usr/lib"),
		}, {
			file("lib/x", "x"),
		}},
		want: []string{"lib l->usr/lib 0777 @0", "usr d 0755 @0", "usr/lib d 0755 @0", "usr/lib/x r1 0644 @1=lib/x"},
	}, {
		name: "entry below an absolute symlink",
		layers: [][]te{{
			dir("opt/"), dir("opt/real/"), symlink("link", "/opt/real"),
		}, {
			dir("link/sub/"), file("link/sub/y", "y"),
		}},
		want: []string{"link l->/opt/real 0777 @0", "opt d 0755 @0", "opt/real d 0755 @0",
			"opt/real/sub d 0755 @1=link/sub", "opt/real/sub/y r1 0644 @1=link/sub/y"},
	}, {
		name: "symlink climbing out of the root is clamped",
		layers: [][]te{{
			dir("a/"), symlink("a/up", "../../../.."), symlink("esc", "/../../etc"),
		}, {
			file("a/up/z", "z"), file("esc/passwd", "p"),
		}},
		want: []string{"a d 0755 @0", "a/up l->../../../.. 0777 @0", "esc l->/../../etc 0777 @0",
			"etc d 0755 @1 implicit", "etc/passwd r1 0644 @1=esc/passwd", "z r1 0644 @1=a/up/z"},
	}, {
		name: "chained symlinks",
		layers: [][]te{{
			dir("real/"), symlink("l1", "l2"), symlink("l2", "./real/../real"),
		}, {
			file("l1/f", "f"),
		}},
		want: []string{"l1 l->l2 0777 @0", "l2 l->./real/../real 0777 @0", "real d 0755 @0", "real/f r1 0644 @1=l1/f"},
	}, {
		name: "an entry replaces a symlink rather than following it",
		layers: [][]te{{
			dir("usr/"), dir("usr/lib/"), file("usr/lib/keep", "k"), symlink("lib", "usr/lib"),
		}, {
			dir("lib/"),
		}},
		want: []string{"lib d 0755 @1", "usr d 0755 @0", "usr/lib d 0755 @0", "usr/lib/keep r1 0644 @0"},
	}, {
		name: "duplicates in one layer: last wins",
		layers: [][]te{{
			fileMode("f", "one", 0o644), fileMode("f", "second", 0o600),
		}},
		want: []string{"f r6 0600 @0"},
	}, {
		name: "directory over directory merges metadata",
		layers: [][]te{{
			dir("d/"), file("d/x", "x"),
		}, {
			dirMode("d/", 0o700),
		}},
		want: []string{"d d 0700 @1", "d/x r1 0644 @0"},
	}, {
		name: "file over directory removes the subtree",
		layers: [][]te{{
			dir("d/"), file("d/x", "x"),
		}, {
			file("d", "now a file"),
		}},
		want: []string{"d r10 0644 @1"},
	}, {
		name: "directory over file",
		layers: [][]te{{
			file("f", "x"),
		}, {
			dir("f/"), file("f/y", "y"),
		}},
		want: []string{"f d 0755 @1", "f/y r1 0644 @1"},
	}, {
		name: "AUFS metadata is ignored",
		layers: [][]te{{
			dir(".wh..wh.plnk/"), file(".wh..wh.plnk/123.456", "x"), file(".wh..wh.aufs", ""), file("a", "a"),
		}},
		want: []string{"a r1 0644 @0"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var layers []v1.Layer
			for _, l := range tc.layers {
				layers = append(layers, gzipLayer(t, l...))
			}
			v, err := mergeLayers(t, layers...)
			if err != nil {
				t.Fatalf("Merge() = %v", err)
			}
			got := summaries(t, v)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("merged view (-want +got):\n%s", diff)
			}
			if v.Len() != len(tc.want) {
				t.Errorf("Len() = %d, want %d", v.Len(), len(tc.want))
			}
		})
	}
}

// TestMergeRejects checks that hostile or broken layers are errors naming
// the layer's digest and the entry.
func TestMergeRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layers [][]te
		bad    int      // which layer the error must name
		want   []string // parts of the error
	}{{
		name:   "name climbing out of the root",
		layers: [][]te{{file("../etc/passwd", "x")}},
		want:   []string{`"../etc/passwd"`, "escapes the root"},
	}, {
		name:   "name climbing out after cleaning",
		layers: [][]te{{file("ok", "x")}, {file("./a/../../x", "x")}},
		bad:    1,
		want:   []string{`"./a/../../x"`, "escapes the root"},
	}, {
		name:   "hard link climbing out of the root",
		layers: [][]te{{hardlink("x", "../../x")}},
		want:   []string{`"x"`, `hard link target "../../x"`, "escapes the root"},
	}, {
		name:   "hard link to a missing file",
		layers: [][]te{{file("a", "a")}, {hardlink("etc/shadow", "nope")}},
		bad:    1,
		want:   []string{`entry "etc/shadow"`, `hard link target "nope" does not exist`},
	}, {
		name:   "hard link to a file later in the same layer",
		layers: [][]te{{hardlink("b", "a"), file("a", "a")}},
		want:   []string{`entry "b"`, `hard link target "a" does not exist`},
	}, {
		name:   "hard link to a directory",
		layers: [][]te{{dir("d/")}, {hardlink("x", "d")}},
		bad:    1,
		want:   []string{`entry "x"`, "is a directory"},
	}, {
		name:   "invalid whiteout name",
		layers: [][]te{{file("a/.wh..", "")}},
		want:   []string{`"a/.wh.."`, "invalid whiteout"},
	}, {
		name:   "entry below a whiteout name",
		layers: [][]te{{file(".wh.a/b", "")}},
		want:   []string{`".wh.a/b"`, "reserved for whiteouts"},
	}, {
		name:   "parent is a regular file",
		layers: [][]te{{file("f", "x")}, {file("f/x", "y")}},
		bad:    1,
		want:   []string{`entry "f/x"`, `parent "f" is not a directory`},
	}, {
		name:   "parent symlink to a regular file",
		layers: [][]te{{file("f", "x"), symlink("l", "f")}, {file("l/x", "y")}},
		bad:    1,
		want:   []string{`entry "l/x"`, `parent "f" is not a directory`},
	}, {
		name:   "symlink loop",
		layers: [][]te{{symlink("a", "b"), symlink("b", "/a")}, {file("a/x", "y")}},
		bad:    1,
		want:   []string{`entry "a/x"`, "too many levels of symbolic links"},
	}, {
		name:   "unsupported entry type",
		layers: [][]te{{{hdr: tar.Header{Typeflag: tar.TypeCont, Name: "c", Size: 0}}}},
		want:   []string{`entry "c"`, "unsupported tar entry type"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var layers []v1.Layer
			for _, l := range tc.layers {
				layers = append(layers, gzipLayer(t, l...))
			}
			_, err := mergeLayers(t, layers...)
			wantErrContains(t, err, append(tc.want, digestOf(t, layers[tc.bad]))...)
		})
	}
}

// TestMergeValidatesCachedIndexes feeds Merge indexes that did not come
// from IndexLayer, as a tampered cache would.
func TestMergeValidatesCachedIndexes(t *testing.T) {
	reg := Header{Typeflag: tar.TypeReg, Mode: 0o644}
	for _, tc := range []struct {
		name  string
		entry IndexEntry
		want  string
	}{
		{"escaping name", IndexEntry{Name: "../x", Header: reg}, "escapes the root"},
		{"unclean name", IndexEntry{Name: "a//b", Header: reg}, "not clean"},
		{"escaping hard link", IndexEntry{Name: "h", Header: Header{Typeflag: tar.TypeLink, Linkname: "../../x"}}, "escapes the root"},
		{"root entry", IndexEntry{Name: "", Header: reg}, "root directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx, err := NewLayerIndex("sha256:feed", tc.entry)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Merge([]*LayerIndex{idx})
			wantErrContains(t, err, "sha256:feed", tc.want)
		})
	}
	_, err := Merge([]*LayerIndex{{Format: IndexFormat + 1, Digest: "sha256:old"}})
	wantErrContains(t, err, "sha256:old", "format", "index the layer again")
}

func TestLayerIndexJSONRoundTrip(t *testing.T) {
	capability := te{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "bin/ping", Mode: 0o4755, Uid: 0, Gid: 0,
		ModTime: testTime, PAXRecords: map[string]string{"SCHILY.xattr.security.capability": "\x01\x00\xff", "comment": "dropped"}}}
	l := gzipLayer(t,
		dir("bin/"), capability, file("etc/.wh.old", ""), file("tmp/.wh..wh..opq", ""),
		te{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "dev/null", Mode: 0o666, Devmajor: 1, Devminor: 3, ModTime: testTime}},
		symlink("sh", "/bin/bash"), hardlink("bin/ping6", "./bin/ping"))
	idx, err := IndexLayer(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	var back LayerIndex
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(idx.Entries(), back.Entries()); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
	want := []IndexEntry{
		{Name: "bin", Header: Header{Typeflag: tar.TypeDir, Mode: 0o755, ModTime: testTime}},
		{Name: "bin/ping", Header: Header{Typeflag: tar.TypeReg, Mode: 0o4755, ModTime: testTime,
			Xattrs: map[string][]byte{"security.capability": []byte("\x01\x00\xff")}}},
		{Name: "etc/old", Marker: Whiteout},
		{Name: "tmp", Marker: Opaque},
		{Name: "dev/null", Header: Header{Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3, ModTime: testTime}},
		{Name: "sh", Header: Header{Typeflag: tar.TypeSymlink, Mode: 0o777, Linkname: "/bin/bash", ModTime: testTime}},
		{Name: "bin/ping6", Header: Header{Typeflag: tar.TypeLink, Mode: 0o644, Linkname: "bin/ping", ModTime: testTime}},
	}
	if diff := cmp.Diff(want, back.Entries()); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if back.Digest != digestOf(t, l) || back.Format != IndexFormat {
		t.Errorf("index digest, format = %s, %d; want %s, %d", back.Digest, back.Format, digestOf(t, l), IndexFormat)
	}
}

func TestViewLookupResolveWalk(t *testing.T) {
	v, err := mergeLayers(t, gzipLayer(t,
		dir("usr/"), dir("usr/lib/"), file("usr/lib/libc.so", "elf"), symlink("lib", "usr/lib"),
		dir("etc/"), file("etc/a", "a"), file("etc/b", "b"), file("z", "z")))
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := v.Lookup("/lib"); !ok || n.Header.Typeflag != tar.TypeSymlink {
		t.Errorf("Lookup(/lib) = %+v, %v; want the symlink", n, ok)
	}
	if _, ok := v.Lookup("lib/libc.so"); ok {
		t.Error("Lookup(lib/libc.so) followed a symlink")
	}
	if n, ok := v.Resolve("/lib/libc.so"); !ok || n.Path != "usr/lib/libc.so" {
		t.Errorf("Resolve(/lib/libc.so) = %q, %v; want usr/lib/libc.so, true", n.Path, ok)
	}
	if n, ok := v.Resolve("../../lib"); !ok || n.Path != "usr/lib" {
		t.Errorf("Resolve(../../lib) = %q, %v; want usr/lib, true", n.Path, ok)
	}
	if _, ok := v.Resolve("etc/a/b"); ok {
		t.Error("Resolve(etc/a/b) found a path below a regular file")
	}

	var got []string
	err = v.Walk(func(n Node) error {
		got = append(got, n.Path)
		switch n.Path {
		case "etc":
			return fs.SkipDir
		case "usr/lib/libc.so":
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Walk() = %v", err)
	}
	if diff := cmp.Diff([]string{"etc", "lib", "usr", "usr/lib", "usr/lib/libc.so"}, got); diff != "" {
		t.Errorf("Walk visited (-want +got):\n%s", diff)
	}
}

// TestTarHeaderRoundTrip re-emits view nodes through LayerWriter, as the
// assemble package does to change a file's metadata, and indexes the result.
func TestTarHeaderRoundTrip(t *testing.T) {
	want := []IndexEntry{
		{Name: "bin", Header: Header{Typeflag: tar.TypeDir, Mode: 0o755, Uid: 0, Gid: 0, ModTime: testTime}},
		{Name: "bin/ping", Header: Header{Typeflag: tar.TypeReg, Mode: 0o4755, Uid: 1000, Gid: 1000, Size: 0, ModTime: testTime,
			Xattrs: map[string][]byte{"security.capability": []byte("\x01\x00\xff")}}},
		{Name: "dev/null", Header: Header{Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3, ModTime: testTime}},
		{Name: "sh", Header: Header{Typeflag: tar.TypeSymlink, Mode: 0o777, Linkname: "/bin/bash", ModTime: testTime}},
	}
	w, err := NewLayerWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, e := range want {
		if err := w.WriteHeader(e.TarHeader(e.Name)); err != nil {
			t.Fatalf("WriteHeader(%q) = %v", e.Name, err)
		}
	}
	l, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	defer l.(*SpooledLayer).Remove()
	idx, err := IndexLayer(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, idx.Entries()); diff != "" {
		t.Errorf("re-emitted entries (-want +got):\n%s", diff)
	}
}
