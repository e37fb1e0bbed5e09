/*
 * libtorusmpi: derived datatypes (MPI_Type_contiguous, _vector, _hvector,
 * _indexed, _create_struct), their names and extents, and MPI_Pack /
 * MPI_Unpack; the predefined types' sizes, MPI_Get_count and
 * MPI_Get_elements.
 *
 * A derived datatype is flattened when it is built: the byte blocks of one
 * element, in type order, adjacent ones merged, with its lower bound and
 * extent. Point-to-point messages of a type that is not contiguous are
 * packed into a buffer of their own on the way out and unpacked on the way
 * in (mpi_p2p.c); the collectives take predefined types only, and say so.
 */
#include "mpi_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mpi_blk {
	MPI_Aint off;
	uint64_t len;
};

/* n predefined elements of `size` bytes each, one after the other in type
 * order (MPI_Get_elements of part of an element) */
struct mpi_run {
	uint64_t size, n;
};

struct mpi_dtype {
	int used, committed;
	uint64_t size;       /* data bytes of one element */
	uint64_t nbasic;     /* predefined elements in one element */
	MPI_Datatype basic;  /* their predefined type if they share one, else MPI_DATATYPE_NULL */
	int mixed;
	MPI_Aint lb, extent;
	MPI_Aint align;      /* the largest alignment of its predefined parts */
	size_t nblk;
	struct mpi_blk *blk;
	size_t nrun;
	struct mpi_run *run;
	char name[MPI_MAX_OBJECT_NAME];
};

static struct mpi_dtype types[MPI_MAX_TYPES];

/* A predefined type's alignment: its own, or its value's (the pair types). */
static MPI_Aint basic_align(MPI_Datatype t)
{
	switch (t) {
	case MPI_FLOAT_INT: return _Alignof(struct { float v; int i; });
	case MPI_DOUBLE_INT: return _Alignof(struct { double v; int i; });
	case MPI_LONG_INT: return _Alignof(struct { long v; int i; });
	case MPI_2INT: return _Alignof(struct { int v; int i; });
	case MPI_SHORT_INT: return _Alignof(struct { short v; int i; });
	case MPI_LONG_DOUBLE_INT: return _Alignof(struct { long double v; int i; });
	default: return mpi_type_size(t);
	}
}

static struct mpi_dtype *derived(MPI_Datatype t)
{
	if (t < MPI_TYPE0 || t >= MPI_TYPE0 + MPI_MAX_TYPES || !types[t - MPI_TYPE0].used)
		return NULL;
	return &types[t - MPI_TYPE0];
}

int mpi_type_info(MPI_Datatype t, int committed, struct mpi_type_info *out)
{
	int s = mpi_type_size(t);
	if (s) {
		*out = (struct mpi_type_info){(uint64_t)s, s, 1, 1, t};
		return 0;
	}
	const struct mpi_dtype *d = derived(t);
	if (!d || (committed && !d->committed))
		return -1;
	*out = (struct mpi_type_info){d->size, d->extent,
				      d->nblk == 0 || (d->nblk == 1 && d->blk[0].off == 0 && (MPI_Aint)d->size == d->extent),
				      d->nbasic, d->mixed ? MPI_DATATYPE_NULL : d->basic};
	return 0;
}

void mpi_pack(const void *buf, int count, MPI_Datatype t, void *out)
{
	const struct mpi_dtype *d = derived(t);
	char *o = out;
	if (!d) {
		if (count > 0) /* (buf may be NULL for nothing) */
			memcpy(o, buf, (size_t)count * (size_t)mpi_type_size(t));
		return;
	}
	for (int i = 0; i < count; i++)
		for (size_t b = 0; b < d->nblk; b++) {
			memcpy(o, (const char *)buf + (MPI_Aint)i * d->extent + d->blk[b].off, d->blk[b].len);
			o += d->blk[b].len;
		}
}

