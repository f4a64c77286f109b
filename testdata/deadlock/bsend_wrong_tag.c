// Rank 0 sends with MPI_Bsend (tag 111) from an attached buffer, which
// completes at once, and goes on to a barrier; rank 1 waits for tag 112
// from rank 0, which never comes, and so never joins the barrier.
// np: 2
// expect: rank 0 call=MPI_Barrier comm=WORLD
// expect: rank 1 call=MPI_Recv peer=0 tag=112
// expect: missing-collective rank=1 call=MPI_Barrier comm=WORLD waiting=0
// expect: knot ranks=0,1
// expect: cycle 0->1->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1, bufsize = 1024 + MPI_BSEND_OVERHEAD;
	void *buf = malloc(bufsize);
	start(&argc, &argv);
	MPI_Buffer_attach(buf, bufsize);
	if (rank == 0)
		MPI_Bsend(&v, 1, MPI_INT, 1, 111, MPI_COMM_WORLD);
	else
		MPI_Recv(&v, 1, MPI_INT, 0, 112, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Buffer_detach(&buf, &bufsize);
	MPI_Finalize();
	return 0;
}
