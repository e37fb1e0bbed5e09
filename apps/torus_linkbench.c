/*
 * torus-linkbench: packets/s and payload GB/s across one link between two
 * node processes, side by side with a plain shared-memory SPSC ring of
 * 256-byte slots in the same program.
 *
 *   torus-linkbench --mode ring     plain SPSC ring between two processes
 *   torus-linkbench --mode link     the emulator's link FIFO between two
 *                                   processes, doing what an engine does per
 *                                   packet: dateline VC, sideband, link
 *                                   counters, doorbells, sleeping when idle
 *   torusrun --torus 2 -- torus-linkbench --mode job
 *                                   the whole emulated path: core -> injection
 *                                   FIFO -> engine -> link -> engine ->
 *                                   reception FIFO -> core
 *
 * Each prints one line "mode packets seconds Mpkt/s payload_GB/s"; the
 * bench/ script runs them alternately and prints the table and ratios.
 */
#include "node.h"
#include "torus/dma.h"
#include "torus/emu.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAYLOAD 240u

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Producer on CPU 0, consumer on CPU 1 (when there are two), for both
 * the baseline and the link, so that neither depends on where the
 * scheduler happens to put a freshly forked process. */
static void pin(int cpu)
{
	cpu_set_t set;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void report(const char *mode, uint64_t n, double secs)
{
	printf("%s %llu %.6f %.3f %.3f\n", mode, (unsigned long long)n, secs, n / secs / 1e6,
	       n * (double)PAYLOAD / secs / 1e9);
	fflush(stdout);
}

/* ------------------------------------------------ plain SPSC ring baseline */

struct plain_ring {
	alignas(64) _Atomic uint32_t head;
	alignas(64) _Atomic uint32_t tail;
	alignas(64) uint8_t slot[][256];
};

static void relax(unsigned *spins)
{
	if (++*spins > 64) {
		sched_yield();
		*spins = 0;
	}
}

static int bench_ring(uint64_t n, uint32_t slots)
{
	size_t bytes = sizeof(struct plain_ring) + (size_t)slots * 256;
	struct plain_ring *r = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	_Atomic uint64_t *start = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED || start == MAP_FAILED)
		return 1;
	uint32_t mask = slots - 1;
	pid_t pid = fork();
	if (pid == 0) { /* consumer */
		pin(1);
		uint8_t buf[256];
		uint64_t sum = 0;
		uint32_t tail = 0;
		unsigned spins = 0;
		for (uint64_t i = 0; i < n; i++) {
			while (atomic_load_explicit(&r->head, memory_order_acquire) == tail)
				relax(&spins);
			memcpy(buf, r->slot[tail & mask], 16 + PAYLOAD);
			sum += buf[20];
			atomic_store_explicit(&r->tail, ++tail, memory_order_release);
		}
		_exit(sum == (uint64_t)-1);
	}
	uint8_t pkt[256];
	memset(pkt, 7, sizeof(pkt));
	uint32_t head = 0;
	unsigned spins = 0;
	pin(0);
	double t0 = now();
	for (uint64_t i = 0; i < n; i++) {
		while (head - atomic_load_explicit(&r->tail, memory_order_acquire) > mask)
			relax(&spins);
		memcpy(r->slot[head & mask], pkt, 16 + PAYLOAD);
		atomic_store_explicit(&r->head, ++head, memory_order_release);
	}
	int st;
	waitpid(pid, &st, 0);
	report("ring", n, now() - t0);
	munmap(r, bytes);
	return 0;
}

/* ------------------------------------------- emulator link, two processes */

