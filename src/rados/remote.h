/* SPDX-License-Identifier: MIT */
/*
 * remote.h - objfs's client of a Ceph pool (librados): the connection the
 * remote tier (issue 25: -o remote=rados:POOL[/NAMESPACE]) is built on.
 * One pool and namespace per connection; every call is bounded by the
 * connection's timeout and fails with -ETIMEDOUT when the cluster does not
 * answer within it, never hanging beyond.  Thread-safe as librados is:
 * calls may come from any thread at once.
 *
 * Built only where librados is (configure: HAVE_RADOS); without it,
 * objfs_remote_connect() says so and nothing else can be called.
 */
#ifndef OBJFS_REMOTE_H
#define OBJFS_REMOTE_H

#include <stddef.h>
#include <stdint.h>

struct objfs_remote;

struct objfs_remote_config {
	const char *spec;	/* rados:POOL or rados:POOL/NAMESPACE */
	const char *conf;	/* ceph.conf; NULL: /etc/ceph/ceph.conf */
	const char *id;		/* the client's name (client.ID); NULL:
				 * admin */
	unsigned timeout_s;	/* every operation; 0: the default, 30 */
};

#define OBJFS_REMOTE_TIMEOUT	30u
#define OBJFS_REMOTE_HOLD	30u	/* seconds a hold lasts unrenewed */
#define OBJFS_REMOTE_NAME_MAX	96	/* pool and namespace names */

/* Split @spec ("rados:POOL[/NAMESPACE]") into @pool and @ns (empty when
 * none).  -EINVAL, with a message in @err, for anything else. */
int objfs_remote_parse(const char *spec, char pool[OBJFS_REMOTE_NAME_MAX],
		char ns[OBJFS_REMOTE_NAME_MAX], char *err, size_t errsize);

/* Connect, and open the pool: 0, or -errno with what went wrong in @err
 * (no configuration file, no monitor answering within the timeout, no
 * such pool, built without librados: -ENOTSUP). */
int objfs_remote_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize);
void objfs_remote_close(struct objfs_remote *r);

/* Object @name holds exactly @buf[0..len) (replaced whole, atomically:
 * a reader sees the old bytes or the new). */
int objfs_remote_put(struct objfs_remote *r, const char *name,
		const void *buf, size_t len);
/* The same, only if no object @name exists: -EEXIST otherwise. */
int objfs_remote_create(struct objfs_remote *r, const char *name,
		const void *buf, size_t len);
/* Up to @len bytes of @name from @off into @buf; *@got the bytes read.
 * -ENOENT when there is no such object. */
int objfs_remote_get(struct objfs_remote *r, const char *name, uint64_t off,
		void *buf, size_t len, size_t *got);
/* Its size; -ENOENT when absent. */
int objfs_remote_stat(struct objfs_remote *r, const char *name,
		uint64_t *size);
/* Remove @name; absent is not an error. */
int objfs_remote_remove(struct objfs_remote *r, const char *name);

/* An exclusive hold on @name (the lock "objfs"), for @seconds, naming
 * @holder (who holds it, shown to whoever is refused); taken again by
 * the same holder, it is renewed.  -EBUSY with the current holder in
 * @who (may be NULL) when another has it. */
int objfs_remote_hold(struct objfs_remote *r, const char *name,
		const char *holder, unsigned seconds, char *who,
		size_t whosize);
/* The same hold taken shared (tag "objfs-shared"): any number of shared
 * holders, and -EBUSY (@who as above) while an exclusive one has it. */
int objfs_remote_hold_shared(struct objfs_remote *r, const char *name,
		const char *holder, unsigned seconds, char *who,
		size_t whosize);
/* Renew a hold @holder has now (exclusive, or shared with @shared), for
 * @seconds from now: -ENOENT when it does not have it any more (it
 * lapsed, whether or not another took it since; then nothing is taken:
 * a lapse is never hidden by taking the lock again). */
int objfs_remote_hold_renew(struct objfs_remote *r, const char *name,
		const char *holder, unsigned seconds, int shared);
int objfs_remote_release(struct objfs_remote *r, const char *name,
		const char *holder);
/* Who holds @name: the client (client.N) and the holder's description;
 * -ENOENT when nobody does. */
int objfs_remote_holder(struct objfs_remote *r, const char *name,
		char *client, size_t clen, char *cookie, size_t klen);
/* Take the hold away from @client's @cookie (a holder known dead). */
int objfs_remote_break(struct objfs_remote *r, const char *name,
		const char *client, const char *cookie);
