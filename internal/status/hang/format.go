package hang

import (
	"strconv"
	"strings"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/ranks"
)

// Limits that keep a verdict short whatever the number of ranks.
const (
	maxList   = 40 // longest rank list printed in full
	keepList  = 16 // how much of a longer list is kept before ",...,"
	maxItems  = 3  // most described rank groups, cycles or divergences per kind
	maxArrows = 5  // longest cycle printed rank by rank
)

// listSpans prints the n ranks of ss, shortened when long:
// "0,2,4,6,8,10,...,510 (256 in all)".
func listSpans(ss []ranks.Span, n int) string {
	full := ranks.Join(ss)
	if len(full) <= maxList || len(ss) < 2 {
		return full
	}
	var b strings.Builder
	for i, s := range ss[:len(ss)-1] {
		t := s.String()
		if i > 0 && b.Len()+1+len(t) > keepList {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t)
	}
	b.WriteString(",...,")
	b.WriteString(ss[len(ss)-1].String())
	b.WriteString(" (" + strconv.Itoa(n) + " in all)")
	return b.String()
}

// subject names sorted, distinct ranks as the subject of a sentence:
// "rank 3", "ranks 0-6".
func subject(rs []int) string {
	if len(rs) == 1 {
		return "rank " + strconv.Itoa(rs[0])
	}
	return "ranks " + listSpans(ranks.Spans(rs), len(rs))
}

// subjectSpans is subject for n ranks given as spans.
func subjectSpans(ss []ranks.Span, n int) string {
	if n == 1 && len(ss) == 1 {
		return "rank " + ss[0].String()
	}
	return "ranks " + listSpans(ss, n)
}

// seconds formats a duration with one decimal: "12.3 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

// verb picks the singular or plural form.
func verb(plural bool, one, many string) string {
	if plural {
		return many
	}
	return one
}

// countOf says "1 call", "41 calls".
func countOf(n uint64, what string) string {
	s := strconv.FormatUint(n, 10) + " " + what
	if n != 1 {
		s += "s"
	}
	return s
}

// item is a set of ranks that share one description, in the singular
// (used as the grouping key) and in the plural.
type item struct {
	ranks    []int
	one      string
	many     string
	minSince time.Duration // for blocked-call items: the shortest time inside
	atLeast  bool          // some of them only a lower bound
}

func (it *item) text() string {
	return subject(it.ranks) + " " + verb(len(it.ranks) > 1, it.one, it.many)
}

// itemList collects items in order of first appearance.
type itemList struct {
	items []*item
	index map[string]*item
}

func (l *itemList) add(rank int, one, many string, since time.Duration) {
	if l.index == nil {
		l.index = make(map[string]*item)
	}
	it := l.index[one]
	if it == nil {
		it = &item{one: one, many: many, minSince: since}
		l.index[one] = it
		l.items = append(l.items, it)
	}
	it.ranks = append(it.ranks, rank)
	it.minSince = min(it.minSince, since)
}

// rest counts the ranks of the items after the first maxItems.
func (l *itemList) rest() int {
	n := 0
	for i := maxItems; i < len(l.items); i++ {
		n += len(l.items[i].ranks)
	}
	return n
}

// shown returns the items a verdict prints.
func (l *itemList) shown() []*item {
	return l.items[:min(len(l.items), maxItems)]
}
