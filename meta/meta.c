/* SPDX-License-Identifier: MIT */
/*
 * meta.c - the LMDB index (see meta.h for the contract and meta_keys.h for
 * the key encodings and the journal's record format).
 *
 * Crash safety.  LMDB is opened in its fully synced mode (neither
 * MDB_NOSYNC, MDB_NOMETASYNC nor MDB_WRITEMAP): lmdb.h promises that no
 * system crash can then corrupt it.  A synced commit costs two disk
 * flushes, so operations are not committed to LMDB one by one.  Instead:
 *
 *  - One top-level write transaction, the batch, stays open and collects
 *    the changes of many operations, each made in it directly.
 *  - When an operation commits, its changes (the puts and deletes, as
 *    stored) are appended to the journal, index/journal, as one record
 *    with a sequence number and an xxh3 checksum: a write into the page
 *    cache, which a killed daemon does not lose.  objfs_meta_commit()
 *    returns only then.  An operation that fails or is abandoned after it
 *    changed the batch has no record: the batch is rebuilt from the last
 *    checkpoint and the journal (rollback), so a failed operation changes
 *    nothing.  (LMDB's nested transactions did the same at about 1 us and
 *    3 MiB of allocations per operation; failures are rare, and this way
 *    they alone pay.)
 *  - A checkpoint commits the batch to LMDB (synced), with the number of
 *    the last journal record it holds (super "journal_seq"), and starts
 *    the journal again from its first byte.  The store calls for one
 *    every second (objfs_meta_tick), which bounds what a machine crash
 *    can take to about a second of namespace changes; fsync takes
 *    nothing: objfs_meta_sync() flushes the journal (one fdatasync).
 *  - Opening replays the journal: the records that follow journal_seq,
 *    consecutive and with valid checksums, are applied, and a checkpoint
 *    makes them part of LMDB.  A record torn by a crash ends the replay;
 *    it had not been synced, so nothing acknowledged as durable is lost.
 *    Records from before the last checkpoint cannot be mistaken for new
 *    ones: their sequence numbers are lower.
 *  - The journal is a fixed file, zero-filled when it is made, so writing
 *    and flushing it never changes its metadata.  An operation whose
 *    record would not fit goes straight into a checkpoint.
 *
 * Every process uses the index through this module alone, and the data
 * directory's lock keeps other processes out, so LMDB's own locking is
 * off (MDB_NOLOCK) and m->lock serialises all use: one transaction at a
 * time, readers included (reads must see the batch).  It is the innermost
 * lock of objfs.  A thread may nest transactions (held_* below).
 *
 * Damage.  Every value carries a checksum of its DB, key and value
 * (meta_keys.h); a record that fails it is -EIO and a log line.  A
 * damaged LMDB file can make LMDB read outside its pages and crash, so
 * before opening, the whole index is walked in a child process
 * (objfs_meta_verify): a crash or an LMDB error there is -EUCLEAN and the
 * open is refused.
 *
 * Full disk.  The data file keeps disk blocks allocated (fallocate,
 * KEEP_SIZE) beyond its end, 32 MiB or what the disk had at open, so that
 * a checkpoint rarely lacks room.  When the disk cannot top that up, or a
 * checkpoint fails for want of space, the index is "tight": plain write
 * transactions fail with -ENOSPC, essential ones (deletes, write-out) go
 * on, into the journal, which is flushed each second instead, so that the
 * store may free the disk space of what was deleted.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "../src/base/csum.h"
#include "../src/base/log.h"
#include "meta.h"
#include "meta_int.h"
#include "meta_keys.h"

#define db_names objfs_meta_db_names

#define MAP_SIZE	(16ull << 30)	/* the index's limit */
#define TRAILER		OBJFS_META_TRAILER
#define JHDR		OBJFS_META_JHDR
#define RESERVE		(32ull << 20)	/* allocated beyond the data file */
#define MIN_RESERVE	(2ull << 20)
#define JOURNAL_SIZE	(8u << 20)
#define JOURNAL_MIN	(1u << 20)
#define CHUNK_VAL	20		/* csum 8, len 4, slot 8 */

const char *const objfs_meta_db_names[OBJFS_META_NDBS] = {
	OBJFS_DB_SUPER, OBJFS_DB_INODE, OBJFS_DB_DIRENT, OBJFS_DB_DIRCOOKIE,
	OBJFS_DB_XATTR, OBJFS_DB_SYMLINK, OBJFS_DB_CHUNK, OBJFS_DB_ORPHAN,
	OBJFS_DB_DELETED,
};

struct objfs_meta {
	MDB_env *env;
	MDB_dbi dbi[OBJFS_META_NDBS];
	int dfd;			/* the data file (for its reserve) */
	int jfd;			/* the journal */
	uint64_t jsize;			/* bytes of journal */

	pthread_mutex_t lock;		/* everything below */
	MDB_txn *batch;			/* changes not yet checkpointed */
	struct objfs_meta_txn *w;	/* the write under way, or NULL */
	int w_failed;			/* its log could not be kept */
	int w_touched;			/* it changed the batch */
	uint64_t batch_ns;		/* when the first change not yet
					 * checkpointed was committed */
	uint64_t joff;			/* journal bytes in use */
	uint64_t seq;			/* last commit */
	uint64_t jseq;			/* last commit in the journal */
	uint64_t ckpt_seq;		/* last commit checkpointed */
	_Atomic uint64_t durable_seq;	/* survives a machine crash */
	unsigned char *jbuf;		/* the record being built */
	size_t jlen, jcap;
	uint64_t reserve;		/* kept allocated beyond the file */
	uint64_t reserved_to;		/* allocated up to here */
	int tight;			/* see the top of this file */
	int broken;			/* lost track of the batch: EIO */
	int rdonly;			/* never commits (objfsctl) */
};

struct objfs_meta_txn {
	struct objfs_meta *m;
	MDB_txn *txn;
	int write;
};

/* The index this thread holds and how deep (transactions nest). */
static _Thread_local struct objfs_meta *held;
static _Thread_local int held_depth;

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

static uint64_t
monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- record checksums ------------------------------------------------ */

static uint64_t
rec_csum(int db, const void *k, size_t klen, const void *v, size_t vlen)
{
	uint64_t seed = objfs_csum64_seed(k, klen, 0x6f626a6673000000ull |
			(unsigned)db);

	return objfs_csum64_seed(v, vlen, seed);
}

/* Is @v (trailer included) the value stored under @k in @db? */
static int
rec_ok(int db, const void *k, size_t klen, const MDB_val *v)
{
	if (v->mv_size < TRAILER)
		return 0;
	return objfs_csum_from_canonical((const unsigned char *)v->mv_data +
			v->mv_size - TRAILER) ==
		rec_csum(db, k, klen, v->mv_data, v->mv_size - TRAILER);
}

int
objfs_meta_rec_ok(int db, const void *k, size_t klen, const void *v,
		size_t vlen)
{
	MDB_val val = { vlen, (void *)v };

	return db >= 0 && db < OBJFS_META_NDBS && rec_ok(db, k, klen, &val);
}

static int
damaged(int db, const void *k, size_t klen)
{
	char hex[2 * 24 + 1];
	size_t n = klen < 24 ? klen : 24;

	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)k)[i]);
	hex[2 * n] = '\0';
	objfs_log(OBJFS_LOG_ERR, "index: damaged record in %s (key %s%s): "
		"not used; objfsctl check lists every one", db_names[db], hex,
		klen > n ? "..." : "");
	return -EIO;
}

/* ---- locking --------------------------------------------------------- */

static void
meta_lock(struct objfs_meta *m)
{
	if (held == m) {
		held_depth++;
		return;
	}
	pthread_mutex_lock(&m->lock);
	held = m;
	held_depth = 1;
}

