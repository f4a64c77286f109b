package tracefile

import (
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"time"
)

// Version is the format version this package writes and the newest it reads.
const Version = 1

// NoValue marks an Event field that does not apply to the call: Peer of a
// collective, Root of a non-rooted call, Count (as int64) of a call without
// a buffer.
const NoValue = math.MinInt32

// Header describes the recording as a whole.
type Header struct {
	Host    string    // host mpiprobe ran on
	Start   time.Time // wall clock of time zero; Event times are ns since Start
	Command []string  // what was traced (command line or "-p 123")
}

// Site is a call site in the application: where an MPI call returns to.
type Site struct {
	Object     string // path of the ELF object holding the return address
	Offset     uint64 // the return address as an ELF virtual address in Object (same on every rank even with ASLR)
	Function   string // symbol containing it, "" if unknown
	FuncOffset uint64 // offset of the return address in Function
	File       string // source file from DWARF, "" if none
	Line       int    // source line from DWARF, 0 if none
}

// Rank is one traced process.
type Rank struct {
	PID  int    // process id
	Host string // host name ("?" when unknown)
	Job  string // MPI job id ("?" when unknown)
	Rank string // MPI rank in the job ("?" when unknown)
	Exe  string // executable path
}

// Event is one MPI call, recorded at its return.
type Event struct {
	Rank     int   // index into Trace.Ranks
	TID      int32 // thread id
	Call     int   // index into Trace.Calls
	Site     int   // index into Trace.Sites
	Enter    int64 // ns since Header.Start
	Exit     int64 // ns since Header.Start
	Peer     int32 // destination/source rank for point-to-point, NoValue otherwise
	Root     int32 // root for rooted collectives, NoValue otherwise
	Count    int64 // element count, NoValue (as int64) if none
	ElemSize int32 // bytes per element, 0 if unknown
	Ret      int32 // return value of the call
}

// RankEnd says how a traced process ended.
type RankEnd struct {
	Rank int    // index into Trace.Ranks
	Lost uint64 // events lost because the ring buffer was full
	End  string // how the process ended ("exit 0", "killed by SIGKILL", "" unknown)
}

// Trace is a whole file as read back.
type Trace struct {
	Version  int       // format version of the file
	Header   Header    // the recording's header
	Calls    []string  // MPI function names; Event.Call indexes them
	Sites    []Site    // call sites; Event.Site indexes them
	Ranks    []Rank    // traced processes; Event.Rank and RankEnd.Rank index them
	Ends     []RankEnd // how processes ended, as far as known
	Events   []Event   // in file order
	Complete bool      // the writer's closing chunk was read
}

// magic opens every trace file.
const magic = "MPIPROBE-TRACE\n"

// Chunk types.
const (
	chunkHeader = 'H'
	chunkCall   = 'C'
	chunkSite   = 'S'
	chunkRank   = 'R'
	chunkEvents = 'E'
	chunkEnds   = 'X'
	chunkClose  = 'Z'
)

// maxPayload bounds a chunk's payload, so that a damaged length cannot make
// the reader allocate without limit.
const maxPayload = 16 << 20

// chunkBytes is the size of encoded events after which the writer ends an
// events chunk: a damaged chunk loses about this much (some hundreds of
// calls), and framing a chunk costs about 20 bytes, half a percent.
const chunkBytes = 4096

// minChunkBytes is where events chunks start: until 32 KiB of events are
// written, a chunk ends at an eighth of what was written before it, so that
// a small trace is cut in many chunks too, at about 20 bytes of framing
// each.
const minChunkBytes = 512

// eventsPerChunk is how many events the writer puts in one events chunk, and
// the most the reader accepts in one.
const eventsPerChunk = 4096

// Event flag bits; see the package documentation.
const (
	flagCall     = 0x01
	flagSite     = 0x02
	flagPeer     = 0x04
	flagRoot     = 0x08
	flagCount    = 0x10
	flagElemSize = 0x20
	flagRet      = 0x40
	flagStream   = 0x80
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// chunkCRC is the checksum stored after a chunk.
func chunkCRC(typ byte, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, []byte{typ})
	return crc32.Update(c, castagnoli, payload)
}

// initialState is what the first event of an events chunk is encoded against.
func initialState() Event {
	return Event{Peer: NoValue, Root: NoValue, Count: NoValue}
}

// streamKey identifies a stream of events within an events chunk.
type streamKey struct {
	rank int
	tid  int32
}

// crcUpdate continues a chunk checksum over more payload.
func crcUpdate(crc uint32, p []byte) uint32 {
	return crc32.Update(crc, castagnoli, p)
}

// Damage is a part of a trace file that could not be read.
type Damage struct {
	// Start and End delimit the unreadable bytes: from offset Start up to,
	// not including, End (the file size when reading stopped there).
	Start, End int64
	// Chunk is the number of the first unreadable chunk, counting the
	// header chunk as 0.
	Chunk int
	// Cause says what is wrong: "truncated", "crc mismatch", ...
	Cause string
}

// DamageError is the error Read returns for a file it could read only in
// part; the Trace it returns with it holds everything outside the damage.
type DamageError struct {
	// Events is how many events (MPI calls) were read, in Chunks events
	// chunks.
	Events, Chunks int
	// Written is how many events the writer wrote, from the closing
	// record; -1 when that was not read.
	Written int
	// Size is the size of the file in bytes.
	Size int64
	// Damage lists the unreadable parts in file order.
	Damage []Damage
	// Unclosed is set when the file ends cleanly after a chunk but without
	// the closing record: the recorder was interrupted.
	Unclosed bool
}

// Error is one line, such as
//
//	damaged trace: read 412 calls in 9 chunks; bytes 18304-36912 unreadable (chunk 13: truncated)
func (e *DamageError) Error() string {
	var b strings.Builder
	if len(e.Damage) > 0 {
		b.WriteString("damaged trace: read ")
	} else {
		b.WriteString("incomplete trace: read ")
	}
	b.WriteString(strconv.Itoa(e.Events))
	if e.Written >= 0 {
		b.WriteString(" of " + strconv.Itoa(e.Written))
	}
	fmt.Fprintf(&b, " calls in %d chunks", e.Chunks)
	for i, d := range e.Damage {
		sep := "; "
		if i > 0 {
			sep = ", "
		}
		fmt.Fprintf(&b, "%sbytes %d-%d unreadable (chunk %d: %s)", sep, d.Start, d.End, d.Chunk, d.Cause)
	}
	if e.Unclosed {
		fmt.Fprintf(&b, "; the file ends at byte %d without its closing record (was mpiprobe trace interrupted?)", e.Size)
	}
	return b.String()
}
