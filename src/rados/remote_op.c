/* SPDX-License-Identifier: MIT */
/*
 * remote_op.c - one RADOS request of the table (remote.c, remote_aio.c,
 * remote_notify.c), sent asynchronously and waited for until the deadline
 * of the system call the thread serves (src/base/deadline.h), then
 * cancelled: librados gives every operation the client's whole timeout
 * (rados_osd_op_timeout), which a request sent late in a call would
 * outlast (doc/design.md, "One call, one timeout").
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "src/base/deadline.h"
#include "src/base/sync.h"
#include "src/rados/remote.h"

#ifdef HAVE_RADOS
#include "src/rados/remote_int.h"

static void
call_done(rados_completion_t c, void *arg)
{
	struct rados_remote *r = arg;

	(void)c;
	pthread_mutex_lock(&r->done_mu);
	pthread_cond_broadcast(&r->done_cv);
	pthread_mutex_unlock(&r->done_mu);
}

int
objfs_rados_completion(struct rados_remote *r, rados_completion_t *c)
{
	return rados_aio_create_completion2(r, call_done, c);
}

int
objfs_rados_wait(struct rados_remote *r, rados_completion_t c)
{
	int late = 0;

	if (objfs_deadline()) {
		/* The callback wakes us under done_mu after the completion
		 * says complete: no wake-up is missed between. */
		pthread_mutex_lock(&r->done_mu);
		while (!rados_aio_is_complete(c)) {
			if (objfs_cond_wait_until(&r->done_cv, &r->done_mu) ==
			    ETIMEDOUT) {
				late = !rados_aio_is_complete(c);
				break;
			}
		}
		pthread_mutex_unlock(&r->done_mu);
	}
	/* Cancelled: librados ends it at once with -ECANCELED and drops
	 * its answer if one comes (it writes nothing into the request's
	 * buffers after); -ENOENT when it answered in between. */
	if (late && rados_aio_cancel(r->io, c) == 0) {
		rados_aio_wait_for_complete_and_cb(c);
		atomic_fetch_add(&r->cancelled, 1);
		return -ETIMEDOUT;
	}
	rados_aio_wait_for_complete_and_cb(c);
	return rados_aio_get_return_value(c);
}

/* @wop or @rop on object @name, sent and waited for (objfs_rados_wait). */
static int
op_run(struct rados_remote *r, rados_write_op_t wop, rados_read_op_t rop,
		const char *name, uint64_t *ver)
{
	rados_completion_t c;
	int rc = objfs_rados_completion(r, &c);

	if (rc < 0)
		return rc;
	rc = wop ? rados_aio_write_op_operate(wop, r->io, c, name, NULL, 0) :
		rados_aio_read_op_operate(rop, r->io, c, name, 0);
	if (rc == 0)
		rc = objfs_rados_wait(r, c);
	if (rc >= 0 && ver)
		*ver = rados_aio_get_version(c);
	rados_aio_release(c);
	return rc;
}

int
objfs_rados_write(struct rados_remote *r, rados_write_op_t op,
		const char *name, uint64_t *ver)
{
	return op_run(r, op, NULL, name, ver);
}

int
objfs_rados_read(struct rados_remote *r, rados_read_op_t op,
		const char *name, uint64_t *ver)
{
	return op_run(r, NULL, op, name, ver);
}

#endif	/* HAVE_RADOS */
