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

struct objfs_store;
struct objfs_inode;

/* The status text, NUL-terminated in @buf; *len_out excludes the NUL. */
int objfs_status_text(struct objfs_store *s, char *buf, size_t size,
		size_t *len_out);
/* One user.objfs.* value of @ip (caller holds ip->lock); -ENODATA for an
 * unknown name, -ERANGE when @size (non-zero) is too small. */
int objfs_status_xattr(struct objfs_store *s, struct objfs_inode *ip,
		const char *name, char *buf, size_t size, size_t *len_out);

#endif
