package pipeline

import (
	"context"
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// TaskIDs lists the tasks of the catalog loc, else of the dataset folder
// local (default: datasets/examples under the home). The folder read is
// returned too: local or its default, "" for a catalog.
func (e *Env) TaskIDs(ctx context.Context, local, loc string) (ids []string, dataset string, err error) {
	if loc != "" {
		c, err := e.Catalog(ctx, loc)
		if err != nil {
			return nil, "", err
		}
		for _, t := range c.Manifest.Tasks {
			ids = append(ids, t.ID)
		}
		return ids, "", nil
	}
	if local == "" {
		local = filepath.Join(e.Home, "datasets", "examples")
	}
	dirs, err := task.TaskDirs(local)
	if err != nil {
		return nil, "", err
	}
	for _, d := range dirs {
		ids = append(ids, filepath.Base(d))
	}
	return ids, local, nil
}
