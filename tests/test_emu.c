/*
 * Unit tests of emu/ internals that run in one process: the NUMA plan, the
 * shared-memory layout, creation and attachment of a job's shared memory,
 * doorbells (threads and processes) and torusrun's command-line parser.
 *
 * Expected values are derived independently in the test, never copied from
 * the library's output.
 */
#include "cunit_main.h"
#include "test_rng.h"
#include "emu_internal.h"
#include "../dma/dma_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ helpers */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Machine shapes: 1-D to 6-D, sizes 1, 2, odd, even. */
static const char *const shapes[] = {
	"1", "2", "3", "8", "4x4", "2x2x2", "3x5x7", "4x4x4", "2x2x2x2x2", "2x3x2x2x3x2", "1x4x1", "5x1x2",
};
#define NSHAPES CUNIT_COUNT(shapes)

static bool get_shape(const char *text, struct torus_shape *s)
{
	char err[256] = "";
	int rc = torus_shape_parse(text, s, err, sizeof(err));
	return EXPECT(rc == 0, "torus_shape_parse(\"%s\") = %d (%s)", text, rc, err);
}

/* Cores maps used with every shape. */
enum { CORES_ONE, CORES_FOUR, CORES_UNEVEN, NCORESMAPS };
static uint32_t *make_cores(uint32_t nnodes, int kind)
{
	uint32_t *c = malloc((size_t)nnodes * sizeof(uint32_t));
	if (!c)
		return NULL;
	for (uint32_t r = 0; r < nnodes; r++)
		c[r] = kind == CORES_ONE ? 1 : kind == CORES_FOUR ? 4 : (r * 7u) % 5u + 1u;
	return c;
}

/* ------------------------------------------------------------- NUMA */

static void test_numa_plan(void)
{
	static const uint32_t cases[][2] = {
		{64, 1}, {64, 2}, {64, 4}, {7, 3}, {3, 8}, {4096, 4}, {1, 1}, {1, 4}, {5, 5}, {100, 7},
		{65536, 3}, {65536, 8}, {10, 0}, {2, 2}, {9, 4},
	};
	for (size_t i = 0; i < CUNIT_COUNT(cases); i++) {
		uint32_t n = cases[i][0], k = cases[i][1], keff = k ? k : 1;
		int *out = malloc(((size_t)n + 1) * sizeof(int));
		uint32_t *count = calloc(keff, sizeof(uint32_t));
		if (!EXPECT(out && count, "out of memory")) {
			free(out);
			free(count);
			continue;
		}
		for (uint32_t r = 0; r <= n; r++)
			out[r] = -77;
		emu_numa_plan(n, k, out);
		EXPECT(out[n] == -77, "plan(%u,%u) wrote past the end", n, k);
		bool inrange = true, monotone = true;
		for (uint32_t r = 0; r < n; r++) {
			if (out[r] < 0 || (uint32_t)out[r] >= keff) {
				inrange = EXPECT(false, "plan(%u,%u)[%u] = %d out of [0,%u)", n, k, r, out[r], keff);
				continue;
			}
			count[out[r]]++;
			if (r > 0 && out[r] < out[r - 1])
				monotone = EXPECT(false, "plan(%u,%u): rank %u on %d after rank %u on %d", n, k, r, out[r],
						  r - 1, out[r - 1]);
		}
		EXPECT(inrange && monotone, "plan(%u,%u) not contiguous blocks in range", n, k);
		if (n >= keff) {
			uint32_t lo = UINT32_MAX, hi = 0;
			for (uint32_t j = 0; j < keff; j++) {
				EXPECT(count[j] > 0, "plan(%u,%u): NUMA node %u unused", n, k, j);
				lo = count[j] < lo ? count[j] : lo;
				hi = count[j] > hi ? count[j] : hi;
			}
			EXPECT(hi - lo <= 1, "plan(%u,%u): block sizes %u..%u differ by more than one", n, k, lo, hi);
		} else {
			/* fewer torus nodes than NUMA nodes: each gets its own */
			for (uint32_t j = 0; j < keff; j++)
				EXPECT(count[j] <= 1, "plan(%u,%u): NUMA node %u got %u nodes while others are empty", n, k,
				       j, count[j]);
		}
		free(out);
		free(count);
	}
}

/* ---------------------------------------------------------- layout */

/* Bytes of a node's region according to the documented layout. */
/* A node region's minimum: its control blocks and its cores' DMA blocks. */
static uint64_t my_region_min(const struct torus_shape *s, const struct torus_params *p, uint32_t ncores)
{
	uint64_t b = sizeof(struct emu_node_shm) + (uint64_t)ncores * sizeof(struct emu_core_shm) +
		     (uint64_t)2 * s->ndims * sizeof(struct torus_link);
	/* each core's DMA block, 64-byte aligned: its tables must fit in it */
	uint64_t dma = dma_core_shm_bytes(p);
	uint64_t tables = (uint64_t)p->inj_fifos * sizeof(struct torus_ring) +
			  (uint64_t)p->dma_counters * sizeof(struct dma_counter_shm) +
			  (uint64_t)p->dma_regions * sizeof(struct dma_region_shm);
	EXPECT(dma >= tables + sizeof(struct dma_core_shm), "DMA block %llu bytes < its parts %llu",
	       (unsigned long long)dma, (unsigned long long)tables);
	b += (uint64_t)ncores * (dma + 64);
	return b;
}

/* A slot block's minimum: the slots of the node's link and core rings. */
static uint64_t my_slots_min(const struct torus_shape *s, const struct torus_params *p, uint32_t ncores)
{
	uint64_t b = 0;
	for (uint32_t d = 0; d < s->ndims; d++)
		if (s->dims[d] > 1)
			b += 2 /* dirs */ * 2 /* VCs */ * (uint64_t)p->fifo_slots *
			     (TORUS_SLOT_BYTES + sizeof(struct torus_side));
	b += (uint64_t)ncores * (p->inj_slots + p->rx_slots) * (TORUS_SLOT_BYTES + sizeof(struct torus_side));
	/* and each core's DMA rings: the memory FIFO and the injection FIFOs */
	uint64_t dma_rings = (uint64_t)(p->rx_slots + p->inj_fifos * p->inj_slots) *
			     (TORUS_SLOT_BYTES + sizeof(struct torus_side));
	EXPECT(dma_core_slot_bytes(p) >= dma_rings, "DMA slots %llu bytes < its rings %llu",
	       (unsigned long long)dma_core_slot_bytes(p), (unsigned long long)dma_rings);
	b += (uint64_t)ncores * dma_core_slot_bytes(p);
	return b;
}

/* Blocks at off[0..n) follow one another up to end, page aligned, each
 * at least need(cores) and less than a page more. */
static void check_blocks(const char *what, const char *shape, int kind, const struct torus_shape *s,
			 const struct torus_params *p, const uint32_t *cores, const uint64_t *off, uint64_t end,
			 uint64_t (*need)(const struct torus_shape *, const struct torus_params *, uint32_t))
{
	for (uint32_t r = 0; r < s->nnodes; r++) {
		uint64_t e = r + 1 < s->nnodes ? off[r + 1] : end;
		EXPECT(off[r] % EMU_PAGE == 0, "%s/%d: node %u %s offset %llu not page aligned", shape, kind, r, what,
		       (unsigned long long)off[r]);
		if (!EXPECT(e > off[r], "%s/%d: node %u %s empty or offsets not increasing", shape, kind, r, what))
			continue;
		uint64_t got = e - off[r], want = need(s, p, cores[r]);
		EXPECT(got >= want && got < want + EMU_PAGE, "%s/%d: node %u %s %llu bytes, layout needs %llu (page-rounded)",
		       shape, kind, r, what, (unsigned long long)got, (unsigned long long)want);
	}
}

static void test_shm_layout(void)
{
	struct torus_params p;
	torus_params_default(&p);
	for (size_t i = 0; i < NSHAPES; i++) {
		struct torus_shape s;
		if (!get_shape(shapes[i], &s))
			continue;
		for (int kind = 0; kind < NCORESMAPS; kind++) {
			uint32_t *cores = make_cores(s.nnodes, kind);
			uint64_t *off = malloc(((size_t)s.nnodes + 1) * sizeof(uint64_t));
			uint64_t *slot = malloc(((size_t)s.nnodes + 1) * sizeof(uint64_t));
			if (!EXPECT(cores && off && slot, "out of memory")) {
				free(cores);
				free(off);
				free(slot);
				continue;
			}
			off[s.nnodes] = slot[s.nnodes] = 0xDEADBEEFull;
			uint64_t total = emu_shm_layout(&s, &p, cores, off, slot);
			uint64_t total2 = emu_shm_layout(&s, &p, cores, NULL, NULL);
			EXPECT(total == total2, "%s/%d: layout total differs without offsets", shapes[i], kind);
			EXPECT(off[s.nnodes] == 0xDEADBEEFull && slot[s.nnodes] == 0xDEADBEEFull,
			       "%s/%d: wrote past an offset table", shapes[i], kind);
			EXPECT(off[0] >= sizeof(struct emu_shm_hdr) + (uint64_t)s.nnodes * sizeof(uint64_t),
			       "%s/%d: node 0 at %llu overlaps the header and node table", shapes[i], kind,
			       (unsigned long long)off[0]);
			EXPECT(total % EMU_PAGE == 0, "%s/%d: total %llu not page aligned", shapes[i], kind,
			       (unsigned long long)total);
			/* the regions, then the slot blocks */
			check_blocks("region", shapes[i], kind, &s, &p, cores, off, slot[0], my_region_min);
			check_blocks("slot block", shapes[i], kind, &s, &p, cores, slot, total, my_slots_min);
			EXPECT(total > slot[s.nnodes - 1], "%s/%d: total %llu not past the last slot block", shapes[i],
			       kind, (unsigned long long)total);
			/* nodes with more cores get bigger regions, equal cores equal regions */
			for (uint32_t a = 0; a < s.nnodes && a < 40; a++)
				for (uint32_t b = 0; b < s.nnodes && b < 40; b++) {
					uint64_t ra = (a + 1 < s.nnodes ? off[a + 1] : slot[0]) - off[a];
					uint64_t rb = (b + 1 < s.nnodes ? off[b + 1] : slot[0]) - off[b];
					uint64_t sa = (a + 1 < s.nnodes ? slot[a + 1] : total) - slot[a];
					uint64_t sb = (b + 1 < s.nnodes ? slot[b + 1] : total) - slot[b];
					if (cores[a] > cores[b])
						EXPECT(ra > rb && sa > sb,
						       "%s/%d: node %u (%u cores) region %llu + %llu not bigger than node %u "
						       "(%u cores) %llu + %llu",
						       shapes[i], kind, a, cores[a], (unsigned long long)ra,
						       (unsigned long long)sa, b, cores[b], (unsigned long long)rb,
						       (unsigned long long)sb);
					else if (cores[a] == cores[b])
						EXPECT(ra == rb && sa == sb, "%s/%d: equal nodes %u and %u differ", shapes[i],
						       kind, a, b);
				}
			free(cores);
			free(off);
			free(slot);
		}
	}
}

/* --------------------------------------------------- create and attach */

struct range {
	uint64_t lo, hi;
	const char *what;
};

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Check one ring's control block and collect its slot range. */
static void ring_check(const struct torus_ring *rg, uint32_t slots, const char *what, const char *shape, uint32_t r,
		       struct range *ranges, size_t *nr)
{
	EXPECT(rg->slots == slots, "%s: node %u %s has %u slots, expected %u", shape, r, what, rg->slots, slots);
	EXPECT(atomic_load(&rg->head) == 0 && atomic_load(&rg->tail) == 0 && atomic_load(&rg->want_space) == 0,
	       "%s: node %u %s not empty at start", shape, r, what);
	EXPECT(rg->off_side == rg->off_slots + (uint64_t)rg->slots * TORUS_SLOT_BYTES,
	       "%s: node %u %s sideband not after its slots", shape, r, what);
	EXPECT(rg->off_slots % 16 == 0, "%s: node %u %s slots misaligned (%llu)", shape, r, what,
	       (unsigned long long)rg->off_slots);
	ranges[*nr].lo = rg->off_slots;
	ranges[*nr].hi = rg->off_slots + torus_ring_bytes(rg->slots);
	ranges[*nr].what = what;
	(*nr)++;
}

