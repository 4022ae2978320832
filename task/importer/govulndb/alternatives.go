package govulndb

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// variantSalt varies the variant's new names; fixed, so that an import is
// deterministic.
const variantSalt = "alt"

// pkgPath is the import path of the package in directory dir of module
// mod.
func pkgPath(mod, dir string) string {
	if dir == "." {
		return mod
	}
	return mod + "/" + dir
}

// packageFiles are the affected package directories at both versions, as
// analyzeFix reads them.
func (p *plan) packageFiles() ([]pkgFiles, error) {
	var out []pkgFiles
	for _, dir := range p.pkgDirs {
		pf := pkgFiles{Path: pkgPath(p.mod.Module, dir), Dir: dir, Buggy: map[string][]byte{}, Fixed: map[string][]byte{}, Tests: map[string][]byte{}, BuggyTests: map[string][]byte{}}
		for _, z := range []*modZip{p.old, p.nw} {
			for name := range z.files {
				if path.Dir(name) != dir || !strings.HasSuffix(name, ".go") {
					continue
				}
				src, _, err := z.read(name)
				if err != nil {
					return nil, err
				}
				base := path.Base(name)
				switch {
				case z == p.old && strings.HasSuffix(base, "_test.go"):
					pf.BuggyTests[base] = src
				case z == p.old:
					pf.Buggy[base] = src
				case z == p.nw && strings.HasSuffix(base, "_test.go"):
					pf.Tests[base] = src
				case z == p.nw:
					pf.Fixed[base] = src
				}
			}
		}
		out = append(out, pf)
	}
	return out, nil
}

// alternatives works out what the hidden tests need of a fix (p.api: the
// names the issue text states, the messages they compare) and writes the
// two patches verify grades beside the reference: the stubs, which declare
// on the buggy tree what the tests call so that they compile there, and
// the variant, the reference with its private names renamed and its new
// functions moved. A fix whose tests need what no stub can declare is
// skipped; a variant that cannot be made with certainty is left out, and
// the task says so in p.notes.
func (p *plan) alternatives() error {
	pkgs, err := p.packageFiles()
	if err != nil {
		return err
	}
	api, err := analyzeFix(pkgs)
	if err != nil {
		return skipf("the fix's tests do not parse: %s", oneLine(err.Error()))
	}
	var used map[string]string
	// A new field the tests set is stubbed on the vulnerable tree; but
	// when the vulnerable symbols never reach it, it is a feature beside
	// the fix, and so are its tests.
	if api.blocked() || len(api.newFields()) > 0 {
		b, err := dropBeside(pkgs, api, p.symbols(), p.mod.VulnerableAt)
		if err != nil {
			return err
		}
		used = b.Used
		if b.Pkgs != nil {
			if err := p.dropTests(b); err != nil {
				return err
			}
			pkgs = b.Pkgs
			if api, err = analyzeFix(pkgs); err != nil {
				return skipf("the fix's tests do not parse once pruned: %s", oneLine(err.Error()))
			}
		}
	}
	keys := func(ns []apiName) string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Key)
		}
		return strings.Join(out, ", ")
	}
	// A name the vulnerable code uses is the fix's own: say so, that no
	// one looks for a test to drop.
	ours := func(ns []apiName) string {
		var out []string
		for _, n := range ns {
			if by := used[n.Key]; by != "" {
				out = append(out, fmt.Sprintf("%s, which the report names, uses %s", by, n.Key))
			}
		}
		if len(out) == 0 {
			return ""
		}
		return " (" + strings.Join(out, "; ") + ")"
	}
	switch {
	case len(api.Unstubbable) > 0:
		return skipf("the hidden tests need %s, which no stub can declare on v%s%s", keys(api.Unstubbable), p.mod.VulnerableAt, ours(api.Unstubbable))
	case len(api.Changed) > 0:
		return skipf("the hidden tests use %s as the fix changed it, which no stub can make up for on v%s%s", keys(api.Changed), p.mod.VulnerableAt, ours(api.Changed))
	case len(api.TestErrors) > 0:
		return skipf("the hidden tests do not compile on v%s even with stubs: %s", p.mod.VulnerableAt, oneLine(api.TestErrors[0]))
	case len(api.OldTestErrors) > 0:
		// The function test runs them on the agent's tree: with the
		// reference patch they do not compile, and the task cannot verify.
		return skipf("the fix removes or changes what the package's own tests use, so they do not compile with it: %s", oneLine(api.OldTestErrors[0]))
	}
	p.api = api
	var stubs strings.Builder
	for _, s := range api.Stubs {
		name := path.Join(s.Dir, s.Name)
		a, inOld, err := p.old.read(name)
		if err != nil {
			return err
		}
		d, _, err := fileDiff(name, a, s.Src, inOld, true)
		if err != nil {
			return err
		}
		stubs.WriteString(d)
	}
	p.stubs = stubs.String()

	private := map[string][]string{}
	for _, n := range api.Private {
		private[n.Dir] = append(private[n.Dir], n.Key)
	}
	renamed := map[string][]byte{} // path in the module -> the variant's file
	var names []string
	for _, pf := range pkgs {
		keys := private[pf.Dir]
		if len(keys) == 0 {
			continue
		}
		files, err := renameVariant(pf.Fixed, keys, variantSalt)
		if err != nil {
			p.notes = append(p.notes, "no renamed variant: "+oneLine(err.Error()))
			return nil
		}
		for base, src := range files {
			renamed[path.Join(pf.Dir, base)] = src
		}
		for _, k := range keys {
			names = append(names, pkgPath(p.mod.Module, pf.Dir)+"."+k)
		}
	}
	if len(names) == 0 {
		return nil // the reference adds no private name: it is its own variant
	}
	sort.Strings(names)
	var v strings.Builder
	fmt.Fprintf(&v, "The reference fix of %s as another author could have written it: its private names renamed, its new functions moved.\n%s%s\n\n", p.report.ID, task.VariantNote, strings.Join(names, ", "))
	changed := slices.Clone(p.patchNames)
	for name, src := range renamed {
		if b, _, _ := p.nw.read(name); !bytes.Equal(b, src) && !slices.Contains(changed, name) {
			changed = append(changed, name)
		}
	}
	sort.Strings(changed)
	for _, name := range changed {
		a, inOld, err := p.old.read(name)
		if err != nil {
			return err
		}
		b, inNew := renamed[name]
		if !inNew {
			if b, inNew, err = p.nw.read(name); err != nil {
				return err
			}
		}
		d, _, err := fileDiff(name, a, b, inOld, inNew)
		if err != nil {
			return err
		}
		v.WriteString(d)
	}
	p.variant = v.String()
	return nil
}

