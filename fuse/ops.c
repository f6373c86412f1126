/* SPDX-License-Identifier: MIT */
/*
 * ops.c - the libfuse low-level operations table and its handlers
 * (session.c sets up the session that calls them).
 *
 * The adapter and nothing else: each handler decodes the request, makes
 * one store call and sends exactly one reply (forget sends none).  Errors
 * arrive as negative errnos and leave as positive ones.  Inode numbers are
 * the store's object ids; FUSE_ROOT_ID is the store's root (both are 1).
 *
 * Caching: all changes to the filesystem pass through the kernel, so entry
 * and attribute timeouts can be long and open files keep their page cache.
 * Permissions: with default_permissions the kernel checks modes and owners.
 * A mount by root without allow_other goes without it, since only
 * processes whose ids are all 0 can enter it (the kernel enforces that):
 * the kernel then still refuses to execute files without an x bit, and
 * asks ACCESS for access(2) and chdir, answered here by the same rules.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>
#include <fuse_lowlevel.h>

#include "src/base/deadline.h"
#include "src/base/log.h"
#include "src/status.h"
#include "src/store.h"
#include "fuse/ops.h"
#include "fuse/ops_int.h"

/* How long the kernel may keep names and attributes without asking: a
 * while, for a tree that changes only through this mount; a second on a
 * shared one (-o shared), whose files other nodes change.  There the
 * follower drops what another node's record changed as it applies it
 * (within TIER_FOLLOW_MS of the append, notify_kernel), the timeout only
 * bounds a notice that did not come, and an open that may have come
 * through an old name or found an old size answers ESTALE, so that the
 * kernel looks the path up again (open_file: close-to-open). */
#define OBJFS_SHARED_TIMEOUT	1.0
#define OBJFS_ATTR_TIMEOUT(req) \
	(objfs_store_is_shared(req_store(req)) ? OBJFS_SHARED_TIMEOUT : 10.0)
#define OBJFS_ENTRY_TIMEOUT(req)	OBJFS_ATTR_TIMEOUT(req)
#define OBJFS_IO_SIZE		(1u << 20)	/* st_blksize */

_Static_assert(OBJFS_ROOT_INO == FUSE_ROOT_ID, "root inode numbers differ");

static struct objfs_store *
req_store(fuse_req_t req)
{
	return ((struct objfs_fuse *)fuse_req_userdata(req))->store;
}

/* ---- one call, one timeout: the requests of one system call ------------ */

/* A system call can be several requests: the kernel's lookups of its
 * path, then its own (open(O_CREAT): LOOKUP, then CREATE).  A request of
 * a thread whose lookup ended just before it continues that call, and
 * keeps its deadline (src/base/deadline.h): the call waits for the
 * cluster one remote_timeout in all, not one per request. */
#define WALK_SLOTS	64
#define WALK_GAP_NS	(20ull * 1000000u)

static pthread_mutex_t walk_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	pid_t tid;
	uint64_t deadline, end;
} walk[WALK_SLOTS];

static uint64_t
walk_deadline(pid_t tid)
{
	uint64_t d = 0, now = objfs_mono_ns();
	unsigned k = (unsigned)tid % WALK_SLOTS;

	pthread_mutex_lock(&walk_mu);
	if (walk[k].tid == tid && now - walk[k].end < WALK_GAP_NS)
		d = walk[k].deadline;
	walk[k].tid = 0;	/* taken: the call's next request notes again */
	pthread_mutex_unlock(&walk_mu);
	return d;
}

/* A lookup of @tid found its name, or its absence (a lookup that failed
 * ended its system call): the deadline of its call @deadline. */
static void
walk_note(pid_t tid, uint64_t deadline)
{
	unsigned k = (unsigned)tid % WALK_SLOTS;

	pthread_mutex_lock(&walk_mu);
	walk[k].tid = tid;
	walk[k].deadline = deadline;
	walk[k].end = objfs_mono_ns();
	pthread_mutex_unlock(&walk_mu);
}

/* At the top of a handler of a request a system call on a path makes;
 * objfsctl's commands on the status file (@ino) run to their end. */
