/* SPDX-License-Identifier: MIT */
/*
 * remote.c - objfs's client of a Ceph pool (remote.h).
 *
 * The timeout bounds every operation through librados's own settings
 * (rados_osd_op_timeout, rados_mon_op_timeout, client_mount_timeout): an
 * operation the cluster does not answer returns -ETIMEDOUT, and librados
 * cancels it, so nothing is left to complete later behind the caller's
 * back.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/rados/remote.h"

int
objfs_remote_parse(const char *spec, char pool[OBJFS_REMOTE_NAME_MAX],
		char ns[OBJFS_REMOTE_NAME_MAX], char *err, size_t errsize)
{
	const char *p, *slash;
	size_t n;

	pool[0] = ns[0] = '\0';
	if (!spec || strncmp(spec, "rados:", 6) != 0) {
		snprintf(err, errsize, "remote=%s: expected rados:POOL or "
			"rados:POOL/NAMESPACE", spec ? spec : "");
		return -EINVAL;
	}
	p = spec + 6;
	slash = strchr(p, '/');
	n = slash ? (size_t)(slash - p) : strlen(p);
	if (n == 0 || n >= OBJFS_REMOTE_NAME_MAX) {
		snprintf(err, errsize, "remote=%s: the pool name is %s", spec,
			n ? "too long" : "empty");
		return -EINVAL;
	}
	memcpy(pool, p, n);
	pool[n] = '\0';
	if (slash) {
		n = strlen(slash + 1);
		if (n == 0 || n >= OBJFS_REMOTE_NAME_MAX ||
		    strchr(slash + 1, '/')) {
			snprintf(err, errsize, "remote=%s: the namespace is %s",
				spec, n == 0 ? "empty" : n >= OBJFS_REMOTE_NAME_MAX ?
				"too long" : "not one name (a '/' in it)");
			pool[0] = '\0';
			return -EINVAL;
		}
		memcpy(ns, slash + 1, n + 1);
	}
	return 0;
}

void
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

#ifdef HAVE_RADOS
#include "src/rados/remote_int.h"

int
objfs_remote_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize)
{
	char pool[OBJFS_REMOTE_NAME_MAX], ns[OBJFS_REMOTE_NAME_MAX], t[16];
	const char *conf = cfg->conf ? cfg->conf : "/etc/ceph/ceph.conf";
	struct objfs_remote *r;
	int rc;

	rc = objfs_remote_parse(cfg->spec, pool, ns, err, errsize);
	if (rc < 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	rc = rados_create2(&r->cluster, "ceph", cfg->id ? cfg->id :
			"client.admin", 0);
	if (rc < 0) {
		snprintf(err, errsize, "remote: cannot make a client named %s: "
			"%s", cfg->id ? cfg->id : "client.admin", strerror(-rc));
		free(r);
		return rc;
	}
	rc = rados_conf_read_file(r->cluster, conf);
	if (rc < 0) {
		snprintf(err, errsize, "remote_conf=%s: cannot read it: %s",
			conf, strerror(-rc));
		goto fail;
	}
	snprintf(t, sizeof(t), "%u", cfg->timeout_s ? cfg->timeout_s :
			OBJFS_REMOTE_TIMEOUT);
	if ((rc = rados_conf_set(r->cluster, "rados_osd_op_timeout", t)) < 0 ||
	    (rc = rados_conf_set(r->cluster, "rados_mon_op_timeout", t)) < 0 ||
	    (rc = rados_conf_set(r->cluster, "client_mount_timeout", t)) < 0) {
		snprintf(err, errsize, "remote: cannot set its timeout: %s",
			strerror(-rc));
		goto fail;
	}
	rc = rados_connect(r->cluster);
	if (rc < 0) {
		snprintf(err, errsize, "remote: cannot reach the cluster of %s "
			"within %s s: %s", conf, t, strerror(-rc));
		goto fail;
	}
	rc = rados_ioctx_create(r->cluster, pool, &r->io);
	if (rc < 0) {
		snprintf(err, errsize, "remote=%s: pool %s: %s", cfg->spec, pool,
			rc == -ENOENT ? "no such pool" : strerror(-rc));
		rados_shutdown(r->cluster);
		free(r);
		return rc;
	}
	rados_ioctx_set_namespace(r->io, ns[0] ? ns : NULL);
	/* A full pool (its quota, or full OSDs) refuses a write at once,
	 * with EDQUOT or ENOSPC, rather than holding it until there is
	 * room or the timeout; deletes (the collector's) go through, so
	 * that room can be made. */
	rados_set_pool_full_try(r->io);
	pthread_mutex_init(&r->head_lock, NULL);
	pthread_mutex_init(&r->notify_mu, NULL);
	*out = r;
	return 0;

