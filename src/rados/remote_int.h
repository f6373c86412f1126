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

#define SUMS_XATTR	"objfs.sums"
#define REMOTE_NOTIFIES	64	/* notifies in flight at most */
#define SEEN_XATTR	"objfs.seen"	/* shared mode: when a put last found
					 * the chunk (objfs_remote_set_touch) */

struct objfs_remote {
	rados_t cluster;
	rados_ioctx_t io;
	/* The head's calls read the ioctx's last version: one at a time. */
	pthread_mutex_t head_lock;
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
};

/* A find of chunk @name (its sums @x, @xlen bytes) made a write: the
 * sums compared and SEEN_XATTR set in one operation on @op. */
void objfs_remote_touch_op(rados_write_op_t op, const unsigned char *x,
		size_t xlen, char stamp[32]);

/* Does the object @name hold a chunk of @len bytes with sums @tab?  1 yes,
 * 0 no (other bytes, or not one of ours), -errno. */
int objfs_remote_chunk_same(struct objfs_remote *r, const char *name,
		uint32_t len, unsigned shift, const unsigned char *tab);

#endif
