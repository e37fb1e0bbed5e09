/*
 * torus-bench's run: every core's program in the job (bench_core): the
 * set-up, the timed calls of each size, their checks, and what differs
 * per collective family (reduce_scatter, allgather, allreduce; alltoall;
 * alltoallv): gathering the link loads and the row's bound.
 */
#include "bench.h"
#include "torus/trace.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Exit status for main (2: command line, 1: failure); every node's core 0
 * sets the same value. */
_Atomic int exit_status;

/* State shared by the cores of this node (threads of one process): core 0
 * writes it, the others read it after a barrier. */
static struct {
	void *send, *recv;
	uint64_t before[2 * TORUS_MAX_DIMS];
	int64_t lsend[2], lrecv[2]; /* most loaded link, minus the least loaded */
	uint32_t *leads; /* global rank of each node's core 0 */
	double wall[MAX_REPS], emulated[MAX_REPS]; /* node 0: the timed calls */
} node;

/* The median of v[0..n-1] (n >= 1; sorts v). */
static double median(double *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		for (uint32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* agreement codes (the largest wins) */
#define CODE_SETUP (1u << 29)
#define CODE_CHECK (1u << 30) /* | 0xffff - node: the lowest failing node wins */

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* $TORUS_COLL_<KIND>, if set and not empty (empty is the default, as in
 * the library), else NULL */
static const char *env_algo(const char *env)
{
	const char *v = getenv(env);
	return v && *v ? v : NULL;
}

/* The algorithm that the collective runs: --algo, $TORUS_COLL_<KIND>, or
 * the catalogue's first entry. A team of every node in node order meets
 * every restriction coll_team_fits() checks, so the default is the first
 * entry. *deflt: not chosen by --algo. */
static const char *algo_used(int *deflt, char *env, size_t len)
{
	snprintf(env, len, "TORUS_COLL_%s%s", coll_kind_name(opt.kind), opt.inplace ? "_inplace" : "");
	for (char *s = env; *s; s++)
		*s = (char)(*s >= 'a' && *s <= 'z' ? *s - 32 : *s);
	*deflt = !opt.algo;
	if (opt.algo)
		return opt.algo;
	if (env_algo(env))
		return env_algo(env);
	if (opt.kind == COLL_ALLTOALL)
		return "default"; /* the catalogue's rule, size by size */
	size_t n;
	const struct coll_algorithm *al = coll_catalogue(opt.kind, &n);
	for (size_t i = 0; i < n; i++)
		if (!(al[i].flags & COLL_F_INPLACE) == !opt.inplace)
			return al[i].name; /* in-place calls default to the first in-place entry */
	return al[0].name;
}

/* " (the team does not meet the algorithm's restrictions: ...)", from the
 * catalogue */
static const char *restrictions_of(const char *algo)
{
	static _Thread_local char why[320];
	size_t n;
	const struct coll_algorithm *al = coll_catalogue(opt.kind, &n);
	snprintf(why, sizeof(why), " (the team does not meet the algorithm's restrictions)");
	for (size_t i = 0; i < n; i++)
		if (!strcmp(al[i].name, algo))
			snprintf(why, sizeof(why), " (the team does not meet the algorithm's restrictions: %s)",
				 al[i].restrictions);
	return why;
}

/* Is algo an in-place algorithm run without --inplace, or the reverse? */
static int inplace_mismatch(const char *algo)
{
	size_t n;
	const struct coll_algorithm *al = coll_catalogue(opt.kind, &n);
	for (size_t i = 0; opt.kind == COLL_ALLTOALLV && i < n; i++)
		if (!strcmp(al[i].name, algo))
			return !(al[i].flags & COLL_F_INPLACE) != !opt.inplace;
	return 0;
}

/* Payload bytes sent so far on each outgoing link direction of this node. */
static unsigned read_links(emu_core_t *c, uint64_t *out)
{
	const struct torus_shape *s = emu_shape(c);
	unsigned n = 0;
	for (uint32_t d = 0; d < s->ndims; d++)
		for (uint32_t dir = 0; torus_dim_has_links(s, d) && dir < 2; dir++) {
			struct torus_link_counters ctr = {0};
			emu_link_read(c, d, dir, &ctr);
			out[n++] = ctr.payload_bytes;
		}
	return n;
}

static int run_coll(coll_team_t *t, void *send, void *recv, size_t count)
{
	switch (opt.kind) {
	case COLL_REDUCE_SCATTER:
		return coll_reduce_scatter(t, send, recv, count, opt.dtype, opt.op, opt.algo);
	case COLL_ALLGATHER: return coll_allgather(t, send, recv, count, opt.dtype, opt.algo);
	case COLL_ALLTOALL: return coll_alltoall(t, send, recv, count, opt.dtype, opt.algo);
	case COLL_ALLTOALLV:
		if (opt.inplace)
			return coll_alltoallv_inplace(t, recv, vc.sc, vc.rc, opt.dtype, opt.algo);
		return coll_alltoallv(t, send, vc.sc, vc.sd, recv, vc.rc, vc.rd, opt.dtype, opt.algo);
	default: return coll_allreduce(t, send, recv, count, opt.dtype, opt.op, opt.algo);
	}
}

/* Every core of the job leaves with the largest code any of them gave. */
static int agree(emu_core_t *c, const uint32_t *all, uint32_t code, uint32_t *out)
{
	int rc = dma_barrier_team_max(c, all, emu_core_total(c), code, out);
	if (rc)
		fprintf(stderr, PROG ": node %u core %u: barrier failed: %s\n", emu_node_rank(c), emu_core_index(c),
			dma_strerror(rc));
	return rc;
}

/* The largest v over every core of the job (two 32-bit barrier rounds). */
static int max_all(emu_core_t *c, const uint32_t *all, uint32_t total, uint64_t v, uint64_t *out)
{
	uint32_t hi, lo;
	int rc = dma_barrier_team_max(c, all, total, (uint32_t)(v >> 32), &hi);
	if (!rc)
		rc = dma_barrier_team_max(c, all, total, (uint32_t)(v >> 32) == hi ? (uint32_t)v : 0, &lo);
	if (!rc)
		*out = (uint64_t)hi << 32 | lo;
	return rc;
}

/*
 * Combine the most (and least) loaded link over the nodes on the barrier
 * network, by core 0 of every node: when the collective library cannot run
 * an allreduce on this team. 64-bit values in two 32-bit rounds.
 */
static int links_by_barrier(emu_core_t *c, uint32_t p)
{
	for (int i = 0; i < 2; i++) {
		uint64_t v = (uint64_t)node.lsend[i] + (1ull << 63); /* order-preserving */
		uint32_t hi, lo;
		int rc = dma_barrier_team_max(c, node.leads, p, (uint32_t)(v >> 32), &hi);
		if (!rc)
			rc = dma_barrier_team_max(c, node.leads, p, (uint32_t)(v >> 32) == hi ? (uint32_t)v : 0, &lo);
		if (rc)
			return rc;
		node.lrecv[i] = (int64_t)((((uint64_t)hi << 32) | lo) - (1ull << 63));
	}
	return 0;
}

/* ------------------------------------------------------------ a core's run */

/* What a step of bench_core says next. */
enum step {
	STEP_ON,     /* go on */
	STEP_OUT,    /* done (or refused alike everywhere): free everything, exit 0 */
	STEP_LEAVE,  /* refused before the set-up: exit 0 */
	STEP_BROKEN, /* a barrier failed (the job is being torn down): leave loudly */
};

/* One core's run: what the steps of bench_core share. */
struct bench {
	emu_core_t *c;
	uint32_t me, ci, p, total; /* node, core of the node, nodes, cores of the job */
	int lead;                  /* node 0's core 0: it prints */
	const struct torus_params *params;
	uint32_t k; /* cores of each node that run the collective */
	/* members: nodes (a node team of K cores each), or alltoall --members
	 * cores: every core, with buffers of its own */
	int cm, member;
	uint32_t mp, mrank;
	uint64_t unit, nmax;
	void *my_send, *my_recv;
	uint32_t *mnode; /* node of each member (alltoall plans, node 0) */
	int deflt;
	char env[64];
	const char *algo;
	coll_team_t *team;
	struct ref ref;
	uint32_t *all; /* every core of the job */
	char shape[64];
};

/* ------------------------------------------------- the collective families */

/*
 * What differs between the families after a size's calls. links, on every
 * core: the most and least loaded link of the torus over the job
 * (node.lrecv), and what else the row shows (r); 0, or -1 when a barrier
 * failed. bound, on node 0: the row's lower bound (ps).
 */
struct family {
	int (*links)(struct bench *bc, struct row *r);
	double (*bound)(struct bench *bc, struct row *r, size_t count);
};

/* reduce_scatter, allgather, allreduce: the link loads by an allreduce on
 * the team (else over the barrier network) */
static int reduce_links(struct bench *bc, struct row *r)
{
	(void)r;
	if (!bc->member)
		return 0;
	/* bookkeeping: traces show it as control traffic */
	coll_team_set_trace_tag(bc->team, TORUS_TAG_CONTROL);
	int lrc = coll_allreduce(bc->team, node.lsend, node.lrecv, 2, COLL_INT64, COLL_MAX, bc->algo);
	coll_team_set_trace_tag(bc->team, 0);
	/* -ENOTSUP: the algorithm does not fit this team (too many
	 * nodes for its counters), and -ENOENT for another
	 * collective's algorithm that allreduce's catalogue lacks:
	 * expected fallbacks; anything else is a fault of the
	 * library, and the run says so */
	if (lrc && lrc != -ENOTSUP && !(lrc == -ENOENT && opt.kind != COLL_ALLREDUCE)) {
		fprintf(stderr,
			PROG ": node %u core %u: the allreduce that gathers the link loads (%s) failed: %s; "
			     "gathering them over the barrier network instead\n",
			bc->me, bc->ci, bc->algo ? bc->algo : "default", dma_strerror(lrc));
		atomic_store(&exit_status, 1);
	}
	if (lrc && bc->ci == 0 && links_by_barrier(bc->c, bc->p))
		return -1;
	return 0;
}

/* the bound of Fig. 2 */
static double reduce_bound(struct bench *bc, struct row *r, size_t count)
{
	(void)count;
	return coll_lower_bound_ps(opt.kind, emu_shape(bc->c), bc->params, (double)r->bytes);
}

/* alltoall --explain: the schedule of the first size, from node 0; nothing
 * runs */
static enum step a2a_explain(struct bench *bc)
{
	emu_core_t *c = bc->c;
	const struct torus_params *params = bc->params;
	if (bc->lead) {
		size_t count = opt.sizes[0] / bc->unit;
		uint64_t block = count * coll_dtype_size(opt.dtype);
		const char *name = bc->deflt && !env_algo(bc->env)
					   ? coll_alltoall_default(emu_shape(c), bc->mnode, bc->mp, block, params->dma_counters)
					   : bc->algo;
		coll_plan_t *pl = NULL;
		int rc = coll_alltoall_plan(name, emu_shape(c), params, bc->mnode, bc->mp, block, &pl);
		if (rc) {
			fprintf(stderr, PROG ": --explain: alltoall %s on %u members: %s\n", name, bc->mp,
				rc == -ENOENT ? "no such algorithm" : rc == -ENOTSUP ? "the team does not fit it" : dma_strerror(rc));
			atomic_store(&exit_status, rc == -ENOENT ? 2 : 1);
		} else {
			coll_plan_print(pl, stdout, opt.json);
			fflush(stdout);
		}
		coll_plan_free(pl);
	}
	return dma_barrier(c) ? STEP_BROKEN : STEP_OUT;
}

/* alltoall: the link loads over the barrier network */
static int a2a_links(struct bench *bc, struct row *r)
{
	(void)r;
	return bc->ci == 0 && links_by_barrier(bc->c, bc->p) ? -1 : 0;
}

/* alltoall: the larger of the plan's two bounds (both in the row, with the
 * algorithm of the size) */
static double a2a_bound(struct bench *bc, struct row *r, size_t count)
{
	emu_core_t *c = bc->c;
	const struct torus_params *params = bc->params;
	uint64_t block = count * coll_dtype_size(opt.dtype);
	r->algo = bc->deflt && !env_algo(bc->env)
			  ? coll_alltoall_default(emu_shape(c), bc->mnode, bc->mp, block, params->dma_counters)
			  : bc->algo;
	coll_plan_t *pl = NULL;
	struct coll_plan_bounds b = {0, 0, 0};
	if (!coll_alltoall_plan(r->algo, emu_shape(c), params, bc->mnode, bc->mp, block, &pl))
		coll_plan_bounds(pl, params, &b);
	coll_plan_free(pl);
	r->link_ps = b.link_ps;
	r->round_ps = b.round_ps;
	return b.link_ps > b.round_ps ? b.link_ps : b.round_ps;
}

/* The link-load bound of sending every message of the pattern straight to
 * its owner by dimension-order routes: the busiest link direction's wire
 * bytes over the bandwidth, in ps. */
static double v_link_bound(const struct torus_shape *s, const struct torus_params *prm, const uint32_t *mnode,
			   uint32_t p, uint64_t m)
{
	uint32_t nn = s->nnodes, pay = torus_params_payload(prm);
	uint64_t *load = calloc((size_t)nn * 2 * TORUS_MAX_DIMS, sizeof(uint64_t)), best = 0;
	uint8_t *route = malloc((size_t)nn * nn);
	size_t esz = coll_dtype_size(opt.dtype);
	if (!load || !route) {
		free(load);
		free(route);
		return 0;
	}
	for (uint32_t x = 0; x < nn; x++)
		torus_route_table(s, x, route + (size_t)x * nn);
	for (uint32_t i = 0; i < p; i++)
		for (uint32_t j = 0; j < p; j++) {
			uint64_t len = (uint64_t)v_count(opt.pattern, opt.seed, p, i, j, m) * esz;
			uint64_t w = len / pay * torus_wire_bytes(prm, pay) + (len % pay ? torus_wire_bytes(prm, (uint32_t)(len % pay)) : 0);
			for (uint32_t at = mnode[i]; len && at != mnode[j];) {
				uint32_t l = route[(size_t)at * nn + mnode[j]];
				load[(size_t)at * 2 * TORUS_MAX_DIMS + l] += w;
				at = torus_neighbor(s, at, l >> 1, (enum torus_dir)(l & 1));
			}
		}
	for (size_t k = 0; k < (size_t)nn * 2 * TORUS_MAX_DIMS; k++)
		best = load[k] > best ? load[k] : best;
	free(load);
	free(route);
	return (double)best * 1e12 / (double)prm->link_bw;
}

/* alltoallv: what the last call counted (the most over the members), and
 * the link loads over the barrier network */
static int v_links(struct bench *bc, struct row *r)
{
	emu_core_t *c = bc->c;
	const uint32_t *all = bc->all, total = bc->total;
	struct coll_v_stats st;
	memset(&st, 0, sizeof(st));
	if (bc->member && (bc->cm || bc->ci == 0))
		coll_alltoallv_stats(bc->team, &st);
	memcpy(r->vst.ran, st.ran, sizeof(st.ran)); /* alike on every member: the lead's */
	uint64_t v;
	if (max_all(c, all, total, st.stages, &v))
		return -1;
	r->vst.stages = (uint32_t)v;
	for (uint32_t g = 0; g < r->vst.stages && g < COLL_V_MAX_STAGES; g++)
		if (max_all(c, all, total, st.startups[g], &r->vst.startups[g]) ||
		    max_all(c, all, total, st.longest[g], &r->vst.longest[g]))
			return -1;
	if (max_all(c, all, total, st.extra_bytes, &r->vst.extra_bytes))
		return -1;
	return bc->ci == 0 && links_by_barrier(c, bc->p) ? -1 : 0;
}

/* alltoallv: the link-load bound of the pattern's messages */
static double v_bound(struct bench *bc, struct row *r, size_t count)
{
	(void)r;
	return v_link_bound(emu_shape(bc->c), bc->params, bc->mnode, bc->mp, count);
}

static const struct family reduce_family = {reduce_links, reduce_bound}, a2a_family = {a2a_links, a2a_bound},
			   v_family = {v_links, v_bound};

static const struct family *family_of(enum coll_kind kind)
{
	return kind == COLL_ALLTOALL ? &a2a_family : kind == COLL_ALLTOALLV ? &v_family : &reduce_family;
}

/* ---------------------------------------------------------------- set-up */

/* Who the members are, the algorithm, and what every step needs; STEP_ON,
 * or STEP_BROKEN out of memory. */
static enum step bench_members(struct bench *bc)
{
	emu_core_t *c = bc->c;
	const uint32_t total = bc->total;
	bc->cm = opt.members_cores;
	bc->mp = bc->cm ? total : bc->p;
	bc->mrank = bc->cm ? emu_core_global(c) : bc->me;
	bc->member = bc->cm || bc->ci < bc->k;
	bc->unit = unit_bytes(bc->mp);
	bc->nmax = opt.sizes[opt.nsizes - 1] / bc->unit * bc->unit;
	bc->algo = algo_used(&bc->deflt, bc->env, sizeof(bc->env));
	uint32_t *all = bc->all = malloc(total * sizeof(uint32_t));
	if (!all) {
		fprintf(stderr, PROG ": node %u core %u: out of memory\n", bc->me, bc->ci);
		return STEP_BROKEN;
	}
	for (uint32_t g = 0; g < total; g++)
		all[g] = g;
	ref_init(&bc->ref, bc->p);
	torus_shape_format(emu_shape(c), bc->shape, sizeof(bc->shape));
	return STEP_ON;
}

/* The buffers against the host's memory, before anything is allocated
 * (node 0 looks, and every core leaves alike). */
static enum step bench_fits_host(struct bench *bc)
{
	const uint32_t mp = bc->mp;
	const int cm = bc->cm;
	uint32_t too_big = 0;
	if (bc->lead) {
		uint64_t vs = 0, vr = 0, avail = emu_host_mem_available();
		if (opt.kind == COLL_ALLTOALLV && v_most(0, mp, &vs, &vr))
			vs = vr = 0;
		uint64_t need = run_bytes(mp, bc->nmax, vs, vr);
		if (avail && need > avail) {
			fprintf(stderr,
				PROG ": the run's buffers need about %.1f GiB (%u %s, %llu bytes at the largest size) but "
				     "the host has %.1f GiB available: give smaller --sizes\n",
				need / 1073741824.0, mp, cm ? "cores" : "nodes", (unsigned long long)bc->nmax,
				avail / 1073741824.0);
			too_big = 1;
		}
	}
	if (agree(bc->c, bc->all, too_big, &too_big))
		return STEP_BROKEN;
	if (too_big) {
		if (bc->ci == 0)
			atomic_store(&exit_status, 2);
		return STEP_LEAVE;
	}
	return STEP_ON;
}

/* The set-up: the node team, and the node's buffers (core 0). */
static enum step bench_alloc(struct bench *bc)
{
	emu_core_t *c = bc->c;
	const uint32_t me = bc->me, ci = bc->ci, p = bc->p, mp = bc->mp;
	const int cm = bc->cm;
	const uint64_t nmax = bc->nmax;
	uint32_t code = 0;
	if (bc->member) {
		int rc = cm ? coll_team_world(c, &bc->team) : coll_team_nodes(c, opt.k, &bc->team);
		if (rc) {
			fprintf(stderr, PROG ": node %u core %u: cannot make the team: %s\n", me, ci, dma_strerror(rc));
			code = CODE_SETUP;
		}
	}
	size_t esz = coll_dtype_size(opt.dtype);
	uint64_t vsmax = 0, vrmax = 0; /* alltoallv: the buffers, in elements */
	if (opt.kind == COLL_ALLTOALLV && bc->member && v_most(bc->mrank, mp, &vsmax, &vrmax)) {
		fprintf(stderr, PROG ": node %u core %u: out of memory\n", me, ci);
		code = CODE_SETUP;
	}
	if (cm) {
		size_t sb = opt.kind == COLL_ALLTOALLV ? vsmax * esz + 1 : nmax;
		size_t rb = opt.kind == COLL_ALLTOALLV ? vrmax * esz + 1 : nmax;
		bc->my_send = malloc(sb);
		bc->my_recv = malloc(rb);
		if (!bc->my_send || !bc->my_recv) {
			fprintf(stderr, PROG ": node %u core %u: cannot allocate %zu + %zu bytes of buffers\n", me, ci, sb, rb);
			code = CODE_SETUP;
		}
	}
	if (bc->lead && (opt.kind == COLL_ALLTOALL || opt.kind == COLL_ALLTOALLV)) {
		uint32_t *mnode;
		if ((mnode = bc->mnode = malloc(mp * sizeof(uint32_t))))
			for (uint32_t i = 0, core; i < mp; i++)
				if (!cm)
					mnode[i] = i;
				else
					emu_core_locate(c, i, &mnode[i], &core);
		else
			code = CODE_SETUP;
	}
	if (ci == 0) {
		size_t sbytes = cm ? 1 : opt.kind == COLL_ALLGATHER ? nmax / p : nmax;
		size_t rbytes = cm ? 1 : opt.kind == COLL_REDUCE_SCATTER ? nmax / p : nmax;
		if (opt.kind == COLL_ALLTOALLV && !cm) {
			sbytes = vsmax * esz + 1;
			rbytes = vrmax * esz + 1;
		}
		node.send = malloc(sbytes);
		node.recv = malloc(rbytes);
		node.leads = malloc(p * sizeof(uint32_t));
		if (!node.send || !node.recv || !node.leads) {
			fprintf(stderr, PROG ": node %u: cannot allocate %zu + %zu bytes of buffers\n", me, sbytes, rbytes);
			code = CODE_SETUP;
		}
		for (uint32_t x = 0, g = 0; node.leads && x < p; g += emu_cores_of(c, x), x++)
			node.leads[x] = g;
		coll_set_compute_delay(opt.delay_ns * 1000);
	}
	if (agree(c, bc->all, code, &code))
		return STEP_BROKEN;
	if (code) {
		if (ci == 0)
			atomic_store(&exit_status, 1);
		return STEP_OUT;
	}
	return STEP_ON;
}

/* Everything the set-up allocated but `all`. */
static void bench_free(struct bench *bc)
{
	coll_team_free(bc->team);
	free(bc->my_send);
	free(bc->my_recv);
	free(bc->mnode);
	free(vc.sc);
	vc.sc = NULL;
	if (bc->ci == 0) {
		/* after the last barrier: no core of this node uses them any more */
		free(node.send);
		free(node.recv);
		free(node.leads);
		node.send = node.recv = NULL;
		node.leads = NULL;
	}
}

/* ------------------------------------------------------------- the sizes */

/*
 * One size's calls: warm-up calls, then the timed ones (node 0 keeps their
 * times); every call is checked, the link loads are those of the last
 * one. *codep: 0, or what failed (the largest code over the job). 0, or -1
 * when a barrier failed.
 */
static int bench_calls(struct bench *bc, size_t count, uint32_t *codep)
{
	emu_core_t *c = bc->c;
	const uint32_t me = bc->me, ci = bc->ci, p = bc->p, mp = bc->mp, mrank = bc->mrank;
	const int lead = bc->lead, cm = bc->cm, member = bc->member;
	const struct torus_params *params = bc->params;
	const uint32_t calls = opt.warmup + opt.reps;
	uint64_t after[2 * TORUS_MAX_DIMS];
	unsigned nl = 0;
	uint32_t code = 0;
	for (uint32_t it = 0; it < calls && !code; it++) {
		double w0 = 0;
		int rc = 0;
		if (cm)
			fill(bc->my_send, bc->my_recv, mrank, mp, count, &bc->ref);
		if (ci == 0) {
			if (!cm)
				fill(node.send, node.recv, me, p, count, &bc->ref);
			/* before the barrier: once it opens, other nodes'
			 * packets may cross this node's links */
			read_links(c, node.before);
		}
		if (dma_barrier(c))
			return -1;
		torus_vt_t t0 = emu_core_now(c);
		if (lead)
			w0 = wall_now();
		if (member)
			rc = run_coll(bc->team, cm ? bc->my_send : node.send, cm ? bc->my_recv : node.recv, count);
		if (dma_barrier(c))
			return -1;
		torus_vt_t t1 = emu_core_now(c);
		if (lead && it >= opt.warmup) {
			node.wall[it - opt.warmup] = wall_now() - w0;
			node.emulated[it - opt.warmup] = (double)(t1 - t0 - params->barrier_latency_ps);
		}
		/* the others wait (asleep) until node 0 has read the wall
		 * clock: their checking must not compete with node 0 for
		 * the CPU before it has */
		if (dma_barrier(c))
			return -1;

		code = rc < 0 ? (uint32_t)-rc & 0xffffu : rc ? 0xffffu : 0;
		if (ci == 0 && !code) {
			if (it + 1 == calls) {
				/* the collective is over everywhere: the links are quiet */
				nl = read_links(c, after);
				int64_t mx = 0, mn = INT64_MAX;
				for (unsigned i = 0; i < nl; i++) {
					int64_t d = (int64_t)(after[i] - node.before[i]);
					mx = d > mx ? d : mx;
					mn = d < mn ? d : mn;
				}
				node.lsend[0] = mx;
				node.lsend[1] = nl ? -mn : 0;
			}
			if (!cm && opt.check && verify(node.recv, me, p, count, &bc->ref))
				code = CODE_CHECK | (0xffffu - (me & 0xffffu));
		}
		if (cm && !code && opt.check && verify(bc->my_recv, mrank, mp, count, &bc->ref))
			code = CODE_CHECK | (0xffffu - (mrank & 0xffffu));
		if (agree(c, bc->all, code, &code))
			return -1;
	}
	*codep = code;
	return 0;
}

/* What failed (code, alike on every core): a wrong result, said by the
 * checking core of the member that found it; an error, by node 0. */
static void report_failure(const struct bench *bc, uint32_t code, const struct row *r)
{
	const int cm = bc->cm;
	const uint32_t mrank = bc->mrank;
	const char *algo = bc->algo;
	const int deflt = bc->deflt;
	if (code & CODE_CHECK) {
		if ((cm || bc->ci == 0) && (code & 0xffffu) == 0xffffu - (mrank & 0xffffu))
			fprintf(stderr,
				PROG ": %s (%s) of %llu bytes: wrong result on %s %u at element %llu: got %.17g, "
				     "expected %.17g (%llu wrong element%s on that %s)\n",
				coll_kind_name(opt.kind), algo, (unsigned long long)r->bytes, cm ? "member" : "node", mrank,
				(unsigned long long)chk.wrong_at, chk.got, chk.want,
				(unsigned long long)chk.wrong, chk.wrong == 1 ? "" : "s", cm ? "member" : "node");
	} else if (bc->lead) {
		int err = -(int)code;
		if (err == -ENOENT)
			fprintf(stderr, PROG ": %s: no algorithm named '%s'%s%s%s\n", coll_kind_name(opt.kind),
				algo, deflt ? " (from $" : "", deflt ? bc->env : "", deflt ? ")" : "");
		else
			fprintf(stderr, PROG ": %s (%s) of %llu bytes failed: %s%s\n", coll_kind_name(opt.kind),
				algo, (unsigned long long)r->bytes, dma_strerror(err),
				err == DMA_ERR_NOSPACE ? " (too many nodes for this algorithm? see --help; "
							 "try --param dma_counters=N)"
				: err == -EINVAL && opt.inplace
					? " (in place, every member must receive as much as it sends: "
					  "case1..case4, random and skewed give that)"
				: err == -ENOTSUP && inplace_mismatch(algo)
					? " (an in-place algorithm runs only with --inplace, and the others only "
					  "without)"
				: err == -ENOTSUP && opt.inplace && !strcmp(algo, "bitonic")
					? " (bitonic needs every member's total alike: case1..case4 give that)"
				: err == -ENOTSUP ? restrictions_of(algo)
						  : "");
	}
}

/* Every size: its calls, the link loads, and node 0's row; STEP_OUT, or
 * STEP_BROKEN. */
static enum step bench_sizes(struct bench *bc)
{
	emu_core_t *c = bc->c;
	const int lead = bc->lead;
	const struct family *fam = family_of(opt.kind);
	if (lead)
		print_header(c, bc->k, bc->algo, bc->deflt, bc->shape);

	double start = wall_now();
	unsigned done = 0;
	for (unsigned s = 0; s < opt.nsizes; s++) {
		const size_t count = opt.sizes[s] / bc->unit;
		struct row r = {.bytes = count * bc->unit, .count = count};
		uint32_t code = 0;

		if (opt.kind == COLL_ALLTOALLV && bc->member)
			v_setup(bc->mrank, bc->mp, count); /* allocated at the set-up: cannot fail */
		if (bench_calls(bc, count, &code))
			return STEP_BROKEN;
		if (code) {
			report_failure(bc, code, &r);
			if (bc->ci == 0)
				atomic_store(&exit_status, 1);
			break;
		}

		/* the most and least loaded link of the torus, after the timed part */
		if (fam->links(bc, &r))
			return STEP_BROKEN;
		if (dma_barrier(c)) /* the links are quiet again */
			return STEP_BROKEN;
		if (lead) {
			r.wall_s = median(node.wall, opt.reps);
			r.emulated_ps = (uint64_t)median(node.emulated, opt.reps);
			double bound = fam->bound(bc, &r, count);
			r.bound_ps = bound;
			r.ratio = bound > 0 ? (double)r.emulated_ps / bound : 0;
			r.link_max = node.lrecv[0];
			r.link_min = -node.lrecv[1];
			print_row(&r, done);
			double el = wall_now() - start;
			if (el > 2.0)
				fprintf(stderr, PROG ": %s %llu bytes done (%u/%u sizes, %.1f s)\n", coll_kind_name(opt.kind),
					(unsigned long long)r.bytes, s + 1, opt.nsizes, el);
		}
		done++;
	}
	if (lead) {
		if (opt.json)
			printf("%s]}\n", done ? "\n" : "");
		fflush(stdout);
	}
	return STEP_OUT;
}

int bench_core(emu_core_t *c, void *arg)
{
	(void)arg;
	struct bench bc = {.c = c, .me = emu_node_rank(c), .ci = emu_core_index(c), .p = emu_node_count(c)};
	char msg[512];
	bc.total = emu_core_total(c);
	bc.lead = bc.me == 0 && bc.ci == 0;
	bc.params = emu_params(c);

	/* command-line errors: one line from node 0, the same status everywhere */
	if (opt.error[0] || job_check(c, msg, sizeof(msg), &bc.k)) {
		if (bc.lead)
			fprintf(stderr, PROG ": %s\n", opt.error[0] ? opt.error : msg);
		if (bc.ci == 0)
			atomic_store(&exit_status, 2);
		return dma_barrier(c) ? 1 : 0; /* node 0 has printed before anyone leaves */
	}
	enum step s = bench_members(&bc);
	if (s == STEP_ON)
		s = bench_fits_host(&bc);
	if (s == STEP_ON)
		s = bench_alloc(&bc);
	if (s == STEP_ON)
		s = opt.explain ? a2a_explain(&bc) : bench_sizes(&bc);
	if (s == STEP_OUT)
		bench_free(&bc);
	free(bc.all);
	return s == STEP_BROKEN;
}