void mpi_unpack(const void *in, uint64_t bytes, void *buf, int count, MPI_Datatype t)
{
	const struct mpi_dtype *d = derived(t);
	const char *p = in;
	if (!d) {
		uint64_t n = (uint64_t)count * (uint64_t)mpi_type_size(t);
		if (bytes && n) /* (buf may be NULL for nothing) */
			memcpy(buf, p, bytes < n ? bytes : n);
		return;
	}
	for (int i = 0; i < count && bytes; i++)
		for (size_t b = 0; b < d->nblk && bytes; b++) {
			uint64_t n = d->blk[b].len < bytes ? d->blk[b].len : bytes;
			memcpy((char *)buf + (MPI_Aint)i * d->extent + d->blk[b].off, p, n);
			p += n;
			bytes -= n;
		}
}

int64_t mpi_type_elements(MPI_Datatype t, uint64_t bytes)
{
	const struct mpi_dtype *d = derived(t);
	uint64_t size = d ? d->size : (uint64_t)mpi_type_size(t);
	if (!size)
		return bytes ? -1 : 0;
	if (!d)
		return bytes % size ? -1 : (int64_t)(bytes / size);
	uint64_t n = bytes / size * d->nbasic, rem = bytes % size;
	for (size_t i = 0; i < d->nrun && rem; i++) {
		uint64_t all = d->run[i].size * d->run[i].n;
		if (rem >= all) {
			n += d->run[i].n;
			rem -= all;
			continue;
		}
		if (rem % d->run[i].size)
			return -1; /* part of a predefined element */
		n += rem / d->run[i].size;
		rem = 0;
	}
	return rem ? -1 : (int64_t)n;
}

/* The bytes count elements of t touch, [*lo, *hi) from the buffer's start
 * (a derived type's true extent, repeated at its extent). 0, or -1 for an
 * unknown type. */
int mpi_type_span(MPI_Datatype t, int count, MPI_Aint *lo, MPI_Aint *hi)
{
	const struct mpi_dtype *d = derived(t);
	MPI_Aint tlb = 0, tub = mpi_type_size(t), ext = tub;
	if (!d && !tub)
		return -1;
	if (d) {
		ext = d->extent;
		for (size_t b = 0; b < d->nblk; b++) {
			MPI_Aint end = d->blk[b].off + (MPI_Aint)d->blk[b].len;
			tlb = b == 0 || d->blk[b].off < tlb ? d->blk[b].off : tlb;
			tub = b == 0 || end > tub ? end : tub;
		}
	}
	if (count <= 0 || tub <= tlb) {
		*lo = *hi = 0;
		return 0;
	}
	MPI_Aint last = (MPI_Aint)(count - 1) * ext;
	*lo = last < 0 ? tlb + last : tlb;
	*hi = last > 0 ? tub + last : tub;
	return 0;
}

int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
	MPI_API();
	MPI_Aint lo, hi;
	if (!true_lb || !true_extent)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_get_true_extent", "NULL true_lb or true_extent");
	if (mpi_type_span(datatype, 1, &lo, &hi))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_get_true_extent", "unknown datatype %d",
				 datatype);
	*true_lb = lo;
	*true_extent = hi - lo;
	return MPI_SUCCESS;
}

/* ------------------------------------------------------------ building */

struct builder {
	struct mpi_dtype d;
	size_t cap, rcap;
	MPI_Aint ub;
	int any, bad;
	int resized;          /* lb and extent given (MPI_Type_create_resized) */
	MPI_Aint rlb, rextent;
};

/* Room for one more element of `size` bytes in *arr, which holds n of
 * *cap: twice the room when it is full. 0, or -1 if out of memory. */
static int room(void **arr, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? 2 * *cap : 8;
	void *na = realloc(*arr, nc * size);
	if (!na)
		return -1;
	*arr = na;
	*cap = nc;
	return 0;
}

