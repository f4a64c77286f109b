// Package tracefile writes and reads the binary files of mpiprobe's trace
// mode: every MPI call of every traced rank, with its call site, times and
// arguments, in a compact, versioned, self-describing format that
// "mpiprobe trace show FILE" reads back with no other input.
//
// Recording streams: a Writer appends self-contained chunks as calls, sites,
// ranks and events become known, so a file cut short by a crash or a kill is
// still readable up to its last whole chunk. Read returns everything it could
// read before any damage together with an error that names the byte offset.
//
// # File layout
//
// A file is the 15-byte signature "MPIPROBE-TRACE\n", the format version as
// a uvarint (Version, currently 1), and then a sequence of chunks:
//
//	type     1 byte
//	length   uvarint, length of payload (at most 16 MiB)
//	payload  length bytes
//	crc      4 bytes, little endian CRC-32 (Castagnoli) of type and payload
//
// All integers inside payloads are varints as in encoding/binary: "uvarint"
// for unsigned values and "varint" (zig-zag) for signed ones. A string is a
// uvarint byte length followed by the bytes. Chunk types:
//
//	'H' header, always the first chunk and only once:
//	    string host, varint unix seconds of Start, uvarint nanoseconds of
//	    Start, uvarint n, n strings of Command
//	'C' call name, one string; calls are numbered 0, 1, ... in file order
//	    (the Writer writes a name just before the first events chunk
//	    that uses it, so a file holds only the calls made)
//	'S' site: string Object, uvarint Offset, string Function,
//	    uvarint FuncOffset, string File, varint Line; numbered like calls
//	'R' rank: varint PID, strings Host, Job, Rank, Exe; numbered like calls
//	'E' events: uvarint n, then n encoded events (see below); at most 4096
//	'X' ends: uvarint n, then n times uvarint rank index, uvarint lost
//	    events, string how the process ended
//	'Z' closing record, the last chunk: uvarint counts of events, calls,
//	    sites, ranks and ends in the file, checked by the reader
//
// A call, site or rank must be defined in an earlier chunk than any event or
// end that refers to it. A chunk type this version does not know is damage,
// not something to skip.
//
// # Events
//
// Events are delta-encoded against the previous event of the same stream,
// one stream per (Rank, TID). Streams are numbered per events chunk, so every
// chunk decodes on its own. Each event is:
//
//	flags    1 byte
//	stream   if flags&0x80: uvarint stream number; the number of streams
//	         seen so far in this chunk opens a new stream and is followed by
//	         uvarint Rank and varint TID. Without 0x80 the event belongs to
//	         the stream of the previous event (the first event of a chunk
//	         must set 0x80).
//	fields   for each flag bit set, in this order:
//	         0x01 Call, uvarint index
//	         0x02 Site, uvarint index
//	         0x04 Peer, varint difference to the stream's previous Peer
//	         0x08 Root, varint difference
//	         0x10 Count, varint difference
//	         0x20 ElemSize, varint difference
//	         0x40 Ret, varint difference
//	         A field whose bit is clear equals the stream's previous value.
//	enter    varint, Enter minus the stream's previous Exit
//	duration varint, Exit minus Enter
//
// A new stream starts from the previous event of the chunk (its call, site,
// arguments and Exit), or for the first event of a chunk from Call 0, Site 0,
// Peer, Root and Count NoValue, ElemSize 0, Ret 0 and Exit 0. Differences
// are computed with wrap-around, so any int64 value round-trips. A tight loop
// of one call at one site on one thread costs about 5 bytes an event.
//
// # Damage
//
// Chunks are atomic: one that is truncated, fails its CRC, or does not decode
// is never partly read. The writer ends an events chunk every 4 KiB (or 4096
// events), smaller while the file is small (from 512 bytes: a trace of 800
// calls has a dozen), so a damaged chunk costs tens to hundreds of calls. Events chunks
// decode on their own and define nothing, so a damaged events chunk whose
// frame holds together (the chunk after it reads) is skipped and reading
// goes on; any other damage (a cut, a bad length, a damaged definition, two
// damaged chunks in a row) ends the reading there. If the closing record
// then counts more calls, sites or ranks than were read, a skipped chunk was
// really a definition, and everything after the first damage is dropped.
//
// Read returns the Trace read outside the damage, with Complete false, and a
// *DamageError that counts the calls read and names each unreadable byte
// range with its chunk number and cause, in one line such as
//
//	damaged trace: read 412 of 823 calls in 9 chunks; bytes 18304-22417 unreadable (chunk 14: crc mismatch)
//
// A file that ends cleanly after a chunk but has no closing record was cut
// short (the recorder was interrupted); the DamageError says so. Read returns
// a nil Trace only when there is nothing to show: an empty file, a file that
// is not a trace, one written by a newer format version, or one whose
// signature, version or header chunk is cut off or damaged.
package tracefile