// newFields are the Needed fields of structs the vulnerable tree has,
// which the Stubs add to them.
func (f *fixAPI) newFields() []apiName {
	var out []apiName
	for _, n := range f.Needed {
		if n.Kind == kindField && !slices.ContainsFunc(f.Unstubbable, func(u apiName) bool { return u.Path == n.Path && u.Key == n.Key }) {
			out = append(out, n)
		}
	}
	return out
}

// blocked says whether the hidden tests need what no stub gives them on
// the vulnerable tree.
func (f *fixAPI) blocked() bool {
	return len(f.Unstubbable) > 0 || len(f.Changed) > 0 || len(f.TestErrors) > 0
}

// symbols are the report's vulnerable symbols ("Config.parseWildcardRules")
// by package import path; the derived symbols are exported callers,
// which reach the vulnerable code but are not it.
func (p *plan) symbols() map[string][]string {
	out := map[string][]string{}
	for _, pk := range p.mod.Packages {
		out[pk.Package] = append(out[pk.Package], pk.Symbols...)
	}
	return out
}

// dropTests takes the tests dropBeside dropped out of the hidden tests
// (test.diff is the diff to the pruned files) and notes them.
func (p *plan) dropTests(b *besideDrop) error {
	for _, name := range sortedNames(b.Pruned) {
		a, inOld, err := p.old.read(name)
		if err != nil {
			return err
		}
		chunk := ""
		if !inOld || !bytes.Equal(a, b.Pruned[name]) {
			if chunk, _, err = fileDiff(name, a, b.Pruned[name], inOld, true); err != nil {
				return err
			}
		}
		p.test = replaceFileDiff(p.test, name, chunk)
	}
	for _, d := range b.Dropped {
		p.notes = append(p.notes, d.Note())
	}
	return nil
}
