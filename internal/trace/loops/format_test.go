package loops

import (
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	leaf := func(sym, execs int, total float64) *Node {
		return &Node{Sym: sym, Execs: execs, Total: total}
	}
	loop := func(n, execs int, total float64, body ...*Node) *Node {
		return &Node{Sym: -1, N: n, Execs: execs, Total: total, Body: body}
	}
	names := []string{"CPU0", "Init0", "CPU1", "Bcast1", "CPU2", "Barrier2", "CPU3", "Allreduce3", "CPU4", "Finalize4"}
	name := func(s int) string { return names[s] }
	isCPU := func(s int) bool { return strings.HasPrefix(names[s], "CPU") }

	// The trace of a rank: a compute burst before each call.
	trace := []*Node{
		leaf(0, 1, 720), leaf(1, 1, 487), leaf(2, 1, 900), leaf(3, 1, 864),
		leaf(4, 1, 10), leaf(5, 1, 20),
		loop(4, 1, 400, leaf(6, 4, 300), leaf(7, 4, 100)),
		leaf(8, 1, 0.5), leaf(9, 1, 1.005),
	}
	tests := []struct {
		name  string
		nodes []*Node
		opt   FormatOptions
		want  string
	}{
		{"empty", nil, FormatOptions{}, ""},
		{"structure", trace, FormatOptions{},
			"CPU0 Init0 CPU1 Bcast1 CPU2 Barrier2 (CPU3+Allreduce3)[4] CPU4 Finalize4"},
		{"low detail", trace, FormatOptions{Hide: isCPU},
			"Init0 Bcast1 Barrier2 (Allreduce3)[4] Finalize4"},
		{"times", trace, FormatOptions{Times: true},
			"CPU0: 720 Init0: 487 CPU1: 900 Bcast1: 864 CPU2: 10 Barrier2: 20 (CPU3: 75+Allreduce3: 25)[4]: 400 CPU4: 0.5 Finalize4: 1"},
		{"times with units", trace[6:7], FormatOptions{Times: true, Value: func(v float64) string { return formatNumber(v) + " us" }},
			"(CPU3: 75 us+Allreduce3: 25 us)[4]: 400 us"},
		{"times hidden", trace, FormatOptions{Times: true, Hide: isCPU},
			"Init0: 487 Bcast1: 864 Barrier2: 20 (Allreduce3: 25)[4]: 400 Finalize4: 1"},
		{"hidden loop", []*Node{
			loop(3, 1, 0, leaf(0, 3, 0)), leaf(1, 1, 0),
			loop(2, 1, 0, leaf(2, 2, 0), loop(2, 2, 0, leaf(4, 4, 0))),
			leaf(3, 1, 0), loop(5, 1, 0, leaf(8, 5, 0)),
		}, FormatOptions{Hide: isCPU}, "Init0 Bcast1"},
		{"everything hidden", []*Node{leaf(0, 1, 1), loop(2, 1, 0, leaf(2, 2, 0))},
			FormatOptions{Hide: isCPU}, ""},
		{"nested times", []*Node{
			loop(2, 1, 481,
				loop(3, 2, 81, leaf(1, 6, 21), leaf(3, 6, 60)),
				leaf(5, 2, 400)),
		}, FormatOptions{Times: true}, "((Init0: 3.5+Bcast1: 10)[3]: 40.5+Barrier2: 200)[2]: 481"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Format(tc.nodes, name, tc.opt); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	if got := Format([]*Node{leaf(12, 1, 0), leaf(3, 1, 0)}, nil, FormatOptions{}); got != "12 3" {
		t.Errorf("nil name: got %q", got)
	}
}

func TestFormatNumber(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{720, "720"}, {1308792.75, "1308792.75"}, {0.5, "0.5"}, {0, "0"},
		{128.7, "128.7"}, {2.004, "2"}, {2.006, "2.01"}, {-0.001, "0"},
		{-3.25, "-3.25"}, {1e6, "1000000"}, {100.10, "100.1"},
	} {
		if got := formatNumber(tc.v); got != tc.want {
			t.Errorf("formatNumber(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
