package unwind

import (
	"bytes"
	"debug/elf"
	"errors"
	"strings"
	"testing"
)

// TestRows runs hand-written FDE programs and checks the row in force at
// chosen addresses. Each FDE covers [0x1000, 0x1100) under the standard
// GCC CIE (CFA = rsp+8, return address at CFA-8), with and without an
// .eh_frame_hdr, and in the 32- and 64-bit length forms.
func TestRows(t *testing.T) {
	type at struct {
		pc   uint64
		want string // row.String(), or "error: substring"
	}
	tests := []struct {
		name  string
		insns []byte
		rows  []at
	}{
		{
			name:  "leaf",
			insns: nil,
			rows: []at{
				{0x1000, "cfa=rsp+8 ra=c-8"},
				{0x10ff, "cfa=rsp+8 ra=c-8"},
			},
		},
		{
			name: "frame pointer prologue",
			// push %rbp; mov %rsp,%rbp; ...; leave; ret
			insns: cat(cfaAdvance(1), cfaDefCFAOffset(16), cfaOffset(regRBP, 2),
				cfaAdvance(3), cfaDefCFARegister(regRBP),
				cfaAdvance(0x30), []byte{0x0c}, uleb(regRSP), uleb(8)),
			rows: []at{
				{0x1000, "cfa=rsp+8 ra=c-8"},
				{0x1001, "cfa=rsp+16 rbp=c-16 ra=c-8"},
				{0x1003, "cfa=rsp+16 rbp=c-16 ra=c-8"},
				{0x1004, "cfa=rbp+16 rbp=c-16 ra=c-8"},
				{0x1033, "cfa=rbp+16 rbp=c-16 ra=c-8"},
				{0x1034, "cfa=rsp+8 rbp=c-16 ra=c-8"},
			},
		},
		{
			name: "remember and restore state around an early return",
			// push %rbx; ...; pop %rbx; ret; (more body); pop %rbx; ret
			insns: cat(cfaAdvance(1), cfaDefCFAOffset(16), cfaOffset(3, 2),
				cfaAdvance(8), []byte{0x0a}, cfaDefCFAOffset(8), []byte{0xc0 | 3},
				cfaAdvance(1), []byte{0x0b}),
			rows: []at{
				{0x1008, "cfa=rsp+16 rbx=c-16 ra=c-8"},
				{0x1009, "cfa=rsp+8 ra=c-8"},
				{0x100a, "cfa=rsp+16 rbx=c-16 ra=c-8"},
				{0x10ff, "cfa=rsp+16 rbx=c-16 ra=c-8"},
			},
		},
		{
			name: "nested remember state",
			insns: cat([]byte{0x0a}, cfaDefCFAOffset(16), []byte{0x0a}, cfaDefCFAOffset(24),
				cfaAdvance(1), []byte{0x0b}, cfaAdvance(1), []byte{0x0b}),
			rows: []at{
				{0x1000, "cfa=rsp+24 ra=c-8"},
				{0x1001, "cfa=rsp+16 ra=c-8"},
				{0x1002, "cfa=rsp+8 ra=c-8"},
			},
		},
		{
			name: "advance_loc1, 2 and 4",
			insns: cat([]byte{0x02, 0x10}, cfaDefCFAOffset(16),
				[]byte{0x03, 0x20, 0x00}, cfaDefCFAOffset(24),
				[]byte{0x04, 0x30, 0x00, 0x00, 0x00}, cfaDefCFAOffset(32)),
			rows: []at{
				{0x100f, "cfa=rsp+8 ra=c-8"},
				{0x1010, "cfa=rsp+16 ra=c-8"},
				{0x102f, "cfa=rsp+16 ra=c-8"},
				{0x1030, "cfa=rsp+24 ra=c-8"},
				{0x1060, "cfa=rsp+32 ra=c-8"},
			},
		},
		{
			name: "extended and signed forms",
			insns: cat(
				[]byte{0x05}, uleb(3), uleb(3), // offset_extended rbx c-24
				[]byte{0x11}, uleb(12), sleb(-4), // offset_extended_sf r12 c+32
				[]byte{0x12}, uleb(regRSP), sleb(-3), // def_cfa_sf rsp+24
				cfaAdvance(1),
				[]byte{0x06}, uleb(3), // restore_extended rbx
				[]byte{0x13}, sleb(-5), // def_cfa_offset_sf 40
				[]byte{0x14}, uleb(13), uleb(2), // val_offset r13 v-16
				[]byte{0x15}, uleb(14), sleb(1), // val_offset_sf r14 v-8
				[]byte{0x2f}, uleb(15), uleb(1), // GNU_negative_offset_extended r15 c+8
				[]byte{0x2e}, uleb(32), // GNU_args_size
				[]byte{0x00, 0x00}, // nops
			),
			rows: []at{
				{0x1000, "cfa=rsp+24 rbx=c-24 r12=c+32 ra=c-8"},
				{0x1001, "cfa=rsp+40 r12=c+32 r13=v-16 r14=v-8 r15=c+8 ra=c-8"},
			},
		},
		{
			name: "undefined, same_value, register",
			insns: cat([]byte{0x07}, uleb(3), []byte{0x08}, uleb(regRBP),
				[]byte{0x09}, uleb(12), uleb(regRBP), cfaAdvance(2), []byte{0x07}, uleb(regRA)),
			rows: []at{
				{0x1000, "cfa=rsp+8 rbx=u rbp=s r12=rbp ra=c-8"},
				{0x1002, "cfa=rsp+8 rbx=u rbp=s r12=rbp ra=u"},
			},
		},
		{
			name: "expressions",
			insns: cat(cfaDefCFAExpr([]byte{0x77, 0x10, 0x06}),
				[]byte{0x10}, uleb(regRBP), uleb(2), []byte{0x77, 0x08},
				[]byte{0x16}, uleb(3), uleb(1), []byte{0x31}),
			rows: []at{
				{0x1000, "cfa=exp rbx=vexp rbp=exp ra=c-8"},
			},
		},
		{
			name: "registers beyond the tracked ones are parsed and ignored",
			insns: cat(cfaOffset(17, 4), []byte{0x05}, uleb(1000), uleb(1),
				[]byte{0x10}, uleb(40), uleb(1), []byte{0x30}, cfaAdvance(1), cfaDefCFAOffset(16)),
			rows: []at{
				{0x1000, "cfa=rsp+8 ra=c-8"},
				{0x1001, "cfa=rsp+16 ra=c-8"},
			},
		},
		{
			name:  "unknown instruction",
			insns: []byte{0x3f},
			rows:  []at{{0x1000, "error: unknown call frame instruction 0x3f"}},
		},
		{
			name:  "restore_state without remember_state",
			insns: []byte{0x0b},
			rows:  []at{{0x1000, "error: no remembered state"}},
		},
		{
			name:  "remember_state nested too deep",
			insns: bytes.Repeat([]byte{0x0a}, maxStateStack+1),
			rows:  []at{{0x1000, "error: nested too deep"}},
		},
		{
			name:  "truncated operand",
			insns: []byte{0x0e, 0x80},
			rows:  []at{{0x1000, "error: truncated"}},
		},
		{
			name:  "truncated expression",
			insns: []byte{0x0f, 0x20, 0x77},
			rows:  []at{{0x1000, "error: truncated"}},
		},
		{
			name:  "def_cfa_offset after an expression",
			insns: cat(cfaDefCFAExpr([]byte{0x77, 0x08}), cfaDefCFAOffset(16)),
			rows:  []at{{0x1000, "error: cfa is an expression"}},
		},
		{
			name:  "errors past pc are not reached",
			insns: cat(cfaAdvance(4), []byte{0x3f}),
			rows:  []at{{0x1003, "cfa=rsp+8 ra=c-8"}, {0x1004, "error: unknown"}},
		},
	}
	for _, tt := range tests {
		for _, variant := range []string{"scan", "hdr", "long"} {
			t.Run(tt.name+"/"+variant, func(t *testing.T) {
				eh := &ehBuilder{addr: testEhAddr, long: variant == "long"}
				c := eh.stdCIE()
				eh.fde(c, 0x800, 0x10, nil) // neighbours, to make the search real
				eh.fde(c, 0x1000, 0x100, tt.insns)
				eh.fde(c, 0x1100, 0x10, nil)
				var hdr []byte
				if variant == "hdr" {
					hdr = eh.hdr(testHdrAddr)
				}
				tab := mustLoadEh(t, eh.b, hdr)
				if (tab.hdrN > 0) != (variant == "hdr") {
					t.Fatalf("hdrN = %d", tab.hdrN)
				}
				for _, a := range tt.rows {
					r, _, err := tab.rowAt(a.pc)
					got := ""
					if err != nil {
						got = "error: " + err.Error()
					} else {
						got = r.String()
					}
					if want, ok := strings.CutPrefix(a.want, "error: "); ok {
						if err == nil || !strings.Contains(err.Error(), want) {
							t.Errorf("at %#x: got %q; want an error containing %q", a.pc, got, want)
						}
					} else if got != a.want {
						t.Errorf("at %#x: got %q; want %q", a.pc, got, a.want)
					}
				}
			})
		}
	}
}

