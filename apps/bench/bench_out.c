/*
 * torus-bench's output: the header and a row per size, as a table or as
 * one JSON document.
 */
#include "bench.h"

#include <string.h>

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

void print_header(emu_core_t *c, uint32_t k, const char *algo, int deflt, const char *shape)
{
	const char *op = opt.kind == COLL_ALLGATHER ? "none" : coll_op_name(opt.op);
	if (opt.json) {
		printf("{\"schema\": \"torus-bench/1\", \"collective\": \"%s\", \"algo\": ", coll_kind_name(opt.kind));
		json_string(stdout, algo);
		printf(", \"torus\": \"%s\", \"nodes\": %u, \"cores_per_node\": %u, \"dtype\": \"%s\", \"op\": \"%s\", "
		       "\"compute_delay_ns\": %llu, \"warmup\": %u, \"reps\": %u, \"rows\": [",
		       shape, emu_node_count(c), k, coll_dtype_name(opt.dtype), op, (unsigned long long)opt.delay_ns,
		       opt.warmup, opt.reps);
		return;
	}
	printf("# torus-bench %s: algo %s%s, torus %s, %u nodes, %u core%s per node, dtype %s, op %s, "
	       "compute delay %llu ns/KiB",
	       coll_kind_name(opt.kind), algo, deflt ? " (default)" : "", shape, emu_node_count(c), k, k == 1 ? "" : "s",
	       coll_dtype_name(opt.dtype), op, (unsigned long long)opt.delay_ns);
	if (opt.warmup || opt.reps > 1)
		printf(", %u warm-up + %u timed call%s per size (medians)", opt.warmup, opt.reps, opt.reps == 1 ? "" : "s");
	printf("\n");
	printf("# %12s %14s %12s %8s %10s %14s %14s %6s", "bytes", "emulated_us", "bound_us", "ratio", "wall_s",
	       "link_max_B", "link_min_B", "check");
	if (opt.kind == COLL_ALLTOALL)
		printf(" %12s %12s  %s", "link_bnd_us", "round_bnd_us", "algo");
	if (opt.kind == COLL_ALLTOALLV)
		printf(" %12s %12s %12s  (pattern %s, seed %llu; per stage: most start-ups, longest message)",
		       "startups", "longest_B", "extra_B", v_pattern_names[opt.pattern], (unsigned long long)opt.seed);
	printf("\n");
	fflush(stdout);
}

void print_row(const struct row *r, unsigned i)
{
	if (opt.json) {
		printf("%s\n  {\"bytes\": %llu, \"count\": %llu, \"emulated_ps\": %llu, \"lower_bound_ps\": %.3f, "
		       "\"ratio\": %.6f, \"wall_s\": %.6f, \"link_max_bytes\": %lld, \"link_min_bytes\": %lld, "
		       "\"checked\": %s",
		       i ? "," : "", (unsigned long long)r->bytes, (unsigned long long)r->count,
		       (unsigned long long)r->emulated_ps, r->bound_ps, r->ratio, r->wall_s, (long long)r->link_max,
		       (long long)r->link_min, opt.check ? "true" : "false");
		if (opt.kind == COLL_ALLTOALL) {
			printf(", \"link_bound_ps\": %.3f, \"round_bound_ps\": %.3f, \"algo\": ", r->link_ps, r->round_ps);
			json_string(stdout, r->algo ? r->algo : "");
		}
		if (opt.kind == COLL_ALLTOALLV) {
			printf(", \"pattern\": \"%s\", \"seed\": %llu, \"startups\": [", v_pattern_names[opt.pattern],
			       (unsigned long long)opt.seed);
			for (uint32_t g = 0; g < r->vst.stages && g < COLL_V_MAX_STAGES; g++)
				printf("%s%llu", g ? ", " : "", (unsigned long long)r->vst.startups[g]);
			printf("], \"longest\": [");
			for (uint32_t g = 0; g < r->vst.stages && g < COLL_V_MAX_STAGES; g++)
				printf("%s%llu", g ? ", " : "", (unsigned long long)r->vst.longest[g]);
			printf("], \"extra_bytes\": %llu", (unsigned long long)r->vst.extra_bytes);
			if (r->vst.ran[0])
				printf(", \"ran\": \"%s\"", r->vst.ran);
		}
		printf("}");
		return;
	}
	printf("  %12llu %14.3f %12.3f %8.3f %10.4f %14lld %14lld %6s", (unsigned long long)r->bytes,
	       r->emulated_ps / 1e6, r->bound_ps / 1e6, r->ratio, r->wall_s, (long long)r->link_max,
	       (long long)r->link_min, opt.check ? "ok" : "off");
	if (opt.kind == COLL_ALLTOALL)
		printf(" %12.3f %12.3f  %s", r->link_ps / 1e6, r->round_ps / 1e6, r->algo ? r->algo : "");
	if (opt.kind == COLL_ALLTOALLV) {
		char su[96] = "", lo[96] = "";
		for (uint32_t g = 0; g < r->vst.stages && g < COLL_V_MAX_STAGES; g++) {
			size_t a = strlen(su), b = strlen(lo);
			snprintf(su + a, sizeof(su) - a, "%s%llu", g ? "/" : "", (unsigned long long)r->vst.startups[g]);
			snprintf(lo + b, sizeof(lo) - b, "%s%llu", g ? "/" : "", (unsigned long long)r->vst.longest[g]);
		}
		printf(" %12s %12s %12llu", su, lo, (unsigned long long)r->vst.extra_bytes);
	}
	printf("\n");
	fflush(stdout);
}
