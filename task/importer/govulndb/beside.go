package govulndb

import (
	"bytes"
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

// A fix release often brings a feature beside the fix, with its tests:
// gin-contrib/cors 1.6.0 fixes Config.parseWildcardRules (GO-2024-2955)
// and adds Config.CustomSchemas, which its new TestValidateTauri sets.
// Such a test does not fail for the bug on the vulnerable code, and it
// makes the task need the feature: no stub can declare a new field on
// v1.5.0. dropBeside finds those tests without running anything (the
// importer never runs a module's code) and takes them out of the hidden
// tests: a hidden test counts only if it may execute the vulnerable
// symbols the report names.

// besideDrop is what dropBeside makes of the hidden tests.
type besideDrop struct {
	// Pkgs are the packages with the pruned tests, Pruned those test
	// files by path in the module; both nil when nothing is dropped.
	Pkgs   []pkgFiles
	Pruned map[string][]byte
	// Dropped are the test functions taken out, in file order.
	Dropped []droppedTest
	// Used says, for each name that blocks the task and that the
	// vulnerable code uses, which symbol of the report uses it: such a
	// name is the fix's own, and no test of it is dropped.
	Used map[string]string
}

// droppedTest is a test function dropBeside takes out.
type droppedTest struct {
	Name     string   // TestValidateTauri
	Features []string // the names beside the fix it uses: Config.CustomSchemas
}

// Note is what the import table says of d.
func (d droppedTest) Note() string {
	what := "a feature"
	if len(d.Features) > 1 {
		what = "features"
	}
	return fmt.Sprintf("dropped %s: it tests %s, %s beside the fix", d.Name, strings.Join(d.Features, ", "), what)
}

// implicitMethods are the methods that code outside the module calls on a
// value it is handed (fmt, encoding/json, net/http, sort, errors): a type
// the vulnerable code uses may run them without any selector naming them.
var implicitMethods = []string{"String", "GoString", "Format", "Error", "Unwrap", "Is", "As",
	"MarshalJSON", "UnmarshalJSON", "MarshalText", "UnmarshalText", "MarshalBinary", "UnmarshalBinary",
	"MarshalYAML", "UnmarshalYAML", "ServeHTTP", "Read", "Write", "Close", "Len", "Less", "Swap"}

// dropBeside drops from the hidden tests of pkgs the test functions the
// fix adds that use a name api blocks the task for (an Unstubbable or
// Changed name, or one a test error names) that the vulnerable symbols
// (by import path: "Config.parseWildcardRules") do not reach. It returns
// a skip error when a test the vulnerable version has uses such a name,
// or when no test the fix adds or changes would still reach a vulnerable
// symbol. Nothing is dropped when a symbol is not found in the fixed
// tree, or when every blocking name is the fix's own.
func dropBeside(pkgs []pkgFiles, api *fixAPI, symbols map[string][]string, vulnerableAt string) (*besideDrop, error) {
	a, err := newAnalysis(pkgs)
	if err != nil {
		return nil, err
	}
	vuln := a.vulnDecls(symbols)
	if vuln == nil {
		return &besideDrop{}, nil
	}
	g := a.declGraph()
	reach := g.reach(vuln)
	features, used := a.features(api, reach)
	out := &besideDrop{Used: used}
	soft := map[string]bool{} // the features a stub gives the vulnerable tree
	for _, n := range api.newFields() {
		soft[n.Key] = true
	}
	units := a.testUnits()
	errFeatures := a.errorFeatures(api.TestErrors, units, reach)
	if len(features) == 0 && len(errFeatures) == 0 {
		return out, nil
	}
	uses := map[*testUnit][]string{} // the features each unit uses, itself or through others
	for _, u := range units {
		if fs := u.features(features, errFeatures, map[*testUnit]bool{}); len(fs) > 0 {
			uses[u] = fs
		}
	}
	if len(uses) == 0 {
		return out, nil
	}
	old := oldTests(pkgs)
	drop := map[*testUnit]bool{}
	for _, u := range units {
		fs := uses[u]
		if fs == nil {
			continue
		}
		if u.test && old[u.p.pf.Dir][u.name] != "" {
			if !slices.ContainsFunc(fs, func(f string) bool { return !soft[f] }) {
				// The test the vulnerable version has sets a field
				// beside the fix: it stays, and its stub lets it
				// compile there.
				continue
			}
			return nil, skipf("%s, which v%s's tests have too, uses %s, which the fix release adds beside the fix: the test cannot be dropped", u.name, vulnerableAt, strings.Join(fs, ", "))
		}
		drop[u] = true
		if u.test {
			out.Dropped = append(out.Dropped, droppedTest{Name: u.name, Features: fs})
		}
	}
	var droppedNames []string
	for _, d := range out.Dropped {
		droppedNames = append(droppedNames, d.Name)
	}
	if len(droppedNames) > 0 && !a.exercised(units, drop, old, vuln, g) {
		return nil, skipf("no hidden test exercises the vulnerable code once the tests of what the fix release adds beside the fix are dropped (%s)", strings.Join(droppedNames, ", "))
	}
	out.Pkgs, out.Pruned = slices.Clone(pkgs), map[string][]byte{}
	byFile := map[*srcFile][]ast.Decl{}
	var files []*testUnit // the first dropped unit of each file
	for _, u := range units {
		if drop[u] {
			if byFile[u.file] == nil {
				files = append(files, u)
			}
			byFile[u.file] = append(byFile[u.file], u.node)
		}
	}
	for _, u := range files {
		src, err := pruneFile(u.file, byFile[u.file], u.info)
		if err != nil {
			return nil, skipf("dropping %s from %s: %s", strings.Join(droppedNames, ", "), u.file.name, oneLine(err.Error()))
		}
		i := slices.IndexFunc(out.Pkgs, func(pf pkgFiles) bool { return pf.Path == u.p.pf.Path })
		pf := out.Pkgs[i]
		pf.Tests = maps.Clone(pf.Tests)
		pf.Tests[u.file.name] = src
		out.Pkgs[i] = pf
		out.Pruned[path.Join(pf.Dir, u.file.name)] = src
	}
	return out, nil
}

// vulnDecls are the fixed tree's declarations of the vulnerable symbols,
// or nil when one is not there (the fix removed or renamed it) or a
// package names none (all of it is vulnerable): then what the vulnerable
// code reaches is unknown.
func (a *analysis) vulnDecls(symbols map[string][]string) []*decl {
	var out []*decl
	for _, p := range a.pkgs {
		if len(symbols[p.pf.Path]) == 0 {
			return nil
		}
		for _, s := range symbols[p.pf.Path] {
			d := p.byKey[s]
			if d == nil || d.kind != kindFunc && d.kind != kindMethod {
				return nil
			}
			out = append(out, d)
		}
	}
	return out
}

// declGraph is what each package-level declaration of the fixed trees
// names: for a func its signature and body, for a field its type, for a
// var or const its type and value. A struct type names none of its
// fields: they count where code selects them.
type declGraph struct {
	edges map[*decl][]*decl
}

func (a *analysis) declGraph() *declGraph {
	g := &declGraph{edges: map[*decl][]*decl{}}
	members := map[*ast.File]map[*ast.Ident]bool{}
	for _, p := range a.pkgs {
		for _, d := range p.decls {
			m := members[d.file.f]
			if m == nil {
				m = memberIdents(d.file.f)
				members[d.file.f] = m
			}
			for _, n := range declBody(d) {
				ds, _ := a.refsIn(n, p.info, p.tpkg, m)
				g.edges[d] = append(g.edges[d], ds...)
			}
		}
	}
	return g
}

// declBody are the parts of d's declaration that run or type what it is.
func declBody(d *decl) []ast.Node {
	switch n := d.node.(type) {
	case *ast.FuncDecl:
		return []ast.Node{n}
	case *ast.Field:
		return []ast.Node{n.Type}
	case *ast.ValueSpec:
		return []ast.Node{n}
	case *ast.TypeSpec:
		var out []ast.Node
		if n.TypeParams != nil {
			out = append(out, n.TypeParams)
		}
		switch t := n.Type.(type) {
		case *ast.StructType:
		case *ast.InterfaceType:
			for _, f := range t.Methods.List {
				if len(f.Names) == 0 {
					out = append(out, f.Type) // an embedded interface or a type set
				}
			}
		default:
			out = append(out, t)
		}
		return out
	}
	return nil
}

// reach is every declaration that the declarations from name, directly
// or not, each with the one of from it is reached from.
func (g *declGraph) reach(from []*decl) map[*decl]*decl {
	out := map[*decl]*decl{}
	var queue []*decl
	for _, d := range from {
		if _, ok := out[d]; !ok {
			out[d] = d
			queue = append(queue, d)
		}
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		next := g.edges[d]
		if d.kind == kindType {
			for _, m := range implicitMethods {
				if md := d.pkg.byKey[d.key+"."+m]; md != nil && md.kind == kindMethod {
					next = append(next, md)
				}
			}
		}
		for _, n := range next {
			if _, ok := out[n]; !ok {
				out[n] = out[d]
				queue = append(queue, n)
			}
		}
	}
	return out
}

// refsIn lists the package-level declarations of the affected packages
// that node names, and the positions of the other objects it names. A
// method counts for every type and interface that has one of its name,
// and where go/types could not tell a selector's operand (its type comes
// from an import), every field and method of that name counts.
func (a *analysis) refsIn(node ast.Node, info *types.Info, tpkg *types.Package, member map[*ast.Ident]bool) ([]*decl, []token.Pos) {
	var decls []*decl
	var objs []token.Pos
	if info == nil {
		return nil, nil
	}
	seen := map[*decl]bool{}
	add := func(d *decl) {
		if !seen[d] {
			seen[d] = true
			decls = append(decls, d)
		}
	}
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if info.Defs[n] != nil {
				return true
			}
			obj := info.Uses[n]
			if obj == nil && !member[n] && tpkg != nil {
				if scope := tpkg.Scope().Innermost(n.Pos()); scope != nil {
					_, obj = scope.LookupParent(n.Name, n.Pos())
				}
			}
			if obj == nil {
				return true
			}
			d := a.byPos[obj.Pos()]
			if d == nil {
				objs = append(objs, obj.Pos())
				return true
			}
			add(d)
			if d.kind == kindMethod || d.kind == kindIfaceFunc {
				a.membersNamed(n.Name, func(m *decl) {
					if m.kind == kindMethod || m.kind == kindIfaceFunc {
						add(m)
					}
				})
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				if _, ok := info.Uses[x].(*types.PkgName); ok {
					return true
				}
			}
			if info.Uses[n.Sel] == nil {
				a.membersNamed(n.Sel.Name, add)
			}
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok && info.Uses[k] == nil && info.Defs[k] == nil {
				a.membersNamed(k.Name, add)
			}
		}
		return true
	})
	return decls, objs
}

