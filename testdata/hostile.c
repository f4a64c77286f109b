/*
 * hostile: a rank whose strings are built to break whoever shows them. It
 * names a duplicate of MPI_COMM_WORLD with the text of the environment
 * variable HOSTILE_COMM (MPI_Comm_set_name; newlines, ANSI escapes, quotes,
 * slashes, invalid UTF-8 are kept as they are), makes N calls that return
 * an error on it (MPI_ERRORS_RETURN, a send to a rank that does not exist),
 * runs N allreduces on it, then every rank but 0 (of a singleton, rank 0)
 * sleeps S ms before a last allreduce on it, so that rank 0 waits inside
 * a collective on the hostile communicator while a tool looks at it. Its identity comes from whatever
 * environment the test gives it (e.g. PMIX_NAMESPACE).
 *
 * Under MPICH, when the environment variable HOSTILE_API is set, it also
 * hands one MPI_ERR_RANK to MPICH's error path (MPIR_Err_return_comm, on
 * MPI_COMM_WORLD, whose handler it sets to MPI_ERRORS_RETURN) under the
 * function name HOSTILE_API, so that the instance name a tracer reads
 * for that error (its "MPI_ERR_RANK in <function>") is hostile too.
 *
 *   hostile [-n N] [-s ms]
 *
 * It prints one plain line, "hostile rank R errors E", and exits 0 when
 * every one of the N sends returned an error.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* MPICH's error path (src/mpi/errhan/errutil.c), taken by every MPI call
 * that fails; weak, so that the program still links with other MPIs. */
extern int MPIR_Err_return_comm(void *comm_ptr, const char fcname[], int errcode) __attribute__((weak));

int main(int argc, char **argv)
{
	int n = 5, sleep_ms = 0, opt;
	while ((opt = getopt(argc, argv, "n:s:")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 's': sleep_ms = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: hostile [-n N] [-s ms]\n");
			return 2;
		}
	}
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm dup;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	const char *name = getenv("HOSTILE_COMM");
	if (name) {
		char buf[MPI_MAX_OBJECT_NAME];
		snprintf(buf, sizeof buf, "%s", name);
		MPI_Comm_set_name(dup, buf);
	}
	MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
	const char *api = getenv("HOSTILE_API");
	if (api && MPIR_Err_return_comm) {
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		MPIR_Err_return_comm(NULL, api, MPI_ERR_RANK);
	}
	int errors = 0, one = 1, sum;
	for (int i = 0; i < n; i++) {
		if (MPI_Send(&one, 1, MPI_INT, size, 1, dup) != MPI_SUCCESS)
			errors++;
		MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup);
	}
	if (sleep_ms > 0 && (rank != 0 || size == 1)) {
		struct timespec ts = { sleep_ms / 1000, (sleep_ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup);
	printf("hostile rank %d errors %d\n", rank, errors);
	fflush(stdout);
	MPI_Comm_free(&dup);
	MPI_Finalize();
	return errors == n ? 0 : 1;
}
