/*
 * libtorusmpi: requests: waiting for and testing them (MPI_Wait, MPI_Test
 * and their any, some and all forms), persistent requests (MPI_Send_init
 * and the like, MPI_Start), MPI_Cancel and MPI_Request_free.
 */
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

struct torus_mpi_request *mpi_request_new(void)
{
	return calloc(1, sizeof(struct torus_mpi_request));
}

void mpi_request_free(struct torus_mpi_request *r)
{
	free(r->tmp);
	free(r);
}

/* The empty status (MPI_REQUEST_NULL, an inactive persistent request, or no
 * active request at all): any source, any tag, success, no data, not
 * cancelled. */
static void empty_status(MPI_Status *st)
{
	if (st)
		*st = (MPI_Status){.MPI_SOURCE = MPI_ANY_SOURCE, .MPI_TAG = MPI_ANY_TAG, .MPI_ERROR = MPI_SUCCESS};
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
	MPI_API();
	if (!request)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Wait", "NULL request");
	if (*request == MPI_REQUEST_NULL) {
		empty_status(status);
		return MPI_SUCCESS;
	}
	struct torus_mpi_request *r = *request;
	int rc = MPI_SUCCESS;
	if (r->persistent && !r->active) {
		empty_status(status); /* an inactive persistent request */
		return MPI_SUCCESS;
	}
	if (r->proc_null)
		mpi_null_status(status);
	else
		rc = mpi_wait_request(r, status);
	uint64_t len = r->msg_len, cap = r->cap;
	if (r->persistent) {
		r->active = 0; /* it stays, for the next MPI_Start */
	} else {
		mpi_request_free(r);
		*request = MPI_REQUEST_NULL;
	}
	if (rc == MPI_ERR_TRUNCATE)
		return mpi_error(MPI_COMM_WORLD, rc, "MPI_Wait", "a message of %llu bytes for a buffer of %llu",
				 (unsigned long long)len, (unsigned long long)cap);
	return rc ? mpi_error(MPI_COMM_WORLD, rc, "MPI_Wait", "the request failed") : MPI_SUCCESS;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
	MPI_API();
	if (count < 0 || (count && !requests))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Waitall", "bad request array");
	int err = 0;
	struct mpi_comm *wc = mpi_comm_of(MPI_COMM_WORLD);
	MPI_Errhandler eh = wc->eh;
	wc->eh = MPI_ERRORS_RETURN; /* one verdict for the whole call */
	for (int i = 0; i < count; i++) {
		int rc = MPI_Wait(&requests[i], statuses ? &statuses[i] : MPI_STATUS_IGNORE);
		if (rc) {
			err = 1;
			if (statuses)
				statuses[i].MPI_ERROR = rc;
		}
	}
	wc->eh = eh;
	return err ? mpi_error(MPI_COMM_WORLD, MPI_ERR_IN_STATUS, "MPI_Waitall", "a request failed") : MPI_SUCCESS;
}

/* Does the request count in a wait or test for any or some (not null, and
 * not a persistent request that is not started: those are skipped)? */
static int request_active(MPI_Request r)
{
	return r != MPI_REQUEST_NULL && !(r->persistent && !r->active);
}

