/*
 * The engine's hooks for the unit that shares each node's engine thread.
 * The DMA unit implements them (dma/unit.c); the engine knows nothing of
 * DMA descriptors, packet kinds other than raw, counters or regions. The
 * engine routes every packet and charges every hop; what a packet of
 * another kind does when it arrives, and what gets injected besides the
 * cores' raw packets, is the unit's business, fast paths included.
 */
#ifndef EMU_UNIT_H
#define EMU_UNIT_H

#include <stdint.h>
#include <stdio.h>

struct emu_node_rt;
struct emu_core;
struct torus_packet;
struct torus_side;
struct torus_params;

struct emu_unit {
	/* per-core state in the machine's shared memory: its size, set up by
	 * torusrun at `off` (shm = base + off), dumped by the hang detector;
	 * and the slots of the rings only its own node uses, core_slot_bytes
	 * at slot_off in the node's slot block (emu/shm.c) */
	uint64_t (*core_shm_bytes)(const struct torus_params *p);
	uint64_t (*core_slot_bytes)(const struct torus_params *p);
	void (*core_shm_init)(void *shm, uint64_t off, uint64_t slot_off, const struct torus_params *p);
	void (*core_shm_dump)(void *shm, void *base, uint32_t core, FILE *out);
	/* a node process attaches (before its cores start) and leaves */
	int (*node_setup)(struct emu_node_rt *rt, char *err, size_t errlen);
	void (*node_teardown)(struct emu_node_rt *rt);
	int (*core_setup)(struct emu_node_rt *rt, struct emu_core *c, char *err, size_t errlen);
	void (*core_teardown)(struct emu_core *c);
	/* a core waits; move what it receives into its stash (> = 0,
	 * or -ENOMEM). Optional. */
	int (*core_drain)(struct emu_core *c);
	/* the core's program returned */
	int (*core_finish)(struct emu_core *c);
	/* engine: one pass over the unit's queues; the packets it moved */
	uint32_t (*inject)(struct emu_node_rt *rt);
	/* engine: the unit holds work it could not finish (a transfer
	 * waiting for room on a link); 0 or 1 */
	int (*backlog)(const struct emu_node_rt *rt);
	/* engine: a packet of a kind other than raw reached this node:
	 * 1 deposited, 0 it must wait (the engine retries it later) */
	int (*deliver)(struct emu_node_rt *rt, const struct torus_packet *pkt, const struct torus_side *side);
	/* engine: make what the batch did visible, before the engine
	 * publishes its deposits as delivered */
	void (*flush)(struct emu_node_rt *rt);
	/* the payload bytes of a remote get's request packet, which
	 * the timekeeper times like any other */
	uint32_t getreq_bytes;
	/* --exact --trace: the packet kinds the timekeeper records, by
	 * transfer kind (EMU_TK_PUT, _GET: its reply, _MEMFIFO), and a get's
	 * request packet's */
	uint8_t tk_kind[8];
	uint8_t getreq_kind;
};

/* The node's unit: the DMA unit's hooks (dma/unit.c). */
extern const struct emu_unit emu_node_unit;

#endif
