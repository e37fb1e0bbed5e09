/*
 * emu_node_join / emu_node_leave: main() is core 0 of its node (as an MPI
 * rank is). Every node sends its rank around the ring of nodes with raw
 * packets and checks what comes in; the other cores of a node run `helper`,
 * which counts itself; main prints its emulated time and leaves with the
 * status it got. --fail R: node R leaves with status 3 (the job fails).
 */
#include "torus/emu.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint helpers;

static int helper(emu_core_t *c, void *arg)
{
	(void)c;
	(void)arg;
	atomic_fetch_add(&helpers, 1);
	return 0;
}

int main(int argc, char **argv)
{
	long fail_rank = argc == 3 && !strcmp(argv[1], "--fail") ? strtol(argv[2], NULL, 10) : -1;
	emu_core_t *c;
	int status;
	int rc = emu_node_join(argc, argv, helper, NULL, &c, &status);
	if (rc)
		return status;
	int again;
	if (emu_node_join(argc, argv, helper, NULL, &c, &again) != -EALREADY) {
		fprintf(stderr, "job-join: a second join was not refused\n");
		return emu_node_leave(c, 1);
	}
	uint32_t me = emu_node_rank(c), n = emu_node_count(c), next = (me + 1) % n;
	uint32_t prev = (me + n - 1) % n, got = UINT32_MAX;
	struct emu_pkt_info info;
	while ((rc = emu_pkt_send(c, next, 0, &me, sizeof(me), 7, 0)) == -EAGAIN)
		emu_core_wait(c, EMU_EV_SEND, -1, NULL);
	while (!rc && (rc = emu_pkt_recv(c, &info, &got, sizeof(got))) == -EAGAIN)
		rc = emu_core_wait(c, EMU_EV_RECV, -1, NULL);
	int bad = rc || got != prev || info.src_node != prev || info.user != 7;
	uint32_t ncores = emu_cores_of(c, me);
	printf("job-join: node %u (core 0 is main) heard node %u at %llu ps\n", me, got,
	       (unsigned long long)emu_core_now(c));
	fflush(stdout);
	int st = emu_node_leave(c, bad ? 1 : me == fail_rank ? 3 : 0);
	/* leave waited for the node's other cores: every helper has run */
	if (!st && atomic_load(&helpers) != ncores - 1) {
		fprintf(stderr, "job-join: %u of %u helper cores ran\n", atomic_load(&helpers), ncores - 1);
		return 1;
	}
	if (!st)
		printf("job-join: node %u left with its %u helper cores done\n", me, ncores - 1);
	return st;
}
