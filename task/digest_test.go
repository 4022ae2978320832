package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The want values below were computed with CPython 3.11:
//
//	s = json.dumps(d, sort_keys=True, separators=(",", ":"))
//	hashlib.sha256(s.encode()).hexdigest()
func TestDigestFilesMatchesPython(t *testing.T) {
	h := func(c string) string { return strings.Repeat(c, 64) }
	tests := []struct {
		name  string
		files map[string]string
		json  string // what Python writes, when short enough to spell out
		want  string
	}{{
		name:  "empty",
		files: map[string]string{},
		json:  `{}`,
		want:  "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
	}, {
		name:  "simple",
		files: map[string]string{"sse/config.yaml": h("b"), "Dockerfile": h("a")},
		json:  `{"Dockerfile":"` + h("a") + `","sse/config.yaml":"` + h("b") + `"}`,
		want:  "dc981a79e23b526ed630aaa59b29227c02304e72f82fcde76b5d9e63a1057045",
	}, {
		name:  "non-ASCII as \\u escapes",
		files: map[string]string{"café/中.txt": h("c"), "z": h("d")},
		json:  `{"caf\u00e9/\u4e2d.txt":"` + h("c") + `","z":"` + h("d") + `"}`,
		want:  "88bfc1cbac3175048d060530776cd25bf255d923e2fac1b74667586e574d06af",
	}, {
		name:  "astral character as a surrogate pair",
		files: map[string]string{"😀.txt": h("e")},
		json:  `{"\ud83d\ude00.txt":"` + h("e") + `"}`,
		want:  "a1f8d6e4a51c622386a5fbcdd70327e739526a567949b5d8f508ea973a54a40a",
	}, {
		name:  "control characters",
		files: map[string]string{"a\nb\tc\rd\be\ff\x01g\x1f": h("f")},
		json:  `{"a\nb\tc\rd\be\ff\u0001g\u001f":"` + h("f") + `"}`,
		want:  "3c408d2d9722de8be867af5404cb60411d430250b86db15a03a9d6c71403d75d",
	}, {
		name:  "quote and backslash",
		files: map[string]string{`q"uo\te`: h("0")},
		json:  `{"q\"uo\\te":"` + h("0") + `"}`,
		want:  "070ba805c512ce1dc20a22c90b60f4be9c4d704d3aaa7a0ec677a125fd61bb83",
	}, {
		name:  "slash and HTML characters unescaped",
		files: map[string]string{"a/<b>&c": h("1")},
		json:  `{"a/<b>&c":"` + h("1") + `"}`,
		want:  "65c524388dc4bcbe38f5c141d02c34357dc4142635f57bddf3c72c8ee9de807a",
	}, {
		name:  "DEL escaped, space and tilde not",
		files: map[string]string{"x\x7fy": h("2"), "~": h("3"), " ": h("4")},
		json:  `{" ":"` + h("4") + `","x\u007fy":"` + h("2") + `","~":"` + h("3") + `"}`,
		want:  "7f2030faeb6112a97517aba5d5ca89e11810df2478788f41d4637bd04dce883b",
	}, {
		name: "sorted by code point",
		files: map[string]string{
			"b": h("5"), "a": h("6"), "B": h("7"), "é": h("8"), "😀": h("9"),
			"\uffff": h("a"), "a/b": h("0"), "a-b": h("1"),
		},
		want: "64c47fc5742faf760c449c540a18b54328e59042fae24565c8ce4faac6a98c10",
	}, {
		// Python reads the byte 0xff of a file name as U+DCFF
		// (surrogateescape) and writes it as \udcff.
		name:  "name that is not UTF-8",
		files: map[string]string{"a\xffb": h("0")},
		json:  `{"a\udcffb":"` + h("0") + `"}`,
		want:  "941998154544aac6c6f879ae9b0db545ce616a6652f45cc491fc3f0c163a8b3f",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.json != "" {
				if got := string(pyJSONStringMap(tt.files)); got != tt.json {
					t.Errorf("pyJSONStringMap() = %s, want %s", got, tt.json)
				}
			}
			if got := DigestFiles(tt.files); got != tt.want {
				t.Errorf("DigestFiles() = %s, want %s", got, tt.want)
			}
		})
	}
}

// writeFiles creates files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

func TestFilesOfFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	writeFiles(t, dir, map[string]string{
		"Dockerfile":         "FROM x\n",
		".hidden":            "h",
		"sse/config.yaml":    "id: t\n",
		"sse/.dot/inner.txt": "inner",
		"sse/pocs/é.bin":     string(all),
	})
	if err := os.Mkdir(filepath.Join(dir, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "sse/config.yaml", filepath.Join(dir, "link-to-file"))
	symlink(t, "sse", filepath.Join(dir, "link-to-dir"))
	symlink(t, "nowhere", filepath.Join(dir, "broken"))

	// The same folder, hashed by Python's Path.rglob("*") + is_file():
	// the link to a file counts with its target's bytes, the link to a
	// directory is not descended, the broken link and the empty directory
	// are left out.
	want := map[string]string{
		".hidden":            "aaa9402664f1a41f40ebbc52c9993eb66aeb366602958fdfaa283b71e64db123",
		"Dockerfile":         "5e50475e952eb91b6fba4296a115731d832b3e0e4e13360c83ab165751303f3a",
		"link-to-file":       "2e566221e03e1953041db43bab6e17991ffd31e84dfa17b3ec9312aa6151f28e",
		"sse/.dot/inner.txt": "33bf6fbd7cd8379785a21e233d8e09f824e7bab459168a96312c1c882c1d7e1f",
		"sse/config.yaml":    "2e566221e03e1953041db43bab6e17991ffd31e84dfa17b3ec9312aa6151f28e",
		"sse/pocs/é.bin":     "40aff2e9d2d8922e47afd4648e6967497158785fbd1da870e7110266bf944880",
	}
	got, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Files() mismatch (-want +got):\n%s", diff)
	}

	const wantDigest = "8a452c058d28faa09827a15da351136acf7d8f5449bed4f7533e7e79ddcd190f"
	for _, d := range []string{dir, dir + "/"} {
		digest, err := FilesDigest(d)
		if err != nil {
			t.Fatal(err)
		}
		if digest != wantDigest {
			t.Errorf("FilesDigest(%q) = %s, want %s", d, digest, wantDigest)
		}
	}

	// A symlink to the task folder is walked as the folder.
	link := filepath.Join(t.TempDir(), "link")
	symlink(t, dir, link)
	if digest, err := FilesDigest(link); err != nil || digest != wantDigest {
		t.Errorf("FilesDigest(symlink to folder) = %s, %v, want %s", digest, err, wantDigest)
	}

	// Any change to a file's bytes changes the digest.
	writeFiles(t, dir, map[string]string{".hidden": "H"})
	if digest, _ := FilesDigest(dir); digest == wantDigest {
		t.Errorf("FilesDigest() did not change when a dotfile changed")
	}
}

func TestFilesErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Files(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("Files(missing) succeeded")
	}
	writeFiles(t, dir, map[string]string{"f": "x"})
	if _, err := Files(filepath.Join(dir, "f")); err == nil {
		t.Errorf("Files(regular file) succeeded")
	}
}
