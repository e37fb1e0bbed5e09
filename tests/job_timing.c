/*
 * job-timing: checks that virtual time is the model, exactly. Node 0 core 0
 * sends m bytes (as full packets, the last one partial) to core 0 of node
 * `dest`; the receiver compares the arrival time of the last packet with the
 * closed formula of the README (the receiver acknowledges with that time), computed here from the parameters:
 *
 *   wire(x) = roundup(header + x, chunk) + ack_overhead
 *   s(x)    = ceil(wire(x) * 1e12 / link_bw)                 [ps]
 *   T       = t0 + o + sum_k s(x_k) + (h - 1) * (max_k s(x_k) + L) + L
 *
 * where o = inj_overhead, the core time of the first post (the later posts
 * take o each too, but the link drains slower than the core posts, so the
 * link paces them: the formula needs o <= s(x_k), true of these cases).
 *
 * The ack travels the reverse path (other links), and the sender's clock
 * moves to its arrival, so the next case starts on idle links. Usage: job-timing m:dest [m:dest ...]
 */
#include "torus/emu.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tcase {
	uint64_t m;
	uint32_t dest;
};

static struct tcase cases[64];
static int ncases;

static uint64_t wire(const struct torus_params *p, uint64_t x)
{
	return (p->header_bytes + x + p->chunk_bytes - 1) / p->chunk_bytes * p->chunk_bytes + p->ack_overhead;
}

static uint64_t ser(const struct torus_params *p, uint64_t x)
{
	uint64_t num = wire(p, x) * 1000000000000ull;
	return num / p->link_bw + (num % p->link_bw != 0);
}

static uint64_t formula(const struct torus_params *p, uint64_t m, uint32_t h, uint64_t t0)
{
	uint64_t pay = p->max_packet - p->header_bytes;
	uint64_t npk = m ? (m + pay - 1) / pay : 1;
	uint64_t last = m - (npk - 1) * pay;
	uint64_t sum = (npk - 1) * ser(p, pay) + ser(p, last);
	uint64_t smax = npk > 1 ? ser(p, pay) : ser(p, last);
	return t0 + p->inj_overhead_ps + sum + (uint64_t)(h - 1) * (smax + p->hop_latency_ps) + p->hop_latency_ps;
}

static int send_blocking(emu_core_t *c, uint32_t node, const void *buf, size_t len)
{
	int rc;
	while ((rc = emu_pkt_send(c, node, 0, buf, len, 0, 0)) == -EAGAIN)
		if ((rc = emu_core_wait(c, EMU_EV_SEND, -1, NULL)) < 0)
			return rc;
	return rc;
}

static int recv_blocking(emu_core_t *c, struct emu_pkt_info *info, void *buf, size_t cap)
{
	int rc;
	while ((rc = emu_pkt_recv(c, info, buf, cap)) == -EAGAIN)
		if ((rc = emu_core_wait(c, EMU_EV_RECV, -1, NULL)) < 0)
			return rc;
	return rc;
}

static int timing(emu_core_t *c, void *arg)
{
	(void)arg;
	const struct torus_params *p = emu_params(c);
	uint32_t me = emu_node_rank(c);
	uint8_t buf[TORUS_MAX_PAYLOAD] = {0};
	struct emu_pkt_info info;
	uint32_t pay = torus_params_payload(p);
	int bad = 0;

	if (emu_core_index(c) != 0)
		return 0;
	for (int i = 0; i < ncases; i++) {
		struct tcase *t = &cases[i];
		if (me == 0) {
			uint64_t t0 = emu_core_now(c), last;
			uint64_t left = t->m;
			do {
				uint32_t len = left > pay ? pay : (uint32_t)left;
				if (send_blocking(c, t->dest, buf, len))
					return 1;
				left -= len;
			} while (left);
			/* the ack carries the arrival time of the last packet */
			if (recv_blocking(c, &info, buf, sizeof(buf)) || info.len != sizeof(last))
				return 1;
			memcpy(&last, buf, sizeof(last));
			uint32_t h = torus_hops(emu_shape(c), 0, t->dest);
			uint64_t want = formula(p, t->m, h, t0);
			printf("case m=%" PRIu64 " h=%u: t0=%" PRIu64 " ps completion=%" PRIu64 " ps formula=%" PRIu64 " ps %s\n",
			       t->m, h, t0, last, want, last == want ? "OK" : "MISMATCH");
			if (last != want)
				bad = 1;
		} else if (me == t->dest) {
			uint64_t left = t->m;
			torus_vt_t last = 0;
			do {
				if (recv_blocking(c, &info, buf, sizeof(buf)))
					return 1;
				last = info.arrival;
				left -= info.len;
			} while (left);
			memcpy(buf, &last, sizeof(last));
			if (send_blocking(c, 0, buf, sizeof(last)))
				return 1;
		}
	}
	fflush(stdout);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help")) {
		printf("usage: torusrun --torus DIMS -- job-timing m:dest [m:dest ...]\n");
		return argc < 2 ? 2 : 0;
	}
	for (int i = 1; i < argc && ncases < 64; i++) {
		char *end;
		cases[ncases].m = strtoull(argv[i], &end, 10);
		if (*end != ':') {
			fprintf(stderr, "job-timing: bad case '%s'\n", argv[i]);
			return 2;
		}
		cases[ncases].dest = (uint32_t)strtoul(end + 1, &end, 10);
		if (*end || cases[ncases].dest == 0) {
			fprintf(stderr, "job-timing: bad case '%s' (dest must be a node other than 0)\n", argv[i]);
			return 2;
		}
		ncases++;
	}
	return emu_job_main(argc, argv, timing, NULL);
}
