package naming

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultRegistry is the prefix used when nothing else names one: where the
// project publishes its images.
const DefaultRegistry = "ghcr.io/42-b3yond-6ug/ssebench"

// RegistryEnv is the environment variable (and .env key) that sets REGISTRY.
const RegistryEnv = "SSEBENCH_REGISTRY"

// Settings looks up configuration the way the Python CLI did: the process
// environment first, then a .env file in the working directory, then a .env
// file in the SSEBench home.
type Settings struct {
	// Getenv reads the process environment. The default is os.Getenv.
	Getenv func(string) string
	// Dirs are the directories whose .env files are read, first match wins.
	Dirs []string
}

// NewSettings returns Settings over the process environment and the .env
// files of dirs (usually the working directory and the SSEBench home).
func NewSettings(dirs ...string) *Settings {
	return &Settings{Getenv: os.Getenv, Dirs: dirs}
}

// Lookup returns the value of key, whitespace trimmed, and where it came
// from ("environment" or the .env path). An empty value counts as unset.
func (s *Settings) Lookup(key string) (value, source string, err error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := strings.TrimSpace(getenv(key)); v != "" {
		return v, "environment", nil
	}
	for _, dir := range s.Dirs {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, ".env")
		vals, err := ReadDotEnv(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", "", err
		}
		if v := strings.TrimSpace(vals[key]); v != "" {
			return v, p, nil
		}
	}
	return "", "", nil
}

// Registry returns REGISTRY: flag when non-empty, else SSEBENCH_REGISTRY from
// the environment or a .env file, else DefaultRegistry; trailing slashes are
// removed.
func (s *Settings) Registry(flag string) (string, error) {
	v := strings.TrimSpace(flag)
	if v == "" {
		var err error
		if v, _, err = s.Lookup(RegistryEnv); err != nil {
			return "", err
		}
	}
	if v == "" {
		v = DefaultRegistry
	}
	v = strings.TrimRight(v, "/")
	if v == "" {
		return "", fmt.Errorf("registry prefix %q is empty once trailing slashes are removed: set %s to a prefix such as localhost:5000/ssebench", flag, RegistryEnv)
	}
	return v, nil
}

// ReadDotEnv parses a .env file: KEY=VALUE lines, optional "export ",
// comments starting with #, values optionally in single or double quotes.
func ReadDotEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vals := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s:%d: expected KEY=VALUE, got %q", path, n, line)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		} else if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		vals[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return vals, nil
}
