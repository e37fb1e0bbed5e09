/*
 * Lower bounds of Fig. 2 of 003_b0aac8c3d10c7733.txt (bidirectional model,
 * section 3) and the artificial computation delay of Fig. 6(d).
 */
#include "../coll_internal.h"

#include <stdatomic.h>

double coll_beta_ps(const struct torus_params *p)
{
	if (!p)
		return 0;
	uint32_t pay = torus_params_payload(p);
	/* a full packet holds its link for ser(wire(pay)) */
	return (double)torus_ser_ps(p, torus_wire_bytes(p, pay)) / pay;
}

double coll_lower_bound_ps(enum coll_kind kind, const struct torus_shape *s, const struct torus_params *p,
			   double n_bytes)
{
	if (!s || !p || (unsigned)kind >= COLL_KIND_COUNT || n_bytes <= 0)
		return 0;
	uint32_t N = 0;
	for (uint32_t d = 0; d < s->ndims; d++)
		N += torus_dim_has_links(s, d) ? 1u : 0u;
	if (!N || s->nnodes < 2)
		return 0;
	double pn = s->nnodes;
	double t = (pn - 1) / pn * n_bytes * coll_beta_ps(p) / (2.0 * N);
	return kind == COLL_ALLREDUCE ? 2 * t : t;
}

static _Atomic uint64_t delay_ps_per_kib;

void coll_set_compute_delay(uint64_t ps_per_kib) { atomic_store(&delay_ps_per_kib, ps_per_kib); }

torus_vt_t coll_reduce_cost(const emu_core_t *c, size_t bytes)
{
	uint64_t bw = emu_params(c)->reduce_bw;
	/* 128 bits: a step of more than 18 MB would overflow 64 */
	torus_vt_t t = (torus_vt_t)(((unsigned __int128)bytes * 1000000000000ull + bw - 1) / bw);
	uint64_t extra = atomic_load_explicit(&delay_ps_per_kib, memory_order_relaxed);
	if (extra)
		t += (torus_vt_t)((unsigned __int128)bytes * extra / 1024);
	return t;
}

void coll_charge_reduce(emu_core_t *c, size_t bytes)
{
	emu_core_compute(c, coll_reduce_cost(c, bytes));
}

void coll_charge_copy(emu_core_t *c, uint64_t bytes)
{
	uint64_t bw = emu_params(c)->copy_bw;
	emu_core_compute(c, (torus_vt_t)(((unsigned __int128)bytes * 1000000000000ull + bw - 1) / bw));
}
