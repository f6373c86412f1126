/* SPDX-License-Identifier: MIT */
/*
 * file.c - attributes and open files: getattr and setattr, open and
 * release, read, write, copy_file_range, fsync, fallocate, lseek, and the
 * whole store's figures (the chunk store's, copy.h).  The bytes themselves
 * are data.c's.
 *
 * Size and times changed by writes are written to the index on release,
 * fsync, eviction and unmount; every other change is written through.
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
#include <unistd.h>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/base/sync.h"
#include "src/status.h"
#include "src/store_int.h"
#include "meta/meta_keys.h"

/* ---- attributes ------------------------------------------------------ */

int
objfs_store_getattr(struct objfs_store *s, uint64_t ino,
		struct objfs_attr *out)
{
	OBJFS_CALL(s, ino);
	struct objfs_inode *ip;
	int rc;

	if (objfs_is_status_ino(ino)) {
		objfs_status_node_attr(out);
		return 0;
	}
	rc = objfs_inode_get(s, ino, &ip);
	if (rc < 0)
		return rc;
	objfs_inode_lock(ip);
	*out = objfs_inode_attr_out(ip);
	objfs_inode_unlock(ip);
	objfs_inode_put(s, ip);
	return 0;
}

static int has_fsetid(int32_t pid);

/* The setuid and setgid bits a write, a truncate or a chown clears: setgid
 * only with group execute (without it, it marks mandatory locking). */
static uint32_t
kill_bits(uint32_t mode)
{
	uint32_t k = mode & S_ISUID;

	if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		k |= S_ISGID;
	return k;
}

static int
setattr_once(struct objfs_store *s, uint64_t ino,
		const struct objfs_setattr *sa, struct objfs_attr *out)
{
	struct objfs_inode *ip;
	struct objfs_attr a;
	int rc;

	rc = objfs_inode_get(s, ino, &ip);	/* EPERM: the status file */
	if (rc < 0)
		return rc;
	objfs_inode_lock(ip);
	a = ip->attr;
	if (objfs_sealed_is(ip) && (sa->valid & ~OBJFS_SET_CTIME)) {
		rc = -EPERM;	/* sealed: no attribute changes either */
		goto out;
	}
	if ((sa->valid & OBJFS_SET_SIZE) && ip->so &&
	    (rc = objfs_sealed_settle(s, ip)) < 0)
		goto out;	/* just unsealed, still read without us */
	if (sa->valid & OBJFS_SET_SIZE) {
		if (S_ISDIR(a.mode)) {
			rc = -EISDIR;
			goto out;
		}
		if (!S_ISREG(a.mode)) {
			rc = -EINVAL;
			goto out;
		}
		objfs_attr_touch_mc(&a);
	}
	if (sa->valid & OBJFS_SET_MODE)
		a.mode = (a.mode & S_IFMT) | (sa->mode & 07777);
	if (sa->valid & OBJFS_SET_UID)
		a.uid = sa->uid;
	if (sa->valid & OBJFS_SET_GID)
		a.gid = sa->gid;
	if (sa->valid & OBJFS_SET_ATIME_NOW)
		objfs_time_now(&a.atime_sec, &a.atime_nsec);
	else if (sa->valid & OBJFS_SET_ATIME) {
		a.atime_sec = sa->atime_sec;
		a.atime_nsec = sa->atime_nsec;
	}
	if (sa->valid & OBJFS_SET_MTIME_NOW)
		objfs_time_now(&a.mtime_sec, &a.mtime_nsec);
	else if (sa->valid & OBJFS_SET_MTIME) {
		a.mtime_sec = sa->mtime_sec;
		a.mtime_nsec = sa->mtime_nsec;
	}
	if (sa->valid & OBJFS_SET_CTIME) {
		a.ctime_sec = sa->ctime_sec;
		a.ctime_nsec = sa->ctime_nsec;
	} else {
		objfs_attr_touch_c(&a);
	}
	/* What the kernel leaves to objfs (FUSE_CAP_HANDLE_KILLPRIV), by the
	 * rules it applies itself: a chown of anything but a directory
	 * clears setuid, and setgid with group execute, whoever does it; a
	 * truncate does unless the caller holds CAP_FSETID.  (File
	 * capabilities the kernel removes itself, with a removexattr.) */
	if (!S_ISDIR(a.mode) && ((sa->valid & (OBJFS_SET_UID | OBJFS_SET_GID)) ||
	    ((sa->valid & OBJFS_SET_SIZE) && kill_bits(a.mode) &&
	     !has_fsetid(sa->pid))))
		a.mode &= ~kill_bits(a.mode);
	/* One commit for the size and the rest: all or nothing. */
	if (sa->valid & OBJFS_SET_SIZE) {
		rc = objfs_data_truncate(s, ip, sa->size, &a);
	} else {
		struct objfs_attr old = ip->attr;

		ip->attr = a;
		rc = objfs_inode_persist_attr(s, ip);
		if (rc < 0)
			ip->attr = old;
	}
	if (rc == 0)
		*out = objfs_inode_attr_out(ip);
out:
	objfs_inode_unlock(ip);
	objfs_inode_put(s, ip);
	return rc;
}