static void check_job_memory(const char *shape_text, const struct torus_shape *s, const struct torus_params *p,
			     const uint32_t *cores, const struct emu_shm *m, const struct emu_shm *a)
{
	uint64_t *off = malloc((size_t)s->nnodes * 2 * sizeof(uint64_t)), *slot = off + s->nnodes;
	if (!EXPECT(off != NULL, "out of memory"))
		return;
	uint64_t total = emu_shm_layout(s, p, cores, off, slot);
	uint32_t sum = 0, maxc = 0;
	for (uint32_t r = 0; r < s->nnodes; r++) {
		sum += cores[r];
		maxc = cores[r] > maxc ? cores[r] : maxc;
	}

	/* both mappings see the same header */
	const struct emu_shm *maps[2] = {m, a};
	for (int k = 0; k < 2; k++) {
		const struct emu_shm_hdr *h = maps[k]->hdr;
		EXPECT(h->magic == EMU_SHM_MAGIC, "%s map %d: magic %#llx", shape_text, k, (unsigned long long)h->magic);
		EXPECT(h->version == EMU_SHM_VERSION, "%s map %d: version %u", shape_text, k, h->version);
		EXPECT(h->nnodes == s->nnodes, "%s map %d: nnodes %u", shape_text, k, h->nnodes);
		EXPECT(memcmp(&h->shape, s, sizeof(*s)) == 0, "%s map %d: shape differs", shape_text, k);
		EXPECT(memcmp(&h->params, p, sizeof(*p)) == 0, "%s map %d: params differ", shape_text, k);
		EXPECT(h->total_bytes == total && maps[k]->bytes == total, "%s map %d: %llu/%zu bytes, layout says %llu",
		       shape_text, k, (unsigned long long)h->total_bytes, maps[k]->bytes, (unsigned long long)total);
		EXPECT(h->total_cores == sum && h->max_cores == maxc, "%s map %d: cores %u/%u, expected %u/%u",
		       shape_text, k, h->total_cores, h->max_cores, sum, maxc);
		EXPECT(atomic_load(&h->shutdown) == 0 && atomic_load(&h->abort) == 0, "%s map %d: flags set", shape_text,
		       k);
		for (uint32_t r = 0; r < s->nnodes; r++)
			EXPECT(maps[k]->node_off[r] == off[r], "%s map %d: node %u at %llu, layout says %llu", shape_text,
			       k, r, (unsigned long long)maps[k]->node_off[r], (unsigned long long)off[r]);
		EXPECT(h->off_slots == slot[0] && h->slots_bytes == total - slot[0],
		       "%s map %d: slot area [%llu,+%llu), layout says [%llu,%llu)", shape_text, k,
		       (unsigned long long)h->off_slots, (unsigned long long)h->slots_bytes, (unsigned long long)slot[0],
		       (unsigned long long)total);
	}
	EXPECT(m->base != a->base, "%s: attach did not map a second time", shape_text);

	size_t cap = 4 * TORUS_MAX_DIMS + (3 + (size_t)p->inj_fifos) * (maxc + 1);
	struct range *ranges = malloc(cap * sizeof(*ranges));
	if (!EXPECT(ranges != NULL, "out of memory")) {
		free(off);
		return;
	}
	for (uint32_t r = 0; r < s->nnodes; r++) {
		struct emu_node_shm *n = emu_shm_node(a, r);
		uint64_t end = r + 1 < s->nnodes ? off[r + 1] : slot[0];
		uint64_t slot_end = r + 1 < s->nnodes ? slot[r + 1] : total;
		EXPECT(n->off_slot_block == slot[r] && n->slot_block_bytes == slot_end - slot[r],
		       "%s: node %u slot block [%llu,+%llu), layout gives [%llu,%llu)", shape_text, r,
		       (unsigned long long)n->off_slot_block, (unsigned long long)n->slot_block_bytes,
		       (unsigned long long)slot[r], (unsigned long long)slot_end);
		EXPECT(n->rank == r, "%s: node %u block says rank %u", shape_text, r, n->rank);
		EXPECT(n->ncores == cores[r], "%s: node %u has %u cores, expected %u", shape_text, r, n->ncores, cores[r]);
		EXPECT(n->region_bytes == end - off[r], "%s: node %u region_bytes %llu, layout gives %llu", shape_text, r,
		       (unsigned long long)n->region_bytes, (unsigned long long)(end - off[r]));
		EXPECT(atomic_load(&n->state) == EMU_NODE_NEW, "%s: node %u state %u", shape_text, r,
		       atomic_load(&n->state));
		EXPECT(n->off_cores >= off[r] + sizeof(*n), "%s: node %u cores overlap the node block", shape_text, r);
		EXPECT(n->off_links_in >= n->off_cores + (uint64_t)n->ncores * sizeof(struct emu_core_shm),
		       "%s: node %u links overlap the core blocks", shape_text, r);
		uint64_t ctl_end = n->off_links_in + (uint64_t)2 * s->ndims * sizeof(struct torus_link);
		EXPECT(ctl_end <= end, "%s: node %u's links end past its region", shape_text, r);
		size_t nr = 0;

		for (uint32_t d = 0; d < s->ndims; d++)
			for (uint32_t dir = 0; dir < 2; dir++) {
				struct torus_link *l = emu_shm_link_in(a, r, d, dir);
				uint32_t from = torus_neighbor(s, r, d, dir == TORUS_PLUS ? TORUS_MINUS : TORUS_PLUS);
				EXPECT(l->to == r && l->dim == d && l->dir == dir,
				       "%s: node %u in-link (%u,%u) says to %u dim %u dir %u", shape_text, r, d, dir, l->to,
				       l->dim, l->dir);
				EXPECT(l->from == from, "%s: node %u in-link (%u,%c) from %u, expected %u", shape_text, r, d,
				       dir ? '-' : '+', l->from, from);
				struct torus_link *out = emu_shm_link_out(a, r, d, dir);
				EXPECT(out->from == r, "%s: out-link of %u along (%u,%c) starts at %u", shape_text, r, d,
				       dir ? '-' : '+', out->from);
				EXPECT(emu_shm_link_out(a, l->from, d, dir) == l, "%s: out-link of %u is not in-link of %u",
				       shape_text, l->from, r);
				EXPECT(atomic_load(&l->packets) == 0 && atomic_load(&l->free_at) == 0,
				       "%s: node %u link counters not zero", shape_text, r);
				if (s->dims[d] > 1)
					for (int vc = 0; vc < 2; vc++)
						ring_check(&l->vc[vc], p->fifo_slots, "link ring", shape_text, r, ranges, &nr);
			}
		for (uint32_t c = 0; c < n->ncores; c++) {
			struct emu_core_shm *co = emu_shm_core(a, n, c);
			EXPECT(atomic_load(&co->state) == EMU_CORE_RUNNING && atomic_load(&co->sent) == 0,
			       "%s: node %u core %u not fresh", shape_text, r, c);
			ring_check(&co->inj, p->inj_slots, "injection ring", shape_text, r, ranges, &nr);
			ring_check(&co->rx, p->rx_slots, "reception ring", shape_text, r, ranges, &nr);
			struct dma_core_shm *dm = (struct dma_core_shm *)((char *)a->base + co->off_dma);
			ring_check(&dm->memfifo, p->rx_slots, "DMA memory FIFO", shape_text, r, ranges, &nr);
			for (uint32_t i = 0; i < p->inj_fifos; i++)
				ring_check(dma_shm_injfifo(a->base, dm, i), p->inj_slots, "DMA injection FIFO", shape_text, r,
					   ranges, &nr);
		}
		/* every ring's memory lies in the node's slot block, disjoint */
		qsort(ranges, nr, sizeof(*ranges), range_cmp);
		for (size_t k = 0; k < nr; k++) {
			EXPECT(ranges[k].lo >= slot[r] && ranges[k].hi <= slot_end,
			       "%s: node %u %s [%llu,%llu) outside its slot block [%llu,%llu)", shape_text, r,
			       ranges[k].what, (unsigned long long)ranges[k].lo, (unsigned long long)ranges[k].hi,
			       (unsigned long long)slot[r], (unsigned long long)slot_end);
			if (k > 0)
				EXPECT(ranges[k].lo >= ranges[k - 1].hi, "%s: node %u rings overlap (%s and %s)", shape_text, r,
				       ranges[k - 1].what, ranges[k].what);
		}
	}
	free(ranges);
	free(off);
}

static char *read_all(FILE *f, size_t *len)
{
	long sz;
	fflush(f);
	if (fseek(f, 0, SEEK_END) || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		return NULL;
	char *buf = malloc((size_t)sz + 1);
	if (!buf)
		return NULL;
	*len = fread(buf, 1, (size_t)sz, f);
	buf[*len] = '\0';
	return buf;
}

/* Is [lo, hi) of m mapped from the job's file: 1 every page (a shared
 * read-write mapping in /proc/self/maps), 0 none (emu_shm_trim's
 * inaccessible private reservation), -2 mixed or absent, -1 if the range
 * holds no whole page (inward) or touches none (outward). */
static int mapped(const struct emu_shm *m, uint64_t lo, uint64_t hi, int whole_pages_only)
{
	uintptr_t a = (uintptr_t)m->base +
		      (whole_pages_only ? (lo + EMU_PAGE - 1) / EMU_PAGE * EMU_PAGE : lo / EMU_PAGE * EMU_PAGE);
	uintptr_t z = (uintptr_t)m->base +
		      (whole_pages_only ? hi / EMU_PAGE * EMU_PAGE : (hi + EMU_PAGE - 1) / EMU_PAGE * EMU_PAGE);
	if (z <= a)
		return -1;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -2;
	char line[512];
	int shared = 0, reserved = 0;
	uintptr_t covered = a;
	/* the lines are sorted: walk the ones that overlap [a, z) */
	while (covered < z && fgets(line, sizeof(line), f)) {
		unsigned long s0, e0;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &s0, &e0, perms) != 3 || e0 <= covered || s0 >= z)
			continue;
		if (s0 > covered)
			break; /* a hole */
		shared |= !strcmp(perms, "rw-s");
		reserved |= !strcmp(perms, "---p");
		if (strcmp(perms, "rw-s") && strcmp(perms, "---p"))
			reserved = shared = 1; /* something else: mixed */
		covered = e0;
	}
	fclose(f);
	if (covered < z || shared == reserved)
		return -2;
	return shared;
}

/* After emu_shm_trim(rank), the slot area keeps the node's own block and
 * its outgoing links' rings, whole; every other ring's whole pages are
 * gone; every node's region (the tables) stays. Then damaged offsets are
 * refused. */
