/*
 * torusrun's job control: create the machine, start one process per node,
 * watch them, detect faults and hangs, shut the job down cleanly or tear it
 * down loudly.
 */
#include "emu_internal.h"

#include <errno.h>
#include <numa.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_NS 2000000L        /* the main loop's pace */
#define REAP_EVERY_S 0.5        /* child reaping without a SIGCHLD (a safety net) */
_Static_assert(sizeof(pid_t) == sizeof(int32_t), "node pids are kept as int32_t");
#define CHECK_EVERY_S 0.02      /* quiescence and progress checks */
#define PROGRESS_EVERY_S 1.0    /* the progress line on stderr */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig) { interrupted = sig; }

/* A node exited: reap. waitpid(-1) looks at every child, and a job has
 * thousands: on 16x16x16, reaping every 2 ms took the main thread 13% of
 * a CPU. */
static volatile sig_atomic_t child_exited = 1;
static void on_child(int sig)
{
	(void)sig;
	child_exited = 1;
}

double emu_wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void coords_text(const struct torus_shape *s, uint32_t rank, char *buf, size_t len)
{
	uint32_t c[TORUS_MAX_DIMS];
	size_t used = 0;
	torus_rank_to_coords(s, rank, c);
	buf[0] = '\0';
	for (uint32_t d = 0; d < s->ndims && used < len; d++)
		used += (size_t)snprintf(buf + used, len - used, d ? ",%u" : "%u", c[d]);
}

static void child_exec(const struct emu_job_config *cfg, int fd, uint32_t rank, const int *numa, pid_t parent)
{
	char v[64];
	setpgid(0, 0); /* own group: teardown kills whatever the node started */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (numa && numa_available() >= 0 && numa_num_configured_nodes() > 1) {
		numa_run_on_node(numa[rank]);
		numa_set_preferred(numa[rank]);
	}
	snprintf(v, sizeof(v), "%d", fd);
	setenv("TORUS_SHM_FD", v, 1);
	/* PR_SET_PDEATHSIG reaches only this child; a node behind a wrapper
	 * script watches torusrun itself (emu_node_setup) */
	snprintf(v, sizeof(v), "%d", (int)parent);
	setenv("TORUS_LAUNCHER_PID", v, 1);
	snprintf(v, sizeof(v), "%u", rank);
	setenv("TORUS_RANK", v, 1);
	snprintf(v, sizeof(v), "%u", cfg->shape.nnodes);
	setenv("TORUS_NNODES", v, 1);
	snprintf(v, sizeof(v), "%u", cfg->cores[rank]);
	setenv("TORUS_CORES", v, 1);
	coords_text(&cfg->shape, rank, v, sizeof(v));
	setenv("TORUS_COORDS", v, 1);
	torus_shape_format(&cfg->shape, v, sizeof(v));
	setenv("TORUS_SHAPE", v, 1);
	if (cfg->wtime_wall)
		setenv("TORUS_MPI_WTIME", "wall", 1);
	if (cfg->compute_speed > 0) {
		snprintf(v, sizeof(v), "speed:%.17g", cfg->compute_speed);
		setenv("TORUS_MPI_COMPUTE", v, 1);
	} else if (cfg->compute_cpi > 0) {
		snprintf(v, sizeof(v), "cpi:%.17g:%llu", cfg->compute_cpi, (unsigned long long)cfg->compute_hz);
		setenv("TORUS_MPI_COMPUTE", v, 1);
	}
	execv(cfg->program_path, cfg->argv);
	fprintf(stderr, "torusrun: node %u: cannot run %s: %s\n", rank, cfg->program_path, strerror(errno));
	_exit(127);
}

struct job {
	struct emu_job_config *cfg;
	struct emu_shm shm;
	int32_t *pid; /* pid_t */
	uint8_t *exited;
	uint32_t alive;
};

static long find_rank(const struct job *j, pid_t pid)
{
	for (uint32_t r = 0; r < j->cfg->shape.nnodes; r++)
		if (j->pid[r] == pid)
			return r;
	return -1;
}

