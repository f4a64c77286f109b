package loops

import (
	"math"
	"slices"
)

// none marks a missing position, pair or symbol in the engine's int32 links.
const none int32 = -1

// Kinds of engine symbols.
const (
	kindBase uint8 = iota // an input symbol
	kindPair              // A+B
	kindRun               // A[k]
)

// symbol describes one engine symbol. For a base symbol a indexes
// engine.baseVal; for a pair a and b are the two halves; for a run a is the
// repeated symbol and b the repeat count.
type symbol struct {
	kind uint8
	a, b int32
}

// pairRec is one distinct adjacent pair (a,b) and the list of its
// occurrences, kept in increasing position order through engine.onext and
// engine.oprev. An occurrence is named by the position of its left element.
type pairRec struct {
	a, b       int32
	count      int32
	head, tail int32
}

// heapEntry is a possibly stale snapshot of a pair's priority.
type heapEntry struct {
	count, head, pair int32
}

// engine performs the rewriting described in the package documentation.
//
// The current sequence is a doubly linked list over input positions: an
// element is named by the input position where its expansion starts, so list
// order, position order and sequence order agree. A pair's first occurrence
// is therefore its occurrence with the smallest position, the head of its
// occurrence list.
//
// Only pairs containing a newly made symbol ever gain occurrences, and all of
// them are made during the pass that makes the symbol, strictly left to right,
// so appending keeps every occurrence list sorted. Every other change only
// removes occurrences, which can only lower a pair's priority (count down,
// first occurrence further right); that is what makes the lazy heap exact.
type engine struct {
	syms    []symbol
	baseVal []int
	runs    map[uint64]int32 // (A,k) -> A[k]

	sym        []int32 // symbol of the element starting at a position; none if no element starts there
	next, prev []int32 // element list
	pairOf     []int32 // pair whose occurrence starts at a position, or none
	onext      []int32 // occurrence list links
	oprev      []int32
	pairs      []pairRec
	heap       []heapEntry

	// Pairs made during the current pass. leftPair[x] is (x,P) and
	// rightPair[y] is (P,y) for the pass's new pair symbol P, valid when the
	// stamp equals P; runPairs holds the pairs made next to new run symbols.
	leftPair, leftStamp   []int32
	rightPair, rightStamp []int32
	runPairs              map[uint64]int32
	created               []int32 // pairs made in this pass
	newPos                []int32 // positions of this pass's new pair symbol
}