static int bench_link(uint64_t n, uint32_t slots)
{
	struct torus_params p;
	struct torus_cost cost;
	torus_params_default(&p);
	torus_cost_init(&cost, &p);
	size_t ctl = sizeof(struct torus_link) + 2 * sizeof(struct emu_bell);
	size_t bytes = ctl + 2 * torus_ring_bytes(slots);
	void *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return 1;
	struct torus_link *l = base;
	struct emu_bell *prod_bell = (struct emu_bell *)(l + 1), *cons_bell = prod_bell + 1;
	torus_ring_init(&l->vc[0], slots, ctl);
	torus_ring_init(&l->vc[1], slots, ctl + torus_ring_bytes(slots));
	pid_t pid = fork();
	if (pid == 0) { /* consumer: the downstream engine */
		pin(1);
		struct torus_ring_view v;
		struct torus_side *side;
		alignas(64) uint8_t buf[256];
		uint64_t sum = 0;
		uint32_t idle = 0;
		torus_ring_view_init(&v, &l->vc[0], base, TORUS_RING_CONSUMER);
		for (uint64_t i = 0; i < n;) {
			struct torus_packet *pkt = torus_ring_peek(&v, &side);
			if (!pkt && torus_ring_publish_tail(&v))
				emu_bell_ring(prod_bell);
			if (!pkt && idle < EMU_IDLE_POLLS) {
				emu_idle_poll(idle++);
				continue;
			}
			if (!pkt) {
				idle = 0;
				uint32_t seq = emu_bell_prepare(cons_bell);
				if (torus_ring_peek(&v, &side))
					emu_bell_cancel(cons_bell);
				else
					emu_bell_sleep(cons_bell, seq, 100);
				continue;
			}
			idle = 0;
			torus_pkt_copy((struct torus_packet *)buf, pkt);
			sum += buf[20] + side->vt;
			torus_ring_release(&v);
			/* like the engine: hand slots back once per batch */
			if (++i % EMU_PUBLISH_EVERY == 0 && torus_ring_publish_tail(&v))
				emu_bell_ring(prod_bell);
		}
		if (torus_ring_publish_tail(&v))
			emu_bell_ring(prod_bell);
		_exit(sum == (uint64_t)-1);
	}
	struct torus_ring_view v;
	struct torus_side *side;
	struct torus_packet src;
	memset(&src, 7, sizeof(src));
	src.hdr.len = PAYLOAD;
	torus_ring_view_init(&v, &l->vc[0], base, TORUS_RING_PRODUCER);
	pin(0);
	double t0 = now();
	uint32_t idle = 0;
	for (uint64_t i = 0; i < n;) {
		struct torus_packet *dst = torus_ring_reserve(&v, &side);
		if (!dst && torus_ring_publish_head(&v))
			emu_bell_ring(cons_bell);
		if (!dst && idle < EMU_IDLE_POLLS) {
			emu_idle_poll(idle++);
			continue;
		}
		if (!dst) {
			idle = 0;
			uint32_t seq = emu_bell_prepare(prod_bell);
			if (torus_ring_mark_full(&v))
				emu_bell_cancel(prod_bell);
			else
				emu_bell_sleep(prod_bell, seq, 100);
			continue;
		}
		idle = 0;
		torus_pkt_copy(dst, &src);
		torus_pkt_set_vc(&dst->hdr, 0);
		torus_link_count_traffic(l, src.hdr.len, cost.wire[src.hdr.len]);
		side->vt = i;
		side->tag = 0;
		torus_ring_commit(&v);
		/* like the engine: publish every few packets, ring once per batch */
		if (++i % EMU_PUBLISH_EVERY == 0)
			torus_ring_publish_head(&v);
		if (i % emu_engine_batch(slots) == 0)
			emu_bell_ring(cons_bell);
	}
	if (torus_ring_publish_head(&v))
		emu_bell_ring(cons_bell);
	int st;
	waitpid(pid, &st, 0);
	double secs = now() - t0;
	struct torus_link_counters c;
	torus_link_read(l, &c);
	if (c.packets != n) {
		fprintf(stderr, "torus-linkbench: link counted %llu packets, sent %llu\n", (unsigned long long)c.packets,
			(unsigned long long)n);
		return 1;
	}
	report("link", n, secs);
	munmap(base, bytes);
	return 0;
}

/* ------------------------------------------------- whole emulated path */

static uint64_t job_packets;

static int job_core(emu_core_t *c, void *arg)
{
	(void)arg;
	uint8_t buf[TORUS_MAX_PAYLOAD];
	struct emu_pkt_info info;
	memset(buf, 7, sizeof(buf));
	if (emu_core_index(c) != 0)
		return 0;
	double t0 = now();
	if (emu_node_rank(c) == 0) {
		for (uint64_t i = 0; i < job_packets;) {
			int rc = emu_pkt_send(c, 1, 0, buf, PAYLOAD, 0, TORUS_HINT_PLUS);
			if (rc == -EAGAIN) {
				if (emu_core_wait(c, EMU_EV_SEND, -1, NULL) < 0)
					return 1;
				continue;
			}
			if (rc)
				return 1;
			i++;
		}
	} else if (emu_node_rank(c) == 1) {
		for (uint64_t i = 0; i < job_packets;) {
			int rc = emu_pkt_recv(c, &info, buf, sizeof(buf));
			if (rc == -EAGAIN) {
				if (emu_core_wait(c, EMU_EV_RECV, -1, NULL) < 0)
					return 1;
				continue;
			}
			if (rc < 0 || info.len != PAYLOAD)
				return 1;
			i++;
		}
		report("job", job_packets, now() - t0);
		printf("job-emulated %llu packets in %.3f us of virtual time: %.1f MB/s payload\n",
		       (unsigned long long)job_packets, emu_core_now(c) / 1e6,
		       job_packets * (double)PAYLOAD / (emu_core_now(c) * 1e-12) / 1e6);
	}
	return 0;
}

/* ------------------------------------------------ DMA direct put, 1 MiB */

static uint64_t put_msg = 1u << 20;

