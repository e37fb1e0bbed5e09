/*
 * torus-stress: every core sends a chosen number of packets to every other
 * core of the job; each packet carries its source, a sequence number, a
 * length and a checksum. Receivers verify exactly-once, in-order, intact
 * delivery (packets between one pair of cores share one path, so FIFO order
 * must hold). Exit status 0 only if every core verified its whole share.
 *
 *   torusrun --torus 8 --param fifo_slots=1 -- torus-stress --packets 16
 *
 * Fault injection for the launcher's tests: --fault crash|fail|hang|exit|exit0|spin|stop
 * --fault-rank R makes node R segfault, return an error from a core, wait
 * forever for a packet that never comes, or _exit(7) mid-run.
 */
#include "torus/emu.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct options {
	uint32_t packets;   /* per ordered pair of cores */
	int size;           /* payload bytes, or -1 for varying sizes */
	const char *fault;
	uint32_t fault_rank;
	int progress;
	int no_expect;      /* --no-expect: do not promise a receive-only phase */
};

struct stress_hdr {
	uint32_t src_global;  /* global index of the sending core */
	uint32_t seq;
	uint32_t len;
	uint32_t sum;         /* FNV-1a of the whole payload with sum = 0 */
};

static uint32_t fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static uint32_t mix(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u ^ (c + 1u) * 0xC2B2AE3Du;
	h ^= h >> 15;
	return h * 0x2C1B3C6Du;
}

struct ctx {
	const struct options *opt;
	uint32_t *first;   /* global index of each node's core 0 */
	uint32_t total;    /* cores in the job */
	uint32_t maxp;     /* largest payload */
};

static uint32_t payload_len(const struct options *o, uint32_t src, uint32_t dst, uint32_t seq, uint32_t maxp)
{
	if (o->size >= 0)
		return (uint32_t)o->size;
	return (uint32_t)sizeof(struct stress_hdr) + mix(src, dst, seq) % (maxp - sizeof(struct stress_hdr) + 1);
}

static void fill(uint8_t *buf, uint32_t src, uint32_t dst, uint32_t seq, uint32_t len)
{
	struct stress_hdr h = {src, seq, len, 0};
	for (uint32_t i = sizeof(h); i < len; i++)
		buf[i] = (uint8_t)mix(src ^ (dst << 16), seq, i);
	memcpy(buf, &h, sizeof(h));
	h.sum = fnv1a(buf, len);
	memcpy(buf, &h, sizeof(h));
}

struct rx_state {
	uint32_t *next_seq;   /* per source core */
	uint64_t got, want;
	int errors;
};

static int check(emu_core_t *core, struct ctx *cx, struct rx_state *st, const struct emu_pkt_info *info,
		 uint8_t *buf)
{
	uint32_t me = cx->first[emu_node_rank(core)] + emu_core_index(core);
	struct stress_hdr h;
	if (info->len < sizeof(h)) {
		fprintf(stderr, "torus-stress: core %u: short packet (%u bytes) from node %u\n", me, info->len, info->src_node);
		return -EBADMSG;
	}
	memcpy(&h, buf, sizeof(h));
	uint32_t sum = h.sum;
	h.sum = 0;
	memcpy(buf, &h, sizeof(h));
	uint32_t src = h.src_global;
	if (src >= cx->total || src != cx->first[info->src_node] + info->src_core || h.len != info->len ||
	    fnv1a(buf, info->len) != sum) {
		fprintf(stderr, "torus-stress: core %u: corrupted packet from node %u core %u (seq %u)\n", me,
			info->src_node, info->src_core, h.seq);
		return -EBADMSG;
	}
	uint8_t want[TORUS_MAX_PAYLOAD];
	fill(want, src, me, h.seq, h.len);
	if (h.len != payload_len(cx->opt, src, me, h.seq, cx->maxp)) {
		fprintf(stderr, "torus-stress: core %u: wrong length %u from core %u seq %u\n", me, h.len, src, h.seq);
		return -EBADMSG;
	}
	if (memcmp(want + sizeof(h), buf + sizeof(h), h.len - sizeof(h))) {
		fprintf(stderr, "torus-stress: core %u: payload mismatch from core %u seq %u\n", me, src, h.seq);
		return -EBADMSG;
	}
	if (h.seq != st->next_seq[src]) {
		fprintf(stderr, "torus-stress: core %u: from core %u got seq %u, expected %u (%s)\n", me, src, h.seq,
			st->next_seq[src], h.seq < st->next_seq[src] ? "duplicate" : "lost or reordered");
		return -EBADMSG;
	}
	st->next_seq[src]++;
	st->got++;
	return 0;
}

