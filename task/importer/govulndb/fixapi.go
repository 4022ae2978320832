package govulndb

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"go/types"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A fix's hidden tests often name what only the fix adds (a private
// helper, a new method, an option): on the vulnerable tree their package
// does not compile, and a correct fix that names its helper differently
// fails them. analyzeFix finds those names, so that the task can state
// them in its issue text, or declare them on the vulnerable tree as stubs.

// pkgFiles is one affected package directory at both versions: its
// files by base name.
type pkgFiles struct {
	Path  string            // the package's import path
	Dir   string            // its directory in the module, "." for the root
	Buggy map[string][]byte // the vulnerable version's non-test .go files
	Fixed map[string][]byte // the fixed version's non-test .go files
	Tests map[string][]byte // the fixed version's _test.go files: the hidden tests
	// BuggyTests are the vulnerable version's _test.go files, which tell
	// the tests the fix adds from those it changes (dropBeside).
	BuggyTests map[string][]byte
}

// fixAPI is what the hidden tests depend on that the fixed tree declares
// and the vulnerable one does not, or not so.
type fixAPI struct {
	// Needed are the names the hidden tests use, with what their
	// declarations use in turn, in package and source order.
	Needed []apiName
	// Unstubbable are the Needed names no stub can declare, such as a
	// new method of an interface the vulnerable tree has: the caller
	// drops the task.
	Unstubbable []apiName
	// Stubs declare the other Needed names on the vulnerable tree: a new
	// file for each package that has some, and the vulnerable files whose
	// structs get the new fields the tests set.
	Stubs []stubFile
	// Messages are the string literals of the hidden tests that only the
	// fixed tree's code produces, sorted.
	Messages []string
	// Changed are the funcs, methods, fields and interface methods the
	// hidden tests use that both trees declare, but differently, in
	// package and source order; Note says how the vulnerable tree
	// declares it. No stub can make up for them.
	Changed []apiName
	// TestErrors are the type errors the hidden tests have on the
	// vulnerable tree with the Stubs and not on the fixed tree: what
	// Unstubbable and Changed names cause, and what else is missing (a
	// method that makes a new type an interface's), as far as go/types
	// tells without the imports. "dir/file_test.go:line:col: message",
	// sorted.
	TestErrors []string
	// OldTestErrors are the type errors the package's own tests (the
	// vulnerable tree's, which the function test runs) have on the fixed
	// tree and not on the vulnerable one: a fix that removes or changes a
	// name they use fails the function test with its own patch. Sorted,
	// as TestErrors.
	OldTestErrors []string
	// Private are the unexported funcs, methods, types, vars and consts
	// that the fix adds and the tests do not use: a fix may name them
	// differently (see renameVariant).
	Private []apiName
}

// apiName is one package-level declaration of the fixed tree.
type apiName struct {
	Path string // the package's import path
	Dir  string // its directory in the module
	// Key names it in its package: "redactURL", or "Claims.IsClaimRevoked"
	// for a method, struct field or interface method.
	Key  string
	Kind string // func, method, type, var, const, field or interface method
	// Decl is its declaration as the fixed tree has it, on one line,
	// without a body or comments: "func (c *Claims) IsClaimRevoked(now
	// time.Time) bool"; for a field or an interface method, its line in
	// the type: "MaxSize int64".
	Decl string
	// Note says why a name is in the list when the tests do not use it
	// themselves ("used by ..."), or why it is Unstubbable.
	Note string
}

// Receiver is the type of a method, field or interface method.
func (n apiName) Receiver() string {
	if r, _, ok := strings.Cut(n.Key, "."); ok {
		return r
	}
	return ""
}

// stubFile is a file of the vulnerable tree's package directory Dir as
// the stubs make it: a new one, or one whose structs gain fields.
type stubFile struct {
	Dir, Name string
	Src       []byte
}

const (
	kindFunc      = "func"
	kindMethod    = "method"
	kindType      = "type"
	kindVar       = "var"
	kindConst     = "const"
	kindField     = "field"
	kindIfaceFunc = "interface method"
)

// decl is a declaration of a parsed package.
type decl struct {
	key, kind, name, recv string
	ident                 *ast.Ident // the declared name
	node                  ast.Node   // *ast.FuncDecl, *ast.TypeSpec, *ast.ValueSpec or *ast.Field
	gen                   *ast.GenDecl
	file                  *srcFile
	pkg                   *pkgState
}

type srcFile struct {
	name string
	src  []byte
	f    *ast.File
}

// pkgState is one package under analysis.
type pkgState struct {
	pf                    pkgFiles
	name                  string // the fixed tree's package name
	buggyName             string
	fixed, inTests, xTest []*srcFile
	decls                 []*decl // the fixed tree's, in file and source order
	byKey                 map[string]*decl
	buggyByKey            map[string]*decl // the vulnerable tree's first declaration of each key
	buggyLits, fixedLits  []string
	tpkg, xpkg            *types.Package
	info, xinfo           *types.Info
	checking              bool
	errs                  []string // the fixed tree's type errors in its tests, in and out of the package
}

// isNew says whether the fixed tree declares key and the vulnerable tree
// does not.
func (p *pkgState) isNew(key string) bool { return p.byKey[key] != nil && p.buggyByKey[key] == nil }

// analysis type-checks the fixed packages and their tests together, with
// an importer that knows only the affected packages: other imports are
// empty packages, and what they would have resolved stays unknown.
type analysis struct {
	fset   *token.FileSet
	pkgs   []*pkgState
	byPath map[string]*pkgState
	byPos  map[token.Pos]*decl
	fakes  map[string]*types.Package
}

