// Shared start of the deadlock corpus: MPI_Init, the rank and size in
// WORLD, a barrier, then rank 0 prints "hung" so that the test knows every
// rank is about to enter the calls that hang. Not a program of its own.
#ifndef CORPUS_H
#define CORPUS_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int rank, size;

static void start(int *argc, char ***argv)
{
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		printf("hung\n");
		fflush(stdout);
	}
}

// compute stands for work outside MPI that never ends.
static void compute(void)
{
	for (;;)
		sleep(1);
}
#endif
