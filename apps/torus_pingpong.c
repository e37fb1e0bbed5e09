/*
 * torus-pingpong: latency and bandwidth between two ranks at a chosen
 * distance, in emulated time, like the OSU latency and bandwidth tests.
 *
 *   torusrun --torus 8 -- torus-pingpong --distance 3 --sizes 1:64MiB
 *
 * Node 0 and the node `distance` hops along dimension 0 exchange direct
 * puts. Latency: half the round trip of a ping-pong (iterations averaged).
 * Bandwidth: a window of back-to-back puts, then a zero-byte reply; bytes
 * over the time until the reply arrives. Both use the DMA API only.
 */
#include "torus/dma.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct opts {
	uint32_t distance;
	uint64_t min, max;
	uint32_t iters;
};
static struct opts opt = {1, 1, 64u << 20, 4};

/* a size (torus_size_parse), at most 4 GiB */
static int parse_size(const char *s, uint64_t *out) { return torus_size_parse(s, 1ull << 32, out) ? -1 : 0; }

struct peer_state {
	uint8_t *buf;
	uint32_t reg, cnt, inj;   /* inj: bytes of our puts not yet injected */
	dma_injfifo_t *f;
	uint32_t other;
	emu_core_t *core;
};

static int put(struct peer_state *p, uint64_t len)
{
	struct dma_desc d;
	/* the peer registered the same way: region 0 and counter 0 of its core 0 */
	dma_desc_put(&d, p->other, p->buf, len, 0, 0, 0, p->inj);
	int rc = dma_counter_add(p->core, p->inj, (int64_t)len);
	if (rc)
		return rc;
	return dma_injfifo_post(p->f, &d, DMA_POST_WAIT);
}

static int expect(emu_core_t *c, struct peer_state *p, uint64_t len)
{
	int rc = dma_counter_add(c, p->cnt, (int64_t)len);
	return rc ? rc : dma_counter_wait(c, p->cnt);
}

static int pingpong(emu_core_t *c, void *arg)
{
	(void)arg;
	uint32_t me = emu_node_rank(c);
	uint32_t peer_node = opt.distance; /* coordinate `distance` along dimension 0 */
	if (emu_core_index(c) != 0 || (me != 0 && me != peer_node))
		return dma_barrier(c) || dma_barrier(c) ? 1 : 0; /* the two barriers of the pair */
	struct peer_state p = {0};
	p.other = me == 0 ? peer_node : 0;
	p.buf = malloc(opt.max ? opt.max : 1);
	p.core = c;
	if (!p.buf || dma_mem_register(c, p.buf, opt.max ? opt.max : 1, &p.reg) || dma_counter_alloc(c, &p.cnt) ||
	    dma_counter_alloc(c, &p.inj) || dma_injfifo_open(c, 0, &p.f)) {
		fprintf(stderr, "torus-pingpong: set-up failed on node %u\n", me);
		return 1;
	}
	memset(p.buf, 0x42, opt.max ? opt.max : 1);
	if (dma_barrier(c))
		return 1;
	const struct torus_params *tp = emu_params(c);
	if (me == 0) {
		double model = (double)tp->link_bw * torus_params_payload(tp) / torus_wire_bytes(tp, torus_params_payload(tp));
		printf("# torus-pingpong: node 0 <-> node %u, %u hop(s), direct put\n", peer_node,
		       torus_hops(emu_shape(c), 0, peer_node));
		printf("# model payload rate of one link: %.3f MB/s\n", model / 1e6);
		printf("# %12s %16s %16s\n", "size (B)", "latency (us)", "bandwidth (MB/s)");
	}
	for (uint64_t len = opt.min; len <= opt.max; len = len ? len * 2 : 1) {
		uint64_t m = len ? len : 1; /* a put of 0 bytes moves no counter: ping 1 byte */
		/* latency: ping-pong */
		torus_vt_t t0 = emu_core_now(c);
		for (uint32_t i = 0; i < opt.iters; i++) {
			if (me == 0) {
				if (put(&p, m) || expect(c, &p, m))
					return 1;
			} else {
				if (expect(c, &p, m) || put(&p, m))
					return 1;
			}
		}
		double lat_us = (double)(emu_core_now(c) - t0) / opt.iters / 2 / 1e6;
		/* bandwidth: a window of puts, then a one-byte reply */
		uint32_t window = m >= (16u << 20) ? 1 : m >= (1u << 20) ? 4 : 16;
		t0 = emu_core_now(c);
		if (me == 0) {
			for (uint32_t w = 0; w < window; w++)
				if (put(&p, m))
					return 1;
			if (expect(c, &p, 1))
				return 1;
			double secs = (double)(emu_core_now(c) - t0) * 1e-12;
			printf("  %12" PRIu64 " %16.3f %16.3f\n", len, lat_us, (double)m * window / secs / 1e6);
			fflush(stdout);
		} else {
			if (expect(c, &p, m * window) || put(&p, 1))
				return 1;
		}
		if (len == 0 && opt.max == 0)
			break;
	}
	/* the engine may still be reading the buffer for our last put */
	int rc = dma_counter_wait(c, p.inj) || dma_barrier(c) ? 1 : 0;
	dma_mem_deregister(c, p.reg);
	free(p.buf);
	return rc;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: torusrun --torus DIMS -- torus-pingpong [--distance H] [--sizes MIN:MAX] [--iters N]\n\n"
			       "Latency and bandwidth of direct puts between node 0 and the node H hops\n"
			       "along dimension 0 (H <= half that dimension), in emulated time, for sizes\n"
			       "doubling from MIN to MAX (default 1:64MiB; suffixes K/KiB, M/MiB, G/GiB).\n");
			return 0;
		} else if (!strcmp(a, "--distance") && v) {
			opt.distance = (uint32_t)strtoul(v, NULL, 10);
			i++;
		} else if (!strcmp(a, "--sizes") && v && strchr(v, ':')) {
			char lo[64];
			snprintf(lo, sizeof(lo), "%.*s", (int)(strchr(v, ':') - v), v);
			if (parse_size(lo, &opt.min) || parse_size(strchr(v, ':') + 1, &opt.max) || opt.min > opt.max) {
				fprintf(stderr, "torus-pingpong: bad --sizes '%s' (e.g. 1:64MiB)\n", v);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--iters") && v && atoi(v) > 0) {
			opt.iters = (uint32_t)atoi(v);
			i++;
		} else {
			fprintf(stderr, "torus-pingpong: bad argument '%s' (see --help)\n", a);
			return 2;
		}
	}
	const char *shape = getenv("TORUS_SHAPE");
	if (shape) {
		uint32_t d0 = (uint32_t)strtoul(shape, NULL, 10);
		if (opt.distance < 1 || opt.distance > d0 / 2) {
			fprintf(stderr, "torus-pingpong: --distance must be 1..%u on a torus of %s\n", d0 / 2, shape);
			return 2;
		}
	}
	return emu_job_main(argc, argv, pingpong, NULL);
}
