/*
 * exact-check: replays traffic from a file under torusrun --exact and
 * prints what each core observed, for test_exact to compare with the
 * reference simulator.
 *
 *   torusrun --exact --torus 4x4 --param dma_counters=512 -- exact-check FILE
 *
 * FILE: one transfer per line, "kind src_node src_core fifo dst_node
 * dst_core len post hints", kind 1 a raw packet, 2 a put, 3 a get (of len
 * bytes from dst's region, back to src), 4 a memory-FIFO message. Each core:
 *
 *  1. registers one region and allocates a counter for each put it
 *     receives and each get it makes, armed with the transfer's length
 *     (ids and offsets follow from the file, so senders know them), and
 *     one more, the injection counter of its own puts;
 *  2. meets the others at a barrier;
 *  3. posts its own transfers in file order, each at max(its clock, post)
 *     (the model's rule; a post costs inj_overhead), raw packets as raw
 *     sends, puts, gets and memory-FIFO messages on DMA FIFO `fifo`; a core
 *     of odd global rank then promises to post nothing more until its raw
 *     packets are in (emu_core_expect; of rank 3 mod 4: ever again), and
 *     checks that posts are refused;
 *  4. prints "start CORE_CLOCK", then waits for each of its counters in
 *     file order and prints "xfer INDEX CLOCK" after each (the clock is the
 *     later of the clock before and the counter's zero time);
 *  5. receives its raw packets and prints "xfer INDEX ARRIVAL" for each;
 *  6. receives its memory-FIFO messages (polled, dispatch 0) and prints
 *     "xfer INDEX ARRIVAL" for each, the arrival of its last packet.
 *
 * Every put, get reply and message is checked byte for byte.
 */
#include "torus/dma.h"
#include "torus/emu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { RAW = 1, PUT = 2, GET = 3, MEMFIFO = 4 };

struct xfer {
	uint32_t kind, src_node, src_core, fifo, dst_node, dst_core, len, hints;
	unsigned long long post;
};

/* Where a transfer's data lands, and the counter that counts it: the
 * node-wide counter id at the receiving core (a get's requester) and the
 * offset in its region. Each core works them out for itself. */
struct place {
	uint32_t counter;
	uint64_t offset;
};

static struct xfer *xs; /* read only once the cores run */
static size_t nx;
#define SOURCE_BYTES 4096u /* what a get may read: the first bytes of each region */

static uint8_t byte_of(size_t x, uint32_t i) { return (uint8_t)(x * 131 + i * 7 + 1); }
static uint8_t source_byte(uint32_t node, uint32_t core, uint32_t i) { return (uint8_t)(node * 37 + core * 11 + i); }

/* The receiving core of transfer x: a put's destination, a get's requester. */
static void receiver(const struct xfer *x, uint32_t *node, uint32_t *core)
{
	*node = x->kind == GET ? x->src_node : x->dst_node;
	*core = x->kind == GET ? x->src_core : x->dst_core;
}

/* Counters and offsets at one receiving core, in file order; its region's size. */
static uint64_t layout(uint32_t node, uint32_t core, uint32_t per_counter, struct place *pl, uint32_t *ncounters)
{
	uint64_t off = SOURCE_BYTES;
	uint32_t n = 0;
	for (size_t i = 0; i < nx; i++) {
		uint32_t rn, rc;
		receiver(&xs[i], &rn, &rc);
		if (xs[i].kind == RAW || xs[i].kind == MEMFIFO || rn != node || rc != core)
			continue;
		pl[i].counter = core * per_counter + n++;
		pl[i].offset = off;
		off += (xs[i].len + 7) / 8 * 8;
	}
	*ncounters = n;
	return off;
}

/* A core's report, written in one piece at the end so that cores do not
 * interleave their lines. */
struct report {
	char *buf;
	size_t len, cap;
};

static void say(struct report *r, const char *fmt, ...)
{
	char line[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (r->len + (size_t)n + 1 > r->cap) {
		size_t nc = r->cap ? 2 * r->cap : 4096;
		while (nc < r->len + (size_t)n + 1)
			nc *= 2;
		char *nb = realloc(r->buf, nc);
		if (!nb)
			return;
		r->buf = nb;
		r->cap = nc;
	}
	memcpy(r->buf + r->len, line, (size_t)n);
	r->len += (size_t)n;
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "exact-check: %s: %s\n", what, rc < 0 ? strerror(-rc) : dma_strerror(rc));
	return 1;
}

/* Receive `want` memory-FIFO messages, checking every byte; report each
 * with the arrival of its last packet. */
