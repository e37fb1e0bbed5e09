/*
 * Whole-job tests: run torusrun with real programs and check what a user
 * sees (exit status, messages, reports). Run from ctest, which sets
 * TORUS_BIN to the build's bin/ folder. `test_job --large` runs the long
 * stress shapes instead (ctest -L stress).
 */
#include "cunit_main.h"
#include "torus/machine.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job_util.h"

/* ------------------------------------------------------------- hello */

/* per_core: greetings each core sends (2N neighbours + the far node) */
static void check_hello(const char *opts, int total_cores, int per_core)
{
	struct result r = run("$B/torusrun %s -- $B/torus-hello", opts);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(count_lines(r.out, "greetings at"), total_cores);
	/* every line says heard N/N, and all greetings sent were heard */
	int good = 0, heard = 0;
	for (const char *p = r.out; (p = strstr(p, " heard ")); p++) {
		unsigned a, b;
		if (sscanf(p, " heard %u/%u", &a, &b) == 2 && a == b) {
			good++;
			heard += (int)a;
		}
	}
	CU_ASSERT_EQUAL(good, total_cores);
	CU_ASSERT_EQUAL(heard, total_cores * per_core);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "job finished"));
	if (r.status)
		fprintf(stderr, "hello %s failed:\n%s\n", opts, r.err);
	result_free(&r);
}

static void test_hello_4x4x4_cores4(void) { check_hello("--torus 4x4x4 --cores 4", 256, 7); }
static void test_hello_shapes(void)
{
	check_hello("--torus 1", 1, 3);
	check_hello("--torus 2", 2, 3);
	check_hello("--torus 3x1x2", 6, 7);
	check_hello("--torus 2x2 --cores-map 1,2,3,4", 10, 5);
	check_hello("--torus 2x2x2x2x2x2 --param fifo_slots=1", 64, 13);
}

/* ------------------------------------------------------------ stress */

/* Expected link traversals of torus-stress: K per ordered core pair times hops. */
static uint64_t stress_link_packets(const char *shape_text, const uint32_t *cores, uint32_t k)
{
	struct torus_shape s;
	char err[128];
	if (torus_shape_parse(shape_text, &s, err, sizeof(err)))
		return 0;
	uint64_t sum = 0;
	for (uint32_t a = 0; a < s.nnodes; a++)
		for (uint32_t b = 0; b < s.nnodes; b++)
			sum += (uint64_t)cores[a] * cores[b] * torus_hops(&s, a, b);
	return sum * k;
}

static void check_stress(const char *shape, uint32_t cores_each, const char *cores_map, uint32_t k, const char *extra)
{
	struct torus_shape s;
	char err[128], opts[512];
	uint32_t cores[4096];
	CU_ASSERT_FATAL(torus_shape_parse(shape, &s, err, sizeof(err)) == 0);
	uint64_t total = 0;
	for (uint32_t r = 0; r < s.nnodes; r++)
		cores[r] = cores_each;
	if (cores_map) {
		const char *p = cores_map;
		for (uint32_t r = 0; r < s.nnodes; r++) {
			cores[r] = (uint32_t)strtoul(p, (char **)&p, 10);
			if (*p == ',')
				p++;
		}
	}
	for (uint32_t r = 0; r < s.nnodes; r++)
		total += cores[r];
	if (cores_map)
		snprintf(opts, sizeof(opts), "--cores-map %s", cores_map);
	else
		snprintf(opts, sizeof(opts), "--cores %u", cores_each);
	/* the smallest FIFOs flow control allows: one slot everywhere */
	struct result r = run("$B/torusrun --torus %s %s --param fifo_slots=1 --param inj_slots=1 --param rx_slots=1 "
			      "--timeout 60 --report $T/stress.json %s -- $B/torus-stress --packets %u",
			      shape, opts, extra ? extra : "", k);
	CU_ASSERT_EQUAL(r.status, 0);
	if (r.status)
		fprintf(stderr, "stress %s failed (%d):\n%.4000s\n", shape, r.status, r.err);
	char path[512];
	snprintf(path, sizeof(path), "%s/stress.json", tmpdir);
	char *rep = slurp(path);
	char *nodes = strstr(rep, "\"node_list\"");
	/* every packet deposited exactly once: sum of deliveries = K * C * (C-1) */
	CU_ASSERT_EQUAL(nodes ? json_sum(nodes, "delivered") : 0, (uint64_t)k * total * (total - 1));
	CU_ASSERT_EQUAL(nodes ? json_sum(nodes, "orphaned") : 1, 0);
	/* and each crossed exactly its minimal number of links */
	CU_ASSERT_EQUAL(json_u64(strstr(rep, "\"totals\""), "packets"), stress_link_packets(shape, cores, k));
	free(rep);
	result_free(&r);
}

static void test_stress_rings(void)
{
	check_stress("1", 2, NULL, 8, NULL);
	check_stress("2", 1, NULL, 16, NULL);
	check_stress("3", 1, NULL, 16, NULL);
	check_stress("8", 1, NULL, 16, NULL);
}
static void test_stress_2d_3d(void)
{
	check_stress("4x4", 1, NULL, 8, NULL);
	check_stress("2x2x2", 1, NULL, 8, NULL);
	check_stress("3x5x7", 1, NULL, 2, NULL);
}
static void test_stress_4x4x4_cores4(void) { check_stress("4x4x4", 4, NULL, 2, NULL); }
static void test_stress_5d_6d(void)
{
	check_stress("2x2x2x2x2", 1, NULL, 4, NULL);
	check_stress("2x3x2x2x3x2", 1, NULL, 2, NULL);
}
static void test_stress_uneven_cores(void)
{
	check_stress("3x2x2", 1, "1,2,3,4,1,2,3,4,1,2,3,4", 4, NULL);
	check_stress("5", 1, "3,1,2,1,4", 8, NULL);
}
static void test_stress_fixed_sizes(void)
{
	check_stress("4x3", 1, NULL, 4, NULL); /* varying sizes is the default */
	struct result r = run("$B/torusrun --torus 3x3 --param fifo_slots=1 -- $B/torus-stress --packets 4 --size 240");
	CU_ASSERT_EQUAL(r.status, 0);
	result_free(&r);
	r = run("$B/torusrun --torus 3x3 --param fifo_slots=2 -- $B/torus-stress --packets 4 --size 16");
	CU_ASSERT_EQUAL(r.status, 0);
	result_free(&r);
}

