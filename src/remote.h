/* SPDX-License-Identifier: MIT */
/*
 * remote.h - an object store as the durable home of the tree and its
 * chunks, as the remote tier (src/cluster/) sees it: a Ceph pool
 * (src/rados/, -o remote=rados:POOL[/NAMESPACE]) or an S3 bucket
 * (src/s3/, -o remote=s3://BUCKET[/PREFIX]), each behind this table.
 * Every call is bounded by the connection's timeout and fails with
 * -ETIMEDOUT when the service does not answer within it, never hanging
 * beyond; one made on a thread serving a system call ends by the call's
 * deadline (src/base/deadline.h: the S3 engine shortens it, the RADOS
 * client cancels it or leaves a blocking one to a thread of its own), and
 * once the deadline has passed is not sent: -ETIMEDOUT at once.  Thread-safe: calls may come from any thread at once.  A call
 * a store cannot make (an S3 bucket has no omap, watch or notify: shared
 * mode is the pool's) answers -ENOTSUP.
 */
#ifndef OBJFS_REMOTE_H
#define OBJFS_REMOTE_H

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "src/base/clock.h"
#include "src/base/csum.h"
#include "src/base/deadline.h"
#include "src/base/log.h"

struct objfs_remote_config {
	const char *spec;	/* rados:POOL[/NS] or s3://BUCKET[/PREFIX] */
	const char *conf;	/* ceph.conf; NULL: /etc/ceph/ceph.conf */
	const char *id;		/* the client's name (client.ID); NULL:
				 * admin */
	const char *endpoint;	/* S3: the service's URL (NULL: from the
				 * environment and ~/.aws/config, else
				 * AWS's for the region) */
	const char *addressing;	/* S3: "path", "virtual" or NULL (auto) */
	int insecure;		/* S3: an http:// endpoint accepted */
	unsigned timeout_s;	/* every operation; 0: the default, 30 */
};

#define OBJFS_REMOTE_TIMEOUT	30u
#define OBJFS_REMOTE_HOLD	30u	/* seconds a hold lasts unrenewed */
#define OBJFS_REMOTE_NAME_MAX	96	/* pool and namespace names */

struct objfs_remote;
struct objfs_remote_puts;
struct objfs_remote_fetch;

/* What a store does, each call as the inline function of its name below
 * says (NULL: it cannot: -ENOTSUP). */
