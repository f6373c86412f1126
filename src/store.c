/* SPDX-License-Identifier: MIT */
/*
 * store.c - the object store facade: data directory, inode table and
 * namespace operations.  File bytes are data.c's.
 *
 * Data directory layout (all 0700/0600, opened relative to its fd):
 *	lock		flock()ed by the daemon serving it; holds its pid
 *	index/		the LMDB environment (meta/)
 *	backing/	one file per object that has bytes on disk (spill.c)
 *
 * In-memory inodes: an inode is in the table while the kernel holds a
 * lookup on it, while it is open, while a request uses it (refs), or while
 * it has bytes in the arena.  Its attributes are written through to the
 * index by every namespace, setattr and xattr operation (a directory's
 * with every create and remove in it); size and times changed by writes
 * are written on release, fsync, eviction and unmount.
 *
 * An unlinked inode that is not open leaves the index in the transaction
 * that removes its last name (ip->gone).  Any other is put on the index's
 * orphan list in that transaction; it is destroyed when its last lookup
 * and open go, or, after a crash, at the next mount.  An object that may
 * have a backing file leaves a tombstone in the index (the "deleted" DB)
 * in the same commit; the file is removed once that commit is durable,
 * then the tombstone.  A mount removes only backing files that have a
 * tombstone: one that the index knows nothing of is left alone, and an
 * index that is missing, empty or not objfs's while backing files exist
 * refuses to mount.
 *
 * The maintenance thread checkpoints the index once a second (which
 * bounds what a machine crash can take of namespace changes) and gives
 * back the disk space that durable commits freed (data.c).
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

#include "base/log.h"
#include "status.h"
#include "store_int.h"
#include "base/sync.h"
#include "../meta/meta_keys.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE	(1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE		(1 << 1)
#endif

#define FIRST_COOKIE		3	/* 1 and 2 are "." and ".." */
#define MAX_INODES		(1ull << 40)

void
objfs_time_now(int64_t *sec, uint32_t *nsec)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	*sec = ts.tv_sec;
	*nsec = (uint32_t)ts.tv_nsec;
}

static void
touch_mc(struct objfs_attr *a)
{
	objfs_time_now(&a->mtime_sec, &a->mtime_nsec);
	a->ctime_sec = a->mtime_sec;
	a->ctime_nsec = a->mtime_nsec;
}

static void
touch_c(struct objfs_attr *a)
{
	objfs_time_now(&a->ctime_sec, &a->ctime_nsec);
}

/* ---- index writes ------------------------------------------------------ */

/*
 * Begin a namespace or attribute change.  -ENOSPC means the index's disk
 * is full: the maintenance thread is woken to checkpoint and to give back
 * what deletes freed, so that space returns as soon as it can.
 */
static int
begin_change(struct objfs_store *s, struct objfs_meta_txn **t)
{
	int rc = objfs_meta_begin(s->meta, OBJFS_META_WRITE, t);

	if (rc == -ENOSPC && s->maint_started) {
		pthread_mutex_lock(&s->maint_lock);
		pthread_cond_signal(&s->maint_cv);
		pthread_mutex_unlock(&s->maint_lock);
	}
	return rc;
}

/* ---- the status file (status.c serves its text) ---------------------- */

static int
is_status(uint64_t ino)
{
	return ino == OBJFS_STATUS_INO;
}

static int
is_reserved(uint64_t parent, const char *name)
{
	return parent == OBJFS_ROOT_INO && strcmp(name, OBJFS_STATUS_NAME) == 0;
}

static void
status_attr(struct objfs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = OBJFS_STATUS_INO;
	a->mode = S_IFREG | 0444;
	a->nlink = 1;
	a->uid = (uint32_t)getuid();
	a->gid = (uint32_t)getgid();
	touch_mc(a);
	a->atime_sec = a->mtime_sec;
	a->atime_nsec = a->mtime_nsec;
}

/* ---- inode table ---------------------------------------------------- */

static size_t
bucket(const struct objfs_store *s, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) &
		(s->nbuckets - 1);
}

static struct objfs_inode *
find_locked(struct objfs_store *s, uint64_t ino)
{
	struct objfs_inode *ip = s->table[bucket(s, ino)];

	while (ip && ip->ino != ino)
		ip = ip->hnext;
	return ip;
}

static void
table_grow_locked(struct objfs_store *s)
{
	size_t n = s->nbuckets * 2, old = s->nbuckets;
	struct objfs_inode **t = calloc(n, sizeof(*t)), **o = s->table;

	if (!t)
		return;		/* longer chains, still correct */
	s->table = t;
	s->nbuckets = n;
	for (size_t i = 0; i < old; i++) {
		while (o[i]) {
			struct objfs_inode *ip = o[i];
			size_t b = bucket(s, ip->ino);

			o[i] = ip->hnext;
			ip->hnext = t[b];
			t[b] = ip;
		}
	}
	free(o);
}

static void
table_remove_locked(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_inode **pp = &s->table[bucket(s, ip->ino)];

	while (*pp != ip)
		pp = &(*pp)->hnext;
	*pp = ip->hnext;
	s->count--;
}

/* Find or load @ino and take a reference.  Caller holds s->lock. */
static int
get_locked(struct objfs_store *s, uint64_t ino, struct objfs_inode **out)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *ip;
	struct objfs_attr a;
	int rc;

	ip = find_locked(s, ino);
	if (ip) {
		ip->refs++;
		*out = ip;
		return 0;
	}
	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_inode_get(t, ino, &a);
	objfs_meta_abort(t);
	if (rc < 0)
		return rc;
	ip = calloc(1, sizeof(*ip));
	if (!ip)
		return -ENOMEM;
	ip->ino = ino;
	ip->attr = a;
	ip->bfd = -1;
	ip->refs = 1;
	objfs_chunkmap_init(&ip->chunks);
	objfs_slots_init(&ip->slots);
	pthread_mutex_init(&ip->lock, NULL);
	if (S_ISREG(a.mode)) {
		rc = objfs_data_load(s, ip);
		if (rc < 0) {
			pthread_mutex_destroy(&ip->lock);
			free(ip);
			return rc;
		}
	}
	if (s->count >= s->nbuckets)
		table_grow_locked(s);
	ip->hnext = s->table[bucket(s, ino)];
	s->table[bucket(s, ino)] = ip;
	s->count++;
	*out = ip;
	return 0;
}

static int
persist_attr(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_meta_txn *t;
	int rc;

	if (ip->gone) {
		ip->attr_dirty = 0;	/* nothing left to write to */
		return 0;
	}
	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_inode_put(t, &ip->attr);
	if (rc < 0) {
		objfs_meta_abort(t);
		return rc;
	}
	rc = objfs_meta_commit(t);
	if (rc == 0)
		ip->attr_dirty = 0;
	return rc;
}

static void
free_inode(struct objfs_inode *ip)
{
	pthread_mutex_destroy(&ip->lock);
	free(ip);
}

/*
 * Drop a reference; when nothing holds the inode any more, destroy it (no
 * names left) or let it go from memory (nothing in the arena).  Caller
 * holds s->lock.
 */
static void
put_locked(struct objfs_store *s, struct objfs_inode *ip)
{
	uint64_t res, disk;
	int rc;

	if (--ip->refs || ip->nlookup || ip->nopen || ip->ino == OBJFS_ROOT_INO)
		return;
	pthread_mutex_lock(&ip->lock);
	if (ip->attr.nlink == 0 && ip->gone) {
		objfs_data_unload(s, ip);	/* left the index at unlink */
	} else if (ip->attr.nlink == 0) {
		rc = objfs_data_destroy(s, ip);
		if (rc < 0) {
			/* Stays an orphan in the index; the next mount
			 * removes it. */
			objfs_log(OBJFS_LOG_WARNING,
				"inode %" PRIu64 ": removing unlinked object: %s",
				ip->ino, strerror(-rc));
		}
		s->ninodes--;
	} else {
		objfs_chunkmap_usage(&ip->chunks, &res, &disk);
		if (res) {
			pthread_mutex_unlock(&ip->lock);
			return;		/* its bytes keep it cached */
		}
		if (ip->attr_dirty && persist_attr(s, ip) < 0) {
			pthread_mutex_unlock(&ip->lock);
			return;		/* try again at the next put */
		}
		objfs_data_unload(s, ip);
	}
	pthread_mutex_unlock(&ip->lock);
	table_remove_locked(s, ip);
	free_inode(ip);
}

int
objfs_store_iget_cached(struct objfs_store *s, uint64_t ino,
		struct objfs_inode **out)
{
	struct objfs_inode *ip;

	pthread_mutex_lock(&s->lock);
	ip = find_locked(s, ino);
	if (ip)
		ip->refs++;
	pthread_mutex_unlock(&s->lock);
	if (!ip)
		return -ENOENT;
	*out = ip;
	return 0;
}

void
objfs_store_iput(struct objfs_store *s, struct objfs_inode *ip)
{
	pthread_mutex_lock(&s->lock);
	put_locked(s, ip);
	pthread_mutex_unlock(&s->lock);
}

