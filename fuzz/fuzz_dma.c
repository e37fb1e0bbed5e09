/*
 * Fuzz target: the DMA unit's checks, at post and at the destination,
 * against real tables.
 *
 * A two-node machine (torus "2", two cores per node) lives in this process:
 * the job's shared memory is created as torusrun creates it and both nodes'
 * runtimes attach to it, with no threads; the target drives their engines
 * by hand (emu_engine_step). Each core registers two guarded regions and
 * allocates two counters; core 0 of each node has a handler for dispatch 7.
 *
 * The input is a sequence of operations:
 *   - a descriptor (put, get, memory FIFO or copy, checked or unchecked)
 *     posted by a core of either node, with fields drawn from valid ids,
 *     ids past the wire's 16 bits, offsets near 2^32 and 2^64, and raw
 *     values;
 *   - a packet straight off the wire (any kind, length and software header)
 *     handed to a node's deposit code, as a damaged or hostile neighbour
 *     would send it.
 * After each, the engines run until nothing moves, and an oracle that
 * knows the tables checks the outcome:
 *   - a transfer that is valid lands exactly (the bytes are the source's),
 *     and nothing else changes;
 *   - anything else changes no byte of any region or guard, and a
 *     descriptor the post accepted comes back as a fault to its core.
 */
#include "../dma/dma_internal.h"
#include "emu_internal.h"
#include "node.h"
#include "fuzz_reader.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define NODES 2u
#define CORES 2u
#define REGIONS 2u  /* per core */
#define COUNTERS 2u /* per core */
#define RBYTES 600u /* region size: not a multiple of the 240-byte payload */
#define GUARD 64u
#define SRCMAX 1100u
#define DISPATCH 7u

struct arena {
	uint8_t mem[GUARD + RBYTES + GUARD];
};

static struct {
	int ready;
	struct emu_node_rt rt[NODES];
	struct arena arena[NODES][CORES][REGIONS];
	uint32_t region_id[NODES][CORES][REGIONS];
	uint32_t counter_id[NODES][CORES][COUNTERS];
	dma_injfifo_t *fifo[NODES][CORES];
	struct arena before[NODES][CORES][REGIONS];
	uint8_t src[SRCMAX];
} m;

static void die(const char *what)
{
	fprintf(stderr, "fuzz-dma: %s\n", what);
	abort();
}

static int on_dispatch(emu_core_t *c, const struct dma_recv_info *info, const void *payload, void *arg)
{
	(void)c, (void)info, (void)payload, (void)arg;
	return 0;
}

static void setup(void)
{
	struct torus_shape s;
	struct torus_params p;
	struct emu_shm shm;
	uint32_t cores[NODES] = {CORES, CORES};
	char err[256];
	int fd;

	if (torus_shape_parse("2", &s, err, sizeof(err)))
		die(err);
	torus_params_default(&p);
	if (emu_shm_create(&s, &p, cores, NULL, 0, &shm, &fd, err, sizeof(err)))
		die(err);
	for (uint32_t n = 0; n < NODES; n++) {
		struct emu_node_rt *rt = &m.rt[n];
		if (emu_node_setup(rt, fd, n, err, sizeof(err)))
			die(err);
		rt->core_passes = 0; /* the engines move only when the input steps them */
		for (uint32_t c = 0; c < CORES; c++) {
			emu_core_t *core = rt->cores[c];
			for (uint32_t i = 0; i < REGIONS; i++)
				if (dma_mem_register(core, m.arena[n][c][i].mem + GUARD, RBYTES, &m.region_id[n][c][i]))
					die("register");
			for (uint32_t i = 0; i < COUNTERS; i++)
				if (dma_counter_alloc(core, &m.counter_id[n][c][i]))
					die("counter");
			if (dma_injfifo_open(core, 0, &m.fifo[n][c]))
				die("fifo");
			if (c == 0 && dma_handler_register(core, DISPATCH, on_dispatch, NULL))
				die("handler");
		}
	}
	/* every byte of every arena different from its neighbours', so a
	 * transfer that lands anywhere it should not shows */
	for (size_t k = 0; k < sizeof(m.arena); k++)
		(&m.arena[0][0][0].mem[0])[k] = (uint8_t)(k * 131 + (k >> 8) * 7 + 3);
	/* the creator's mapping is not needed: every node has its own */
	emu_shm_detach(&shm);
	m.ready = 1;
}