static void check_trim(const char *shape, const struct torus_shape *s, int fd, struct emu_shm *m, uint32_t rank)
{
	struct emu_shm b;
	char err[256] = "";
	if (!EXPECT(emu_shm_attach(fd, &b, err, sizeof(err)) == 0, "%s: attach: %s", shape, err))
		return;
	int rc = emu_shm_trim(&b, rank, err, sizeof(err));
	EXPECT(rc == 0, "%s: emu_shm_trim(%u) = %d (%s)", shape, rank, rc, err);
	uint32_t kept = 0, gone = 0;
	for (uint32_t t = 0; !rc && t < s->nnodes; t++) {
		struct emu_node_shm *n = emu_shm_node(&b, t);
		EXPECT(mapped(&b, b.node_off[t], b.node_off[t] + n->region_bytes, 0) == 1,
		       "%s: trim(%u) unmapped node %u's region", shape, rank, t);
		const struct torus_ring *rings[4 * TORUS_MAX_DIMS + (3 + 32) * TORUS_MAX_CORES];
		int keep[4 * TORUS_MAX_DIMS + (3 + 32) * TORUS_MAX_CORES];
		uint32_t nr = 0;
		for (uint32_t d = 0; d < s->ndims; d++)
			for (uint32_t dir = 0; torus_dim_has_links(s, d) && dir < 2; dir++) {
				const struct torus_link *l = emu_shm_link_in(&b, t, d, dir);
				for (int vc = 0; vc < 2; vc++, nr++) {
					rings[nr] = &l->vc[vc];
					keep[nr] = t == rank || l->from == rank;
				}
			}
		for (uint32_t c = 0; c < n->ncores; c++) {
			struct emu_core_shm *co = emu_shm_core(&b, n, c);
			rings[nr] = &co->inj, keep[nr++] = t == rank;
			rings[nr] = &co->rx, keep[nr++] = t == rank;
			struct dma_core_shm *dm = (struct dma_core_shm *)((char *)b.base + co->off_dma);
			rings[nr] = &dm->memfifo, keep[nr++] = t == rank;
			for (uint32_t i = 0; i < dm->ninj && i < 32; i++)
				rings[nr] = dma_shm_injfifo(b.base, dm, i), keep[nr++] = t == rank;
		}
		for (uint32_t i = 0; i < nr; i++) {
			uint64_t lo = rings[i]->off_slots, hi = lo + torus_ring_bytes(rings[i]->slots);
			int got = mapped(&b, lo, hi, !keep[i]);
			if (keep[i])
				kept += EXPECT(got == 1, "%s: trim(%u): node %u ring %u [%llu,%llu) not mapped (%d)", shape,
					       rank, t, i, (unsigned long long)lo, (unsigned long long)hi, got);
			else if (got != -1)
				gone += EXPECT(got == 0, "%s: trim(%u): node %u ring %u [%llu,%llu) not reserved (%d)",
					       shape, rank, t, i, (unsigned long long)lo, (unsigned long long)hi, got);
		}
	}
	/* its own rings (a core's: injection, reception, memory FIFO and the
	 * DMA injection FIFOs), and its outgoing links' */
	uint32_t want = (3 + m->hdr->params.inj_fifos) * emu_shm_node(&b, rank)->ncores;
	for (uint32_t d = 0; d < s->ndims; d++)
		want += torus_dim_has_links(s, d) ? 4 + 4 : 0;
	EXPECT(kept == want, "%s: trim(%u) kept %u rings, expected %u", shape, rank, kept, want);
	EXPECT(s->nnodes < 3 || gone > 0, "%s: trim(%u) unmapped no ring of %u nodes", shape, rank, s->nnodes);
	emu_shm_detach(&b);

	/* damaged: the node's block, or a link ring, outside the slot area */
	struct emu_node_shm *n = emu_shm_node(m, rank);
	uint64_t save = n->off_slot_block;
	n->off_slot_block = m->hdr->off_slots + m->hdr->slots_bytes;
	if (EXPECT(emu_shm_attach(fd, &b, err, sizeof(err)) == 0, "%s: attach: %s", shape, err)) {
		rc = emu_shm_trim(&b, rank, err, sizeof(err));
		EXPECT(rc == -EINVAL && strstr(err, "slot block"), "%s: trim with a damaged slot block: %d (%s)", shape,
		       rc, err);
		emu_shm_detach(&b);
	}
	n->off_slot_block = save;
	for (uint32_t d = 0; d < s->ndims; d++) {
		if (!torus_dim_has_links(s, d))
			continue;
		struct torus_link *l = emu_shm_link_out(m, rank, d, TORUS_PLUS);
		save = l->vc[1].off_slots;
		l->vc[1].off_slots = m->hdr->off_slots - EMU_PAGE;
		if (EXPECT(emu_shm_attach(fd, &b, err, sizeof(err)) == 0, "%s: attach: %s", shape, err)) {
			rc = emu_shm_trim(&b, rank, err, sizeof(err));
			EXPECT(rc == -EINVAL && strstr(err, "VC 1"), "%s: trim with a damaged link ring: %d (%s)", shape, rc,
			       err);
			emu_shm_detach(&b);
		}
		l->vc[1].off_slots = save;
		break;
	}
}

static void test_shm_create_attach(void)
{
	const char *psets[] = {NULL, "fifo_slots=4", "fifo_slots=1"};
	for (size_t ps = 0; ps < CUNIT_COUNT(psets); ps++)
		for (size_t i = 0; i < NSHAPES; i++) {
			struct torus_shape s;
			struct torus_params p;
			char err[256] = "";
			torus_params_default(&p);
			if (psets[ps])
				EXPECT(torus_params_set(&p, psets[ps], err, sizeof(err)) == 0, "%s: %s", psets[ps], err);
			if (!get_shape(shapes[i], &s))
				continue;
			int kind = (int)(i % NCORESMAPS);
			uint32_t *cores = make_cores(s.nnodes, kind);
			int *numa = malloc((size_t)s.nnodes * sizeof(int));
			if (!EXPECT(cores && numa, "out of memory")) {
				free(cores);
				free(numa);
				continue;
			}
			emu_numa_plan(s.nnodes, 2, numa);
			struct emu_shm m, a;
			int fd = -1;
			/* the NUMA plan is optional; exercise both */
			int rc = emu_shm_create(&s, &p, cores, ps ? numa : NULL, 0, &m, &fd, err, sizeof(err));
			if (!EXPECT(rc == 0 && fd >= 0, "%s: emu_shm_create = %d (%s)", shapes[i], rc, err)) {
				free(cores);
				free(numa);
				continue;
			}
			rc = emu_shm_attach(fd, &a, err, sizeof(err));
			if (EXPECT(rc == 0, "%s: emu_shm_attach = %d (%s)", shapes[i], rc, err)) {
				check_job_memory(shapes[i], &s, &p, cores, &m, &a);
				check_trim(shapes[i], &s, fd, &m, 0);
				check_trim(shapes[i], &s, fd, &m, s.nnodes / 2);

				/* a packet written through one mapping is read through the other */
				struct emu_node_shm *n0 = emu_shm_node(&m, 0);
				struct emu_core_shm *c0 = emu_shm_core(&m, n0, 0);
				struct torus_ring_view pv, cv;
				struct torus_side *side = NULL;
				torus_ring_view_init(&pv, &c0->inj, m.base, TORUS_RING_PRODUCER);
				struct torus_packet *pkt = torus_ring_reserve(&pv, &side);
				if (EXPECT(pkt != NULL, "%s: fresh injection FIFO full", shapes[i])) {
					pkt->hdr.dest = s.nnodes - 1;
					pkt->hdr.len = 3;
					memcpy(pkt->payload, "abc", 3);
					side->vt = 4242;
					torus_ring_commit(&pv);
					torus_ring_publish_head(&pv);
				}
				struct emu_core_shm *c0a = emu_shm_core(&a, emu_shm_node(&a, 0), 0);
				torus_ring_view_init(&cv, &c0a->inj, a.base, TORUS_RING_CONSUMER);
				struct torus_packet *got = torus_ring_peek(&cv, &side);
				EXPECT(got && got->hdr.dest == s.nnodes - 1 && got->hdr.len == 3 &&
					       memcmp(got->payload, "abc", 3) == 0 && side->vt == 4242,
				       "%s: packet not visible through the second mapping", shapes[i]);

				FILE *f = tmpfile();
				if (EXPECT(f != NULL, "tmpfile failed")) {
					emu_shm_dump(&a, f);
					size_t len = 0;
					char *text = read_all(f, &len);
					fclose(f);
					EXPECT(text && strstr(text, "node 0") != NULL, "%s: dump does not mention node 0",
					       shapes[i]);
					char want[64];
					snprintf(want, sizeof(want), "node %u (", s.nnodes - 1);
					EXPECT(text && strstr(text, want) != NULL, "%s: dump lacks \"%s\"", shapes[i], want);
					EXPECT(text && strstr(text, "injection FIFO") != NULL && strstr(text, "1/") != NULL,
					       "%s: dump does not show the queued packet", shapes[i]);
					free(text);
				}
				if (got) {
					torus_ring_release(&cv);
					torus_ring_publish_tail(&cv);
				}
				/* every node's first core rank, from the dense table */
				uint32_t sum = 0, bad = 0;
				for (uint32_t r = 0; r < s.nnodes; r++) {
					bad += a.first_core[r] != sum || emu_shm_node(&a, r)->ncores != cores[r];
					sum += cores[r];
				}
				EXPECT(bad == 0 && a.first_core[s.nnodes] == sum && sum == a.hdr->total_cores,
				       "%s: %u nodes' first core ranks are wrong", shapes[i], bad);
				emu_shm_detach(&a);
				EXPECT(a.base == NULL, "detach did not clear the mapping");
				/* a damaged table: a node with no cores, then a wrong total */
				uint32_t *first = (uint32_t *)((char *)m.base + m.hdr->off_first_core);
				uint32_t keep = first[1];
				first[1] = first[0];
				err[0] = 0;
				rc = emu_shm_attach(fd, &a, err, sizeof(err));
				EXPECT(rc == -EINVAL && strstr(err, "core count"), "%s: attach with node 0 of no cores = %d (%s)",
				       shapes[i], rc, err);
				first[1] = keep;
				first[s.nnodes]++;
				err[0] = 0;
				rc = emu_shm_attach(fd, &a, err, sizeof(err));
				EXPECT(rc == -EINVAL && err[0], "%s: attach with a wrong core total = %d (%s)", shapes[i], rc, err);
				first[s.nnodes]--;
			}
			close(fd);
			emu_shm_detach(&m);
			free(cores);
			free(numa);
		}
}

static void test_shm_attach_bad(void)
{
	struct emu_shm a;
	char err[256];
	/* an empty file and one with a wrong magic */
	FILE *f = tmpfile();
	if (!EXPECT(f != NULL, "tmpfile failed"))
		return;
	memset(err, 0, sizeof(err));
	int rc = emu_shm_attach(fileno(f), &a, err, sizeof(err));
	EXPECT(rc < 0 && err[0], "attach to an empty file = %d (%s)", rc, err);
	char junk[4096];
	memset(junk, 0x42, sizeof(junk));
	EXPECT(fwrite(junk, 1, sizeof(junk), f) == sizeof(junk), "write failed");
	fflush(f);
	memset(err, 0, sizeof(err));
	rc = emu_shm_attach(fileno(f), &a, err, sizeof(err));
	EXPECT(rc < 0 && err[0], "attach to junk = %d (%s)", rc, err);
	fclose(f);
	memset(err, 0, sizeof(err));
	rc = emu_shm_attach(-1, &a, err, sizeof(err));
	EXPECT(rc < 0 && err[0], "attach to fd -1 = %d (%s)", rc, err);
}

/* A header that promises more than the file holds (a truncated memfd) is
 * refused with a clear error, not mapped (touching past the end is SIGBUS). */
