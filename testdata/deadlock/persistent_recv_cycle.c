// Persistent point-to-point in a halo-exchange loop: each rank sets up a
// receive and a send to the other (MPI_Recv_init, MPI_Send_init), but
// starts and waits for the receive before it starts the send.
// np: 2
// expect: rank 0 call=MPI_Wait peer=1 tag=83
// expect: rank 1 call=MPI_Wait peer=0 tag=83
// expect: cycle 0->1->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int in, out = 1;
	MPI_Request rreq, sreq;
	start(&argc, &argv);
	MPI_Recv_init(&in, 1, MPI_INT, 1 - rank, 83, MPI_COMM_WORLD, &rreq);
	MPI_Send_init(&out, 1, MPI_INT, 1 - rank, 83, MPI_COMM_WORLD, &sreq);
	MPI_Start(&rreq);
	MPI_Wait(&rreq, MPI_STATUS_IGNORE);
	MPI_Start(&sreq);
	MPI_Wait(&sreq, MPI_STATUS_IGNORE);
	MPI_Request_free(&rreq);
	MPI_Request_free(&sreq);
	MPI_Finalize();
	return 0;
}