// features are the names api blocks the task for that the vulnerable
// code does not reach, each with the names whose use needs it (a test
// that calls a new func whose stub needs it), and the blocking names it
// does reach, with the symbol that reaches each.
func (a *analysis) features(api *fixAPI, reach map[*decl]*decl) (map[*decl][]string, map[string]string) {
	parent := map[string]string{} // "path key" -> the key of the Needed name that uses it
	for _, n := range api.Needed {
		if by, ok := strings.CutPrefix(n.Note, "used by "); ok {
			parent[n.Path+" "+n.Key] = by
		}
	}
	out := map[*decl][]string{}
	used := map[string]string{}
	for _, n := range slices.Concat(api.Unstubbable, api.Changed, api.newFields()) {
		p := a.byPath[n.Path]
		if p == nil || p.byKey[n.Key] == nil {
			continue
		}
		f := p.byKey[n.Key]
		if by := reachedBy(f, reach); by != nil {
			used[n.Key] = by.key
			continue
		}
		// The test may name f, one of its members, or a name
		// whose stub needs f.
		mark := func(d *decl) {
			if !slices.Contains(out[d], f.key) {
				out[d] = append(out[d], f.key)
			}
		}
		mark(f)
		for _, d := range p.decls {
			if d.recv != "" && d.recv == f.key && f.kind == kindType {
				mark(d)
			}
		}
		seen := map[string]bool{}
		for k := parent[n.Path+" "+n.Key]; k != "" && !seen[k] && p.byKey[k] != nil; k = parent[n.Path+" "+k] {
			seen[k] = true
			mark(p.byKey[k])
		}
	}
	return out, used
}