static int drain(emu_core_t *core, struct ctx *cx, struct rx_state *st)
{
	uint8_t buf[TORUS_MAX_PAYLOAD];
	struct emu_pkt_info info;
	int rc;
	while ((rc = emu_pkt_recv(core, &info, buf, sizeof(buf))) == 0) {
		if ((rc = check(core, cx, st, &info, buf)) < 0)
			return rc;
		if (cx->opt->progress && st->want >= 100000 && st->got % (st->want / 10) == 0)
			fprintf(stderr, "torus-stress: node %u core %u: %llu%% received\n", emu_node_rank(core),
				emu_core_index(core), (unsigned long long)(st->got * 100 / st->want));
	}
	return rc == -EAGAIN ? 0 : rc; /* drained */
}

static int fault(emu_core_t *core, const struct options *o)
{
	if (!o->fault || emu_node_rank(core) != o->fault_rank || emu_core_index(core) != 0)
		return 0;
	if (!strcmp(o->fault, "crash"))
		raise(SIGSEGV);
	if (!strcmp(o->fault, "exit"))
		_exit(7);
	if (!strcmp(o->fault, "exit0"))
		_exit(0); /* "success" before the job is done: still a failed node */
	if (!strcmp(o->fault, "spin")) {
		/* busy in its own code, never calling the API: a livelock to the
		 * hang detector, which must not take it for starvation */
		for (volatile uint64_t i = 0;; i++)
			;
	}
	if (!strcmp(o->fault, "fail")) {
		fprintf(stderr, "torus-stress: node %u: failing on purpose (--fault fail)\n", o->fault_rank);
		return 5;
	}
	if (!strcmp(o->fault, "stop")) {
		/* the whole node process stops, as under kill -STOP or a
		 * debugger: the hang detector must name it */
		kill(getpid(), SIGSTOP);
		return 0;
	}
	if (!strcmp(o->fault, "hang")) {
		/* stuck outside the API (a deadlocked lock, say): only the hang
		 * detector ends this; it sleeps, never spins */
		for (;;)
			sleep(1);
	}
	return 0;
}

