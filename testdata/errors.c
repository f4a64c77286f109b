/*
 * errors: MPI calls that return errors, with MPI_ERRORS_RETURN set on
 * MPI_COMM_WORLD, so that tests can count the errors MPI returned to the
 * application, by class and by call; with -c, the control: the same traffic
 * made valid, so that no call returns an error.
 *
 *   errors [-n N] [-c]
 *
 * Default (N=5):
 *   rank 0 calls MPI_Send N times (one int, tag 1) to rank `size`, which
 *   does not exist: each must return an error of class MPI_ERR_RANK;
 *   then rank 0 sends N messages of 16 ints (tag 2) to rank 1, and rank 1
 *   receives each with an MPI_Recv of count 8: each must return an error of
 *   class MPI_ERR_TRUNCATE.
 * -c: rank 0 sends the first N messages to rank 1 instead, which receives
 *   them, and rank 1 receives the second N with count 16: no call may
 *   return an error.
 * Ranks 2 and up do nothing but MPI_Init and MPI_Finalize.
 *
 * Every rank prints one line with the errors it got, e.g.
 *   errors rank 0 got 5 MPI_ERR_RANK in MPI_Send, 0 other errors
 *   errors rank 1 got 5 MPI_ERR_TRUNCATE in MPI_Recv, 0 other errors
 * (any other error is also described on stderr), and exits 1 if what it got
 * differs from what the mode expects. Exit status 2 on misuse (bad options,
 * fewer than 2 ranks).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TAG_RANK 1
#define TAG_TRUNC 2

static int rank;

/* check counts rc as the expected class (returning 1), as success
 * (returning 0), or as another error, described on stderr (returning -1). */
static int check(int rc, int want_class, const char *call, int i)
{
	if (rc == MPI_SUCCESS)
		return 0;
	int cls;
	MPI_Error_class(rc, &cls);
	if (want_class != MPI_SUCCESS && cls == want_class)
		return 1;
	char msg[MPI_MAX_ERROR_STRING];
	int len;
	MPI_Error_string(rc, msg, &len);
	fprintf(stderr, "errors rank %d: %s number %d returned error class %d: %s\n", rank, call, i, cls, msg);
	return -1;
}

int main(int argc, char **argv)
{
	int n = 5, control = 0;
	int opt;
	while ((opt = getopt(argc, argv, "n:c")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 'c': control = 1; break;
		default:
			fprintf(stderr, "usage: errors [-n N] [-c]\n");
			return 2;
		}
	}
	if (optind != argc || n < 0) {
		fprintf(stderr, "usage: errors [-n N] [-c]\n");
		return 2;
	}

	MPI_Init(&argc, &argv);
	int size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2) {
		if (rank == 0)
			fprintf(stderr, "errors needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

	int data[16];
	for (int i = 0; i < 16; i++)
		data[i] = i;
	int got = 0, other = 0, want = control ? 0 : n;
	if (rank == 0) {
		int dest = control ? 1 : size;
		for (int i = 0; i < n; i++) {
			int r = check(MPI_Send(data, 1, MPI_INT, dest, TAG_RANK, MPI_COMM_WORLD),
				      control ? MPI_SUCCESS : MPI_ERR_RANK, "MPI_Send", i);
			got += r > 0;
			other += r < 0;
		}
		for (int i = 0; i < n; i++)
			other += check(MPI_Send(data, 16, MPI_INT, 1, TAG_TRUNC, MPI_COMM_WORLD),
				       MPI_SUCCESS, "MPI_Send", n + i) < 0;
		printf("errors rank 0 got %d MPI_ERR_RANK in MPI_Send, %d other errors\n", got, other);
	} else if (rank == 1) {
		int buf[16];
		if (control) {
			for (int i = 0; i < n; i++)
				other += check(MPI_Recv(buf, 1, MPI_INT, 0, TAG_RANK, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
					       MPI_SUCCESS, "MPI_Recv", i) < 0;
		}
		int count = control ? 16 : 8;
		for (int i = 0; i < n; i++) {
			int r = check(MPI_Recv(buf, count, MPI_INT, 0, TAG_TRUNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
				      control ? MPI_SUCCESS : MPI_ERR_TRUNCATE, "MPI_Recv", i);
			got += r > 0;
			other += r < 0;
			if (r == 0 && buf[15] != 15) {
				fprintf(stderr, "errors rank 1: message %d ends with %d, not 15\n", i, buf[15]);
				other++;
			}
		}
		printf("errors rank 1 got %d MPI_ERR_TRUNCATE in MPI_Recv, %d other errors\n", got, other);
	} else {
		printf("errors rank %d got 0 errors\n", rank);
	}
	MPI_Finalize();
	return rank <= 1 && (got != want || other != 0);
}
