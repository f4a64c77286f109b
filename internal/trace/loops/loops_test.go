package loops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// refStructure is a deliberately naive implementation of the rewriting rules
// of the package documentation, written straight from their wording. It
// returns what Format(Compress(seq, nil), strconv.Itoa, FormatOptions{})
// must return.
func refStructure(seq []int) string {
	type def struct {
		pair bool
		a, b int // pair: halves; run: symbol and count; base: a is the value
		base bool
	}
	var defs []def
	baseID := map[int]int{}
	runID := map[[2]int]int{}
	cur := make([]int, len(seq))
	for i, v := range seq {
		id, ok := baseID[v]
		if !ok {
			id = len(defs)
			defs = append(defs, def{base: true, a: v})
			baseID[v] = id
		}
		cur[i] = id
	}
	for {
		// (a) maximal runs.
		changed := false
		var out []int
		for i := 0; i < len(cur); {
			j := i
			for j < len(cur) && cur[j] == cur[i] {
				j++
			}
			if k := j - i; k >= 2 {
				key := [2]int{cur[i], k}
				id, ok := runID[key]
				if !ok {
					id = len(defs)
					defs = append(defs, def{a: cur[i], b: k})
					runID[key] = id
				}
				out = append(out, id)
				changed = true
			} else {
				out = append(out, cur[i])
			}
			i = j
		}
		cur = out
		// (b) most frequent pair, counted left to right without overlap.
		type stat struct{ count, first, end int }
		stats := map[[2]int]*stat{}
		for i := 0; i+1 < len(cur); i++ {
			p := [2]int{cur[i], cur[i+1]}
			st := stats[p]
			if st == nil {
				st = &stat{first: i}
				stats[p] = st
			} else if i < st.end {
				continue // overlaps the occurrence counted last
			}
			st.count++
			st.end = i + 2
		}
		var best [2]int
		bestN, bestFirst := 0, 0
		for p, st := range stats {
			if st.count > bestN || st.count == bestN && st.first < bestFirst {
				best, bestN, bestFirst = p, st.count, st.first
			}
		}
		if bestN >= 2 {
			id := len(defs)
			defs = append(defs, def{pair: true, a: best[0], b: best[1]})
			out = nil
			for i := 0; i < len(cur); {
				if i+1 < len(cur) && cur[i] == best[0] && cur[i+1] == best[1] {
					out = append(out, id)
					i += 2
				} else {
					out = append(out, cur[i])
					i++
				}
			}
			cur = out
			changed = true
		}
		if !changed {
			break
		}
	}
	var render func(id int) []string
	render = func(id int) []string {
		d := defs[id]
		switch {
		case d.base:
			return []string{strconv.Itoa(d.a)}
		case d.pair:
			return append(render(d.a), render(d.b)...)
		default:
			return []string{"(" + strings.Join(render(d.a), "+") + ")[" + strconv.Itoa(d.b) + "]"}
		}
	}
	var parts []string
	for _, id := range cur {
		parts = append(parts, render(id)...)
	}
	return strings.Join(parts, " ")
}

// checkCompress compresses seq and checks everything that must hold for any
// input: losslessness, the weight sum, the node invariants and, for short
// inputs, exact agreement with refStructure. It returns the nodes.
func checkCompress(t testing.TB, seq []int, weight []float64) []*Node {
	t.Helper()
	nodes := Compress(seq, weight)
	if got := Expand(nodes); !slices.Equal(got, seq) {
		t.Fatalf("Expand(Compress(%v)) = %v", seq, got)
	}
	want, abs := 0.0, 0.0
	for _, w := range weight {
		want += w
		abs += math.Abs(w)
	}
	got := 0.0
	for _, nd := range nodes {
		got += nd.Total
	}
	if math.Abs(got-want) > 1e-9*abs {
		t.Fatalf("top-level Totals sum to %v, weights to %v", got, want)
	}
	checkNodes(t, nodes, 1)
	if len(seq) <= 1000 { // refStructure takes time quadratic in len(seq)
		if got, want := Format(nodes, nil, FormatOptions{}), refStructure(seq); got != want {
			t.Fatalf("seq %v:\n got %s\nwant %s", seq, got, want)
		}
	}
	// Rephasing a copy must keep all of the above but the exact structure.
	checkRephase(t, seq, weight, nil)
	checkRephase(t, seq, weight, func(s int) (int, uint64) { return s % 3, uint64(s) })
	return nodes
}