int
objfs_store_setattr(struct objfs_store *s, uint64_t ino,
		const struct objfs_setattr *sa, struct objfs_attr *out)
{
	OBJFS_CALL(s, ino);
	int rc;

	OBJFS_SHARED(s, rc, setattr_once(s, ino, sa, out));
	return rc;
}

/* ---- open files and their bytes -------------------------------------- */

/* 0 for a regular file; the errno a local filesystem gives otherwise
 * (@other: for special files, which have no bytes here). */
static int
bytes_allowed(uint32_t mode, int other)
{
	if (S_ISDIR(mode))
		return -EISDIR;
	return S_ISREG(mode) ? 0 : other;
}

/* A kernel open of its own (FS_IOC_GETFLAGS/SETFLAGS, fuse_file_open):
 * O_RDONLY and nothing else, where every open(2) of a 64-bit process
 * carries O_LARGEFILE.  It never reads, and never asks for passthrough. */
#define KERNEL_OWN_OPEN(flags)	((flags) == O_RDONLY)

static int
open_one(struct objfs_store *s, uint64_t ino, int flags, int bypass,
		int32_t tid, int32_t tgid, enum objfs_cache *cache,
		int32_t *bid, int pass)
{
	struct objfs_inode *ip;
	int rc, opened, reg, leased = 0;

	/* Shared mode, close-to-open: every version another node closed
	 * before this open began is applied first (one read of the log's
	 * next record, shared with concurrent opens).  Not again for the
	 * walk again after this call's ESTALE (@pass): its first open did,
	 * and its lookups pinned what they found (walk.c). */
	if (s->shared && !pass && (rc = s->tier_ops->view(s->tier)) < 0)
		return rc;
	rc = objfs_inode_get(s, ino, &ip);
	/* Shared mode: an inode another mount deleted after the kernel
	 * looked its name up (a rename over it): ESTALE makes the kernel
	 * look the name up again, and open the file it names now. */
	if (rc == -ENOENT && s->shared && !pass) {
		objfs_walk_estale(s, tid, flags);
		rc = -ESTALE;
	}
	if (rc < 0)
		return rc;
	/* Shared mode: one node writes a file at a time. */
	if (s->shared && ((flags & O_ACCMODE) != O_RDONLY ||
	    (flags & O_TRUNC)) && S_ISREG(ip->attr.mode)) {
		rc = objfs_share_lease(s, ino);
		if (rc < 0) {
			objfs_inode_put(s, ip);
			/* A lease this node lost while writers here still
			 * have the file open: no new writer until they close. */
			return rc == -ENOLCK ? -EIO : rc;
		}
		leased = 1;
	}
	/* An open that raced with the unlink of its last name (the kernel
	 * looked the name up before): if the unlink saw no open and took
	 * the records out of the index, there is nothing left to open, and
	 * writing would put records of a deleted inode back.  The unlink
	 * reads the count and marks the inode gone under its lock, so an
	 * unlink after this sees the open. */
	objfs_inode_lock(ip);
	rc = objfs_walk_open(s, ip, flags, tid, KERNEL_OWN_OPEN(flags), pass);
	if (rc == 0 && objfs_sealed_is(ip) && ((flags & O_ACCMODE) !=
			O_RDONLY || (flags & O_TRUNC)))
		rc = -EPERM;	/* sealed: nobody writes it */
	else if (rc == 0 && ip->so && ((flags & O_ACCMODE) != O_RDONLY ||
			(flags & O_TRUNC)))
		rc = objfs_sealed_settle(s, ip);	/* just unsealed */
	if (rc == 0 && ip->gone)	/* while settle waited */
		rc = -ENOENT;
	if (rc == 0)
		*cache = objfs_inode_open_locked(ip, flags, bypass);
	opened = rc == 0;
	reg = S_ISREG(ip->attr.mode);
	if (opened && bid && (objfs_sealed_is(ip) || ip->so) &&
	    (flags & O_ACCMODE) == O_RDONLY && !KERNEL_OWN_OPEN(flags)) {
		const char *why = NULL;

		objfs_sealed_open(s, ip, tgid, bid, &why);
		if (*bid)
			*cache = OBJFS_CACHE_KEEP;
		ip->pt_why = *bid ? NULL : why;	/* user.objfs.served */
	}
	objfs_inode_unlock(ip);
	if (rc == 0 && (flags & O_TRUNC) && reg) {
		objfs_inode_lock(ip);
		if (ip->attr.size) {
			struct objfs_attr a = ip->attr;

			objfs_attr_touch_mc(&a);
			rc = objfs_data_truncate(s, ip, 0, &a);
		}
		objfs_inode_unlock(ip);
	} else if (rc == 0 && reg && (flags & O_ACCMODE) != O_WRONLY &&
		   !(bid && *bid)) {
		/* Opening a spilled object starts bringing it back. */
		objfs_inode_lock(ip);
		const struct objfs_chunk *c0 =
			objfs_chunkmap_get(&ip->chunks, 0);
		int spilled = c0 &&
			objfs_chunk_state(c0) == OBJFS_CHUNK_SPILLED;
		objfs_inode_unlock(ip);
		if (spilled)
			objfs_spiller_restore_ahead(s->spiller, ino, 0);
	}
	if (rc < 0 && opened) {
		objfs_inode_lock(ip);
		objfs_inode_close_locked(ip, flags, bypass);
		if (bid && *bid)
			objfs_sealed_close(s, ip, tgid);
		objfs_inode_unlock(ip);
		if (bid)
			*bid = 0;
	}
	/* The lease of an open that failed, or that only truncated (read
	 * only, O_TRUNC): published and given back unless a writer here
	 * holds it. */
	if (leased && (rc < 0 || (flags & O_ACCMODE) == O_RDONLY)) {
		int w, r;

		objfs_inode_lock(ip);
		w = ip->nwriters;
		objfs_inode_unlock(ip);
		if (!w && (r = objfs_share_publish(s, ip, 1)) < 0 && rc == 0)
			rc = r;
	}
	objfs_inode_put(s, ip);
	return rc;
}