struct objfs_remote_ops {
	const char *kind;	/* "rados", "s3" */
	void (*close)(struct objfs_remote *r);
	/* Lines for the status file ("remote_...: value\n"), or none. */
	size_t (*status)(struct objfs_remote *r, char *buf, size_t size);
	int (*put)(struct objfs_remote *r, const char *name, const void *buf,
			size_t len);
	int (*create)(struct objfs_remote *r, const char *name,
			const void *buf, size_t len);
	int (*get)(struct objfs_remote *r, const char *name, uint64_t off,
			void *buf, size_t len, size_t *got);
	int (*stat)(struct objfs_remote *r, const char *name, uint64_t *size);
	int (*remove)(struct objfs_remote *r, const char *name);
	int (*hold)(struct objfs_remote *r, const char *name,
			const char *holder, unsigned seconds, char *who,
			size_t whosize);
	int (*hold_shared)(struct objfs_remote *r, const char *name,
			const char *holder, unsigned seconds, char *who,
			size_t whosize);
	int (*hold_renew)(struct objfs_remote *r, const char *name,
			const char *holder, unsigned seconds, int shared);
	int (*release)(struct objfs_remote *r, const char *name,
			const char *holder);
	int (*holder)(struct objfs_remote *r, const char *name, char *client,
			size_t clen, char *cookie, size_t klen);
	int (*break_)(struct objfs_remote *r, const char *name,
			const char *client, const char *cookie);
	int (*list)(struct objfs_remote *r,
			int (*cb)(void *arg, const char *name), void *arg);
	int (*list_prefix)(struct objfs_remote *r, const char *start,
			int (*cb)(void *arg, const char *name), void *arg);
	void (*set_touch)(struct objfs_remote *r, int on);
	int (*age_ver)(struct objfs_remote *r, const char *name,
			uint64_t *size, int64_t *mtime, uint64_t *ver);
	int (*remove_at)(struct objfs_remote *r, const char *name,
			uint64_t ver);
	int (*watch)(struct objfs_remote *r, const char *name,
			unsigned timeout_s,
			void (*cb)(void *arg, uint64_t notify_id, uint64_t cookie, const void *data, size_t len),
			void *arg, uint64_t *cookie);
	void (*unwatch)(struct objfs_remote *r, uint64_t cookie);
	int (*watch_lost)(struct objfs_remote *r);
	int (*notify_ack)(struct objfs_remote *r, uint64_t notify_id,
			uint64_t cookie, const void *buf, size_t len);
	int (*omap_set)(struct objfs_remote *r, const char *name,
			const char *key, const void *val, size_t len);
	int (*omap_del_if)(struct objfs_remote *r, const char *name,
			const char *key, const void *val, size_t len);
	int (*omap_list)(struct objfs_remote *r, const char *name,
			int (*cb)(void *arg, const char *key, const void *val, size_t len),
			void *arg);
	int (*notify)(struct objfs_remote *r, const char *name);
	int (*ask)(struct objfs_remote *r, const char *name, const void *buf,
			size_t len, unsigned timeout_ms,
			void (*cb)(void *arg, const void *data, size_t len),
			void *arg);
	int (*df)(struct objfs_remote *r, uint64_t *total, uint64_t *avail);
	int (*get_all)(struct objfs_remote *r, const char *name, void **buf,
			size_t *len);
	int (*chunk_put)(struct objfs_remote *r, const char *name,
			const void *buf, uint32_t len, unsigned shift,
			const unsigned char *tab);
	int (*chunk_get)(struct objfs_remote *r, const char *name, void *buf,
			uint32_t len, unsigned shift, uint64_t csum);
	int (*puts_new)(struct objfs_remote *r, unsigned window,
			struct objfs_remote_puts **out);
	int (*puts_add)(struct objfs_remote_puts *p, const char *name,
			const void *buf, uint32_t len, unsigned shift,
			const unsigned char *tab, int look);
	int (*puts_wait)(struct objfs_remote_puts *p);
	int (*puts_result)(const struct objfs_remote_puts *p, size_t k);
	void (*puts_counts)(const struct objfs_remote_puts *p, size_t *looks,
			size_t *at_once);
	void (*puts_free)(struct objfs_remote_puts *p);
	int (*fetch_start)(struct objfs_remote *r, const char *name,
			uint32_t len, struct objfs_remote_fetch **out);
	int (*fetch_done)(const struct objfs_remote_fetch *f);
	int (*fetch_take)(struct objfs_remote_fetch *f, void *buf,
			unsigned shift, uint64_t csum);
	void (*fetch_free)(struct objfs_remote_fetch *f);
	int (*log_put)(struct objfs_remote *r, uint64_t epoch, uint64_t seq,
			const void *buf, size_t len);
	int (*log_get)(struct objfs_remote *r, uint64_t epoch, uint64_t seq,
			void *buf, size_t cap, size_t *len);
	int (*head_get)(struct objfs_remote *r, void *buf, size_t cap,
			size_t *len, uint64_t *ver);
	int (*head_put)(struct objfs_remote *r, const void *buf, size_t len,
			uint64_t *ver);
};