static void ring_all(struct job *j)
{
	for (uint32_t r = 0; r < j->cfg->shape.nnodes; r++) {
		struct emu_node_shm *n = emu_shm_node(&j->shm, r);
		emu_bell_ring_slow(&n->bell);
		for (uint32_t c = 0; c < n->ncores; c++)
			emu_bell_ring_slow(&emu_shm_core(&j->shm, n, c)->bell);
	}
}

/* Kill every node process group and reap them all. */
static void teardown(struct job *j)
{
	for (uint32_t r = 0; r < j->cfg->shape.nnodes; r++) {
		if (j->pid[r] > 0 && !j->exited[r]) {
			kill(-j->pid[r], SIGKILL);
			kill(j->pid[r], SIGKILL);
		}
	}
	/* after the kills, so dying nodes do not report cancelled calls; wakes any
	 * thread of a process that somehow outlives SIGKILL's delivery */
	atomic_store(&j->shm.hdr->abort, 1);
	ring_all(j);
	for (uint32_t r = 0; r < j->cfg->shape.nnodes; r++) {
		if (j->pid[r] > 0 && !j->exited[r]) {
			while (waitpid(j->pid[r], NULL, 0) < 0 && errno == EINTR)
				;
			j->exited[r] = 1;
		}
	}
	j->alive = 0;
}

/* What moved: packets (engines), the cores' calls that move something, and
 * the timekeeper's simulated events (with every packet physically there,
 * the simulation may still run for a long time). Not the cores' clocks
 * alone: a look that finds nothing or a wait that times out moves them
 * without progress. */
static uint64_t progress_sum(const struct job *j, const struct emu_tk *tk)
{
	struct emu_tk_progress tp;
	emu_tk_progress(tk, &tp);
	uint64_t sum = tp.events;
	for (uint32_t r = 0; r < j->cfg->shape.nnodes; r++) {
		struct emu_node_shm *n = emu_shm_node(&j->shm, r);
		sum += atomic_load_explicit(&n->progress, memory_order_relaxed);
		for (uint32_t c = 0; c < n->ncores; c++)
			sum += atomic_load_explicit(&emu_shm_core(&j->shm, n, c)->progress, memory_order_relaxed);
	}
	return sum;
}

/* Every node finished its cores (or left), every packet sent was deposited
 * and every DMA descriptor and engine job is done. */
static int quiescent(const struct job *j)
{
	uint64_t sent = 0, delivered = 0, posted = 0, done = 0, pending = 0;
	for (uint32_t r = 0; r < j->cfg->shape.nnodes; r++) {
		struct emu_node_shm *n = emu_shm_node(&j->shm, r);
		uint32_t st = atomic_load_explicit(&n->state, memory_order_acquire);
		if (!j->exited[r] && st != EMU_NODE_DONE)
			return 0;
		/* pending first: the engine raises it before counting the packet
		 * that created the job, and lowers it after counting the job's own */
		pending += atomic_load_explicit(&n->jobs_pending, memory_order_acquire);
		for (uint32_t c = 0; c < n->ncores; c++) {
			struct emu_core_shm *co = emu_shm_core(&j->shm, n, c);
			sent += atomic_load_explicit(&co->sent, memory_order_acquire);
			posted += atomic_load_explicit(&co->posted, memory_order_acquire);
		}
		delivered += atomic_load_explicit(&n->delivered, memory_order_acquire);
		sent += atomic_load_explicit(&n->emitted, memory_order_acquire);
		done += atomic_load_explicit(&n->desc_done, memory_order_acquire);
	}
	return sent == delivered && posted == done && pending == 0;
}

/* The cores' clocks, summed: they move without progress in a loop that
 * only polls and times out. */
