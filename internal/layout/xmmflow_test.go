package layout

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/mpitest"
)

// TestObjectStoresXMM: GCC 10 (Debian 11's Open MPI 4.1.0) stores
// mca_pml_ob1_irecv's source and tag into the request as one movq of an
// XMM register it packed them in (punpckldq), and the communicator with
// the datatype as one movups (punpcklqdq); followed through general
// registers only, irecv wrote its peer and tag "at 0 places" and status
// had no peer on that build. Read from the real mca_pml_ob1.so in the
// root .ci/roots makes.
func TestObjectStoresXMM(t *testing.T) {
	path := filepath.Join(mpitest.RootsDir(), "bullseye", "usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so")
	if _, err := os.Stat(path); err != nil {
		mpitest.Require(t, "Debian 11's mca_pml_ob1.so at "+path+" (make the root with .ci/roots)")
	}
	code, addr, size := elfCode(t, path, "mca_pml_ob1_irecv")
	stores, err := ObjectStores(code, addr, size, 1)
	if err != nil {
		t.Fatal(err)
	}
	// src (argument 3) and tag (4) at 0x1d8 and 0x1dc, the communicator
	// (5) at 0xb0, beside the request's MPI object at 0x98 (a mov).
	for _, want := range []Store{{Arg: 3, Off: 0x1d8, Bytes: 4}, {Arg: 4, Off: 0x1dc, Bytes: 4}, {Arg: 5, Off: 0xb0, Bytes: 8}, {Arg: 5, Off: 0x98, Bytes: 8}} {
		if !slices.Contains(stores, want) {
			t.Errorf("stores %+v lack %+v", stores, want)
		}
	}
}

// TestObjectStoresXMMLanes: the lanes of an XMM register on their own
// (bytes of code assembled by hand): a 64-bit argument split by
// punpckldq is no argument any more, and a call forgets every lane.
func TestObjectStoresXMMLanes(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte
		want []Store
	}{
		{"movd pair", []byte{
			0x31, 0xc0, // xor %eax,%eax: rax, a base that is no argument
			0x66, 0x0f, 0x6e, 0xc1, // movd %ecx,%xmm0
			0x66, 0x41, 0x0f, 0x6e, 0xc8, // movd %r8d,%xmm1
			0x66, 0x0f, 0x62, 0xc1, // punpckldq %xmm1,%xmm0
			0x66, 0x0f, 0xd6, 0x40, 0x10, // movq %xmm0,0x10(%rax)
			0xc3,
		}, []Store{{Arg: 3, Off: 0x10, Bytes: 4}, {Arg: 4, Off: 0x14, Bytes: 4}}},
		{"split 64-bit", []byte{
			0x31, 0xc0, // xor %eax,%eax
			0x66, 0x48, 0x0f, 0x6e, 0xc1, // movq %rcx,%xmm0
			0x66, 0x0f, 0x62, 0xc1, // punpckldq %xmm1,%xmm0
			0x0f, 0x11, 0x40, 0x10, // movups %xmm0,0x10(%rax)
			0xc3,
		}, nil},
		{"call between", []byte{
			0x31, 0xc0, // xor %eax,%eax
			0x66, 0x48, 0x0f, 0x6e, 0xc1, // movq %rcx,%xmm0
			0xe8, 0x00, 0x00, 0x00, 0x00, // call next
			0x0f, 0x11, 0x40, 0x10, // movups %xmm0,0x10(%rax)
			0xc3,
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// int3 after the code: the decoder reads 15 bytes at a time.
			padded := append(slices.Clone(tc.code), slices.Repeat([]byte{0xcc}, 16)...)
			got, err := ObjectStores(bytesCode(padded), 0, len(tc.code), 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("stores %+v, want %+v", got, tc.want)
			}
		})
	}
}
