package layout

import (
	"reflect"
	"testing"
)

// The functions of testdata/requests.S, assembled at textBase.
const (
	requestsIrecv = 0x1000
	requestsIsend = 0x108e
	requestsEnd   = 0x10ec
)

func TestObjectStores(t *testing.T) {
	code := codeAt(textBase, hexBytes(t, "testdata/requests.hex"))
	imm := func(v, off int64, n int) Store { return Store{Arg: -1, Imm: v, Off: off, Bytes: n} }
	arg := func(a int, off int64, n int) Store { return Store{Arg: a, Off: off, Bytes: n} }
	tests := []struct {
		name       string
		entry, end uint64
		stack      int
		want       []Store
	}{
		{
			"irecv: callee-saved registers, a slow path that joins, stores through arguments and the frame left out",
			requestsIrecv, requestsIsend, 1,
			[]Store{imm(2, 0xa8, 4), imm(0, 0x58, 8), arg(5, 0x98, 8), arg(3, 0x1d8, 4), arg(4, 0x1dc, 4), arg(5, 0xb0, 8), arg(0, 0x1c8, 8)},
		},
		{
			"isend: arguments spilled to the frame and reloaded, the communicator on the stack",
			requestsIsend, requestsEnd, 2,
			[]Store{arg(3, 0x1d8, 4), arg(4, 0x1dc, 4), arg(6, 0x98, 8), arg(6, 0xb0, 8), imm(2, 0x60, 4)},
		},
		{
			"isend told of no stack argument: the communicator is not known",
			requestsIsend, requestsEnd, 0,
			[]Store{arg(3, 0x1d8, 4), arg(4, 0x1dc, 4), imm(2, 0x60, 4)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ObjectStores(code, tt.entry, int(tt.end-tt.entry), tt.stack)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func FuzzObjectStores(f *testing.F) {
	f.Add(hexBytes(f, "testdata/requests.hex"), uint8(1))
	f.Add([]byte{0xeb, 0xfe, 0xc3}, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, stack uint8) {
		_, _ = ObjectStores(codeAt(textBase, b), textBase, len(b), int(stack%4))
	})
}
