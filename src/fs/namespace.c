/* SPDX-License-Identifier: MIT */
/*
 * namespace.c - names: lookup and forget, creating nodes, links,
 * unlink and rmdir, rename (reading a directory or a symlink is dir.c's).
 *
 * An unlinked inode that is not open leaves the index in the transaction
 * that removes its last name (ip->gone).  Any other is put on the index's
 * orphan list in that transaction; it is destroyed when its last lookup
 * and open go, or, after a crash, at the next mount.  An object that may
 * have a backing file leaves a tombstone in the index (the "deleted" DB)
 * in the same commit; the file is removed once that commit is durable,
 * then the tombstone.  A directory's attributes are written with every
 * create and remove in it.
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

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/base/sync.h"
#include "src/status.h"
#include "src/store_int.h"
#include "meta/meta_keys.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE	(1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE		(1 << 1)
#endif
#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT		(1 << 2)
#endif

/* ---- attributes ------------------------------------------------------ */

/* The entry @name of @parent, read in a transaction of its own (no inode
 * is got inside one: a get may load, reading the index). */
static int
read_dirent(struct objfs_store *s, uint64_t parent, const char *name,
		size_t len, struct objfs_dirent *d)
{
	struct objfs_meta_txn *t;
	int rc = objfs_meta_begin(s->meta, 0, &t);

	if (rc < 0)
		return rc;
	rc = objfs_meta_dirent_get(t, parent, name, len, d);
	objfs_meta_abort(t);
	return rc;
}

/* 0 when directory @ino has no entries, else -ENOTEMPTY (or an error). */
static int
dir_empty(struct objfs_store *s, uint64_t ino)
{
	struct objfs_meta_txn *t;
	int rc = objfs_meta_begin(s->meta, 0, &t);

	if (rc < 0)
		return rc;
	rc = objfs_meta_dir_empty(t, ino);
	objfs_meta_abort(t);
	return rc;
}

static int
lookup_once(struct objfs_store *s, uint64_t parent, const char *name,
		size_t len, struct objfs_attr *out)
{
	struct objfs_inode *ip;
	struct objfs_dirent d;
	/* Shared mode: what the kernel is about to hold is at least as new
	 * as what other nodes' records had changed by now (entry_gen). */
	uint64_t g0 = atomic_load(&s->remote_gen);
	int rc;

	rc = read_dirent(s, parent, name, len, &d);
	if (rc < 0)
		return rc;
	rc = objfs_inode_get(s, d.ino, &ip);
	if (rc < 0)
		return rc;
	/* Without ns_lock the name may have gone meanwhile: an inode with
	 * no names left is not found. */
	objfs_inode_lock(ip);
	*out = objfs_inode_attr_out(ip);
	if (ip->entry_gen < g0)
		ip->entry_gen = g0;
	objfs_inode_unlock(ip);
	if (out->nlink == 0)
		rc = -ENOENT;
	else
		objfs_inode_add_lookups(s, ip, 1);
	objfs_inode_put(s, ip);
	return rc;
}

int
objfs_store_lookup(struct objfs_store *s, uint64_t parent, const char *name,
		struct objfs_attr *out)
{
	OBJFS_CALL_ANY(s);
	return objfs_store_lookup_by(s, parent, name, 0, out);
}

