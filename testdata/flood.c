/*
 * flood: rank 0 posts many nonblocking sends to rank 1 before rank 1 starts
 * receiving, so that the sender's BTL runs out of send fragments and Open MPI's
 * ob1 queues the rest as pending sends. mpiprobe's tests and demo run it.
 *
 *   flood [-n messages] [-s bytes] [-d receiver_delay_ms] [-r rounds]
 *         [-p pause_ms] [-m marker_file] [-h hold_ms] [-x]
 *
 * -p pauses after MPI_Init (so a test can attach with -p to a running rank);
 * -m makes rank 0 write its pid to the file once its sends of the first round
 * are posted, then hold (-h) before waiting for them (so a test can kill it
 * with pending sends queued). Rank 0 prints "flood seconds=S" (the rounds'
 * time); every rank prints one line "flood rank R done".
 *
 * -x ends the job as a crash does: after the rounds rank 1 exits at once,
 * without MPI_Finalize (status 3), while rank 0 waits in MPI_Recv for a
 * message from it that never comes, so that rank 0's transport sees the
 * connection close; the launcher then ends the other ranks.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	int n = 2000, size = 2048, delay = 200, rounds = 1, pause = 0, hold = 0, crash = 0, abort_code = -1;
	const char *marker = NULL;
	int opt;
	while ((opt = getopt(argc, argv, "n:s:d:r:p:m:h:xa:")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 's': size = atoi(optarg); break;
		case 'd': delay = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'p': pause = atoi(optarg); break;
		case 'm': marker = optarg; break;
		case 'h': hold = atoi(optarg); break;
		case 'x': crash = 1; break;
		case 'a': abort_code = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: flood [-n msgs] [-s bytes] [-d delay_ms] [-r rounds] [-p pause_ms] [-m marker] [-h hold_ms] [-x] [-a abort_code]\n");
			return 2;
		}
	}

	MPI_Init(&argc, &argv);
	int rank, nprocs;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (nprocs < 2) {
		if (rank == 0)
			fprintf(stderr, "flood needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (pause > 0)
		sleep_ms(pause);

	char *buf = malloc((size_t)n * size);
	MPI_Request *reqs = malloc(sizeof(MPI_Request) * n);
	memset(buf, rank, (size_t)n * size);

	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int r = 0; r < rounds; r++) {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0) {
			for (int i = 0; i < n; i++)
				MPI_Isend(buf + (size_t)i * size, size, MPI_BYTE, 1, i, MPI_COMM_WORLD, &reqs[i]);
			if (marker && r == 0) {
				FILE *f = fopen(marker, "w");
				if (f) {
					fprintf(f, "%d\n", (int)getpid());
					fclose(f);
				}
				sleep_ms(hold);
			}
			MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
		} else if (rank == 1) {
			sleep_ms(delay);
			for (int i = 0; i < n; i++)
				MPI_Irecv(buf + (size_t)i * size, size, MPI_BYTE, 0, i, MPI_COMM_WORLD, &reqs[i]);
			MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("flood seconds=%.6f\n", MPI_Wtime() - t0);
	printf("flood rank %d done\n", rank);
	if (abort_code >= 0) {
		// Rank 0 aborts the job while the others wait for it.
		fflush(stdout);
		if (rank == 0)
			MPI_Abort(MPI_COMM_WORLD, abort_code);
		int x;
		MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	if (crash) {
		fflush(stdout);
		if (rank == 1)
			_exit(3);
		int x;
		MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	free(reqs);
	free(buf);
	MPI_Finalize();
	return 0;
}