static int
open_file(struct objfs_store *s, uint64_t ino, int flags, int bypass,
		int32_t tid, int32_t tgid, enum objfs_cache *cache,
		int32_t *bid)
{
	int pass, rc;

	*cache = OBJFS_CACHE_BYPASS;
	if (objfs_is_status_ino(ino))
		return (flags & O_ACCMODE) == O_RDONLY ? 0 : -EACCES;
	/* Shared mode: the kernel's walk again after this thread's ESTALE
	 * opens what it found, and lets the applies go (walk.c). */
	pass = objfs_walk_take(s, tid);
	rc = open_one(s, ino, flags, bypass, tid, tgid, cache, bid, pass);
	if (pass)
		objfs_walk_done(s, tid);
	return rc;
}

int
objfs_store_open_file(struct objfs_store *s, uint64_t ino, int flags,
		int bypass, enum objfs_cache *cache)
{
	OBJFS_CALL(s, ino);
	return open_file(s, ino, flags, bypass, 0, 0, cache, NULL);
}

int
objfs_store_open_pt(struct objfs_store *s, uint64_t ino, int flags,
		int bypass, int32_t tid, int32_t tgid, enum objfs_cache *cache,
		int32_t *bid)
{
	OBJFS_CALL(s, ino);
	*bid = 0;
	return open_file(s, ino, flags, bypass, tid, tgid, cache, bid);
}

int
objfs_store_release(struct objfs_store *s, uint64_t ino, int flags,
		int bypass)
{
	OBJFS_CALL(s, ino);
	return objfs_store_release_pt(s, ino, flags, bypass, 0, 0);
}