func pack(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// newEngine maps the input to dense base symbols and collapses its runs.
func newEngine(seq []int) *engine {
	n := len(seq)
	if n >= math.MaxInt32 {
		panic("loops: sequence too long")
	}
	e := &engine{
		sym:    make([]int32, n),
		next:   make([]int32, n),
		prev:   make([]int32, n),
		pairOf: make([]int32, n),
		onext:  make([]int32, n),
		oprev:  make([]int32, n),
		runs:   make(map[uint64]int32),
	}
	maxv := 0
	for _, v := range seq {
		if v < 0 {
			panic("loops: negative symbol")
		}
		maxv = max(maxv, v)
	}
	if maxv <= 4*n+1024 {
		ids := make([]int32, maxv+1)
		for i, v := range seq {
			id := ids[v]
			if id == 0 {
				e.baseVal = append(e.baseVal, v)
				id = int32(len(e.baseVal))
				ids[v] = id
			}
			e.sym[i] = id - 1
		}
	} else {
		ids := make(map[int]int32)
		for i, v := range seq {
			id, ok := ids[v]
			if !ok {
				id = int32(len(e.baseVal))
				e.baseVal = append(e.baseVal, v)
				ids[v] = id
			}
			e.sym[i] = id
		}
	}
	for range e.baseVal {
		e.addSymbol(symbol{kind: kindBase, a: int32(len(e.syms))})
	}

	// Step (a) on the input.
	last := none
	for i := 0; i < n; {
		j := i + 1
		for j < n && e.sym[j] == e.sym[i] {
			e.sym[j] = none
			j++
		}
		if k := j - i; k >= 2 {
			e.sym[i] = e.runSymbol(e.sym[i], int32(k))
		}
		e.prev[i] = last
		if last != none {
			e.next[last] = int32(i)
		}
		last = int32(i)
		i = j
	}
	if last != none {
		e.next[last] = none
	}
	return e
}

// addSymbol appends a symbol and grows the per-symbol tables.
func (e *engine) addSymbol(s symbol) int32 {
	id := int32(len(e.syms))
	e.syms = append(e.syms, s)
	e.leftPair = append(e.leftPair, none)
	e.leftStamp = append(e.leftStamp, none)
	e.rightPair = append(e.rightPair, none)
	e.rightStamp = append(e.rightStamp, none)
	return id
}

// runSymbol returns the symbol A[k], making it on first use.
func (e *engine) runSymbol(a, k int32) int32 {
	key := pack(a, k)
	if id, ok := e.runs[key]; ok {
		return id
	}
	id := e.addSymbol(symbol{kind: kindRun, a: a, b: k})
	e.runs[key] = id
	return id
}

func (e *engine) newPair(a, b int32) int32 {
	e.pairs = append(e.pairs, pairRec{a: a, b: b, head: none, tail: none})
	return int32(len(e.pairs) - 1)
}

// addOcc appends the occurrence starting at pos to pair p; pos must be beyond
// every occurrence p already has.
func (e *engine) addOcc(pos, p int32) {
	r := &e.pairs[p]
	e.pairOf[pos] = p
	e.onext[pos] = none
	e.oprev[pos] = r.tail
	if r.tail != none {
		e.onext[r.tail] = pos
	} else {
		r.head = pos
	}
	r.tail = pos
	r.count++
}

// removeOcc removes the pair occurrence starting at pos, if any.
func (e *engine) removeOcc(pos int32) {
	p := e.pairOf[pos]
	if p == none {
		return
	}
	e.pairOf[pos] = none
	r := &e.pairs[p]
	pn, pp := e.onext[pos], e.oprev[pos]
	if pp != none {
		e.onext[pp] = pn
	} else {
		r.head = pn
	}
	if pn != none {
		e.oprev[pn] = pp
	} else {
		r.tail = pp
	}
	r.count--
}

// initPairs records every adjacent pair of the run-collapsed input.
func (e *engine) initPairs() {
	if len(e.sym) == 0 {
		return
	}
	ids := make(map[uint64]int32)
	lastKey, lastID := uint64(math.MaxUint64), none
	for i := int32(0); i != none; i = e.next[i] {
		j := e.next[i]
		if j == none {
			e.pairOf[i] = none
			break
		}
		key := pack(e.sym[i], e.sym[j])
		id := lastID
		if key != lastKey {
			var ok bool
			if id, ok = ids[key]; !ok {
				id = e.newPair(e.sym[i], e.sym[j])
				ids[key] = id
			}
			lastKey, lastID = key, id
		}
		e.addOcc(i, id)
	}
	for p := range e.pairs {
		if e.pairs[p].count >= 2 {
			e.heap = append(e.heap, heapEntry{e.pairs[p].count, e.pairs[p].head, int32(p)})
		}
	}
	for i := len(e.heap)/2 - 1; i >= 0; i-- {
		e.down(i)
	}
}

// better reports whether x ranks above y: more occurrences, or as many and
// an earlier first occurrence.
func better(x, y heapEntry) bool {
	return x.count > y.count || x.count == y.count && x.head < y.head
}

func (e *engine) down(i int) {
	h := e.heap
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && better(h[c+1], h[c]) {
			c++
		}
		if !better(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

func (e *engine) push(x heapEntry) {
	e.heap = append(e.heap, x)
	h := e.heap
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !better(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (e *engine) pop() {
	last := len(e.heap) - 1
	e.heap[0] = e.heap[last]
	e.heap = e.heap[:last]
	e.down(0)
}

// best removes and returns the pair to replace next, or none when no pair
// occurs at least twice. Every live pair with count >= 2 has exactly one heap
// entry, whose key is at least as good as the pair's current priority, so an
// entry that is still current at the top is the true maximum.
func (e *engine) best() int32 {
	for len(e.heap) > 0 {
		top := e.heap[0]
		r := &e.pairs[top.pair]
		switch {
		case r.count < 2:
			e.pop()
		case r.count == top.count && r.head == top.head:
			e.pop()
			return top.pair
		default:
			e.heap[0] = heapEntry{r.count, r.head, top.pair}
			e.down(0)
		}
	}
	return none
}

// leftOf returns the pair (x,p) for the pass's new symbol p.
func (e *engine) leftOf(x, p int32) int32 {
	return e.stampedPair(e.leftStamp, e.leftPair, x, p, x, p)
}

// rightOf returns the pair (p,y) for the pass's new symbol p.
func (e *engine) rightOf(p, y int32) int32 {
	return e.stampedPair(e.rightStamp, e.rightPair, y, p, p, y)
}

// stampedPair returns the pair (a,b) made next to the pass's new symbol p,
// making it on first use in the pass: pair[k] holds it while stamp[k] == p,
// k being the symbol other than p. stamp and pair are leftStamp and
// leftPair, or rightStamp and rightPair; newPair never grows them, so the
// slices passed in stay current.
func (e *engine) stampedPair(stamp, pair []int32, k, p, a, b int32) int32 {
	if stamp[k] == p {
		return pair[k]
	}
	id := e.newPair(a, b)
	stamp[k], pair[k] = p, id
	e.created = append(e.created, id)
	return id
}

// runPair returns the pair (a,b) made next to a new run symbol in this pass.
func (e *engine) runPair(a, b int32) int32 {
	key := pack(a, b)
	if id, ok := e.runPairs[key]; ok {
		return id
	}
	id := e.newPair(a, b)
	e.runPairs[key] = id
	e.created = append(e.created, id)
	return id
}

// replace performs step (b) for pair p followed by step (a) of the next
// round, which can only concern runs of the new symbol.
func (e *engine) replace(p int32) {
	a, b := e.pairs[p].a, e.pairs[p].b
	ps := e.addSymbol(symbol{kind: kindPair, a: a, b: b})
	e.created = e.created[:0]
	e.newPos = e.newPos[:0]
	runs := false
	for i := e.pairs[p].head; i != none; {
		nextOcc := e.onext[i]
		j := e.next[i]
		x, y := e.prev[i], e.next[j]
		if x != none {
			e.removeOcc(x)
		}
		e.removeOcc(i)
		if y != none {
			e.removeOcc(j)
		}
		e.sym[i], e.sym[j] = ps, none
		e.next[i] = y
		if y != none {
			e.prev[y] = i
			e.addOcc(i, e.rightOf(ps, e.sym[y]))
		}
		if x != none {
			if sx := e.sym[x]; sx != ps {
				e.addOcc(x, e.leftOf(sx, ps))
			} else {
				runs = true // (P,P) is never counted: step (a) removes it
			}
		}
		e.newPos = append(e.newPos, i)
		i = nextOcc
	}
	if runs {
		e.collapse(ps)
	}
	for _, id := range e.created {
		if r := &e.pairs[id]; r.count >= 2 {
			e.push(heapEntry{r.count, r.head, id})
		}
	}
}

// collapse replaces every maximal run of the new symbol ps by a run symbol.
func (e *engine) collapse(ps int32) {
	if e.runPairs == nil || len(e.runPairs) > 64 {
		e.runPairs = make(map[uint64]int32)
	} else {
		clear(e.runPairs)
	}
	for _, i := range e.newPos {
		if e.sym[i] != ps {
			continue // inside a run already collapsed
		}
		end := e.next[i]
		if end == none || e.sym[end] != ps {
			continue
		}
		k := int32(1)
		last := i
		for end != none && e.sym[end] == ps {
			last = end
			end = e.next[end]
			k++
		}
		x := e.prev[i]
		if x != none {
			e.removeOcc(x)
		}
		if end != none {
			e.removeOcc(last)
		}
		for t := e.next[i]; t != end; t = e.next[t] {
			e.sym[t] = none
		}
		rs := e.runSymbol(ps, k)
		e.sym[i] = rs
		e.next[i] = end
		if end != none {
			e.prev[end] = i
			e.addOcc(i, e.runPair(rs, e.sym[end]))
		}
		if x != none {
			e.addOcc(x, e.runPair(e.sym[x], rs))
		}
	}
}

// run rewrites the sequence until no pair occurs twice.
func (e *engine) run() {
	e.initPairs()
	for {
		p := e.best()
		if p == none {
			return
		}
		e.replace(p)
	}
}

// Compress rewrites seq into its loop structure (see the package
// documentation for the exact rules) and returns the top-level nodes.
// weight gives each position's time, in microseconds; nil or empty means all
// zero. Every node's Total sums the weights of the positions it covers over
// all its executions, so the Totals of the top-level nodes add up to the sum
// of weight.
//
// Expand(Compress(seq, w)) equals seq. Compress takes O(n log n) time and
// O(n) memory for a sequence of n symbols, whatever its content. It panics if
// len(weight) is neither 0 nor len(seq), or if a symbol is negative.
func Compress(seq []int, weight []float64) []*Node {
	if len(weight) != 0 && len(weight) != len(seq) {
		panic("loops: len(weight) != len(seq)")
	}
	if len(seq) == 0 {
		return nil
	}
	e := newEngine(seq)
	e.run()
	// Drop what the tree does not need before building it.
	e.pairOf, e.onext, e.oprev, e.pairs, e.heap = nil, nil, nil, nil, nil
	e.leftPair, e.leftStamp, e.rightPair, e.rightStamp = nil, nil, nil, nil

	b := builder{e: e}
	var top []*Node
	for i := int32(0); i != none; i = e.next[i] {
		top = b.appendFlat(top, e.sym[i], 1)
	}
	if len(weight) != 0 {
		addWeights(top, weight, 0)
	}
	return slices.Clip(top)
}
