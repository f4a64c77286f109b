// Rank 1 computes forever before MPI_Init: rank 0 waits inside MPI_Init
// for it. The rank is read from the launcher's environment.
// np: 2
// expect: rank 0 call=MPI_Init
// expect: rank 1 call=none
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int env_rank(void)
{
	const char *names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", NULL};
	for (int i = 0; names[i]; i++) {
		const char *v = getenv(names[i]);
		if (v)
			return atoi(v);
	}
	return -1;
}

int main(int argc, char **argv)
{
	int r = env_rank();
	if (r == 1)
		for (;;)
			sleep(1);
	printf("hung\n");
	fflush(stdout);
	MPI_Init(&argc, &argv);
	MPI_Finalize();
	return 0;
}