// analyzeFix finds what the hidden tests of pkgs need that only the fixed
// tree declares. It resolves names with go/types on the fixed tree and its
// tests, without their imports: where a selector's operand has an
// imported type, it counts every new field or method of that name. It
// fails only on files that do not parse.
func analyzeFix(pkgs []pkgFiles) (*fixAPI, error) {
	a, err := newAnalysis(pkgs)
	if err != nil {
		return nil, err
	}
	needed, olds := a.used()
	r := &fixAPI{}
	stubbed := a.closure(needed)
	for _, p := range a.pkgs {
		var mine []*decl
		for _, d := range p.decls {
			if p.byKey[d.key] != d {
				continue // declared again behind another build tag
			}
			if olds[d] {
				if n, ok := a.changed(d); ok {
					r.Changed = append(r.Changed, n)
				}
			}
			if note, ok := needed[d]; ok {
				n := d.apiName(a.fset)
				n.Note = note
				r.Needed = append(r.Needed, n)
				if why, ok := stubbed[d]; ok && why != "" {
					n.Note = why
					r.Unstubbable = append(r.Unstubbable, n)
				} else if ok {
					mine = append(mine, d)
				}
			} else if d.kind != kindField && d.kind != kindIfaceFunc && !token.IsExported(d.name) && p.isNew(d.key) && d.name != "init" {
				r.Private = append(r.Private, d.apiName(a.fset))
			}
		}
		if len(mine) > 0 {
			s, unstub, err := a.stubFiles(p, mine)
			if err != nil {
				return nil, err
			}
			r.Unstubbable = append(r.Unstubbable, unstub...)
			r.Stubs = append(r.Stubs, s...)
		}
	}
	r.Messages = a.messages()
	r.TestErrors = a.stubbedTestErrors(r.Stubs)
	r.OldTestErrors = a.oldTestErrors()
	return r, nil
}

// newAnalysis parses pkgs and type-checks the fixed trees with their
// tests.
func newAnalysis(pkgs []pkgFiles) (*analysis, error) {
	a := &analysis{fset: token.NewFileSet(), byPath: map[string]*pkgState{}, byPos: map[token.Pos]*decl{}, fakes: map[string]*types.Package{}}
	for _, pf := range pkgs {
		p, err := a.load(pf)
		if err != nil {
			return nil, err
		}
		a.pkgs = append(a.pkgs, p)
		a.byPath[pf.Path] = p
	}
	for _, p := range a.pkgs {
		a.check(p)
		if len(p.xTest) > 0 {
			p.xinfo = newInfo()
			var errs []error
			p.xpkg, errs = typecheck(a.fset, p.pf.Path+"_test", astFiles(p.xTest), a, p.xinfo)
			p.errs = append(p.errs, testErrors(errs)...)
		}
	}
	return a, nil
}

// load parses a package's files and lists its declarations.
func (a *analysis) load(pf pkgFiles) (*pkgState, error) {
	p := &pkgState{pf: pf, byKey: map[string]*decl{}, buggyByKey: map[string]*decl{}}
	buggy, err := parseFiles(a.fset, pf.Buggy)
	if err != nil {
		return nil, err
	}
	if p.fixed, err = parseFiles(a.fset, pf.Fixed); err != nil {
		return nil, err
	}
	tests, err := parseFiles(a.fset, pf.Tests)
	if err != nil {
		return nil, err
	}
	p.buggyName, buggy = mainPackage(buggy)
	p.name, p.fixed = mainPackage(p.fixed)
	if p.name == "" {
		return nil, fmt.Errorf("package %s has no Go files at the fixed version", pf.Path)
	}
	if p.buggyName == "" {
		p.buggyName = p.name // a package the fix adds
	}
	for _, f := range tests {
		switch f.f.Name.Name {
		case p.name:
			p.inTests = append(p.inTests, f)
		case p.name + "_test":
			p.xTest = append(p.xTest, f)
		}
	}
	for _, d := range collectDecls(buggy) {
		if p.buggyByKey[d.key] == nil {
			p.buggyByKey[d.key] = d
		}
	}
	for _, d := range collectDecls(p.fixed) {
		if p.byKey[d.key] == nil {
			p.byKey[d.key] = d
		}
		d.pkg = p
		p.decls = append(p.decls, d)
		a.byPos[d.ident.Pos()] = d
	}
	p.buggyLits = stringLits(buggy)
	p.fixedLits = stringLits(p.fixed)
	return p, nil
}

func parseFiles(fset *token.FileSet, m map[string][]byte) ([]*srcFile, error) {
	var out []*srcFile
	for _, name := range sortedNames(m) {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, m[name], parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", name, err)
		}
		out = append(out, &srcFile{name: name, src: m[name], f: f})
	}
	return out, nil
}

// mainPackage is the package name most files have, and those files: a
// directory may hold a generator in package main behind a build tag.
func mainPackage(fs []*srcFile) (string, []*srcFile) {
	count := map[string]int{}
	best := ""
	for _, f := range fs {
		n := f.f.Name.Name
		count[n]++
		if count[n] > count[best] || count[n] == count[best] && n < best {
			best = n
		}
	}
	var out []*srcFile
	for _, f := range fs {
		if f.f.Name.Name == best {
			out = append(out, f)
		}
	}
	return best, out
}

func astFiles(fs []*srcFile) []*ast.File {
	out := make([]*ast.File, len(fs))
	for i, f := range fs {
		out[i] = f.f
	}
	return out
}

