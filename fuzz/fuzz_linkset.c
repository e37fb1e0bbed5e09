/*
 * torusrun --link NODE:DIR:SET (torus_link_set_parse, torus/params.c). The
 * input's first byte picks a torus, the rest is the setting (cut at the
 * first NUL).
 *
 * Invariants (abort() when one breaks):
 *  - parsing gives 0 or -EINVAL, with a one-line message on -EINVAL, and
 *    leaves *out alone then;
 *  - on 0: the node is on the torus, the link index names a dimension that
 *    has links, at least one of link_bw (1 kB/s .. 1 TB/s) and hop_latency
 *    (at most 1 s) is set, and printing the setting back (rank, +D/-D,
 *    values in B/s and ps) parses to the same setting;
 *  - torus_link_params changes exactly the fields set.
 */
#include "torus/machine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "fuzz-linkset: invariant broken at line %d: %s\n", __LINE__, #x); \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const shapes[] = {"2x2", "8", "4x1x3", "2x2x2x2x2x2", "3x5x7", "1x1"};
	char spec[256];
	if (size == 0)
		return 0;
	size_t n = size - 1 < sizeof(spec) - 1 ? size - 1 : sizeof(spec) - 1;
	memcpy(spec, data + 1, n);
	spec[n] = '\0';
	struct torus_shape s;
	char err[256] = "";
	CHECK(torus_shape_parse(shapes[data[0] % 6], &s, err, sizeof(err)) == 0);

	struct torus_link_set ls, was;
	memset(&ls, 0x5a, sizeof(ls));
	was = ls;
	int rc = torus_link_set_parse(&s, spec, &ls, err, sizeof(err));
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc) {
		CHECK(err[0] && !strchr(err, '\n') && !memcmp(&ls, &was, sizeof(ls)));
		return 0;
	}
	CHECK(ls.node < s.nnodes && ls.link < 2 * s.ndims && torus_dim_has_links(&s, ls.link >> 1));
	CHECK(ls.link_bw || ls.hop_latency_ps != UINT64_MAX);
	CHECK(!ls.link_bw || (ls.link_bw >= 1000 && ls.link_bw <= 1000000000000ull));
	CHECK(ls.hop_latency_ps == UINT64_MAX || ls.hop_latency_ps <= 1000000000000ull);

	char back[160];
	int w = snprintf(back, sizeof(back), "%u:%c%u:", ls.node, ls.link & 1 ? '-' : '+', ls.link >> 1);
	if (ls.link_bw)
		w += snprintf(back + w, sizeof(back) - (size_t)w, "link_bw=%lluB/s", (unsigned long long)ls.link_bw);
	if (ls.hop_latency_ps != UINT64_MAX)
		snprintf(back + w, sizeof(back) - (size_t)w, "%shop_latency=%llups", ls.link_bw ? "," : "",
			 (unsigned long long)ls.hop_latency_ps);
	struct torus_link_set again;
	CHECK(torus_link_set_parse(&s, back, &again, err, sizeof(err)) == 0);
	CHECK(!memcmp(&again, &ls, sizeof(ls)));

	struct torus_params p, q;
	torus_params_default(&p);
	torus_link_params(&p, &ls, &q);
	CHECK(q.link_bw == (ls.link_bw ? ls.link_bw : p.link_bw));
	CHECK(q.hop_latency_ps == (ls.hop_latency_ps != UINT64_MAX ? ls.hop_latency_ps : p.hop_latency_ps));
	q.link_bw = p.link_bw;
	q.hop_latency_ps = p.hop_latency_ps;
	CHECK(!memcmp(&p, &q, sizeof(p)));
	return 0;
}
