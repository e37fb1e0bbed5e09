/*
 * The reference simulator: a small sequential discrete-event simulation of
 * the exact time model of docs/model.md, written to be obviously
 * right rather than fast. It is the specification the engines are held to
 * (issue 13, point 5): fed the same traffic, the emulator's per-transfer
 * completion times must equal its own to the picosecond.
 *
 * The model, in full:
 *
 * - A core posts its transfers in the order given. Posting costs the core
 *   inj_overhead: at clock c with a transfer whose post time is t, the clock
 *   becomes max(c, t) + inj_overhead and the transfer is ready then. Raw
 *   packets are posted the same way, into the core's raw injection FIFO.
 * - Every node has input ports in one fixed order, which is also the
 *   round-robin order of every output link:
 *     incoming links by 2 * dim + dir of travel, VC 1 before VC 0
 *     (port 2 * (2 * dim + dir) + (vc ? 0 : 1));
 *     then for each core c: its raw FIFO, then its DMA injection FIFOs
 *     0 .. inj_fifos - 1;
 *     then the reply queue (remote gets answered here).
 * - Output-queued, unbounded buffers: a packet that reaches a node (or is
 *   injected there) waits in the queue of its input port for its output:
 *   the next link of its dimension-order route (direction hints applied),
 *   or local delivery if this node is its destination.
 * - A link direction is free or busy. When it is free at f, let t = max(f,
 *   the earliest ready time of a packet waiting for it); among the input
 *   ports whose oldest packet for it is ready by t, the first after the
 *   link's round-robin pointer (the port served last) goes, and the pointer
 *   moves to it. The packet holds the link for ser(wire bytes) and reaches
 *   the next node hop_latency after it finished leaving.
 * - Local delivery takes no time: a packet is deposited when it is ready,
 *   packets ready at the same time in port order.
 * - At equal times, deliveries come before departures (a delivery can make
 *   a packet ready at that very time: a remote get's reply).
 * - A DMA injection FIFO injects its descriptors one after another, and the
 *   packets of one descriptor one after another: the first is ready when
 *   the descriptor is (and no earlier than the previous descriptor's last
 *   packet left), each next one when the previous one left this node (the
 *   end of its serialisation on the first link; for a transfer to the node
 *   itself, when it was deposited).
 * - A remote get sends one request packet of getreq_bytes from the FIFO;
 *   its delivery at the target appends a reply (a put of the data back to
 *   the requester) to the target's reply queue, ready at that time. The
 *   reply queue injects like a DMA FIFO.
 * - VCs: a packet enters a dimension on VC 0, or VC 1 if its first hop
 *   there crosses the dateline (wrap-around); it stays on its VC within the
 *   dimension and moves to VC 1 at the dateline.
 */
#ifndef TORUS_REFSIM_H
#define TORUS_REFSIM_H

#include <torus/machine.h>

enum refsim_kind { REFSIM_RAW = 1, REFSIM_PUT = 2, REFSIM_GET = 3, REFSIM_MEMFIFO = 4 };

struct refsim_xfer {
	uint32_t kind;
	uint32_t src_node, src_core, fifo; /* who posts it; DMA injection FIFO (RAW: unused) */
	uint32_t dst_node, dst_core;       /* GET: the node read; the data comes back to src */
	uint64_t len;                      /* bytes (RAW: at most one payload) */
	torus_vt_t post;                   /* the core's clock is at least this when it posts */
	uint16_t hints;
	/* results */
	torus_vt_t ready;                  /* after the injection overhead */
	torus_vt_t done;                   /* its last packet deposited (GET: back at src) */
	uint64_t packets;                  /* packets deposited */
};

/* One packet on one link direction, as the simulation sent it. */
struct refsim_hop {
	uint32_t node, link; /* link = 2 * dim + dir, leaving node */
	torus_vt_t start, end;
	uint32_t wire, xfer;
};

struct refsim_config {
	const struct torus_shape *shape;
	const struct torus_params *params;
	const uint32_t *cores;  /* per node */
	uint32_t getreq_bytes;  /* payload of a remote get's request packet */
	/* optional: called for every packet on every link, in the order the
	 * simulation sends them */
	void (*hop)(void *arg, const struct refsim_hop *h);
	void *arg;
};

/*
 * Run the scenario x[0..n) to the end; fills each transfer's results.
 * 0, or -EINVAL (a transfer names a node, core or FIFO that does not
 * exist, or a raw packet too long), or -ENOMEM.
 */
int refsim_run(const struct refsim_config *cfg, struct refsim_xfer *x, size_t n);

#endif