fail:
	rados_shutdown(r->cluster);
	free(r);
	return rc;
}

static void notifies_reap(struct objfs_remote *r, int all);

void
objfs_remote_close(struct objfs_remote *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->notify_mu);
	notifies_reap(r, 1);
	pthread_mutex_unlock(&r->notify_mu);
	rados_ioctx_destroy(r->io);
	rados_shutdown(r->cluster);
	pthread_mutex_destroy(&r->head_lock);
	pthread_mutex_destroy(&r->notify_mu);
	free(r);
}

int
objfs_remote_put(struct objfs_remote *r, const char *name, const void *buf,
		size_t len)
{
	return rados_write_full(r->io, name, buf, len);
}

int
objfs_remote_create(struct objfs_remote *r, const char *name, const void *buf,
		size_t len)
{
	rados_write_op_t op = rados_create_write_op();
	int rc;

	if (!op)
		return -ENOMEM;
	rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	rados_write_op_write_full(op, buf, len);
	rc = rados_write_op_operate(op, r->io, name, NULL, 0);
	rados_release_write_op(op);
	return rc;
}

int
objfs_remote_get(struct objfs_remote *r, const char *name, uint64_t off,
		void *buf, size_t len, size_t *got)
{
	int rc = rados_read(r->io, name, buf, len, off);

	*got = rc > 0 ? (size_t)rc : 0;
	return rc < 0 ? rc : 0;
}

int
objfs_remote_stat(struct objfs_remote *r, const char *name, uint64_t *size)
{
	time_t mtime;

	return rados_stat(r->io, name, size, &mtime);
}

int
objfs_remote_remove(struct objfs_remote *r, const char *name)
{
	int rc = rados_remove(r->io, name);

	return rc == -ENOENT ? 0 : rc;
}

#define HOLD_LOCK	"objfs"

/* The lock "objfs" of @name, exclusive or shared, with @flags. */
static int
lock_call(struct objfs_remote *r, const char *name, const char *holder,
		struct timeval *tv, int shared, uint8_t flags)
{
	if (shared)
		return rados_lock_shared(r->io, name, HOLD_LOCK, holder,
				"objfs-shared", "objfs shared mount", tv, flags);
	return rados_lock_exclusive(r->io, name, HOLD_LOCK, holder,
			"objfs mount", tv, flags);
}

/* Take or renew lock @name for @seconds, exclusive or shared; -EBUSY
 * when another holds it in the other way (or exclusively), its cookie
 * (the holder's own description of itself) in @who. */
static int
hold(struct objfs_remote *r, const char *name, const char *holder,
		unsigned seconds, int shared, char *who, size_t whosize)
{
	struct timeval tv = { (time_t)seconds, 0 };
	char tag[64], clients[512], cookies[512], addrs[512];
	size_t tl = sizeof(tag), cl = sizeof(clients), kl = sizeof(cookies),
	       al = sizeof(addrs);
	int excl, rc;

	/* Renewing needs the flag; taking it first does not mind it. */
	rc = lock_call(r, name, holder, &tv, shared, LIBRADOS_LOCK_FLAG_RENEW);
	if (rc != -EBUSY && rc != -EEXIST)
		return rc;
	if (who && whosize) {
		who[0] = '\0';
		if (rados_list_lockers(r->io, name, HOLD_LOCK, &excl, tag, &tl,
				clients, &cl, cookies, &kl, addrs, &al) > 0)
			snprintf(who, whosize, "%s", cookies);
	}
	return -EBUSY;
}

