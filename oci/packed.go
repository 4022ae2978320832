package oci

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unsafe"
)

// packedEntries holds a layer's entries in 20 bytes each beside their
// base names, where a slice of IndexEntry took 136 and the whole name:
// a case layer of 200,000 files kept 33 MB of index, now about 7 MB
// (issue 27). Base names and link names live in one byte arena, each
// directory once (dirs); the metadata most entries share (type, mode,
// owner, time) is interned in attrs; what few entries have (devices,
// xattrs, ids beyond 32 bits) is kept aside in extra.
type packedEntries struct {
	recs  []packedRec
	arena []byte // each entry's base name then its link name; directories
	// dirs are the directories of the names, as arena spans; dirs[0]
	// stands for none (a name without a "/").
	dirs  []packedSpan
	dirOf map[string]uint32 // while adding, like attrOf
	attrs []packedAttr
	extra []packedExtra
	// big holds the sizes of 4 GiB or more (or negative, from a forged
	// cache), by entry.
	big map[int32]int64
	// attrOf finds an interned attr while entries are added; it is
	// dropped (done) once an index is complete, and remade if more come.
	attrOf map[packedAttr]uint32
	// listed is true for an index read as an empty list of entries rather
	// than null, so that it is written back the same.
	listed bool
}

type packedRec struct {
	off     uint32 // of the base name in arena; the link name follows it
	dir     uint32 // index in dirs
	attr    uint32 // index in attrs
	size    uint32 // the low 32 bits; the rest in big
	baseLen uint16
	linkLen uint16
}

type packedSpan struct{ off, n uint32 }

type packedAttr struct {
	mtime    int64
	nsec     uint32
	uid, gid uint32
	extra    uint32 // 1 + index in extra, 0 for none
	mode     uint16
	typeflag byte
	marker   Marker
}

// packedExtra is what does not fit a packedAttr; its uid, gid and mode
// replace the attr's.
type packedExtra struct {
	uid, gid           int
	mode               int64
	devmajor, devminor int64
	xattrs             map[string][]byte
}

var errIndexFull = errors.New("the layer's names take more than 4 GiB, more than an index holds")

// add appends e. Names and link names of 64 KiB or more are refused:
// both are far beyond PATH_MAX, which IndexLayer and Merge refuse anyway.
func (p *packedEntries) add(e *IndexEntry) error {
	if len(e.Name) > math.MaxUint16 || len(e.Linkname) > math.MaxUint16 {
		return fmt.Errorf("entry %q: its name or link target is %d bytes long, beyond PATH_MAX (%d)", shorten(e.Name), max(len(e.Name), len(e.Linkname)), PathMax)
	}
	if len(p.arena)+len(e.Name)+len(e.Linkname) > math.MaxUint32 || len(p.recs) >= math.MaxInt32 {
		return errIndexFull
	}
	h := &e.Header
	a := packedAttr{
		mtime:    h.ModTime.Unix(),
		nsec:     uint32(h.ModTime.Nanosecond()),
		typeflag: h.Typeflag,
		marker:   e.Marker,
		mode:     uint16(h.Mode),
		uid:      uint32(h.Uid),
		gid:      uint32(h.Gid),
	}
	if h.Mode < 0 || h.Mode > math.MaxUint16 || h.Uid < 0 || h.Uid > math.MaxUint32 || h.Gid < 0 || h.Gid > math.MaxUint32 ||
		h.Devmajor != 0 || h.Devminor != 0 || len(h.Xattrs) > 0 {
		p.extra = append(p.extra, packedExtra{uid: h.Uid, gid: h.Gid, mode: h.Mode, devmajor: h.Devmajor, devminor: h.Devminor, xattrs: h.Xattrs})
		a.extra = uint32(len(p.extra))
		a.mode, a.uid, a.gid = 0, 0, 0
	}
	if p.attrOf == nil {
		p.attrOf = make(map[packedAttr]uint32, len(p.attrs))
		for i, x := range p.attrs {
			p.attrOf[x] = uint32(i)
		}
	}
	ai, ok := p.attrOf[a]
	if !ok {
		ai = uint32(len(p.attrs))
		p.attrs = append(p.attrs, a)
		p.attrOf[a] = ai
	}
	if h.Size < 0 || h.Size > math.MaxUint32 {
		if p.big == nil {
			p.big = map[int32]int64{}
		}
		p.big[int32(len(p.recs))] = h.Size
	}
	dir, base := uint32(0), e.Name
	if j := strings.LastIndexByte(e.Name, '/'); j >= 0 {
		dir, base = p.dir(e.Name[:j]), e.Name[j+1:]
	}
	p.recs = append(p.recs, packedRec{size: uint32(h.Size), off: uint32(len(p.arena)), dir: dir, attr: ai, baseLen: uint16(len(base)), linkLen: uint16(len(e.Linkname))})
	p.arena = append(p.arena, base...)
	p.arena = append(p.arena, e.Linkname...)
	return nil
}

