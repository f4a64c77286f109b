// MPI_THREAD_MULTIPLE: on rank 0 a second thread waits for a message from
// rank 1 while the main thread waits in a barrier; rank 1 waits for a
// message from rank 0 instead of joining the barrier.
// np: 2
// expect: missing-collective rank=1 call=MPI_Barrier comm=WORLD waiting=0
// expect: rank 1 call=MPI_Recv peer=0
#include <pthread.h>
#include "corpus.h"

static void *receiver(void *arg)
{
	int v;
	(void)arg;
	MPI_Recv(&v, 1, MPI_INT, 1, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return NULL;
}

int main(int argc, char **argv)
{
	int v;
	pthread_t th;
	start_multiple(&argc, &argv);
	if (rank == 0) {
		pthread_create(&th, NULL, receiver, NULL);
		MPI_Barrier(MPI_COMM_WORLD);
		pthread_join(th, NULL);
	} else {
		MPI_Recv(&v, 1, MPI_INT, 0, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	MPI_Finalize();
	return 0;
}
