/* hang.c: a job that hangs the way real jobs do, for `mpiprobe status`.
 *
 * usage: hang MODE [ROUNDS]
 *   skip: every rank makes ROUNDS (default 5) barriers on MPI_COMM_WORLD
 *         and allreduces on a duplicate; then the last rank skips the
 *         final barrier and spins (computing) while the others wait in it.
 *   recv: the same rounds, then the last rank waits in an MPI_Recv from
 *         rank 0 that is never sent, while the others wait in the barrier.
 *   ibarrier: like skip, but the others wait for an MPI_Ibarrier in MPI_Wait.
 *   threads: like skip, with MPI_THREAD_MULTIPLE and a second thread on
 *         every rank that waits in an MPI_Recv on the duplicate that no
 *         rank ever matches: ranks have two threads inside MPI calls.
 * Rank 0 prints "hung" when the hang begins. The job never ends: kill it.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

static volatile unsigned long sink;

static void spin(void)
{
	for (;;)
		sink++;
}

static MPI_Comm dup;

static void *never_matched(void *arg)
{
	int v;
	(void)arg;
	MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 77, dup, MPI_STATUS_IGNORE);
	return NULL;
}

int main(int argc, char **argv)
{
	int rank, size, v = 1, out, provided;
	const char *mode = argc > 1 ? argv[1] : "skip";
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	int threads = strcmp(mode, "threads") == 0;
	if (threads) {
		MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
		if (provided != MPI_THREAD_MULTIPLE) {
			fprintf(stderr, "hang: MPI_THREAD_MULTIPLE not provided\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	} else {
		MPI_Init(&argc, &argv);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	for (int i = 0; i < rounds; i++) {
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_SUM, dup);
	}
	if (threads) {
		pthread_t t;
		pthread_create(&t, NULL, never_matched, NULL);
	}
	if (rank == 0) {
		printf("hung\n");
		fflush(stdout);
	}
	if (rank == size - 1) {
		if (strcmp(mode, "recv") == 0)
			MPI_Recv(&v, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* never sent */
		else
			spin(); /* skips the barrier */
	}
	if (strcmp(mode, "ibarrier") == 0) {
		MPI_Request r;
		MPI_Ibarrier(MPI_COMM_WORLD, &r);
		MPI_Wait(&r, MPI_STATUS_IGNORE); /* the hang */
	}
	MPI_Barrier(MPI_COMM_WORLD); /* the hang */
	MPI_Finalize();
	return 0;
}
