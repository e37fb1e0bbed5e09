/*
 * The per-core DMA block in the node's shared memory: layout, set-up and
 * the dump the hang detector prints.
 *
 * Layout from `off`: dma_core_shm | injection rings | counters | regions;
 * from `slot_off`, in the node's slot block: memory-FIFO slots | injection
 * FIFO slots (only this node maps them).
 */
#include "dma_internal.h"

static uint64_t align64(uint64_t v) { return (v + 63) & ~63ull; }

uint64_t dma_core_shm_bytes(const struct torus_params *p)
{
	uint64_t b = align64(sizeof(struct dma_core_shm));
	b += align64((uint64_t)p->inj_fifos * sizeof(struct torus_ring));
	b += (uint64_t)p->dma_counters * sizeof(struct dma_counter_shm);
	b += align64((uint64_t)p->dma_regions * sizeof(struct dma_region_shm));
	return align64(b);
}

uint64_t dma_core_slot_bytes(const struct torus_params *p)
{
	return align64(torus_ring_bytes(p->rx_slots) + (uint64_t)p->inj_fifos * torus_ring_bytes(p->inj_slots));
}

void dma_core_shm_init(struct dma_core_shm *d, uint64_t off, uint64_t slot_off, const struct torus_params *p)
{
	char *base = (char *)d - off;
	uint64_t cur = off + align64(sizeof(*d));

	d->ninj = p->inj_fifos;
	d->ncounters = p->dma_counters;
	d->nregions = p->dma_regions;
	d->off_injfifo = cur;
	cur += align64((uint64_t)p->inj_fifos * sizeof(struct torus_ring));
	d->off_counters = cur;
	cur += (uint64_t)p->dma_counters * sizeof(struct dma_counter_shm);
	d->off_regions = cur;
	torus_ring_init(&d->memfifo, p->rx_slots, slot_off);
	slot_off += torus_ring_bytes(p->rx_slots);
	for (uint32_t i = 0; i < p->inj_fifos; i++) {
		torus_ring_init(dma_shm_injfifo(base, d, i), p->inj_slots, slot_off);
		slot_off += torus_ring_bytes(p->inj_slots);
	}
}

void dma_core_shm_dump(const struct dma_core_shm *d, void *base, uint32_t core, FILE *out)
{
	char name[96];
	struct dma_core_shm *dm = (struct dma_core_shm *)d;
	if (torus_ring_count(&d->memfifo)) {
		snprintf(name, sizeof(name), "  core %u memory-FIFO reception", core);
		torus_ring_dump(&d->memfifo, name, out);
	}
	for (uint32_t i = 0; i < d->ninj; i++) {
		struct torus_ring *r = dma_shm_injfifo(base, dm, i);
		if (torus_ring_count(r)) {
			snprintf(name, sizeof(name), "  core %u DMA injection FIFO %u (descriptors)", core, i);
			torus_ring_dump(r, name, out);
		}
	}
	for (uint32_t i = 0; i < d->ncounters; i++) {
		struct dma_counter_shm *k = dma_shm_counter(base, dm, i);
		if (atomic_load(&k->allocated) && atomic_load(&k->value))
			fprintf(out, "  core %u counter %u: %lld bytes outstanding, hit zero %llu times%s\n", core,
				core * d->ncounters + i, (long long)atomic_load(&k->value),
				(unsigned long long)atomic_load(&k->hits), atomic_load(&k->waiters) ? ", waited on" : "");
	}
}
