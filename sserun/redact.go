package sserun

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// At difficulty levels 1 and 2 run_pocs shows the run script's output but
// not the proofs of concept, and the agent's code runs in that script with
// the proof of concept's path as its argument: printing the file would
// hand it to the agent. So the daemon replaces, in the output the agent
// gets, every copy of a proof of concept's content and of each of its
// lines, on bytes (binary proofs of concept too), and says how many it
// replaced. This stops a verbatim copy, as a program that echoes its input
// or a run script that prints it makes one; it cannot stop code written
// to leak, which prints the file encoded (base64, one byte a line).
const (
	// pocMinLine is the shortest line, once trimmed of spaces, that is
	// hidden: a shorter one ("}", "end", "fi", a number) tells little of
	// the proof of concept and is everywhere in ordinary output, which
	// hiding it would shred. It is also the width of the scan's key.
	pocMinLine = 8
	// pocHiddenLine and pocHiddenWhole replace a line of a proof of
	// concept and a whole one.
	pocHiddenLine  = "[PoC line hidden]"
	pocHiddenWhole = "[PoC hidden]"
	// pocReadLimit bounds how much of the proofs of concept, all
	// together, is looked for: the patterns cost memory (32 bytes a
	// line) for the length of the call. Lines past it are not hidden.
	pocReadLimit = 8 << 20
	// pocWorkBudget bounds the work of looking for them, in bytes
	// compared (a length tried at a position counts groupCost), about
	// half a second at worst: a pathological proof of concept (a run of
	// one byte, as lines of hundreds of lengths) with an output of that
	// byte could otherwise cost output length times its lengths. Past
	// it, the rest of the output is withheld rather than shown
	// unchecked.
	pocWorkBudget = 1 << 30
)

// cutMarker matches the line tailBuffer puts where it cut an output's
// front: the line after it may be the end of a line of a proof of
// concept, which no whole line matches.
var cutMarker = regexp.MustCompile(`(?m)^\[ssebench: the first [0-9]+ bytes of output were cut\]\n`)

// pocPattern is a piece of a proof of concept to hide: a trimmed line, or
// the trimmed whole file.
type pocPattern struct {
	key    uint64 // its first 8 bytes
	hash   uint64 // its polynomial hash in pocHider.base
	off, n uint32 // where it is in pocHider.data
	whole  bool
}

// pocGroup is the patterns of one key and one length: pats[lo:hi], by
// hash.
type pocGroup struct {
	key    uint64
	pow    uint64 // base to the power n
	n      uint32
	lo, hi uint32
}

// pocHider finds the proofs of concept's content in an output. Each
// pattern is at least pocMinLine bytes long, so each is indexed by its
// first 8 bytes: a scan reads one 8-byte key at each position of the
// output and drops most positions with a bitset of the keys. At the
// others it takes the key's lengths, longest first, and for each looks
// the hash of the output's next bytes up among the patterns of that key
// and length (a rolling hash of the output gives any piece's in constant
// time); only a pattern whose hash matches is compared byte for byte.
// Its cost is linear in the output times the number of lengths a key
// has, with pocWorkBudget as a bound whatever the proofs of concept look
// like; its memory is 32 bytes a pattern beside the proofs of concept,
// and 8 bytes a byte of output.
type pocHider struct {
	data   []byte
	pocs   [][]byte // each proof of concept, in data
	pats   []pocPattern
	groups []pocGroup
	filter []uint64 // bitset of keyBit(key)
	base   uint64
	budget int
}

const (
	filterBits = 1 << 16
	// groupCost is what trying one length at one position costs of the
	// budget, about the time it takes to compare that many bytes.
	groupCost = 256
)

func keyBit(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> 48 }

