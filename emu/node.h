/*
 * Node runtime internals: what one node process holds while its engine and
 * core threads run. Private to emu/.
 */
#ifndef EMU_NODE_H
#define EMU_NODE_H

#include "emu_internal.h"

#define EMU_ENGINE_BATCH 32u   /* packets taken from one input before the next */
#define EMU_SLEEP_SLICE_MS 100 /* sleeps re-check abort/shutdown this often */

struct emu_node_rt;

struct emu_core {
	alignas(64) struct emu_node_rt *node;
	struct emu_core_shm *shm;
	uint32_t index;
	struct torus_ring_view inj; /* producer side */
	struct torus_ring_view rx;  /* consumer side */
	torus_vt_t vt;
	uint64_t progress, sent, received;
	emu_core_fn fn;
	void *arg;
	int status;
	pthread_t thread;
};

struct emu_engine_in {
	struct torus_link *link;
	struct torus_ring_view vc[2]; /* consumer side */
	struct emu_bell *producer_bell;
	uint32_t dim, dir;
};

struct emu_engine_out {
	struct torus_link *link;
	struct torus_ring_view vc[2]; /* producer side */
	struct emu_bell *consumer_bell;
	int wrap;                     /* this hop crosses the dateline */
	int valid;
};

struct emu_engine_core {
	struct torus_ring_view inj; /* consumer side */
	struct torus_ring_view rx;  /* producer side */
	struct emu_core_shm *shm;
};

struct emu_node_rt {
	struct emu_shm shm;
	struct emu_shm_hdr *hdr;
	struct emu_node_shm *me;
	const struct torus_params *params;
	uint32_t rank, ncores;
	uint32_t coords[TORUS_MAX_DIMS];
	uint8_t *route;
	struct emu_engine_in in[2 * TORUS_MAX_DIMS];
	uint32_t nin;
	struct emu_engine_out out[2 * TORUS_MAX_DIMS];
	struct emu_engine_core *ecore;
	struct emu_core **cores;
	uint64_t delivered, orphaned, moved;
	pthread_t engine;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t cores_finished;
	int failed_core;
};

void *emu_engine_main(void *arg);
int emu_node_setup(struct emu_node_rt *rt, int fd, uint32_t rank, char *err, size_t errlen);
void emu_node_teardown(struct emu_node_rt *rt);

static inline int emu_job_aborting(const struct emu_node_rt *rt)
{
	return atomic_load_explicit(&rt->hdr->abort, memory_order_relaxed) != 0;
}

#endif
