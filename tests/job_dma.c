/*
 * dma-check: whole-job checks of the DMA API, one scenario per run, every
 * core of every node taking part at once. Exit status 0 only if every check
 * of every core held; failures are printed with node and core.
 *
 *   torusrun --torus 2x3 --cores-map 1,2,1,3,2,1 -- dma-check put 0 1 240 241 65536
 *
 * Scenarios: put|get|memfifo|copy SIZES..., many N, bad, full, barrier,
 * waitany, bandwidth BYTES; under --exact faulttime, markwait, leftwait,
 * injorder, program N W R [BREAK].
 *
 * Convention: every core registers its receive buffer first and allocates
 * its reception counter first, so their node-wide ids are
 * core * dma_regions and core * dma_counters, known to every sender.
 */
#include "torus/dma.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *scenario;
static uint64_t sizes[32];
static int nsizes;

#define CHECK(c, cond, ...)                                                                 \
	check_at((c), (cond), __LINE__, __VA_ARGS__)

static int failures;
static int check_at(emu_core_t *c, int cond, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int check_at(emu_core_t *c, int cond, int line, const char *fmt, ...)
{
	if (cond)
		return 1;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "dma-check %s: node %u core %u (line %d): %s\n", scenario, emu_node_rank(c), emu_core_index(c),
		line, msg);
	__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
	return 0;
}

static uint8_t pattern(uint32_t src, uint64_t i) { return (uint8_t)(src * 131u + i * 7u + (i >> 9)); }

static uint32_t region_id(emu_core_t *c, uint32_t core) { return core * emu_params(c)->dma_regions; }
static uint32_t counter_id(emu_core_t *c, uint32_t core) { return core * emu_params(c)->dma_counters; }

/* The core this one sends to: the next global rank. */
static void peer(emu_core_t *c, int step, uint32_t *node, uint32_t *core, uint32_t *global)
{
	uint32_t total = emu_core_total(c);
	*global = (emu_core_global(c) + total + (uint32_t)step) % total;
	emu_core_locate(c, *global, node, core);
}

static int post(emu_core_t *c, dma_injfifo_t *f, const struct dma_desc *d)
{
	int rc = dma_injfifo_post(f, d, DMA_POST_WAIT);
	CHECK(c, rc == 0, "post: %s", dma_strerror(rc));
	return rc;
}

/* ----------------------------------------------------- put / get / copy */

static int run_transfer(emu_core_t *c, int kind)
{
	uint64_t max = 0;
	for (int i = 0; i < nsizes; i++)
		if (sizes[i] > max)
			max = sizes[i];
	uint8_t *rx = malloc(max + 64), *tx = malloc(max + 1);
	uint32_t reg, cnt, inj, txreg;
	dma_injfifo_t *f;
	uint32_t me = emu_core_global(c), to_node, to_core, to_g, from_node, from_core, from_g;
	if (!CHECK(c, rx && tx, "out of memory"))
		return 1;
	peer(c, 1, &to_node, &to_core, &to_g);
	peer(c, -1, &from_node, &from_core, &from_g);
	CHECK(c, dma_mem_register(c, rx, max, &reg) == 0 && reg == region_id(c, emu_core_index(c)), "register rx");
	CHECK(c, dma_counter_alloc(c, &cnt) == 0 && cnt == counter_id(c, emu_core_index(c)), "alloc counter");
	CHECK(c, dma_counter_alloc(c, &inj) == 0, "alloc injection counter");
	CHECK(c, dma_mem_register(c, tx, max + 1, &txreg) == 0, "register tx");
	CHECK(c, dma_injfifo_open(c, 0, &f) == 0, "open fifo");
	for (uint64_t i = 0; i < max; i++)
		tx[i] = pattern(me, i);
	for (int s = 0; s < nsizes; s++) {
		uint64_t m = sizes[s];
		memset(rx, 0xEE, max);
		dma_counter_add(c, cnt, (int64_t)m);
		uint64_t hits0 = 0, hits1 = 0;
		dma_counter_hits(c, cnt, &hits0);
		if (dma_barrier(c))
			return 1;
		struct dma_desc d;
		if (kind == DMA_PUT) {
			dma_counter_add(c, inj, (int64_t)m);
			dma_desc_put(&d, to_node, tx, m, region_id(c, to_core), 0, counter_id(c, to_core), inj);
			post(c, f, &d);
			CHECK(c, dma_counter_wait(c, inj) == 0, "wait injection counter");
		} else if (kind == DMA_GET) {
			/* read the previous core's tx region into my rx: its tx region id
			 * is its second registration */
			dma_desc_get(&d, from_node, region_id(c, from_core) + 1, 0, m, reg, 0, cnt);
			post(c, f, &d);
		} else {
			dma_desc_copy(&d, tx, m, reg, 0, cnt);
			post(c, f, &d);
		}
		torus_vt_t before = emu_core_now(c);
		CHECK(c, dma_counter_wait(c, cnt) == 0, "wait reception counter");
		if (kind == DMA_COPY && m) {
			/* a copy completes len / copy_bw (rounded up) after its post */
			uint64_t bw = emu_params(c)->copy_bw;
			torus_vt_t want = before + (torus_vt_t)(((unsigned __int128)m * 1000000000000ull + bw - 1) / bw);
			CHECK(c, emu_core_now(c) == want, "size %" PRIu64 ": copy done at %" PRIu64 " ps, want %" PRIu64, m,
			      (uint64_t)emu_core_now(c), (uint64_t)want);
		}
		dma_counter_hits(c, cnt, &hits1);
		/* a message reaches zero exactly once (0 bytes: never moves) */
		CHECK(c, hits1 - hits0 == (m ? 1u : 0u), "size %" PRIu64 ": counter hit zero %" PRIu64 " times", m,
		      hits1 - hits0);
		CHECK(c, emu_core_now(c) >= before, "clock went back");
		uint32_t src = kind == DMA_COPY ? me : from_g;
		uint64_t bad = UINT64_MAX;
		for (uint64_t i = 0; i < m && bad == UINT64_MAX; i++)
			if (rx[i] != pattern(src, i))
				bad = i;
		CHECK(c, bad == UINT64_MAX, "size %" PRIu64 ": byte %" PRIu64 " wrong", m, bad);
		CHECK(c, m == max || rx[m] == 0xEE, "size %" PRIu64 ": wrote past the message", m);
		int64_t v;
		dma_counter_get(c, cnt, &v);
		CHECK(c, v == 0, "counter left at %" PRId64, v);
		if (dma_barrier(c))
			return 1;
	}
	free(rx);
	free(tx);
	return 0;
}

/* -------------------------------------------------------------- rebind */

/* dma_mem_rebind: a region keeps its id and moves to another buffer; a
 * peer that knows the id puts into the new buffer, not the old one. */
