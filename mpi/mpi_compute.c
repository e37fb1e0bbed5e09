/*
 * A rank's own computation in emulated time (torusrun --compute-speed,
 * --compute-cpi): every MPI call first charges the rank's clock for what
 * the program did since the last one returned.
 *
 *   speed:F       the main thread's CPU time (CLOCK_THREAD_CPUTIME_ID)
 *                 divided by F: F = 1 is a core as fast as the host's, 0.25
 *                 one four times slower. Measured time does not repeat to
 *                 the picosecond: neither do the emulated times then.
 *   cpi:C:HZ      instructions the main thread retired (the hardware
 *                 counter, perf_event_open), times C cycles each, at HZ:
 *                 the same program gives the same count, so this repeats
 *                 (to the host's counter).
 *
 * torusrun passes the choice in TORUS_MPI_COMPUTE; without it computation
 * is free (the default, for pure network studies), and emu_core_compute
 * still charges modelled work. Only the outermost MPI call charges (the
 * library's calls to itself do not), and the library's own time inside a
 * call is never charged.
 */
#include "mpi_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int mpi_compute_mode; /* 0 free, 1 speed, 2 cpi */

static struct {
	int depth;      /* in an MPI call */
	int have_last;
	uint64_t last;  /* ns of CPU time, or instructions, when the last call returned */
	double ps_per;  /* emulated ps per ns or per instruction */
	int fd;         /* the instruction counter (cpi) */
} cm = {.fd = -1};

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t reading(void)
{
	if (mpi_compute_mode == 1)
		return cpu_ns();
	uint64_t n = 0;
	if (read(cm.fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
		return cm.last; /* (a failed read charges nothing) */
	return n;
}

int mpi_compute_init(char *why, size_t len)
{
	const char *e = getenv("TORUS_MPI_COMPUTE");
	if (!e || !*e || !strcmp(e, "free"))
		return 0;
	char *end = NULL;
	if (!strncmp(e, "speed:", 6)) {
		double f = strtod(e + 6, &end);
		if (end == e + 6 || *end || !(f >= 1e-6 && f <= 1e6)) {
			snprintf(why, len, "TORUS_MPI_COMPUTE=%s: speed:F with F from 1e-6 to 1e6", e);
			return -EINVAL;
		}
		mpi_compute_mode = 1;
		cm.ps_per = 1000.0 / f;
	} else if (!strncmp(e, "cpi:", 4)) {
		double c = strtod(e + 4, &end);
		unsigned long long hz = 0;
		if (end == e + 4 || *end != ':' || !(c > 0 && c <= 1e6) || sscanf(end + 1, "%llu", &hz) != 1 || !hz) {
			snprintf(why, len, "TORUS_MPI_COMPUTE=%s: cpi:C:HZ", e);
			return -EINVAL;
		}
		int fd = emu_instr_counter_open(why, len);
		if (fd < 0)
			return fd;
		cm.fd = fd;
		mpi_compute_mode = 2;
		cm.ps_per = c * 1e12 / (double)hz;
	} else {
		snprintf(why, len, "TORUS_MPI_COMPUTE=%s: free, speed:F or cpi:C:HZ", e);
		return -EINVAL;
	}
	cm.last = reading();
	cm.have_last = 1;
	return 0;
}

struct mpi_api mpi_api_charge(void)
{
	if (cm.depth || mpi_g.state != 1)
		return (struct mpi_api){0};
	cm.depth = 1;
	uint64_t now = reading();
	if (cm.have_last && now > cm.last)
		emu_core_compute(mpi_g.c, (torus_vt_t)((double)(now - cm.last) * cm.ps_per + 0.5));
	return (struct mpi_api){1};
}

void mpi_api_stamp(void)
{
	cm.depth = 0;
	if (mpi_g.state == 1) {
		cm.last = reading();
		cm.have_last = 1;
	}
}
