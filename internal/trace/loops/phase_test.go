package loops

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// checkRephase compresses and rephases seq with place and checks what must
// hold for any input: losslessness, the weight sum and the node
// invariants. It returns the nodes.
func checkRephase(t testing.TB, seq []int, weight []float64, place Place) []*Node {
	t.Helper()
	nodes := Rephase(Compress(seq, weight), weight, place)
	if got := Expand(nodes); !slices.Equal(got, seq) {
		t.Fatalf("Expand(Rephase(Compress(%v))) = %v", seq, got)
	}
	want, abs, got := 0.0, 0.0, 0.0
	for _, w := range weight {
		want += w
		abs += math.Abs(w)
	}
	for _, nd := range nodes {
		got += nd.Total
	}
	if math.Abs(got-want) > 1e-9*abs {
		t.Fatalf("rephased: top-level Totals sum to %v, weights to %v", got, want)
	}
	checkNodes(t, nodes, 1)
	return nodes
}

// byName places symbols named like "Send3@f": function f, in the order of
// the number; names without '@' are in function "main", ordered by their
// first number.
func byName(name func(int) string) Place {
	return func(sym int) (int, uint64) {
		s := name(sym)
		fn := "main"
		if i := strings.IndexByte(s, '@'); i >= 0 {
			s, fn = s[:i], s[i+1:]
		}
		at := uint64(0)
		for _, c := range s {
			if c >= '0' && c <= '9' {
				at = at*10 + uint64(c-'0')
			}
		}
		h := 0
		for _, c := range fn {
			h = h*31 + int(c)
		}
		return h, at
	}
}

func TestRephase(t *testing.T) {
	rep := func(s string, n int) string { return strings.TrimSpace(strings.Repeat(s+" ", n)) }
	tests := []struct {
		name, seq, compressed, want string
	}{
		// NPB FT: a transform before the loop goes through the same
		// Alltoall call site as the one in each iteration.
		{"FT", "Init0 Bcast1 A2@t " + rep("A2@t R3@c", 6) + " Fin4",
			"Init0 Bcast1 (A2@t)[2] (R3@c+A2@t)[5] R3@c Fin4",
			"Init0 Bcast1 A2@t (A2@t+R3@c)[6] Fin4"},
		// The same with each call's compute burst before it, as trace
		// show sees it.
		{"FT with bursts", "c0 Init0 c2@t A2@t " + rep("c2@t A2@t c3@c R3@c", 6) + " c4 Fin4",
			"c0 Init0 (c2@t+A2@t)[2] (c3@c+R3@c+c2@t+A2@t)[5] c3@c R3@c c4 Fin4",
			"c0 Init0 c2@t A2@t (c2@t+A2@t+c3@c+R3@c)[6] c4 Fin4"},
		// NPB MG: a halo exchange before the loop, then exchange and norm.
		{"MG", "Init0 " + rep("I1@x I2@x S3@x S4@x W5@x", 1) + " " + rep("I1@x I2@x S3@x S4@x W5@x N6", 20) + " N7",
			"Init0 (I1@x+I2@x+S3@x+S4@x+W5@x)[2] (N6+I1@x+I2@x+S3@x+S4@x+W5@x)[19] N6 N7",
			"Init0 I1@x I2@x S3@x S4@x W5@x (I1@x+I2@x+S3@x+S4@x+W5@x+N6)[20] N7"},
		// A wait through a helper before a loop in main: as many whole
		// iterations either way; the loop starts at main's first site.
		{"helper before", "Init0 W9@w " + rep("S1 S2 W9@w", 20),
			"Init0 (W9@w+S1+S2)[20] W9@w",
			"Init0 W9@w (S1+S2+W9@w)[20]"},
		// The loop's own order in main decides: B comes after A.
		{"same function", "B2 " + rep("A1 B2", 5), "(B2+A1)[5] B2", "B2 (A1+B2)[5]"},
		// Nothing around the loop continues it: unchanged.
		{"alone", "X " + rep("B2 A1", 4) + " Y", "X (B2+A1)[4] Y", "X (B2+A1)[4] Y"},
		// A trailing call at the loop's first site stays after the loop.
		{"trailing", rep("A1 B2", 4) + " A1", "(A1+B2)[4] A1", "(A1+B2)[4] A1"},
		// Inner loops are put in phase too, in every outer iteration.
		{"nested", rep("Y0 A2@h "+rep("A2@h B3@g", 3), 4),
			"(Y0+(A2@h)[2]+(B3@g+A2@h)[2]+B3@g)[4]",
			"(Y0+A2@h+(A2@h+B3@g)[3])[4]"},
		// A neighbouring loop gives up only the iteration the loop takes.
		{"peel one of many", rep("A1", 5) + " " + rep("B2 A1", 3) + " B2",
			"(A1)[5] (B2+A1)[3] B2",
			"(A1)[4] (A1+B2)[4]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seq, name := symbols(tc.seq)
			if got := Format(Compress(seq, nil), name, FormatOptions{}); got != tc.compressed {
				t.Errorf("compressed\n got  %s\n want %s", got, tc.compressed)
			}
			w := make([]float64, len(seq))
			for i := range w {
				w[i] = float64(i%5 + 1)
			}
			nodes := checkRephase(t, seq, w, byName(name))
			if got := Format(nodes, name, FormatOptions{}); got != tc.want {
				t.Errorf("rephased\n got  %s\n want %s", got, tc.want)
			}
		})
	}
}

// BenchmarkRephaseLoops1M and BenchmarkRephaseRandom1M time Rephase alone
// on the trees Compress makes of the 1M-symbol benchmark inputs.
func BenchmarkRephaseLoops1M(b *testing.B) { benchRephase(b, realisticSeq(1_000_000)) }

func BenchmarkRephaseRandom1M(b *testing.B) {
	benchRephase(b, randomSeq(rand.New(rand.NewPCG(3, 4)), 1_000_000, 16))
}

func benchRephase(b *testing.B, seq []int) {
	place := func(s int) (int, uint64) { return s % 3, uint64(s) }
	nodes := Compress(seq, nil)
	b.ReportMetric(float64(countNodes(nodes)), "nodes")
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		c := cloneAll(nodes) // Rephase changes the nodes it is given
		b.StartTimer()
		Rephase(c, nil, place)
	}
}