#define OBJFS_REQ_CALL(req, ino)					\
	OBJFS_DEADLINE_SCOPE_UNTIL((ino) == OBJFS_STATUS_INO ? 0 :	\
		walk_deadline(fuse_req_ctx(req)->pid),			\
		(ino) == OBJFS_STATUS_INO ? 0 :				\
		objfs_store_call_ns(req_store(req)))

static struct fuse_session *
req_session(fuse_req_t req)
{
	return ((struct objfs_fuse *)fuse_req_userdata(req))->se;
}

/* Does this open of a regular file bypass the page cache?  The answer is
 * kept in fh, which release gets back. */
static int
want_direct(fuse_req_t req, int flags)
{
	struct objfs_fuse *f = fuse_req_userdata(req);

	switch (f->o.direct_io) {
	case OBJFS_DIO_AUTO:
		if (f->mmap_ok)
			return 1;
		/* fall through */
	case OBJFS_DIO_WRITES:
		return (flags & O_ACCMODE) == O_WRONLY;
	case OBJFS_DIO_ALL:
		return 1;
	default:
		return 0;
	}
}

static void
attr_to_stat(const struct objfs_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev;
	st->st_size = (off_t)a->size;
	/* cp, Python and stdio size their buffers by st_blksize: a chunk
	 * per request instead of 128 KiB halves the requests' cost. */
	st->st_blksize = OBJFS_IO_SIZE;
	/* What objfs holds for a file (its chunks' arena blocks or disk
	 * copies), so that du finds where space goes; the size for the
	 * rest. */
	st->st_blocks = (blkcnt_t)(((S_ISREG(a->mode) ? a->held : a->size) +
			511) / 512);
	st->st_atim.tv_sec = a->atime_sec;
	st->st_atim.tv_nsec = a->atime_nsec;
	st->st_mtim.tv_sec = a->mtime_sec;
	st->st_mtim.tv_nsec = a->mtime_nsec;
	st->st_ctim.tv_sec = a->ctime_sec;
	st->st_ctim.tv_nsec = a->ctime_nsec;
}

static void
reply_entry(fuse_req_t req, int rc, const struct objfs_attr *a)
{
	struct fuse_entry_param e;

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = a->ino;
	e.attr_timeout = OBJFS_ATTR_TIMEOUT(req);
	e.entry_timeout = OBJFS_ENTRY_TIMEOUT(req);
	attr_to_stat(a, &e.attr);
	fuse_reply_entry(req, &e);
}

/* Does the request come from the mount's owner (the daemon's user) or
 * root?  The control actions (syncing everything through the status
 * file, gc, catch-up, pin, unpin, evict, seal and unseal) are theirs; on
 * an allow_other mount any user could take them (issue 48). */
int
objfs_req_controls(fuse_req_t req)
{
	uid_t u = fuse_req_ctx(req)->uid;

	return u == 0 || u == getuid();
}

static struct objfs_cred
req_cred(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct objfs_cred cr = { (uint32_t)ctx->uid, (uint32_t)ctx->gid };

	return cr;
}

/* The kernel's INIT flag (<linux/fuse.h>): libfuse 3.14 takes the want
 * but does not put it in its reply (seen in the INIT reply's flags). */
#define K_HANDLE_KILLPRIV	(1u << 19)

