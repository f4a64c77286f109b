// Package symbolize turns a code address of a running process into a call
// site: the ELF object mapped there, the address as an ELF virtual address
// of that object, the enclosing function and, when the object carries
// DWARF, the source file and line.
//
// mpiprobe's trace mode records, for every MPI call a traced process makes,
// the return address into the application. Those addresses differ between
// processes (ASLR, position-independent executables and libraries), so they
// are first translated through the process's memory map into a file offset
// and then, through the object's PT_LOAD program headers, into the virtual
// address the linker assigned. That address is the same in every process
// that runs the same binary, and it is what symbol tables, DWARF and tools
// such as addr2line speak.
//
// Since a return address points just past the call instruction (which may
// be the last instruction of a function, or be followed by another line),
// the function and the source line are looked up for the address minus
// one, while Site.Offset reports the address itself.
//
// Function names come from the FUNC symbols of .symtab, or of .dynsym when
// the object has no .symtab (a stripped shared library). Lines come from
// the DWARF line tables of the object itself; separate debug files
// (.gnu_debuglink, /usr/lib/debug/.build-id) are not consulted.
//
// One call instruction can serve several source lines: at -O2 the
// compiler merges the calls of two branches that differ only in some
// arguments (cross-jumping), and the line table gives the call to one
// branch. Site.AlsoLines names the other lines when the code shows such a
// merge (merged.go); over the 1,470 call sites of the test programs built
// with gcc and clang at -O2, it named exactly the two merges there are.
//
// A Resolver parses each object once and shares the result between all
// processes that map it: objects are keyed by the device, inode and path
// the memory map shows. The Resolver keeps every object it parsed open,
// which also pins the inode number, so a file deleted and replaced while
// the Resolver runs cannot be mistaken for the one it cached. A file
// rewritten in place (same inode, new contents) is not detected.
package symbolize
