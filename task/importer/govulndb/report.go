// Package govulndb makes tasks from the Go vulnerability database: each
// report of golang.org/x/vulndb (data/reports/GO-*.yaml) names a module,
// the version before the fix (vulnerable_at), the fixed version and the
// affected packages. A task is a recipe, not a copy: its Dockerfile fetches
// the module at vulnerable_at and its dependencies through the module
// proxy when the case image is built, and the fix is the diff of the two
// module versions, limited to the affected packages.
package govulndb

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"gopkg.in/yaml.v3"
)

// Report is the part of a vulndb report the importer reads.
type Report struct {
	ID          string   `yaml:"id"`
	Modules     []Module `yaml:"modules"`
	Summary     string   `yaml:"summary"`
	Description string   `yaml:"description"`
	CVEs        []string `yaml:"cves"`
	GHSAs       []string `yaml:"ghsas"`
}

// Module is one affected module of a report.
type Module struct {
	Module       string    `yaml:"module"`
	Versions     []Version `yaml:"versions"`
	VulnerableAt string    `yaml:"vulnerable_at"`
	Packages     []Package `yaml:"packages"`
}

// Version is one event of a module's vulnerable range.
type Version struct {
	Introduced string `yaml:"introduced"`
	Fixed      string `yaml:"fixed"`
}

// Package is one affected package and its vulnerable symbols.
type Package struct {
	Package        string   `yaml:"package"`
	Symbols        []string `yaml:"symbols"`
	DerivedSymbols []string `yaml:"derived_symbols"`
}

// Limits on what a report may hold. A report is data from a database the
// importer does not control: everything in it ends up in file names,
// Dockerfile lines and shell scripts, so it is checked before use.
const (
	maxReportBytes = 256 << 10
	maxTextBytes   = 32 << 10
	maxListLen     = 2000
)

var (
	idPattern     = regexp.MustCompile(`^GO-[0-9]{4}-[0-9]{4,6}$`)
	symbolPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
	aliasPattern  = regexp.MustCompile(`^[A-Z]+-[A-Za-z0-9-]{1,40}$`)
)

// ParseReport reads and checks one report. A report with a hostile or
// malformed id, module path, version or package is refused whole: the
// error is one line that names the field.
func ParseReport(name string, data []byte) (*Report, error) {
	if len(data) > maxReportBytes {
		return nil, fmt.Errorf("%s: the report is %d bytes, more than %d: refusing it (a vulndb report is a few KiB)", name, len(data), maxReportBytes)
	}
	var r Report
	if err := yaml.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a vulndb report: %s", name, oneLine(err.Error()))
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("%s: refusing the report: %w", name, err)
	}
	return &r, nil
}

func (r *Report) check() error {
	if !idPattern.MatchString(r.ID) {
		return fmt.Errorf("id %q is not a vulndb id (GO-YYYY-NNNN)", clip(r.ID))
	}
	if len(r.Modules) > maxListLen {
		return fmt.Errorf("%d modules, more than %d", len(r.Modules), maxListLen)
	}
	for _, m := range r.Modules {
		if err := m.check(); err != nil {
			return err
		}
	}
	for _, t := range []struct{ what, s string }{{"summary", r.Summary}, {"description", r.Description}} {
		if len(t.s) > maxTextBytes {
			return fmt.Errorf("the %s is %d bytes, more than %d", t.what, len(t.s), maxTextBytes)
		}
		if !utf8.ValidString(t.s) || strings.ContainsFunc(t.s, isControl) {
			return fmt.Errorf("the %s holds control characters or invalid UTF-8", t.what)
		}
	}
	for _, a := range append(append([]string(nil), r.CVEs...), r.GHSAs...) {
		if !aliasPattern.MatchString(a) {
			return fmt.Errorf("alias %q is not a CVE or GHSA id", clip(a))
		}
	}
	return nil
}

func (m *Module) check() error {
	if m.Module == "std" || m.Module == "cmd" || m.Module == "toolchain" {
		return nil // the importer skips them, with the reason
	}
	if err := module.CheckPath(m.Module); err != nil || len(m.Module) > 200 {
		return fmt.Errorf("module %q is not a valid module path", clip(m.Module))
	}
	vs := []string{m.VulnerableAt}
	for _, v := range m.Versions {
		vs = append(vs, v.Introduced, v.Fixed)
	}
	if len(m.Versions) > maxListLen || len(m.Packages) > maxListLen {
		return fmt.Errorf("module %s: too many versions or packages", m.Module)
	}
	for _, v := range vs {
		if v == "" {
			continue
		}
		// Not module.Check: the database names versions beyond the
		// path's major version (a v2.0.0 of a path without /v2).
		sv := strings.TrimSuffix("v"+v, "+incompatible")
		if len(v) > 100 || semver.Canonical(sv) != sv {
			return fmt.Errorf("module %s: version %q is not a canonical semantic version", m.Module, clip(v))
		}
	}
	for _, p := range m.Packages {
		if err := module.CheckImportPath(p.Package); err != nil || (p.Package != m.Module && !strings.HasPrefix(p.Package, m.Module+"/")) {
			return fmt.Errorf("module %s: package %q is not an import path in the module", m.Module, clip(p.Package))
		}
		if len(p.Symbols)+len(p.DerivedSymbols) > maxListLen {
			return fmt.Errorf("package %s: too many symbols", p.Package)
		}
		for _, s := range append(append([]string(nil), p.Symbols...), p.DerivedSymbols...) {
			if !symbolPattern.MatchString(s) {
				return fmt.Errorf("package %s: symbol %q is not a Go identifier", p.Package, clip(s))
			}
		}
	}
	return nil
}

// isControl reports the characters a description must not hold: control
// characters other than newline and tab (an escape sequence in a terminal,
// a carriage return that hides a line).
func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0)
}

// clip shortens a hostile value for a message: one line, at most 60 bytes.
func clip(s string) string {
	s = oneLine(s)
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "?")), " ")
}

// errSkip marks the reasons a report makes no task; they go to the table.
var errSkip = errors.New("skipped")

// skipf is a reason to skip a report, for the table.
func skipf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errSkip}, args...)...)
}

// Target picks the module a task is made of: the first one that is not
// the standard library or the toolchain, has a vulnerable_at and a fixed
// version after it. It returns the fixed version: the first one above
// vulnerable_at.
func (r *Report) Target() (Module, string, error) {
	std := false
	for _, m := range r.Modules {
		switch {
		case m.Module == "std" || m.Module == "cmd" || m.Module == "toolchain":
			std = true
			continue
		case m.VulnerableAt == "":
			continue
		case len(m.Packages) == 0:
			continue
		}
		fixed := ""
		for _, v := range m.Versions {
			if v.Fixed == "" || semver.Compare("v"+v.Fixed, "v"+m.VulnerableAt) <= 0 {
				continue
			}
			if fixed == "" || semver.Compare("v"+v.Fixed, "v"+fixed) < 0 {
				fixed = v.Fixed
			}
		}
		if fixed == "" {
			continue
		}
		return m, fixed, nil
	}
	if std {
		return Module{}, "", skipf("a standard library or toolchain report")
	}
	return Module{}, "", skipf("no module with vulnerable_at, a fixed version after it and packages")
}