/* ------------------------------------------------------- virtual time */

static void check_timing(const char *opts, const char *cases, int ncases)
{
	struct result r = run("$B/torusrun %s -- $B/job-timing %s", opts, cases);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(count_lines(r.out, " OK"), ncases);
	CU_ASSERT_EQUAL(count_lines(r.out, "MISMATCH"), 0);
	if (r.status)
		fprintf(stderr, "timing %s:\n%s%s\n", opts, r.out, r.err);
	result_free(&r);
}

static void test_time_model_exact(void)
{
	/* ring of 9: node h is h hops away; every size class of the last packet */
	check_timing("--torus 9", "0:1 1:1 16:2 239:2 240:3 241:4 480:1 1000:4 100000:4 1048576:3", 10);
	/* several dimensions, and other parameters */
	check_timing("--torus 4x4x4 --cores 2", "4800:21 4800:42 999:63 24000:1", 4);
	check_timing("--torus 5x5 --param link_bw=1GB/s --param hop_latency=1us --param ack_overhead=0 --param fifo_slots=2",
		     "0:6 240:12 12345:24", 3);
}

/* The report without its wall-clock lines: what must not move. */
static char *report_model(const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	char *rep = slurp(path), *out = rep ? malloc(strlen(rep) + 1) : NULL;
	size_t n = 0;
	for (const char *line = rep; out && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
		if (!memmem(line, len, "\"wall_time_s\"", 13)) {
			memcpy(out + n, line, len);
			n += len;
		}
		line += len;
	}
	if (out)
		out[n] = '\0';
	free(rep);
	return out;
}

/*
 * --chaos perturbs the host's scheduling (yields and sleeps in engines and
 * cores); emulated results must not move. Times and counters are identical
 * with and without it: job-timing (single transfers over many hops),
 * torus-pingpong (latency and bandwidth), and torus-stress, whose traffic
 * shares links.
 */
static void test_chaos_moves_nothing(void)
{
	static const char *const jobs[] = {
		"--torus 9 --report $T/c.json %s -- $B/job-timing 5000:3 7777:4",
		"--torus 4x4 --report $T/c.json %s -- $B/torus-pingpong --distance 2 --sizes 1:64KiB",
	};
	for (size_t k = 0; k < CUNIT_COUNT(jobs); k++) {
		char *first = NULL, *first_out = NULL;
		for (int seed = 0; seed < 3; seed++) {
			char opt[32] = "", cmd[512];
			if (seed)
				snprintf(opt, sizeof(opt), "--chaos %d", seed);
			snprintf(cmd, sizeof(cmd), jobs[k], opt);
			struct result r = run("$B/torusrun %s", cmd);
			CU_ASSERT_EQUAL(r.status, 0);
			/* chaos did something */
			const char *said = strstr(r.err, "chaos seed");
			CU_ASSERT_EQUAL(said != NULL, seed != 0);
			if (said) {
				unsigned long long yields = 0;
				sscanf(said, "chaos seed %*u: %llu yields", &yields);
				CU_ASSERT(yields > 0);
			}
			char *model = report_model("c.json");
			CU_ASSERT_PTR_NOT_NULL(model);
			if (!first) {
				first = model;
				first_out = strdup(r.out);
			} else {
				CU_ASSERT(model && !strcmp(model, first));
				CU_ASSERT_STRING_EQUAL(r.out, first_out);
				free(model);
			}
			result_free(&r);
		}
		free(first);
		free(first_out);
	}
	/* link sharing: the whole report (times, every link's counters and
	 * busy time) is the same under chaos */
	char *rep[2];
	for (int i = 0; i < 2; i++) {
		struct result r = run("$B/torusrun --torus 2x2x2 --cores 2 --report $T/s.json %s -- $B/torus-stress "
				      "--packets 20",
				      i ? "--chaos 7" : "");
		CU_ASSERT_EQUAL(r.status, 0);
		rep[i] = report_model("s.json");
		CU_ASSERT_PTR_NOT_NULL(rep[i]);
		result_free(&r);
	}
	uint64_t busy = rep[0] ? json_u64(rep[0], "busy_ps") : 0;
	EXPECT(busy > 0 && busy != UINT64_MAX, "busy_ps %llu", (unsigned long long)busy);
	EXPECT(rep[0] && rep[1] && !strcmp(rep[0], rep[1]), "torus-stress under chaos:\n%s\nwithout:\n%s",
	       rep[1] ? rep[1] : "(none)", rep[0] ? rep[0] : "(none)");
	free(rep[0]);
	free(rep[1]);
}

static void test_deterministic(void)
{
	/* identical emulated times and counters on every run */
	char *first = NULL;
	for (int i = 0; i < 3; i++) {
		struct result r = run("$B/torusrun --torus 9 --report $T/t.json -- $B/job-timing 5000:3 7777:4 >/dev/null");
		CU_ASSERT_EQUAL(r.status, 0);
		char path[512];
		snprintf(path, sizeof(path), "%s/t.json", tmpdir);
		char *rep = slurp(path);
		char *links = section(rep, "\"links\"");
		uint64_t vt = json_u64(rep, "emulated_time_ps");
		CU_ASSERT(vt > 0 && vt != UINT64_MAX);
		char *key = malloc(strlen(links) + 32);
		sprintf(key, "%" PRIu64 "|%s", vt, links);
		if (!first)
			first = key;
		else {
			CU_ASSERT_STRING_EQUAL(key, first);
			free(key);
		}
		free(links);
		free(rep);
		result_free(&r);
	}
	free(first);
	/* link sharing: times and counters identical, free_at included */
	char *links0 = NULL;
	for (int i = 0; i < 2; i++) {
		struct result r = run("$B/torusrun --torus 3x4 --cores 2 --report $T/s.json -- $B/torus-stress --packets 3");
		CU_ASSERT_EQUAL(r.status, 0);
		char path[512];
		snprintf(path, sizeof(path), "%s/s.json", tmpdir);
		char *rep = slurp(path);
		char *links = section(rep, "\"links\"");
		if (!links0)
			links0 = links;
		else {
			CU_ASSERT_STRING_EQUAL(links, links0);
			free(links);
		}
		free(rep);
		result_free(&r);
	}
	free(links0);
}

/* ------------------------------------------------------------ faults */