static int run_rebind(emu_core_t *c)
{
	uint8_t old[512], *buf = malloc(1024), *tx = malloc(1000);
	uint32_t reg, cnt, inj, to_node, to_core, to_g, from_node, from_core, from_g, me = emu_core_global(c);
	dma_injfifo_t *f;
	if (!CHECK(c, buf && tx, "out of memory"))
		return 1;
	peer(c, 1, &to_node, &to_core, &to_g);
	peer(c, -1, &from_node, &from_core, &from_g);
	memset(old, 0xEE, sizeof(old));
	memset(buf, 0xEE, 1024);
	for (uint32_t i = 0; i < 1000; i++)
		tx[i] = pattern(me, i);
	CHECK(c, dma_mem_register(c, old, sizeof(old), &reg) == 0 && reg == region_id(c, emu_core_index(c)), "register");
	CHECK(c, dma_mem_rebind(NULL, reg, buf, 1024) == -EINVAL, "NULL core accepted");
	CHECK(c, dma_mem_rebind(c, reg, NULL, 1024) == -EINVAL, "NULL buffer accepted");
	CHECK(c, dma_mem_rebind(c, reg + 1, buf, 1024) == DMA_ERR_REGION, "unregistered region accepted");
	CHECK(c, dma_mem_rebind(c, reg, buf, 1024) == 0, "rebind");
	CHECK(c, dma_counter_alloc(c, &cnt) == 0 && cnt == counter_id(c, emu_core_index(c)), "alloc counter");
	CHECK(c, dma_counter_alloc(c, &inj) == 0, "alloc injection counter");
	CHECK(c, dma_injfifo_open(c, 0, &f) == 0, "open fifo");
	dma_counter_add(c, cnt, 1000);
	if (dma_barrier(c))
		return 1;
	/* 1000 bytes: past the old buffer's 512, inside the new one */
	struct dma_desc d;
	dma_counter_add(c, inj, 1000);
	dma_desc_put(&d, to_node, tx, 1000, region_id(c, to_core), 0, counter_id(c, to_core), inj);
	post(c, f, &d);
	CHECK(c, dma_counter_wait(c, inj) == 0, "wait injection counter");
	CHECK(c, dma_counter_wait(c, cnt) == 0, "wait reception counter");
	uint32_t bad = UINT32_MAX;
	for (uint32_t i = 0; i < 1024 && bad == UINT32_MAX; i++)
		if (buf[i] != (i < 1000 ? pattern(from_g, i) : 0xEE))
			bad = i;
	CHECK(c, bad == UINT32_MAX, "new buffer: byte %u wrong", bad);
	bad = UINT32_MAX;
	for (uint32_t i = 0; i < sizeof(old) && bad == UINT32_MAX; i++)
		if (old[i] != 0xEE)
			bad = i;
	CHECK(c, bad == UINT32_MAX, "old buffer written at byte %u", bad);
	if (dma_barrier(c))
		return 1;
	CHECK(c, dma_mem_deregister(c, reg) == 0, "deregister");
	CHECK(c, dma_mem_rebind(c, reg, buf, 1024) == DMA_ERR_REGION, "rebind after deregister accepted");
	free(buf);
	free(tx);
	return 0;
}

/* ------------------------------------------------------------- memfifo */

struct assembly {
	uint8_t *buf;
	uint64_t got, len;
	uint32_t src_global;
	int done, bad;
	emu_core_t *c;
};

static int on_packet(emu_core_t *c, const struct dma_recv_info *info, const void *payload, void *arg)
{
	struct assembly *a = arg;
	uint32_t node = info->src_node, core = info->src_core, g;
	(void)c;
	for (g = 0; g < emu_core_total(c); g++) {
		uint32_t n2, c2;
		emu_core_locate(c, g, &n2, &c2);
		if (n2 == node && c2 == core)
			break;
	}
	if (g != a->src_global || info->dispatch != 7 || info->user != 0xBEEF || info->offset != a->got)
		a->bad++;
	memcpy(a->buf + info->offset, payload, info->len);
	a->got += info->len;
	if (info->last) {
		a->done++;
		if (a->got != a->len)
			a->bad++;
	}
	return 0;
}

static int run_memfifo(emu_core_t *c)
{
	uint64_t max = 0;
	for (int i = 0; i < nsizes; i++)
		if (sizes[i] > max)
			max = sizes[i];
	uint8_t *tx = malloc(max + 1);
	struct assembly a = {malloc(max + 1), 0, 0, 0, 0, 0, c};
	uint32_t me = emu_core_global(c), to_node, to_core, to_g, from_node, from_core, inj;
	dma_injfifo_t *f;
	if (!CHECK(c, tx && a.buf, "out of memory") || !CHECK(c, dma_counter_alloc(c, &inj) == 0, "alloc"))
		return 1;
	peer(c, 1, &to_node, &to_core, &to_g);
	peer(c, -1, &from_node, &from_core, &a.src_global);
	CHECK(c, dma_handler_register(c, 7, on_packet, &a) == 0, "register handler");
	CHECK(c, dma_injfifo_open(c, emu_params(c)->inj_fifos - 1, &f) == 0, "open last fifo");
	for (uint64_t i = 0; i < max; i++)
		tx[i] = pattern(me, i);
	for (int s = 0; s < nsizes; s++) {
		uint64_t m = sizes[s];
		a.got = 0;
		a.len = m;
		a.done = 0;
		if (dma_barrier(c))
			return 1;
		struct dma_desc d;
		dma_counter_add(c, inj, (int64_t)m);
		dma_desc_memfifo(&d, to_node, to_core, 7, 0xBEEF, tx, m, inj);
		post(c, f, &d);
		while (!a.done) {
			unsigned got;
			int rc = dma_recfifo_poll(c, 64, &got);
			if (!CHECK(c, rc == 0, "poll: %s", dma_strerror(rc)))
				return 1;
			if (!got && dma_recfifo_wait(c, -1) < 0)
				return 1;
		}
		CHECK(c, a.done == 1 && a.bad == 0, "size %" PRIu64 ": message garbled (%d bad)", m, a.bad);
		uint64_t bad = UINT64_MAX;
		for (uint64_t i = 0; i < m && bad == UINT64_MAX; i++)
			if (a.buf[i] != pattern(a.src_global, i))
				bad = i;
		CHECK(c, bad == UINT64_MAX, "size %" PRIu64 ": byte %" PRIu64 " wrong", m, bad);
	}
	/* polled, without a handler (dispatch 0) */
	if (dma_barrier(c))
		return 1;
	struct dma_desc d;
	dma_counter_add(c, inj, 100);
	dma_desc_memfifo(&d, to_node, to_core, 0, 42, tx, 100, inj);
	post(c, f, &d);
	struct dma_recv_info info;
	uint8_t buf[TORUS_MAX_PAYLOAD];
	int rc;
	while ((rc = dma_recfifo_next(c, &info, buf, sizeof(buf))) == -EAGAIN)
		if (dma_recfifo_wait(c, -1) < 0)
			return 1;
	CHECK(c, rc == 0 && info.len == 100 && info.user == 42 && info.last && info.dispatch == 0 &&
			 info.src_node == from_node && info.src_core == from_core && buf[99] == pattern(a.src_global, 99),
	      "polled packet wrong");
	CHECK(c, dma_counter_wait(c, inj) == 0, "injection wait");
	free(tx);
	free(a.buf);
	return 0;
}

/* ------------------------------------------------ sent in any order */

/*
 * Every core sends its next core ANY_N messages sent in any order, named
 * by keys, of 1 to 3 packets; the receiver files them as they come and
 * takes them out last first, expecting each (dma_recv_expect) before it
 * waits for it. Then the calls that must be refused.
 */
#define ANY_N 24u
struct any_box {
	uint8_t *buf;          /* ANY_N slots of 3 payloads */
	uint32_t got[ANY_N];   /* packets filed per message */
	uint32_t pay, started; /* (without exact time: messages begun, in order) */
	int bad;
};

static uint64_t any_key(uint32_t src, uint32_t i) { return ((uint64_t)src << 40 | (i * 7919u + 3u)) & ~(1ull << 63); }
static uint64_t any_len(uint32_t i, uint32_t pay) { return i % 3 == 0 ? 1 : i % 3 == 1 ? pay : 2 * (uint64_t)pay + 17; }

static int on_any(emu_core_t *c, const struct dma_recv_info *info, const void *payload, void *arg)
{
	struct any_box *b = arg;
	uint32_t src = 0, i;
	for (uint32_t g = 0; g < emu_core_total(c); g++) {
		uint32_t n2, c2;
		emu_core_locate(c, g, &n2, &c2);
		if (n2 == info->src_node && c2 == info->src_core)
			src = g;
	}
	/* keys travel under exact time; without it the messages come in order */
	if (emu_exact(c)) {
		for (i = 0; i < ANY_N && any_key(src, i) != info->key; i++)
			;
	} else {
		if (info->index == 0)
			b->started++;
		i = info->key || !b->started ? ANY_N : b->started - 1;
	}
	if (i == ANY_N || info->dispatch != 9 || info->index > 2 || info->offset != (uint64_t)info->index * b->pay) {
		b->bad++;
		return 0;
	}
	memcpy(b->buf + ((size_t)i * 3 + info->index) * b->pay, payload, info->len);
	b->got[i]++;
	return 0;
}