int
objfs_remote_hold(struct objfs_remote *r, const char *name, const char *holder,
		unsigned seconds, char *who, size_t whosize)
{
	return hold(r, name, holder, seconds, 0, who, whosize);
}

int
objfs_remote_hold_shared(struct objfs_remote *r, const char *name,
		const char *holder, unsigned seconds, char *who, size_t whosize)
{
	return hold(r, name, holder, seconds, 1, who, whosize);
}

int
objfs_remote_hold_renew(struct objfs_remote *r, const char *name,
		const char *holder, unsigned seconds, int shared)
{
	struct timeval tv = { (time_t)seconds, 0 };
	int rc;

	/* MUST_RENEW: the OSD drops expired lockers first, so a lock that
	 * lapsed answers ENOENT even when nobody took it meanwhile. */
	rc = lock_call(r, name, holder, &tv, shared,
			LIBRADOS_LOCK_FLAG_MUST_RENEW);
	return rc == -EBUSY || rc == -EEXIST ? -ENOENT : rc;
}

int
objfs_remote_holder(struct objfs_remote *r, const char *name,
		char *client, size_t clen, char *cookie, size_t klen)
{
	char tag[64], addrs[512];
	size_t tl = sizeof(tag), cl = clen, kl = klen, al = sizeof(addrs);
	int excl, rc;

	rc = rados_list_lockers(r->io, name, HOLD_LOCK, &excl, tag, &tl,
			client, &cl, cookie, &kl, addrs, &al);
	if (rc < 0)
		return rc;
	return rc == 0 ? -ENOENT : 0;
}

int
objfs_remote_break(struct objfs_remote *r, const char *name,
		const char *client, const char *cookie)
{
	int rc = rados_break_lock(r->io, name, HOLD_LOCK, client, cookie);

	return rc == -ENOENT ? 0 : rc;
}

int
objfs_remote_list(struct objfs_remote *r,
		int (*cb)(void *arg, const char *name), void *arg)
{
	rados_list_ctx_t ctx;
	const char *name;
	int rc = rados_nobjects_list_open(r->io, &ctx);

	if (rc < 0)
		return rc;
	while ((rc = rados_nobjects_list_next(ctx, &name, NULL, NULL)) == 0) {
		rc = cb(arg, name);
		if (rc)
			break;
	}
	rados_nobjects_list_close(ctx);
	return rc == -ENOENT ? 0 : rc;
}

/* ---- watch and notify ---------------------------------------------------- */

static void
watch_cb(void *arg, uint64_t notify_id, uint64_t cookie, uint64_t notifier,
		void *data, size_t len)
{
	struct objfs_remote *r = arg;

	(void)notifier;
	if (!len || !data) {
		(void)rados_notify_ack(r->io, r->watch_name, notify_id, cookie,
				NULL, 0);
		data = NULL;
		len = 0;
	}
	if (r->watch_cb)
		r->watch_cb(r->watch_arg, notify_id, cookie, data, len);
	else if (len)
		(void)rados_notify_ack(r->io, r->watch_name, notify_id, cookie,
				NULL, 0);
}

/* The watch was lost (the OSD restarted, say): the caller watches again,
 * its own polling covering what a notify would have said meanwhile. */
static void
watch_err(void *arg, uint64_t cookie, int err)
{
	struct objfs_remote *r = arg;

	(void)cookie;
	if (!atomic_exchange(&r->watch_lost, 1))
		objfs_log(OBJFS_LOG_WARNING, "remote: a watch was lost (%s): "
			"watching again", strerror(-err));
}

