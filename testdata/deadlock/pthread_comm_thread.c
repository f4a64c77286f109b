// Hybrid MPI+pthreads (MPI_THREAD_MULTIPLE): on rank 0 a communication
// thread waits in MPI_Recv for rank 1's update while the main thread
// computes and never reaches the barrier; rank 1 waits in that barrier
// before it would send the update.
// np: 2
// expect: rank 0 call=MPI_Recv peer=1 tag=92
// expect: rank 1 call=MPI_Barrier comm=WORLD
// expect: missing-collective rank=0 call=MPI_Barrier comm=WORLD waiting=1
#include <pthread.h>
#include "corpus.h"

static void *comm_thread(void *arg)
{
	int in;
	(void)arg;
	MPI_Recv(&in, 1, MPI_INT, 1, 92, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return NULL;
}

int main(int argc, char **argv)
{
	int out = 1;
	pthread_t th;
	start_multiple(&argc, &argv);
	if (rank == 0) {
		pthread_create(&th, NULL, comm_thread, NULL);
		compute();
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Send(&out, 1, MPI_INT, 0, 92, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