static int survivors(const char *marker)
{
	struct result r = run("pgrep -f '[%c]%s' | wc -l", marker[0], marker + 1);
	int n = atoi(r.out);
	result_free(&r);
	return n;
}

/*
 * What a job could leave behind: its memory lives in a memfd ("torus-job"),
 * which has no name in any file system and is freed when the last process
 * holding it exits. Count the descriptors of such memfds held by processes
 * whose command line contains `marker` (the job's program and arguments:
 * other jobs on the machine, a concurrent test run say, do not count).
 */
static int job_memfds(const char *marker)
{
	DIR *procs = opendir("/proc");
	int n = 0;
	if (!procs)
		return -1;
	for (struct dirent *p; (p = readdir(procs));) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		char dir[300], cmdline[4096];
		snprintf(dir, sizeof(dir), "/proc/%s/cmdline", p->d_name);
		FILE *cf = fopen(dir, "r");
		size_t clen = cf ? fread(cmdline, 1, sizeof(cmdline) - 1, cf) : 0;
		if (cf)
			fclose(cf);
		for (size_t k = 0; k < clen; k++)
			cmdline[k] = cmdline[k] ? cmdline[k] : ' ';
		cmdline[clen] = '\0';
		if (!strstr(cmdline, marker))
			continue;
		snprintf(dir, sizeof(dir), "/proc/%s/fd", p->d_name);
		DIR *fds = opendir(dir);
		if (!fds)
			continue; /* gone, or not ours to see */
		for (struct dirent *f; (f = readdir(fds));) {
			char path[600], target[256];
			snprintf(path, sizeof(path), "%s/%s", dir, f->d_name);
			ssize_t len = readlink(path, target, sizeof(target) - 1);
			if (len <= 0)
				continue;
			target[len] = '\0';
			n += strncmp(target, "/memfd:torus-job", 16) == 0;
		}
		closedir(fds);
	}
	closedir(procs);
	return n;
}

static void check_fault(const char *fault, const char *expect)
{

	struct result r = run("$B/torusrun --torus 4x4 -- $B/torus-stress --packets 100000 --fault %s --fault-rank 5", fault);
	CU_ASSERT_EQUAL(r.status, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "node 5 (1,1)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, expect));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "stopping the job"));
	CU_ASSERT_EQUAL(job_memfds("torus-stress --packets 100000"), 0);
	CU_ASSERT_EQUAL(survivors("torus-stress --packets 100000"), 0);
	if (!strstr(r.err, expect))
		fprintf(stderr, "fault %s:\n%s\n", fault, r.err);
	result_free(&r);
}

static void test_fault_crash(void) { check_fault("crash", "killed by signal 11"); }
static void test_fault_exit_status(void) { check_fault("exit", "exited with status 7"); }
static void test_fault_core_error(void) { check_fault("fail", "exited with status 1"); }

static void test_fault_shell_kills_itself(void)
{
	/* PROGRAM is a plain shell command; node 3 kills itself, the others
	 * would sleep for ten minutes unless torusrun stops them */
	struct result r = run("$B/torusrun --torus 2x2 --report $T/k.json -- sh -c "
			      "'if [ \"$TORUS_RANK\" = 3 ]; then kill -9 $$; fi; exec sleep 600.25'");
	CU_ASSERT_EQUAL(r.status, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "node 3 (1,1) was killed by signal 9"));
	CU_ASSERT_EQUAL(survivors("sleep 600.25"), 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/k.json", tmpdir);
	char *rep = slurp(path);
	CU_ASSERT_PTR_NOT_NULL(strstr(rep, "\"status\": \"failed\""));
	free(rep);
	result_free(&r);
}

static void test_fault_external_kill(void)
{
	/* killed from outside while running: the background job sends SIGKILL to
	 * node 2 once it has started */
	struct result r = run("$B/torusrun --torus 2x2 -- sh -c 'echo $$ > $T/pid.$TORUS_RANK; exec sleep 600.5' & "
			      "for i in $(seq 400); do [ -s $T/pid.2 ] && break; sleep 0.05; done; kill -9 $(cat $T/pid.2); wait $!");
	CU_ASSERT_EQUAL(r.status, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "node 2 (0,1) was killed by signal 9"));
	CU_ASSERT_EQUAL(survivors("sleep 600.5"), 0);
	result_free(&r);
}

static void test_launcher_killed(void)
{
	/* torusrun dies (SIGKILL) while nodes run behind a wrapper script, out of
	 * reach of PR_SET_PDEATHSIG: the nodes notice and leave by themselves
	 * (each loop waits up to 20 s: sanitized builds start and stop slowly
	 * on a busy host; a clean-clone TSan run once found 5 s too short) */
	struct result r = run("$B/torusrun --torus 2x2 --timeout 0 -- sh -c "
			      "'$B/torus-stress --packets 77 --fault hang --fault-rank 1; true' & "
			      "for i in $(seq 400); do [ $(pgrep -fc 'torus-stres[s] --packets 77') -ge 4 ] && break; sleep 0.05; done; "
			      "kill -9 $!; for i in $(seq 400); do pgrep -f 'torus-stres[s] --packets 77' >/dev/null || break; sleep 0.05; done");
	CU_ASSERT_EQUAL(survivors("torus-stress --packets 77"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "torusrun is gone"));
	result_free(&r);
}

static void test_hang_detector(void)
{
	struct result r = run("$B/torusrun --torus 2x2 --timeout 1 -- $B/torus-stress --packets 1000 --fault hang --fault-rank 1");
	CU_ASSERT_EQUAL(r.status, 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "the job is hung"));
	/* the dump names the full FIFOs before stopping */
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "slots used"));
	const char *dump = strstr(r.err, "slots used");
	const char *stop = strstr(r.err, "stopping the job");
	CU_ASSERT(dump && stop && dump < stop);
	result_free(&r);
	/* a plain command that never talks is a hang too */
	r = run("$B/torusrun --torus 2 --timeout 1 -- sh -c 'exec sleep 600.75'");
	CU_ASSERT_EQUAL(r.status, 3);
	CU_ASSERT_EQUAL(survivors("sleep 600.75"), 0);
	result_free(&r);
}

/* A node that exits 0 before the job is done is a failed node at once:
 * the program itself, or a wrapper script that hides its child's death. */
