// Persistent point-to-point: rank 0 sets up a synchronous send to rank 1
// (MPI_Ssend_init, tag 81), rank 1 a receive from rank 0 with tag 82
// (MPI_Recv_init); both start them (MPI_Start) and wait (MPI_Wait). The
// send needs a matching receive, the receive the send it never gets.
// known-gap-inferred-mpich: the tag of rank 0's send is read only at the place the table of a checked UCX build gives; a send of rank 0 on WORLD cannot teach that place (its tag word holds context 0 and source 0, as many small numbers do), so the tag is unknown and the cycle missed
// np: 2
// expect: rank 0 call=MPI_Wait peer=1 tag=81
// expect: rank 1 call=MPI_Wait peer=0 tag=82
// expect: cycle 0->1->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1;
	MPI_Request req;
	start(&argc, &argv);
	if (rank == 0)
		MPI_Ssend_init(&v, 1, MPI_INT, 1, 81, MPI_COMM_WORLD, &req);
	else
		MPI_Recv_init(&v, 1, MPI_INT, 0, 82, MPI_COMM_WORLD, &req);
	MPI_Start(&req);
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	MPI_Request_free(&req);
	MPI_Finalize();
	return 0;
}