/* ------------------------------------------------------------ the input */


/* a region id: a real one, one past the wire's 16 bits, or anything */
static uint32_t pick_region(struct reader *r, uint32_t node)
{
	uint32_t sel = (uint32_t)rd(r, 1), c = sel & 1, i = (sel >> 1) & 1;
	uint32_t id = m.region_id[node < NODES ? node : 0][c][i];
	switch ((sel >> 2) % 6) {
	case 0:
	case 1: return id;
	case 2: return id + 65536u * (uint32_t)(1 + rd(r, 1) % 4);
	case 3: return (uint32_t)rd(r, 2);
	case 4: return (uint32_t)rd(r, 4);
	default: return UINT32_MAX;
	}
}

static uint32_t pick_counter(struct reader *r, uint32_t node)
{
	uint32_t sel = (uint32_t)rd(r, 1), c = sel & 1, i = (sel >> 1) & 1;
	uint32_t id = m.counter_id[node < NODES ? node : 0][c][i];
	switch ((sel >> 2) % 6) {
	case 0: return id;
	case 1:
	case 2: return DMA_NO_COUNTER;
	case 3: return id + 65536u;
	case 4: return (uint32_t)rd(r, 2);
	default: return (uint32_t)rd(r, 4);
	}
}

static uint64_t pick_offset(struct reader *r)
{
	switch (rd(r, 1) % 6) {
	case 0:
	case 1: return rd(r, 2) % (RBYTES + 50);
	case 2: return (1ull << 32) - rd(r, 2) % 1024;
	case 3: return UINT64_MAX - rd(r, 2) % 1024;
	case 4: return rd(r, 4);
	default: return rd(r, 8);
	}
}

/* ------------------------------------------------------------ the oracle */

/* The registered region `id` at `node`: its bytes, or NULL. */
static uint8_t *region_at(uint32_t node, uint64_t id)
{
	if (node >= NODES)
		return NULL;
	for (uint32_t c = 0; c < CORES; c++)
		for (uint32_t i = 0; i < REGIONS; i++)
			if (m.region_id[node][c][i] == id)
				return m.arena[node][c][i].mem + GUARD;
	return NULL;
}

static int counter_at(uint32_t node, uint64_t id)
{
	if (id == DMA_NO_COUNTER)
		return 1;
	for (uint32_t c = 0; c < CORES && node < NODES; c++)
		for (uint32_t i = 0; i < COUNTERS; i++)
			if (m.counter_id[node][c][i] == id)
				return 1;
	return 0;
}

static int in_range(uint64_t offset, uint64_t len) { return offset <= RBYTES && len <= RBYTES - offset; }

/* The one range a transfer may write: node, region bytes, offset, length. */
struct allowed {
	uint8_t *base;
	uint64_t offset, len;
};

/* Every byte of every arena is as before, except inside `a`. */
static void check_untouched(const struct allowed *a, const char *what)
{
	for (uint32_t n = 0; n < NODES; n++)
		for (uint32_t c = 0; c < CORES; c++)
			for (uint32_t i = 0; i < REGIONS; i++) {
				const uint8_t *now = m.arena[n][c][i].mem, *was = m.before[n][c][i].mem;
				for (size_t k = 0; k < sizeof(struct arena); k++) {
					const uint8_t *at = now + k;
					if (a && a->base && at >= a->base + a->offset && at < a->base + a->offset + a->len)
						continue;
					if (*at != was[k]) {
						fprintf(stderr, "fuzz-dma: %s: node %u core %u region %u byte %zd changed\n",
							what, n, c, i, (ssize_t)k - GUARD);
						abort();
					}
				}
			}
}