static int
iget(struct objfs_store *s, uint64_t ino, struct objfs_inode **out)
{
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = get_locked(s, ino, out);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int
objfs_store_iget(struct objfs_store *s, uint64_t ino,
		struct objfs_inode **out)
{
	return iget(s, ino, out);
}

static void
iput(struct objfs_store *s, struct objfs_inode *ip)
{
	pthread_mutex_lock(&s->lock);
	put_locked(s, ip);
	pthread_mutex_unlock(&s->lock);
}

/* ---- open / close ---------------------------------------------------- */

static int
open_dir_at(int dirfd, const char *name, int *out)
{
	int fd;

	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*out = fd;
	return 0;
}

int
objfs_store_lock_dir(int dirfd, int *lockfd_out, long *holder)
{
	char buf[32];
	ssize_t n;
	int fd, rc;

	fd = openat(dirfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (holder && n > 0) {
			buf[n] = '\0';
			*holder = strtol(buf, NULL, 10);
		}
		close(fd);
		return rc;
	}
	*lockfd_out = fd;
	return 0;
}

void
objfs_store_note_pid(struct objfs_store *s)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());

	if (ftruncate(s->lockfd, 0) == 0 && pwrite(s->lockfd, buf, (size_t)n, 0) < 0)
		objfs_log(OBJFS_LOG_WARNING, "cannot record pid in lock file: %m");
}

/* A new data directory's number, to tell its index from another's. */
static uint64_t
new_dir_id(void)
{
	uint64_t id = 0;
	int64_t sec;
	uint32_t nsec;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &id, sizeof(id)) != sizeof(id))
			id = 0;
		close(fd);
	}
	objfs_time_now(&sec, &nsec);
	id ^= (uint64_t)sec * 1000000007u ^ nsec ^ (uint64_t)getpid() << 32;
	return id ? id : 1;
}

static int
count_file(void *arg, uint64_t ino)
{
	(*(size_t *)arg)++;
	return 0;
}

/* How many object files the backing directory holds, in *@n.  An index
 * is made anew only when this says none: a directory that cannot be read
 * is an error, never "empty". */
static int
backing_objects(struct objfs_store *s, size_t *n)
{
	*n = 0;
	return objfs_backing_list(s->backing, count_file, n);
}

static int
init_or_check_index(struct objfs_store *s, int created, uint32_t want_chunk,
		uint64_t *id, const char **msg)
{
	struct objfs_meta_txn *t;
	struct objfs_attr root;
	uint64_t schema, chunk;
	size_t objects;
	int rc;

	/* Reading, unless there is something to write: a mount on a full
	 * disk must still work. */
	rc = objfs_meta_begin(s->meta, created ? OBJFS_META_ESSENTIAL : 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_super_get(t, OBJFS_SUPER_SCHEMA, &schema);
	if (rc == -ENOENT && !created && !objfs_meta_empty(t)) {
		*msg = "the index is an LMDB file but not an objfs index";
		rc = -EMEDIUMTYPE;
		goto err_abort;
	}
	if (rc == -ENOENT && !created) {
		int r = backing_objects(s, &objects);

		if (r < 0 || objects) {
			*msg = r < 0 ? "the index is empty and the backing "
				"directory cannot be read; refusing to mount "
				"(nothing was changed)" :
				"the index is empty, but backing/ holds object "
				"files; refusing to mount (nothing was "
				"changed): restore index/ from a copy, or run "
				"'objfsctl recover' to save the objects";
			rc = r < 0 ? r : -EUCLEAN;
			goto err_abort;
		}
	}
	if (rc == -ENOENT && !created) {
		/* Made by a first mount that did not get to fill it. */
		objfs_log(OBJFS_LOG_INFO, "the index was left empty by a first "
			"mount cut short; making it now");
		objfs_meta_abort(t);
		return init_or_check_index(s, 1, want_chunk, id, msg);
	}
	if (rc == -ENOENT) {
		/* A new data directory. */
		chunk = want_chunk ? want_chunk : OBJFS_DEFAULT_CHUNK;
		memset(&root, 0, sizeof(root));
		root.ino = OBJFS_ROOT_INO;
		root.parent = OBJFS_ROOT_INO;
		root.mode = S_IFDIR | 0755;
		root.uid = (uint32_t)getuid();
		root.gid = (uint32_t)getgid();
		root.nlink = 2;
		touch_mc(&root);
		root.atime_sec = root.mtime_sec;
		root.atime_nsec = root.mtime_nsec;
		if ((rc = objfs_meta_super_put(t, OBJFS_SUPER_SCHEMA,
					OBJFS_META_SCHEMA)) < 0 ||
		    (rc = objfs_meta_super_put(t, OBJFS_SUPER_CHUNK, chunk)) < 0 ||
		    (rc = objfs_meta_super_put(t, OBJFS_SUPER_NEXT_INO, 2)) < 0 ||
		    (rc = objfs_meta_super_put(t, OBJFS_SUPER_NEXT_COOKIE,
					FIRST_COOKIE)) < 0 ||
		    (rc = objfs_meta_super_put(t, OBJFS_SUPER_ID,
					new_dir_id())) < 0 ||
		    (rc = objfs_meta_inode_put(t, &root)) < 0)
			goto err_abort;
		rc = objfs_meta_commit(t);
		/* Durable before the data directory's id file is made. */
		if (rc == 0)
			rc = objfs_meta_sync(s->meta);
		if (rc < 0)
			return rc;
		return init_or_check_index(s, 0, 0, id, msg);
	}
	if (rc < 0)
		goto err_abort;
	if (schema != OBJFS_META_SCHEMA) {
		*msg = "the index was written by an incompatible objfs version";
		rc = -EPROTO;
		goto err_abort;
	}
	rc = objfs_meta_super_get(t, OBJFS_SUPER_ID, id);
	if (rc == -ENOENT) {
		/* Converted from schema 1, which had none: one now. */
		objfs_meta_abort(t);
		rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
		if (rc < 0)
			return rc;
		*id = new_dir_id();
		rc = objfs_meta_super_put(t, OBJFS_SUPER_ID, *id);
	}
	if (rc < 0 ||
	    (rc = objfs_meta_super_get(t, OBJFS_SUPER_CHUNK, &chunk)) < 0 ||
	    (rc = objfs_meta_super_get(t, OBJFS_SUPER_NEXT_INO,
				&s->next_ino)) < 0 ||
	    (rc = objfs_meta_super_get(t, OBJFS_SUPER_NEXT_COOKIE,
				&s->next_cookie)) < 0 ||
	    (rc = objfs_meta_inode_count(t, &s->ninodes)) < 0)
		goto err_abort;
	rc = objfs_meta_commit(t);
	if (rc < 0)
		return rc;
	if (want_chunk && want_chunk != chunk) {
		*msg = "chunk size differs from the one this data directory was created with";
		return -EINVAL;
	}
	s->chunk_size = (uint32_t)chunk;
	return 0;

err_abort:
	objfs_meta_abort(t);
	return rc;
}

/* The id the backing directory was made for, in backing/id: the index
 * must carry the same one.  Written when missing (a new directory, or
 * one converted from schema 1). */
static int
check_dir_id(struct objfs_store *s, int dirfd, uint64_t id,
		const char **msg)
{
	char buf[64], want[32];
	ssize_t n;
	int fd, rc = 0;

	snprintf(want, sizeof(want), "%016" PRIx64 "\n", id);
	fd = openat(dirfd, "id", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n >= 0) {
			buf[n] = '\0';
			if (strcmp(buf, want) == 0)
				return 0;
		}
		*msg = "the index belongs to another data directory (backing/id "
			"differs); refusing to use one with the other's files";
		return -EXDEV;
	}
	if (errno != ENOENT)
		return -errno;
	fd = openat(dirfd, "id.new", O_WRONLY | O_CREAT | O_TRUNC |
			O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, want, strlen(want)) != (ssize_t)strlen(want) ||
	    fsync(fd) < 0)
		rc = errno ? -errno : -EIO;
	close(fd);
	if (rc == 0 && renameat(dirfd, "id.new", dirfd, "id") < 0)
		rc = -errno;
	if (rc == 0)
		rc = objfs_backing_sync_dir(s->backing);
	return rc;
}

struct ino_vec {
	uint64_t *v;
	size_t n, cap;
};

