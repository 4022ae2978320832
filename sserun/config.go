package sserun

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// ConfigName is the task config's file name in the task root (/ssebench).
const ConfigName = "config.yaml"

// TaskConfig is the part of a task's config.yaml (SPEC.md section 3) that
// the runtime uses. The config was checked in full when the case image was
// built, so other keys are ignored here: the runtime must not refuse to
// grade a task because its config has a key this binary does not know.
type TaskConfig struct {
	ID       string `yaml:"id"`
	Project  string `yaml:"project"`
	Language string `yaml:"language"`
	Source   string `yaml:"source"`
	// TaskDescription is what the agent may be told, as much of it as the
	// difficulty level allows (see TaskInfoFor).
	TaskDescription struct {
		// Issue is the issue text, what a user would report.
		Issue string `yaml:"issue"`
		// CrashReport lists files of the task root holding crash reports.
		CrashReport []string `yaml:"crash_report"`
		// BugDescription says what is wrong, in a sentence or two.
		BugDescription string `yaml:"bug_description"`
	} `yaml:"task_description"`
	Scripts struct {
		Build string `yaml:"build"`
		Run   string `yaml:"run"`
		Test  string `yaml:"test"`
	} `yaml:"scripts"`
	Files struct {
		PoC []string `yaml:"poc"`
		// FutureTest is the hidden tests: a diff that adds or changes
		// tests, applied to a copy of the agent's tree for the grade's
		// intent_test check, never shown to the agent.
		FutureTest string `yaml:"future_test"`
	} `yaml:"files"`
	// Tests names the tests the grade judges by name, read from the
	// report the test script writes in Tests.Format (docs/tasks.md).
	Tests TestLists `yaml:"tests"`
	// Caps override the caps of the agent's tree (contract.TreeCaps) for
	// a task whose fix legitimately writes more: sizes as bytes or with
	// Ki, Mi, Gi ("512Mi").
	Caps TaskCaps `yaml:"caps"`
}

// TaskCaps is config.yaml's `caps`; a missing key keeps its default.
type TaskCaps struct {
	ChangedBytes ByteSize `yaml:"changed_bytes"`
	FileBytes    ByteSize `yaml:"file_bytes"`
	ChangedFiles int64    `yaml:"changed_files"`
}

// ByteSize is a size in a task config: a number of bytes, or one with a
// binary suffix (contract.ParseBytes).
type ByteSize int64

// UnmarshalYAML implements yaml.Unmarshaler.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a size is a number of bytes or a number with Ki, Mi or Gi", n.Line)
	}
	v, err := contract.ParseBytes(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = ByteSize(v)
	return nil
}

// TreeCaps returns the task's caps of the agent's tree, defaults filled
// in. A nil config has the defaults.
func (c *TaskConfig) TreeCaps() contract.TreeCaps {
	if c == nil {
		return contract.DefaultTreeCaps
	}
	return contract.TreeCaps{
		ChangedBytes: int64(c.Caps.ChangedBytes),
		FileBytes:    int64(c.Caps.FileBytes),
		ChangedFiles: c.Caps.ChangedFiles,
	}.WithDefaults()
}

// ReadTaskConfig reads root/config.yaml. Script, proof-of-concept and
// future-test paths must be relative paths that stay inside root; source must be absolute.
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
	for i := range c.TaskDescription.CrashReport {
		check(fmt.Sprintf("task_description.crash_report[%d]", i), &c.TaskDescription.CrashReport[i])
	}
	c.TaskDescription.CrashReport = slices.DeleteFunc(c.TaskDescription.CrashReport, func(s string) bool { return s == "" })
	c.Tests.Format = strings.TrimSpace(c.Tests.Format)
	trimNames := func(names []string) []string {
		for i := range names {
			names[i] = strings.TrimSpace(names[i])
		}
		return slices.DeleteFunc(names, func(s string) bool { return s == "" })
	}
	c.Tests.FailToPass = trimNames(c.Tests.FailToPass)
	c.Tests.PassToPass = trimNames(c.Tests.PassToPass)
	switch {
	case c.Tests.Format != "" && !slices.Contains(contract.TestFormats, c.Tests.Format):
		errs = append(errs, fmt.Errorf("tests.format %q is not one of %s", c.Tests.Format, strings.Join(contract.TestFormats, ", ")))
	case c.Tests.Format == "" && c.Tests.Listed():
		errs = append(errs, errors.New("tests lists tests but has no format: the grade cannot read the test report"))
	}
	for i := range c.Tests.Protected {
		c.Tests.Protected[i] = strings.TrimSpace(c.Tests.Protected[i])
		if err := contract.CheckGlob(c.Tests.Protected[i]); err != nil {
			errs = append(errs, fmt.Errorf("tests.protected[%d]: %w", i, err))
		}
	}
	if c.Caps.ChangedFiles < 0 {
		errs = append(errs, fmt.Errorf("caps.changed_files %d is negative", c.Caps.ChangedFiles))
	}
	c.TaskDescription.Issue = strings.TrimSpace(c.TaskDescription.Issue)
	c.TaskDescription.BugDescription = strings.TrimSpace(c.TaskDescription.BugDescription)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &c, nil
}

// ProtectedPaths returns the globs of the paths a fix may not change, which
// the graded tree and the scripts' copies take from the pristine tree:
// tests.protected when the key is present, even as an empty list, else
// the defaults of the task's language (contract.ProtectedPaths).
func (c *TaskConfig) ProtectedPaths() []string {
	if c.Tests.Protected != nil {
		return slices.Clone(c.Tests.Protected)
	}
	return contract.ProtectedPaths(c.Language)
}

// ProtectedGlobs compiles ProtectedPaths. A nil config protects nothing
// (the sidecar agent image has no task config).
func (c *TaskConfig) ProtectedGlobs() (*contract.Globs, error) {
	if c == nil {
		return nil, nil
	}
	return contract.CompileGlobs(c.ProtectedPaths())
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
