/*
 * MPI-2's info objects and MPI_Alloc_mem/MPI_Free_mem.
 *
 * An info object is a list of (key, value) strings in the order they were
 * first set (MPI_Info_get_nthkey's order); setting a key again replaces its
 * value in place. Keys are 1 to MPI_MAX_INFO_KEY - 1 characters (so that a
 * buffer of MPI_MAX_INFO_KEY holds one with its terminator), values 1 to
 * MPI_MAX_INFO_VAL. No call of this front end reads a hint: they are kept
 * for the program.
 *
 * MPI_Alloc_mem hands out 64-byte aligned memory (more than the host's
 * available memory is MPI_ERR_NO_MEM at once) and remembers it, so that
 * MPI_Free_mem refuses what it did not hand out (MPI_ERR_BASE) instead of
 * freeing it. Only the program's main thread calls MPI (MPI_THREAD_FUNNELED),
 * so neither needs a lock.
 */
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

struct info_pair {
	char *key, *val;
};

struct info {
	int used;
	struct info_pair *kv;
	int n, cap;
};

static struct info *infos;  /* handle h is infos[h - 1] */
static int ninfos;
static void **allocs;       /* what MPI_Alloc_mem handed out */
static size_t nallocs, allocs_cap;

static struct info *info_of(MPI_Info h) { return h > 0 && h <= ninfos && infos[h - 1].used ? &infos[h - 1] : NULL; }

static int info_bad(const char *fn) { return mpi_error(MPI_COMM_WORLD, MPI_ERR_INFO, fn, "not an info object"); }

/* 0, or the error for a bad key */
static int key_check(const char *fn, const char *key)
{
	size_t n = key ? strnlen(key, MPI_MAX_INFO_KEY) : 0;
	if (!n || n >= MPI_MAX_INFO_KEY)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INFO_KEY, fn, "a key of 1 to %d characters, not %s", MPI_MAX_INFO_KEY - 1,
				 key ? "longer" : "NULL");
	return 0;
}

static int find(const struct info *in, const char *key)
{
	for (int i = 0; i < in->n; i++)
		if (!strcmp(in->kv[i].key, key))
			return i;
	return -1;
}

/* The info object of a call that names a key: NULL, and the error in *rc,
 * for a bad object or key. */
static struct info *info_key(const char *fn, MPI_Info info, const char *key, int *rc)
{
	struct info *in = info_of(info);
	*rc = in ? key_check(fn, key) : info_bad(fn);
	return *rc ? NULL : in;
}

int MPI_Info_create(MPI_Info *info)
{
	MPI_API();
	if (!info)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Info_create", "NULL info");
	int h = 0;
	for (int i = 0; i < ninfos && !h; i++)
		if (!infos[i].used)
			h = i + 1;
	if (!h) {
		struct info *x = realloc(infos, (size_t)(ninfos + 1) * sizeof(*x));
		if (!x)
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Info_create", "out of memory");
		infos = x;
		h = ++ninfos;
	}
	infos[h - 1] = (struct info){.used = 1};
	*info = h;
	return MPI_SUCCESS;
}

/* Set key to val in in (both already checked); -1 out of memory. */
static int set(struct info *in, const char *key, const char *val)
{
	char *v = strdup(val);
	if (!v)
		return -1;
	int i = find(in, key);
	if (i >= 0) {
		free(in->kv[i].val);
		in->kv[i].val = v;
		return 0;
	}
	char *k = strdup(key);
	if (k && in->n == in->cap) {
		int cap = in->cap ? 2 * in->cap : 8;
		struct info_pair *kv = realloc(in->kv, (size_t)cap * sizeof(*kv));
		if (kv) {
			in->kv = kv;
			in->cap = cap;
		}
	}
	if (!k || in->n == in->cap) {
		free(k);
		free(v);
		return -1;
	}
	in->kv[in->n++] = (struct info_pair){k, v};
	return 0;
}

int MPI_Info_set(MPI_Info info, const char *key, const char *value)
{
	MPI_API();
	int rc;
	struct info *in = info_key("MPI_Info_set", info, key, &rc);
	if (!in)
		return rc;
	size_t n = value ? strnlen(value, MPI_MAX_INFO_VAL + 1) : 0;
	if (!n || n > MPI_MAX_INFO_VAL)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INFO_VALUE, "MPI_Info_set", "a value of 1 to %d characters, not %s",
				 MPI_MAX_INFO_VAL, value ? "longer" : "NULL");
	if (set(in, key, value))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Info_set", "out of memory");
	return MPI_SUCCESS;
}

int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
	MPI_API();
	int rc;
	struct info *in = info_key("MPI_Info_get", info, key, &rc);
	if (!in)
		return rc;
	if (valuelen < 0 || !value || !flag)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Info_get", "a negative valuelen, or NULL value or flag");
	int i = find(in, key);
	*flag = i >= 0;
	if (i >= 0) {
		/* at most valuelen characters and the terminator */
		size_t n = strnlen(in->kv[i].val, (size_t)valuelen);
		memcpy(value, in->kv[i].val, n);
		value[n] = '\0';
	}
	return MPI_SUCCESS;
}

