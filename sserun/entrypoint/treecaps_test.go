package entrypoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// sparse makes a sparse file of size bytes at name: no block on disk.
func sparse(t *testing.T, name string, size int64) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
}

// TestSnapshotTreeTooLarge: a tree the snapshot cannot finish (a 20 GiB
// sparse file, which git would read whole as root; more new files than a
// fix ever adds; a .gitignore git would read whole; a million entries)
// ends the snapshot within seconds with the integrity verdict, before git
// reads a byte of it: never "not graded" after minutes.
func TestSnapshotTreeTooLarge(t *testing.T) {
	small := contract.TreeCaps{ChangedBytes: 1 << 20, FileBytes: 256 << 10, ChangedFiles: 50}
	for _, tc := range []struct {
		name  string
		caps  contract.TreeCaps
		setup func(t *testing.T, src string)
		want  string
	}{
		{"a 20 GiB sparse file", contract.TreeCaps{}, func(t *testing.T, src string) {
			sparse(t, filepath.Join(src, "sparse.bin"), 20<<30)
		}, "tree too large: sparse.bin 20 GiB"},
		{"a tracked file grown sparse", contract.TreeCaps{}, func(t *testing.T, src string) {
			sparse(t, filepath.Join(src, "main.go"), 20<<30)
		}, "tree too large: main.go 20 GiB"},
		{"more new files than the cap", small, func(t *testing.T, src string) {
			dir := filepath.Join(src, "many")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i := range 300 {
				writeFile(t, filepath.Join(dir, fmt.Sprintf("f%06d", i)), "")
			}
		}, "tree too large: more than 50 changed files"},
		{"more changed bytes than the cap", small, func(t *testing.T, src string) {
			for i := range 8 {
				sparse(t, filepath.Join(src, fmt.Sprintf("part%d", i)), 200<<10)
			}
		}, "tree too large: more than 1 MiB of changed files"},
		{"a .gitignore git would read whole", contract.TreeCaps{}, func(t *testing.T, src string) {
			sparse(t, filepath.Join(src, "sub", ".gitignore"), 4<<30)
		}, "tree too large: sub/.gitignore 4 GiB"},
		{"a sparse file with a newline in its name", contract.TreeCaps{}, func(t *testing.T, src string) {
			sparse(t, filepath.Join(src, "a\nb"), 1<<30)
		}, `tree too large: "a\nb" 1 GiB`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Attack(t, "stall the snapshot", "the tree's caps, checked with lstat before git reads it")
			c := newSnapshotCase(t)
			c.agent(t, `printf 'package main // fixed\n' > main.go`)
			tc.setup(t, c.src)
			c.snap.caps = tc.caps
			// With no caps git reads the file to the deadline: the
			// test would end in "not read within".
			c.snap.timeout = 20 * time.Second
			start := time.Now()
			var buf bytes.Buffer
			_, _, err := c.snap.take(context.Background(), c.src, c.pristine, nil, &buf)
			var tl *tooLargeError
			if !errors.As(err, &tl) || err.Error() != tc.want {
				t.Fatalf("take() = %v, want %q", err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("take() took %s: the verdict must come before git reads the tree", d)
			}
		})
	}
}

// TestSnapshotTreeEntries: a million empty files, ignored or not, are
// more entries than the walk takes (a smaller bound here).
func TestSnapshotTreeEntries(t *testing.T) {
	hostile.Attack(t, "stall the snapshot", "the walk's bound on entries")
	c := newSnapshotCase(t)
	c.agent(t, `mkdir -p junk; cd junk; for i in $(seq 1 400); do : > f$i.o; done`)
	tc := newTreeCheck(contract.TreeCaps{}, map[string]baseEntry{"main.go": {mode: "100644", size: 1}})
	tc.walkExtra = 300
	root, err := os.OpenRoot(c.src)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	err = tc.walk(context.Background(), root)
	if want := "tree too large: more than 301 entries"; err == nil || err.Error() != want {
		t.Fatalf("walk() = %v, want %q", err, want)
	}
}

// TestSnapshotWithinCaps: what a fix and its build leave is within the
// caps: a large ignored file (git never reads it), a large file that was
// in the buggy commit at that size, a fix of a few files.
func TestSnapshotWithinCaps(t *testing.T) {
	c := newSnapshotCaseWith(t, map[string]string{"data/big.bin": strings.Repeat("x", 300<<10)})
	c.agent(t, `printf 'package main // fixed\n' > main.go; echo new > sub/new.txt`)
	sparse(t, filepath.Join(c.src, "build.o"), 20<<30) // *.o is ignored
	c.snap.caps = contract.TreeCaps{FileBytes: 256 << 10, ChangedFiles: 5}
	var buf bytes.Buffer
	tree, _, err := c.snap.take(context.Background(), c.src, c.pristine, nil, &buf)
	if err != nil {
		t.Fatalf("take() = %v", err)
	}
	if !strings.Contains(buf.String(), "+package main // fixed") {
		t.Errorf("final.patch lacks the fix:\n%s", buf.String())
	}
	if got := readFile(t, filepath.Join(tree, "main.go")); got != "package main // fixed\n" {
		t.Errorf("graded main.go = %q", got)
	}
}

