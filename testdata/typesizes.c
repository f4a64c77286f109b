// typesizes: each iteration makes a contiguous datatype of 1, 2 or 3 ints,
// sends one element of it to the other rank and frees it, so the next
// datatype is usually made at the address the freed one had, with another
// size. A tracer that keeps a datatype's size by its address records the
// wrong size after the first free; mpiprobe trace must record 4, 8 and 12
// bytes in turn. Usage: typesizes [iterations] (2 ranks).
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 30;
	int rank, buf[3] = { 0 };
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	for (int i = 0; i < iters; i++) {
		MPI_Datatype t;
		MPI_Type_contiguous(1 + i % 3, MPI_INT, &t);
		MPI_Type_commit(&t);
		if (rank == 0)
			MPI_Send(buf, 1, t, 1, i, MPI_COMM_WORLD);
		else
			MPI_Recv(buf, 1, t, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Type_free(&t);
	}
	printf("typesizes rank %d done\n", rank);
	MPI_Finalize();
	return 0;
}
