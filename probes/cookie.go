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
//	bits 32-63  operand value
func Cookie(event int, c Condition) (uint64, error) {
	switch {
	case event < 0 || event >= MaxEvents:
		return 0, fmt.Errorf("event id %d out of range", event)
	case c.Cmp > Gt:
		return 0, fmt.Errorf("comparison %d unknown", c.Cmp)
	case c.Src > 5:
		return 0, fmt.Errorf("operand source %d out of range (return value or arguments 1-5)", c.Src)
	}
	return uint64(event) |
		uint64(c.Cmp)<<16 |
		uint64(c.Src)<<20 |
		uint64(uint32(c.Value))<<32, nil
}