int
objfs_store_lookup_by(struct objfs_store *s, uint64_t parent,
		const char *name, int32_t tid, struct objfs_attr *out)
{
	OBJFS_CALL_ANY(s);
	size_t len = strlen(name);
	int rc;

	if (len > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (objfs_is_reserved_name(parent, name)) {
		objfs_status_node_attr(out);
		return 0;
	}
	/* The kernel's walk again after an open's ESTALE to this thread
	 * pins what its last lookup reads until its open (walk.c): not
	 * across a recall or an apply of the log, which the pin holds up. */
	objfs_walk_unpin(s, tid);
	/* Shared mode: a directory another node holds is recalled first
	 * (what it made there is in the log, and applied here). */
	int held = objfs_share_dir_read(s, parent), walking;

	if (held < 0) {
		objfs_walk_lookup_end(s, tid, held);
		return held;
	}
	walking = objfs_walk_lookup(s, tid);
	rc = lookup_once(s, parent, name, len, out);
	/* Shared mode: a name another node made before this lookup began
	 * is found (close-to-open: the path walk of an open), unless this
	 * node holds the directory (then nobody else made one).  What the
	 * view applies may be another node's taking of the directory, put
	 * before this lookup began, the name waiting in that node's outbox:
	 * it is recalled, as before the first look.  A log that cannot be
	 * read (the cluster does not answer, this node was fenced out)
	 * answers its error, not "no such name": the name may exist, and a
	 * create that followed would wait for the cluster a second time. */
	if (rc == -ENOENT && s->shared && !held) {
		int vrc;

		if (walking)
			objfs_walk_unpin(s, tid);
		vrc = s->tier_ops->view(s->tier);
		if (vrc < 0)
			rc = vrc;
		if (vrc == 0) {
			held = objfs_share_dir_read(s, parent);
			if (held < 0) {
				objfs_walk_lookup_end(s, tid, held);
				return held;
			}
			walking = objfs_walk_lookup(s, tid);
			rc = lookup_once(s, parent, name, len, out);
		}
	}
	if (walking)
		objfs_walk_lookup_end(s, tid, rc);
	return rc;
}

void
objfs_store_forget(struct objfs_store *s, uint64_t ino, uint64_t n)
{
	struct objfs_inode *ip;

	objfs_store_lock(s);
	ip = objfs_inode_find_locked(s, ino);
	if (ip) {
		ip->nlookup = ip->nlookup > n ? ip->nlookup - n : 0;
		ip->refs++;
	}
	objfs_store_unlock(s);
	if (ip)
		objfs_inode_put(s, ip);
}

/* ---- namespace -------------------------------------------------------- */

/* The attributes of @ip, read under its lock. */
static struct objfs_attr
attr_of(struct objfs_inode *ip)
{
	struct objfs_attr a;

	objfs_inode_lock(ip);
	a = ip->attr;
	objfs_inode_unlock(ip);
	return a;
}

static int
link_once(struct objfs_store *s, uint64_t ino, uint64_t newparent,
		const char *newname, struct objfs_attr *out)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *dp, *ip;
	struct objfs_attr a, pa;
	size_t len = strlen(newname);
	int rc;

	if (len > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (objfs_is_reserved_name(newparent, newname))
		return -EEXIST;
	rc = objfs_share_dir_use(s, newparent);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->ns_lock);
	rc = objfs_inode_get_dir(s, newparent, &dp);
	if (rc < 0)
		goto out_unlock;
	rc = objfs_inode_get(s, ino, &ip);
	if (rc < 0)
		goto out_dp;
	a = attr_of(ip);	/* the link count changes only under ns_lock */
	if (S_ISDIR(a.mode) || (a.pad & OBJFS_ATTR_SEALED)) {
		rc = -EPERM;
		goto out_ip;
	}
	if (a.nlink == 0) {
		rc = -ENOENT;
		goto out_ip;
	}
	if (a.nlink >= 65000) {
		rc = -EMLINK;
		goto out_ip;
	}
	rc = objfs_ids_room(s, 0, 1);
	if (rc < 0)
		goto out_ip;
	objfs_inode_lock(dp);
	if (ip != dp)
		objfs_inode_lock(ip);
	a = ip->attr;
	a.nlink++;
	objfs_attr_touch_c(&a);
	pa = dp->attr;
	objfs_attr_touch_mc(&pa);
	rc = objfs_store_begin_change(s, &t);
	if (rc < 0)
		goto out_locks;
	if ((rc = objfs_meta_dirent_add(t, newparent, newname, len, ino,
				a.mode & S_IFMT, s->next_cookie)) < 0 ||
	    (rc = objfs_meta_inode_put(t, &a)) < 0 ||
	    (rc = objfs_meta_inode_put(t, &pa)) < 0 ||
	    (rc = objfs_ids_put(s, t, 0, s->next_cookie + 1)) < 0) {
		objfs_meta_abort(t);
		goto out_locks;
	}
	rc = objfs_meta_commit(t);
	if (rc == 0) {
		s->next_cookie++;
		ip->attr = a;
		ip->attr_dirty = 0;
		dp->attr = pa;
		*out = objfs_inode_attr_out(ip);
	}
out_locks:
	if (ip != dp)
		objfs_inode_unlock(ip);
	objfs_inode_unlock(dp);
	if (rc == 0)
		objfs_inode_add_lookups(s, ip, 1);
out_ip:
	objfs_inode_put(s, ip);
out_dp:
	objfs_inode_put(s, dp);
out_unlock:
	pthread_mutex_unlock(&s->ns_lock);
	return rc;
}