int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
	MPI_API();
	int rc;
	struct info *in = info_key("MPI_Info_get_valuelen", info, key, &rc);
	if (!in)
		return rc;
	if (!valuelen || !flag)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Info_get_valuelen", "NULL valuelen or flag");
	int i = find(in, key);
	*flag = i >= 0;
	if (i >= 0)
		*valuelen = (int)strlen(in->kv[i].val);
	return MPI_SUCCESS;
}

int MPI_Info_delete(MPI_Info info, const char *key)
{
	MPI_API();
	int rc;
	struct info *in = info_key("MPI_Info_delete", info, key, &rc);
	if (!in)
		return rc;
	int i = find(in, key);
	if (i < 0)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INFO_NOKEY, "MPI_Info_delete", "no key '%s'", key);
	free(in->kv[i].key);
	free(in->kv[i].val);
	memmove(&in->kv[i], &in->kv[i + 1], (size_t)(in->n - i - 1) * sizeof(*in->kv));
	in->n--;
	return MPI_SUCCESS;
}

int MPI_Info_get_nkeys(MPI_Info info, int *nkeys)
{
	MPI_API();
	struct info *in = info_of(info);
	if (!in)
		return info_bad("MPI_Info_get_nkeys");
	if (!nkeys)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Info_get_nkeys", "NULL nkeys");
	*nkeys = in->n;
	return MPI_SUCCESS;
}

int MPI_Info_get_nthkey(MPI_Info info, int n, char *key)
{
	MPI_API();
	struct info *in = info_of(info);
	if (!in)
		return info_bad("MPI_Info_get_nthkey");
	if (n < 0 || n >= in->n || !key)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Info_get_nthkey", "key %d of %d, or a NULL key", n, in->n);
	memcpy(key, in->kv[n].key, strlen(in->kv[n].key) + 1); /* < MPI_MAX_INFO_KEY bytes */
	return MPI_SUCCESS;
}

static void info_release(struct info *in)
{
	for (int i = 0; i < in->n; i++) {
		free(in->kv[i].key);
		free(in->kv[i].val);
	}
	free(in->kv);
	*in = (struct info){0};
}

int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo)
{
	MPI_API();
	if (!info_of(info))
		return info_bad("MPI_Info_dup");
	if (!newinfo)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Info_dup", "NULL newinfo");
	MPI_Info h;
	int rc = MPI_Info_create(&h);
	if (rc)
		return rc;
	struct info *from = info_of(info), *to = info_of(h); /* (create may have moved them) */
	for (int i = 0; i < from->n; i++)
		if (set(to, from->kv[i].key, from->kv[i].val)) {
			info_release(to);
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Info_dup", "out of memory");
		}
	*newinfo = h;
	return MPI_SUCCESS;
}

int MPI_Info_free(MPI_Info *info)
{
	MPI_API();
	struct info *in = info ? info_of(*info) : NULL;
	if (!in)
		return info_bad("MPI_Info_free");
	info_release(in);
	*info = MPI_INFO_NULL;
	return MPI_SUCCESS;
}

/* ------------------------------------------------------------ memory */

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
	MPI_API();
	if (size < 0 || !baseptr)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Alloc_mem", "size %lld, or a NULL baseptr", (long long)size);
	if (info != MPI_INFO_NULL && !info_of(info))
		return info_bad("MPI_Alloc_mem");
	if (nallocs == allocs_cap) {
		size_t cap = allocs_cap ? 2 * allocs_cap : 16;
		void **a = realloc(allocs, cap * sizeof(*a));
		if (!a)
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Alloc_mem", "out of memory");
		allocs = a;
		allocs_cap = cap;
	}
	/* more than the host has is refused before the allocator sees it */
	uint64_t avail = emu_host_mem_available();
	void *p = NULL;
	if ((avail && (uint64_t)size > avail) || posix_memalign(&p, 64, size ? (size_t)size : 1))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Alloc_mem", "no memory for %lld bytes", (long long)size);
	allocs[nallocs++] = p;
	memcpy(baseptr, &p, sizeof(p)); /* baseptr is a void ** passed as void * */
	return MPI_SUCCESS;
}

int MPI_Free_mem(void *base)
{
	MPI_API();
	for (size_t i = nallocs; i-- > 0;)
		if (allocs[i] == base) {
			allocs[i] = allocs[--nallocs];
			free(base);
			return MPI_SUCCESS;
		}
	return mpi_error(MPI_COMM_WORLD, MPI_ERR_BASE, "MPI_Free_mem", "%p did not come from MPI_Alloc_mem", base);
}
