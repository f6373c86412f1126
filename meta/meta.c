/* SPDX-License-Identifier: MIT */
/*
 * meta.c - the LMDB index (see meta.h for the contract and meta_keys.h for
 * the key encodings).
 *
 * One environment per process, opened with MDB_NOTLS (FUSE worker threads
 * come and go) and MDB_NOSYNC (a commit is in the page cache at once, so a
 * killed daemon loses nothing committed; objfs_meta_sync() is the barrier
 * for machine crashes).  A full map (16 GiB at most) is -ENOSPC.
 *
 * MDB_WRITEMAP: a commit then writes pages in place through the map
 * instead of with pwrite, which made namespace changes 20-35 % faster.
 * The data file becomes a sparse file of the map's size, and a page that
 * lands in a hole needs a disk block when the kernel writes it: on a full
 * disk that is SIGBUS, not an error.  So the file is kept allocated
 * (fallocate) up to 32 MiB beyond its last page (less when the disk has
 * less at open), checked as each write transaction begins; when that
 * fails, the transaction fails with ENOSPC before it touches anything.
 * Essential transactions (deletes, write-out) need only a quarter of it,
 * so a full disk still lets files be deleted.  Where fallocate is not
 * supported, or not even 2 MiB fit at open, the index is opened without
 * MDB_WRITEMAP.
 *
 * The writable map starts at 256 MiB (or twice the data) and doubles
 * whenever the data comes within four reserves of its end.  A map as large
 * as the limit from the start costs nothing in production, but valgrind
 * slows down in proportion to a writable mapping (the index's unit test
 * took 95 s with 16 GiB).  LMDB remaps only with no transaction active in
 * the process, so every transaction holds m->resize shared and growing
 * takes it exclusively, before a write transaction begins; a thread that
 * already holds a transaction (they nest: a read inside a write) leaves
 * the growing to the next one, the margin is there for that.  Growing
 * goes before new readers (else overlapping readers could starve it),
 * and waits 20 ms at most, then leaves it to a later write: so a nested
 * reader queued behind it, or a reader waiting for an inode lock the
 * growing thread holds (a rename looks at parents inside its read
 * transaction), is held up 20 ms at worst, never deadlocked.
 *
 * Locking: LMDB's own, and m->resize as above; @allocated is only touched
 * inside a write transaction, which LMDB serialises; @mapsize changes
 * only under m->resize held exclusively.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/xattr.h>

#include "../src/csum.h"
#include "../src/log.h"
#include "meta.h"
#include "meta_keys.h"

#define MAP_SIZE	(16ull << 30)	/* the index's limit */
#define MAP_START	(256ull << 20)	/* a writable map starts here */
#define RESERVE		(32ull << 20)	/* allocated beyond the last page */
#define MIN_RESERVE	(2ull << 20)	/* below this, no writable map */

enum { DB_SUPER, DB_INODE, DB_DIRENT, DB_DIRCOOKIE, DB_XATTR, DB_SYMLINK,
	DB_CHUNK, DB_ORPHAN };

static const char *const db_names[OBJFS_META_NDBS] = {
	OBJFS_DB_SUPER, OBJFS_DB_INODE, OBJFS_DB_DIRENT, OBJFS_DB_DIRCOOKIE,
	OBJFS_DB_XATTR, OBJFS_DB_SYMLINK, OBJFS_DB_CHUNK, OBJFS_DB_ORPHAN,
};

struct objfs_meta {
	MDB_env *env;
	MDB_dbi dbi[OBJFS_META_NDBS];
	int writemap;
	int fd;				/* the data file, with writemap */
	uint64_t allocated;		/* bytes of it fallocated */
	uint64_t reserve;		/* kept allocated beyond the last page
					 * (a quarter of it for essential
					 * writes) */
	uint64_t psize;			/* LMDB's page size */
	_Atomic uint64_t mapsize;	/* the map's size now */
	_Atomic uint64_t grow_retry_ns;	/* no try to grow before this */
	pthread_rwlock_t resize;	/* shared by every transaction */
};

/* Transactions this thread holds (they may nest). */
static _Thread_local int txn_depth;

struct objfs_meta_txn {
	struct objfs_meta *m;
	MDB_txn *txn;
};

struct dirent_val {
	uint64_t ino;
	uint64_t cookie;
	uint32_t type;
	uint32_t pad;
};