static void
meta_unlock(struct objfs_meta *m)
{
	if (--held_depth > 0)
		return;
	held = NULL;
	pthread_mutex_unlock(&m->lock);
}

/* ---- the log of the write under way ---------------------------------- */

static int
jgrow(struct objfs_meta *m, size_t need)
{
	size_t cap = m->jcap ? m->jcap : 4096;
	unsigned char *p;

	if (need <= m->jcap)
		return 0;
	while (cap < need)
		cap *= 2;
	p = realloc(m->jbuf, cap);
	if (!p) {
		m->w_failed = 1;
		return -ENOMEM;
	}
	m->jbuf = p;
	m->jcap = cap;
	return 0;
}

static int
jlog(struct objfs_meta *m, int op, int db, const void *k, size_t klen,
		const void *v, size_t vlen)
{
	size_t need = m->jlen + 8 + klen + vlen;
	unsigned char *p;

	if (jgrow(m, need) < 0)
		return -ENOMEM;
	p = m->jbuf + m->jlen;
	p[0] = (unsigned char)op;
	p[1] = (unsigned char)db;
	p[2] = (unsigned char)(klen >> 8);
	p[3] = (unsigned char)klen;
	p[4] = (unsigned char)(vlen >> 24);
	p[5] = (unsigned char)(vlen >> 16);
	p[6] = (unsigned char)(vlen >> 8);
	p[7] = (unsigned char)vlen;
	memcpy(p + 8, k, klen);
	if (vlen)
		memcpy(p + 8 + klen, v, vlen);
	m->jlen = need;
	return 0;
}

/* ---- primitive operations --------------------------------------------- */

static int
writable(struct objfs_meta_txn *t)
{
	if (t->write && t->m->w == t)
		return 0;
	objfs_log(OBJFS_LOG_ERR, "index: a change through a read transaction");
	return -EBADF;
}

static int
get(struct objfs_meta_txn *t, int db, const void *k, size_t klen, MDB_val *v)
{
	MDB_val key = { klen, (void *)k };
	int rc = mdb_get(t->txn, t->m->dbi[db], &key, v);

	if (rc)
		return map_err(rc, "get");
	if (!rec_ok(db, k, klen, v))
		return damaged(db, k, klen);
	v->mv_size -= TRAILER;
	return 0;
}

/* Store @v under @k in @txn with its trailer; the stored value (for the
 * journal) in *@stored. */
static int
raw_put(MDB_txn *txn, MDB_dbi dbi, int db, const void *k, size_t klen,
		const void *v, size_t vlen, unsigned flags, MDB_val *stored)
{
	MDB_val key = { klen, (void *)k };
	MDB_val val = { vlen + TRAILER, NULL };
	int rc = mdb_put(txn, dbi, &key, &val, flags | MDB_RESERVE);

	if (rc)
		return rc;
	if (vlen)
		memcpy(val.mv_data, v, vlen);
	objfs_csum_to_canonical(rec_csum(db, k, klen, v, vlen),
			(unsigned char *)val.mv_data + vlen);
	*stored = val;
	return 0;
}

static int
put(struct objfs_meta_txn *t, int db, const void *k, size_t klen,
		const void *v, size_t vlen, unsigned flags)
{
	MDB_val stored;
	int rc = writable(t);

	if (rc < 0)
		return rc;
	t->m->w_touched = 1;
	rc = raw_put(t->txn, t->m->dbi[db], db, k, klen, v, vlen, flags,
			&stored);
	if (rc)
		return map_err(rc, "put");
	return jlog(t->m, OBJFS_JOURNAL_PUT, db, k, klen, stored.mv_data,
			stored.mv_size);
}

static int
del(struct objfs_meta_txn *t, int db, const void *k, size_t klen)
{
	MDB_val key = { klen, (void *)k };
	int rc = writable(t);

	if (rc < 0)
		return rc;
	t->m->w_touched = 1;
	rc = mdb_del(t->txn, t->m->dbi[db], &key, NULL);
	if (rc)
		return map_err(rc, "del");
	return jlog(t->m, OBJFS_JOURNAL_DEL, db, k, klen, NULL, 0);
}