static int stress(emu_core_t *core, void *arg)
{
	const struct options *o = arg;
	uint32_t nnodes = emu_node_count(core);
	uint32_t maxp = torus_params_payload(emu_params(core));
	struct ctx cxs = {o, calloc(nnodes, sizeof(uint32_t)), 0, maxp}, *cx = &cxs;
	struct rx_state st = {0};
	uint8_t buf[TORUS_MAX_PAYLOAD];
	uint32_t *dst_node = NULL;
	int rc = 1;

	if (!cx->first)
		return 1;
	for (uint32_t n = 0; n < nnodes; n++) {
		cx->first[n] = cx->total;
		cx->total += emu_cores_of(core, n);
	}
	uint32_t me = cx->first[emu_node_rank(core)] + emu_core_index(core);
	dst_node = malloc(cx->total * sizeof(uint32_t));
	st.next_seq = calloc(cx->total, sizeof(uint32_t));
	if (!st.next_seq || !dst_node)
		goto out;
	for (uint32_t n = 0, g = 0; n < nnodes; n++)
		for (uint32_t c = 0; c < emu_cores_of(core, n); c++)
			dst_node[g++] = n;
	st.want = (uint64_t)o->packets * (cx->total - 1);
	if ((rc = fault(core, o)))
		goto out;
	for (uint32_t seq = 0; seq < o->packets; seq++) {
		for (uint32_t k = 1; k < cx->total; k++) {
			uint32_t dst = (me + k) % cx->total; /* rotate to spread the load */
			uint32_t len = payload_len(o, me, dst, seq, maxp);
			fill(buf, me, dst, seq, len);
			int s;
			while ((s = emu_pkt_send(core, dst_node[dst], dst - cx->first[dst_node[dst]], buf, len, 0, 0)) == -EAGAIN) {
				if ((s = drain(core, cx, &st)) < 0 || (s = emu_core_wait(core, EMU_EV_SEND | EMU_EV_RECV, -1, NULL)) < 0)
					break;
				fill(buf, me, dst, seq, len);
			}
			if (s < 0) {
				fprintf(stderr, "torus-stress: core %u: send: %s\n", me, strerror(-s));
				rc = 1;
				goto out;
			}
		}
	}
	/* all sent: from here this core only receives, to the end, and says
	 * so (the timekeeper then runs ahead of it; no time changes) */
	if (!o->no_expect && st.got < st.want && (rc = emu_core_expect(core, EMU_EXPECT_EVER)) < 0) {
		fprintf(stderr, "torus-stress: core %u: emu_core_expect: %s\n", me, strerror(-rc));
		rc = 1;
		goto out;
	}
	while (st.got < st.want) {
		int s = drain(core, cx, &st);
		if (s < 0 || (st.got < st.want && emu_core_wait(core, EMU_EV_RECV, -1, NULL) < 0)) {
			rc = 1;
			goto out;
		}
	}
	rc = 0;
	for (uint32_t s = 0; s < cx->total; s++) {
		if (s != me && st.next_seq[s] != o->packets) {
			fprintf(stderr, "torus-stress: core %u: %u of %u packets from core %u\n", me, st.next_seq[s], o->packets, s);
			rc = 1;
		}
	}
	if (me == 0)
		printf("torus-stress: %u nodes, %u cores, %u packets per ordered pair: core 0 verified %llu packets, "
		       "emulated time %.3f us\n",
		       emu_node_count(core), cx->total, o->packets, (unsigned long long)st.got, emu_core_now(core) / 1e6);
out:
	free(st.next_seq);
	free(dst_node);
	free(cx->first);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: torusrun [torusrun options] -- torus-stress [--packets K] [--size B] [--progress]\n"
		   "                 [--fault crash|fail|hang|exit|exit0|spin|stop --fault-rank R] [--no-expect]\n\n"
		   "Every core sends K packets (default 4) to every other core and verifies\n"
		   "exactly-once, in-order, intact delivery of what it receives. --size fixes\n"
		   "the payload (16..240 bytes; default: varying per packet).\n\n"
		   "--fault makes core 0 of node R (default 0), before it sends anything: crash\n"
		   "(SIGSEGV), fail (return 5), hang (sleep forever outside the API), exit (the\n"
		   "process exits 7), exit0 (the process exits 0 early), spin (busy forever in\n"
		   "its own code), stop (the node process stops itself with SIGSTOP). The\n"
		   "launcher's tests use them.\n\n"
		   "Once it has sent everything, each core promises to only receive from then on\n"
		   "(emu_core_expect), which lets torusrun's timekeeper run ahead of it; --no-expect\n"
		   "leaves that out (the emulated time is the same).\n");
}

static int parse_uint(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = s ? strtol(s, &end, 10) : 0;
	if (!s || errno || *end || end == s || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* static: every core thread of this process reads it */
static struct options opt = {4, -1, NULL, 0, 0, 0};

int main(int argc, char **argv)
{
	long v;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--packets") && !parse_uint(next, 1, 1000000, &v)) {
			opt.packets = (uint32_t)v;
			i++;
		} else if (!strcmp(a, "--size") && !parse_uint(next, (long)sizeof(struct stress_hdr), TORUS_MAX_PAYLOAD, &v)) {
			opt.size = (int)v;
			i++;
		} else if (!strcmp(a, "--fault") && next &&
			   (!strcmp(next, "crash") || !strcmp(next, "fail") || !strcmp(next, "hang") || !strcmp(next, "exit") ||
			    !strcmp(next, "exit0") || !strcmp(next, "spin") || !strcmp(next, "stop"))) {
			opt.fault = next;
			i++;
		} else if (!strcmp(a, "--fault-rank") && !parse_uint(next, 0, TORUS_MAX_NODES, &v)) {
			opt.fault_rank = (uint32_t)v;
			i++;
		} else if (!strcmp(a, "--progress")) {
			opt.progress = 1;
		} else if (!strcmp(a, "--no-expect")) {
			opt.no_expect = 1;
		} else {
			fprintf(stderr, "torus-stress: bad argument '%s'%s (see --help)\n", a,
				next && a[0] == '-' && strcmp(a, "--progress") && strcmp(a, "--no-expect") ? " or its value" : "");
			return 2;
		}
	}
	return emu_job_main(argc, argv, stress, &opt);
}