static int run_anyorder(emu_core_t *c)
{
	uint32_t pay = torus_params_payload(emu_params(c)), me = emu_core_global(c);
	uint32_t to_node, to_core, to_g, from_node, from_core, from_g, inj;
	struct any_box b = {calloc((size_t)ANY_N * 3, pay), {0}, pay, 0, 0};
	uint8_t *tx = malloc((size_t)ANY_N * 3 * pay);
	dma_injfifo_t *f;
	if (!CHECK(c, b.buf && tx, "out of memory") || !CHECK(c, dma_counter_alloc(c, &inj) == 0, "alloc") ||
	    !CHECK(c, dma_handler_register(c, 9, on_any, &b) == 0, "register") ||
	    !CHECK(c, dma_injfifo_open(c, 0, &f) == 0, "open"))
		return 1;
	peer(c, 1, &to_node, &to_core, &to_g);
	peer(c, -1, &from_node, &from_core, &from_g);
	for (size_t i = 0; i < (size_t)ANY_N * 3 * pay; i++)
		tx[i] = pattern(me, i);
	if (dma_barrier(c))
		return 1;
	for (uint32_t i = 0; i < ANY_N; i++) {
		struct dma_desc d;
		uint64_t len = any_len(i, pay);
		dma_counter_add(c, inj, (int64_t)len);
		dma_desc_memfifo(&d, to_node, to_core, 9, 0, tx + (size_t)i * 3 * pay, len, inj);
		d.flags |= DMA_F_ANY_ORDER;
		d.key = any_key(me, i);
		/* a full FIFO: file what came meanwhile (the others post too) */
		int rc;
		while ((rc = dma_injfifo_post(f, &d, 0)) == -EAGAIN) {
			unsigned got;
			if ((rc = dma_recfifo_poll_any_order(c, 16, &got)) < 0 ||
			    (!got && (rc = dma_recfifo_wait_any_order(c, 1)) < 0 && rc != -ETIMEDOUT))
				break;
		}
		if (!CHECK(c, rc == 0, "post %u: %s", i, dma_strerror(rc)))
			return 1;
	}
	for (uint32_t k = ANY_N; k-- > 0;) {
		uint32_t np = (uint32_t)((any_len(k, pay) + pay - 1) / pay);
		for (uint32_t p = 0; p < np; p++)
			if (!CHECK(c, dma_recv_expect(c, from_node, any_key(from_g, k), p) == 0, "expect %u.%u", k, p))
				return 1;
		while (b.got[k] < np) {
			unsigned got;
			int rc = dma_recfifo_poll_any_order(c, 4, &got);
			if (!CHECK(c, rc == 0, "poll: %s", dma_strerror(rc)))
				return 1;
			if (!got && (rc = dma_recfifo_wait_any_order(c, -1)) < 0)
				return 1;
		}
		uint64_t len = any_len(k, pay), bad = UINT64_MAX;
		for (uint64_t j = 0; j < len && bad == UINT64_MAX; j++)
			if (b.buf[(size_t)k * 3 * pay + j] != pattern(from_g, (uint64_t)k * 3 * pay + j))
				bad = j;
		CHECK(c, bad == UINT64_MAX && b.got[k] == np, "message %u: byte %" PRIu64 " wrong", k, bad);
	}
	CHECK(c, b.bad == 0, "%d packets not as sent", b.bad);
	CHECK(c, dma_counter_wait(c, inj) == 0, "injection wait");
	/* what is refused: no dispatch id, a key of 2^63 or more, a put, an
	 * expected message from a node that does not exist */
	struct dma_desc d;
	dma_desc_memfifo(&d, to_node, to_core, 0, 0, tx, 1, DMA_NO_COUNTER);
	d.flags |= DMA_F_ANY_ORDER;
	CHECK(c, dma_injfifo_post(f, &d, 0) == -EINVAL, "any order without a handler accepted");
	dma_desc_memfifo(&d, to_node, to_core, 9, 0, tx, 1, DMA_NO_COUNTER);
	d.flags |= DMA_F_ANY_ORDER;
	d.key = 1ull << 63;
	CHECK(c, dma_injfifo_post(f, &d, 0) == -EINVAL, "a key of 2^63 accepted");
	dma_desc_put(&d, to_node, tx, 1, region_id(c, to_core), 0, DMA_NO_COUNTER, DMA_NO_COUNTER);
	d.flags |= DMA_F_ANY_ORDER;
	CHECK(c, dma_injfifo_post(f, &d, 0) == -EINVAL, "a put sent in any order accepted");
	CHECK(c, dma_recv_expect(c, emu_node_count(c), 1, 0) == -EINVAL, "a message from no node expected");
	CHECK(c, dma_recv_expect(c, 0, 1ull << 63, 0) == -EINVAL, "a key of 2^63 expected");
	CHECK(c, dma_recv_expect(NULL, 0, 1, 0) == -EINVAL, "no core");
	unsigned got;
	CHECK(c, dma_recfifo_poll_any_order(c, 0, &got) == -EINVAL, "poll of none");
	free(tx);
	free(b.buf);
	return 0;
}

/* ------------------------------------------------- many outstanding */

static int run_many(emu_core_t *c)
{
	uint64_t n = nsizes ? sizes[0] : 4000, chunk = 64;
	uint8_t *rx = calloc(n, chunk), *tx = malloc(n * chunk);
	uint32_t reg, cnt, inj, to_node, to_core, to_g, from_node, from_core, from_g;
	dma_injfifo_t *f[2];
	if (!CHECK(c, rx && tx, "out of memory"))
		return 1;
	peer(c, 1, &to_node, &to_core, &to_g);
	peer(c, -1, &from_node, &from_core, &from_g);
	dma_mem_register(c, rx, n * chunk, &reg);
	dma_counter_alloc(c, &cnt);
	dma_counter_alloc(c, &inj);
	dma_injfifo_open(c, 0, &f[0]);
	dma_injfifo_open(c, emu_params(c)->inj_fifos - 1, &f[1]);
	for (uint64_t i = 0; i < n * chunk; i++)
		tx[i] = pattern(emu_core_global(c), i);
	dma_counter_add(c, cnt, (int64_t)(n * chunk));
	dma_counter_add(c, inj, (int64_t)(n * chunk));
	if (dma_barrier(c))
		return 1;
	/* thousands of descriptors in flight from every core at once, in
	 * reverse order over two FIFOs */
	uint64_t eagain = 0;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t i = n - 1 - k;
		struct dma_desc d;
		dma_desc_put(&d, to_node, tx + i * chunk, chunk, region_id(c, to_core), i * chunk, counter_id(c, to_core), inj);
		int rc;
		while ((rc = dma_injfifo_post(f[k % 2], &d, 0)) == -EAGAIN) {
			eagain++;
			dma_injfifo_post(f[k % 2], &d, DMA_POST_WAIT);
			rc = 0;
			break;
		}
		CHECK(c, rc == 0, "post %" PRIu64 ": %s", k, dma_strerror(rc));
	}
	CHECK(c, dma_counter_wait(c, inj) == 0 && dma_counter_wait(c, cnt) == 0, "waits");
	uint64_t hits;
	dma_counter_hits(c, cnt, &hits);
	CHECK(c, hits == 1, "reception counter hit zero %" PRIu64 " times", hits);
	uint64_t bad = UINT64_MAX;
	for (uint64_t i = 0; i < n * chunk && bad == UINT64_MAX; i++)
		if (rx[i] != pattern(from_g, i))
			bad = i;
	CHECK(c, bad == UINT64_MAX, "byte %" PRIu64 " wrong", bad);
	uint32_t pend0 = 1, pend1 = 1;
	CHECK(c, dma_injfifo_pending(f[0], &pend0) == 0 && dma_injfifo_pending(f[1], &pend1) == 0 && !pend0 && !pend1,
	      "FIFOs not empty");
	if (emu_core_global(c) == 0)
		printf("many: %" PRIu64 " descriptors per core, %" PRIu64 " full-FIFO retries on core 0\n", n, eagain);
	free(rx);
	free(tx);
	return 0;
}

/* ------------------------------------------------------- bad descriptors */

