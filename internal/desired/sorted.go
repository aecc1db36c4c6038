package desired

import (
	"cmp"
	"slices"
)

// sortCache remembers the order sortedByName found for a sequence of names.
type sortCache struct {
	names []string
	perm  []int32
}

// sortedByName sorts by name, as slices.SortFunc with cmp.Compare on the
// names would (names are unique), but moves indices instead of the
// elements, and returns the input itself when it is already sorted. With a
// cache, the order found for the same sequence of names is reused. The
// order returned is where each element came from (out[i] = in[order[i]]);
// nil: in itself.
func sortedByName[T any](in []T, name func(*T) string, cache *sortCache) ([]T, []int32) {
	sorted := true
	for i := 1; i < len(in) && sorted; i++ {
		sorted = name(&in[i-1]) <= name(&in[i])
	}
	if sorted {
		return in, nil
	}
	var idx []int32
	if cache != nil && len(cache.names) == len(in) {
		idx = cache.perm
		for i := range in {
			if name(&in[i]) != cache.names[i] {
				idx = nil
				break
			}
		}
	}
	if idx == nil {
		idx = make([]int32, len(in))
		for i := range idx {
			idx[i] = int32(i)
		}
		slices.SortFunc(idx, func(a, b int32) int { return cmp.Compare(name(&in[a]), name(&in[b])) })
		if cache != nil {
			cache.names = make([]string, len(in))
			for i := range in {
				cache.names[i] = name(&in[i])
			}
			cache.perm = idx
		}
	}
	out := make([]T, len(in))
	for i, j := range idx {
		out[i] = in[j]
	}
	return out, idx
}