/* One element of `old` at byte displacement disp. */
static void add(struct builder *b, MPI_Aint disp, MPI_Datatype old)
{
	struct mpi_type_info oi;
	if (b->bad || mpi_type_info(old, 0, &oi)) {
		b->bad = 1;
		return;
	}
	const struct mpi_dtype *od = derived(old);
	MPI_Aint al = od ? od->align : basic_align(old);
	if (al > b->d.align)
		b->d.align = al;
	struct mpi_blk one = {0, oi.size};
	const struct mpi_blk *blk = od ? od->blk : &one;
	size_t n = od ? od->nblk : 1;
	MPI_Aint lb = disp + (od ? od->lb : 0), ub = lb + oi.extent;
	if (!b->any || lb < b->d.lb)
		b->d.lb = lb;
	if (!b->any || ub > b->ub)
		b->ub = ub;
	b->any = 1;
	b->d.size += oi.size;
	b->d.nbasic += oi.nbasic;
	if (oi.basic == MPI_DATATYPE_NULL || (b->d.basic && b->d.basic != oi.basic))
		b->d.mixed = 1;
	b->d.basic = oi.basic;
	struct mpi_run rone = {oi.size, 1};
	const struct mpi_run *run = od ? od->run : &rone;
	for (size_t i = 0, nr = od ? od->nrun : 1; i < nr; i++) {
		struct mpi_run *last = b->d.nrun ? &b->d.run[b->d.nrun - 1] : NULL;
		if (last && last->size == run[i].size) {
			last->n += run[i].n;
			continue;
		}
		if (room((void **)&b->d.run, &b->rcap, b->d.nrun, sizeof(*run))) {
			b->bad = 1;
			return;
		}
		b->d.run[b->d.nrun++] = run[i];
	}
	for (size_t i = 0; i < n; i++) {
		MPI_Aint off = disp + blk[i].off;
		struct mpi_blk *last = b->d.nblk ? &b->d.blk[b->d.nblk - 1] : NULL;
		if (last && last->off + (MPI_Aint)last->len == off) {
			last->len += blk[i].len; /* adjacent: one block */
			continue;
		}
		if (room((void **)&b->d.blk, &b->cap, b->d.nblk, sizeof(*blk))) {
			b->bad = 1;
			return;
		}
		b->d.blk[b->d.nblk++] = (struct mpi_blk){off, blk[i].len};
	}
}

/* The built type's handle in *out, or an error for fn. */
static int finish(struct builder *b, MPI_Datatype *out, const char *fn)
{
	if (b->bad) {
		free(b->d.blk);
		free(b->d.run);
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "an invalid or uncommitted old type, or out of memory");
	}
	for (int i = 0; i < MPI_MAX_TYPES; i++)
		if (!types[i].used) {
			/* the extent rounds up to the parts' largest alignment, as
			 * MPI's does (a struct's trailing padding) */
			b->d.extent = b->any ? b->ub - b->d.lb : 0;
			if (b->d.align > 1 && b->d.extent % b->d.align)
				b->d.extent += b->d.align - b->d.extent % b->d.align;
			if (b->resized) {
				b->d.lb = b->rlb;
				b->d.extent = b->rextent;
			}
			b->d.used = 1;
			types[i] = b->d;
			*out = MPI_TYPE0 + i;
			return MPI_SUCCESS;
		}
	free(b->d.blk);
	free(b->d.run);
	return mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, fn, "all %d derived datatypes are in use", MPI_MAX_TYPES);
}

static int extent_of(MPI_Datatype t, MPI_Aint *e)
{
	struct mpi_type_info i;
	if (mpi_type_info(t, 0, &i))
		return -1;
	*e = i.extent;
	return 0;
}

