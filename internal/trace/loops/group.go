package loops

import (
	"cmp"
	"slices"
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