static int receive_messages(emu_core_t *c, size_t want, uint8_t *buf, struct report *rep)
{
	uint32_t node = emu_node_rank(c), core = emu_core_index(c);
	uint64_t *got = calloc(nx + 1, sizeof(uint64_t));
	if (!got)
		return fail("memory", -ENOMEM);
	int rc = 0;
	for (size_t done = 0; done < want && !rc;) {
		struct dma_recv_info info;
		rc = dma_recfifo_next(c, &info, buf, 256);
		if (rc == -EAGAIN) {
			rc = dma_recfifo_wait(c, -1);
			continue;
		}
		if (rc)
			break;
		size_t i = info.user;
		if (i >= nx || xs[i].kind != MEMFIFO || xs[i].dst_node != node || xs[i].dst_core != core ||
		    xs[i].src_node != info.src_node || xs[i].src_core != info.src_core ||
		    info.offset + info.len > xs[i].len) {
			fprintf(stderr, "exact-check: node %u core %u: a message that is not ours (user %zu)\n", node, core, i);
			free(got);
			return 1;
		}
		for (uint32_t k = 0; k < info.len; k++)
			if (buf[k] != byte_of(i, (uint32_t)info.offset + k)) {
				fprintf(stderr, "exact-check: message %zu: byte %llu damaged\n", i,
					(unsigned long long)info.offset + k);
				free(got);
				return 1;
			}
		got[i] += info.len;
		if (info.last != (got[i] == xs[i].len)) {
			fprintf(stderr, "exact-check: message %zu: last flag %d after %llu of %u bytes\n", i, info.last,
				(unsigned long long)got[i], xs[i].len);
			free(got);
			return 1;
		}
		if (info.last) {
			/* packets of one message arrive in order: this is the last deposit */
			say(rep, "xfer %zu %llu\n", i, (unsigned long long)info.arrival);
			done++;
		}
	}
	free(got);
	return rc ? fail("receive messages", rc) : 0;
}