static uint64_t clocks_sum(const struct job *j)
{
	uint64_t sum = 0;
	for (uint32_t r = 0; r < j->cfg->shape.nnodes; r++) {
		struct emu_node_shm *n = emu_shm_node(&j->shm, r);
		for (uint32_t c = 0; c < n->ncores; c++)
			sum += atomic_load_explicit(&emu_shm_core(&j->shm, n, c)->vt, memory_order_relaxed);
	}
	return sum;
}

static torus_vt_t job_vt(const struct job *j)
{
	torus_vt_t vt = 0;
	for (uint32_t r = 0; r < j->cfg->shape.nnodes; r++) {
		struct emu_node_shm *n = emu_shm_node(&j->shm, r);
		for (uint32_t c = 0; c < n->ncores; c++) {
			torus_vt_t v = atomic_load(&emu_shm_core(&j->shm, n, c)->vt);
			if (v > vt)
				vt = v;
		}
	}
	return vt;
}

static void describe_exit(const struct job *j, uint32_t rank, int st)
{
	char cs[64];
	coords_text(&j->cfg->shape, rank, cs, sizeof(cs));
	if (WIFSIGNALED(st))
		fprintf(stderr, "torusrun: node %u (%s) was killed by signal %d (%s)%s\n", rank, cs, WTERMSIG(st),
			strsignal(WTERMSIG(st)), WCOREDUMP(st) ? ", core dumped" : "");
	else
		fprintf(stderr, "torusrun: node %u (%s) exited with status %d\n", rank, cs, WEXITSTATUS(st));
}

static void describe_early_exit(const struct job *j, uint32_t rank, uint32_t state)
{
	char cs[64];
	coords_text(&j->cfg->shape, rank, cs, sizeof(cs));
	fprintf(stderr, "torusrun: node %u (%s) exited with status 0 before the job was done (%s)\n", rank, cs,
		state == EMU_NODE_NEW ? "it never joined the machine: is PROGRAM a torus program?"
		: state == EMU_NODE_DONE ? "its cores had finished, but the network was still busy"
					 : "its cores were still running");
}

/*
 * Nothing has moved for --timeout seconds, yet the cores' clocks ran on:
 * the program only looks and waits in loops that time out (MPI's progress
 * loop in a deadlock). Virtual time passing is not progress: hung. (Told
 * after the threads' second look, which finds a stopped node first.)
 */
static int clocks_only(const struct job *j, uint64_t clocks_then, double stalled)
{
	if (clocks_sum(j) == clocks_then)
		return 0;
	fprintf(stderr,
		"torusrun: no packet moved and no data changed for %.1f s, while the cores' clocks ran on to "
		"%.3f us: the job is hung: its cores only poll and wait in loops that time out (a deadlock in "
		"the program, such as every rank receiving before it sends).\n",
		stalled, job_vt(j) / 1e6);
	return 1;
}

/*
 * The hang detector's second look (emu/stall.c): when nothing has moved
 * for --timeout seconds, observe the job's threads twice, STALL_WINDOW_S
 * apart, and tell starvation (wait, and say so) from a hang (stop).
 */
#define STALL_WINDOW_S 0.5
struct stall_look {
	struct emu_thread_obs *first, *second;
	size_t cap, n;
	double at;      /* when the first look was taken; 0: none */
	double starved; /* since when the job has been starved; 0: not */
};

/*
 * Nothing has moved for --timeout seconds at `now`: take the first look,
 * or, STALL_WINDOW_S later, the second, and judge. Returns 1 when the job
 * is hung (the verdict printed), else 0: still looking, or starved (said
 * so; *last_change moves to now, so the next verdict comes after another
 * --timeout).
 */