int
objfs_remote_watch(struct objfs_remote *r, const char *name,
		unsigned timeout_s, void (*cb)(void *arg, uint64_t notify_id, uint64_t cookie,
			const void *data, size_t len),
		void *arg, uint64_t *cookie)
{
	snprintf(r->watch_name, sizeof(r->watch_name), "%s", name);
	r->watch_cb = cb;
	r->watch_arg = arg;
	atomic_store(&r->watch_lost, 0);
	return rados_watch3(r->io, name, cookie, watch_cb, watch_err,
			timeout_s < 5 ? 5 : timeout_s, r);
}

int
objfs_remote_watch_lost(struct objfs_remote *r)
{
	return atomic_load(&r->watch_lost);
}

int
objfs_remote_notify_ack(struct objfs_remote *r, uint64_t notify_id,
		uint64_t cookie, const void *buf, size_t len)
{
	return rados_notify_ack(r->io, r->watch_name, notify_id, cookie,
			(const char *)buf, (int)len);
}

int
objfs_remote_omap_set(struct objfs_remote *r, const char *name,
		const char *key, const void *val, size_t len)
{
	rados_write_op_t op = rados_create_write_op();
	const char *keys[1] = { key }, *vals[1] = { val };
	int rc;

	if (!op)
		return -ENOMEM;
	if (val) {
		rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
		rados_write_op_omap_set(op, keys, vals, &len, 1);
	} else {
		rados_write_op_omap_rm_keys(op, keys, 1);
	}
	rc = rados_write_op_operate(op, r->io, name, NULL, 0);
	rados_release_write_op(op);
	return rc == -ENOENT && !val ? 0 : rc;
}

int
objfs_remote_omap_del_if(struct objfs_remote *r, const char *name,
		const char *key, const void *val, size_t len)
{
	rados_write_op_t op = rados_create_write_op();
	const char *keys[1] = { key };
	int rc, cmp = 0;

	if (!op)
		return -ENOMEM;
	rados_write_op_omap_cmp(op, key, LIBRADOS_CMPXATTR_OP_EQ, val, len,
			&cmp);
	rados_write_op_omap_rm_keys(op, keys, 1);
	rc = rados_write_op_operate(op, r->io, name, NULL, 0);
	rados_release_write_op(op);
	if (rc == -ENOENT)
		return 0;	/* no such object: nothing to remove */
	return rc == -ECANCELED ? 1 : rc;
}

int
objfs_remote_omap_list(struct objfs_remote *r, const char *name,
		int (*cb)(void *arg, const char *key, const void *val,
			size_t len), void *arg)
{
	char after[256] = "";
	unsigned char more = 1;
	int rc = 0;

	while (rc == 0 && more) {
		rados_read_op_t op = rados_create_read_op();
		rados_omap_iter_t it = NULL;
		int rv = 0;

		if (!op)
			return -ENOMEM;
		more = 0;
		rados_read_op_omap_get_vals2(op, after, "", 512, &it, &more, &rv);
		rc = rados_read_op_operate(op, r->io, name, 0);
		if (rc == 0)
			rc = rv;
		while (rc == 0) {
			char *k, *v;
			size_t kl, vl;

			if (rados_omap_get_next2(it, &k, &v, &kl, &vl) < 0 || !k)
				break;
			snprintf(after, sizeof(after), "%.*s", (int)kl, k);
			rc = cb(arg, after, v, vl);
		}
		if (it)
			rados_omap_get_end(it);
		rados_release_read_op(op);
	}
	return rc;
}

