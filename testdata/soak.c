/*
 * soak: a long job that stays cheap on CPU. Once a second rank 0 posts N
 * nonblocking sends to rank 1, which waits D ms before receiving them, so
 * that with a capped free list (btl_vader_free_list_max 64) rank 0 queues
 * N - 64 sends a round; between rounds both sleep outside MPI. The other
 * ranks sleep outside MPI for the whole run. No barrier until the end.
 *
 *   soak [-t seconds] [-n N] [-d D] [-f stopfile]
 *        (default 60 s, N 200, D 50 ms)
 *
 * With -f the rounds go on, past -t, until the file stopfile exists (rank
 * 0 looks before each round and tells rank 1; the other ranks look every
 * 100 ms), so that a test decides when the job ends.
 *
 * Every rank prints "soak rank R rounds K" (K the rounds it took part in).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
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
	int secs = 60, n = 200, delay = 50, opt;
	const char *stopfile = NULL;
	while ((opt = getopt(argc, argv, "t:n:d:f:")) != -1) {
		switch (opt) {
		case 'f': stopfile = optarg; break;
		case 't': secs = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 'd': delay = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: soak [-t seconds] [-n msgs] [-d delay_ms] [-f stopfile]\n");
			return 2;
		}
	}
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int rounds = 0;
	if (rank <= 1 && size >= 2) {
		int *buf = calloc((size_t)n, 512);
		MPI_Request *reqs = malloc(sizeof(MPI_Request) * n);
		for (int r = 0; stopfile || r < secs; r++) {
			if (stopfile) {
				int stop = 0;
				if (rank == 0) {
					stop = access(stopfile, F_OK) == 0;
					MPI_Send(&stop, 1, MPI_INT, 1, 99, MPI_COMM_WORLD);
				} else {
					MPI_Recv(&stop, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				}
				if (stop)
					break;
			}
			if (rank == 0) {
				for (int i = 0; i < n; i++)
					MPI_Isend((char *)buf + (size_t)i * 512, 512, MPI_BYTE, 1, i, MPI_COMM_WORLD, &reqs[i]);
			} else {
				sleep_ms(delay);
				for (int i = 0; i < n; i++)
					MPI_Irecv((char *)buf + (size_t)i * 512, 512, MPI_BYTE, 0, i, MPI_COMM_WORLD, &reqs[i]);
			}
			MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
			rounds++;
			sleep_ms(1000 - delay);
		}
		free(reqs);
		free(buf);
	} else if (stopfile) {
		while (access(stopfile, F_OK) != 0)
			sleep_ms(100);
	} else {
		sleep_ms((long)secs * 1000);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	printf("soak rank %d rounds %d\n", rank, rounds);
	MPI_Finalize();
	return 0;
}
