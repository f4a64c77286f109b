// Both ranks receive from each other with MPI_ANY_TAG before sending:
// a cycle whose waits carry no tag. Both libraries must show the tag as
// MPI_ANY_TAG (-1 in the JSON, "any tag" in the verdict), not as a number.
// np: 2
// expect: cycle 0->1->0
// expect: rank 0 call=MPI_Recv peer=1 tag=-1
// expect: rank 1 call=MPI_Recv peer=0 tag=-1
#include "corpus.h"

int main(int argc, char **argv)
{
	int v = 0;
	start(&argc, &argv);
	MPI_Recv(&v, 1, MPI_INT, 1 - rank, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Send(&v, 1, MPI_INT, 1 - rank, 3, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
