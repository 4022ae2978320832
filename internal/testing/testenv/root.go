package testenv

import (
	"os"
	"path/filepath"
	"sync"
)

// ModuleRoot returns the absolute path of the ssebench checkout a test runs
// in (the directory of the nearest go.mod above the test's working
// directory): datasets/, agents/, VERSION and the tools modules are found
// from there, whatever the depth of the package under test. It returns ""
// when there is none: a test binary that re-executes itself as a command
// in another directory (as the CLI's tests do) computes it at init too,
// and never uses it.
func ModuleRoot() string {
	moduleRootOnce.Do(func() {
		d, err := os.Getwd()
		if err != nil {
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				moduleRoot = d
				return
			}
			parent := filepath.Dir(d)
			if parent == d {
				return
			}
			d = parent
		}
	})
	return moduleRoot
}

var (
	moduleRootOnce sync.Once
	moduleRoot     string
)
