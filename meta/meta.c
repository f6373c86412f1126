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

#include "src/base/csum.h"
#include "src/base/deadline.h"
#include "src/base/log.h"
#include "src/base/sync.h"
#include "meta/meta.h"
#include "meta/meta_int.h"
#include "meta/meta_keys.h"

#include "meta/meta_priv.h"

const char *const objfs_meta_db_names[OBJFS_META_NDBS] = {
	OBJFS_DB_SUPER, OBJFS_DB_INODE, OBJFS_DB_DIRENT, OBJFS_DB_DIRCOOKIE,
	OBJFS_DB_XATTR, OBJFS_DB_SYMLINK, OBJFS_DB_CHUNK, OBJFS_DB_ORPHAN,
	OBJFS_DB_DELETED, OBJFS_DB_SHARE, OBJFS_DB_CONTENT, OBJFS_DB_BYCSUM,
	OBJFS_DB_OUTBOX,
};

_Thread_local struct objfs_meta *meta_held;
_Thread_local int meta_held_depth;

/* ---- record checksums ------------------------------------------------ */

uint64_t
meta_rec_csum(int db, const void *k, size_t klen, const void *v, size_t vlen)
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
	/* A name that could not be one (meta.h): damaged, however it
	 * verifies (a pool's record, or an index written by another). */
	if (db == DB_DIRENT && (klen <= 8 ||
	    !objfs_name_ok((const char *)k + 8, klen - 8)))
		return 0;
	if (db == DB_DIRCOOKIE && !objfs_name_ok(v->mv_data,
	    v->mv_size - TRAILER))
		return 0;
	return objfs_csum_from_canonical((const unsigned char *)v->mv_data +
			v->mv_size - TRAILER) ==
		meta_rec_csum(db, k, klen, v->mv_data, v->mv_size - TRAILER);
}

int
objfs_meta_rec_ok(int db, const void *k, size_t klen, const void *v,
		size_t vlen)
{
	MDB_val val = { vlen, (void *)v };

	return db >= 0 && db < OBJFS_META_NDBS && rec_ok(db, k, klen, &val);
}

int
meta_damaged(int db, const void *k, size_t klen)
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

void
meta_lock(struct objfs_meta *m)
{
	if (meta_held == m) {
		meta_held_depth++;
		return;
	}
	pthread_mutex_lock(&m->lock);
	meta_held = m;
	meta_held_depth = 1;
}

/* meta_lock, waiting no later than the deadline of the system call the
 * thread serves (src/base/deadline.h): a commit of another thread may
 * hold the index while its record crosses the network (shared mode).
 * 0, or -ETIMEDOUT. */
static int
meta_lock_until(struct objfs_meta *m)
{
	if (meta_held == m || objfs_deadline() == 0) {
		meta_lock(m);
		return 0;
	}
	if (objfs_lock_until(&m->lock) < 0)
		return -ETIMEDOUT;
	meta_held = m;
	meta_held_depth = 1;
	return 0;
}