static int run_bad(emu_core_t *c)
{
	uint8_t buf[512];
	uint8_t guard[64 + 256 + 64];
	uint32_t reg, cnt, to_node, to_core, to_g;
	dma_injfifo_t *f;
	struct dma_desc d;
	peer(c, 1, &to_node, &to_core, &to_g);
	memset(guard, 0x5A, sizeof(guard));
	/* the region is the middle 256 bytes; the guards around it must survive */
	CHECK(c, dma_mem_register(c, guard + 64, 256, &reg) == 0, "register");
	CHECK(c, dma_counter_alloc(c, &cnt) == 0, "alloc");
	CHECK(c, dma_injfifo_open(c, 0, &f) == 0, "open");
	CHECK(c, dma_injfifo_open(c, 99, &f) == DMA_ERR_FIFO, "fifo 99 accepted");
	CHECK(c, dma_injfifo_open(c, 0, &f) == 0 && dma_injfifo_open(c, 0, NULL) == -EINVAL, "NULL out accepted");
	if (dma_barrier(c))
		return 1;
	uint32_t rr = region_id(c, to_core), rc_ = counter_id(c, to_core);
	struct {
		const char *what;
		int want;
	} cases[] = {
		{"unknown region", DMA_ERR_REGION}, {"offset past the end", DMA_ERR_RANGE},
		{"length past the end", DMA_ERR_RANGE}, {"bad destination node", DMA_ERR_DEST},
		{"unknown remote counter", DMA_ERR_COUNTER}, {"unknown injection counter", DMA_ERR_COUNTER},
		{"unregistered handler", DMA_ERR_HANDLER}, {"bad memfifo core", DMA_ERR_DEST},
		{"get from unknown region", DMA_ERR_REGION}, {"get into short local region", DMA_ERR_RANGE},
		{"copy out of range", DMA_ERR_RANGE}, {"NULL source", -EINVAL}, {"bad hints", -EINVAL},
		/* fields the wire cannot carry are refused even unchecked, never
		 * truncated onto another region, counter or offset */
		{"unchecked region id past 16 bits", DMA_ERR_REGION},
		{"unchecked counter id past 16 bits", DMA_ERR_COUNTER},
		{"offset + length wrapping past 2^64", DMA_ERR_RANGE},
		{"unchecked offset + length wrapping past 2^64", DMA_ERR_RANGE},
		{"unchecked get reply region past 16 bits", DMA_ERR_REGION},
		{"unchecked get reply offset past 32 bits", DMA_ERR_RANGE},
		{"unchecked empty put at offset 2^32", DMA_ERR_RANGE},
		/* the first core the destination lacks (uneven core maps: this
		 * node may have it; each process remembers where a destination's
		 * tables are, by the destination's own cores) */
		{"memfifo to the destination's core count", DMA_ERR_DEST},
		{"put into a region of the destination's core count", DMA_ERR_REGION},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		switch (i) {
		case 0: dma_desc_put(&d, to_node, buf, 16, rr + 5, 0, rc_, DMA_NO_COUNTER); break;
		case 1: dma_desc_put(&d, to_node, buf, 16, rr, 300, rc_, DMA_NO_COUNTER); break;
		case 2: dma_desc_put(&d, to_node, buf, 257, rr, 0, rc_, DMA_NO_COUNTER); break;
		case 3: dma_desc_put(&d, emu_node_count(c) + 3, buf, 16, rr, 0, rc_, DMA_NO_COUNTER); break;
		case 4: dma_desc_put(&d, to_node, buf, 16, rr, 0, rc_ + 7, DMA_NO_COUNTER); break;
		case 5: dma_desc_put(&d, to_node, buf, 16, rr, 0, rc_, cnt + 9); break;
		case 6: dma_desc_memfifo(&d, to_node, to_core, 200, 0, buf, 16, DMA_NO_COUNTER); break;
		case 7: dma_desc_memfifo(&d, to_node, 77, 0, 0, buf, 16, DMA_NO_COUNTER); break;
		case 8: dma_desc_get(&d, to_node, rr + 3, 0, 16, reg, 0, cnt); break;
		case 9: dma_desc_get(&d, to_node, rr, 0, 256, reg, 100, cnt); break;
		case 10: dma_desc_copy(&d, buf, 300, reg, 0, cnt); break;
		case 11: dma_desc_put(&d, to_node, NULL, 16, rr, 0, rc_, DMA_NO_COUNTER); break;
		case 12:
			dma_desc_put(&d, to_node, buf, 16, rr, 0, rc_, DMA_NO_COUNTER);
			d.hints = 0xFFFF;
			break;
		case 13: dma_desc_put(&d, to_node, buf, 16, rr + 65536, 0, rc_, DMA_NO_COUNTER); break;
		case 14: dma_desc_put(&d, to_node, buf, 16, rr, 0, rc_ + 65536, DMA_NO_COUNTER); break;
		case 15:
		case 16: dma_desc_put(&d, to_node, buf, 480, rr, UINT64_MAX - 239, rc_, DMA_NO_COUNTER); break;
		case 17: dma_desc_get(&d, to_node, rr, 0, 16, reg + 65536, 0, cnt); break;
		case 18: dma_desc_get(&d, to_node, rr, 0, 16, reg, (1ull << 32) - 8, cnt); break;
		case 19: dma_desc_put(&d, to_node, NULL, 0, rr, 1ull << 32, rc_, DMA_NO_COUNTER); break;
		case 20: dma_desc_memfifo(&d, to_node, emu_cores_of(c, to_node), 0, 0, buf, 16, DMA_NO_COUNTER); break;
		case 21:
			dma_desc_put(&d, to_node, buf, 16, region_id(c, emu_cores_of(c, to_node)), 0, rc_, DMA_NO_COUNTER);
			break;
		}
		if (i == 13 || i == 14 || (i >= 16 && i <= 19))
			d.flags = DMA_F_UNCHECKED;
		int rc = dma_injfifo_post(f, &d, 0);
		CHECK(c, rc == cases[i].want, "%s: got %d (%s), want %d", cases[i].what, rc, dma_strerror(rc), cases[i].want);
	}
	CHECK(c, dma_injfifo_post(NULL, &d, 0) == -EINVAL && dma_injfifo_post(f, NULL, 0) == -EINVAL,
	      "NULL arguments accepted");
	CHECK(c, dma_counter_add(c, 4000000, 1) == DMA_ERR_COUNTER && dma_counter_wait(c, cnt + 11) == DMA_ERR_COUNTER,
	      "unknown counter accepted");
	CHECK(c, dma_handler_register(c, 0, NULL, NULL) == -EINVAL && dma_handler_register(c, 256, NULL, NULL) == -EINVAL,
	      "bad dispatch id accepted");
	/* the destination checks too: unchecked descriptors past the region end
	 * are refused there and reported back to this core */
	memset(buf, 0xA5, sizeof(buf));
	dma_desc_put(&d, to_node, buf, 200, rr, 200, rc_, DMA_NO_COUNTER);
	d.flags = DMA_F_UNCHECKED;
	CHECK(c, dma_injfifo_post(f, &d, DMA_POST_WAIT) == 0, "unchecked post refused");
	dma_desc_put(&d, to_node, buf, 16, rr + 6, 0, DMA_NO_COUNTER, DMA_NO_COUNTER);
	d.flags = DMA_F_UNCHECKED;
	CHECK(c, dma_injfifo_post(f, &d, DMA_POST_WAIT) == 0, "unchecked post refused");
	/* a live region but a counter the destination never allocated: refused
	 * whole (nothing written that nobody would count) */
	dma_desc_put(&d, to_node, buf, 16, rr, 0, rc_ + 7, DMA_NO_COUNTER);
	d.flags = DMA_F_UNCHECKED;
	CHECK(c, dma_injfifo_post(f, &d, DMA_POST_WAIT) == 0, "unchecked post refused");
	struct dma_fault ft;
	int range = 0, region = 0, counter = 0;
	for (int k = 0; k < 3; k++) {
		int fw_ = dma_fault_wait(c, &ft, 60000);
		if (!CHECK(c, fw_ == 0, "no fault reported: %d", fw_))
			break;
		range += ft.error == DMA_ERR_RANGE && ft.node == to_node;
		region += ft.error == DMA_ERR_REGION && ft.node == to_node;
		counter += ft.error == DMA_ERR_COUNTER && ft.node == to_node;
	}
	CHECK(c, range == 1 && region == 1 && counter == 1, "faults: %d range, %d region, %d counter", range, region,
	      counter);
	CHECK(c, dma_fault_next(c, &ft) == -EAGAIN, "an extra fault: %d from node %u", ft.error, ft.node);
	/* and waiting for one that never comes times out */
	CHECK(c, dma_fault_wait(c, &ft, 1) == -ETIMEDOUT, "a fault wait did not time out");
	if (dma_barrier(c))
		return 1;
	/* nothing was written anywhere near my region by my predecessor */
	int intact = 1;
	for (size_t i = 0; i < sizeof(guard); i++)
		intact &= guard[i] == 0x5A;
	CHECK(c, intact, "memory around the region was written");
	return 0;
}

