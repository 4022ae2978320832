package runtimebin

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// npmRange is a parsed npm version range: any of its sets matches, and a
// set matches when every comparator does.
type npmRange [][]comparator

type comparator struct {
	op string // ">=", ">", "<", "<=" or "="
	v  string // canonical semver with a "v"
}

// parseNPMRange parses the subset of npm's range grammar that
// dependencies use: exact versions, partial and x versions, ^, ~ and the
// comparison operators, joined by spaces and ||.
func parseNPMRange(spec string) (npmRange, error) {
	var r npmRange
	for _, set := range strings.Split(spec, "||") {
		var cs []comparator
		fields := strings.Fields(set)
		for i := 0; i < len(fields); i++ {
			f := fields[i]
			// "1.2.3 - 2.3.4"
			if i+2 < len(fields) && fields[i+1] == "-" {
				lo, err := expand("", f)
				if err != nil {
					return nil, fmt.Errorf("version range %q: %w", spec, err)
				}
				hi, err := expand("<=", fields[i+2])
				if err != nil {
					return nil, fmt.Errorf("version range %q: %w", spec, err)
				}
				cs = append(cs, lo[0])
				cs = append(cs, hi...)
				i += 2
				continue
			}
			c, err := expand("", f)
			if err != nil {
				return nil, fmt.Errorf("version range %q: %w", spec, err)
			}
			cs = append(cs, c...)
		}
		r = append(r, cs)
	}
	return r, nil
}

// expand turns one npm comparator into plain ones. defOp applies when f
// has no operator of its own and is a partial version ("" means the
// x-range of it).
func expand(defOp, f string) ([]comparator, error) {
	op := ""
	for _, p := range []string{">=", "<=", ">", "<", "=", "^", "~"} {
		if strings.HasPrefix(f, p) {
			op, f = p, strings.TrimSpace(f[len(p):])
			break
		}
	}
	if op == "" {
		op = defOp
	}
	f = strings.TrimPrefix(f, "v")
	if f == "" || f == "*" || f == "x" || f == "X" {
		return nil, nil // any version
	}
	core, pre, _ := strings.Cut(f, "-")
	core, _, _ = strings.Cut(core, "+")
	parts := strings.Split(core, ".")
	if len(parts) > 3 {
		return nil, fmt.Errorf("%q is not a version", f)
	}
	var n [3]int
	given := 0
	for i, p := range parts {
		if p == "x" || p == "X" || p == "*" {
			break
		}
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q is not a version", f)
		}
		n[i] = v
		given = i + 1
	}
	ver := func(a, b, c int) string { return fmt.Sprintf("v%d.%d.%d", a, b, c) }
	lo := ver(n[0], n[1], n[2])
	if pre != "" && given == 3 {
		lo += "-" + pre
	}
	if !semver.IsValid(lo) {
		return nil, fmt.Errorf("%q is not a version", f)
	}
	switch op {
	case "^":
		var hi string
		switch {
		case n[0] > 0 || given == 1:
			hi = ver(n[0]+1, 0, 0)
		case n[1] > 0 || given == 2:
			hi = ver(0, n[1]+1, 0)
		default:
			hi = ver(0, 0, n[2]+1)
		}
		return []comparator{{">=", lo}, {"<", hi + "-0"}}, nil
	case "~":
		hi := ver(n[0], n[1]+1, 0)
		if given == 1 {
			hi = ver(n[0]+1, 0, 0)
		}
		return []comparator{{">=", lo}, {"<", hi + "-0"}}, nil
	case "", "=":
		switch given {
		case 3:
			return []comparator{{"=", lo}}, nil
		case 2:
			return []comparator{{">=", lo}, {"<", ver(n[0], n[1]+1, 0) + "-0"}}, nil
		case 1:
			return []comparator{{">=", lo}, {"<", ver(n[0]+1, 0, 0) + "-0"}}, nil
		}
		return nil, nil
	case ">=", "<":
		return []comparator{{op, lo}}, nil
	case ">":
		switch given {
		case 2:
			return []comparator{{">=", ver(n[0], n[1]+1, 0)}}, nil
		case 1:
			return []comparator{{">=", ver(n[0]+1, 0, 0)}}, nil
		}
		return []comparator{{op, lo}}, nil
	case "<=":
		switch given {
		case 2:
			return []comparator{{"<", ver(n[0], n[1]+1, 0) + "-0"}}, nil
		case 1:
			return []comparator{{"<", ver(n[0]+1, 0, 0) + "-0"}}, nil
		}
		return []comparator{{op, lo}}, nil
	}
	return nil, fmt.Errorf("%q is not a version", f)
}

// matches reports whether version (npm spelling, no "v") is in r. A
// prerelease matches only a set that names a prerelease of the same
// major.minor.patch, as in npm.
func (r npmRange) matches(version string) bool {
	v := "v" + version
	if !semver.IsValid(v) {
		return false
	}
	for _, set := range r {
		ok := true
		preAllowed := semver.Prerelease(v) == ""
		for _, c := range set {
			cmp := semver.Compare(v, c.v)
			switch c.op {
			case "=":
				ok = ok && cmp == 0
			case ">=":
				ok = ok && cmp >= 0
			case ">":
				ok = ok && cmp > 0
			case "<":
				ok = ok && cmp < 0
			case "<=":
				ok = ok && cmp <= 0
			}
			if semver.Prerelease(c.v) != "" && !strings.HasSuffix(c.v, "-0") && semver.Canonical(strings.TrimSuffix(c.v, semver.Prerelease(c.v))) == strings.TrimSuffix(v, semver.Prerelease(v)) {
				preAllowed = true
			}
		}
		if ok && preAllowed {
			return true
		}
	}
	return false
}
