// Each rank posts two receives from the other and waits for any one of
// them in MPI_Waitany before sending: neither can return. MPI_Waitany is
// an OR-wait over its requests; both requests wait for the other rank.
// np: 2
// expect: rank 0 call=MPI_Waitany
// expect: rank 1 call=MPI_Waitany
// expect: knot ranks=0,1
#include "corpus.h"

int main(int argc, char **argv)
{
	int a = 0, b = 0, idx;
	MPI_Request rq[2];
	start(&argc, &argv);
	MPI_Irecv(&a, 1, MPI_INT, 1 - rank, 1, MPI_COMM_WORLD, &rq[0]);
	MPI_Irecv(&b, 1, MPI_INT, 1 - rank, 2, MPI_COMM_WORLD, &rq[1]);
	MPI_Waitany(2, rq, &idx, MPI_STATUS_IGNORE);
	MPI_Send(&a, 1, MPI_INT, 1 - rank, 1, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