/* Each store's connection, puts and fetches begin with their table. */
struct objfs_remote {
	const struct objfs_remote_ops *ops;
	/* One call, one timeout (src/base/deadline.h).  @whole_ns: set by
	 * a store that fails a call at once while it does not answer
	 * (RADOS: a request the call could not wait a whole timeout for
	 * would only be cancelled at the deadline), 0 by one that tries
	 * every request (the S3 engine, whose retries may be answered).
	 * @silent_since: the monotonic time of the first of the latest
	 * requests that got no answer, 0 once one answers. */
	uint64_t whole_ns;
	_Atomic uint64_t silent_since;
	/* Requests under way, and when the last answer came: requests
	 * waiting with no answer for OBJFS_REMOTE_SUSPECT_NS make the
	 * store suspect before any has timed out. */
	_Atomic int inflight;
	_Atomic uint64_t heard_at;
};

#define OBJFS_REMOTE_SUSPECT_NS	(2ull * 1000000000u)
struct objfs_remote_puts {
	const struct objfs_remote_ops *ops;
};
struct objfs_remote_fetch {
	const struct objfs_remote_ops *ops;
};

/* A request of a system call's thread is not sent (-ETIMEDOUT at once)
 * once the call's deadline has passed, nor, on a store with @whole_ns,
 * while it does not answer and the call has less than a whole timeout
 * left (the request would be cut short before the store's own timeout
 * could tell).  The store's
 * own threads (no deadline) always send: their requests find out when
 * it answers again. */
static inline int
objfs_remote_late(struct objfs_remote *r)
{
	if (!objfs_deadline())
		return 0;
	if (objfs_deadline_passed())
		return 1;
	if (!r->whole_ns ||
	    objfs_deadline_cap_ns(r->whole_ns, 0) >= r->whole_ns)
		return 0;
	if (atomic_load(&r->silent_since))
		return 1;
	/* Suspect: requests under way, and nothing heard for a while; a
	 * call that has waited as long itself does not send another (the
	 * first request of a call always goes: a slow answer is not none). */
	return atomic_load(&r->inflight) > 0 && atomic_load(&r->heard_at) &&
		objfs_mono_ns() - atomic_load(&r->heard_at) >
		OBJFS_REMOTE_SUSPECT_NS &&
		objfs_deadline_cap_ns(r->whole_ns, 0) + OBJFS_REMOTE_SUSPECT_NS <
		r->whole_ns;
}

/* A request is sent (objfs_remote_heard when it ends). */
static inline void
objfs_remote_sent(struct objfs_remote *r)
{
	atomic_fetch_add(&r->inflight, 1);
}

/* @rc is the store's answer (a result, or an error only the store
 * gives), not the want of one (no answer, no connection). */
static inline int
objfs_remote_answer(int rc)
{
	return rc >= 0 || rc == -ENOENT || rc == -EEXIST || rc == -ECANCELED ||
		rc == -EBUSY || rc == -ENODATA || rc == -ERANGE ||
		rc == -EOVERFLOW || rc == -ENOSPC || rc == -EDQUOT ||
		rc == -EFBIG || rc == -ENOTEMPTY || rc == -EPERM ||
		rc == -EACCES || rc == -EINVAL;
}

/* What a request's end says of the store: @rc, passed on. */
static inline int
objfs_remote_heard(struct objfs_remote *r, int rc)
{
	atomic_fetch_sub(&r->inflight, 1);
	if (objfs_remote_answer(rc)) {
		atomic_store(&r->heard_at, objfs_mono_ns());
		if (atomic_load(&r->silent_since))
			atomic_store(&r->silent_since, 0);
		objfs_deadline_progress();	/* an answer */
	} else if (rc == -ETIMEDOUT && !atomic_load(&r->silent_since)) {
		uint64_t z = 0;

		(void)atomic_compare_exchange_strong(&r->silent_since, &z,
			objfs_mono_ns());
	}
	return rc;
}

/* A notify's end: its -ETIMEDOUT may be a watcher's silence (another
 * node's, dead or slow), not the store's; only an answer counts. */
static inline int
objfs_remote_heard_notify(struct objfs_remote *r, int rc)
{
	return rc == -ETIMEDOUT ? (atomic_fetch_sub(&r->inflight, 1), rc) :
		objfs_remote_heard(r, rc);
}