static void
objfs_ll_init(void *userdata, struct fuse_conn_info *conn)
{
	struct objfs_fuse *f = userdata;

	conn->max_write = OBJFS_MAX_WRITE;
	/* The kernel takes the smaller of this and the read-ahead that
	 * set_readahead() has put on the mount meanwhile. */
	conn->max_readahead = f->o.readahead_kb << 10;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* Opening a directory needs nothing here (readdir works from the
	 * inode and the offset), so two requests per directory walk go. */
	f->no_opendir = (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) != 0;
	/* objfs clears setuid and setgid itself, on write, truncate and
	 * chown: the kernel then asks no GETATTR before each chown (it
	 * refreshes the mode to compute the bits otherwise). */
	if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV) {
		conn->want |= FUSE_CAP_HANDLE_KILLPRIV;
		f->init_add_flags |= K_HANDLE_KILLPRIV;
	} else {
		conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	}
	/* Measured: write-through is as fast for large files, and writeback
	 * adds a getxattr round trip per write. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	objfs_log(OBJFS_LOG_DEBUG, "capable %#x want %#x", conn->capable,
		conn->want);
	objfs_log(OBJFS_LOG_INFO, "kernel FUSE %u.%u, max_write %u, "
		"max_readahead %u", conn->proto_major, conn->proto_minor,
		conn->max_write, conn->max_readahead);
	/* io_read() has seen the INIT request by now. */
	switch (f->o.direct_io) {
	case OBJFS_DIO_AUTO:
		objfs_log(OBJFS_LOG_INFO, f->mmap_ok ?
			"direct I/O on every open but reads of files up to "
			"1 MiB (the kernel keeps shared mappings coherent "
			"with it)" :
			"direct I/O on write-only opens (this kernel cannot "
			"map direct-I/O files shared)");
		break;
	case OBJFS_DIO_WRITES:
		objfs_log(OBJFS_LOG_INFO, "direct I/O on write-only opens");
		break;
	case OBJFS_DIO_ALL:
		objfs_log(OBJFS_LOG_INFO, "direct I/O on every open%s",
			f->mmap_ok ? "" : "; this kernel refuses shared "
			"mappings of such files (ENODEV)");
		break;
	case OBJFS_DIO_NONE:
		objfs_log(OBJFS_LOG_INFO, "no direct I/O: all through the "
			"page cache");
		break;
	}
	objfs_log(OBJFS_LOG_INFO, f->o.kernel_perms ?
		"permissions checked by the kernel (default_permissions)" :
		"only root can enter: no kernel permission pass "
		"(-o default_permissions to have one)");
}

static void
objfs_ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	OBJFS_REQ_CALL(req, parent);
	struct objfs_attr a;
	int rc = objfs_store_lookup_by(req_store(req), parent, name,
			(int32_t)fuse_req_ctx(req)->pid, &a);

	if (rc == 0 || rc == -ENOENT)
		walk_note(fuse_req_ctx(req)->pid, objfs_deadline());
	if (rc == -ENOENT) {
		/* A negative entry: the kernel caches the absence. */
		struct fuse_entry_param e;

		memset(&e, 0, sizeof(e));
		e.entry_timeout = OBJFS_ENTRY_TIMEOUT(req);
		fuse_reply_entry(req, &e);
		return;
	}
	reply_entry(req, rc, &a);
}

static void
objfs_ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	objfs_store_forget(req_store(req), ino, nlookup);
	fuse_reply_none(req);
}

static void
objfs_ll_forget_multi(fuse_req_t req, size_t count,
		struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		objfs_store_forget(req_store(req), forgets[i].ino,
				forgets[i].nlookup);
	fuse_reply_none(req);
}

static void
objfs_ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	OBJFS_REQ_CALL(req, ino);
	struct objfs_attr a;
	struct stat st;
	int rc = objfs_store_getattr(req_store(req), ino, &a);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	attr_to_stat(&a, &st);
	fuse_reply_attr(req, &st, OBJFS_ATTR_TIMEOUT(req));
}

/*
 * access(2) and chdir, asked only on a mount without default_permissions,
 * which only processes with all ids 0 can enter.  The kernel's rules for
 * root: it may read and write anything, and execute a directory or a file
 * with any x bit.  Anyone else cannot be here; refuse, to be safe.
 */
static void
objfs_ll_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	OBJFS_REQ_CALL(req, ino);
	struct objfs_attr a;
	int rc = objfs_store_getattr(req_store(req), ino, &a);

	if (rc == 0 && fuse_req_ctx(req)->uid != 0)
		rc = -EACCES;
	else if (rc == 0 && (mask & X_OK) && !S_ISDIR(a.mode) &&
		 !(a.mode & 0111))
		rc = -EACCES;
	fuse_reply_err(req, -rc);
}

