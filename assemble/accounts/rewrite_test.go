package accounts

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// goldenDay is the day testdata/gen.sh makes shadow-utils write
// (SOURCE_DATE_EPOCH=1700000000).
const goldenDay = 19675

func readOptional(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFiles(t *testing.T, dir string) Files {
	t.Helper()
	return Files{
		Passwd:    readOptional(t, filepath.Join(dir, "passwd")),
		Group:     readOptional(t, filepath.Join(dir, "group")),
		Shadow:    readOptional(t, filepath.Join(dir, "shadow")),
		Gshadow:   readOptional(t, filepath.Join(dir, "gshadow")),
		LoginDefs: readOptional(t, filepath.Join(dir, "login.defs")),
		Subuid:    readOptional(t, filepath.Join(dir, "subuid")),
		Subgid:    readOptional(t, filepath.Join(dir, "subgid")),
	}
}

// TestGolden compares Rewrite with what the real shadow-utils wrote on the
// same inputs (testdata/*/want, made by testdata/gen.sh).
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/in")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no golden cases under testdata")
	}
	for _, in := range dirs {
		name := filepath.Base(filepath.Dir(in))
		t.Run(name, func(t *testing.T) {
			want := readFiles(t, filepath.Join(filepath.Dir(in), "want"))
			got, err := Rewrite(readFiles(t, in), WithDay(goldenDay))
			if err != nil {
				t.Fatalf("Rewrite() = %v", err)
			}
			for _, f := range []struct {
				name      string
				want, got []byte
			}{
				{"passwd", want.Passwd, got.Files.Passwd},
				{"group", want.Group, got.Files.Group},
				{"shadow", want.Shadow, got.Files.Shadow},
				{"gshadow", want.Gshadow, got.Files.Gshadow},
				{"subuid", want.Subuid, got.Files.Subuid},
				{"subgid", want.Subgid, got.Files.Subgid},
			} {
				if (f.want == nil) != (f.got == nil) {
					t.Errorf("%s: exists = %v, want %v", f.name, f.got != nil, f.want != nil)
					continue
				}
				if diff := cmp.Diff(string(f.want), string(f.got)); diff != "" {
					t.Errorf("%s mismatch (-want +got):\n%s", f.name, diff)
				}
			}

			// Every fixture home and spool exists, owned by its user, so
			// what userdel removed is exactly the listed paths.
			wantRemoved := strings.Fields(string(readOptional(t, filepath.Join(filepath.Dir(in), "want", "removed"))))
			var gotRemoved []string
			for _, r := range got.Remove {
				gotRemoved = append(gotRemoved, r.Path)
			}
			sort.Strings(wantRemoved)
			sort.Strings(gotRemoved)
			if diff := cmp.Diff(wantRemoved, gotRemoved, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("removed paths mismatch (-want +got):\n%s", diff)
			}

			// The reported ids are the ones written to passwd.
			var runner []string
			for _, line := range strings.Split(string(want.Passwd), "\n") {
				if f := strings.Split(line, ":"); len(f) == 7 && f[0] == RunnerName {
					runner = f
				}
			}
			if runner == nil {
				t.Fatal("golden passwd has no sse-runner")
			}
			if strconv.Itoa(got.RunnerUID) != runner[2] || strconv.Itoa(got.RunnerGID) != runner[3] {
				t.Errorf("runner ids = %d:%d, want %s:%s", got.RunnerUID, got.RunnerGID, runner[2], runner[3])
			}
		})
	}
}

func TestRewriteReport(t *testing.T) {
	got, err := Rewrite(readFiles(t, "testdata/model1001/in"), WithDay(goldenDay))
	if err != nil {
		t.Fatal(err)
	}
	want := &Result{
		Remove: []Removal{
			{Path: "/var/mail/dev", UID: 1000},
			{Path: "/home/dev", UID: 1000},
			{Path: "/var/mail/model", UID: 1001},
			{Path: "/home/model", UID: 1001},
		},
		DeletedUsers:  []string{"dev", "model"},
		DeletedGroups: []string{"dev", "model"},
		RunnerUID:     999,
		RunnerGID:     103,
	}
	got.Files = Files{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Rewrite() mismatch (-want +got):\n%s", diff)
	}
}