// collectDecls lists the package-level declarations of files, with the
// fields and interface methods of their types, in source order.
func collectDecls(fs []*srcFile) []*decl {
	var out []*decl
	for _, f := range fs {
		for _, d := range f.f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					if d.Name.Name != "_" {
						out = append(out, &decl{key: d.Name.Name, kind: kindFunc, name: d.Name.Name, ident: d.Name, node: d, file: f})
					}
				} else if len(d.Recv.List) == 1 {
					if r := baseIdent(d.Recv.List[0].Type); r != nil {
						out = append(out, &decl{key: r.Name + "." + d.Name.Name, kind: kindMethod, name: d.Name.Name, recv: r.Name, ident: d.Name, node: d, file: f})
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						out = append(out, &decl{key: s.Name.Name, kind: kindType, name: s.Name.Name, ident: s.Name, node: s, gen: d, file: f})
						out = append(out, members(s, d, f)...)
					case *ast.ValueSpec:
						kind := kindVar
						if d.Tok == token.CONST {
							kind = kindConst
						}
						for _, n := range s.Names {
							if n.Name != "_" {
								out = append(out, &decl{key: n.Name, kind: kind, name: n.Name, ident: n, node: s, gen: d, file: f})
							}
						}
					}
				}
			}
		}
	}
	return out
}

// members are the fields of a struct type and the methods of an
// interface type, embedded ones by their type's name.
func members(s *ast.TypeSpec, gen *ast.GenDecl, f *srcFile) []*decl {
	var list *ast.FieldList
	kind := kindField
	switch t := s.Type.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list, kind = t.Methods, kindIfaceFunc
	default:
		return nil
	}
	var out []*decl
	for _, fld := range list.List {
		names := fld.Names
		if len(names) == 0 {
			if kind == kindIfaceFunc {
				continue // an embedded interface or a type set
			}
			if id := baseIdent(fld.Type); id != nil {
				names = []*ast.Ident{id}
			}
		}
		for _, n := range names {
			if n.Name != "_" {
				out = append(out, &decl{key: s.Name.Name + "." + n.Name, kind: kind, name: n.Name, recv: s.Name.Name, ident: n, node: fld, gen: gen, file: f})
			}
		}
	}
	return out
}

// baseIdent is the name of a receiver or embedded type: T in *T, T[K],
// pkg.T.
func baseIdent(e ast.Expr) *ast.Ident {
	for {
		switch t := e.(type) {
		case *ast.Ident:
			return t
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			return t.Sel
		default:
			return nil
		}
	}
}

func newInfo() *types.Info {
	return &types.Info{
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
}

// typecheck type-checks files as well as it can without their imports.
func typecheck(fset *token.FileSet, pkgPath string, fs []*ast.File, imp types.Importer, info *types.Info) (pkg *types.Package, errs []error) {
	conf := types.Config{Importer: imp, FakeImportC: true, Error: func(err error) { errs = append(errs, err) }}
	defer func() {
		// go/types is robust, but this is best effort on code whose
		// imports are missing: a crash leaves some names unresolved.
		if r := recover(); r != nil {
			errs = append(errs, fmt.Errorf("type-checking %s: %v", pkgPath, r))
		}
	}()
	pkg, _ = conf.Check(pkgPath, fset, fs, info)
	return pkg, errs
}

// check type-checks a fixed package with its in-package tests, as the go
// command compiles it for its external tests.
func (a *analysis) check(p *pkgState) {
	if p.tpkg != nil || p.checking {
		return
	}
	p.checking = true
	p.info = newInfo()
	all := append(astFiles(p.fixed), astFiles(p.inTests)...)
	var errs []error
	p.tpkg, errs = typecheck(a.fset, p.pf.Path, all, a, p.info)
	p.errs = append(p.errs, testErrors(errs)...)
	p.checking = false
}

// Import implements types.Importer: an affected package is type-checked,
// any other is empty.
func (a *analysis) Import(ipath string) (*types.Package, error) {
	if p := a.byPath[ipath]; p != nil {
		a.check(p)
		if p.tpkg != nil {
			return p.tpkg, nil
		}
	}
	return fakeImporter(a.fakes).Import(ipath)
}

// fakeImporter imports every package as an empty one, named as the go
// command names packages by convention.
type fakeImporter map[string]*types.Package

func (m fakeImporter) Import(ipath string) (*types.Package, error) {
	if p := m[ipath]; p != nil {
		return p, nil
	}
	p := types.NewPackage(ipath, guessName(ipath))
	p.MarkComplete()
	m[ipath] = p
	return p, nil
}

var majorSuffix = regexp.MustCompile(`^v[0-9]+$`)

// guessName is the usual package name of an import path: yaml for
// gopkg.in/yaml.v3, sqlite3 for github.com/mattn/go-sqlite3.
func guessName(ipath string) string {
	elems := strings.Split(ipath, "/")
	last := elems[len(elems)-1]
	if len(elems) > 1 && majorSuffix.MatchString(last) {
		last = elems[len(elems)-2]
	}
	if i := strings.Index(last, ".v"); i > 0 && majorSuffix.MatchString(last[i+1:]) {
		last = last[:i]
	}
	last = strings.TrimPrefix(last, "go-")
	last = strings.TrimSuffix(last, "-go")
	last = strings.TrimSuffix(last, ".go")
	return strings.NewReplacer("-", "_", ".", "_").Replace(last)
}

// used is what of the fixed trees' new declarations the hidden tests use:
// a new field or interface method of a new type counts as its type. The
// note is empty.
func (a *analysis) used() (news map[*decl]string, olds map[*decl]bool) {
	out := map[*decl]string{}
	olds = map[*decl]bool{}
	add := func(d *decl) {
		if !d.pkg.isNew(d.key) {
			olds[d] = true
			return
		}
		if (d.kind == kindField || d.kind == kindIfaceFunc) && d.pkg.isNew(d.recv) {
			d = d.pkg.byKey[d.recv]
		}
		out[d] = ""
	}
	for _, p := range a.pkgs {
		scan := func(fs []*srcFile, info *types.Info, tpkg *types.Package) {
			if info == nil || tpkg == nil {
				return
			}
			for _, f := range fs {
				member := memberIdents(f.f)
				ast.Inspect(f.f, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.Ident:
						if obj := resolve(n, info, tpkg, member); obj != nil {
							if d := a.byPos[obj.Pos()]; d != nil && obj.Pkg() != nil && a.byPath[obj.Pkg().Path()] == d.pkg {
								add(d)
							}
						}
					case *ast.SelectorExpr:
						if x, ok := n.X.(*ast.Ident); ok {
							if _, ok := info.Uses[x].(*types.PkgName); ok {
								return true // an imported name
							}
						}
						if info.Uses[n.Sel] == nil {
							// The operand's type is unknown (it comes
							// from an import): any new member of that
							// name may be meant.
							a.membersNamed(n.Sel.Name, add)
						}
					case *ast.KeyValueExpr:
						if k, ok := n.Key.(*ast.Ident); ok && info.Uses[k] == nil && info.Defs[k] == nil {
							a.membersNamed(k.Name, add)
						}
					}
					return true
				})
			}
		}
		scan(p.inTests, p.info, p.tpkg)
		scan(p.xTest, p.xinfo, p.xpkg)
	}
	return out, olds
}

