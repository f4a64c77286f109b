/* colls.c: a known number of every blocking and nonblocking collective on
 * MPI_COMM_WORLD, a duplicate of it, and both halves of a split, so that
 * tests can check collective counts exactly.
 *
 * usage: colls [N [MS]]   (N rounds, default 3; needs an even number of
 *                          ranks; MS milliseconds of sleep after MPI_Init)
 *
 * Per round, on each of WORLD, the dup and the rank's half:
 *   MPI_Barrier 1, MPI_Bcast 2, MPI_Allreduce 3, MPI_Reduce 1,
 *   MPI_Gather 1, MPI_Allgather 1, MPI_Alltoall 1, MPI_Scan 1,
 *   MPI_Ibarrier 1, MPI_Iallreduce 2 (completed with MPI_Wait / MPI_Waitall).
 * On WORLD only, once more per round: MPI_Allreduce 1 (so WORLD and the
 * dup differ). Prints "ready" on rank 0 when done.
 */
#include <mpi.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>

static void round_on(MPI_Comm c)
{
	int size, v = 1, out[64], in[64];
	MPI_Comm_size(c, &size);
	for (int i = 0; i < 64; i++)
		in[i] = i;
	MPI_Barrier(c);
	MPI_Bcast(&v, 1, MPI_INT, 0, c);
	MPI_Bcast(&v, 1, MPI_INT, 0, c);
	for (int i = 0; i < 3; i++)
		MPI_Allreduce(&v, out, 1, MPI_INT, MPI_SUM, c);
	MPI_Reduce(&v, out, 1, MPI_INT, MPI_SUM, 0, c);
	MPI_Gather(&v, 1, MPI_INT, out, 1, MPI_INT, 0, c);
	MPI_Allgather(&v, 1, MPI_INT, out, 1, MPI_INT, c);
	MPI_Alltoall(in, 1, MPI_INT, out, 1, MPI_INT, c);
	MPI_Scan(&v, out, 1, MPI_INT, MPI_SUM, c);
	MPI_Request r, rr[2];
	MPI_Status st[2];
	MPI_Ibarrier(c, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	MPI_Iallreduce(&v, &out[0], 1, MPI_INT, MPI_SUM, c, &rr[0]);
	MPI_Iallreduce(&v, &out[1], 1, MPI_INT, MPI_SUM, c, &rr[1]);
	MPI_Waitall(2, rr, st);
}

int main(int argc, char **argv)
{
	int rank, size, n = argc > 1 ? atoi(argv[1]) : 3, v = 1, out;
	MPI_Init(&argc, &argv);
	if (argc > 2)
		usleep(1000 * atoi(argv[2]));
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm dup, half;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &half);
	for (int i = 0; i < n; i++) {
		round_on(MPI_COMM_WORLD);
		round_on(dup);
		round_on(half);
		MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	}
	MPI_Comm_free(&half);
	MPI_Comm_free(&dup);
	if (rank == 0)
		printf("ready\n");
	MPI_Finalize();
	return 0;
}