// TestSnapshotRefusedPaths: a path git refuses to add (".GIT", "git~1",
// ".git " are .git to Windows or macOS) and a nested repository without a
// commit each made `git add -A` fail, and the run ended "not graded" for
// a file the agent made. They are left out of the patch and of the graded
// tree, with a note, and the rest of the tree is graded.
func TestSnapshotRefusedPaths(t *testing.T) {
	for _, tc := range []struct{ name, script string }{
		{".GIT", `mkdir .GIT; echo x > .GIT/config`},
		{"git~1", `mkdir -p sub/GIT~1; echo x > sub/GIT~1/f`},
		{".git with a space", `echo x > '.git '`},
		{"a nested repository without a commit", `mkdir nested; cd nested; git init -q; echo x > f`},
		{"a nested repository with a commit", `mkdir nested; cd nested; git init -q; echo x > f; git add f; git commit -qm x`},
		{"a nested repository whose name is a wildcard", `mkdir 'n*'; cd 'n*'; git init -q`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Attack(t, "end the run ungraded", "git add --ignore-errors, nested repositories left out")
			c := newSnapshotCase(t)
			c.agent(t, `printf 'package main // fixed\n' > main.go`)
			c.agent(t, tc.script)
			var buf bytes.Buffer
			tree, _, err := c.snap.take(context.Background(), c.src, c.pristine, nil, &buf)
			if err != nil {
				t.Fatalf("take() = %v, want the tree graded without what git refuses", err)
			}
			if got := readFile(t, filepath.Join(tree, "main.go")); got != "package main // fixed\n" {
				t.Errorf("graded main.go = %q", got)
			}
			if len(c.snap.notes) == 0 {
				t.Errorf("no note says what was left out")
			}
			if strings.Contains(buf.String(), "nested/f") {
				t.Errorf("final.patch has a nested repository's file:\n%s", buf.String())
			}
		})
	}
}

// TestWritePatchTooLarge: the verdict reaches result.json as an integrity
// verdict (graded, not passed, no grade error), final.patch is empty, and
// the task's caps apply.
func TestWritePatchTooLarge(t *testing.T) {
	hostile.Attack(t, "stall the snapshot", "an integrity verdict, not NOT GRADED")
	for _, tc := range []struct {
		name, config string
		size         int64
		integrity    string
	}{
		{"default caps", "", 1 << 30, "tree too large: sparse.bin 1 GiB"},
		{"the task's caps", "caps:\n  file_bytes: 64Ki\n", 100 << 10, "tree too large: sparse.bin 100 KiB"},
		{"within the task's caps", "caps:\n  file_bytes: 64Ki\n", 10 << 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newSnapshotCase(t)
			c.agent(t, `printf 'package main // fixed\n' > main.go`)
			sparse(t, filepath.Join(c.src, "sparse.bin"), tc.size)
			c.e.env.Results = t.TempDir()
			c.e.env.TaskRoot = t.TempDir()
			if tc.config != "" {
				writeFile(t, filepath.Join(c.e.env.TaskRoot, sserun.ConfigName), "id: t\nsource: "+c.src+"\n"+tc.config)
			}
			res := &contract.RunResult{}
			note := func(f string, a ...any) { t.Logf("note: "+f, a...) }
			_, ok := c.e.writePatch(context.Background(), c.src, c.snap.base, c.snap, nil, res, note)
			if res.Integrity != tc.integrity {
				t.Errorf("integrity = %q, want %q (grade_error %q)", res.Integrity, tc.integrity, res.GradeError)
			}
			if res.GradeError != "" {
				t.Errorf("grade_error = %q, want none", res.GradeError)
			}
			if ok != (tc.integrity == "") {
				t.Errorf("writePatch() ok = %t", ok)
			}
			patch := readFile(t, filepath.Join(c.e.env.Results, contract.PatchFile))
			if tc.integrity != "" && patch != "" {
				t.Errorf("final.patch has %d bytes, want none", len(patch))
			}
		})
	}
}

func TestNulSplitter(t *testing.T) {
	var got []string
	s := &nulSplitter{max: 5, each: func(p string) { got = append(got, p) }}
	for _, w := range []string{"ab\x00c", "d\x00toolong", "toolong\x00e\x00"} {
		s.Write([]byte(w))
	}
	if want := []string{"ab", "cd", "e"}; strings.Join(got, ",") != strings.Join(want, ",") || !s.long {
		t.Errorf("records = %q (long %t), want %q and long", got, s.long, want)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{512: "512 B", 20 << 30: "20 GiB", 1536 << 10: "1.5 MiB"} {
		if got := contract.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
