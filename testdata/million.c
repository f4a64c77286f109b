/*
 * million: many cheap MPI calls for the timeline export test. Each of
 * `iters` iterations rank 0 sends one int to rank 1 (tag i % 8), rank 1
 * receives it, and both allreduce one int: 4 calls an iteration across the
 * two ranks, so 250000 iterations make 10^6 calls (plus Init, Comm_rank,
 * Comm_size and Finalize on each rank). Any rank past 1 only allreduces.
 *
 *   million [iterations]
 */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 250000;
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int v = rank, sum = 0;
	for (long i = 0; i < iters; i++) {
		if (rank == 0 && size > 1)
			MPI_Send(&v, 1, MPI_INT, 1, (int)(i % 8), MPI_COMM_WORLD);
		else if (rank == 1)
			MPI_Recv(&v, 1, MPI_INT, 0, (int)(i % 8), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}
