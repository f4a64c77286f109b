/* p2p_deadlock.c: two ranks that block in point-to-point calls for good,
 * for `mpiprobe status`'s wait-for graph.
 *
 * usage: p2p_deadlock MODE
 *   recvrecv: both ranks MPI_Recv from the other, tag 7: a cycle.
 *   waitwait: both ranks MPI_Isend 4 MiB (rendezvous) and MPI_Irecv with
 *             tag 9 from the other, but rank 1 receives with tag 10: both
 *             wait in MPI_Waitall, rank 0's send and receive never match.
 *   sendsend: both ranks MPI_Send 4 MiB (rendezvous) to the other, tag 5.
 *   wrongtag: rank 0 sends tag 1 (eager), rank 1 receives tag 2 from 0;
 *             rank 0 then waits in MPI_Recv from 1 tag 3.
 *   wrongsrc: in a job of 2, rank 1 receives from itself (tag 4) while rank
 *             0 sends it tag 4; rank 0 then waits in MPI_Recv from 1 tag 3.
 *   anysrc:   rank 1 receives from MPI_ANY_SOURCE tag 6; rank 0 finalizes.
 *   dup:      recvrecv on a duplicate of WORLD (tag 8), ranks swapped by a
 *             split so that communicator ranks differ from WORLD ranks.
 * Rank 0 prints "hung" before it blocks. The job never ends: kill it.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (4 << 20)

int main(int argc, char **argv)
{
	int rank, size, v = 1;
	const char *mode = argc > 1 ? argv[1] : "recvrecv";
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int other = 1 - rank;
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		printf("hung\n");
		fflush(stdout);
	}
	if (strcmp(mode, "recvrecv") == 0) {
		MPI_Recv(&v, 1, MPI_INT, other, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else if (strcmp(mode, "waitwait") == 0) {
		char *out = calloc(BIG, 1), *in = calloc(BIG, 1);
		MPI_Request rq[2];
		MPI_Irecv(in, BIG, MPI_CHAR, other, rank == 0 ? 9 : 10, MPI_COMM_WORLD, &rq[0]);
		MPI_Isend(out, BIG, MPI_CHAR, other, 9, MPI_COMM_WORLD, &rq[1]);
		MPI_Status st[2];
		MPI_Waitall(2, rq, st);
	} else if (strcmp(mode, "sendsend") == 0) {
		char *out = calloc(BIG, 1);
		MPI_Send(out, BIG, MPI_CHAR, other, 5, MPI_COMM_WORLD);
	} else if (strcmp(mode, "wrongtag") == 0) {
		if (rank == 0) {
			MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
	} else if (strcmp(mode, "wrongsrc") == 0) {
		if (rank == 0) {
			MPI_Send(&v, 1, MPI_INT, 1, 4, MPI_COMM_WORLD);
			MPI_Recv(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&v, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
	} else if (strcmp(mode, "anysrc") == 0) {
		if (rank == 1)
			MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else if (strcmp(mode, "dup") == 0) {
		MPI_Comm swapped;
		MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &swapped);
		int r;
		MPI_Comm_rank(swapped, &r);
		MPI_Recv(&v, 1, MPI_INT, 1 - r, 8, swapped, MPI_STATUS_IGNORE);
	} else {
		fprintf(stderr, "p2p_deadlock: unknown mode %s\n", mode);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Finalize();
	return 0;
}