static int core_main(emu_core_t *c, void *arg)
{
	(void)arg;
	uint32_t node = emu_node_rank(c), core = emu_core_index(c), nodes = emu_node_count(c);
	const uint32_t per_counter = emu_params(c)->dma_counters, per_region = emu_params(c)->dma_regions;
	uint8_t buf[256];
	int rc;
	/* every core's layout: senders need their destinations' */
	uint64_t mine = 0;
	uint32_t ncnt = 0;
	struct place *pl = calloc(nx + 1, sizeof(*pl));
	if (!pl)
		return fail("memory", -ENOMEM);
	for (uint32_t n = 0; n < nodes; n++)
		for (uint32_t k = 0; k < emu_cores_of(c, n); k++) {
			uint32_t cnt;
			uint64_t bytes = layout(n, k, per_counter, pl, &cnt);
			if (n == node && k == core) {
				mine = bytes;
				ncnt = cnt;
			}
		}
	uint8_t *area = calloc(1, mine);
	uint8_t **sent = calloc(nx + 1, sizeof(*sent)); /* put sources, freed at the end */
	if (!area || !sent)
		return fail("memory", -ENOMEM);
	for (uint32_t i = 0; i < SOURCE_BYTES; i++)
		area[i] = source_byte(node, core, i);
	uint32_t region, first = 0;
	if ((rc = dma_mem_register(c, area, mine, &region)))
		return fail("register", rc);
	if (region != core * per_region) {
		fprintf(stderr, "exact-check: region %u, not %u\n", region, core * per_region);
		return 1;
	}
	/* one more counter: the injection counter of this core's puts, so that
	 * their sources are freed only once the DMA unit has read them */
	if ((rc = dma_counter_alloc_n(c, ncnt + 1, &first)))
		return fail("counters", rc);
	const uint32_t inj = first + ncnt;
	uint64_t put_bytes = 0;
	for (size_t i = 0; i < nx; i++)
		if ((xs[i].kind == PUT || xs[i].kind == MEMFIFO) && xs[i].src_node == node && xs[i].src_core == core)
			put_bytes += xs[i].len;
	if (put_bytes && (rc = dma_counter_add(c, inj, (int64_t)put_bytes)))
		return fail("arm", rc);
	if (first != core * per_counter) {
		fprintf(stderr, "exact-check: counters from %u, not %u\n", first, core * per_counter);
		return 1;
	}
	size_t want_raw = 0, want_mf = 0;
	for (size_t i = 0; i < nx; i++) {
		uint32_t rn, rcore;
		receiver(&xs[i], &rn, &rcore);
		if (rn != node || rcore != core)
			continue;
		if (xs[i].kind == RAW)
			want_raw++;
		else if (xs[i].kind == MEMFIFO)
			want_mf++;
		else if ((rc = dma_counter_add(c, pl[i].counter, xs[i].len)))
			return fail("arm", rc);
	}
	if ((rc = dma_barrier(c)))
		return fail("barrier", rc);
	/* under --exact a clock never goes back */
	if (!emu_exact(c) || emu_core_set_clock(c, emu_core_now(c) - 1) != -EINVAL) {
		fprintf(stderr, "exact-check: not exact (%d), or the clock went back\n", emu_exact(c));
		return 1;
	}

	for (size_t i = 0; i < nx; i++) {
		const struct xfer *x = &xs[i];
		if (x->src_node != node || x->src_core != core)
			continue;
		if (x->post > emu_core_now(c) && (rc = emu_core_set_clock(c, x->post)))
			return fail("set_clock", rc);
		if (x->kind == RAW) {
			for (uint32_t k = 0; k < x->len; k++)
				buf[k] = byte_of(i, k);
			if ((rc = emu_pkt_send(c, x->dst_node, x->dst_core, buf, x->len, (uint16_t)i, (uint16_t)x->hints)))
				return fail("send", rc);
			continue;
		}
		dma_injfifo_t *f;
		if ((rc = dma_injfifo_open(c, x->fifo, &f)))
			return fail("fifo", rc);
		struct dma_desc d;
		if (x->kind == PUT || x->kind == MEMFIFO) {
			uint8_t *data = sent[i] = malloc(x->len ? x->len : 1);
			if (!data)
				return fail("memory", -ENOMEM);
			for (uint32_t k = 0; k < x->len; k++)
				data[k] = byte_of(i, k);
			/* the data must stay until it has left: kept to the end */
			if (x->kind == PUT)
				dma_desc_put(&d, x->dst_node, data, x->len, x->dst_core * per_region, pl[i].offset,
					     pl[i].counter, inj);
			else
				dma_desc_memfifo(&d, x->dst_node, x->dst_core, 0, (uint16_t)i, data, x->len, inj);
		} else {
			dma_desc_get(&d, x->dst_node, x->dst_core * per_region, 0, x->len, region, pl[i].offset,
				     pl[i].counter);
		}
		d.hints = (uint16_t)x->hints;
		if ((rc = dma_injfifo_post(f, &d, DMA_POST_WAIT)))
			return fail("post", rc);
	}
	/* cores of odd global rank promise to post nothing more until their
	 * raw packets are in (emu_core_expect), so that every scenario checks
	 * both ways against the reference; a post meanwhile is refused */
	/* (those of rank 3 mod 4 promise never to post again: EMU_EXPECT_EVER) */
	const int ever = emu_core_global(c) % 4 == 3 && want_raw;
	if (dma_recfifo_expecting(c))
		return fail("a promise before any was made", -EPROTO);
	if (emu_core_global(c) % 2 && want_raw) {
		if ((rc = emu_core_expect(NULL, 1)) != -EINVAL || (rc = emu_core_expect(c, 0)))
			return fail("a bad or empty expect (not -EINVAL, 0)", rc ? rc : -EPROTO);
		if ((rc = emu_core_expect(c, ever ? EMU_EXPECT_EVER : want_raw)))
			return fail("expect", rc);
		if ((rc = emu_core_expect(c, 1)) != -EBUSY)
			return fail("a second expect (not -EBUSY)", rc ? rc : -EPROTO);
		/* the memory FIFO's promise: not while another holds */
		if ((rc = dma_recfifo_expect(NULL, 1)) != -EINVAL || (rc = dma_recfifo_expect(c, 1)) != -EBUSY ||
		    !dma_recfifo_expecting(c) || dma_recfifo_expecting(NULL))
			return fail("dma_recfifo_expect under a promise (not -EINVAL, -EBUSY, expecting)", rc ? rc : -EPROTO);
		if ((rc = emu_pkt_send(c, node, core, buf, 1, 0, 0)) != -EBUSY)
			return fail("a send while expecting (not -EBUSY)", rc ? rc : -EPROTO);
		if ((rc = dma_counter_add(c, inj, 1)) != -EBUSY)
			return fail("a counter add while expecting (not -EBUSY)", rc ? rc : -EPROTO);
	}

	struct report rep = {0};
	say(&rep, "start %u %u %llu\n", node, core, (unsigned long long)emu_core_now(c));
	for (size_t i = 0; i < nx; i++) {
		const struct xfer *x = &xs[i];
		uint32_t rn, rcore;
		receiver(x, &rn, &rcore);
		if (x->kind == RAW || x->kind == MEMFIFO || rn != node || rcore != core)
			continue;
		if ((rc = dma_counter_wait(c, pl[i].counter)))
			return fail("wait", rc);
		say(&rep, "xfer %zu %llu\n", i, (unsigned long long)emu_core_now(c));
		for (uint32_t k = 0; k < x->len; k++) {
			uint8_t want = x->kind == PUT ? byte_of(i, k) : source_byte(x->dst_node, x->dst_core, k);
			if (area[pl[i].offset + k] != want) {
				fprintf(stderr, "exact-check: transfer %zu: byte %u is %u, not %u\n", i, k,
					area[pl[i].offset + k], want);
				return 1;
			}
		}
	}
	for (size_t got = 0; got < want_raw;) {
		struct emu_pkt_info info;
		rc = emu_pkt_recv(c, &info, buf, sizeof(buf));
		if (rc == -EAGAIN) {
			if ((rc = emu_core_wait(c, EMU_EV_RECV, -1, NULL)))
				return fail("wait", rc);
			continue;
		}
		if (rc)
			return fail("recv", rc);
		size_t i = info.user;
		if (i >= nx || xs[i].kind != RAW || xs[i].dst_node != node || xs[i].dst_core != core ||
		    xs[i].src_node != info.src_node || xs[i].src_core != info.src_core || xs[i].len != info.len) {
			fprintf(stderr, "exact-check: node %u core %u: a packet that is not ours (user %zu)\n", node, core, i);
			return 1;
		}
		for (uint32_t k = 0; k < info.len; k++)
			if (buf[k] != byte_of(i, k)) {
				fprintf(stderr, "exact-check: transfer %zu: byte %u damaged\n", i, k);
				return 1;
			}
		say(&rep, "xfer %zu %llu\n", i, (unsigned long long)info.arrival);
		got++;
	}
	if ((rc = receive_messages(c, want_mf, buf, &rep)))
		return rc;
	/* every raw packet is in: a lasting promise still holds */
	if (ever && want_raw && (rc = emu_pkt_send(c, node, core, buf, 0, 0, 0)) != -EBUSY)
		return fail("a send after EMU_EXPECT_EVER's packets came (not -EBUSY)", rc ? rc : -EPROTO);
	/* one write: a core's lines stay together */
	for (size_t off = 0; off < rep.len;) {
		ssize_t w = write(1, rep.buf + off, rep.len - off);
		if (w <= 0)
			return fail("write", -errno);
		off += (size_t)w;
	}
	free(rep.buf);
	/* every put has landed once every core has seen its own */
	if ((rc = dma_barrier(c)))
		return fail("barrier", rc);
	if (put_bytes && (rc = dma_counter_wait(c, inj)))
		return fail("wait for the puts to leave", rc);
	for (size_t i = 0; i < nx; i++)
		free(sent[i]);
	free(sent);
	free(pl);
	if ((rc = dma_mem_deregister(c, region)))
		return fail("deregister", rc);
	free(area);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: torusrun --exact [options] -- exact-check FILE\n"
		       "Replays transfers (one per line: kind src_node src_core fifo dst_node dst_core\n"
		       "len post_ps hints; kind 1 raw, 2 put, 3 get, 4 memory FIFO) and prints when each core saw each.\n");
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: exact-check FILE (see --help)\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		fprintf(stderr, "exact-check: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	size_t cap = 0;
	struct xfer x = {0};
	while (fscanf(f, "%u %u %u %u %u %u %u %llu %u", &x.kind, &x.src_node, &x.src_core, &x.fifo, &x.dst_node,
		      &x.dst_core, &x.len, &x.post, &x.hints) == 9) {
		if (x.kind < RAW || x.kind > MEMFIFO || (x.kind == MEMFIFO && x.len == 0) || (x.kind == RAW && x.len > 240) || (x.kind == GET && x.len > SOURCE_BYTES)) {
			fprintf(stderr, "exact-check: a bad transfer on line %zu\n", nx + 1);
			return 2;
		}
		if (nx == cap) {
			cap = cap ? 2 * cap : 64;
			xs = realloc(xs, cap * sizeof(*xs));
			if (!xs)
				return 2;
		}
		xs[nx++] = x;
	}
	fclose(f);
	if (nx > 65536) {
		fprintf(stderr, "exact-check: at most 65536 transfers\n");
		return 2;
	}
	return emu_job_main(argc, argv, core_main, NULL);
}
