/* SPDX-License-Identifier: MIT */
/*
 * remote_int.h - what remote.c (the calls, one at a time) and remote_aio.c
 * (chunk puts and fetches in flight) share.  Only they include it, and
 * only where librados is (HAVE_RADOS).
 */
#ifndef OBJFS_REMOTE_INT_H
#define OBJFS_REMOTE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <rados/librados.h>
#include <stdint.h>

#include "src/remote.h"

#define SUMS_XATTR	"objfs.sums"
#define REMOTE_NOTIFIES	64	/* notifies in flight at most */
#define SEEN_XATTR	"objfs.seen"	/* shared mode: when a put last found
					 * the chunk (objfs_remote_set_touch) */

struct rados_remote {
	struct objfs_remote base;	/* its table: remote.c's rados_ops */
	rados_t cluster;
	rados_ioctx_t io;
	int touch;			/* objfs_remote_set_touch */
	/* Notifies sent and not yet answered (objfs_remote_notify), under
	 * notify_mu, a leaf.  A slot stays where it is until its notify is
	 * answered and released: librados keeps the addresses of its reply
	 * and reply_len and writes them when the answer comes. */
	pthread_mutex_t notify_mu;
	struct remote_notify {
		rados_completion_t c;
		char *reply;
		size_t reply_len;
		int used;
	} notifies[REMOTE_NOTIFIES];
	unsigned nnotifies;		/* slots used */
	/* The watch (one at most): its callback. */
	void (*watch_cb)(void *arg, uint64_t notify_id, uint64_t cookie,
			const void *data, size_t len);
	void *watch_arg;
	char watch_name[64];
	_Atomic int watch_lost;		/* its error callback ran */
	/* Requests waited for until a system call's deadline
	 * (objfs_rados_wait): every completion's callback wakes done_cv.
	 * done_mu is a leaf. */
	pthread_mutex_t done_mu;
	pthread_cond_t done_cv;
	_Atomic uint64_t cancelled;	/* requests given up at a deadline */
	unsigned jobs;			/* remote_lock.c's threads, under
					 * done_mu */
};

/* remote_lock.c: the locks and the cluster's figures of the table
 * (src/remote.h), each bounded by a system call's deadline; and the wait
 * for those left running past one (pool_close). */
int objfs_rados_hold(struct objfs_remote *base, const char *name,
		const char *holder, unsigned seconds, char *who, size_t whosize);
int objfs_rados_hold_shared(struct objfs_remote *base, const char *name,
		const char *holder, unsigned seconds, char *who, size_t whosize);
int objfs_rados_hold_renew(struct objfs_remote *base, const char *name,
		const char *holder, unsigned seconds, int shared);
int objfs_rados_holder(struct objfs_remote *base, const char *name,
		char *client, size_t clen, char *cookie, size_t klen);
int objfs_rados_break(struct objfs_remote *base, const char *name,
		const char *client, const char *cookie);
int objfs_rados_release(struct objfs_remote *base, const char *name,
		const char *holder);
int objfs_rados_df(struct objfs_remote *base, uint64_t *total,
		uint64_t *avail);
void objfs_rados_jobs_wait(struct rados_remote *r);

/* A completion whose end wakes objfs_rados_wait's waiters. */
int objfs_rados_completion(struct rados_remote *r, rados_completion_t *c);
/* Wait for request @c (made by objfs_rados_completion, sent): its result.
 * On a thread serving a system call (src/base/deadline.h), not past the
 * call's deadline: then the request is cancelled (librados forgets it;
 * the OSD may still apply it, as after a timeout) and -ETIMEDOUT.  A
 * thread with no deadline waits for librados's own operation timeout.
 * @c is complete when this returns, its callback run. */
int objfs_rados_wait(struct rados_remote *r, rados_completion_t c);
/* @op on object @name, sent and waited for so: its result, and with @ver
 * the version the OSD answered with. */
int objfs_rados_write(struct rados_remote *r, rados_write_op_t op,
		const char *name, uint64_t *ver);
int objfs_rados_read(struct rados_remote *r, rados_read_op_t op,
		const char *name, uint64_t *ver);

/* A find of chunk @name (its sums @x, @xlen bytes) made a write: the
 * sums compared and SEEN_XATTR set in one operation on @op. */
void objfs_rados_touch_op(rados_write_op_t op, const unsigned char *x,
		size_t xlen, char stamp[32]);

/* Does the object @name hold a chunk of @len bytes with sums @tab?  1 yes,
 * 0 no (other bytes, or not one of ours), -errno. */
int objfs_rados_chunk_same(struct rados_remote *r, const char *name,
		uint32_t len, unsigned shift, const unsigned char *tab);

/* remote_aio.c: the puts and fetches in flight of the table
 * (src/remote.h says what each does). */
int objfs_rados_puts_new(struct objfs_remote *base, unsigned window,
		struct objfs_remote_puts **out);
int objfs_rados_puts_add(struct objfs_remote_puts *base, const char *name,
		const void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab, int look);
int objfs_rados_puts_wait(struct objfs_remote_puts *base);
int objfs_rados_puts_result(const struct objfs_remote_puts *base, size_t k);
void objfs_rados_puts_counts(const struct objfs_remote_puts *base,
		size_t *looks, size_t *at_once);
void objfs_rados_puts_free(struct objfs_remote_puts *base);
int objfs_rados_fetch_start(struct objfs_remote *base, const char *name,
		uint32_t len, struct objfs_remote_fetch **out);
int objfs_rados_fetch_done(const struct objfs_remote_fetch *base);
int objfs_rados_fetch_take(struct objfs_remote_fetch *base, void *buf,
		unsigned shift, uint64_t csum);
void objfs_rados_fetch_free(struct objfs_remote_fetch *base);

/* remote_notify.c: watch, notify and omap of the table (src/remote.h);
 * objfs_rados_notifies_reap frees answered notifies (all: every one, at
 * close), under notify_mu. */
int objfs_rados_watch(struct objfs_remote *base, const char *name,
		unsigned timeout_s, void (*cb)(void *arg, uint64_t notify_id,
			uint64_t cookie, const void *data, size_t len),
		void *arg, uint64_t *cookie);
int objfs_rados_watch_lost(struct objfs_remote *base);
int objfs_rados_notify_ack(struct objfs_remote *base, uint64_t notify_id,
		uint64_t cookie, const void *buf, size_t len);
int objfs_rados_omap_set(struct objfs_remote *base, const char *name,
		const char *key, const void *val, size_t len);
int objfs_rados_omap_del_if(struct objfs_remote *base, const char *name,
		const char *key, const void *val, size_t len);
int objfs_rados_omap_list(struct objfs_remote *base, const char *name,
		int (*cb)(void *arg, const char *key, const void *val,
			size_t len), void *arg);
int objfs_rados_ask(struct objfs_remote *base, const char *name,
		const void *buf, size_t len, unsigned timeout_ms,
		void (*cb)(void *arg, const void *data, size_t len), void *arg);
void objfs_rados_unwatch(struct objfs_remote *base, uint64_t cookie);
int objfs_rados_notify(struct objfs_remote *base, const char *name);
void objfs_rados_notifies_reap(struct rados_remote *r, int all);

#endif
