// Matched probe: rank 0 waits in MPI_Mprobe for tag 61 from rank 1 (then
// MPI_Mrecv); rank 1 sends tag 62 synchronously (MPI_Ssend), which
// nothing matches.
// np: 2
// expect: rank 0 call=MPI_Mprobe peer=1 tag=61
// expect: rank 1 call=MPI_Ssend peer=0 tag=62
// expect: cycle 0->1->0
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1;
	MPI_Message msg;
	start(&argc, &argv);
	if (rank == 0) {
		MPI_Mprobe(1, 61, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE);
		MPI_Mrecv(&v, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
	} else {
		MPI_Ssend(&v, 1, MPI_INT, 0, 62, MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}
