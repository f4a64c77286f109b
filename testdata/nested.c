/*
 * nested: a nested loop of point-to-point calls with an inner trip count of
 * 7, for trace mode's tests. Ranks pair up (0-1, 2-3, ...): even ranks send
 * then receive, odd ranks receive then send, so the two halves have
 * different roles. Each MPI call sits on its own source line.
 *
 *   nested [outer]      (default 3; needs an even number of ranks)
 */
#include <mpi.h>
#include <stdlib.h>

#define INNER 7

int main(int argc, char **argv)
{
	int outer = argc > 1 ? atoi(argv[1]) : 3;
	int rank, buf[16] = {0};
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	int peer = rank ^ 1;
	for (int o = 0; o < outer; o++) {
		for (int i = 0; i < INNER; i++) {
			if (rank % 2 == 0) {
				MPI_Send(buf, 16, MPI_INT, peer, i, MPI_COMM_WORLD);
				MPI_Recv(buf, 16, MPI_INT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(buf, 16, MPI_INT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(buf, 16, MPI_INT, peer, i, MPI_COMM_WORLD);
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}
