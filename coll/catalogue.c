/*
 * The catalogue: one typed table per collective. Selection, the command
 * line (torus-bench --algo) and the tests all read it.
 */
#include "coll_internal.h"
#include "alltoallv/alltoallv.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int coll_reduce_scatter_ring(const struct coll_args *a);
int coll_allgather_ring(const struct coll_args *a);
int coll_allreduce_ring(const struct coll_args *a);
int coll_reduce_scatter_multicolor(const struct coll_args *a);
int coll_allgather_multicolor(const struct coll_args *a);
int coll_allreduce_multicolor(const struct coll_args *a);
int coll_reduce_scatter_direct(const struct coll_args *a);
int coll_allgather_direct(const struct coll_args *a);
int coll_allreduce_direct(const struct coll_args *a);
int coll_multicolor_fits(const coll_team_t *t);
int coll_ring_fits(const coll_team_t *t);
int coll_direct_fits(const coll_team_t *t);

int coll_alltoall_fits_named(const coll_team_t *t, const char *name);
/* a counter per message received: up to p - 1 per stage, two stages, and two more */
static int coll_a2_fits(const coll_team_t *t)
{
	return t->cores == 1 && 2 * t->size <= emu_params(t->core)->dma_counters && coll_v_counts_fit(t);
}
int coll_alltoall_run_named(const struct coll_args *a, const char *name);
/*
 * The all-to-all family, each algorithm named once: X(name, the plan's
 * algorithm in coll/common/a2a.h, restrictions, what it does). Every one
 * runs as a plan (coll_alltoall_run_named) and fits as its plan says.
 */
#define A2A_ALGOS(X)                                                                                     \
	X("direct", a2a_direct, "none", \
	  "baseline: every member posts its p-1 puts at once, shifted by its rank (001, naive)") \
	X("factor", a2a_factor, "dma_counters >= 6 (fewer than p + 2: reused batch after batch)", \
	  "1-factor rounds: u with (i-u) mod p (p rounds for odd p, p-1 for even) (001; 000 Lemma 1)") \
	X("xor", a2a_xor, "team size a power of two; dma_counters >= 6", \
	  "pairwise exchange u with u XOR i, p-1 rounds (001)") \
	X("ring", a2a_ring, "dma_counters >= 6 (fewer than p + 2: reused batch after batch)", \
	  "store and forward around the ring, both directions, p/2 rounds (001, Ring)") \
	X("mesh2d", a2a_mesh2d, "rows and columns of at most 64 members; rows + columns <= dma_counters", \
	  "row phase, regroup, column phase on the most square r x c grid of members (001, Mesh)") \
	X("bruck", a2a_bruck, "ceil(log2 p) + 2 <= dma_counters", \
	  "ceil(log2 p) rounds with combining, to u + 2^k (001, hypercube; Bruck et al.)") \
	X("torus", a2a_torus, "a team of every node in node order, one member per node; rings of at most 64; sum of (ring size - 1) + 2 <= dma_counters", \
	  "one phase per torus dimension along its rings, both directions, regroup in between") \
	X("hierarchical_factor", a2a_hier, "dma_counters >= 6", \
	  "ClusteredAllToAll: phases by node size, 1-factor rounds of nodes, one inter-node pair per node and step (000, Fig. 2)")
#define A2A_FUNCS(name, cname, restr, desc)                                                                      \
	static int fits_##cname(const coll_team_t *t) { return coll_alltoall_fits_named(t, name); }            \
	static int run_##cname(const struct coll_args *a) { return coll_alltoall_run_named(a, name); }
A2A_ALGOS(A2A_FUNCS)
#define A2A_ENTRY(name, cname, restr, desc) {name, COLL_ALLTOALL, run_##cname, restr, 0, fits_##cname, desc},

#define MC_RESTRICT "a team of every node in node order (node team, or one core per node); " \
		    "node teams share the 2N color-direction streams among their cores; " \
		    "streams per core x dimensions <= dma_counters - 2"
#define RING_RESTRICT "team size <= dma_counters - 1 (a counter per step, two more per call)"
#define DIRECT_RESTRICT "team size <= dma_counters - 2 (a counter per source, two more per call)"

