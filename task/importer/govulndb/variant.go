package govulndb

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/token"
	"go/types"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// renameVariant returns a package's fixed-tree non-test files as another
// author could have written the fix: each of the private names renamed
// (keys as in apiName: "redactURL", or "Config.parseRules" for a method),
// and the funcs and methods among them moved within their files. A hidden
// test that calls a private name by the fix's name no longer compiles on
// the variant: that is a check that holds a task's tests to the fix's
// behaviour, not its names. salt varies the new names; each is new to the
// package's files. Files of another package in the directory (a generator
// behind a build tag) are returned unchanged, and so are _test.go files,
// whose names are only kept from the new names.
//
// It resolves every occurrence with go/types without the package's
// imports, and refuses, with an error naming the identifier, whatever it
// cannot rename with certainty: an occurrence it cannot resolve (a
// selector on an imported type), a method whose name another type's field
// or method has (an interface could need it), an exported name, or a
// rename that adds type errors.
func renameVariant(files map[string][]byte, private []string, salt string) (map[string][]byte, error) {
	fset := token.NewFileSet()
	all, err := parseFiles(fset, files)
	if err != nil {
		return nil, err
	}
	_, pkg := mainPackage(nonTest(all))
	info := newInfo()
	tpkg, before := typecheck(fset, "variant", astFiles(pkg), fakeImporter{}, info)
	if tpkg == nil {
		return nil, fmt.Errorf("renaming: the package does not type-check at all")
	}

	byKey := map[string][]*decl{}
	for _, d := range collectDecls(pkg) {
		byKey[d.key] = append(byKey[d.key], d)
	}
	taken := map[string]bool{}
	for _, f := range all {
		ast.Inspect(f.f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				taken[id.Name] = true
			}
			return true
		})
		for _, im := range f.f.Imports {
			if ip, err := strconv.Unquote(im.Path.Value); err == nil {
				taken[guessName(ip)] = true
			}
		}
	}

	edits := map[*srcFile][]edit{}
	renamed := map[types.Object]string{} // the objects renamed, to their new names
	declNames := map[*ast.Ident]string{} // the renamed declarations, to their new names
	oldNames := map[string]bool{}
	var moved []*decl
	for _, key := range dedupe(private) {
		ds := byKey[key]
		if len(ds) == 0 {
			return nil, fmt.Errorf("renaming %s: the package does not declare it", key)
		}
		d := ds[0]
		switch {
		case d.kind == kindField || d.kind == kindIfaceFunc:
			return nil, fmt.Errorf("renaming %s: a %s is not a package-level name", key, d.kind)
		case token.IsExported(d.name):
			return nil, fmt.Errorf("renaming %s: it is exported, and other packages may use it", key)
		case d.name == "init" || d.name == "main":
			return nil, fmt.Errorf("renaming %s: the name is special", key)
		}
		targets, err := targetObjects(ds, info)
		if err != nil {
			return nil, err
		}
		name := freshName(d.name, salt, taken)
		for obj := range targets {
			renamed[obj] = name
		}
		oldNames[d.name] = true
		for _, d := range ds {
			edits[d.file] = append(edits[d.file], docEdits(d, name)...)
			declNames[d.ident] = name
		}
		if d.kind == kindFunc || d.kind == kindMethod {
			moved = append(moved, ds...)
		}
	}

	for _, f := range pkg {
		es, err := renameIn(f, fset, info, tpkg, oldNames, renamed, declNames)
		if err != nil {
			return nil, err
		}
		edits[f] = append(edits[f], es...)
	}

	out := map[string][]byte{}
	for name, src := range files {
		out[name] = src
	}
	movedIn := map[string][]string{} // file -> keys of the funcs it moves, after renaming
	for _, d := range moved {
		key := declNames[d.ident]
		if d.recv != "" {
			recv := d.recv
			if obj := info.Uses[baseIdent(d.node.(*ast.FuncDecl).Recv.List[0].Type)]; obj != nil {
				if n, ok := renamed[obj]; ok {
					recv = n
				}
			}
			key = recv + "." + key
		}
		movedIn[d.file.name] = append(movedIn[d.file.name], key)
	}
	for _, f := range pkg {
		src := applyEdits(f.src, edits[f])
		if keys := movedIn[f.name]; len(keys) > 0 {
			if src, err = moveFuncs(f.name, src, keys); err != nil {
				return nil, err
			}
		}
		if bytes.Equal(src, f.src) {
			continue
		}
		formatted, err := format.Source(src)
		if err != nil {
			return nil, fmt.Errorf("formatting %s after renaming: %w", f.name, err)
		}
		out[f.name] = formatted
	}
	if err := sameErrors(out, before); err != nil {
		return nil, err
	}
	return out, nil
}

