/*
 * loops: a program whose call structure is known, for trace mode's tests:
 * a broadcast, a barrier, then a loop of compute bursts and allreduces.
 * Each MPI call below sits on its own source line; the tests find the lines
 * by the call names.
 *
 *   loops [iterations [compute_ms [gate]]]   (default 4 iterations of 20 ms)
 */
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

/* compute spins for ms milliseconds of CPU time. */
static void compute(int ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 4;
	int ms = argc > 2 ? atoi(argv[2]) : 20;
	int rank, n = 0;
	double in = 1, out = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < iters; i++) {
		compute(ms);
		MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}

/*
 * With a gate file, each rank waits until the file exists before main (and
 * MPI_Init) runs: a test attaches to the ranks with -p, then opens the gate,
 * and the trace holds every call. The wait is down here, outside main, so
 * that the calls above keep their lines and main its code.
 */
#include <unistd.h>

__attribute__((constructor)) static void gate(int argc, char **argv)
{
	while (argc > 3 && access(argv[3], F_OK) != 0)
		usleep(10000);
}