static void
objfs_ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		int to_set, struct fuse_file_info *fi)
{
	OBJFS_REQ_CALL(req, ino);
	struct objfs_setattr sa;
	struct objfs_attr a;
	struct stat st;
	int rc;

	memset(&sa, 0, sizeof(sa));
	sa.pid = (int32_t)fuse_req_ctx(req)->pid;
	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.valid |= OBJFS_SET_MODE;
		sa.mode = attr->st_mode;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.valid |= OBJFS_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.valid |= OBJFS_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.valid |= OBJFS_SET_SIZE;
		sa.size = (uint64_t)attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa.valid |= OBJFS_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.valid |= OBJFS_SET_ATIME;
		sa.atime_sec = attr->st_atim.tv_sec;
		sa.atime_nsec = (uint32_t)attr->st_atim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa.valid |= OBJFS_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.valid |= OBJFS_SET_MTIME;
		sa.mtime_sec = attr->st_mtim.tv_sec;
		sa.mtime_nsec = (uint32_t)attr->st_mtim.tv_nsec;
	}
#ifdef FUSE_SET_ATTR_CTIME
	if (to_set & FUSE_SET_ATTR_CTIME) {
		sa.valid |= OBJFS_SET_CTIME;
		sa.ctime_sec = attr->st_ctim.tv_sec;
		sa.ctime_nsec = (uint32_t)attr->st_ctim.tv_nsec;
	}
#endif
	rc = objfs_store_setattr(req_store(req), ino, &sa, &a);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	attr_to_stat(&a, &st);
	fuse_reply_attr(req, &st, OBJFS_ATTR_TIMEOUT(req));
}

static void
objfs_ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	OBJFS_REQ_CALL(req, ino);
	char buf[4097];
	size_t len;
	int rc = objfs_store_readlink(req_store(req), ino, buf, sizeof(buf) - 1,
			&len);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	buf[len < sizeof(buf) - 1 ? len : sizeof(buf) - 1] = '\0';
	fuse_reply_readlink(req, buf);
}

static void
objfs_ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode, dev_t rdev)
{
	OBJFS_REQ_CALL(req, parent);
	struct objfs_cred cr = req_cred(req);
	struct objfs_attr a;
	int rc = objfs_store_mknod(req_store(req), parent, name, mode, rdev,
			&cr, &a);

	reply_entry(req, rc, &a);
}

static void
objfs_ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode)
{
	OBJFS_REQ_CALL(req, parent);
	struct objfs_cred cr = req_cred(req);
	struct objfs_attr a;
	int rc = objfs_store_mkdir(req_store(req), parent, name, mode, &cr, &a);

	reply_entry(req, rc, &a);
}

static void
objfs_ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		const char *name)
{
	OBJFS_REQ_CALL(req, parent);
	struct objfs_cred cr = req_cred(req);
	struct objfs_attr a;
	int rc = objfs_store_symlink(req_store(req), parent, name, link, &cr,
			&a);

	reply_entry(req, rc, &a);
}

static void
objfs_ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		const char *newname)
{
	OBJFS_REQ_CALL(req, ino);
	struct objfs_attr a;
	int rc = objfs_store_link(req_store(req), ino, newparent, newname, &a);

	reply_entry(req, rc, &a);
}

static void
objfs_ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	OBJFS_REQ_CALL(req, parent);
	fuse_reply_err(req, -objfs_store_unlink(req_store(req), parent, name));
}

static void
objfs_ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	OBJFS_REQ_CALL(req, parent);
	fuse_reply_err(req, -objfs_store_rmdir(req_store(req), parent, name));
}

static void
objfs_ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	OBJFS_REQ_CALL(req, parent);
	struct objfs_cred cr = req_cred(req);

	fuse_reply_err(req, -objfs_store_rename(req_store(req), parent, name,
			newparent, newname, flags, &cr));
}

/* Files at most this big when opened for reading go through the page
 * cache under direct_io=auto: a small file is read in one request by the
 * kernel's read-ahead instead of one per read(2), and read again from
 * memory.  Bigger ones, and every write-only open, stay direct, so that
 * a large or spilled file never fills the page cache. */
#define OBJFS_CACHED_MAX	(1u << 20)

