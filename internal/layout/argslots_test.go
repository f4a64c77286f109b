package layout

import (
	"reflect"
	"strings"
	"testing"
)

// The functions of testdata/frames.S, assembled at textBase.
const (
	framesRegs          = 0x1000
	framesRegsWait      = 0x1033
	framesStack         = 0x1044
	framesStackWait     = 0x1064
	framesClobbered     = 0x1070
	framesClobberedWait = 0x1086
	framesFramed        = 0x108c
	framesFramedWait    = 0x109c
	framesConflict      = 0x109e
	framesConflictWait  = 0x10ae
	framesEnd           = 0x10b0
)

func framesCode(t testing.TB) Code { return codeAt(textBase, hexBytes(t, "testdata/frames.hex")) }

func TestArgHomes(t *testing.T) {
	code := framesCode(t)
	stackWord := func(off uint32) Home { return Home{Reg: -1, Off: off} }
	tests := []struct {
		name      string
		entry, at uint64
		size      int
		args      []int
		want      []Home
		found     []bool
	}{
		{
			"callee-saved registers, pushes around an earlier call",
			framesRegs, framesRegsWait, framesStack - framesRegs,
			[]int{3, 4, 5, 0, 1},
			[]Home{{Reg: 6}, {Reg: 14}, {Reg: 12}, stackWord(0), {}}, // rbp, r14, r12; count (rsi) is gone
			[]bool{true, true, true, true, false},
		},
		{
			"stack words and a sign-extended register, in a loop",
			framesStack, framesStackWait, framesClobbered - framesStack,
			[]int{0, 1, 2},
			[]Home{stackWord(0x14), {Reg: 14}, stackWord(0x20)},
			[]bool{true, true, true},
		},
		{
			// rbx holds a on one path and 0 on the other: a maybe.
			"overwritten on one path; written on one path only",
			framesClobbered, framesClobberedWait, framesFramed - framesClobbered,
			[]int{0, 1},
			[]Home{{Reg: 3, Maybe: true}, stackWord(8)},
			[]bool{true, true},
		},
		{
			// rbx holds a on one path and b on the other: shared, each
			// naming the other, for a reader that tells them apart.
			"two arguments in one register on two paths",
			framesConflict, framesConflictWait, framesEnd - framesConflict,
			[]int{0, 1},
			[]Home{{Reg: 3, Maybe: true, Shared: true, Other: 1}, {Reg: 3, Maybe: true, Shared: true, Other: 0}},
			[]bool{true, true},
		},
		{
			"a frame pointer",
			framesFramed, framesFramedWait, framesConflict - framesFramed,
			[]int{0},
			[]Home{stackWord(12)},
			[]bool{true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := ArgHomes(code, tt.entry, int(tt.size), tt.at, tt.args...)
			if err != nil {
				t.Fatalf("ArgHomes: %v", err)
			}
			if !reflect.DeepEqual(found, tt.found) {
				t.Fatalf("found %v, want %v (homes %+v)", found, tt.found, got)
			}
			for i := range got {
				if found[i] && got[i] != tt.want[i] {
					t.Errorf("argument %d: home %+v, want %+v", tt.args[i], got[i], tt.want[i])
				}
			}
		})
	}
}

func TestArgHomesRefuses(t *testing.T) {
	code := framesCode(t)
	for _, tt := range []struct {
		name      string
		entry, at uint64
		size      int
		want      string
	}{
		{"a return address outside the function", framesStack, framesRegsWait, framesClobbered - framesStack, "outside the function"},
		{"the entry itself", framesStack, framesStack, framesClobbered - framesStack, "outside the function"},
		{"no path there", framesStack, framesStackWait + 1, framesClobbered - framesStack, "no path"},
		{"no code", 0x9000, 0x9010, 0x40, "no path"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ArgHomes(code, tt.entry, tt.size, tt.at, 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ArgHomes error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// FuzzArgHomes runs the analysis on arbitrary code: it must end, within
// its step limit, without panicking.
func FuzzArgHomes(f *testing.F) {
	b := hexBytes(f, "testdata/frames.hex")
	f.Add(b, uint16(framesRegsWait-textBase))
	f.Add([]byte{0xeb, 0xfe, 0xc3}, uint16(2))
	f.Fuzz(func(t *testing.T, b []byte, at uint16) {
		code := codeAt(textBase, b)
		_, _, _ = ArgHomes(code, textBase, len(b), textBase+uint64(at), 0, 1, 2, 3, 4, 5)
	})
}