int
objfs_store_release_pt(struct objfs_store *s, uint64_t ino, int flags,
		int bypass, int pt, int32_t tgid)
{
	OBJFS_CALL(s, ino);
	struct objfs_inode *ip;
	int rc = 0, last, writer, lease;

	if (objfs_is_status_ino(ino))
		return 0;
	objfs_store_lock(s);
	ip = objfs_inode_find_locked(s, ino);
	if (!ip) {
		objfs_store_unlock(s);
		return -EBADF;
	}
	ip->refs++;
	objfs_store_unlock(s);
	objfs_inode_lock(ip);
	objfs_inode_close_locked(ip, flags, bypass);
	if (pt)
		objfs_sealed_close(s, ip, tgid);
	last = ip->nopen == 0;
	/* Shared mode: the last writer here publishes the file and gives
	 * its lease back; a file unlinked meanwhile only gives it back (its
	 * records go when it is let go). */
	lease = s->shared && (flags & O_ACCMODE) != O_RDONLY && !ip->nwriters;
	writer = lease && ip->attr.nlink && !ip->gone;
	if (ip->fenced) {
		/* A lease this node lost: nothing to publish or give back
		 * (its close's FLUSH answered EIO); once its last writer
		 * here is gone, the file may be written again. */
		if ((flags & O_ACCMODE) != O_RDONLY)
			rc = -EIO;
		if (lease)
			objfs_share_unfence(s, ip);
		lease = writer = 0;
	} else if (writer && S_ISREG(ip->attr.mode)) {
		rc = objfs_data_flush(s, ip);
	} else if (ip->attr_dirty && ip->attr.nlink) {
		rc = objfs_inode_persist_attr(s, ip);
	}
	if (rc == -ENOLCK) {
		objfs_share_fence(s, ip);
		objfs_share_unfence(s, ip);
		rc = -EIO;
		lease = writer = 0;
	}
	if (last)
		objfs_data_ra_release(ip);	/* no reader left */
	if (last && s->shared)
		objfs_share_reload(s, ip);
	objfs_inode_unlock(ip);
	if (writer && rc == 0)
		rc = objfs_share_publish(s, ip, 1);
	else if (lease && !writer)
		rc = objfs_share_unlease(s, ino);
	/* Not published (the cluster did not answer, the pool was full):
	 * the lease stays while the bytes are only here, and the follower
	 * publishes them and gives it back once it can. */
	if (rc < 0 && (writer || lease)) {
		int fenced;

		objfs_inode_lock(ip);
		fenced = ip->fenced;
		objfs_inode_unlock(ip);
		if (!fenced)
			objfs_share_defer(s, ino, !writer);
	}
	objfs_inode_put(s, ip);
	return rc;
}

int
objfs_store_status_text(struct objfs_store *s, char *text, size_t size,
		size_t *len)
{
	struct objfs_status_figures f;
	int rc = objfs_store_get_figures(s, &f);

	if (rc == 0)
		rc = objfs_status_format(&f, text, size, len);
	if (rc < 0)
		return rc;
	if (*len + 1 < size)
		*len += objfs_sealed_status(s, text + *len, size - *len);
	/* The remote tier's state, the bytes waiting, its rates. */
	if (s->tier && *len + 1 < size)
		*len += s->tier_ops->status(s->tier, text + *len, size - *len);
	if (s->shared && *len + 1 < size)
		*len += objfs_status_shared(s, text + *len, size - *len);
	objfs_latency_format(s->lat, text, size, len);
	return 0;
}

/* The status file's lines a reader who is neither the mount's owner nor
 * root does not see: where its data, log and arena are, its pid, its
 * remote and endpoint (issue 48: every user read them). */
static size_t
redact_status(char *text, size_t n)
{
	static const char *const keys[] = { "pid: ", "data: ", "log: ",
		"arena: ", "remote: ", "remote_s3_endpoint: " };
	size_t in = 0, out = 0;

	while (in < n) {
		char *nl = memchr(text + in, '\n', n - in);
		size_t len = nl ? (size_t)(nl - (text + in)) + 1 : n - in;
		int drop = 0;

		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (len >= strlen(keys[k]) &&
			    memcmp(text + in, keys[k], strlen(keys[k])) == 0)
				drop = 1;
		if (!drop) {
			memmove(text + out, text + in, len);
			out += len;
		}
		in += len;
	}
	text[out] = '\0';
	return out;
}

static int
read_status(struct objfs_store *s, uint64_t off, void *buf, size_t len,
		size_t *n_out, int owner)
{
	char text[OBJFS_STATUS_MAX];
	size_t n;
	int rc = objfs_store_status_text(s, text, sizeof(text), &n);

	if (rc < 0)
		return rc;
	if (!owner)
		n = redact_status(text, n);
	if (off >= n) {
		*n_out = 0;
		return 0;
	}
	*n_out = n - off < len ? n - off : len;
	memcpy(buf, text + off, *n_out);
	return 0;
}

