package task

import (
	"fmt"
	"path/filepath"
)

// SourceOf reads SOURCE_DIR (the config's source) of task id of home:
// the task folder of the one dataset of the home that has it.
func SourceOf(home, id string) (string, error) {
	dir := FindDataset(home, id)
	if dir == "" {
		return "", fmt.Errorf("--source is required: task %q has no folder under %s to read its config from", id, filepath.Join(home, "datasets"))
	}
	t, err := Load(filepath.Join(dir, id))
	if err != nil {
		return "", fmt.Errorf("reading task %s: %w", id, err)
	}
	return t.Config.Source, nil
}