static int
collect_ino(void *arg, uint64_t ino)
{
	struct ino_vec *iv = arg;

	if (iv->n == iv->cap) {
		size_t c = iv->cap ? 2 * iv->cap : 64;
		uint64_t *p = realloc(iv->v, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		iv->v = p;
		iv->cap = c;
	}
	iv->v[iv->n++] = ino;
	return 0;
}

/*
 * Backing files of objects that are gone: each has a tombstone in the
 * index (its deletion committed, the unlink of its file not yet done).
 * Remove those, then the tombstones.  A file the index knows nothing of
 * stays, with a warning.
 */
static int
sweep_backing(struct objfs_store *s)
{
	struct ino_vec files = { 0 }, tomb = { 0 };
	struct objfs_meta_txn *t;
	struct objfs_attr a;
	size_t removed = 0, unknown = 0;
	int rc;

	rc = objfs_backing_list(s->backing, collect_ino, &files);
	if (rc == 0)
		rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc == 0) {
		rc = objfs_meta_deleted_list(t, collect_ino, &tomb);
		for (size_t i = 0; rc == 0 && i < files.n; i++) {
			rc = objfs_meta_inode_get(t, files.v[i], &a);
			if (rc == 0) {
				files.v[i] = 0;		/* live */
				continue;
			}
			if (rc != -ENOENT)
				break;
			rc = objfs_meta_deleted_get(t, files.v[i]);
			if (rc == -ENOENT) {
				unknown++;
				files.v[i] = 0;
				rc = 0;
			}
		}
		objfs_meta_abort(t);
	}
	for (size_t i = 0; rc == 0 && i < files.n; i++) {
		if (!files.v[i])
			continue;
		rc = objfs_backing_remove(s->backing, files.v[i]);
		removed++;
	}
	if (rc == 0 && tomb.n && (rc = objfs_meta_begin(s->meta,
			OBJFS_META_ESSENTIAL, &t)) == 0) {
		for (size_t i = 0; rc == 0 && i < tomb.n; i++)
			rc = objfs_meta_deleted_del(t, tomb.v[i]);
		rc = rc < 0 ? (objfs_meta_abort(t), rc) : objfs_meta_commit(t);
	}
	if (removed)
		objfs_log(OBJFS_LOG_INFO, "removed %zu backing file(s) of "
			"objects deleted earlier", removed);
	if (unknown)
		objfs_log(OBJFS_LOG_WARNING, "%zu file(s) in the backing "
			"directory belong to no object the index knows; left "
			"alone (objfsctl check lists them)", unknown);
	free(files.v);
	free(tomb.v);
	return rc;
}

/* Destroy objects that were unlinked but open when the daemon last died. */
static int
reap_orphans(struct objfs_store *s)
{
	struct ino_vec o = { 0 };
	struct objfs_meta_txn *t;
	int rc;

	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_orphan_list(t, collect_ino, &o);
	objfs_meta_abort(t);
	for (size_t i = 0; rc == 0 && i < o.n; i++) {
		struct objfs_inode *ip;

		pthread_mutex_lock(&s->lock);
		rc = get_locked(s, o.v[i], &ip);
		if (rc == 0) {
			ip->attr.nlink = 0;
			put_locked(s, ip);
		} else if (rc == -ENOENT) {
			rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
			if (rc == 0) {
				rc = objfs_meta_orphan_del(t, o.v[i]);
				rc = rc < 0 ? (objfs_meta_abort(t), rc) :
					objfs_meta_commit(t);
			}
		}
		pthread_mutex_unlock(&s->lock);
	}
	if (rc == 0 && o.n)
		objfs_log(OBJFS_LOG_INFO, "removed %zu unlinked object(s) left "
			"by an earlier run", o.n);
	free(o.v);
	return rc;
}

/* Record in the index whether the daemon stopped cleanly. */
static int
set_clean(struct objfs_store *s, uint64_t clean)
{
	struct objfs_meta_txn *t;
	int rc;

	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_super_put(t, OBJFS_SUPER_CLEAN, clean);
	return rc < 0 ? (objfs_meta_abort(t), rc) : objfs_meta_commit(t);
}

/*
 * The index says whether the last daemon stopped cleanly; from now on it
 * says no, until objfs_store_close.  After an unclean stop, give back the
 * backing-file space no record points at.
 */
static int
mark_unclean(struct objfs_store *s)
{
	struct objfs_meta_txn *t;
	uint64_t clean = 0, freed;
	int rc;

	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_super_get(t, OBJFS_SUPER_CLEAN, &clean);
	objfs_meta_abort(t);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (!clean) {
		freed = objfs_data_trim(s);
		if (freed)
			objfs_log(OBJFS_LOG_INFO, "gave back %" PRIu64 " MiB of "
				"backing files that no record points at (left by "
				"a daemon that did not stop cleanly)",
				freed >> 20);
	}
	return set_clean(s, 0);
}

/* ---- the maintenance thread ------------------------------------------ */

#define MAINT_INTERVAL_MS	1000

static void *
maint_main(void *arg)
{
	struct objfs_store *s = arg;

	pthread_mutex_lock(&s->maint_lock);
	while (!s->maint_stop) {
		objfs_cond_wait_ms(&s->maint_cv, &s->maint_lock,
				MAINT_INTERVAL_MS);
		if (s->maint_stop)
			break;
		pthread_mutex_unlock(&s->maint_lock);
		/* A checkpoint of everything committed: a machine crash
		 * then takes at most about a second of changes. */
		(void)objfs_meta_tick(s->meta, 0);
		objfs_data_release(s, 0);
		pthread_mutex_lock(&s->maint_lock);
	}
	pthread_mutex_unlock(&s->maint_lock);
	return NULL;
}

static int
maint_start(struct objfs_store *s)
{
	int rc;

	rc = pthread_mutex_init(&s->maint_lock, NULL);
	if (rc)
		return -rc;
	rc = objfs_cond_init(&s->maint_cv);
	if (rc == 0) {
		rc = pthread_create(&s->maint_thread, NULL, maint_main, s);
		if (rc)
			pthread_cond_destroy(&s->maint_cv);
	}
	if (rc) {
		pthread_mutex_destroy(&s->maint_lock);
		return -rc;
	}
	s->maint_started = 1;
	return 0;
}

static void
maint_stop(struct objfs_store *s)
{
	if (!s->maint_started)
		return;
	pthread_mutex_lock(&s->maint_lock);
	s->maint_stop = 1;
	pthread_cond_broadcast(&s->maint_cv);
	pthread_mutex_unlock(&s->maint_lock);
	pthread_join(s->maint_thread, NULL);
	s->maint_started = 0;
	pthread_cond_destroy(&s->maint_cv);
	pthread_mutex_destroy(&s->maint_lock);
}

/* ---- opening the store ------------------------------------------------ */

/*
 * Open the index in @path, refusing one that is missing, empty or not
 * objfs's while the backing directory holds objects.
 */
static int
open_index(struct objfs_store *s, const char *path, int *created,
		const char **msg)
{
	static char why[256];
	size_t objects = 0;
	char file[4200];
	int rc, r;

	rc = objfs_meta_open(path, 0, &s->meta, created);
	if (rc == 0)
		return 0;
	if (rc != -ENOENT && rc != -ENODATA) {
		*msg = rc == -EPROTO ? "index/data.mdb is not an index this objfs "
			"can read; refusing to mount (nothing was changed; if it "
			"was one, 'objfsctl recover' saves the objects)" :
			rc == -EMEDIUMTYPE ? "index/data.mdb is an LMDB file but not "
			"an objfs index; refusing to mount (nothing was changed)" :
			rc == -EUCLEAN ? "the index is damaged; refusing to mount "
			"(nothing was changed): run 'objfsctl check' on the data "
			"directory, and 'objfsctl recover' to save the objects" :
			"cannot open the index";
		return rc;
	}
	r = backing_objects(s, &objects);
	if (r < 0) {
		snprintf(why, sizeof(why), "the index is %s and the backing "
			"directory cannot be read; refusing to mount (nothing "
			"was changed)", rc == -ENOENT ? "missing" : "empty");
		*msg = why;
		return r;
	}
	if (objects) {
		snprintf(why, sizeof(why), "the index is %s, but backing/ holds "
			"%zu object file(s); refusing to mount (nothing was "
			"changed): restore index/ from a copy, or run 'objfsctl "
			"recover' to save the objects", rc == -ENOENT ?
			"missing" : "empty", objects);
		*msg = why;
		return -EUCLEAN;
	}
	if (rc == -ENODATA) {
		/* An empty file and no objects: a first mount cut short. */
		snprintf(file, sizeof(file), "%s/data.mdb", path);
		if (unlink(file) < 0)
			return -errno;
	}
	rc = objfs_meta_open(path, 1, &s->meta, created);
	if (rc < 0)
		*msg = "cannot create the index";
	return rc;
}

int
objfs_store_open(const struct objfs_store_config *cfg,
		struct objfs_store **out, const char **msg, long *holder)
{
	struct objfs_inode *root;
	struct objfs_store *s;
	const char *dummy;
	char path[PATH_MAX];
	uint64_t id = 0;
	int dirfd, sub = -1, rc, created = 0;

