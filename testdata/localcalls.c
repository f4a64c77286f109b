/*
 * localcalls: loops of the MPI calls that take a few ns, the benchmark of
 * what trace mode costs them: `iters` MPI_Wtime calls, then `iters`
 * MPI_Comm_rank calls. Rank 0 prints "wtime iters=N seconds=S" and
 * "comm_rank iters=N seconds=S", each timed around its own loop.
 *
 *   localcalls [iterations]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 100000;
	MPI_Init(&argc, &argv);
	int rank, r;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD);
	volatile double sink = 0;
	double t0 = now();
	for (long i = 0; i < iters; i++)
		sink += MPI_Wtime();
	double t1 = now();
	for (long i = 0; i < iters; i++)
		MPI_Comm_rank(MPI_COMM_WORLD, &r);
	double t2 = now();
	if (rank == 0) {
		printf("wtime iters=%ld seconds=%.6f\n", iters, t1 - t0);
		printf("comm_rank iters=%ld seconds=%.6f\n", iters, t2 - t1);
	}
	MPI_Finalize();
	return 0;
}
