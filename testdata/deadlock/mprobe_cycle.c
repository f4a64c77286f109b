// Both ranks wait for the other's message in MPI_Mprobe before sending
// their own: a cycle through matched probes.
// np: 2
// expect: rank 0 call=MPI_Mprobe peer=1 tag=63
// expect: rank 1 call=MPI_Mprobe peer=0 tag=63
// expect: cycle 0->1->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1;
	MPI_Message msg;
	start(&argc, &argv);
	MPI_Mprobe(1 - rank, 63, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE);
	MPI_Mrecv(&v, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
	MPI_Send(&v, 1, MPI_INT, 1 - rank, 63, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
