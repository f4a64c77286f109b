// Each of three ranks receives from both others with MPI_Irecv and
// MPI_Waitall before sending anything.
// np: 3
// expect: rank 0 call=MPI_Waitall
// expect: rank 1 call=MPI_Waitall
// expect: rank 2 call=MPI_Waitall
#include "corpus.h"

int main(int argc, char **argv)
{
	int out = 1, in[2];
	MPI_Request req[2];
	start(&argc, &argv);
	MPI_Irecv(&in[0], 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD, &req[0]);
	MPI_Irecv(&in[1], 1, MPI_INT, (rank + 2) % size, 7, MPI_COMM_WORLD, &req[1]);
	MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
	MPI_Send(&out, 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD);
	MPI_Send(&out, 1, MPI_INT, (rank + 2) % size, 7, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