int
objfs_remote_ask(struct objfs_remote *r, const char *name, const void *buf,
		size_t len, unsigned timeout_ms,
		void (*cb)(void *arg, const void *data, size_t len), void *arg)
{
	struct notify_ack_t *acks = NULL;
	struct notify_timeout_t *touts = NULL;
	size_t nacks = 0, ntouts = 0, rlen = 0;
	char *reply = NULL;
	int rc = rados_notify2(r->io, name, (const char *)buf, (int)len,
			timeout_ms, &reply, &rlen);

	if (reply && rados_decode_notify_response(reply, rlen, &acks, &nacks,
			&touts, &ntouts) == 0) {
		for (size_t i = 0; cb && i < nacks; i++)
			cb(arg, acks[i].payload, acks[i].payload_len);
		if (ntouts && rc == 0)
			rc = -ETIMEDOUT;
		rados_free_notify_response(acks, nacks, touts);
	}
	if (reply)
		rados_buffer_free(reply);
	return rc;
}

/* Release the notifies that were answered (all, with @all: waiting). */
static void
notifies_reap(struct objfs_remote *r, int all)
{
	/* In place: an entry that moved while its notify was in flight
	 * had librados write its reply into the old slot, over the next
	 * notify's (a reply buffer never freed: LeakSanitizer's 48 bytes
	 * from librados; and, when the next notify cleared the slot while
	 * librados copied into it, a SIGSEGV in its io_context_pool
	 * thread's memmove to NULL). */
	for (unsigned i = 0; i < REMOTE_NOTIFIES && r->nnotifies; i++) {
		struct remote_notify *n = &r->notifies[i];

		if (!n->used || (!all && !rados_aio_is_complete(n->c)))
			continue;
		rados_aio_wait_for_complete(n->c);
		rados_aio_release(n->c);
		if (n->reply)
			rados_buffer_free(n->reply);
		n->reply = NULL;
		n->used = 0;
		r->nnotifies--;
	}
}

void
objfs_remote_unwatch(struct objfs_remote *r, uint64_t cookie)
{
	(void)rados_unwatch2(r->io, cookie);
	r->watch_cb = NULL;
	pthread_mutex_lock(&r->notify_mu);
	notifies_reap(r, 1);
	pthread_mutex_unlock(&r->notify_mu);
}

int
objfs_remote_notify(struct objfs_remote *r, const char *name)
{
	struct remote_notify *n;
	int rc;

	pthread_mutex_lock(&r->notify_mu);
	notifies_reap(r, 0);
	if (r->nnotifies == REMOTE_NOTIFIES) {
		pthread_mutex_unlock(&r->notify_mu);
		return -EAGAIN;	/* the watchers poll anyway */
	}
	for (n = r->notifies; n->used; n++)
		;	/* a free slot: fewer than REMOTE_NOTIFIES are used */
	n->reply = NULL;
	n->reply_len = 0;
	rc = rados_aio_create_completion2(NULL, NULL, &n->c);
	if (rc == 0) {
		rc = rados_aio_notify(r->io, name, n->c, NULL, 0, 5000,
				&n->reply, &n->reply_len);
		if (rc < 0) {
			rados_aio_release(n->c);
		} else {
			n->used = 1;
			r->nnotifies++;
		}
	}
	pthread_mutex_unlock(&r->notify_mu);
	return rc;
}

void
objfs_remote_set_touch(struct objfs_remote *r, int on)
{
	r->touch = on;
}

void
objfs_remote_touch_op(rados_write_op_t op, const unsigned char *x,
		size_t xlen, char stamp[32])
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(stamp, 32, "%lld.%09ld", (long long)ts.tv_sec, ts.tv_nsec);
	rados_write_op_assert_exists(op);
	rados_write_op_cmpxattr(op, SUMS_XATTR, LIBRADOS_CMPXATTR_OP_EQ,
			(const char *)x, xlen);
	rados_write_op_setxattr(op, SEEN_XATTR, stamp, strlen(stamp));
}

/* Touch chunk @name found with sums @x: 0, -ENOENT (gone meanwhile),
 * -ECANCELED (other sums), -errno. */