// memberIdents are the identifiers of f that may name a field or method:
// selectors, and keys of composite literals.
func memberIdents(f *ast.File) map[*ast.Ident]bool {
	member := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			member[n.Sel] = true
		case *ast.CompositeLit:
			for _, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok {
						member[k] = true
					}
				}
			}
		}
		return true
	})
	return member
}

// resolve is the object id denotes: as go/types recorded it, or, where
// it recorded nothing (in a composite literal of an imported type), as
// its scope has it, unless it may name a field or method (member).
func resolve(id *ast.Ident, info *types.Info, tpkg *types.Package, member map[*ast.Ident]bool) types.Object {
	if obj := info.Defs[id]; obj != nil {
		return obj
	}
	if obj := info.Uses[id]; obj != nil {
		return obj
	}
	if member[id] {
		return nil
	}
	if scope := tpkg.Scope().Innermost(id.Pos()); scope != nil {
		_, obj := scope.LookupParent(id.Name, id.Pos())
		return obj
	}
	return nil
}

func (a *analysis) membersNamed(name string, add func(*decl)) {
	for _, p := range a.pkgs {
		for _, d := range p.decls {
			if d.name == name && d.recv != "" {
				add(d)
			}
		}
	}
}

// closure adds to needed the new declarations that the stubs of needed
// ones use, noting which, and says for each what its stub is: "" for a
// stub, a reason for none.
func (a *analysis) closure(needed map[*decl]string) map[*decl]string {
	stub := map[*decl]string{}
	var queue []*decl
	for d := range needed {
		queue = append(queue, d)
	}
	sort.Slice(queue, func(i, j int) bool { return queue[i].ident.Pos() < queue[j].ident.Pos() })
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		why, deps := a.stubDeps(d)
		stub[d] = why
		for _, dep := range deps {
			if _, ok := needed[dep]; !ok {
				needed[dep] = "used by " + d.key
				queue = append(queue, dep)
			}
		}
	}
	return stub
}

// changed describes d if the vulnerable tree declares it otherwise: a
// func, method, field or interface method of another signature or kind.
func (a *analysis) changed(d *decl) (apiName, bool) {
	old := d.pkg.buggyByKey[d.key]
	switch {
	case old == nil, d.kind != kindFunc && d.kind != kindMethod && d.kind != kindField && d.kind != kindIfaceFunc:
		return apiName{}, false
	}
	if old.kind == d.kind && shape(a.fset, old) == shape(a.fset, d) {
		return apiName{}, false
	}
	was := old.render(a.fset)
	n := d.apiName(a.fset)
	if old.kind == kindField || old.kind == kindIfaceFunc {
		was = old.kind + " " + was
	}
	n.Note = "the vulnerable tree has " + was
	return n, true
}

// shape is the type of a func, method, field or interface method, but
// for the names of its parameters and results, which callers do not see.
func shape(fset *token.FileSet, d *decl) string {
	var t ast.Expr
	switch n := d.node.(type) {
	case *ast.FuncDecl:
		t = n.Type
	case *ast.Field:
		t = n.Type
	}
	ft, ok := t.(*ast.FuncType)
	if ok {
		c := *ft
		c.Params, c.Results = unnamed(ft.Params), unnamed(ft.Results)
		t = &c
	}
	var b bytes.Buffer
	defer hideComments(t)()
	if err := printer.Fprint(&b, fset, t); err != nil {
		return d.key
	}
	return declLine(b.String())
}

// unnamed is a parameter list without its names.
func unnamed(l *ast.FieldList) *ast.FieldList {
	if l == nil {
		return nil
	}
	out := &ast.FieldList{}
	for _, f := range l.List {
		for range max(1, len(f.Names)) {
			out.List = append(out.List, &ast.Field{Type: f.Type})
		}
	}
	return out
}