static void test_shm_attach_truncated(void)
{
	struct torus_shape s;
	struct torus_params p;
	struct emu_shm m, a;
	char err[256] = "";
	int fd = -1;
	uint32_t cores[2] = {1, 1};
	if (!get_shape("2", &s))
		return;
	torus_params_default(&p);
	if (!EXPECT(emu_shm_create(&s, &p, cores, NULL, 0, &m, &fd, err, sizeof(err)) == 0, "create: %s", err))
		return;
	uint64_t total = m.hdr->total_bytes;
	/* the real job memory is sealed: nobody can shrink it */
	EXPECT(ftruncate(fd, (off_t)(total / 2)) < 0 && errno == EPERM, "the job memory could be truncated");
	/* a copy of its header in a file half as long */
	int tfd = memfd_create("truncated", 0);
	if (EXPECT(tfd >= 0, "memfd_create: %s", strerror(errno))) {
		EXPECT(ftruncate(tfd, (off_t)(total / 2)) == 0, "ftruncate");
		EXPECT(pwrite(tfd, m.base, total / 2, 0) == (ssize_t)(total / 2), "pwrite");
		memset(err, 0, sizeof(err));
		int rc = emu_shm_attach(tfd, &a, err, sizeof(err));
		EXPECT(rc == -EINVAL && strstr(err, "truncated"), "attach to a truncated copy = %d (%s)", rc, err);
		if (rc == 0)
			emu_shm_detach(&a);
		/* the right size attaches */
		EXPECT(ftruncate(tfd, (off_t)total) == 0 && pwrite(tfd, m.base, total, 0) == (ssize_t)total, "grow");
		memset(err, 0, sizeof(err));
		rc = emu_shm_attach(tfd, &a, err, sizeof(err));
		EXPECT(rc == 0, "attach to a full-size copy = %d (%s)", rc, err);
		if (rc == 0)
			emu_shm_detach(&a);
		/* a slot area the file does not hold, or not in whole pages
		 * (emu_shm_trim would unmap past it) */
		const struct emu_shm_hdr *h = m.hdr;
		const uint64_t bad[][2] = {{h->off_slots, h->slots_bytes + EMU_PAGE},
					   {h->off_slots, h->slots_bytes - 8},
					   {h->off_slots + 8, h->slots_bytes - EMU_PAGE},
					   {total + EMU_PAGE, 0},
					   {0, h->slots_bytes}};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct emu_shm_hdr copy = *h;
			copy.off_slots = bad[i][0];
			copy.slots_bytes = bad[i][1];
			EXPECT(pwrite(tfd, &copy, sizeof(copy), 0) == (ssize_t)sizeof(copy), "pwrite");
			memset(err, 0, sizeof(err));
			rc = emu_shm_attach(tfd, &a, err, sizeof(err));
			EXPECT(rc == -EINVAL && strstr(err, "damaged"), "slot area [%llu,+%llu) of %llu: attach = %d (%s)",
			       (unsigned long long)bad[i][0], (unsigned long long)bad[i][1], (unsigned long long)total, rc,
			       err);
			if (rc == 0)
				emu_shm_detach(&a);
		}
		close(tfd);
	}
	emu_shm_detach(&m);
	close(fd);
}

/* ------------------------------------------------------ hang detector */

/* The second look's verdicts on made-up observations, window 500 ms. */
static void test_stall_classify(void)
{
	const uint64_t W = 500000000ull;
	struct obs_case {
		const char *what;
		struct emu_thread_obs a, b;
		enum { STARVED, BUSY, ASLEEP, OTHER, STOPPED } is;
	};
	/* tid, bell, state, run, wait (cumulative ns) at each look */
#define OBS(tid, bell, st, run, wait) {0, 0, tid, bell, st, run, wait}
	static const struct obs_case cases[] = {
		{"runnable, never ran (no wait counted yet)", OBS(7, 0, 'R', 100, 5), OBS(7, 0, 'R', 100, 5), STARVED},
		{"runnable, ran a little, waited long", OBS(7, 0, 'R', 0, 0), OBS(7, 0, 'S', 1000000, 400000000), STARVED},
		{"rung, waiting for a CPU, still on its bell", OBS(7, 1, 'R', 0, 0), OBS(7, 1, 'R', 2000, 0), STARVED},
		{"running the whole window", OBS(7, 0, 'R', 0, 0), OBS(7, 0, 'R', 490000000, 1000000), BUSY},
		{"ran most of the window, asleep now", OBS(7, 0, 'R', 0, 0), OBS(7, 0, 'S', 300000000, 0), BUSY},
		{"asleep on its bell", OBS(7, 1, 'S', 5000, 0), OBS(7, 1, 'S', 9000, 100), ASLEEP},
		{"asleep on its bell, caught in a slice wake-up", OBS(7, 1, 'S', 0, 0), OBS(7, 1, 'R', 5000, 2000000), ASLEEP},
		{"asleep in its own code (sleep())", OBS(7, 0, 'S', 0, 0), OBS(7, 0, 'S', 10000, 0), OTHER},
		{"gone between the looks", OBS(7, 0, 'R', 0, 0), OBS(7, 0, '?', 0, 0), OTHER},
		{"a different thread at the second look", OBS(7, 0, 'R', 0, 0), OBS(8, 0, 'R', 0, 0), OTHER},
		{"counters went backwards", OBS(7, 0, 'R', 900, 0), OBS(7, 0, 'R', 100, 0), OTHER},
		{"stopped (SIGSTOP)", OBS(7, 1, 'S', 0, 0), OBS(7, 1, 'T', 0, 0), STOPPED},
		{"stopped by a tracer", OBS(7, 0, 'R', 0, 0), OBS(7, 0, 't', 400000000, 0), STOPPED},
	};
#undef OBS
	for (size_t i = 0; i < CUNIT_COUNT(cases); i++) {
		struct emu_stall_verdict v;
		int rc = emu_stall_classify(&cases[i].a, &cases[i].b, 1, W, &v);
		uint32_t got[5] = {v.starved, v.busy, v.asleep, v.other, v.stopped};
		EXPECT(rc == 0 && v.threads == 1 && got[cases[i].is] == 1 && got[0] + got[1] + got[2] + got[3] + got[4] == 1,
		       "%s: rc %d, starved %u busy %u asleep %u other %u stopped %u", cases[i].what, rc, v.starved, v.busy,
		       v.asleep, v.other, v.stopped);
	}
	/* the job's verdict: any starved thread makes it starved, else any
	 * busy one a livelock, else asleep */
	struct emu_thread_obs a[3] = {cases[5].a, cases[3].a, cases[0].a}, b[3] = {cases[5].b, cases[3].b, cases[0].b};
	struct emu_stall_verdict v;
	EXPECT(emu_stall_classify(a, b, 3, W, &v) == 0 && v.kind == EMU_STALL_STARVED, "mixed: kind %d", v.kind);
	EXPECT(emu_stall_classify(a, b, 2, W, &v) == 0 && v.kind == EMU_STALL_BUSY, "asleep+busy: kind %d", v.kind);
	EXPECT(emu_stall_classify(a, b, 1, W, &v) == 0 && v.kind == EMU_STALL_ASLEEP, "asleep: kind %d", v.kind);
	EXPECT(emu_stall_classify(a, b, 0, W, &v) == 0 && v.kind == EMU_STALL_ASLEEP && v.threads == 0, "none");
	/* a stopped node's thread outweighs starved and busy ones, and is named */
	struct emu_thread_obs sa[3] = {cases[0].a, cases[3].a, cases[11].a}, sb[3] = {cases[0].b, cases[3].b, cases[11].b};
	sa[2].node = sb[2].node = 5;
	EXPECT(emu_stall_classify(sa, sb, 3, W, &v) == 0 && v.kind == EMU_STALL_STOPPED && v.stopped == 1 &&
		       v.stopped_node == 5,
	       "stopped: kind %d, %u stopped, node %u", v.kind, v.stopped, v.stopped_node);
	EXPECT(emu_stall_classify(NULL, b, 1, W, &v) == -EINVAL && emu_stall_classify(a, b, 1, W, NULL) == -EINVAL &&
		       emu_stall_classify(a, b, 1, 0, &v) == -EINVAL,
	       "bad arguments accepted");
}

/* ------------------------------------------------------------- bell */

static struct emu_bell *new_bell(void)
{
	struct emu_bell *b = aligned_alloc(64, sizeof(*b));
	if (b)
		memset(b, 0, sizeof(*b));
	return b;
}

static void test_bell_basics(void)
{
	struct emu_bell *b = new_bell();
	if (!EXPECT(b != NULL, "out of memory"))
		return;
	/* ringing with nobody asleep leaves seq alone (no syscall) */
	atomic_store(&b->seq, 77);
	emu_bell_ring(b);
	EXPECT(atomic_load(&b->seq) == 77, "ring without sleepers changed seq to %u", atomic_load(&b->seq));
	uint32_t snap = emu_bell_prepare(b);
	EXPECT(snap == 77, "prepare returned %u, seq is 77", snap);
	EXPECT(atomic_load(&b->sleepers) == 1, "prepare: sleepers %u", atomic_load(&b->sleepers));
	emu_bell_cancel(b);
	EXPECT(atomic_load(&b->sleepers) == 0, "cancel: sleepers %u", atomic_load(&b->sleepers));

	/* a ring between prepare and sleep bumps seq, so the sleep returns at once */
	snap = emu_bell_prepare(b);
	emu_bell_ring(b);
	EXPECT(atomic_load(&b->seq) != snap, "ring with a prepared sleeper did not bump seq");
	int rc = emu_bell_sleep(b, snap, 5000);
	EXPECT(rc == 0, "sleep after a ring did not return at once (%d)", rc);
	EXPECT(atomic_load(&b->sleepers) == 0, "sleep: sleepers %u", atomic_load(&b->sleepers));

	/* the first ring after a prepare makes the system call, the next ones
	 * do not (seq moves once); a new prepare arms the bell again */
	snap = emu_bell_prepare(b);
	emu_bell_ring(b);
	emu_bell_ring(b);
	emu_bell_ring(b);
	EXPECT(atomic_load(&b->seq) == snap + 1, "three rings for one prepare: seq %u, not %u", atomic_load(&b->seq),
	       snap + 1);
	uint32_t again = emu_bell_prepare(b);
	EXPECT(again == snap + 1, "prepare after a ring returned %u, not %u", again, snap + 1);
	emu_bell_ring(b);
	EXPECT(atomic_load(&b->seq) == snap + 2, "ring after a new prepare: seq %u, not %u", atomic_load(&b->seq),
	       snap + 2);
	emu_bell_cancel(b);
	emu_bell_cancel(b);
	EXPECT(atomic_load(&b->sleepers) == 0, "two cancels: sleepers %u", atomic_load(&b->sleepers));

	/* nobody rings: the sleep times out and undoes prepare */
	snap = emu_bell_prepare(b);
	rc = emu_bell_sleep(b, snap, 20);
	EXPECT(rc == -ETIMEDOUT, "unrung sleep returned %d, not -ETIMEDOUT", rc);
	EXPECT(atomic_load(&b->seq) == snap && atomic_load(&b->sleepers) == 0, "timed-out sleep: seq %u/%u sleepers %u",
	       atomic_load(&b->seq), snap, atomic_load(&b->sleepers));
	free(b);
}

/* Scheduler state ('S' = blocked) of a thread or process from /proc. */
static char task_state(const char *path)
{
	char buf[512];
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' ? rp[2] : '?';
}

struct bell_test {
	struct emu_bell *bell;
	uint32_t rounds;
	_Atomic uint32_t posted;   /* main: work for round k is published */
	_Atomic uint32_t acked[8]; /* sleeper i: rounds finished */
	_Atomic int tid[8];
	/* per sleeper, read by main after join */
	uint32_t slept[8], woke[8], spurious[8];
	_Atomic uint32_t lost[8]; /* main stops early on the first lost wake-up */
};

struct sleeper_arg {
	struct bell_test *bt;
	int id;
};

static void *bell_sleeper(void *p)
{
	struct sleeper_arg *sa = p;
	struct bell_test *bt = sa->bt;
	int id = sa->id;
	atomic_store(&bt->tid[id], (int)gettid());
	for (uint32_t round = 1; round <= bt->rounds; round++) {
		for (;;) {
			if (atomic_load(&bt->posted) >= round)
				break;
			uint32_t snap = emu_bell_prepare(bt->bell);
			if (atomic_load(&bt->posted) >= round) {
				emu_bell_cancel(bt->bell);
				break;
			}
			int rc = emu_bell_sleep(bt->bell, snap, 5000);
			bt->slept[id]++;
			if (atomic_load(&bt->bell->seq) != snap)
				bt->woke[id]++;
			else if (rc == -ETIMEDOUT && atomic_load(&bt->posted) >= round)
				atomic_fetch_add(&bt->lost[id], 1); /* work was posted, but no ring reached this sleeper */
			else
				bt->spurious[id]++; /* a spurious or interrupted wait, maybe just before the ring */
		}
		atomic_store(&bt->acked[id], round);
	}
	return NULL;
}