static int
want_direct_open(fuse_req_t req, fuse_ino_t ino, int flags)
{
	struct objfs_fuse *f = fuse_req_userdata(req);
	struct objfs_attr a;

	if (f->o.direct_io != OBJFS_DIO_AUTO || !f->mmap_ok ||
	    (flags & O_ACCMODE) == O_WRONLY)
		return want_direct(req, flags);
	if (objfs_store_getattr(req_store(req), ino, &a) == 0 &&
	    S_ISREG(a.mode) && a.size <= OBJFS_CACHED_MAX)
		return 0;
	return 1;
}

/* Does a close of this open publish the file (shared mode, a writer)? */
static int
publishes(fuse_req_t req, int flags)
{
	return objfs_store_is_shared(req_store(req)) &&
		(flags & O_ACCMODE) != O_RDONLY;
}

/* An open's handle: whether it bypasses the page cache, and whether its
 * close publishes (FLUSH carries no open flags, only the handle). */
#define FH_BYPASS	1u
#define FH_PUBLISH	2u
#define FH_PASSTHROUGH	4u	/* the kernel serves it (sealed.c) */
static uint64_t
make_fh(fuse_req_t req, int flags, int bypass)
{
	return (bypass ? FH_BYPASS : 0) |
		(publishes(req, flags) ? FH_PUBLISH : 0);
}

static void
objfs_ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	OBJFS_REQ_CALL(req, ino);
	enum objfs_cache cache;
	int bypass = want_direct_open(req, ino, fi->flags);
	int32_t bid = 0, tgid = objfs_req_tgid(req);
	int rc = objfs_store_open_pt(req_store(req), ino, fi->flags, bypass,
			(int32_t)fuse_req_ctx(req)->pid, tgid, &cache, &bid);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (bid > 0) {
		objfs_reply_open_pt(req, ino, fi, make_fh(req, fi->flags,
				bypass) | FH_PASSTHROUGH, bypass, bid, tgid);
		return;
	}
	/* All changes pass through the kernel, so its cached pages stay
	 * valid unless a direct writer went around them; the status file
	 * changes on its own and is always read directly. */
	fi->fh = make_fh(req, fi->flags, bypass);
	fi->direct_io = cache == OBJFS_CACHE_BYPASS;
	fi->keep_cache = cache == OBJFS_CACHE_KEEP;
	fi->noflush = !publishes(req, fi->flags);
	fuse_reply_open(req, fi);
}

static void
objfs_ll_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		mode_t mode, struct fuse_file_info *fi)
{
	OBJFS_REQ_CALL(req, parent);
	struct objfs_cred cr = req_cred(req);
	struct fuse_entry_param e;
	struct objfs_attr a;
	int bypass = want_direct(req, fi->flags);
	int rc = objfs_store_create(req_store(req), parent, name, mode,
			fi->flags, bypass, &cr, &a);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = a.ino;
	e.attr_timeout = OBJFS_ATTR_TIMEOUT(req);
	e.entry_timeout = OBJFS_ENTRY_TIMEOUT(req);
	attr_to_stat(&a, &e.attr);
	fi->fh = make_fh(req, fi->flags, bypass);
	fi->direct_io = bypass;
	fi->keep_cache = !bypass;
	fi->noflush = !publishes(req, fi->flags);
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		/* The caller was interrupted: undo its open and lookup. */
		objfs_store_release(req_store(req), a.ino, fi->flags, bypass);
		objfs_store_forget(req_store(req), a.ino, 1);
	}
}

static void
reply_pieces(void *arg, const struct objfs_iov *v)
{
	fuse_reply_iov(arg, v->iov, (int)v->n);
}

static void
objfs_ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	/* Sent straight from the arena: one copy, the kernel's. */
	int rc = ino == OBJFS_STATUS_INO ?
		objfs_store_read_status(req_store(req), (uint64_t)off, size,
			objfs_req_controls(req), reply_pieces, req) :
		objfs_store_read_reply(req_store(req), ino, (uint64_t)off,
			size, reply_pieces, req);

	if (rc < 0)
		fuse_reply_err(req, -rc);
}

static void
objfs_ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		off_t off, struct fuse_file_info *fi)
{
	struct objfs_writer w = { (int32_t)fuse_req_ctx(req)->pid };
	size_t n = 0;
	int rc, changed;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = objfs_store_write(req_store(req), ino, (uint64_t)off, buf, size,
			&w, &changed, &n);
	/* A direct write cleared setuid: the kernel's copy of the mode is
	 * stale.  Dropping cached attributes takes no lock a writer holds. */
	if (changed)
		fuse_lowlevel_notify_inval_inode(req_session(req), ino, -1, 0);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, n);
}

