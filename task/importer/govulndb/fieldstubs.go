package govulndb

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/printer"
	"go/token"
	"maps"
	"slices"
	"sort"
	"strconv"
)

// A fix often adds a field to a struct the vulnerable tree has (echo's
// Config.SchemeExtractor, fiber's Config.*), and its tests set it. No new
// file can declare a field: fieldStubs adds it to the struct where the
// vulnerable tree declares it. The field is inert there (nothing of the
// vulnerable code reads it), so a test that sets it compiles and fails
// for the bug, not for the name.

// stubbableField says why the new field d cannot be added to its struct
// on the vulnerable tree ("" when it can).
func stubbableField(d *decl) string {
	old := d.pkg.buggyByKey[d.recv]
	if old == nil || old.kind != kindType {
		return fmt.Sprintf("a new field of %s, which the vulnerable tree does not declare as a type", d.recv)
	}
	ts := old.node.(*ast.TypeSpec)
	if _, ok := ts.Type.(*ast.StructType); !ok || ts.Assign.IsValid() {
		return fmt.Sprintf("a new field of %s, which the vulnerable tree declares as another kind of type", d.recv)
	}
	if !sameTypeParams(ts, d.gen, d.recv) {
		return fmt.Sprintf("a new field of %s, whose type parameters the fix changed", d.recv)
	}
	return ""
}

// sameTypeParams says whether the vulnerable declaration ts of recv has
// the names of type parameters the fixed one (in gen) has: the field's
// type may use them.
func sameTypeParams(ts *ast.TypeSpec, gen *ast.GenDecl, recv string) bool {
	names := func(t *ast.TypeSpec) []string {
		var out []string
		if t.TypeParams != nil {
			for _, f := range t.TypeParams.List {
				for _, n := range f.Names {
					out = append(out, n.Name)
				}
			}
		}
		return out
	}
	for _, s := range gen.Specs {
		if fixed, ok := s.(*ast.TypeSpec); ok && fixed.Name.Name == recv {
			return slices.Equal(names(ts), names(fixed))
		}
	}
	return false
}

// fieldEdit is one field to add to a struct of the vulnerable tree.
type fieldEdit struct {
	d    *decl
	line string
	at   int // the offset of the struct's closing brace in the file
}

// fieldStubs adds the new fields ds to the structs of p's vulnerable
// tree that lack them: the files it changes, whole, and the fields it
// could not add, with why.
func (a *analysis) fieldStubs(p *pkgState, ds []*decl) ([]stubFile, []apiName) {
	var unstub []apiName
	refuse := func(d *decl, why string) {
		n := d.apiName(a.fset)
		n.Note = why
		unstub = append(unstub, n)
	}
	byFile := map[*srcFile][]fieldEdit{}
	imports := map[*srcFile]map[string]string{}
	done := map[string]bool{} // fields already added, by the fixed field's position and name
	for _, d := range ds {
		if why := stubbableField(d); why != "" {
			refuse(d, why)
			continue
		}
		fld := d.node.(*ast.Field)
		key := fmt.Sprint(fld.Pos(), d.name)
		if done[key] {
			continue
		}
		old := p.buggyByKey[d.recv]
		need, why := importsFor(d.file, fld.Type, p.info)
		if why == "" {
			why = importConflict(old.file, need, imports[old.file])
		}
		if why != "" {
			refuse(d, why)
			continue
		}
		done[key] = true
		if imports[old.file] == nil {
			imports[old.file] = map[string]string{}
		}
		for name, spec := range need {
			if !hasImport(old.file, name, spec) {
				imports[old.file][name] = spec
			}
		}
		st := old.node.(*ast.TypeSpec).Type.(*ast.StructType)
		byFile[old.file] = append(byFile[old.file], fieldEdit{d: d, line: fieldLine(a.fset, d, fld), at: tokenOffset(old.file.f, st.Fields.Closing)})
	}
	var out []stubFile
	files := make([]*srcFile, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	for _, f := range files {
		src, err := editFile(f, byFile[f], imports[f])
		if err != nil {
			for _, e := range byFile[f] {
				refuse(e.d, "the struct with the field does not format: "+oneLine(err.Error()))
			}
			continue
		}
		out = append(out, stubFile{Dir: p.pf.Dir, Name: f.name, Src: src})
	}
	return out, unstub
}

// fieldLine is the declaration of d's field as the struct gets it: its
// name (the other names of its line stay out), its type and its tag.
func fieldLine(fset *token.FileSet, d *decl, fld *ast.Field) string {
	var b bytes.Buffer
	defer hideComments(fld.Type)()
	if err := printer.Fprint(&b, fset, fld.Type); err != nil {
		return d.key
	}
	line := b.String()
	if len(fld.Names) > 0 {
		line = d.name + " " + line
	}
	if fld.Tag != nil {
		line += " " + fld.Tag.Value
	}
	return line
}

// importConflict says why f cannot import need (by local name): a name it
// or an earlier field's import already gives another package.
func importConflict(f *srcFile, need, added map[string]string) string {
	for name, spec := range need {
		if s, ok := added[name]; ok && s != spec {
			return fmt.Sprintf("%s would import %s as %s, another field's %s", f.name, spec, name, s)
		}
		if hasImport(f, name, spec) {
			continue
		}
		for _, im := range f.f.Imports {
			if localName(im) == name {
				return fmt.Sprintf("%s imports another package as %s", f.name, name)
			}
		}
	}
	return ""
}

// hasImport says whether f imports spec ("name \"path\"" or "\"path\"")
// as name.
func hasImport(f *srcFile, name, spec string) bool {
	for _, im := range f.f.Imports {
		if localName(im) == name && (im.Path.Value == spec || name+" "+im.Path.Value == spec) {
			return true
		}
	}
	return false
}

// localName is the name an import gives its package in the file.
func localName(im *ast.ImportSpec) string {
	if im.Name != nil {
		return im.Name.Name
	}
	ip, _ := strconv.Unquote(im.Path.Value)
	return guessName(ip)
}

// editFile is f with the fields added before their structs' closing
// braces and an import declaration of what they need after the package
// clause, formatted.
func editFile(f *srcFile, edits []fieldEdit, imports map[string]string) ([]byte, error) {
	at := map[int]string{} // what goes in at each offset, in order
	for _, e := range edits {
		at[e.at] += "\n// " + e.d.name + " is the fix's: declared for the tests, read by nothing here.\n" + e.line + "\n"
	}
	if len(imports) > 0 {
		var b bytes.Buffer
		if len(imports) == 1 {
			for _, spec := range imports {
				b.WriteString("\n\nimport " + spec + "\n")
			}
		} else {
			b.WriteString("\n\nimport (\n")
			for _, name := range sortedNames(imports) {
				b.WriteString("\t" + imports[name] + "\n")
			}
			b.WriteString(")\n")
		}
		at[tokenOffset(f.f, f.f.Name.End())] += b.String()
	}
	offsets := slices.Sorted(maps.Keys(at))
	src := slices.Clone(f.src)
	for _, off := range slices.Backward(offsets) {
		src = slices.Insert(src, off, []byte(at[off])...)
	}
	return format.Source(src)
}
