// Package loops compresses a per-rank stream of MPI call symbols into its
// loop structure and formats the result.
//
// mpiprobe's trace mode turns each MPI rank's stream of calls into a
// sequence of small integer symbols ("compute burst before call site 2",
// "MPI_Allreduce at call site 2", ...). [Compress] rewrites such a sequence,
// losslessly, into a tree of leaves and loops, [Format] prints the tree in a
// compact notation such as
//
//	Init0 Bcast1 Barrier2 (Allreduce3)[4] Finalize4
//
// [Rephase] turns each loop so that its iterations start where the
// program's loop starts, and [GroupRanks] summarises which ranks share a
// structure.
//
// # Algorithm
//
// Compress applies the following rewriting until nothing changes:
//
//  1. every maximal run of k >= 2 identical adjacent symbols A is replaced by
//     the new symbol A[k] (A[4] and A[5] are different symbols; the same A[k]
//     made at two places is the same symbol);
//  2. the most frequent adjacent pair (A,B) is found (occurrences counted left
//     to right without overlap; ties go to the pair whose first occurrence is
//     leftmost) and, if it occurs at least twice, every occurrence is replaced,
//     left to right, by the new symbol A+B.
//
// Pair symbols are then flattened into sequences and run symbols become loop
// nodes. The implementation is an incremental Re-Pair style engine: pair
// occurrences are kept in per-pair position-ordered lists and the best pair is
// taken from a lazily updated heap, so the whole rewriting costs
// O(n log n) time and O(n) memory for any input, with no work budget; the
// result is exactly the one defined above.
//
// # Phase
//
// The rewriting takes the first repetition it meets, so a loop whose
// program makes one of the loop's calls just before it (through the same
// call site: a helper function called before the loop and in it) comes
// out turned: A A B A B A B is (A)[2] (B+A)[2] B. Rephase then widens each
// loop over the neighbours that continue its period (peeling iterations
// off a neighbouring loop when needed) and takes the rotation of the body
// that makes the most whole iterations, A (A+B)[3]; where rotations tie it
// asks a [Place] for the call sites' functions and addresses and starts
// the loop at the lowest address of the function that holds most of the
// body. Rephase keeps the expansion, and costs time linear in the size of
// the tree plus the neighbours it compares.
package loops
