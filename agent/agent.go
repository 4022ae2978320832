package agent

import (
	"errors"
	"fmt"
	"github.com/42-b3yond-6ug/ssebench/internal/suggest"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// maxAgentFile bounds agent.yaml: a few keys.
const maxAgentFile = 64 << 10

// Agent is one agent folder.
type Agent struct {
	// Folder is the folder name under agents/: what --agent takes.
	Folder string
	// Dir is the folder's path.
	Dir string
	// Name is agent.yaml's name, trimmed.
	Name string
	// Version is agent.yaml's version, or "" when it names none (the image
	// is then tagged with the SSEBench version).
	Version string
	// GoBuild are the Go programs ssebench compiles into the folder before
	// the Dockerfile is built (agent.yaml's go_build), sorted by output.
	GoBuild []GoProgram
	// OpenCode says the agent drives the OpenCode server the tool image
	// carries (agent.yaml's opencode: true): the run starts it for this
	// agent only.
	OpenCode bool
}

// GoProgram is one entry of go_build: a file of the folder that is the
// compiled Go package.
type GoProgram struct {
	// Output is the file's name in the folder (what the Dockerfile COPYs).
	Output string
	// Package is the package's directory, relative to the folder.
	Package string
}

type file struct {
	Name, Version *string
	GoBuild       []GoProgram
	OpenCode      bool
}

// Load reads agents/<folder>/agent.yaml under home. An unknown folder is an
// error that suggests the closest name and lists the folders that have an
// agent.yaml.
func Load(home, folder string) (*Agent, error) {
	if folder == "" || strings.ContainsAny(folder, `/\`) || folder == "." || folder == ".." {
		return nil, fmt.Errorf("agent %q is not a folder name under %s: pass the folder name, e.g. --agent dummy", folder, filepath.Join(home, "agents"))
	}
	dir := filepath.Join(home, "agents", folder)
	p := filepath.Join(dir, "agent.yaml")
	// Read without leaving the folder: an agent.yaml that is a symlink to
	// a host file must not be read (and echoed in a parse error).
	b, err := safefile.Read(dir, "agent.yaml", maxAgentFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, unknown(home, folder)
	}
	if err != nil {
		return nil, fmt.Errorf("reading agent: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %s", p, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var f file
	if len(doc.Content) > 0 {
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s: line %d: expected a mapping with keys name and version", p, m.Line)
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if k.Value == "go_build" {
				if f.GoBuild, err = goBuild(p, v); err != nil {
					return nil, err
				}
				continue
			}
			if k.Value == "opencode" {
				if v.Kind != yaml.ScalarNode || v.Decode(&f.OpenCode) != nil {
					return nil, fmt.Errorf("%s: line %d: key \"opencode\" must be true or false", p, v.Line)
				}
				continue
			}
			switch k.Value {
			case "name":
				f.Name = &v.Value
			case "version":
				f.Version = &v.Value
			default:
				return nil, fmt.Errorf("%s: line %d: unknown key %q (allowed: name, version, go_build, opencode)", p, k.Line, k.Value)
			}
			if v.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s: line %d: key %q must be a string", p, v.Line, k.Value)
			}
		}
	}
	a := &Agent{Folder: folder, Dir: dir, GoBuild: f.GoBuild, OpenCode: f.OpenCode}
	if f.Name != nil {
		a.Name = strings.TrimSpace(*f.Name)
	}
	if a.Name == "" {
		return nil, fmt.Errorf("%s: key \"name\" is required and must not be empty", p)
	}
	if !task.ValidID(a.Name) {
		// The name becomes a path component of the image name
		// (agent-<name>/<task>).
		return nil, fmt.Errorf("%s: name %q is not a valid name: letters and digits separated by '.', '_', '__' or dashes, at most %d characters (no '/' or '..')", p, a.Name, task.MaxIDLength)
	}
	if f.Version != nil {
		a.Version = strings.TrimSpace(*f.Version)
	}
	return a, nil
}

// List returns the folders under home/agents that have an agent.yaml, sorted.
func List(home string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(home, "agents"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing agents: %w", err)
	}
	var out []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(home, "agents", e.Name(), "agent.yaml")); err == nil {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

func unknown(home, folder string) error {
	names, err := List(home)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("unknown agent %q: %s has no folder with an agent.yaml", folder, filepath.Join(home, "agents"))
	}
	return fmt.Errorf("unknown agent %q: did you mean %q? agents: %s", folder, suggest.Closest(folder, names), strings.Join(names, ", "))
}
