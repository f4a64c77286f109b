// Every rank reduces to itself as root, at one call site: only the
// arguments tell the calls apart, so the job runs under mpiprobe
// --collectives, which records root, count and datatype at entry.
// np: 2
// history: yes
// expect: mismatch ranks=0,1 call=MPI_Reduce comm=WORLD
// expect: rank 0 call=MPI_Reduce
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 1, sum;
	start(&argc, &argv);
	MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_SUM, rank, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