// reachedBy is the vulnerable symbol that reaches d (a type through one
// of its members), else nil.
func reachedBy(d *decl, reach map[*decl]*decl) *decl {
	if by, ok := reach[d]; ok {
		return by
	}
	if d.kind == kindType {
		for _, m := range d.pkg.decls {
			if by, ok := reach[m]; ok && m.recv == d.key {
				return by
			}
		}
	}
	return nil
}

// testUnit is a top-level declaration of a test file, but for imports.
type testUnit struct {
	p     *pkgState
	file  *srcFile
	node  ast.Decl
	name  string // a func's name, "T.m" for a method
	test  bool   // a Test, Fuzz, Benchmark or Example func
	decls []*decl
	uses  []*testUnit
	info  *types.Info // the package's or the external tests'
}

// testUnits lists the declarations of the fixed trees' test files, with
// what they name.
func (a *analysis) testUnits() []*testUnit {
	var units []*testUnit
	byPos := map[token.Pos]*testUnit{}
	type checked struct {
		fs   []*srcFile
		info *types.Info
		tpkg *types.Package
	}
	objs := map[*testUnit][]token.Pos{}
	for _, p := range a.pkgs {
		for _, c := range []checked{{p.inTests, p.info, p.tpkg}, {p.xTest, p.xinfo, p.xpkg}} {
			for _, f := range c.fs {
				member := memberIdents(f.f)
				for _, d := range f.f.Decls {
					if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
						continue
					}
					u := &testUnit{p: p, file: f, node: d, info: c.info}
					for _, id := range declaredIdents(d) {
						byPos[id.Pos()] = u
					}
					if fd, ok := d.(*ast.FuncDecl); ok {
						u.name = fd.Name.Name
						if fd.Recv == nil {
							u.test = isTestFunc(fd.Name.Name)
						} else if len(fd.Recv.List) == 1 {
							if r := baseIdent(fd.Recv.List[0].Type); r != nil {
								u.name = r.Name + "." + fd.Name.Name
							}
						}
					}
					u.decls, objs[u] = a.refsIn(d, c.info, c.tpkg, member)
					units = append(units, u)
				}
			}
		}
	}
	for _, u := range units {
		seen := map[*testUnit]bool{}
		for _, pos := range objs[u] {
			if o := byPos[pos]; o != nil && o != u && !seen[o] {
				seen[o] = true
				u.uses = append(u.uses, o)
			}
		}
	}
	return units
}

