// Rank 0 receives one value from each of ranks 1 and 2 and handles them
// as they come (MPI_Waitsome in a loop); rank 1 sends and goes to the
// barrier, rank 2 goes to the barrier without sending. Rank 0 waits for
// rank 2's message, rank 2 for rank 0 in the barrier.
// np: 3
// expect: rank 0 call=MPI_Waitsome
// expect: rank 1 call=MPI_Barrier comm=WORLD
// expect: rank 2 call=MPI_Barrier comm=WORLD
// expect: missing-collective rank=0 call=MPI_Barrier comm=WORLD waiting=1,2
// expect: knot ranks=0,1,2
// expect: cycle 0->2->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int in[2], out = 1, done = 0, n, idx[2];
	MPI_Request req[2];
	start(&argc, &argv);
	if (rank == 0) {
		MPI_Irecv(&in[0], 1, MPI_INT, 1, 51, MPI_COMM_WORLD, &req[0]);
		MPI_Irecv(&in[1], 1, MPI_INT, 2, 51, MPI_COMM_WORLD, &req[1]);
		while (done < 2) {
			MPI_Waitsome(2, req, &n, idx, MPI_STATUSES_IGNORE);
			done += n;
		}
	} else if (rank == 1) {
		MPI_Send(&out, 1, MPI_INT, 0, 51, MPI_COMM_WORLD);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