static inline void
objfs_remote_close(struct objfs_remote *r)
{
	if (r)
		r->ops->close(r);
}

static inline size_t
objfs_remote_status(struct objfs_remote *r, char *buf, size_t size)
{
	return r->ops->status ? r->ops->status(r, buf, size) : 0;
}

/* The store's kind, for messages: "rados" or "s3". */
static inline const char *
objfs_remote_kind(const struct objfs_remote *r)
{
	return r->ops->kind;
}

/*
 * Chunks named by their content.  A chunk's object is named
 * "c.<32 hex digits>-<length in hex>" (objfs_content_hash128() of its
 * bytes), holds exactly its bytes, and carries their sub-block sums
 * (its shift byte, then 4 bytes a sum, csum.h: the pool in the xattr
 * "objfs.sums", S3 in its metadata), all written in one atomic operation
 * that creates the object only if it does not exist: the same bytes are
 * stored once, and an object of that name is never changed afterwards.
 */
#define OBJFS_REMOTE_CHUNK_NAME	48
static inline void
objfs_remote_chunk_name(const void *buf, uint32_t len,
		char name[OBJFS_REMOTE_CHUNK_NAME])
{
	unsigned char h[16];
	char *p = name;

	objfs_content_hash128(buf, len, h);
	p += sprintf(p, "c.");
	for (int i = 0; i < 16; i++)
		p += sprintf(p, "%02x", h[i]);
	sprintf(p, "-%x", len);
}

/* Object @name holds exactly @buf[0..len) (replaced whole, atomically:
 * a reader sees the old bytes or the new). */
static inline int
objfs_remote_put(struct objfs_remote *r, const char *name, const void *buf,
		size_t len)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->put ?
	    r->ops->put(r, name, buf, len) : -ENOTSUP));
}

/* The same, only if no object @name exists: -EEXIST otherwise. */
static inline int
objfs_remote_create(struct objfs_remote *r, const char *name, const void *buf,
		size_t len)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->create ?
	    r->ops->create(r, name, buf, len) : -ENOTSUP));
}

/* Up to @len bytes of @name from @off into @buf; *@got the bytes read.
 * -ENOENT when there is no such object. */
static inline int
objfs_remote_get(struct objfs_remote *r, const char *name, uint64_t off,
		void *buf, size_t len, size_t *got)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->get ?
	    r->ops->get(r, name, off, buf, len, got) : -ENOTSUP));
}

/* Its size; -ENOENT when absent. */
static inline int
objfs_remote_stat(struct objfs_remote *r, const char *name, uint64_t *size)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->stat ?
	    r->ops->stat(r, name, size) : -ENOTSUP));
}

/* Remove @name; absent is not an error. */
static inline int
objfs_remote_remove(struct objfs_remote *r, const char *name)
{
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->remove ?
	    r->ops->remove(r, name) : -ENOTSUP));
}

/* An exclusive hold on @name (the lock "objfs"), for @seconds, naming
 * @holder (who holds it, shown to whoever is refused); taken again by
 * the same holder, it is renewed.  -EBUSY with the current holder in
 * @who (may be NULL) when another has it. */
static inline int
objfs_remote_hold(struct objfs_remote *r, const char *name, const char *holder,
		unsigned seconds, char *who, size_t whosize)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->hold ?
	    r->ops->hold(r, name, holder, seconds, who, whosize) : -ENOTSUP));
}

/* The same hold taken shared (tag "objfs-shared"): any number of shared
 * holders, and -EBUSY (@who as above) while an exclusive one has it. */
static inline int
objfs_remote_hold_shared(struct objfs_remote *r, const char *name,
		const char *holder, unsigned seconds, char *who,
		size_t whosize)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->hold_shared ?
	    r->ops->hold_shared(r, name, holder, seconds, who, whosize) : -ENOTSUP));
}

