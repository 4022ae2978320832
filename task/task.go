package task

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
)

// ConfigFile is where a task folder keeps its config. An older layout keeps
// it at the top of the folder (LegacyConfigFile), which is read when
// ConfigFile is absent.
const (
	ConfigFile       = "sse/config.yaml"
	LegacyConfigFile = "config.yaml"
	DockerfileName   = "Dockerfile"
	// TaskFilesDir is the folder under the task folder that the Dockerfile
	// copies to /ssebench; the config's paths name files in it.
	TaskFilesDir = "sse"
	// MaxFolderFile bounds the config and the Dockerfile of a task folder:
	// both are a few KiB, and a larger one is a mistake or an attack on
	// the parser.
	MaxFolderFile = 1 << 20
)

// Task is a valid task folder.
type Task struct {
	// ID is the task id: the folder's name, which the config's id equals.
	ID string
	// Dir is the task folder, as the caller named it.
	Dir string
	// ConfigFile is the path of the config that was read, under Dir.
	ConfigFile string
	// Config is the parsed config.
	Config *Config
	// Base is the base image, the Dockerfile's last FROM without the
	// registry prefix, such as "base-generic-go:1.0.0".
	Base string
}

// Load reads and checks the task folder dir. When anything is wrong it
// returns a [Problems] error listing every problem (see [Validate]).
func Load(dir string) (*Task, error) {
	t, ps := load(dir)
	if len(ps) > 0 {
		return nil, ps
	}
	return t, nil
}

// Validate returns every problem with the task folder dir, or nil when it
// is a valid task: the config (unknown keys, required fields, the id equal
// to the folder name, paths relative to /ssebench that exist under sse/) and
// the Dockerfile (ARG SSEBENCH_REGISTRY before the first FROM, a last FROM
// of ${SSEBENCH_REGISTRY}/<base> pinned by digest or by a tag other than
// latest, a COPY of sse/ to /ssebench).
func Validate(dir string) Problems {
	_, ps := load(dir)
	return ps
}

func load(dir string) (*Task, Problems) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, Problems{{File: dir, Msg: err.Error()}}
	}
	t := &Task{ID: filepath.Base(abs), Dir: dir}
	if fi, err := os.Stat(dir); err != nil {
		return nil, Problems{{File: dir, Msg: statMessage(err)}}
	} else if !fi.IsDir() {
		return nil, Problems{{File: dir, Msg: "is not a directory"}}
	}

	var ps Problems
	// The folder's files are read without leaving it: a config.yaml that
	// is a symlink to a host file must not be read (and echoed in a parse
	// error).
	t.ConfigFile = filepath.Join(dir, filepath.FromSlash(ConfigFile))
	data, err := safefile.Read(dir, ConfigFile, MaxFolderFile)
	if errors.Is(err, fs.ErrNotExist) {
		legacy := filepath.Join(dir, LegacyConfigFile)
		if d, lerr := safefile.Read(dir, LegacyConfigFile, MaxFolderFile); !errors.Is(lerr, fs.ErrNotExist) {
			t.ConfigFile, data, err = legacy, d, lerr
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ps = append(ps, Problem{File: t.ConfigFile, Msg: "missing"})
	case err != nil:
		ps = append(ps, Problem{File: t.ConfigFile, Msg: statMessage(err)})
	default:
		cfg, lines, cps := parseConfig(t.ConfigFile, data)
		ps = append(ps, cps...)
		if cfg != nil {
			t.Config = cfg
			if cfg.ID != "" && cfg.ID != t.ID {
				ps = append(ps, Problem{File: t.ConfigFile, Line: lines["id"], Msg: fmt.Sprintf("id: %q must equal the folder name %q", cfg.ID, t.ID)})
			}
			ps = append(ps, checkPathsExist(dir, t.ConfigFile, cfg, lines)...)
		}
	}

	dfName := filepath.Join(dir, DockerfileName)
	df, err := safefile.Read(dir, DockerfileName, MaxFolderFile)
	if err != nil {
		ps = append(ps, Problem{File: dfName, Msg: statMessage(err)})
	} else {
		base, dps := CheckDockerfile(dfName, bytes.NewReader(df))
		t.Base = base
		ps = append(ps, dps...)
	}
	// A task file that is a symlink out of the folder would be hashed
	// from the host and, copied into the case image, read there.
	ps = append(ps, outsideLinks(dir)...)
	return t, ps
}

// checkPathsExist checks that every path the config names is in the
// folder's sse/, which the Dockerfile copies to /ssebench.
func checkPathsExist(dir, name string, cfg *Config, lines map[string]int) Problems {
	var ps Problems
	for _, p := range cfg.Paths() {
		if checkImagePath(p.Path) != "" || lines[p.Key] < 0 {
			continue // already reported by the config check
		}
		rel := path.Join(TaskFilesDir, path.Clean(p.Path))
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			ps = append(ps, Problem{File: name, Line: lines[p.Key], Msg: fmt.Sprintf("%s: %s does not exist in the task folder", p.Key, rel)})
		case err != nil:
			ps = append(ps, Problem{File: name, Line: lines[p.Key], Msg: fmt.Sprintf("%s: %s", p.Key, statMessage(err))})
		case strings.HasPrefix(p.Key, "scripts.") && fi.IsDir():
			ps = append(ps, Problem{File: name, Line: lines[p.Key], Msg: fmt.Sprintf("%s: %s is a directory, not a script", p.Key, rel)})
		}
	}
	return ps
}

// statMessage phrases a file error without repeating the path, which the
// Problem already names.
func statMessage(err error) string {
	if errors.Is(err, safefile.ErrOutside) {
		return "is a symlink out of the task folder, so it is not read: make it a regular file of the folder"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "missing"
	}
	return err.Error()
}

// Files returns the SHA-256 of every file in the task folder; see [Files].
func (t *Task) Files() (map[string]string, error) { return Files(t.Dir) }

// FilesDigest returns the files digest of the task folder, the value of
// its case image's ssebench.task-files label; see [FilesDigest].
func (t *Task) FilesDigest() (string, error) { return FilesDigest(t.Dir) }

// Checks returns the checks the grader can run for the task; see
// [Config.Checks].
func (t *Task) Checks() []string { return t.Config.Checks() }

// Image returns the task's case image name in dataset, relative to the
// registry; see [CaseImage].
func (t *Task) Image(dataset string) string { return CaseImage(dataset, t.ID) }

// CaseImage returns the name of a task's case image relative to the
// registry: "case/<dataset>/<id>", lowercased, untagged.
func CaseImage(dataset, id string) string {
	return strings.ToLower("case/" + dataset + "/" + id)
}