/* Is the request complete (without waiting)? Progress first. */
static int request_ready(MPI_Request r)
{
	return r == MPI_REQUEST_NULL || (r->persistent && !r->active) || r->proc_null ||
	       (r->send ? mpi_send_complete(r) > 0 : r->done);
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
	MPI_API();
	if (count < 0 || (count && !requests) || !index)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Waitany", "bad request array or index");
	for (;;) {
		int active = 0;
		for (int i = 0; i < count; i++) {
			if (!request_active(requests[i]))
				continue;
			active = 1;
			if (request_ready(requests[i])) {
				*index = i;
				return MPI_Wait(&requests[i], status);
			}
		}
		if (!active) {
			*index = MPI_UNDEFINED;
			empty_status(status);
			return MPI_SUCCESS;
		}
		if (mpi_progress(1))
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Waitany", "the reception FIFO failed");
	}
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
	MPI_API();
	if (count < 0 || (count && !requests) || !index || !flag)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Testany", "bad request array, index or flag");
	if (mpi_progress(0))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Testany", "the reception FIFO failed");
	int active = 0;
	for (int i = 0; i < count; i++) {
		if (!request_active(requests[i]))
			continue;
		active = 1;
		if (request_ready(requests[i])) {
			*index = i;
			*flag = 1;
			return MPI_Wait(&requests[i], status);
		}
	}
	*index = MPI_UNDEFINED;
	*flag = !active;
	if (!active)
		empty_status(status);
	return MPI_SUCCESS;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
	MPI_API();
	if (incount < 0 || (incount && (!requests || !indices)) || !outcount)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Testsome", "bad arrays or count");
	if (mpi_progress(0))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Testsome", "the reception FIFO failed");
	int n = 0, active = 0, err = 0;
	for (int i = 0; i < incount; i++) {
		if (!request_active(requests[i]))
			continue;
		active = 1;
		if (request_ready(requests[i])) {
			MPI_Status *st = statuses ? &statuses[n] : MPI_STATUS_IGNORE;
			int rc = MPI_Wait(&requests[i], st);
			if (rc && statuses)
				statuses[n].MPI_ERROR = rc;
			err |= rc != 0;
			indices[n++] = i;
		}
	}
	*outcount = active ? n : MPI_UNDEFINED;
	return err ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
	MPI_API();
	int rc;
	while (!(rc = MPI_Testsome(incount, requests, outcount, indices, statuses)) && *outcount == 0)
		if (mpi_progress(1))
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Waitsome", "the reception FIFO failed");
	return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
	MPI_API();
	if (count < 0 || (count && !requests) || !flag)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Testall", "bad request array or flag");
	if (mpi_progress(0))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Testall", "the reception FIFO failed");
	for (int i = 0; i < count; i++)
		if (!request_ready(requests[i])) {
			*flag = 0;
			return MPI_SUCCESS;
		}
	*flag = 1;
	return MPI_Waitall(count, requests, statuses);
}

/* A receive not yet matched leaves the queue and completes as cancelled;
 * anything else (a send, a matched receive) completes as it would, which
 * MPI allows: MPI_Test_cancelled then says it was not cancelled. */
int MPI_Cancel(MPI_Request *request)
{
	MPI_API();
	if (!request || *request == MPI_REQUEST_NULL)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Cancel", "no request");
	struct torus_mpi_request *r = *request;
	if (r->send || r->done || r->proc_null || (r->persistent && !r->active))
		return MPI_SUCCESS;
	struct torus_mpi_request **pp = &mpi_g.posted;
	while (*pp && *pp != r)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = r->next;
		r->next = NULL;
		r->st = (MPI_Status){.MPI_SOURCE = MPI_ANY_SOURCE, .MPI_TAG = MPI_ANY_TAG, .cancelled_ = 1};
		r->done = 1;
	}
	return MPI_SUCCESS;
}

int MPI_Test_cancelled(const MPI_Status *status, int *flag)
{
	MPI_API();
	if (!status || !flag)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Test_cancelled", "NULL status or flag");
	*flag = status->cancelled_ != 0;
	return MPI_SUCCESS;
}

/* A request freed: a receive still posted leaves the queue; a send goes on. */
int MPI_Request_free(MPI_Request *request)
{
	MPI_API();
	if (!request || *request == MPI_REQUEST_NULL)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Request_free", "no request");
	struct torus_mpi_request *r = *request;
	if (r->persistent && !r->active) {
		/* nothing posted */
	} else if (!r->send && !r->done && !r->proc_null) {
		struct torus_mpi_request **pp = &mpi_g.posted;
		while (*pp && *pp != r)
			pp = &(*pp)->next;
		if (!*pp) { /* taken by a message still arriving: let it land first */
			while (!r->done)
				if (mpi_progress(1))
					break;
		} else {
			*pp = r->next;
		}
	} else if (r->send && r->rzv && !r->fin) {
		/* a rendezvous not yet done: it goes on, and the handler frees
		 * the request when the receiver says it has the data */
		r->freed = 1;
		*request = MPI_REQUEST_NULL;
		return MPI_SUCCESS;
	} else if (r->send) {
		/* its envelope lives in the request: wait until it has left */
		while (mpi_send_done() == 0)
			if (mpi_progress(1))
				break;
	}
	mpi_request_free(r);
	*request = MPI_REQUEST_NULL;
	return MPI_SUCCESS;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
	MPI_API();
	if (!request || !flag)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Test", "NULL request or flag");
	if (*request == MPI_REQUEST_NULL) {
		*flag = 1;
		empty_status(status);
		return MPI_SUCCESS;
	}
	struct torus_mpi_request *r = *request;
	if (mpi_progress(0))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Test", "the reception FIFO failed");
	int d = request_ready(r);
	*flag = d;
	return d ? MPI_Wait(request, status) : MPI_SUCCESS;
}

