/* SPDX-License-Identifier: MIT */
/*
 * sealed.c - sealed objects: the seal itself, and the per-object file a
 * sealed object is read from without a copy.
 *
 * The seal is the file's immutable flag (FS_IMMUTABLE_FL, what chattr +i
 * sets; the kernel forwards FS_IOC_SETFLAGS to the daemon): bit
 * OBJFS_ATTR_SEALED of the inode record, and the object's checksum at
 * that moment in the record "objfs.sealed" (an xattr name without a
 * namespace, which no user can name: the kernel hands the daemon only
 * names under user., trusted., security. and system.).  Sealing writes
 * the object out and makes it durable first; a sealed object refuses
 * every change with EPERM (open for writing, truncate, setattr, rename,
 * unlink, link, xattrs), as ext4 does for an immutable file.
 *
 * The per-object file (struct objfs_sealed) holds the sealed object's
 * bytes at their offsets: a file of a private tmpfs of 2 MiB pages,
 * mounted nowhere (make_mount), or a memfd of 4 KiB pages (-o
 * sealed_pages=small, or when that tmpfs cannot be made).  It is made
 * at the first open that passthrough can serve (objfs_sealed_open) or
 * by objfsctl pin.  The kernel serves read and mmap of such an open
 * from it, without the daemon (FUSE passthrough): every reader maps
 * the same pages.  It is a copy of durable bytes, never the only one:
 * the chunk records stay the truth, and a daemon that dies loses
 * nothing by losing it.  Its memory
 * counts against the arena: it holds arena blocks as large as its
 * pieces, their pages given back to the kernel (FALLOC_FL_PUNCH_HOLE),
 * so that arena plus per-object files never take more than the arena's
 * capacity.  The object's own clean chunks leave the arena as they are
 * copied (so a resident object changes place without needing twice its
 * size).  All of them together take at most sealed_max of the arena.
 *
 * In use: a per-object file is in use while the kernel holds a file of
 * it, that is while a passthrough open or a mapping made through one
 * exists (a mapping keeps the file after close()).  The daemon asks the
 * kernel itself: a write lease (F_SETLEASE) on the daemon's one
 * (read-only) open of the file is refused while any other open of it
 * exists (i_readcount: the backing files the kernel opens for each
 * passthrough open).  Unsealing,
 * evicting and dropping it all wait for that to say "free".
 *
 * Locking: ip->so and everything in it belong to the inode's lock.  The
 * store's list of per-object files (for the spiller's shedding and the
 * status file) and sealed_bytes / pinned_bytes belong to sealed_lock, a
 * leaf taken under an inode lock (store_int.h).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/base/log.h"
#include "src/bytes/data_int.h"

struct objfs_sealed {
	uint64_t ino;
	int fd;			/* the object's bytes: a read-only open of
				 * the per-object file (also the lease
				 * probe: see probe_idle) */
	uint64_t size;
	int32_t bid;		/* the kernel's backing id while npt > 0 */
	uint32_t npt;		/* passthrough opens (a mapping keeps its
				 * open until munmap) */
	struct { int32_t tgid; uint32_t n; } by[8];	/* whose they are */
	uint32_t nforeign;	/* ... beyond what by[] could hold */
	int unsealed;		/* unsealed while its opener still had it
				 * open: let go at the last close */
	uint32_t nres;		/* arena blocks held for its memory */
	uint64_t *res_off;
	uint32_t *res_cap;
	uint64_t res_bytes;
	_Atomic uint64_t last_use;	/* objfs_mono_ns() of its last use
					 * (read under sealed_lock) */
	struct objfs_sealed *next, *prev;	/* sealed_lock */
};

static const char seal_rec[] = OBJFS_SEAL_RECORD;

int
objfs_sealed_is(const struct objfs_inode *ip)
{
	return (ip->attr.pad & OBJFS_ATTR_SEALED) != 0;
}

/* 1 when nobody but the daemon holds the per-object file open or mapped:
 * the kernel grants a write lease on a read-only open only while that
 * open is the file's one open (i_readcount 1, i_writecount 0), and every
 * passthrough open is an open of it (backing_file_open). */