/* Call @cb for every object of the namespace (until it returns non-zero:
 * that is the result); in no useful order. */
int objfs_remote_list(struct objfs_remote *r,
		int (*cb)(void *arg, const char *name), void *arg);
/* Shared mode: a put that finds its chunk in the pool writes to it (the
 * sums compared and an xattr set, one operation), so that the chunk's
 * version and time move; a collector of another mount that read its age
 * before then removes it only at the version it read
 * (objfs_remote_remove_at), and one after sees it young. */
void objfs_remote_set_touch(struct objfs_remote *r, int on);
/* An object's size, when it was last written (seconds since 1970) and
 * its RADOS version; -ENOENT when there is none. */
int objfs_remote_age_ver(struct objfs_remote *r, const char *name,
		uint64_t *size, int64_t *mtime, uint64_t *ver);
/* Remove @name only if it is still at version @ver: 0, or -ECANCELED when
 * it changed since (or -ENOENT when gone: counted as removed by the
 * caller if it likes). */
int objfs_remote_remove_at(struct objfs_remote *r, const char *name,
		uint64_t ver);
/* Watch @name: @cb runs (in a librados thread, briefly) for each notify
 * sent to it.  A notify with no payload is acknowledged before @cb runs
 * (@data NULL); one with a payload is a request that @cb (or a thread it
 * wakes) answers with objfs_remote_notify_ack(@notify_id, @cookie).
 * The OSD drops a watcher it has not heard from for @timeout_s seconds.
 * *@cookie is for objfs_remote_unwatch. */
int objfs_remote_watch(struct objfs_remote *r, const char *name,
		unsigned timeout_s, void (*cb)(void *arg, uint64_t notify_id, uint64_t cookie,
			const void *data, size_t len),
		void *arg, uint64_t *cookie);
void objfs_remote_unwatch(struct objfs_remote *r, uint64_t cookie);
/* 1 when the watch was lost since it was made (an OSD restarted, or did
 * not answer): the caller watches again. */
int objfs_remote_watch_lost(struct objfs_remote *r);
/* Answer notify @notify_id with @len bytes of @buf. */
int objfs_remote_notify_ack(struct objfs_remote *r, uint64_t notify_id,
		uint64_t cookie, const void *buf, size_t len);
/* A key of @name's omap (the object made if absent) set to @val (@len
 * bytes), or removed (@val NULL; absent is not an error). */
int objfs_remote_omap_set(struct objfs_remote *r, const char *name,
		const char *key, const void *val, size_t len);
/* A key of @name's omap removed if its value is still @val (@len bytes):
 * 0 removed (or no such object), 1 kept (the value changed since, or
 * the key is gone), or -errno. */
int objfs_remote_omap_del_if(struct objfs_remote *r, const char *name,
		const char *key, const void *val, size_t len);
/* Every key of @name's omap: @cb(@arg, key, value, its length) until it
 * returns non-zero (that is the result).  -ENOENT when @name is absent. */
int objfs_remote_omap_list(struct objfs_remote *r, const char *name,
		int (*cb)(void *arg, const char *key, const void *val,
			size_t len), void *arg);
/* Notify @name's watchers, without waiting for them (the answers are
 * collected by later calls, and by unwatch). */
int objfs_remote_notify(struct objfs_remote *r, const char *name);
/* Notify @name's watchers with @len bytes of @buf and wait up to
 * @timeout_ms for every one to answer: @cb (may be NULL) gets each
 * answer's payload.
 * -ETIMEDOUT when one did not answer in time (the others' answers are
 * given still). */
int objfs_remote_ask(struct objfs_remote *r, const char *name,
		const void *buf, size_t len, unsigned timeout_ms,
		void (*cb)(void *arg, const void *data, size_t len), void *arg);
/* The cluster's raw space and what is free of it. */
int objfs_remote_df(struct objfs_remote *r, uint64_t *total, uint64_t *avail);
/* An object's size and bytes, however long: *@buf malloc'd (the caller
 * frees it).  -ENOENT when absent. */
int objfs_remote_get_all(struct objfs_remote *r, const char *name,
		void **buf, size_t *len);

/*
 * Chunks named by their content.  A chunk's object is named
 * "c.<32 hex digits>-<length in hex>" (objfs_content_hash128() of its
 * bytes), holds exactly its bytes, and carries their sub-block sums in
 * the xattr "objfs.sums" (its shift byte, then 4 bytes a sum, csum.h),
 * all written in one atomic operation that creates the object only if it
 * does not exist: the same bytes are stored once, and an object of that
 * name is never changed afterwards.
 */