/* cp inside the mount: one request per call instead of a read and a
 * write per 128 KiB through the kernel's fallback. */
static void
objfs_ll_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
		struct fuse_file_info *fi_in, fuse_ino_t ino_out,
		off_t off_out, struct fuse_file_info *fi_out, size_t len,
		int flags)
{
	struct objfs_writer w = { (int32_t)fuse_req_ctx(req)->pid };
	size_t n = 0;
	int rc, changed;

	if (flags || off_in < 0 || off_out < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = objfs_store_copy_range(req_store(req), ino_in, (uint64_t)off_in,
			ino_out, (uint64_t)off_out, len, &w, &changed, &n);
	if (changed)
		fuse_lowlevel_notify_inval_inode(req_session(req), ino_out, -1,
				0);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, n);
}

static void
objfs_ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* Bytes are in the arena already; close() has nothing to wait for
	 * (opens say so: noflush), unless the mount is shared: then the
	 * close of a writer publishes the file (close-to-open). */
	if (fi->fh & FH_PUBLISH) {
		fuse_reply_err(req, -objfs_store_fsync(req_store(req), ino,
				OBJFS_FSYNC_CLOSE));
		return;
	}
	fuse_reply_err(req, 0);
}

static void
objfs_ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, -objfs_store_release_pt(req_store(req), ino,
			fi->flags, (int)(fi->fh & FH_BYPASS),
			(int)(fi->fh & FH_PASSTHROUGH),
			(int32_t)(fi->fh >> 32)));
}

static void
objfs_ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		struct fuse_file_info *fi)
{
	/* fsync of the status file writes everything out: the owner's. */
	if (ino == OBJFS_STATUS_INO && !objfs_req_controls(req)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	fuse_reply_err(req, -objfs_store_fsync(req_store(req), ino, datasync));
}

static void
objfs_ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	OBJFS_REQ_CALL(req, ino);
	struct objfs_fuse *f = fuse_req_userdata(req);
	struct objfs_attr a;
	int rc;

	if (f->no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	rc = objfs_store_getattr(req_store(req), ino, &a);

	if (rc == 0 && !S_ISDIR(a.mode))
		rc = -ENOTDIR;
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->cache_readdir = 0;
	fuse_reply_open(req, fi);
}

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size;
	size_t len;
	int plus;
};

static int
dirbuf_add(void *arg, const char *name, const struct objfs_attr *a,
		uint64_t next_off)
{
	struct dirbuf *d = arg;
	size_t n;

	if (d->plus) {
		struct fuse_entry_param e;
		int dots = strcmp(name, ".") == 0 || strcmp(name, "..") == 0;

		memset(&e, 0, sizeof(e));
		attr_to_stat(a, &e.attr);
		if (!dots) {
			e.ino = a->ino;
			e.attr_timeout = OBJFS_ATTR_TIMEOUT(d->req);
			e.entry_timeout = OBJFS_ENTRY_TIMEOUT(d->req);
		}
		n = fuse_add_direntry_plus(d->req, d->buf + d->len,
				d->size - d->len, name, &e, (off_t)next_off);
	} else {
		struct stat st;

		memset(&st, 0, sizeof(st));
		st.st_ino = a->ino;
		st.st_mode = a->mode;
		n = fuse_add_direntry(d->req, d->buf + d->len, d->size - d->len,
				name, &st, (off_t)next_off);
	}
	if (n > d->size - d->len)
		return 1;
	d->len += n;
	return 0;
}

static void
do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	struct dirbuf d = { req, malloc(size ? size : 1), size, 0, plus };
	int rc;

	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = objfs_store_readdir(req_store(req), ino, (uint64_t)off, plus,
			dirbuf_add, &d);
	if (rc < 0 && d.len == 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, d.buf, d.len);
	free(d.buf);
}

static void
objfs_ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, 0);
}

static void
objfs_ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, 1);
}

