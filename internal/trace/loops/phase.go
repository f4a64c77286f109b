package loops

// Place tells where a leaf symbol's code is in the program: fn names the
// function that holds it (equal numbers for the same function) and at
// orders the symbols of one function (for a call site, its address).
type Place func(sym int) (fn int, at uint64)

// Rephase rotates loop bodies, where the nodes next to a loop allow it, so
// that a loop's iterations start where the program's loop does, and
// returns the new top-level nodes. Compress takes the first repetition it
// meets, which for a program that makes one of its loop's calls just before
// the loop (a warm-up transform through the same function, a set-up halo
// exchange) is out of phase with the source: A A B A B A B prints as
// (A)[2] (B+A)[2] B. Rephase makes it A (A+B)[3].
//
// For each loop, at every level and innermost first, the nodes before and
// after it that continue its period are counted, peeling whole iterations
// off a neighbouring loop whose body continues it. Of the rotations of the
// body, the one that makes the most whole iterations of that stretch is
// taken; among equals, place (when not nil) picks the one whose first leaf
// comes first in the function that holds most of the body's leaves (the
// source loop's own function, where call sites follow the source), and
// then the one that starts earliest. What the loop then covers leaves its
// neighbours, and the pieces of the stretch outside whole iterations stay
// as they are, so Expand of the result equals Expand of nodes.
//
// Execs and Total are computed anew from weight (as in Compress: nil or
// empty means all zero; otherwise one weight per leaf of the expansion).
// Rephase reuses and changes the nodes it is given.
func Rephase(nodes []*Node, weight []float64, place Place) []*Node {
	r := rephaser{place: place}
	out := r.level(nodes)
	reset(out, 1)
	if len(weight) != 0 {
		if n := expandedLen(out); n != len(weight) {
			panic("loops: len(weight) != expanded length")
		}
		addWeights(out, weight, 0)
	}
	return out
}

// reset sets Execs for nodes executed execs times each and zeroes Totals.
func reset(nodes []*Node, execs int) {
	for _, nd := range nodes {
		nd.Execs, nd.Total = execs, 0
		if isLoop(nd) {
			reset(nd.Body, execs*nd.N)
		}
	}
}

type rephaser struct {
	place Place
	left  []step // scratch: the current loop's extension to the left
	right []step // and to the right
}

// step is one part of a loop's extension: a whole neighbour (span 1) or one
// iteration peeled off a neighbouring loop (span: its body's length). at
// says which neighbour: an index into out (left) or a depth in the input
// stack (right, 0 for the nearest).
type step struct {
	at, span int
	peel     bool
}

func mod(a, m int) int { return ((a % m) + m) % m }

// equal reports whether two nodes have the same structure.
func equal(a, b *Node) bool {
	if a == b {
		return true
	}
	if a.Sym != b.Sym || a.N != b.N || len(a.Body) != len(b.Body) {
		return false
	}
	for i := range a.Body {
		if !equal(a.Body[i], b.Body[i]) {
			return false
		}
	}
	return true
}

func clone(nd *Node) *Node {
	c := *nd
	if nd.Body != nil {
		c.Body = cloneAll(nd.Body)
	}
	return &c
}

func cloneAll(nodes []*Node) []*Node {
	out := make([]*Node, len(nodes))
	for i, nd := range nodes {
		out[i] = clone(nd)
	}
	return out
}

func firstLeaf(nd *Node) int {
	for isLoop(nd) {
		nd = nd.Body[0]
	}
	return nd.Sym
}

