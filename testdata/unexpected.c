/*
 * unexpected: rank 0 sends N messages to rank 1 that all arrive before
 * rank 1 posts their receives, so that the MPI library queues every one of
 * them as an unexpected message; with -p, the control: rank 1 pre-posts all
 * its receives before rank 0 sends, so that none is unexpected. mpiprobe's
 * tests count unexpected messages with it.
 *
 *   unexpected [-n messages] [-s bytes] [-p]
 *
 * Default (N=1000 messages of 1024 bytes, late receives): rank 0 posts N
 * MPI_Isends to rank 1 with tags 0..N-1, then MPI_Barrier, then MPI_Waitall.
 * Rank 1 enters MPI_Barrier at once, then waits (MPI_Iprobe, which posts no
 * receive) until message N-1 has arrived, so that, messages from one sender
 * arriving in order, all N have; then it receives them with MPI_Recv in
 * reverse tag order (N-1 down to 0). Exactly N messages are unexpected.
 * Rank 0 sends with MPI_Isend and waits after the barrier, so large
 * (rendezvous) sizes such as -s 262144 do not deadlock either.
 *
 * -p (pre-posted): rank 1 posts all N MPI_Irecvs, then both ranks enter
 * MPI_Barrier, then rank 0 sends (MPI_Isend, MPI_Waitall) and rank 1 waits
 * (MPI_Waitall): no message arrives before its receive is posted.
 *
 * The barrier's own messages are not counted here; a library may queue one
 * of them as unexpected too. Ranks 2 and up only take part in the barrier.
 * Rank 1 checks that the first int of each message is its tag and exits 1
 * otherwise. Every rank prints one line, e.g.
 *   unexpected rank 0 sent 1000 messages of 1024 bytes, late receives posted
 *   unexpected rank 1 received 1000 messages of 1024 bytes, late receives posted
 *   unexpected rank 2 took part in the barrier only, pre-posted
 * Exit status 2 on misuse (bad options, fewer than 2 ranks).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(void)
{
	fprintf(stderr, "usage: unexpected [-n messages] [-s bytes] [-p]\n");
}

int main(int argc, char **argv)
{
	int n = 1000, size = 1024, preposted = 0;
	int opt;
	while ((opt = getopt(argc, argv, "n:s:p")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 's': size = atoi(optarg); break;
		case 'p': preposted = 1; break;
		default:
			usage();
			return 2;
		}
	}
	if (optind != argc || n < 1 || size < (int)sizeof(int)) {
		usage();
		fprintf(stderr, "unexpected: need -n >= 1 and -s >= %d\n", (int)sizeof(int));
		return 2;
	}

	MPI_Init(&argc, &argv);
	int rank, nprocs;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (nprocs < 2) {
		if (rank == 0)
			fprintf(stderr, "unexpected needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	const char *mode = preposted ? "pre-posted" : "late receives posted";

	char *buf = NULL;
	MPI_Request *reqs = NULL;
	if (rank == 0 || (rank == 1 && preposted)) {
		buf = calloc((size_t)n, (size_t)size);
		reqs = malloc(sizeof(MPI_Request) * n);
	} else if (rank == 1) {
		buf = calloc(1, (size_t)size);
	}
	if (rank <= 1 && (!buf || ((rank == 0 || preposted) && !reqs))) {
		fprintf(stderr, "unexpected rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}

	int bad = 0;
	if (rank == 0) {
		for (int i = 0; i < n; i++)
			memcpy(buf + (size_t)i * size, &i, sizeof i);
		if (preposted) {
			MPI_Barrier(MPI_COMM_WORLD);
			for (int i = 0; i < n; i++)
				MPI_Isend(buf + (size_t)i * size, size, MPI_BYTE, 1, i, MPI_COMM_WORLD, &reqs[i]);
		} else {
			for (int i = 0; i < n; i++)
				MPI_Isend(buf + (size_t)i * size, size, MPI_BYTE, 1, i, MPI_COMM_WORLD, &reqs[i]);
			MPI_Barrier(MPI_COMM_WORLD);
		}
		MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
		printf("unexpected rank 0 sent %d messages of %d bytes, %s\n", n, size, mode);
	} else if (rank == 1) {
		if (preposted) {
			for (int i = 0; i < n; i++)
				MPI_Irecv(buf + (size_t)i * size, size, MPI_BYTE, 0, i, MPI_COMM_WORLD, &reqs[i]);
			MPI_Barrier(MPI_COMM_WORLD);
			MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
			for (int i = 0; i < n; i++) {
				int got;
				memcpy(&got, buf + (size_t)i * size, sizeof got);
				if (got != i) {
					fprintf(stderr, "unexpected rank 1: message with tag %d starts with %d\n", i, got);
					bad = 1;
				}
			}
		} else {
			MPI_Barrier(MPI_COMM_WORLD);
			int arrived = 0;
			while (!arrived)
				MPI_Iprobe(0, n - 1, MPI_COMM_WORLD, &arrived, MPI_STATUS_IGNORE);
			for (int i = n - 1; i >= 0; i--) {
				int got;
				MPI_Recv(buf, size, MPI_BYTE, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				memcpy(&got, buf, sizeof got);
				if (got != i) {
					fprintf(stderr, "unexpected rank 1: message with tag %d starts with %d\n", i, got);
					bad = 1;
				}
			}
		}
		printf("unexpected rank 1 received %d messages of %d bytes, %s\n", n, size, mode);
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
		printf("unexpected rank %d took part in the barrier only, %s\n", rank, mode);
	}
	free(reqs);
	free(buf);
	MPI_Finalize();
	return bad;
}
