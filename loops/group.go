package loops

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Group is a set of ranks whose structure text is identical.
type Group struct {
	Ranks     []int  // the ranks, sorted
	Structure string // their common structure text
}

// GroupRanks groups ranks by identical structure: largest group first, ties
// by lowest rank; ranks sorted within a group.
func GroupRanks(structure map[int]string) []Group {
	index := make(map[string]int)
	var groups []Group
	for rank, s := range structure {
		i, ok := index[s]
		if !ok {
			i = len(groups)
			index[s] = i
			groups = append(groups, Group{Structure: s})
		}
		groups[i].Ranks = append(groups[i].Ranks, rank)
	}
	for i := range groups {
		slices.Sort(groups[i].Ranks)
	}
	slices.SortFunc(groups, func(a, b Group) int {
		if c := cmp.Compare(len(b.Ranks), len(a.Ranks)); c != 0 {
			return c
		}
		return cmp.Compare(a.Ranks[0], b.Ranks[0])
	})
	return groups
}

// Ranges formats sorted rank numbers compactly: consecutive numbers become a
// range, for example [0 1 2 3 5 7 8] gives "0-3,5,7-8". Unsorted input is
// sorted first and duplicates are ignored; no ranks give "".
func Ranges(ranks []int) string {
	if !slices.IsSorted(ranks) {
		ranks = slices.Sorted(slices.Values(ranks))
	}
	var b strings.Builder
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && (ranks[j+1] == ranks[j] || ranks[j+1] == ranks[j]+1) {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ranks[i]))
		if ranks[j] != ranks[i] {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ranks[j]))
		}
		i = j + 1
	}
	return b.String()
}