// level rephases the loops of one sequence of siblings, bodies first.
func (r *rephaser) level(nodes []*Node) []*Node {
	open := false
	for i, nd := range nodes {
		if isLoop(nd) {
			nd.Body = r.level(nd.Body)
			open = open || i > 0 && continues(nodes[i-1], nd.Body, -1) ||
				i+1 < len(nodes) && continues(nodes[i+1], nd.Body, 1)
		}
	}
	if !open {
		return nodes // no loop's period goes on into a neighbour
	}
	// in is the input as a stack, the next node last.
	in := make([]*Node, len(nodes))
	for i, nd := range nodes {
		in[len(nodes)-1-i] = nd
	}
	out := make([]*Node, 0, len(nodes))
	for len(in) > 0 {
		nd := in[len(in)-1]
		in = in[:len(in)-1]
		if isLoop(nd) {
			out, in = r.loop(nd, out, in)
		} else {
			out = append(out, nd)
		}
	}
	return out
}

// continues reports whether neighbour x may continue body b's period: it
// or its own body's nearest node is the body's node next to it (left,
// dir -1: the last; right, dir 1: the first).
func continues(x *Node, b []*Node, dir int) bool {
	edge, xedge := b[0], x
	if dir < 0 {
		edge = b[len(b)-1]
	}
	if equal(x, edge) {
		return true
	}
	if isLoop(x) {
		xedge = x.Body[0]
		if dir < 0 {
			xedge = x.Body[len(x.Body)-1]
		}
		return equal(xedge, edge)
	}
	return false
}

// matches reports whether c continues body b cyclically: c[t] is
// b[from+t] (mod len(b)) for every t.
func matches(c, b []*Node, from int) bool {
	m := len(b)
	for t, x := range c {
		if !equal(x, b[mod(from+t, m)]) {
			return false
		}
	}
	return true
}

// extend counts how far the period of body b continues into the
// neighbours: to the left over out's tail (dir -1) or to the right over
// the input stack's top (dir 1). It returns the positions covered and
// the steps taken.
func extend(b []*Node, nb []*Node, dir int, steps []step) (int, []step) {
	m := len(b)
	covered := 0
	for d := 0; d < len(nb); d++ {
		x := nb[len(nb)-1-d]
		at := len(nb) - 1 - d // index into out
		if dir > 0 {
			at = d // depth in the stack
		}
		next := covered // the body position x must be: left, -1-covered; right, covered
		if dir < 0 {
			next = -1 - covered
		}
		if equal(x, b[mod(next, m)]) {
			steps = append(steps, step{at: at, span: 1})
			covered++
			continue
		}
		if !isLoop(x) {
			break
		}
		k := len(x.Body)
		peeled := 0
		for peeled < x.N {
			from := covered
			if dir < 0 {
				from = -covered - k
			}
			if !matches(x.Body, b, from) {
				break
			}
			steps = append(steps, step{at: at, span: k, peel: true})
			covered += k
			peeled++
		}
		if peeled < x.N {
			break
		}
	}
	return covered, steps
}

// loop rephases loop nd, whose left neighbours end out and whose right
// neighbours are the input stack in, and returns both as they become.
func (r *rephaser) loop(nd *Node, out, in []*Node) ([]*Node, []*Node) {
	b, n := nd.Body, nd.N
	m := len(b)
	var l, rt int
	l, r.left = extend(b, out, -1, r.left[:0])
	rt, r.right = extend(b, in, 1, r.right[:0])
	if l == 0 && rt == 0 {
		return append(out, nd), in
	}
	// Positions are counted from the loop's first: the stretch is
	// [-l, n*m+rt). A rotation starting at body index phi starts its first
	// whole iteration at p, the first position >= -l that is phi mod m.
	start := func(phi int) int { return -l + mod(phi+l, m) }
	iters := func(phi int) int { return (n*m + rt - start(phi)) / m }
	best, bestK := 0, n
	for phi := range m {
		if k := iters(phi); k > bestK {
			best, bestK = phi, k
		}
	}
	home, homeSet := 0, false
	for phi := best + 1; phi < m; phi++ {
		if iters(phi) != bestK {
			continue
		}
		if !homeSet && r.place != nil {
			home, homeSet = r.homeFunc(b), true
		}
		if r.earlier(b, home, phi, best, start(phi), start(best)) {
			best = phi
		}
	}
	p, k := start(best), bestK
	if p == 0 && k == n {
		return append(out, nd), in
	}
	// The neighbours the loop takes in.
	out = absorbLeft(out, r.left, -p)
	in = absorbRight(in, r.right, p+k*m-n*m)
	// Pieces of the old loop outside whole iterations of the new one.
	for q := 0; q < p; q++ {
		out = append(out, clone(b[q]))
	}
	phi := mod(p, m)
	rot := make([]*Node, 0, m)
	rot = append(append(rot, b[phi:]...), b[:phi]...)
	nd.Body, nd.N = rot, k
	out = append(out, nd)
	for q := p + k*m; q < n*m; q++ {
		out = append(out, clone(b[mod(q, m)]))
	}
	return out, in
}