static void test_fault_early_exit(void)
{
	struct result r = run("$B/torusrun --torus 2x2 --timeout 600 -- $B/torus-stress --packets 1000 --fault exit0 "
			      "--fault-rank 2");
	CU_ASSERT_EQUAL(r.status, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "node 2 (0,1) exited with status 0 before the job was done"));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "stopping the job"));
	result_free(&r);
	r = run("$B/torusrun --torus 2x2 --timeout 600 -- sh -c "
		"'$B/torus-stress --packets 1000 --fault crash --fault-rank 1 2>/dev/null; true'");
	CU_ASSERT_EQUAL(r.status, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "node 1 (1,0) exited with status 0 before the job was done"));
	result_free(&r);
	/* a program that never joins the machine */
	r = run("$B/torusrun --torus 2 --timeout 600 -- sh -c 'exit 0'");
	CU_ASSERT_EQUAL(r.status, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "never joined the machine"));
	result_free(&r);
}

/* The hang detector says what it saw: threads asleep (a lost wake-up or a
 * deadlock) or running without moving anything (a livelock). */
static void test_hang_verdicts(void)
{
	struct result r = run("$B/torusrun --torus 2x2 --timeout 1 -- $B/torus-stress --packets 1000 --fault hang "
			      "--fault-rank 1");
	CU_ASSERT_EQUAL(r.status, 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "threads are asleep"));
	CU_ASSERT_PTR_NULL(strstr(r.err, "starved"));
	result_free(&r);
	r = run("$B/torusrun --torus 2x2 --timeout 1 -- $B/torus-stress --packets 1000 --fault spin --fault-rank 3");
	CU_ASSERT_EQUAL(r.status, 3);
	/* (on a host loaded by other programs, the spinning core gets less than
	 * half a CPU: first taken for starvation, then, once it has had its
	 * share, for what it is) */
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "running without moving anything"));
	result_free(&r);
}

/* A node stopped (SIGSTOP, a debugger) holds the job up: the detector
 * names it, and says which core the timekeeper waits for: the stopped
 * node's, or one whose posts wait for room behind it (which of them has
 * the lowest clock depends on how far the job got before the stop). */
static void test_hang_stopped_node(void)
{
	struct result r = run("$B/torusrun --torus 2x2 --timeout 1 -- $B/torus-stress --packets 1000 --fault stop "
			      "--fault-rank 2");
	EXPECT(r.status == 3 && strstr(r.err, "the job is hung: node 2 (pid ") && strstr(r.err, ") is stopped") &&
		       !strstr(r.err, "starved"),
	       "%d\n%.3000s", r.status, r.err);
	const char *w = strstr(r.err, "it waits for core ");
	unsigned core = 99, node = 99;
	EXPECT(w && sscanf(w, "it waits for core %u of node %u,", &core, &node) == 2 && core == 0 && node < 4,
	       "%s", r.err);
	result_free(&r);
}

/* A long job says how far it got, once a second, unless --quiet; the last
 * line gives the simulator's share of the wall time (a job that hangs for
 * --timeout 2 surely lasts past a second). */
static void test_progress_lines(void)
{
	struct result r = run("$B/torusrun --torus 2 --timeout 2 -- $B/torus-stress --fault hang --fault-rank 1");
	EXPECT(r.status == 3 && strstr(r.err, "torusrun: 1 s: emulated time ") && strstr(r.err, " packet hops simulated, simulating ") &&
		       strstr(r.err, "% of it)\n"),
	       "%d\n%.3000s", r.status, r.err);
	result_free(&r);
	r = run("$B/torusrun --torus 2 --timeout 2 --quiet -- $B/torus-stress --fault hang --fault-rank 1");
	EXPECT(r.status == 3 && !strstr(r.err, "torusrun: 1 s:") && !strstr(r.err, "job failed"), "--quiet: %d\n%.3000s",
	       r.status, r.err);
	result_free(&r);
}

/*
 * Starvation is not a hang. The job's nodes run on CPU 0 only, where a
 * real-time busy loop takes 95% of the time for 3 s (the kernel's RT
 * throttling leaves 50 ms of every second to others; a higher-priority
 * timeout ends the loop): nothing moves for most of each second, far past
 * --timeout 0.1. The detector must see the threads waiting for a CPU,
 * say so, and wait; the job then completes.
 */
static void test_starved_not_hung(void)
{
	struct result r = run("taskset -c 0 chrt -f 20 timeout 3 chrt -f 10 sh -c 'while :; do :; done # starve12' & "
			      "sleep 0.2; $B/torusrun --torus 2x2 --timeout 0.1 -- taskset -c 0 $B/torus-stress "
			      "--packets 20000; st=$?; wait; exit $st");
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "runnable and waiting for a CPU"));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "the job moves again"));
	CU_ASSERT_PTR_NULL(strstr(r.err, "the job is hung"));
	if (r.status != 0 || !strstr(r.err, "waiting for a CPU"))
		fprintf(stderr, "starved job gave %d:\n%s\n", r.status, r.err);
	CU_ASSERT_EQUAL(survivors("starve12"), 0);
	result_free(&r);
}

/* --------------------------------------------------------- bad input */

static void check_bad(const char *args, const char *word)
{
	char marker[512];
	snprintf(marker, sizeof(marker), "%s/started", tmpdir);
	unlink(marker);
	struct result r = run("$B/torusrun %s", args);
	CU_ASSERT_EQUAL(r.status, 2);
	CU_ASSERT_EQUAL(count_lines(r.err, NULL), 1);
	CU_ASSERT_EQUAL(strncmp(r.err, "torusrun: ", 10), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, word));
	CU_ASSERT_EQUAL(access(marker, F_OK), -1); /* nothing started */
	if (r.status != 2 || !strstr(r.err, word))
		fprintf(stderr, "bad input '%s' gave %d: %s\n", args, r.status, r.err);
	result_free(&r);
}

