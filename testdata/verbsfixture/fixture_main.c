/*
 * fixture_main: drives the libibverbs TEST FIXTURE (libverbs_fixture.so,
 * see fixture_verbs.c; it is not libibverbs) the way an MPI library's
 * verbs transport would, so that tests can count what mpiprobe sees of
 * ibv_get_async_event and ibv_modify_srq. Built by build.sh.
 *
 *   fixture_main [-l L] [-o O] [-g v1,v2,...] [-x X]
 *
 * It first reads one line from stdin (so that a test can attach its probes,
 * then say "go"), then:
 *   queues (fixture_queue_event) and fetches (ibv_get_async_event) L events
 *   of type 15, IBV_EVENT_SRQ_LIMIT_REACHED, then O events of type 3,
 *   IBV_EVENT_QP_ACCESS_ERR (another type: must not count);
 *   calls ibv_modify_srq with mask 2, IBV_SRQ_LIMIT, once for each v of -g,
 *   with srq_attr.max_wr = v and srq_attr.srq_limit = v/4;
 *   calls ibv_modify_srq X more times with mask 1, IBV_SRQ_MAX_WR (must not
 *   count), with max_wr 64.
 * It prints one line "fixture done limit=L other=O grown=v1,v2 maxwr_only=X"
 * and exits 0; 1 if a call did not return what the fixture promises;
 * 2 on misuse.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* libibverbs' layouts, as in fixture_verbs.c. */
struct ibv_context;
struct ibv_srq;

struct ibv_async_event {
	union {
		void *cq, *qp, *srq, *wq;
		int port_num;
	} element;
	int event_type;
};

struct ibv_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
};

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event);
int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask);
void fixture_queue_event(int event_type);

#define IBV_EVENT_QP_ACCESS_ERR 3
#define IBV_EVENT_SRQ_LIMIT_REACHED 15
#define IBV_SRQ_MAX_WR 1
#define IBV_SRQ_LIMIT 2

static void usage(void)
{
	fprintf(stderr, "usage: fixture_main [-l limit_events] [-o other_events] [-g v1,v2,...] [-x maxwr_only_calls]\n");
}

/* The fixture never dereferences these: they only have to be distinct. */
static char context_storage, srq_storage;

static int fetch(int type, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_async_event ev;
		fixture_queue_event(type);
		memset(&ev, 0xff, sizeof ev);
		int rc = ibv_get_async_event((struct ibv_context *)&context_storage, &ev);
		if (rc != 0 || ev.event_type != type) {
			fprintf(stderr, "fixture_main: ibv_get_async_event returned %d, event type %d, want 0 and %d\n",
				rc, ev.event_type, type);
			return 1;
		}
	}
	return 0;
}

static int modify(uint32_t max_wr, uint32_t limit, int mask)
{
	struct ibv_srq_attr attr = { .max_wr = max_wr, .max_sge = 1, .srq_limit = limit };
	int rc = ibv_modify_srq((struct ibv_srq *)&srq_storage, &attr, mask);
	if (rc != 0) {
		fprintf(stderr, "fixture_main: ibv_modify_srq returned %d, want 0\n", rc);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int limit = 0, other = 0, maxwr_only = 0;
	const char *grown = "";
	int opt;
	while ((opt = getopt(argc, argv, "l:o:g:x:")) != -1) {
		switch (opt) {
		case 'l': limit = atoi(optarg); break;
		case 'o': other = atoi(optarg); break;
		case 'g': grown = optarg; break;
		case 'x': maxwr_only = atoi(optarg); break;
		default:
			usage();
			return 2;
		}
	}
	if (optind != argc || limit < 0 || other < 0 || maxwr_only < 0) {
		usage();
		return 2;
	}
	/* Check -g before waiting: misuse must not need a "go". */
	for (const char *p = grown; *p;) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		if (end == p || v > UINT32_MAX || (*end != ',' && *end != '\0') || (*end == ',' && end[1] == '\0')) {
			fprintf(stderr, "fixture_main: -g wants comma-separated numbers, got \"%s\"\n", grown);
			return 2;
		}
		p = *end ? end + 1 : end;
	}

	char line[256];
	if (!fgets(line, sizeof line, stdin)) {
		/* EOF: go all the same. */
	}

	if (fetch(IBV_EVENT_SRQ_LIMIT_REACHED, limit) || fetch(IBV_EVENT_QP_ACCESS_ERR, other))
		return 1;
	for (const char *p = grown; *p;) {
		char *end;
		uint32_t v = (uint32_t)strtoul(p, &end, 10);
		if (modify(v, v / 4, IBV_SRQ_LIMIT))
			return 1;
		p = *end ? end + 1 : end;
	}
	for (int i = 0; i < maxwr_only; i++)
		if (modify(64, 0, IBV_SRQ_MAX_WR))
			return 1;
	printf("fixture done limit=%d other=%d grown=%s maxwr_only=%d\n", limit, other, grown, maxwr_only);
	return 0;
}
