package task

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Files of a dataset folder, next to its task folders.
const (
	DatasetFile  = "dataset.yaml"
	ManifestFile = "manifest.json"
	LockFile     = "images.lock.json"
)

// Dataset is a valid dataset folder: datasets/<name>/ with a dataset.yaml
// and one folder per task.
type Dataset struct {
	// Dir is the dataset folder, as the caller named it.
	Dir string
	// Name is the folder's name, the <dataset> of case image names.
	Name string
	// Version is dataset.yaml's version, such as "pilot-v1".
	Version string
	// Tasks are the dataset's tasks, sorted by id.
	Tasks []*Task

	// recorded is the manifest.json found in Dir when the dataset was
	// loaded, or nil: a regenerated manifest keeps its arch entries.
	recorded *Manifest
}

type datasetInfo struct {
	Version string `yaml:"version"`
}

// ValidVersion reports whether v is a valid dataset version: lower-case
// letters and digits separated by '.', '_' or '-', such as "pilot-v1".
func ValidVersion(v string) bool { return versionPattern.MatchString(v) }

// ReadDatasetVersion reads the version from dir's dataset.yaml. Unknown
// keys are errors. The error is a [Problems] naming the file.
func ReadDatasetVersion(dir string) (string, error) {
	v, ps := readDatasetVersion(dir)
	return v, ps.Err()
}

func readDatasetVersion(dir string) (string, Problems) {
	name := filepath.Join(dir, DatasetFile)
	data, err := os.ReadFile(name)
	if err != nil {
		return "", Problems{{File: name, Msg: statMessage(err)}}
	}
	var info datasetInfo
	lines, ps, ok := decodeStrict(name, data, &info)
	if !ok {
		return "", ps
	}
	info.Version = strings.TrimSpace(info.Version)
	switch {
	case info.Version == "":
		ps = append(ps, Problem{File: name, Line: lines["version"], Msg: "version: is required"})
	case !ValidVersion(info.Version):
		ps = append(ps, Problem{File: name, Line: lines["version"], Msg: fmt.Sprintf("version: %q is not a valid version: use lower-case letters and digits separated by '.', '_' or '-'", info.Version)})
	}
	return info.Version, ps
}

// TaskDirs returns the task folders of the dataset folder dir, sorted:
// every subdirectory whose name does not start with a dot.
func TaskDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading dataset: %w", err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		// Stat, not the entry's type, so that a symlinked task folder counts.
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			out = append(out, p)
		}
	}
	return out, nil // os.ReadDir sorts by name
}

// LoadDataset reads and checks the dataset folder dir and every task in
// it. When anything is wrong it returns a [Problems] error listing every
// problem of every task, of dataset.yaml, of an unreadable manifest.json,
// and tasks whose ids differ only in case (they would share a case image).
func LoadDataset(dir string) (*Dataset, error) {
	d, broken, err := LoadDatasetTolerant(dir)
	if err != nil {
		return nil, err
	}
	if len(broken) > 0 {
		var ps Problems
		for _, id := range sortedKeys(broken) {
			ps = append(ps, broken[id]...)
		}
		return nil, ps
	}
	return d, nil
}

// LoadDatasetTolerant reads the dataset folder dir as LoadDataset does,
// but a task folder with problems does not fail the dataset: it is left
// out of Tasks and its problems are returned under its folder name, so
// that the other tasks can still be built and run. Problems of the dataset
// itself (dataset.yaml, an unreadable manifest.json, no task folders, two
// tasks that would share a case image) are still an error, a [Problems].
func LoadDatasetTolerant(dir string) (*Dataset, map[string]Problems, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("reading dataset: %w", err)
	}
	d := &Dataset{Dir: dir, Name: filepath.Base(abs)}
	if fi, err := os.Stat(dir); err != nil {
		return nil, nil, Problems{{File: dir, Msg: statMessage(err)}}
	} else if !fi.IsDir() {
		return nil, nil, Problems{{File: dir, Msg: "is not a directory"}}
	}

	var ps Problems
	if !ValidID(d.Name) {
		ps = append(ps, Problem{File: dir, Msg: fmt.Sprintf("the dataset name %q is not valid in an image name: use letters and digits, separated by '.', '_', '__' or dashes", d.Name)})
	}
	version, vps := readDatasetVersion(dir)
	d.Version = version
	ps = append(ps, vps...)

	mpath := filepath.Join(dir, ManifestFile)
	if m, err := readRecorded(mpath); err == nil {
		d.recorded = m
	} else if !errors.Is(err, fs.ErrNotExist) {
		// The manifest records each task's arch, which the folders do not
		// say: regenerating over a file that cannot be read would lose it.
		ps = append(ps, Problem{Msg: fmt.Sprintf("%v (it records the tasks' arch: fix it, or delete it to start again)", err)})
	}

	dirs, err := TaskDirs(dir)
	if err != nil {
		return nil, nil, err
	}
	if len(dirs) == 0 {
		ps = append(ps, Problem{File: dir, Msg: "has no task folders"})
	}
	broken := map[string]Problems{}
	seen := map[string]string{}
	for _, td := range dirs {
		t, tps := load(td)
		id := filepath.Base(td)
		if len(tps) == 0 {
			d.Tasks = append(d.Tasks, t)
		} else {
			broken[id] = tps
		}
		if other, ok := seen[strings.ToLower(id)]; ok {
			ps = append(ps, Problem{File: dir, Msg: fmt.Sprintf("tasks %s and %s would share the case image %s", other, id, CaseImage(d.Name, id))})
		} else {
			seen[strings.ToLower(id)] = id
		}
	}
	if len(ps) > 0 {
		// The dataset's own problems first, then every task's, as one
		// list: the user fixes them in one pass.
		for _, id := range sortedKeys(broken) {
			ps = append(ps, broken[id]...)
		}
		return nil, nil, ps
	}
	slices.SortFunc(d.Tasks, func(a, b *Task) int { return strings.Compare(a.ID, b.ID) })
	return d, broken, nil
}

// Task returns the task with the given id, or nil.
func (d *Dataset) Task(id string) *Task {
	for _, t := range d.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// FindDataset returns the folder of the only dataset under home/datasets
// that has a folder for task id, or "" when none or several do.
func FindDataset(home, id string) string {
	matches, _ := filepath.Glob(filepath.Join(home, "datasets", "*", id))
	var found []string
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.IsDir() {
			found = append(found, filepath.Dir(m))
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return ""
}