// checkNodes checks the invariants of nodes executed execs times each.
func checkNodes(t testing.TB, nodes []*Node, execs int) {
	t.Helper()
	for _, nd := range nodes {
		if nd.Execs != execs {
			t.Fatalf("node %+v: Execs %d, want %d", nd, nd.Execs, execs)
		}
		if nd.Sym >= 0 {
			if nd.Body != nil || nd.N != 0 {
				t.Fatalf("leaf %+v has a body or a count", nd)
			}
			continue
		}
		if nd.Sym != -1 || nd.N < 2 || len(nd.Body) == 0 {
			t.Fatalf("bad loop %+v", nd)
		}
		sum, abs := 0.0, 0.0
		for _, c := range nd.Body {
			sum += c.Total
			abs += math.Abs(c.Total)
		}
		if math.Abs(sum-nd.Total) > 1e-9*abs {
			t.Fatalf("loop Total %v, body Totals sum to %v", nd.Total, sum)
		}
		checkNodes(t, nd.Body, execs*nd.N)
	}
}

// countNodes returns the number of nodes in the tree.
func countNodes(nodes []*Node) int {
	n := len(nodes)
	for _, nd := range nodes {
		n += countNodes(nd.Body)
	}
	return n
}

// symbols turns space-separated names into a sequence, numbering names in
// order of first appearance, and returns the sequence and a name function.
func symbols(text string) ([]int, func(int) string) {
	var names []string
	index := map[string]int{}
	var seq []int
	for _, f := range strings.Fields(text) {
		id, ok := index[f]
		if !ok {
			id = len(names)
			index[f] = id
			names = append(names, f)
		}
		seq = append(seq, id)
	}
	return seq, func(s int) string { return names[s] }
}