/* Renew a hold @holder has now (exclusive, or shared with @shared), for
 * @seconds from now: -ENOENT when it does not have it any more (it
 * lapsed, whether or not another took it since; then nothing is taken:
 * a lapse is never hidden by taking the lock again). */
static inline int
objfs_remote_hold_renew(struct objfs_remote *r, const char *name,
		const char *holder, unsigned seconds, int shared)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->hold_renew ?
	    r->ops->hold_renew(r, name, holder, seconds, shared) : -ENOTSUP));
}

static inline int
objfs_remote_release(struct objfs_remote *r, const char *name,
		const char *holder)
{
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->release ?
	    r->ops->release(r, name, holder) : -ENOTSUP));
}

/* Who holds @name: the client (client.N) and the holder's description;
 * -ENOENT when nobody does. */
static inline int
objfs_remote_holder(struct objfs_remote *r, const char *name, char *client,
		size_t clen, char *cookie, size_t klen)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->holder ?
	    r->ops->holder(r, name, client, clen, cookie, klen) : -ENOTSUP));
}

/* Take the hold away from @client's @cookie (a holder known dead). */
static inline int
objfs_remote_break(struct objfs_remote *r, const char *name,
		const char *client, const char *cookie)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->break_ ?
	    r->ops->break_(r, name, client, cookie) : -ENOTSUP));
}

/* Call @cb for every object of the namespace (until it returns non-zero:
 * that is the result); in no useful order. */
static inline int
objfs_remote_list(struct objfs_remote *r,
		int (*cb)(void *arg, const char *name), void *arg)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->list ?
	    r->ops->list(r, cb, arg) : -ENOTSUP));
}

/* The names that begin with @start, in name order, each to @cb (which
 * stops the walk with a nonzero return): an index to fetch ahead from.
 * -ENOTSUP where listing costs more than it saves (a pool's listing
 * reads the whole namespace; its reads take a millisecond). */
static inline int
objfs_remote_list_prefix(struct objfs_remote *r, const char *start,
		int (*cb)(void *arg, const char *name), void *arg)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->list_prefix ?
	    r->ops->list_prefix(r, start, cb, arg) : -ENOTSUP));
}

/* Shared mode: a put that finds its chunk in the pool writes to it (the
 * sums compared and an xattr set, one operation), so that the chunk's
 * version and time move; a collector of another mount that read its age
 * before then removes it only at the version it read
 * (objfs_remote_remove_at), and one after sees it young. */
static inline void
objfs_remote_set_touch(struct objfs_remote *r, int on)
{
	if (r->ops->set_touch)
		r->ops->set_touch(r, on);
}

/* An object's size, when it was last written (seconds since 1970) and
 * its RADOS version; -ENOENT when there is none. */
static inline int
objfs_remote_age_ver(struct objfs_remote *r, const char *name, uint64_t *size,
		int64_t *mtime, uint64_t *ver)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->age_ver ?
	    r->ops->age_ver(r, name, size, mtime, ver) : -ENOTSUP));
}

/* Remove @name only if it is still at version @ver: 0, or -ECANCELED when
 * it changed since (or -ENOENT when gone: counted as removed by the
 * caller if it likes). */
static inline int
objfs_remote_remove_at(struct objfs_remote *r, const char *name, uint64_t ver)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->remove_at ?
	    r->ops->remove_at(r, name, ver) : -ENOTSUP));
}

/* Watch @name: @cb runs (in a librados thread, briefly) for each notify
 * sent to it.  A notify with no payload is acknowledged before @cb runs
 * (@data NULL); one with a payload is a request that @cb (or a thread it
 * wakes) answers with objfs_remote_notify_ack(@notify_id, @cookie).
 * The OSD drops a watcher it has not heard from for @timeout_s seconds.
 * *@cookie is for objfs_remote_unwatch. */
static inline int
objfs_remote_watch(struct objfs_remote *r, const char *name,
		unsigned timeout_s,
		void (*cb)(void *arg, uint64_t notify_id, uint64_t cookie, const void *data, size_t len),
		void *arg, uint64_t *cookie)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->watch ?
	    r->ops->watch(r, name, timeout_s, cb, arg, cookie) : -ENOTSUP));
}