/* Remove @name from @parent; @want_dir selects rmdir semantics. */
static int
remove_name(struct objfs_store *s, uint64_t parent, const char *name,
		int want_dir)
{
	struct objfs_meta_txn *t = NULL;
	struct objfs_inode *dp, *ip;
	struct objfs_attr a, pa;
	struct objfs_dirent d;
	struct objfs_copy_doomed *doomed = NULL;
	size_t len = strlen(name);
	uint64_t seq;
	int rc, gone, doomed_set = 0;

	if (len > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (objfs_is_reserved_name(parent, name))
		return -EPERM;
	rc = objfs_share_dir_use(s, parent);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->ns_lock);
	rc = objfs_inode_get_dir(s, parent, &dp);
	if (rc < 0)
		goto out_unlock;
	/* Look with a read transaction: the write transaction is taken only
	 * after the inode locks (store_int.h), and what it sees cannot change
	 * meanwhile, since every namespace change holds ns_lock.  No inode is
	 * got inside a transaction (a get may load, reading the index). */
	rc = read_dirent(s, parent, name, len, &d);
	if (rc < 0)
		goto out_dp;
	rc = objfs_inode_get(s, d.ino, &ip);
	if (rc < 0)
		goto out_dp;
	a = attr_of(ip);
	if (want_dir && !S_ISDIR(a.mode)) {
		rc = -ENOTDIR;
		goto out_ip;
	}
	if (!want_dir && S_ISDIR(a.mode)) {
		rc = -EISDIR;
		goto out_ip;
	}
	if (a.pad & OBJFS_ATTR_SEALED) {
		rc = -EPERM;	/* sealed: unseal first (chattr -i) */
		goto out_ip;
	}
	if (want_dir && (rc = dir_empty(s, d.ino)) < 0)
		goto out_ip;
	objfs_inode_lock(dp);
	objfs_inode_lock(ip);
	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (rc < 0) {
		t = NULL;
		objfs_inode_unlock(ip);
		objfs_inode_unlock(dp);
		goto out_ip;
	}
	a = ip->attr;
	pa = dp->attr;
	if (want_dir) {
		a.nlink = 0;
		pa.nlink--;
	} else {
		a.nlink--;
	}
	objfs_attr_touch_c(&a);
	objfs_attr_touch_mc(&pa);
	/* Once its last name goes nothing can open it again.  If nothing
	 * has it open, its records leave the index in this transaction (a
	 * tombstone says its backing file may go): no orphan record, and no
	 * second commit when the kernel forgets it.  Otherwise it becomes an
	 * orphan, destroyed at the last close (or at the next mount). */
	gone = a.nlink == 0 && ip->nopen == 0;
	if ((rc = objfs_meta_dirent_del(t, parent, name, len)) < 0 ||
	    (gone && (rc = objfs_data_doom(s, t, ip, &doomed)) < 0) ||
	    (gone && (doomed_set = 1, rc = objfs_meta_inode_del(t,
			a.ino)) < 0) ||
	    (!gone && (rc = objfs_meta_inode_put(t, &a)) < 0) ||
	    (rc = objfs_meta_inode_put(t, &pa)) < 0 ||
	    (a.nlink == 0 && !gone &&
	     (rc = objfs_meta_orphan_add(t, a.ino)) < 0)) {
		objfs_inode_unlock(ip);
		objfs_inode_unlock(dp);
		goto out_ip;
	}
	rc = objfs_meta_commit_seq(t, &seq);
	t = NULL;
	if (rc == 0) {
		ip->attr = a;
		dp->attr = pa;
		if (gone) {
			ip->gone = 1;
			atomic_fetch_sub(&s->ninodes, 1);
			objfs_data_gone(s, ip, seq, doomed);
			doomed_set = 0;
		}
	}
	objfs_inode_unlock(ip);
	objfs_inode_unlock(dp);
out_ip:
	/* Never an inode lock inside a transaction (put may take one). */
	objfs_meta_abort(t);
	if (doomed_set)
		objfs_data_doomed_free(s, doomed);
	objfs_inode_put(s, ip);
out_dp:
	objfs_inode_put(s, dp);
out_unlock:
	pthread_mutex_unlock(&s->ns_lock);
	return rc;
}