// newPoCHider indexes the proofs of concept for an output of outLen bytes
// (a pattern longer than it cannot be in it).
func newPoCHider(pocs [][]byte, outLen int) *pocHider {
	// The hash decides nothing on its own (a match is compared), so a
	// collision costs time only; a random base keeps the output from
	// aiming at one.
	h := &pocHider{filter: make([]uint64, filterBits/64), base: rand.Uint64() | 1, budget: pocWorkBudget}
	for _, p := range pocs {
		base := len(h.data)
		h.data = append(h.data, p...)
		h.pocs = append(h.pocs, h.data[base:len(h.data):len(h.data)])
	}
	add := func(lo, hi int, whole bool) {
		lo, hi = trimSpace(h.data, lo, hi)
		if hi-lo < pocMinLine || hi-lo > outLen {
			return
		}
		key := binary.LittleEndian.Uint64(h.data[lo:])
		var hash uint64
		for _, c := range h.data[lo:hi] {
			hash = hash*h.base + uint64(c)
		}
		h.pats = append(h.pats, pocPattern{key: key, hash: hash, off: uint32(lo), n: uint32(hi - lo), whole: whole})
		b := keyBit(key)
		h.filter[b/64] |= 1 << (b % 64)
	}
	base := 0
	for _, p := range h.pocs {
		add(base, base+len(p), true)
		for lo := 0; lo < len(p); {
			hi := bytes.IndexByte(p[lo:], '\n')
			if hi < 0 {
				hi = len(p)
			} else {
				hi += lo
			}
			add(base+lo, base+hi, false)
			lo = hi + 1
		}
		base += len(p)
	}
	// By key, longest first, by hash, then by content, so that copies
	// sit side by side; a whole file that is one line stays whole.
	slices.SortFunc(h.pats, func(a, b pocPattern) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		if a.n != b.n {
			return cmp.Compare(b.n, a.n)
		}
		if a.hash != b.hash {
			return cmp.Compare(a.hash, b.hash)
		}
		if c := bytes.Compare(h.bytes(a), h.bytes(b)); c != 0 {
			return c
		}
		if a.whole != b.whole {
			if a.whole {
				return -1
			}
			return 1
		}
		return 0
	})
	h.pats = slices.CompactFunc(h.pats, func(a, b pocPattern) bool {
		return a.key == b.key && a.n == b.n && bytes.Equal(h.bytes(a), h.bytes(b))
	})
	for i, p := range h.pats {
		if i > 0 && h.pats[i-1].key == p.key && h.pats[i-1].n == p.n {
			h.groups[len(h.groups)-1].hi++
			continue
		}
		pow := uint64(1)
		for x, e := h.base, p.n; e > 0; e >>= 1 {
			if e&1 == 1 {
				pow *= x
			}
			x *= x
		}
		h.groups = append(h.groups, pocGroup{key: p.key, pow: pow, n: p.n, lo: uint32(i), hi: uint32(i + 1)})
	}
	return h
}

func (h *pocHider) bytes(p pocPattern) []byte { return h.data[p.off : p.off+p.n] }

// trimSpace narrows data[lo:hi] to leave out ASCII white space at both ends.
func trimSpace(data []byte, lo, hi int) (int, int) {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f' }
	for lo < hi && isSpace(data[lo]) {
		lo++
	}
	for hi > lo && isSpace(data[hi-1]) {
		hi--
	}
	return lo, hi
}

// match returns the longest pattern that out[i:] starts with, its key
// being key; sums holds the output's prefix hashes.
func (h *pocHider) match(out []byte, sums []uint64, i int, key uint64) (pocPattern, bool) {
	g, _ := slices.BinarySearchFunc(h.groups, key, func(g pocGroup, k uint64) int { return cmp.Compare(g.key, k) })
	for ; g < len(h.groups) && h.groups[g].key == key; g++ {
		gr := h.groups[g]
		h.budget -= groupCost
		end := i + int(gr.n)
		if end > len(out) {
			continue
		}
		want := sums[end] - sums[i]*gr.pow
		pats := h.pats[gr.lo:gr.hi]
		j, _ := slices.BinarySearchFunc(pats, want, func(p pocPattern, w uint64) int { return cmp.Compare(p.hash, w) })
		for ; j < len(pats) && pats[j].hash == want; j++ {
			h.budget -= int(gr.n)
			if bytes.Equal(out[i:end], h.bytes(pats[j])) {
				return pats[j], true
			}
		}
	}
	return pocPattern{}, false
}

