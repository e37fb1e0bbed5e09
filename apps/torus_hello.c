/*
 * torus-hello: every core greets the same-numbered core (modulo the cores
 * there) of each of its node's 2N neighbours and of the node farthest away,
 * then reports whom it heard from and its emulated time.
 *
 *   torusrun --torus 4x4x4 --cores 4 -- torus-hello
 */
#include "torus/emu.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define FAR_TAG 0xFFu

struct greeting {
	uint32_t node, core, tag;
	char text[32];
};

/* Node whose every coordinate is half a ring away. */
static uint32_t far_node(const struct torus_shape *s, uint32_t rank, int inverse)
{
	uint32_t c[TORUS_MAX_DIMS];
	torus_rank_to_coords(s, rank, c);
	for (uint32_t d = 0; d < s->ndims; d++)
		c[d] = inverse ? (c[d] + s->dims[d] - s->dims[d] / 2) % s->dims[d] : (c[d] + s->dims[d] / 2) % s->dims[d];
	return torus_coords_to_rank(s, c);
}

/* Greetings this core will get: each sender core c' with c' % mycores == me. */
static uint32_t expected(emu_core_t *core)
{
	const struct torus_shape *s = emu_shape(core);
	uint32_t me = emu_node_rank(core), mc = emu_core_index(core), mycores = emu_cores_of(core, me);
	uint32_t n = 0;
	for (uint32_t i = 0; i <= 2 * s->ndims; i++) {
		uint32_t from = i < 2 * s->ndims
					? torus_neighbor(s, me, i / 2, (i % 2) == TORUS_PLUS ? TORUS_MINUS : TORUS_PLUS)
					: far_node(s, me, 1);
		for (uint32_t c = 0; c < emu_cores_of(core, from); c++)
			n += (c % mycores) == mc;
	}
	return n;
}

static int take(emu_core_t *core, uint32_t *got, char *log, size_t loglen, size_t *used)
{
	struct emu_pkt_info info;
	struct greeting g;
	int rc;
	while ((rc = emu_pkt_recv(core, &info, &g, sizeof(g))) == 0) {
		if (info.len != sizeof(g) || g.node != info.src_node || g.core != info.src_core ||
		    strncmp(g.text, "hello", 5) != 0) {
			fprintf(stderr, "torus-hello: node %u core %u: garbled greeting from node %u\n",
				emu_node_rank(core), emu_core_index(core), info.src_node);
			return -EBADMSG;
		}
		char dir[8];
		if (g.tag == FAR_TAG)
			snprintf(dir, sizeof(dir), "far");
		else
			snprintf(dir, sizeof(dir), "%c%c", "+-"[g.tag % 2], "xyzuvw"[g.tag / 2]);
		if (*used < loglen)
			*used += (size_t)snprintf(log + *used, loglen - *used, " %u.%u(%s)", g.node, g.core, dir);
		(*got)++;
	}
	return rc == -EAGAIN ? 0 : rc; /* drained */
}

static int hello(emu_core_t *core, void *arg)
{
	(void)arg;
	const struct torus_shape *s = emu_shape(core);
	uint32_t me = emu_node_rank(core), mc = emu_core_index(core);
	uint32_t want = expected(core), got = 0;
	char log[2048] = "";
	size_t used = 0;
	int rc;

	for (uint32_t i = 0; i <= 2 * s->ndims; i++) {
		uint32_t to = i < 2 * s->ndims ? torus_neighbor(s, me, i / 2, (enum torus_dir)(i % 2)) : far_node(s, me, 0);
		struct greeting g = {me, mc, i < 2 * s->ndims ? i : FAR_TAG, ""};
		snprintf(g.text, sizeof(g.text), "hello from %u.%u", me, mc);
		while ((rc = emu_pkt_send(core, to, mc % emu_cores_of(core, to), &g, sizeof(g), 0, 0)) == -EAGAIN) {
			if ((rc = take(core, &got, log, sizeof(log), &used)) < 0)
				return 1;
			if ((rc = emu_core_wait(core, EMU_EV_SEND | EMU_EV_RECV, -1, NULL)) < 0)
				return 1;
		}
		if (rc) {
			fprintf(stderr, "torus-hello: send failed: %s\n", strerror(-rc));
			return 1;
		}
	}
	while (got < want) {
		if (take(core, &got, log, sizeof(log), &used) < 0)
			return 1;
		if (got < want && emu_core_wait(core, EMU_EV_RECV, -1, NULL) < 0)
			return 1;
	}
	uint32_t c[TORUS_MAX_DIMS];
	char cs[64] = "";
	size_t cu = 0;
	torus_rank_to_coords(s, me, c);
	for (uint32_t d = 0; d < s->ndims; d++)
		cu += (size_t)snprintf(cs + cu, sizeof(cs) - cu, d ? ",%u" : "%u", c[d]);
	printf("node %u (%s) core %u heard %u/%u greetings at %.3f us:%s\n", me, cs, mc, got, want,
	       emu_core_now(core) / 1e6, log);
	fflush(stdout);
	return got == want ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: torusrun --torus DIMS [--cores N] -- torus-hello\n\n"
		       "Every core greets its node's 2N torus neighbours and the farthest node,\n"
		       "then prints whom it heard from and its emulated time.\n");
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "torus-hello: unexpected argument '%s' (see --help)\n", argv[1]);
		return 2;
	}
	return emu_job_main(argc, argv, hello, NULL);
}