static int
map_err(int rc, const char *what)
{
	switch (rc) {
	case 0:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_KEYEXIST:
		return -EEXIST;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
		return -ENOSPC;
	case ENOMEM:
		return -ENOMEM;
	case ENOSPC:
		return -ENOSPC;
	default:
		objfs_log(OBJFS_LOG_ERR, "index: %s: %s", what, mdb_strerror(rc));
		return -EIO;
	}
}

static void
put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (unsigned char)v;
		v >>= 8;
	}
}

static uint64_t
get_be64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

/* key = be64(id) . tail */
static size_t
make_key(unsigned char *buf, uint64_t id, const void *tail, size_t len)
{
	put_be64(buf, id);
	if (len)
		memcpy(buf + 8, tail, len);
	return 8 + len;
}

/* Bytes of the data file in use (up to its last committed page). */
static uint64_t
used_bytes(struct objfs_meta *m)
{
	MDB_envinfo info;

	if (mdb_env_info(m->env, &info))
		return 0;
	return (uint64_t)(info.me_last_pgno + 1) * m->psize;
}

/* Extend the data file's disk blocks to @to bytes (writemap only). */
static int
allocate_to(struct objfs_meta *m, uint64_t to)
{
	if (to > m->mapsize)
		to = m->mapsize;	/* LMDB truncates the file to the map */
	if (to <= m->allocated)
		return 0;
	if (fallocate(m->fd, 0, (off_t)m->allocated,
			(off_t)(to - m->allocated)) < 0)
		return -errno;
	m->allocated = to;
	return 0;
}

/*
 * Make sure the data file has disk blocks well beyond its last page
 * (writemap only): m->reserve for a plain write, a quarter of it for an
 * essential one.  Grows in steps of m->reserve.  0 or a negative errno.
 */
static int
reserve(struct objfs_meta *m, int essential)
{
	uint64_t last;

	if (!m->writemap)
		return 0;
	last = used_bytes(m);
	if (last + (essential ? m->reserve / 4 : m->reserve) <= m->allocated)
		return 0;
	if (allocate_to(m, last + 2 * m->reserve) == 0)
		return 0;
	return allocate_to(m, last + (essential ? m->reserve / 4 :
				m->reserve));
}

/* The map size the data wants: four reserves beyond it, by doublings. */
static uint64_t
map_wanted(struct objfs_meta *m, uint64_t used)
{
	uint64_t want = m->mapsize;

	while (used + 4 * m->reserve > want && want < MAP_SIZE)
		want *= 2;
	return want < MAP_SIZE ? want : MAP_SIZE;
}

static uint64_t
monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Grow the writable map when the data nears its end (see the top). */
static void
grow_map(struct objfs_meta *m)
{
	struct timespec until;
	uint64_t want;
	int rc;

	if (!m->writemap || txn_depth > 0 ||
	    map_wanted(m, used_bytes(m)) <= m->mapsize)
		return;
	/* The caller may hold inode or store locks that a reader holding a
	 * transaction waits for: wait for the readers only briefly, and
	 * then leave it to a later write (at most one try per 100 ms). */
	if (monotonic_ns() < m->grow_retry_ns)
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 20000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	if (pthread_rwlock_timedwrlock(&m->resize, &until) != 0) {
		m->grow_retry_ns = monotonic_ns() + 100000000u;
		return;
	}
	want = map_wanted(m, used_bytes(m));
	if (want > m->mapsize) {
		rc = mdb_env_set_mapsize(m->env, want);
		if (rc == 0)
			m->mapsize = want;
		else
			objfs_log(OBJFS_LOG_WARNING, "index: cannot grow the "
				"map to %llu MiB: %s", (unsigned long long)
				(want >> 20), mdb_strerror(rc));
	}
	pthread_rwlock_unlock(&m->resize);
}