// stubDeps says why d cannot be stubbed ("" if it can), and lists the new
// declarations its stub uses.
func (a *analysis) stubDeps(d *decl) (string, []*decl) {
	p := d.pkg
	switch d.kind {
	case kindField:
		if why := stubbableField(d); why != "" {
			return why, nil
		}
	case kindIfaceFunc:
		return fmt.Sprintf("a new method of interface %s, which the vulnerable tree declares", d.recv), nil
	}
	var nodes []ast.Node
	switch n := d.node.(type) {
	case *ast.Field:
		nodes = append(nodes, n.Type) // added to the struct (fieldStubs)
	case *ast.FuncDecl:
		nodes = append(nodes, n.Type)
		if n.Recv != nil {
			nodes = append(nodes, n.Recv)
		}
	case *ast.ValueSpec:
		for _, other := range n.Names {
			if other.Name != "_" && p.buggyByKey[other.Name] != nil {
				return fmt.Sprintf("declared with %s, which the vulnerable tree declares elsewhere", other.Name), nil
			}
		}
		if d.kind == kindConst && constNeedsGroup(d) {
			nodes = append(nodes, d.gen)
		} else {
			nodes = append(nodes, n)
		}
	default:
		nodes = append(nodes, d.node)
	}
	var deps []*decl
	seen := map[*decl]bool{}
	for _, n := range nodes {
		ast.Inspect(n, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := p.info.Uses[id]
			if obj == nil {
				return true
			}
			dep := a.byPos[obj.Pos()]
			if dep == nil || dep == d || seen[dep] || !dep.pkg.isNew(dep.key) || dep.pkg != p {
				return true
			}
			seen[dep] = true
			deps = append(deps, dep)
			return true
		})
	}
	if d.kind == kindVar {
		for _, dep := range deps {
			if dep.kind == kindFunc || dep.kind == kindMethod {
				// A stub func panics: a var it initialises would
				// panic when the package loads.
				return fmt.Sprintf("its value calls %s, which the fix adds", dep.key), nil
			}
		}
	}
	return "", deps
}

// constNeedsGroup says whether a const takes its value from its group
// (iota, or an omitted value): then its stub is the whole group, which
// must then be new as a whole.
func constNeedsGroup(d *decl) bool {
	vs := d.node.(*ast.ValueSpec)
	if d.gen == nil || len(d.gen.Specs) < 2 {
		return false
	}
	if len(vs.Values) == 0 {
		return true
	}
	iota := false
	for _, v := range vs.Values {
		ast.Inspect(v, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == "iota" {
				iota = true
			}
			return true
		})
	}
	return iota
}

// stubFiles declares ds on the vulnerable tree of p: funcs and methods
// that panic, types, vars and consts as the fixed tree has them, in a new
// file; new fields of its structs where it declares them (fieldStubs).
// It returns the files, new or changed, and what it could not declare.
func (a *analysis) stubFiles(p *pkgState, ds []*decl) ([]stubFile, []apiName, error) {
	var fields, others []*decl
	for _, d := range ds {
		if d.kind == kindField {
			fields = append(fields, d)
		} else {
			others = append(others, d)
		}
	}
	files, unstub := a.fieldStubs(p, fields)
	s, more, err := a.stubFile(p, others)
	if err != nil {
		return nil, nil, err
	}
	unstub = append(unstub, more...)
	if s != nil {
		files = append(files, *s)
	}
	if len(files) == 0 {
		return nil, unstub, nil
	}
	if why := stubErrors(p, files); why != "" {
		for _, d := range ds {
			if !slices.ContainsFunc(unstub, func(n apiName) bool { return n.Key == d.key }) {
				n := d.apiName(a.fset)
				n.Note = why
				unstub = append(unstub, n)
			}
		}
		return nil, unstub, nil
	}
	return files, unstub, nil
}

// stubFile declares ds, none a field, in a new file of the vulnerable
// tree of p (nil when there is none to declare).
func (a *analysis) stubFile(p *pkgState, ds []*decl) (*stubFile, []apiName, error) {
	var body bytes.Buffer
	imports := map[string]string{} // local name -> import spec
	var unstub []apiName
	doneNodes := map[ast.Node]bool{}
	for _, d := range ds {
		text, node := stubText(d)
		if doneNodes[node] {
			continue
		}
		copied := node
		if fd, ok := node.(*ast.FuncDecl); ok {
			c := *fd
			c.Body = nil // the stub's body is a panic
			copied = &c
		}
		need, why := importsFor(d.file, copied, p.info)
		for name, spec := range need {
			if s, ok := imports[name]; ok && s != spec {
				why = fmt.Sprintf("its file imports %s as %s, another stub's %s", spec, name, s)
			}
		}
		if d.kind == kindConst && constNeedsGroup(d) {
			for _, s := range d.gen.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					if n.Name != "_" && !p.isNew(n.Name) {
						why = fmt.Sprintf("its value depends on its group, which has %s, which the vulnerable tree declares", n.Name)
					}
				}
			}
		}
		if why != "" {
			n := d.apiName(a.fset)
			n.Note = why
			unstub = append(unstub, n)
			continue
		}
		doneNodes[node] = true
		for name, spec := range need {
			imports[name] = spec
		}
		body.WriteString(text)
		body.WriteString("\n\n")
	}
	if body.Len() == 0 {
		return nil, unstub, nil
	}
	var src bytes.Buffer
	fmt.Fprintf(&src, "// The tests use these names, which the fix adds: they are declared here\n// so that the tests compile, and a fix replaces them.\n\npackage %s\n\n", p.buggyName)
	if len(imports) == 1 {
		for _, spec := range imports {
			src.WriteString("import " + spec + "\n\n")
		}
	} else if len(imports) > 0 {
		src.WriteString("import (\n")
		for _, name := range sortedNames(imports) {
			src.WriteString("\t" + imports[name] + "\n")
		}
		src.WriteString(")\n\n")
	}
	src.Write(body.Bytes())
	out, err := format.Source(src.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("formatting the stubs of %s: %w", p.pf.Path, err)
	}
	name := "ssebench_stubs.go"
	for i := 2; p.pf.Buggy[name] != nil || p.pf.Fixed[name] != nil || p.pf.Tests[name] != nil; i++ {
		name = fmt.Sprintf("ssebench_stubs%d.go", i)
	}
	return &stubFile{Dir: p.pf.Dir, Name: name, Src: out}, unstub, nil
}

