/*
 * exact-check: replays raw-packet traffic from a file under torusrun
 * --exact and prints when each packet arrived, for test_exact to compare
 * with the reference simulator.
 *
 *   torusrun --exact --torus 4x4 -- exact-check FILE
 *
 * FILE: one transfer per line, "src_node src_core dst_node dst_core len
 * post hints", in posting order per core. Each core first posts its own
 * transfers, in file order, at max(its clock, post) (the model's posting
 * rule: a post costs inj_overhead after that), then receives until every
 * transfer addressed to it has arrived, and prints "xfer INDEX ARRIVAL_PS"
 * for each (the transfer's line number from 0, in the packet's user field).
 * It checks every payload byte on the way.
 */
#include "torus/emu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xfer {
	uint32_t src_node, src_core, dst_node, dst_core, len;
	unsigned long long post;
	uint32_t hints;
};

static struct xfer *xs;
static size_t nx;

static uint8_t byte_of(size_t x, uint32_t i) { return (uint8_t)(x * 131 + i * 7 + 1); }

static int core_main(emu_core_t *c, void *arg)
{
	(void)arg;
	uint32_t node = emu_node_rank(c), core = emu_core_index(c);
	uint8_t buf[256];
	size_t want = 0;
	for (size_t i = 0; i < nx; i++) {
		const struct xfer *x = &xs[i];
		if (x->dst_node == node && x->dst_core == core)
			want++;
		if (x->src_node != node || x->src_core != core)
			continue;
		if (x->post > emu_core_now(c) && emu_core_set_clock(c, x->post)) {
			fprintf(stderr, "exact-check: set_clock failed\n");
			return 1;
		}
		for (uint32_t k = 0; k < x->len; k++)
			buf[k] = byte_of(i, k);
		int rc = emu_pkt_send(c, x->dst_node, x->dst_core, buf, x->len, (uint16_t)i, (uint16_t)x->hints);
		if (rc) {
			fprintf(stderr, "exact-check: node %u core %u: send %zu: %s\n", node, core, i, strerror(-rc));
			return 1;
		}
	}
	unsigned long long *arrival = calloc(want + 1, sizeof(*arrival));
	size_t *index = calloc(want + 1, sizeof(*index));
	if (!arrival || !index)
		return 1;
	for (size_t got = 0; got < want;) {
		struct emu_pkt_info info;
		int rc = emu_pkt_recv(c, &info, buf, sizeof(buf));
		if (rc == -EAGAIN) {
			if ((rc = emu_core_wait(c, EMU_EV_RECV, -1, NULL))) {
				fprintf(stderr, "exact-check: wait: %s\n", strerror(-rc));
				return 1;
			}
			continue;
		}
		if (rc) {
			fprintf(stderr, "exact-check: recv: %s\n", strerror(-rc));
			return 1;
		}
		size_t i = info.user;
		if (i >= nx || xs[i].dst_node != node || xs[i].dst_core != core || xs[i].src_node != info.src_node ||
		    xs[i].src_core != info.src_core || xs[i].len != info.len) {
			fprintf(stderr, "exact-check: node %u core %u: a packet that is not ours (user %zu)\n", node, core, i);
			return 1;
		}
		for (uint32_t k = 0; k < info.len; k++)
			if (buf[k] != byte_of(i, k)) {
				fprintf(stderr, "exact-check: transfer %zu: byte %u damaged\n", i, k);
				return 1;
			}
		arrival[got] = (unsigned long long)info.arrival;
		index[got++] = i;
	}
	for (size_t k = 0; k < want; k++)
		printf("xfer %zu %llu\n", index[k], arrival[k]);
	fflush(stdout);
	free(arrival);
	free(index);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: torusrun --exact [options] -- exact-check FILE\n"
		       "Replays raw-packet transfers (one per line: src_node src_core dst_node dst_core\n"
		       "len post_ps hints) and prints 'xfer INDEX ARRIVAL_PS' for each.\n");
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
	struct xfer x;
	while (fscanf(f, "%u %u %u %u %u %llu %u", &x.src_node, &x.src_core, &x.dst_node, &x.dst_core, &x.len, &x.post,
		      &x.hints) == 7) {
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