/* ------------------------------------------------------ back-pressure */

static int run_full(emu_core_t *c)
{
	/* one big put keeps the FIFO's head busy; with inj_slots=2 the FIFO
	 * then fills. A full FIFO is the host's matter: the post waits for
	 * room in wall clock, with or without DMA_POST_WAIT, and each post
	 * costs the core inj_overhead, however deep the ring */
	uint64_t big = 8u << 20;
	uint8_t *tx = malloc(big), *rx = malloc(big);
	uint32_t reg, cnt, inj, to_node, to_core, to_g;
	dma_injfifo_t *f;
	if (!CHECK(c, tx && rx, "out of memory"))
		return 1;
	memset(tx, 1, big);
	peer(c, 1, &to_node, &to_core, &to_g);
	dma_mem_register(c, rx, big, &reg);
	dma_counter_alloc(c, &cnt);
	dma_counter_alloc(c, &inj);
	dma_injfifo_open(c, 0, &f);
	dma_counter_add(c, cnt, (int64_t)(big + 3 * 64));
	dma_counter_add(c, inj, (int64_t)(big + 3 * 64));
	if (dma_barrier(c))
		return 1;
	struct dma_desc d;
	torus_vt_t t0 = emu_core_now(c), ov = emu_params(c)->inj_overhead_ps;
	dma_desc_put(&d, to_node, tx, big, region_id(c, to_core), 0, counter_id(c, to_core), inj);
	int rc = dma_injfifo_post(f, &d, 0);
	CHECK(c, rc == 0, "big post: %s", dma_strerror(rc));
	dma_desc_put(&d, to_node, tx, 64, region_id(c, to_core), 0, counter_id(c, to_core), inj);
	for (int posted = 0; posted < 3; posted++) {
		int r2 = dma_injfifo_post(f, &d, posted == 1 ? DMA_POST_WAIT : 0);
		CHECK(c, r2 == 0, "post %d: %s", posted, dma_strerror(r2));
	}
	CHECK(c, emu_core_now(c) == t0 + 4 * ov, "four posts took %" PRIu64 " ps of core time, want %" PRIu64,
	      (uint64_t)(emu_core_now(c) - t0), (uint64_t)(4 * ov));
	/* the source may be freed only once the injection counter is zero */
	CHECK(c, dma_counter_wait(c, cnt) == 0 && dma_counter_wait(c, inj) == 0, "wait");
	free(tx);
	free(rx);
	return 0;
}

/* ----------------------------------------------------------- barrier */

static int run_barrier(emu_core_t *c)
{
	uint32_t me = emu_core_global(c), total = emu_core_total(c);
	torus_vt_t lat = emu_params(c)->barrier_latency_ps;
	for (int round = 0; round < 3; round++) {
		torus_vt_t t0 = emu_core_now(c);
		/* arrive at different virtual times; the latest is core total-1 */
		emu_core_compute(c, (torus_vt_t)(me + 1) * 1000 * (round + 1));
		if (dma_barrier(c))
			return 1;
		torus_vt_t want = t0 + (torus_vt_t)total * 1000 * (round + 1) + lat;
		CHECK(c, emu_core_now(c) == want, "round %d: left at %" PRIu64 " ps, want %" PRIu64, round,
		      (uint64_t)emu_core_now(c), (uint64_t)want);
	}
	/* team of even-ranked cores: they meet each other, not the odd ones */
	uint32_t members[4096], n = 0;
	for (uint32_t g = 0; g < total && n < 4096; g += 2)
		members[n++] = g;
	if (me % 2 == 0) {
		torus_vt_t t0 = emu_core_now(c);
		emu_core_compute(c, me * 10);
		/* the same team listed in another order is the same team */
		uint32_t reversed[4096];
		for (uint32_t i = 0; i < n; i++)
			reversed[i] = members[n - 1 - i];
		CHECK(c, dma_barrier_team(c, me % 4 ? reversed : members, n) == 0, "team barrier");
		CHECK(c, emu_core_now(c) == t0 + members[n - 1] * 10 + lat, "team barrier time %" PRIu64,
		      (uint64_t)emu_core_now(c));
	} else {
		CHECK(c, dma_barrier_team(c, members, n) == -EINVAL, "non-member accepted");
	}
	CHECK(c, dma_barrier_team(c, NULL, 3) == -EINVAL, "NULL team accepted");
	return dma_barrier(c);
}

/* ----------------------------------------------------------- wait any */

static int run_waitany(emu_core_t *c)
{
	uint32_t k[3];
	size_t which = 99;
	for (int i = 0; i < 3; i++)
		dma_counter_alloc(c, &k[i]);
	dma_counter_add(c, k[0], 10);
	dma_counter_add(c, k[2], 10);
	/* k[1] is zero: wait-any returns it at once */
	CHECK(c, dma_counter_wait_any(c, k, 3, &which) == 0 && which == 1, "wait_any picked %zu", which);
	/* a local copy completes k[2] */
	uint8_t src[10] = {1, 2, 3}, dst[10];
	uint32_t reg;
	dma_injfifo_t *f;
	dma_mem_register(c, dst, sizeof(dst), &reg);
	dma_injfifo_open(c, 0, &f);
	struct dma_desc d;
	dma_desc_copy(&d, src, 10, reg, 0, k[2]);
	post(c, f, &d);
	uint32_t two[2] = {k[0], k[2]};
	CHECK(c, dma_counter_wait_any(c, two, 2, &which) == 0 && which == 1 && dst[2] == 3, "wait_any after copy");
	int z0 = -1, z2 = -1;
	CHECK(c, dma_counter_test(c, k[0], &z0) == 0 && dma_counter_test(c, k[2], &z2) == 0 && z0 == 0 && z2 == 1,
	      "test");

	/* the reception FIFO or a counter, whichever first: a zero counter
	 * at once; a copy's counter at the copy's time, the same as
	 * dma_counter_wait's */
	int zero = -1;
	CHECK(c, dma_recfifo_wait_counter(c, k[1], -1, &zero) == 0 && zero == 1, "fifo or zero counter: %d", zero);
	torus_vt_t took[2];
	for (int i = 0; i < 2; i++) {
		dma_counter_add(c, k[2], 10);
		torus_vt_t t0 = emu_core_now(c);
		post(c, f, &d);
		zero = -1;
		int rc = i ? dma_recfifo_wait_counter(c, k[2], -1, &zero) : dma_counter_wait(c, k[2]);
		took[i] = emu_core_now(c) - t0;
		CHECK(c, rc == 0 && (i == 0 || zero == 1), "fifo or copy: %s, zero %d", dma_strerror(rc), zero);
	}
	CHECK(c, took[0] == took[1], "a copy took %" PRIu64 " ps by its counter, %" PRIu64 " by the fifo-or-counter wait",
	      took[0], took[1]);
	/* nothing arrives and the counter stays: the timeout (virtual under --exact) */
	CHECK(c, dma_recfifo_wait_counter(c, k[0], 1, &zero) == -ETIMEDOUT && zero == 0, "fifo or counter timeout");
	/* a message arrives first; k[0] never completes (the barrier: no
	 * message came before, to the waits above) */
	if (dma_barrier(c))
		return 1;
	uint32_t to_node, to_core, to_g, inj;
	uint8_t msg[64] = {9}, buf[TORUS_MAX_PAYLOAD];
	peer(c, 1, &to_node, &to_core, &to_g);
	dma_counter_alloc(c, &inj);
	dma_counter_add(c, inj, sizeof(msg));
	dma_desc_memfifo(&d, to_node, to_core, 0, 77, msg, sizeof(msg), inj);
	post(c, f, &d);
	zero = -1;
	CHECK(c, dma_recfifo_wait_counter(c, k[0], -1, &zero) == 0 && zero == 0, "fifo or counter: the fifo (%d)", zero);
	struct dma_recv_info info;
	int rc = dma_recfifo_next(c, &info, buf, sizeof(buf));
	CHECK(c, rc == 0 && info.user == 77 && info.len == sizeof(msg) && buf[0] == 9, "fifo or counter: the message");
	CHECK(c, dma_counter_wait(c, inj) == 0, "injection wait");
	CHECK(c, dma_recfifo_wait_counter(c, 1u << 30, -1, &zero) == DMA_ERR_COUNTER &&
			 dma_recfifo_wait_counter(NULL, k[0], -1, &zero) == -EINVAL,
	      "fifo or counter: bad arguments");
	return 0;
}