// TestPLTExpression checks the CFA expression of a PLT section: one FDE
// for all entries, with the CFA depending on rip's offset in its entry.
func TestPLTExpression(t *testing.T) {
	eh := &ehBuilder{addr: testEhAddr}
	c := eh.stdCIE()
	// .plt at 0x1000: PLT0 pushes once (rsp+16), then rsp+24 after its
	// second push, then the expression for the entries.
	eh.fde(c, 0x1000, 0x100, cat(cfaDefCFAOffset(16), cfaAdvance(6), cfaDefCFAOffset(24),
		cfaAdvance(10), cfaDefCFAExpr(pltExpr)))
	tab := mustLoadEh(t, eh.b, eh.hdr(testHdrAddr))

	got, err := tab.CFA(0x1020)
	if want := "exp(breg7+8; breg16+0; lit15; and; lit11; ge; lit3; shl; plus)"; err != nil || got != want {
		t.Errorf("CFA(0x1020) = %q, %v; want %q", got, err, want)
	}
	if got, err := tab.CFA(0x1000); err != nil || got != "rsp+16" {
		t.Errorf("CFA(0x1000) = %q, %v", got, err)
	}
	if _, err := tab.CFA(0x2000); err == nil {
		t.Errorf("CFA(0x2000) succeeded")
	}

	// Unwind from each byte of a PLT entry: before its push (bytes 0..10
	// of the entry: jmp *GOT; push $n starts at 6 in the lazy layout but
	// the expression switches at 11) the return address is at rsp, after
	// it at rsp+8.
	const bias = 0x7f0000000000
	mods := func(addr uint64) (Module, bool) {
		return Module{Table: tab, Bias: bias}, addr >= bias+0x1000 && addr < bias+0x1100
	}
	const sp = 0x7ffc0000
	for off := uint64(0); off < 16; off++ {
		ip := bias + 0x1030 + off
		cfa := uint64(sp + 8)
		if off >= 11 {
			cfa += 8
		}
		mem := func(addr uint64, p []byte) error {
			if addr != cfa-8 || len(p) != 8 {
				return errors.New("unmapped")
			}
			copy(p, u64(0)) // return address 0: the end
			return nil
		}
		pcs, err := Stack(Regs{IP: ip, SP: sp}, mods, mem, 10)
		if err != nil || len(pcs) != 1 {
			t.Errorf("entry offset %d: Stack = %#x, %v", off, pcs, err)
		}
	}
}

