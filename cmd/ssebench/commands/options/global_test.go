package options

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte("0.1.0-dev\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestHomeDir(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "checkout")
	deep := filepath.Join(home, "datasets", "examples", "task")
	other := filepath.Join(root, "other")
	notHome := filepath.Join(root, "versioned")
	mkdirs(t, deep, filepath.Join(other, "sub"), filepath.Join(notHome, "sub"))
	touch(t, filepath.Join(home, "VERSION"))
	// A VERSION file alone does not make a home.
	touch(t, filepath.Join(notHome, "VERSION"))
	touch(t, filepath.Join(root, "file"))

	tests := []struct {
		name      string
		flag, env string
		wd        string
		want      string
		wantErr   string
	}{
		{name: "flag", flag: other, env: home, wd: deep, want: other},
		{name: "environment", env: other, wd: deep, want: other},
		{name: "found above the working directory", wd: deep, want: home},
		{name: "the working directory when no home is above it", wd: filepath.Join(notHome, "sub"), want: filepath.Join(notHome, "sub")},
		{name: "flag names a missing folder", flag: filepath.Join(root, "nope"), wd: deep, wantErr: `SSEBench home "` + filepath.Join(root, "nope") + `" is not a folder: pass --home or set SSEBENCH_HOME`},
		{name: "environment names a file", env: filepath.Join(root, "file"), wd: deep, wantErr: "is not a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(HomeEnv, tt.env)
			t.Chdir(tt.wd)
			g := &Global{Home: tt.flag}
			got, err := g.HomeDir()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("HomeDir() = %q, %v; want one-line error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("HomeDir() = %v", err)
			}
			if realPath(t, got) != realPath(t, tt.want) {
				t.Errorf("HomeDir() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHomeDirRelative(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, filepath.Join(root, "home"))
	t.Setenv(HomeEnv, "")
	t.Chdir(root)
	got, err := (&Global{Home: "home"}).HomeDir()
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(got) || realPath(t, got) != realPath(t, filepath.Join(root, "home")) {
		t.Errorf("HomeDir(--home home) = %q, want the absolute %s", got, filepath.Join(root, "home"))
	}
}

func TestParsePlatform(t *testing.T) {
	tests := []struct {
		in      string
		want    *v1.Platform
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "linux/arm64", want: &v1.Platform{OS: "linux", Architecture: "arm64"}},
		{in: "linux/arm/v7", want: &v1.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}},
		{in: "amd64", wantErr: true},
		{in: "linux/", wantErr: true},
		{in: "/amd64", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePlatform(tt.in)
			if tt.wantErr {
				want := `platform "` + tt.in + `" is not OS/ARCH: use linux/amd64 or linux/arm64`
				if err == nil || err.Error() != want {
					t.Fatalf("ParsePlatform(%q) = %v, %v; want error %q", tt.in, got, err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePlatform(%q) = %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParsePlatform(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestRegistryOptionsPullPolicy(t *testing.T) {
	for _, p := range []string{"missing", "always", "never"} {
		if _, err := (&Global{Pull: p}).RegistryOptions(nil, nil); err != nil {
			t.Errorf("RegistryOptions(--pull=%s) = %v", p, err)
		}
	}
	_, err := (&Global{Pull: "sometimes"}).RegistryOptions(nil, nil)
	if err == nil || !strings.Contains(err.Error(), `"sometimes"`) {
		t.Errorf("RegistryOptions(--pull=sometimes) = %v, want an error naming the value", err)
	}
}

func TestOpenStore(t *testing.T) {
	root := t.TempDir()
	t.Setenv("SSEBENCH_STORE", filepath.Join(root, "env"))
	tests := []struct {
		name, flag, want string
	}{
		{"flag before environment", filepath.Join(root, "flag"), filepath.Join(root, "flag")},
		{"environment", "", filepath.Join(root, "env")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := (&Global{Store: tt.flag}).OpenStore()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Dir() != tt.want {
				t.Errorf("OpenStore().Dir() = %q, want %q", s.Dir(), tt.want)
			}
			if _, err := os.Stat(filepath.Join(tt.want, "oci-layout")); err != nil {
				t.Errorf("the store has no oci-layout: %v", err)
			}
		})
	}
}

func TestRequireHome(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "checkout")
	mkdirs(t, filepath.Join(home, "datasets", "d", "t"), filepath.Join(root, "elsewhere"))
	touch(t, filepath.Join(home, "VERSION"))
	t.Setenv(HomeEnv, "")

	t.Chdir(filepath.Join(home, "datasets", "d", "t"))
	if got, err := (&Global{}).RequireHome(); err != nil || realPath(t, got) != realPath(t, home) {
		t.Errorf("RequireHome() in a checkout = %q, %v; want %q", got, err, home)
	}
	t.Chdir(filepath.Join(root, "elsewhere"))
	_, err := (&Global{}).RequireHome()
	if err == nil || err.Error() != "no SSEBench home here; pass --home or run from a checkout" {
		t.Errorf("RequireHome() outside a home = %v, want the no-home error", err)
	}
	if got, err := (&Global{Home: home}).RequireHome(); err != nil || got != home {
		t.Errorf("RequireHome() with --home = %q, %v; want %q", got, err, home)
	}
}

func TestSeconds(t *testing.T) {
	for in, want := range map[string]int{"90m": 5400, "600": 600, "1h30m": 5400, "45s": 45, "0": 0} {
		var n int
		if err := Seconds(&n).Set(in); err != nil || n != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	for _, in := range []string{"ten", "-1m", "1.5s", ""} {
		var n int
		if err := Seconds(&n).Set(in); err == nil {
			t.Errorf("Set(%q) accepted %d, want an error", in, n)
		}
	}
}