/* --------------------------------------------------------- bandwidth */

static int run_bandwidth(emu_core_t *c)
{
	/* node 0 core 0 puts m bytes to node 1 core 0 over one link */
	uint64_t m = nsizes ? sizes[0] : (16u << 20);
	if (emu_core_index(c) != 0 || emu_node_rank(c) > 1)
		return dma_barrier(c) || dma_barrier(c);
	uint8_t *buf = malloc(m);
	uint32_t reg, cnt, inj;
	dma_injfifo_t *f;
	if (!CHECK(c, buf != NULL, "out of memory"))
		return 1;
	dma_mem_register(c, buf, m, &reg);
	dma_counter_alloc(c, &cnt);
	dma_counter_alloc(c, &inj);
	dma_injfifo_open(c, 0, &f);
	if (emu_node_rank(c) == 1)
		dma_counter_add(c, cnt, (int64_t)m);
	if (dma_barrier(c))
		return 1;
	torus_vt_t t0 = emu_core_now(c);
	if (emu_node_rank(c) == 0) {
		struct dma_desc d;
		dma_counter_add(c, inj, (int64_t)m);
		dma_desc_put(&d, 1, buf, m, reg, 0, cnt, inj);
		d.hints = torus_hint_set(0, 0, TORUS_HINT_PLUS);
		post(c, f, &d);
		CHECK(c, dma_counter_wait(c, inj) == 0, "injection wait");
	} else {
		dma_counter_wait(c, cnt);
		const struct torus_params *p = emu_params(c);
		double model = (double)p->link_bw * torus_params_payload(p) / torus_wire_bytes(p, torus_params_payload(p));
		/* the descriptor was ready at t0 (same clock after the barrier) plus the injection overhead */
		double secs = (double)(emu_core_now(c) - t0 - p->inj_overhead_ps) * 1e-12;
		double bw = (double)m / secs;
		printf("bandwidth: %" PRIu64 " bytes in %.3f us: %.3f MB/s, model payload rate %.3f MB/s, ratio %.5f\n", m,
		       secs * 1e6, bw / 1e6, model / 1e6, bw / model);
		CHECK(c, bw / model > 0.999 && bw / model < 1.001, "bandwidth %.6f of the model", bw / model);
	}
	free(buf);
	return dma_barrier(c);
}

/*
 * --exact: when a fault reaches its core. Global core 0 puts 200 bytes to
 * the core `hops` ahead, first into its region (the receiver's counter
 * says when they were deposited), then past the region's end, unchecked:
 * the report must come back exactly hop_latency per hop after that deposit.
 */
static int run_faulttime(emu_core_t *c)
{
	if (!CHECK(c, emu_exact(c), "faulttime needs torusrun --exact"))
		return 1;
	uint32_t step = nsizes ? (uint32_t)sizes[0] : 1, total = emu_core_total(c), me = emu_core_global(c);
	uint32_t to_node, to_core, to_g, reg, cnt, inj, *all = malloc(total * sizeof(uint32_t));
	uint8_t buf[256] = {1};
	dma_injfifo_t *f;
	if (!CHECK(c, all != NULL, "out of memory"))
		return 1;
	for (uint32_t i = 0; i < total; i++)
		all[i] = i;
	emu_core_locate(c, step % total, &to_node, &to_core);
	to_g = step % total;
	CHECK(c, dma_mem_register(c, buf, sizeof(buf), &reg) == 0 && dma_counter_alloc(c, &cnt) == 0 &&
			 dma_counter_alloc(c, &inj) == 0 && dma_injfifo_open(c, 0, &f) == 0,
	      "set up");
	if (me == to_g)
		dma_counter_add(c, cnt, 200);
	if (dma_barrier(c))
		return 1;
	torus_vt_t t0 = emu_core_now(c);
	uint32_t deposit = 0;
	struct dma_desc d;
	if (me == 0) {
		dma_counter_add(c, inj, 200);
		dma_desc_put(&d, to_node, buf, 200, region_id(c, to_core), 0, counter_id(c, to_core), inj);
		post(c, f, &d);
		CHECK(c, dma_counter_wait(c, inj) == 0, "injection wait");
	}
	if (me == to_g) {
		CHECK(c, dma_counter_wait(c, cnt) == 0, "the good put");
		deposit = (uint32_t)(emu_core_now(c) - t0);
	}
	/* every core learns when it was deposited, relative to the barrier */
	CHECK(c, dma_barrier_team_max(c, all, total, deposit, &deposit) == 0 && deposit > 0, "the deposit time");
	if (dma_barrier(c))
		return 1;
	t0 = emu_core_now(c);
	if (me == 0) {
		dma_desc_put(&d, to_node, buf, 200, region_id(c, to_core), 200, counter_id(c, to_core), DMA_NO_COUNTER);
		d.flags = DMA_F_UNCHECKED;
		post(c, f, &d);
		struct dma_fault ft;
		int rc = dma_fault_wait(c, &ft, -1);
		torus_vt_t took = emu_core_now(c) - t0,
			   want = deposit + (torus_vt_t)torus_hops(emu_shape(c), emu_node_rank(c), to_node) *
						emu_params(c)->hop_latency_ps;
		CHECK(c, rc == 0 && ft.error == DMA_ERR_RANGE && ft.node == to_node && ft.offset == 200 && ft.len == 200,
		      "the fault: %d, error %d from node %u, offset %" PRIu64 " len %u", rc, ft.error, ft.node, ft.offset,
		      ft.len);
		CHECK(c, took == want, "the fault came %" PRIu64 " ps after the post, not %" PRIu64 " (deposit %u ps)",
		      took, want, deposit);
		printf("faulttime: %u hops, deposited after %.3f us, fault after %.3f us\n",
		       torus_hops(emu_shape(c), emu_node_rank(c), to_node), deposit * 1e-6, took * 1e-6);
	}
	free(all);
	return dma_barrier(c);
}

/*
 * --exact: a watermark crossed after the core's clock but before it asks
 * (the timekeeper may have simulated up to a lookahead past the clock).
 * Global core 1 puts 200 bytes to core 0 twice; the first time tells when
 * they land (d after the barrier). The second time core 0 watches its
 * counter, moves its clock to half a lookahead before the landing, sleeps
 * in wall time (so the timekeeper gets there first), then waits for the
 * mark: it must return at the landing, not wait for a crossing that never
 * comes.
 */
static int run_markwait(emu_core_t *c)
{
	if (!CHECK(c, emu_exact(c) && emu_core_total(c) >= 2, "markwait needs torusrun --exact and two cores"))
		return 1;
	uint32_t me = emu_core_global(c), node0, core0, reg, k1, k2, inj;
	uint8_t buf[512];
	dma_injfifo_t *f;
	emu_core_locate(c, 0, &node0, &core0);
	CHECK(c, dma_mem_register(c, buf, sizeof(buf), &reg) == 0 && dma_counter_alloc(c, &k1) == 0 &&
			 dma_counter_alloc(c, &k2) == 0 && dma_counter_alloc(c, &inj) == 0 &&
			 dma_injfifo_open(c, 0, &f) == 0,
	      "set up");
	const int64_t levels[2] = {200, 0};
	if (me == 0)
		CHECK(c, dma_counter_add(c, k1, 200) == 0 && dma_counter_add(c, k2, 400) == 0 &&
				 dma_counter_watch(c, k2, levels, 2) == 0,
		      "arm");
	for (int round = 0; round < 2; round++) {
		static uint32_t d;
		if (dma_barrier(c))
			return 1;
		torus_vt_t t0 = emu_core_now(c);
		if (me == 1) {
			struct dma_desc ds;
			dma_counter_add(c, inj, 200);
			dma_desc_put(&ds, node0, buf, 200, region_id(c, 0), 0, counter_id(c, 0) + (round ? 1 : 0), inj);
			post(c, f, &ds);
			/* the bytes leave this stack frame before it goes */
			CHECK(c, dma_counter_wait(c, inj) == 0, "injection wait");
		}
		if (me == 0 && round == 0) {
			CHECK(c, dma_counter_wait(c, k1) == 0, "the first put");
			d = (uint32_t)(emu_core_now(c) - t0);
		}
		if (me == 0 && round == 1) {
			torus_vt_t o = emu_params(c)->inj_overhead_ps;
			CHECK(c, emu_core_set_clock(c, t0 + d - o / 2) == 0, "set the clock");
			struct timespec ts = {0, 20 * 1000 * 1000};
			nanosleep(&ts, NULL);
			uint32_t mark = 0;
			size_t which = 9;
			int rc = dma_counter_wait_marks(c, &k2, &mark, 1, &which);
			CHECK(c, rc == 0 && which == 0 && emu_core_now(c) == t0 + d,
			      "the mark: %d, which %zu, at %" PRIu64 " ps after the barrier, landed at %u", rc, which,
			      emu_core_now(c) - t0, d);
			printf("markwait: landed %.3f us after the barrier, waited from %.3f us, returned at %.3f us\n",
			       d * 1e-6, (d - o / 2) * 1e-6, (emu_core_now(c) - t0) * 1e-6);
		}
	}
	return dma_barrier(c);
}