static int stall_judge(struct job *j, struct stall_look *l, double now, double *last_change, uint64_t clocks_then)
{
	struct emu_stall_verdict v;
	if (!l->at) {
		l->n = emu_stall_sample(&j->shm, j->pid, j->exited, l->first, l->cap);
		l->at = now;
		return 0;
	}
	if (now - l->at < STALL_WINDOW_S)
		return 0;
	size_t n = emu_stall_sample(&j->shm, j->pid, j->exited, l->second, l->cap);
	uint64_t window = (uint64_t)((now - l->at) * 1e9);
	l->at = 0;
	if (n != l->n || n > l->cap)
		return 0; /* threads came or went between the looks: look again */
	if (emu_stall_classify(l->first, l->second, n, window ? window : 1, &v) < 0)
		v.kind = EMU_STALL_ASLEEP;
	/* a node stopped explains the rest; else cores whose clocks run on
	 * loop in virtual time, whatever the threads look like */
	if (v.kind != EMU_STALL_STOPPED && clocks_only(j, clocks_then, now - *last_change))
		return 1;
	switch (v.kind) {
	case EMU_STALL_STARVED:
		if (!l->starved)
			l->starved = *last_change;
		fprintf(stderr,
			"torusrun: nothing moved for %.1f s, but %u of the job's %u threads are runnable and waiting "
			"for a CPU: the host is overloaded; the job is starved, not hung: waiting\n",
			now - l->starved, v.starved, v.threads);
		*last_change = now;
		return 0;
	case EMU_STALL_STOPPED:
		fprintf(stderr,
			"torusrun: no packet moved and no core advanced for %.1f s: the job is hung: node %u (pid %d) is "
			"stopped (SIGSTOP or a debugger; %u of the job's %u threads stopped), and the others wait for it "
			"(kill -CONT %d resumes it; --timeout 0 keeps a job alive while you debug).\n",
			now - *last_change, v.stopped_node, (int)j->pid[v.stopped_node], v.stopped, v.threads,
			(int)j->pid[v.stopped_node]);
		return 1;
	case EMU_STALL_BUSY:
		fprintf(stderr,
			"torusrun: no packet moved and no core advanced for %.1f s: the job is hung: %u of its %u "
			"threads are running without moving anything (a livelock, or a core busy in its own code).\n",
			now - *last_change, v.busy, v.threads);
		return 1;
	default:
		fprintf(stderr,
			"torusrun: no packet moved and no core advanced for %.1f s: the job is hung: its %u threads "
			"are asleep (%u on their doorbells, %u elsewhere, e.g. in the program's own code), none "
			"waiting for a CPU: a lost wake-up or a deadlock.\n",
			now - *last_change, v.threads, v.asleep, v.other);
		return 1;
	}
}

/* What the timekeeper waits for, in the hang detector's dump. */
static void tk_describe(const struct emu_tk *tk)
{
	static const char *const q[] = {
		[EMU_TKQ_RECV] = "a receive",	     [EMU_TKQ_WAIT_RECV] = "a wait for a packet",
		[EMU_TKQ_CTR] = "a counter read",    [EMU_TKQ_CTR_WAIT] = "a counter wait",
		[EMU_TKQ_BARRIER] = "a barrier",     [EMU_TKQ_MARK] = "a watermark test",
		[EMU_TKQ_MARK_WAIT] = "a watermark wait", [EMU_TKQ_PENDING] = "an injection FIFO test",
		[EMU_TKQ_CTR_OR_RECV] = "a wait for a counter or a packet", [EMU_TKQ_PACE] = "a pace",
		[EMU_TKQ_PROGRAM] = "a program",     [EMU_TKQ_SYNC] = "its clock",
		[EMU_TKQ_PKT] = "a memory-FIFO packet sent in any order",
	};
	struct emu_tk_progress tp;
	if (!tk)
		return;
	emu_tk_progress(tk, &tp);
	fprintf(stderr, "torusrun: the timekeeper has simulated to %.6f us (%llu packet hops)", tp.now / 1e6,
		(unsigned long long)tp.hops);
	if (tp.wait_node == UINT32_MAX)
		fprintf(stderr, " and waits for no core\n");
	else if (!tp.wait_query)
		fprintf(stderr, "; it waits for core %u of node %u, running at %.6f us, to post or ask something\n",
			tp.wait_core, tp.wait_node, tp.wait_vt / 1e6);
	else
		fprintf(stderr, "; it waits for core %u of node %u, whose %s at %.6f us it cannot answer yet\n",
			tp.wait_core, tp.wait_node,
			tp.wait_query < sizeof(q) / sizeof(q[0]) && q[tp.wait_query] ? q[tp.wait_query] : "question",
			tp.wait_vt / 1e6);
}