/* Run both engines until neither moves; drain what the cores receive. */
static unsigned settle(uint32_t poster_node, uint32_t poster_core, uint8_t *msg, uint64_t *msg_bytes,
		       uint32_t msg_node, uint32_t msg_core)
{
	unsigned faults = 0;
	for (int round = 0; round < 100000; round++) {
		uint32_t moved = 0;
		for (uint32_t n = 0; n < NODES; n++) {
			moved += emu_engine_step(&m.rt[n]);
			for (uint32_t c = 0; c < CORES; c++) {
				emu_core_t *core = m.rt[n].cores[c];
				struct dma_recv_info info;
				uint8_t buf[TORUS_MAX_PAYLOAD];
				struct dma_fault f;
				int rc;
				while ((rc = dma_recfifo_next(core, &info, buf, sizeof(buf))) == 0) {
					moved++;
					if (msg && n == msg_node && c == msg_core && info.offset + info.len <= SRCMAX) {
						memcpy(msg + info.offset, buf, info.len);
						*msg_bytes += info.len;
					}
				}
				if (rc != -EAGAIN)
					die("dma_recfifo_next failed");
				while (dma_fault_next(core, &f) == 0) {
					moved++;
					faults += n == poster_node && c == poster_core;
				}
			}
		}
		if (!moved)
			return faults;
	}
	die("the engines never settled");
	return 0;
}

static void snapshot(void) { memcpy(m.before, m.arena, sizeof(m.arena)); }

/* What the byte at `at` (inside an arena) held at the snapshot. */
static uint8_t before_byte(const uint8_t *at)
{
	size_t k = (size_t)(at - &m.arena[0][0][0].mem[0]);
	return (&m.before[0][0][0].mem[0])[k];
}

/* Inside `a`, every byte is as before or the source's. */
static void check_partial(const struct allowed *a, const uint8_t *from)
{
	for (uint64_t k = 0; k < a->len; k++) {
		uint8_t now = a->base[a->offset + k];
		if (now != from[k] && now != before_byte(a->base + a->offset + k))
			die("a partly refused transfer wrote bytes that are not its own");
	}
}