static inline void
objfs_remote_unwatch(struct objfs_remote *r, uint64_t cookie)
{
	if (r->ops->unwatch)
		r->ops->unwatch(r, cookie);
}

/* 1 when the watch was lost since it was made (an OSD restarted, or did
 * not answer): the caller watches again. */
static inline int
objfs_remote_watch_lost(struct objfs_remote *r)
{
	return r->ops->watch_lost ?
	    r->ops->watch_lost(r) : -ENOTSUP;
}

/* Answer notify @notify_id with @len bytes of @buf. */
static inline int
objfs_remote_notify_ack(struct objfs_remote *r, uint64_t notify_id,
		uint64_t cookie, const void *buf, size_t len)
{
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->notify_ack ?
	    r->ops->notify_ack(r, notify_id, cookie, buf, len) : -ENOTSUP));
}

/* A key of @name's omap (the object made if absent) set to @val (@len
 * bytes), or removed (@val NULL; absent is not an error). */
static inline int
objfs_remote_omap_set(struct objfs_remote *r, const char *name,
		const char *key, const void *val, size_t len)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->omap_set ?
	    r->ops->omap_set(r, name, key, val, len) : -ENOTSUP));
}

/* A key of @name's omap removed if its value is still @val (@len bytes):
 * 0 removed (or no such object), 1 kept (the value changed since, or
 * the key is gone), or -errno. */
static inline int
objfs_remote_omap_del_if(struct objfs_remote *r, const char *name,
		const char *key, const void *val, size_t len)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->omap_del_if ?
	    r->ops->omap_del_if(r, name, key, val, len) : -ENOTSUP));
}

/* Every key of @name's omap: @cb(@arg, key, value, its length) until it
 * returns non-zero (that is the result).  -ENOENT when @name is absent. */
static inline int
objfs_remote_omap_list(struct objfs_remote *r, const char *name,
		int (*cb)(void *arg, const char *key, const void *val, size_t len),
		void *arg)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->omap_list ?
	    r->ops->omap_list(r, name, cb, arg) : -ENOTSUP));
}

/* Notify @name's watchers, without waiting for them (the answers are
 * collected by later calls, and by unwatch). */
static inline int
objfs_remote_notify(struct objfs_remote *r, const char *name)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard_notify(r, (objfs_remote_sent(r), r->ops->notify ?
	    r->ops->notify(r, name) : -ENOTSUP));
}

/* Notify @name's watchers with @len bytes of @buf and wait up to
 * @timeout_ms for every one to answer: @cb (may be NULL) gets each
 * answer's payload.
 * -ETIMEDOUT when one did not answer in time (the others' answers are
 * given still). */
static inline int
objfs_remote_ask(struct objfs_remote *r, const char *name, const void *buf,
		size_t len, unsigned timeout_ms,
		void (*cb)(void *arg, const void *data, size_t len), void *arg)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard_notify(r, (objfs_remote_sent(r), r->ops->ask ?
	    r->ops->ask(r, name, buf, len, timeout_ms, cb, arg) : -ENOTSUP));
}

/* The cluster's raw space and what is free of it. */
static inline int
objfs_remote_df(struct objfs_remote *r, uint64_t *total, uint64_t *avail)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	/* The monitors', not the pool's: its answer says nothing of the
	 * OSDs (it came while their answers were dropped). */
	return r->ops->df ?
	    r->ops->df(r, total, avail) : -ENOTSUP;
}

/* An object's size and bytes, however long: *@buf malloc'd (the caller
 * frees it).  -ENOENT when absent. */
static inline int
objfs_remote_get_all(struct objfs_remote *r, const char *name, void **buf,
		size_t *len)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->get_all ?
	    r->ops->get_all(r, name, buf, len) : -ENOTSUP));
}

