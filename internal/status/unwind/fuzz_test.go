package unwind

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to Load as an ELF file and, when Load
// accepts them, looks up and unwinds through what it loaded. Nothing may
// panic or hang.
func FuzzLoad(f *testing.F) {
	eh := seedEh()
	withHdr := makeELF(elf.EM_X86_64,
		section{".eh_frame", elf.SHT_PROGBITS, testEhAddr, eh.b},
		section{".eh_frame_hdr", elf.SHT_PROGBITS, testHdrAddr, eh.hdr(testHdrAddr)})
	f.Add(withHdr)
	f.Add(makeELF(elf.EM_X86_64, section{".eh_frame", elf.SHT_PROGBITS, testEhAddr, eh.b}))
	f.Add(withHdr[:len(withHdr)/2])
	if b, err := os.ReadFile("/usr/lib/x86_64-linux-gnu/Scrt1.o"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Load(bytes.NewReader(data))
		if err != nil {
			return
		}
		exercise(tab, data)
	})
}

// FuzzEhFrame is FuzzLoad with the ELF wrapping done right: the inputs
// are the contents of .eh_frame and .eh_frame_hdr, so that the fuzzer
// spends its time on the call frame information.
func FuzzEhFrame(f *testing.F) {
	eh := seedEh()
	f.Add(eh.b, eh.hdr(testHdrAddr))
	f.Add(eh.b, []byte(nil))
	f.Fuzz(func(t *testing.T, eh, hdr []byte) {
		secs := []section{{".eh_frame", elf.SHT_PROGBITS, testEhAddr, eh}}
		if len(hdr) > 0 {
			secs = append(secs, section{".eh_frame_hdr", elf.SHT_PROGBITS, testHdrAddr, hdr})
		}
		tab, err := Load(bytes.NewReader(makeELF(elf.EM_X86_64, secs...)))
		if err != nil {
			return
		}
		exercise(tab, eh)
	})
}

// seedEh builds the seed .eh_frame of the fuzz targets: a frame-pointer
// function, a PLT, a signal trampoline.
func seedEh() *ehBuilder {
	eh := &ehBuilder{addr: testEhAddr}
	c := eh.stdCIE()
	eh.fde(c, 0x1000, 0x100, cat(cfaAdvance(1), cfaDefCFAOffset(16), cfaOffset(regRBP, 2),
		cfaAdvance(3), cfaDefCFARegister(regRBP), []byte{0x0a, 0x0b}))
	eh.fde(c, 0x1100, 0x100, cfaDefCFAExpr(pltExpr))
	sc := eh.cie("S", nil)
	eh.fde(sc, 0x2000, 0x10, cat(cfaDefCFAExpr([]byte{0x77, 0xa0, 0x01, 0x06}),
		[]byte{0x10, regRA, 3, 0x77, 0xa8, 0x01}))
	return eh
}

// exercise looks up rows at the addresses tab's FDEs start at, and
// unwinds from there with stack as the memory.
func exercise(tab *Table, stack []byte) {
	var pcs []uint64
	for i := range min(tab.hdrN, 8) {
		if loc, _, err := tab.hdrEntry(i); err == nil {
			pcs = append(pcs, loc)
		}
	}
	for i := range min(len(tab.idx), 8) {
		pcs = append(pcs, tab.idx[i].pc)
	}
	const base = 0x7ff000000000
	mem := func(addr uint64, p []byte) error {
		if addr < base || addr-base >= uint64(len(stack)) || uint64(len(p)) > uint64(len(stack))-(addr-base) {
			return os.ErrNotExist
		}
		copy(p, stack[addr-base:])
		return nil
	}
	mods := func(addr uint64) (Module, bool) { return Module{Table: tab}, true }
	for _, pc := range pcs {
		for _, d := range []uint64{0, 7} {
			tab.rowAt(pc + d)
			tab.CFA(pc + d)
		}
		Stack(Regs{IP: pc + 1, SP: base, BP: base + 16}, mods, mem, 16)
	}
}

// FuzzStack unwinds arbitrary stack contents through libc's real CFI,
// starting anywhere in libc's text. Nothing may panic or hang.
func FuzzStack(f *testing.F) {
	path := libc
	file, err := os.Open(path)
	if err != nil {
		f.Skipf("%s: %v", path, err)
	}
	tab, err := Load(file)
	file.Close()
	if err != nil {
		f.Fatal(err)
	}
	ef, err := elf.Open(path)
	if err != nil {
		f.Fatal(err)
	}
	text := ef.Section(".text")
	ef.Close()
	if text == nil {
		f.Skip("libc has no .text")
	}

	const bias = 0x7f0000000000
	const sp = 0x7ffc00000000
	word := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	// Seeds: return addresses into libc's text at a few depths.
	f.Add([]byte{}, uint64(0), uint64(0))
	f.Add(bytes.Repeat(word(bias+text.Addr+0x1000), 64), uint64(0x1000), uint64(sp+64))
	f.Add(cat(make([]byte, 24), word(bias+text.Addr+0x2345), make([]byte, 64), word(0)), uint64(0x20), uint64(0))

	mods := func(addr uint64) (Module, bool) {
		return Module{Table: tab, Bias: bias}, addr >= bias+text.Addr && addr < bias+text.Addr+text.Size
	}
	f.Fuzz(func(t *testing.T, stack []byte, ip, bp uint64) {
		mem := func(addr uint64, p []byte) error {
			if addr < sp || addr-sp >= uint64(len(stack)) || uint64(len(p)) > uint64(len(stack))-(addr-sp) {
				return os.ErrNotExist
			}
			copy(p, stack[addr-sp:])
			return nil
		}
		regs := Regs{IP: bias + text.Addr + ip%text.Size, SP: sp, BP: bp}
		pcs, _ := Stack(regs, mods, mem, 64)
		if len(pcs) == 0 || pcs[0] != regs.IP || len(pcs) > 64 {
			t.Fatalf("Stack = %#x", pcs)
		}
	})
}