static int
open_env(struct objfs_meta *m, const char *dir, int writemap)
{
	MDB_txn *txn;
	uint64_t want;
	int rc, i;

	m->writemap = writemap;
	m->allocated = 0;
	m->mapsize = writemap ? MAP_START : MAP_SIZE;
	rc = mdb_env_create(&m->env);
	if (rc)
		return map_err(rc, "create");
	rc = mdb_env_set_maxdbs(m->env, OBJFS_META_NDBS);
	if (rc == 0)
		rc = mdb_env_set_mapsize(m->env, m->mapsize);
	if (rc == 0)
		rc = mdb_env_open(m->env, dir, MDB_NOTLS | MDB_NOSYNC |
				(writemap ? MDB_WRITEMAP : 0), 0600);
	if (rc) {
		if (rc == EACCES || rc == ENOENT || rc == EROFS)
			rc = -rc;
		else
			rc = map_err(rc, "open");
		goto err_env;
	}
	{
		MDB_stat st;

		rc = mdb_env_stat(m->env, &st);
		if (rc) {
			rc = map_err(rc, "open");
			goto err_env;
		}
		m->psize = st.ms_psize;
	}
	if (writemap) {
		rc = mdb_env_get_fd(m->env, &m->fd);
		if (rc) {
			rc = map_err(rc, "open");
			goto err_env;
		}
		/* Twice the data at least (LMDB never maps less than the
		 * data, and the file is as large as the last map). */
		m->reserve = RESERVE;
		want = map_wanted(m, 2 * used_bytes(m));
		if (want > m->mapsize) {
			rc = mdb_env_set_mapsize(m->env, want);
			if (rc) {
				rc = map_err(rc, "map size");
				goto err_env;
			}
			m->mapsize = want;
		}
		/* As much as the disk has, down to MIN_RESERVE. */
		for (m->reserve = RESERVE; m->reserve >= MIN_RESERVE;
		     m->reserve /= 2)
			if ((rc = reserve(m, 0)) != -ENOSPC)
				break;
		if (rc < 0 || m->reserve < MIN_RESERVE) {
			rc = rc < 0 ? rc : -ENOSPC;
			goto err_env;
		}
	}
	rc = mdb_txn_begin(m->env, NULL, 0, &txn);
	if (rc) {
		rc = map_err(rc, "open");
		goto err_env;
	}
	for (i = 0; i < OBJFS_META_NDBS; i++) {
		rc = mdb_dbi_open(txn, db_names[i], MDB_CREATE, &m->dbi[i]);
		if (rc) {
			mdb_txn_abort(txn);
			rc = map_err(rc, "open");
			goto err_env;
		}
	}
	rc = mdb_txn_commit(txn);
	if (rc) {
		rc = map_err(rc, "open");
		goto err_env;
	}
	return 0;

err_env:
	mdb_env_close(m->env);
	m->env = NULL;
	return rc;
}