/* Delete every key of @dbi that starts with @k[0..8) and is >= @k. */
static int
raw_del_range(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen)
{
	MDB_cursor *cur;
	MDB_val key = { klen, (void *)k }, v;
	int rc = mdb_cursor_open(txn, dbi, &cur);

	if (rc)
		return rc;
	rc = mdb_cursor_get(cur, &key, &v, MDB_SET_RANGE);
	while (rc == 0 && key.mv_size >= 8 && memcmp(key.mv_data, k, 8) == 0) {
		rc = mdb_cursor_del(cur, 0);
		if (rc == 0)	/* after a delete, NEXT is the next one */
			rc = mdb_cursor_get(cur, &key, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

static int
del_range(struct objfs_meta_txn *t, int db, uint64_t id, const void *from,
		size_t fromlen)
{
	unsigned char kb[8 + 16];
	size_t klen = make_key(kb, id, from, fromlen);
	int rc = writable(t);

	if (rc < 0)
		return rc;
	t->m->w_touched = 1;
	rc = raw_del_range(t->txn, t->m->dbi[db], kb, klen);
	if (rc)
		return map_err(rc, "delete range");
	return jlog(t->m, OBJFS_JOURNAL_DELRANGE, db, kb, klen, NULL, 0);
}

/*
 * Walk every key that starts with be64(@id), from be64(@id).@from, calling
 * @cb(arg, key, val, ok) until it returns non-zero (1 = stop, <0 = error);
 * @ok says whether the record's checksum holds (the value comes without
 * its trailer then).
 */
static int
range(struct objfs_meta_txn *t, int db, uint64_t id, const void *from,
		size_t fromlen,
		int (*cb)(void *arg, MDB_val *k, MDB_val *v, int ok), void *arg)
{
	unsigned char kb[8 + 16];
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
		int ok;

		if (k.mv_size < 8 || get_be64(k.mv_data) != id)
			break;
		ok = rec_ok(db, k.mv_data, k.mv_size, &v);
		if (ok)
			v.mv_size -= TRAILER;
		rc = cb(arg, &k, &v, ok);
		if (rc) {
			mdb_cursor_close(cur);
			return rc < 0 ? rc : 0;
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		rc = 0;
	return map_err(rc, "range");
}

/* Every record of @db, as range() does for one id. */
static int
walk_db(struct objfs_meta_txn *t, int db,
		int (*cb)(void *arg, MDB_val *k, MDB_val *v, int ok), void *arg)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(t->txn, t->m->dbi[db], &cur);

	if (rc)
		return map_err(rc, "cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == 0) {
		int ok = rec_ok(db, k.mv_data, k.mv_size, &v);

		if (ok)
			v.mv_size -= TRAILER;
		rc = cb(arg, &k, &v, ok);
		if (rc) {
			mdb_cursor_close(cur);
			return rc < 0 ? rc : 0;
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : map_err(rc, "walk");
}

/* ---- the journal ------------------------------------------------------ */

static int
pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		struct iovec iov = { (void *)p, len };
		ssize_t n = pwritev(fd, &iov, 1, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static void
jhdr_fill(unsigned char *h, uint32_t len, uint64_t seq, const void *payload)
{
	uint32_t magic = OBJFS_JOURNAL_MAGIC;
	uint64_t c;

	memcpy(h, &magic, 4);
	memcpy(h + 4, &len, 4);
	memcpy(h + 8, &seq, 8);
	c = objfs_csum64_seed(payload, len, objfs_csum64(h, 16));
	memcpy(h + 16, &c, 8);
}

/* Append the record in m->jbuf with number @seq. */
static int
journal_append(struct objfs_meta *m, uint64_t seq)
{
	size_t len = m->jlen - JHDR;
	int rc;

	jhdr_fill(m->jbuf, (uint32_t)len, seq, m->jbuf + JHDR);
	rc = pwrite_all(m->jfd, m->jbuf, m->jlen, m->joff);
	if (rc < 0) {
		objfs_log(OBJFS_LOG_ERR, "index: cannot write the journal: %s",
			strerror(-rc));
		return rc;
	}
	m->joff += m->jlen;
	m->jseq = seq;
	return 0;
}

int
objfs_meta_journal_entries(const unsigned char *p, size_t len,
		int (*cb)(void *arg, int op, int db, const unsigned char *k,
			size_t klen, const unsigned char *v, size_t vlen),
		void *arg)
{
	while (len) {
		size_t klen, vlen;
		int rc, db;

		if (len < 8)
			return MDB_CORRUPTED;
		db = p[1];
		klen = (size_t)p[2] << 8 | p[3];
		vlen = (size_t)p[4] << 24 | (size_t)p[5] << 16 |
			(size_t)p[6] << 8 | p[7];
		if (db >= OBJFS_META_NDBS || len - 8 < klen ||
		    len - 8 - klen < vlen)
			return MDB_CORRUPTED;
		rc = cb(arg, p[0], db, p + 8, klen, p + 8 + klen, vlen);
		if (rc)
			return rc;
		p += 8 + klen + vlen;
		len -= 8 + klen + vlen;
	}
	return 0;
}

struct apply_ctx {
	struct objfs_meta *m;
	MDB_txn *txn;
};

static int
apply_one(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct apply_ctx *a = arg;
	MDB_val key = { klen, (void *)k }, val = { vlen, (void *)v };
	int rc;

	switch (op) {
	case OBJFS_JOURNAL_PUT:
		return mdb_put(a->txn, a->m->dbi[db], &key, &val, 0);
	case OBJFS_JOURNAL_DEL:
		rc = mdb_del(a->txn, a->m->dbi[db], &key, NULL);
		return rc == MDB_NOTFOUND ? 0 : rc;
	case OBJFS_JOURNAL_DELRANGE:
		return klen >= 8 ? raw_del_range(a->txn, a->m->dbi[db], k,
				klen) : MDB_CORRUPTED;
	default:
		return MDB_CORRUPTED;
	}
}

/* Apply one record's entries to @txn. */
static int
apply(struct objfs_meta *m, MDB_txn *txn, const unsigned char *p,
		size_t len)
{
	struct apply_ctx a = { m, txn };

	return objfs_meta_journal_entries(p, len, apply_one, &a);
}

size_t
objfs_meta_journal_read(int fd, uint64_t jsize, uint64_t off,
		uint64_t expect, unsigned char **buf, size_t *cap)
{
	unsigned char h[JHDR];
	uint32_t magic, len;
	uint64_t seq, c;

	if (off + JHDR > jsize || pread(fd, h, JHDR, (off_t)off) != JHDR)
		return 0;
	memcpy(&magic, h, 4);
	memcpy(&len, h + 4, 4);
	memcpy(&seq, h + 8, 8);
	memcpy(&c, h + 16, 8);
	if (magic != OBJFS_JOURNAL_MAGIC || seq != expect || len == 0 ||
	    len > jsize - off - JHDR)
		return 0;
	if (len > *cap) {
		unsigned char *p = realloc(*buf, len);

		if (!p)
			return 0;
		*buf = p;
		*cap = len;
	}
	if (pread(fd, *buf, len, (off_t)(off + JHDR)) != (ssize_t)len)
		return 0;
	if (objfs_csum64_seed(*buf, len, objfs_csum64(h, 16)) != c)
		return 0;
	return len;
}

static int
super_get_raw(struct objfs_meta *m, MDB_txn *txn, const char *key,
		uint64_t *val)
{
	MDB_val k = { strlen(key), (void *)key }, v;
	int rc = mdb_get(txn, m->dbi[DB_SUPER], &k, &v);

	if (rc)
		return rc;
	if (!rec_ok(DB_SUPER, k.mv_data, k.mv_size, &v) ||
	    v.mv_size != 8 + TRAILER)
		return MDB_CORRUPTED;
	memcpy(val, v.mv_data, 8);
	return 0;
}

/*
 * Apply the journal's records that follow the checkpoint in m->batch to
 * it.  Sets m->seq/jseq/joff to what was replayed; *@n gets the count.
 */
static int
replay(struct objfs_meta *m, uint64_t *n)
{
	unsigned char *buf = NULL;
	size_t cap = 0, len;
	uint64_t ckpt = 0, off = 0;
	int rc;

	*n = 0;
	rc = super_get_raw(m, m->batch, OBJFS_SUPER_JOURNAL, &ckpt);
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	m->ckpt_seq = ckpt;
	while ((len = objfs_meta_journal_read(m->jfd, m->jsize, off, ckpt + *n + 1, &buf,
			&cap)) > 0) {
		rc = apply(m, m->batch, buf, len);
		if (rc) {
			free(buf);
			return rc;
		}
		off += JHDR + len;
		(*n)++;
	}
	free(buf);
	m->seq = m->jseq = ckpt + *n;
	m->joff = off;
	return 0;
}

/* Lost the batch (a failed checkpoint or merge): rebuild it from the
 * checkpoint and the journal, which holds every commit since. */
static int
rebuild(struct objfs_meta *m)
{
	uint64_t want = m->jseq, n;
	int rc;

	if (m->batch)
		mdb_txn_abort(m->batch);
	m->batch = NULL;
	rc = mdb_txn_begin(m->env, NULL, 0, &m->batch);
	if (rc == 0)
		rc = replay(m, &n);
	if (rc == 0 && m->jseq == want)
		return 0;
	objfs_log(OBJFS_LOG_ERR, "index: cannot rebuild the changes since the "
		"last checkpoint (%s); refusing further changes, the next mount "
		"replays the journal", rc ? mdb_strerror(rc) : "journal short");
	m->broken = 1;
	return -EIO;
}

/* Keep disk blocks allocated beyond the data file's end. */
static void
top_up(struct objfs_meta *m)
{
	struct stat st;

	if (!m->reserve || fstat(m->dfd, &st) < 0)
		return;
	if ((uint64_t)st.st_size + m->reserve <= m->reserved_to) {
		m->tight = 0;
		return;
	}
	if (fallocate(m->dfd, FALLOC_FL_KEEP_SIZE, st.st_size,
			(off_t)m->reserve) == 0) {
		m->reserved_to = (uint64_t)st.st_size + m->reserve;
		m->tight = 0;
		return;
	}
	if (errno == ENOSPC) {
		/* Essential writes only, from what is left, once less than a
		 * quarter of the reserve remains. */
		m->tight = (uint64_t)st.st_size + m->reserve / 4 >
			m->reserved_to;
		return;
	}
	objfs_log(OBJFS_LOG_INFO, "index: cannot reserve disk blocks: %m");
	m->reserve = 0;
}

/* Commit the batch to LMDB (locked, no write under way). */
static int
checkpoint(struct objfs_meta *m)
{
	MDB_val stored;
	uint64_t seq = m->seq;
	int rc;

	if (!m->batch || m->rdonly)
		return 0;
	if (seq == m->ckpt_seq) {
		mdb_txn_abort(m->batch);	/* it only read */
		m->batch = NULL;
		return 0;
	}
	rc = raw_put(m->batch, m->dbi[DB_SUPER], DB_SUPER, OBJFS_SUPER_JOURNAL,
			strlen(OBJFS_SUPER_JOURNAL), &seq, sizeof(seq), 0,
			&stored);
	if (rc == 0)
		rc = mdb_txn_commit(m->batch);
	else
		mdb_txn_abort(m->batch);
	m->batch = NULL;
	if (rc) {
		struct statvfs sv;
		int err;

		/* LMDB reports a short write (a full disk) as EIO. */
		if ((rc == ENOSPC || rc == MDB_MAP_FULL || rc == EIO) &&
		    fstatvfs(m->dfd, &sv) == 0 &&
		    (uint64_t)sv.f_bavail * sv.f_frsize < RESERVE) {
			err = -ENOSPC;
			m->tight = 1;
			objfs_log(OBJFS_LOG_WARNING, "index: no room on its disk "
				"for a checkpoint; the journal keeps the "
				"changes (deletes still work)");
		} else {
			err = map_err(rc, "checkpoint");
			objfs_log(OBJFS_LOG_WARNING, "index: checkpoint failed "
				"(%s); the journal keeps the changes",
				mdb_strerror(rc));
		}
		m->seq = m->jseq;
		(void)rebuild(m);
		return err;
	}
	m->ckpt_seq = m->jseq = seq;
	atomic_store(&m->durable_seq, seq);
	m->joff = 0;
	m->batch_ns = 0;
	top_up(m);
	return 0;
}

static int
ensure_batch(struct objfs_meta *m)
{
	if (m->batch)
		return 0;
	return map_err(mdb_txn_begin(m->env, NULL, 0, &m->batch), "begin");
}

/* ---- transactions ----------------------------------------------------- */

int
objfs_meta_begin(struct objfs_meta *m, int write, struct objfs_meta_txn **out)
{
	struct objfs_meta_txn *t = malloc(sizeof(*t));
	int rc;

	if (!t)
		return -ENOMEM;
	meta_lock(m);
	rc = m->broken ? -EIO : write && m->rdonly ? -EROFS : 0;
	if (rc == 0 && write && m->w) {
		objfs_log(OBJFS_LOG_ERR, "index: a write inside a write");
		rc = -EDEADLK;
	}
	if (rc == 0 && write && m->tight && write != OBJFS_META_ESSENTIAL)
		rc = -ENOSPC;
	if (rc == 0)
		rc = ensure_batch(m);
	if (rc == 0 && write) {
		m->w = t;
		m->w_failed = 0;
		m->w_touched = 0;
		m->jlen = JHDR;			/* room for the header */
		rc = jgrow(m, JHDR);
		if (rc < 0)
			m->w = NULL;
	}
	if (rc == 0)
		t->txn = m->batch;
	if (rc < 0) {
		meta_unlock(m);
		free(t);
		return rc;
	}
	t->m = m;
	t->write = write;
	*out = t;
	return 0;
}

/* A write failed or was abandoned after it changed the batch: put the
 * batch back as the journal says it is. */
static int
rollback(struct objfs_meta *m)
{
	if (!m->w_touched)
		return 0;
	m->w_touched = 0;
	return rebuild(m);
}

static int
commit_write(struct objfs_meta_txn *t, uint64_t *seq_out)
{
	struct objfs_meta *m = t->m;
	uint64_t next = m->seq + 1;
	int rc;

	m->w = NULL;
	if (m->w_failed) {
		(void)rollback(m);
		return -ENOMEM;
	}
	if (m->jlen == JHDR) {		/* changed nothing */
		*seq_out = m->seq;
		return rollback(m);	/* a failed put may have, though */
	}
	/* The last quarter of the journal is for essential writes, so that
	 * deletes still work when a full disk stops checkpoints. */
	if (m->jlen - JHDR > m->jsize / 2 || m->joff + m->jlen > (t->write ==
			OBJFS_META_ESSENTIAL ? m->jsize : m->jsize / 4 * 3)) {
		/* No room in the journal: straight into a checkpoint. */
		m->seq = next;
		rc = checkpoint(m);
		if (rc < 0)
			return rc;	/* rebuilt without it */
		*seq_out = next;
		return 0;
	}
	rc = journal_append(m, next);
	if (rc < 0) {
		(void)rollback(m);
		return rc;
	}
	m->seq = next;
	if (!m->batch_ns)
		m->batch_ns = monotonic_ns();
	*seq_out = next;
	return 0;
}

int
objfs_meta_commit_seq(struct objfs_meta_txn *t, uint64_t *seq)
{
	struct objfs_meta *m = t->m;
	uint64_t s = 0;
	int rc = 0;

	if (t->write)
		rc = commit_write(t, &s);
	else
		s = m->seq;
	meta_unlock(m);
	free(t);
	if (rc == 0 && seq)
		*seq = s;
	return rc;
}

int
objfs_meta_commit(struct objfs_meta_txn *t)
{
	return objfs_meta_commit_seq(t, NULL);
}

void
objfs_meta_abort(struct objfs_meta_txn *t)
{
	struct objfs_meta *m;

	if (!t)
		return;
	m = t->m;
	if (t->write) {
		m->w = NULL;
		(void)rollback(m);
	}
	meta_unlock(m);
	free(t);
}

/* ---- durability -------------------------------------------------------- */

int
objfs_meta_sync(struct objfs_meta *m)
{
	uint64_t target;
	int fd;

	meta_lock(m);
	target = m->seq;
	fd = m->jfd;
	if (m->rdonly) {
		meta_unlock(m);
		return 0;
	}
	if (m->broken) {
		meta_unlock(m);
		return -EIO;
	}
	meta_unlock(m);
	if (atomic_load(&m->durable_seq) >= target)
		return 0;
	/* Everything up to @target is in the journal or checkpointed; a
	 * checkpoint meanwhile only makes more of it durable. */
	if (fdatasync(fd) < 0) {
		int rc = -errno;

		objfs_log(OBJFS_LOG_ERR, "index: cannot flush the journal: %s",
			strerror(-rc));
		return rc;
	}
	meta_lock(m);
	if (atomic_load(&m->durable_seq) < target)
		atomic_store(&m->durable_seq, target);
	meta_unlock(m);
	return 0;
}

int
objfs_meta_tick(struct objfs_meta *m, unsigned interval_ms)
{
	int rc = 0, flush = 0;

	meta_lock(m);
	if (!m->broken && !m->w && m->batch && m->seq > m->ckpt_seq &&
	    monotonic_ns() - m->batch_ns >= (uint64_t)interval_ms * 1000000u)
		rc = checkpoint(m);
	else if (m->tight)
		top_up(m);
	/* When the checkpoint cannot be done, flush the journal instead:
	 * what it holds becomes durable, and so may be acted on. */
	flush = rc < 0 && !m->broken;
	meta_unlock(m);
	if (flush)
		(void)objfs_meta_sync(m);
	return rc;
}

uint64_t
objfs_meta_durable_seq(struct objfs_meta *m)
{
	return atomic_load(&m->durable_seq);
}

int
objfs_meta_size(struct objfs_meta *m, uint64_t *bytes)
{
	struct stat a, b;

	if (fstat(m->dfd, &a) < 0 || fstat(m->jfd, &b) < 0)
		return -errno;
	*bytes = (uint64_t)(a.st_blocks + b.st_blocks) * 512;
	return 0;
}

/* ---- opening and closing ------------------------------------------------ */

static int
fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Make the journal: zeros, flushed, so that later writes change no
 * metadata.  As large as the disk allows, down to JOURNAL_MIN. */
static int
journal_create(const char *dir, const char *path, uint64_t *size)
{
	static const unsigned char zero[65536];
	char tmp[4200];
	uint64_t want = JOURNAL_SIZE;
	int fd, rc;

	snprintf(tmp, sizeof(tmp), "%s/journal.new", dir);
	for (;;) {
		fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		rc = 0;
		for (uint64_t off = 0; rc == 0 && off < want; off += sizeof(zero))
			rc = pwrite_all(fd, zero, sizeof(zero), off);
		if (rc == 0 && fdatasync(fd) < 0)
			rc = -errno;
		close(fd);
		if (rc == 0 || rc != -ENOSPC || want <= JOURNAL_MIN)
			break;
		want /= 2;
	}
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0) {
		unlink(tmp);
		return rc;
	}
	*size = want;
	return fsync_dir(dir);
}

static int
journal_open(struct objfs_meta *m, const char *dir, int fresh)
{
	char path[4200];
	struct stat st;
	int rc;

	snprintf(path, sizeof(path), "%s/journal", dir);
	if (m->rdonly) {	/* read what there is; make nothing */
		m->jfd = open(path, O_RDONLY | O_CLOEXEC);
		if (m->jfd >= 0 && fstat(m->jfd, &st) == 0)
			m->jsize = (uint64_t)st.st_size;
		return 0;
	}
	if (stat(path, &st) < 0 || (uint64_t)st.st_size < JOURNAL_MIN) {
		if (!fresh)
			objfs_log(OBJFS_LOG_WARNING, "index: the journal is %s; "
				"made a new one (changes made after the last "
				"checkpoint, if the daemon did not stop "
				"cleanly, are not in the index)",
				errno == ENOENT ? "missing" : "too short");
		rc = journal_create(dir, path, &m->jsize);
		if (rc < 0)
			return rc;
	} else {
		m->jsize = (uint64_t)st.st_size;
	}
	m->jfd = open(path, O_RDWR | O_CLOEXEC);
	return m->jfd < 0 ? -errno : 0;
}

static void
reserve_open(struct objfs_meta *m)
{
	struct stat st;

	if (fstat(m->dfd, &st) < 0)
		return;
	for (m->reserve = RESERVE; m->reserve >= MIN_RESERVE;
	     m->reserve /= 2) {
		if (fallocate(m->dfd, FALLOC_FL_KEEP_SIZE, st.st_size,
				(off_t)m->reserve) == 0) {
			m->reserved_to = (uint64_t)st.st_size + m->reserve;
			return;
		}
		if (errno != ENOSPC)
			break;
	}
	objfs_log(OBJFS_LOG_INFO, "index: no disk blocks reserved for it (%s)",
		errno == ENOSPC ? "the disk is full" : strerror(errno));
	m->reserve = 0;
}

static int
env_open(struct objfs_meta *m, const char *dir, int rdonly)
{
	int rc = mdb_env_create(&m->env);

	if (rc)
		return rc;
	rc = mdb_env_set_maxdbs(m->env, OBJFS_META_NDBS);
	if (rc == 0)
		rc = mdb_env_set_mapsize(m->env, MAP_SIZE);
	if (rc == 0)
		rc = mdb_env_open(m->env, dir, MDB_NOLOCK |
				(rdonly ? MDB_RDONLY : 0), 0600);
	if (rc) {
		mdb_env_close(m->env);
		m->env = NULL;
	}
	return rc;
}

/*
 * Did the file never get its first commit?  Each of LMDB's two meta pages
 * is either zeros or the one written at creation (transaction 0): a crash
 * on a first mount can leave it so, with nothing in it.  (The first
 * commit's flush makes both pages durable before its own meta page.)
 */
static int
never_committed(const char *path)
{
	unsigned char buf[2 * 4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	if (n <= 0)
		return n == 0;
	for (size_t pg = 0; pg < 2 && pg * 4096 < (size_t)n; pg++) {
		const unsigned char *p = buf + pg * 4096;
		size_t len = (size_t)n - pg * 4096 < 4096 ?
			(size_t)n - pg * 4096 : 4096;
		uint32_t magic, zero = 1;
		uint64_t txnid;
		uint16_t fl;

		for (size_t k = 0; k < len && zero; k++)
			zero = p[k] == 0;
		if (zero)
			continue;
		if (len < LMDB_META_TXNID + 8)
			return 0;
		memcpy(&fl, p + 10, 2);
		memcpy(&magic, p + 16, 4);
		memcpy(&txnid, p + LMDB_META_TXNID, 8);
		if (!(fl & LMDB_P_META) || magic != LMDB_MAGIC || txnid != 0)
			return 0;
	}
	return 1;
}

int
objfs_meta_exists(const char *dir)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if (stat(path, &st) < 0)
		return -errno;
	return never_committed(path) ? -ENODATA : 0;
}

static int
open_err(int rc)
{
	switch (rc) {
	case EACCES:
	case ENOENT:
	case EROFS:
	case ENOSPC:
	case ENOMEM:
		return -rc;
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
		return -EPROTO;
	default:
		return map_err(rc, "open");
	}
}

/*
 * Schema 1 (objfs before records had checksums and chunks had slots):
 * rewrite every value with its trailer, chunk records with slot = index
 * (where schema 1 kept them), inode records with their count of chunk
 * records.  In the transaction that opens the DBs, so all or nothing.
 */
static int
legacy_schema(struct objfs_meta *m, MDB_txn *txn)
{
	MDB_val k = { 6, (void *)OBJFS_SUPER_SCHEMA }, v;
	uint64_t schema;

	if (mdb_get(txn, m->dbi[DB_SUPER], &k, &v) || v.mv_size != 8)
		return 0;
	memcpy(&schema, v.mv_data, 8);
	return schema == 1;
}

struct ino_count {
	uint64_t ino, n;
};

static int
migrate_db(struct objfs_meta *m, MDB_txn *txn, int db,
		struct ino_count **cv, size_t *nc, size_t *cc)
{
	unsigned char kb[8 + 512], *buf = NULL;
	size_t bcap = 0;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn, m->dbi[db], &cur);

	if (rc)
		return rc;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == 0) {
		size_t plen = v.mv_size, need;
		MDB_val nk, nv;

		if (k.mv_size > sizeof(kb)) {
			rc = MDB_CORRUPTED;
			break;
		}
		memcpy(kb, k.mv_data, k.mv_size);
		nk.mv_size = k.mv_size;
		nk.mv_data = kb;
		if (db == DB_CHUNK)
			plen = CHUNK_VAL;
		else if (db == DB_INODE)
			plen = sizeof(struct objfs_attr);
		need = plen + TRAILER;
		if (need > bcap) {
			unsigned char *p = realloc(buf, need);

			if (!p) {
				rc = ENOMEM;
				break;
			}
			buf = p;
			bcap = need;
		}
		if (db == DB_CHUNK) {
			uint64_t ino = get_be64(kb), idx = get_be64(kb + 8);

			if (k.mv_size != 16 || v.mv_size != 12) {
				rc = MDB_CORRUPTED;
				break;
			}
			memcpy(buf, v.mv_data, 12);
			memcpy(buf + 12, &idx, 8);
			if (!*nc || (*cv)[*nc - 1].ino != ino) {
				if (*nc == *cc) {
					size_t c = *cc ? 2 * *cc : 1024;
					struct ino_count *p = realloc(*cv,
							c * sizeof(*p));

					if (!p) {
						rc = ENOMEM;
						break;
					}
					*cv = p;
					*cc = c;
				}
				(*cv)[(*nc)++] = (struct ino_count){ ino, 0 };
			}
			(*cv)[*nc - 1].n++;
		} else if (db == DB_INODE) {
			struct objfs_attr a;
			uint64_t ino = get_be64(kb);
			size_t lo = 0, hi = *nc;

			if (k.mv_size != 8 || v.mv_size != 88) {
				rc = MDB_CORRUPTED;
				break;
			}
			memset(&a, 0, sizeof(a));
			memcpy(&a, v.mv_data, 88);
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;

				if ((*cv)[mid].ino < ino)
					lo = mid + 1;
				else
					hi = mid;
			}
			a.nrec = lo < *nc && (*cv)[lo].ino == ino ?
				(*cv)[lo].n : 0;
			memcpy(buf, &a, sizeof(a));
		} else if (db == DB_SUPER && k.mv_size == 6 &&
			   memcmp(kb, OBJFS_SUPER_SCHEMA, 6) == 0) {
			uint64_t two = OBJFS_META_SCHEMA;

			memcpy(buf, &two, 8);
		} else if (plen) {
			memcpy(buf, v.mv_data, plen);
		}
		objfs_csum_to_canonical(rec_csum(db, kb, nk.mv_size, buf, plen),
				buf + plen);
		nv.mv_size = need;
		nv.mv_data = buf;
		rc = mdb_cursor_put(cur, &nk, &nv, MDB_CURRENT);
		if (rc == 0)
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	free(buf);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

static int
migrate_v1(struct objfs_meta *m, MDB_txn *txn)
{
	static const int order[] = { DB_CHUNK, DB_INODE, DB_SUPER, DB_DIRENT,
		DB_DIRCOOKIE, DB_XATTR, DB_SYMLINK, DB_ORPHAN };
	struct ino_count *cv = NULL;
	size_t nc = 0, cc = 0;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < sizeof(order) / sizeof(order[0]); i++)
		rc = migrate_db(m, txn, order[i], &cv, &nc, &cc);
	free(cv);
	if (rc == 0)
		objfs_log(OBJFS_LOG_INFO, "index: converted from schema 1 "
			"(checksums in every record, chunk slots)");
	return rc;
}

int
objfs_meta_open(const char *dir, int flags, struct objfs_meta **out,
		int *created)
{
	int rdonly = !!(flags & OBJFS_META_RDONLY);
	int create = (flags & OBJFS_META_CREATE) && !rdonly;
	struct objfs_meta_report rep;
	struct objfs_meta *m;
	char path[4200];
	struct stat st;
	MDB_txn *txn;
	uint64_t n;
	int rc, fresh = 0;

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if (stat(path, &st) < 0) {
		if (errno != ENOENT || !create)
			return -errno;
		fresh = 1;
	} else if (never_committed(path)) {
		return -ENODATA;	/* never got its first commit */
	} else {
		rc = objfs_meta_verify(dir, &rep);
		if (rc == 0)
			rc = rep.status;
		if (rc < 0) {
			if (rep.what[0])
				objfs_log(OBJFS_LOG_ERR, "index %s: %s", path,
					rep.what);
			return rc;
		}
		if (rep.damaged && rep.schema != 1)
			objfs_log(OBJFS_LOG_WARNING, "index %s: %" PRIu64
				" damaged record(s) will read as errors; "
				"objfsctl check lists them", path, rep.damaged);
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->dfd = m->jfd = -1;
	m->rdonly = rdonly;
	pthread_mutex_init(&m->lock, NULL);
	/* A new index: the journal first, so that an index file never
	 * exists without one. */
	if (fresh && (rc = journal_open(m, dir, fresh)) < 0)
		goto err_free;
	rc = env_open(m, dir, 0);
	if (rc) {
		rc = open_err(rc);
		goto err_free;
	}
	rc = mdb_env_get_fd(m->env, &m->dfd);
	if (rc == 0)
		rc = mdb_txn_begin(m->env, NULL, 0, &txn);
	if (rc) {
		rc = open_err(rc);
		goto err_env;
	}
	/* Read-only: everything happens in a batch that is never committed
	 * (a damaged index must stay as it is). */
	if (rdonly)
		m->batch = txn;
	/* An LMDB file without objfs's DBs is someone else's: leave it.
	 * One with no DB at all is a first open that did not get to make
	 * them. */
	if (!fresh && mdb_dbi_open(txn, OBJFS_DB_SUPER, 0, &m->dbi[0]) ==
			MDB_NOTFOUND) {
		MDB_stat ms;

		if (mdb_dbi_open(txn, NULL, 0, &m->dbi[0]) ||
		    mdb_stat(txn, m->dbi[0], &ms) || ms.ms_entries) {
			mdb_txn_abort(txn);
			m->batch = NULL;
			rc = -EMEDIUMTYPE;
			goto err_env;
		}
	}
	for (int i = 0; i < OBJFS_META_NDBS; i++) {
		rc = mdb_dbi_open(txn, db_names[i], MDB_CREATE, &m->dbi[i]);
		if (rc) {
			mdb_txn_abort(txn);
			m->batch = NULL;
			rc = open_err(rc);
			goto err_env;
		}
	}
	if (!fresh && legacy_schema(m, txn) && (rc = migrate_v1(m, txn))) {
		objfs_log(OBJFS_LOG_ERR, "index: cannot convert it from schema "
			"1: %s", mdb_strerror(rc));
		mdb_txn_abort(txn);
		m->batch = NULL;
		rc = rc == ENOMEM ? -ENOMEM : -EUCLEAN;
		goto err_env;
	}
	rc = rdonly ? 0 : mdb_txn_commit(txn);
	if (rc) {
		rc = open_err(rc);
		goto err_env;
	}
	if (fresh && (rc = fsync_dir(dir)) < 0)
		goto err_env;
	if (!fresh && (rc = journal_open(m, dir, fresh)) < 0)
		goto err_batch;
	if (!rdonly)
		reserve_open(m);
	meta_lock(m);
	rc = ensure_batch(m);
	if (rc == 0) {
		rc = replay(m, &n);
		rc = rc ? map_err(rc, "journal replay") : 0;
	}
	if (rc == 0 && n && !rdonly) {
		objfs_log(OBJFS_LOG_INFO, "index: replayed %" PRIu64 " journal "
			"record(s) left by a daemon that did not stop cleanly",
			n);
		/* Durable before anything acts on it (a slot that only
		 * the replayed state leaves free must stay free). */
		if (checkpoint(m) < 0 && !m->broken) {
			rc = fdatasync(m->jfd) < 0 ? -errno : 0;
			atomic_store(&m->durable_seq, m->seq);
		}
	} else {
		atomic_store(&m->durable_seq, m->seq);
	}
	if (rc == 0 && m->broken)
		rc = -EIO;
	meta_unlock(m);
	if (rc < 0)
		goto err_batch;
	*out = m;
	if (created)
		*created = fresh;
	return 0;

err_batch:
	if (m->batch)
		mdb_txn_abort(m->batch);
err_env:
	mdb_env_close(m->env);
err_free:
	if (m->jfd >= 0)
		close(m->jfd);
	pthread_mutex_destroy(&m->lock);
	free(m->jbuf);
	free(m);
	return rc;
}

int
objfs_meta_empty(struct objfs_meta_txn *t)
{
	MDB_stat st;

	for (int i = 0; i < OBJFS_META_NDBS; i++)
		if (mdb_stat(t->txn, t->m->dbi[i], &st) || st.ms_entries)
			return 0;
	return 1;
}

int
objfs_meta_close(struct objfs_meta *m)
{
	int rc = 0;

	if (!m)
		return 0;
	meta_lock(m);
	if (!m->broken)
		rc = checkpoint(m);
	if (m->batch)
		mdb_txn_abort(m->batch);
	m->batch = NULL;
	/* No checkpoint (a full disk): the journal, flushed, holds it all
	 * and the next open replays it, so nothing is lost. */
	if (rc < 0 && !m->broken) {
		rc = fdatasync(m->jfd) < 0 ? -errno : 0;
		if (rc == 0)
			objfs_log(OBJFS_LOG_WARNING, "index: closed without a "
				"last checkpoint; the next mount replays the "
				"journal");
	}
	if (m->broken)
		rc = -EIO;
	meta_unlock(m);
	mdb_env_close(m->env);
	close(m->jfd);
	pthread_mutex_destroy(&m->lock);
	free(m->jbuf);
	free(m);
	return rc;
}

/* ---- the structural walk (objfs_meta_verify) --------------------------- */

struct verify_ctx {
	struct objfs_meta_report *r;
	int db;
};

static int
count_rec(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct verify_ctx *c = arg;

	c->r->records++;
	if (c->db >= 0 && !ok)
		c->r->damaged++;
	return 0;
}

/* In the child: everything LMDB can be asked to read. */
static void
verify_walk(const char *dir, struct objfs_meta_report *r)
{
	struct objfs_meta m = { 0 };
	struct objfs_meta_txn t = { &m, NULL, 0 };
	struct verify_ctx c = { r, -1 };
	MDB_envinfo info;
	MDB_stat st;
	struct stat fs;
	char path[4200];
	uint64_t ckpt = 0;
	int rc;

	rc = env_open(&m, dir, 1);
	if (rc) {
		r->status = open_err(rc);
		snprintf(r->what, sizeof(r->what), "%s", rc == MDB_INVALID ?
			"not an LMDB file" : mdb_strerror(rc));
		return;
	}
	if (mdb_env_info(m.env, &info) == 0 && mdb_env_stat(m.env, &st) == 0) {
		r->pages = info.me_last_pgno + 1;
		snprintf(path, sizeof(path), "%s/data.mdb", dir);
		if (stat(path, &fs) == 0 &&
		    (uint64_t)fs.st_size < r->pages * st.ms_psize) {
			r->status = -EUCLEAN;
			snprintf(r->what, sizeof(r->what), "the file is cut short: "
				"%lld bytes, its pages need %" PRIu64,
				(long long)fs.st_size, r->pages * st.ms_psize);
			goto out;
		}
	}
	rc = mdb_txn_begin(m.env, NULL, MDB_RDONLY, &t.txn);
	for (int db = 0; rc == 0 && db < 2; db++) {
		/* LMDB's own: the free list and the table of DBs */
		m.dbi[0] = (MDB_dbi)db;
		c.db = -1;
		rc = walk_db(&t, 0, count_rec, &c) < 0 ? MDB_CORRUPTED : 0;
	}
	for (int db = 0; rc == 0 && db < OBJFS_META_NDBS; db++) {
		rc = mdb_dbi_open(t.txn, db_names[db], 0, &m.dbi[db]);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			m.dbi[db] = 0;
			continue;
		}
		c.db = db;
		if (rc == 0 && walk_db(&t, db, count_rec, &c) < 0)
			rc = MDB_CORRUPTED;
	}
	r->schema = OBJFS_META_SCHEMA;
	if (rc == 0 && m.dbi[DB_SUPER] && legacy_schema(&m, t.txn))
		r->schema = 1;
	else if (rc == 0 && m.dbi[DB_SUPER])
		rc = super_get_raw(&m, t.txn, OBJFS_SUPER_JOURNAL, &ckpt);
	if (rc == MDB_NOTFOUND)
		rc = 0;
	if (rc) {
		r->status = -EUCLEAN;
		snprintf(r->what, sizeof(r->what), "its structure is damaged (%s)",
			mdb_strerror(rc));
	} else {
		unsigned char *buf = NULL;
		size_t cap = 0, len;
		uint64_t off = 0;
		int fd;

		snprintf(path, sizeof(path), "%s/journal", dir);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && fstat(fd, &fs) == 0) {
			while ((len = objfs_meta_journal_read(fd, (uint64_t)fs.st_size, off,
					ckpt + r->journal_records + 1, &buf,
					&cap)) > 0) {
				off += JHDR + len;
				r->journal_records++;
			}
		}
		if (fd >= 0)
			close(fd);
		free(buf);
	}
	if (t.txn)
		mdb_txn_abort(t.txn);
out:
	mdb_env_close(m.env);
}

int
objfs_meta_verify(const char *dir, struct objfs_meta_report *r)
{
	struct objfs_meta_report rep;
	int pfd[2], status;
	ssize_t n;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (pipe(pfd) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		close(pfd[0]);
		memset(&rep, 0, sizeof(rep));
		verify_walk(dir, &rep);
		_exit(write(pfd[1], &rep, sizeof(rep)) == sizeof(rep) ? 0 : 1);
	}
	close(pfd[1]);
	do {
		n = read(pfd[0], &rep, sizeof(rep));
	} while (n < 0 && errno == EINTR);
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* The child writes its report once the walk is done: that is the
	 * verdict (a tool such as valgrind may change its exit status). */
	if (n == sizeof(rep)) {
		*r = rep;
		return 0;
	}
	r->status = -EUCLEAN;
	if (WIFSIGNALED(status))
		snprintf(r->what, sizeof(r->what), "reading it crashed (%s): its "
			"pages are damaged", strsignal(WTERMSIG(status)));
	else
		snprintf(r->what, sizeof(r->what), "reading it failed");
	return 0;
}

/* ---- records ------------------------------------------------------------ */

int
objfs_meta_super_get(struct objfs_meta_txn *t, const char *key, uint64_t *val)
{
	MDB_val v;
	int rc = get(t, DB_SUPER, key, strlen(key), &v);

	if (rc < 0)
		return rc;
	if (v.mv_size != sizeof(*val))
		return damaged(DB_SUPER, key, strlen(key));
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
		return damaged(DB_INODE, kb, 8);
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
	rc = del_range(t, DB_XATTR, ino, NULL, 0);
	if (rc < 0)
		return rc;
	return del_range(t, DB_CHUNK, ino, NULL, 0);
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
objfs_meta_dirent_get(struct objfs_meta_txn *t, uint64_t parent,
		const char *name, size_t len, struct objfs_dirent *out)
{
	unsigned char kb[8 + OBJFS_NAME_MAX];
	struct dirent_val dv;
	size_t klen;
	MDB_val v;
	int rc;

	if (len > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	klen = make_key(kb, parent, name, len);
	rc = get(t, DB_DIRENT, kb, klen, &v);
	if (rc < 0)
		return rc;
	if (v.mv_size != sizeof(dv))
		return damaged(DB_DIRENT, kb, klen);
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
stop_at_first(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	*(int *)arg = 1;
	return 1;
}

int
objfs_meta_dir_empty(struct objfs_meta_txn *t, uint64_t parent)
{
	int found = 0;
	int rc = range(t, DB_DIRCOOKIE, parent, NULL, 0, stop_at_first,
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
dir_list_one(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct dir_list_ctx *c = arg;
	struct objfs_dirent d;
	int rc;

	if (!ok || k->mv_size != 16 || v->mv_size == 0 ||
	    v->mv_size > OBJFS_NAME_MAX)
		return damaged(DB_DIRCOOKIE, k->mv_data, k->mv_size);
	rc = objfs_meta_dirent_get(c->t, c->parent, v->mv_data, v->mv_size, &d);
	if (rc == -ENOENT) {
		objfs_log(OBJFS_LOG_ERR, "index: directory %" PRIu64 " lists "
			"a name it does not hold", c->parent);
		return -EIO;
	}
	return rc < 0 ? rc : c->cb(c->arg, &d);
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
	return range(t, DB_DIRCOOKIE, parent, from, 8, dir_list_one, &c);
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
	return put(t, DB_XATTR, kb, klen, val, len, 0);
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
xattr_list_one(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct xlist_ctx *c = arg;
	size_t n = k->mv_size - 8;

	if (!ok)
		return damaged(DB_XATTR, k->mv_data, k->mv_size);
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
	int rc = range(t, DB_XATTR, ino, NULL, 0, xattr_list_one, &c);

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
		const struct objfs_chunk_rec *r)
{
	unsigned char kb[16], vb[CHUNK_VAL];

	put_be64(kb, ino);
	put_be64(kb + 8, idx);
	objfs_csum_to_canonical(r->csum, vb);
	memcpy(vb + 8, &r->len, 4);
	memcpy(vb + 12, &r->slot, 8);
	return put(t, DB_CHUNK, kb, 16, vb, CHUNK_VAL, 0);
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
	return del_range(t, DB_CHUNK, ino, from, 8);
}

struct chunk_list_ctx {
	int (*cb)(void *arg, uint64_t idx, const struct objfs_chunk_rec *r);
	int (*cb_all)(void *arg, uint64_t ino, uint64_t idx,
			const struct objfs_chunk_rec *r);
	void *arg;
};

static int
chunk_list_one(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct chunk_list_ctx *c = arg;
	struct objfs_chunk_rec r, *rp = NULL;
	uint64_t ino = 0, idx = 0;

	if (k->mv_size == 16) {
		ino = get_be64(k->mv_data);
		idx = get_be64((unsigned char *)k->mv_data + 8);
	}
	if (ok && k->mv_size == 16 && v->mv_size == CHUNK_VAL) {
		r.csum = objfs_csum_from_canonical(v->mv_data);
		memcpy(&r.len, (char *)v->mv_data + 8, 4);
		memcpy(&r.slot, (char *)v->mv_data + 12, 8);
		rp = &r;
	} else {
		(void)damaged(DB_CHUNK, k->mv_data, k->mv_size);
	}
	return c->cb ? c->cb(c->arg, idx, rp) : c->cb_all(c->arg, ino, idx, rp);
}

int
objfs_meta_chunk_list(struct objfs_meta_txn *t, uint64_t ino,
		int (*cb)(void *arg, uint64_t idx,
			const struct objfs_chunk_rec *r), void *arg)
{
	struct chunk_list_ctx c = { cb, NULL, arg };

	return range(t, DB_CHUNK, ino, NULL, 0, chunk_list_one, &c);
}

int
objfs_meta_chunk_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino, uint64_t idx,
			const struct objfs_chunk_rec *r), void *arg)
{
	struct chunk_list_ctx c = { NULL, cb, arg };

	return walk_db(t, DB_CHUNK, chunk_list_one, &c);
}

/* The DBs keyed by inode number alone, with empty values. */
static int
ino_set_add(struct objfs_meta_txn *t, int db, uint64_t ino)
{
	unsigned char kb[8];

	put_be64(kb, ino);
	return put(t, db, kb, 8, "", 0, 0);
}

static int
ino_set_del(struct objfs_meta_txn *t, int db, uint64_t ino)
{
	unsigned char kb[8];
	int rc;

	put_be64(kb, ino);
	rc = del(t, db, kb, 8);
	return rc == -ENOENT ? 0 : rc;
}

struct ino_list_ctx {
	int db;
	int (*cb)(void *arg, uint64_t ino);
	void *arg;
};

static int
ino_list_one(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct ino_list_ctx *c = arg;

	if (!ok || k->mv_size != 8)
		return damaged(c->db, k->mv_data, k->mv_size);
	return c->cb(c->arg, get_be64(k->mv_data));
}

static int
ino_set_list(struct objfs_meta_txn *t, int db,
		int (*cb)(void *arg, uint64_t ino), void *arg)
{
	struct ino_list_ctx c = { db, cb, arg };

	return walk_db(t, db, ino_list_one, &c);
}

int
objfs_meta_orphan_add(struct objfs_meta_txn *t, uint64_t ino)
{
	return ino_set_add(t, DB_ORPHAN, ino);
}

int
objfs_meta_orphan_del(struct objfs_meta_txn *t, uint64_t ino)
{
	return ino_set_del(t, DB_ORPHAN, ino);
}

int
objfs_meta_orphan_list(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino), void *arg)
{
	return ino_set_list(t, DB_ORPHAN, cb, arg);
}

int
objfs_meta_deleted_add(struct objfs_meta_txn *t, uint64_t ino)
{
	return ino_set_add(t, DB_DELETED, ino);
}

int
objfs_meta_deleted_del(struct objfs_meta_txn *t, uint64_t ino)
{
	return ino_set_del(t, DB_DELETED, ino);
}

int
objfs_meta_deleted_get(struct objfs_meta_txn *t, uint64_t ino)
{
	unsigned char kb[8];
	MDB_val v;

	put_be64(kb, ino);
	return get(t, DB_DELETED, kb, 8, &v);
}

int
objfs_meta_deleted_list(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino), void *arg)
{
	return ino_set_list(t, DB_DELETED, cb, arg);
}

/* ---- whole-index walks --------------------------------------------------- */

struct inode_all_ctx {
	int (*cb)(void *arg, uint64_t ino, const struct objfs_attr *a);
	void *arg;
};

static int
inode_all_one(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct inode_all_ctx *c = arg;
	struct objfs_attr a;
	uint64_t ino = k->mv_size == 8 ? get_be64(k->mv_data) : 0;

	if (!ok || k->mv_size != 8 || v->mv_size != sizeof(a))
		return c->cb(c->arg, ino, NULL);
	memcpy(&a, v->mv_data, sizeof(a));
	return c->cb(c->arg, ino, &a);
}

int
objfs_meta_inode_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino, const struct objfs_attr *a),
		void *arg)
{
	struct inode_all_ctx c = { cb, arg };

	return walk_db(t, DB_INODE, inode_all_one, &c);
}

struct dirent_all_ctx {
	int (*cb)(void *arg, uint64_t parent, const struct objfs_dirent *d);
	void *arg;
};

static int
dirent_all_one(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct dirent_all_ctx *c = arg;
	struct objfs_dirent d;
	struct dirent_val dv;
	uint64_t parent = k->mv_size >= 8 ? get_be64(k->mv_data) : 0;
	size_t n = k->mv_size - 8;

	if (!ok || k->mv_size <= 8 || n > OBJFS_NAME_MAX ||
	    v->mv_size != sizeof(dv))
		return c->cb(c->arg, parent, NULL);
	memcpy(&dv, v->mv_data, sizeof(dv));
	d.ino = dv.ino;
	d.cookie = dv.cookie;
	d.type = dv.type;
	d.namelen = (uint32_t)n;
	memcpy(d.name, (char *)k->mv_data + 8, n);
	d.name[n] = '\0';
	return c->cb(c->arg, parent, &d);
}

int
objfs_meta_dirent_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t parent,
			const struct objfs_dirent *d), void *arg)
{
	struct dirent_all_ctx c = { cb, arg };

	return walk_db(t, DB_DIRENT, dirent_all_one, &c);
}

