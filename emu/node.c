/*
 * A node process: attach to the job's shared memory, start the engine and
 * one thread per core, run the program's function on every core, then keep
 * the engine forwarding until torusrun declares the whole job finished.
 */
#include "node.h"
#include "unit.h"

#include <errno.h>
#include <sched.h>
#include <sys/resource.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int emu_sleep_slice_ms = EMU_SLEEP_SLICE_MS;
uint32_t emu_spin_polls = EMU_SPIN_POLLS, emu_idle_polls = EMU_SPIN_POLLS + EMU_YIELD_POLLS;
uint32_t emu_engine_spin_polls = EMU_SPIN_POLLS, emu_engine_idle_polls = EMU_SPIN_POLLS + EMU_YIELD_POLLS;

static int env_u32(const char *name, uint32_t *out)
{
	const char *v = getenv(name);
	char *end;
	if (!v || !*v)
		return -ENOENT;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (errno || *end || x > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

int emu_node_setup(struct emu_node_rt *rt, int fd, uint32_t rank, char *err, size_t errlen)
{
	int rc = emu_shm_attach(fd, &rt->shm, err, errlen);
	if (rc)
		return rc;
	rt->hdr = rt->shm.hdr;
	if (rank >= rt->hdr->nnodes) {
		snprintf(err, errlen, "TORUS_RANK %u out of range (%u nodes)", rank, rt->hdr->nnodes);
		return -EINVAL;
	}
	/* only our rings stay mapped (emu/shm.c says why) */
	if ((rc = emu_shm_trim(&rt->shm, rank, err, errlen)))
		return rc;
	const struct torus_shape *s = &rt->hdr->shape;
	void *base = rt->shm.base;
	rt->params = &rt->hdr->params;
	rt->exact = rt->hdr->exact != 0;
	/* cores run engine passes themselves (emu_engine_try_pass) */
	const char *cp = getenv("TORUS_CORE_PASS");
	if (cp && *cp && strcmp(cp, "0") && strcmp(cp, "1")) {
		snprintf(err, errlen, "TORUS_CORE_PASS=%s: 0 (engine thread only) or 1 (cores run passes too, the default)",
			 cp);
		return -EINVAL;
	}
	rt->core_passes = !(cp && !strcmp(cp, "0"));
	torus_cost_init(&rt->cost, rt->params);
	rt->batch = emu_engine_batch(rt->params->fifo_slots);
	rt->rank = rank;
	rt->me = emu_shm_node(&rt->shm, rank);
	rt->ncores = rt->me->ncores;
	/* every node runs its cores and an engine */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus > 0 && (uint64_t)rt->hdr->total_cores + s->nnodes > 8ull * (uint64_t)cpus) {
		emu_spin_polls = EMU_SPIN_POLLS / 8;
		emu_idle_polls = (EMU_SPIN_POLLS + EMU_YIELD_POLLS) / 8;
		if (rt->core_passes) {
			/* each of a waiting core's polls runs an engine pass, so
			 * polls that yield pay: 4 pauses and 36 yields against 16
			 * and 4 took osu_allreduce's 1 KiB calls from 1.95 to 1.62 s
			 * and its 16 KiB ones from 3.9 to 3.0 s (200 calls on 4x4x4) */
			emu_spin_polls = EMU_SPIN_POLLS / 32;
			emu_idle_polls = (EMU_SPIN_POLLS + EMU_YIELD_POLLS) / 4;
		}
		emu_engine_spin_polls = 0;
		emu_engine_idle_polls = EMU_ENGINE_YIELD_POLLS_CROWDED;
		/* 100 ms per 64 threads a CPU, up to 5 s */
		uint64_t per_cpu = ((uint64_t)rt->hdr->total_cores + s->nnodes) / (uint64_t)cpus;
		if (per_cpu > 64)
			emu_sleep_slice_ms = per_cpu >= 64 * 50 ? 5000 : (int)(EMU_SLEEP_SLICE_MS * per_cpu / 64);
	}
	/* --exact with thousands of threads: engines only carry bytes (their
	 * timing changes nothing), and a yielding engine takes the CPU from the
	 * timekeeper. torus-stress on 8x8x16 (2048 threads): 16 yields, 23 to
	 * 27 s of wall time; none, 16.4 s. On 8x8x8 the yields still help a
	 * little (2.4 to 2.8 s against 2.7 to 2.9 s). For the same reason the
	 * node's threads (engine and cores, created after this) run under
	 * SCHED_IDLE, which any process may choose: the timekeeper, one thread
	 * among thousands, then gets the CPU whenever it has work. On 16x16x16
	 * it got about 1% of a CPU without, 8% with. Emulated time is the
	 * timekeeper's, so neither changes any result. */
	if (rt->exact && (uint64_t)rt->hdr->total_cores + s->nnodes > EMU_ENGINE_EXACT_NO_YIELD) {
		emu_engine_idle_polls = 0;
		struct sched_param sp = {0};
		if (sched_setscheduler(0, SCHED_IDLE, &sp)) /* a speed matter: say so, and go on */
			fprintf(stderr, "torus: node %u: cannot run at idle priority (%s); the job may run slowly\n", rank,
				strerror(errno));
	} else if (rt->exact && (uint64_t)rt->hdr->total_cores + s->nnodes <= EMU_EXACT_NICE_THREADS) {
		/* A few hundred threads: exact_nice steps nicer than torusrun
		 * (0, the default: as torusrun; on a host busy with other work a
		 * nicer job starves, 5 to 8 times slower). Under --exact the
		 * collectives run as programs (emu_core_program_start): the cores
		 * move bytes without waiting for the timekeeper, which is then
		 * the job's one serial part and should not wait for a CPU. Side
		 * by side, six rounds, the 4 MiB allreduce on 4x4x4: 1.22 s of
		 * wall time against 1.10 with one core (128 threads), 1.39
		 * against 1.27 with three (256); nice 19 was no better with one
		 * core, worse with three. torus-stress on 8x8x8 (1024 threads,
		 * which wait for the timekeeper's arrivals) lost: 2.07 s against
		 * 1.86. Emulated time is the timekeeper's: nothing else changes. */
		int by = (int)rt->params->exact_nice;
		errno = 0;
		int now = getpriority(PRIO_PROCESS, 0);
		if (by > 0 && ((now == -1 && errno) || setpriority(PRIO_PROCESS, 0, now + by > 19 ? 19 : now + by)))
			fprintf(stderr, "torus: node %u: cannot lower its priority (%s); the job may run slowly\n", rank,
				strerror(errno));
	}
	torus_rank_to_coords(s, rank, rt->coords);
	rt->route = malloc(s->nnodes);
	rt->ecore = calloc(rt->ncores, sizeof(*rt->ecore));
	rt->cores = calloc(rt->ncores, sizeof(*rt->cores));
	if (!rt->route || !rt->ecore || !rt->cores) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	torus_route_table(s, rank, rt->route);
	rt->first_core = malloc((s->nnodes + 1) * sizeof(uint32_t));
	if (!rt->first_core) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* from the header's dense table: reading each node's block here would
	 * map a page of every node into every process (page tables of GBs) */
	memcpy(rt->first_core, rt->shm.first_core, (s->nnodes + 1) * sizeof(uint32_t));
	for (uint32_t d = 0; d < s->ndims; d++) {
		if (!torus_dim_has_links(s, d))
			continue;
		for (uint32_t dir = 0; dir < 2; dir++) {
			struct emu_engine_in *in = &rt->in[rt->nin++];
			in->link = emu_shm_link_in(&rt->shm, rank, d, dir);
			in->dim = d;
			in->dir = dir;
			in->producer_bell = &emu_shm_node(&rt->shm, in->link->from)->bell;
			struct emu_engine_out *out = &rt->out[2 * d + dir];
			out->link = emu_shm_link_out(&rt->shm, rank, d, dir);
			out->consumer_bell = &emu_shm_node(&rt->shm, out->link->to)->bell;
			out->wrap = torus_hop_is_wrap(s->dims[d], rt->coords[d], (enum torus_dir)dir);
			out->valid = 1;
			out->cost = &rt->cost;
			for (uint32_t k = 0; k < rt->hdr->nlinks; k++) {
				const struct torus_link_set *ls = &rt->hdr->links[k];
				if (ls->node != rank || ls->link != 2 * d + dir)
					continue;
				struct torus_params lp;
				struct torus_cost *lc = malloc(sizeof(*lc));
				if (!lc) {
					snprintf(err, errlen, "out of memory");
					return -ENOMEM;
				}
				torus_link_params(rt->params, ls, &lp);
				torus_cost_init(lc, &lp);
				rt->link_cost[2 * d + dir] = lc;
				out->cost = lc;
			}
			for (int vc = 0; vc < 2; vc++) {
				torus_ring_view_init(&in->vc[vc], &in->link->vc[vc], base, TORUS_RING_CONSUMER);
				torus_ring_view_init(&out->vc[vc], &out->link->vc[vc], base, TORUS_RING_PRODUCER);
			}
		}
	}
	for (uint32_t c = 0; c < rt->ncores; c++) {
		struct emu_core_shm *cs = emu_shm_core(&rt->shm, rt->me, c);
		rt->ecore[c].shm = cs;
		torus_ring_view_init(&rt->ecore[c].inj, &cs->inj, base, TORUS_RING_CONSUMER);
		torus_ring_view_init(&rt->ecore[c].rx, &cs->rx, base, TORUS_RING_PRODUCER);
		struct emu_core *core = aligned_alloc(64, (sizeof(struct emu_core) + 63) / 64 * 64);
		if (!core) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		memset(core, 0, sizeof(*core));
		core->node = rt;
		core->shm = cs;
		core->index = c;
		core->global = rt->first_core[rank] + c;
		emu_stash_init(&core->stash, emu_raw_name);
		if (rt->hdr->exact) {
			core->tk = emu_shm_tk(&rt->shm, core->global);
			/* deferred waits (emu_core_defer_wait): not with a pace
			 * (exact_lead, which reads the clock at every post);
			 * TORUS_DEFER is read at the first wait */
			core->defer = !rt->params->exact_lead_ps;
		}
		torus_ring_view_init(&core->inj, &cs->inj, base, TORUS_RING_PRODUCER);
		torus_ring_view_init(&core->rx, &cs->rx, base, TORUS_RING_CONSUMER);
		rt->cores[c] = core;
	}
	uint32_t launcher;
	rt->launcher_fd = -1;
	if (env_u32("TORUS_LAUNCHER_PID", &launcher) == 0) {
#ifdef SYS_pidfd_open
		rt->launcher_fd = (int)syscall(SYS_pidfd_open, (pid_t)launcher, 0);
#endif
		if (rt->launcher_fd < 0 && kill((pid_t)launcher, 0) != 0) {
			snprintf(err, errlen, "torusrun (pid %u) is gone", launcher);
			return -ESRCH;
		}
	}
	emu_chaos_init(&rt->chaos, rt, rt->hdr->chaos_seed, 0);
	for (uint32_t c = 0; c < rt->ncores; c++)
		emu_chaos_init(&rt->cores[c]->chaos, rt, rt->hdr->chaos_seed, 1 + c);
	int rc2 = emu_node_unit.node_setup(rt, err, errlen);
	if (rc2)
		return rc2;
	for (uint32_t c = 0; c < rt->ncores; c++)
		if ((rc2 = emu_node_unit.core_setup(rt, rt->cores[c], err, errlen)))
			return rc2;
	pthread_mutex_init(&rt->lock, NULL);
	pthread_mutex_init(&rt->pass_lock, NULL);
	pthread_cond_init(&rt->cond, NULL);
	rt->failed_core = -1;
	return 0;
}

void emu_chaos_init(struct emu_chaos *c, const struct emu_node_rt *rt, uint32_t seed, uint32_t stream)
{
	memset(c, 0, sizeof(*c));
	if (!seed)
		return;
	/* splitmix64 of (seed, node, stream): distinct, never-zero streams */
	uint64_t z = ((uint64_t)seed << 32) ^ ((uint64_t)rt->rank << 12) ^ stream;
	z += 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	c->state = (z ^ (z >> 31)) | 1;
	c->yields = &rt->me->chaos_yields;
	c->sleeps = &rt->me->chaos_sleeps;
}

void emu_chaos_slow(struct emu_chaos *c)
{
	c->state ^= c->state >> 12;
	c->state ^= c->state << 25;
	c->state ^= c->state >> 27;
	uint64_t r = c->state * 0x2545F4914F6CDD1Dull;
	if ((r >> 32) % 64 == 0) {
		struct timespec ts = {0, (long)(1000 + (r >> 8) % 200000)};
		nanosleep(&ts, NULL);
		atomic_fetch_add_explicit(c->sleeps, 1, memory_order_relaxed);
	} else if ((r >> 32) % 8 == 0) {
		sched_yield();
		atomic_fetch_add_explicit(c->yields, 1, memory_order_relaxed);
	}
}

int emu_launcher_check(struct emu_node_rt *rt)
{
	struct pollfd p = {rt->launcher_fd, POLLIN, 0};
	/* a pidfd becomes readable when its process exits */
	if (rt->launcher_fd >= 0 && poll(&p, 1, 0) == 1)
		atomic_store(&rt->launcher_gone, 1);
	return atomic_load(&rt->launcher_gone);
}

int emu_rt_locate(const struct emu_node_rt *rt, uint32_t global, uint32_t *node, uint32_t *core)
{
	uint32_t lo = 0, hi = rt->hdr->nnodes;
	if (global >= rt->first_core[hi])
		return -EINVAL;
	while (hi - lo > 1) { /* last node whose first core <= global */
		uint32_t mid = lo + (hi - lo) / 2;
		if (rt->first_core[mid] <= global)
			lo = mid;
		else
			hi = mid;
	}
	*node = lo;
	*core = global - rt->first_core[lo];
	return 0;
}

void emu_node_teardown(struct emu_node_rt *rt)
{
	for (uint32_t c = 0; rt->cores && c < rt->ncores; c++) {
		if (!rt->cores[c])
			continue;
		emu_node_unit.core_teardown(rt->cores[c]);
		emu_stash_free(&rt->cores[c]->stash);
		free(rt->cores[c]->prog_ev);
		for (uint32_t k = 0; k < EMU_TK_PLANS; k++)
			free(rt->cores[c]->prog_st[k].step);
		free(rt->cores[c]);
	}
	emu_node_unit.node_teardown(rt);
	free(rt->first_core);
	if (rt->launcher_fd >= 0)
		close(rt->launcher_fd);
	free(rt->cores);
	free(rt->ecore);
	free(rt->route);
	for (uint32_t k = 0; k < 2 * TORUS_MAX_DIMS; k++)
		free(rt->link_cost[k]);
	emu_shm_detach(&rt->shm);
	memset(rt, 0, sizeof(*rt));
}

/* A core's function returned (or, joined, its thread left): tell the DMA
 * unit and the node. */
static void core_done(struct emu_core *c)
{
	struct emu_node_rt *rt = c->node;
	/* its clock, if a deferred wait left it an offset: the job's time */
	if (c->tk && emu_core_sync(c) && !c->status)
		c->status = 1;
	/* the program may free its buffers now: close them to the DMA unit */
	emu_node_unit.core_finish(c);
	atomic_store_explicit(&c->shm->status, c->status, memory_order_relaxed);
	/* the engine checks DONE before depositing; release pairs with its acquire */
	atomic_store_explicit(&c->shm->state, EMU_CORE_DONE, memory_order_release);
	if (c->tk)
		emu_core_tk_poke(c); /* it no longer holds the timekeeper back */
	emu_engine_unpark(rt); /* it runs no more passes */
	pthread_mutex_lock(&rt->lock);
	rt->cores_finished++;
	if (c->status && rt->failed_core < 0)
		rt->failed_core = (int)c->index;
	pthread_cond_signal(&rt->cond);
	pthread_mutex_unlock(&rt->lock);
}

static void *core_main(void *arg)
{
	struct emu_core *c = arg;
	atomic_store_explicit(&c->shm->tid, (int32_t)syscall(SYS_gettid), memory_order_relaxed);
	c->status = c->fn ? c->fn(c, c->arg) : 0;
	core_done(c);
	return NULL;
}

static struct emu_node_rt node_rt; /* one node per process */
static const char *node_prog = "program";
static int node_joined;

/* Attach to the machine, start the engine and cores first..ncores-1 on fn.
 * 0, or the exit status to use (a message printed). */
static int node_start(int argc, char **argv, emu_core_fn fn, void *arg, uint32_t first)
{
	struct emu_node_rt *rt = &node_rt;
	char err[256];
	uint32_t fd, rank;
	node_prog = argc > 0 && argv && argv[0] ? argv[0] : "program";
	const char *prog = node_prog;

	if (env_u32("TORUS_SHM_FD", &fd) || env_u32("TORUS_RANK", &rank)) {
		fprintf(stderr, "%s: not started by torusrun; run e.g.: torusrun --torus 2x2 -- %s\n", prog, prog);
		return 2;
	}
	if (emu_node_setup(rt, (int)fd, rank, err, sizeof(err))) {
		fprintf(stderr, "%s: node %u: %s\n", prog, rank, err);
		return 2;
	}
	atomic_store(&rt->me->pid, (int32_t)getpid());
	atomic_store(&rt->me->state, EMU_NODE_RUNNING);
	int rc = pthread_create(&rt->engine, NULL, emu_engine_main, rt);
	if (rc) {
		fprintf(stderr, "%s: node %u: cannot start engine thread: %s\n", prog, rank, strerror(rc));
		return 1;
	}
	/* names for top -H, perf and gdb (at most 15 characters) */
	char name[32];
	snprintf(name, sizeof(name), "eng%u", rank);
	name[15] = 0;
	pthread_setname_np(rt->engine, name);
	for (uint32_t c = first; c < rt->ncores; c++) {
		rt->cores[c]->fn = fn;
		rt->cores[c]->arg = arg;
		rc = pthread_create(&rt->cores[c]->thread, NULL, core_main, rt->cores[c]);
		if (rc) {
			fprintf(stderr, "%s: node %u: cannot start core thread %u: %s\n", prog, rank, c, strerror(rc));
			return 1;
		}
		snprintf(name, sizeof(name), "core%u.%u", rank, c);
		name[15] = 0;
		pthread_setname_np(rt->cores[c]->thread, name);
	}
	return 0;
}

/* Wait for every core (threads from `first` on), then for the job's end;
 * the process's exit status. */
static int node_finish(uint32_t first)
{
	struct emu_node_rt *rt = &node_rt;
	const char *prog = node_prog;
	uint32_t rank = rt->rank;
	pthread_mutex_lock(&rt->lock);
	while (rt->cores_finished < rt->ncores && rt->failed_core < 0 && !emu_job_aborting(rt)) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		long ns = until.tv_nsec + 2L * emu_sleep_slice_ms * 1000000L;
		until.tv_sec += ns / 1000000000L;
		until.tv_nsec = ns % 1000000000L;
		pthread_cond_timedwait(&rt->cond, &rt->lock, &until);
	}
	int failed = rt->failed_core;
	pthread_mutex_unlock(&rt->lock);
	if (failed < 0 && emu_job_aborting(rt)) {
		if (atomic_load(&rt->launcher_gone))
			fprintf(stderr, "%s: node %u: torusrun is gone; leaving\n", prog, rank);
		return 1;
	}
	if (failed >= 0) {
		/* leave at once: torusrun sees the status and tears the job down */
		fprintf(stderr, "%s: node %u core %d failed with status %d\n", prog, rank, failed,
			rt->cores[failed]->status);
		return 1;
	}
	torus_vt_t vt = 0;
	for (uint32_t c = 0; c < rt->ncores; c++) {
		if (c >= first)
			pthread_join(rt->cores[c]->thread, NULL);
		if (rt->cores[c]->vt > vt)
			vt = rt->cores[c]->vt;
	}
	atomic_store(&rt->me->final_vt, vt);
	/* torusrun waits for every node to be DONE and the network drained */
	atomic_store_explicit(&rt->me->state, EMU_NODE_DONE, memory_order_release);
	pthread_join(rt->engine, NULL);
	int aborted = emu_job_aborting(rt);
	atomic_store(&rt->me->state, EMU_NODE_EXITED);
	emu_node_teardown(rt);
	return aborted ? 1 : 0;
}

