// Two levels of communicators: WORLD (4 ranks) split into {0,1} and
// {2,3}, each split again by reversed key so that local rank 0 of
// {3,2} is WORLD rank 3. Rank 2 receives from local rank 0 of that
// level-two communicator (WORLD rank 3), rank 3 from local rank 1
// (WORLD rank 2): a cycle in WORLD ranks. Ranks 0 and 1 wait in a barrier
// on WORLD that 2 and 3 never join.
// np: 4
// expect: rank 2 call=MPI_Recv comm=other peer=3 tag=21
// expect: rank 3 call=MPI_Recv comm=other peer=2 tag=21
// expect: cycle 2->3->2
// expect: missing-collective rank=2 call=MPI_Barrier comm=WORLD waiting=0,1
// expect: missing-collective rank=3 call=MPI_Barrier comm=WORLD waiting=0,1
#include "corpus.h"

int main(int argc, char **argv)
{
	int v, lrank;
	MPI_Comm half, rev;
	start(&argc, &argv);
	MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &half);
	MPI_Comm_split(half, 0, -rank, &rev);
	MPI_Comm_rank(rev, &lrank);
	if (rank >= 2)
		MPI_Recv(&v, 1, MPI_INT, 1 - lrank, 21, rev, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