/*
 * --exact: a wait for a packet or a counter (dma_recfifo_wait_counter)
 * whose counter reaches zero as the core's own packet finishes leaving,
 * while a message arrives. Global core 0 puts a whole packet to core 1
 * (635 ns on the wire by default) and waits for its injection counter or
 * a message; core 1 sends it 16 bytes at the same time, which arrive long
 * before the put has left. The wait must return the message at its
 * arrival, whatever the timekeeper had simulated when the core asked (the
 * second round naps in wall time first, so that it runs ahead).
 */
static int run_leftwait(emu_core_t *c)
{
	if (!CHECK(c, emu_exact(c) && emu_core_total(c) >= 2, "leftwait needs torusrun --exact and two cores"))
		return 1;
	uint32_t me = emu_core_global(c), node0, core0, node1, core1, inj, reg;
	uint8_t src[TORUS_MAX_PAYLOAD] = {1};
	static uint8_t dst[TORUS_MAX_PAYLOAD]; /* not the stack: puts may land after this returns */
	dma_injfifo_t *f;
	emu_core_locate(c, 0, &node0, &core0);
	emu_core_locate(c, 1, &node1, &core1);
	CHECK(c, dma_counter_alloc(c, &inj) == 0 && dma_injfifo_open(c, 0, &f) == 0, "set up");
	if (me == 1)
		CHECK(c, dma_mem_register(c, dst, sizeof(dst), &reg) == 0 && reg == region_id(c, core1), "register");
	for (int round = 0; round < 2; round++) {
		if (dma_barrier(c))
			return 1;
		torus_vt_t t0 = emu_core_now(c);
		struct dma_desc d;
		if (me == 1) {
			uint8_t msg[16] = {5};
			dma_counter_add(c, inj, sizeof(msg));
			dma_desc_memfifo(&d, node0, core0, 0, 55, msg, sizeof(msg), inj);
			post(c, f, &d);
			CHECK(c, dma_counter_wait(c, inj) == 0, "injection wait");
		} else if (me == 0) {
			dma_counter_add(c, inj, sizeof(src));
			dma_desc_put(&d, node1, src, sizeof(src), region_id(c, core1), 0, DMA_NO_COUNTER, inj);
			post(c, f, &d);
			if (round) {
				struct timespec ts = {0, 20 * 1000 * 1000};
				nanosleep(&ts, NULL);
			}
			int zero = -1;
			int rc = dma_recfifo_wait_counter(c, inj, -1, &zero);
			torus_vt_t ta = emu_core_now(c) - t0;
			struct dma_recv_info info;
			uint8_t b[TORUS_MAX_PAYLOAD];
			int rn = dma_recfifo_next(c, &info, b, sizeof(b));
			CHECK(c, dma_counter_wait(c, inj) == 0, "injection wait");
			torus_vt_t tz = emu_core_now(c) - t0;
			CHECK(c, rc == 0 && zero == 0 && rn == 0 && info.user == 55 && info.arrival - t0 == ta && ta < tz,
			      "round %d: rc %d zero %d, the message (%d) at %" PRIu64 " ps, arrived at %" PRIu64
			      " ps; the counter zero at %" PRIu64 " ps",
			      round, rc, zero, rn, ta, info.arrival - t0, tz);
			printf("leftwait: round %d: the message at %.3f us, the counter zero at %.3f us\n", round, ta * 1e-6,
			       tz * 1e-6);
		}
	}
	return dma_barrier(c);
}

/*
 * --exact: an injection counter whose packets finish leaving out of order.
 * Node 0 puts a whole packet to its +x neighbour and, right after, 8 bytes
 * to its +y neighbour from another FIFO, on the same injection counter: the
 * small one finishes leaving first, though the timekeeper learns of it
 * second. The wait for the counter
 * returns when the big one has left, as when it is posted alone (round 0).
 * (The timekeeper once kept such decrements in the order it applied them,
 * and answered when the small one had left, or never.)
 */
static int run_injorder(emu_core_t *c)
{
	const struct torus_shape *s = emu_shape(c);
	if (!CHECK(c, emu_exact(c) && s->ndims >= 2 && s->dims[0] > 1 && s->dims[1] > 1,
		   "injorder needs torusrun --exact and two dimensions"))
		return 1;
	uint32_t node = emu_node_rank(c), inj, reg;
	uint8_t src[TORUS_MAX_PAYLOAD] = {3};
	static uint8_t dst[TORUS_MAX_PAYLOAD]; /* not the stack: puts may land after this returns */
	uint32_t xn = torus_neighbor(s, 0, 0, TORUS_PLUS), yn = torus_neighbor(s, 0, 1, TORUS_PLUS);
	dma_injfifo_t *f, *g; /* two FIFOs: the two puts go out side by side */
	CHECK(c, dma_counter_alloc(c, &inj) == 0 && dma_injfifo_open(c, 0, &f) == 0 && dma_injfifo_open(c, 1, &g) == 0,
	      "set up");
	if (emu_core_index(c) == 0)
		CHECK(c, dma_mem_register(c, dst, sizeof(dst), &reg) == 0 && reg == region_id(c, 0), "register");
	torus_vt_t took[2] = {0, 0};
	for (int round = 0; round < 2; round++) {
		if (dma_barrier(c))
			return 1;
		torus_vt_t t0 = emu_core_now(c);
		if (node == 0 && emu_core_index(c) == 0) {
			struct dma_desc d;
			dma_counter_add(c, inj, sizeof(src) + (round ? 8 : 0));
			dma_desc_put(&d, xn, src, sizeof(src), region_id(c, 0), 0, DMA_NO_COUNTER, inj);
			post(c, f, &d);
			if (round) {
				dma_desc_put(&d, yn, src, 8, region_id(c, 0), 0, DMA_NO_COUNTER, inj);
				post(c, g, &d);
			}
			CHECK(c, dma_counter_wait(c, inj) == 0, "injection wait");
			took[round] = emu_core_now(c) - t0;
		}
	}
	if (node == 0 && emu_core_index(c) == 0) {
		CHECK(c, took[0] == took[1] && took[0] > 0,
		      "a whole packet left in %" PRIu64 " ps alone, %" PRIu64 " ps with a short one after it", took[0],
		      took[1]);
		printf("injorder: a whole packet left after %.3f us, alone and with a short one after it: %.3f us\n",
		       took[0] * 1e-6, took[1] * 1e-6);
	}
	return dma_barrier(c);
}

/* A counter nobody will ever decrement: only the hang detector ends this. */
/*
 * A relay: a token goes round the ring of every core R times: a core that
 * gets it (a mark of its reception counter) holds it W ps
 * (emu_core_compute), then puts N bytes to the next core. Every core
 * prints its clock at the end.
 */