int emu_job_main(int argc, char **argv, emu_core_fn fn, void *arg)
{
	if (!fn) {
		fprintf(stderr, "%s: emu_job_main: NULL core function\n",
			argc > 0 && argv && argv[0] ? argv[0] : "program");
		return 2;
	}
	if (node_joined) {
		fprintf(stderr, "%s: emu_job_main: this process has joined its node already\n", node_prog);
		return 2;
	}
	node_joined = 1;
	int rc = node_start(argc, argv, fn, arg, 0);
	return rc ? rc : node_finish(0);
}

int emu_node_join(int argc, char **argv, emu_core_fn others, void *arg, emu_core_t **core0, int *status)
{
	if (!core0 || !status)
		return -EINVAL;
	if (node_joined)
		return -EALREADY;
	node_joined = 1;
	*core0 = NULL;
	*status = node_start(argc, argv, others, arg, 1);
	if (*status)
		return -ECANCELED;
	struct emu_core *c = node_rt.cores[0];
	atomic_store_explicit(&c->shm->tid, (int32_t)syscall(SYS_gettid), memory_order_relaxed);
	*core0 = c;
	return 0;
}

int emu_node_leave(emu_core_t *c, int status)
{
	if (!c || c != node_rt.cores[0] || !node_joined)
		return 2;
	c->status = status;
	core_done(c);
	return node_finish(1);
}