void
meta_unlock(struct objfs_meta *m)
{
	if (--meta_held_depth > 0)
		return;
	meta_held = NULL;
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

int
meta_jlog(struct objfs_meta *m, int op, int db, const void *k, size_t klen,
		const void *v, size_t vlen)
{
	size_t need = m->jlen + 8 + klen + vlen;
	unsigned char *p;

	if (jgrow(m, need) < 0)
		return -ENOMEM;
	p = m->jbuf + m->jlen;
	objfs_meta_entry_put(p, op, db, k, klen, v, vlen);
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

int
meta_get(struct objfs_meta_txn *t, int db, const void *k, size_t klen, MDB_val *v)
{
	MDB_val key = { klen, (void *)k };
	int rc = mdb_get(t->txn, t->m->dbi[db], &key, v);

	if (rc)
		return map_err(rc, "get");
	if (!rec_ok(db, k, klen, v))
		return meta_damaged(db, k, klen);
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
	objfs_csum_to_canonical(meta_rec_csum(db, k, klen, v, vlen),
			(unsigned char *)val.mv_data + vlen);
	*stored = val;
	return 0;
}

int
meta_raw_put(MDB_txn *txn, MDB_dbi dbi, int db, const void *k, size_t klen,
		const void *v, size_t vlen, MDB_val *stored)
{
	return raw_put(txn, dbi, db, k, klen, v, vlen, 0, stored);
}

int
meta_put(struct objfs_meta_txn *t, int db, const void *k, size_t klen,
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
	return meta_jlog(t->m, OBJFS_JOURNAL_PUT, db, k, klen, stored.mv_data,
			stored.mv_size);
}

int
meta_del(struct objfs_meta_txn *t, int db, const void *k, size_t klen)
{
	MDB_val key = { klen, (void *)k };
	int rc = writable(t);

	if (rc < 0)
		return rc;
	t->m->w_touched = 1;
	rc = mdb_del(t->txn, t->m->dbi[db], &key, NULL);
	if (rc)
		return map_err(rc, "del");
	return meta_jlog(t->m, OBJFS_JOURNAL_DEL, db, k, klen, NULL, 0);
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

int
meta_del_range(struct objfs_meta_txn *t, int db, uint64_t id, const void *from,
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
	return meta_jlog(t->m, OBJFS_JOURNAL_DELRANGE, db, kb, klen, NULL, 0);
}

/*
 * Walk every key that starts with be64(@id), from be64(@id).@from, calling
 * @cb(arg, key, val, ok) until it returns non-zero (1 = stop, <0 = error);
 * @ok says whether the record's checksum holds (the value comes without
 * its trailer then).
 */
int
meta_range(struct objfs_meta_txn *t, int db, uint64_t id, const void *from,
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

/* Every record of @db, as meta_range() does for one id. */
int
meta_walk_db(struct objfs_meta_txn *t, int db,
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

int
meta_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
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
	rc = meta_pwrite_all(m->jfd, m->jbuf, m->jlen, m->joff);
	if (rc < 0) {
		objfs_log(OBJFS_LOG_ERR, "index: cannot write the journal: %s",
			strerror(-rc));
		return rc;
	}
	m->joff += m->jlen;
	m->jseq = seq;
	return 0;
}

/* The remote tier's copy of commit @seq's payload (OBJFS_META_OUTBOX), in
 * the batch: it reaches LMDB with the commit's own changes, so that a
 * commit is never in the index without it, nor it without the commit. */
int
meta_outbox_put(struct objfs_meta *m, MDB_txn *txn, uint64_t seq,
		const void *p, size_t len)
{
	unsigned char k[8];
	MDB_val stored;

	if (!m->outbox)
		return 0;
	put_be64(k, seq);
	return raw_put(txn, m->dbi[DB_OUTBOX], DB_OUTBOX, k, 8, p, len, 0,
			&stored);
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

int
meta_super_get_raw(struct objfs_meta *m, MDB_txn *txn, const char *key,
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
int
meta_replay(struct objfs_meta *m, uint64_t *n)
{
	unsigned char *buf = NULL;
	size_t cap = 0, len;
	uint64_t ckpt = 0, off = 0;
	int rc;

	*n = 0;
	rc = meta_super_get_raw(m, m->batch, OBJFS_SUPER_JOURNAL, &ckpt);
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	m->ckpt_seq = ckpt;
	while ((len = objfs_meta_journal_read(m->jfd, m->jsize, off, ckpt + *n + 1, &buf,
			&cap)) > 0) {
		rc = apply(m, m->batch, buf, len);
		if (rc == 0)
			rc = meta_outbox_put(m, m->batch, ckpt + *n + 1, buf,
					len);
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
		rc = meta_replay(m, &n);
	if (rc == 0 && m->jseq == want)
		return 0;
	objfs_log(OBJFS_LOG_ERR, "index: cannot rebuild the changes since the "
		"last checkpoint (%s); refusing further changes, the next mount "
		"replays the journal", rc ? mdb_strerror(rc) : "journal short");
	m->broken = 1;
	return -EIO;
}

/* Keep disk blocks allocated beyond the data file's end: the whole
 * reserve, or on a full disk as much of it as there is room for (in
 * halving steps down to 1 MiB), so that space freed by deletions is
 * taken back at once, not only once the whole reserve fits again. */
static void
top_up(struct objfs_meta *m)
{
	uint64_t from, want, step;
	struct stat st;

	if (!m->reserve || fstat(m->dfd, &st) < 0)
		return;
	want = (uint64_t)st.st_size + m->reserve;
	from = (uint64_t)st.st_size > m->reserved_to ? (uint64_t)st.st_size :
		m->reserved_to;
	for (step = want > from ? want - from : 0; from < want &&
	     step >= (1u << 20);) {
		uint64_t n = step < want - from ? step : want - from;

		if (fallocate(m->dfd, FALLOC_FL_KEEP_SIZE, (off_t)from,
				(off_t)n) == 0) {
			from += n;
			m->reserved_to = from;
			continue;
		}
		if (errno != ENOSPC) {
			objfs_log(OBJFS_LOG_INFO, "index: cannot reserve disk "
				"blocks: %m");
			m->reserve = 0;
			m->tight = 0;
			return;
		}
		step /= 2;
	}
	/* Essential writes only, from what is left, once less than a
	 * quarter of the reserve remains. */
	m->tight = (uint64_t)st.st_size + m->reserve / 4 > m->reserved_to;
}

/* Commit the batch to LMDB (locked, no write under way). */
int
meta_checkpoint(struct objfs_meta *m)
{
	MDB_val stored;
	uint64_t seq = m->seq;
	int rc;

	if (!m->batch || m->rdonly)
		return 0;
	if (seq == m->ckpt_seq && !m->raw_dirty) {
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
	m->raw_dirty = 0;
	atomic_store(&m->durable_seq, seq);
	m->joff = 0;
	m->batch_ns = 0;
	top_up(m);
	return 0;
}

int
meta_ensure_batch(struct objfs_meta *m)
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
	rc = meta_lock_until(m);
	if (rc < 0) {
		free(t);
		return rc;
	}
	rc = m->broken ? -EIO : write && m->rdonly ? -EROFS : 0;
	if (rc == 0 && write && m->w) {
		objfs_log(OBJFS_LOG_ERR, "index: a write inside a write");
		rc = -EDEADLK;
	}
	if (rc == 0 && write && m->tight && write != OBJFS_META_ESSENTIAL)
		rc = -ENOSPC;
	if (rc == 0)
		rc = meta_ensure_batch(m);
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

/* The super "remote_pos" = @pos, in the batch and the journal record
 * (after the hook saw the commit's own changes). */
static int
pos_put(struct objfs_meta *m, uint64_t pos)
{
	static const char key[] = OBJFS_SUPER_REMOTE_POS;
	MDB_val stored;
	int rc;

	m->w_touched = 1;
	rc = raw_put(m->batch, m->dbi[DB_SUPER], DB_SUPER, key,
			sizeof(key) - 1, &pos, sizeof(pos), 0, &stored);
	if (rc)
		return rc;
	return meta_jlog(m, OBJFS_JOURNAL_PUT, DB_SUPER, key, sizeof(key) - 1,
			stored.mv_data, stored.mv_size) < 0 ? ENOMEM : 0;
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
	/* The hook (the remote tier's shared mode) first: it may refuse the
	 * commit, and may name the pool's log position it took (even for a
	 * commit that changes nothing here: another mount's whose entries
	 * are all of its own data directory still moves the position). */
	if (m->hook) {
		uint64_t pos = 0;

		rc = m->hook(m->hook_arg, t, m->jbuf + JHDR, m->jlen - JHDR,
				&pos);
		if (rc == 0 && pos)
			rc = map_err(pos_put(m, pos), "remote_pos");
		if (rc < 0) {
			(void)rollback(m);
			return rc;
		}
	}
	if (m->jlen == JHDR) {		/* changed nothing */
		*seq_out = m->seq;
		return rollback(m);	/* a failed put may have, though */
	}
	/* The remote tier's copy first: if it cannot be made, the commit
	 * fails whole. */
	rc = map_err(meta_outbox_put(m, m->batch, next, m->jbuf + JHDR,
			m->jlen - JHDR), "outbox");
	if (rc < 0) {
		(void)rollback(m);
		return rc;
	}
	/* The last quarter of the journal is for essential writes, so that
	 * deletes still work when a full disk stops checkpoints. */
	if (m->jlen - JHDR > m->jsize / 2 || m->joff + m->jlen > (t->write ==
			OBJFS_META_ESSENTIAL ? m->jsize : m->jsize / 4 * 3)) {
		/* No room in the journal: straight into a checkpoint. */
		m->seq = next;
		rc = meta_checkpoint(m);
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
		rc = meta_checkpoint(m);
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