static int
chunk_touch(struct objfs_remote *r, const char *name, const unsigned char *x,
		size_t xlen)
{
	rados_write_op_t op = rados_create_write_op();
	char stamp[32];
	int rc;

	if (!op)
		return -ENOMEM;
	objfs_remote_touch_op(op, x, xlen, stamp);
	rc = rados_write_op_operate(op, r->io, name, NULL, 0);
	rados_release_write_op(op);
	return rc;
}

int
objfs_remote_age_ver(struct objfs_remote *r, const char *name, uint64_t *size,
		int64_t *mtime, uint64_t *ver)
{
	rados_read_op_t op = rados_create_read_op();
	rados_completion_t c;
	time_t t = 0;
	int rc, rv = 0;

	if (!op)
		return -ENOMEM;
	rc = rados_aio_create_completion2(NULL, NULL, &c);
	if (rc < 0) {
		rados_release_read_op(op);
		return rc;
	}
	rados_read_op_stat(op, size, &t, &rv);
	rc = rados_aio_read_op_operate(op, r->io, c, name, 0);
	if (rc == 0) {
		rados_aio_wait_for_complete(c);
		rc = rados_aio_get_return_value(c);
		/* The version of this operation's answer: the ioctx's "last
		 * version" would be any thread's. */
		*ver = rados_aio_get_version(c);
	}
	rados_aio_release(c);
	rados_release_read_op(op);
	if (rc == 0 && rv < 0)
		rc = rv;
	*mtime = (int64_t)t;
	return rc;
}

int
objfs_remote_remove_at(struct objfs_remote *r, const char *name, uint64_t ver)
{
	rados_write_op_t op = rados_create_write_op();
	int rc;

	if (!op)
		return -ENOMEM;
	rados_write_op_assert_version(op, ver);
	rados_write_op_remove(op);
	rc = rados_write_op_operate(op, r->io, name, NULL, 0);
	rados_release_write_op(op);
	/* A version other than @ver: -ERANGE (older) or -EOVERFLOW (newer). */
	return rc == -ERANGE || rc == -EOVERFLOW ? -ECANCELED : rc;
}

int
objfs_remote_df(struct objfs_remote *r, uint64_t *total, uint64_t *avail)
{
	struct rados_cluster_stat_t st;
	int rc = rados_cluster_stat(r->cluster, &st);

	if (rc < 0)
		return rc;
	*total = st.kb << 10;
	*avail = st.kb_avail << 10;
	return 0;
}

int
objfs_remote_release(struct objfs_remote *r, const char *name,
		const char *holder)
{
	int rc = rados_unlock(r->io, name, HOLD_LOCK, holder);

	return rc == -ENOENT ? 0 : rc;
}

int
objfs_remote_get_all(struct objfs_remote *r, const char *name, void **buf,
		size_t *len)
{
	for (int tries = 0; tries < 4; tries++) {
		uint64_t size;
		size_t got = 0;
		void *p;
		int rc = objfs_remote_stat(r, name, &size);

		if (rc < 0)
			return rc;
		p = malloc(size + 1);
		if (!p)
			return -ENOMEM;
		/* One byte more than its size: a longer object (replaced
		 * meanwhile) is read again. */
		rc = objfs_remote_get(r, name, 0, p, size + 1, &got);
		if (rc < 0) {
			free(p);
			return rc;
		}
		if (got == size) {
			*buf = p;
			*len = got;
			return 0;
		}
		free(p);
	}
	return -EAGAIN;
}