#define STARTS "-- sh -c 'touch $T/started'"
static void test_bad_input(void)
{
	check_bad("--torus 0 " STARTS, "size");
	check_bad("--torus -4 " STARTS, "shape");
	check_bad("--torus 4x0x4 " STARTS, "size");
	check_bad("--torus 4xq " STARTS, "shape");
	check_bad("--torus abc " STARTS, "shape");
	check_bad("--torus 2x2x2x2x2x2x2 " STARTS, "dimensions");
	check_bad("--torus 2x2 --cores 0 " STARTS, "cores");
	check_bad("--torus 2x2 --cores -3 " STARTS, "cores");
	check_bad("--torus 2x2 --cores-map 1,2,3 " STARTS, "cores-map");
	check_bad("--torus 2x2 --cores-map 1,2,3,4,5 " STARTS, "cores-map");
	check_bad("--torus 2x2 --cores-map 1,0,1,1 " STARTS, "cores-map");
	check_bad("--torus 2x2 --param nosuch=1 " STARTS, "nosuch");
	check_bad("--torus 2x2 --param link_bw " STARTS, "link_bw");
	check_bad("--torus 2x2 --param link_bw=fast " STARTS, "link_bw");
	check_bad("--torus 2x2 --param fifo_slots=3 " STARTS, "power");
	check_bad("--torus 2x2 --timeout soon " STARTS, "timeout");
	check_bad("--torus 2x2 --frobnicate " STARTS, "frobnicate");
	check_bad("--torus 2x2 -- /nonexistent/program", "/nonexistent/program");
	check_bad("--torus 2x2", "no program");
	check_bad("--cores 2 " STARTS, "torus");
	check_bad("--torus 64x64x16 --cores 64 " STARTS, "threads");
	check_bad("--torus 2x2 --config /nonexistent.cfg " STARTS, "nonexistent.cfg");
}

static void write_tmp(const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* -np N as mpirun takes it: a job of N nodes, run with torus-hello, that
 * finishes on `shape`; `said` is the line -np writes first on stderr when
 * it picks the shape itself, NULL where it must write none */
static void check_np(const char *opts, unsigned n, int cores, const char *shape, const char *said)
{
	char ran[128];
	struct result r = run("$B/torusrun %s -- $B/torus-hello", opts);
	snprintf(ran, sizeof(ran), "job finished: torus %s, %u nodes,", shape, n);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(count_lines(r.out, "greetings at"), (int)n * cores);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, ran));
	CU_ASSERT_EQUAL(count_lines(r.err, "torusrun: -"), said ? 1 : 0);
	int first = !said || (!strncmp(r.err, said, strlen(said)) && r.err[strlen(said)] == '\n');
	CU_ASSERT(first); /* one line, before the job's */
	if (r.status || !strstr(r.err, ran) || !first)
		fprintf(stderr, "torusrun %s: want %s, got %d:\n%s\n", opts, shape, r.status, r.err);
	result_free(&r);
}

/* Without a torus, -np picks the most cubic shape of N nodes in at most 3
 * dimensions, as MPI_Dims_create(N, 3), and names it */
static void test_np_picks_shape(void)
{
	check_np("-np 12", 12, 1, "3x2x2", "torusrun: -np 12: torus 3x2x2");
	check_np("-np 1", 1, 1, "1", "torusrun: -np 1: torus 1");
	check_np("-np 7", 7, 1, "7", "torusrun: -np 7: torus 7");
	check_np("-np 6", 6, 1, "3x2", "torusrun: -np 6: torus 3x2");
	check_np("-np 8", 8, 1, "2x2x2", "torusrun: -np 8: torus 2x2x2");
	check_np("-np 16", 16, 1, "4x2x2", "torusrun: -np 16: torus 4x2x2");
	check_np("-np 64", 64, 1, "4x4x4", "torusrun: -np 64: torus 4x4x4");
	/* -np counts nodes, not cores */
	check_np("-np 9 --cores 2", 9, 2, "3x3", "torusrun: -np 9: torus 3x3");
	/* the last of a repeated -np wins; --quiet: no line of -np's own */
	struct result r = run("$B/torusrun -np 4 -np 12 --quiet -- $B/torus-hello");
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(count_lines(r.out, "greetings at"), 12);
	CU_ASSERT_EQUAL(r.err[0], '\0');
	result_free(&r);
}

/* mpirun's other spellings, -n N and --np N, named as given */
static void test_np_spellings(void)
{
	check_np("-n 16", 16, 1, "4x2x2", "torusrun: -n 16: torus 4x2x2");
	check_np("--np 5", 5, 1, "5", "torusrun: --np 5: torus 5");
	struct result r = run("$B/torusrun --help");
	CU_ASSERT(r.status == 0 && strstr(r.out, "-np N, -n N, --np N") && strstr(r.out, "torusrun -np N [options]"));
	result_free(&r);
}

/* -np with a torus (--torus, or a config file's) of as many nodes runs on
 * that shape, with no line of -np's own */
static void test_np_with_torus(void)
{
	check_np("-np 8 --torus 2x2x2", 8, 1, "2x2x2", NULL);
	check_np("--torus 4x2 -np 8", 8, 1, "4x2", NULL);
	write_tmp("np8.cfg", "torus = 2x4\n");
	check_np("--config $T/np8.cfg -np 8", 8, 1, "2x4", NULL);
}

/* -np: a count of 1..65536 nodes that some torus has, and agreeing with
 * the torus given; else one line and exit 2, before anything starts */
static void test_np_bad(void)
{
	static const struct {
		const char *args, *says;
	} bad[] = {
		{"-np 8 --torus 4x4 " STARTS, "-np 8 but --torus 4x4 has 16 nodes"},
		{"--torus 4x4 -n 8 " STARTS, "-n 8 but --torus 4x4 has 16 nodes"},
		{"--config $T/np16.cfg -np 8 " STARTS, "np16.cfg:1: torus 4x4 has 16 nodes"},
		{"-np 0 " STARTS, "bad -np '0': the number of nodes, 1..65536"},
		{"-np -3 " STARTS, "bad -np '-3'"},
		{"-np abc " STARTS, "bad -np 'abc'"},
		{"-np 2.5 " STARTS, "bad -np '2.5'"},
		{"--np 65537 " STARTS, "bad --np '65537'"},
		{"-np " STARTS, "option -np needs a value"},
		{"-np", "option -np needs a value"},
		{"-np 4099 " STARTS, "no torus has 4099 nodes"}, /* a prime above the largest size */
		{"-np 8 --cores-map 1,1,1 " STARTS, "3 entries for 8 nodes"},
	};
	write_tmp("np16.cfg", "torus = 4x4\n");
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		check_bad(bad[k].args, bad[k].says);
}