func TestRewriteDeterministic(t *testing.T) {
	in := readFiles(t, "testdata/subids/in")
	a, err := Rewrite(in, WithDay(goldenDay))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Rewrite(in, WithDay(goldenDay))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("second Rewrite() differs (-first +second):\n%s", diff)
	}
	// The input must not be modified in place.
	if diff := cmp.Diff(readFiles(t, "testdata/subids/in"), in); diff != "" {
		t.Errorf("input changed (-want +got):\n%s", diff)
	}
}

func TestRewriteDay(t *testing.T) {
	in := Files{
		Passwd:    []byte("root:x:0:0:root:/root:/bin/bash\n"),
		Group:     []byte("root:x:0:\n"),
		Shadow:    []byte("root:*:19000:0:99999:7:::\n"),
		LoginDefs: []byte("PASS_MAX_DAYS\t99999\nPASS_MIN_DAYS 0\nPASS_WARN_AGE \"7\"\n"),
	}
	for _, tc := range []struct {
		day  int64
		want string
	}{
		{20000, "root:*:19000:0:99999:7:::\nmodel:!:20000:0:99999:7:::\nsse-runner:!:20000::::::\n"},
		// shadow-utils writes an empty date rather than day 0, which
		// would force a password change.
		{0, "root:*:19000:0:99999:7:::\nmodel:!::0:99999:7:::\nsse-runner:!:::::::\n"},
	} {
		t.Run(strconv.FormatInt(tc.day, 10), func(t *testing.T) {
			got, err := Rewrite(in, WithDay(tc.day))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got.Files.Shadow)); diff != "" {
				t.Errorf("shadow mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRewriteErrors(t *testing.T) {
	base := Files{
		Passwd: []byte("root:x:0:0:root:/root:/bin/bash\n"),
		Group:  []byte("root:x:0:\n"),
	}
	with := func(f func(*Files)) Files {
		in := base
		f(&in)
		return in
	}
	for _, tc := range []struct {
		name string
		in   Files
		opts []Option
		want string
	}{
		{"no day", base, nil, "no build day given, see accounts.WithDay"},
		{"negative day", base, []Option{WithDay(-1)}, "day -1 is before 1970"},
		{"no passwd", with(func(f *Files) { f.Passwd = nil }), []Option{WithDay(1)}, "/etc/passwd is missing"},
		{"no group", with(func(f *Files) { f.Group = nil }), []Option{WithDay(1)}, "/etc/group is missing"},
		{
			"duplicate user",
			with(func(f *Files) {
				f.Passwd = []byte("root:x:0:0::/root:/bin/sh\nubuntu:x:1000:1000::/home/ubuntu:/bin/sh\nubuntu:x:1001:1001::/home/u:/bin/sh\n")
			}),
			[]Option{WithDay(1)},
			`deleting user "ubuntu": /etc/passwd line 3: a second entry named "ubuntu" (first on line 2); shadow-utils refuses to edit it, fix it with pwck or grpck`,
		},
		{
			"runner group without user",
			with(func(f *Files) { f.Group = []byte("root:x:0:\nsse-runner:x:990:\n") }),
			[]Option{WithDay(1)},
			`adding user "sse-runner": group "sse-runner" exists without a user of that name, so useradd --user-group refuses it; delete the group in the case image`,
		},
		{
			"system ids exhausted",
			with(func(f *Files) {
				f.Passwd = []byte("root:x:0:0::/root:/bin/sh\na:x:101:0::/:/bin/sh\nb:x:102:0::/:/bin/sh\n")
				f.LoginDefs = []byte("SYS_UID_MIN 101\nSYS_UID_MAX 102\n")
			}),
			[]Option{WithDay(1)},
			`adding user "sse-runner": choosing a uid: no free system id left in 101..102`,
		},
		{
			"NUL byte",
			with(func(f *Files) { f.Group = []byte("root:x:0:\nbad\x00:x:5:\n") }),
			[]Option{WithDay(1)},
			"/etc/group line 2: NUL byte, which shadow-utils cannot handle",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Rewrite(tc.in, tc.opts...)
			if err == nil {
				t.Fatalf("Rewrite() = nil error, want %q", tc.want)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("Rewrite() error = %q, want %q", got, tc.want)
			}
		})
	}
}