/* The first algorithm whose restrictions a team meets is the default. */
static const struct coll_algorithm reduce_scatter[] = {
	{"multicolor", COLL_REDUCE_SCATTER, coll_reduce_scatter_multicolor, MC_RESTRICT, COLL_F_MULTICORE, coll_multicolor_fits,
	 "N-D multicolor bucket, 2N colour-direction streams (003_b0aac8c3d10c7733.txt section 4, Algorithm 1, eq. 2-3)"},
	{"ring", COLL_REDUCE_SCATTER, coll_reduce_scatter_ring, RING_RESTRICT, 0, coll_ring_fits,
	 "1-D bucket over the team in rank order (003_b0aac8c3d10c7733.txt section 2.2, eq. 1)"},
	{"direct", COLL_REDUCE_SCATTER, coll_reduce_scatter_direct, DIRECT_RESTRICT, 0, coll_direct_fits,
	 "baseline: every member puts each block straight to its owner, who reduces them"},
};
static const struct coll_algorithm allgather[] = {
	{"multicolor", COLL_ALLGATHER, coll_allgather_multicolor, MC_RESTRICT, COLL_F_MULTICORE, coll_multicolor_fits,
	 "N-D multicolor bucket, the reverse of reduce-scatter without computation (section 4)"},
	{"ring", COLL_ALLGATHER, coll_allgather_ring, RING_RESTRICT, 0, coll_ring_fits,
	 "1-D bucket over the team in rank order (section 2.2, reverse of reduce-scatter)"},
	{"direct", COLL_ALLGATHER, coll_allgather_direct, DIRECT_RESTRICT, 0, coll_direct_fits,
	 "baseline: every member puts its block straight to every other member"},
};
static const struct coll_algorithm allreduce[] = {
	{"multicolor", COLL_ALLREDUCE, coll_allreduce_multicolor, MC_RESTRICT, COLL_F_MULTICORE, coll_multicolor_fits,
	 "multicolor reduce-scatter then multicolor allgather, per stream (section 4)"},
	{"ring", COLL_ALLREDUCE, coll_allreduce_ring, RING_RESTRICT, 0, coll_ring_fits,
	 "ring reduce-scatter then ring allgather (section 2.2); any count"},
	{"direct", COLL_ALLREDUCE, coll_allreduce_direct, DIRECT_RESTRICT, 0, coll_direct_fits,
	 "baseline: direct reduce-scatter then direct allgather"},
};

/* The default is coll_alltoall_default's rule, not the first entry. */
#define A2A_P1 "messages received per member + 2 <= dma_counters"
static const struct coll_algorithm alltoall[] = {A2A_ALGOS(A2A_ENTRY)};