// renameIn are the edits that rename, in file f, the occurrences of the
// old names that denote renamed objects, and the declarations declNames.
// Where go/types recorded nothing (an operand of unknown type), a plain
// identifier is looked up in its scope; a selector or a composite
// literal's key, which could be a field, is refused.
func renameIn(f *srcFile, fset *token.FileSet, info *types.Info, tpkg *types.Package, oldNames map[string]bool, renamed map[types.Object]string, declNames map[*ast.Ident]string) ([]edit, error) {
	member := memberIdents(f.f)
	var out []edit
	var err error
	ast.Inspect(f.f, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || !oldNames[id.Name] || id == f.f.Name || err != nil {
			return err == nil
		}
		name, ok := declNames[id]
		if !ok {
			obj := resolve(id, info, tpkg, member)
			if obj == nil {
				err = fmt.Errorf("renaming %s: cannot tell what %s at %s refers to", id.Name, id.Name, fset.Position(id.Pos()))
				return false
			}
			name, ok = renamed[origin(obj)]
		}
		if ok {
			out = append(out, edit{tokenOffset(f.f, id.Pos()), len(id.Name), name})
		}
		return true
	})
	return out, err
}

// targetObjects are the objects a rename of ds changes: the declarations
// (one for each build tag's file) and, for a type, the fields that embed
// it, which take its name.
func targetObjects(ds []*decl, info *types.Info) (map[types.Object]bool, error) {
	d := ds[0]
	targets := map[types.Object]bool{}
	for _, d := range ds {
		// A declaration again behind another build tag has no object
		// (it is an error to go/types): its name is renamed as such.
		if obj := info.Defs[d.ident]; obj != nil {
			targets[obj] = true
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("renaming %s: cannot resolve its declaration", d.key)
	}
	for id, obj := range info.Defs {
		if obj == nil || targets[obj] || id.Name != d.name {
			continue
		}
		switch obj := obj.(type) {
		case *types.Var:
			if !obj.IsField() {
				continue
			}
			if d.kind == kindType && obj.Embedded() && targets[namedObj(obj.Type())] {
				targets[obj] = true
				continue
			}
		case *types.Func:
			if obj.Signature().Recv() == nil {
				continue
			}
		default:
			continue
		}
		if d.kind == kindMethod {
			// Methods satisfy interfaces by name: renaming one
			// could break that, and cannot be told without types.
			return nil, fmt.Errorf("renaming %s: %s is also the name of a field or method of another type", d.key, d.name)
		}
	}
	return targets, nil
}

// docEdits rename d in its doc comment, where the comment names it as a
// word.
func docEdits(d *decl, name string) []edit {
	var doc *ast.CommentGroup
	switch n := d.node.(type) {
	case *ast.FuncDecl:
		doc = n.Doc
	case *ast.TypeSpec:
		doc = n.Doc
	case *ast.ValueSpec:
		doc = n.Doc
	}
	if doc == nil && d.gen != nil && len(d.gen.Specs) == 1 {
		doc = d.gen.Doc
	}
	if doc == nil {
		return nil
	}
	word := regexp.MustCompile(`\b` + regexp.QuoteMeta(d.name) + `\b`)
	var out []edit
	for _, c := range doc.List {
		start := tokenOffset(d.file.f, c.Pos())
		for _, m := range word.FindAllStringIndex(c.Text, -1) {
			out = append(out, edit{start + m[0], m[1] - m[0], name})
		}
	}
	return out
}

// namedObj is the type name of t or *t, if it has one.
func namedObj(t types.Type) types.Object {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	switch t := t.(type) {
	case *types.Named:
		return t.Origin().Obj()
	case *types.Alias:
		return t.Obj()
	}
	return nil
}

// origin is the generic declaration of an instantiated method or field.
func origin(obj types.Object) types.Object {
	switch o := obj.(type) {
	case *types.Func:
		return o.Origin()
	case *types.Var:
		return o.Origin()
	}
	return obj
}

// freshName is name with a suffix, unused in taken, which it joins.
func freshName(name, salt string, taken map[string]bool) string {
	suffix := "Alt" + strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return -1
	}, salt)
	cand := name + suffix
	for i := 2; taken[cand]; i++ {
		cand = fmt.Sprintf("%s%s%d", name, suffix, i)
	}
	taken[cand] = true
	return cand
}

