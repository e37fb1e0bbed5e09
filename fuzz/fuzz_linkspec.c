/*
 * torus-trace --packets LINKSPEC (tt_linkspec_parse, tt_linkspec_link in
 * apps/trace/trace_load.c). The input's first byte picks a torus, the rest
 * is the spec (cut at the first NUL).
 *
 * Invariants (abort() when one breaks):
 *  - parsing gives 0 or -1; on 0 the spec is "all", or a node at most
 *    2^32 - 1, a dimension 0..5 and a direction 0 or 1, and printing it back
 *    as NODE:LINK gives the spec again (leading zeros aside);
 *  - resolving gives UINT32_MAX for "all", else a link-direction id below
 *    the torus's count whose link exists and decodes to the spec's node,
 *    dimension and direction; or -1 with a one-line message.
 */
#include "trace_tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "fuzz-linkspec: invariant broken at line %d: %s\n", __LINE__, #x); \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const shapes[] = {"2x2", "8", "4x1x3", "2x2x2x2x2x2", "3x5x7", "1x1"};
	char spec[64];
	if (size == 0)
		return 0;
	size_t n = size - 1 < sizeof(spec) - 1 ? size - 1 : sizeof(spec) - 1;
	memcpy(spec, data + 1, n);
	spec[n] = '\0';
	struct tt_trace t;
	memset(&t, 0, sizeof(t));
	char err[256] = "";
	CHECK(torus_shape_parse(shapes[data[0] % 6], &t.shape, err, sizeof(err)) == 0);
	t.nlinks = t.shape.nnodes * t.shape.ndims * 2;

	struct tt_linkspec ls;
	int rc = tt_linkspec_parse(spec, &ls);
	CHECK(rc == 0 || rc == -1);
	if (rc)
		return 0;
	if (ls.all) {
		CHECK(!strcmp(spec, "all"));
	} else {
		CHECK(ls.node <= UINT32_MAX && ls.dim < 6 && ls.dir <= 1);
		char back[64];
		snprintf(back, sizeof(back), ":%s%c", tt_dim_name(ls.dim), ls.dir ? '-' : '+');
		CHECK(strlen(spec) >= strlen(back) && !strcmp(spec + strlen(spec) - strlen(back), back));
		CHECK(strtoull(spec, NULL, 10) == ls.node);
	}
	uint32_t id = 0;
	rc = tt_linkspec_link(&t, &ls, &id, err, sizeof(err));
	CHECK(rc == 0 || rc == -1);
	if (rc) {
		CHECK(err[0] && !strchr(err, '\n'));
		return 0;
	}
	if (ls.all) {
		CHECK(id == UINT32_MAX);
		return 0;
	}
	uint32_t node, dim, dir;
	CHECK(id < t.nlinks && tt_link_exists(&t, id));
	tt_link_of(&t, id, &node, &dim, &dir);
	CHECK(node == ls.node && dim == ls.dim && dir == ls.dir);
	return 0;
}
