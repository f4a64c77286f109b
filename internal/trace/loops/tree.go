package loops

// Node is one element of a compressed sequence: a leaf symbol or a loop.
//
// A node nested in a loop body stands for every execution of that position
// of the body: Execs counts them and Total sums their weights.
type Node struct {
	Sym   int     // the leaf's symbol; -1 for a loop
	Body  []*Node // the loop body (nil for a leaf)
	N     int     // loop iteration count (>= 2); 0 for a leaf
	Execs int     // how many times this node was executed in the whole sequence (top-level nodes: 1; a leaf inside a loop of 4 executed once: 4)
	Total float64 // sum of the weights of every input position this node covered, over all its executions
}

// isLoop reports whether nd is a loop node.
func isLoop(nd *Node) bool { return nd.Sym < 0 }

// builder turns engine symbols into nodes.
type builder struct {
	e     *engine
	stack []int32 // shared by nested appendFlat calls, each above its own base
	slab  []Node
}

func (b *builder) node() *Node {
	if len(b.slab) == 0 {
		b.slab = make([]Node, 512)
	}
	nd := &b.slab[0]
	b.slab = b.slab[1:]
	return nd
}

// appendFlat appends the nodes of symbol s, with pair symbols flattened, each
// node executed execs times. Pairs are unfolded with an explicit stack
// because their nesting can be as deep as the sequence is long; loops nest at
// most log2(n) deep.
func (b *builder) appendFlat(out []*Node, s int32, execs int) []*Node {
	base := len(b.stack)
	b.stack = append(b.stack, s)
	for len(b.stack) > base {
		t := b.stack[len(b.stack)-1]
		b.stack = b.stack[:len(b.stack)-1]
		sy := b.e.syms[t]
		switch sy.kind {
		case kindPair:
			b.stack = append(b.stack, sy.b, sy.a)
		case kindRun:
			nd := b.node()
			*nd = Node{Sym: -1, N: int(sy.b), Execs: execs}
			nd.Body = b.appendFlat(nil, sy.a, execs*int(sy.b))
			out = append(out, nd)
		default:
			nd := b.node()
			*nd = Node{Sym: b.e.baseVal[sy.a], Execs: execs}
			out = append(out, nd)
		}
	}
	return out
}

// addWeights adds to each node the weights of the positions it covers,
// starting at position pos, and returns the next position and the sum added.
func addWeights(nodes []*Node, weight []float64, pos int) (int, float64) {
	sum := 0.0
	for _, nd := range nodes {
		if !isLoop(nd) {
			w := weight[pos]
			nd.Total += w
			sum += w
			pos++
			continue
		}
		for range nd.N {
			var s float64
			pos, s = addWeights(nd.Body, weight, pos)
			nd.Total += s
			sum += s
		}
	}
	return pos, sum
}

// Expand returns the sequence of leaf symbols that nodes stand for, loops
// unrolled. It is the inverse of Compress.
func Expand(nodes []*Node) []int {
	n := expandedLen(nodes)
	if n == 0 {
		return nil
	}
	return appendExpand(make([]int, 0, n), nodes)
}

func expandedLen(nodes []*Node) int {
	n := 0
	for _, nd := range nodes {
		if isLoop(nd) {
			n += max(nd.N, 0) * expandedLen(nd.Body)
		} else {
			n++
		}
	}
	return n
}

func appendExpand(out []int, nodes []*Node) []int {
	for _, nd := range nodes {
		if !isLoop(nd) {
			out = append(out, nd.Sym)
			continue
		}
		if nd.N <= 0 {
			continue
		}
		start := len(out)
		out = appendExpand(out, nd.Body)
		once := out[start:]
		for range nd.N - 1 {
			out = append(out, once...)
			once = out[start : start+len(once)]
		}
	}
	return out
}