/*
 * nthreads sleepers on one bell; main publishes work, then rings. In "forced"
 * rounds main first waits until every sleeper is blocked in the kernel, so
 * the wake-up path itself is tested; otherwise the two race freely.
 */
static void run_bell(int nthreads, uint32_t rounds, uint32_t forced_every)
{
	struct bell_test bt;
	struct sleeper_arg sa[8];
	pthread_t th[8];
	int started = 0;
	uint32_t forced_asleep = 0;
	bool stuck = false;

	memset(&bt, 0, sizeof(bt));
	bt.bell = new_bell();
	bt.rounds = rounds;
	if (!EXPECT(bt.bell != NULL, "out of memory"))
		return;
	for (int i = 0; i < nthreads; i++) {
		sa[i].bt = &bt;
		sa[i].id = i;
		if (pthread_create(&th[i], NULL, bell_sleeper, &sa[i]) == 0)
			started++;
	}
	if (!EXPECT(started == nthreads, "pthread_create failed")) {
		nthreads = started;
		atomic_store(&bt.posted, rounds); /* let the started ones finish */
		emu_bell_ring(bt.bell);
		for (int i = 0; i < nthreads; i++)
			pthread_join(th[i], NULL);
		free(bt.bell);
		return;
	}
	for (uint32_t round = 1; round <= rounds && !stuck; round++) {
		if (forced_every && round % forced_every == 0) {
			double deadline = now_s() + 10.0;
			bool asleep = false;
			while (!asleep && now_s() < deadline) {
				asleep = atomic_load(&bt.bell->sleepers) == (uint32_t)nthreads;
				for (int i = 0; i < nthreads && asleep; i++) {
					char path[64];
					snprintf(path, sizeof(path), "/proc/self/task/%d/stat", atomic_load(&bt.tid[i]));
					asleep = task_state(path) == 'S';
				}
				if (!asleep)
					sched_yield();
			}
			forced_asleep += asleep;
		}
		atomic_store(&bt.posted, round);
		emu_bell_ring(bt.bell);
		/*
		 * A sleeper the ring missed wakes only at its 5 s timeout and counts
		 * a lost wake-up (work posted, seq unchanged): no wall-clock
		 * threshold here. Stop at the first such round: each costs a timeout.
		 */
		for (int i = 0; i < nthreads; i++) {
			while (atomic_load(&bt.acked[i]) < round)
				sched_yield();
			if (atomic_load(&bt.acked[i]) < round || atomic_load(&bt.lost[i])) {
				stuck = true;
				EXPECT(false, "%d sleepers, round %u%s: sleeper %d not woken by the ring", nthreads, round,
				       forced_every && round % forced_every == 0 ? " (all asleep)" : "", i);
			}
		}
	}
	if (stuck) {
		atomic_store(&bt.posted, rounds);
		for (uint32_t k = 0; k < 20; k++)
			emu_bell_ring(bt.bell);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	uint32_t woke = 0;
	for (int i = 0; i < nthreads; i++) {
		EXPECT(atomic_load(&bt.lost[i]) == 0,
		       "%d sleepers: sleeper %d missed %u rings (woke by timeout with work posted)", nthreads, i,
		       atomic_load(&bt.lost[i]));
		EXPECT(atomic_load(&bt.acked[i]) == rounds, "sleeper %d finished %u of %u rounds", i,
		       atomic_load(&bt.acked[i]), rounds);
		woke += bt.woke[i];
	}
	/* every sleeper that was blocked in a forced round was woken by the ring */
	EXPECT(woke >= forced_asleep * (uint32_t)nthreads, "%d sleepers: %u ring wake-ups, expected at least %u",
	       nthreads, woke, forced_asleep * (uint32_t)nthreads);
	if (forced_every)
		EXPECT(forced_asleep > 0, "%d sleepers: never observed a sleeper blocked in the kernel", nthreads);
	EXPECT(atomic_load(&bt.bell->sleepers) == 0, "sleepers %u at the end", atomic_load(&bt.bell->sleepers));
	free(bt.bell);
}

static void test_bell_wakeup_one(void) { run_bell(1, 1000, 4); }
static void test_bell_wakeup_many(void) { run_bell(4, 200, 5); }

/* The bell is a shared futex: a ring from one process wakes another. */
static void test_bell_across_processes(void)
{
	struct shared {
		struct emu_bell bell;
		_Atomic uint32_t posted;
	} *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!EXPECT(sh != MAP_FAILED, "mmap failed"))
		return;
	memset(sh, 0, sizeof(*sh));
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		/* child: sleep until posted; exit 0 if a ring woke us, 1 if we timed out with work posted */
		int status = 0;
		while (!atomic_load(&sh->posted)) {
			uint32_t snap = emu_bell_prepare(&sh->bell);
			if (atomic_load(&sh->posted)) {
				emu_bell_cancel(&sh->bell);
				break;
			}
			emu_bell_sleep(&sh->bell, snap, 5000);
			if (atomic_load(&sh->bell.seq) == snap && atomic_load(&sh->posted))
				status = 1;
		}
		_exit(status);
	}
	if (!EXPECT(pid > 0, "fork failed")) {
		munmap(sh, 4096);
		return;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	double deadline = now_s() + 10.0;
	bool asleep = false;
	while (!asleep && now_s() < deadline) {
		asleep = atomic_load(&sh->bell.sleepers) == 1 && task_state(path) == 'S';
		if (!asleep)
			sched_yield();
	}
	EXPECT(asleep, "child never went to sleep on the bell");
	uint32_t before = atomic_load(&sh->bell.seq);
	atomic_store(&sh->posted, 1);
	emu_bell_ring(&sh->bell);
	int st = 0;
	EXPECT(waitpid(pid, &st, 0) == pid, "waitpid failed");
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child was not woken by the ring (status %#x)", st);
	if (asleep)
		EXPECT(atomic_load(&sh->bell.seq) != before, "ring with a sleeping child did not bump seq");
	munmap(sh, 4096);
}

/* ----------------------------------------------------------- config */

#define MAXARGS 32
struct args {
	int argc;
	char *argv[MAXARGS + 1];
};

/* Build argv from a NULL-terminated list (the strings outlive the parse). */
static void mkargs(struct args *a, const char *const *list)
{
	a->argc = 0;
	while (list[a->argc] && a->argc < MAXARGS) {
		a->argv[a->argc] = (char *)list[a->argc];
		a->argc++;
	}
	a->argv[a->argc] = NULL;
}

static char config_path[64];

static bool write_config_bytes(const char *text, size_t len)
{
	snprintf(config_path, sizeof(config_path), "/tmp/test_emu_cfg_XXXXXX");
	int fd = mkstemp(config_path);
	if (fd < 0)
		return false;
	bool ok = write(fd, text, len) == (ssize_t)len;
	close(fd);
	return ok;
}

static bool write_config(const char *text) { return write_config_bytes(text, strlen(text)); }

static int parse(const char *const *list, struct emu_job_config *cfg, struct args *a, char *err, size_t errlen)
{
	mkargs(a, list);
	memset(err, 0, errlen);
	return emu_config_parse(a->argc, a->argv, cfg, err, errlen);
}

static bool all_cores(const struct emu_job_config *cfg, uint32_t want)
{
	for (uint32_t r = 0; r < cfg->shape.nnodes; r++)
		if (cfg->cores[r] != want)
			return false;
	return true;
}

static void test_config_good(void)
{
	struct emu_job_config cfg;
	struct args a;
	char err[512];
	struct torus_params def;
	torus_params_default(&def);

	{
		const char *l[] = {"torusrun", "--torus", "4x4", "--cores", "2", "--", "/bin/true", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "basic parse = %d (%s)", rc, err)) {
			EXPECT(cfg.shape.ndims == 2 && cfg.shape.dims[0] == 4 && cfg.shape.dims[1] == 4 &&
				       cfg.shape.nnodes == 16,
			       "shape not 4x4");
			EXPECT(cfg.cores && all_cores(&cfg, 2), "cores not all 2");
			EXPECT(cfg.default_cores == 2, "default_cores %u", cfg.default_cores);
			EXPECT(strcmp(cfg.program_path, "/bin/true") == 0, "program_path \"%s\"", cfg.program_path);
			EXPECT(cfg.argc == 1 && strcmp(cfg.argv[0], "/bin/true") == 0, "program argv wrong (argc %d)",
			       cfg.argc);
			EXPECT(memcmp(&cfg.params, &def, sizeof(def)) == 0, "params not the defaults");
			EXPECT(cfg.timeout_s == 60.0, "default timeout %g", cfg.timeout_s);
			EXPECT(!cfg.quiet && cfg.report_path == NULL, "quiet/report set");
			emu_config_free(&cfg);
			EXPECT(cfg.cores == NULL, "emu_config_free left cores");
		}
	}
	{
		/* no --cores: one core per node */
		const char *l[] = {"torusrun", "--torus", "3x5x7", "--", "/bin/true", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "parse without --cores = %d (%s)", rc, err)) {
			EXPECT(cfg.shape.nnodes == 105 && all_cores(&cfg, 1), "default cores not 1");
			emu_config_free(&cfg);
		}
	}
	{
		const char *l[] = {"torusrun", "--torus", "2x2", "--cores-map", "1,2,3,4", "--", "/bin/true", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "cores-map parse = %d (%s)", rc, err)) {
			for (uint32_t r = 0; r < 4; r++)
				EXPECT(cfg.cores[r] == r + 1, "cores-map: node %u has %u cores", r, cfg.cores[r]);
			emu_config_free(&cfg);
		}
	}
	{
		const char *l[] = {"torusrun", "--cores", "3",    "--cores-map", "64,1", "--torus",
				   "2",        "--",      "/bin/true", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "cores-map over --cores = %d (%s)", rc, err)) {
			EXPECT(cfg.cores[0] == 64 && cfg.cores[1] == 1, "cores-map did not override --cores (%u,%u)",
			       cfg.cores[0], cfg.cores[1]);
			emu_config_free(&cfg);
		}
	}
	{
		const char *l[] = {"torusrun", "--torus", "2x2", "--param", "link_bw=1GB/s", "--", "/bin/true", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "--param parse = %d (%s)", rc, err)) {
			EXPECT(cfg.params.link_bw == 1000000000ull, "link_bw %llu", (unsigned long long)cfg.params.link_bw);
			struct torus_params want = def;
			want.link_bw = 1000000000ull;
			EXPECT(memcmp(&cfg.params, &want, sizeof(want)) == 0, "--param changed other parameters");
			emu_config_free(&cfg);
		}
	}
	{
		/* --param in order: the last one wins */
		const char *l[] = {"torusrun", "--param", "hop_latency=1us", "--torus",    "2x2",
				   "--param",  "hop_latency=2us", "--param", "fifo_slots=4", "--",
				   "/bin/true", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "repeated --param = %d (%s)", rc, err)) {
			EXPECT(cfg.params.hop_latency_ps == 2000000ull && cfg.params.fifo_slots == 4,
			       "repeated --param: hop_latency %llu fifo_slots %u", (unsigned long long)cfg.params.hop_latency_ps,
			       cfg.params.fifo_slots);
			emu_config_free(&cfg);
		}
	}
	{
		const char *l[] = {"torusrun", "--quiet", "--timeout", "2.5", "--report", "/tmp/r.json",
				   "--torus",  "8",       "--",        "/bin/echo", "a", "--torus", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "options parse = %d (%s)", rc, err)) {
			EXPECT(cfg.quiet == 1, "--quiet not set");
			EXPECT(cfg.timeout_s == 2.5, "timeout %g", cfg.timeout_s);
			EXPECT(cfg.report_path && strcmp(cfg.report_path, "/tmp/r.json") == 0, "report path wrong");
			EXPECT(cfg.shape.nnodes == 8, "options after the program were parsed (nnodes %u)", cfg.shape.nnodes);
			EXPECT(cfg.argc == 3 && strcmp(cfg.argv[1], "a") == 0 && strcmp(cfg.argv[2], "--torus") == 0,
			       "program arguments not passed through (argc %d)", cfg.argc);
			emu_config_free(&cfg);
		}
	}
	{
		/* a program found on PATH */
		const char *l[] = {"torusrun", "--torus", "2", "--timeout", "0", "--", "true", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "PATH lookup parse = %d (%s)", rc, err)) {
			size_t n = strlen(cfg.program_path);
			EXPECT(n > 5 && strcmp(cfg.program_path + n - 5, "/true") == 0 && access(cfg.program_path, X_OK) == 0,
			       "program_path \"%s\" for 'true'", cfg.program_path);
			EXPECT(cfg.timeout_s == 0.0, "timeout 0 gave %g", cfg.timeout_s);
			emu_config_free(&cfg);
		}
	}
}

