package commands

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestJSONKeysSnakeCase: every key of every --json output is snake_case,
// as result.json and summary.json are: a script reading push's or load's
// output must not guess the casing of each command.
func TestJSONKeysSnakeCase(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	// The outputs whose shapes live beside the library types they mirror.
	names = append(names, "../../../registry/remote/summary.go", "../../../registry/archive/file.go",
		"../../../pipeline/builtjson.go", "../../../release/toolsjson.go", "../../../oci/describe.go",
		"../../../oci/store/report.go", "../../../evaluate/predictions/outcome.go",
		"../../../assemble/failure_json.go", "../../../task/catalog/list.go",
		"../../../task/problems_json.go", "../../../images/casebuild/outcome_json.go")
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	n := 0
	for _, file := range files {
		ast.Inspect(file, func(node ast.Node) bool {
			f, ok := node.(*ast.Field)
			if !ok || f.Tag == nil {
				return true
			}
			tag, err := strconv.Unquote(f.Tag.Value)
			if err != nil {
				return true
			}
			key, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			if key == "" || key == "-" {
				return true
			}
			n++
			if !snake.MatchString(key) {
				t.Errorf("%s: JSON key %q is not snake_case", fset.Position(f.Pos()), key)
			}
			return true
		})
	}
	if n == 0 {
		t.Fatal("no JSON keys found: the test reads the wrong files")
	}
}