/* Issue 12: paths and files that only failed once the job ran (or never). */
static void test_bad_input_issue12(void)
{
	/* PROGRAM: an executable regular file */
	check_bad("--torus 2 -- /tmp", "directory");
	check_bad("--torus 2 -- ''", "empty name");
	/* outputs: checked before anything starts */
	check_bad("--torus 2 --trace /nonexistent/t " STARTS, "/nonexistent/t");
	check_bad("--torus 2 --trace $T " STARTS, "directory");
	check_bad("--torus 2 --trace /dev/full " STARTS, "/dev/full");
	check_bad("--torus 2 --report /nonexistent/r.json " STARTS, "/nonexistent/r.json");
	check_bad("--torus 2 --report '' " STARTS, "--report");
	write_tmp("empty-report.cfg", "torus = 2\nreport =\n");
	check_bad("--config $T/empty-report.cfg " STARTS, "empty-report.cfg:2");
	/* config files: whole lines, regular files, one value per key */
	char comment[1100];
	snprintf(comment, sizeof(comment), "#%1022storus = 8\n", "");
	write_tmp("long-comment.cfg", comment);
	check_bad("--config $T/long-comment.cfg " STARTS, "no torus shape");
	check_bad("--torus 2 --config $T " STARTS, "directory");
	check_bad("--torus 2 --config /dev/zero " STARTS, "/dev/zero");
	write_tmp("twice.cfg", "torus = 2\ncores = 1\ntorus = 8\n");
	check_bad("--config $T/twice.cfg " STARTS, "lines 1 and 3");
	/* numbers: decimal, no overflow, units in their case */
	check_bad("--torus 2 --trace $T/t.trace --trace-buffer 18014398509482048K " STARTS, "trace-buffer");
	check_bad("--torus 2 --param fifo_slots=0x10 " STARTS, "fifo_slots");
	check_bad("--torus 2 --param hop_latency=50NS " STARTS, "hop_latency");
	check_bad("--torus 2 --timeout 0x10 " STARTS, "timeout");
	/* a slot count that is not a power of two names itself, in a config
	 * file with the file and line */
	check_bad("--torus 2 --param rx_slots=100 " STARTS, "rx_slots: 100 is not a power of two");
	write_tmp("slots.cfg", "torus = 2\nfifo_slots = 3\n");
	check_bad("--config $T/slots.cfg " STARTS, "slots.cfg:2: parameter fifo_slots: 3 is not a power of two");
	/* too large for the host: the hint names the parameter that makes it
	 * large (rx_slots here, not fifo_slots), with a value that fits */
	check_bad("--torus 16x16x16 --cores 4 --param rx_slots=65536 " STARTS, "--param rx_slots=");
	struct result r = run("$B/torusrun --torus 16x16x16 --cores 4 --param rx_slots=65536 " STARTS);
	CU_ASSERT(r.status == 2 && strstr(r.err, "(now 65536) would fit") && !strstr(r.err, "fifo_slots"));
	result_free(&r);
	/* too large for the address space each process may map (ulimit -v):
	 * refused up front, not at mmap (in the plain build only: a sanitizer
	 * reserves terabytes of shadow address space, and no sanitized
	 * program starts under such a limit) */
	if (!getenv("TORUS_TEST_SANITIZED")) {
		r = run("(ulimit -v 1048576; $B/torusrun --torus 4x4x4 --param fifo_slots=8192 " STARTS ")");
		CU_ASSERT(r.status == 2 && strstr(r.err, "its address space is limited") && strstr(r.err, "(ulimit -v)"));
		result_free(&r);
	}
}

/* Outputs that are FIFOs: one nobody reads is refused at once, not waited
 * on for ever; a trace, written at offsets, refuses any FIFO. */
static void test_fifo_outputs(void)
{
	struct result r = run("rm -f $T/f && mkfifo $T/f && timeout 60 $B/torusrun --quiet --torus 2 --trace $T/f "
			      "-- $B/torus-hello");
	CU_ASSERT(r.status == 2 && strstr(r.err, "cannot write trace") && strstr(r.err, "a FIFO that no process reads"));
	result_free(&r);
	r = run("rm -f $T/f && mkfifo $T/f && (cat $T/f >/dev/null &) && sleep 0.2 && timeout 60 $B/torusrun --quiet "
		"--torus 2 --trace $T/f -- $B/torus-hello");
	CU_ASSERT(r.status == 2 && strstr(r.err, "a trace is written at offsets"));
	result_free(&r);
	r = run("rm -f $T/f && mkfifo $T/f && timeout 60 $B/torusrun --quiet --torus 2 --report $T/f -- $B/torus-hello");
	CU_ASSERT(r.status != 0 && r.status != 124 && strstr(r.err, "cannot write report") &&
		  strstr(r.err, "a FIFO that no process reads"));
	result_free(&r);
	/* a reader gets the report */
	r = run("rm -f $T/f && mkfifo $T/f && (cat $T/f > $T/f.out &) && sleep 0.2 && timeout 60 $B/torusrun --quiet "
		"--torus 2 --report $T/f -- $B/torus-hello && sleep 0.2 && cat $T/f.out");
	CU_ASSERT(r.status == 0 && strstr(r.out, "\"links\""));
	result_free(&r);
}

static void test_config_file(void)
{
	struct result r = run("printf 'torus = 2x3  # six nodes\\ncores = 2\\nhop_latency = 1us\\n' > $T/job.cfg && "
			      "$B/torusrun --config $T/job.cfg --report $T/c.json -- $B/torus-hello");
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(count_lines(r.out, "greetings at"), 12);
	char path[512];
	snprintf(path, sizeof(path), "%s/c.json", tmpdir);
	char *rep = slurp(path);
	CU_ASSERT_EQUAL(json_u64(rep, "hop_latency_ps"), 1000000);
	CU_ASSERT_PTR_NOT_NULL(strstr(rep, "\"torus\": \"2x3\""));
	free(rep);
	result_free(&r);
}

/* emu_node_join / emu_node_leave: main() as core 0 (the MPI front end's way
 * in), helpers on the other cores, a failing node's status, and a program
 * not started by torusrun */