// declaredIdents are the names a top-level declaration declares.
func declaredIdents(d ast.Decl) []*ast.Ident {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return []*ast.Ident{d.Name}
	case *ast.GenDecl:
		var out []*ast.Ident
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				out = append(out, s.Name)
			case *ast.ValueSpec:
				out = append(out, s.Names...)
			}
		}
		return out
	}
	return nil
}

// isTestFunc says whether the go command runs or compiles name as a test,
// fuzz test, benchmark or example.
func isTestFunc(name string) bool {
	for _, prefix := range []string{"Test", "Fuzz", "Benchmark", "Example"} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(rest); rest == "" || !unicode.IsLower(r) {
			return true
		}
	}
	return false
}

// features are the features u uses, itself or through the units it names,
// sorted.
func (u *testUnit) features(byDecl map[*decl][]string, byErr map[*testUnit][]string, seen map[*testUnit]bool) []string {
	if seen[u] {
		return nil
	}
	seen[u] = true
	set := map[string]bool{}
	for _, d := range u.decls {
		for _, f := range byDecl[d] {
			set[f] = true
		}
	}
	for _, f := range byErr[u] {
		set[f] = true
	}
	for _, o := range u.uses {
		for _, f := range o.features(byDecl, byErr, seen) {
			set[f] = true
		}
	}
	if len(set) == 0 {
		return nil
	}
	return sortedNames(set)
}

// Test errors whose names tell what the vulnerable tree lacks.
var (
	unknownField  = regexp.MustCompile(`unknown field ([\pL_][\pL\pN_]*) in struct literal`)
	noMember      = regexp.MustCompile(`has no field or method ([\pL_][\pL\pN_]*)`)
	missingMethod = regexp.MustCompile(`missing method ([\pL_][\pL\pN_]*)`)
	undefinedName = regexp.MustCompile(`: undefined: ([\pL_][\pL\pN_]*)$`)
	errorPos      = regexp.MustCompile(`^(.+_test\.go):([0-9]+):[0-9]+: `)
)

