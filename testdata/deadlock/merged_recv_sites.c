// Ranks 0 and 1 receive from each other in two branches whose calls the
// compiler merges into one call instruction at -O2 (cross-jumping: the
// second branch sets its arguments and jumps into the first one's). The
// line table gives that call to one branch only; the site must name both
// lines, as one call serves both.
// np: 2
// expect: cycle 0->1->0
// expect: rank 0 call=MPI_Recv peer=1 tag=0
// expect: rank 1 call=MPI_Recv peer=0 tag=0
// expect: sitelines rank=0 lines=22,25
// expect: sitelines rank=1 lines=22,25
#include "corpus.h"

int main(int argc, char **argv)
{
	int count = 4, *buf;
	MPI_Status status;
	start(&argc, &argv);
	buf = calloc(count, sizeof(int));
	if (rank == 0) {
		buf[0] = 1;
		MPI_Recv(buf, count, MPI_INT, 1, 0, MPI_COMM_WORLD, &status);
	} else if (rank == 1) {
		buf[0] = 2;
		MPI_Recv(buf, count, MPI_INT, 0, 0, MPI_COMM_WORLD, &status);
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
