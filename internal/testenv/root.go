package testenv

import (
	"os"
	"path/filepath"
	"sync"
)

// ModuleRoot returns the absolute path of the ssebench checkout a test runs
// in (the directory of the nearest go.mod above the test's working
// directory): datasets/, agents/, VERSION and the tools modules are found
// from there, whatever the depth of the package under test. It panics when
// there is none, which only a test run outside the module can cause.
func ModuleRoot() string {
	moduleRootOnce.Do(func() {
		d, err := os.Getwd()
		if err != nil {
			panic("testenv.ModuleRoot: " + err.Error())
		}
		for {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				moduleRoot = d
				return
			}
			parent := filepath.Dir(d)
			if parent == d {
				panic("testenv.ModuleRoot: no go.mod above the working directory")
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