static const struct coll_algorithm alltoallv[] = {
	{"a1", COLL_ALLTOALLV, coll_alltoallv_a1, "none", 0, NULL,
	 "direct: every message straight to its owner, member j sending to j+1, j+2, ... (002, A1)"},
	{"a2", COLL_ALLTOALLV, coll_alltoallv_a2, "one core per member (it runs an allgather of the counts inside, which must fit); "
	 "2 x team size <= dma_counters", 0, coll_a2_fits,
	 "two-stage slicing: slice k of every message to member k, then on to its owner (002, A2; Ranka, Bader)"},
	{"a3", COLL_ALLTOALLV, coll_alltoallv_a3, "a perfect square of members, one core each; 2 sqrt(team size) + 2 <= "
	 "dma_counters; an allgather algorithm fits the team (for the counts)", 0, coll_a3_fits,
	 "two stages on a sqrt(P) x sqrt(P) grid: along the row to the destination's column, then down it (002, A3)"},
	{"a4", COLL_ALLTOALLV, coll_alltoallv_a4, "one core per member; 2 C + 2 R + 4 <= dma_counters (C = ceil(sqrt(team "
	 "size)) columns, R rows); an allgather algorithm fits the team (for the counts)", 0, coll_a4_fits,
	 "four stages on R rows of C, the last one incomplete: slices along the row (pseudo-nodes' stand-ins for the last "
	 "row), parts down the column (every member then holds 1/P of each destination's data), collect along the row, "
	 "then down the column (002, A4)"},
	{"a4_blocking", COLL_ALLTOALLV, coll_alltoallv_a4_blocking, "as a4", 0, coll_a4_fits,
	 "a4 in 002's blocking mode: each stage in rounds of the C- and R-Schedules (Fig. 6), one message sent and one "
	 "awaited per round, with the revised R-schedule's stalls for incomplete arrays (Fig. 10)"},
	{"a4_dual", COLL_ALLTOALLV, coll_alltoallv_a4_dual, "as a4", 0, coll_a4_fits,
	 "a4 with 002's dual send buffer (n2): even and odd stages pack into different buffers, so a stage need not wait "
	 "for the last one's messages to leave"},
	{"auto", COLL_ALLTOALLV, coll_alltoallv_inplace_auto, "in place (coll_alltoallv_inplace); one core per member; "
	 "6 <= dma_counters; the regular all-to-all of the counts fits", COLL_F_INPLACE, coll_inplace_fits,
	 "in place: pairwise, or bitonic where every N is alike and (P-1) x the largest message > N L(L+1)/4, L = "
	 "ceil(log2 P) (the switch "
	 "004 leaves open)"},
	{"bitonic", COLL_ALLTOALLV, coll_alltoallv_bitonic, "as auto; every member's total N equal", COLL_F_INPLACE,
	 coll_inplace_fits,
	 "in place, O(P) memory: the bitonic network as merge-split steps, each an equal swap through a bounce buffer and "
	 "an in-place merge of runs (004, section 3.2): O(N log^2 P)"},
	{"pairwise", COLL_ALLTOALLV, coll_alltoallv_pairwise, "as auto", COLL_F_INPLACE, coll_inplace_fits,
	 "in place, O(P) memory: asymmetric pairwise exchange, partners in increasing order, b hands a all of S(a) it "
	 "holds for as much of S(a+1), ... (004, section 3.3): P - 1 steps"},
};

static const struct {
	const char *name;
	const struct coll_algorithm *algos;
	size_t n;
} kinds[COLL_KIND_COUNT] = {
	{"reduce_scatter", reduce_scatter, sizeof(reduce_scatter) / sizeof(reduce_scatter[0])},
	{"allgather", allgather, sizeof(allgather) / sizeof(allgather[0])},
	{"allreduce", allreduce, sizeof(allreduce) / sizeof(allreduce[0])},
	{"alltoall", alltoall, sizeof(alltoall) / sizeof(alltoall[0])},
	{"alltoallv", alltoallv, sizeof(alltoallv) / sizeof(alltoallv[0])},
};

const struct coll_algorithm *coll_catalogue(enum coll_kind kind, size_t *n)
{
	if ((unsigned)kind >= COLL_KIND_COUNT) {
		if (n)
			*n = 0;
		return NULL;
	}
	if (n)
		*n = kinds[kind].n;
	return kinds[kind].algos;
}

const char *coll_kind_name(enum coll_kind kind)
{
	return (unsigned)kind < COLL_KIND_COUNT ? kinds[kind].name : "?";
}

/* Do [a, a+an) and [b, b+bn) overlap? */
static int overlap(const void *a, size_t an, const void *b, size_t bn)
{
	const char *x = a, *y = b;
	return an && bn && x < y + bn && y < x + an;
}

/* Does the team meet the algorithm's restrictions? */
int coll_team_fits(const coll_team_t *t, const struct coll_algorithm *alg)
{
	if (!t || !alg)
		return 0;
	if (alg->fits && !alg->fits(t))
		return 0;
	return 1;
}

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

/* The algorithm the call names, or -ENOENT / -ENOTSUP. */
const char *coll_alltoall_default_team(const coll_team_t *t, uint64_t block_bytes);