/* Store @len bytes at @buf (sums @tab of sub-blocks of 1 << @shift,
 * csum.h) as chunk @name: 1 when written, 0 when an object of that name
 * holds them already (its size and sums equal: nothing written), -EIO
 * (logged) when one holds other bytes, or -errno (-ETIMEDOUT: the cluster
 * did not answer). */
static inline int
objfs_remote_chunk_put(struct objfs_remote *r, const char *name,
		const void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->chunk_put ?
	    r->ops->chunk_put(r, name, buf, len, shift, tab) : -ENOTSUP));
}

/* Read chunk @name, @len bytes, into @buf, and check it against the
 * checksum @csum (objfs_chunk_csum() of its bytes with @shift): 0, -EIO
 * (logged) when it is shorter, longer or its bytes do not match,
 * -ENOENT when there is none, or -errno. */
static inline int
objfs_remote_chunk_get(struct objfs_remote *r, const char *name, void *buf,
		uint32_t len, unsigned shift, uint64_t csum)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->chunk_get ?
	    r->ops->chunk_get(r, name, buf, len, shift, csum) : -ENOTSUP));
}

/* Bytes [@lo, @hi) of chunk @name (@len bytes long), read from any store
 * with its ranged get as the whole sub-blocks that hold them into @buf
 * (from @lo rounded down), each checked against its sum in @tab (the
 * reader's record): 0, -EBADMSG (logged) when one does not match,
 * -ENOENT, or -errno. */
static inline int
objfs_remote_chunk_get_part(struct objfs_remote *r, const char *name,
		void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab, uint32_t lo, uint32_t hi)
{
	uint32_t first = lo >> shift, last = (hi - 1) >> shift, end,
		 from = first << shift;
	size_t got = 0;
	int rc;

	end = (uint32_t)((uint64_t)(last + 1) << shift) < len ?
		(last + 1) << shift : len;
	rc = objfs_remote_get(r, name, from, buf, end - from, &got);
	if (rc < 0)
		return rc;
	if (got == end - from &&
	    objfs_subs_match(buf, first, last, end, shift, tab))
		return 0;
	objfs_log(OBJFS_LOG_ERR, "remote: chunk %s: bytes %" PRIu32 "-%" PRIu32
		" do not match their sums, refusing to return them", name, lo,
		hi);
	return -EBADMSG;
}

/*
 * Many chunk puts in flight (at most @window at once; 0: 16): each added
 * with its name, bytes and sums (the bytes are read until _wait returns),
 * then all waited for.  A chunk of 64 KiB or more is looked for first (its
 * size and sums, in one round trip) and sent only when the pool lacks it,
 * unless @look is 0 (bytes not likely there: written at once, and found
 * the same if the name is taken), or the last 8 looks found nothing (then
 * written at once until one is found there).
 * _wait gives the first error; _result(k) says for the k-th put: 1
 * written, 0 there already, -EIO another object under its name, -errno.
 */
static inline int
objfs_remote_puts_new(struct objfs_remote *r, unsigned window,
		struct objfs_remote_puts **out)
{
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->puts_new ?
	    r->ops->puts_new(r, window, out) : -ENOTSUP));
}

static inline int
objfs_remote_puts_add(struct objfs_remote_puts *p, const char *name,
		const void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab, int look)
{
	if (objfs_deadline_passed())
		return -ETIMEDOUT;	/* the call's time is up */
	return p->ops->puts_add ?
	    p->ops->puts_add(p, name, buf, len, shift, tab, look) : -ENOTSUP;
}

static inline int
objfs_remote_puts_wait(struct objfs_remote_puts *p)
{
	int rc = p->ops->puts_wait ? p->ops->puts_wait(p) : -ENOTSUP;

	if (rc == 0)
		objfs_deadline_progress();
	return rc;
}

static inline int
objfs_remote_puts_result(const struct objfs_remote_puts *p, size_t k)
{
	return p->ops->puts_result ?
	    p->ops->puts_result(p, k) : -ENOTSUP;
}

