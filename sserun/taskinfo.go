package sserun

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// taskFileLimit bounds each crash report or proof of concept shown to the
// agent: they are meant to be read, and a model's context is small.
const taskFileLimit = 64 << 10

// TaskInfo is what the agent is told about its task (SPEC.md section 13).
// Which fields are set depends on the difficulty level:
//
//	level  issue  bug description  crash reports  PoC contents  run_pocs
//	0      yes    yes              yes            yes           full output
//	1      yes    yes              yes            no            full output
//	2      no     yes              yes            no            full output
//	3      no     yes              no             no            pass/fail only
//	4      yes    no               no             no            absent
//
// A field the level gives that the task lacks is replaced by the next
// richer one (issue, then bug description, then crash reports), and Notes
// say so; PoC contents are never given in place of anything.
type TaskInfo struct {
	TaskID     string `json:"task_id"`
	Project    string `json:"project,omitempty"`
	Language   string `json:"language,omitempty"`
	SourceDir  string `json:"source_dir"`
	Difficulty int    `json:"difficulty"`
	// Issue is the issue text, what a user would report.
	Issue string `json:"issue,omitempty"`
	// BugDescription says what is wrong.
	BugDescription string `json:"bug_description,omitempty"`
	// CrashReports are the crash reports' contents.
	CrashReports []TaskFile `json:"crash_reports,omitempty"`
	// PoCs are the proofs of concept's contents (level 0 only).
	PoCs []TaskFile `json:"pocs,omitempty"`
	// PoCCount is how many proofs of concept run_pocs runs (0 when the
	// tool is absent).
	PoCCount int `json:"poc_count"`
	// Tools are the tools the agent has.
	Tools []string `json:"tools"`
	// Notes say what the task lacks and what was given instead.
	Notes []string `json:"notes,omitempty"`
}

// TaskFile is a file of the task shown to the agent.
type TaskFile struct {
	// Name is the file's base name, for a crash report; "PoC N" and the
	// base name for a proof of concept.
	Name string `json:"name"`
	// Content is the file's text, or its bytes in base64 when Encoding
	// says so (binary files).
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty"`
	// Size is the file's size in bytes; Truncated is true when Content
	// holds only its first bytes.
	Size      int64 `json:"size"`
	Truncated bool  `json:"truncated,omitempty"`
}

// Description fields in the order of how much they tell.
const (
	fieldIssue = iota
	fieldBug
	fieldCrash
	nFields
)

var fieldNames = [nFields]string{"issue text", "bug description", "crash reports"}

// levelFields are the description fields each level gives.
var levelFields = [MaxDifficulty + 1][nFields]bool{
	0: {true, true, true},
	1: {true, true, true},
	2: {false, true, true},
	3: {false, true, false},
	4: {true, false, false},
}

// Tools returns the tools of cfg's task at a difficulty level, in the
// order task_info, build, test, run_pocs, status: build and test when the
// task has the script, run_pocs when it has proofs of concept and the
// level is below 4.
func Tools(cfg *TaskConfig, level int) []string {
	out := []string{ToolTaskInfo}
	if cfg.Scripts.Build != "" {
		out = append(out, ToolBuild)
	}
	if cfg.Scripts.Test != "" {
		out = append(out, ToolTest)
	}
	if pocsAllowed(cfg, level) {
		out = append(out, ToolRunPoCs)
	}
	return append(out, ToolStatus)
}

func pocsAllowed(cfg *TaskConfig, level int) bool {
	return level < MaxDifficulty && cfg.Scripts.Run != "" && len(cfg.Files.PoC) > 0
}

