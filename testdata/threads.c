/*
 * threads: two threads of each rank make MPI calls at once
 * (MPI_THREAD_MULTIPLE), each on its own communicator: one makes
 * `na` allreduces, the other `nb` barriers. Trace mode must keep the
 * threads' streams apart.
 *
 *   threads [na [nb]]      (default 5 and 3)
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static MPI_Comm comm_a, comm_b;
static int na = 5, nb = 3;

static void *reducer(void *arg)
{
	double in = 1, out;
	for (int i = 0; i < na; i++)
		MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, comm_a);
	return arg;
}

static void *waiter(void *arg)
{
	for (int i = 0; i < nb; i++)
		MPI_Barrier(comm_b);
	return arg;
}

int main(int argc, char **argv)
{
	int provided;
	if (argc > 1)
		na = atoi(argv[1]);
	if (argc > 2)
		nb = atoi(argv[2]);
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	if (provided < MPI_THREAD_MULTIPLE) {
		fprintf(stderr, "threads: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Comm_dup(MPI_COMM_WORLD, &comm_a);
	MPI_Comm_dup(MPI_COMM_WORLD, &comm_b);
	pthread_t a, b;
	pthread_create(&a, NULL, reducer, NULL);
	pthread_create(&b, NULL, waiter, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	MPI_Comm_free(&comm_a);
	MPI_Comm_free(&comm_b);
	MPI_Finalize();
	return 0;
}