// TestLoadErrors feeds Load malformed files and .eh_frame sections.
func TestLoadErrors(t *testing.T) {
	good := &ehBuilder{addr: testEhAddr}
	c := good.stdCIE()
	good.fde(c, 0x1000, 0x10, nil)

	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"not elf", []byte("hello, world, this is not an ELF file at all....."), "unwind: parse elf"},
		{"empty", nil, "unwind: parse elf"},
		{"aarch64", makeELF(elf.EM_AARCH64, section{".eh_frame", elf.SHT_PROGBITS, testEhAddr, good.b}),
			"unwind: not an x86-64 elf file"},
		{"no eh_frame", makeELF(elf.EM_X86_64, section{".text", elf.SHT_PROGBITS, 0x1000, []byte{0xc3}}),
			"unwind: no .eh_frame section"},
		{"nobits eh_frame", makeELF(elf.EM_X86_64, section{".eh_frame", elf.SHT_NOBITS, testEhAddr, nil}),
			"unwind: .eh_frame section has no data"},
	}
	ehOnly := func(name string, eh []byte, want string) {
		tests = append(tests, struct {
			name string
			file []byte
			want string
		}{name, makeELF(elf.EM_X86_64, section{".eh_frame", elf.SHT_PROGBITS, testEhAddr, eh}), want})
	}
	ehOnly("length past the end", cat(u32(100), u32(0), []byte{1}), "unwind: .eh_frame: entry at 0x0: length 0x64 exceeds .eh_frame")
	ehOnly("64-bit length past the end", cat(u32(0xffffffff), u64(1<<62), u32(0)), "exceeds .eh_frame")
	ehOnly("truncated length", []byte{1, 0}, "entry at 0x0: truncated")
	ehOnly("cie pointer before the section", cat(u32(12), u32(0x1000), u64(0)), "points before .eh_frame")
	toFDE := &ehBuilder{addr: testEhAddr}
	f := toFDE.fde(toFDE.stdCIE(), 0x1000, 0, nil) // empty, so not indexed
	toFDE.record(func(idOff uint64) []byte { return cat(u32(uint32(idOff-f)), u64(0)) })
	ehOnly("cie pointer to an fde", toFDE.b, "not a CIE")
	ehOnly("bad cie version", cat(u32(12), u32(0), []byte{2, 0, 1, 0x78, 16, 0, 0, 0}, u32(12), u32(20), u64(0)),
		"unsupported version 2")
	ehOnly("unknown augmentation", cat(u32(12), u32(0), []byte{1, 'x', 'y', 0, 1, 0x78, 16, 0}, u32(12), u32(20), u64(0)),
		`unsupported augmentation "xy"`)
	ehOnly("unterminated augmentation", cat(u32(8), u32(0), []byte{1, 'z', 'R', 'x'}, u32(12), u32(16), u64(0)),
		"augmentation")
	ehOnly("augmentation data too long", cat(u32(12), u32(0), []byte{1, 'z', 0, 1, 0x78, 16, 50, 0}, u32(12), u32(20), u64(0)),
		"augmentation data")
	ehOnly("bad fde encoding", cat(u32(16), u32(0), []byte{1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x07, 0, 0, 0}, u32(12), u32(24), u64(0)),
		"unknown pointer format")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := Load(bytes.NewReader(tt.file))
			if tt.want == "" {
				// Malformed but not fatal to Load: lookups must fail cleanly.
				if err == nil {
					for pc := uint64(0); pc < 0x2000; pc += 0x100 {
						if _, _, err := tab.rowAt(pc); err == nil {
							t.Errorf("rowAt(%#x) succeeded", pc)
						}
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load: %v; want an error containing %q", err, tt.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "unwind: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

// TestScan checks the index built without .eh_frame_hdr: records after a
// zero terminator are ignored, broken FDEs are skipped, FDEs of CIEs in
// both length forms are found.
func TestScan(t *testing.T) {
	eh := &ehBuilder{addr: testEhAddr}
	c := eh.stdCIE()
	eh.fde(c, 0x2000, 0x10, cfaDefCFAOffset(32))
	eh.long = true
	c2 := eh.stdCIE()
	eh.fde(c2, 0x1000, 0x10, cfaDefCFAOffset(16))
	eh.long = false
	eh.fde(c, 0x3000, 0, nil) // empty: not indexed
	// An FDE whose CIE pointer lands on an FDE: skipped.
	eh.record(func(idOff uint64) []byte { return cat(u32(uint32(idOff-eh.starts[0].off)), u64(0)) })
	eh.b = append(eh.b, u32(0)...) // terminator
	after := &ehBuilder{addr: testEhAddr + uint64(len(eh.b))}
	c3 := after.stdCIE()
	after.fde(c3, 0x4000, 0x10, nil)
	eh.b = append(eh.b, after.b...)

	tab := mustLoadEh(t, eh.b, nil)
	if len(tab.idx) != 2 || tab.idx[0].pc != 0x1000 || tab.idx[1].pc != 0x2000 {
		t.Fatalf("index = %+v", tab.idx)
	}
	for pc, want := range map[uint64]string{0x1000: "rsp+16", 0x200f: "rsp+32"} {
		if got, err := tab.CFA(pc); err != nil || got != want {
			t.Errorf("CFA(%#x) = %q, %v; want %q", pc, got, err, want)
		}
	}
	for _, pc := range []uint64{0, 0xfff, 0x1010, 0x3000, 0x4000} {
		if _, _, err := tab.rowAt(pc); !errors.Is(err, errNoFDE) {
			t.Errorf("rowAt(%#x): %v; want errNoFDE", pc, err)
		}
	}
}

// TestBadHdr checks that a malformed .eh_frame_hdr is ignored in favour
// of scanning .eh_frame.
func TestBadHdr(t *testing.T) {
	eh := &ehBuilder{addr: testEhAddr}
	c := eh.stdCIE()
	eh.fde(c, 0x1000, 0x10, cfaDefCFAOffset(16))
	eh.fde(c, 0x2000, 0x10, cfaDefCFAOffset(32))
	good := eh.hdr(testHdrAddr)

	mutate := map[string]func(h []byte) []byte{
		"version":         func(h []byte) []byte { h[0] = 2; return h },
		"leb table":       func(h []byte) []byte { h[3] = peDatarel | peSleb128; return h },
		"count too large": func(h []byte) []byte { copy(h[8:], u32(1000)); return h },
		"unsorted": func(h []byte) []byte {
			e0 := append([]byte(nil), h[12:20]...)
			copy(h[12:], h[20:28])
			copy(h[20:], e0)
			return h
		},
		"fde outside":      func(h []byte) []byte { copy(h[16:], u32(0x7fffffff)); return h },
		"wrong eh pointer": func(h []byte) []byte { copy(h[4:], u32(8)); return h },
		"truncated":        func(h []byte) []byte { return h[:6] },
		"omitted table":    func(h []byte) []byte { h[3] = peOmit; return h },
	}
	for name, f := range mutate {
		t.Run(name, func(t *testing.T) {
			tab := mustLoadEh(t, eh.b, f(append([]byte(nil), good...)))
			if tab.hdrN != 0 || len(tab.idx) != 2 {
				t.Errorf("hdrN = %d, idx = %+v; want the scanned index", tab.hdrN, tab.idx)
			}
			if got, err := tab.CFA(0x2008); err != nil || got != "rsp+32" {
				t.Errorf("CFA = %q, %v", got, err)
			}
		})
	}
}

// TestSetLocAndAbsptr uses a CIE with no augmentation (absolute 8-byte
// addresses) and DW_CFA_set_loc, and one with code alignment 4.
func TestSetLocAndAbsptr(t *testing.T) {
	eh := &ehBuilder{addr: testEhAddr}
	cieOff := eh.record(func(uint64) []byte {
		return cat(u32(0), []byte{3, 0}, uleb(4), sleb(-8), uleb(16),
			cfaDefCFA(regRSP, 8), cfaOffset(regRA, 1))
	})
	eh.record(func(idOff uint64) []byte {
		return cat(u32(uint32(idOff-cieOff)), u64(0x5000), u64(0x100),
			[]byte{0x01}, u64(0x5010), cfaDefCFAOffset(16),
			cfaAdvance(2), cfaDefCFAOffset(24)) // 2*caf = 8 bytes
	})
	tab := mustLoadEh(t, eh.b, nil)
	for pc, want := range map[uint64]string{0x5000: "rsp+8", 0x500f: "rsp+8", 0x5010: "rsp+16", 0x5017: "rsp+16", 0x5018: "rsp+24"} {
		if got, err := tab.CFA(pc); err != nil || got != want {
			t.Errorf("CFA(%#x) = %q, %v; want %q", pc, got, err, want)
		}
	}
}

// TestReadPtr decodes the pointer encodings.
func TestReadPtr(t *testing.T) {
	bases := ptrBases{addr: 0x1000, data: 0x8000, hasData: true, text: 0x400, hasText: true}
	tests := []struct {
		enc   byte
		data  []byte
		want  uint64
		ind   bool
		n     int // bytes consumed
		fails bool
	}{
		{peAbsptr, u64(0x1122334455667788), 0x1122334455667788, false, 8, false},
		{peUdata2, []byte{0xfe, 0xff}, 0xfffe, false, 2, false},
		{peSdata2, []byte{0xfe, 0xff}, ^uint64(1), false, 2, false},
		{peUdata4, u32(0xfffffff0), 0xfffffff0, false, 4, false},
		{peSdata4, u32(0xfffffff0), ^uint64(15), false, 4, false},
		{peUdata8, u64(5), 5, false, 8, false},
		{peSdata8, u64(5), 5, false, 8, false},
		{peUleb128, uleb(300), 300, false, 2, false},
		{peSleb128, sleb(-300), uint64(^uint64(299)), false, 2, false},
		{pePcrel | peSdata4, u32(0xfffffff0), 0x1000 - 16, false, 4, false},
		{peDatarel | peSdata4, u32(0x10), 0x8010, false, 4, false},
		{peTextrel | peUdata4, u32(0x10), 0x410, false, 4, false},
		{peIndirect | pePcrel | peSdata4, u32(8), 0x1008, true, 4, false},
		{peAligned, cat(u64(7)), 7, false, 8, false},
		{peFuncrel | peUdata4, u32(1), 0, false, 0, true},
		{0x07, u32(1), 0, false, 0, true},
		{peUdata4, []byte{1, 2}, 0, false, 0, true},
		{peOmit, u32(1), 0, false, 0, true},
	}
	for _, tt := range tests {
		r := reader{b: tt.data}
		v, ind, err := r.readPtr(tt.enc, &bases)
		if tt.fails {
			if err == nil {
				t.Errorf("enc %#x: got %#x; want an error", tt.enc, v)
			}
			continue
		}
		if err != nil || v != tt.want || ind != tt.ind || r.off != tt.n {
			t.Errorf("enc %#x: got %#x ind=%v off=%d err=%v; want %#x ind=%v off=%d",
				tt.enc, v, ind, r.off, err, tt.want, tt.ind, tt.n)
		}
	}
	// Aligned pointers skip to the next multiple of 8 of the address.
	r := reader{b: cat([]byte{0, 0, 0, 0}, u64(9))}
	r.off = 1
	b := ptrBases{addr: 0x1004}
	if v, _, err := r.readPtr(peAligned, &b); err != nil || v != 9 || r.off != 12 {
		t.Errorf("aligned: %#x at %d, %v", v, r.off, err)
	}
	// Relative encodings without their base fail.
	r = reader{b: u32(1)}
	if _, _, err := r.readPtr(peDatarel|peUdata4, &ptrBases{}); err == nil {
		t.Errorf("datarel without a base succeeded")
	}
}

// TestLEB checks the LEB128 readers against the test's encoders, and
// overlong encodings.
func TestLEB(t *testing.T) {
	for _, v := range []int64{0, 1, 63, 64, 127, 128, -1, -64, -65, -128, 1 << 40, -1 << 40, 1<<63 - 1, -1 << 63} {
		r := reader{b: sleb(v)}
		if got := r.sleb(); got != v || r.err != nil || r.left() != 0 {
			t.Errorf("sleb(%d) = %d, %v", v, got, r.err)
		}
		r = reader{b: uleb(uint64(v))}
		if got := r.uleb(); got != uint64(v) || r.err != nil || r.left() != 0 {
			t.Errorf("uleb(%d) = %d, %v", uint64(v), got, r.err)
		}
	}
	r := reader{b: bytes.Repeat([]byte{0xff}, 20)}
	if r.uleb(); r.err == nil {
		t.Errorf("unterminated uleb: no error")
	}
	r = reader{b: append(bytes.Repeat([]byte{0x80}, 20), 0)}
	if v := r.uleb(); r.err != nil || v != 0 {
		t.Errorf("overlong uleb: %d, %v", v, r.err)
	}
}