static void test_config_file(void)
{
	struct emu_job_config cfg;
	struct args a;
	char err[512];

	if (!EXPECT(write_config("torus = 3x3\ncores = 2\nhop_latency = 1us\n# comment\n"), "cannot write config"))
		return;
	{
		const char *l[] = {"torusrun", "--config", config_path, "--", "/bin/true", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "--config parse = %d (%s)", rc, err)) {
			EXPECT(cfg.shape.ndims == 2 && cfg.shape.dims[0] == 3 && cfg.shape.dims[1] == 3, "config shape wrong");
			EXPECT(all_cores(&cfg, 2), "config cores not 2");
			EXPECT(cfg.params.hop_latency_ps == 1000000ull, "config hop_latency %llu",
			       (unsigned long long)cfg.params.hop_latency_ps);
			emu_config_free(&cfg);
		}
	}
	{
		/* the command line wins over the file */
		const char *l[] = {"torusrun", "--torus",  "2x2", "--config", config_path, "--param", "hop_latency=5ns",
				   "--",       "/bin/true", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "--config with overrides = %d (%s)", rc, err)) {
			EXPECT(cfg.shape.ndims == 2 && cfg.shape.dims[0] == 2 && cfg.shape.dims[1] == 2 &&
				       cfg.shape.nnodes == 4,
			       "command-line --torus did not override the config");
			EXPECT(all_cores(&cfg, 2), "cores from the config lost");
			EXPECT(cfg.params.hop_latency_ps == 5000ull, "--param did not override the config (%llu)",
			       (unsigned long long)cfg.params.hop_latency_ps);
			emu_config_free(&cfg);
		}
	}
	{
		const char *l[] = {"torusrun", "--config", config_path, "--cores", "3", "--", "/bin/true", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "--config with --cores = %d (%s)", rc, err)) {
			EXPECT(cfg.shape.nnodes == 9 && all_cores(&cfg, 3), "--cores did not override the config");
			emu_config_free(&cfg);
		}
	}
	unlink(config_path);

	/* report from the file is owned and freed by emu_config_free */
	if (EXPECT(write_config("  torus=2x2  \n\nreport = /tmp/x.json # where\ncores-map = 1,1,2,2\nfifo_slots = 8\n"),
		   "cannot write config")) {
		const char *l[] = {"torusrun", "--config", config_path, "--", "/bin/true", NULL};
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "second config = %d (%s)", rc, err)) {
			EXPECT(cfg.report_path && strcmp(cfg.report_path, "/tmp/x.json") == 0, "config report \"%s\"",
			       cfg.report_path ? cfg.report_path : "(null)");
			EXPECT(cfg.cores[0] == 1 && cfg.cores[1] == 1 && cfg.cores[2] == 2 && cfg.cores[3] == 2,
			       "config cores-map wrong");
			EXPECT(cfg.params.fifo_slots == 8, "config fifo_slots %u", cfg.params.fifo_slots);
			emu_config_free(&cfg);
			EXPECT(cfg.report_path == NULL && cfg.cores == NULL, "emu_config_free left pointers");
		}
		unlink(config_path);
	}
}

struct bad_case {
	const char *args[16];
	const char *culprit; /* word the message must contain, or NULL */
};

static void run_bad(const struct bad_case *bc, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct emu_job_config cfg;
		struct args a;
		char err[512], line[512] = "";
		for (int k = 1; bc[i].args[k]; k++) {
			strncat(line, bc[i].args[k], sizeof(line) - strlen(line) - 2);
			strcat(line, " ");
		}
		int rc = parse(bc[i].args, &cfg, &a, err, sizeof(err));
		if (!EXPECT(rc < 0, "torusrun %s: accepted (rc %d)", line, rc)) {
			if (rc == 0)
				emu_config_free(&cfg);
			continue;
		}
		EXPECT(err[0] != '\0', "torusrun %s: rc %d with an empty message", line, rc);
		if (bc[i].culprit)
			EXPECT(strstr(err, bc[i].culprit) != NULL, "torusrun %s: message \"%s\" does not mention \"%s\"", line,
			       err, bc[i].culprit);
		EXPECT(cfg.cores == NULL, "torusrun %s: cores left allocated after a failure", line);
	}
}

static void test_config_bad(void)
{
	static const struct bad_case bad[] = {
		{{"torusrun", "--", "/bin/true", NULL}, "torus"},
		{{"torusrun", "--cores", "2", "--", "/bin/true", NULL}, "torus"},
		{{"torusrun", "--torus", "0", "--", "/bin/true", NULL}, "'0'"},
		{{"torusrun", "--torus", "4xq", "--", "/bin/true", NULL}, "4xq"},
		{{"torusrun", "--torus", "2x2x2x2x2x2x2", "--", "/bin/true", NULL}, "2x2x2x2x2x2x2"},
		{{"torusrun", "--torus", "-4", "--", "/bin/true", NULL}, "-4"},
		{{"torusrun", "--torus", "4097", "--", "/bin/true", NULL}, "4097"},
		{{"torusrun", "--torus", "4x4", "--cores", "0", "--", "/bin/true", NULL}, "cores"},
		{{"torusrun", "--torus", "4x4", "--cores", "-1", "--", "/bin/true", NULL}, "-1"},
		{{"torusrun", "--torus", "4x4", "--cores", "65", "--", "/bin/true", NULL}, "65"},
		{{"torusrun", "--torus", "4x4", "--cores", "2x", "--", "/bin/true", NULL}, "2x"},
		{{"torusrun", "--torus", "2x2", "--cores-map", "1,2,3", "--", "/bin/true", NULL}, "cores-map"},
		{{"torusrun", "--torus", "2x2", "--cores-map", "1,2,3,4,5", "--", "/bin/true", NULL}, "cores-map"},
		{{"torusrun", "--torus", "2x2", "--cores-map", "1,,2,3", "--", "/bin/true", NULL}, "cores-map"},
		{{"torusrun", "--torus", "2x2", "--cores-map", "1,2,3,4,", "--", "/bin/true", NULL}, "cores-map"},
		{{"torusrun", "--torus", "2x2", "--cores-map", "1,2,0,4", "--", "/bin/true", NULL}, "cores-map"},
		{{"torusrun", "--torus", "2x2", "--cores-map", "1,2,65,4", "--", "/bin/true", NULL}, "65"},
		{{"torusrun", "--torus", "2x2", "--cores-map", "", "--", "/bin/true", NULL}, "cores-map"},
		{{"torusrun", "--torus", "2x2", "--param", "nosuch=1", "--", "/bin/true", NULL}, "nosuch"},
		{{"torusrun", "--torus", "2x2", "--param", "link_bw", "--", "/bin/true", NULL}, "link_bw"},
		{{"torusrun", "--torus", "2x2", "--param", "fifo_slots=3", "--", "/bin/true", NULL}, "fifo_slots: 3 is not a power of two"},
		{{"torusrun", "--torus", "2x2", "--param", "inj_slots=48", "--", "/bin/true", NULL}, "inj_slots: 48 is not a power of two"},
		{{"torusrun", "--torus", "2x2", "--timeout", "-1", "--", "/bin/true", NULL}, "timeout"},
		{{"torusrun", "--torus", "2x2", "--timeout", "abc", "--", "/bin/true", NULL}, "abc"},
		{{"torusrun", "--torus", "2x2", "--timeout", "1e7", "--", "/bin/true", NULL}, "timeout"},
		{{"torusrun", "--torus", "2x2", "--timeout", "inf", "--", "/bin/true", NULL}, "timeout"},
		{{"torusrun", "--torus", "2x2", "--frobnicate", "--", "/bin/true", NULL}, "frobnicate"},
		{{"torusrun", "--torus", "2x2", NULL}, "program"},
		{{"torusrun", "--torus", "2x2", "--", NULL}, "program"},
		{{"torusrun", "--torus", "2x2", "/bin/true", NULL}, "/bin/true"},
		{{"torusrun", "--torus", "2x2", "--", "/nonexistent/prog", NULL}, "/nonexistent/prog"},
		{{"torusrun", "--torus", "2x2", "--", "no-such-program-on-path-xyz", NULL}, "no-such-program-on-path-xyz"},
		{{"torusrun", "--torus", "2x2", "--", "/etc/passwd", NULL}, "/etc/passwd"}, /* not executable */
		{{"torusrun", "--torus", NULL}, "--torus"},
		{{"torusrun", "--torus", "2x2", "--cores", NULL}, "--cores"},
		{{"torusrun", "--torus", "2x2", "--config", "/nonexistent/cfg", "--", "/bin/true", NULL},
		 "/nonexistent/cfg"},
		/* a job larger than this machine: 65536 nodes x (64 cores + 2) threads */
		{{"torusrun", "--torus", "4096x16", "--cores", "64", "--", "/bin/true", NULL}, "needs"},
		/* issue 12: PROGRAM must be an executable regular file */
		{{"torusrun", "--torus", "2", "--", "/tmp", NULL}, "directory"},
		{{"torusrun", "--torus", "2", "--", "", NULL}, "empty"},
		{{"torusrun", "--torus", "2", "--", "/dev/null", NULL}, "regular"},
		/* issue 12: --report and --trace are checked before the job */
		{{"torusrun", "--torus", "2", "--report", "", "--", "/bin/true", NULL}, "--report"},
		{{"torusrun", "--torus", "2", "--report", "/nonexistent/r.json", "--", "/bin/true", NULL},
		 "/nonexistent/r.json"},
		{{"torusrun", "--torus", "2", "--report", "/tmp", "--", "/bin/true", NULL}, "directory"},
		{{"torusrun", "--torus", "2", "--report", "/tmp/", "--", "/bin/true", NULL}, "directory"},
		{{"torusrun", "--torus", "2", "--report", "/etc/passwd/r.json", "--", "/bin/true", NULL}, "passwd"},
		{{"torusrun", "--torus", "2", "--trace", "", "--", "/bin/true", NULL}, "--trace"},
		{{"torusrun", "--torus", "2", "--trace", "/nonexistent/t", "--", "/bin/true", NULL}, "/nonexistent/t"},
		{{"torusrun", "--torus", "2", "--trace", "/tmp", "--", "/bin/true", NULL}, "directory"},
		/* issue 12: config files that are not files */
		{{"torusrun", "--torus", "2", "--config", "", "--", "/bin/true", NULL}, "--config"},
		{{"torusrun", "--torus", "2", "--config", "/tmp", "--", "/bin/true", NULL}, "directory"},
		{{"torusrun", "--torus", "2", "--config", "/dev/zero", "--", "/bin/true", NULL}, "/dev/zero"},
		/* issue 12: sizes overflow before the shift, units exact */
		{{"torusrun", "--torus", "2", "--trace", "/tmp/t.trace", "--trace-buffer", "18014398509482048K", "--",
		  "/bin/true", NULL},
		 "18014398509482048K"},
		{{"torusrun", "--torus", "2", "--trace", "/tmp/t.trace", "--trace-buffer", "17592186044417M", "--",
		  "/bin/true", NULL},
		 "17592186044417M"},
		{{"torusrun", "--torus", "2", "--trace", "/tmp/t.trace", "--trace-buffer", "64k", "--", "/bin/true", NULL},
		 "64k"},
		{{"torusrun", "--torus", "2", "--trace", "/tmp/t.trace", "--trace-buffer", "0x10000", "--", "/bin/true",
		  NULL},
		 "0x10000"},
		/* issue 12: decimal only */
		{{"torusrun", "--torus", "2", "--timeout", "0x10", "--", "/bin/true", NULL}, "0x10"},
		{{"torusrun", "--torus", "2", "--timeout", " 5", "--", "/bin/true", NULL}, "timeout"},
		{{"torusrun", "--torus", "2", "--timeout", "+5", "--", "/bin/true", NULL}, "+5"},
		{{"torusrun", "--torus", "2", "--timeout", "5e2", "--", "/bin/true", NULL}, "5e2"},
		{{"torusrun", "--torus", "2", "--timeout", "5.", "--", "/bin/true", NULL}, "timeout"},
		{{"torusrun", "--torus", "2", "--cores", "99999999999999999999", "--", "/bin/true", NULL}, "cores"},
		{{"torusrun", "--torus", "2", "--cores-map", "1,99999999999999999999", "--", "/bin/true", NULL},
		 "cores-map"},
		{{"torusrun", "--torus", "2", "--param", "fifo_slots=0x10", "--", "/bin/true", NULL}, "0x10"},
		{{"torusrun", "--torus", "2", "--param", "hop_latency=0x32ns", "--", "/bin/true", NULL}, "hop_latency"},
		{{"torusrun", "--torus", "2", "--param", "hop_latency=50NS", "--", "/bin/true", NULL}, "NS"},
		/* --chaos takes a decimal seed that fits 32 bits */
		{{"torusrun", "--torus", "2", "--chaos", "0x10", "--", "/bin/true", NULL}, "--chaos"},
		{{"torusrun", "--torus", "2", "--chaos", "-1", "--", "/bin/true", NULL}, "--chaos"},
		{{"torusrun", "--torus", "2", "--chaos", "4294967296", "--", "/bin/true", NULL}, "--chaos"},
		{{"torusrun", "--torus", "2", "--chaos", "", "--", "/bin/true", NULL}, "--chaos"},
		/* issue 12 (fuzz_cli invariant): the message stays one line whatever bytes it quotes */
		{{"torusrun", "--torus", "4\n5", "--", "/bin/true", NULL}, "'4?5'"},
		{{"torusrun", "--torus", "2", "--report", "/nonexistent/a\nb", "--", "/bin/true", NULL}, "a?b"},
	};
	run_bad(bad, CUNIT_COUNT(bad));
}