static int relay_step(emu_core_t *c, dma_injfifo_t *f, const uint8_t *buf, uint64_t n, torus_vt_t w, uint32_t inj)
{
	uint32_t node, core, g;
	peer(c, 1, &node, &core, &g);
	struct dma_desc d;
	int rc = emu_core_compute(c, w);
	if (!rc)
		rc = dma_counter_add(c, inj, (int64_t)n);
	if (rc)
		return rc;
	dma_desc_put(&d, node, buf, n, region_id(c, core), 0, counter_id(c, core), inj);
	return dma_injfifo_post(f, &d, DMA_POST_WAIT);
}

/* The relay's set-up: N W R from sizes, a buffer, the token's counter k
 * armed for R arrivals with a mark each, an injection counter. */
struct relay {
	uint64_t n;
	torus_vt_t w;
	uint32_t R, me, k, inj;
	int brk;
	dma_injfifo_t *f;
};

/* its fields under short names */
#define RELAY_NAMES(rl)                                                                          \
	uint64_t n = (rl).n;                                                                     \
	torus_vt_t w = (rl).w;                                                                   \
	uint32_t R = (rl).R, me = (rl).me, k = (rl).k, inj = (rl).inj;                           \
	int brk = (rl).brk;                                                                      \
	dma_injfifo_t *f = (rl).f

static int relay_setup(emu_core_t *c, struct relay *r, uint8_t *buf, size_t len)
{
	if (!CHECK(c, emu_exact(c) && emu_core_total(c) >= 2 && nsizes >= 3 && sizes[0] && sizes[0] <= 4000 &&
			      sizes[2] && sizes[2] <= 64,
		   "%s needs --exact, two cores, and N (1 to 4000) W R (1 to 64)", scenario))
		return 1;
	uint32_t reg;
	*r = (struct relay){sizes[0], sizes[1], (uint32_t)sizes[2], emu_core_global(c), 0, 0, nsizes > 3 && sizes[3], NULL};
	if (!CHECK(c, dma_mem_register(c, buf, len, &reg) == 0 && dma_counter_alloc(c, &r->k) == 0 &&
			      dma_counter_alloc(c, &r->inj) == 0 && dma_injfifo_open(c, 0, &r->f) == 0,
		   "set up"))
		return 1;
	int64_t levels[64];
	for (uint32_t j = 0; j < r->R; j++)
		levels[j] = (int64_t)(r->n * (r->R - 1 - j));
	return !CHECK(c, dma_counter_add(c, r->k, (int64_t)(r->n * r->R)) == 0 && dma_counter_watch(c, r->k, levels, r->R) == 0,
		      "arm");
}

/* The relay's end: its result, the bytes gone, the core's clock printed. */
static int relay_finish(emu_core_t *c, const struct relay *r, int rc, torus_vt_t t0)
{
	if (!CHECK(c, rc == 0, "the relay: %s", dma_strerror(rc)))
		return 1;
	CHECK(c, dma_counter_wait(c, r->inj) == 0, "injection wait");
	printf("relay: core %u at %.6f us after the barrier\n", r->me, (emu_core_now(c) - t0) * 1e-6);
	fflush(stdout);
	return 0;
}

/*
 * --exact: the relay as one program per core (emu_core_program_start):
 * every step told first, then made as the token physically comes. Without
 * programs (TORUS_PROGRAM=0) each wait asks the timekeeper: the same
 * times. sizes: N W R [BREAK]; BREAK 1: core 1 puts one byte more than it
 * told in its second step, which stops the job.
 */
static int run_program(emu_core_t *c)
{
	static _Thread_local uint8_t buf[4096];
	struct relay rl;
	if (relay_setup(c, &rl, buf, sizeof(buf)))
		return 1;
	RELAY_NAMES(rl);
	CHECK(c, emu_core_program_step(c, 0) == -EINVAL && emu_core_program_finish(c) == -EINVAL &&
			 emu_core_program_start(c, 0) == -EINVAL && emu_core_step_end(c, 0, k, -1, 1) == -EINVAL,
	      "bad calls refused");
	if (dma_barrier(c))
		return 1;
	torus_vt_t t0 = emu_core_now(c);
	/* the steps: core 0 first puts at once, then after laps 0..R-2, and
	 * takes the last lap without putting; the others put after each */
	uint32_t nsteps = me == 0 ? R + 1 : R;
#define STEP_MARK(i) (me == 0 ? (int64_t)(i) - 1 : (int64_t)(i)) /* -1: none */
#define STEP_PUTS(i) (me != 0 || (i) < R)
	int rc = 0, prog = 1;
	for (uint32_t i = 0; i < nsteps && !rc; i++) {
		int64_t mark = STEP_MARK(i);
		int puts = STEP_PUTS(i);
		if ((rc = emu_core_step_begin(c)))
			break;
		int r2 = puts ? relay_step(c, f, buf, n, w, inj) : 0;
		rc = emu_core_step_end(c, 0, k, mark, r2 == 0);
	}
	if (rc == -EOPNOTSUPP)
		prog = rc = 0; /* programs off: step by step */
	else if (!rc)
		rc = emu_core_program_start(c, 1);
	for (uint32_t i = 0; i < nsteps && !rc; i++) {
		int64_t mark = STEP_MARK(i);
		int puts = STEP_PUTS(i);
		size_t which;
		uint32_t mk = (uint32_t)mark;
		if (mark >= 0)
			rc = dma_counter_wait_marks(c, &k, &mk, 1, &which);
		if (!rc && prog)
			rc = emu_core_program_step(c, 0);
		if (!rc && puts)
			rc = relay_step(c, f, buf, brk && me == 1 && i == 1 ? n + 1 : n, w, inj);
	}
	if (prog) {
		int r2 = emu_core_program_finish(c);
		if (!rc)
			rc = r2;
	}
	return relay_finish(c, &rl, rc, t0);
}
#undef STEP_MARK
#undef STEP_PUTS

static int run_hang(emu_core_t *c)
{
	uint32_t k;
	if (dma_counter_alloc(c, &k) || dma_counter_add(c, k, 4242))
		return 1;
	dma_counter_wait(c, k);
	return 1;
}

static int core_main(emu_core_t *c, void *arg)
{
	(void)arg;
	int rc = 1;
	if (!strcmp(scenario, "put"))
		rc = run_transfer(c, DMA_PUT);
	else if (!strcmp(scenario, "get"))
		rc = run_transfer(c, DMA_GET);
	else if (!strcmp(scenario, "copy"))
		rc = run_transfer(c, DMA_COPY);
	else if (!strcmp(scenario, "memfifo"))
		rc = run_memfifo(c);
	else if (!strcmp(scenario, "rebind"))
		rc = run_rebind(c);
	else if (!strcmp(scenario, "many"))
		rc = run_many(c);
	else if (!strcmp(scenario, "anyorder"))
		rc = run_anyorder(c);
	else if (!strcmp(scenario, "bad"))
		rc = run_bad(c);
	else if (!strcmp(scenario, "faulttime"))
		rc = run_faulttime(c);
	else if (!strcmp(scenario, "markwait"))
		rc = run_markwait(c);
	else if (!strcmp(scenario, "leftwait"))
		rc = run_leftwait(c);
	else if (!strcmp(scenario, "injorder"))
		rc = run_injorder(c);
	else if (!strcmp(scenario, "full"))
		rc = run_full(c);
	else if (!strcmp(scenario, "barrier"))
		rc = run_barrier(c);
	else if (!strcmp(scenario, "waitany"))
		rc = run_waitany(c);
	else if (!strcmp(scenario, "bandwidth"))
		rc = run_bandwidth(c);
	else if (!strcmp(scenario, "program"))
		rc = run_program(c);
	else if (!strcmp(scenario, "hang"))
		rc = run_hang(c);
	if (rc == 0 && dma_barrier(c))
		rc = 1;
	return rc || __atomic_load_n(&failures, __ATOMIC_RELAXED) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help")) {
		printf("usage: torusrun ... -- dma-check put|get|copy|memfifo SIZES... | many N | anyorder | bad | rebind | full | barrier | "
		       "waitany | bandwidth BYTES | faulttime [HOPS_AHEAD] | markwait | leftwait | injorder "
		       "| program N W R [BREAK] (these five: --exact)\n");
		return argc < 2 ? 2 : 0;
	}
	scenario = argv[1];
	for (int i = 2; i < argc && nsizes < 32; i++)
		sizes[nsizes++] = strtoull(argv[i], NULL, 0);
	return emu_job_main(argc, argv, core_main, NULL);
}
