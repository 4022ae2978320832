package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestCheckModel(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "claude.yaml"), []byte("base_url: https://x.invalid/v1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "gpt.yml"), []byte("base_url: https://x.invalid/v1\n"), 0o644)
	none := func(string) string { return "" }
	if err := CheckModel("claude", dir, none); err != nil {
		t.Errorf("a model with a file: %v", err)
	}
	err := CheckModel("claud", dir, none)
	if err == nil || !strings.Contains(err.Error(), `unknown model "claud": did you mean "claude"? (`+dir+` has claude, gpt;`) {
		t.Errorf("a typo: %v", err)
	}
	if err := CheckModel("claud", dir, func(k string) string { return map[string]string{DefaultBaseURLEnv: "http://127.0.0.1:1/v1"}[k] }); err != nil {
		t.Errorf("a name SSE_BASE_URL serves: %v", err)
	}
	if err := CheckModel("anything", t.TempDir(), none); err != nil {
		t.Errorf("no model files (the name is only passed on): %v", err)
	}
}

// A model file's mistakes come back in one line that names the keys as
// the file spells them, not the Go types they are read into.
func TestLoadModelFileOneLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.yaml")
	os.WriteFile(p, []byte("name: x\nbase_url: http://127.0.0.1:4010/v1\napi_key_env: none\nflavor: openai-chat\nmodels: gpt\n"), 0o644)
	_, err := LoadModelFile(p)
	if err == nil {
		t.Fatal("a model file with an unknown key was read")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Contains(msg, "gateway.") || !strings.Contains(msg, `line 4: unknown key "flavor"`) || !strings.Contains(msg, "line 5: a string where a list belongs") {
		t.Errorf("LoadModelFile: %q, want one line naming the unknown key flavor and the models list", msg)
	}
}

// A model file that is huge, or not a regular file, is refused in one line
// before it is read whole (or a FIFO blocks the run).
func TestLoadModelFileHostile(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	os.WriteFile(huge, append([]byte("base_url: http://127.0.0.1:1/v1\n#"), make([]byte, 2<<20)...), 0o644)
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{{huge, "larger than"}, {fifo, "not a regular file"}, {dir, "not a regular file"}} {
		_, err := LoadModelFile(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("LoadModelFile(%s) = %v, want one line with %q", c.path, err, c.want)
		}
	}
}
