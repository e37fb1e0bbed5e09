/*
 * Address exchange between ring neighbours, over the memory FIFO: a member
 * tells the member that will put into it which region and counters to use.
 * Messages carry the team, the call's sequence number and its count, so a
 * member called with a different count is caught here, not by garbage.
 */
#include "../coll_internal.h"

#include <errno.h>
#include <string.h>

struct addr_msg {
	uint64_t team;
	uint32_t seq, from;
	struct coll_addr addr;
};

#define INBOX_SLOTS 64u

/* Per core of this process: messages that arrived before they were wanted. */
struct inbox {
	struct addr_msg msg[INBOX_SLOTS];
	uint32_t used[INBOX_SLOTS];
	int registered;
};
static struct inbox inboxes[TORUS_MAX_CORES];

static int on_addr(emu_core_t *c, const struct dma_recv_info *info, const void *payload, void *arg)
{
	struct inbox *box = arg;
	(void)c;
	if (info->len != sizeof(struct addr_msg))
		return -EPROTO;
	for (uint32_t i = 0; i < INBOX_SLOTS; i++) {
		if (!box->used[i]) {
			memcpy(&box->msg[i], payload, sizeof(struct addr_msg));
			box->used[i] = 1;
			return 0;
		}
	}
	return -ENOSPC;
}

static int take(struct inbox *box, uint64_t team, uint32_t seq, uint32_t from, struct coll_addr *out)
{
	for (uint32_t i = 0; i < INBOX_SLOTS; i++) {
		if (box->used[i] && box->msg[i].team == team && box->msg[i].seq == seq && box->msg[i].from == from) {
			*out = box->msg[i].addr;
			box->used[i] = 0;
			return 1;
		}
	}
	return 0;
}

int coll_exchange(coll_team_t *t, uint32_t to, uint32_t from, uint32_t seq, const struct coll_addr *mine,
		  struct coll_addr *theirs)
{
	emu_core_t *c = t->core;
	struct inbox *box = &inboxes[emu_core_index(c)];
	dma_injfifo_t *f;
	struct dma_desc d;
	int rc;

	if (!box->registered) {
		if ((rc = dma_handler_register(c, COLL_DISPATCH, on_addr, box)))
			return rc;
		box->registered = 1;
		/* nobody may send to a core before its handler exists: the first
		 * collective of a team starts with a team barrier */
		if ((rc = dma_barrier_team(c, t->members, t->size)))
			return rc;
	}
	struct addr_msg m = {t->key, seq, t->rank, *mine};
	uint32_t inj;
	if ((rc = dma_counter_alloc(c, &inj)) || (rc = dma_counter_add(c, inj, sizeof(m))) ||
	    (rc = dma_injfifo_open(c, 0, &f)))
		return rc;
	dma_desc_memfifo(&d, t->node[to], t->cpu[to], COLL_DISPATCH, 0, &m, sizeof(m), inj);
	if ((rc = dma_injfifo_post(f, &d, DMA_POST_WAIT))) {
		dma_counter_free(c, inj); /* nothing was posted: nothing to wait for */
		return rc;
	}
	while (!take(box, t->key, seq, from, theirs)) {
		rc = dma_recfifo_poll(c, 16);
		if (rc < 0)
			goto out;
		if (rc == 0 && (rc = dma_recfifo_wait(c, -1)) < 0)
			goto out;
	}
	rc = theirs->count != mine->count ? -EPROTO : 0;
out:;
	/* m lives on this stack: it must have left before we return */
	int w = dma_counter_wait(c, inj);
	rc = rc ? rc : w;
	dma_counter_free(c, inj);
	return rc;
}
