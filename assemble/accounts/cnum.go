package accounts

import "math"

// The files are parsed the way shadow-utils parses them, and shadow-utils
// reads numbers with strtoll/strtoul/strtol. These helpers reproduce what
// those accept (leading white space, a sign, base prefixes when base is 0),
// so that a line shadow-utils skips as unparsable is skipped here too.

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// cParse reads s like the C strto* functions. It reports the sign, the
// magnitude (saturated at math.MaxUint64 when it overflows), whether it
// overflowed uint64, and whether the whole non-empty string was a number.
func cParse(s string, base int) (neg bool, mag uint64, overflow, ok bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if base == 0 {
		switch {
		case i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && digitValue(s[i+2]) < 16:
			base = 16
			i += 2
		case i < len(s) && s[i] == '0':
			base = 8
		default:
			base = 10
		}
	}
	start := i
	for ; i < len(s); i++ {
		d := digitValue(s[i])
		if d >= base {
			break
		}
		if !overflow {
			if mag > (math.MaxUint64-uint64(d))/uint64(base) {
				overflow = true
				mag = math.MaxUint64
			} else {
				mag = mag*uint64(base) + uint64(d)
			}
		}
	}
	ok = i > start && i == len(s)
	return neg, mag, overflow, ok
}

func digitValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return 99
}

// parseID is shadow's get_uid/get_gid: strtoll base 10, the whole field,
// and a value that fits uid_t.
func parseID(s string) (uint32, bool) {
	neg, mag, overflow, ok := cParse(s, 10)
	if !ok || overflow || mag > math.MaxInt64 {
		return 0, false
	}
	if neg {
		if mag != 0 {
			return 0, false
		}
		return 0, true
	}
	if mag > math.MaxUint32 {
		return 0, false
	}
	return uint32(mag), true
}

// parseULong is shadow's getulong: strtoul base 0, the whole field. Like
// strtoul it negates a value with a minus sign.
func parseULong(s string) (uint64, bool) {
	neg, mag, overflow, ok := cParse(s, 0)
	if !ok || overflow {
		return 0, false
	}
	if neg {
		return -mag, true
	}
	return mag, true
}

// parseLong is shadow's getlong: strtol base 0, the whole field.
func parseLong(s string) (int64, bool) {
	neg, mag, overflow, ok := cParse(s, 0)
	if !ok || overflow {
		return 0, false
	}
	if neg {
		if mag > 1<<63 {
			return 0, false
		}
		return -int64(mag), true
	}
	if mag > math.MaxInt64 {
		return 0, false
	}
	return int64(mag), true
}