// errorFeatures attributes test errors to the test units they are in:
// those that name only what the fix adds or changes, beside the
// vulnerable code.
func (a *analysis) errorFeatures(errs []string, units []*testUnit, reach map[*decl]*decl) map[*testUnit][]string {
	out := map[*testUnit][]string{}
	for _, e := range errs {
		m := errorPos.FindStringSubmatch(e)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[2])
		var u *testUnit
		for _, c := range units {
			if path.Join(c.p.pf.Dir, c.file.name) != m[1] {
				continue
			}
			from, to := a.fset.Position(declStart(c.node)).Line, a.fset.Position(c.node.End()).Line
			if from <= line && line <= to {
				u = c
			}
		}
		if u == nil {
			continue
		}
		var named []*decl
		for _, re := range []*regexp.Regexp{unknownField, noMember, missingMethod} {
			if n := re.FindStringSubmatch(e); n != nil {
				a.membersNamed(n[1], func(d *decl) { named = append(named, d) })
			}
		}
		if n := undefinedName.FindStringSubmatch(e); n != nil {
			if d := u.p.byKey[n[1]]; d != nil {
				named = append(named, d)
			}
		}
		var keys []string
		for _, d := range named {
			if d.pkg.buggyByKey[d.key] != nil && !changedDecl(a.fset, d) {
				continue // the vulnerable tree has it as it is
			}
			if reachedBy(d, reach) != nil {
				keys = nil
				break
			}
			keys = append(keys, d.key)
		}
		for _, k := range keys {
			if !slices.Contains(out[u], k) {
				out[u] = append(out[u], k)
			}
		}
	}
	return out
}

// changedDecl says whether the vulnerable tree declares d otherwise.
func changedDecl(fset *token.FileSet, d *decl) bool {
	old := d.pkg.buggyByKey[d.key]
	return old == nil || old.kind != d.kind || shape(fset, old) != shape(fset, d)
}

// oldTests are the test functions of the vulnerable trees' test files, by
// directory and name, printed without comments.
func oldTests(pkgs []pkgFiles) map[string]map[string]string {
	out := map[string]map[string]string{}
	fset := token.NewFileSet()
	for _, pf := range pkgs {
		out[pf.Dir] = map[string]string{}
		for _, name := range sortedNames(pf.BuggyTests) {
			f, err := parser.ParseFile(fset, name, pf.BuggyTests[name], parser.SkipObjectResolution)
			if err != nil {
				continue
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && isTestFunc(fd.Name.Name) {
					out[pf.Dir][fd.Name.Name] = printFunc(fset, fd)
				}
			}
		}
	}
	return out
}

// printFunc is a func declaration as gofmt prints it, without comments:
// what tells a changed test from a reformatted one.
func printFunc(fset *token.FileSet, fd *ast.FuncDecl) string {
	c := *fd
	c.Doc = nil
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, &c); err != nil {
		return fd.Name.Name
	}
	return b.String()
}

// exercised says whether a test the fix adds or changes, and that is not
// dropped, names a vulnerable symbol, itself or through what it names.
func (a *analysis) exercised(units []*testUnit, drop map[*testUnit]bool, old map[string]map[string]string, vuln []*decl, g *declGraph) bool {
	for _, u := range units {
		if !u.test || drop[u] {
			continue
		}
		if was := old[u.p.pf.Dir][u.name]; was != "" && was == printFunc(a.fset, u.node.(*ast.FuncDecl)) {
			continue
		}
		var from []*decl
		seen := map[*testUnit]bool{}
		queue := []*testUnit{u}
		for len(queue) > 0 {
			c := queue[0]
			queue = queue[1:]
			if seen[c] {
				continue
			}
			seen[c] = true
			from = append(from, c.decls...)
			queue = append(queue, c.uses...)
		}
		reach := g.reach(from)
		for _, v := range vuln {
			if _, ok := reach[v]; ok {
				return true
			}
		}
	}
	return false
}

