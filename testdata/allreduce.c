/*
 * allreduce: a tight loop of 8-byte MPI_Allreduce calls, the benchmark of
 * mpiprobe's probe overhead. Rank 0 prints "allreduce iters=N seconds=S
 * cpu=C": the loop's wall time and its CPU time in the calling thread
 * (user and system: a uprobe's traps are the thread's system time).
 *
 *   allreduce [iterations]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	double t0 = MPI_Wtime();
	for (long i = 0; i < iters; i++)
		MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	double t1 = MPI_Wtime();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	if (rank == 0)
		printf("allreduce iters=%ld seconds=%.6f cpu=%.6f\n", iters, t1 - t0,
		       (c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9);
	MPI_Finalize();
	return 0;
}
