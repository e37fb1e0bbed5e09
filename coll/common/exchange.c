/*
 * Address exchange between neighbours, over the memory FIFO: a member tells
 * the member that will put into it which region and counters to use.
 * Messages carry the team, the call's sequence number, a tag and the hash
 * of the call's arguments, so a member called differently is caught here,
 * not by garbage; coll_agree then spreads the verdict to every member.
 */
#include "../coll_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct addr_msg {
	uint64_t team;
	uint32_t seq, from, tag, pad_;
	struct coll_addr addr;
};

/*
 * Per core of this process: messages that arrived before they were wanted.
 * It grows as needed: an all-to-all's members each hear from every other
 * member at once (511 messages on 8x8x8), before they look for any.
 */
struct inbox {
	struct addr_msg *msg;
	uint8_t *used;
	uint32_t cap;
	int registered;
};
static struct inbox inboxes[TORUS_MAX_CORES];

static int on_addr(emu_core_t *c, const struct dma_recv_info *info, const void *payload, void *arg)
{
	struct inbox *box = arg;
	(void)c;
	if (info->len != sizeof(struct addr_msg))
		return -EPROTO;
	uint32_t i = 0;
	while (i < box->cap && box->used[i])
		i++;
	if (i == box->cap) {
		uint32_t cap = box->cap ? 2 * box->cap : 64;
		struct addr_msg *m = realloc(box->msg, cap * sizeof(*m));
		if (m)
			box->msg = m;
		uint8_t *u = m ? realloc(box->used, cap) : NULL;
		if (!u)
			return -ENOMEM; /* the message is lost: the exchange's wait will say so */
		box->used = u;
		memset(u + box->cap, 0, cap - box->cap);
		box->cap = cap;
	}
	memcpy(&box->msg[i], payload, sizeof(struct addr_msg));
	box->used[i] = 1;
	return 0;
}

static int take(struct inbox *box, uint64_t team, uint32_t seq, uint32_t from, uint32_t tag, struct coll_addr *out)
{
	for (uint32_t i = 0; i < box->cap; i++) {
		const struct addr_msg *m = &box->msg[i];
		if (box->used[i] && m->team == team && m->seq == seq && m->from == from && m->tag == tag) {
			*out = m->addr;
			box->used[i] = 0;
			return 1;
		}
	}
	return 0;
}

/* A message's name (struct dma_desc's key): its sender and receiver both
 * work it out, so the receiver can expect it by name (dma_recv_expect) */
static uint64_t msg_key(uint64_t team, uint32_t seq, uint32_t from, uint32_t tag)
{
	uint64_t h = team * 0x9E3779B97F4A7C15ull ^ ((uint64_t)seq << 32 | from) * 0xC2B2AE3D27D4EB4Full ^
		     (uint64_t)tag * 0x165667B19E3779F9ull;
	return (h ^ h >> 31) & ~(1ull << 63);
}

int coll_exchange_init(emu_core_t *c)
{
	struct inbox *box = &inboxes[emu_core_index(c)];
	if (box->registered)
		return 0;
	int rc = dma_handler_register(c, COLL_DISPATCH, on_addr, box);
	if (!rc)
		box->registered = 1;
	return rc;
}

int coll_exchange_many(coll_team_t *t, uint32_t seq, struct coll_xchg *x, size_t n)
{
	emu_core_t *c = t->core;
	struct inbox *box = &inboxes[emu_core_index(c)];
	dma_injfifo_t *f;
	struct dma_desc d;
	uint32_t inj;
	int rc;

	if (!box->registered)
		return -EINVAL; /* coll_exchange_init was not called: no team was made here */
	struct addr_msg *m = calloc(n ? n : 1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if ((rc = dma_counter_alloc(c, &inj))) {
		free(m);
		return rc;
	}
	size_t sent = 0;
	if (!(rc = dma_injfifo_open(c, 0, &f))) {
		for (; sent < n; sent++) {
			if (x[sent].to_node == COLL_XCHG_NONE)
				continue;
			m[sent] = (struct addr_msg){t->key, seq, t->rank, x[sent].tag, 0, x[sent].mine};
			if ((rc = dma_counter_add(c, inj, sizeof(m[sent]))))
				break;
			dma_desc_memfifo(&d, x[sent].to_node, x[sent].to_core, COLL_DISPATCH, 0, &m[sent], sizeof(m[sent]),
					 inj);
			d.tag = TORUS_TAG(TORUS_TAG_CONTROL, 0, 0, 0, 0);
			d.flags |= DMA_F_ANY_ORDER; /* filed in the inbox */
			d.key = msg_key(t->key, seq, t->rank, x[sent].tag);
			/*
			 * A full injection FIFO is not slept on: our messages
			 * may wait behind others' in a reception FIFO that
			 * only its core drains, and that core may be posting
			 * too. Drain ours (into the inbox) while we wait, so
			 * that a team of more members than rx_slots (an
			 * all-to-all on 8x8x8: 511 messages each) cannot
			 * deadlock.
			 */
			while ((rc = dma_injfifo_post(f, &d, 0)) == -EAGAIN) {
				unsigned got;
				if ((rc = dma_recfifo_poll_any_order(c, 64, &got)) < 0)
					break;
				/* a 1 ms nap at most: the FIFO may drain meanwhile */
				if (!got && (rc = dma_recfifo_wait_any_order(c, 1)) < 0 && rc != -ETIMEDOUT)
					break;
			}
			if (rc) {
				dma_counter_add(c, inj, -(int64_t)sizeof(m[sent])); /* it never left */
				break;
			}
		}
	}
	int mismatch = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		if (x[i].from == COLL_XCHG_NONE)
			continue;
		/* (first: its arrival is what the clock meets, not when it comes) */
		if ((rc = dma_recv_expect(c, t->node[x[i].from], msg_key(t->key, seq, x[i].from, x[i].tag), 0)))
			break;
		while (!take(box, t->key, seq, x[i].from, x[i].tag, &x[i].theirs)) {
			unsigned got;
			if ((rc = dma_recfifo_poll_any_order(c, 16, &got)) < 0)
				break;
			if (!got && (rc = dma_recfifo_wait_any_order(c, -1)) < 0)
				break;
		}
		if (!rc && x[i].theirs.check != x[i].mine.check)
			mismatch = 1;
	}
	/* the messages must have left before they are freed */
	int w = dma_counter_wait(c, inj);
	rc = rc ? rc : w;
	dma_counter_free(c, inj);
	free(m);
	return rc ? rc : mismatch ? -EPROTO : 0;
}

int coll_exchange(coll_team_t *t, uint32_t to, uint32_t from, uint32_t seq, const struct coll_addr *mine,
		  struct coll_addr *theirs)
{
	struct coll_xchg x = {t->node[to], t->cpu[to], from, 0, *mine, {0, 0, 0, 0, 0, 0}};
	int rc = coll_exchange_many(t, seq, &x, 1);
	*theirs = x.theirs;
	return rc;
}

int coll_agree(coll_team_t *t, int rc)
{
	uint32_t worst;
	int b = dma_barrier_team_max(t->core, t->part, t->npart, rc < 0 ? (uint32_t)-rc : 0, &worst);
	return b ? b : -(int)worst;
}