func TestCompressFormat(t *testing.T) {
	rep := func(s string, n int) string { return strings.Repeat(s+" ", n) }
	tests := []struct {
		name, seq, want string
	}{
		{"empty", "", ""},
		{"single", "A", "A"},
		{"pair of equals", "A A", "(A)[2]"},
		{"no repetition", "A B C D E", "A B C D E"},
		{"runs at start and end", "A A A B C D D", "(A)[3] B C (D)[2]"},
		{"tie and leftover", "A B A B A", "(A+B)[2] A"},
		{"tie goes leftmost", "B A B A B A B", "(B+A)[3] B"},
		{"tie after a prefix", "X A B A B A", "X (A+B)[2] A"},
		{"different run lengths", "A A A A B A A A A A B", "(A)[4] B (A)[5] B"},
		{"same run twice", "A A A B A A A C", "(A)[3] B (A)[3] C"},
		{"nested calls",
			rep(rep("C1 S1 C2 R2", 7)+"C3 B3", 3),
			"((C1+S1+C2+R2)[7]+C3+B3)[3]"},
		{"loop in the middle",
			"I0 C1 B1 C2 R2 " + rep("C3 A3", 4) + "C4 F4",
			"I0 C1 B1 C2 R2 (C3+A3)[4] C4 F4"},
		{"three levels",
			rep(rep(rep("A B", 3)+"C", 2)+"D", 2),
			"(((A+B)[3]+C)[2]+D)[2]"},
		{"loop of a run", rep("A A B", 3), "((A)[2]+B)[3]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seq, name := symbols(tc.seq)
			nodes := checkCompress(t, seq, nil)
			if got := Format(nodes, name, FormatOptions{}); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestCompressWeights(t *testing.T) {
	seq, name := symbols("CPU0 Bcast0 CPU1 Barrier1 " + strings.Repeat("CPU2 Allreduce2 ", 4))
	weight := []float64{720, 487, 900, 864,
		1308792, 100, 1308793.5, 157, 1308792.5, 128, 1308793, 130}
	nodes := checkCompress(t, seq, weight)
	const want = "CPU0: 720 Bcast0: 487 CPU1: 900 Barrier1: 864 (CPU2: 1308792.75+Allreduce2: 128.75)[4]: 5235686"
	if got := Format(nodes, name, FormatOptions{Times: true}); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	loop := nodes[4]
	if loop.Execs != 1 || loop.N != 4 || loop.Total != 5235686 {
		t.Errorf("loop %+v", loop)
	}
	if cpu := loop.Body[0]; cpu.Execs != 4 || cpu.Total != 5235171 {
		t.Errorf("loop body leaf %+v", cpu)
	}

	// A leaf two loops deep: executed 2*3 times, averaged over all of them.
	seq, name = symbols(strings.Repeat(strings.Repeat("X Y ", 3)+"Z ", 2))
	weight = []float64{1, 10, 2, 10, 3, 10, 100, 4, 10, 5, 10, 6, 10, 300}
	nodes = checkCompress(t, seq, weight)
	const want2 = "((X: 3.5+Y: 10)[3]: 40.5+Z: 200)[2]: 481"
	if got := Format(nodes, name, FormatOptions{Times: true}); got != want2 {
		t.Errorf("got  %s\nwant %s", got, want2)
	}
	x := nodes[0].Body[0].Body[0]
	if x.Execs != 6 || x.Total != 21 {
		t.Errorf("inner leaf %+v", x)
	}
}

func TestCompressPanics(t *testing.T) {
	for _, tc := range []struct {
		seq    []int
		weight []float64
	}{
		{[]int{1, 2}, []float64{1}},
		{[]int{1, -2}, nil},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Compress(%v, %v) did not panic", tc.seq, tc.weight)
				}
			}()
			Compress(tc.seq, tc.weight)
		}()
	}
}

func TestCompressLargeSymbols(t *testing.T) {
	seq := []int{1 << 40, 7, 1 << 40, 7, math.MaxInt, math.MaxInt}
	nodes := checkCompress(t, seq, nil)
	want := fmt.Sprintf("(%d+7)[2] (%d)[2]", 1<<40, math.MaxInt)
	if got := Format(nodes, nil, FormatOptions{}); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// randomSeq returns n symbols drawn uniformly from [0, alpha).
func randomSeq(rng *rand.Rand, n, alpha int) []int {
	seq := make([]int, n)
	for i := range seq {
		seq[i] = rng.IntN(alpha)
	}
	return seq
}

// programSeq runs a random program of nested loops and returns its trace,
// stopping near limit symbols.
func programSeq(rng *rand.Rand, alpha, depth, limit int) []int {
	var gen func(depth int) []int
	gen = func(depth int) []int {
		var out []int
		for range 1 + rng.IntN(4) {
			if depth > 0 && rng.IntN(2) == 0 {
				body := gen(depth - 1)
				for range 2 + rng.IntN(5) {
					out = append(out, body...)
					if len(out) > limit {
						return out
					}
				}
			} else {
				out = append(out, rng.IntN(alpha))
			}
		}
		return out
	}
	var seq []int
	for len(seq) < limit/2 {
		seq = append(seq, gen(depth)...)
	}
	return seq
}

func randomWeights(rng *rand.Rand, n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = rng.Float64() * 1000
	}
	return w
}

func TestCompressProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, alpha := range []int{1, 2, 3, 5, 16, 100} {
		for _, n := range []int{1, 2, 3, 7, 20, 100, 600, 5000} {
			for trial := range 4 {
				seq := randomSeq(rng, n, alpha)
				var w []float64
				if trial%2 == 0 {
					w = randomWeights(rng, n)
				}
				checkCompress(t, seq, w)
			}
		}
	}
	for trial := range 300 {
		alpha := 1 + rng.IntN(12)
		limit := 20 + rng.IntN(2000)
		if trial%10 == 0 {
			limit = 20000
		}
		seq := programSeq(rng, alpha, 1+rng.IntN(4), limit)
		// Sprinkle a few irregular symbols.
		for range rng.IntN(4) {
			i := rng.IntN(len(seq) + 1)
			seq = slices.Insert(seq, i, 1000+rng.IntN(3))
		}
		checkCompress(t, seq, randomWeights(rng, len(seq)))
	}
}

