package task

import (
	"slices"
	"unicode/utf8"
)

// This file writes JSON exactly as Python's
//
//	json.dumps(d, sort_keys=True, separators=(",", ":"))   # ensure_ascii=True
//
// does for a dict of strings to strings, because the files digest of a task
// folder (SPEC.md section 3) is defined by those bytes and must match images
// labelled by the original Python implementation. encoding/json cannot be
// used: it escapes < > & and U+2028/2029 and writes non-ASCII characters
// as UTF-8 instead of \uXXXX.

// pyString is a string as Python sees a file name: a sequence of code
// points. Bytes that are not valid UTF-8 become the lone surrogates
// U+DC80..U+DCFF, which is what Python's os.fsdecode (surrogateescape)
// does on Linux, so that even such names sort and escape as in Python.
func pyString(s string) []rune {
	out := make([]rune, 0, len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			out = append(out, 0xDC00+rune(s[i]))
			i++
			continue
		}
		out = append(out, r)
		i += n
	}
	return out
}

// appendPyJSONString appends the JSON string literal of s, escaped as
// Python's json module does with ensure_ascii=True.
func appendPyJSONString(b []byte, s []rune) []byte {
	const hex = "0123456789abcdef"
	u4 := func(b []byte, r rune) []byte {
		return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, '\\', '"')
		case r == '\\':
			b = append(b, '\\', '\\')
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\b':
			b = append(b, '\\', 'b')
		case r == '\f':
			b = append(b, '\\', 'f')
		case r >= 0x20 && r <= 0x7e:
			b = append(b, byte(r))
		case r > 0xffff:
			// Astral characters become a UTF-16 surrogate pair.
			v := r - 0x10000
			b = u4(b, 0xd800+(v>>10))
			b = u4(b, 0xdc00+(v&0x3ff))
		default:
			b = u4(b, r)
		}
	}
	return append(b, '"')
}

// pyJSONStringMap returns the compact, key-sorted, ASCII-only JSON object
// of m, byte for byte what Python writes. Keys are sorted by code point,
// as Python sorts str.
func pyJSONStringMap(m map[string]string) []byte {
	type entry struct {
		key   []rune
		value []rune
	}
	entries := make([]entry, 0, len(m))
	for k, v := range m {
		entries = append(entries, entry{pyString(k), pyString(v)})
	}
	// For valid UTF-8 this is the same as sorting the Go strings by bytes;
	// comparing runes also places surrogate-escaped bytes where Python does.
	slices.SortFunc(entries, func(a, b entry) int { return slices.Compare(a.key, b.key) })
	b := make([]byte, 0, 64+len(m)*100)
	b = append(b, '{')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPyJSONString(b, e.key)
		b = append(b, ':')
		b = appendPyJSONString(b, e.value)
	}
	return append(b, '}')
}