// pruneFile is f without the declarations drop, their doc comments, and
// the imports only they used (info tells which).
func pruneFile(f *srcFile, drop []ast.Decl, info *types.Info) ([]byte, error) {
	src := f.src
	type span struct{ from, to int }
	var spans []span
	imported := map[string]string{} // the dropped code's imports: path -> name
	unknown := map[string]bool{}    // what it selects from that go/types could not tell
	for _, d := range drop {
		spans = append(spans, span{lineStart(src, tokenOffset(f.f, declStart(d))), lineEnd(src, tokenOffset(f.f, d.End()))})
		ast.Inspect(d, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok {
					switch obj := info.Uses[x].(type) {
					case *types.PkgName:
						imported[obj.Imported().Path()] = x.Name
					case nil:
						// An import the package is not named as its
						// path ends (guessName), or an undeclared name.
						unknown[x.Name] = true
					}
				}
			}
			return true
		})
	}
	out := cutSpans(src, spans, func(s span) (int, int) { return s.from, s.to })

	// The imports only the dropped declarations used: the file does not
	// compile with them.
	fset := token.NewFileSet()
	pf, err := parser.ParseFile(fset, f.name, out, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("the pruned file does not parse: %w", err)
	}
	left := map[string]bool{} // what the rest selects from
	ast.Inspect(pf, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				left[x.Name] = true
			}
		}
		return true
	})
	gone := map[*ast.ImportSpec]bool{}
	for _, im := range pf.Imports {
		ip, _ := strconv.Unquote(im.Path.Value)
		if name, ok := imported[ip]; ok && !left[name] && (im.Name == nil || im.Name.Name == name) {
			gone[im] = true
		}
	}
	for _, x := range sortedNames(unknown) {
		if left[x] {
			continue
		}
		im := importOf(&srcFile{name: f.name, src: out, f: pf}, func(ip string, spec *ast.ImportSpec) bool {
			return spec.Name == nil && !gone[spec] && strings.Contains(strings.ToLower(path.Base(ip)), strings.ToLower(x))
		})
		if im == nil {
			return nil, fmt.Errorf("cannot tell which import %s is, which only the dropped tests use", x)
		}
		gone[im] = true
	}
	var cuts []span
	for _, gd := range pf.Decls {
		gd, ok := gd.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		var specs []*ast.ImportSpec
		for _, s := range gd.Specs {
			if gone[s.(*ast.ImportSpec)] {
				specs = append(specs, s.(*ast.ImportSpec))
			}
		}
		switch {
		case len(specs) == 0:
		case len(specs) == len(gd.Specs):
			cuts = append(cuts, span{lineStart(out, tokenOffset(pf, declStart(gd))), lineEnd(out, tokenOffset(pf, gd.End()))})
		default:
			for _, im := range specs {
				from := im.Pos()
				if im.Doc != nil {
					from = im.Doc.Pos()
				}
				cuts = append(cuts, span{lineStart(out, tokenOffset(pf, from)), lineEnd(out, tokenOffset(pf, im.End()))})
			}
		}
	}
	out = cutSpans(out, cuts, func(s span) (int, int) { return s.from, s.to })
	if clean, err := format.Source(src); err == nil && bytes.Equal(clean, src) {
		// gofmt'd before, gofmt'd after: the cuts may leave an
		// import group's alignment or blank lines to tidy.
		if out, err = format.Source(out); err != nil {
			return nil, fmt.Errorf("the pruned file does not format: %w", err)
		}
	}
	if _, err := parser.ParseFile(token.NewFileSet(), f.name, out, parser.SkipObjectResolution); err != nil {
		return nil, fmt.Errorf("the pruned file does not parse: %w", err)
	}
	return out, nil
}

// cutSpans removes the byte ranges of spans from src, and the blank line
// a cut leaves doubled.
func cutSpans[S any](src []byte, spans []S, bounds func(S) (int, int)) []byte {
	sort.Slice(spans, func(i, j int) bool {
		a, _ := bounds(spans[i])
		b, _ := bounds(spans[j])
		return a > b
	})
	out := slices.Clone(src)
	end := len(out) + 1
	for _, s := range spans {
		from, to := bounds(s)
		if to > end {
			to = end // overlapping: the later one is cut already
		}
		if from >= to {
			continue
		}
		before, after := out[:from], out[to:]
		if bytes.HasSuffix(before, []byte("\n\n")) && (bytes.HasPrefix(after, []byte("\n")) || len(after) == 0) {
			if len(after) == 0 {
				before = bytes.TrimRight(before, "\n")
				before = append(before, '\n')
			} else {
				after = after[1:]
			}
		}
		out = append(slices.Clone(before), after...)
		end = from
	}
	return out
}

// lineEnd is the offset after the end of the line holding offset i (the
// last byte of a declaration, whose line may end in a comment).
func lineEnd(src []byte, i int) int {
	if j := bytes.IndexByte(src[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(src)
}

// replaceFileDiff replaces the diff of file name in a git diff of many
// files with chunk, which is empty when the file no longer changes.
func replaceFileDiff(diff, name, chunk string) string {
	header := "diff --git a/" + name + " b/" + name + "\n"
	i := 0
	for {
		j := strings.Index(diff[i:], header)
		if j < 0 {
			return diff + chunk
		}
		i += j
		if i == 0 || diff[i-1] == '\n' {
			break
		}
		i++
	}
	end := len(diff)
	if k := strings.Index(diff[i+len(header):], "\ndiff --git "); k >= 0 {
		end = i + len(header) + k + 1
	}
	return diff[:i] + chunk + diff[end:]
}