int
objfs_store_read_status(struct objfs_store *s, uint64_t off, size_t len,
		int owner, void (*reply)(void *arg, const struct objfs_iov *v),
		void *arg)
{
	struct objfs_iov v = { 0 };
	int rc;

	v.iov = &(struct iovec){ .iov_base = malloc(len ? len : 1) };
	if (!v.iov->iov_base)
		return -ENOMEM;
	rc = read_status(s, off, v.iov->iov_base, len, &v.iov->iov_len,
			owner);
	if (rc == 0) {
		v.n = 1;
		v.len = v.iov->iov_len;
		reply(arg, &v);
	}
	free(v.iov->iov_base);
	return rc;
}

int
objfs_store_read_reply(struct objfs_store *s, uint64_t ino, uint64_t off,
		size_t len, void (*reply)(void *arg, const struct objfs_iov *v),
		void *arg)
{
	OBJFS_CALL(s, ino);
	struct objfs_inode *ip;
	struct objfs_iov v = { 0 };
	int rc;

	if (objfs_is_status_ino(ino))
		return objfs_store_read_status(s, off, len, 1, reply, arg);
	rc = objfs_inode_get(s, ino, &ip);
	if (rc < 0)
		return rc;
	v.iov = malloc(objfs_data_iov_max(s, len) * sizeof(v.iov[0]));
	if (!v.iov) {
		objfs_inode_put(s, ip);
		return -ENOMEM;
	}
	objfs_inode_lock(ip);
	rc = bytes_allowed(ip->attr.mode, -EINVAL);
	if (objfs_sealed_is(ip))	/* served by the daemon: counted */
		atomic_fetch_add(&s->sealed_daemon_reads, 1);
	if (rc == 0)
		rc = objfs_data_read_iov(s, ip, off, len, &v);
	/* The pieces are the arena's and the read-ahead slots' own memory:
	 * only the inode lock keeps them from being evicted or reused. */
	if (rc == 0)
		reply(arg, &v);
	objfs_inode_unlock(ip);
	objfs_iov_release(&v);
	free(v.iov);
	objfs_inode_put(s, ip);
	return rc;
}

struct copy_to {
	unsigned char *dst;
	size_t n;
};

static void
copy_pieces(void *arg, const struct objfs_iov *v)
{
	struct copy_to *c = arg;

	for (size_t i = 0; i < v->n; i++) {
		memcpy(c->dst + c->n, v->iov[i].iov_base, v->iov[i].iov_len);
		c->n += v->iov[i].iov_len;
	}
}

int
objfs_store_read(struct objfs_store *s, uint64_t ino, uint64_t off, void *buf,
		size_t len, size_t *n_out)
{
	OBJFS_CALL(s, ino);
	struct copy_to c = { buf, 0 };
	int rc = objfs_store_read_reply(s, ino, off, len, copy_pieces, &c);

	if (rc == 0)
		*n_out = c.n;
	return rc;
}

/* Does process @pid hold CAP_FSETID?  FUSE does not say: its status
 * file does.  A process that is gone (or a pid of 0) holds nothing. */
static int
has_fsetid(int32_t pid)
{
	unsigned long long eff = 0;
	char path[64], line[256];
	int found = 0;
	FILE *f;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	fclose(f);
	return found && (eff >> 4 & 1);		/* CAP_FSETID is 4 */
}


/* Does @ip carry file capabilities?  Asked of the index once, then kept
 * in ip->caps (xattr_change keeps it right).  Holds ip->lock. */
static int
has_caps(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_meta_txn *t;
	size_t len;

	if (!ip->caps && objfs_meta_begin(s->meta, 0, &t) == 0) {
		ip->caps = objfs_meta_xattr_get(t, ip->ino, XATTR_CAPS, NULL,
				0, &len) == 0 ? 2 : 1;
		objfs_meta_abort(t);
	}
	return ip->caps == 2;
}

/*
 * After bytes were written: clear what a local filesystem clears
 * (file_remove_privs).  setuid, and setgid with group execute, go unless
 * the writer holds CAP_FSETID; security.capability goes on any write, by
 * root too.  Written through at once.  1 when something was cleared (the
 * kernel's cached attributes are stale then).  Holds ip->lock.
 */
