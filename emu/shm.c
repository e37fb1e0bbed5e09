/*
 * The job's shared memory: layout, creation by torusrun, attachment by node
 * processes, and the dump the hang detector prints.
 *
 * Layout: header | node offset table | first core rank per node | per
 * node, page aligned: node block, core blocks, incoming link blocks, the
 * cores' DMA blocks (their tables) | the slot area: per node, page
 * aligned, the slots of its incoming link rings, then per core those of
 * its injection and reception rings and its DMA unit's rings (its slot
 * block) | under --exact, the timekeeper's channels. A node's
 * region and slot block hold all the memory it receives on; two mbinds
 * place them.
 *
 * Every node process maps the whole file, then replaces the slot area but
 * for its own block and its outgoing links' rings with inaccessible
 * anonymous memory (emu_shm_trim): a ring's
 * pages are mapped by 3 processes, not by all of them. The kernel walks
 * every mapping of a page to age it, and DAMON, where the host runs it,
 * ages pages all the time: on 8x8x8 with 1024-slot links its kdamond took
 * 5 to 12% of both CPUs while 1.5 GB of rings were mapped 513 times.
 */
#include "emu_internal.h"
#include "unit.h"

#include <errno.h>
#include <numa.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

static uint64_t node_region_bytes(const struct torus_shape *s, const struct torus_params *p,
				  uint32_t ncores)
{
	uint64_t b = sizeof(struct emu_node_shm);
	b += (uint64_t)ncores * sizeof(struct emu_core_shm);
	b += (uint64_t)2 * s->ndims * sizeof(struct torus_link);
	b += (uint64_t)ncores * (emu_node_unit.core_shm_bytes(p) + 64);
	return align_up(b, EMU_PAGE);
}

static uint64_t node_slot_bytes(const struct torus_shape *s, const struct torus_params *p, uint32_t ncores)
{
	uint64_t b = 0;
	for (uint32_t d = 0; d < s->ndims; d++)
		if (torus_dim_has_links(s, d))
			b += 2 * 2 * torus_ring_bytes(p->fifo_slots);
	b += (uint64_t)ncores * (torus_ring_bytes(p->inj_slots) + torus_ring_bytes(p->rx_slots) +
				 emu_node_unit.core_slot_bytes(p));
	return align_up(b, EMU_PAGE);
}

uint64_t emu_shm_layout(const struct torus_shape *s, const struct torus_params *p,
			const uint32_t *cores, uint64_t *node_off, uint64_t *slot_off)
{
	uint64_t off = align_up(sizeof(struct emu_shm_hdr) + (uint64_t)s->nnodes * sizeof(uint64_t) +
					(uint64_t)(s->nnodes + 1) * sizeof(uint32_t),
				EMU_PAGE);
	for (uint32_t r = 0; r < s->nnodes; r++) {
		if (node_off)
			node_off[r] = off;
		off += node_region_bytes(s, p, cores[r]);
	}
	for (uint32_t r = 0; r < s->nnodes; r++) {
		if (slot_off)
			slot_off[r] = off;
		off += node_slot_bytes(s, p, cores[r]);
	}
	return off;
}

/* Initialise node r's region and slot block (after their pages were bound
 * to their NUMA node). */
