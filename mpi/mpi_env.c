/*
 * libtorusmpi: the environment: MPI_Init and MPI_Finalize, MPI_Abort,
 * the processor name, the version, MPI_Wtime, the knobs read at MPI_Init
 * (TORUS_MPI_EAGER_LIMIT, TORUS_MPI_MULTICORE_BYTES, TORUS_MPI_WTIME), and
 * the loop of the node's helper cores; mpi_g, the library's state, lives
 * here.
 *
 * A rank is an emulated node; MPI_Init joins the node with main() as its
 * core 0 (emu_node_join), MPI_Finalize leaves it (emu_node_leave, which
 * waits for the whole job, as every node must stay until the network is
 * quiet).
 */
#include "mpi_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mpi_state mpi_g;

/* ------------------------------------------------------------- environment */

static int helper_main(emu_core_t *c, void *arg);

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	MPI_API();
	if (mpi_g.state)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Init", "MPI_Init called twice");
	int status;
	int rc = emu_node_join(argc ? *argc : 0, argv ? *argv : NULL, helper_main, NULL, &mpi_g.c, &status);
	if (rc)
		exit(status); /* not under torusrun (the message is printed) */
	emu_core_t *c = mpi_g.c;
	mpi_g.rank = (int)emu_node_rank(c);
	mpi_g.size = (int)emu_node_count(c);
	const char *w = getenv("TORUS_MPI_WTIME");
	mpi_g.wall = w && !strcmp(w, "wall");
	mpi_g.ncores = emu_cores_of(c, (uint32_t)mpi_g.rank);
	static const struct {
		const char *name;
		uint64_t *to, dflt;
	} knobs[] = {{"TORUS_MPI_EAGER_LIMIT", &mpi_g.eager_limit, MPI_EAGER_LIMIT},
		     {"TORUS_MPI_MULTICORE_BYTES", &mpi_g.multicore_bytes, MPI_MULTICORE_BYTES}};
	for (size_t k = 0; k < sizeof(knobs) / sizeof(knobs[0]); k++) {
		const char *el = getenv(knobs[k].name);
		*knobs[k].to = knobs[k].dflt;
		if (!el)
			continue;
		char *end = NULL;
		errno = 0;
		unsigned long long v = strtoull(el, &end, 10);
		if (errno || !*el || *end || *el == '-') {
			fprintf(stderr, "MPI_Init: %s=%s is not a number of bytes\n", knobs[k].name, el);
			mpi_help(MPI_HELP_QUIT, NULL);
			exit(emu_node_leave(c, 2));
		}
		*knobs[k].to = v;
	}
	mpi_g.nsrc = (uint32_t)mpi_g.size;
	mpi_g.cur = calloc(mpi_g.nsrc, sizeof(*mpi_g.cur));
	/* MPI_COMM_WORLD: core 0 of every node (context 0); MPI_COMM_SELF:
	 * this one (context 1); MPI_GROUP_EMPTY */
	uint32_t *world = malloc((size_t)mpi_g.size * sizeof(uint32_t)), self = (uint32_t)mpi_g.rank;
	for (int n = 0; world && n < mpi_g.size; n++)
		world[n] = (uint32_t)n;
	mpi_g.groups[1].used = 1;
	if (!mpi_g.cur || !world || dma_handler_register(c, TORUS_MPI_DISPATCH, mpi_on_packet, NULL) ||
	    dma_injfifo_open(c, 0, &mpi_g.fifo) || dma_counter_alloc(c, &mpi_g.inj) ||
	    mpi_comm_new(world, mpi_g.size, mpi_g.rank, 0, MPI_ERRORS_ARE_FATAL) != MPI_COMM_WORLD ||
	    mpi_comm_new(&self, 1, 0, 1, MPI_ERRORS_ARE_FATAL) != MPI_COMM_SELF) {
		fprintf(stderr, "MPI_Init: rank %d could not set up\n", mpi_g.rank);
		mpi_help(MPI_HELP_QUIT, NULL);
		exit(emu_node_leave(c, 1));
	}
	free(world);
	mpi_g.next_ctx = 2;
	/* every rank's handler is in place before anyone sends */
	struct mpi_comm *wc = mpi_comm_of(MPI_COMM_WORLD);
	if (dma_barrier_team(c, wc->members, (size_t)mpi_g.size)) {
		fprintf(stderr, "MPI_Init: rank %d: the barrier failed\n", mpi_g.rank);
		mpi_help(MPI_HELP_QUIT, NULL);
		exit(emu_node_leave(c, 1));
	}
	mpi_g.state = 1;
	char why[200];
	if (mpi_compute_init(why, sizeof(why))) {
		fprintf(stderr, "MPI_Init: %s\n", why);
		mpi_help(MPI_HELP_QUIT, NULL);
		exit(emu_node_leave(c, 2));
	}
	if (provided)
		*provided = required < MPI_THREAD_FUNNELED ? required : MPI_THREAD_FUNNELED;
	return MPI_SUCCESS;
}

