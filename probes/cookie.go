package probes

import (
	"fmt"

	"github.com/mpiprobe/mpiprobe/bpf"
)

// Cmp is the comparison a Condition applies to its operand.
type Cmp uint8

// The comparisons, as the BPF side numbers them (enum cmp_op in
// bpf/counters.h).
const (
	Always = Cmp(bpf.MpiprobeCmpOpCMP_ALWAYS) // every hit counts
	Eq     = Cmp(bpf.MpiprobeCmpOpCMP_EQ)     // operand == Value
	Ne     = Cmp(bpf.MpiprobeCmpOpCMP_NE)     // operand != Value
	Lt     = Cmp(bpf.MpiprobeCmpOpCMP_LT)     // operand < Value (signed 32-bit)
	Gt     = Cmp(bpf.MpiprobeCmpOpCMP_GT)     // operand > Value (signed 32-bit)
	Eq8    = Cmp(bpf.MpiprobeCmpOpCMP_EQ8)    // low byte of operand == low byte of Value: a C bool return
)

// Source is where a Condition's operand comes from.
type Source uint8

// RetVal is the probed function's return value; Arg(n) is its n-th argument.
const RetVal Source = 0

// Arg returns the Source for argument n (1 to maxSource).
func Arg(n int) Source { return Source(n) }

// maxSource is the last argument a Condition can read.
const maxSource = Source(bpf.MpiprobeCookieLayoutCOOKIE_SRC_MAX)

// Condition decides whether a hit counts: Src Cmp Value, on the low 32 bits
// of the operand read as a signed integer.
type Condition struct {
	Src   Source
	Cmp   Cmp
	Value int32
}

// maxEvents is the number of event ids a cookie can carry.
const maxEvents = 1 << bpf.MpiprobeCookieLayoutCOOKIE_EVENT_BITS

// Cookie packs what the BPF program needs to know about one attachment into
// the 64-bit attach cookie. Layout (enum cookie_layout in bpf/counters.h):
//
//	bits  0-15  event id
//	bits 16-19  comparison
//	bits 20-23  operand source
//	bits 24-31  the program's parameter (Probe.Param)
//	bits 32-63  operand value
func Cookie(event int, c Condition) (uint64, error) { return cookieParam(event, c, 0) }

// cookieParam is Cookie with the program's parameter in bits 24-31: for
// count_event the argument whose pointee is the peak, for the other
// programs a stash slot, gate or library layout (see Probe.Param).
func cookieParam(event int, c Condition, param uint8) (uint64, error) {
	switch {
	case event < 0 || event >= maxEvents:
		return 0, fmt.Errorf("event id %d out of range", event)
	case c.Cmp > Eq8:
		return 0, fmt.Errorf("comparison %d unknown", c.Cmp)
	case c.Src > maxSource:
		return 0, fmt.Errorf("operand source %d out of range (return value or arguments 1-%d)", c.Src, maxSource)
	}
	return uint64(event)<<bpf.MpiprobeCookieLayoutCOOKIE_EVENT_SHIFT |
		uint64(c.Cmp)<<bpf.MpiprobeCookieLayoutCOOKIE_CMP_SHIFT |
		uint64(c.Src)<<bpf.MpiprobeCookieLayoutCOOKIE_SRC_SHIFT |
		uint64(param)<<bpf.MpiprobeCookieLayoutCOOKIE_PARAM_SHIFT |
		uint64(uint32(c.Value))<<bpf.MpiprobeCookieLayoutCOOKIE_OPERAND_SHIFT, nil
}
