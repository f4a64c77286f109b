// Shared start of the deadlock corpus: MPI_Init (or MPI_Init_thread), the
// rank and size in WORLD, a barrier, then rank 0 prints "hung" so that the
// test knows every rank is about to enter the calls that hang. Not a
// program of its own.
#ifndef CORPUS_H
#define CORPUS_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int rank, size;

// announce sets rank and size, waits for every rank and has rank 0 print
// "hung".
static void announce(void)
{
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		printf("hung\n");
		fflush(stdout);
	}
}

static void start(int *argc, char ***argv)
{
	MPI_Init(argc, argv);
	announce();
}

// start_multiple is start for a program whose threads call MPI
// concurrently: MPI_Init_thread with MPI_THREAD_MULTIPLE, which it
// requires.
static void start_multiple(int *argc, char ***argv)
{
	int provided;
	MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
	if (provided < MPI_THREAD_MULTIPLE) {
		fprintf(stderr, "MPI_THREAD_MULTIPLE not provided\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	announce();
}

// compute stands for work outside MPI that never ends.
static void compute(void)
{
	for (;;)
		sleep(1);
}
#endif