int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	MPI_API();
	MPI_Aint e;
	if (count < 0 || !newtype)
		return mpi_error(MPI_COMM_WORLD, count < 0 ? MPI_ERR_COUNT : MPI_ERR_ARG, "MPI_Type_contiguous",
				 "count %d, newtype %p", count, (void *)newtype);
	if (extent_of(oldtype, &e))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_contiguous", "unknown datatype %d", oldtype);
	struct builder b = {0};
	for (int i = 0; i < count; i++)
		add(&b, (MPI_Aint)i * e, oldtype);
	return finish(&b, newtype, "MPI_Type_contiguous");
}

static int vector(const char *fn, int count, int blocklength, MPI_Aint stride_bytes, int in_extents, MPI_Aint stride,
		  MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	MPI_Aint e;
	if (count < 0 || blocklength < 0 || !newtype)
		return mpi_error(MPI_COMM_WORLD, count < 0 || blocklength < 0 ? MPI_ERR_COUNT : MPI_ERR_ARG, fn,
				 "count %d, blocklength %d", count, blocklength);
	if (extent_of(oldtype, &e))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "unknown datatype %d", oldtype);
	struct builder b = {0};
	for (int i = 0; i < count; i++)
		for (int j = 0; j < blocklength; j++)
			add(&b, (in_extents ? (MPI_Aint)i * stride * e : (MPI_Aint)i * stride_bytes) + (MPI_Aint)j * e,
			    oldtype);
	return finish(&b, newtype, fn);
}

int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	MPI_API();
	return vector("MPI_Type_vector", count, blocklength, 0, 1, stride, oldtype, newtype);
}

int MPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	MPI_API();
	return vector("MPI_Type_hvector", count, blocklength, stride, 0, 0, oldtype, newtype);
}

int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
			    MPI_Datatype *newtype)
{
	MPI_API();
	return vector("MPI_Type_create_hvector", count, blocklength, stride, 0, 0, oldtype, newtype);
}

/* The indexed family: block i of bl[i] (or every block of `fixed`)
 * elements of old, at disp_e[i] extents of old or disp_b[i] bytes. */
static int indexed(const char *fn, int count, const int *bl, int fixed, const int *disp_e, const MPI_Aint *disp_b,
		   MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	MPI_Aint e;
	if (count < 0 || (count && ((!bl && fixed < 0) || (!disp_e && !disp_b))) || !newtype)
		return mpi_error(MPI_COMM_WORLD, count < 0 || fixed < 0 ? MPI_ERR_COUNT : MPI_ERR_ARG, fn,
				 "count %d, or a NULL array", count);
	if (extent_of(oldtype, &e))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "unknown datatype %d", oldtype);
	struct builder b = {0};
	for (int i = 0; i < count; i++) {
		int n = bl ? bl[i] : fixed;
		if (n < 0) {
			free(b.d.blk);
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_COUNT, fn, "block %d of length %d", i, n);
		}
		MPI_Aint at = disp_b ? disp_b[i] : (MPI_Aint)disp_e[i] * e;
		for (int j = 0; j < n; j++)
			add(&b, at + (MPI_Aint)j * e, oldtype);
	}
	return finish(&b, newtype, fn);
}

int MPI_Type_indexed(int count, const int blocklengths[], const int displacements[], MPI_Datatype oldtype,
		     MPI_Datatype *newtype)
{
	MPI_API();
	return indexed("MPI_Type_indexed", count, blocklengths, -1, displacements, NULL, oldtype, newtype);
}

int MPI_Type_create_hindexed(int count, const int blocklengths[], const MPI_Aint displacements[],
			     MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	MPI_API();
	return indexed("MPI_Type_create_hindexed", count, blocklengths, -1, NULL, displacements, oldtype, newtype);
}

int MPI_Type_hindexed(int count, const int blocklengths[], const MPI_Aint displacements[], MPI_Datatype oldtype,
		      MPI_Datatype *newtype)
{
	MPI_API();
	return indexed("MPI_Type_hindexed", count, blocklengths, -1, NULL, displacements, oldtype, newtype);
}