static int
remove_privs(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_writer *w)
{
	uint32_t kill = kill_bits(ip->attr.mode);
	struct objfs_meta_txn *t;
	int changed = 0;

	if (kill && !has_fsetid(w->pid)) {
		ip->attr.mode &= ~kill;
		ip->attr_dirty = 1;
		changed = 1;
	}
	if (has_caps(s, ip) && objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL,
			&t) == 0) {
		objfs_attr_touch_c(&ip->attr);
		if (objfs_meta_xattr_del(t, ip->ino, XATTR_CAPS) == 0 &&
		    objfs_meta_inode_put(t, &ip->attr) == 0 &&
		    objfs_meta_commit(t) == 0) {
			ip->caps = 1;
			ip->attr_dirty = 0;
			changed = 1;
		} else if (t) {
			objfs_meta_abort(t);
		}
	}
	if (changed && ip->attr_dirty)
		(void)objfs_inode_persist_attr(s, ip);
	return changed;
}

int
objfs_store_write(struct objfs_store *s, uint64_t ino, uint64_t off,
		const void *buf, size_t len, const struct objfs_writer *w,
		int *changed, size_t *n_out)
{
	OBJFS_CALL(s, ino);
	const char *p = buf;
	struct objfs_inode *ip;
	size_t done = 0, n;
	int rc;

	*changed = 0;
	rc = objfs_inode_get(s, ino, &ip);	/* EPERM: the status file */
	if (rc < 0)
		return rc;
	for (;;) {
		n = 0;
		objfs_inode_lock(ip);
		rc = bytes_allowed(ip->attr.mode, -EINVAL);
		if (rc == 0 && objfs_sealed_is(ip))
			rc = -EPERM;
		if (rc == 0 && ip->fenced)
			rc = -EIO;	/* its lease is lost (publish.c) */
		if (rc == 0)
			rc = objfs_data_write(s, ip, off + done, p + done,
					len - done, &n);
		if (n) {
			objfs_attr_touch_mc(&ip->attr);
			ip->attr_dirty = 1;
			if (done == 0 && remove_privs(s, ip, w))
				*changed = 1;
		}
		objfs_inode_unlock(ip);
		done += n;
		if (rc != -ENOSPC || done == len)
			break;
		/* No free block: wait for the spiller, without the inode
		 * lock, so that it can evict this file's chunks too. */
		rc = objfs_spiller_wait_space(s->spiller);
		if (rc < 0)
			break;
	}
	objfs_inode_put(s, ip);
	if (done == 0 && rc < 0)
		return rc;
	*n_out = done;
	return 0;
}

/*
 * The chunk-aligned part of a copy that can be shared instead of copied
 * (local_dedup.c): whole chunks whose disk copy is current.  The source's
 * dirty chunks are written out first, under its lock alone; then, under
 * ns_lock, both inode locks (the lower number first) for the one commit
 * that shares them.  *@done: the bytes shared (0: copy them).
 */
static int
copy_share(struct objfs_store *s, uint64_t ino_in, uint64_t off_in,
		uint64_t ino_out, uint64_t off_out, size_t len,
		const struct objfs_writer *w, int *changed, uint64_t *done)
{
	struct objfs_inode *src, *dst, *first, *second;
	int rc;

	*done = 0;
	*changed = 0;
	if (((off_in | off_out) & (s->chunk_size - 1)) ||
	    objfs_is_status_ino(ino_in))
		return 0;
	if (objfs_inode_get(s, ino_in, &src) < 0)
		return 0;	/* the copy reports it */
	if (objfs_inode_get(s, ino_out, &dst) < 0) {
		objfs_inode_put(s, src);
		return 0;
	}
	objfs_inode_lock(src);
	if (S_ISREG(src->attr.mode) && src->attr.nlink && src->chunks.ndirty)
		(void)objfs_data_flush(s, src);	/* else copied */
	objfs_inode_unlock(src);
	first = src->ino <= dst->ino ? src : dst;
	second = first == src ? dst : src;
	pthread_mutex_lock(&s->ns_lock);
	objfs_inode_lock(first);
	if (second != first)
		objfs_inode_lock(second);
	rc = 0;
	if (S_ISREG(src->attr.mode) && S_ISREG(dst->attr.mode) &&
	    bytes_allowed(dst->attr.mode, -EINVAL) == 0)
		rc = s->copy->share(s, src, off_in, dst, off_out, len, done);
	if (*done && remove_privs(s, dst, w))
		*changed = 1;
	if (second != first)
		objfs_inode_unlock(second);
	objfs_inode_unlock(first);
	pthread_mutex_unlock(&s->ns_lock);
	objfs_inode_put(s, dst);
	objfs_inode_put(s, src);
	return rc;
}

