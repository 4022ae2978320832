package govulndb

import (
	"archive/zip"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// checkDeps skips a fix that cannot build on the vulnerable version's
// dependencies. The case image vendors what the vulnerable version
// requires, and vendors only the packages its own code imports; a fix (or
// its tests) that imports a package the vulnerable version never does, or
// that uses a name a dependency gained after the required version
// (gjson 1.9.3 calls match.MatchLimit, which tidwall/match 1.0.3 lacks),
// fails to compile whatever the agent does. Verify would find out after
// minutes; the zips say so now.
func (p *plan) checkDeps(ctx context.Context, fetch Fetcher) error {
	oldReq, err := requirements(p.old)
	if err != nil {
		return err
	}
	newReq, err := requirements(p.nw)
	if err != nil {
		return err
	}
	// Which packages the vulnerable version imports: the import clauses
	// of every file are enough, and a module can have thousands.
	used, err := importsOf(p.old, func(string) bool { return true }, parser.ImportsOnly)
	if err != nil {
		return err
	}
	changed := map[string]bool{}
	for _, n := range p.changedGo {
		changed[n] = true
	}
	fixImports, err := importsOf(p.nw, func(n string) bool { return changed[n] }, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(fixImports))
	for ip := range fixImports {
		paths = append(paths, ip)
	}
	sort.Strings(paths)
	for _, ip := range paths {
		if isStd(ip) || ip == p.mod.Module || strings.HasPrefix(ip, p.mod.Module+"/") || ip == "C" {
			continue
		}
		mod := moduleOf(ip, oldReq)
		if _, ok := used[ip]; !ok && mod == "" && moduleOf(ip, newReq) != "" && (graphPruned(p.old) || !inGoSum(p.old, moduleOf(ip, newReq))) {
			// A package of a required module may still be vendored,
			// imported by a dependency; a module go.mod does not list
			// (it lists them all from go 1.17 on) is not, nor one
			// that go.sum does not name (crewjam/saml's fix brings
			// xml-roundtrip-validator).
			return skipf("the fix imports %s, of a module v%s does not require (%s %s)", ip, p.mod.VulnerableAt, moduleOf(ip, newReq), newReq[moduleOf(ip, newReq)])
		}
		oldV, newV := oldReq[mod], newReq[mod]
		if mod == "" || newV == "" || semver.Compare(newV, oldV) <= 0 {
			continue
		}
		names := fixImports[ip]
		if len(names) == 0 {
			continue
		}
		have, err := exported(ctx, fetch, mod, oldV, ip)
		if err != nil {
			return err
		}
		for _, n := range names {
			if !have[n] {
				return skipf("the fix needs %s.%s, which %s %s (what v%s requires) lacks: it needs %s", path.Base(ip), n, mod, oldV, p.mod.VulnerableAt, newV)
			}
		}
	}
	return nil
}

// graphPruned says whether z's go.mod lists every module of its build
// (go 1.17 and later).
func graphPruned(z *modZip) bool {
	data, ok, err := z.read("go.mod")
	if err != nil || !ok {
		return false
	}
	mf, err := modfile.ParseLax("go.mod", data, nil)
	return err == nil && mf.Go != nil && semver.Compare("v"+mf.Go.Version, "v1.17") >= 0
}

// inGoSum says whether z's go.sum has a line of module mod: every module
// of its build graph has one.
func inGoSum(z *modZip, mod string) bool {
	data, ok, err := z.read("go.sum")
	if err != nil || !ok {
		return true // nothing to tell by: let the build say
	}
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == mod {
			return true
		}
	}
	return false
}

// requirements are a go.mod's required modules and their versions; a
// module that a replace directive points elsewhere is left out, since its
// version says nothing of its code.
func requirements(z *modZip) (map[string]string, error) {
	data, ok, err := z.read("go.mod")
	if err != nil || !ok {
		return nil, err
	}
	mf, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		return nil, skipf("go.mod does not parse: %s", oneLine(err.Error()))
	}
	req := map[string]string{}
	for _, r := range mf.Require {
		req[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range mf.Replace {
		delete(req, r.Old.Path)
	}
	return req, nil
}

// moduleOf is the module of req that holds the package ip: the longest
// module path that is ip or a prefix of it.
func moduleOf(ip string, req map[string]string) string {
	best := ""
	for m := range req {
		if (ip == m || strings.HasPrefix(ip, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return best
}

// isStd says whether an import path is the standard library's: its first
// element has no dot.
func isStd(ip string) bool {
	first, _, _ := strings.Cut(ip, "/")
	return !strings.Contains(first, ".")
}

// importsOf maps each import path of the Go files of z that keep says to
// the names the files select from it (pkg.Name), sorted; with
// parser.ImportsOnly, to none.
func importsOf(z *modZip, keep func(name string) bool, mode parser.Mode) (map[string][]string, error) {
	sets := map[string]map[string]bool{}
	for name := range z.files {
		if !strings.HasSuffix(name, ".go") || !keep(name) || strings.HasPrefix(name, "vendor/") {
			continue
		}
		if z.files[name].UncompressedSize64 > maxFileBytes {
			continue // generated data (x/image's fonts); its imports are the standard library's
		}
		src, _, err := z.read(name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, mode)
		if err != nil {
			continue // the build says so, with the compiler's words
		}
		local := map[string]string{}
		for _, im := range f.Imports {
			ip, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				continue
			}
			if sets[ip] == nil {
				sets[ip] = map[string]bool{}
			}
			switch {
			case im.Name == nil:
				local[path.Base(ip)] = ip // a guess at the package's name; a miss only skips the name check
			case im.Name.Name != "_" && im.Name.Name != ".":
				local[im.Name.Name] = ip
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok {
				if ip, ok := local[x.Name]; ok {
					sets[ip][sel.Sel.Name] = true
				}
			}
			return true
		})
	}
	out := map[string][]string{}
	for ip, set := range sets {
		names := make([]string, 0, len(set))
		for n := range set {
			names = append(names, n)
		}
		sort.Strings(names)
		out[ip] = names
	}
	return out, nil
}

// exported returns the package-level names the package ip declares in
// module mod at version v.
func exported(ctx context.Context, fetch Fetcher, mod, v, ip string) (map[string]bool, error) {
	zp, _, err := fetch.Fetch(ctx, mod, strings.TrimPrefix(v, "v"))
	if err != nil {
		return nil, err
	}
	zr, err := zip.OpenReader(zp)
	if err != nil {
		return nil, fmt.Errorf("reading %s@%s: %w", mod, v, err)
	}
	defer zr.Close()
	z, err := openModZip(&zr.Reader, mod, strings.TrimPrefix(v, "v"))
	if err != nil {
		return nil, err
	}
	dir := "."
	if ip != mod {
		dir = strings.TrimPrefix(ip, mod+"/")
	}
	have := map[string]bool{}
	for name := range z.files {
		if path.Dir(name) != dir || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, _, err := z.read(name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					have[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						have[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							have[n.Name] = true
						}
					}
				}
			}
		}
	}
	return have, nil
}
