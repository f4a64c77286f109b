// The last of four ranks leaves without the final barrier.
// np: 4
// expect: finalized rank=3 call=MPI_Barrier waiting=0,1,2
#include "corpus.h"

int main(int argc, char **argv)
{
	start(&argc, &argv);
	if (rank != size - 1)
		MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
