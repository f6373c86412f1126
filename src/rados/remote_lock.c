/* SPDX-License-Identifier: MIT */
/*
 * remote_lock.c - the pool's advisory locks (the holds: the namespace's,
 * the nodes', compaction's) and the cluster's figures, for the table of
 * remote.c: the calls librados has only in a blocking form.
 *
 * One call, one timeout (src/base/deadline.h): librados gives a blocking
 * call its whole operation timeout, whatever a system call has left.  So
 * on a thread serving a system call each of these runs on a thread of its
 * own, waited for until the call's deadline; past it the call gets
 * -ETIMEDOUT and the thread finishes alone and frees what it used.  What
 * it does after is what a request that timed out may do anyway (land
 * late: a lock taken or renewed late is this node's, and lapses; a break
 * or release late ends a lock its caller meant to end).  A thread with no
 * deadline (the store's own: the renewer, the follower, mount and
 * unmount) calls librados directly.  pool_close waits for the threads
 * left running (jobs, under done_mu).
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/deadline.h"
#include "src/base/sync.h"
#include "src/rados/remote.h"

#ifdef HAVE_RADOS
#include "src/rados/remote_int.h"

#define HOLD_LOCK	"objfs"
#define LIST_MAX	512	/* lockers' clients, cookies, addresses */

enum { J_LOCK = 1, J_LOCKERS, J_UNLOCK, J_BREAK, J_DF };

struct lock_job {
	int kind;
	struct rados_remote *r;
	char *name, *holder, *client;	/* the caller's, copied */
	struct timeval tv;
	int shared;
	uint8_t flags;
	int rc;
	/* J_LOCKERS's answer: NUL-separated lists. */
	char clients[LIST_MAX], cookies[LIST_MAX];
	/* J_DF's. */
	uint64_t total, avail;
	int done, abandoned;		/* under r->done_mu */
};

static void
job_free(struct lock_job *j)
{
	free(j->name);
	free(j->holder);
	free(j->client);
	free(j);
}

static struct lock_job *
job_new(struct rados_remote *r, int kind, const char *name,
		const char *holder, const char *client)
{
	struct lock_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->kind = kind;
	j->r = r;
	j->name = name ? strdup(name) : NULL;
	j->holder = holder ? strdup(holder) : NULL;
	j->client = client ? strdup(client) : NULL;
	if ((name && !j->name) || (holder && !j->holder) ||
	    (client && !j->client)) {
		job_free(j);
		return NULL;
	}
	return j;
}

static void
job_run(struct lock_job *j)
{
	struct rados_remote *r = j->r;

	switch (j->kind) {
	case J_LOCK:
		if (j->shared)
			j->rc = rados_lock_shared(r->io, j->name, HOLD_LOCK,
				j->holder, "objfs-shared", "objfs shared mount",
				&j->tv, j->flags);
		else
			j->rc = rados_lock_exclusive(r->io, j->name, HOLD_LOCK,
				j->holder, "objfs mount", &j->tv, j->flags);
		break;
	case J_LOCKERS: {
		char tag[64], addrs[LIST_MAX];
		size_t tl = sizeof(tag), cl = sizeof(j->clients),
		       kl = sizeof(j->cookies), al = sizeof(addrs);
		int excl;

		j->rc = rados_list_lockers(r->io, j->name, HOLD_LOCK, &excl,
			tag, &tl, j->clients, &cl, j->cookies, &kl, addrs, &al);
		break;
	}
	case J_UNLOCK:
		j->rc = rados_unlock(r->io, j->name, HOLD_LOCK, j->holder);
		break;
	case J_BREAK:
		j->rc = rados_break_lock(r->io, j->name, HOLD_LOCK, j->client,
			j->holder);
		break;
	case J_DF: {
		struct rados_cluster_stat_t st;

		j->rc = rados_cluster_stat(r->cluster, &st);
		if (j->rc == 0) {
			j->total = st.kb << 10;
			j->avail = st.kb_avail << 10;
		}
		break;
	}
	default:
		j->rc = -EINVAL;
	}
}

static void *
job_thread(void *arg)
{
	struct lock_job *j = arg;
	struct rados_remote *r = j->r;
	int left;

	job_run(j);
	pthread_mutex_lock(&r->done_mu);
	j->done = 1;
	left = j->abandoned;
	if (left)
		r->jobs--;
	pthread_cond_broadcast(&r->done_cv);
	pthread_mutex_unlock(&r->done_mu);
	if (left)
		job_free(j);	/* its caller's call had ended */
	return NULL;
}

/* Run @j: 0 with its result in j->rc, or -ETIMEDOUT when the system
 * call's deadline came first (@j is then the thread's to free). */
static int
job_do(struct lock_job *j)
{
	struct rados_remote *r = j->r;
	pthread_attr_t at;
	pthread_t th;
	int rc, left = 0;

	if (!objfs_deadline()) {
		job_run(j);
		return 0;
	}
	if (pthread_attr_init(&at)) {
		job_run(j);
		return 0;
	}
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&r->done_mu);
	r->jobs++;
	rc = pthread_create(&th, &at, job_thread, j);
	if (rc)
		r->jobs--;
	pthread_mutex_unlock(&r->done_mu);
	pthread_attr_destroy(&at);
	if (rc) {
		/* No thread to spare: the blocking call, as before. */
		job_run(j);
		return 0;
	}
	pthread_mutex_lock(&r->done_mu);
	while (!j->done) {
		if (objfs_cond_wait_until(&r->done_cv, &r->done_mu) ==
		    ETIMEDOUT && !j->done) {
			j->abandoned = left = 1;
			break;
		}
	}
	if (!left)
		r->jobs--;
	pthread_mutex_unlock(&r->done_mu);
	if (left)
		atomic_fetch_add(&r->cancelled, 1);
	return left ? -ETIMEDOUT : 0;
}

