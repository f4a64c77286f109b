package loops

import (
	"strconv"
	"strings"
)

// FormatOptions are the options of Format.
type FormatOptions struct {
	Times bool                   // print times (high detail); false: structure only (low detail)
	Hide  func(sym int) bool     // leaves to leave out of the text (e.g. compute bursts at low detail); a loop whose body prints nothing is left out too; nil hides nothing
	Value func(v float64) string // prints a time, e.g. with its unit; nil prints the bare number with at most two decimals
}

// Format prints nodes as space-separated top-level elements. A leaf prints
// as its name and a loop as (e1+e2+...)[N], for example
//
//	Init0 Bcast1 Barrier2 (Allreduce3)[4] Finalize4
//
// With opt.Times every element is followed by ": t", where t is the node's
// Total divided by its Execs: the average time of one execution of a leaf,
// the time of one whole execution of a loop. Numbers have at most two
// decimals, without trailing zeros:
//
//	CPU0: 720 Bcast0: 487 (CPU2: 1308792.75+Allreduce2: 128.75)[4]: 5235686
//
// name gives a symbol's name; nil uses the decimal number.
func Format(nodes []*Node, name func(sym int) string, opt FormatOptions) string {
	if name == nil {
		name = strconv.Itoa
	}
	f := formatter{name: name, opt: opt}
	for _, nd := range nodes {
		mark := len(f.buf)
		if mark > 0 {
			f.buf = append(f.buf, ' ')
		}
		if !f.node(nd) {
			f.buf = f.buf[:mark]
		}
	}
	return string(f.buf)
}

type formatter struct {
	name func(int) string
	opt  FormatOptions
	buf  []byte
}

// node appends nd and reports whether it printed anything; when it did not,
// the buffer may hold partial output past the caller's mark.
func (f *formatter) node(nd *Node) bool {
	if !isLoop(nd) {
		if f.opt.Hide != nil && f.opt.Hide(nd.Sym) {
			return false
		}
		f.buf = append(f.buf, f.name(nd.Sym)...)
	} else {
		f.buf = append(f.buf, '(')
		printed := false
		for _, c := range nd.Body {
			mark := len(f.buf)
			if printed {
				f.buf = append(f.buf, '+')
			}
			if f.node(c) {
				printed = true
			} else {
				f.buf = f.buf[:mark]
			}
		}
		if !printed {
			return false
		}
		f.buf = append(f.buf, ")["...)
		f.buf = strconv.AppendInt(f.buf, int64(nd.N), 10)
		f.buf = append(f.buf, ']')
	}
	if f.opt.Times {
		execs := float64(nd.Execs)
		if nd.Execs <= 0 {
			execs = 1
		}
		f.buf = append(f.buf, ": "...)
		if f.opt.Value != nil {
			f.buf = append(f.buf, f.opt.Value(nd.Total/execs)...)
		} else {
			f.buf = append(f.buf, formatNumber(nd.Total/execs)...)
		}
	}
	return true
}

// formatNumber prints v with at most two decimals, trailing zeros and a
// trailing '.' removed.
func formatNumber(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
