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
#include "src/base/deadline.h"
#include "src/base/sync.h"
#include "src/base/log.h"
#include "src/rados/remote.h"

int
objfs_rados_parse(const char *spec, char pool[OBJFS_REMOTE_NAME_MAX],
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

#ifdef HAVE_RADOS
#include "src/rados/remote_int.h"

static const struct objfs_remote_ops rados_ops;

int
objfs_rados_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize)
{
	char pool[OBJFS_REMOTE_NAME_MAX], ns[OBJFS_REMOTE_NAME_MAX], t[16];
	const char *conf = cfg->conf ? cfg->conf : "/etc/ceph/ceph.conf";
	struct rados_remote *r;
	int rc;

	rc = objfs_rados_parse(cfg->spec, pool, ns, err, errsize);
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
	/* The objecter pings a watch once a tick (objecter_tick_interval,
	 * 5 s by default), and the OSD drops a watch it heard nothing of
	 * for its timeout (5 s at least here: objfs_rados_watch): at the
	 * default a shared mount lost its watch every few seconds, and
	 * missed the notifies (recalls, appends) meanwhile.  A tick of one
	 * second pings five times a timeout. */
	if ((rc = rados_conf_set(r->cluster, "rados_osd_op_timeout", t)) < 0 ||
	    (rc = rados_conf_set(r->cluster, "rados_mon_op_timeout", t)) < 0 ||
	    (rc = rados_conf_set(r->cluster, "client_mount_timeout", t)) < 0 ||
	    (rc = rados_conf_set(r->cluster, "objecter_tick_interval", "1")) < 0) {
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
	pthread_mutex_init(&r->notify_mu, NULL);
	pthread_mutex_init(&r->done_mu, NULL);
	rc = objfs_cond_init(&r->done_cv);
	if (rc) {
		snprintf(err, errsize, "remote: %s", strerror(rc));
		pthread_mutex_destroy(&r->done_mu);
		pthread_mutex_destroy(&r->notify_mu);
		rados_ioctx_destroy(r->io);
		rados_shutdown(r->cluster);
		free(r);
		return -rc;
	}
	r->base.ops = &rados_ops;
	/* While the pool does not answer, a call with less than a whole
	 * timeout left fails at once rather than send a request it would
	 * cancel at its deadline (src/remote.h, objfs_remote_late). */
	r->base.whole_ns = (uint64_t)(cfg->timeout_s ? cfg->timeout_s :
		OBJFS_REMOTE_TIMEOUT) * 1000000000u;
	*out = &r->base;
	return 0;

fail:
	rados_shutdown(r->cluster);
	free(r);
	return rc;
}

static void
pool_close(struct objfs_remote *base)
{
	struct rados_remote *r = (struct rados_remote *)base;

	if (!r)
		return;
	pthread_mutex_lock(&r->notify_mu);
	objfs_rados_notifies_reap(r, 1);
	pthread_mutex_unlock(&r->notify_mu);
	/* Lock calls left to finish past a call's deadline (remote_lock.c). */
	objfs_rados_jobs_wait(r);
	rados_ioctx_destroy(r->io);
	rados_shutdown(r->cluster);
	pthread_mutex_destroy(&r->notify_mu);
	pthread_cond_destroy(&r->done_cv);
	pthread_mutex_destroy(&r->done_mu);
	free(r);
}

static int
pool_put(struct objfs_remote *base, const char *name, const void *buf,
		size_t len)
{
	struct rados_remote *r = (struct rados_remote *)base;
	rados_write_op_t op = rados_create_write_op();
	int rc;

	if (!op)
		return -ENOMEM;
	rados_write_op_write_full(op, buf, len);
	rc = objfs_rados_write(r, op, name, NULL);
	rados_release_write_op(op);
	return rc;
}

static int
pool_create(struct objfs_remote *base, const char *name, const void *buf,
		size_t len)
{
	struct rados_remote *r = (struct rados_remote *)base;
	rados_write_op_t op = rados_create_write_op();
	int rc;

	if (!op)
		return -ENOMEM;
	rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	rados_write_op_write_full(op, buf, len);
	rc = objfs_rados_write(r, op, name, NULL);
	rados_release_write_op(op);
	return rc;
}

/* @len bytes of @name from @off into @buf (*@got of them), waited for
 * until the call's deadline; with @ver the version the OSD answered. */
static int
read_bytes(struct rados_remote *r, const char *name, uint64_t off,
		void *buf, size_t len, size_t *got, uint64_t *ver)
{
	rados_read_op_t op = rados_create_read_op();
	size_t n = 0;
	int rc, rv = 0;

	*got = 0;
	if (!op)
		return -ENOMEM;
	rados_read_op_read(op, off, len, buf, &n, &rv);
	rc = objfs_rados_read(r, op, name, ver);
	rados_release_read_op(op);
	if (rc >= 0 && rv < 0)
		rc = rv;
	if (rc < 0)
		return rc;
	*got = n;
	return 0;
}

static int
pool_get(struct objfs_remote *base, const char *name, uint64_t off,
		void *buf, size_t len, size_t *got)
{
	return read_bytes((struct rados_remote *)base, name, off, buf, len,
			got, NULL);
}

static int
pool_stat(struct objfs_remote *base, const char *name, uint64_t *size)
{
	struct rados_remote *r = (struct rados_remote *)base;
	rados_read_op_t op = rados_create_read_op();
	time_t mtime;
	int rc, rv = 0;

	if (!op)
		return -ENOMEM;
	rados_read_op_stat(op, size, &mtime, &rv);
	rc = objfs_rados_read(r, op, name, NULL);
	rados_release_read_op(op);
	return rc < 0 ? rc : rv < 0 ? rv : 0;
}

static int
pool_remove(struct objfs_remote *base, const char *name)
{
	struct rados_remote *r = (struct rados_remote *)base;
	rados_write_op_t op = rados_create_write_op();
	int rc;

	if (!op)
		return -ENOMEM;
	rados_write_op_remove(op);
	rc = objfs_rados_write(r, op, name, NULL);
	rados_release_write_op(op);
	return rc == -ENOENT ? 0 : rc;
}

static int
pool_list(struct objfs_remote *base,
		int (*cb)(void *arg, const char *name), void *arg)
{
	struct rados_remote *r = (struct rados_remote *)base;
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

static void
pool_set_touch(struct objfs_remote *base, int on)
{
	struct rados_remote *r = (struct rados_remote *)base;

	r->touch = on;
}

void
objfs_rados_touch_op(rados_write_op_t op, const unsigned char *x,
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
chunk_touch(struct rados_remote *r, const char *name, const unsigned char *x,
		size_t xlen)
{
	rados_write_op_t op = rados_create_write_op();
	char stamp[32];
	int rc;

	if (!op)
		return -ENOMEM;
	objfs_rados_touch_op(op, x, xlen, stamp);
	rc = objfs_rados_write(r, op, name, NULL);
	rados_release_write_op(op);
	return rc;
}

static int
pool_age_ver(struct objfs_remote *base, const char *name, uint64_t *size,
		int64_t *mtime, uint64_t *ver)
{
	struct rados_remote *r = (struct rados_remote *)base;
	rados_read_op_t op = rados_create_read_op();
	time_t t = 0;
	int rc, rv = 0;

	if (!op)
		return -ENOMEM;
	rados_read_op_stat(op, size, &t, &rv);
	/* The version of this operation's answer: the ioctx's "last
	 * version" would be any thread's. */
	rc = objfs_rados_read(r, op, name, ver);
	rados_release_read_op(op);
	if (rc == 0 && rv < 0)
		rc = rv;
	*mtime = (int64_t)t;
	return rc;
}

static int
pool_remove_at(struct objfs_remote *base, const char *name, uint64_t ver)
{
	struct rados_remote *r = (struct rados_remote *)base;
	rados_write_op_t op = rados_create_write_op();
	int rc;

	if (!op)
		return -ENOMEM;
	rados_write_op_assert_version(op, ver);
	rados_write_op_remove(op);
	rc = objfs_rados_write(r, op, name, NULL);
	rados_release_write_op(op);
	/* A version other than @ver: -ERANGE (older) or -EOVERFLOW (newer). */
	return rc == -ERANGE || rc == -EOVERFLOW ? -ECANCELED : rc;
}

static int
pool_get_all(struct objfs_remote *base, const char *name, void **buf,
		size_t *len)
{
	struct rados_remote *r = (struct rados_remote *)base;

	for (int tries = 0; tries < 4; tries++) {
		uint64_t size;
		size_t got = 0;
		void *p;
		int rc = objfs_remote_stat(&r->base, name, &size);

		if (rc < 0)
			return rc;
		p = malloc(size + 1);
		if (!p)
			return -ENOMEM;
		/* One byte more than its size: a longer object (replaced
		 * meanwhile) is read again. */
		rc = objfs_remote_get(&r->base, name, 0, p, size + 1, &got);
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
objfs_rados_chunk_same(struct rados_remote *r, const char *name, uint32_t len,
		unsigned shift, const unsigned char *tab)
{
	size_t n = 1 + 4 * (size_t)objfs_nsums(len, shift);
	unsigned char *x = malloc(n);
	rados_read_op_t op = x ? rados_create_read_op() : NULL;
	uint64_t size = 0;
	time_t mtime;
	int rc, rv = 0;

	if (!op) {
		free(x);
		return -ENOMEM;
	}
	x[0] = (unsigned char)shift;
	memcpy(x + 1, tab, n - 1);
	/* Its size, and its sums compared in the OSD: one round trip. */
	rados_read_op_stat(op, &size, &mtime, &rv);
	rados_read_op_cmpxattr(op, SUMS_XATTR, LIBRADOS_CMPXATTR_OP_EQ,
			(const char *)x, n);
	rc = objfs_rados_read(r, op, name, NULL);
	rados_release_read_op(op);
	free(x);
	if (rc >= 0 && rv < 0)
		rc = rv;
	if (rc >= 0)
		rc = size == len;
	else if (rc == -ENODATA || rc == -ECANCELED)
		rc = 0;		/* no sums (not one of ours), or others */
	return rc;
}

static int
pool_chunk_put(struct objfs_remote *base, const char *name,
		const void *buf, uint32_t len, unsigned shift,
		const unsigned char *tab)
{
	struct rados_remote *r = (struct rados_remote *)base;
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
	rc = objfs_rados_write(r, op, name, NULL);
	rados_release_write_op(op);
	free(x);
	if (rc == 0)
		return 1;
	if (rc != -EEXIST)
		return rc;
	/* There already: the same bytes, or (a name is 128 bits of a hash
	 * and the length) something damaged it. */
	rc = objfs_rados_chunk_same(r, name, len, shift, tab);
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

static int
pool_chunk_get(struct objfs_remote *base, const char *name, void *buf,
		uint32_t len, unsigned shift, uint64_t csum)
{
	struct rados_remote *r = (struct rados_remote *)base;
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
	rc = objfs_rados_read(r, op, name, NULL);
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

#define HEAD	"objfs.head"

static void
log_name(char name[64], uint64_t epoch, uint64_t seq)
{
	snprintf(name, 64, "objfs.log.%016" PRIx64 ".%016" PRIx64, epoch, seq);
}

static int
pool_log_put(struct objfs_remote *base, uint64_t epoch, uint64_t seq,
		const void *buf, size_t len)
{
	struct rados_remote *r = (struct rados_remote *)base;
	char name[64];

	log_name(name, epoch, seq);
	return objfs_remote_create(&r->base, name, buf, len);
}

static int
pool_log_get(struct objfs_remote *base, uint64_t epoch, uint64_t seq,
		void *buf, size_t cap, size_t *len)
{
	struct rados_remote *r = (struct rados_remote *)base;
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
	rc = objfs_rados_read(r, op, name, NULL);
	rados_release_read_op(op);
	if (rc == 0)
		rc = rv1 < 0 ? rv1 : rv2 < 0 ? rv2 : 0;
	if (rc == 0 && size > cap)
		rc = -EFBIG;
	return rc;
}

/* The head's version is that of the operation itself (its completion):
 * the ioctx's "last version" is any thread's last operation's, read
 * racily when another thread's lands between (issue 47). */
static int
pool_head_get(struct objfs_remote *base, void *buf, size_t cap,
		size_t *len, uint64_t *ver)
{
	*ver = 0;
	return read_bytes((struct rados_remote *)base, HEAD, 0, buf, cap, len,
			ver);
}

static int
pool_head_put(struct objfs_remote *base, const void *buf, size_t len,
		uint64_t *ver)
{
	struct rados_remote *r = (struct rados_remote *)base;
	rados_write_op_t op = rados_create_write_op();
	int rc;

	if (!op)
		return -ENOMEM;
	if (*ver == 0)
		rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	else
		rados_write_op_assert_version(op, *ver);
	rados_write_op_write_full(op, buf, len);
	rc = objfs_rados_write(r, op, HEAD, ver);
	rados_release_write_op(op);
	/* Another writer's version (newer: -ERANGE; the object made anew
	 * with a lower one: -EOVERFLOW), or a head where none was. */
	if (rc == -ERANGE || rc == -EOVERFLOW || rc == -EEXIST ||
	    (rc == -ENOENT && *ver != 0))
		rc = -ECANCELED;
	return rc;
}

static const struct objfs_remote_ops rados_ops = {
	.kind = "rados",
	.close = pool_close,
	.put = pool_put,
	.create = pool_create,
	.get = pool_get,
	.stat = pool_stat,
	.remove = pool_remove,
	.hold = objfs_rados_hold,
	.hold_shared = objfs_rados_hold_shared,
	.hold_renew = objfs_rados_hold_renew,
	.release = objfs_rados_release,
	.holder = objfs_rados_holder,
	.break_ = objfs_rados_break,
	.list = pool_list,
	.set_touch = pool_set_touch,
	.age_ver = pool_age_ver,
	.remove_at = pool_remove_at,
	.watch = objfs_rados_watch,
	.unwatch = objfs_rados_unwatch,
	.watch_lost = objfs_rados_watch_lost,
	.notify_ack = objfs_rados_notify_ack,
	.omap_set = objfs_rados_omap_set,
	.omap_del_if = objfs_rados_omap_del_if,
	.omap_list = objfs_rados_omap_list,
	.notify = objfs_rados_notify,
	.ask = objfs_rados_ask,
	.df = objfs_rados_df,
	.get_all = pool_get_all,
	.chunk_put = pool_chunk_put,
	.chunk_get = pool_chunk_get,
	.log_put = pool_log_put,
	.log_get = pool_log_get,
	.head_get = pool_head_get,
	.head_put = pool_head_put,
	.puts_new = objfs_rados_puts_new,
	.puts_add = objfs_rados_puts_add,
	.puts_wait = objfs_rados_puts_wait,
	.puts_result = objfs_rados_puts_result,
	.puts_counts = objfs_rados_puts_counts,
	.puts_free = objfs_rados_puts_free,
	.fetch_start = objfs_rados_fetch_start,
	.fetch_done = objfs_rados_fetch_done,
	.fetch_take = objfs_rados_fetch_take,
	.fetch_free = objfs_rados_fetch_free,
};

#else	/* !HAVE_RADOS */

int
objfs_rados_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize)
{
	(void)cfg;
	*out = NULL;
	snprintf(err, errsize, "remote: this objfs was built without librados "
		"(install librados-dev and build again)");
	return -ENOTSUP;
}

#endif
