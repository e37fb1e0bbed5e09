/*
 * torus-bench's main, and what the program does: one collective
 * (allreduce, allgather or reduce_scatter) over every node of the torus,
 * timed in emulated time against the bandwidth lower bound of Fig. 2 of
 * 003_b0aac8c3d10c7733.txt, with the load it put on the links, for
 * message sizes doubling from A to B.
 *
 *   torusrun --torus 4x4x4 --cores 3 -- torus-bench allreduce --sizes 1K:16M
 *
 * Every core of every node runs the program. The team is a node team
 * (coll_team_nodes): cores 0..K-1 of each node act as one member; the other
 * cores only take part in the global barriers. For each size:
 *
 *   fill the input, read this node's outgoing link counters, barrier,
 *   t0 = emulated clock (wall clock on node 0), the collective, barrier,
 *   t1 = emulated clock (wall clock on node 0), barrier; check the result;
 *   combine the link loads.
 *
 * With --warmup W --reps R that is done W + R times per size; the row shows
 * the medians of the last R (so wall time can be compared with an MPI
 * benchmark's, which times warm calls), the link loads of the last call.
 *
 * Columns of the table (and keys of --json's rows):
 *   bytes        the paper's n: the whole vector each node starts with
 *                (reduce_scatter, allreduce) or ends with (allgather). The
 *                requested size rounded down to whole elements (and, for
 *                reduce_scatter and allgather, to a multiple of nodes x
 *                element size, so that count = n / (esz * nodes)).
 *   count        elements per call (--json only): n/esz for allreduce,
 *                n/(esz*nodes) for reduce_scatter and allgather.
 *   emulated_us  emulated time of the collective: t1 - t0 - barrier_latency
 *                (the closing barrier leaves every clock at max +
 *                barrier_latency), i.e. from the moment every node starts
 *                to the moment the last node finishes (emulated_ps).
 *   bound_us     coll_lower_bound_ps(): (p-1)/p n beta / 2N for
 *                reduce_scatter and allgather, twice that for allreduce
 *                (N = dimensions with links, beta = link time per payload
 *                byte with full packets) (lower_bound_ps).
 *   ratio        emulated / bound: 1.0 would be optimal; below 1.0 would
 *                mean the model or the bound is wrong. 0 if the bound is 0
 *                (one node).
 *   wall_s       wall-clock seconds of the collective on node 0 (wall_s).
 *   link_max_B   payload bytes carried by the most loaded link direction
 *                of the whole torus during the collective (link_max_bytes),
 *   link_min_B   and by the least loaded one (link_min_bytes); equal values
 *                mean perfectly balanced links. Address exchanges and
 *                other small control messages are included.
 *   check        ok: every element of every node's result matched the
 *                closed-form reference; off: --no-check (checked).
 *
 * The inputs are small integers chosen so that the result of every
 * operation has a closed form, exact in every datatype (float included),
 * computed in O(1) per element: see bench/bench_ref.c.
 *
 * Test hook: TORUS_BENCH_CORRUPT=NODE:ELEMENT adds 1 to that element of
 * that node's result before the check (tests/test_bench.c uses it to see
 * that a wrong result is caught and reported).
 *
 * This file holds main; the rest is in bench/: bench_opts.c (the command
 * line, alltoallv's patterns, the sizes), bench_ref.c (the reference),
 * bench_run.c (the job, per collective family), bench_out.c (the table and
 * the JSON), bench.h (what they share).
 */
#include "bench/bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rc = parse_args(argc, argv);
	if (rc == 1) {
		usage(stdout);
		return 0;
	}
	if (rc && !getenv("TORUS_RANK")) {
		/* not under torusrun: say it here, once */
		fprintf(stderr, PROG ": %s\n", opt.error);
		return 2;
	}
	/* under torusrun even a bad command line goes through the job, so that
	 * node 0 alone reports it and no node leaves before it has */
	rc = emu_job_main(argc, argv, bench_core, NULL);
	return rc ? rc : atomic_load(&exit_status);
}