func nonTest(fs []*srcFile) []*srcFile {
	var out []*srcFile
	for _, f := range fs {
		if !strings.HasSuffix(f.name, "_test.go") {
			out = append(out, f)
		}
	}
	return out
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// edit replaces n bytes at off.
type edit struct {
	off, n int
	text   string
}

func applyEdits(src []byte, es []edit) []byte {
	sort.Slice(es, func(i, j int) bool { return es[i].off < es[j].off })
	var b bytes.Buffer
	last := 0
	for _, e := range es {
		b.Write(src[last:e.off])
		b.WriteString(e.text)
		last = e.off + e.n
	}
	b.Write(src[last:])
	return b.Bytes()
}

// moveFuncs moves the funcs and methods keys name (as collectDecls keys
// them) within a file, doc comments and all: to its end in reverse order,
// or, when they already end the file, before its first declaration that
// is not an import.
func moveFuncs(name string, src []byte, keys []string) ([]byte, error) {
	fset := token.NewFileSet()
	sf, err := parseFiles(fset, map[string][]byte{name: src})
	if err != nil {
		return nil, fmt.Errorf("after renaming: %w", err)
	}
	f := sf[0]
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	isMoved := map[ast.Decl]bool{}
	for _, d := range collectDecls(sf) {
		if fd, ok := d.node.(*ast.FuncDecl); ok && want[d.key] {
			isMoved[fd] = true
		}
	}
	type span struct{ start, end int }
	var cuts []span
	tail, first := true, -1 // whether the moved ones end the file; where the first other non-import decl starts
	for _, d := range f.f.Decls {
		start := lineStart(src, tokenOffset(f.f, declStart(d)))
		if !isMoved[d] {
			if len(cuts) > 0 {
				tail = false
			}
			if g, ok := d.(*ast.GenDecl); (!ok || g.Tok != token.IMPORT) && first < 0 {
				first = start
			}
			continue
		}
		end := tokenOffset(f.f, d.End())
		if i := bytes.IndexByte(src[end:], '\n'); i >= 0 {
			end += i + 1
		} else {
			end = len(src)
		}
		cuts = append(cuts, span{start, end})
	}
	if len(cuts) == 0 || tail && first < 0 && len(cuts) == 1 {
		return src, nil
	}
	var rest bytes.Buffer
	var texts [][]byte
	last := 0
	for _, c := range cuts {
		rest.Write(src[last:c.start])
		texts = append(texts, src[c.start:c.end])
		last = c.end
	}
	rest.Write(src[last:])
	if tail && first >= 0 {
		var b bytes.Buffer
		b.Write(src[:first])
		for _, t := range texts {
			b.Write(t)
			b.WriteString("\n")
		}
		b.Write(rest.Bytes()[first:])
		return b.Bytes(), nil
	}
	b := bytes.TrimRight(rest.Bytes(), "\n")
	for i := len(texts) - 1; i >= 0; i-- {
		b = append(b, "\n\n"...)
		b = append(b, texts[i]...)
	}
	return b, nil
}

func declStart(d ast.Decl) token.Pos {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Doc != nil {
			return d.Doc.Pos()
		}
	case *ast.GenDecl:
		if d.Doc != nil {
			return d.Doc.Pos()
		}
	}
	return d.Pos()
}

func lineStart(src []byte, off int) int {
	return bytes.LastIndexByte(src[:off], '\n') + 1
}

// sameErrors checks that the renamed files type-check with no more errors
// than the originals (which, without their imports, have some).
func sameErrors(files map[string][]byte, before []error) error {
	fset := token.NewFileSet()
	all, err := parseFiles(fset, files)
	if err != nil {
		return fmt.Errorf("after renaming: %w", err)
	}
	_, pkg := mainPackage(nonTest(all))
	_, after := typecheck(fset, "variant", astFiles(pkg), fakeImporter{}, newInfo())
	if len(after) > len(before) {
		return fmt.Errorf("renaming would break the package: %d type errors, %d before: %v", len(after), len(before), after[len(after)-1])
	}
	return nil
}
