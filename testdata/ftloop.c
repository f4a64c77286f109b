/*
 * ftloop: the shape of NPB FT's main loop, for trace mode's phase tests.
 * Every transpose goes through one function, so one MPI_Alltoall call site
 * serves the warm-up transform before the loop and the one in each
 * iteration; each iteration then checks a sum with MPI_Reduce:
 *
 *   setup (Comm_size, Bcast); transpose; ITERS x (compute; transpose; checksum); Barrier
 *
 *   ftloop [iterations]     (default 6, as FT class S/W)
 */
#include <mpi.h>
#include <stdlib.h>

#define N 64

static double a[N], b[N];

/* transpose is FT's global transpose: all of it is one MPI_Alltoall. */
static __attribute__((noinline)) void transpose(int chunk)
{
	MPI_Alltoall(a, chunk, MPI_DOUBLE, b, chunk, MPI_DOUBLE, MPI_COMM_WORLD);
}

/* checksum is FT's per-iteration check, reduced to rank 0. */
static __attribute__((noinline)) void checksum(void)
{
	double s = b[0], t = 0;
	MPI_Reduce(&s, &t, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 6;
	int size, n = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
	int chunk = N / size;
	transpose(chunk);
	for (int it = 0; it < iters; it++) {
		for (int i = 0; i < N; i++)
			a[i] = b[i] * 0.5 + it;
		transpose(chunk);
		checksum();
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
