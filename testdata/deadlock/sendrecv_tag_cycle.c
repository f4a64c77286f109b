// Two ranks exchange with MPI_Sendrecv but rank 1 expects tag 43 where
// rank 0 sends 42: the sends complete eagerly; rank 1 waits for tag 43
// from rank 0, rank 0 goes on to receive rank 1's reply, which comes only
// after the exchange.
// np: 2
// expect: rank 1 call=MPI_Sendrecv peer=0 tag=43
// expect: rank 0 call=MPI_Recv peer=1 tag=44
// expect: cycle 0->1->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int out = 1, in;
	start(&argc, &argv);
	MPI_Sendrecv(&out, 1, MPI_INT, 1 - rank, 42, &in, 1, MPI_INT, 1 - rank, 42 + rank, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	if (rank == 0)
		MPI_Recv(&in, 1, MPI_INT, 1, 44, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else
		MPI_Send(&out, 1, MPI_INT, 0, 44, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
