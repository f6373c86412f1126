/* SPDX-License-Identifier: MIT */
/*
 * xattr.c - extended attributes, kept in the index, and the read-only
 * user.objfs.* figures (status.c computes them).
 *
 * Locking: see store_int.h.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/base/log.h"
#include "src/base/sync.h"
#include "src/status.h"
#include "src/store_int.h"
#include "meta/meta_keys.h"

/* ---- extended attributes --------------------------------------------- */

static int
is_objfs_xattr(const char *name)
{
	return strncmp(name, OBJFS_XATTR_PREFIX,
			sizeof(OBJFS_XATTR_PREFIX) - 1) == 0;
}

/* user.objfs.checksum: 32 hex digits, computed now (objsum.c). */
static int
checksum_xattr(struct objfs_store *s, struct objfs_inode *ip, void *buf,
		size_t size, size_t *len_out)
{
	char hex[33];
	int rc;

	*len_out = 32;
	if (size == 0)
		return 0;	/* its length only: not worth computing */
	if (size < 32)
		return -ERANGE;
	rc = objfs_data_object_sum(s, ip, hex);
	if (rc < 0)
		return rc;
	memcpy(buf, hex, 32);
	return 0;
}

/* user.objfs.sealed and user.objfs.served (sealed.c). */
static int
sealed_xattr(struct objfs_store *s, struct objfs_inode *ip, const char *name,
		void *buf, size_t size, size_t *len_out)
{
	char hex[33];
	const char *v = hex;
	int rc;

	if (strcmp(name, OBJFS_XATTR_SEALED) == 0) {
		rc = objfs_sealed_sum(s, ip, hex);
		if (rc < 0)
			return rc;
	} else {
		v = objfs_sealed_served(s, ip);
	}
	*len_out = strlen(v);
	if (size == 0)
		return 0;
	if (size < *len_out)
		return -ERANGE;
	memcpy(buf, v, *len_out);
	return 0;
}

int
objfs_store_getxattr(struct objfs_store *s, uint64_t ino, const char *name,
		void *buf, size_t size, size_t *len_out)
{
	OBJFS_CALL(s, ino);
	struct objfs_meta_txn *t;
	struct objfs_inode *ip;
	int rc;

	/* The status file has no records: ENODATA from the index, and
	 * EPERM from the inode table for the user.objfs.* figures. */
	if (is_objfs_xattr(name)) {
		rc = objfs_inode_get(s, ino, &ip);
		if (rc < 0)
			return rc == -EPERM ? -ENODATA : rc;
		objfs_inode_lock(ip);
		if (!S_ISREG(ip->attr.mode))
			rc = -ENODATA;
		else if (strcmp(name, OBJFS_XATTR_CHECKSUM) == 0)
			rc = checksum_xattr(s, ip, buf, size, len_out);
		else if (strcmp(name, OBJFS_XATTR_SEALED) == 0 ||
			 strcmp(name, OBJFS_XATTR_SERVED) == 0)
			rc = sealed_xattr(s, ip, name, buf, size, len_out);
		else
			rc = objfs_status_xattr(s, ip, name, buf, size,
					len_out);
		objfs_inode_unlock(ip);
		objfs_inode_put(s, ip);
		return rc;
	}
	if (strcmp(name, OBJFS_SEAL_RECORD) == 0)
		return -ENODATA;	/* objfs's own record */
	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_xattr_get(t, ino, name, buf, size, len_out);
	objfs_meta_abort(t);
	return rc;
}

int
objfs_store_listxattr(struct objfs_store *s, uint64_t ino, char *buf,
		size_t size, size_t *len_out)
{
	OBJFS_CALL(s, ino);
	struct objfs_meta_txn *t;
	int rc;

	rc = objfs_meta_begin(s->meta, 0, &t);	/* none for the status file */

	if (rc < 0)
		return rc;
	rc = objfs_meta_xattr_list(t, ino, buf, size, len_out);
	objfs_meta_abort(t);
	/* objfs's own record is not the user's to see (a length asked
	 * for alone may count it: a longer answer is allowed). */
	if (rc == 0 && size) {
		for (size_t i = 0; i < *len_out; ) {
			size_t n = strlen(buf + i) + 1;

			if (strcmp(buf + i, OBJFS_SEAL_RECORD) == 0) {
				memmove(buf + i, buf + i + n, *len_out - i - n);
				*len_out -= n;
				continue;
			}
			i += n;
		}
	}
	return rc;
}

