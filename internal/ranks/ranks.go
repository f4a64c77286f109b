// Package ranks formats sets of MPI rank numbers compactly, the way every
// mpiprobe report names them: runs of consecutive ranks become "first-last",
// so 512 ranks of a job read "0-511" and two roles read "0,2" and "1,3".
package ranks

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// Span is a run of consecutive rank numbers Lo..Hi.
type Span struct{ Lo, Hi int }

// String formats the span as "Lo-Hi", or "Lo" for a single rank.
func (s Span) String() string {
	if s.Lo == s.Hi {
		return strconv.Itoa(s.Lo)
	}
	return strconv.Itoa(s.Lo) + "-" + strconv.Itoa(s.Hi)
}

// Spans splits rank numbers into maximal runs of consecutive numbers.
// Unsorted input is sorted first (the slice is not modified) and duplicates
// are ignored.
func Spans(ranks []int) []Span {
	if !slices.IsSorted(ranks) {
		ranks = slices.Sorted(slices.Values(ranks))
	}
	var out []Span
	for _, r := range ranks {
		if n := len(out); n > 0 && (r == out[n-1].Hi || (out[n-1].Hi != math.MaxInt && r == out[n-1].Hi+1)) {
			out[n-1].Hi = r
			continue
		}
		out = append(out, Span{r, r})
	}
	return out
}

// Join formats spans separated by commas.
func Join(ss []Span) string {
	var b strings.Builder
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s.String())
	}
	return b.String()
}

// Format formats rank numbers compactly: [0 1 2 3 5 7 8] gives
// "0-3,5,7-8", and no ranks give "".
func Format(ranks []int) string { return Join(Spans(ranks)) }