static void
objfs_ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void
objfs_ll_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		struct fuse_file_info *fi)
{
	/* Namespace changes are committed as they happen; make them durable. */
	fuse_reply_err(req, -objfs_store_fsync(req_store(req), ino, datasync));
}

static void
objfs_ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct objfs_statfs s;
	struct statvfs sv;
	int rc = objfs_store_statfs(req_store(req), &s);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = s.bsize;
	sv.f_frsize = s.bsize;
	sv.f_blocks = s.blocks;
	sv.f_bfree = s.bfree;
	sv.f_bavail = s.bavail;
	sv.f_files = s.files;
	sv.f_ffree = s.ffree;
	sv.f_favail = s.ffree;
	sv.f_namemax = s.namemax;
	fuse_reply_statfs(req, &sv);
}

static void
objfs_ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		const char *value, size_t size, int flags)
{
	OBJFS_REQ_CALL(req, ino);
	/* The requests (gc and catch-up on the status file; pin, unpin and
	 * evict on any file) are the owner's. */
	if ((ino == OBJFS_STATUS_INO ||
	     strcmp(name, OBJFS_XATTR_REQUEST) == 0) &&
	    !objfs_req_controls(req)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	fuse_reply_err(req, -objfs_store_setxattr(req_store(req), ino, name,
			value, size, flags));
}

static void
objfs_ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		size_t size)
{
	OBJFS_REQ_CALL(req, ino);
	char *buf = NULL;
	size_t len;
	int rc;

	if (size) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	rc = objfs_store_getxattr(req_store(req), ino, name, buf, size, &len);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

static void
objfs_ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	OBJFS_REQ_CALL(req, ino);
	char *buf = NULL;
	size_t len;
	int rc;

	if (size) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	rc = objfs_store_listxattr(req_store(req), ino, buf, size, &len);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

static void
objfs_ll_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	OBJFS_REQ_CALL(req, ino);
	fuse_reply_err(req, -objfs_store_removexattr(req_store(req), ino, name));
}

static void
objfs_ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		off_t length, struct fuse_file_info *fi)
{
	if (offset < 0 || length <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_err(req, -objfs_store_fallocate(req_store(req), ino, mode,
			(uint64_t)offset, (uint64_t)length));
}

static void
objfs_ll_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		struct fuse_file_info *fi)
{
	uint64_t out;
	int rc;

	if (off < 0) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	rc = objfs_store_lseek(req_store(req), ino, (uint64_t)off, whence, &out);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_lseek(req, (off_t)out);
}

const struct fuse_lowlevel_ops objfs_ll_ops = {
	.init = objfs_ll_init,
	.ioctl = objfs_ll_ioctl,
	.lookup = objfs_ll_lookup,
	.forget = objfs_ll_forget,
	.forget_multi = objfs_ll_forget_multi,
	.getattr = objfs_ll_getattr,
	.setattr = objfs_ll_setattr,
	.access = objfs_ll_access,
	.readlink = objfs_ll_readlink,
	.mknod = objfs_ll_mknod,
	.mkdir = objfs_ll_mkdir,
	.symlink = objfs_ll_symlink,
	.link = objfs_ll_link,
	.unlink = objfs_ll_unlink,
	.rmdir = objfs_ll_rmdir,
	.rename = objfs_ll_rename,
	.open = objfs_ll_open,
	.create = objfs_ll_create,
	.read = objfs_ll_read,
	.write = objfs_ll_write,
	.flush = objfs_ll_flush,
	.copy_file_range = objfs_ll_copy_file_range,
	.release = objfs_ll_release,
	.fsync = objfs_ll_fsync,
	.opendir = objfs_ll_opendir,
	.readdir = objfs_ll_readdir,
	.readdirplus = objfs_ll_readdirplus,
	.releasedir = objfs_ll_releasedir,
	.fsyncdir = objfs_ll_fsyncdir,
	.statfs = objfs_ll_statfs,
	.setxattr = objfs_ll_setxattr,
	.getxattr = objfs_ll_getxattr,
	.listxattr = objfs_ll_listxattr,
	.removexattr = objfs_ll_removexattr,
	.fallocate = objfs_ll_fallocate,
	.lseek = objfs_ll_lseek,
};