int
objfs_store_link(struct objfs_store *s, uint64_t ino, uint64_t newparent,
		const char *newname, struct objfs_attr *out)
{
	OBJFS_CALL(s, ino);
	int rc;

	OBJFS_SHARED(s, rc, link_once(s, ino, newparent, newname, out));
	return rc;
}

int
objfs_store_unlink(struct objfs_store *s, uint64_t parent, const char *name)
{
	OBJFS_CALL_ANY(s);
	int rc;

	OBJFS_SHARED(s, rc, remove_name(s, parent, name, 0));
	return rc;
}

int
objfs_store_rmdir(struct objfs_store *s, uint64_t parent, const char *name)
{
	OBJFS_CALL_ANY(s);
	int rc;

	OBJFS_SHARED(s, rc, remove_name(s, parent, name, 1));
	return rc;
}

/* Is @dir (a directory inode) @anc or below it?  Holds ns_lock, which
 * keeps every directory's parent as it is. */
static int
is_within(struct objfs_store *s, uint64_t dir, uint64_t anc, int *out)
{
	struct objfs_inode *ip;
	int rc, depth = 0;

	for (;;) {
		if (dir == anc) {
			*out = 1;
			return 0;
		}
		if (dir == OBJFS_ROOT_INO || ++depth > 100000) {
			*out = 0;
			return 0;
		}
		rc = objfs_inode_get(s, dir, &ip);
		if (rc < 0)
			return rc;
		dir = attr_of(ip).parent;
		objfs_inode_put(s, ip);
	}
}

struct rename_side {
	struct objfs_inode *dp;		/* directory */
	struct objfs_inode *ip;		/* the entry's inode, or NULL */
	struct objfs_dirent d;
	struct objfs_attr pa, a;
};

/* Lock each distinct inode of the rename once, in inode order.  Several
 * inode locks are only ever taken under ns_lock, so any order is safe;
 * one order (copy_share's too) keeps ThreadSanitizer, which does not see
 * the lock they are under, from reporting a cycle. */
static void
lock_set(struct objfs_inode **v, int n, int lock)
{
	uint64_t last = 0;

	for (;;) {
		struct objfs_inode *next = NULL;

		for (int i = 0; i < n; i++)
			if (v[i] && v[i]->ino > last &&
			    (!next || v[i]->ino < next->ino))
				next = v[i];
		if (!next)
			return;
		if (lock)
			objfs_inode_lock(next);
		else
			objfs_inode_unlock(next);
		last = next->ino;
	}
}

