package accounts

import (
	"math"
	"strings"
)

// loginDefs holds /etc/login.defs as shadow's getdef reads it.
type loginDefs map[string]string

// parseLoginDefs follows getdef.c's def_load: trailing white space goes,
// blank and '#' lines are skipped, the first word is the name, the value
// starts after white space and double quotes and ends at the next double
// quote. A later definition wins. An absent file leaves every default.
func parseLoginDefs(data []byte) loginDefs {
	defs := loginDefs{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRightFunc(line, func(r rune) bool { return r < 0x80 && isCSpace(byte(r)) })
		name := strings.TrimLeft(line, " \t")
		if name == "" || name[0] == '#' {
			continue
		}
		i := strings.IndexAny(name, " \t")
		if i < 0 {
			continue
		}
		value := strings.TrimLeft(name[i+1:], " \"\t")
		name = name[:i]
		if j := strings.IndexByte(value, '"'); j >= 0 {
			value = value[:j]
		}
		defs[name] = value
	}
	return defs
}

func (d loginDefs) str(name string) (string, bool) {
	v, ok := d[name]
	return v, ok
}

// ulong is getdef_ulong: an unparsable value falls back to the default,
// as shadow-utils does after a warning.
func (d loginDefs) ulong(name string, def uint64) uint64 {
	v, ok := d[name]
	if !ok {
		return def
	}
	n, ok := parseULong(v)
	if !ok {
		return def
	}
	return n
}

// id is getdef_ulong cast to uid_t/gid_t, as the allocators use it.
func (d loginDefs) id(name string, def uint64) uint32 {
	return uint32(d.ulong(name, def))
}

// num is getdef_num: an int, else the default.
func (d loginDefs) num(name string, def int64) int64 {
	v, ok := d[name]
	if !ok {
		return def
	}
	n, ok := parseLong(v)
	if !ok || n > math.MaxInt32 || n < math.MinInt32 {
		return def
	}
	return n
}

// bool is getdef_bool: true only for "yes", in any case.
func (d loginDefs) bool(name string) bool {
	return strings.EqualFold(d[name], "yes")
}