static int
probe_idle(const struct objfs_sealed *so)
{
	if (fcntl(so->fd, F_SETLEASE, F_WRLCK) < 0)
		return 0;
	fcntl(so->fd, F_SETLEASE, F_UNLCK);
	return 1;
}

static void
list_add(struct objfs_store *s, struct objfs_sealed *so)
{
	pthread_mutex_lock(&s->sealed_lock);
	so->prev = NULL;
	so->next = s->sealed_head;
	if (so->next)
		so->next->prev = so;
	s->sealed_head = so;
	s->sealed_bytes += so->res_bytes;
	s->sealed_files++;
	pthread_mutex_unlock(&s->sealed_lock);
}

/* Let the per-object file go (ip->lock held), whether or not the kernel
 * still holds it: its pages stay as long as a mapping does. */
void
objfs_sealed_free(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_sealed *so = ip->so;

	objfs_inode_assert_locked(ip);
	if (!so)
		return;
	ip->so = NULL;
	ip->pin_so = 0;		/* its pin went with it */
	pthread_mutex_lock(&s->sealed_lock);
	if (so->prev)
		so->prev->next = so->next;
	else
		s->sealed_head = so->next;
	if (so->next)
		so->next->prev = so->prev;
	s->sealed_bytes -= so->res_bytes;
	s->sealed_files--;
	pthread_mutex_unlock(&s->sealed_lock);
	if (so->bid > 0 && s->pt_close)
		s->pt_close(s->pt_arg, so->bid);
	for (uint32_t i = 0; i < so->nres; i++)
		objfs_arena_free(s->arena, so->res_off[i], so->res_cap[i]);
	close(so->fd);
	free(so->res_off);
	free(so->res_cap);
	free(so);
}

void
objfs_sealed_unload(struct objfs_store *s, struct objfs_inode *ip)
{
	objfs_sealed_free(s, ip);
	if (ip->pinned)
		objfs_sealed_pin(s, ip, 0);
}

/* Drop the per-object file unless it is in use: 0, or -EBUSY. */
int
objfs_sealed_drop(struct objfs_store *s, struct objfs_inode *ip)
{
	objfs_inode_assert_locked(ip);
	if (!ip->so)
		return 0;
	if (ip->so->npt || !probe_idle(ip->so))
		return -EBUSY;
	objfs_sealed_free(s, ip);
	return 0;
}

/* Hold an arena block of at least @len bytes for the per-object file,
 * its pages given back: the memfd's pages take their place. */
static int
reserve(struct objfs_store *s, struct objfs_sealed *so, uint32_t len)
{
	uint64_t off;
	uint32_t cap;
	int rc = objfs_arena_alloc(s->arena, len, &off, &cap);

	if (rc < 0)
		return rc;
	so->res_off[so->nres] = off;
	so->res_cap[so->nres] = cap;
	so->nres++;
	so->res_bytes += cap;
	if (fallocate(objfs_arena_fd(s->arena), FALLOC_FL_PUNCH_HOLE |
			FALLOC_FL_KEEP_SIZE, (off_t)off, cap) < 0)
		objfs_log(OBJFS_LOG_DEBUG, "sealed: punch of the arena: %s",
			strerror(errno));
	return 0;
}

struct out {
	int fd;
	uint64_t off;
};