// stubErrors says what is wrong with the stubs of p (new files, or the
// vulnerable tree's files changed) when the vulnerable tree has type
// errors with them that it does not have without: a stub uses a name
// another could not declare, say. Errors of imported names do not
// count: without the imports, every one is undefined.
func stubErrors(p *pkgState, stubs []stubFile) string {
	errs := func(stubs []stubFile) []string {
		files := maps.Clone(p.pf.Buggy)
		for _, s := range stubs {
			files[s.Name] = s.Src
		}
		fset := token.NewFileSet()
		fs, err := parseFiles(fset, files)
		if err != nil {
			return []string{err.Error()}
		}
		_, fs = mainPackage(fs)
		_, es := typecheck(fset, p.pf.Path, astFiles(fs), fakeImporter{}, newInfo())
		var out []string
		for _, e := range es {
			if !undefinedImport.MatchString(e.Error()) {
				out = append(out, e.Error())
			}
		}
		return out
	}
	// By file and message, not position: a field stub moves the lines
	// of the file it changes.
	before := map[string]int{}
	for _, e := range errs(nil) {
		before[withoutLine(e)]++
	}
	for _, e := range errs(stubs) {
		if before[withoutLine(e)] == 0 {
			return "the stubs do not type-check: " + e
		}
		before[withoutLine(e)]--
	}
	return ""
}

// errPosition is the line and column of a type error's position.
var errPosition = regexp.MustCompile(`^([^:]*):\d+:\d+: `)

// withoutLine is a type error without its line and column.
func withoutLine(e string) string { return errPosition.ReplaceAllString(e, "$1: ") }

// testErrors are the messages of the errors in _test.go files.
func testErrors(errs []error) []string {
	var out []string
	for _, e := range errs {
		var te types.Error
		if errors.As(e, &te) && strings.HasSuffix(te.Fset.Position(te.Pos).Filename, "_test.go") {
			out = append(out, e.Error())
		}
	}
	return out
}

// stubbedTestErrors type-checks the hidden tests on the vulnerable trees
// with the stubs, and lists their errors that they do not have on the
// fixed trees.
func (a *analysis) stubbedTestErrors(stubs []stubFile) []string {
	byDir := map[string][]stubFile{}
	for _, s := range stubs {
		byDir[s.Dir] = append(byDir[s.Dir], s)
	}
	withStubs := func(pf *pkgFiles) (map[string][]byte, map[string][]byte) {
		files := maps.Clone(pf.Buggy)
		for _, s := range byDir[pf.Dir] {
			files[s.Name] = s.Src
		}
		return files, pf.Tests
	}
	fixed := map[string][]string{}
	for _, p := range a.pkgs {
		fixed[p.pf.Path] = p.errs
	}
	return a.treeTestErrors(withStubs, fixed)
}

// oldTestErrors type-checks the vulnerable trees' own tests on the fixed
// trees, and lists their errors that they do not have on the vulnerable
// trees.
func (a *analysis) oldTestErrors() []string {
	buggy := func(pf *pkgFiles) (map[string][]byte, map[string][]byte) { return pf.Buggy, pf.BuggyTests }
	fixed := func(pf *pkgFiles) (map[string][]byte, map[string][]byte) { return pf.Fixed, pf.BuggyTests }
	before := a.treeTestErrors(buggy, nil)
	var out []string
	for _, e := range a.treeTestErrors(fixed, nil) {
		if !slices.Contains(before, e) {
			out = append(out, e)
		}
	}
	return out
}

// treeTestErrors type-checks the affected packages as files gives them
// (the package's files and the tests), in-package and external tests, and
// lists the tests' errors ("dir/file_test.go:line:col: message", sorted)
// but those that except gives for the package's import path.
func (a *analysis) treeTestErrors(files func(*pkgFiles) (map[string][]byte, map[string][]byte), except map[string][]string) []string {
	b := &stubbedImporter{a: a, fset: token.NewFileSet(), files: files, done: map[string]*types.Package{}, fakes: fakeImporter{}}
	var out []string
	for _, p := range a.pkgs {
		var errs []string
		b.Import(p.pf.Path)
		errs = append(errs, b.errs[p.pf.Path]...)
		if _, tests := files(&p.pf); len(tests) > 0 {
			xs, err := parseFiles(b.fset, tests)
			if err == nil {
				var xTest []*ast.File
				for _, f := range xs {
					if f.f.Name.Name == p.name+"_test" {
						xTest = append(xTest, f.f)
					}
				}
				if len(xTest) > 0 {
					_, es := typecheck(b.fset, p.pf.Path+"_test", xTest, b, newInfo())
					errs = append(errs, testErrors(es)...)
				}
			}
		}
		for _, e := range errs {
			if !slices.Contains(except[p.pf.Path], e) {
				out = append(out, path.Join(p.pf.Dir, e))
			}
		}
	}
	sort.Strings(out)
	return out
}

// stubbedImporter imports an affected package as files gives it (its
// vulnerable tree with its stubs, say) with its in-package tests, and any
// other as an empty package.
type stubbedImporter struct {
	a     *analysis
	fset  *token.FileSet
	files func(*pkgFiles) (pkg, tests map[string][]byte)
	done  map[string]*types.Package
	errs  map[string][]string // the in-package tests' errors, by import path
	fakes fakeImporter
}

