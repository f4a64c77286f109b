package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fakeStack is a sparse memory of 8-byte words.
type fakeStack map[uint64]uint64

func (s fakeStack) read(addr uint64, p []byte) error {
	if len(p) != 8 {
		return fmt.Errorf("read of %d bytes", len(p))
	}
	v, ok := s[addr]
	if !ok {
		return fmt.Errorf("%#x unmapped", addr)
	}
	binary.LittleEndian.PutUint64(p, v)
	return nil
}

// TestStackSynthetic unwinds hand-built stacks through a hand-built table
// of functions, loaded at a bias:
//
//	0x1000 f0: leaf after "push rbx; sub $16,rsp": CFA rsp+32, rbx c-16
//	0x2000 f1: "push rbp; mov rsp,rbp": from 0x2004 CFA rbp+16, rbp c-16
//	0x3000 f2: CFA rsp+16, rbp saved at c-16 (rbp used as a scratch reg)
//	0x4000 start: return address undefined (outermost)
//	0x5000 sig: a signal trampoline (augmentation "S") that restores all
//	       registers from a sigcontext at rsp via expressions
//	0x6000 bad: CFA from rbx, which unwinding does not track
//	0x7000 down: CFA = rsp+0, not above rsp
//	0x8000 undefbp: rbp undefined in the caller, CFA rsp+8
func TestStackSynthetic(t *testing.T) {
	eh := &ehBuilder{addr: testEhAddr}
	c := eh.stdCIE()
	eh.fde(c, 0x1000, 0x100, cat(cfaDefCFAOffset(32), cfaOffset(3, 2)))
	eh.fde(c, 0x2000, 0x100, cat(cfaAdvance(1), cfaDefCFAOffset(16), cfaOffset(regRBP, 2),
		cfaAdvance(3), cfaDefCFARegister(regRBP)))
	eh.fde(c, 0x3000, 0x100, cat(cfaDefCFAOffset(16), cfaOffset(regRBP, 2)))
	eh.fde(c, 0x4000, 0x100, []byte{0x07, regRA})
	sc := eh.cie("S", nil)
	eh.fde(sc, 0x4fff, 0x101, cat(
		cfaDefCFAExpr([]byte{0x77, 0xa0, 0x01, 0x06}), // *(rsp+160)
		[]byte{0x10, regRBP, 3, 0x77, 0x78, 0x00},     // rbp at rsp+120
		[]byte{0x10, regRSP, 3, 0x77, 0xa0, 0x01},     // rsp at rsp+160
		[]byte{0x10, regRA, 3, 0x77, 0xa8, 0x01},      // rip at rsp+168
	))
	eh.fde(c, 0x6000, 0x100, cfaDefCFA(3, 8))
	eh.fde(c, 0x7000, 0x100, cfaDefCFAOffset(0))
	eh.fde(c, 0x8000, 0x100, []byte{0x07, regRBP})
	tab := mustLoadEh(t, eh.b, eh.hdr(testHdrAddr))

	const bias = 0x555500000000
	const (
		f0      = bias + 0x1000
		f1      = bias + 0x2000
		f2      = bias + 0x3000
		start   = bias + 0x4000
		sig     = bias + 0x5000
		bad     = bias + 0x6000
		down    = bias + 0x7000
		undefbp = bias + 0x8000
	)
	mods := func(addr uint64) (Module, bool) {
		return Module{Table: tab, Bias: bias}, addr >= bias && addr < bias+0x10000
	}

	const sp = 0x7ffd0000
	tests := []struct {
		name  string
		regs  Regs
		stack fakeStack
		max   int
		want  []uint64
		err   string
	}{
		{
			// f0 (CFA sp+32) <- f2 (CFA sp'+16, saves rbp) <- f1 (CFA rbp+16) <- start.
			name: "chain to the outermost frame",
			regs: Regs{IP: f0 + 0x10, SP: sp, BP: 0xdead},
			stack: fakeStack{
				sp + 24: f2 + 0x20, // f0's return address, CFA sp+32
				// f2: sp+32, CFA sp+48; rbp (f1's frame pointer) at sp+32
				sp + 32: sp + 0x100,
				sp + 40: f1 + 0x30,
				// f1: CFA = rbp+16 = sp+0x110; saved rbp at sp+0x100
				sp + 0x100: 0,
				sp + 0x108: start + 5,
			},
			max:  10,
			want: []uint64{f0 + 0x10, f2 + 0x20, f1 + 0x30, start + 5},
		},
		{
			name:  "return address 0 ends the stack",
			regs:  Regs{IP: f0 + 0x10, SP: sp},
			stack: fakeStack{sp + 24: 0},
			max:   10,
			want:  []uint64{f0 + 0x10},
		},
		{
			name:  "max",
			regs:  Regs{IP: f0, SP: sp},
			stack: fakeStack{sp + 24: f2 + 0x20},
			max:   1,
			want:  []uint64{f0},
		},
		{
			name: "max 0",
			regs: Regs{IP: f0, SP: sp},
			max:  0,
			want: nil,
		},
		{
			name:  "unreadable return address",
			regs:  Regs{IP: f0 + 0x10, SP: sp},
			stack: fakeStack{},
			max:   10,
			want:  []uint64{f0 + 0x10},
			err:   fmt.Sprintf("unwind: frame 0 at %#x: return address: read stack at %#x: %#x unmapped", f0+0x10, sp+24, sp+24),
		},
		{
			name:  "return address into no module",
			regs:  Regs{IP: f0 + 0x10, SP: sp},
			stack: fakeStack{sp + 24: 0x1234},
			max:   10,
			want:  []uint64{f0 + 0x10, 0x1234},
			err:   "unwind: no CFI for 0x1234 (frame 1): address in no known module",
		},
		{
			name:  "return address into a gap of the table",
			regs:  Regs{IP: f0 + 0x10, SP: sp},
			stack: fakeStack{sp + 24: bias + 0x9000},
			max:   10,
			want:  []uint64{f0 + 0x10, bias + 0x9000},
			err:   fmt.Sprintf("unwind: no CFI for %#x (frame 1)", bias+0x9000),
		},
		{
			// The return address is the first byte after f2: the lookup
			// at return address - 1 finds f2.
			name:  "return address just past the caller",
			regs:  Regs{IP: f0 + 0x10, SP: sp},
			stack: fakeStack{sp + 24: f2 + 0x100, sp + 40: 0},
			max:   10,
			want:  []uint64{f0 + 0x10, f2 + 0x100},
		},
		{
			// A leaf without CFI (a TSC timer) that pushed nothing:
			// its return address is at sp.
			name:  "leaf without CFI, return address at sp",
			regs:  Regs{IP: bias + 0x9000, SP: sp},
			stack: fakeStack{sp: f2 + 0x20, sp + 8: 0, sp + 16: 0, sp + 24: 0},
			max:   10,
			want:  []uint64{bias + 0x9000, f2 + 0x20},
		},
		{
			// A leaf without CFI that set up a frame pointer: sp holds
			// a local, bp the saved bp and bp+8 the return address.
			name:  "leaf without CFI, frame pointer",
			regs:  Regs{IP: bias + 0x9000, SP: sp, BP: sp + 0x10},
			stack: fakeStack{sp: 42, sp + 0x10: sp + 0x100, sp + 0x18: f1 + 0x30, sp + 0x100: 0, sp + 0x108: start + 5},
			max:   10,
			want:  []uint64{bias + 0x9000, f1 + 0x30, start + 5},
		},
		{
			// Neither candidate returns into code with CFI: the error
			// stands.
			name:  "leaf without CFI, no caller found",
			regs:  Regs{IP: bias + 0x9000, SP: sp, BP: sp + 0x10},
			stack: fakeStack{sp: 42, sp + 0x10: 0, sp + 0x18: 0x1234},
			max:   10,
			want:  []uint64{bias + 0x9000},
			err:   fmt.Sprintf("unwind: no CFI for %#x (frame 0)", bias+0x9000),
		},
		{
			name: "a frame of untracked registers",
			regs: Regs{IP: bad, SP: sp},
			max:  10,
			want: []uint64{bad},
			err:  fmt.Sprintf("unwind: frame 0 at %#x: cfa: register rbx is not tracked", bad),
		},
		{
			name: "cfa not above sp",
			regs: Regs{IP: down, SP: sp},
			max:  10,
			want: []uint64{down},
			err:  fmt.Sprintf("cfa %#x is not above sp %#x", sp, sp),
		},
		{
			// A stack that returns into f0 at a lower address: the CFA
			// check stops it.
			name:  "stack going down",
			regs:  Regs{IP: f0, SP: sp},
			stack: fakeStack{sp + 24: down + 1, sp + 32: 7},
			max:   10,
			want:  []uint64{f0, down + 1},
			err:   "is not above sp",
		},
		{
			// undefbp makes rbp unknown; f1 above it needs rbp.
			name:  "rbp undefined, then needed",
			regs:  Regs{IP: undefbp, SP: sp},
			stack: fakeStack{sp: f1 + 0x10},
			max:   10,
			want:  []uint64{undefbp, f1 + 0x10},
			err:   "cfa: rbp is not known in this frame",
		},
		{
			// A handler (f0) returns into the trampoline; the
			// trampoline's FDE starts one byte early so that the
			// lookup at return address - 1 finds it. The interrupted
			// code is at the first byte of f1, which must be looked up
			// at that address, not one before (0x1fff is in f0's FDE's
			// gap).
			name: "signal frame",
			regs: Regs{IP: f0 + 0x10, SP: sp},
			stack: fakeStack{
				sp + 24:         sig,         // handler returns to the trampoline
				sp + 32 + 120:   sp + 0x1000, // saved rbp: f1's frame pointer
				sp + 32 + 160:   sp + 0x800,  // saved rsp
				sp + 32 + 168:   f1,          // saved rip: f1's first byte
				sp + 0x800:      0,           // f1 at entry: return address at rsp
				sp + 0x1000 + 8: 0,
			},
			max:  10,
			want: []uint64{f0 + 0x10, sig, f1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pcs, err := Stack(tt.regs, mods, tt.stack.read, tt.max)
			if !slices.Equal(pcs, tt.want) {
				t.Errorf("pcs = %#x; want %#x", pcs, tt.want)
			}
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("err = %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("err = %v; want %q", err, tt.err)
			}
		})
	}
}