static int choose(enum coll_kind kind, const char *algo, const coll_team_t *t, const struct coll_args *a,
		  const struct coll_algorithm **out)
{
	size_t n;
	const struct coll_algorithm *list = coll_catalogue(kind, &n);
	const char *want = algo;
	if (!want) {
		char env[64];
		snprintf(env, sizeof(env), "TORUS_COLL_%s%s", kinds[kind].name, a->inplace ? "_inplace" : "");
		for (char *p = env; *p; p++)
			*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
		want = getenv(env);
		if (want && !*want)
			want = NULL; /* set but empty: the default, as in the MPI layer */
		if (!want && kind == COLL_ALLTOALL)
			want = coll_alltoall_default_team(t, (uint64_t)a->count * coll_dtype_size(a->dtype));
	}
	for (size_t i = 0; i < n; i++) {
		/* in-place calls default to in-place algorithms, and only run those */
		int ip = (list[i].flags & COLL_F_INPLACE) != 0;
		if (!want && kind == COLL_ALLTOALLV && ip != (a->inplace != 0))
			continue;
		if (want ? !strcmp(want, list[i].name) : coll_team_fits(t, &list[i])) {
			if (kind == COLL_ALLTOALLV && ip != (a->inplace != 0))
				return -ENOTSUP;
			*out = &list[i];
			return coll_team_fits(t, &list[i]) ? 0 : -ENOTSUP;
		}
	}
	return -ENOENT; /* no such algorithm */
}

/* What a member can see wrong by itself. */
static int check_args(enum coll_kind kind, const struct coll_args *a, size_t send_bytes, size_t recv_bytes,
		      int needs_op)
{
	if ((send_bytes && !a->send) || (recv_bytes && !a->recv) || !coll_dtype_size(a->dtype))
		return -EINVAL;
	if (needs_op && !coll_op_valid(a->dtype, a->op))
		return -EINVAL;
	/* in place only where MPI allows it: allreduce with send == recv */
	if (!(kind == COLL_ALLREDUCE && a->send == a->recv) && overlap(a->send, send_bytes, a->recv, recv_bytes))
		return -EINVAL;
	return 0;
}

/*
 * Every core of the team agrees before anything else happens, on the
 * barrier network: each gives its local error, or else a hash of the call
 * (collective, count, dtype, op, algorithm); all leave with the largest and
 * the smallest. Any error: every member returns the worst one. Different
 * hashes: every member returns -EPROTO. The barrier also tells that every
 * member has made the team, so its address handler exists.
 *
 * The lowest bit says whether the member holds a kept multicolor set-up
 * (the hash is above it, so different hashes still show in max and min).
 * Members keep one together or not at all, unless a call failed on some of
 * them only, midway; then those that hold one would skip the set-up that
 * the others start, and both would wait for ever. If any member holds none,
 * every member drops its own: the call sets up afresh everywhere.
 */
static int agree_on_call(coll_team_t *t, int err, uint64_t h)
{
	uint32_t kept = t->mc_plan != NULL;
	uint32_t in = err ? 0x80000000u | (uint32_t)-err : ((uint32_t)(h ^ h >> 32) & 0x3fffffffu) << 1 | kept, max, min;
	int rc = dma_barrier_team_range(t->core, t->members, t->nmembers, in, &max, &min);
	if (rc)
		return rc;
	if (max & 0x80000000u)
		return -(int)(max & 0x7fffffffu);
	if (max >> 1 != min >> 1)
		return -EPROTO;
	if (!(min & 1))
		coll_multicolor_release(t); /* (nothing when it holds none) */
	return 0;
}

