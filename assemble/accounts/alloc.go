package accounts

import (
	"fmt"
	"strings"
)

// findSystemID is useradd --system's choice of a uid (find_new_uid) or of a
// gid for the user's own group (find_new_gid) in shadow 4.13, given the ids
// in use: below the lowest id in use in [min, max], else (when min itself
// is taken or nothing below is free) the highest free id from max down.
// A preferred id (the new uid, for the group) wins when it lies in
// [min, max] and is free.
func findSystemID(used map[uint32]bool, min, max uint32, preferred *uint32) (uint32, error) {
	if max < min {
		return 0, fmt.Errorf("invalid configuration: system id range %d..%d is empty", min, max)
	}
	if preferred != nil && *preferred >= min && *preferred <= max && !used[*preferred] {
		return *preferred, nil
	}
	// The lowest id in use in the range, minus one; max when none is.
	next := int64(max)
	for id := range used {
		if id >= min && id <= max && int64(id)-1 < next {
			next = int64(id) - 1
		}
	}
	if next >= int64(min) {
		return uint32(next), nil
	}
	for id := int64(max); id >= int64(min); id-- {
		if !used[uint32(id)] {
			return uint32(id), nil
		}
	}
	return 0, fmt.Errorf("no free system id left in %d..%d", min, max)
}

// subidRangeCmp is subordinate_range_cmp: by start, then count, then owner;
// an unparsable line sorts after everything (the comparator is not
// symmetric there, which is why the exact sort algorithm matters).
func subidRangeCmp(a, b *entry) int {
	if a.rec == nil {
		return 1
	}
	if b.rec == nil {
		return -1
	}
	x, y := a.rec.(*subidEntry), b.rec.(*subidEntry)
	switch {
	case x.start < y.start:
		return -1
	case x.start > y.start:
		return 1
	case x.count < y.count:
		return -1
	case x.count > y.count:
		return 1
	}
	return strings.Compare(x.owner, y.owner)
}

// msort is glibc's qsort for small arrays (msort_with_tmp): a top-down merge
// sort that splits at n/2 and takes from the left run when cmp <= 0.
// Reproducing it keeps comment lines where the real tool leaves them.
func msort(s []*entry, cmp func(a, b *entry) int) {
	n := len(s)
	if n <= 1 {
		return
	}
	n1 := n / 2
	left, right := s[:n1], s[n1:]
	msort(left, cmp)
	msort(right, cmp)
	tmp := make([]*entry, 0, n)
	i, j := 0, 0
	for i < len(left) && j < len(right) {
		if cmp(left[i], right[j]) <= 0 {
			tmp = append(tmp, left[i])
			i++
		} else {
			tmp = append(tmp, right[j])
			j++
		}
	}
	tmp = append(tmp, left[i:]...)
	tmp = append(tmp, right[j:]...)
	copy(s, tmp)
}

// findFreeSubidRange is find_new_sub_uids/find_new_sub_gids with
// find_free_range: it sorts the file (commonio_sort, up to the first NIS
// line) as a side effect, then returns the first hole of count ids at or
// above min that ends at or below max. Shadow computes in id_t, 32 bits.
func findFreeSubidRange(d *db, min, max, count uint64, what string) (uint64, error) {
	if min > max || count >= max || min+count-1 > max {
		return 0, fmt.Errorf("invalid configuration: SUB_%s_MIN (%d), SUB_%s_MAX (%d), SUB_%s_COUNT (%d)", what, min, what, max, what, count)
	}
	nis := len(d.entries)
	for i, e := range d.entries {
		if isNIS(e.line) && e.lineNo > 0 {
			nis = i
			break
		}
	}
	if nis > 1 {
		msort(d.entries[:nis], subidRangeCmp)
	}
	lo, hi := uint32(min), uint32(max)
	if count == 0 || hi < lo {
		return 0, fmt.Errorf("no free subordinate %s range of %d ids", strings.ToLower(what), count)
	}
	low := lo
	for _, r := range d.records() {
		s := r.(*subidEntry)
		first := uint32(s.start)
		last := first + uint32(s.count) - 1
		high := first
		if high > hi+1 {
			high = hi + 1
		}
		if high > low && uint64(high-low) >= count {
			return uint64(low), nil
		}
		if low < last+1 {
			low = last + 1
		}
		if low > hi {
			return 0, fmt.Errorf("no free subordinate %s range of %d ids in %d..%d", strings.ToLower(what), count, min, max)
		}
	}
	if uint64(hi-low)+1 >= count {
		return uint64(low), nil
	}
	return 0, fmt.Errorf("no free subordinate %s range of %d ids in %d..%d", strings.ToLower(what), count, min, max)
}