/* Does the object @name hold a chunk of @len bytes with these sums? */
int
objfs_remote_chunk_same(struct objfs_remote *r, const char *name, uint32_t len,
		unsigned shift, const unsigned char *tab)
{
	size_t n = 1 + 4 * (size_t)objfs_nsums(len, shift);
	unsigned char *have = malloc(n + 1);
	uint64_t size;
	int rc;

	if (!have)
		return -ENOMEM;
	rc = objfs_remote_stat(r, name, &size);
	if (rc == 0)
		rc = rados_getxattr(r->io, name, SUMS_XATTR, (char *)have, n + 1);
	if (rc >= 0)
		rc = size == len && (size_t)rc == n && have[0] == shift &&
			memcmp(have + 1, tab, n - 1) == 0;
	else if (rc == -ENODATA)
		rc = 0;		/* no sums: not one of ours */
	free(have);
	return rc;
}

int
objfs_remote_chunk_put(struct objfs_remote *r, const char *name,
		const void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab)
{
	size_t n = 1 + 4 * (size_t)objfs_nsums(len, shift);
	rados_write_op_t op;
	unsigned char *x;
	int rc, tries = 0;

again:
	x = malloc(n);
	op = x ? rados_create_write_op() : NULL;
	if (!op) {
		free(x);
		return -ENOMEM;
	}
	x[0] = (unsigned char)shift;
	memcpy(x + 1, tab, n - 1);
	rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	rados_write_op_write_full(op, buf, len);
	rados_write_op_setxattr(op, SUMS_XATTR, (const char *)x, n);
	rc = rados_write_op_operate(op, r->io, name, NULL, 0);
	rados_release_write_op(op);
	free(x);
	if (rc == 0)
		return 1;
	if (rc != -EEXIST)
		return rc;
	/* There already: the same bytes, or (a name is 128 bits of a hash
	 * and the length) something damaged it. */
	rc = objfs_remote_chunk_same(r, name, len, shift, tab);
	if (rc == 1 && r->touch) {
		/* Shared mode: found, so written to (see set_touch). */
		x = malloc(n);
		if (!x)
			return -ENOMEM;
		x[0] = (unsigned char)shift;
		memcpy(x + 1, tab, n - 1);
		rc = chunk_touch(r, name, x, n);
		free(x);
		rc = rc == 0 ? 1 : rc == -ECANCELED ? 0 : rc;
	}
	if (rc == -ENOENT && tries++ < 3)
		goto again;	/* removed in between (collected) */
	if (rc < 0)
		return rc;
	if (!rc) {
		objfs_log(OBJFS_LOG_ERR, "remote: chunk %s in the pool does not "
			"hold the bytes its name says", name);
		return -EIO;
	}
	return 0;
}

int
objfs_remote_chunk_get(struct objfs_remote *r, const char *name, void *buf,
		uint32_t len, unsigned shift, uint64_t csum)
{
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	rados_read_op_t op = rados_create_read_op();
	uint64_t size = 0;
	size_t got = 0;
	time_t mtime;
	int rc, rv1 = 0, rv2 = 0;

	if (!op)
		return -ENOMEM;
	/* Its size and its bytes in one round trip: a longer object is not
	 * it either. */
	rados_read_op_stat(op, &size, &mtime, &rv1);
	rados_read_op_read(op, 0, len, buf, &got, &rv2);
	rc = rados_read_op_operate(op, r->io, name, 0);
	rados_release_read_op(op);
	if (rc == 0)
		rc = rv1 < 0 ? rv1 : rv2 < 0 ? rv2 : 0;
	if (rc < 0)
		return rc;
	if (size == len && got == len &&
	    objfs_chunk_csum(buf, len, shift, tab) == csum)
		return 0;
	objfs_log(OBJFS_LOG_ERR, "remote: chunk %s: its bytes do not match "
		"their checksum, refusing to return them", name);
	return -EIO;
}

/* Bytes [@lo, @hi) of chunk @name as whole sub-blocks, each checked
 * against its sum in @tab (the reader's record). */
