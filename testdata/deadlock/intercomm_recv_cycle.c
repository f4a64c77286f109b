// WORLD split into {0,1} and {2,3}, joined by an intercommunicator
// (leaders 0 and 2). WORLD rank 0 receives from remote rank 0 (WORLD
// rank 2) across it and rank 2 from remote rank 0 (WORLD rank 0): a
// cycle. Ranks 1 and 3 wait in a barrier on WORLD that 0 and 2 never
// join.
// np: 4
// expect: rank 0 call=MPI_Recv comm=other peer=2 tag=31
// expect: rank 2 call=MPI_Recv comm=other peer=0 tag=31
// expect: cycle 0->2->0
// expect: missing-collective rank=0 call=MPI_Barrier comm=WORLD waiting=1,3
#include "corpus.h"

int main(int argc, char **argv)
{
	int v;
	MPI_Comm local, inter;
	start(&argc, &argv);
	MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &local);
	MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, rank < 2 ? 2 : 0, 30, &inter);
	if (rank % 2 == 0)
		MPI_Recv(&v, 1, MPI_INT, 0, 31, inter, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
