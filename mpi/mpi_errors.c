/*
 * libtorusmpi: error codes, their strings and classes, and error handlers
 * (predefined and the program's own, per communicator); mpi_error, which
 * every call's errors go through.
 */
#include "mpi_internal.h"

#include <stdio.h>

static const char *const err_text[MPI_ERR_LASTCODE] = {
	[MPI_SUCCESS] = "no error",
	[MPI_ERR_BUFFER] = "invalid buffer pointer",
	[MPI_ERR_COUNT] = "invalid count argument",
	[MPI_ERR_TYPE] = "invalid datatype",
	[MPI_ERR_TAG] = "invalid tag",
	[MPI_ERR_COMM] = "invalid communicator",
	[MPI_ERR_RANK] = "invalid rank",
	[MPI_ERR_REQUEST] = "invalid request",
	[MPI_ERR_ROOT] = "invalid root",
	[MPI_ERR_GROUP] = "invalid group",
	[MPI_ERR_OP] = "invalid reduce operation",
	[MPI_ERR_TOPOLOGY] = "invalid topology",
	[MPI_ERR_DIMS] = "invalid dimension argument",
	[MPI_ERR_ARG] = "invalid argument of some other kind",
	[MPI_ERR_UNKNOWN] = "unknown error",
	[MPI_ERR_TRUNCATE] = "message truncated on receive",
	[MPI_ERR_OTHER] = "known error not in this list",
	[MPI_ERR_INTERN] = "internal MPI (implementation) error",
	[MPI_ERR_IN_STATUS] = "error code is in status",
	[MPI_ERR_PENDING] = "pending request",
	[MPI_ERR_INFO] = "invalid info object",
	[MPI_ERR_INFO_KEY] = "info key too long or empty",
	[MPI_ERR_INFO_VALUE] = "info value too long or empty",
	[MPI_ERR_INFO_NOKEY] = "no such info key",
	[MPI_ERR_NO_MEM] = "out of memory for MPI_Alloc_mem",
	[MPI_ERR_WIN] = "invalid window",
	[MPI_ERR_BASE] = "invalid base for MPI_Free_mem",
	[MPI_ERR_SIZE] = "invalid window size",
	[MPI_ERR_DISP] = "invalid displacement",
	[MPI_ERR_LOCKTYPE] = "invalid lock type",
	[MPI_ERR_ASSERT] = "invalid assertion",
	[MPI_ERR_RMA_CONFLICT] = "conflicting accesses to a window",
	[MPI_ERR_RMA_SYNC] = "one-sided call outside its epoch",
	[MPI_ERR_RMA_RANGE] = "access outside the target's window",
};

int MPI_Error_string(int errorcode, char *string, int *resultlen)
{
	MPI_API();
	if (!string || !resultlen)
		return MPI_ERR_ARG;
	const char *t = errorcode >= 0 && errorcode < MPI_ERR_LASTCODE ? err_text[errorcode] : "unknown error code";
	*resultlen = snprintf(string, MPI_MAX_ERROR_STRING, "%s", t);
	return MPI_SUCCESS;
}

int MPI_Error_class(int errorcode, int *errorclass)
{
	MPI_API();
	if (!errorclass || errorcode < 0 || errorcode >= MPI_ERR_LASTCODE)
		return MPI_ERR_ARG;
	*errorclass = errorcode;
	return MPI_SUCCESS;
}

/* eh's user function, or NULL */
static MPI_Comm_errhandler_function *user_eh(MPI_Errhandler eh)
{
	return eh >= MPI_USER_EH0 && eh < MPI_USER_EH0 + MPI_MAX_USER_EHS ? mpi_g.ehs[eh - MPI_USER_EH0] : NULL;
}

static int eh_known(MPI_Errhandler eh)
{
	return eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_RETURN || user_eh(eh);
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
	MPI_API();
	struct mpi_comm *cm = mpi_comm_of(comm);
	if (!cm)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_set_errhandler", "invalid communicator %d", comm);
	if (!eh_known(errhandler))
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_set_errhandler", "unknown error handler %d", errhandler);
	cm->eh = errhandler;
	return MPI_SUCCESS;
}

/* User error handlers (MPI_Comm_create_errhandler): handles from
 * MPI_USER_EH0 on; mpi_error calls one with the communicator and the
 * code, and returns the code when it returns. */
int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *errhandler)
{
	MPI_API();
	if (!fn || !errhandler)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Comm_create_errhandler", "NULL function or handler");
	for (int i = 0; i < MPI_MAX_USER_EHS; i++)
		if (!mpi_g.ehs[i]) {
			mpi_g.ehs[i] = fn;
			*errhandler = MPI_USER_EH0 + i;
			return MPI_SUCCESS;
		}
	return mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Comm_create_errhandler", "all %d user error handlers are in use",
			 MPI_MAX_USER_EHS);
}

int MPI_Errhandler_create(MPI_Handler_function *fn, MPI_Errhandler *errhandler)
{
	MPI_API();
	return MPI_Comm_create_errhandler(fn, errhandler);
}

/* A user handler stays usable by the communicators that have it (MPI
 * frees it once none does): freeing only gives the handle back. */
int MPI_Errhandler_free(MPI_Errhandler *errhandler)
{
	MPI_API();
	if (!errhandler || !eh_known(*errhandler))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Errhandler_free", "not an error handler");
	*errhandler = MPI_ERRHANDLER_NULL;
	return MPI_SUCCESS;
}

int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)
{
	MPI_API();
	return MPI_Comm_set_errhandler(comm, errhandler);
}

int MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler)
{
	MPI_API();
	return MPI_Comm_get_errhandler(comm, errhandler);
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
	MPI_API();
	struct mpi_comm *cm = mpi_comm_of(comm);
	if (!cm)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_get_errhandler", "invalid communicator %d", comm);
	if (!errhandler)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_get_errhandler", "NULL handler");
	*errhandler = cm->eh;
	return MPI_SUCCESS;
}

int mpi_error(MPI_Comm comm, int code, const char *fn, const char *fmt, ...)
{
	struct mpi_comm *cm = mpi_g.state == 1 ? mpi_comm_of(comm) : NULL;
	if (mpi_g.state == 1 && !cm) /* a bad communicator: the world's handler */
		cm = mpi_comm_of(MPI_COMM_WORLD);
	MPI_Errhandler eh = cm ? cm->eh : MPI_ERRORS_ARE_FATAL;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (eh == MPI_ERRORS_RETURN)
		return code;
	MPI_Comm_errhandler_function *u = user_eh(eh);
	if (u) {
		MPI_Comm h = cm ? (MPI_Comm)(cm - mpi_g.comms) : comm;
		int c = code;
		u(&h, &c, fn, msg);
		return code;
	}
	fprintf(stderr, "MPI error on rank %d: %s: %s (%s)\n", mpi_g.rank, fn, msg, err_text[code]);
	fflush(stderr);
	MPI_Abort(comm, code);
	return code; /* not reached */
}
