/* SPDX-License-Identifier: MIT */
/*
 * remote_notify.c - a Ceph pool's watch, notify and omap (src/remote.h's
 * table, shared mode: the follower's wake-ups, the node registry, the
 * questions to other nodes).
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/log.h"
#include "src/rados/remote.h"

#ifdef HAVE_RADOS
#include "src/rados/remote_int.h"

/* ---- watch and notify ---------------------------------------------------- */

static void
watch_cb(void *arg, uint64_t notify_id, uint64_t cookie, uint64_t notifier,
		void *data, size_t len)
{
	struct rados_remote *r = arg;

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
	struct rados_remote *r = arg;

	(void)cookie;
	if (!atomic_exchange(&r->watch_lost, 1))
		objfs_log(OBJFS_LOG_WARNING, "remote: a watch was lost (%s): "
			"watching again", strerror(-err));
}

int
objfs_rados_watch(struct objfs_remote *base, const char *name,
		unsigned timeout_s, void (*cb)(void *arg, uint64_t notify_id, uint64_t cookie,
			const void *data, size_t len),
		void *arg, uint64_t *cookie)
{
	struct rados_remote *r = (struct rados_remote *)base;

	snprintf(r->watch_name, sizeof(r->watch_name), "%s", name);
	r->watch_cb = cb;
	r->watch_arg = arg;
	atomic_store(&r->watch_lost, 0);
	return rados_watch3(r->io, name, cookie, watch_cb, watch_err,
			timeout_s < 5 ? 5 : timeout_s, r);
}

int
objfs_rados_watch_lost(struct objfs_remote *base)
{
	struct rados_remote *r = (struct rados_remote *)base;

	return atomic_load(&r->watch_lost);
}

int
objfs_rados_notify_ack(struct objfs_remote *base, uint64_t notify_id,
		uint64_t cookie, const void *buf, size_t len)
{
	struct rados_remote *r = (struct rados_remote *)base;

	return rados_notify_ack(r->io, r->watch_name, notify_id, cookie,
			(const char *)buf, (int)len);
}

int
objfs_rados_omap_set(struct objfs_remote *base, const char *name,
		const char *key, const void *val, size_t len)
{
	struct rados_remote *r = (struct rados_remote *)base;
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
	rc = objfs_rados_write(r, op, name, NULL);
	rados_release_write_op(op);
	return rc == -ENOENT && !val ? 0 : rc;
}

int
objfs_rados_omap_del_if(struct objfs_remote *base, const char *name,
		const char *key, const void *val, size_t len)
{
	struct rados_remote *r = (struct rados_remote *)base;
	rados_write_op_t op = rados_create_write_op();
	const char *keys[1] = { key };
	int rc, cmp = 0;

	if (!op)
		return -ENOMEM;
	rados_write_op_omap_cmp(op, key, LIBRADOS_CMPXATTR_OP_EQ, val, len,
			&cmp);
	rados_write_op_omap_rm_keys(op, keys, 1);
	rc = objfs_rados_write(r, op, name, NULL);
	rados_release_write_op(op);
	if (rc == -ENOENT)
		return 0;	/* no such object: nothing to remove */
	return rc == -ECANCELED ? 1 : rc;
}

int
objfs_rados_omap_list(struct objfs_remote *base, const char *name,
		int (*cb)(void *arg, const char *key, const void *val,
			size_t len), void *arg)
{
	struct rados_remote *r = (struct rados_remote *)base;
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
		rc = objfs_rados_read(r, op, name, NULL);
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
objfs_rados_ask(struct objfs_remote *base, const char *name, const void *buf,
		size_t len, unsigned timeout_ms,
		void (*cb)(void *arg, const void *data, size_t len), void *arg)
{
	struct rados_remote *r = (struct rados_remote *)base;
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
void
objfs_rados_notifies_reap(struct rados_remote *r, int all)
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
objfs_rados_unwatch(struct objfs_remote *base, uint64_t cookie)
{
	struct rados_remote *r = (struct rados_remote *)base;

	(void)rados_unwatch2(r->io, cookie);
	r->watch_cb = NULL;
	pthread_mutex_lock(&r->notify_mu);
	objfs_rados_notifies_reap(r, 1);
	pthread_mutex_unlock(&r->notify_mu);
}

int
objfs_rados_notify(struct objfs_remote *base, const char *name)
{
	struct rados_remote *r = (struct rados_remote *)base;
	struct remote_notify *n;
	int rc;

	pthread_mutex_lock(&r->notify_mu);
	objfs_rados_notifies_reap(r, 0);
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

#endif	/* HAVE_RADOS */
