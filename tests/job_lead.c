/*
 * lead-check: a promise of work after a wait (emu_core_lead) changes no
 * emulated time, and a core that breaks it stops the job (test_exact).
 *
 *   torusrun --exact --torus 2 [--chaos S] -- lead-check [--lead] [--break] ROUNDS WORK_PS
 *
 * Core 0 of nodes 0 and 1 play ping-pong with a raw packet, ROUNDS times.
 * A core computes WORK_PS once it has the ball (emu_core_compute); one
 * that has to wait for it works before it takes it, at the same times.
 * Then it sends it back. With --lead it
 * promises that work before each wait; with --break as well, it skips the
 * work (its throw is a post inside the promise, which stops the job).
 * Each core prints its clock after every catch and at the end, and first
 * checks that a NULL core is refused (-EINVAL).
 */
#include "torus/emu.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int lead, brk;
static unsigned long rounds;
static torus_vt_t work;

static int catch_ball(emu_core_t *c, uint64_t *ball)
{
	struct emu_pkt_info info;
	int rc = emu_pkt_recv(c, &info, ball, sizeof(*ball));
	if (rc != -EAGAIN)
		return rc ? rc : emu_core_compute(c, work); /* here already: take it, then work */
	/* not here yet: wait for it, then work, then take it (the same times) */
	if (lead && (rc = emu_core_lead(c, work)))
		return rc;
	if ((rc = emu_core_wait(c, EMU_EV_RECV, -1, NULL)) < 0)
		return rc;
	if (!brk && (rc = emu_core_compute(c, work)))
		return rc;
	return emu_pkt_recv(c, &info, ball, sizeof(*ball));
}

static int play(emu_core_t *c, void *arg)
{
	(void)arg;
	uint32_t me = emu_node_rank(c);
	if (emu_core_index(c) != 0 || me > 1)
		return 0;
	uint64_t ball = 0;
	int rc;
	if ((rc = emu_core_lead(NULL, work)) != -EINVAL) {
		fprintf(stderr, "lead-check: emu_core_lead(NULL) returned %d, not -EINVAL\n", rc);
		return 1;
	}
	for (unsigned long r = 0; r < rounds; r++) {
		if (me == 1 || r > 0) {
			if ((rc = catch_ball(c, &ball))) {
				fprintf(stderr, "lead-check: node %u: catching ball %lu: %s\n", me, r, strerror(-rc));
				return 1;
			}
			printf("node %u catch %" PRIu64 " at %" PRIu64 " ps\n", me, ball, (uint64_t)emu_core_now(c));
		}
		ball++;
		while ((rc = emu_pkt_send(c, 1 - me, 0, &ball, sizeof(ball), 0, 0)) == -EAGAIN)
			if ((rc = emu_core_wait(c, EMU_EV_SEND, -1, NULL)) < 0)
				break;
		if (rc < 0) {
			fprintf(stderr, "lead-check: node %u: throwing ball %lu: %s\n", me, r, strerror(-rc));
			return 1;
		}
	}
	if (me == 0 && (rc = catch_ball(c, &ball))) {
		fprintf(stderr, "lead-check: node 0: the last catch: %s\n", strerror(-rc));
		return 1;
	}
	printf("node %u end at %" PRIu64 " ps\n", me, (uint64_t)emu_core_now(c));
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--lead")) {
			lead = 1;
		} else if (!strcmp(argv[i], "--break")) {
			brk = 1;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: lead-check [--lead] [--break] ROUNDS WORK_PS\n"
			       "Ping-pong between core 0 of nodes 0 and 1; WORK_PS of work after each catch,\n"
			       "promised before the wait with --lead (emu_core_lead); --break skips the work.\n");
			return 0;
		} else {
			fprintf(stderr, "lead-check: unknown option '%s' (try --help)\n", argv[i]);
			return 2;
		}
	}
	char *end;
	if (argc - i != 2 || !(rounds = strtoul(argv[i], &end, 10)) || *end ||
	    ((work = strtoull(argv[i + 1], &end, 10)), *end)) {
		fprintf(stderr, "lead-check: want ROUNDS (at least 1) and WORK_PS (try --help)\n");
		return 2;
	}
	return emu_job_main(argc, argv, play, NULL);
}