/* How many chunks were looked for, and how many written without a look
 * that would have had one (after 8 looks in a row found nothing). */
static inline void
objfs_remote_puts_counts(const struct objfs_remote_puts *p, size_t *looks,
		size_t *at_once)
{
	if (p->ops->puts_counts)
		p->ops->puts_counts(p, looks, at_once);
}

static inline void
objfs_remote_puts_free(struct objfs_remote_puts *p)
{
	if (p->ops->puts_free)
		p->ops->puts_free(p);
}

/* A chunk fetched ahead: started (its @len bytes read into a buffer of its
 * own, one byte more than @len so that a longer object shows), _done says
 * whether it answered,
 * _take waits for it and copies it into @buf once its size and bytes match
 * the checksum @csum (objfs_chunk_csum with @shift): 0, -EIO (logged) when
 * they do not, -ENOENT, -errno.  _free in every case (it waits for an
 * answer first: librados writes into the buffer until then). */
static inline int
objfs_remote_fetch_start(struct objfs_remote *r, const char *name,
		uint32_t len, struct objfs_remote_fetch **out)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->fetch_start ?
	    r->ops->fetch_start(r, name, len, out) : -ENOTSUP));
}

static inline int
objfs_remote_fetch_done(const struct objfs_remote_fetch *f)
{
	return f->ops->fetch_done ?
	    f->ops->fetch_done(f) : -ENOTSUP;
}

static inline int
objfs_remote_fetch_take(struct objfs_remote_fetch *f, void *buf,
		unsigned shift, uint64_t csum)
{
	return f->ops->fetch_take ?
	    f->ops->fetch_take(f, buf, shift, csum) : -ENOTSUP;
}

static inline void
objfs_remote_fetch_free(struct objfs_remote_fetch *f)
{
	if (f->ops->fetch_free)
		f->ops->fetch_free(f);
}

/*
 * The pool's log and its head, for the tree's changes.  A log record is
 * "objfs.log.<epoch>.<seq>" (16 hex digits each), created only if absent:
 * -EEXIST says that number is taken, so a writer whose hold expired
 * cannot overwrite what its successor wrote (fencing).  The head
 * ("objfs.head") is a small object replaced only while its version is
 * the one its writer read: a compare-and-swap.
 */
static inline int
objfs_remote_log_put(struct objfs_remote *r, uint64_t epoch, uint64_t seq,
		const void *buf, size_t len)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->log_put ?
	    r->ops->log_put(r, epoch, seq, buf, len) : -ENOTSUP));
}

/* Record @seq into @buf (room for @cap bytes), its length in *@len;
 * -ENOENT when there is none, -EFBIG when it is longer than @cap. */
static inline int
objfs_remote_log_get(struct objfs_remote *r, uint64_t epoch, uint64_t seq,
		void *buf, size_t cap, size_t *len)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->log_get ?
	    r->ops->log_get(r, epoch, seq, buf, cap, len) : -ENOTSUP));
}

/* The head's bytes and version (-ENOENT: none yet). */
static inline int
objfs_remote_head_get(struct objfs_remote *r, void *buf, size_t cap,
		size_t *len, uint64_t *ver)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->head_get ?
	    r->ops->head_get(r, buf, cap, len, ver) : -ENOTSUP));
}

/* Replace the head with @buf if its version is still *@ver (0: only if
 * there is no head yet); its new version into *@ver.  -ECANCELED when
 * another writer changed (or made) it meanwhile: nothing written. */
static inline int
objfs_remote_head_put(struct objfs_remote *r, const void *buf, size_t len,
		uint64_t *ver)
{
	if (objfs_remote_late(r))
		return -ETIMEDOUT;	/* the call's time is up */
	return objfs_remote_heard(r, (objfs_remote_sent(r), r->ops->head_put ?
	    r->ops->head_put(r, buf, len, ver) : -ENOTSUP));
}

#endif