// earlier reports whether rotation x of body b should be taken rather
// than rotation y, their first whole iterations starting at px and py:
// where place tells, the one whose first leaf is in the home function, and
// there first; else the one that starts earlier.
func (r *rephaser) earlier(b []*Node, home, x, y, px, py int) bool {
	if r.place != nil {
		fx, ax := r.place(firstLeaf(b[x]))
		fy, ay := r.place(firstLeaf(b[y]))
		if hx, hy := fx == home, fy == home; hx != hy {
			return hx
		} else if hx && ax != ay {
			return ax < ay
		}
	}
	return px < py
}

// homeFunc returns the function that holds most of the body's first leaves.
func (r *rephaser) homeFunc(b []*Node) int {
	count := map[int]int{}
	best, bestN := 0, 0
	for _, x := range b {
		fn, _ := r.place(firstLeaf(x))
		count[fn]++
		if count[fn] > bestN {
			best, bestN = fn, count[fn]
		}
	}
	return best
}

// takeSteps uses the steps (nearest first) that cover need positions. For
// each neighbour it calls whole(at) when the neighbour goes whole, and
// peel(at, used, partial) when used iterations are peeled off it, the last
// one only for its partial positions nearest the loop (0: all of it).
func takeSteps(steps []step, need int, whole func(at int), peel func(at, used, partial int)) {
	for i := 0; need > 0; {
		s := steps[i]
		if !s.peel {
			whole(s.at)
			need--
			i++
			continue
		}
		used, partial := 0, 0
		for i < len(steps) && steps[i].at == s.at && steps[i].peel && need > 0 {
			take := min(need, steps[i].span)
			if take < steps[i].span {
				partial = take
			}
			need -= take
			used++
			i++
		}
		peel(s.at, used, partial)
	}
}

// absorbLeft removes from out's tail the need positions the loop takes in.
func absorbLeft(out []*Node, steps []step, need int) []*Node {
	takeSteps(steps, need, func(at int) { out = out[:at] }, func(at, used, partial int) {
		x := out[at]
		out = out[:at]
		out = appendRest(out, x, x.N-used)
		if partial > 0 {
			out = append(out, cloneAll(x.Body[:len(x.Body)-partial])...)
		}
	})
	return out
}

// absorbRight removes from the input stack's top the need positions the
// loop takes in.
func absorbRight(in []*Node, steps []step, need int) []*Node {
	takeSteps(steps, need, func(int) { in = in[:len(in)-1] }, func(_, used, partial int) {
		x := in[len(in)-1]
		in = in[:len(in)-1]
		// The sequence goes on with the rest of the partial iteration, then
		// the iterations left: pushed in reverse.
		var rest []*Node
		rest = appendRest(rest, x, x.N-used)
		if partial > 0 {
			rest = append(cloneAll(x.Body[partial:]), rest...)
		}
		for i := len(rest) - 1; i >= 0; i-- {
			in = append(in, rest[i])
		}
	})
	return in
}

// appendRest appends what is left of loop x with iters iterations: the
// loop, its body alone, or nothing.
func appendRest(out []*Node, x *Node, iters int) []*Node {
	switch {
	case iters >= 2:
		x.N = iters
		return append(out, x)
	case iters == 1:
		return append(out, x.Body...)
	}
	return out
}
