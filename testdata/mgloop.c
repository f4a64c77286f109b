/*
 * mgloop: the shape of NPB MG's iterations, for trace mode's phase tests.
 * Every halo exchange goes through one function (MG's comm3): a receive
 * from each neighbour, a send to each, a wait for all, each at its own
 * call site. One exchange comes before the loop (MG's set-up residual);
 * each iteration exchanges, then takes a norm with MPI_Allreduce:
 *
 *   Comm_rank; exchange; ITERS x (exchange; compute; Allreduce); Allreduce
 *
 *   mgloop [iterations]     (default 20, as MG class A; needs 2 ranks or more)
 */
#include <mpi.h>
#include <stdlib.h>

#define H 32

static double lo[H], hi[H], glo[H], ghi[H];

/* exchange is MG's comm3: both ghost planes to and from both neighbours. */
static __attribute__((noinline)) void exchange(int left, int right)
{
	MPI_Request rq[2];
	MPI_Irecv(glo, H, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[0]);
	MPI_Irecv(ghi, H, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &rq[1]);
	MPI_Send(hi, H, MPI_DOUBLE, right, 1, MPI_COMM_WORLD);
	MPI_Send(lo, H, MPI_DOUBLE, left, 2, MPI_COMM_WORLD);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20;
	int rank, size;
	double r = 0, norm = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int left = (rank + size - 1) % size, right = (rank + 1) % size;
	exchange(left, right);
	for (int it = 0; it < iters; it++) {
		exchange(left, right);
		for (int i = 0; i < H; i++) {
			lo[i] = glo[i] * 0.25 + ghi[i] * 0.25;
			hi[i] = lo[i] + it;
			r += lo[i] * lo[i];
		}
		MPI_Allreduce(&r, &norm, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	}
	MPI_Allreduce(&r, &norm, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