/* Once a second on a long job: how far it got. */
static void progress_line(const struct job *j, const struct emu_tk *tk, double elapsed)
{
	struct emu_tk_progress tp;
	(void)j;
	emu_tk_progress(tk, &tp);
	fprintf(stderr, "torusrun: %.0f s: emulated time %.3f us, %llu packet hops simulated, simulating %.0f%% of the "
			"wall time\n",
		elapsed, tp.now / 1e6, (unsigned long long)tp.hops, elapsed > 0 ? 100.0 * (double)tp.sim_ns / 1e9 / elapsed : 0.0);
}

int emu_job_run(struct emu_job_config *cfg)
{
	struct job j = {.cfg = cfg};
	uint32_t n = cfg->shape.nnodes;
	int *numa = malloc(n * sizeof(int));
	char err[256];
	int fd = -1, trace_fd = -1, status = 0;
	const char *what = "ok";
	struct stall_look look = {0};
	struct emu_tk *tk = NULL;

	j.pid = calloc(n, sizeof(pid_t));
	j.exited = calloc(n, 1);
	if (!numa || !j.pid || !j.exited) {
		fprintf(stderr, "torusrun: out of memory\n");
		free(numa);
		free(j.pid);
		free(j.exited);
		return 1;
	}
	int numa_nodes = numa_available() >= 0 ? numa_num_configured_nodes() : 1;
	emu_numa_plan(n, numa_nodes > 0 ? (uint32_t)numa_nodes : 1, numa);
	if (emu_shm_create(&cfg->shape, &cfg->params, cfg->cores, numa, 1, &j.shm, &fd, err, sizeof(err))) {
		fprintf(stderr, "torusrun: %s\n", err);
		free(numa);
		free(j.pid);
		free(j.exited);
		return 1;
	}
	j.shm.hdr->chaos_seed = cfg->chaos_seed;
	j.shm.hdr->nlinks = cfg->nlinks;
	memcpy(j.shm.hdr->links, cfg->links, sizeof(cfg->links));
	if (cfg->trace_path && emu_trace_create(cfg, &j.shm, &trace_fd, err, sizeof(err))) {
		fprintf(stderr, "torusrun: %s\n", err);
		emu_shm_detach(&j.shm);
		close(fd);
		free(numa);
		free(j.pid);
		free(j.exited);
		return 2; /* bad input (--trace /dev/full): no node has started */
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	struct sigaction sc = {.sa_handler = on_child, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
	sigemptyset(&sc.sa_mask);
	sigaction(SIGCHLD, &sc, NULL);
	fflush(NULL);

	double t0 = emu_wall_now();
	pid_t self = getpid();
	for (uint32_t r = 0; r < n; r++) {
		pid_t pid = fork();
		if (pid == 0)
			child_exec(cfg, fd, r, numa, self);
		if (pid < 0) {
			fprintf(stderr, "torusrun: cannot start node %u: %s\n", r, strerror(errno));
			what = "failed";
			status = 1;
			teardown(&j);
			goto done;
		}
		setpgid(pid, pid); /* also here, so a kill right after fork reaches the group */
		j.pid[r] = pid;
		j.alive++;
		if (!cfg->quiet && n >= 256 && (r + 1) % 1024 == 0)
			fprintf(stderr, "torusrun: started %u/%u nodes\n", r + 1, n);
	}

	/* SIGCHLD is the main thread's: the timekeeper's thread blocks it */
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	int tk_rc = emu_tk_start(&j.shm, trace_fd, &tk, err, sizeof(err));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (tk_rc) {
		fprintf(stderr, "torusrun: %s\n", err);
		what = "failed";
		status = 1;
		teardown(&j);
		goto done;
	}
	double last_check = 0, last_change = emu_wall_now(), last_line = emu_wall_now();
	uint64_t last_progress = UINT64_MAX, last_clocks = 0;
	look.cap = cfg->shape.nnodes;
	for (uint32_t r = 0; r < n; r++)
		look.cap += cfg->cores[r];
	look.first = calloc(look.cap, sizeof(*look.first));
	look.second = calloc(look.cap, sizeof(*look.second));
	if (!look.first || !look.second) {
		fprintf(stderr, "torusrun: out of memory\n");
		what = "failed";
		status = 1;
		teardown(&j);
		goto done;
	}
	int shutdown_sent = 0, quiet_once = 0;
	double last_reap = 0;
	/* the checks read every core's counters, which the cores keep writing:
	 * every 20 ms up to 512 nodes, less often beyond */
	const double check_every = CHECK_EVERY_S * (n > 512 ? n / 512.0 : 1.0);
	while (j.alive) {
		int st;
		pid_t pid;
		double now = emu_wall_now();
		int reap = child_exited || now - last_reap >= REAP_EVERY_S;
		if (reap) {
			child_exited = 0; /* before the look: an exit after it sets it again */
			last_reap = now;
		}
		while (reap && (pid = waitpid(-1, &st, WNOHANG)) > 0) {
			long r = find_rank(&j, pid);
			if (r < 0)
				continue;
			j.exited[r] = 1;
			j.alive--;
			/* a node leaves cleanly only after the machine shut down
			 * (EMU_NODE_EXITED); before that, even status 0 (a program
			 * that returned early, a wrapper script that hid its
			 * child's death) leaves the others waiting for it */
			uint32_t nst = atomic_load_explicit(&emu_shm_node(&j.shm, (uint32_t)r)->state, memory_order_acquire);
			int early = WIFEXITED(st) && WEXITSTATUS(st) == 0 && nst != EMU_NODE_EXITED;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || early) {
				if (early)
					describe_early_exit(&j, (uint32_t)r, nst);
				else
					describe_exit(&j, (uint32_t)r, st);
				fprintf(stderr, "torusrun: stopping the job\n");
				what = "failed";
				status = 1;
				teardown(&j);
				goto done;
			}
		}
		if (interrupted) {
			fprintf(stderr, "torusrun: interrupted by signal %d: stopping the job\n", (int)interrupted);
			what = "interrupted";
			status = 130;
			teardown(&j);
			goto done;
		}
		if (now - last_check >= check_every) {
			last_check = now;
			uint64_t p = progress_sum(&j, tk);
			/* drained, and nothing moved since the previous check: the
			 * per-node counters are read at slightly different times, and a
			 * second look with no progress between rules out a packet that
			 * was in flight between two of them */
			if (!shutdown_sent && quiescent(&j)) {
				if (p == last_progress && quiet_once) {
					atomic_store_explicit(&j.shm.hdr->shutdown, 1, memory_order_release);
					ring_all(&j);
					shutdown_sent = 1;
				}
				quiet_once = 1;
			} else {
				quiet_once = 0;
			}
			if (p != last_progress) {
				if (look.starved)
					fprintf(stderr, "torusrun: the job moves again after %.1f s starved\n",
						now - look.starved);
				last_progress = p;
				last_change = now;
				last_clocks = clocks_sum(&j);
				look.at = look.starved = 0;
			} else if (cfg->timeout_s > 0 && !shutdown_sent && now - last_change > cfg->timeout_s &&
				   stall_judge(&j, &look, now, &last_change, last_clocks)) {
				/* after shutdown the emulated machine is done; nodes may
				 * still be finishing their own work after emu_job_main */
				fprintf(stderr, "torusrun: non-empty FIFOs and node states:\n");
				emu_shm_dump(&j.shm, stderr);
				tk_describe(tk);
				fprintf(stderr, "torusrun: stopping the job\n");
				what = "hung";
				status = 3;
				teardown(&j);
				goto done;
			}
		}
		if (!cfg->quiet && !shutdown_sent && now - last_line >= PROGRESS_EVERY_S) {
			last_line = now;
			progress_line(&j, tk, now - t0);
		}
		struct timespec ts = {0, POLL_NS};
		nanosleep(&ts, NULL);
	}
done:;
	struct emu_tk_progress tk_end;
	emu_tk_stop_report(tk, &tk_end); /* before the report: the links' busy times are its */
	free(look.first);
	free(look.second);
	double wall = emu_wall_now() - t0;
	torus_vt_t vt = job_vt(&j);
	uint64_t orphans = 0;
	for (uint32_t r = 0; r < n; r++)
		orphans += atomic_load(&emu_shm_node(&j.shm, r)->orphaned);
	if (cfg->chaos_seed) {
		uint64_t yields = 0, sleeps = 0;
		for (uint32_t r = 0; r < n; r++) {
			yields += atomic_load(&emu_shm_node(&j.shm, r)->chaos_yields);
			sleeps += atomic_load(&emu_shm_node(&j.shm, r)->chaos_sleeps);
		}
		fprintf(stderr, "torusrun: chaos seed %u: %llu yields, %llu sleeps\n", cfg->chaos_seed,
			(unsigned long long)yields, (unsigned long long)sleeps);
	}
	if (orphans && !status)
		fprintf(stderr, "torusrun: warning: %llu packets arrived at cores that had already finished\n",
			(unsigned long long)orphans);
	if (!cfg->quiet) {
		char shape[64];
		/* the links with settings of their own, and what they carried */
		for (uint32_t k = 0; k < cfg->nlinks; k++) {
			const struct torus_link_set *ls = &cfg->links[k];
			struct torus_params lp;
			struct torus_link_counters lc;
			char name[8], cs[64];
			torus_link_params(&cfg->params, ls, &lp);
			torus_link_read(emu_shm_link_out(&j.shm, ls->node, ls->link >> 1, ls->link & 1), &lc);
			coords_text(&cfg->shape, ls->node, cs, sizeof(cs));
			fprintf(stderr, "torusrun: link of node %u (%s) %s: link_bw %.3f MB/s, hop_latency %.3f ns (--link; the machine's %.3f MB/s, %.3f ns): "
					"%llu packets, busy %.3f us\n",
				ls->node, cs, torus_link_name(ls->link, name), lp.link_bw / 1e6, lp.hop_latency_ps / 1e3, cfg->params.link_bw / 1e6,
				cfg->params.hop_latency_ps / 1e3, (unsigned long long)lc.packets, lc.busy_ps / 1e6);
		}
		fprintf(stderr, "torusrun: %s: torus %s, %u nodes, emulated time %.3f us, wall time %.3f s",
			status ? "job failed" : "job finished", torus_shape_format(&cfg->shape, shape, sizeof(shape)), n,
			vt / 1e6, wall);
		if (tk)
			fprintf(stderr, " (simulating %.3f s, %.0f%% of it)", tk_end.sim_ns / 1e9,
				wall > 0 ? 100.0 * (double)tk_end.sim_ns / 1e9 / wall : 0.0);
		fputc('\n', stderr);
	}
	if (cfg->report_path &&
	    emu_report_write(cfg->report_path, cfg, &j.shm, what, wall, err, sizeof(err))) {
		fprintf(stderr, "torusrun: %s\n", err);
		if (!status)
			status = 1;
	}
	if (trace_fd >= 0) {
		uint32_t code = !strcmp(what, "ok") ? 0 : !strcmp(what, "failed") ? 1 : !strcmp(what, "hung") ? 2 : 3;
		if (emu_trace_finish(cfg, &j.shm, trace_fd, code, wall, vt, cfg->quiet, err, sizeof(err))) {
			fprintf(stderr, "torusrun: %s\n", err);
			if (!status)
				status = 1;
		}
	}
	emu_shm_detach(&j.shm);
	close(fd);
	free(numa);
	free(j.pid);
	free(j.exited);
	return status;
}