int MPI_Init(int *argc, char ***argv) { return MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, NULL); }

int MPI_Query_thread(int *provided)
{
	MPI_API();
	if (!provided)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Query_thread", "NULL provided");
	*provided = MPI_THREAD_FUNNELED;
	return MPI_SUCCESS;
}

int MPI_Initialized(int *flag)
{
	MPI_API();
	if (!flag)
		return MPI_ERR_ARG;
	*flag = mpi_g.state != 0;
	return MPI_SUCCESS;
}

int MPI_Finalized(int *flag)
{
	MPI_API();
	if (!flag)
		return MPI_ERR_ARG;
	*flag = mpi_g.state == 2;
	return MPI_SUCCESS;
}

int MPI_Finalize(void)
{
	MPI_API();
	if (mpi_g.state != 1)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Finalize", "MPI is not initialized");
	emu_core_t *c = mpi_g.c;
	/* this rank's own messages (the last rendezvous answers) leave first */
	int rc = 0, done = 0;
	while (rc >= 0 && !done) {
		if ((rc = mpi_send_done()) >= 0)
			done = rc > 0 && !mpi_g.ctl_q;
		if (rc >= 0 && !done)
			rc = mpi_progress(1);
	}
	/* every message of a collective call was taken by a receive of the
	 * same call (mpi_coll_sig), or the ranks' calls did not match: a
	 * broadcast where another rank reduced, say, leaves both sides' messages
	 * untaken, which no call saw */
	int64_t left = (int64_t)(mpi_g.coll_sent - mpi_g.coll_taken), all = 0;
	struct mpi_comm *wc = mpi_comm_of(MPI_COMM_WORLD);
	MPI_Errhandler eh = wc->eh;
	wc->eh = MPI_ERRORS_RETURN;
	int mis = rc < 0 ? MPI_SUCCESS : MPI_Allreduce(&left, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	wc->eh = eh;
	if (mis || all) {
		int e = all ? mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Finalize",
					"mismatched collective calls: %lld message(s) of collective calls were never received "
					"(another collective, root or order on some rank)",
					(long long)all)
			    : mpi_error(MPI_COMM_WORLD, mis, "MPI_Finalize", "the check of the collective calls failed");
		if (e)
			return e;
	}
	/* what others still send us must find us here: every rank stops together */
	rc = dma_barrier_team(c, mpi_comm_of(MPI_COMM_WORLD)->members, (size_t)mpi_g.size) || rc < 0;
	for (int k = 1; k < MPI_MAX_COMMS; k++)
		if (mpi_g.comms[k].used)
			mpi_comm_release(&mpi_g.comms[k]);
	for (int k = 1; k < MPI_MAX_GROUPS; k++)
		if (mpi_g.groups[k].used) {
			free(mpi_g.groups[k].world);
			mpi_g.groups[k].used = 0;
		}
	dma_counter_free(c, mpi_g.inj);
	while (mpi_g.unexp_head) {
		struct mpi_msg *m = mpi_g.unexp_head;
		mpi_g.unexp_head = m->next;
		free(m->data);
		free(m);
	}
	free(mpi_g.cur);
	mpi_g.state = 2;
	if (mpi_help(MPI_HELP_QUIT, NULL))
		rc = 1;
	int status = emu_node_leave(c, rc ? 1 : 0);
	if (status)
		exit(status); /* the job failed elsewhere: this rank's exit says so */
	return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
	MPI_API();
	(void)comm;
	if (mpi_g.state != 1)
		exit(errorcode ? errorcode : 1);
	fprintf(stderr, "MPI_Abort: rank %d aborts the job with code %d\n", mpi_g.rank, errorcode);
	fflush(stderr);
	mpi_g.state = 2;
	/* a failed core: torusrun sees the node's status and stops the job */
	exit(emu_node_leave(mpi_g.c, errorcode ? errorcode : 1));
}