int MPI_Type_create_indexed_block(int count, int blocklength, const int displacements[], MPI_Datatype oldtype,
				  MPI_Datatype *newtype)
{
	MPI_API();
	return indexed("MPI_Type_create_indexed_block", count, NULL, blocklength, displacements, NULL, oldtype,
		       newtype);
}

int MPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint displacements[], MPI_Datatype oldtype,
				   MPI_Datatype *newtype)
{
	MPI_API();
	return indexed("MPI_Type_create_hindexed_block", count, NULL, blocklength, NULL, displacements, oldtype,
		       newtype);
}

int MPI_Type_create_struct(int count, const int blocklengths[], const MPI_Aint displacements[],
			   const MPI_Datatype types_[], MPI_Datatype *newtype)
{
	MPI_API();
	if (count < 0 || (count && (!blocklengths || !displacements || !types_)) || !newtype)
		return mpi_error(MPI_COMM_WORLD, count < 0 ? MPI_ERR_COUNT : MPI_ERR_ARG, "MPI_Type_create_struct",
				 "count %d or a NULL array", count);
	struct builder b = {0};
	for (int i = 0; i < count; i++) {
		MPI_Aint e;
		if (blocklengths[i] < 0 || extent_of(types_[i], &e)) {
			free(b.d.blk);
			return mpi_error(MPI_COMM_WORLD, blocklengths[i] < 0 ? MPI_ERR_COUNT : MPI_ERR_TYPE,
					 "MPI_Type_create_struct", "member %d: length %d, type %d", i, blocklengths[i],
					 types_[i]);
		}
		for (int j = 0; j < blocklengths[i]; j++)
			add(&b, displacements[i] + (MPI_Aint)j * e, types_[i]);
	}
	return finish(&b, newtype, "MPI_Type_create_struct");
}

int MPI_Type_struct(int count, const int blocklengths[], const MPI_Aint displacements[], const MPI_Datatype types_[],
		    MPI_Datatype *newtype)
{
	MPI_API();
	return MPI_Type_create_struct(count, blocklengths, displacements, types_, newtype);
}

/* old's layout with the given lower bound and extent */
static int resized(const char *fn, MPI_Datatype oldtype, int keep, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype)
{
	struct mpi_type_info oi;
	if (!newtype)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "NULL newtype");
	if (mpi_type_info(oldtype, 0, &oi))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "unknown datatype %d", oldtype);
	const struct mpi_dtype *od = derived(oldtype);
	struct builder b = {0};
	add(&b, 0, oldtype);
	b.resized = 1;
	b.rlb = keep ? (od ? od->lb : 0) : lb;
	b.rextent = keep ? oi.extent : extent;
	return finish(&b, newtype, fn);
}

int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype)
{
	MPI_API();
	return resized("MPI_Type_create_resized", oldtype, 0, lb, extent, newtype);
}

int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	MPI_API();
	int rc = resized("MPI_Type_dup", oldtype, 1, 0, 0, newtype);
	const struct mpi_dtype *od = derived(oldtype);
	if (!rc && (!od || od->committed))
		derived(*newtype)->committed = 1; /* a duplicate of a committed (or predefined) type is committed */
	return rc;
}

int MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)
{
	MPI_API();
	MPI_Aint lb;
	return MPI_Type_get_extent(datatype, &lb, extent);
}

int MPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement)
{
	MPI_API();
	MPI_Aint extent;
	return MPI_Type_get_extent(datatype, displacement, &extent);
}

int MPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement)
{
	MPI_API();
	MPI_Aint lb = 0, extent = 0;
	int rc = displacement ? MPI_Type_get_extent(datatype, &lb, &extent)
			      : mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_ub", "NULL displacement");
	if (!rc)
		*displacement = lb + extent;
	return rc;
}