// TestStackNilArgs checks that missing callbacks are an error, not a panic.
func TestStackNilArgs(t *testing.T) {
	if _, err := Stack(Regs{IP: 1}, nil, nil, 5); err == nil {
		t.Errorf("Stack with nil Modules: no error")
	}
}

// TestStackUnknownBP starts in a frame-pointer function with BP 0, as
// from /proc/PID/syscall: the CFA cannot be computed.
func TestStackUnknownBP(t *testing.T) {
	eh := &ehBuilder{addr: testEhAddr}
	eh.fde(eh.stdCIE(), 0x1000, 0x100, cat(cfaDefCFAOffset(16), cfaOffset(regRBP, 2), cfaDefCFARegister(regRBP)))
	tab := mustLoadEh(t, eh.b, nil)
	mods := func(addr uint64) (Module, bool) { return Module{Table: tab}, true }
	stack := fakeStack{0x6ff8: 0x1234, 0x6ff0: 0}
	pcs, err := Stack(Regs{IP: 0x1010, SP: 0x6000}, mods, stack.read, 10)
	if len(pcs) != 1 || err == nil || !strings.Contains(err.Error(), "rbp is not known") {
		t.Errorf("Stack with BP 0 = %#x, %v", pcs, err)
	}
	pcs, err = Stack(Regs{IP: 0x1010, SP: 0x6000, BP: 0x6ff0}, mods, stack.read, 10)
	if !slices.Equal(pcs, []uint64{0x1010, 0x1234}) || err == nil {
		t.Errorf("Stack with BP = %#x, %v", pcs, err)
	}
}

