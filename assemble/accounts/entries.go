package accounts

import (
	"strconv"
	"strings"
)

// Parsers for the five line formats, following shadow-utils' sgetpwent,
// sgetgrent, sgetspent, sgetsgent and subordinate_parse: a line they reject
// is kept verbatim and takes no part in lookups, here as there.

// splitFields cuts s at up to max-1 colons, like the strchr loops of the
// shadow parsers; rest reports whether text remained after the last field.
func splitFields(s string, max int) (fields []string, rest bool) {
	for len(fields) < max {
		i := strings.IndexByte(s, ':')
		if i < 0 {
			return append(fields, s), false
		}
		fields = append(fields, s[:i])
		s = s[i+1:]
	}
	return fields, true
}

// splitList is shadow's list()/build_list(): comma-separated, keeping empty
// members in the middle and dropping a trailing empty one.
func splitList(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ',')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
	return out
}

// delList is shadow's del_list: every occurrence goes. It reports whether
// the member was there.
func delList(list []string, member string) ([]string, bool) {
	var out []string
	found := false
	for _, m := range list {
		if m == member {
			found = true
			continue
		}
		out = append(out, m)
	}
	return out, found
}

type passwdEntry struct {
	name, passwd       string
	uid, gid           uint32
	gecos, home, shell string
}

func (p *passwdEntry) key() string { return p.name }

// format is glibc's putpwent.
func (p *passwdEntry) format() string {
	return p.name + ":" + p.passwd + ":" + strconv.FormatUint(uint64(p.uid), 10) + ":" +
		strconv.FormatUint(uint64(p.gid), 10) + ":" + p.gecos + ":" + p.home + ":" + p.shell
}

func parsePasswd(line string) record {
	f, rest := splitFields(line, 7)
	if len(f) != 7 || rest {
		return nil
	}
	uid, ok := parseID(f[2])
	if !ok {
		return nil
	}
	gid, ok := parseID(f[3])
	if !ok {
		return nil
	}
	return &passwdEntry{name: f[0], passwd: f[1], uid: uid, gid: gid, gecos: f[4], home: f[5], shell: f[6]}
}

type groupEntry struct {
	name, passwd string
	gid          uint32
	members      []string
}

func (g *groupEntry) key() string { return g.name }

// format is glibc's putgrent.
func (g *groupEntry) format() string {
	return g.name + ":" + g.passwd + ":" + strconv.FormatUint(uint64(g.gid), 10) + ":" + strings.Join(g.members, ",")
}

func parseGroup(line string) record {
	f, rest := splitFields(line, 4)
	// sgetgrent wants four fields; with three it would read a stale
	// member field, so such a line is treated as unparsable here.
	if len(f) != 4 || rest || f[2] == "" {
		return nil
	}
	gid, ok := parseID(f[2])
	if !ok {
		return nil
	}
	return &groupEntry{name: f[0], passwd: f[1], gid: gid, members: splitList(f[3])}
}

// shadowEntry is only ever written new (model, sse-runner) or kept as read,
// so it keeps the fields as text.
type shadowEntry struct {
	fields []string
}

func (s *shadowEntry) key() string    { return s.fields[0] }
func (s *shadowEntry) format() string { return strings.Join(s.fields, ":") }

// parseShadow follows sgetspent: nine fields (a missing ninth is allowed)
// or the old five-field form, numeric fields empty or numbers.
func parseShadow(line string) record {
	var f []string
	s := line
	for s != "" && len(f) < 9 {
		i := strings.IndexByte(s, ':')
		if i < 0 {
			f = append(f, s)
			s = ""
			break
		}
		f = append(f, s[:i])
		s = s[i+1:]
	}
	if s != "" {
		return nil
	}
	if len(f) == 8 {
		f = append(f, "")
	}
	if len(f) != 9 && len(f) != 5 {
		return nil
	}
	for i := 2; i < len(f); i++ {
		if f[i] == "" {
			continue
		}
		if i == 8 {
			if _, ok := parseULong(f[i]); !ok {
				return nil
			}
		} else if _, ok := parseLong(f[i]); !ok {
			return nil
		}
	}
	return &shadowEntry{fields: f}
}

// newShadow is the line useradd writes; -1 fields are empty (putspent).
func newShadow(name string, day, min, max, warn int64) *shadowEntry {
	num := func(v int64) string {
		if v == -1 {
			return ""
		}
		return strconv.FormatInt(v, 10)
	}
	if day == 0 {
		// useradd: "Better disable aging than requiring a password change".
		day = -1
	}
	return &shadowEntry{fields: []string{name, "!", num(day), num(min), num(max), num(warn), "", "", ""}}
}

type gshadowEntry struct {
	name, passwd    string
	admins, members []string
}

func (g *gshadowEntry) key() string { return g.name }

// format is shadow's putsgent.
func (g *gshadowEntry) format() string {
	return g.name + ":" + g.passwd + ":" + strings.Join(g.admins, ",") + ":" + strings.Join(g.members, ",")
}

func parseGshadow(line string) record {
	f, rest := splitFields(line, 4)
	if len(f) != 4 || rest {
		return nil
	}
	return &gshadowEntry{name: f[0], passwd: f[1], admins: splitList(f[2]), members: splitList(f[3])}
}

type subidEntry struct {
	owner        string
	start, count uint64
}

func (s *subidEntry) key() string { return s.owner }

func (s *subidEntry) format() string {
	return s.owner + ":" + strconv.FormatUint(s.start, 10) + ":" + strconv.FormatUint(s.count, 10)
}

// parseSubid follows subordinate_parse, which reads three fields and
// ignores anything after a third colon.
func parseSubid(line string) record {
	f, _ := splitFields(line, 3)
	if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
		return nil
	}
	start, ok := parseULong(f[1])
	if !ok {
		return nil
	}
	count, ok := parseULong(f[2])
	if !ok {
		return nil
	}
	return &subidEntry{owner: f[0], start: start, count: count}
}
