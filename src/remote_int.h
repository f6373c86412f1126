/* SPDX-License-Identifier: MIT */
/*
 * remote_int.h - what remote.c (the calls, one at a time) and remote_aio.c
 * (chunk puts and fetches in flight) share.  Only they include it, and
 * only where librados is (HAVE_RADOS).
 */
#ifndef OBJFS_REMOTE_INT_H
#define OBJFS_REMOTE_INT_H

#include <pthread.h>
#include <rados/librados.h>
#include <stdint.h>

#define SUMS_XATTR	"objfs.sums"

struct objfs_remote {
	rados_t cluster;
	rados_ioctx_t io;
	/* The head's calls read the ioctx's last version: one at a time. */
	pthread_mutex_t head_lock;
};

/* Does the object @name hold a chunk of @len bytes with sums @tab?  1 yes,
 * 0 no (other bytes, or not one of ours), -errno. */
int objfs_remote_chunk_same(struct objfs_remote *r, const char *name,
		uint32_t len, unsigned shift, const unsigned char *tab);

#endif