// TestValueAtAndLiveIn: frame 1 saved its caller's rbx at 0x1000 and set
// rbx itself; frame 0 saved nothing. Frame 2's rbx is the saved word,
// frame 0's and 1's the live register. r12, saved by no frame, is the
// application's: ValueAt still reads it (no frame changed it), LiveIn
// does not count it as the library frames'.
func TestValueAtAndLiveIn(t *testing.T) {
	fs := []Frame{{PC: 0x10}, {PC: 0x20}, {PC: 0x30}}
	fs[1].Saved[3] = 0x1000
	mem := func(addr uint64, p []byte) error {
		if addr != 0x1000 || len(p) != 8 {
			return errors.New("unmapped")
		}
		binary.LittleEndian.PutUint64(p, 0xcafe)
		return nil
	}
	regs := Regs{SP: 0x900, BP: 0x77, HasLive: true}
	regs.Live[3], regs.Live[12] = 0xbeef, 0x1212
	for _, tt := range []struct {
		k, reg int
		want   uint64
		ok     bool
	}{
		{2, 3, 0xcafe, true}, // saved by frame 1
		{1, 3, 0xbeef, true}, // live: frame 0 saved nothing
		{0, 3, 0xbeef, true},
		{2, 12, 0x1212, true}, // no frame changed it
		{2, 6, 0x77, true},    // rbp is BP
		{3, 3, 0, false},      // beyond the frames
	} {
		got, ok := ValueAt(fs, tt.k, tt.reg, regs, mem)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ValueAt(frame %d, reg %d) = %#x, %v; want %#x, %v", tt.k, tt.reg, got, ok, tt.want, tt.ok)
		}
	}
	if v, ok := LiveIn(fs, 1, 3, regs); !ok || v != 0xbeef {
		t.Errorf("LiveIn(frame 1, rbx) = %#x, %v; want frame 1's live 0xbeef", v, ok)
	}
	if _, ok := LiveIn(fs, 0, 3, regs); ok {
		t.Error("LiveIn(frame 0, rbx): frame 0 never saved rbx, so its live value is frame 1's")
	}
	if _, ok := LiveIn(fs, 2, 12, regs); ok {
		t.Error("LiveIn(frame 2, r12): no frame saved r12, the value is the application's")
	}
	if _, ok := LiveIn(fs, 2, 3, Regs{}); ok {
		t.Error("LiveIn without live registers")
	}
}