static void init_node(struct emu_shm *m, uint32_t r, uint32_t ncores, uint64_t off, uint64_t slot_off)
{
	const struct torus_shape *s = &m->hdr->shape;
	const struct torus_params *p = &m->hdr->params;
	struct emu_node_shm *n = (struct emu_node_shm *)((char *)m->base + off);
	uint64_t cur = off + sizeof(*n), slot = slot_off;

	n->rank = r;
	n->ncores = ncores;
	n->off_cores = cur;
	cur += (uint64_t)ncores * sizeof(struct emu_core_shm);
	n->off_links_in = cur;
	cur += (uint64_t)2 * s->ndims * sizeof(struct torus_link);
	n->off_slot_block = slot_off;
	n->slot_block_bytes = node_slot_bytes(s, p, ncores);
	for (uint32_t d = 0; d < s->ndims; d++) {
		for (uint32_t dir = 0; dir < 2; dir++) {
			struct torus_link *l = (struct torus_link *)((char *)m->base + n->off_links_in) + 2 * d + dir;
			l->to = r;
			l->from = torus_neighbor(s, r, d, dir == TORUS_PLUS ? TORUS_MINUS : TORUS_PLUS);
			l->dim = d;
			l->dir = dir;
			if (!torus_dim_has_links(s, d))
				continue;
			for (int vc = 0; vc < 2; vc++) {
				torus_ring_init(&l->vc[vc], p->fifo_slots, slot);
				slot += torus_ring_bytes(p->fifo_slots);
			}
		}
	}
	for (uint32_t c = 0; c < ncores; c++) {
		struct emu_core_shm *cs = (struct emu_core_shm *)((char *)m->base + n->off_cores) + c;
		torus_ring_init(&cs->inj, p->inj_slots, slot);
		slot += torus_ring_bytes(p->inj_slots);
		torus_ring_init(&cs->rx, p->rx_slots, slot);
		slot += torus_ring_bytes(p->rx_slots);
		cur = align_up(cur, 64);
		cs->off_dma = cur;
		emu_node_unit.core_shm_init((char *)m->base + cur, cur, slot, p);
		cur += emu_node_unit.core_shm_bytes(p);
		slot += emu_node_unit.core_slot_bytes(p);
	}
	/* what the layout reserved (cur - off is at most that) */
	n->region_bytes = node_region_bytes(s, p, ncores);
}

int emu_shm_create(const struct torus_shape *s, const struct torus_params *p, const uint32_t *cores,
		   const int *numa_of_node, int exact, struct emu_shm *out, int *fd_out, char *err, size_t errlen)
{
	uint64_t *offs = malloc((size_t)s->nnodes * 2 * sizeof(uint64_t)), *slot_offs;
	int fd = -1, rc;
	void *base = MAP_FAILED;

	memset(out, 0, sizeof(*out));
	if (!offs) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	slot_offs = offs + s->nnodes;
	uint64_t bytes = emu_shm_layout(s, p, cores, offs, slot_offs), off_tk = bytes;
	if (exact) {
		uint64_t total = 0;
		for (uint32_t r = 0; r < s->nnodes; r++)
			total += cores[r];
		bytes = align_up(bytes + total * sizeof(struct emu_tk_core) + (total + 63) / 64 * 8, EMU_PAGE);
	}
	/* no MFD_CLOEXEC: node processes inherit the fd through exec */
	fd = memfd_create("torus-job", MFD_ALLOW_SEALING);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "memfd_create: %s", strerror(errno));
		goto fail;
	}
	if (ftruncate(fd, (off_t)bytes) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot size shared memory to %llu bytes: %s",
			 (unsigned long long)bytes, strerror(errno));
		goto fail;
	}
	/* its size is final: no node can shrink it under the others */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot seal shared memory: %s", strerror(errno));
		goto fail;
	}
	base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		rc = -errno;
		snprintf(err, errlen, "mmap of %llu bytes: %s", (unsigned long long)bytes, strerror(errno));
		goto fail;
	}
	out->base = base;
	out->bytes = bytes;
	out->hdr = base;
	struct emu_shm_hdr *h = base;
	h->version = EMU_SHM_VERSION;
	h->nnodes = s->nnodes;
	h->total_bytes = bytes;
	h->shape = *s;
	h->params = *p;
	h->off_node_table = sizeof(*h);
	uint64_t *table = (uint64_t *)((char *)base + h->off_node_table);
	h->off_first_core = h->off_node_table + (uint64_t)s->nnodes * sizeof(uint64_t);
	h->off_slots = slot_offs[0];
	h->slots_bytes = off_tk - slot_offs[0];
	uint32_t *first = (uint32_t *)((char *)base + h->off_first_core);
	uint32_t total = 0, maxc = 0;
	for (uint32_t r = 0; r < s->nnodes; r++) {
		table[r] = offs[r];
		first[r] = total;
		total += cores[r];
		if (cores[r] > maxc)
			maxc = cores[r];
	}
	first[s->nnodes] = total;
	h->total_cores = total;
	h->max_cores = maxc;
	h->exact = exact ? 1u : 0u;
	atomic_store(&h->tk_waits_for, UINT32_MAX);
	h->off_tk = exact ? off_tk : 0;
	h->off_tk_dirty = exact ? off_tk + (uint64_t)total * sizeof(struct emu_tk_core) : 0;
	out->node_off = table;
	out->first_core = first;
	for (uint32_t r = 0; r < s->nnodes; r++) {
		/* bind before first touch, so pages land where the receiver runs */
		if (numa_of_node && numa_available() >= 0 && numa_num_configured_nodes() > 1) {
			numa_tonode_memory((char *)base + offs[r], node_region_bytes(s, p, cores[r]), numa_of_node[r]);
			numa_tonode_memory((char *)base + slot_offs[r], node_slot_bytes(s, p, cores[r]),
					   numa_of_node[r]);
		}
		init_node(out, r, cores[r], offs[r], slot_offs[r]);
	}
	/* publish the magic last: an attaching node checks it first */
	atomic_thread_fence(memory_order_release);
	h->magic = EMU_SHM_MAGIC;
	free(offs);
	*fd_out = fd;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(offs);
	return rc;
}