int MPI_Get_address(const void *location, MPI_Aint *address)
{
	MPI_API();
	if (!address)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_address", "NULL address");
	*address = (MPI_Aint)(intptr_t)location;
	return MPI_SUCCESS;
}

int MPI_Address(void *location, MPI_Aint *address)
{
	MPI_API();
	return MPI_Get_address(location, address);
}

int MPI_Type_commit(MPI_Datatype *datatype)
{
	MPI_API();
	if (!datatype)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_commit", "NULL datatype");
	struct mpi_dtype *d = derived(*datatype);
	if (!d && !mpi_type_size(*datatype))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_commit", "unknown datatype %d", *datatype);
	if (d)
		d->committed = 1;
	return MPI_SUCCESS;
}

int MPI_Type_free(MPI_Datatype *datatype)
{
	MPI_API();
	struct mpi_dtype *d = datatype ? derived(*datatype) : NULL;
	if (!d)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_free", "not a derived datatype");
	free(d->blk);
	free(d->run);
	memset(d, 0, sizeof(*d));
	*datatype = MPI_DATATYPE_NULL;
	return MPI_SUCCESS;
}

int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
	MPI_API();
	const struct mpi_dtype *d = derived(datatype);
	int s = mpi_type_size(datatype);
	if (!lb || !extent)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_get_extent", "NULL lb or extent");
	if (!d && !s)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_get_extent", "unknown datatype %d", datatype);
	*lb = d ? d->lb : 0;
	*extent = d ? d->extent : s;
	return MPI_SUCCESS;
}

static const char *const basic_name[TORUS_MPI_NTYPES_] = {
	[MPI_CHAR] = "MPI_CHAR", [MPI_SIGNED_CHAR] = "MPI_SIGNED_CHAR", [MPI_UNSIGNED_CHAR] = "MPI_UNSIGNED_CHAR",
	[MPI_BYTE] = "MPI_BYTE", [MPI_SHORT] = "MPI_SHORT", [MPI_UNSIGNED_SHORT] = "MPI_UNSIGNED_SHORT",
	[MPI_INT] = "MPI_INT", [MPI_UNSIGNED] = "MPI_UNSIGNED", [MPI_LONG] = "MPI_LONG",
	[MPI_UNSIGNED_LONG] = "MPI_UNSIGNED_LONG", [MPI_LONG_LONG] = "MPI_LONG_LONG",
	[MPI_UNSIGNED_LONG_LONG] = "MPI_UNSIGNED_LONG_LONG", [MPI_FLOAT] = "MPI_FLOAT", [MPI_DOUBLE] = "MPI_DOUBLE",
	[MPI_LONG_DOUBLE] = "MPI_LONG_DOUBLE", [MPI_INT8_T] = "MPI_INT8_T", [MPI_INT16_T] = "MPI_INT16_T",
	[MPI_INT32_T] = "MPI_INT32_T", [MPI_INT64_T] = "MPI_INT64_T", [MPI_UINT8_T] = "MPI_UINT8_T",
	[MPI_UINT16_T] = "MPI_UINT16_T", [MPI_UINT32_T] = "MPI_UINT32_T", [MPI_UINT64_T] = "MPI_UINT64_T",
	[MPI_C_BOOL] = "MPI_C_BOOL", [MPI_WCHAR] = "MPI_WCHAR", [MPI_AINT] = "MPI_AINT", [MPI_OFFSET] = "MPI_OFFSET",
	[MPI_PACKED] = "MPI_PACKED", [MPI_FLOAT_INT] = "MPI_FLOAT_INT", [MPI_DOUBLE_INT] = "MPI_DOUBLE_INT",
	[MPI_LONG_INT] = "MPI_LONG_INT", [MPI_2INT] = "MPI_2INT", [MPI_SHORT_INT] = "MPI_SHORT_INT",
	[MPI_LONG_DOUBLE_INT] = "MPI_LONG_DOUBLE_INT",
};

int MPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
	MPI_API();
	const struct mpi_dtype *d = derived(datatype);
	if (!type_name || !resultlen)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_get_name", "NULL name or length");
	if (!d && !mpi_type_size(datatype))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_get_name", "unknown datatype %d", datatype);
	*resultlen = snprintf(type_name, MPI_MAX_OBJECT_NAME, "%s", d ? d->name : basic_name[datatype]);
	return MPI_SUCCESS;
}

int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
	MPI_API();
	struct mpi_dtype *d = derived(datatype);
	if (!d || !type_name)
		return mpi_error(MPI_COMM_WORLD, d ? MPI_ERR_ARG : MPI_ERR_TYPE, "MPI_Type_set_name",
				 "a derived datatype and a name, please");
	snprintf(d->name, sizeof(d->name), "%s", type_name);
	return MPI_SUCCESS;
}

/* ---------------------------------------------------------- pack, unpack */

int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
	MPI_API();
	struct mpi_type_info i;
	if (incount < 0 || !size)
		return mpi_error(comm, incount < 0 ? MPI_ERR_COUNT : MPI_ERR_ARG, "MPI_Pack_size", "count %d", incount);
	if (mpi_type_info(datatype, 1, &i))
		return mpi_error(comm, MPI_ERR_TYPE, "MPI_Pack_size", "unknown or uncommitted datatype %d", datatype);
	uint64_t n = (uint64_t)incount * i.size;
	if (n > INT32_MAX)
		return mpi_error(comm, MPI_ERR_COUNT, "MPI_Pack_size", "%llu bytes do not fit an int",
				 (unsigned long long)n);
	*size = (int)n;
	return MPI_SUCCESS;
}

int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position,
	     MPI_Comm comm)
{
	MPI_API();
	struct mpi_type_info i;
	if (incount < 0 || !position || outsize < 0 || (incount && (!inbuf || !outbuf)))
		return mpi_error(comm, incount < 0 ? MPI_ERR_COUNT : MPI_ERR_ARG, "MPI_Pack", "bad count or buffer");
	if (mpi_type_info(datatype, 1, &i))
		return mpi_error(comm, MPI_ERR_TYPE, "MPI_Pack", "unknown or uncommitted datatype %d", datatype);
	uint64_t n = (uint64_t)incount * i.size;
	if (*position < 0 || (uint64_t)*position + n > (uint64_t)outsize)
		return mpi_error(comm, MPI_ERR_TRUNCATE, "MPI_Pack", "%llu bytes at %d do not fit %d",
				 (unsigned long long)n, *position, outsize);
	mpi_pack(inbuf, incount, datatype, (char *)outbuf + *position);
	*position += (int)n;
	return MPI_SUCCESS;
}

int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype datatype,
	       MPI_Comm comm)
{
	MPI_API();
	struct mpi_type_info i;
	if (outcount < 0 || !position || insize < 0 || (outcount && (!inbuf || !outbuf)))
		return mpi_error(comm, outcount < 0 ? MPI_ERR_COUNT : MPI_ERR_ARG, "MPI_Unpack", "bad count or buffer");
	if (mpi_type_info(datatype, 1, &i))
		return mpi_error(comm, MPI_ERR_TYPE, "MPI_Unpack", "unknown or uncommitted datatype %d", datatype);
	uint64_t n = (uint64_t)outcount * i.size;
	if (*position < 0 || (uint64_t)*position + n > (uint64_t)insize)
		return mpi_error(comm, MPI_ERR_TRUNCATE, "MPI_Unpack", "%llu bytes at %d: past the %d packed",
				 (unsigned long long)n, *position, insize);
	mpi_unpack((const char *)inbuf + *position, n, outbuf, outcount, datatype);
	*position += (int)n;
	return MPI_SUCCESS;
}

/* ------------------------------------------------------- predefined types */