#define OBJFS_REMOTE_CHUNK_NAME	48
void objfs_remote_chunk_name(const void *buf, uint32_t len,
		char name[OBJFS_REMOTE_CHUNK_NAME]);
/* Store @len bytes at @buf (sums @tab of sub-blocks of 1 << @shift,
 * csum.h) as chunk @name: 1 when written, 0 when an object of that name
 * holds them already (its size and sums equal: nothing written), -EIO
 * (logged) when one holds other bytes, or -errno (-ETIMEDOUT: the cluster
 * did not answer). */
int objfs_remote_chunk_put(struct objfs_remote *r, const char *name,
		const void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab);
/* Read chunk @name, @len bytes, into @buf, and check it against the
 * checksum @csum (objfs_chunk_csum() of its bytes with @shift): 0, -EIO
 * (logged) when it is shorter, longer or its bytes do not match,
 * -ENOENT when there is none, or -errno. */
int objfs_remote_chunk_get(struct objfs_remote *r, const char *name,
		void *buf, uint32_t len, unsigned shift, uint64_t csum);

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
struct objfs_remote_puts;
int objfs_remote_puts_new(struct objfs_remote *r, unsigned window,
		struct objfs_remote_puts **out);
int objfs_remote_puts_add(struct objfs_remote_puts *p, const char *name,
		const void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab, int look);
int objfs_remote_puts_wait(struct objfs_remote_puts *p);
int objfs_remote_puts_result(const struct objfs_remote_puts *p, size_t k);
/* How many chunks were looked for, and how many written without a look
 * that would have had one (after 8 looks in a row found nothing). */
void objfs_remote_puts_counts(const struct objfs_remote_puts *p,
		size_t *looks, size_t *at_once);
void objfs_remote_puts_free(struct objfs_remote_puts *p);
/* A chunk fetched ahead: started (its @len bytes read into a buffer of its
 * own, one byte more than @len so that a longer object shows), _done says
 * whether it answered,
 * _take waits for it and copies it into @buf once its size and bytes match
 * the checksum @csum (objfs_chunk_csum with @shift): 0, -EIO (logged) when
 * they do not, -ENOENT, -errno.  _free in every case (it waits for an
 * answer first: librados writes into the buffer until then). */
struct objfs_remote_fetch;
int objfs_remote_fetch_start(struct objfs_remote *r, const char *name,
		uint32_t len, struct objfs_remote_fetch **out);
int objfs_remote_fetch_done(const struct objfs_remote_fetch *f);
int objfs_remote_fetch_take(struct objfs_remote_fetch *f, void *buf,
		unsigned shift, uint64_t csum);
void objfs_remote_fetch_free(struct objfs_remote_fetch *f);

/* Bytes [@lo, @hi) of chunk @name (@len bytes long), read as the whole
 * sub-blocks that hold them into @buf (from @lo rounded down), each
 * checked against @tab: 0, -EBADMSG (logged) when one does not match,
 * -ENOENT, or -errno. */
int objfs_remote_chunk_get_part(struct objfs_remote *r, const char *name,
		void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab, uint32_t lo, uint32_t hi);

/*
 * The pool's log and its head, for the tree's changes.  A log record is
 * "objfs.log.<epoch>.<seq>" (16 hex digits each), created only if absent:
 * -EEXIST says that number is taken, so a writer whose hold expired
 * cannot overwrite what its successor wrote (fencing).  The head
 * ("objfs.head") is a small object replaced only while its version is
 * the one its writer read: a compare-and-swap.
 */
int objfs_remote_log_put(struct objfs_remote *r, uint64_t epoch, uint64_t seq,
		const void *buf, size_t len);
/* Record @seq into @buf (room for @cap bytes), its length in *@len;
 * -ENOENT when there is none, -EFBIG when it is longer than @cap. */
int objfs_remote_log_get(struct objfs_remote *r, uint64_t epoch, uint64_t seq,
		void *buf, size_t cap, size_t *len);
/* The head's bytes and version (-ENOENT: none yet). */
int objfs_remote_head_get(struct objfs_remote *r, void *buf, size_t cap,
		size_t *len, uint64_t *ver);
/* Replace the head with @buf if its version is still *@ver (0: only if
 * there is no head yet); its new version into *@ver.  -ECANCELED when
 * another writer changed (or made) it meanwhile: nothing written. */
int objfs_remote_head_put(struct objfs_remote *r, const void *buf, size_t len,
		uint64_t *ver);

#endif