	if (!msg)
		msg = &dummy;
	*msg = NULL;
	/* Every path made from it must fit, the longest being the index's
	 * data file: a path cut short would name another file. */
	if (strlen(cfg->data_dir) + sizeof("/index/data.mdb") > sizeof(path)) {
		*msg = "the data directory's path is too long";
		return -ENAMETOOLONG;
	}
	if (mkdir(cfg->data_dir, 0700) < 0 && errno != EEXIST) {
		*msg = "cannot create the data directory";
		return -errno;
	}
	dirfd = open(cfg->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		*msg = "cannot open the data directory";
		return -errno;
	}
	if (faccessat(dirfd, ".", W_OK, AT_EACCESS) < 0) {
		rc = -errno;
		*msg = "the data directory is not writable";
		goto err_dirfd;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = -ENOMEM;
		goto err_dirfd;
	}
	s->lockfd = -1;
	pthread_mutex_init(&s->defer_lock, NULL);
	rc = objfs_store_lock_dir(dirfd, &s->lockfd, holder);
	if (rc < 0) {
		*msg = rc == -EBUSY ?
			"the data directory is already served by another objfs" :
			"cannot lock the data directory";
		goto err_free;
	}
	objfs_store_note_pid(s);
	if ((rc = open_dir_at(dirfd, "index", &sub)) < 0) {
		*msg = "cannot create the index directory";
		goto err_lock;
	}
	close(sub);
	snprintf(path, sizeof(path), "%s/backing", cfg->data_dir);
	rc = objfs_backing_open(path, &s->backing);
	if (rc < 0) {
		*msg = "cannot open the backing directory";
		goto err_lock;
	}
	/* The new subdirectories' names, before anything is put in them. */
	if (fsync(dirfd) < 0) {
		rc = -errno;
		*msg = "cannot sync the data directory";
		goto err_backing;
	}
	snprintf(path, sizeof(path), "%s/index", cfg->data_dir);
	rc = open_index(s, path, &created, msg);
	if (rc < 0)
		goto err_backing;
	rc = init_or_check_index(s, created, cfg->chunk_size, &id, msg);
	if (rc < 0) {
		if (!*msg)
			*msg = "cannot read the index";
		goto err_meta;
	}
	rc = check_dir_id(s, dirfd, id, msg);
	if (rc < 0) {
		if (!*msg)
			*msg = "cannot record the data directory's id";
		goto err_meta;
	}
	for (s->chunk_shift = 0; (1u << s->chunk_shift) < s->chunk_size;
	     s->chunk_shift++)
		;
	/* The largest file is a number of chunks: what the chunk map and
	 * the index's chunk keys hold. */
	_Static_assert(OBJFS_MAX_CHUNKS_SHIFT <= OBJFS_CHUNKMAP_BITS,
			"the chunk map holds every chunk of the largest file");
	s->max_size = (uint64_t)s->chunk_size << OBJFS_MAX_CHUNKS_SHIFT;
	if (s->max_size > OBJFS_MAX_FILE_SIZE)
		s->max_size = OBJFS_MAX_FILE_SIZE;
	rc = objfs_arena_create(cfg->arena_size, s->chunk_size, &s->arena);
	if (rc < 0) {
		*msg = rc == -EINVAL ?
			"the arena must hold at least two chunks" :
			"cannot create the shared-memory arena";
		goto err_meta;
	}
	if (cfg->prefault)
		objfs_arena_prefault(s->arena);
	{
		struct objfs_arena_stats st;
		unsigned hi = cfg->spill_high ? cfg->spill_high : 90;
		unsigned lo = cfg->spill_low ? cfg->spill_low : 70;

		if (lo >= hi || hi > 100) {
			*msg = "spill_low must be below spill_high, both at most 100";
			rc = -EINVAL;
			objfs_arena_destroy(s->arena);
			goto err_meta;
		}
		objfs_arena_get_stats(s->arena, &st);
		s->high_bytes = st.capacity / 100 * hi;
		s->low_bytes = st.capacity / 100 * lo;
		/* Restores stop at the low watermark: the room above it is
		 * for writers and the spiller.  (Letting them go up to the
		 * high one was measured: more restore/drop churn, reads of
		 * 16 GiB through a 1 GiB arena 39 s against 28 s.) */
		s->restore_limit = s->low_bytes;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->nbuckets = 1024;
	s->table = calloc(s->nbuckets, sizeof(*s->table));
	if (!s->table) {
		rc = -ENOMEM;
		goto err_arena;
	}
	pthread_mutex_lock(&s->lock);
	rc = get_locked(s, OBJFS_ROOT_INO, &root);	/* pinned for good */
	pthread_mutex_unlock(&s->lock);
	if (rc < 0) {
		*msg = "the index has no root directory";
		goto err_table;
	}
	rc = reap_orphans(s);
	if (rc == 0)
		rc = sweep_backing(s);
	if (rc < 0) {
		*msg = "cannot remove unlinked objects";
		goto err_table;
	}
	rc = mark_unclean(s);
	if (rc < 0) {
		*msg = "cannot write to the index";
		goto err_table;
	}
	rc = objfs_spiller_start(s);
	if (rc == 0)
		rc = maint_start(s);
	if (rc < 0) {
		*msg = "cannot start the spiller and maintenance threads";
		objfs_spiller_stop(s);
		goto err_table;
	}
	close(dirfd);
	*out = s;
	return 0;

err_table:
	for (size_t b = 0; b < s->nbuckets; b++) {
		while (s->table[b]) {
			struct objfs_inode *ip = s->table[b];

			s->table[b] = ip->hnext;
			objfs_data_unload(s, ip);
			free_inode(ip);
		}
	}
	free(s->table);
err_arena:
	pthread_mutex_destroy(&s->lock);
	objfs_arena_destroy(s->arena);
err_meta:
	objfs_meta_close(s->meta);
err_backing:
	objfs_backing_close(s->backing);
err_lock:
	close(s->lockfd);
err_free:
	free(s->defer);
	pthread_mutex_destroy(&s->defer_lock);
	free(s);
err_dirfd:
	close(dirfd);
	return rc;
}

static int
flush_all(struct objfs_store *s)
{
	int rc = 0, r;

	pthread_mutex_lock(&s->lock);
	for (size_t b = 0; b < s->nbuckets; b++) {
		for (struct objfs_inode *ip = s->table[b]; ip; ip = ip->hnext) {
			pthread_mutex_lock(&ip->lock);
			if (S_ISREG(ip->attr.mode) && ip->attr.nlink > 0)
				r = objfs_data_flush(s, ip);
			else
				r = ip->attr_dirty ? persist_attr(s, ip) : 0;
			pthread_mutex_unlock(&ip->lock);
			if (r < 0 && rc == 0)
				rc = r;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int
objfs_store_sync_all(struct objfs_store *s)
{
	int rc = flush_all(s), r;

	r = objfs_meta_sync(s->meta);
	return rc ? rc : r;
}

int
objfs_store_close(struct objfs_store *s)
{
	int rc, r;

	if (!s)
		return 0;
	maint_stop(s);
	objfs_spiller_stop(s);
	/* Space that deletes freed first: the write-out may need it. */
	(void)objfs_data_reclaim(s);
	rc = objfs_store_sync_all(s);
	if (rc < 0)
		objfs_log(OBJFS_LOG_ERR, "writing objects out at unmount: %s; "
			"what was not written is lost", strerror(-rc));
	/* Everything committed is durable now: the space it freed can go
	 * (the tombstones' removal is checkpointed at close). */
	objfs_data_release(s, 0);
	if (rc == 0)
		(void)set_clean(s, 1);
	for (size_t b = 0; b < s->nbuckets; b++) {
		while (s->table[b]) {
			struct objfs_inode *ip = s->table[b];

			s->table[b] = ip->hnext;
			objfs_data_unload(s, ip);
			free_inode(ip);
		}
	}
	free(s->table);
	pthread_mutex_destroy(&s->lock);
	objfs_arena_destroy(s->arena);
	objfs_backing_close(s->backing);
	r = objfs_meta_close(s->meta);
	if (r < 0) {
		objfs_log(OBJFS_LOG_ERR, "index: the last checkpoint failed: %s; "
			"the journal holds the changes and the next mount "
			"replays it", strerror(-r));
		if (rc == 0)
			rc = r;
	}
	close(s->lockfd);
	free(s->defer);
	pthread_mutex_destroy(&s->defer_lock);
	free(s);
	return rc;
}

uint32_t
objfs_store_chunk_size(const struct objfs_store *s)
{
	return s->chunk_size;
}

/* ---- attributes ------------------------------------------------------ */

int
objfs_store_lookup(struct objfs_store *s, uint64_t parent, const char *name,
		struct objfs_attr *out)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *ip;
	struct objfs_dirent d;
	size_t len = strlen(name);
	int rc;

	if (len > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (is_reserved(parent, name)) {
		status_attr(out);
		return 0;
	}
	pthread_mutex_lock(&s->lock);
	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		goto out;
	rc = objfs_meta_dirent_get(t, parent, name, len, &d);
	objfs_meta_abort(t);
	if (rc < 0)
		goto out;
	rc = get_locked(s, d.ino, &ip);
	if (rc < 0)
		goto out;
	ip->nlookup++;
	pthread_mutex_lock(&ip->lock);
	*out = ip->attr;
	pthread_mutex_unlock(&ip->lock);
	put_locked(s, ip);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void
objfs_store_forget(struct objfs_store *s, uint64_t ino, uint64_t n)
{
	struct objfs_inode *ip;

	pthread_mutex_lock(&s->lock);
	ip = find_locked(s, ino);
	if (ip) {
		ip->nlookup = ip->nlookup > n ? ip->nlookup - n : 0;
		ip->refs++;
		put_locked(s, ip);
	}
	pthread_mutex_unlock(&s->lock);
}

int
objfs_store_getattr(struct objfs_store *s, uint64_t ino,
		struct objfs_attr *out)
{
	struct objfs_inode *ip;
	int rc;

	if (is_status(ino)) {
		status_attr(out);
		return 0;
	}
	rc = iget(s, ino, &ip);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&ip->lock);
	*out = ip->attr;
	pthread_mutex_unlock(&ip->lock);
	iput(s, ip);
	return 0;
}

int
objfs_store_setattr(struct objfs_store *s, uint64_t ino,
		const struct objfs_setattr *sa, struct objfs_attr *out)
{
	struct objfs_inode *ip;
	struct objfs_attr a;
	int rc;

	if (is_status(ino))
		return -EPERM;
	rc = iget(s, ino, &ip);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&ip->lock);
	a = ip->attr;
	if (sa->valid & OBJFS_SET_SIZE) {
		if (S_ISDIR(a.mode)) {
			rc = -EISDIR;
			goto out;
		}
		if (!S_ISREG(a.mode)) {
			rc = -EINVAL;
			goto out;
		}
		touch_mc(&a);
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
		touch_c(&a);
	}
	/* One commit for the size and the rest: all or nothing. */
	if (sa->valid & OBJFS_SET_SIZE) {
		rc = objfs_data_truncate(s, ip, sa->size, &a);
	} else {
		struct objfs_attr old = ip->attr;

		ip->attr = a;
		rc = persist_attr(s, ip);
		if (rc < 0)
			ip->attr = old;
	}
	if (rc == 0)
		*out = ip->attr;
out:
	pthread_mutex_unlock(&ip->lock);
	iput(s, ip);
	return rc;
}

/* ---- namespace -------------------------------------------------------- */

/* Look up @parent as a directory; takes a reference.  Holds s->lock. */
static int
get_dir_locked(struct objfs_store *s, uint64_t parent,
		struct objfs_inode **out)
{
	struct objfs_inode *dp;
	int rc = get_locked(s, parent, &dp);

	if (rc < 0)
		return rc;
	if (!S_ISDIR(dp->attr.mode)) {
		put_locked(s, dp);
		return -ENOTDIR;
	}
	if (dp->attr.nlink == 0) {
		put_locked(s, dp);
		return -ENOENT;		/* removed directory */
	}
	*out = dp;
	return 0;
}

/*
 * Create an inode of @mode named @name in @parent.  For symlinks @target is
 * stored too.  The new inode gets one lookup.
 */
static int
make_node(struct objfs_store *s, uint64_t parent, const char *name,
		uint32_t mode, uint64_t rdev, const char *target,
		const struct objfs_cred *cr, struct objfs_attr *out,
		struct objfs_inode **ip_out)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *dp, *ip;
	struct objfs_attr a, pa;
	struct objfs_dirent d;
	size_t len = strlen(name);
	int rc;

	if (len > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (is_reserved(parent, name))
		return -EEXIST;
	pthread_mutex_lock(&s->lock);
	rc = get_dir_locked(s, parent, &dp);
	if (rc < 0)
		goto out_unlock;
	if (s->ninodes >= MAX_INODES) {
		rc = -ENOSPC;
		goto out_dp;
	}
	pthread_mutex_lock(&dp->lock);
	pa = dp->attr;
	memset(&a, 0, sizeof(a));
	a.ino = s->next_ino;
	a.mode = mode;
	a.uid = cr->uid;
	a.gid = cr->gid;
	if (pa.mode & S_ISGID) {
		a.gid = pa.gid;
		if (S_ISDIR(mode))
			a.mode |= S_ISGID;
	}
	a.nlink = S_ISDIR(mode) ? 2 : 1;
	a.parent = S_ISDIR(mode) ? parent : 0;
	a.rdev = rdev;
	touch_mc(&a);
	a.atime_sec = a.mtime_sec;
	a.atime_nsec = a.mtime_nsec;
	if (target)
		a.size = strlen(target);
	touch_mc(&pa);
	if (S_ISDIR(mode))
		pa.nlink++;

	rc = begin_change(s, &t);
	if (rc < 0)
		goto out_dplock;
	rc = objfs_meta_dirent_get(t, parent, name, len, &d);
	if (rc == 0)
		rc = -EEXIST;
	if (rc != -ENOENT)
		goto out_abort;
	if ((rc = objfs_meta_dirent_add(t, parent, name, len, a.ino,
				a.mode & S_IFMT, s->next_cookie)) < 0 ||
	    (rc = objfs_meta_inode_put(t, &a)) < 0 ||
	    (rc = objfs_meta_inode_put(t, &pa)) < 0 ||
	    (target && (rc = objfs_meta_symlink_put(t, a.ino, target,
				strlen(target))) < 0) ||
	    (rc = objfs_meta_super_put(t, OBJFS_SUPER_NEXT_INO,
				a.ino + 1)) < 0 ||
	    (rc = objfs_meta_super_put(t, OBJFS_SUPER_NEXT_COOKIE,
				s->next_cookie + 1)) < 0)
		goto out_abort;
	rc = objfs_meta_commit(t);
	if (rc < 0)
		goto out_dplock;
	s->next_ino++;
	s->next_cookie++;
	s->ninodes++;
	dp->attr = pa;
	pthread_mutex_unlock(&dp->lock);
	put_locked(s, dp);

	rc = get_locked(s, a.ino, &ip);
	if (rc == 0) {
		ip->nlookup++;
		ip->no_file = 1;	/* inode numbers are never reused */
		*out = a;
		if (ip_out)
			*ip_out = ip;	/* caller puts it */
		else
			put_locked(s, ip);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;

out_abort:
	objfs_meta_abort(t);
out_dplock:
	pthread_mutex_unlock(&dp->lock);
out_dp:
	put_locked(s, dp);
out_unlock:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int
objfs_store_mknod(struct objfs_store *s, uint64_t parent, const char *name,
		uint32_t mode, uint64_t rdev, const struct objfs_cred *cr,
		struct objfs_attr *out)
{
	switch (mode & S_IFMT) {
	case 0:
		mode |= S_IFREG;
		break;
	case S_IFREG:
	case S_IFIFO:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFSOCK:
		break;
	default:
		return -EINVAL;
	}
	return make_node(s, parent, name, mode, rdev, NULL, cr, out, NULL);
}

int
objfs_store_mkdir(struct objfs_store *s, uint64_t parent, const char *name,
		uint32_t mode, const struct objfs_cred *cr,
		struct objfs_attr *out)
{
	return make_node(s, parent, name, S_IFDIR | (mode & 07777), 0, NULL,
			cr, out, NULL);
}

int
objfs_store_symlink(struct objfs_store *s, uint64_t parent, const char *name,
		const char *target, const struct objfs_cred *cr,
		struct objfs_attr *out)
{
	size_t len = strlen(target);

	if (len == 0)
		return -ENOENT;
	if (len >= 4096)
		return -ENAMETOOLONG;
	return make_node(s, parent, name, S_IFLNK | 0777, 0, target, cr, out,
			NULL);
}

/*
 * Count an open (store->lock held) and say how it meets the page cache.
 * A direct writer marks the cached pages of the file stale; the next
 * cached open drops them, and they stay marked while a direct writer
 * remains open.  (Kernels since 6.x also drop the pages a direct write
 * covers; this covers the ones that do not.)
 */
static enum objfs_cache
open_locked(struct objfs_inode *ip, int flags, int bypass)
{
	enum objfs_cache c = OBJFS_CACHE_KEEP;

	ip->nopen++;
	if (bypass) {
		if ((flags & O_ACCMODE) != O_RDONLY) {
			ip->ndirect_w++;
			ip->cache_stale = 1;
		}
		return OBJFS_CACHE_BYPASS;
	}
	if (ip->cache_stale) {
		c = OBJFS_CACHE_DROP;
		ip->cache_stale = ip->ndirect_w > 0;
	}
	return c;
}

static void
close_locked(struct objfs_inode *ip, int flags, int bypass)
{
	if (ip->nopen)
		ip->nopen--;
	if (bypass && (flags & O_ACCMODE) != O_RDONLY && ip->ndirect_w)
		ip->ndirect_w--;
}

int
objfs_store_create(struct objfs_store *s, uint64_t parent, const char *name,
		uint32_t mode, int flags, int bypass,
		const struct objfs_cred *cr, struct objfs_attr *out)
{
	struct objfs_inode *ip;
	int rc;

	rc = make_node(s, parent, name, S_IFREG | (mode & 07777), 0, NULL, cr,
			out, &ip);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->lock);
	open_locked(ip, flags, bypass);
	put_locked(s, ip);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int
objfs_store_link(struct objfs_store *s, uint64_t ino, uint64_t newparent,
		const char *newname, struct objfs_attr *out)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *dp, *ip;
	struct objfs_attr a, pa;
	size_t len = strlen(newname);
	int rc;

	if (len > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (is_reserved(newparent, newname))
		return -EEXIST;
	if (is_status(ino))
		return -EPERM;
	pthread_mutex_lock(&s->lock);
	rc = get_dir_locked(s, newparent, &dp);
	if (rc < 0)
		goto out_unlock;
	rc = get_locked(s, ino, &ip);
	if (rc < 0)
		goto out_dp;
	if (S_ISDIR(ip->attr.mode)) {
		rc = -EPERM;
		goto out_ip;
	}
	if (ip->attr.nlink == 0) {
		rc = -ENOENT;
		goto out_ip;
	}
	if (ip->attr.nlink >= 65000) {
		rc = -EMLINK;
		goto out_ip;
	}
	pthread_mutex_lock(&dp->lock);
	if (ip != dp)
		pthread_mutex_lock(&ip->lock);
	a = ip->attr;
	a.nlink++;
	touch_c(&a);
	pa = dp->attr;
	touch_mc(&pa);
	rc = begin_change(s, &t);
	if (rc < 0)
		goto out_locks;
	if ((rc = objfs_meta_dirent_add(t, newparent, newname, len, ino,
				a.mode & S_IFMT, s->next_cookie)) < 0 ||
	    (rc = objfs_meta_inode_put(t, &a)) < 0 ||
	    (rc = objfs_meta_inode_put(t, &pa)) < 0 ||
	    (rc = objfs_meta_super_put(t, OBJFS_SUPER_NEXT_COOKIE,
				s->next_cookie + 1)) < 0) {
		objfs_meta_abort(t);
		goto out_locks;
	}
	rc = objfs_meta_commit(t);
	if (rc == 0) {
		s->next_cookie++;
		ip->attr = a;
		ip->attr_dirty = 0;
		dp->attr = pa;
		ip->nlookup++;
		*out = a;
	}
out_locks:
	if (ip != dp)
		pthread_mutex_unlock(&ip->lock);
	pthread_mutex_unlock(&dp->lock);
out_ip:
	put_locked(s, ip);
out_dp:
	put_locked(s, dp);
out_unlock:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Remove @name from @parent; @want_dir selects rmdir semantics. */
static int
remove_name(struct objfs_store *s, uint64_t parent, const char *name,
		int want_dir)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *dp, *ip;
	struct objfs_attr a, pa;
	struct objfs_dirent d;
	size_t len = strlen(name);
	uint64_t seq;
	int rc, gone;

	if (len > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (is_reserved(parent, name))
		return -EPERM;
	pthread_mutex_lock(&s->lock);
	rc = get_dir_locked(s, parent, &dp);
	if (rc < 0)
		goto out_unlock;
	/* Look with a read transaction: the write transaction is taken only
	 * after the inode locks (store_int.h), and what it sees cannot change
	 * meanwhile, since every namespace change holds s->lock. */
	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		goto out_dp;
	rc = objfs_meta_dirent_get(t, parent, name, len, &d);
	if (rc < 0)
		goto out_abort;
	rc = get_locked(s, d.ino, &ip);
	if (rc < 0)
		goto out_abort;
	if (want_dir && !S_ISDIR(ip->attr.mode)) {
		rc = -ENOTDIR;
		goto out_ip;
	}
	if (!want_dir && S_ISDIR(ip->attr.mode)) {
		rc = -EISDIR;
		goto out_ip;
	}
	if (want_dir && (rc = objfs_meta_dir_empty(t, d.ino)) < 0)
		goto out_ip;
	objfs_meta_abort(t);
	t = NULL;
	pthread_mutex_lock(&dp->lock);
	pthread_mutex_lock(&ip->lock);
	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (rc < 0) {
		t = NULL;
		pthread_mutex_unlock(&ip->lock);
		pthread_mutex_unlock(&dp->lock);
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
	touch_c(&a);
	touch_mc(&pa);
	/* Once its last name goes nothing can open it again.  If nothing
	 * has it open, its records leave the index in this transaction (a
	 * tombstone says its backing file may go): no orphan record, and no
	 * second commit when the kernel forgets it.  Otherwise it becomes an
	 * orphan, destroyed at the last close (or at the next mount). */
	gone = a.nlink == 0 && ip->nopen == 0;
	if ((rc = objfs_meta_dirent_del(t, parent, name, len)) < 0 ||
	    (gone && (rc = objfs_meta_inode_del(t, a.ino)) < 0) ||
	    (gone && objfs_data_has_file(ip) &&
	     (rc = objfs_meta_deleted_add(t, a.ino)) < 0) ||
	    (!gone && (rc = objfs_meta_inode_put(t, &a)) < 0) ||
	    (rc = objfs_meta_inode_put(t, &pa)) < 0 ||
	    (a.nlink == 0 && !gone &&
	     (rc = objfs_meta_orphan_add(t, a.ino)) < 0)) {
		pthread_mutex_unlock(&ip->lock);
		pthread_mutex_unlock(&dp->lock);
		goto out_ip;
	}
	rc = objfs_meta_commit_seq(t, &seq);
	t = NULL;
	if (rc == 0) {
		ip->attr = a;
		dp->attr = pa;
		if (gone) {
			ip->gone = 1;
			s->ninodes--;
			objfs_data_gone(s, ip, seq);
		}
	}
	pthread_mutex_unlock(&ip->lock);
	pthread_mutex_unlock(&dp->lock);
out_ip:
	/* Never an inode lock inside a transaction (put may take one). */
	objfs_meta_abort(t);
	t = NULL;
	put_locked(s, ip);
out_abort:
	objfs_meta_abort(t);
out_dp:
	put_locked(s, dp);
out_unlock:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int
objfs_store_unlink(struct objfs_store *s, uint64_t parent, const char *name)
{
	return remove_name(s, parent, name, 0);
}

int
objfs_store_rmdir(struct objfs_store *s, uint64_t parent, const char *name)
{
	return remove_name(s, parent, name, 1);
}

/* Is @dir (a directory inode) @anc or below it?  Holds s->lock, which
 * keeps every directory's parent as it is; an inode's lock is never taken
 * inside a transaction. */
static int
is_within_locked(struct objfs_store *s, uint64_t dir, uint64_t anc, int *out)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *ip;
	struct objfs_attr a;
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
		ip = find_locked(s, dir);
		if (ip) {
			pthread_mutex_lock(&ip->lock);
			dir = ip->attr.parent;
			pthread_mutex_unlock(&ip->lock);
			continue;
		}
		rc = objfs_meta_begin(s->meta, 0, &t);
		if (rc < 0)
			return rc;
		rc = objfs_meta_inode_get(t, dir, &a);
		objfs_meta_abort(t);
		if (rc < 0)
			return rc;
		dir = a.parent;
	}
}

struct rename_side {
	struct objfs_inode *dp;		/* directory */
	struct objfs_inode *ip;		/* the entry's inode, or NULL */
	struct objfs_dirent d;
	struct objfs_attr pa, a;
};

/* Lock each distinct inode of the rename once.  The order does not
 * matter: several inode locks are only ever taken under s->lock. */
static void
lock_set(struct objfs_inode **v, int n, int lock)
{
	for (int i = 0; i < n; i++) {
		int dup = 0;

		for (int j = 0; j < i; j++)
			dup |= v[j] == v[i];
		if (!v[i] || dup)
			continue;
		if (lock)
			pthread_mutex_lock(&v[i]->lock);
		else
			pthread_mutex_unlock(&v[i]->lock);
	}
}

int
objfs_store_rename(struct objfs_store *s, uint64_t parent, const char *name,
		uint64_t newparent, const char *newname, unsigned flags)
{
	struct objfs_meta_txn *t = NULL;
	struct rename_side src = { 0 }, dst = { 0 };
	struct objfs_inode *set[4];
	size_t len = strlen(name), nlen = strlen(newname);
	int rc, within, src_dir, dst_dir;
	int64_t sec;
	uint32_t nsec;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	if (len > OBJFS_NAME_MAX || nlen > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (is_reserved(parent, name))
		return -EPERM;
	if (is_reserved(newparent, newname))
		return -EEXIST;
	pthread_mutex_lock(&s->lock);
	rc = get_dir_locked(s, parent, &src.dp);
	if (rc < 0)
		goto out_unlock;
	rc = get_dir_locked(s, newparent, &dst.dp);
	if (rc < 0)
		goto out_put;
	/* Read first; the write transaction comes after the inode locks. */
	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0) {
		t = NULL;
		goto out_put;
	}
	rc = objfs_meta_dirent_get(t, parent, name, len, &src.d);
	if (rc < 0)
		goto out_put;
	rc = get_locked(s, src.d.ino, &src.ip);
	if (rc < 0)
		goto out_put;
	rc = objfs_meta_dirent_get(t, newparent, newname, nlen, &dst.d);
	if (rc == 0) {
		rc = get_locked(s, dst.d.ino, &dst.ip);
		if (rc < 0)
			goto out_put;
	} else if (rc != -ENOENT) {
		goto out_put;
	}
	rc = 0;
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
	src_dir = S_ISDIR(src.ip->attr.mode);
	dst_dir = dst.ip && S_ISDIR(dst.ip->attr.mode);
	if (!(flags & RENAME_EXCHANGE) && dst.ip) {
		if (src_dir && !dst_dir) {
			rc = -ENOTDIR;
			goto out_put;
		}
		if (!src_dir && dst_dir) {
			rc = -EISDIR;
			goto out_put;
		}
		if (dst_dir && (rc = objfs_meta_dir_empty(t, dst.d.ino)) < 0)
			goto out_put;
	}
	objfs_meta_abort(t);
	t = NULL;
	/* Never move a directory into itself or below itself. */
	if (src_dir && parent != newparent) {
		rc = is_within_locked(s, newparent, src.d.ino, &within);
		if (rc < 0)
			goto out_put;
		if (within) {
			rc = -EINVAL;
			goto out_put;
		}
	}
	if (dst_dir && (flags & RENAME_EXCHANGE) && parent != newparent) {
		rc = is_within_locked(s, parent, dst.d.ino, &within);
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
	rc = begin_change(s, &t);
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
	    (rc = objfs_meta_super_put(t, OBJFS_SUPER_NEXT_COOKIE,
				s->next_cookie + 2)) < 0)
		goto out_locks;
	rc = objfs_meta_commit(t);
	t = NULL;
	if (rc == 0) {
		s->next_cookie += 2;
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
		put_locked(s, dst.ip);
	if (src.ip)
		put_locked(s, src.ip);
	if (dst.dp)
		put_locked(s, dst.dp);
	if (src.dp)
		put_locked(s, src.dp);
out_unlock:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int
objfs_store_readlink(struct objfs_store *s, uint64_t ino, char *buf,
		size_t size, size_t *len_out)
{
	struct objfs_meta_txn *t;
	struct objfs_attr a;
	int rc;

	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_inode_get(t, ino, &a);
	if (rc == 0 && !S_ISLNK(a.mode))
		rc = -EINVAL;
	if (rc == 0)
		rc = objfs_meta_symlink_get(t, ino, buf, size, len_out);
	objfs_meta_abort(t);
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

int
objfs_store_open_file(struct objfs_store *s, uint64_t ino, int flags,
		int bypass, enum objfs_cache *cache)
{
	struct objfs_inode *ip;
	int rc;

	*cache = OBJFS_CACHE_BYPASS;
	if (is_status(ino))
		return (flags & O_ACCMODE) == O_RDONLY ? 0 : -EACCES;
	pthread_mutex_lock(&s->lock);
	rc = get_locked(s, ino, &ip);
	if (rc == 0)
		*cache = open_locked(ip, flags, bypass);
	pthread_mutex_unlock(&s->lock);
	if (rc < 0)
		return rc;
	/* An open that raced with the unlink of its last name (the kernel
	 * looked the name up before): if the unlink saw no open and took
	 * the records out of the index, there is nothing left to open, and
	 * writing would put records of a deleted inode back.  The count
	 * went up first, so an unlink after this sees the open. */
	pthread_mutex_lock(&ip->lock);
	if (ip->gone)
		rc = -ENOENT;
	pthread_mutex_unlock(&ip->lock);
	if (rc == 0 && (flags & O_TRUNC) && S_ISREG(ip->attr.mode)) {
		pthread_mutex_lock(&ip->lock);
		if (ip->attr.size) {
			struct objfs_attr a = ip->attr;

			touch_mc(&a);
			rc = objfs_data_truncate(s, ip, 0, &a);
		}
		pthread_mutex_unlock(&ip->lock);
	} else if (rc == 0 && S_ISREG(ip->attr.mode) &&
		   (flags & O_ACCMODE) != O_WRONLY) {
		/* Opening a spilled object starts bringing it back. */
		pthread_mutex_lock(&ip->lock);
		const struct objfs_chunk *c0 = objfs_chunkmap_get(&ip->chunks, 0);
		int spilled = c0 && objfs_chunk_state(c0) == OBJFS_CHUNK_SPILLED;
		pthread_mutex_unlock(&ip->lock);
		if (spilled)
			objfs_spiller_restore_ahead(s, ino, 0);
	}
	pthread_mutex_lock(&s->lock);
	if (rc < 0)
		close_locked(ip, flags, bypass);
	put_locked(s, ip);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int
objfs_store_release(struct objfs_store *s, uint64_t ino, int flags,
		int bypass)
{
	struct objfs_inode *ip;
	int rc = 0, last;

	if (is_status(ino))
		return 0;
	pthread_mutex_lock(&s->lock);
	ip = find_locked(s, ino);
	if (!ip) {
		pthread_mutex_unlock(&s->lock);
		return -EBADF;
	}
	ip->refs++;
	close_locked(ip, flags, bypass);
	last = ip->nopen == 0;
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&ip->lock);
	if (ip->attr_dirty && ip->attr.nlink)
		rc = persist_attr(s, ip);
	if (last)
		objfs_data_ra_release(ip);	/* no reader left */
	pthread_mutex_unlock(&ip->lock);
	iput(s, ip);
	return rc;
}

static int
read_status(struct objfs_store *s, uint64_t off, void *buf, size_t len,
		size_t *n_out)
{
	char text[4096];
	size_t n;
	int rc = objfs_status_text(s, text, sizeof(text), &n);

	if (rc < 0)
		return rc;
	if (off >= n) {
		*n_out = 0;
		return 0;
	}
	*n_out = n - off < len ? n - off : len;
	memcpy(buf, text + off, *n_out);
	return 0;
}

int
objfs_store_read_reply(struct objfs_store *s, uint64_t ino, uint64_t off,
		size_t len, void (*reply)(void *arg, const struct objfs_iov *v),
		void *arg)
{
	struct objfs_inode *ip;
	struct objfs_iov v = { 0 };
	int rc;

	if (is_status(ino)) {
		v.iov = &(struct iovec){ .iov_base = malloc(len ? len : 1) };
		if (!v.iov->iov_base)
			return -ENOMEM;
		rc = read_status(s, off, v.iov->iov_base, len,
				&v.iov->iov_len);
		if (rc == 0) {
			v.n = 1;
			v.len = v.iov->iov_len;
			reply(arg, &v);
		}
		free(v.iov->iov_base);
		return rc;
	}
	rc = iget(s, ino, &ip);
	if (rc < 0)
		return rc;
	v.iov = malloc(objfs_data_iov_max(s, len) * sizeof(v.iov[0]));
	if (!v.iov) {
		iput(s, ip);
		return -ENOMEM;
	}
	pthread_mutex_lock(&ip->lock);
	rc = bytes_allowed(ip->attr.mode, -EINVAL);
	if (rc == 0)
		rc = objfs_data_read_iov(s, ip, off, len, &v);
	/* The pieces are the arena's and the read-ahead slots' own memory:
	 * only the inode lock keeps them from being evicted or reused. */
	if (rc == 0)
		reply(arg, &v);
	pthread_mutex_unlock(&ip->lock);
	objfs_iov_release(&v);
	free(v.iov);
	iput(s, ip);
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

#define XATTR_CAPS	"security.capability"

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
	uint32_t kill = ip->attr.mode & S_ISUID;
	struct objfs_meta_txn *t;
	int changed = 0;

	if ((ip->attr.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	if (kill && !has_fsetid(w->pid)) {
		ip->attr.mode &= ~kill;
		ip->attr_dirty = 1;
		changed = 1;
	}
	if (has_caps(s, ip) && objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL,
			&t) == 0) {
		touch_c(&ip->attr);
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
		(void)persist_attr(s, ip);
	return changed;
}

int
objfs_store_write(struct objfs_store *s, uint64_t ino, uint64_t off,
		const void *buf, size_t len, const struct objfs_writer *w,
		int *changed, size_t *n_out)
{
	const char *p = buf;
	struct objfs_inode *ip;
	size_t done = 0, n;
	int rc;

	*changed = 0;
	if (is_status(ino))
		return -EBADF;
	rc = iget(s, ino, &ip);
	if (rc < 0)
		return rc;
	for (;;) {
		n = 0;
		pthread_mutex_lock(&ip->lock);
		rc = bytes_allowed(ip->attr.mode, -EINVAL);
		if (rc == 0)
			rc = objfs_data_write(s, ip, off + done, p + done,
					len - done, &n);
		if (n) {
			touch_mc(&ip->attr);
			ip->attr_dirty = 1;
			if (done == 0 && remove_privs(s, ip, w))
				*changed = 1;
		}
		pthread_mutex_unlock(&ip->lock);
		done += n;
		if (rc != -ENOSPC || done == len)
			break;
		/* No free block: wait for the spiller, without the inode
		 * lock, so that it can evict this file's chunks too. */
		rc = objfs_spiller_wait_space(s);
		if (rc < 0)
			break;
	}
	iput(s, ip);
	if (done == 0 && rc < 0)
		return rc;
	*n_out = done;
	return 0;
}

int
objfs_store_copy_range(struct objfs_store *s, uint64_t ino_in,
		uint64_t off_in, uint64_t ino_out, uint64_t off_out, size_t len,
		const struct objfs_writer *w, int *changed, size_t *n_out)
{
	size_t piece = s->chunk_size, done = 0, got = 0, put = 0;
	int rc = 0, k;
	char *buf;

	*changed = 0;
	*n_out = 0;
	if (is_status(ino_out))
		return -EBADF;
	if (len < piece)
		piece = len ? len : 1;
	buf = malloc(piece);
	if (!buf)
		return -ENOMEM;
	/* One piece at a time through a buffer: the source's lock is never
	 * held with the destination's, so copying a file onto itself (the
	 * kernel has refused overlapping ranges) cannot deadlock. */
	while (done < len) {
		size_t n = len - done < piece ? len - done : piece;

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
	struct objfs_inode *ip;
	int rc;

	if (is_status(ino))
		return 0;
	rc = iget(s, ino, &ip);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&ip->lock);
	if (S_ISREG(ip->attr.mode) && ip->attr.nlink)
		rc = objfs_data_flush(s, ip);
	else if (ip->attr_dirty)
		rc = persist_attr(s, ip);
	pthread_mutex_unlock(&ip->lock);
	/* The bytes are on disk already: what makes them and every
	 * namespace change so far durable is one flush of the journal. */
	if (rc == 0)
		rc = objfs_meta_sync(s->meta);
	iput(s, ip);
	return rc;
}

int
objfs_store_fallocate(struct objfs_store *s, uint64_t ino, int mode,
		uint64_t off, uint64_t len)
{
	struct objfs_inode *ip;
	int rc = iget(s, ino, &ip);

	if (rc < 0)
		return rc;
	for (int tries = 0; ; tries++) {
		pthread_mutex_lock(&ip->lock);
		rc = bytes_allowed(ip->attr.mode, -ENODEV);
		if (rc == 0)
			rc = objfs_data_fallocate(s, ip, mode, off, len);
		if (rc == 0) {
			touch_mc(&ip->attr);
			ip->attr_dirty = 1;
		}
		pthread_mutex_unlock(&ip->lock);
		/* Hole punching needs the partial chunks at its ends in the
		 * arena: when it is full, wait for the spiller as a write
		 * does (nothing has changed).  Reserving never uses it. */
		if (rc != -ENOSPC || !(mode & (FALLOC_FL_PUNCH_HOLE |
				FALLOC_FL_ZERO_RANGE)) || tries == 100 ||
		    objfs_spiller_wait_space(s) < 0)
			break;
	}
	iput(s, ip);
	return rc;
}

int
objfs_store_lseek(struct objfs_store *s, uint64_t ino, uint64_t off,
		int whence, uint64_t *out)
{
	struct objfs_inode *ip;
	int rc = iget(s, ino, &ip);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&ip->lock);
	rc = objfs_data_seek(s, ip, off, whence, out);
	pthread_mutex_unlock(&ip->lock);
	iput(s, ip);
	return rc;
}

/* ---- directories ------------------------------------------------------ */

#define READDIR_BATCH	128

struct dir_batch {
	struct objfs_dirent *v;
	int n;
};

static int
batch_add(void *arg, const struct objfs_dirent *d)
{
	struct dir_batch *b = arg;

	b->v[b->n++] = *d;
	return b->n == READDIR_BATCH;
}

int
objfs_store_readdir(struct objfs_store *s, uint64_t ino, uint64_t off,
		int plus,
		int (*cb)(void *arg, const char *name,
			const struct objfs_attr *a, uint64_t next_off),
		void *arg)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *dp, *ip;
	struct dir_batch b;
	struct objfs_attr a;
	uint64_t parent;
	int rc, full = 0;

	rc = iget(s, ino, &dp);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&dp->lock);
	a = dp->attr;
	pthread_mutex_unlock(&dp->lock);
	if (!S_ISDIR(a.mode)) {
		iput(s, dp);
		return -ENOTDIR;
	}
	parent = a.parent ? a.parent : ino;
	if (off == 0) {
		if (cb(arg, ".", &a, 1))
			goto out;
		off = 1;
	}
	if (off == 1) {
		memset(&a, 0, sizeof(a));
		a.mode = S_IFDIR;
		a.ino = parent;
		if (cb(arg, "..", &a, 2))
			goto out;
		off = 2;
	}
	b.v = malloc(READDIR_BATCH * sizeof(*b.v));
	if (!b.v) {
		rc = -ENOMEM;
		goto out;
	}
	while (!full) {
		b.n = 0;
		rc = objfs_meta_begin(s->meta, 0, &t);
		if (rc < 0)
			break;
		rc = objfs_meta_dir_list(t, ino, off, batch_add, &b);
		objfs_meta_abort(t);
		if (rc < 0 || b.n == 0)
			break;
		for (int i = 0; i < b.n && !full; i++) {
			memset(&a, 0, sizeof(a));
			a.ino = b.v[i].ino;
			a.mode = b.v[i].type;
			if (plus) {
				pthread_mutex_lock(&s->lock);
				if (get_locked(s, b.v[i].ino, &ip) < 0) {
					/* removed meanwhile: skip it */
					pthread_mutex_unlock(&s->lock);
					off = b.v[i].cookie;
					continue;
				}
				ip->nlookup++;
				pthread_mutex_lock(&ip->lock);
				a = ip->attr;
				pthread_mutex_unlock(&ip->lock);
				put_locked(s, ip);
				pthread_mutex_unlock(&s->lock);
			}
			full = cb(arg, b.v[i].name, &a, b.v[i].cookie);
			if (full && plus)
				objfs_store_forget(s, b.v[i].ino, 1);
			if (!full)
				off = b.v[i].cookie;
		}
		if (b.n < READDIR_BATCH)
			break;
	}
	free(b.v);
out:
	iput(s, dp);
	return rc;
}

/* ---- extended attributes --------------------------------------------- */

static int
is_objfs_xattr(const char *name)
{
	return strncmp(name, OBJFS_XATTR_PREFIX,
			sizeof(OBJFS_XATTR_PREFIX) - 1) == 0;
}

int
objfs_store_getxattr(struct objfs_store *s, uint64_t ino, const char *name,
		void *buf, size_t size, size_t *len_out)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *ip;
	int rc;

	if (is_status(ino))
		return -ENODATA;
	if (is_objfs_xattr(name)) {
		rc = iget(s, ino, &ip);
		if (rc < 0)
			return rc;
		pthread_mutex_lock(&ip->lock);
		rc = S_ISREG(ip->attr.mode) ?
			objfs_status_xattr(s, ip, name, buf, size, len_out) :
			-ENODATA;
		pthread_mutex_unlock(&ip->lock);
		iput(s, ip);
		return rc;
	}
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
	struct objfs_meta_txn *t;
	int rc;

	if (is_status(ino)) {
		*len_out = 0;
		return 0;
	}
	rc = objfs_meta_begin(s->meta, 0, &t);

	if (rc < 0)
		return rc;
	rc = objfs_meta_xattr_list(t, ino, buf, size, len_out);
	objfs_meta_abort(t);
	return rc;
}

static int
xattr_change(struct objfs_store *s, uint64_t ino, const char *name,
		const void *val, size_t len, int flags, int remove)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *ip;
	struct objfs_attr a;
	int rc;

	/* The user.objfs.* names are figures objfs computes: read-only. */
	if (is_status(ino) || is_objfs_xattr(name))
		return -EPERM;
	rc = iget(s, ino, &ip);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&ip->lock);
	if (ip->gone) {
		rc = -ENOENT;	/* its records left the index */
		goto out;
	}
	a = ip->attr;
	touch_c(&a);
	rc = begin_change(s, &t);
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
	pthread_mutex_unlock(&ip->lock);
	iput(s, ip);
	return rc;
}

int
objfs_store_setxattr(struct objfs_store *s, uint64_t ino, const char *name,
		const void *val, size_t len, int flags)
{
	/* POSIX ACLs are not supported: storing them as plain bytes would
	 * let them disagree with the mode bits the kernel enforces.  Saying
	 * so makes cp -a and rsync -A fall back to the mode bits. */
	if (strncmp(name, "system.posix_acl_", 17) == 0)
		return -EOPNOTSUPP;
	return xattr_change(s, ino, name, val, len, flags, 0);
}

int
objfs_store_removexattr(struct objfs_store *s, uint64_t ino, const char *name)
{
	return xattr_change(s, ino, name, NULL, 0, 0, 1);
}

/* ---- whole-store figures ---------------------------------------------- */

int
objfs_store_statfs(struct objfs_store *s, struct objfs_statfs *st)
{
	struct objfs_arena_stats as;
	uint64_t total, avail;
	int rc;

	/* Capacity is the backing filesystem's: everything ends up there.
	 * Bytes still only in the arena will need room there too. */
	rc = objfs_backing_free(s->backing, &total, &avail);
	if (rc < 0)
		return rc;
	objfs_arena_get_stats(s->arena, &as);
	avail = avail > as.used ? avail - as.used : 0;
	st->bsize = 4096;
	st->blocks = total / st->bsize;
	st->bfree = avail / st->bsize;
	st->bavail = st->bfree;
	pthread_mutex_lock(&s->lock);
	st->files = MAX_INODES;
	st->ffree = MAX_INODES - s->ninodes;
	pthread_mutex_unlock(&s->lock);
	st->namemax = OBJFS_NAME_MAX;
	return 0;
}

void
objfs_store_get_stats(struct objfs_store *s, struct objfs_store_stats *st)
{
	struct objfs_arena_stats as;
	uint64_t r, d;

	memset(st, 0, sizeof(*st));
	objfs_arena_get_stats(s->arena, &as);
	st->arena_capacity = as.capacity;
	st->arena_used = as.used;
	st->chunk_size = s->chunk_size;
	pthread_mutex_lock(&s->lock);
	for (size_t b = 0; b < s->nbuckets; b++) {
		for (struct objfs_inode *ip = s->table[b]; ip; ip = ip->hnext) {
			pthread_mutex_lock(&ip->lock);
			objfs_chunkmap_usage(&ip->chunks, &r, &d);
			pthread_mutex_unlock(&ip->lock);
			st->resident_bytes += r;
			st->ondisk_bytes += d;
		}
	}
	st->inodes_cached = s->count;
	pthread_mutex_unlock(&s->lock);
	st->written_out_chunks = s->written_out_chunks;
	st->written_out_bytes = s->written_out_bytes;
	st->restored_chunks = s->restored_chunks;
	st->restored_bytes = s->restored_bytes;
	st->direct_reads = s->direct_reads;
	st->csum_failures = s->csum_failures;
	st->evictions = s->evictions;
	st->dropped_bytes = s->dropped_bytes;
	st->write_waits = s->write_waits;
	st->spill_high = s->high_bytes;
	st->spill_low = s->low_bytes;
}