func (b *stubbedImporter) Import(ipath string) (*types.Package, error) {
	p := b.a.byPath[ipath]
	if p == nil {
		return b.fakes.Import(ipath)
	}
	if pkg, ok := b.done[ipath]; ok {
		if pkg == nil { // an import cycle
			return b.fakes.Import(ipath)
		}
		return pkg, nil
	}
	b.done[ipath] = nil
	files, testFiles := b.files(&p.pf)
	fs, err := parseFiles(b.fset, files)
	if err != nil || len(fs) == 0 {
		return b.fakes.Import(ipath)
	}
	_, fs = mainPackage(fs)
	tests, err := parseFiles(b.fset, testFiles)
	if err != nil {
		return b.fakes.Import(ipath)
	}
	for _, f := range tests {
		if f.f.Name.Name == fs[0].f.Name.Name {
			fs = append(fs, f)
		}
	}
	pkg, errs := typecheck(b.fset, ipath, astFiles(fs), b, newInfo())
	if b.errs == nil {
		b.errs = map[string][]string{}
	}
	b.errs[ipath] = testErrors(errs)
	b.done[ipath] = pkg
	return pkg, nil
}

// undefinedImport matches go/types' error for a name of an import, which
// an empty package does not declare.
var undefinedImport = regexp.MustCompile(`: undefined: [\pL_][\pL\pN_]*\.[\pL_][\pL\pN_]*$`)

// stubText is d's declaration in a stub file, taken from the fixed
// tree's source, and the node it copies.
func stubText(d *decl) (string, ast.Node) {
	src := d.file.src
	tf := d.file.f
	text := func(n ast.Node) string {
		return string(src[tokenOffset(tf, n.Pos()):tokenOffset(tf, n.End())])
	}
	switch n := d.node.(type) {
	case *ast.FuncDecl:
		sig := string(src[tokenOffset(tf, n.Pos()):tokenOffset(tf, n.Type.End())])
		// A panic, not a zero value: a test may build what it expects
		// with the new name (retryablehttp's compares an error with
		// redactURL(u)+" giving up ..."), and a zero value would pass it
		// on the vulnerable tree. The panic ends the test binary; the
		// verification counts the tests it did not reach by their runs
		// without the hidden tests.
		return fmt.Sprintf("%s {\n\tpanic(%s)\n}", sig, strconv.Quote("not implemented: "+d.key)), n
	case *ast.TypeSpec:
		return "type " + text(n), n
	case *ast.ValueSpec:
		if d.kind == kindConst && constNeedsGroup(d) {
			return text(d.gen), d.gen
		}
		return d.gen.Tok.String() + " " + text(n), n
	}
	return "", d.node
}

func tokenOffset(f *ast.File, pos token.Pos) int {
	return int(pos - f.FileStart)
}

// importsFor are the import specs of file f that node uses, by local
// name; or why they cannot be told.
func importsFor(f *srcFile, node ast.Node, info *types.Info) (map[string]string, string) {
	need := map[string]string{}
	why := ""
	ast.Inspect(node, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		var im *ast.ImportSpec
		switch obj := info.Uses[x].(type) {
		case *types.PkgName:
			im = importOf(f, func(ip string, spec *ast.ImportSpec) bool {
				return ip == obj.Imported().Path() && (spec.Name == nil || spec.Name.Name == x.Name)
			})
		case nil:
			// An import whose package is not named as its path
			// ends (guessName): the one whose path has the name.
			im = importOf(f, func(ip string, spec *ast.ImportSpec) bool {
				return spec.Name == nil && strings.Contains(strings.ToLower(path.Base(ip)), strings.ToLower(x.Name))
			})
		default:
			return true // a value's field or method
		}
		if im == nil {
			why = fmt.Sprintf("cannot tell which import %s is in %s", x.Name, f.name)
			return true
		}
		spec := im.Path.Value
		if im.Name != nil {
			spec = im.Name.Name + " " + spec
		} else if ip, _ := strconv.Unquote(im.Path.Value); guessName(ip) != x.Name {
			spec = x.Name + " " + spec
		}
		need[x.Name] = spec
		return true
	})
	return need, why
}

// importOf is the one import of f that match accepts, else nil.
func importOf(f *srcFile, match func(ip string, spec *ast.ImportSpec) bool) *ast.ImportSpec {
	var found *ast.ImportSpec
	for _, im := range f.f.Imports {
		ip, err := strconv.Unquote(im.Path.Value)
		if err != nil || !match(ip, im) {
			continue
		}
		if found != nil {
			return nil
		}
		found = im
	}
	return found
}

// apiName describes d for a report.
func (d *decl) apiName(fset *token.FileSet) apiName {
	return apiName{Path: d.pkg.pf.Path, Dir: d.pkg.pf.Dir, Key: d.key, Kind: d.kind, Decl: d.render(fset)}
}

// render is d's declaration on one line, without body or comments.
func (d *decl) render(fset *token.FileSet) string {
	print := func(n ast.Node) string {
		defer hideComments(n)()
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, n); err != nil {
			return d.key
		}
		return declLine(b.String())
	}
	switch n := d.node.(type) {
	case *ast.FuncDecl:
		c := *n
		c.Doc, c.Body = nil, nil
		return print(&c)
	case *ast.TypeSpec:
		return "type " + print(n)
	case *ast.ValueSpec:
		return d.gen.Tok.String() + " " + print(n)
	case *ast.Field:
		if d.kind == kindIfaceFunc {
			return d.name + strings.TrimPrefix(print(n.Type), "func")
		}
		return d.name + " " + print(n.Type)
	}
	return d.key
}