int
objfs_store_copy_range(struct objfs_store *s, uint64_t ino_in,
		uint64_t off_in, uint64_t ino_out, uint64_t off_out, size_t len,
		const struct objfs_writer *w, int *changed, size_t *n_out)
{
	OBJFS_CALL(s, ino_in);
	size_t piece = s->chunk_size, done = 0, got = 0, put = 0;
	uint64_t shared;
	int rc = 0, k;
	char *buf;

	*changed = 0;
	*n_out = 0;
	if (objfs_is_status_ino(ino_out))
		return -EPERM;		/* before reading anything */
	if (objfs_store_get_flags(s, ino_out, (unsigned *)&k) == 0 && k)
		return -EPERM;		/* sealed */
	if (len < piece)
		piece = len ? len : 1;
	buf = malloc(piece);
	if (!buf)
		return -ENOMEM;
	/* Whole chunks are shared where they can be; the rest is copied one
	 * piece at a time through a buffer: the source's lock is never held
	 * with the destination's there, so copying a file onto itself (the
	 * kernel has refused overlapping ranges) cannot deadlock. */
	while (done < len) {
		size_t n = len - done < piece ? len - done : piece;
		uint64_t to_edge = s->chunk_size -
			((off_in + done) & (s->chunk_size - 1));

		rc = copy_share(s, ino_in, off_in + done, ino_out,
				off_out + done, len - done, w, &k, &shared);
		*changed |= k;
		if (rc < 0)
			break;
		done += shared;
		if (done == len)
			break;
		if (shared) {
			n = len - done < piece ? len - done : piece;
			to_edge = s->chunk_size;
		}
		/* Up to the source's next chunk edge, where sharing may
		 * start again (both ends must be on one). */
		if (n > to_edge)
			n = to_edge;
		rc = objfs_store_read(s, ino_in, off_in + done, buf, n, &got);
		if (rc < 0 || got == 0)
			break;
		rc = objfs_store_write(s, ino_out, off_out + done, buf, got, w,
				&k, &put);
		*changed |= k;
		if (rc < 0)
			break;
		done += put;
		if (put < got || got < n)
			break;	/* arena full, or the source's end */
	}
	free(buf);
	if (done == 0 && rc < 0)
		return rc;
	*n_out = done;
	return 0;
}

int
objfs_store_fsync(struct objfs_store *s, uint64_t ino, int datasync)
{
	OBJFS_CALL(s, ino);
	struct objfs_inode *ip;
	int rc;

	if (objfs_is_status_ino(ino)) {
		/* fsync of the status file writes out everything and makes
		 * it durable (objfsctl sync), with the same retries on a
		 * full disk as below. */
		for (int tries = 0; ; tries++) {
			rc = objfs_store_sync_all(s);
			if (rc != -ENOSPC || tries == 3 ||
			    !s->copy->reclaim(s))
				return rc;
		}
	}
	rc = objfs_inode_get(s, ino, &ip);
	if (rc < 0)
		return rc;
	for (int tries = 0; ; tries++) {
		objfs_inode_lock(ip);
		if (ip->fenced)
			rc = -EIO;	/* its lease is lost (publish.c) */
		else if (S_ISREG(ip->attr.mode) && ip->attr.nlink)
			rc = objfs_data_flush(s, ip);
		else if (ip->attr_dirty)
			rc = objfs_inode_persist_attr(s, ip);
		if (rc == -ENOLCK) {
			objfs_share_fence(s, ip);
			rc = -EIO;
		}
		objfs_inode_unlock(ip);
		/* Shared: its commit lost the race for the log's next
		 * record: the log applied, and again (as OBJFS_SHARED). */
		if (rc == -ERESTART && s->shared && tries < 64 &&
		    (rc = s->tier_ops->catch_up(s->tier)) == 0)
			continue;
		/* A full backing disk may hold space that deletes and
		 * rewrites freed, given back only once the index is durable:
		 * make it durable, take the space, and write again, as the
		 * spiller does.  ENOSPC when nothing was waiting. */
		if (rc != -ENOSPC || tries == 3 || !s->copy->reclaim(s))
			break;
	}
	if (rc == -ERESTART)
		rc = -EAGAIN;	/* never to a caller (errno 85) */
	/* The bytes are on disk already: what makes them and every
	 * namespace change so far durable is one flush of the journal. */
	if (rc == 0 && s->shared) {
		int w;

		objfs_inode_lock(ip);
		w = ip->nwriters > 0 && ip->attr.nlink && !ip->gone;
		objfs_inode_unlock(ip);
		/* A file this node writes is published; every other change
		 * went to the pool's log when its call returned. */
		if (w)
			rc = objfs_share_publish(s, ip, 0);
		/* ... and what waits in the outbox (deleg.c) ships, but at
		 * a close: another node's open recalls the directory. */
		if (rc == 0 && datasync != OBJFS_FSYNC_CLOSE)
			rc = objfs_store_sync_index(s);
	} else if (rc == 0) {
		rc = objfs_store_sync_index(s);
	}
	objfs_inode_put(s, ip);
	return rc;
}