static void op_post(struct reader *r, uint32_t node)
{
	uint32_t core = (uint32_t)rd(r, 1) % CORES;
	struct emu_node_rt *rt = &m.rt[node];
	struct dma_desc d;
	uint32_t kind = 1 + (uint32_t)rd(r, 1) % 4, flagsel = (uint32_t)rd(r, 1);
	uint32_t sel = (uint32_t)rd(r, 1);
	uint32_t to = sel % 4 < 2 ? sel % 2 : sel % 4 == 2 ? NODES : (uint32_t)rd(r, 4);
	uint64_t len = rd(r, 2) % SRCMAX;

	for (uint32_t k = 0; k < SRCMAX; k++)
		m.src[k] = (uint8_t)(k * 7 + flagsel + 1);
	switch (kind) {
	/* one field per statement: argument order is the compiler's, and an
	 * input must decode the same under gcc (replay) and clang (libFuzzer) */
	case DMA_PUT: {
		uint32_t region = pick_region(r, to);
		uint64_t off = pick_offset(r);
		uint32_t counter = pick_counter(r, to);
		uint32_t inj = pick_counter(r, node);
		dma_desc_put(&d, to, m.src, len, region, off, counter, inj);
		break;
	}
	case DMA_GET: {
		uint32_t region = pick_region(r, to);
		uint32_t reply = pick_region(r, node);
		uint64_t off = pick_offset(r);
		uint64_t roff = pick_offset(r);
		if (rd(r, 1) % 8 == 0)
			len = rd(r, 8); /* the target's region is the source: any length is checked */
		uint32_t counter = pick_counter(r, node);
		dma_desc_get(&d, to, region, off, len, reply, roff, counter);
		break;
	}
	case DMA_MEMFIFO: {
		uint32_t csel = (uint32_t)rd(r, 1), dsel = (uint32_t)rd(r, 1);
		uint32_t dcore = csel % 4 < 3 ? csel % 3 : (uint32_t)rd(r, 4);
		uint32_t dispatch = dsel % 4 == 0 ? 0 : dsel % 4 == 1 ? DISPATCH : dsel % 4 == 2 ? (uint32_t)rd(r, 1)
													  : (uint32_t)rd(r, 4);
		uint16_t user = (uint16_t)rd(r, 2);
		uint32_t inj = pick_counter(r, node);
		dma_desc_memfifo(&d, to, dcore, dispatch, user, m.src, len, inj);
		break;
	}
	default: {
		uint32_t region = pick_region(r, node);
		uint64_t off = pick_offset(r);
		uint32_t counter = pick_counter(r, node);
		dma_desc_copy(&d, m.src, len, region, off, counter);
		break;
	}
	}
	if (flagsel & 1)
		d.flags = DMA_F_UNCHECKED;
	if (flagsel & 2)
		d.hints = (uint16_t)rd(r, 2);
	if (flagsel & 0x20) {
		/* a message sent in any order, named by a key (2^63 and up refused) */
		d.flags |= DMA_F_ANY_ORDER;
		d.key = rd(r, 8);
	}
	if ((flagsel & 0x1C) == 0x1C)
		d.flags |= (uint32_t)rd(r, 1) << 2; /* unknown flags */

	/* what a correct unit does with it */
	struct allowed a = {0};
	int valid = 0;
	uint64_t msg_bytes = 0;
	uint8_t msg[SRCMAX];
	switch (d.kind) {
	case DMA_PUT:
		a.base = region_at(to, d.region);
		valid = a.base && in_range(d.offset, d.len) && counter_at(to, d.counter);
		a.offset = d.offset;
		a.len = d.len;
		break;
	case DMA_GET: {
		uint8_t *from = region_at(to, d.region);
		a.base = region_at(node, d.reply_region);
		valid = from && a.base && in_range(d.offset, d.len) && in_range(d.reply_offset, d.len) &&
			counter_at(node, d.counter);
		a.offset = d.reply_offset;
		a.len = d.len;
		break;
	}
	case DMA_MEMFIFO:
		valid = to < NODES && d.core < CORES && (d.dispatch == 0 || (d.dispatch == DISPATCH && d.core == 0));
		break;
	default:
		a.base = region_at(node, d.region);
		valid = a.base && in_range(d.offset, d.len) && counter_at(node, d.counter);
		a.offset = d.offset;
		a.len = d.len;
		break;
	}
	/*
	 * A put or a get's reply that runs past the end of a live region, with
	 * a live counter: the destination checks each packet, so the packets
	 * that fit land (never a byte outside the region) and the others are
	 * refused. Those bytes may hold the source's data; nothing else moves.
	 */
	int partial = !valid && a.base && a.offset < RBYTES &&
		      (d.kind == DMA_PUT ? counter_at(to, d.counter)
		       : d.kind == DMA_GET ? region_at(to, d.region) && in_range(d.offset, d.len) &&
					       counter_at(node, d.counter) && d.len <= SRCMAX
					   : 0);
	if (partial)
		a.len = RBYTES - a.offset;
	else if (!valid)
		a.base = NULL;
	/* the data a get must bring: the target region as it was */
	uint8_t expect[SRCMAX];
	if ((valid || partial) && d.kind == DMA_GET)
		memcpy(expect, region_at(to, d.region) + d.offset, d.len);

	snapshot();
	int rc = dma_injfifo_post(m.fifo[node][core], &d, 0);
	for (int tries = 0; rc == -EAGAIN && tries < 3; tries++) {
		settle(node, core, NULL, NULL, 0, 0);
		rc = dma_injfifo_post(m.fifo[node][core], &d, 0);
	}
	if (rc == -EAGAIN)
		die("an injection FIFO stayed full");
	if (rc && valid && d.flags == 0 && dma_hints_ok(rt, d.hints) &&
	    (d.kind == DMA_GET || d.kind == DMA_COPY ? d.inj_counter == DMA_NO_COUNTER : 1) &&
	    counter_at(node, d.inj_counter))
		die("a valid descriptor was refused at post");
	unsigned faults = settle(node, core, valid && d.kind == DMA_MEMFIFO ? msg : NULL, &msg_bytes, to, d.core);
	if (rc) {
		check_untouched(NULL, "a descriptor refused at post");
		if (faults)
			die("a descriptor refused at post also faulted");
		return;
	}
	check_untouched(&a, valid ? "a valid transfer" : "a refused transfer");
	/* a node getting a range of its own region into an overlapping range
	 * of it: like memcpy, what lands is unspecified (packets are copied one
	 * after another) */
	int overlap = d.kind == DMA_GET && to == node && d.region == d.reply_region && d.offset < d.reply_offset + d.len &&
		      d.reply_offset < d.offset + d.len;
	if (partial && !overlap)
		check_partial(&a, d.kind == DMA_GET ? expect : m.src);
	if (!valid) {
		if (!faults) {
			fprintf(stderr, "fuzz-dma: kind %u to node %u region %u offset %llu len %llu counter %u accepted "
					"unchecked, refused nowhere\n",
				d.kind, to, d.region, (unsigned long long)d.offset, (unsigned long long)d.len, d.counter);
			abort();
		}
		return;
	}
	if (faults)
		die("a valid transfer faulted");
	if (overlap)
		return;
	if (d.kind == DMA_MEMFIFO) {
		if (msg_bytes != d.len || (d.len && memcmp(msg, m.src, d.len)))
			die("a memory-FIFO message arrived wrong");
	} else if (d.len && memcmp(a.base + a.offset, d.kind == DMA_GET ? expect : m.src, d.len)) {
		die("a valid transfer's bytes are wrong");
	}
}

