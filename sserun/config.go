package sserun

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// ConfigName is the task config's file name in the task root (/ssebench).
const ConfigName = "config.yaml"

// TaskConfig is the part of a task's config.yaml (SPEC.md section 3) that
// the runtime uses. The config was checked in full when the case image was
// built, so other keys are ignored here: the runtime must not refuse to
// grade a task because its config has a key this binary does not know.
type TaskConfig struct {
	ID      string `yaml:"id"`
	Source  string `yaml:"source"`
	Scripts struct {
		Build string `yaml:"build"`
		Run   string `yaml:"run"`
		Test  string `yaml:"test"`
	} `yaml:"scripts"`
	Files struct {
		PoC []string `yaml:"poc"`
		// The hidden tests: diffs that add or change tests, applied to a
		// copy of the agent's tree for the grade, never shown to the agent.
		FutureTest   string `yaml:"future_test"`
		SecurityTest string `yaml:"security_test"`
		IntentTest   string `yaml:"intent_test"`
	} `yaml:"files"`
}

// HiddenTest is one test diff of a task that the grade applies.
type HiddenTest struct {
	// Name is the config key, "future_test", "security_test" or
	// "intent_test"; the check's name in result.json.
	Name string
	// File is the diff, relative to the task root.
	File string
}

// HiddenTests lists the task's test diffs in the order the grade runs them.
func (c *TaskConfig) HiddenTests() []HiddenTest {
	var out []HiddenTest
	for _, h := range []HiddenTest{
		{"future_test", c.Files.FutureTest},
		{"security_test", c.Files.SecurityTest},
		{"intent_test", c.Files.IntentTest},
	} {
		if h.File != "" {
			out = append(out, h)
		}
	}
	return out
}

// ReadTaskConfig reads root/config.yaml. Script, proof-of-concept and
// hidden-test paths must be relative paths that stay inside root; source must be absolute.
// A missing file is an error for which errors.Is(err, fs.ErrNotExist)
// holds.
func ReadTaskConfig(root string) (*TaskConfig, error) {
	name := filepath.Join(root, ConfigName)
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading task config: %w", err)
	}
	c, err := ParseTaskConfig(data)
	if err != nil {
		return nil, fmt.Errorf("reading task config %s: %w", name, err)
	}
	return c, nil
}

// ParseTaskConfig parses and checks the text of a task config.
func ParseTaskConfig(data []byte) (*TaskConfig, error) {
	var c TaskConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	c.ID = strings.TrimSpace(c.ID)
	c.Source = strings.TrimSpace(c.Source)
	var errs []error
	if c.Source != "" && !path.IsAbs(c.Source) {
		errs = append(errs, fmt.Errorf("source %q is not an absolute path", c.Source))
	}
	c.Source = path.Clean(c.Source)
	if c.Source == "." {
		c.Source = ""
	}
	check := func(key string, p *string) {
		*p = strings.TrimSpace(*p)
		if *p == "" {
			return
		}
		clean, ok := relPath(*p)
		if !ok {
			errs = append(errs, fmt.Errorf("%s %q is not a path inside the task folder", key, *p))
			return
		}
		*p = clean
	}
	check("scripts.build", &c.Scripts.Build)
	check("scripts.run", &c.Scripts.Run)
	check("scripts.test", &c.Scripts.Test)
	for i := range c.Files.PoC {
		check(fmt.Sprintf("files.poc[%d]", i), &c.Files.PoC[i])
	}
	check("files.future_test", &c.Files.FutureTest)
	check("files.security_test", &c.Files.SecurityTest)
	check("files.intent_test", &c.Files.IntentTest)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &c, nil
}

// relPath cleans p, a slash-separated path relative to the task root, and
// reports whether it names something below the root.
func relPath(p string) (string, bool) {
	if path.IsAbs(p) {
		return "", false
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}
