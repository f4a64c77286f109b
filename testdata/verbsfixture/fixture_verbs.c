/*
 * fixture_verbs.c: a TEST FIXTURE standing in for libibverbs; it is NOT
 * libibverbs and does no RDMA at all. It exists so that mpiprobe's tests can
 * put uprobes on ibv_get_async_event and ibv_modify_srq on machines without
 * RDMA hardware or rdma-core, and check what mpiprobe reads from them.
 *
 * Built as libverbs_fixture.so (see build.sh), it exports the two functions
 * with the signatures and struct layouts of libibverbs (<infiniband/verbs.h>),
 * and, like libibverbs, each in two symbol versions:
 *   ibv_get_async_event@IBVERBS_1.0, ibv_modify_srq@IBVERBS_1.0:
 *       compat versions; they return -1 and do nothing;
 *   ibv_get_async_event@@IBVERBS_1.1, ibv_modify_srq@@IBVERBS_1.1:
 *       the defaults, which programs link against:
 *       ibv_get_async_event pops the oldest event type queued with
 *       fixture_queue_event into event->event_type and returns 0, or
 *       returns -1 when none is queued (libibverbs would block);
 *       ibv_modify_srq records the call and returns 0.
 * void fixture_queue_event(int event_type) (version VERBS_FIXTURE) queues
 * an event type. The context and the SRQ are opaque: never dereferenced.
 */
#include <stdint.h>
#include <string.h>

/* Only what the fixture needs of libibverbs' structs, laid out the same. */
struct ibv_context;
struct ibv_srq;

struct ibv_async_event {
	union {
		void *cq, *qp, *srq, *wq;
		int port_num;
	} element;
	int event_type; /* enum ibv_event_type, at offset 8 */
};

struct ibv_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
};

_Static_assert(__builtin_offsetof(struct ibv_async_event, event_type) == 8, "event_type at offset 8");
_Static_assert(sizeof(struct ibv_srq_attr) == 12, "ibv_srq_attr is 3 uint32_t");

#define EXPORT __attribute__((visibility("default"), noinline))

#define QUEUE_LEN 4096
static int queue[QUEUE_LEN];
static unsigned head, tail; /* tail - head events are queued */

/* What ibv_modify_srq@@IBVERBS_1.1 was last called with, and how often. */
static volatile struct {
	unsigned long calls;
	struct ibv_srq *srq;
	struct ibv_srq_attr attr;
	int mask;
} modify_srq_record;

EXPORT void fixture_queue_event(int event_type)
{
	if (tail - head < QUEUE_LEN)
		queue[tail++ % QUEUE_LEN] = event_type;
}

EXPORT int fixture_ibv_get_async_event_1_1(struct ibv_context *context, struct ibv_async_event *event)
{
	(void)context;
	if (tail == head)
		return -1;
	memset(event, 0, sizeof *event);
	event->event_type = queue[head++ % QUEUE_LEN];
	return 0;
}

EXPORT int fixture_ibv_get_async_event_1_0(struct ibv_context *context, struct ibv_async_event *event)
{
	(void)context;
	(void)event;
	__asm__ volatile("" ::: "memory"); /* keep it a function of its own */
	return -1;
}

EXPORT int fixture_ibv_modify_srq_1_1(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask)
{
	modify_srq_record.calls++;
	modify_srq_record.srq = srq;
	modify_srq_record.attr.max_wr = srq_attr->max_wr;
	modify_srq_record.attr.max_sge = srq_attr->max_sge;
	modify_srq_record.attr.srq_limit = srq_attr->srq_limit;
	modify_srq_record.mask = srq_attr_mask;
	return 0;
}

EXPORT int fixture_ibv_modify_srq_1_0(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask)
{
	(void)srq;
	(void)srq_attr;
	(void)srq_attr_mask;
	__asm__ volatile("" ::: "memory");
	return -1;
}

__asm__(".symver fixture_ibv_get_async_event_1_0, ibv_get_async_event@IBVERBS_1.0");
__asm__(".symver fixture_ibv_get_async_event_1_1, ibv_get_async_event@@IBVERBS_1.1");
__asm__(".symver fixture_ibv_modify_srq_1_0, ibv_modify_srq@IBVERBS_1.0");
__asm__(".symver fixture_ibv_modify_srq_1_1, ibv_modify_srq@@IBVERBS_1.1");
