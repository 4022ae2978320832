package accounts

import (
	"bytes"
	"fmt"
	"strings"
)

// record is one parsed line of an account file.
type record interface {
	key() string    // the name entries are looked up by
	format() string // the line shadow-utils writes for a changed entry
}

// entry is one line of a file, as shadow's commonio keeps it: the original
// text, and the parsed record when the line parses (never for NIS lines).
type entry struct {
	line    string
	lineNo  int // 1-based; 0 for an entry this package added
	rec     record
	changed bool // written from rec instead of line
}

// db is an account file held as shadow's commonio holds it.
type db struct {
	path    string
	entries []*entry
}

// isNIS is commonio's name_is_nis.
func isNIS(s string) bool {
	return strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-")
}

// parseDB splits data into lines like commonio_open (fgets, one trailing
// newline stripped per line; a last line without a newline still counts)
// and parses every line that is not a NIS line.
func parseDB(path string, data []byte, parse func(string) record) (*db, error) {
	d := &db{path: path}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, fmt.Errorf("%s line %d: NUL byte, which shadow-utils cannot handle", path, bytes.Count(data[:i], []byte("\n"))+1)
	}
	text := string(data)
	n := 0
	for len(text) > 0 {
		n++
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		e := &entry{line: line, lineNo: n}
		if !isNIS(line) {
			e.rec = parse(line)
		}
		d.entries = append(d.entries, e)
	}
	return d, nil
}

// bytes is commonio's write_all: changed entries from their fields,
// the others as they were read, each followed by a newline.
func (d *db) bytes() []byte {
	var b strings.Builder
	for _, e := range d.entries {
		if e.changed {
			b.WriteString(e.rec.format())
		} else {
			b.WriteString(e.line)
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// find returns the index of the first entry named name, or -1. Like
// commonio_update and commonio_remove it refuses a name that two entries
// share, since shadow-utils would fail there.
func (d *db) find(name string) (int, error) {
	idx := -1
	for i, e := range d.entries {
		if e.rec == nil || e.rec.key() != name {
			continue
		}
		if idx >= 0 {
			return -1, fmt.Errorf("%s line %d: a second entry named %q (first on line %d); shadow-utils refuses to edit it, fix it with pwck or grpck",
				d.path, e.lineNo, name, d.entries[idx].lineNo)
		}
		idx = i
	}
	return idx, nil
}

// lookup returns the first record named name, like commonio_locate.
func (d *db) lookup(name string) record {
	for _, e := range d.entries {
		if e.rec != nil && e.rec.key() == name {
			return e.rec
		}
	}
	return nil
}

// remove is commonio_remove; removing an absent name is not an error here
// because every caller checks presence first, as shadow-utils does.
func (d *db) remove(name string) error {
	i, err := d.find(name)
	if err != nil || i < 0 {
		return err
	}
	d.entries = append(d.entries[:i], d.entries[i+1:]...)
	return nil
}

// update is commonio_update: replace the entry of the same name in place,
// or insert a new one before the first NIS line (KEEP_NIS_AT_END), else at
// the end.
func (d *db) update(rec record) error {
	i, err := d.find(rec.key())
	if err != nil {
		return err
	}
	if i >= 0 {
		d.entries[i].rec = rec
		d.entries[i].changed = true
		return nil
	}
	e := &entry{rec: rec, changed: true}
	for j, p := range d.entries {
		name := p.line
		if p.rec != nil {
			name = p.rec.key()
		}
		if isNIS(name) {
			d.entries = append(d.entries[:j], append([]*entry{e}, d.entries[j:]...)...)
			return nil
		}
	}
	d.entries = append(d.entries, e)
	return nil
}

// appendEntry is commonio_append (used for subordinate ids): always at the end.
func (d *db) appendEntry(rec record) {
	d.entries = append(d.entries, &entry{rec: rec, changed: true})
}

// records returns the parsed entries in file order.
func (d *db) records() []record {
	var out []record
	for _, e := range d.entries {
		if e.rec != nil {
			out = append(out, e.rec)
		}
	}
	return out
}
