// Rank 1 is stopped by a signal (it raises SIGSTOP itself, as a debugger
// or a job-control mistake would stop it) before it sends to rank 0,
// which waits in MPI_Recv. Rank 1 is in no MPI call: it is stopped, and
// that is what holds rank 0.
// np: 2
// expect: rank 0 call=MPI_Recv peer=1 tag=101
// expect: rank 1 call=none
// expect: state rank=1 stopped
// expect: suspect rank=1
#include <signal.h>
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1;
	start(&argc, &argv);
	if (rank == 1) {
		raise(SIGSTOP);
		MPI_Send(&v, 1, MPI_INT, 0, 101, MPI_COMM_WORLD);
	} else {
		MPI_Recv(&v, 1, MPI_INT, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	MPI_Finalize();
	return 0;
}
