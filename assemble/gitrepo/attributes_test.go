package gitrepo

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// attributesSample is a tree whose .gitattributes exercise the line-ending
// rules of `git add`; most files have CRLF endings.
func attributesSample(t *testing.T, dir string) {
	t.Helper()
	crlf := "a\r\nb\r\n"
	loneCR := "a\rb\r\n"
	writeTree(t, dir, map[string]string{
		".gitattributes": "# line endings\n" +
			"[attr]winfile text eol=crlf\n" +
			"* text=auto\n" +
			"*.bat eol=crlf\n" +
			"*.bin binary\n" +
			"*.txt text\n" +
			"*.keep -text\n" +
			"legacy/* !text\n" +
			"legacy/*.c crlf\n" +
			"legacy/*.in crlf=input\n" +
			"legacy/*.no -crlf\n" +
			"legacy/*.lf eol=lf\n" +
			"*.mac winfile\n" +
			"reset/* !text\n" +
			"*.both text -text\n" +
			"!*.neg -text\n" +
			"dironly/ -text\n",
		"sub/.gitattributes":  "*.txt -text\r\n[attr]notmacro text\n*.z notmacro\n",
		"auto.c":              crlf,
		"lf.c":                "a\nb\n",
		"lonecr.c":            loneCR,
		"nul.c":               "a\x00\r\n",
		"controls.c":          "\x01\x02\x03\r\n",
		"dosend.c":            "a\r\n\x1a",
		"run.bat":             crlf,
		"data.bin":            crlf,
		"notes.txt":           loneCR,
		"tail.txt":            "a\r\nb\r",
		"x.keep":              crlf,
		"legacy/a.c":          loneCR,
		"legacy/b.in":         loneCR,
		"legacy/c.no":         crlf,
		"legacy/d.lf":         loneCR,
		"legacy/e.other":      crlf,
		"w.mac":               loneCR,
		"reset/r.c":           crlf,
		"y.both":              crlf,
		"f.neg":               crlf,
		"dironly/in.c":        crlf,
		"sub/s.txt":           crlf,
		"sub/q.z":             loneCR,
		"sub/deep/auto.h":     crlf,
		"big.txt":             strings.Repeat("line of text\r\n", 20000) + strings.Repeat("x", 32767) + "\r\n",
		"exec.sh*":            "#!/bin/sh\r\necho hi\r\n",
		"link.c":              "->auto.c",
		"sub/deep/.gitignore": "*.o\n",
		"sub/deep/ignored.o":  crlf,
	})
}

func TestAttributesMatchGit(t *testing.T) {
	needGit(t)
	env := gitEnv(t)
	tree := t.TempDir()
	attributesSample(t, tree)
	wantFiles, wantTree := realGit(t, tree)

	// Guard the fixture: git converts some files and keeps others.
	raw := func(p string) string {
		return strings.TrimSpace(git(t, env, tree, "hash-object", "--no-filters", p))
	}
	for p, converted := range map[string]bool{"auto.c": true, "run.bat": true, "notes.txt": true, "w.mac": true, "big.txt": true,
		"lonecr.c": false, "data.bin": false, "x.keep": false, "reset/r.c": false, "sub/s.txt": false, "sub/q.z": false} {
		if got := !strings.HasSuffix(wantFiles[p], " "+raw(p)); got != converted {
			t.Errorf("fixture: git converted %s = %v, want %v", p, got, converted)
		}
	}

	for _, seed := range []int64{1, 2} {
		b := feed(t, tree, seed, WithTime(testTime))
		if diff := cmp.Diff(wantFiles, builderFiles(b)); diff != "" {
			t.Errorf("seed %d: added files differ from git add -A (-want +got):\n%s", seed, diff)
		}
		entries, gotTree, _, err := b.Finish(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if gotTree != wantTree {
			t.Errorf("seed %d: tree = %s, want %s (git write-tree)", seed, gotTree, wantTree)
		}
		if seed != 1 {
			continue
		}
		// In the image the CRLF files stay as they are on disk; git must
		// see no change in them.
		work := filepath.Join(t.TempDir(), "work")
		if out, err := exec.Command("cp", "-a", tree, work).CombinedOutput(); err != nil {
			t.Fatalf("copying tree: %v: %s", err, out)
		}
		materialise(t, work, entries)
		if out, err := gitErr(env, work, "fsck", "--strict", "--no-dangling"); err != nil || out != "" {
			t.Errorf("git fsck --strict: %v\n%s", err, out)
		}
		if got := git(t, env, work, "status", "--porcelain", "--untracked-files=all"); got != "" {
			t.Errorf("git status --porcelain = %q, want nothing", got)
		}
	}
}

func TestCRLFToLF(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"a\r\nb\r\n", "a\nb\n"},
		{"a\rb\r\n", "a\rb\n"},
		{"\r", "\r"},
		{"\r\r\n", "\r\n"},
		{"a\r", "a\r"},
		{"\r\n\r\n", "\n\n"},
	} {
		for _, r := range []func(io.Reader) io.Reader{
			func(r io.Reader) io.Reader { return r },
			iotest.OneByteReader,
			iotest.DataErrReader,
		} {
			got, err := io.ReadAll(&crlfToLF{r: r(strings.NewReader(tc.in))})
			if err != nil || string(got) != tc.want {
				t.Errorf("crlfToLF(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		}
	}
}

func TestAttributesFileOrder(t *testing.T) {
	b, err := NewBuilder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A sub-directory's file may come before the top-level one that
	// defines the macro it does not use, and the macro still applies.
	if err := b.AddAttributesFile("sub", []byte("*.x -text\n")); err != nil {
		t.Fatal(err)
	}
	if err := b.AddAttributesFile(".", []byte("*.w win\n[attr]win text\n")); err != nil {
		t.Fatal(err)
	}
	if err := b.AddAttributesFile("", []byte("")); err == nil {
		t.Error("adding the top-level attributes twice: no error")
	}
	if got := b.crlfActionOf("sub/a.w"); got != crlfText {
		t.Errorf("sub/a.w: action %d, want text (macro defined after use)", got)
	}
	if got := b.crlfActionOf("sub/a.x"); got != crlfKeep {
		t.Errorf("sub/a.x: action %d, want keep", got)
	}
	if err := b.AddFile("a.w", 0o644, 4, bytes.NewReader([]byte("a\r\nb"))); err != nil {
		t.Fatal(err)
	}
	if err := b.AddAttributesFile("late", nil); err == nil {
		t.Error("AddAttributesFile after AddFile: no error")
	}
}

// textStats must count the same whatever the chunks the content comes in:
// a CRLF split between two writes is one CRLF.
func TestTextStatsChunks(t *testing.T) {
	for _, in := range []string{"a\r\nb\r\n", "a\rb", "\r", "x\r\r\n\x00\x01\t\x1a", "\r\n\r\n\r"} {
		var whole, bytewise textStats
		whole.Write([]byte(in))
		for i := range len(in) {
			bytewise.Write([]byte{in[i]})
		}
		if whole != bytewise {
			t.Errorf("%q: whole %+v, byte by byte %+v", in, whole, bytewise)
		}
	}
	var s textStats
	s.Write([]byte("a\r"))
	s.Write([]byte("\nb\r"))
	if s.crlf != 1 || !s.pendingCR || !s.binary() {
		t.Errorf("a\\r|\\nb\\r: %+v, want one CRLF and a lone CR at the end (binary)", s)
	}
}
