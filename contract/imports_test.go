package contract

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStandardLibraryOnly: the package is the leaf the host and the
// runtime share; an import of this module (the runtime, the pipeline) or
// of a third-party module would pull it into every program that names
// the contract, the two static binaries of a tool image included. The one
// exception is internal/safefile, itself a leaf on the standard library:
// result.json is written through the module's one atomic write.
func TestStandardLibraryOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "github.com/42-b3yond-6ug/ssebench/internal/safefile" {
				continue
			}
			// A standard library path has no dot in its first element.
			if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s: package contract may import the standard library only", name, p)
			}
		}
	}
}