/* A packet off the wire, straight to a node's deposit code. */
static void op_packet(struct reader *r, uint32_t node)
{
	struct torus_packet pkt;
	struct torus_side side = {0};
	static const uint8_t kinds[] = {DMA_PKT_MEMFIFO, DMA_PKT_PUT, DMA_PKT_GETREQ, DMA_PKT_FAULT};
	uint32_t ksel = (uint32_t)rd(r, 1), from = 1 - node;

	memset(&pkt, 0, sizeof(pkt));
	pkt.hdr.dest = node;
	pkt.hdr.len = (uint8_t)rd(r, 1);
	pkt.hdr.vc_kind = (uint8_t)((ksel < 224 ? kinds[ksel % 4] : ksel >> 4) << 4 | (rd(r, 1) & 3));
	uint32_t sel = (uint32_t)rd(r, 1);
	if (torus_pkt_kind(&pkt.hdr) == DMA_PKT_PUT && sel % 2) {
		/* a plausible put: a real region and counter, a nearby offset */
		uint32_t off = (uint32_t)(rd(r, 2) % (RBYTES + 16));
		uint32_t reg = pick_region(r, node);
		uint32_t cnt = pick_counter(r, node);
		uint16_t reg16 = (uint16_t)reg, cnt16 = cnt == DMA_NO_COUNTER ? WIRE_NO_COUNTER : (uint16_t)cnt;
		memcpy(&pkt.hdr.sw.bytes[0], &off, 4);
		memcpy(&pkt.hdr.sw.bytes[4], &reg16, 2);
		memcpy(&pkt.hdr.sw.bytes[6], &cnt16, 2);
	} else {
		for (int k = 0; k < 8; k++)
			pkt.hdr.sw.bytes[k] = (uint8_t)rd(r, 1);
	}
	if (torus_pkt_kind(&pkt.hdr) == DMA_PKT_GETREQ && sel % 2) {
		struct dma_getreq q = {0};
		q.region = pick_region(r, node);
		q.reply_region = pick_region(r, from);
		q.offset = pick_offset(r);
		q.reply_offset = pick_offset(r);
		q.len = rd(r, 1) % 4 ? rd(r, 2) % SRCMAX : rd(r, 8);
		q.reply_counter = pick_counter(r, from);
		q.hints = rd(r, 1) % 4 ? 0 : (uint16_t)rd(r, 2);
		memcpy(pkt.payload, &q, sizeof(q));
		if (rd(r, 1) % 4)
			pkt.hdr.len = sizeof(q);
	} else {
		for (size_t k = 0; k < TORUS_MAX_PAYLOAD; k++)
			pkt.payload[k] = (uint8_t)(r->n ? rd(r, 1) : k);
	}
	side.aux = dma_aux(from, (uint32_t)rd(r, 1) % (CORES + 1));

	/* the oracle: what may change */
	struct allowed a = {0};
	uint8_t expect[SRCMAX];
	int partial = 0;
	uint32_t kind = torus_pkt_kind(&pkt.hdr), len = pkt.hdr.len;
	if (kind == DMA_PKT_PUT && len <= TORUS_MAX_PAYLOAD) {
		uint32_t off;
		uint16_t reg, cnt;
		memcpy(&off, &pkt.hdr.sw.bytes[0], 4);
		memcpy(&reg, &pkt.hdr.sw.bytes[4], 2);
		memcpy(&cnt, &pkt.hdr.sw.bytes[6], 2);
		a.base = region_at(node, reg);
		if (a.base && in_range(off, len) && counter_at(node, cnt == WIRE_NO_COUNTER ? DMA_NO_COUNTER : cnt)) {
			a.offset = off;
			a.len = len;
			memcpy(expect, pkt.payload, len);
		} else {
			a.base = NULL;
		}
	} else if (kind == DMA_PKT_GETREQ && len == sizeof(struct dma_getreq)) {
		struct dma_getreq q;
		memcpy(&q, pkt.payload, sizeof(q));
		uint8_t *src = region_at(node, q.region);
		a.base = region_at(from, q.reply_region);
		if (src && a.base && in_range(q.offset, q.len) && counter_at(from, q.reply_counter) &&
		    dma_hints_ok(&m.rt[node], q.hints) && q.reply_offset < RBYTES) {
			/* the reply's packets that fit land (see op_post) */
			a.offset = q.reply_offset;
			a.len = in_range(q.reply_offset, q.len) ? q.len : RBYTES - q.reply_offset;
			partial = a.len != q.len;
			memcpy(expect, src + q.offset, a.len);
		} else {
			a.base = NULL;
		}
	}
	snapshot();
	if (dma_engine_deliver(&m.rt[node], &pkt, &side) != 1) {
		/* a memory-FIFO packet waits for room: the cores drain it */
		emu_engine_publish(&m.rt[node]);
		settle(from, 0, NULL, NULL, 0, 0);
		if (dma_engine_deliver(&m.rt[node], &pkt, &side) != 1)
			die("a packet was never taken");
	}
	emu_engine_publish(&m.rt[node]);
	settle(from, 0, NULL, NULL, 0, 0);
	if (getenv("FUZZ_DMA_TRACE")) {
		uint32_t off;
		uint16_t reg, cnt;
		memcpy(&off, &pkt.hdr.sw.bytes[0], 4);
		memcpy(&reg, &pkt.hdr.sw.bytes[4], 2);
		memcpy(&cnt, &pkt.hdr.sw.bytes[6], 2);
		fprintf(stderr, "packet to node %u kind %u len %u off %u region %u counter %u aux %#x: allowed %s +%llu\n",
			node, kind, len, off, reg, cnt, side.aux, a.base ? "yes" : "no", (unsigned long long)a.offset);
	}
	check_untouched(&a, "a packet off the wire");
	if (partial)
		check_partial(&a, expect);
	else if (a.base && a.len && memcmp(a.base + a.offset, expect, a.len))
		die("a valid packet's bytes are wrong");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = {data, size};
	if (!m.ready)
		setup();
	for (int ops = 0; r.n && ops < 64; ops++) {
		uint32_t op = (uint32_t)rd(&r, 1) % 4;
		if (op < 2)
			op_post(&r, op);
		else
			op_packet(&r, op - 2);
	}
	return 0;
}
