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
	int v = 1;
	pthread_t th;
	start_multiple(&argc, &argv);
	pthread_create(&th, NULL, receiver, NULL);
	pthread_join(th, NULL);
	MPI_Send(&v, 1, MPI_INT, 1 - rank, 16, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