// hideComments takes the comments off n's fields and specs, which the
// printer prints even outside a file, and returns what puts them back.
func hideComments(n ast.Node) (restore func()) {
	var undo []func()
	hide := func(doc, comment **ast.CommentGroup) {
		d, c := *doc, *comment
		*doc, *comment = nil, nil
		undo = append(undo, func() { *doc, *comment = d, c })
	}
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			hide(&n.Doc, &n.Comment)
		case *ast.TypeSpec:
			hide(&n.Doc, &n.Comment)
		case *ast.ValueSpec:
			hide(&n.Doc, &n.Comment)
		}
		return true
	})
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// declLine joins a printed declaration's lines: "struct {\n\tA int\n\tB
// int\n}" becomes "struct { A int; B int }".
func declLine(s string) string {
	lines := strings.Split(s, "\n")
	var b strings.Builder
	for i, l := range lines {
		l = strings.Join(strings.Fields(l), " ")
		if l == "" {
			continue
		}
		if i > 0 && b.Len() > 0 {
			prev := b.String()
			switch {
			case strings.HasSuffix(prev, "{"), strings.HasSuffix(prev, "("), strings.HasSuffix(prev, ","):
				b.WriteString(" ")
			case strings.HasPrefix(l, "}"):
				b.WriteString(" ")
			case strings.HasPrefix(l, ")"):
			default:
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
	}
	out := b.String()
	out = strings.ReplaceAll(out, "( ", "(")
	out = strings.ReplaceAll(out, ", )", ")")
	out = strings.ReplaceAll(out, ",)", ")")
	return out
}

// formatVerb matches a fmt verb, to split a format string into the parts
// every message it makes contains.
var formatVerb = regexp.MustCompile(`%[-+# 0-9.*\[\]]*[a-zA-Z%]`)

// minMessage is the shortest literal taken for a message: shorter ones
// ("error", "%s: %v") match too much by chance.
const minMessage = 8

// messages are the hidden tests' string literals that some fixed-code
// literal matches and no vulnerable-code literal does.
func (a *analysis) messages() []string {
	seen := map[string]bool{}
	for _, p := range a.pkgs {
		for _, t := range stringLits(slices.Concat(p.inTests, p.xTest)) {
			if seen[t] || !isMessage(t) || formatVerb.MatchString(t) {
				continue
			}
			if anyMatch(t, p.fixedLits) && !anyMatch(t, p.buggyLits) {
				seen[t] = true
			}
		}
	}
	return sortedNames(seen)
}

// isMessage says whether a test's literal can be a message the task
// states. It goes into the task's text, which the agent reads: a literal longer
// than a message (a test's fixture), or one with control characters (a
// newline, a terminal's escape) or invalid UTF-8, is not one.
func isMessage(s string) bool {
	return len(s) >= minMessage && len(s) <= maxMessage && utf8.ValidString(s) &&
		!strings.ContainsFunc(s, unicode.IsControl) &&
		strings.ContainsFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
}

// maxMessage bounds a message the task text states, maxSpan any code
// span of it (a declaration).
const (
	maxMessage = 200
	maxSpan    = 300
)

// anyMatch says whether a test's literal t may be made from one of the
// code's literals: whether a constant part of it (a format string's text
// between verbs) overlaps t by at least half of t: contains it, is
// contained in it, or ends with t's start or starts with t's end (as
// "the max size " does "the max size 2" of "the max size %d").
func anyMatch(t string, lits []string) bool {
	for _, l := range lits {
		for _, part := range formatVerb.Split(l, -1) {
			if n := overlap(t, part); n >= minMessage && 2*n >= len(t) {
				return true
			}
		}
	}
	return false
}

// overlap is the length of the longest text t and part share as above.
func overlap(t, part string) int {
	switch {
	case strings.Contains(part, t):
		return len(t)
	case strings.Contains(t, part):
		return len(part)
	}
	best := 0
	for k := min(len(t), len(part)) - 1; k > 0; k-- {
		if strings.HasSuffix(part, t[:k]) || strings.HasPrefix(part, t[len(t)-k:]) {
			best = k
			break
		}
	}
	return best
}

// stringLits are the string literals of files, but for import paths and
// struct tags.
func stringLits(fs []*srcFile) []string {
	seen := map[string]bool{}
	for _, f := range fs {
		tags := map[*ast.BasicLit]bool{}
		ast.Inspect(f.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ImportSpec:
				return false
			case *ast.Field:
				if n.Tag != nil {
					tags[n.Tag] = true
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING && !tags[n] {
					if s, err := strconv.Unquote(n.Value); err == nil {
						seen[s] = true
					}
				}
			}
			return true
		})
	}
	return sortedNames(seen)
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IssueText states what the tests need of a fix, in markdown for the
// task's issue: the names it must add and the messages they compare.
func (f *fixAPI) IssueText() string {
	var b strings.Builder
	if len(f.Needed) > 0 {
		b.WriteString("The tests use these, which the fix must add:\n")
		for _, n := range f.Needed {
			fmt.Fprintf(&b, "- %s\n", n.describe())
		}
	}
	if len(f.Changed) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("The tests use these as the fix changes them:\n")
		for _, n := range f.Changed {
			fmt.Fprintf(&b, "- %s\n", n.describe())
		}
	}
	if len(f.Messages) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("The tests expect these messages:\n")
		for _, m := range f.Messages {
			fmt.Fprintf(&b, "- %s\n", mdCode(m))
		}
	}
	return b.String()
}

// describe is n for the issue text, in markdown.
func (n apiName) describe() string {
	var s string
	switch n.Kind {
	case kindField:
		s = fmt.Sprintf("field %s of struct %s", mdCode(n.Decl), mdCode(n.Receiver()))
	case kindIfaceFunc:
		s = fmt.Sprintf("method %s of interface %s", mdCode(n.Decl), mdCode(n.Receiver()))
	default:
		s = mdCode(n.Decl)
	}
	return s + " in package " + mdCode(n.Path)
}

// mdCode is s as a markdown code span, whatever backquotes it holds, on
// one line of at most maxSpan bytes: s is the module's text, and the
// agent reads it.
func mdCode(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) > maxSpan {
		s = strings.ToValidUTF8(s[:maxSpan], "") + "…"
	}
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