int
objfs_remote_chunk_get_part(struct objfs_remote *r, const char *name,
		void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab, uint32_t lo, uint32_t hi)
{
	uint32_t first = lo >> shift, last = (hi - 1) >> shift, end,
		 base = first << shift;
	size_t got = 0;
	int rc;

	end = (uint32_t)((uint64_t)(last + 1) << shift) < len ?
		(last + 1) << shift : len;
	rc = objfs_remote_get(r, name, base, buf, end - base, &got);
	if (rc < 0)
		return rc;
	if (got == end - base &&
	    objfs_subs_match(buf, first, last, end, shift, tab))
		return 0;
	objfs_log(OBJFS_LOG_ERR, "remote: chunk %s: bytes %" PRIu32 "-%" PRIu32
		" do not match their sums, refusing to return them", name, lo,
		hi);
	return -EBADMSG;
}

#define HEAD	"objfs.head"

static void
log_name(char name[64], uint64_t epoch, uint64_t seq)
{
	snprintf(name, 64, "objfs.log.%016" PRIx64 ".%016" PRIx64, epoch, seq);
}

int
objfs_remote_log_put(struct objfs_remote *r, uint64_t epoch, uint64_t seq,
		const void *buf, size_t len)
{
	char name[64];

	log_name(name, epoch, seq);
	return objfs_remote_create(r, name, buf, len);
}

int
objfs_remote_log_get(struct objfs_remote *r, uint64_t epoch, uint64_t seq,
		void *buf, size_t cap, size_t *len)
{
	rados_read_op_t op = rados_create_read_op();
	uint64_t size = 0;
	time_t mtime;
	char name[64];
	int rc, rv1 = 0, rv2 = 0;

	if (!op)
		return -ENOMEM;
	log_name(name, epoch, seq);
	rados_read_op_stat(op, &size, &mtime, &rv1);
	rados_read_op_read(op, 0, cap, buf, len, &rv2);
	rc = rados_read_op_operate(op, r->io, name, 0);
	rados_release_read_op(op);
	if (rc == 0)
		rc = rv1 < 0 ? rv1 : rv2 < 0 ? rv2 : 0;
	if (rc == 0 && size > cap)
		rc = -EFBIG;
	return rc;
}

int
objfs_remote_head_get(struct objfs_remote *r, void *buf, size_t cap,
		size_t *len, uint64_t *ver)
{
	size_t got = 0;
	int rc;

	pthread_mutex_lock(&r->head_lock);
	rc = objfs_remote_get(r, HEAD, 0, buf, cap, &got);
	*ver = rc == 0 ? rados_get_last_version(r->io) : 0;
	pthread_mutex_unlock(&r->head_lock);
	*len = got;
	return rc;
}

int
objfs_remote_head_put(struct objfs_remote *r, const void *buf, size_t len,
		uint64_t *ver)
{
	rados_write_op_t op = rados_create_write_op();
	int rc;

	if (!op)
		return -ENOMEM;
	if (*ver == 0)
		rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	else
		rados_write_op_assert_version(op, *ver);
	rados_write_op_write_full(op, buf, len);
	pthread_mutex_lock(&r->head_lock);
	rc = rados_write_op_operate(op, r->io, HEAD, NULL, 0);
	if (rc == 0)
		*ver = rados_get_last_version(r->io);
	pthread_mutex_unlock(&r->head_lock);
	rados_release_write_op(op);
	/* Another writer's version (newer: -ERANGE; the object made anew
	 * with a lower one: -EOVERFLOW), or a head where none was. */
	if (rc == -ERANGE || rc == -EOVERFLOW || rc == -EEXIST ||
	    (rc == -ENOENT && *ver != 0))
		rc = -ECANCELED;
	return rc;
}

#else	/* !HAVE_RADOS */

int
objfs_remote_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize)
{
	(void)cfg;
	*out = NULL;
	snprintf(err, errsize, "remote: this objfs was built without librados "
		"(install librados-dev and build again)");
	return -ENOTSUP;
}

void
objfs_remote_close(struct objfs_remote *r)
{
	(void)r;
}

#endif