// realisticSeq is the trace of a rank running an outer loop of nested loops
// with bodies of 2 to 12 symbols and a few irregular symbols sprinkled in,
// n symbols long.
func realisticSeq(n int) []int {
	rng := rand.New(rand.NewPCG(7, 7))
	var iter []int
	for range 7 {
		iter = append(iter, 1, 2, 3, 4)
	}
	iter = append(iter, 5, 6)
	for range 3 {
		for range 4 {
			iter = append(iter, 7, 8)
		}
		iter = append(iter, 9, 10, 11)
	}
	for range 2 {
		iter = append(iter, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23)
	}
	iter = append(iter, 24, 25)
	seq := make([]int, 0, n)
	seq = append(seq, 0, 26)
	irregular := map[int]bool{}
	for range 10 {
		irregular[rng.IntN(n)] = true
	}
	for len(seq) < n-2 {
		for _, s := range iter {
			if irregular[len(seq)] {
				seq = append(seq, 30+rng.IntN(3))
			}
			seq = append(seq, s)
		}
	}
	seq = append(seq[:n-2], 27, 28)
	return seq
}

func TestCompressRealistic1M(t *testing.T) {
	if testing.Short() {
		t.Skip("large input")
	}
	seq := realisticSeq(1_000_000)
	nodes := Compress(seq, nil)
	if !slices.Equal(Expand(nodes), seq) {
		t.Fatal("not lossless")
	}
	// Each of the 10 irregular symbols breaks one outer iteration into a few
	// dozen top-level elements; everything else is a handful of outer loops.
	if n := countNodes(nodes); len(nodes) > 400 || n > 1000 {
		t.Errorf("%d top-level nodes, %d nodes in all; want a small tree", len(nodes), n)
	}
	t.Logf("%d top-level nodes, %d nodes", len(nodes), countNodes(nodes))
}

func TestCompressRandom1M(t *testing.T) {
	if testing.Short() {
		t.Skip("large input")
	}
	seq := randomSeq(rand.New(rand.NewPCG(3, 4)), 1_000_000, 16)
	nodes := Compress(seq, nil)
	if !slices.Equal(Expand(nodes), seq) {
		t.Fatal("not lossless")
	}
}

func FuzzCompress(f *testing.F) {
	f.Add([]byte{2, 0, 1, 0, 1, 0})
	f.Add([]byte{4, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 3, 3})
	f.Add([]byte{1, 9, 9, 9, 9})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1000 {
			return
		}
		alpha := 256
		if len(data) > 0 {
			alpha = 1 + int(data[0]%8)
			data = data[1:]
		}
		seq := make([]int, len(data))
		weight := make([]float64, len(data))
		for i, b := range data {
			seq[i] = int(b) % alpha
			weight[i] = float64(int(b) * (i%7 + 1)) // integers: sums are exact
		}
		nodes := checkCompress(t, seq, weight)
		want := 0.0
		for _, w := range weight {
			want += w
		}
		got := 0.0
		for _, nd := range nodes {
			got += nd.Total
		}
		if got != want {
			t.Fatalf("Totals sum to %v, want %v", got, want)
		}
	})
}

func BenchmarkCompressLoops1M(b *testing.B) {
	seq := realisticSeq(1_000_000)
	b.ResetTimer()
	for b.Loop() {
		Compress(seq, nil)
	}
}

func BenchmarkCompressRandom1M(b *testing.B) {
	seq := randomSeq(rand.New(rand.NewPCG(3, 4)), 1_000_000, 16)
	b.ResetTimer()
	for b.Loop() {
		Compress(seq, nil)
	}
}