static void test_node_join(void)
{
	struct result r = run("$B/torusrun --torus 2x2 --cores 3 -- $B/job-join");
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(count_lines(r.out, "(core 0 is main) heard node"), 4);
	CU_ASSERT_EQUAL(count_lines(r.out, "left with its 2 helper cores done"), 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "node 0 (core 0 is main) heard node 3"));
	if (r.status)
		fprintf(stderr, "join:\n%s%s\n", r.out, r.err);
	result_free(&r);
	r = run("$B/torusrun --torus 4 --cores-map 1,2,1,3 -- $B/job-join --fail 2");
	CU_ASSERT_EQUAL(r.status, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "node 2 core 0 failed with status 3"));
	result_free(&r);
	r = run("$B/job-join");
	CU_ASSERT_EQUAL(r.status, 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "not started by torusrun"));
	result_free(&r);
}

/* --------------------------------------------------------- per-link settings */

/* torus-pingpong's rows (size, latency): the lines after its header. */
static int pingpong_rows(const char *out, double *lat, int max)
{
	int n = 0;
	for (const char *l = out; l && *l && n < max; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned long long size;
		double us;
		if (*l != '#' && sscanf(l, "%llu %lf", &size, &us) == 2)
			lat[n++] = us;
	}
	return n;
}

/*
 * torusrun --link: a link direction with its own bandwidth and hop latency.
 * Untouched by contention (torus-pingpong between neighbours 0 and 1 of a
 * ring of 4: node 0's x+ one way, node 1's x- back), times are exact:
 *  - both links set (one from the command line, one from a config file,
 *    in torus-trace's x- order) give what the same global parameters give;
 *  - a link off the path changes nothing;
 *  - one direction slowed: each one-way latency is the mean of the two;
 * and the summary, the report and the trace say which links are different.
 */
static void test_per_link(void)
{
	const char *pp = "-- $B/torus-pingpong --sizes 1:64K --iters 2";
	struct result d = run("$B/torusrun --torus 4 --quiet %s", pp);
	struct result a = run("$B/torusrun --torus 4 --quiet --param link_bw=100MB/s --param hop_latency=1us %s", pp);
	struct result b = run("printf 'torus = 4\nlink = 1:x-:link_bw=100MB/s,hop_latency=1us\n' > $T/link.cfg && "
			      "$B/torusrun --config $T/link.cfg --link 0:+x:link_bw=100MB/s --link 0:+x:hop_latency=1us "
			      "--report $T/link.json --trace $T/link.trc %s && $B/torus-trace $T/link.trc",
			      pp);
	struct result c = run("$B/torusrun --torus 4 --quiet --link 2:+x:link_bw=100MB/s,hop_latency=1us %s", pp);
	struct result e = run("$B/torusrun --torus 4 --quiet --link 0:+x:link_bw=100MB/s,hop_latency=1us %s", pp);
	CU_ASSERT(d.status == 0 && a.status == 0 && b.status == 0 && c.status == 0 && e.status == 0);
	double ld[32], la[32], lb[32], lc[32], le[32];
	int n = pingpong_rows(d.out, ld, 32);
	CU_ASSERT_EQUAL(n, 17);
	CU_ASSERT_EQUAL(pingpong_rows(a.out, la, 32), n);
	CU_ASSERT_EQUAL(pingpong_rows(b.out, lb, 32), n);
	CU_ASSERT_EQUAL(pingpong_rows(c.out, lc, 32), n);
	CU_ASSERT_EQUAL(pingpong_rows(e.out, le, 32), n);
	for (int i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(lb[i], la[i]); /* both links: as the global parameters */
		CU_ASSERT_EQUAL(lc[i], ld[i]); /* off the path: nothing */
		CU_ASSERT(la[i] > ld[i]);
		/* one way slow, one way not (printed to 1 ns) */
		CU_ASSERT(fabs(le[i] - (la[i] + ld[i]) / 2) <= 0.0015);
	}
	/* the summary names them */
	CU_ASSERT_PTR_NOT_NULL(strstr(b.err, "link of node 0 (0) +x: link_bw 100.000 MB/s, hop_latency 1000.000 ns"));
	CU_ASSERT_PTR_NOT_NULL(strstr(b.err, "link of node 1 (1) -x: link_bw 100.000 MB/s"));
	/* coordinates as everywhere else in torusrun's messages: (x,y) */
	struct result g = run("$B/torusrun --torus 2x2 --link 1.1:+y:link_bw=100MB/s -- $B/torus-hello");
	CU_ASSERT(g.status == 0 && strstr(g.err, "link of node 3 (1,1) +y: link_bw 100.000 MB/s"));
	result_free(&g);
	/* the report gives every link's settings and marks these two */
	char path[512];
	snprintf(path, sizeof(path), "%s/link.json", tmpdir);
	char *rep = slurp(path);
	CU_ASSERT_EQUAL(count_lines(rep, "\"own_settings\": true"), 2);
	CU_ASSERT_EQUAL(count_lines(rep, "\"link_bw\": 100000000, \"hop_latency_ps\": 1000000, \"own_settings\": true"), 2);
	CU_ASSERT_EQUAL(count_lines(rep, "\"link_bw\": 425000000, \"hop_latency_ps\": 50000, \"own_settings\": false"), 6);
	free(rep);
	/* and so does the trace, which checks every record against its link */
	CU_ASSERT_EQUAL(count_lines(b.out, "link of its own: node "), 2);
	CU_ASSERT_EQUAL(count_lines(b.out, "(its own link_bw/hop_latency)"), 2);
	if (b.status)
		fprintf(stderr, "per-link:\n%s%s\n", b.out, b.err);
	result_free(&a);
	result_free(&b);
	result_free(&c);
	result_free(&d);
	result_free(&e);
	/* bad settings: one line each, exit 2 */
	static const char *const bad[][2] = {
		{"--torus 4 --link 4:+x:link_bw=1MB/s", "node 4 out of range"},
		{"--torus 4x1 --link 0:+y:link_bw=1MB/s", "dimension 1 has size 1"},
		{"--torus 4 --link 0:+q:link_bw=1MB/s", "bad link direction"},
		{"--torus 4 --link 0:+x:fifo_slots=2", "a link takes link_bw and hop_latency"},
		{"--torus 4 --link 0:+x:link_bw=1", "link_bw"},
		{"--torus 4 --link 0:+x", "expected NODE:DIR:NAME=VALUE"},
		{"--torus 4x4 --link 1.2.3:+x:link_bw=1MB/s", "has 3 coordinates"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct result r = run("$B/torusrun %s -- $B/torus-hello", bad[i][0]);
		CU_ASSERT_EQUAL(r.status, 2);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.err, bad[i][1]));
		CU_ASSERT_EQUAL(count_lines(r.err, NULL), 1);
		if (!strstr(r.err, bad[i][1]))
			fprintf(stderr, "%s: %s\n", bad[i][0], r.err);
		result_free(&r);
	}
	struct result r = run("printf 'torus = 4\nlink = 9:+x:link_bw=1MB/s\n' > $T/badlink.cfg && "
			      "$B/torusrun --config $T/badlink.cfg -- $B/torus-hello");
	CU_ASSERT_EQUAL(r.status, 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "badlink.cfg:2: node 9 out of range"));
	result_free(&r);
}