int emu_shm_attach(int fd, struct emu_shm *out, char *err, size_t errlen)
{
	struct emu_shm_hdr probe;
	memset(out, 0, sizeof(*out));
	if (pread(fd, &probe, sizeof(probe), 0) != (ssize_t)sizeof(probe) || probe.magic != EMU_SHM_MAGIC ||
	    probe.version != EMU_SHM_VERSION) {
		snprintf(err, errlen, "fd %d is not a torus job's shared memory (version %u expected)", fd,
			 EMU_SHM_VERSION);
		return -EINVAL;
	}
	/* the size the header claims must be the file's: mapping more than the
	 * file holds would turn the first touch past its end into SIGBUS */
	struct stat st;
	if (fstat(fd, &st)) {
		snprintf(err, errlen, "fd %d: %s", fd, strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != probe.total_bytes || probe.total_bytes < sizeof(probe) ||
	    probe.off_node_table < sizeof(probe) || probe.nnodes == 0 || probe.nnodes > TORUS_MAX_NODES ||
	    probe.nnodes != probe.shape.nnodes ||
	    probe.off_node_table > probe.total_bytes - (uint64_t)probe.nnodes * sizeof(uint64_t) ||
	    probe.off_first_core < sizeof(probe) ||
	    probe.off_first_core > probe.total_bytes - (uint64_t)(probe.nnodes + 1) * sizeof(uint32_t) ||
	    probe.off_slots < sizeof(probe) || probe.off_slots % EMU_PAGE || probe.off_slots > probe.total_bytes ||
	    probe.slots_bytes % EMU_PAGE || probe.slots_bytes > probe.total_bytes - probe.off_slots) {
		snprintf(err, errlen,
			 "fd %d: job memory is %lld bytes but its header describes %llu bytes and %u nodes "
			 "(truncated or damaged)",
			 fd, (long long)st.st_size, (unsigned long long)probe.total_bytes, probe.nnodes);
		return -EINVAL;
	}
	void *base = mmap(NULL, probe.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		snprintf(err, errlen, "mmap of job memory: %s", strerror(errno));
		return -errno;
	}
	out->base = base;
	out->bytes = probe.total_bytes;
	out->hdr = base;
	out->node_off = (const uint64_t *)((char *)base + out->hdr->off_node_table);
	out->first_core = (const uint32_t *)((char *)base + probe.off_first_core);
	for (uint32_t r = 0; r < probe.nnodes; r++) {
		if (out->node_off[r] < sizeof(probe) || out->node_off[r] > probe.total_bytes - sizeof(struct emu_node_shm)) {
			snprintf(err, errlen, "fd %d: node %u's block lies outside the job memory (damaged)", fd, r);
			emu_shm_detach(out);
			return -EINVAL;
		}
		uint32_t n = out->first_core[r + 1] - out->first_core[r];
		if (out->first_core[r + 1] < out->first_core[r] || n == 0 || n > TORUS_MAX_CORES) {
			snprintf(err, errlen, "fd %d: node %u's core count is damaged", fd, r);
			emu_shm_detach(out);
			return -EINVAL;
		}
	}
	if (out->first_core[0] != 0 || out->first_core[probe.nnodes] != probe.total_cores) {
		snprintf(err, errlen, "fd %d: the table of core ranks is damaged", fd);
		emu_shm_detach(out);
		return -EINVAL;
	}
	if (probe.exact && (probe.off_tk < sizeof(probe) || probe.total_cores > TORUS_MAX_NODES * TORUS_MAX_CORES ||
			    probe.off_tk > probe.total_bytes ||
			    probe.total_bytes - probe.off_tk <
				    (uint64_t)probe.total_cores * sizeof(struct emu_tk_core) + (probe.total_cores + 63) / 64 * 8 ||
			    probe.off_tk_dirty != probe.off_tk + (uint64_t)probe.total_cores * sizeof(struct emu_tk_core))) {
		snprintf(err, errlen, "fd %d: the timekeeper's channels lie outside the job memory (damaged)", fd);
		emu_shm_detach(out);
		return -EINVAL;
	}
	return 0;
}

struct keep {
	uint64_t lo, hi;
};

static int keep_cmp(const void *a, const void *b)
{
	const struct keep *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Keep [lo, hi) of the slot area [a, z), pages whole; 0 or -EINVAL. */
static int keep_add(struct keep *k, uint32_t *n, uint64_t lo, uint64_t len, uint64_t a, uint64_t z)
{
	if (lo < a || lo > z || len > z - lo)
		return -EINVAL;
	k[*n].lo = lo / EMU_PAGE * EMU_PAGE;
	k[*n].hi = align_up(lo + len, EMU_PAGE);
	(*n)++;
	return 0;
}

int emu_shm_trim(struct emu_shm *m, uint32_t rank, char *err, size_t errlen)
{
	const struct torus_shape *s = &m->hdr->shape;
	uint64_t a = m->hdr->off_slots, z = a + m->hdr->slots_bytes;
	struct keep k[1 + 4 * TORUS_MAX_DIMS];
	uint32_t n = 0;
	if (rank >= m->hdr->nnodes) {
		snprintf(err, errlen, "node %u of %u", rank, m->hdr->nnodes);
		return -EINVAL;
	}
	struct emu_node_shm *me = emu_shm_node(m, rank);
	if (keep_add(k, &n, me->off_slot_block, me->slot_block_bytes, a, z)) {
		snprintf(err, errlen, "node %u's slot block lies outside the slot area (damaged)", rank);
		return -EINVAL;
	}
	/* our outgoing links: their rings, in the receivers' blocks */
	for (uint32_t d = 0; d < s->ndims; d++)
		for (uint32_t dir = 0; torus_dim_has_links(s, d) && dir < 2; dir++) {
			const struct torus_link *l = emu_shm_link_out(m, rank, d, dir);
			for (int vc = 0; vc < 2; vc++)
				if (l->from != rank ||
				    keep_add(k, &n, l->vc[vc].off_slots, torus_ring_bytes(l->vc[vc].slots), a, z)) {
					snprintf(err, errlen, "node %u's link along (%u,%c), VC %d, is damaged", rank, d,
						 dir ? '-' : '+', vc);
					return -EINVAL;
				}
		}
	qsort(k, n, sizeof(k[0]), keep_cmp);
	/* the gaps between what we keep become inaccessible anonymous memory,
	 * not holes: a later mmap (a thread's stack) could land in a hole, and
	 * emu_shm_detach's munmap of the whole range would take it away */
	uint64_t from = a;
	for (uint32_t i = 0; i <= n; i++) {
		uint64_t to = i < n ? k[i].lo : z;
		if (to > from && mmap((char *)m->base + from, to - from, PROT_NONE,
				      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED) {
			int e = errno;
			snprintf(err, errlen, "cannot unmap job memory: %s", strerror(e));
			return -e;
		}
		if (i < n && k[i].hi > from)
			from = k[i].hi;
	}
	return 0;
}

void emu_shm_detach(struct emu_shm *m)
{
	if (m->base)
		munmap(m->base, m->bytes);
	memset(m, 0, sizeof(*m));
}

static const char *node_state_name(uint32_t s)
{
	static const char *names[] = {"not attached", "running", "cores done", "exited"};
	return s < 4 ? names[s] : "?";
}

static const char *core_state_name(uint32_t s)
{
	static const char *names[] = {"running", "waiting", "done"};
	return s < 3 ? names[s] : "?";
}

/* One node's part of the dump; returns nonzero if it shows anything stuck. */
static int dump_node(const struct emu_shm *m, uint32_t r, FILE *out)
{
	const struct torus_shape *s = &m->hdr->shape;
	struct emu_node_shm *n = emu_shm_node(m, r);
	uint32_t coords[TORUS_MAX_DIMS];
	char cs[64] = "", name[96];
	size_t used = 0;
	int busy = 0;

	torus_rank_to_coords(s, r, coords);
	for (uint32_t d = 0; d < s->ndims; d++)
		used += (size_t)snprintf(cs + used, sizeof(cs) - used, d ? ",%u" : "%u", coords[d]);
	fprintf(out, "node %u (%s): %s, delivered %llu, engine moves %llu\n", r, cs,
		node_state_name(atomic_load(&n->state)), (unsigned long long)atomic_load(&n->delivered),
		(unsigned long long)atomic_load(&n->progress));
	for (uint32_t c = 0; c < n->ncores; c++) {
		struct emu_core_shm *co = emu_shm_core(m, n, c);
		busy |= atomic_load(&co->state) != EMU_CORE_DONE;
		fprintf(out, "  core %u: %s, clock %llu ps, sent %llu, received %llu\n", c,
			core_state_name(atomic_load(&co->state)), (unsigned long long)atomic_load(&co->vt),
			(unsigned long long)atomic_load(&co->sent), (unsigned long long)atomic_load(&co->received));
		if (torus_ring_count(&co->inj)) {
			snprintf(name, sizeof(name), "  core %u injection FIFO", c);
			torus_ring_dump(&co->inj, name, out);
		}
		if (torus_ring_count(&co->rx)) {
			snprintf(name, sizeof(name), "  core %u reception FIFO", c);
			torus_ring_dump(&co->rx, name, out);
		}
		emu_node_unit.core_shm_dump((char *)m->base + co->off_dma, m->base, c, out);
	}
	for (uint32_t d = 0; d < s->ndims; d++) {
		if (!torus_dim_has_links(s, d))
			continue;
		for (uint32_t dir = 0; dir < 2; dir++) {
			long before = ftell(out);
			torus_link_dump(emu_shm_link_in(m, r, d, dir), "  ", out);
			busy |= ftell(out) != before;
		}
	}
	return busy;
}

void emu_shm_dump(const struct emu_shm *m, FILE *out)
{
	uint32_t quiet = 0;
	for (uint32_t r = 0; r < m->hdr->nnodes; r++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);
		if (!mem) {
			dump_node(m, r, out);
			continue;
		}
		int busy = dump_node(m, r, mem);
		fclose(mem);
		/* a node whose cores are done and whose FIFOs are empty says nothing */
		if (busy || strstr(buf, "slots used") || strstr(buf, "outstanding"))
			fputs(buf, out);
		else
			quiet++;
		free(buf);
	}
	if (quiet)
		fprintf(out, "(%u more nodes: cores done, FIFOs empty)\n", quiet);
}

uint64_t emu_shm_each_link(const struct emu_shm *m, emu_link_fn fn, void *arg)
{
	const struct torus_shape *s = &m->hdr->shape;
	uint64_t n = 0;
	for (uint32_t r = 0; r < s->nnodes; r++)
		for (uint32_t d = 0; d < s->ndims; d++)
			for (uint32_t dir = 0; torus_dim_has_links(s, d) && dir < 2; dir++, n++) {
				if (!fn)
					continue;
				const struct torus_link *l = emu_shm_link_out(m, r, d, dir);
				struct torus_link_counters c;
				torus_link_read(l, &c);
				fn(arg, r, d, dir, l, &c);
			}
	return n;
}
