package commands

import (
	"os"
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// taskBase returns the base a task pins (e.g. base-generic-go:1.0.0): from
// the dataset's manifest.json, else from the task's Dockerfile; "" when
// neither says.
func taskBase(home, dataset, id string) string {
	dir := filepath.Join(home, "datasets", dataset)
	if m, err := task.ReadManifest(filepath.Join(dir, task.ManifestFile)); err == nil {
		if t := m.Task(id); t != nil && t.Base != "" {
			return t.Base
		}
	}
	f, err := os.Open(filepath.Join(dir, id, task.DockerfileName))
	if err != nil {
		return ""
	}
	defer f.Close()
	base, err := task.Base(f)
	if err != nil {
		return ""
	}
	return base
}