// dir returns the index of directory d in dirs, adding it if new.
func (p *packedEntries) dir(d string) uint32 {
	if len(p.dirs) == 0 {
		p.dirs = append(p.dirs, packedSpan{}) // none
	}
	// Entries of a directory mostly come together.
	if last := len(p.dirs) - 1; last > 0 && p.span(p.dirs[last]) == d {
		return uint32(last)
	}
	if p.dirOf == nil {
		p.dirOf = make(map[string]uint32, len(p.dirs))
		for i, s := range p.dirs[1:] {
			p.dirOf[p.span(s)] = uint32(i + 1)
		}
	}
	if i, ok := p.dirOf[d]; ok {
		return i
	}
	s := packedSpan{uint32(len(p.arena)), uint32(len(d))}
	p.arena = append(p.arena, d...)
	p.dirs = append(p.dirs, s)
	p.dirOf[p.span(s)] = uint32(len(p.dirs) - 1)
	return uint32(len(p.dirs) - 1)
}

func (p *packedEntries) span(s packedSpan) string { return p.str(int(s.off), int(s.n)) }

// done lets go of what only adding needs, and of the room append left
// at the end of the records and the arena (up to a fifth of each).
func (p *packedEntries) done() {
	p.attrOf, p.dirOf = nil, nil
	p.recs = trim(p.recs)
	p.arena = trim(p.arena)
}

// trim returns s in an array of its length when that saves much: the
// copy is made once, and the old array is let go.
func trim[T any](s []T) []T {
	if cap(s)-len(s) < 1024 || cap(s)-len(s) < len(s)/16 {
		return s
	}
	return append(make([]T, 0, len(s)), s...)
}

func (p *packedEntries) len() int { return len(p.recs) }

// str returns arena[off:off+n] without copying it: the arena is only ever
// appended to, so the bytes a string covers never change.
func (p *packedEntries) str(off, n int) string {
	if n == 0 {
		return ""
	}
	return unsafe.String(&p.arena[off], n)
}

// name returns entry i's name: made anew for a name with a directory, so
// that hot paths use dirBase (or nameIs) instead.
func (p *packedEntries) name(i int) string {
	d, hasDir, base := p.dirBase(i)
	if !hasDir {
		return base
	}
	return d + "/" + base
}

// dirBase returns entry i's name split at its last "/", without copying:
// hasDir is false for a name without one.
func (p *packedEntries) dirBase(i int) (dir string, hasDir bool, base string) {
	r := &p.recs[i]
	base = p.str(int(r.off), int(r.baseLen))
	if r.dir == 0 {
		return "", false, base
	}
	return p.span(p.dirs[r.dir]), true, base
}

// base returns entry i's name after its last "/", without copying.
func (p *packedEntries) base(i int) string {
	r := &p.recs[i]
	return p.str(int(r.off), int(r.baseLen))
}

// nameIs reports whether entry i's name is s, without making the name.
func (p *packedEntries) nameIs(i int, s string) bool {
	d, hasDir, base := p.dirBase(i)
	if !hasDir {
		return s == base
	}
	return len(s) == len(d)+1+len(base) && s[:len(d)] == d && s[len(d)] == '/' && s[len(d)+1:] == base
}

func (p *packedEntries) linkname(i int) string {
	r := &p.recs[i]
	return p.str(int(r.off)+int(r.baseLen), int(r.linkLen))
}

func (p *packedEntries) typeflag(i int) byte { return p.attrs[p.recs[i].attr].typeflag }

func (p *packedEntries) marker(i int) Marker { return p.attrs[p.recs[i].attr].marker }

func (p *packedEntries) size(i int) int64 {
	if p.big != nil {
		if s, ok := p.big[int32(i)]; ok {
			return s
		}
	}
	return int64(p.recs[i].size)
}

func (p *packedEntries) header(i int) Header {
	r := &p.recs[i]
	a := &p.attrs[r.attr]
	h := Header{
		Typeflag: a.typeflag,
		Mode:     int64(a.mode),
		Uid:      int(a.uid),
		Gid:      int(a.gid),
		Size:     p.size(i),
		Linkname: p.linkname(i),
		ModTime:  time.Unix(a.mtime, int64(a.nsec)).UTC(),
	}
	if a.extra != 0 {
		x := &p.extra[a.extra-1]
		h.Mode, h.Uid, h.Gid, h.Devmajor, h.Devminor, h.Xattrs = x.mode, x.uid, x.gid, x.devmajor, x.devminor, x.xattrs
	}
	return h
}

func (p *packedEntries) entry(i int) IndexEntry {
	return IndexEntry{Name: p.name(i), Marker: p.marker(i), Header: p.header(i)}
}