int
objfs_meta_open(const char *dir, struct objfs_meta **out)
{
	struct objfs_meta *m;
	int rc;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	{
		pthread_rwlockattr_t ra;

		/* Writers first, or readers that keep overlapping would
		 * starve the growing; it waits 20 ms at most (grow_map), so
		 * a nested reader queued behind it waits no longer. */
		pthread_rwlockattr_init(&ra);
		pthread_rwlockattr_setkind_np(&ra,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&m->resize, &ra);
		pthread_rwlockattr_destroy(&ra);
	}
	rc = open_env(m, dir, 1);
	if (rc == -EOPNOTSUPP || rc == -ENOSPC || rc == -ENOSYS) {
		objfs_log(OBJFS_LOG_INFO, "index: cannot reserve disk blocks "
			"for a writable map (%s); using plain writes",
			strerror(-rc));
		rc = open_env(m, dir, 0);
	}
	if (rc < 0) {
		pthread_rwlock_destroy(&m->resize);
		free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void
objfs_meta_close(struct objfs_meta *m)
{
	if (!m)
		return;
	mdb_env_sync(m->env, 1);
	mdb_env_close(m->env);
	pthread_rwlock_destroy(&m->resize);
	free(m);
}

uint64_t
objfs_meta_map_size(struct objfs_meta *m)
{
	return m->mapsize;
}

int
objfs_meta_sync(struct objfs_meta *m)
{
	return map_err(mdb_env_sync(m->env, 1), "sync");
}

int
objfs_meta_size(struct objfs_meta *m, uint64_t *bytes)
{
	*bytes = used_bytes(m);
	return 0;
}

int
objfs_meta_inode_count(struct objfs_meta_txn *t, uint64_t *n)
{
	MDB_stat st;
	int rc = mdb_stat(t->txn, t->m->dbi[DB_INODE], &st);

	if (rc)
		return map_err(rc, "inode count");
	*n = st.ms_entries;
	return 0;
}

int
objfs_meta_begin(struct objfs_meta *m, int write, struct objfs_meta_txn **out)
{
	struct objfs_meta_txn *t;
	int rc;

	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->m = m;
	if (write)
		grow_map(m);
	pthread_rwlock_rdlock(&m->resize);
	rc = mdb_txn_begin(m->env, NULL, write ? 0 : MDB_RDONLY, &t->txn);
	if (rc) {
		pthread_rwlock_unlock(&m->resize);
		free(t);
		return map_err(rc, "begin");
	}
	txn_depth++;
	/* Holding LMDB's writer lock: room for what this one may add. */
	if (write && (rc = reserve(m, write == OBJFS_META_ESSENTIAL)) < 0) {
		mdb_txn_abort(t->txn);
		txn_depth--;
		pthread_rwlock_unlock(&m->resize);
		free(t);
		objfs_log(OBJFS_LOG_ERR, "index: cannot reserve disk space: %s",
			strerror(-rc));
		return rc == -EOPNOTSUPP || rc == -EFBIG ? -ENOSPC : rc;
	}
	*out = t;
	return 0;
}

int
objfs_meta_commit(struct objfs_meta_txn *t)
{
	int rc = mdb_txn_commit(t->txn);

	txn_depth--;
	pthread_rwlock_unlock(&t->m->resize);
	free(t);
	return map_err(rc, "commit");
}

void
objfs_meta_abort(struct objfs_meta_txn *t)
{
	if (!t)
		return;
	mdb_txn_abort(t->txn);
	txn_depth--;
	pthread_rwlock_unlock(&t->m->resize);
	free(t);
}

static int
get(struct objfs_meta_txn *t, int db, const void *k, size_t klen, MDB_val *v)
{
	MDB_val key = { klen, (void *)k };

	return map_err(mdb_get(t->txn, t->m->dbi[db], &key, v), "get");
}

static int
put(struct objfs_meta_txn *t, int db, const void *k, size_t klen,
		const void *v, size_t vlen, unsigned flags)
{
	MDB_val key = { klen, (void *)k };
	MDB_val val = { vlen, (void *)v };

	return map_err(mdb_put(t->txn, t->m->dbi[db], &key, &val, flags), "put");
}

static int
del(struct objfs_meta_txn *t, int db, const void *k, size_t klen)
{
	MDB_val key = { klen, (void *)k };

	return map_err(mdb_del(t->txn, t->m->dbi[db], &key, NULL), "del");
}

/*
 * Walk every key that starts with be64(@id), from be64(@id).@from, calling
 * @cb(arg, key, val) until it returns non-zero (1 = stop, <0 = error).
 * With @delete, each visited key is deleted instead.
 */
static int
range(struct objfs_meta_txn *t, int db, uint64_t id, const void *from,
		size_t fromlen, int delete,
		int (*cb)(void *arg, MDB_val *k, MDB_val *v), void *arg)
{
	unsigned char kb[8 + 512];
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	k.mv_size = make_key(kb, id, from, fromlen);
	k.mv_data = kb;
	rc = mdb_cursor_open(t->txn, t->m->dbi[db], &cur);
	if (rc)
		return map_err(rc, "cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0) {
		if (k.mv_size < 8 || get_be64(k.mv_data) != id)
			break;
		if (delete) {
			rc = mdb_cursor_del(cur, 0);
			if (rc)
				break;
		} else {
			rc = cb(arg, &k, &v);
			if (rc) {
				mdb_cursor_close(cur);
				return rc < 0 ? rc : 0;
			}
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		rc = 0;
	return map_err(rc, "range");
}

int
objfs_meta_super_get(struct objfs_meta_txn *t, const char *key, uint64_t *val)
{
	MDB_val v;
	int rc = get(t, DB_SUPER, key, strlen(key), &v);

	if (rc < 0)
		return rc;
	if (v.mv_size != sizeof(*val))
		return map_err(MDB_CORRUPTED, "super record");
	memcpy(val, v.mv_data, sizeof(*val));
	return 0;
}

int
objfs_meta_super_put(struct objfs_meta_txn *t, const char *key, uint64_t val)
{
	return put(t, DB_SUPER, key, strlen(key), &val, sizeof(val), 0);
}

int
objfs_meta_inode_get(struct objfs_meta_txn *t, uint64_t ino,
		struct objfs_attr *a)
{
	unsigned char kb[8];
	MDB_val v;
	int rc;

	put_be64(kb, ino);
	rc = get(t, DB_INODE, kb, 8, &v);
	if (rc < 0)
		return rc;
	if (v.mv_size != sizeof(*a))
		return map_err(MDB_CORRUPTED, "inode record");
	memcpy(a, v.mv_data, sizeof(*a));
	return 0;
}

int
objfs_meta_inode_put(struct objfs_meta_txn *t, const struct objfs_attr *a)
{
	unsigned char kb[8];

	put_be64(kb, a->ino);
	return put(t, DB_INODE, kb, 8, a, sizeof(*a), 0);
}

int
objfs_meta_inode_del(struct objfs_meta_txn *t, uint64_t ino)
{
	unsigned char kb[8];
	int rc;

	put_be64(kb, ino);
	rc = del(t, DB_INODE, kb, 8);
	if (rc < 0)
		return rc;
	rc = del(t, DB_SYMLINK, kb, 8);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	rc = range(t, DB_XATTR, ino, NULL, 0, 1, NULL, NULL);
	if (rc < 0)
		return rc;
	return range(t, DB_CHUNK, ino, NULL, 0, 1, NULL, NULL);
}

int
objfs_meta_dirent_get(struct objfs_meta_txn *t, uint64_t parent,
		const char *name, size_t len, struct objfs_dirent *out)
{
	unsigned char kb[8 + OBJFS_NAME_MAX];
	struct dirent_val dv;
	MDB_val v;
	int rc;

	if (len > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	rc = get(t, DB_DIRENT, kb, make_key(kb, parent, name, len), &v);
	if (rc < 0)
		return rc;
	if (v.mv_size != sizeof(dv))
		return map_err(MDB_CORRUPTED, "dirent record");
	memcpy(&dv, v.mv_data, sizeof(dv));
	out->ino = dv.ino;
	out->cookie = dv.cookie;
	out->type = dv.type;
	out->namelen = (uint32_t)len;
	memcpy(out->name, name, len);
	out->name[len] = '\0';
	return 0;
}

int
objfs_meta_dirent_add(struct objfs_meta_txn *t, uint64_t parent,
		const char *name, size_t len, uint64_t ino, uint32_t type,
		uint64_t cookie)
{
	unsigned char kb[8 + OBJFS_NAME_MAX], cb[16];
	struct dirent_val dv = { ino, cookie, type, 0 };
	int rc;

	if (len > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	rc = put(t, DB_DIRENT, kb, make_key(kb, parent, name, len), &dv,
			sizeof(dv), MDB_NOOVERWRITE);
	if (rc < 0)
		return rc;
	put_be64(cb, parent);
	put_be64(cb + 8, cookie);
	return put(t, DB_DIRCOOKIE, cb, 16, name, len, MDB_NOOVERWRITE);
}

int
objfs_meta_dirent_del(struct objfs_meta_txn *t, uint64_t parent,
		const char *name, size_t len)
{
	unsigned char kb[8 + OBJFS_NAME_MAX], cb[16];
	struct objfs_dirent d;
	int rc;

	rc = objfs_meta_dirent_get(t, parent, name, len, &d);
	if (rc < 0)
		return rc;
	rc = del(t, DB_DIRENT, kb, make_key(kb, parent, name, len));
	if (rc < 0)
		return rc;
	put_be64(cb, parent);
	put_be64(cb + 8, d.cookie);
	return del(t, DB_DIRCOOKIE, cb, 16);
}

static int
stop_at_first(void *arg, MDB_val *k, MDB_val *v)
{
	*(int *)arg = 1;
	return 1;
}

int
objfs_meta_dir_empty(struct objfs_meta_txn *t, uint64_t parent)
{
	int found = 0;
	int rc = range(t, DB_DIRCOOKIE, parent, NULL, 0, 0, stop_at_first,
			&found);

	if (rc < 0)
		return rc;
	return found ? -ENOTEMPTY : 0;
}

struct dir_list_ctx {
	struct objfs_meta_txn *t;
	uint64_t parent;
	int (*cb)(void *arg, const struct objfs_dirent *d);
	void *arg;
};

static int
dir_list_one(void *arg, MDB_val *k, MDB_val *v)
{
	struct dir_list_ctx *c = arg;
	struct objfs_dirent d;
	int rc;

	if (k->mv_size != 16 || v->mv_size == 0 || v->mv_size > OBJFS_NAME_MAX)
		return map_err(MDB_CORRUPTED, "dircookie record");
	rc = objfs_meta_dirent_get(c->t, c->parent, v->mv_data, v->mv_size, &d);
	if (rc < 0)
		return rc == -ENOENT ? map_err(MDB_CORRUPTED, "dangling cookie")
			: rc;
	return c->cb(c->arg, &d);
}

int
objfs_meta_dir_list(struct objfs_meta_txn *t, uint64_t parent, uint64_t after,
		int (*cb)(void *arg, const struct objfs_dirent *d), void *arg)
{
	struct dir_list_ctx c = { t, parent, cb, arg };
	unsigned char from[8];

	if (after == UINT64_MAX)
		return 0;
	put_be64(from, after + 1);
	return range(t, DB_DIRCOOKIE, parent, from, 8, 0, dir_list_one, &c);
}

static size_t
xattr_key(unsigned char *kb, uint64_t ino, const char *name)
{
	return make_key(kb, ino, name, strlen(name));
}

int
objfs_meta_xattr_get(struct objfs_meta_txn *t, uint64_t ino, const char *name,
		void *buf, size_t size, size_t *len_out)
{
	unsigned char kb[8 + OBJFS_XATTR_NAME_MAX];
	MDB_val v;
	int rc;

	if (strlen(name) > OBJFS_XATTR_NAME_MAX)
		return -ERANGE;
	rc = get(t, DB_XATTR, kb, xattr_key(kb, ino, name), &v);
	if (rc == -ENOENT)
		return -ENODATA;
	if (rc < 0)
		return rc;
	if (size) {
		if (size < v.mv_size)
			return -ERANGE;
		memcpy(buf, v.mv_data, v.mv_size);
	}
	*len_out = v.mv_size;
	return 0;
}

int
objfs_meta_xattr_set(struct objfs_meta_txn *t, uint64_t ino, const char *name,
		const void *val, size_t len, int flags)
{
	unsigned char kb[8 + OBJFS_XATTR_NAME_MAX];
	size_t klen;
	MDB_val v;
	int rc;

	if (strlen(name) > OBJFS_XATTR_NAME_MAX || name[0] == '\0')
		return -ERANGE;
	if (len > OBJFS_XATTR_SIZE_MAX)
		return -E2BIG;
	klen = xattr_key(kb, ino, name);
	rc = get(t, DB_XATTR, kb, klen, &v);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (rc == 0 && (flags & XATTR_CREATE))
		return -EEXIST;
	if (rc == -ENOENT && (flags & XATTR_REPLACE))
		return -ENODATA;
	/* LMDB rejects empty values only for MDB_DUPSORT; a zero-length
	 * xattr is legal and stored as such. */
	return put(t, DB_XATTR, kb, klen, len ? val : "", len, 0);
}

int
objfs_meta_xattr_del(struct objfs_meta_txn *t, uint64_t ino, const char *name)
{
	unsigned char kb[8 + OBJFS_XATTR_NAME_MAX];
	int rc;

	if (strlen(name) > OBJFS_XATTR_NAME_MAX)
		return -ERANGE;
	rc = del(t, DB_XATTR, kb, xattr_key(kb, ino, name));
	return rc == -ENOENT ? -ENODATA : rc;
}

struct xlist_ctx {
	char *buf;
	size_t size;
	size_t len;
};

static int
xattr_list_one(void *arg, MDB_val *k, MDB_val *v)
{
	struct xlist_ctx *c = arg;
	size_t n = k->mv_size - 8;

	if (c->size) {
		if (c->len + n + 1 > c->size)
			return -ERANGE;
		memcpy(c->buf + c->len, (char *)k->mv_data + 8, n);
		c->buf[c->len + n] = '\0';
	}
	c->len += n + 1;
	return 0;
}

int
objfs_meta_xattr_list(struct objfs_meta_txn *t, uint64_t ino, char *buf,
		size_t size, size_t *len_out)
{
	struct xlist_ctx c = { buf, size, 0 };
	int rc = range(t, DB_XATTR, ino, NULL, 0, 0, xattr_list_one, &c);

	if (rc < 0)
		return rc;
	*len_out = c.len;
	return 0;
}

int
objfs_meta_symlink_put(struct objfs_meta_txn *t, uint64_t ino,
		const char *target, size_t len)
{
	unsigned char kb[8];

	put_be64(kb, ino);
	return put(t, DB_SYMLINK, kb, 8, target, len, 0);
}

int
objfs_meta_symlink_get(struct objfs_meta_txn *t, uint64_t ino, char *buf,
		size_t size, size_t *len_out)
{
	unsigned char kb[8];
	MDB_val v;
	int rc;

	put_be64(kb, ino);
	rc = get(t, DB_SYMLINK, kb, 8, &v);
	if (rc < 0)
		return rc;
	memcpy(buf, v.mv_data, v.mv_size < size ? v.mv_size : size);
	*len_out = v.mv_size;
	return 0;
}

int
objfs_meta_chunk_put(struct objfs_meta_txn *t, uint64_t ino, uint64_t idx,
		uint64_t csum, uint32_t len)
{
	unsigned char kb[16], vb[12];

	put_be64(kb, ino);
	put_be64(kb + 8, idx);
	objfs_csum_to_canonical(csum, vb);
	memcpy(vb + 8, &len, 4);
	return put(t, DB_CHUNK, kb, 16, vb, 12, 0);
}

int
objfs_meta_chunk_del(struct objfs_meta_txn *t, uint64_t ino, uint64_t idx)
{
	unsigned char kb[16];
	int rc;

	put_be64(kb, ino);
	put_be64(kb + 8, idx);
	rc = del(t, DB_CHUNK, kb, 16);
	return rc == -ENOENT ? 0 : rc;
}

int
objfs_meta_chunk_del_from(struct objfs_meta_txn *t, uint64_t ino,
		uint64_t first)
{
	unsigned char from[8];

	put_be64(from, first);
	return range(t, DB_CHUNK, ino, from, 8, 1, NULL, NULL);
}

struct chunk_list_ctx {
	int (*cb)(void *arg, uint64_t idx, uint64_t csum, uint32_t len);
	void *arg;
};

static int
chunk_list_one(void *arg, MDB_val *k, MDB_val *v)
{
	struct chunk_list_ctx *c = arg;
	uint32_t len;

	if (k->mv_size != 16 || v->mv_size != 12)
		return map_err(MDB_CORRUPTED, "chunk record");
	memcpy(&len, (char *)v->mv_data + 8, 4);
	return c->cb(c->arg, get_be64((unsigned char *)k->mv_data + 8),
			objfs_csum_from_canonical(v->mv_data), len);
}

int
objfs_meta_chunk_list(struct objfs_meta_txn *t, uint64_t ino,
		int (*cb)(void *arg, uint64_t idx, uint64_t csum, uint32_t len),
		void *arg)
{
	struct chunk_list_ctx c = { cb, arg };

	return range(t, DB_CHUNK, ino, NULL, 0, 0, chunk_list_one, &c);
}

int
objfs_meta_chunk_total(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t idx, uint64_t csum, uint32_t len),
		void *arg)
{
	struct chunk_list_ctx c = { cb, arg };
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	rc = mdb_cursor_open(t->txn, t->m->dbi[DB_CHUNK], &cur);
	if (rc)
		return map_err(rc, "cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == 0) {
		int r = chunk_list_one(&c, &k, &v);

		if (r) {
			mdb_cursor_close(cur);
			return r < 0 ? r : 0;
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : map_err(rc, "chunk totals");
}

int
objfs_meta_orphan_add(struct objfs_meta_txn *t, uint64_t ino)
{
	unsigned char kb[8];

	put_be64(kb, ino);
	return put(t, DB_ORPHAN, kb, 8, "", 0, 0);
}

int
objfs_meta_orphan_del(struct objfs_meta_txn *t, uint64_t ino)
{
	unsigned char kb[8];
	int rc;

	put_be64(kb, ino);
	rc = del(t, DB_ORPHAN, kb, 8);
	return rc == -ENOENT ? 0 : rc;
}

int
objfs_meta_orphan_list(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino), void *arg)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	rc = mdb_cursor_open(t->txn, t->m->dbi[DB_ORPHAN], &cur);
	if (rc)
		return map_err(rc, "cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == 0) {
		if (k.mv_size == 8) {
			rc = cb(arg, get_be64(k.mv_data));
			if (rc) {
				mdb_cursor_close(cur);
				return rc < 0 ? rc : 0;
			}
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : map_err(rc, "orphans");
}