static void test_config_file_bad(void)
{
	static const char *files[] = {
		"torus 3x3\n",               /* no '=' */
		"torus = 3x3\nnosuch = 1\n", /* unknown parameter */
		"torus = 3x3\nhop_latency = 5\n",
		"torus = 3x3\nfifo_slots = 3\n", /* not a power of two */
		"torus = 3xz\n",
		"torus = 3x3\ncores = 0\n",
		"torus = 3x3\ncores-map = 1,2\n",
		"torus = 3x3\ntimeout = soon\n",
		/* issue 12: one rule for duplicates, whatever the key */
		"torus = 3x3\ntorus = 0\n",
		"torus = 3x3\ncores = 2\n\ncores = 64\n",
		"torus = 3x3\nreport = /tmp/a\nreport = /tmp/b\n",
		"torus = 3x3\nfifo_slots = 4\nfifo_slots = 8\n",
		/* issue 12: empty values, numbers and units */
		"torus = 2\nreport =\n",
		"torus = 2\nreport = # nothing\n",
		"torus = 2\nhop_latency =\n",
		"torus = 2\nfifo_slots = 0x10\n",
		"torus = 2\nhop_latency = 1Ms\n",
		"torus = 2\ntimeout = 1e3\n",
		"= 2\n",
		/* issue 12: a long comment stays a comment, and later lines keep their numbers */
		"#                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                      torus = 8\n",
		"torus = 2\n# a long comment                                                                         "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"                                                                                                    "
		"\nnosuch = 1\n",
	};
	static const char *culprits[] = {
		NULL /* path */, "nosuch", "hop_latency", "fifo_slots", "3xz", "cores", "cores-map", "soon",
		"lines 1 and 2", "lines 2 and 4", "lines 2 and 3", "lines 2 and 3",
		":2: 'report' has no value", ":2: 'report' has no value", ":2: 'hop_latency' has no value",
		":2: parameter fifo_slots", ":2: parameter hop_latency: unknown unit 'Ms'", ":2: bad timeout '1e3'",
		":1: expected 'key = value'", "no torus shape", ":3: unknown parameter 'nosuch'",
	};
	_Static_assert(sizeof(files) == sizeof(culprits), "one culprit per file");
	for (size_t i = 0; i < CUNIT_COUNT(files); i++) {
		if (!EXPECT(write_config(files[i]), "cannot write config"))
			continue;
		struct bad_case bc = {{"torusrun", "--config", config_path, "--", "/bin/true", NULL},
				      culprits[i] ? culprits[i] : config_path};
		run_bad(&bc, 1);
		unlink(config_path);
	}
}

/* NaN is not a number of seconds: the hang detector would be silently off. */
static void test_config_timeout_nan(void)
{
	static const struct bad_case bad[] = {
		{{"torusrun", "--torus", "2x2", "--timeout", "nan", "--", "/bin/true", NULL}, "timeout"},
		{{"torusrun", "--torus", "2x2", "--timeout", "NaN", "--", "/bin/true", NULL}, "timeout"},
	};
	run_bad(bad, CUNIT_COUNT(bad));
}

static void test_config_help(void)
{
	const char *variants[] = {"--help", "-h"};
	for (size_t v = 0; v < CUNIT_COUNT(variants); v++) {
		struct emu_job_config cfg;
		struct args a;
		char err[256];
		const char *l[] = {"torusrun", "--torus", "2x2", variants[v], "--", "/bin/true", NULL};
		FILE *cap = tmpfile();
		if (!EXPECT(cap != NULL, "tmpfile failed"))
			return;
		/* capture what --help prints on stdout */
		fflush(stdout);
		int saved = dup(STDOUT_FILENO);
		dup2(fileno(cap), STDOUT_FILENO);
		int rc = parse(l, &cfg, &a, err, sizeof(err));
		fflush(stdout);
		dup2(saved, STDOUT_FILENO);
		close(saved);
		size_t len = 0;
		char *text = read_all(cap, &len);
		fclose(cap);
		EXPECT(rc == 1, "%s returned %d, expected 1", variants[v], rc);
		EXPECT(text && strstr(text, "--torus") && strstr(text, "link_bw"), "%s text lacks options/parameters",
		       variants[v]);
		free(text);
		if (rc == 0)
			emu_config_free(&cfg);
	}
}

/* Issue 12: lines of any length are read whole, and the file's rules. */
static void test_config_file_rules(void)
{
	struct emu_job_config cfg;
	struct args a;
	char err[512];
	/* a comment of 1,023 bytes, then a line the old reader saw twice */
	char text[4096];
	int n = snprintf(text, sizeof(text), "#%1022storus = 8\ntorus = 2\ncores = 3\r\nlink_bw = 425Mb/s\ntimeout = 2.5\n", "");
	if (!EXPECT(n > 0 && (size_t)n < sizeof(text) && write_config(text), "cannot write config"))
		return;
	const char *l[] = {"torusrun", "--config", config_path, "--", "/bin/true", NULL};
	int rc = parse(l, &cfg, &a, err, sizeof(err));
	if (EXPECT(rc == 0, "long-comment config = %d (%s)", rc, err)) {
		EXPECT(cfg.shape.nnodes == 2, "the tail of a comment became a setting: %u nodes", cfg.shape.nnodes);
		EXPECT(all_cores(&cfg, 3), "cores with a CRLF line ending");
		EXPECT(cfg.params.link_bw == 425000000ull / 8, "425Mb/s is megabits: link_bw %llu",
		       (unsigned long long)cfg.params.link_bw);
		EXPECT(cfg.timeout_s == 2.5, "timeout %g", cfg.timeout_s);
		emu_config_free(&cfg);
	}
	unlink(config_path);

	/* a NUL byte names its line instead of cutting it short */
	static const char nul[] = "torus = 2\ncores = 1\nfifo_slots = 4\0 # x\n";
	if (EXPECT(write_config_bytes(nul, sizeof(nul) - 1), "cannot write config")) {
		struct bad_case bc = {{"torusrun", "--config", config_path, "--", "/bin/true", NULL}, ":3: NUL"};
		run_bad(&bc, 1);
		unlink(config_path);
	}

	/* at most 1 MiB: the reader never runs away with a huge or endless file */
	size_t big = EMU_CONFIG_MAX_BYTES + 1;
	char *huge = malloc(big);
	if (EXPECT(huge != NULL, "malloc")) {
		memset(huge, '#', big);
		if (EXPECT(write_config_bytes(huge, big), "cannot write config")) {
			struct bad_case bc = {{"torusrun", "--torus", "2", "--config", config_path, "--", "/bin/true", NULL},
					      "larger than"};
			run_bad(&bc, 1);
			unlink(config_path);
		}
		free(huge);
	}

	/* the command line still wins over a key the file gives once */
	if (EXPECT(write_config("torus = 3\nfifo_slots = 8\n"), "cannot write config")) {
		const char *o[] = {"torusrun", "--config", config_path, "--torus", "2", "--param", "fifo_slots=4",
				   "--torus", "4", "--", "/bin/true", NULL};
		rc = parse(o, &cfg, &a, err, sizeof(err));
		if (EXPECT(rc == 0, "override = %d (%s)", rc, err)) {
			EXPECT(cfg.shape.nnodes == 4, "the last --torus did not win: %u nodes", cfg.shape.nnodes);
			EXPECT(cfg.params.fifo_slots == 4, "--param did not win over the file: %u", cfg.params.fifo_slots);
			emu_config_free(&cfg);
		}
		unlink(config_path);
	}
}

