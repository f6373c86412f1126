/* SPDX-License-Identifier: MIT */
/*
 * status.h - the status file and the user.objfs.* xattrs (see status.c).
 */
#ifndef OBJFS_STATUS_H
#define OBJFS_STATUS_H

#include <stddef.h>

#define OBJFS_STATUS_NAME	".objfs-status"
#define OBJFS_STATUS_INO	(UINT64_MAX - 1)
#define OBJFS_XATTR_PREFIX	"user.objfs."
#define OBJFS_XATTR_CHECKSUM	OBJFS_XATTR_PREFIX "checksum"
/* Set on the status file: collect the pool's garbage (the remote tier),
 * the value the grace period in seconds. */
#define OBJFS_XATTR_GC		OBJFS_XATTR_PREFIX "gc"
/* Set on the status file of a shared mount (-o shared): apply every record
 * other mounts put in the pool's log so far, and drop the kernel's copies
 * of what they changed, before the call returns (objfsctl catch-up). */
#define OBJFS_XATTR_CATCH_UP	OBJFS_XATTR_PREFIX "catch_up"
/* A sealed object's checksum recorded at its seal (ENODATA: not sealed),
 * and how an open for reading of it is served ("passthrough: ..." or
 * "daemon: why"). */
#define OBJFS_XATTR_SEALED	OBJFS_XATTR_PREFIX "sealed"
#define OBJFS_XATTR_SERVED	OBJFS_XATTR_PREFIX "served"
/* Set on a file: "pin" / "unpin" keep it resident or let it go (up to
 * sealed_max of the arena), "evict" writes it out and drops it from
 * memory (EBUSY while the kernel maps its per-object file). */
#define OBJFS_XATTR_REQUEST	OBJFS_XATTR_PREFIX "request"

#include "src/store.h"

struct objfs_inode;

/* Everything the status file shows, gathered by the store
 * (objfs_store_get_figures). */
struct objfs_status_figures {
	struct objfs_store_stats st;
	uint64_t disk_bytes, disk_chunks;	/* what the chunk records hold */
	uint64_t disk_stored;			/* ... counting a copy that
						 * records share once */
	uint64_t shared_now;			/* copies on disk two or more
						 * records use, now */
	uint64_t fs_bytes, fs_avail;		/* the backing filesystem */
	long pid;				/* the daemon's */
	const char *data_dir;			/* valid while the store is */
	const char *arena_note;			/* the arena: new, adopted, ... */
};

/* The status text of @f, NUL-terminated in @buf; *len_out excludes the
 * NUL.  Only formats: it takes no lock and reads nothing else. */
int objfs_status_format(const struct objfs_status_figures *f, char *buf,
		size_t size, size_t *len_out);
/* One user.objfs.* value of @ip (caller holds ip->lock); -ENODATA for an
 * unknown name, -ERANGE when @size (non-zero) is too small. */
int objfs_status_xattr(struct objfs_store *s, struct objfs_inode *ip,
		const char *name, char *buf, size_t size, size_t *len_out);

#endif