static int run(enum coll_kind kind, const char *algo, struct coll_args *a, size_t send_bytes, size_t recv_bytes,
	       int needs_op)
{
	coll_team_t *t = a->team;
	const struct coll_algorithm *alg = NULL;
	if (!t)
		return -EINVAL;
	int err = kind == COLL_ALLTOALLV ? (a->inplace ? coll_vi_check(a, t->size) : coll_v_check(a, t->size)) : check_args(kind, a, send_bytes, recv_bytes, needs_op);
	if (!err)
		err = choose(kind, algo, t, a, &alg);
	uint64_t h = 1469598103934665603ull;
	h = mix(mix(mix(mix(mix(h, kind), a->count), a->dtype), needs_op ? a->op : 0), (uint64_t)a->inplace);
	for (const char *p = alg ? alg->name : ""; *p; p++)
		h = mix(h, (uint8_t)*p);
	a->check = h;
	int rc = agree_on_call(t, err, h);
	if (rc)
		return rc;
	int all = t->cores == 1 || (alg->flags & COLL_F_MULTICORE);
	t->part = all ? t->members : t->leads;
	t->npart = all ? t->nmembers : t->size;
	/* enum coll_kind + 1 = enum torus_tag_coll */
	t->tag_coll = t->tag_force ? t->tag_force : (uint32_t)kind + 1;
	memset(&t->vstats, 0, sizeof(t->vstats));
	t->vnow = 0;
	/* another algorithm may need the counters and regions it holds */
	if (strcmp(alg->name, "multicolor"))
		coll_multicolor_release(t);
	if (all || t->sub == 0)
		rc = alg->run(a);
	if (kind == COLL_ALLTOALLV && !t->vstats.ran[0])
		snprintf(t->vstats.ran, sizeof(t->vstats.ran), "%s", alg->name);
	if (t->cores > 1) {
		/* a node's cores leave together (the result is complete), with the
		 * worst error among them */
		uint32_t worst;
		int b = dma_barrier_node(t->core, t->cores, rc < 0 ? (uint32_t)-rc : 0, &worst);
		rc = b ? b : -(int)worst;
	}
	return rc;
}

int coll_reduce_scatter(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
			enum coll_op op, const char *algo)
{
	struct coll_args a = {.team = t, .send = send, .recv = recv, .count = count, .dtype = dtype, .op = op};
	size_t esz = coll_dtype_size(dtype);
	return run(COLL_REDUCE_SCATTER, algo, &a, t ? count * t->size * esz : 0, count * esz, 1);
}

int coll_allgather(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
		   const char *algo)
{
	struct coll_args a = {.team = t, .send = send, .recv = recv, .count = count, .dtype = dtype, .op = COLL_SUM};
	size_t esz = coll_dtype_size(dtype);
	return run(COLL_ALLGATHER, algo, &a, count * esz, t ? count * t->size * esz : 0, 0);
}

int coll_allreduce(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
		   enum coll_op op, const char *algo)
{
	struct coll_args a = {.team = t, .send = send, .recv = recv, .count = count, .dtype = dtype, .op = op};
	size_t esz = coll_dtype_size(dtype);
	return run(COLL_ALLREDUCE, algo, &a, count * esz, count * esz, 1);
}

int coll_alltoall(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
		  const char *algo)
{
	struct coll_args a = {.team = t, .send = send, .recv = recv, .count = count, .dtype = dtype, .op = COLL_SUM};
	size_t esz = coll_dtype_size(dtype), p = t ? t->size : 0;
	/* p blocks of count elements each way: refuse what does not fit in size_t */
	if (t && esz && count > SIZE_MAX / esz / p)
		a.send = NULL, a.recv = NULL, count = 1;
	return run(COLL_ALLTOALL, algo, &a, count * esz * p, count * esz * p, 0);
}

int coll_alltoallv(coll_team_t *t, const void *send, const int64_t *scounts, const int64_t *sdispls, void *recv,
		   const int64_t *rcounts, const int64_t *rdispls, enum coll_dtype dtype, const char *algo)
{
	struct coll_args a = {.team = t, .send = send, .recv = recv, .dtype = dtype, .op = COLL_SUM,
			      .scounts = scounts, .sdispls = sdispls, .rcounts = rcounts, .rdispls = rdispls};
	return run(COLL_ALLTOALLV, algo, &a, 0, 0, 0);
}

int coll_alltoallv_inplace(coll_team_t *t, void *buf, const int64_t *scounts, const int64_t *rcounts,
			   enum coll_dtype dtype, const char *algo)
{
	struct coll_args a = {.team = t, .send = buf, .recv = buf, .dtype = dtype, .op = COLL_SUM,
			      .scounts = scounts, .rcounts = rcounts, .inplace = 1};
	return run(COLL_ALLTOALLV, algo, &a, 0, 0, 0);
}