static int
remote_gc(struct objfs_store *s, const void *val, size_t len)
{
	char num[16], report[256];
	char *end;
	long grace;

	if (!s->tier)
		return -ENOTSUP;
	if (len == 0 || len >= sizeof(num))
		return -EINVAL;
	memcpy(num, val, len);
	num[len] = '\0';
	grace = strtol(num, &end, 10);
	if (end == num || *end || grace < 0 || grace > 30l * 86400)
		return -EINVAL;
	return s->tier_ops->gc(s->tier, (unsigned)grace, report,
			sizeof(report));
}

static int
xattr_change(struct objfs_store *s, uint64_t ino, const char *name,
		const void *val, size_t len, int flags, int remove)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *ip;
	struct objfs_attr a;
	int rc;

	/* A garbage collection of the remote tier's pool, asked for by
	 * setting user.objfs.gc on the status file to the grace period in
	 * seconds (objfsctl gc): done when the call returns. */
	if (objfs_is_status_ino(ino) && !remove &&
	    strcmp(name, OBJFS_XATTR_GC) == 0)
		return remote_gc(s, val, len);
	if (objfs_is_status_ino(ino) && !remove &&
	    strcmp(name, OBJFS_XATTR_CATCH_UP) == 0)
		return objfs_share_catch_up(s);
	/* The user.objfs.* names are figures objfs computes: read-only;
	 * user.objfs.request asks for something (pin, unpin, evict). */
	if (!remove && strcmp(name, OBJFS_XATTR_REQUEST) == 0)
		return objfs_store_request(s, ino, val, len);
	if (is_objfs_xattr(name) || strcmp(name, OBJFS_SEAL_RECORD) == 0)
		return -EPERM;
	rc = objfs_inode_get(s, ino, &ip);	/* EPERM: the status file */
	if (rc < 0)
		return rc;
	objfs_inode_lock(ip);
	if (ip->gone) {
		rc = -ENOENT;	/* its records left the index */
		goto out;
	}
	if (objfs_sealed_is(ip)) {
		rc = -EPERM;	/* sealed: its xattrs too */
		goto out;
	}
	a = ip->attr;
	objfs_attr_touch_c(&a);
	rc = objfs_store_begin_change(s, &t);
	if (rc < 0)
		goto out;
	rc = remove ? objfs_meta_xattr_del(t, ino, name) :
		objfs_meta_xattr_set(t, ino, name, val, len, flags);
	if (rc == 0)
		rc = objfs_meta_inode_put(t, &a);
	if (rc < 0) {
		objfs_meta_abort(t);
		goto out;
	}
	rc = objfs_meta_commit(t);
	if (rc == 0) {
		ip->attr = a;
		ip->attr_dirty = 0;
		if (strcmp(name, XATTR_CAPS) == 0)
			ip->caps = remove ? 1 : 2;
	}
out:
	objfs_inode_unlock(ip);
	objfs_inode_put(s, ip);
	return rc;
}

int
objfs_store_setxattr(struct objfs_store *s, uint64_t ino, const char *name,
		const void *val, size_t len, int flags)
{
	OBJFS_CALL(s, ino);
	/* POSIX ACLs are not supported: storing them as plain bytes would
	 * let them disagree with the mode bits the kernel enforces.  Saying
	 * so makes cp -a and rsync -A fall back to the mode bits. */
	int rc;

	if (strncmp(name, "system.posix_acl_", 17) == 0)
		return -EOPNOTSUPP;
	if (objfs_is_status_ino(ino))	/* requests: gc, not the tree */
		return xattr_change(s, ino, name, val, len, flags, 0);
	OBJFS_SHARED(s, rc, xattr_change(s, ino, name, val, len, flags, 0));
	return rc;
}

int
objfs_store_removexattr(struct objfs_store *s, uint64_t ino, const char *name)
{
	OBJFS_CALL(s, ino);
	int rc;

	OBJFS_SHARED(s, rc, xattr_change(s, ino, name, NULL, 0, 0, 1));
	return rc;
}