int
objfs_store_fallocate(struct objfs_store *s, uint64_t ino, int mode,
		uint64_t off, uint64_t len)
{
	OBJFS_CALL(s, ino);
	struct objfs_inode *ip;
	int rc;

	rc = objfs_inode_get(s, ino, &ip);	/* EPERM: the status file */
	if (rc < 0)
		return rc;
	for (int tries = 0; ; tries++) {
		objfs_inode_lock(ip);
		rc = bytes_allowed(ip->attr.mode, -ENODEV);
		if (rc == 0 && objfs_sealed_is(ip))
			rc = -EPERM;
		if (rc == 0) {
			uint64_t before = ip->attr.size;

			rc = objfs_data_fallocate(s, ip, mode, off, len);
			if (rc == 0) {
				objfs_attr_touch_mc(&ip->attr);
				ip->attr_dirty = 1;
			}
			/* A size no block's tag records: into the journal, so
			 * that a killed daemon's successor has it too. */
			if (rc == 0 && ip->attr.size != before)
				(void)objfs_inode_persist_attr(s, ip);
		}
		objfs_inode_unlock(ip);
		/* Hole punching needs the partial chunks at its ends in the
		 * arena: when it is full, wait for the spiller as a write
		 * does (nothing has changed).  Reserving never uses it. */
		if (rc != -ENOSPC || tries == 100)
			break;
		/* Reserving takes backing-disk space: a full disk may hold
		 * space waiting to be given back (see fsync). */
		if (!(mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))) {
			if (tries >= 3 || !s->copy->reclaim(s))
				break;
			continue;
		}
		if (objfs_spiller_wait_space(s->spiller) < 0)
			break;
	}
	objfs_inode_put(s, ip);
	return rc;
}

int
objfs_store_lseek(struct objfs_store *s, uint64_t ino, uint64_t off,
		int whence, uint64_t *out)
{
	OBJFS_CALL(s, ino);
	struct objfs_inode *ip;
	int rc;

	/* The status file says its size is 0, like a /proc file: no data
	 * and no hole at any offset. */
	if (objfs_is_status_ino(ino))
		return whence == SEEK_DATA || whence == SEEK_HOLE ? -ENXIO :
			-EINVAL;
	rc = objfs_inode_get(s, ino, &ip);
	if (rc < 0)
		return rc;
	objfs_inode_lock(ip);
	rc = objfs_data_seek(s, ip, off, whence, out);
	objfs_inode_unlock(ip);
	objfs_inode_put(s, ip);
	return rc;
}

/* ---- whole-store figures ---------------------------------------------- */

int
objfs_store_statfs(struct objfs_store *s, struct objfs_statfs *st)
{
	OBJFS_CALL_ANY(s);
	struct objfs_arena_stats as;
	uint64_t total, nfree, avail;
	int rc;

	/* Capacity and use are the chunk store's (the backing filesystem's,
	 * for the local one): everything ends up there, so df's "used"
	 * (size - free) is the disk's.  What is left
	 * for writers leaves room for the bytes in the arena, which may
	 * need it.  (Free was computed as available before, which made df
	 * count the root reserve, and the arena, as used.) */
	rc = s->copy->space(s, &total, &nfree, &avail);
	if (rc < 0)
		return rc;
	objfs_arena_get_stats(s->arena, &as);
	avail = avail > as.used ? avail - as.used : 0;
	st->bsize = 4096;
	st->blocks = total / st->bsize;
	st->bfree = nfree / st->bsize;
	st->bavail = avail / st->bsize;
	st->files = MAX_INODES;
	st->ffree = MAX_INODES - atomic_load(&s->ninodes);
	st->namemax = OBJFS_NAME_MAX;
	return 0;
}