static int put_core(emu_core_t *c, void *arg)
{
	(void)arg;
	uint64_t total = job_packets * PAYLOAD;
	uint64_t nmsg = (total + put_msg - 1) / put_msg;
	uint8_t *buf = malloc(put_msg);
	uint32_t reg, cnt, inj;
	dma_injfifo_t *f;
	if (emu_core_index(c) != 0)
		return dma_barrier(c) || dma_barrier(c);
	if (!buf || dma_mem_register(c, buf, put_msg, &reg) || dma_counter_alloc(c, &cnt) ||
	    dma_counter_alloc(c, &inj) || dma_injfifo_open(c, 0, &f))
		return 1;
	memset(buf, 7, put_msg);
	if (emu_node_rank(c) == 1)
		dma_counter_add(c, cnt, (int64_t)(nmsg * put_msg));
	if (dma_barrier(c))
		return 1;
	double t0 = now();
	if (emu_node_rank(c) == 0) {
		dma_counter_add(c, inj, (int64_t)(nmsg * put_msg));
		for (uint64_t i = 0; i < nmsg; i++) {
			struct dma_desc d;
			/* every message lands on the same receive buffer: bandwidth only */
			dma_desc_put(&d, 1, buf, put_msg, reg, 0, cnt, inj);
			d.hints = TORUS_HINT_PLUS;
			if (dma_injfifo_post(f, &d, DMA_POST_WAIT))
				return 1;
		}
		if (dma_counter_wait(c, inj))
			return 1;
	} else if (emu_node_rank(c) == 1) {
		if (dma_counter_wait(c, cnt))
			return 1;
		uint64_t pk = nmsg * ((put_msg + PAYLOAD - 1) / PAYLOAD);
		report("put", pk, now() - t0);
	}
	int rc = dma_barrier(c);
	free(buf);
	return rc;
}

/* ------------------------------------- descriptor post rate per core */

/* Static, not on a core's stack: the puts are posted without waiting, so
 * node 1's engine may still deposit into it (and node 0's read from it)
 * after the core functions have returned. */
static uint8_t post_word[8];

static int post_core(emu_core_t *c, void *arg)
{
	(void)arg;
	uint32_t reg, cnt;
	uint8_t *word = post_word;
	dma_injfifo_t *f;
	if (dma_mem_register(c, word, sizeof(post_word), &reg) || dma_counter_alloc(c, &cnt) || dma_injfifo_open(c, 0, &f))
		return 1;
	if (dma_barrier(c))
		return 1;
	if (emu_node_rank(c) == 0) {
		/* 8-byte puts to the same core of node 1; sleeping on a full FIFO
		 * is part of the rate (the engine must keep up) */
		double t0 = now();
		for (uint64_t i = 0; i < job_packets; i++) {
			struct dma_desc d;
			dma_desc_put(&d, 1, word, sizeof(post_word), reg, 0, DMA_NO_COUNTER, DMA_NO_COUNTER);
			if (dma_injfifo_post(f, &d, DMA_POST_WAIT))
				return 1;
		}
		double secs = now() - t0;
		printf("post %llu %.6f %.3f core%u\n", (unsigned long long)job_packets, secs, job_packets / secs / 1e6,
		       emu_core_index(c));
		fflush(stdout);
	}
	return dma_barrier(c);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: torus-linkbench --mode ring|link [--packets N] [--slots S]\n"
		   "       torusrun --torus 2 -- torus-linkbench --mode job|put [--packets N]\n"
		   "       torusrun --torus 2 --cores C -- torus-linkbench --mode post [--packets N]\n\n"
		   "put: DMA direct puts of 1 MiB messages from node 0 to node 1 (N packets'\n"
		   "worth of payload); post: descriptors posted per second by each core of node 0.\n"
		   "Packets/s and payload GB/s of 240-byte-payload packets across one link between\n"
		   "two processes: a plain SPSC ring, the emulator's link FIFO, or the whole\n"
		   "emulated path (under torusrun). Defaults: 2000000 packets, 32 slots.\n");
}

int main(int argc, char **argv)
{
	const char *mode = NULL;
	uint64_t n = 2000000;
	unsigned long slots = 32;
	for (int i = 1; i < argc; i++) {
		char *end = NULL;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
			mode = argv[++i];
		} else if (!strcmp(argv[i], "--packets") && i + 1 < argc) {
			n = strtoull(argv[++i], &end, 10);
			if (*end || n == 0)
				mode = "bad";
		} else if (!strcmp(argv[i], "--slots") && i + 1 < argc) {
			slots = strtoul(argv[++i], &end, 10);
			if (*end || !slots || (slots & (slots - 1)) || slots > 65536)
				mode = "bad";
		} else {
			mode = "bad";
		}
	}
	if (mode && !strcmp(mode, "ring"))
		return bench_ring(n, (uint32_t)slots);
	if (mode && !strcmp(mode, "link"))
		return bench_link(n, (uint32_t)slots);
	if (mode && !strcmp(mode, "job")) {
		job_packets = n;
		return emu_job_main(argc, argv, job_core, NULL);
	}
	if (mode && !strcmp(mode, "put")) {
		job_packets = n;
		return emu_job_main(argc, argv, put_core, NULL);
	}
	if (mode && !strcmp(mode, "post")) {
		job_packets = n;
		return emu_job_main(argc, argv, post_core, NULL);
	}
	fprintf(stderr, "torus-linkbench: give --mode ring|link|job|put|post with valid --packets/--slots (see --help)\n");
	return 2;
}