/* ------------------------------------------------------------ report */

static void test_report_schema(void)
{
	struct result r = run("$B/torusrun --torus 2x2x1 --cores 2 --report $T/r.json -- $B/torus-hello");
	CU_ASSERT_EQUAL(r.status, 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/r.json", tmpdir);
	char *rep = slurp(path);
	CU_ASSERT_PTR_NOT_NULL(strstr(rep, "\"schema\": \"torusrun-report/1\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(rep, "\"status\": \"ok\""));
	CU_ASSERT_EQUAL(json_u64(rep, "nodes"), 4);
	CU_ASSERT_EQUAL(json_u64(rep, "total_cores"), 8);
	uint64_t vt = json_u64(rep, "emulated_time_ps");
	CU_ASSERT(vt > 0 && vt != UINT64_MAX);
	/* 2 dimensions with links x 2 directions x 4 nodes; none for the size-1 one */
	char *links = section(rep, "\"links\"");
	CU_ASSERT_EQUAL(count_lines(links, "\"from\""), 16);
	/* totals are the sums of the per-link counters */
	char *tot = strstr(rep, "\"totals\"");
	CU_ASSERT_EQUAL(json_u64(tot, "packets"), json_sum(links, "packets"));
	CU_ASSERT_EQUAL(json_u64(tot, "wire_bytes"), json_sum(links, "wire_bytes"));
	CU_ASSERT_EQUAL(json_u64(tot, "payload_bytes"), json_sum(links, "payload_bytes"));
	/* hello: 8 cores x (4 neighbours + far) greetings; all deposited */
	CU_ASSERT_EQUAL(json_sum(strstr(rep, "\"node_list\""), "delivered"), 8 * 7);
	free(links);
	free(rep);
	result_free(&r);
}

static void test_programs_help_and_misuse(void)
{
	const char *progs[] = {"torusrun", "torus-hello", "torus-stress"};
	for (size_t i = 0; i < 3; i++) {
		struct result r = run("$B/%s --help", progs[i]);
		CU_ASSERT_EQUAL(r.status, 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "usage"));
		result_free(&r);
	}
	/* a job program started without torusrun says so */
	struct result r = run("$B/torus-hello");
	CU_ASSERT_EQUAL(r.status, 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "not started by torusrun"));
	result_free(&r);
	r = run("$B/torusrun --torus 2 -- $B/torus-stress --packets 0");
	CU_ASSERT_EQUAL(r.status, 1); /* nodes exit 2 on bad arguments: a failed job */
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--packets"));
	result_free(&r);
}

/* ------------------------------------------------------------ large */

static void test_large_stress(void)
{
	check_stress("8x8x8", 1, NULL, 1, "--timeout 300");
	check_stress("16", 1, NULL, 64, NULL);
	check_stress("4x4x4x4", 2, NULL, 1, "--timeout 300");
	check_stress("3x3x3x3x3x3", 1, NULL, 1, "--timeout 300");
}

int main(int argc, char **argv)
{
	if (job_util_init())
		return 2;
	static const struct cunit_case hello[] = {
		CUNIT_CASE(test_hello_4x4x4_cores4), CUNIT_CASE(test_hello_shapes),
		CUNIT_CASE(test_programs_help_and_misuse), CUNIT_CASE(test_report_schema),
		CUNIT_CASE(test_config_file), CUNIT_CASE(test_per_link), CUNIT_CASE(test_node_join),
		CUNIT_CASE(test_np_picks_shape), CUNIT_CASE(test_np_spellings), CUNIT_CASE(test_np_with_torus)};
	static const struct cunit_case stress[] = {
		CUNIT_CASE(test_stress_rings), CUNIT_CASE(test_stress_2d_3d), CUNIT_CASE(test_stress_4x4x4_cores4),
		CUNIT_CASE(test_stress_5d_6d), CUNIT_CASE(test_stress_uneven_cores), CUNIT_CASE(test_stress_fixed_sizes)};
	static const struct cunit_case timing[] = {CUNIT_CASE(test_time_model_exact), CUNIT_CASE(test_deterministic),
						   CUNIT_CASE(test_chaos_moves_nothing)};
	static const struct cunit_case faults[] = {
		CUNIT_CASE(test_fault_crash), CUNIT_CASE(test_fault_exit_status), CUNIT_CASE(test_fault_core_error),
		CUNIT_CASE(test_fault_shell_kills_itself), CUNIT_CASE(test_fault_external_kill),
		CUNIT_CASE(test_hang_detector), CUNIT_CASE(test_fault_early_exit), CUNIT_CASE(test_hang_verdicts),
		CUNIT_CASE(test_hang_stopped_node), CUNIT_CASE(test_progress_lines),
		CUNIT_CASE(test_starved_not_hung), CUNIT_CASE(test_launcher_killed), CUNIT_CASE(test_bad_input),
		CUNIT_CASE(test_bad_input_issue12), CUNIT_CASE(test_np_bad), CUNIT_CASE(test_fifo_outputs)};
	static const struct cunit_case large[] = {CUNIT_CASE(test_large_stress)};
	static const struct cunit_suite all[] = {
		{"job.hello", hello, CUNIT_COUNT(hello)},
		{"job.stress", stress, CUNIT_COUNT(stress)},
		{"job.time", timing, CUNIT_COUNT(timing)},
		{"job.faults", faults, CUNIT_COUNT(faults)}};
	static const struct cunit_suite big[] = {{"job.large", large, CUNIT_COUNT(large)}};
	int rc = argc > 1 && !strcmp(argv[1], "--large") ? cunit_main(big, 1) : cunit_main(all, CUNIT_COUNT(all));
	job_util_cleanup();
	return rc;
}
