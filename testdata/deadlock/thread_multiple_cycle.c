// MPI_THREAD_MULTIPLE: both ranks receive from each other in a second
// thread while the main thread waits for it; the sends come after.
// np: 2
// expect: cycle 0->1->0
#include <pthread.h>
#include "corpus.h"

static void *receiver(void *arg)
{
	int v;
	(void)arg;
	MPI_Recv(&v, 1, MPI_INT, 1 - rank, 16, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return NULL;
}

int main(int argc, char **argv)
{
	int provided, v = 1;
	pthread_t th;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	if (provided < MPI_THREAD_MULTIPLE) {
		fprintf(stderr, "MPI_THREAD_MULTIPLE not provided\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		printf("hung\n");
		fflush(stdout);
	}
	pthread_create(&th, NULL, receiver, NULL);
	pthread_join(th, NULL);
	MPI_Send(&v, 1, MPI_INT, 1 - rank, 16, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