struct cookie_all_ctx {
	int (*cb)(void *arg, uint64_t parent, uint64_t cookie,
			const char *name, size_t len);
	void *arg;
};

static int
cookie_all_one(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct cookie_all_ctx *c = arg;
	uint64_t parent = 0, cookie = 0;

	if (k->mv_size == 16) {
		parent = get_be64(k->mv_data);
		cookie = get_be64((unsigned char *)k->mv_data + 8);
	}
	if (!ok || k->mv_size != 16 || v->mv_size == 0 ||
	    v->mv_size > OBJFS_NAME_MAX)
		return c->cb(c->arg, parent, cookie, NULL, 0);
	return c->cb(c->arg, parent, cookie, v->mv_data, v->mv_size);
}

int
objfs_meta_cookie_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t parent, uint64_t cookie,
			const char *name, size_t len), void *arg)
{
	struct cookie_all_ctx c = { cb, arg };

	return walk_db(t, DB_DIRCOOKIE, cookie_all_one, &c);
}

struct owner_all_ctx {
	int db;
	int (*cb)(void *arg, const char *db, uint64_t ino, int ok);
	void *arg;
};

static int
owner_all_one(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct owner_all_ctx *c = arg;

	return c->cb(c->arg, db_names[c->db],
			k->mv_size >= 8 ? get_be64(k->mv_data) : 0,
			ok && k->mv_size >= 8);
}

int
objfs_meta_owner_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, const char *db, uint64_t ino, int ok),
		void *arg)
{
	struct owner_all_ctx c = { DB_XATTR, cb, arg };
	int rc = walk_db(t, DB_XATTR, owner_all_one, &c);

	if (rc < 0)
		return rc;
	c.db = DB_SYMLINK;
	return walk_db(t, DB_SYMLINK, owner_all_one, &c);
}