static int
rename_once(struct objfs_store *s, uint64_t parent, const char *name,
		uint64_t newparent, const char *newname, unsigned flags,
		const struct objfs_cred *cr)
{
	struct objfs_meta_txn *t = NULL;
	struct rename_side src = { 0 }, dst = { 0 };
	struct objfs_inode *set[4];
	struct objfs_attr wh;
	size_t len = strlen(name), nlen = strlen(newname);
	int rc, within, src_dir, dst_dir;
	int64_t sec;
	uint32_t nsec;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE |
			RENAME_WHITEOUT))
		return -EINVAL;
	if ((flags & RENAME_EXCHANGE) &&
	    (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)))
		return -EINVAL;
	if (len > OBJFS_NAME_MAX || nlen > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (objfs_is_reserved_name(parent, name))
		return -EPERM;
	if (objfs_is_reserved_name(newparent, newname))
		return -EEXIST;
	rc = objfs_share_dir_use(s, parent);
	if (rc == 0 && newparent != parent)
		rc = objfs_share_dir_use(s, newparent);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->ns_lock);
	rc = objfs_ids_room(s, 1, 2);
	if (rc < 0)
		goto out_unlock;
	rc = objfs_inode_get_dir(s, parent, &src.dp);
	if (rc < 0)
		goto out_unlock;
	rc = objfs_inode_get_dir(s, newparent, &dst.dp);
	if (rc < 0)
		goto out_put;
	/* Read first (and get no inode inside the read: a get may load);
	 * the write transaction comes after the inode locks. */
	rc = read_dirent(s, parent, name, len, &src.d);
	if (rc == 0) {
		rc = read_dirent(s, newparent, newname, nlen, &dst.d);
		if (rc == -ENOENT) {
			dst.d.ino = 0;
			rc = 0;
		}
	}
	if (rc < 0)
		goto out_put;
	rc = objfs_inode_get(s, src.d.ino, &src.ip);
	if (rc < 0)
		goto out_put;
	if (dst.d.ino) {
		rc = objfs_inode_get(s, dst.d.ino, &dst.ip);
		if (rc < 0)
			goto out_put;
	}
	if (flags & RENAME_EXCHANGE) {
		if (!dst.ip) {
			rc = -ENOENT;
			goto out_put;
		}
	} else if (dst.ip && (flags & RENAME_NOREPLACE)) {
		rc = -EEXIST;
		goto out_put;
	}
	if (dst.ip == src.ip)
		goto out_put;	/* same name or hard links of one file: no-op */
	if ((flags & RENAME_WHITEOUT) &&
	    atomic_load(&s->ninodes) >= MAX_INODES) {
		rc = -ENOSPC;
		goto out_put;
	}
	src_dir = S_ISDIR(attr_of(src.ip).mode);
	dst_dir = dst.ip && S_ISDIR(attr_of(dst.ip).mode);
	/* A sealed object keeps its names: neither moved nor replaced. */
	if ((attr_of(src.ip).pad & OBJFS_ATTR_SEALED) ||
	    (dst.ip && (attr_of(dst.ip).pad & OBJFS_ATTR_SEALED))) {
		rc = -EPERM;
		goto out_put;
	}
	if (!(flags & RENAME_EXCHANGE) && dst.ip) {
		if (src_dir && !dst_dir) {
			rc = -ENOTDIR;
			goto out_put;
		}
		if (!src_dir && dst_dir) {
			rc = -EISDIR;
			goto out_put;
		}
		if (dst_dir && (rc = dir_empty(s, dst.d.ino)) < 0)
			goto out_put;
	}
	/* Never move a directory into itself or below itself. */
	if (src_dir && parent != newparent) {
		rc = is_within(s, newparent, src.d.ino, &within);
		if (rc < 0)
			goto out_put;
		if (within) {
			rc = -EINVAL;
			goto out_put;
		}
	}
	if (dst_dir && (flags & RENAME_EXCHANGE) && parent != newparent) {
		rc = is_within(s, parent, dst.d.ino, &within);
		if (rc < 0)
			goto out_put;
		if (within) {
			rc = -EINVAL;
			goto out_put;
		}
	}

	set[0] = src.dp;
	set[1] = dst.dp;
	set[2] = src.ip;
	set[3] = dst.ip;
	lock_set(set, 4, 1);
	rc = objfs_store_begin_change(s, &t);
	if (rc < 0) {
		t = NULL;
		goto out_locks;
	}
	objfs_time_now(&sec, &nsec);
	src.a = src.ip->attr;
	if (dst.ip)
		dst.a = dst.ip->attr;
	src.pa = src.dp->attr;
	dst.pa = dst.dp->attr;
	src.a.ctime_sec = sec;
	src.a.ctime_nsec = nsec;
	if ((rc = objfs_meta_dirent_del(t, parent, name, len)) < 0)
		goto out_locks;
	if (dst.ip && (rc = objfs_meta_dirent_del(t, newparent, newname,
				nlen)) < 0)
		goto out_locks;
	if ((rc = objfs_meta_dirent_add(t, newparent, newname, nlen,
				src.d.ino, src.d.type, s->next_cookie)) < 0)
		goto out_locks;
	if (flags & RENAME_WHITEOUT) {
		/* The old name now names a whiteout (a character device
		 * 0:0, as overlayfs makes on its upper layer), in the same
		 * commit: nobody sees the name free in between. */
		memset(&wh, 0, sizeof(wh));
		wh.ino = s->next_ino;
		wh.mode = S_IFCHR;
		wh.uid = cr->uid;
		wh.gid = (src.pa.mode & S_ISGID) ? src.pa.gid : cr->gid;
		wh.nlink = 1;
		wh.ctime_sec = wh.mtime_sec = wh.atime_sec = sec;
		wh.ctime_nsec = wh.mtime_nsec = wh.atime_nsec = nsec;
		if ((rc = objfs_meta_dirent_add(t, parent, name, len, wh.ino,
					S_IFCHR, s->next_cookie + 1)) < 0 ||
		    (rc = objfs_meta_inode_put(t, &wh)) < 0 ||
		    (rc = objfs_ids_put(s, t, wh.ino + 1, s->next_cookie + 2)) < 0)
			goto out_locks;
	}
	if (flags & RENAME_EXCHANGE) {
		if ((rc = objfs_meta_dirent_add(t, parent, name, len, dst.d.ino,
					dst.d.type, s->next_cookie + 1)) < 0)
			goto out_locks;
		dst.a.ctime_sec = sec;
		dst.a.ctime_nsec = nsec;
		if (src_dir != dst_dir && parent != newparent) {
			/* One directory moves each way: link counts follow. */
			if (src_dir) {
				src.pa.nlink--;
				dst.pa.nlink++;
			} else {
				src.pa.nlink++;
				dst.pa.nlink--;
			}
		}
		if (dst_dir)
			dst.a.parent = parent;
	} else {
		if (dst.ip) {
			dst.a.ctime_sec = sec;
			dst.a.ctime_nsec = nsec;
			if (dst_dir) {
				dst.a.nlink = 0;
				dst.pa.nlink--;
			} else {
				dst.a.nlink--;
			}
			if (dst.a.nlink == 0 &&
			    (rc = objfs_meta_orphan_add(t, dst.a.ino)) < 0)
				goto out_locks;
		}
		if (src_dir && parent != newparent) {
			src.pa.nlink--;
			dst.pa.nlink++;
		}
	}
	if (src_dir)
		src.a.parent = newparent;
	src.pa.mtime_sec = dst.pa.mtime_sec = sec;
	src.pa.mtime_nsec = dst.pa.mtime_nsec = nsec;
	src.pa.ctime_sec = dst.pa.ctime_sec = sec;
	src.pa.ctime_nsec = dst.pa.ctime_nsec = nsec;
	if (parent == newparent) {
		/* One directory: both views of it must agree. */
		src.pa.nlink = src.pa.nlink + dst.pa.nlink - src.dp->attr.nlink;
		dst.pa = src.pa;
	}
	if ((rc = objfs_meta_inode_put(t, &src.a)) < 0 ||
	    (dst.ip && (rc = objfs_meta_inode_put(t, &dst.a)) < 0) ||
	    (rc = objfs_meta_inode_put(t, &src.pa)) < 0 ||
	    (rc = objfs_meta_inode_put(t, &dst.pa)) < 0 ||
	    (rc = objfs_ids_put(s, t, 0, s->next_cookie + 2)) < 0)
		goto out_locks;
	rc = objfs_meta_commit(t);
	t = NULL;
	if (rc == 0) {
		s->next_cookie += 2;
		if (flags & RENAME_WHITEOUT) {
			s->next_ino++;
			atomic_fetch_add(&s->ninodes, 1);
		}
		src.ip->attr = src.a;
		if (dst.ip)
			dst.ip->attr = dst.a;
		src.dp->attr = src.pa;
		dst.dp->attr = dst.pa;
	}
out_locks:
	lock_set(set, 4, 0);
out_put:
	objfs_meta_abort(t);
	if (dst.ip)
		objfs_inode_put(s, dst.ip);
	if (src.ip)
		objfs_inode_put(s, src.ip);
	if (dst.dp)
		objfs_inode_put(s, dst.dp);
	if (src.dp)
		objfs_inode_put(s, src.dp);
out_unlock:
	pthread_mutex_unlock(&s->ns_lock);
	return rc;
}

int
objfs_store_rename(struct objfs_store *s, uint64_t parent, const char *name,
		uint64_t newparent, const char *newname, unsigned flags,
		const struct objfs_cred *cr)
{
	OBJFS_CALL_ANY(s);
	int rc;

	OBJFS_SHARED(s, rc, rename_once(s, parent, name, newparent, newname,
			flags, cr));
	return rc;
}