/* emu_config_read_buf: errors name the right line; a failure changes nothing. */
static void test_config_read_buf(void)
{
	static const struct {
		const char *text;
		size_t len;
		const char *want; /* in the message; NULL: accepted */
	} cases[] = {
		{"torus = 2\n\n\nfifo_slots = 3x\n", 0, "cfg:4:"},
		/* a slot count that is not a power of two: refused at its line */
		{"torus = 2\nfifo_slots = 3\n", 0, "cfg:2: parameter fifo_slots: 3 is not a power of two"},
		{"rx_slots = 96\n", 0, "cfg:1: parameter rx_slots: 96 is not a power of two"},
		{"torus = 2\nfifo_slots = 8\n#\nfifo_slots = 16\n", 0, "cfg:4: key 'fifo_slots' set twice (lines 2 and 4)"},
		{"cores = 2\ncores-map = 1,,2\n", 0, "cfg:2:"},
		{"a\0b\n", 4, "cfg:1: NUL"},
		{"torus = 2\n\0", 11, "cfg:2: NUL"},
		{"torus = 2", 0, NULL},     /* no final newline */
		{"torus = 2\n\n", 0, NULL}, /* blank last line */
		{"report = /x#y\n", 0, NULL},
		{"", 0, NULL},
	};
	for (size_t i = 0; i < CUNIT_COUNT(cases); i++) {
		struct torus_params p, before;
		struct emu_settings st;
		char err[256] = "";
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
		torus_params_default(&p);
		before = p;
		int rc = emu_config_read_buf("cfg", cases[i].text, len, &st, &p, err, sizeof(err));
		if (!cases[i].want) {
			if (EXPECT(rc == 0, "case %zu = %d (%s)", i, rc, err))
				emu_settings_free(&st);
			continue;
		}
		EXPECT(rc < 0 && strstr(err, cases[i].want), "case %zu = %d (%s), want \"%s\"", i, rc, err, cases[i].want);
		EXPECT(memcmp(&p, &before, sizeof(p)) == 0, "case %zu: a failed file changed the parameters", i);
		EXPECT(st.given == 0 && st.cores_map == NULL && st.report == NULL, "case %zu: settings left behind", i);
	}
	/* the comment ends the value */
	{
		struct torus_params p;
		struct emu_settings st;
		char err[256] = "";
		torus_params_default(&p);
		int rc = emu_config_read_buf("cfg", "report = /x#y\n", 14, &st, &p, err, sizeof(err));
		if (EXPECT(rc == 0, "comment in a value = %d (%s)", rc, err)) {
			EXPECT(st.report && !strcmp(st.report, "/x") && st.line[EMU_SET_REPORT] == 1, "report \"%s\"",
			       st.report ? st.report : "(null)");
			emu_settings_free(&st);
		}
	}
}

/* A name without '/' is searched in PATH like execvp: directories and files
 * that cannot run are skipped. */
static void test_config_program_path(void)
{
	char dir[] = "/tmp/test_emu_path_XXXXXX", a[128], b[128], prog[160], sub[160], plain[160], path[512];
	struct emu_job_config cfg;
	struct args ar;
	char err[512];
	const char *old = getenv("PATH");
	char *saved = old ? strdup(old) : NULL;
	if (!EXPECT(mkdtemp(dir) != NULL, "mkdtemp"))
		return;
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(sub, sizeof(sub), "%s/prog", a);    /* a directory named prog */
	snprintf(plain, sizeof(plain), "%s/prog", b); /* not executable */
	snprintf(prog, sizeof(prog), "%s/c", dir);
	mkdir(a, 0755);
	mkdir(b, 0755);
	mkdir(prog, 0755);
	mkdir(sub, 0755);
	FILE *f = fopen(plain, "w");
	if (f)
		fclose(f);
	snprintf(prog, sizeof(prog), "%s/c/prog", dir);
	f = fopen(prog, "w");
	if (f) {
		fputs("#!/bin/sh\n", f);
		fclose(f);
	}
	chmod(plain, 0644);
	chmod(prog, 0755);

	snprintf(path, sizeof(path), "%s:%s:%s/c", a, b, dir);
	setenv("PATH", path, 1);
	const char *l[] = {"torusrun", "--torus", "2", "--", "prog", NULL};
	int rc = parse(l, &cfg, &ar, err, sizeof(err));
	if (EXPECT(rc == 0, "PATH with a directory first = %d (%s)", rc, err)) {
		EXPECT(!strcmp(cfg.program_path, prog), "found \"%s\", not %s", cfg.program_path, prog);
		emu_config_free(&cfg);
	}
	/* only the directory and the plain file: refused before anything starts */
	snprintf(path, sizeof(path), "%s:%s", a, b);
	setenv("PATH", path, 1);
	struct bad_case bc = {{"torusrun", "--torus", "2", "--", "prog", NULL}, "prog"};
	run_bad(&bc, 1);
	snprintf(path, sizeof(path), "%s", a);
	setenv("PATH", path, 1);
	struct bad_case bd = {{"torusrun", "--torus", "2", "--", "prog", NULL}, "prog"};
	run_bad(&bd, 1);
	if (saved)
		setenv("PATH", saved, 1);
	else
		unsetenv("PATH");
	free(saved);
	unlink(prog);
	unlink(plain);
	rmdir(sub);
	snprintf(path, sizeof(path), "%s/c", dir);
	rmdir(path);
	rmdir(a);
	rmdir(b);
	rmdir(dir);
}

/* Checking --report and --trace creates, opens and truncates nothing. */
static void test_config_outputs_untouched(void)
{
	struct emu_job_config cfg;
	struct args a;
	char err[512], fresh[96], kept[64], trace[96];
	if (!EXPECT(write_config("keep me\n"), "cannot write file"))
		return;
	snprintf(kept, sizeof(kept), "%s", config_path);
	snprintf(fresh, sizeof(fresh), "%s.new", kept);
	snprintf(trace, sizeof(trace), "%s.trace", kept);
	unlink(fresh);
	const char *l[] = {"torusrun", "--torus", "2", "--report", kept, "--trace", trace, "--", "/bin/true", NULL};
	int rc = parse(l, &cfg, &a, err, sizeof(err));
	if (EXPECT(rc == 0, "existing report = %d (%s)", rc, err))
		emu_config_free(&cfg);
	FILE *f = fopen(kept, "r");
	char buf[32] = "";
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	EXPECT(!strcmp(buf, "keep me\n"), "validation changed the existing report: \"%s\"", buf);
	EXPECT(access(trace, F_OK) != 0, "validation created the trace file");
	const char *m[] = {"torusrun", "--torus", "2", "--report", fresh, "--", "/bin/true", NULL};
	rc = parse(m, &cfg, &a, err, sizeof(err));
	if (EXPECT(rc == 0, "new report = %d (%s)", rc, err))
		emu_config_free(&cfg);
	EXPECT(access(fresh, F_OK) != 0, "validation created the report file");
	unlink(fresh);
	unlink(trace);
	unlink(kept);
}

/* ------------------------------------------------------- --exact stashes */

/* Names that collide on purpose (7 values), so the index probes long runs
 * that wrap around the table, and deletions must shift them back. */
static uint64_t stash_test_name(const struct torus_packet *pkt, const struct torus_side *side)
{
	(void)pkt;
	return side->aux % 7 * 0x10001ull + (side->aux % 7 == 3 ? 0xFFFFFFFFull : 0);
}

static int stash_test_is(const struct emu_stash *s, uint32_t slot, const void *key)
{
	return s->side[slot].aux == *(const uint32_t *)key && s->pkt[slot].payload[0] == (uint8_t)(s->side[slot].aux * 7);
}

static int stash_test_find(const struct emu_stash *s, uint32_t aux)
{
	struct torus_side side = {.aux = aux};
	return emu_stash_find(s, stash_test_name(NULL, &side), stash_test_is, &aux);
}

/*
 * Packets drained from a ring in batches, taken in a random order: every
 * packet still there is found at a slot that holds it, every one taken is
 * gone, through table growths and backward-shift deletions.
 */
static void test_stash_index(void)
{
	enum { SLOTS = 64, TOTAL = 3000 };
	void *mem = aligned_alloc(64, torus_ring_bytes(SLOTS) + 64);
	struct emu_node_shm me;
	struct emu_node_rt rt;
	memset(&me, 0, sizeof(me));
	memset(&rt, 0, sizeof(rt));
	rt.me = &me;
	CU_ASSERT_FATAL(mem != NULL);
	struct torus_ring *r = mem;
	torus_ring_init(r, SLOTS, 0);
	struct torus_ring_view prod, cons;
	torus_ring_view_init(&prod, r, mem, TORUS_RING_PRODUCER);
	torus_ring_view_init(&cons, r, mem, TORUS_RING_CONSUMER);
	struct emu_stash s;
	emu_stash_init(&s, stash_test_name);
	static uint8_t present[TOTAL];
	memset(present, 0, sizeof(present));
	rng_state = 12345;
	uint32_t sent = 0, held = 0, bad = 0;
	while (sent < TOTAL || held) {
		/* a batch in (up to the ring's size) */
		uint32_t batch = (uint32_t)(rnd() % SLOTS) + 1;
		for (uint32_t i = 0; i < batch && sent < TOTAL; i++) {
			struct torus_side *side;
			struct torus_packet *p = torus_ring_reserve(&prod, &side);
			if (!p)
				break;
			memset(p, 0, sizeof(*p));
			p->payload[0] = (uint8_t)(sent * 7);
			side->aux = sent;
			torus_ring_commit(&prod);
			present[sent++] = 1;
			held++;
		}
		torus_ring_publish_head(&prod);
		int n = emu_stash_drain(&rt, &s, &cons);
		CU_ASSERT(n >= 0);
		CU_ASSERT_EQUAL(s.n, held);
		/* take some, at random */
		uint32_t take = sent < TOTAL ? (uint32_t)(rnd() % (batch + 1)) : held;
		for (uint32_t i = 0; i < take && held; i++) {
			uint32_t aux;
			do
				aux = (uint32_t)(rnd() % sent);
			while (!present[aux]);
			int slot = stash_test_find(&s, aux);
			if (slot < 0 || s.side[slot].aux != aux) {
				bad++;
				break;
			}
			emu_stash_remove(&s, (uint32_t)slot);
			present[aux] = 0;
			held--;
		}
		/* everything is where the index says, and nothing taken is found */
		for (uint32_t a = 0; a < sent; a++) {
			int slot = stash_test_find(&s, a);
			if (present[a] ? slot < 0 || s.side[slot].aux != a : slot >= 0)
				bad++;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(s.n, 0);
	CU_ASSERT(s.icap >= 2 * 64);
	emu_stash_free(&s);
	CU_ASSERT(s.pkt == NULL && s.index == NULL && s.name_of == stash_test_name);
	free(mem);
}

/* The engine's batch: an eighth of a link FIFO, 32 to 128 packets; the
 * default 64 slots keep the old 32. */
static void test_engine_batch(void)
{
	static const uint32_t slots[] = {1, 2, 64, 255, 256, 264, 512, 1000, 1024, 4096, 65536};
	static const uint32_t want[] = {32, 32, 32, 32, 32, 33, 64, 125, 128, 128, 128};
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
		EXPECT(emu_engine_batch(slots[i]) == want[i], "fifo_slots %u: batch %u, expected %u", slots[i],
		       emu_engine_batch(slots[i]), want[i]);
}

/* ---------------------------------------------------------------- main */

static const struct cunit_case layout_cases[] = {
	CUNIT_CASE(test_numa_plan),
	CUNIT_CASE(test_shm_layout),
	CUNIT_CASE(test_shm_create_attach),
	CUNIT_CASE(test_shm_attach_bad), CUNIT_CASE(test_shm_attach_truncated), CUNIT_CASE(test_stall_classify),
	CUNIT_CASE(test_stash_index), CUNIT_CASE(test_engine_batch),
};

static const struct cunit_case bell_cases[] = {
	CUNIT_CASE(test_bell_basics),
	CUNIT_CASE(test_bell_wakeup_one),
	CUNIT_CASE(test_bell_wakeup_many),
	CUNIT_CASE(test_bell_across_processes),
};

static const struct cunit_case config_cases[] = {
	CUNIT_CASE(test_config_good),
	CUNIT_CASE(test_config_file),
	CUNIT_CASE(test_config_bad),
	CUNIT_CASE(test_config_file_bad),
	CUNIT_CASE(test_config_timeout_nan),
	CUNIT_CASE(test_config_help),
	CUNIT_CASE(test_config_file_rules),
	CUNIT_CASE(test_config_read_buf),
	CUNIT_CASE(test_config_program_path),
	CUNIT_CASE(test_config_outputs_untouched),
};

static const struct cunit_suite suites[] = {
	{"emu shared memory and NUMA", layout_cases, CUNIT_COUNT(layout_cases)},
	{"emu doorbells", bell_cases, CUNIT_COUNT(bell_cases)},
	{"emu configuration", config_cases, CUNIT_COUNT(config_cases)},
};

int main(void) { return cunit_main(suites, CUNIT_COUNT(suites)); }