/* ------------------------------------------------------ persistent requests */

/* a persistent send's mode: standard (and ready), synchronous, buffered */
enum { PMODE_STD, PMODE_SYNC, PMODE_BUF };

static int persistent(const char *fn, const void *buf, int count, MPI_Datatype datatype, int peer, int tag,
		      MPI_Comm comm, MPI_Request *request, int recv, int mode)
{
	if (!request)
		return mpi_error(comm, MPI_ERR_REQUEST, fn, "NULL request");
	int rc = mpi_check_p2p(fn, buf, count, datatype, peer, tag, comm, recv);
	if (rc)
		return rc;
	struct torus_mpi_request *r = mpi_request_new();
	if (!r)
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	*r = (struct torus_mpi_request){.persistent = 1, .precv = recv, .pmode = mode, .pbuf = buf, .pcount = count,
					 .ppeer = peer, .ptag = tag, .ptype = datatype, .comm = comm};
	*request = r;
	return MPI_SUCCESS;
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		  MPI_Request *request)
{
	MPI_API();
	return persistent("MPI_Send_init", buf, count, datatype, dest, tag, comm, request, 0, PMODE_STD);
}

/* a ready send is a standard one here, as MPI allows */
int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		   MPI_Request *request)
{
	MPI_API();
	return persistent("MPI_Rsend_init", buf, count, datatype, dest, tag, comm, request, 0, PMODE_STD);
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		   MPI_Request *request)
{
	MPI_API();
	return persistent("MPI_Ssend_init", buf, count, datatype, dest, tag, comm, request, 0, PMODE_SYNC);
}

int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		   MPI_Request *request)
{
	MPI_API();
	return persistent("MPI_Bsend_init", buf, count, datatype, dest, tag, comm, request, 0, PMODE_BUF);
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
		  MPI_Request *request)
{
	MPI_API();
	return persistent("MPI_Recv_init", buf, count, datatype, source, tag, comm, request, 1, PMODE_STD);
}

int MPI_Start(MPI_Request *request)
{
	MPI_API();
	if (!request || *request == MPI_REQUEST_NULL || !(*request)->persistent)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Start", "not a persistent request");
	struct torus_mpi_request *r = *request;
	if (r->active)
		return mpi_error(r->comm, MPI_ERR_REQUEST, "MPI_Start", "the request is active already");
	struct torus_mpi_request keep = *r;
	memset(r, 0, sizeof(*r));
	r->persistent = 1, r->precv = keep.precv, r->pbuf = keep.pbuf, r->pcount = keep.pcount, r->ppeer = keep.ppeer;
	r->ptag = keep.ptag, r->ptype = keep.ptype, r->comm = keep.comm, r->active = 1, r->pmode = keep.pmode;
	uint64_t bytes;
	void *where;
	const void *src;
	if (r->ppeer == MPI_PROC_NULL) {
		r->proc_null = r->done = 1;
	} else if (r->pmode == PMODE_BUF) {
		/* into the attached buffer, as MPI_Ibsend: complete at once */
		int rc = MPI_Bsend(r->pbuf, r->pcount, r->ptype, r->ppeer, r->ptag, r->comm);
		if (rc) {
			r->active = 0;
			return rc;
		}
		r->proc_null = r->done = 1;
	} else if (r->precv) {
		if (mpi_recv_place(r, (void *)(uintptr_t)r->pbuf, r->pcount, r->ptype, &where, &bytes)) {
			r->active = 0;
			return mpi_error(r->comm, MPI_ERR_INTERN, "MPI_Start", "out of memory");
		}
		mpi_post_recv(where, bytes, r->ppeer, r->ptag, r->comm, r);
	} else if (mpi_send_bytes(r->pbuf, r->pcount, r->ptype, &bytes, &r->tmp, &src) ||
		   mpi_post_send(src, bytes, r->ppeer, r->ptag, r->comm, r, r->pmode == PMODE_SYNC ? SEND_RZV : SEND_AUTO)) {
		free(r->tmp);
		r->tmp = NULL;
		r->active = 0;
		return mpi_error(r->comm, MPI_ERR_INTERN, "MPI_Start", "out of memory, or the DMA unit refused the message");
	}
	return MPI_SUCCESS;
}

int MPI_Startall(int count, MPI_Request requests[])
{
	MPI_API();
	if (count < 0 || (count && !requests))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Startall", "bad request array");
	for (int i = 0; i < count; i++) {
		int rc = MPI_Start(&requests[i]);
		if (rc)
			return rc;
	}
	return MPI_SUCCESS;
}
