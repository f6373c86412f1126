/* SPDX-License-Identifier: MIT */
/*
 * open.c - opening the index (made, checked, upgraded, its journal
 * replayed), its reserve of disk blocks, closing it with a last
 * checkpoint, and rebuilding one from salvaged records.  See meta.c for
 * the batch and the journal.
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
#include "src/base/log.h"
#include "meta/meta.h"
#include "meta/meta_int.h"
#include "meta/meta_keys.h"

#include "meta/meta_priv.h"

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

/* @want, halved down to @floor while it is more than an eighth of what
 * the disk holding @fd has free: the index's own space must leave a
 * small disk room for the data (a 25 MiB disk gave 8 MiB to the journal
 * and 16 to the reserve, and the mount then had no room to record the
 * directory's id). */
static uint64_t
fit_disk(int fd, uint64_t want, uint64_t floor)
{
	struct statvfs sv;
	uint64_t avail;

	if (fstatvfs(fd, &sv) < 0)
		return want;
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	while (want > floor && want > avail / 8)
		want /= 2;
	return want;
}

/* Make the journal: zeros, flushed, so that later writes change no
 * metadata.  As large as the disk allows (fit_disk), down to
 * JOURNAL_MIN. */
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
		want = fit_disk(fd, want, JOURNAL_MIN);
		rc = 0;
		for (uint64_t off = 0; rc == 0 && off < want; off += sizeof(zero))
			rc = meta_pwrite_all(fd, zero, sizeof(zero), off);
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
	for (m->reserve = fit_disk(m->dfd, RESERVE, MIN_RESERVE);
	     m->reserve >= MIN_RESERVE; m->reserve /= 2) {
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

/*
 * Schema 1 (objfs before records had checksums and chunks had slots):
 * rewrite every value with its trailer, chunk records with slot = index
 * (where schema 1 kept them), inode records with their count of chunk
 * records.  In the transaction that opens the DBs, so all or nothing.
 */
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
			plen = OBJFS_ATTR_RECORD;
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
			memcpy(buf, &a, OBJFS_ATTR_RECORD);
		} else if (db == DB_SUPER && k.mv_size == 6 &&
			   memcmp(kb, OBJFS_SUPER_SCHEMA, 6) == 0) {
			uint64_t two = OBJFS_META_SCHEMA_V3;

			memcpy(buf, &two, 8);
		} else if (plen) {
			memcpy(buf, v.mv_data, plen);
		}
		objfs_csum_to_canonical(meta_rec_csum(db, kb, nk.mv_size, buf, plen),
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
	m->outbox = !!(flags & OBJFS_META_OUTBOX) && !rdonly;
	pthread_mutex_init(&m->lock, NULL);
	/* A new index: the journal first, so that an index file never
	 * exists without one. */
	if (fresh && (rc = journal_open(m, dir, fresh)) < 0)
		goto err_free;
	rc = meta_env_open(m, dir, 0);
	if (rc) {
		rc = meta_open_err(rc);
		goto err_free;
	}
	rc = mdb_env_get_fd(m->env, &m->dfd);
	if (rc == 0)
		rc = mdb_txn_begin(m->env, NULL, 0, &txn);
	if (rc) {
		rc = meta_open_err(rc);
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
			rc = meta_open_err(rc);
			goto err_env;
		}
	}
	if (!fresh && meta_legacy_schema(m, txn) && (rc = migrate_v1(m, txn))) {
		objfs_log(OBJFS_LOG_ERR, "index: cannot convert it from schema "
			"1: %s", mdb_strerror(rc));
		mdb_txn_abort(txn);
		m->batch = NULL;
		rc = rc == ENOMEM ? -ENOMEM : -EUCLEAN;
		goto err_env;
	}
	rc = rdonly ? 0 : mdb_txn_commit(txn);
	if (rc) {
		rc = meta_open_err(rc);
		goto err_env;
	}
	if (fresh && (rc = fsync_dir(dir)) < 0)
		goto err_env;
	if (!fresh && (rc = journal_open(m, dir, fresh)) < 0)
		goto err_batch;
	if (!rdonly)
		reserve_open(m);
	meta_lock(m);
	rc = meta_ensure_batch(m);
	if (rc == 0) {
		rc = meta_replay(m, &n);
		rc = rc ? map_err(rc, "journal replay") : 0;
	}
	if (rc == 0 && n && !rdonly) {
		objfs_log(OBJFS_LOG_INFO, "index: replayed %" PRIu64 " journal "
			"record(s) left by a daemon that did not stop cleanly",
			n);
		/* Durable before anything acts on it (a slot that only
		 * the replayed state leaves free must stay free). */
		if (meta_checkpoint(m) < 0 && !m->broken) {
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
		rc = meta_checkpoint(m);
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