/* Run @j and free it (or leave it to its thread): its result. */
static int
job_rc(struct lock_job *j)
{
	int rc;

	if (!j)
		return -ENOMEM;
	rc = job_do(j);
	if (rc == 0) {
		rc = j->rc;
		job_free(j);
	}
	return rc;
}

void
objfs_rados_jobs_wait(struct rados_remote *r)
{
	pthread_mutex_lock(&r->done_mu);
	while (r->jobs)
		pthread_cond_wait(&r->done_cv, &r->done_mu);
	pthread_mutex_unlock(&r->done_mu);
}

static int
lock_call(struct rados_remote *r, const char *name, const char *holder,
		unsigned seconds, int shared, uint8_t flags)
{
	struct lock_job *j = job_new(r, J_LOCK, name, holder, NULL);

	if (j) {
		j->tv.tv_sec = (time_t)seconds;
		j->shared = shared;
		j->flags = flags;
	}
	return job_rc(j);
}

/* Take or renew lock @name for @seconds, exclusive or shared; -EBUSY
 * when another holds it in the other way (or exclusively), its cookie
 * (the holder's own description of itself) in @who. */
static int
hold(struct rados_remote *r, const char *name, const char *holder,
		unsigned seconds, int shared, char *who, size_t whosize)
{
	struct lock_job *j;
	int rc;

	/* Renewing needs the flag; taking it first does not mind it. */
	rc = lock_call(r, name, holder, seconds, shared,
			LIBRADOS_LOCK_FLAG_RENEW);
	if (rc != -EBUSY && rc != -EEXIST)
		return rc;
	if (who && whosize) {
		who[0] = '\0';
		j = job_new(r, J_LOCKERS, name, NULL, NULL);
		if (j && job_do(j) == 0) {
			if (j->rc > 0)
				snprintf(who, whosize, "%s", j->cookies);
			job_free(j);
		} else if (!j) {
			return -ENOMEM;
		}
	}
	return -EBUSY;
}

int
objfs_rados_hold(struct objfs_remote *base, const char *name,
		const char *holder, unsigned seconds, char *who, size_t whosize)
{
	return hold((struct rados_remote *)base, name, holder, seconds, 0,
			who, whosize);
}

int
objfs_rados_hold_shared(struct objfs_remote *base, const char *name,
		const char *holder, unsigned seconds, char *who, size_t whosize)
{
	return hold((struct rados_remote *)base, name, holder, seconds, 1,
			who, whosize);
}

int
objfs_rados_hold_renew(struct objfs_remote *base, const char *name,
		const char *holder, unsigned seconds, int shared)
{
	int rc;

	/* MUST_RENEW: the OSD drops expired lockers first, so a lock that
	 * lapsed answers ENOENT even when nobody took it meanwhile. */
	rc = lock_call((struct rados_remote *)base, name, holder, seconds,
			shared, LIBRADOS_LOCK_FLAG_MUST_RENEW);
	return rc == -EBUSY || rc == -EEXIST ? -ENOENT : rc;
}

int
objfs_rados_holder(struct objfs_remote *base, const char *name,
		char *client, size_t clen, char *cookie, size_t klen)
{
	struct lock_job *j = job_new((struct rados_remote *)base, J_LOCKERS,
			name, NULL, NULL);
	int rc;

	if (!j)
		return -ENOMEM;
	rc = job_do(j);
	if (rc < 0)
		return rc;
	rc = j->rc;
	if (rc > 0) {
		/* The first locker of each list (NUL-separated). */
		if (strlen(j->clients) >= clen || strlen(j->cookies) >= klen)
			rc = -ERANGE;
		else {
			strcpy(client, j->clients);
			strcpy(cookie, j->cookies);
		}
	}
	job_free(j);
	if (rc < 0)
		return rc;
	return rc == 0 ? -ENOENT : 0;
}

int
objfs_rados_break(struct objfs_remote *base, const char *name,
		const char *client, const char *cookie)
{
	int rc = job_rc(job_new((struct rados_remote *)base, J_BREAK, name,
			cookie, client));

	return rc == -ENOENT ? 0 : rc;
}

int
objfs_rados_release(struct objfs_remote *base, const char *name,
		const char *holder)
{
	int rc = job_rc(job_new((struct rados_remote *)base, J_UNLOCK, name,
			holder, NULL));

	return rc == -ENOENT ? 0 : rc;
}

int
objfs_rados_df(struct objfs_remote *base, uint64_t *total, uint64_t *avail)
{
	struct lock_job *j = job_new((struct rados_remote *)base, J_DF, NULL,
			NULL, NULL);
	int rc;

	if (!j)
		return -ENOMEM;
	rc = job_do(j);
	if (rc < 0)
		return rc;
	rc = j->rc;
	*total = j->total;
	*avail = j->avail;
	job_free(j);
	return rc;
}

#endif	/* HAVE_RADOS */