int MPI_Get_processor_name(char *name, int *resultlen)
{
	MPI_API();
	if (!name || !resultlen)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_processor_name", "NULL argument");
	char coords[48] = "";
	if (mpi_g.state == 1) {
		const struct torus_shape *s = emu_shape(mpi_g.c);
		uint32_t x[TORUS_MAX_DIMS];
		size_t u = 0;
		torus_rank_to_coords(s, (uint32_t)mpi_g.rank, x);
		for (uint32_t d = 0; d < s->ndims && u < sizeof(coords); d++)
			u += (size_t)snprintf(coords + u, sizeof(coords) - u, d ? ",%u" : "%u", x[d]);
	}
	*resultlen = snprintf(name, MPI_MAX_PROCESSOR_NAME, "torus-node-%d(%s)", mpi_g.rank, coords);
	if (*resultlen >= MPI_MAX_PROCESSOR_NAME)
		*resultlen = MPI_MAX_PROCESSOR_NAME - 1;
	return MPI_SUCCESS;
}

int MPI_Get_version(int *version, int *subversion)
{
	MPI_API();
	if (!version || !subversion)
		return MPI_ERR_ARG;
	*version = MPI_VERSION;
	*subversion = MPI_SUBVERSION;
	return MPI_SUCCESS;
}

double MPI_Wtime(void)
{
	MPI_API();
	if (mpi_g.wall || mpi_g.state != 1) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
	}
	/* reading the clock costs the core a poll's time, as looking at a
	 * FIFO does: a program that waits by spinning on MPI_Wtime sees time
	 * pass, and its loop ends */
	emu_core_compute(mpi_g.c, emu_params(mpi_g.c)->poll_cost_ps);
	return (double)emu_core_now(mpi_g.c) * 1e-12;
}

double MPI_Wtick(void) { return mpi_g.wall ? 1e-9 : 1e-12; }

/* ------------------------------------------------------------- helpers
 *
 * The node's other cores (MPI_THREAD_FUNNELED: they never call MPI) work
 * for core 0 in the collectives that share a node team's work among its
 * cores (the multicolor algorithms: a color per core). They wait in the
 * node's lockbox barrier for a command; core 0 joins it with one when a
 * collective is large enough to gain (mpi_g.multicore_bytes) and at the
 * node team's creation and end. The barrier costs barrier_latency of
 * emulated time, on every core of the node. */

int mpi_help(enum mpi_help_cmd cmd, const struct mpi_help *job)
{
	if (mpi_g.ncores < 2)
		return 0;
	struct mpi_help none = {0};
	mpi_g.help[mpi_g.help_seq++ % 2] = job ? *job : none;
	uint32_t out = 0;
	return dma_barrier_node(mpi_g.c, mpi_g.ncores, (uint32_t)cmd, &out);
}

static int helper_main(emu_core_t *c, void *arg)
{
	(void)arg;
	coll_team_t **teams = calloc(MPI_MAX_COMMS, sizeof(*teams));
	uint32_t me = emu_core_index(c), n = emu_cores_of(c, emu_node_rank(c));
	int rc = teams ? 0 : -ENOMEM;
	uint64_t seq = 0;
	while (!rc) {
		uint32_t cmd = MPI_HELP_NONE;
		if ((rc = dma_barrier_node(c, n, 0, &cmd)))
			break;
		const struct mpi_help *j = &mpi_g.help[seq++ % 2]; /* written before the barrier */
		if (cmd == MPI_HELP_QUIT)
			break;
		if (j->h <= 0 || j->h >= MPI_MAX_COMMS) {
			rc = -EPROTO;
			break;
		}
		coll_team_t **t = &teams[j->h];
		switch (cmd) {
		case MPI_HELP_TEAM:
			if (me < j->cores)
				rc = coll_team_create_nodes(c, j->nodes, j->n, j->cores, t);
			break;
		case MPI_HELP_FREE:
			coll_team_free(*t);
			*t = NULL;
			break;
		case MPI_HELP_ALLREDUCE:
			if (*t)
				rc = coll_allreduce(*t, j->send, j->recv, j->count, j->dt, j->op, NULL);
			break;
		case MPI_HELP_ALLGATHER:
			if (*t)
				rc = coll_allgather(*t, j->send, j->recv, j->count, j->dt, NULL);
			break;
		case MPI_HELP_REDUCE_SCATTER:
			if (*t)
				rc = coll_reduce_scatter(*t, j->send, j->recv, j->count, j->dt, j->op, NULL);
			break;
		default: rc = -EPROTO; break;
		}
	}
	if (rc)
		fprintf(stderr, "MPI: rank %u: helper core %u failed: %s\n", emu_node_rank(c), me, dma_strerror(rc));
	for (int h = 0; teams && h < MPI_MAX_COMMS; h++)
		coll_team_free(teams[h]);
	free(teams);
	return rc ? 1 : 0;
}

/* Profiling control: there is no profiling layer to tell anything. */
int MPI_Pcontrol(const int level, ...)
{
	MPI_API();
	(void)level;
	return MPI_SUCCESS;
}