static const int type_size[TORUS_MPI_NTYPES_] = {
	[MPI_CHAR] = sizeof(char), [MPI_SIGNED_CHAR] = sizeof(signed char),
	[MPI_UNSIGNED_CHAR] = sizeof(unsigned char), [MPI_BYTE] = 1, [MPI_SHORT] = sizeof(short),
	[MPI_UNSIGNED_SHORT] = sizeof(unsigned short), [MPI_INT] = sizeof(int), [MPI_UNSIGNED] = sizeof(unsigned),
	[MPI_LONG] = sizeof(long), [MPI_UNSIGNED_LONG] = sizeof(unsigned long), [MPI_LONG_LONG] = sizeof(long long),
	[MPI_UNSIGNED_LONG_LONG] = sizeof(unsigned long long), [MPI_FLOAT] = sizeof(float),
	[MPI_DOUBLE] = sizeof(double), [MPI_LONG_DOUBLE] = sizeof(long double), [MPI_INT8_T] = 1, [MPI_INT16_T] = 2,
	[MPI_INT32_T] = 4, [MPI_INT64_T] = 8, [MPI_UINT8_T] = 1, [MPI_UINT16_T] = 2, [MPI_UINT32_T] = 4,
	[MPI_UINT64_T] = 8, [MPI_C_BOOL] = sizeof(_Bool), [MPI_WCHAR] = 4, [MPI_AINT] = sizeof(MPI_Aint),
	[MPI_OFFSET] = sizeof(MPI_Offset), [MPI_PACKED] = 1,
	[MPI_FLOAT_INT] = sizeof(struct { float v; int i; }), [MPI_DOUBLE_INT] = sizeof(struct { double v; int i; }),
	[MPI_LONG_INT] = sizeof(struct { long v; int i; }), [MPI_2INT] = sizeof(struct { int v; int i; }),
	[MPI_SHORT_INT] = sizeof(struct { short v; int i; }),
	[MPI_LONG_DOUBLE_INT] = sizeof(struct { long double v; int i; }),
};

int mpi_type_size(MPI_Datatype t)
{
	return t > 0 && t < TORUS_MPI_NTYPES_ ? type_size[t] : 0;
}

int MPI_Type_size(MPI_Datatype datatype, int *size)
{
	MPI_API();
	struct mpi_type_info ti;
	if (mpi_type_info(datatype, 0, &ti))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_size", "unknown datatype %d", datatype);
	if (!size)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_size", "NULL size");
	*size = ti.size > INT32_MAX ? MPI_UNDEFINED : (int)ti.size;
	return MPI_SUCCESS;
}

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
	MPI_API();
	struct mpi_type_info ti;
	if (!status || !count)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_count", "NULL status or count");
	if (mpi_type_info(datatype, 0, &ti))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Get_count", "unknown datatype %d", datatype);
	uint64_t s = ti.size ? ti.size : 1;
	uint64_t bytes = (uint64_t)(uint32_t)status->count_lo_ | (uint64_t)(uint32_t)status->count_hi_ << 32;
	*count = bytes % s || bytes / s > INT32_MAX ? MPI_UNDEFINED : (int)(bytes / s);
	return MPI_SUCCESS;
}

/* The predefined elements received: whole elements of datatype only (a
 * message that ends inside one gives MPI_UNDEFINED). */
int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
	MPI_API();
	struct mpi_type_info ti;
	if (!status || !count)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_elements", "NULL status or count");
	if (mpi_type_info(datatype, 0, &ti))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Get_elements", "unknown datatype %d", datatype);
	/* whole elements and the predefined ones of a partial last element */
	uint64_t bytes = (uint64_t)(uint32_t)status->count_lo_ | (uint64_t)(uint32_t)status->count_hi_ << 32;
	int64_t n = mpi_type_elements(datatype, bytes);
	*count = n < 0 || n > INT32_MAX ? MPI_UNDEFINED : (int)n;
	return MPI_SUCCESS;
}