// TaskInfoFor returns what the agent is told at a difficulty level about
// the task whose config is cfg and whose files are under root.
func TaskInfoFor(root string, cfg *TaskConfig, sourceDir string, level int) (*TaskInfo, error) {
	if level < 0 || level > MaxDifficulty {
		return nil, fmt.Errorf("difficulty %d is not 0 to %d", level, MaxDifficulty)
	}
	td := cfg.TaskDescription
	have := [nFields]bool{td.Issue != "", td.BugDescription != "", len(td.CrashReport) > 0}
	want := levelFields[level]
	give := want
	var notes []string
	for f := range nFields {
		if !want[f] || have[f] {
			continue
		}
		sub := -1
		for g := f + 1; g < nFields; g++ {
			if have[g] && !give[g] {
				sub = g
				break
			}
		}
		if sub < 0 {
			notes = append(notes, fmt.Sprintf("difficulty %d gives the %s, but this task has none", level, fieldNames[f]))
			continue
		}
		give[sub] = true
		notes = append(notes, fmt.Sprintf("difficulty %d gives the %s, but this task has none: you get the %s instead (the next richer field)", level, fieldNames[f], fieldNames[sub]))
	}
	// Nothing to say at all: give the richest field the task has.
	empty := true
	for f := range nFields {
		if give[f] && have[f] {
			empty = false
		}
	}
	if empty {
		for f := nFields - 1; f >= 0; f-- {
			if have[f] {
				give[f] = true
				notes = append(notes, fmt.Sprintf("this task has nothing difficulty %d gives: you get the %s instead", level, fieldNames[f]))
				break
			}
		}
	}

	info := &TaskInfo{
		TaskID: cfg.ID, Project: cfg.Project, Language: cfg.Language,
		SourceDir: sourceDir, Difficulty: level,
		Tools: Tools(cfg, level), Notes: notes,
	}
	if give[fieldIssue] {
		info.Issue = td.Issue
	}
	if give[fieldBug] {
		info.BugDescription = td.BugDescription
	}
	if give[fieldCrash] {
		for _, rel := range td.CrashReport {
			f, err := readTaskFile(root, rel, filepath.Base(rel))
			if err != nil {
				return nil, err
			}
			info.CrashReports = append(info.CrashReports, f)
		}
	}
	if pocsAllowed(cfg, level) {
		info.PoCCount = len(cfg.Files.PoC)
	}
	if level == 0 {
		for i, rel := range cfg.Files.PoC {
			f, err := readTaskFile(root, rel, fmt.Sprintf("PoC %d: %s", i+1, filepath.Base(rel)))
			if err != nil {
				return nil, err
			}
			info.PoCs = append(info.PoCs, f)
		}
		if len(cfg.Files.PoC) == 0 {
			info.Notes = append(info.Notes, "difficulty 0 gives the proofs of concept, but this task has none")
		}
	}
	return info, nil
}

// readTaskFile reads up to taskFileLimit bytes of root/rel; binary files
// come in base64.
func readTaskFile(root, rel, name string) (TaskFile, error) {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return TaskFile{}, fmt.Errorf("reading the task file %s: %w", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return TaskFile{}, fmt.Errorf("reading the task file %s: %w", rel, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, taskFileLimit))
	if err != nil {
		return TaskFile{}, fmt.Errorf("reading the task file %s: %w", rel, err)
	}
	tf := TaskFile{Name: name, Size: fi.Size(), Truncated: fi.Size() > int64(len(data))}
	text := data
	if tf.Truncated {
		// A cut may split a UTF-8 sequence: that is not binary.
		for i := 0; i < utf8.UTFMax && len(text) > 0 && !utf8.Valid(text); i++ {
			text = text[:len(text)-1]
		}
	}
	if utf8.Valid(text) && !strings.ContainsRune(string(text), 0) {
		tf.Content = string(text)
	} else {
		tf.Content, tf.Encoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	return tf, nil
}

// Text renders the task info for a reader: the agent, through `entrypoint
// --call task_info` or an MCP tool's text content.
func (ti *TaskInfo) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task %s", ti.TaskID)
	if ti.Project != "" {
		fmt.Fprintf(&b, " (project %s", ti.Project)
		if ti.Language != "" {
			fmt.Fprintf(&b, ", %s", ti.Language)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", difficulty %d.\nThe project's source is in %s: fix the bug there.\n", ti.Difficulty, ti.SourceDir)
	for _, n := range ti.Notes {
		fmt.Fprintf(&b, "Note: %s.\n", n)
	}
	if ti.Issue != "" {
		fmt.Fprintf(&b, "\n## Issue\n\n%s\n", strings.TrimRight(ti.Issue, "\n"))
	}
	if ti.BugDescription != "" {
		fmt.Fprintf(&b, "\n## Bug description\n\n%s\n", strings.TrimRight(ti.BugDescription, "\n"))
	}
	files := func(title string, fs []TaskFile) {
		for _, f := range fs {
			fmt.Fprintf(&b, "\n## %s: %s (%d bytes", title, f.Name, f.Size)
			if f.Truncated {
				fmt.Fprintf(&b, ", first %d shown", taskFileLimit)
			}
			if f.Encoding != "" {
				fmt.Fprintf(&b, ", %s", f.Encoding)
			}
			fmt.Fprintf(&b, ")\n\n%s\n", strings.TrimRight(f.Content, "\n"))
		}
	}
	files("Crash report", ti.CrashReports)
	files("Proof of concept", ti.PoCs)
	fmt.Fprintf(&b, "\nTools: %s.", strings.Join(ti.Tools, ", "))
	if ti.PoCCount > 0 {
		fmt.Fprintf(&b, " run_pocs runs %s of concept.", plural(ti.PoCCount, "proof", "proofs"))
	}
	b.WriteString("\n")
	return b.String()
}