// hide returns out with every copy of a pattern replaced by its marker,
// leftmost first and then the longest, and the number replaced. Should
// the budget run out, the rest of out is withheld and exhausted is true.
func (h *pocHider) hide(out []byte) (_ []byte, replaced int, exhausted bool) {
	if len(h.pats) == 0 {
		return out, 0, false
	}
	out, replaced, exhausted = h.hideCutEnds(out)
	if exhausted {
		return out, replaced, true
	}
	sums := make([]uint64, len(out)+1)
	for i, c := range out {
		sums[i+1] = sums[i]*h.base + uint64(c)
	}
	var b bytes.Buffer
	b.Grow(len(out))
	last := 0
	for i := 0; i+pocMinLine <= len(out); {
		if h.budget <= 0 {
			b.Write(out[last:i])
			b.WriteString("\n" + pocWithheld)
			return b.Bytes(), replaced, true
		}
		key := binary.LittleEndian.Uint64(out[i:])
		if bit := keyBit(key); h.filter[bit/64]&(1<<(bit%64)) == 0 {
			i++
			continue
		}
		p, ok := h.match(out, sums, i, key)
		if !ok {
			i++
			continue
		}
		b.Write(out[last:i])
		if p.whole {
			b.WriteString(pocHiddenWhole)
		} else {
			b.WriteString(pocHiddenLine)
		}
		replaced++
		i += int(p.n)
		last = i
	}
	b.Write(out[last:])
	return b.Bytes(), replaced, false
}

// pocWithheld ends an output whose rest was not checked.
const pocWithheld = "[ssebench: the rest of this output is withheld: looking for the proofs of concept in it took too long]\n"

// hideCutEnds replaces the line after each cut marker when it is part of
// a proof of concept: an output cut in the middle of a copied line starts
// with that line's end.
func (h *pocHider) hideCutEnds(out []byte) (_ []byte, replaced int, exhausted bool) {
	marks := cutMarker.FindAllIndex(out, -1)
	if marks == nil {
		return out, 0, false
	}
	var b bytes.Buffer
	last := 0
	for _, m := range marks {
		lo := m[1]
		if lo < last {
			continue
		}
		hi := bytes.IndexByte(out[lo:], '\n')
		if hi < 0 {
			hi = len(out)
		} else {
			hi += lo
		}
		tlo, thi := trimSpace(out, lo, hi)
		if thi-tlo < pocMinLine {
			continue
		}
		frag := out[tlo:thi]
		found := false
		for _, p := range h.pocs {
			if h.budget <= 0 {
				b.Write(out[last:lo])
				b.WriteString(pocWithheld)
				return b.Bytes(), replaced, true
			}
			h.budget -= len(p)
			if bytes.Contains(p, frag) {
				found = true
				break
			}
		}
		if found {
			b.Write(out[last:tlo])
			b.WriteString(pocHiddenLine)
			replaced++
			last = thi
		}
	}
	if replaced == 0 {
		return out, 0, false
	}
	b.Write(out[last:])
	return b.Bytes(), replaced, false
}

// hidePoCs replaces the proofs of concept's content in a run_pocs answer
// for the agent, and adds a line that says how many copies it replaced.
// When the proofs of concept cannot be read, the output is withheld.
func (d *Daemon) hidePoCs(r Response) Response {
	pocs, err := d.readPoCs()
	if err != nil {
		r.Output = fmt.Sprintf("[ssebench: the output is withheld: reading the proofs of concept, to hide them in it, failed: %v]\n", err)
		return r
	}
	out, n, exhausted := newPoCHider(pocs, len(r.Output)).hide([]byte(r.Output))
	if n == 0 && !exhausted {
		return r
	}
	r.Output = string(out)
	if n == 0 {
		return r
	}
	if !strings.HasSuffix(r.Output, "\n") {
		r.Output += "\n"
	}
	// At the end: the MCP server keeps the end of a long output, and
	// takes a first "[ssebench: " line for the cut's.
	r.Output += fmt.Sprintf("[ssebench: proof-of-concept content was replaced in this output, %s (difficulty %d does not show the proofs of concept)]\n",
		plural(n, "time", "times"), d.o.difficulty)
	return r
}

// readPoCs reads the proofs of concept from the task root, at most
// pocReadLimit bytes of them all together.
func (d *Daemon) readPoCs() ([][]byte, error) {
	left := int64(pocReadLimit)
	var out [][]byte
	for _, rel := range d.cfg.Files.PoC {
		if left <= 0 {
			break
		}
		f, err := os.Open(filepath.Join(d.root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(f, left))
		f.Close()
		if err != nil {
			return nil, err
		}
		left -= int64(len(b))
		out = append(out, b)
	}
	return out, nil
}
