package probes

import "fmt"

// Cmp is the comparison a Condition applies to its operand.
type Cmp uint8

// The comparisons, as the BPF side numbers them (bpf/mpiprobe.bpf.c).
const (
	Always Cmp = iota // every hit counts
	Eq                // operand == Value
	Ne                // operand != Value
	Lt                // operand < Value (signed 32-bit)
	Gt                // operand > Value (signed 32-bit)
	Eq8               // low byte of operand == low byte of Value: a C bool return
)

// Source is where a Condition's operand comes from.
type Source uint8

// RetVal is the probed function's return value; Arg(n) is its n-th argument.
const RetVal Source = 0

// Arg returns the Source for argument n (1 to 5).
func Arg(n int) Source { return Source(n) }

// Condition decides whether a hit counts: Src Cmp Value, on the low 32 bits
// of the operand read as a signed integer.
type Condition struct {
	Src   Source
	Cmp   Cmp
	Value int32
}

// MaxEvents is the number of event ids a cookie can carry.
const MaxEvents = 1 << 16

// Cookie packs what the BPF program needs to know about one attachment into
// the 64-bit attach cookie. Layout (must match bpf/mpiprobe.bpf.c):
//
//	bits  0-15  event id
//	bits 16-19  comparison
//	bits 20-23  operand source
//	bits 24-31  the program's parameter (Probe.Param)
//	bits 32-63  operand value
func Cookie(event int, c Condition) (uint64, error) { return CookieParam(event, c, 0) }

// CookieParam is Cookie with the program's parameter in bits 24-31: for
// count_event the argument whose pointee is the peak, for the other
// programs a stash slot, gate or library layout (see Probe.Param).
func CookieParam(event int, c Condition, param uint8) (uint64, error) {
	switch {
	case event < 0 || event >= MaxEvents:
		return 0, fmt.Errorf("event id %d out of range", event)
	case c.Cmp > Eq8:
		return 0, fmt.Errorf("comparison %d unknown", c.Cmp)
	case c.Src > 5:
		return 0, fmt.Errorf("operand source %d out of range (return value or arguments 1-5)", c.Src)
	}
	return uint64(event) |
		uint64(c.Cmp)<<16 |
		uint64(c.Src)<<20 |
		uint64(param)<<24 |
		uint64(uint32(c.Value))<<32, nil
}
