package tracefile

import (
	"hash/crc32"
	"math"
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