/* Write the pieces of a read at o->off of o->fd (pwritev). */
static int
put(void *arg, struct iovec *iov, size_t n)
{
	struct out *o = arg;

	for (size_t i = 0; i < n; ) {
		int k = (int)(n - i < 1024 ? n - i : 1024);
		ssize_t w = pwritev(o->fd, iov + i, k, (off_t)o->off);

		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		o->off += (uint64_t)w;
		/* Short: go on from where it stopped. */
		while (i < n && (size_t)w >= iov[i].iov_len) {
			w -= (ssize_t)iov[i].iov_len;
			i++;
		}
		if (w > 0) {
			iov[i].iov_base = (char *)iov[i].iov_base + w;
			iov[i].iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Copy @len bytes at @off of the object to the same offset of the file
 * @fd (ip->lock held).  Written (pwritev), not copied into a mapping of
 * it: the daemon never maps a whole object (its address space), and the
 * file's pages are made as a write to tmpfs makes them. */
static int
copy_out(struct objfs_store *s, struct objfs_inode *ip, uint64_t off,
		uint32_t len, int fd)
{
	struct out o = { fd, off };

	return objfs_data_read_to(s, ip, off, len, put, &o);
}

/* The share of the arena per-object files may take, in bytes. */
static uint64_t
sealed_limit(struct objfs_store *s)
{
	struct objfs_arena_stats st;

	objfs_arena_get_stats(s->arena, &st);
	return st.capacity / 100 * s->sealed_max_pct;
}

/*
 * The private tmpfs per-object files are made in: a detached mount
 * (fsmount(2), attached nowhere, so no path reaches its files) with
 * huge=within_size, so a file's pages are 2 MiB pages, physically
 * contiguous whatever the pages freed a moment before look like (reads
 * of memfds filled from those ran at 0.87-0.92x /dev/shm; of these,
 * faster than it: doc/benchmarks.md).  Its size is the
 * arena's capacity: sealed_max keeps it well under.  -1 when it cannot
 * be made (no new mount API, no CAP_SYS_ADMIN): memfds then.
 */
static int
make_mount(uint64_t capacity)
{
	char size[32];
	int fs, mnt = -1, err;

	snprintf(size, sizeof(size), "%" PRIu64, capacity);
	fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs >= 0) {
		if (fsconfig(fs, FSCONFIG_SET_STRING, "huge", "within_size",
				0) == 0 &&
		    fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) == 0 &&
		    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0700", 0) == 0 &&
		    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
			mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID |
					MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
		err = errno;
		close(fs);
		errno = err;
	}
	if (mnt < 0)
		objfs_log(OBJFS_LOG_INFO, "sealed: per-object files are "
			"memfds (a private tmpfs: %s)", strerror(errno));
	return mnt;
}

/* A new, empty per-object file open for writing: of the private tmpfs,
 * else a memfd (*sealable 1). */
static int
new_file(struct objfs_store *s, int *sealable)
{
	struct objfs_arena_stats st;
	int mnt;

	/* Outside sealed_lock, which takes no other lock. */
	objfs_arena_get_stats(s->arena, &st);
	pthread_mutex_lock(&s->sealed_lock);
	if (s->sealed_mnt == -2)
		s->sealed_mnt = make_mount(st.capacity);
	mnt = s->sealed_mnt;
	pthread_mutex_unlock(&s->sealed_lock);
	*sealable = mnt < 0;
	if (mnt >= 0)
		return openat(mnt, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0400);
	return memfd_create("objfs-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

/*
 * Make the per-object file of sealed @ip (ip->lock held).  On failure
 * *why says why the object stays served by the daemon.
 */
static int
build(struct objfs_store *s, struct objfs_inode *ip, const char **why)
{
	uint64_t size = ip->attr.size, need = 0, n, reserved;
	struct objfs_sealed *so;
	char path[64];
	int rc = 0, wfd = -1, sealable = 0;

	objfs_inode_assert_locked(ip);
	n = (size + s->chunk_size - 1) >> s->chunk_shift;
	for (uint64_t i = 0; i < n; i++)
		need += objfs_arena_block_size(s->arena,
				data_extent_in_file(s, ip, i));
	pthread_mutex_lock(&s->sealed_lock);
	reserved = s->sealed_bytes + s->pinned_bytes;
	pthread_mutex_unlock(&s->sealed_lock);
	if (reserved + need > sealed_limit(s)) {
		*why = "sealed objects and pins would take more than "
			"sealed_max of the arena";
		return -ENOSPC;
	}
	so = calloc(1, sizeof(*so));
	if (!so || !(so->res_off = calloc(n + 1, sizeof(uint64_t))) ||
	    !(so->res_cap = calloc(n + 1, sizeof(uint32_t)))) {
		if (so)
			free(so->res_off);
		free(so);
		*why = "out of memory";
		return -ENOMEM;
	}
	so->ino = ip->ino;
	so->size = size;
	so->fd = -1;
	wfd = new_file(s, &sealable);
	if (wfd < 0 || ftruncate(wfd, (off_t)size) < 0) {
		rc = -errno;
		*why = "making the per-object file failed";
		goto fail;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint32_t len = data_extent_in_file(s, ip, i);
		struct objfs_chunk *c;

		rc = copy_out(s, ip, i << s->chunk_shift, len, wfd);
		if (rc < 0) {
			*why = "copying the object into its file failed";
			goto fail;
		}
		/* Its copy in the arena is not needed any more when the
		 * disk (or the pool) holds the same bytes. */
		c = objfs_chunkmap_get(&ip->chunks, i);
		if (c && c->cap && !(c->flags & OBJFS_CHUNK_DIRTY) &&
		    (c->flags & OBJFS_CHUNK_ONDISK))
			objfs_chunkmap_drop(&ip->chunks, i, c, s->arena);
		rc = reserve(s, so, len);
		if (rc < 0) {
			*why = "the arena is full";
			objfs_spiller_kick(s->spiller);
			goto fail;
		}
	}
	/* Nobody writes it from here on: a memfd is sealed; a file of the
	 * private tmpfs (which cannot be) has no name anyone can reach, and
	 * the kernel opens it only for the read-only opens objfs hands it. */
	if (sealable && fcntl(wfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
			F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		rc = -errno;
		*why = "sealing the memfd failed";
		goto fail;
	}
	/* Kept read-only, so that it serves as the lease probe too. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", wfd);
	so->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (so->fd < 0) {
		rc = -errno;
		*why = "reopening the per-object file failed";
		goto fail;
	}
	close(wfd);
	so->last_use = objfs_mono_ns();
	ip->so = so;
	list_add(s, so);
	atomic_fetch_add(&s->sealed_builds, 1);
	return 0;
fail:
	for (uint32_t i = 0; i < so->nres; i++)
		objfs_arena_free(s->arena, so->res_off[i], so->res_cap[i]);
	if (wfd >= 0)
		close(wfd);
	if (so->fd >= 0)
		close(so->fd);
	free(so->res_off);
	free(so->res_cap);
	free(so);
	return rc < 0 ? rc : -EIO;
}

/*
 * An open of sealed @ip for reading (counted already in nopen, ip->lock
 * held): served by passthrough when it can be.  *bid gets the backing id
 * (0: served by the daemon, *why says why).
 */
static void
count_opener(struct objfs_sealed *so, int32_t tgid, int add)
{
	int free_slot = -1;

	for (int i = 0; i < 8; i++) {
		if (so->by[i].n && so->by[i].tgid == tgid) {
			so->by[i].n += add ? 1 : -1;
			return;
		}
		if (!so->by[i].n && free_slot < 0)
			free_slot = i;
	}
	if (add && free_slot >= 0) {
		so->by[free_slot].tgid = tgid;
		so->by[free_slot].n = 1;
	} else if (add) {
		so->nforeign++;
	} else if (so->nforeign) {
		so->nforeign--;
	}
}

/* Passthrough opens of @so by processes other than @tgid. */
static uint32_t
foreign_opens(const struct objfs_sealed *so, int32_t tgid)
{
	uint32_t n = so->npt;

	for (int i = 0; i < 8; i++)
		if (so->by[i].n && so->by[i].tgid == tgid && tgid > 0)
			n -= so->by[i].n;
	return n;
}

void
objfs_sealed_open(struct objfs_store *s, struct objfs_inode *ip, int32_t tgid,
		int32_t *bid, const char **why)
{
	struct objfs_sealed *so = ip->so;
	uint32_t others;

	objfs_inode_assert_locked(ip);
	*bid = 0;
	/* Unsealed while open: the kernel still wants passthrough for
	 * every open as long as one is (the bytes have not changed: no
	 * write can open it meanwhile, objfs_sealed_settle). */
	if (!objfs_sealed_is(ip) && !(so && so->npt))
		return;
	if (!s->pt_open) {
		*why = s->pt_off_why;
		return;
	}
	/* Another open is filling the per-object file (its build lets the
	 * lock go while it waits for a read-ahead): this one waits for it,
	 * and is then served as it is.  Else this one would be served by
	 * the daemon while that one gets passthrough, and the kernel would
	 * refuse whichever answer came second (EIO). */
	while (ip->so_building)
		objfs_inode_wait(ip, &s->sealed_cv);
	so = ip->so;
	if (!objfs_sealed_is(ip) && !(so && so->npt))
		return;		/* unsealed meanwhile */
	/* The kernel refuses a passthrough open while it has the object
	 * open through its page cache, and the other way round: while any
	 * open here is served by the daemon, this one is too. */
	others = ip->nopen - 1 - (so ? so->npt : 0);
	if (!(so && so->npt) && others) {
		*why = "open already, served by the daemon";
		return;
	}
	if (!so) {
		int rc;

		ip->so_building = 1;
		rc = build(s, ip, why);
		ip->so_building = 0;
		pthread_cond_broadcast(&s->sealed_cv);
		if (rc < 0)
			return;
		so = ip->so;
	}
	if (!so->bid) {
		int id = s->pt_open(s->pt_arg, so->fd);

		if (id <= 0) {
			*why = "the kernel refused the backing file";
			return;
		}
		so->bid = id;
	}
	so->npt++;
	count_opener(so, tgid, 1);
	*bid = so->bid;
	atomic_fetch_add(&s->pt_opens, 1);
}

/* A passthrough open of @ip closed (ip->lock held). */
void
objfs_sealed_close(struct objfs_store *s, struct objfs_inode *ip,
		int32_t tgid)
{
	struct objfs_sealed *so = ip->so;

	objfs_inode_assert_locked(ip);
	if (!so || !so->npt)
		return;
	count_opener(so, tgid, 0);
	/* The kernel holds what it needs (its backing files) by itself
	 * once the opens that named the id are done. */
	if (--so->npt == 0 && so->bid > 0) {
		s->pt_close(s->pt_arg, so->bid);
		so->bid = 0;
	}
	so->last_use = objfs_mono_ns();
	if (!so->npt && so->unsealed)
		objfs_sealed_free(s, ip);
}

/*
 * Before @ip's bytes may change (an open for writing, a truncate): its
 * per-object file must be gone, or readers served from it would keep old
 * bytes.  A close (its RELEASE comes after close() returned) gets half a
 * second; then -ETXTBSY, as for writing a running program.  ip->lock
 * held (dropped while waiting).
 */
int
objfs_sealed_settle(struct objfs_store *s, struct objfs_inode *ip)
{
	for (int i = 0; ip->so && ip->so->npt && i < 50; i++) {
		struct timespec ts = { 0, 10 * 1000000L };

		objfs_inode_unlock(ip);
		nanosleep(&ts, NULL);
		objfs_inode_lock(ip);
	}
	if (!ip->so)
		return 0;
	return objfs_sealed_drop(s, ip) < 0 ? -ETXTBSY : 0;
}

/* ---- the seal ---------------------------------------------------------- */

static int
set_flags_once(struct objfs_store *s, uint64_t ino, unsigned flags,
		int32_t tgid)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *ip;
	struct objfs_attr a;
	char hex[33];
	int rc, seal = (flags & FS_IMMUTABLE_FL) != 0;

	/* A writer's RELEASE comes after its close() returned: a moment
	 * for it, so that "write; close; chattr +i" never sees EBUSY. */
	if (seal && objfs_inode_get(s, ino, &ip) == 0) {
		objfs_inode_lock(ip);
		for (int i = 0; ip->nwriters && i < 50; i++) {
			struct timespec ts = { 0, 10 * 1000000L };

			objfs_inode_unlock(ip);
			nanosleep(&ts, NULL);
			objfs_inode_lock(ip);
		}
		objfs_inode_unlock(ip);
		objfs_inode_put(s, ip);
	}
	pthread_mutex_lock(&s->ns_lock);	/* what rename and unlink read */
	rc = objfs_inode_get(s, ino, &ip);
	if (rc < 0)
		goto out_unlock;
	objfs_inode_lock(ip);
	if (ip->gone || !ip->attr.nlink) {
		rc = -ENOENT;
		goto out;
	}
	if (flags & ~(unsigned)FS_IMMUTABLE_FL) {
		rc = -EOPNOTSUPP;	/* objfs keeps no other flag */
		goto out;
	}
	if (seal == objfs_sealed_is(ip))
		goto out;
	if (!S_ISREG(ip->attr.mode)) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	if (seal && ip->nwriters) {
		rc = -EBUSY;	/* an open for writing could still write */
		goto out;
	}
	if (seal) {
		/* Durable first: the seal promises bytes that stay. */
		rc = objfs_data_flush(s, ip);
		if (rc == 0)
			rc = objfs_data_object_sum(s, ip, hex);
		if (rc < 0)
			goto out;
		if (ip->so)	/* sealed again before its last close */
			ip->so->unsealed = 0;
	} else if (ip->so) {
		/* EBUSY while another process has it open or mapped; the
		 * caller's own opens (chattr holds one to ask) go on
		 * reading the same bytes, and the file goes at their
		 * close.  Nothing writes it before (settle). */
		if (foreign_opens(ip->so, tgid) ||
		    (!ip->so->npt && !probe_idle(ip->so))) {
			rc = -EBUSY;
			goto out;
		}
		if (ip->so->npt)
			ip->so->unsealed = 1;
		else
			objfs_sealed_free(s, ip);
	}
	a = ip->attr;
	if (seal)
		a.pad |= OBJFS_ATTR_SEALED;
	else
		a.pad &= ~OBJFS_ATTR_SEALED;
	objfs_attr_touch_c(&a);
	rc = objfs_store_begin_change(s, &t);
	if (rc < 0)
		goto out;
	rc = seal ? objfs_meta_xattr_set(t, ino, seal_rec, hex, 32, 0) :
		objfs_meta_xattr_del(t, ino, seal_rec);
	if (rc == -ENODATA && !seal)
		rc = 0;
	if (rc == 0)
		rc = objfs_meta_inode_put(t, &a);
	rc = objfs_commit_or_abort(t, rc, NULL);
	if (rc == 0) {
		ip->attr = a;
		ip->attr_dirty = 0;
	}
out:
	objfs_inode_unlock(ip);
	objfs_inode_put(s, ip);
out_unlock:
	pthread_mutex_unlock(&s->ns_lock);
	/* The seal and the unseal are durable when the call returns: after
	 * a crash an object is sealed with the bytes it had, or not sealed,
	 * as the last call that returned said.  (Shared mode: the commit is
	 * in the pool's log already.) */
	if (rc == 0 && !s->shared)
		rc = objfs_store_sync_index(s);
	return rc;
}

int
objfs_store_set_flags(struct objfs_store *s, uint64_t ino, unsigned flags,
		int32_t tgid)
{
	int rc;

	if (objfs_is_status_ino(ino))
		return flags ? -EOPNOTSUPP : 0;
	/* Sealing writes the object out: on a full disk, space that deletes
	 * and rewrites freed may be waiting for a durable commit; take it
	 * and try again, as fsync does.  Then ENOSPC, nothing changed. */
	for (int tries = 0; ; tries++) {
		OBJFS_SHARED(s, rc, set_flags_once(s, ino, flags, tgid));
		if (rc != -ENOSPC || tries == 3 || !s->copy->reclaim(s))
			return rc;
	}
}

int
objfs_store_get_flags(struct objfs_store *s, uint64_t ino, unsigned *flags)
{
	struct objfs_inode *ip;
	int rc;

	*flags = 0;
	if (objfs_is_status_ino(ino))
		return 0;
	rc = objfs_inode_get(s, ino, &ip);
	if (rc < 0)
		return rc;
	objfs_inode_lock(ip);
	if (objfs_sealed_is(ip))
		*flags = FS_IMMUTABLE_FL;
	objfs_inode_unlock(ip);
	objfs_inode_put(s, ip);
	return 0;
}

/* user.objfs.sealed: the checksum recorded at the seal (ip->lock held). */
int
objfs_sealed_sum(struct objfs_store *s, struct objfs_inode *ip, char hex[33])
{
	struct objfs_meta_txn *t;
	size_t len = 0;
	int rc;

	if (!objfs_sealed_is(ip))
		return -ENODATA;
	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_xattr_get(t, ip->ino, seal_rec, hex, 32, &len);
	objfs_meta_abort(t);
	if (rc == 0 && len != 32)
		rc = -EIO;
	hex[32] = '\0';
	return rc;
}

/* user.objfs.served: how an open for reading is served now (ip->lock). */
const char *
objfs_sealed_served(struct objfs_store *s, const struct objfs_inode *ip)
{
	if (!objfs_sealed_is(ip))
		return "daemon: not sealed";
	if (!s->pt_open)
		return s->pt_off_why;
	if (ip->so && ip->so->npt)
		return "passthrough: open now";
	if (ip->so)
		return probe_idle(ip->so) ? "passthrough: resident" :
			"passthrough: mapped";
	if (ip->pt_why) {
		static _Thread_local char why[256];

		snprintf(why, sizeof(why), "daemon: %s", ip->pt_why);
		return why;
	}
	return "passthrough at the next open";
}

/* ---- pin, evict, shed ---------------------------------------------------- */

int
objfs_sealed_pin(struct objfs_store *s, struct objfs_inode *ip, int on)
{
	uint64_t cap = sealed_limit(s);
	int rc = 0;

	objfs_inode_assert_locked(ip);
	if (!on) {
		ip->pin_so = 0;
		if (ip->pinned) {
			pthread_mutex_lock(&s->sealed_lock);
			s->pinned_bytes -= ip->pinned;
			pthread_mutex_unlock(&s->sealed_lock);
			ip->pinned = 0;
		}
		return 0;
	}
	if (ip->pinned)
		return 0;
	pthread_mutex_lock(&s->sealed_lock);
	/* Pins and per-object files share sealed_max. */
	if (s->sealed_bytes + s->pinned_bytes + ip->attr.size > cap)
		rc = -ENOSPC;
	else
		s->pinned_bytes += ip->pinned = ip->attr.size ?
			ip->attr.size : 1;
	pthread_mutex_unlock(&s->sealed_lock);
	return rc;
}

/*
 * Free up to @want bytes of per-object files nobody uses and nobody
 * pinned, the least recently used first (no lock held): the spiller's
 * last resort before writing dirty chunks out.  The bytes freed.
 */
uint64_t
objfs_sealed_shed(struct objfs_store *s, uint64_t want)
{
	uint64_t ino[16], use[16], freed = 0;
	int n = 0;

	pthread_mutex_lock(&s->sealed_lock);
	for (struct objfs_sealed *so = s->sealed_head; so; so = so->next) {
		uint64_t u = atomic_load(&so->last_use);
		int k;

		/* the 16 used least recently, oldest first */
		if (n < 16)
			k = n++;
		else if (u >= use[15])
			continue;
		else
			k = 15;
		for (; k > 0 && use[k - 1] > u; k--) {
			ino[k] = ino[k - 1];
			use[k] = use[k - 1];
		}
		ino[k] = so->ino;
		use[k] = u;
	}
	pthread_mutex_unlock(&s->sealed_lock);
	for (int i = 0; i < n && freed < want; i++) {
		struct objfs_inode *ip;
		uint64_t b;

		if (objfs_store_iget_cached(s, ino[i], &ip) < 0)
			continue;
		objfs_inode_lock(ip);
		if (ip->so && !ip->pinned && !ip->pin_so) {
			b = ip->so->res_bytes;
			if (objfs_sealed_drop(s, ip) == 0) {
				freed += b;
				atomic_fetch_add(&s->sealed_sheds, 1);
			}
		}
		objfs_inode_unlock(ip);
		objfs_store_iput(s, ip);
	}
	return freed;
}

void
objfs_sealed_figures(struct objfs_store *s, uint64_t *files, uint64_t *bytes,
		uint64_t *pinned)
{
	pthread_mutex_lock(&s->sealed_lock);
	*files = s->sealed_files;
	*bytes = s->sealed_bytes;
	*pinned = s->pinned_bytes;
	pthread_mutex_unlock(&s->sealed_lock);
}

void
objfs_store_set_passthrough(struct objfs_store *s,
		int (*open)(void *arg, int fd), void (*close_id)(void *arg, int id),
		void *arg, const char *why_off)
{
	s->pt_open = open;
	s->pt_close = close_id;
	s->pt_arg = arg;
	s->pt_off_why = open ? NULL : why_off;
}

/* Write @ip out and drop every chunk of it from the arena (ip->lock). */
static int
evict(struct objfs_store *s, struct objfs_inode *ip)
{
	uint64_t n = (ip->attr.size + s->chunk_size - 1) >> s->chunk_shift;
	int rc = objfs_sealed_drop(s, ip);

	if (rc < 0)
		return rc;	/* the kernel maps its per-object file */
	objfs_sealed_pin(s, ip, 0);
	rc = objfs_data_flush(s, ip);
	for (uint64_t i = 0; rc == 0 && i < n; i++) {
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, i);

		if (c && c->cap && !(c->flags & OBJFS_CHUNK_DIRTY) &&
		    (c->flags & OBJFS_CHUNK_ONDISK))
			objfs_chunkmap_drop(&ip->chunks, i, c, s->arena);
	}
	return rc;
}

/* Pin @ip: resident from now on, in its per-object file when sealed and
 * served by passthrough, else in the arena (ip->lock held). */
static int
pin(struct objfs_store *s, struct objfs_inode *ip)
{
	uint64_t n = (ip->attr.size + s->chunk_size - 1) >> s->chunk_shift;
	const char *why = NULL;
	int rc;

	if (ip->pinned || ip->pin_so)
		return 0;
	/* Sealed and served by passthrough: its per-object file, counted
	 * once (in sealed_bytes), is what stays. */
	if (objfs_sealed_is(ip) && s->pt_open) {
		if (ip->so || build(s, ip, &why) == 0) {
			ip->pin_so = 1;
			return 0;
		}
		objfs_log(OBJFS_LOG_INFO, "inode %" PRIu64 ": pinned in the "
			"arena, not in a per-object file: %s", ip->ino, why);
	}
	rc = objfs_sealed_pin(s, ip, 1);
	if (rc < 0)
		return rc;	/* more than sealed_max pinned */
	objfs_data_restore_range(s, ip, 0, n);
	return 0;
}

int
objfs_store_request(struct objfs_store *s, uint64_t ino, const void *val,
		size_t len)
{
	struct objfs_inode *ip;
	char word[16];
	int rc;

	if (len == 0 || len >= sizeof(word))
		return -EINVAL;
	memcpy(word, val, len);
	word[len] = '\0';
	if (strcmp(word, "pin") && strcmp(word, "unpin") &&
	    strcmp(word, "evict"))
		return -EINVAL;
	rc = objfs_inode_get(s, ino, &ip);	/* EPERM: the status file */
	if (rc < 0)
		return rc;
	objfs_inode_lock(ip);
	if (!S_ISREG(ip->attr.mode))
		rc = -EINVAL;
	else if (ip->gone)
		rc = -ENOENT;
	else if (word[0] == 'p')
		rc = pin(s, ip);
	else if (word[0] == 'u')
		rc = objfs_sealed_pin(s, ip, 0);
	else
		rc = evict(s, ip);
	objfs_inode_unlock(ip);
	objfs_inode_put(s, ip);
	if (rc == 0 && word[0] == 'e')
		rc = objfs_store_sync_index(s);
	return rc;
}

size_t
objfs_sealed_status(struct objfs_store *s, char *buf, size_t size)
{
	uint64_t files, bytes, pinned;
	int n, mnt;

	objfs_sealed_figures(s, &files, &bytes, &pinned);
	pthread_mutex_lock(&s->sealed_lock);
	mnt = s->sealed_mnt;
	pthread_mutex_unlock(&s->sealed_lock);
	n = snprintf(buf, size,
		"passthrough: %s\n"
		"sealed_file_kind: %s\n"
		"sealed_files: %" PRIu64 "\n"
		"sealed_file_bytes: %" PRIu64 "\n"
		"pinned_bytes: %" PRIu64 "\n"
		"passthrough_opens_total: %" PRIu64 "\n"
		"sealed_files_made_total: %" PRIu64 "\n"
		"sealed_files_shed_total: %" PRIu64 "\n"
		"sealed_daemon_reads_total: %" PRIu64 "\n",
		s->pt_open ? "on" : s->pt_off_why,
		mnt >= 0 ? "tmpfs-huge" : mnt == -1 ? "memfd" : "none yet",
		files, bytes, pinned,
		atomic_load(&s->pt_opens), atomic_load(&s->sealed_builds),
		atomic_load(&s->sealed_sheds),
		atomic_load(&s->sealed_daemon_reads));
	if (n < 0)
		return 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}
