/*
 * allreduce: a tight loop of 8-byte MPI_Allreduce calls, the benchmark of
 * mpiprobe's probe overhead. Rank 0 prints "allreduce iters=N seconds=S".
 *
 *   allreduce [iterations]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 200000;
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	double in = rank, out = 0;
	for (int i = 0; i < 1000; i++) /* warm up */
		MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (long i = 0; i < iters; i++)
		MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	double t1 = MPI_Wtime();
	if (rank == 0)
		printf("allreduce iters=%ld seconds=%.6f\n", iters, t1 - t0);
	MPI_Finalize();
	return 0;
}
