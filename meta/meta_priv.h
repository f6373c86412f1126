/* SPDX-License-Identifier: MIT */
/*
 * meta_priv.h - what meta.c (the batch, the journal, transactions,
 * opening), records.c (the records of each DB) and verify.c (the walk of
 * the whole structure) share.  Only meta/ includes it.
 */
#ifndef OBJFS_META_PRIV_H
#define OBJFS_META_PRIV_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "src/base/be.h"
#include "src/base/log.h"
#include "meta/meta.h"
#include "meta/meta_int.h"
#include "meta/meta_keys.h"

#define db_names objfs_meta_db_names

#define MAP_SIZE	(16ull << 30)	/* the index's limit */
#define TRAILER		OBJFS_META_TRAILER
#define JHDR		OBJFS_META_JHDR
#define RESERVE		(32ull << 20)	/* allocated beyond the data */
#define MIN_RESERVE	(2ull << 20)
#define JOURNAL_SIZE	(8u << 20)
#define JOURNAL_MIN	(1u << 20)
#define CHUNK_VAL	20		/* csum 8, len 4, slot 8 */
#define CHUNK_ALT(n)	(8 + 8 * CHUNK_MAP_WORDS(n))	/* alt slot, map */
#define CHUNK_MAP_WORDS(n)	((n) <= 128 ? 2u : ((n) + 63) / 64)
					/* 16 bytes up to 128 sub-blocks
					 * (schema 3's only size) */
#define CHUNK_HOME	8		/* a shared copy's home inode, in
					 * place of alt and map (schema 5) */
#define CHUNK_VAL_MAX	(CHUNK_VAL + 1 + 4 * OBJFS_SUMS_MAX + \
			 CHUNK_ALT(OBJFS_SUMS_MAX))
					/* shift 1, sums, alt */



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
	/* The commit hook (objfs_meta_set_hook): the remote tier's shared
	 * mode, NULL otherwise. */
	objfs_meta_hook_fn hook;
	void *hook_arg;
	int outbox;			/* keeps each commit's payload for the
					 * remote tier (OBJFS_META_OUTBOX) */
	int raw_dirty;			/* the batch holds changes no journal
					 * record has (the outbox's, an
					 * import): checkpoint even if no
					 * commit was made */
};

struct objfs_meta_txn {
	struct objfs_meta *m;
	MDB_txn *txn;
	int write;
};

/* The index this thread holds and how deep (transactions nest). */
extern _Thread_local struct objfs_meta *meta_held;
extern _Thread_local int meta_held_depth;

struct dirent_val {
	uint64_t ino;
	uint64_t cookie;
	uint32_t type;
	uint32_t pad;
};

static inline int
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

/* key = be64(id) . tail */
static inline size_t
make_key(unsigned char *buf, uint64_t id, const void *tail, size_t len)
{
	put_be64(buf, id);
	if (len)
		memcpy(buf + 8, tail, len);
	return 8 + len;
}

static inline uint64_t
monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* meta.c: the primitives open.c, records.c and verify.c build on.  Reads
 * and writes of one record, checked against its trailer (-EIO and a log
 * line when it does not match), in the batch when @t writes. */
int meta_get(struct objfs_meta_txn *t, int db, const void *k, size_t klen,
		MDB_val *v);
int meta_put(struct objfs_meta_txn *t, int db, const void *k, size_t klen,
		const void *v, size_t vlen, unsigned flags);
int meta_del(struct objfs_meta_txn *t, int db, const void *k, size_t klen);
/* Add an entry to the write transaction's journal record. */
int meta_jlog(struct objfs_meta *m, int op, int db, const void *k, size_t klen,
		const void *v, size_t vlen);
/* Delete, or walk, the keys of @db that start with be64(@id), from the
 * tail @from on. */
int meta_del_range(struct objfs_meta_txn *t, int db, uint64_t id,
		const void *from, size_t fromlen);
int meta_range(struct objfs_meta_txn *t, int db, uint64_t id,
		const void *from, size_t fromlen,
		int (*cb)(void *arg, MDB_val *k, MDB_val *v, int ok),
		void *arg);
/* Log a record whose checksum does not match; -EIO. */
int meta_damaged(int db, const void *k, size_t klen);
/* Every record of @db; @ok says whether its checksum matched. */
int meta_walk_db(struct objfs_meta_txn *t, int db,
		int (*cb)(void *arg, MDB_val *k, MDB_val *v, int ok),
		void *arg);
/* The checksum trailer of a record. */
uint64_t meta_rec_csum(int db, const void *k, size_t klen, const void *v,
		size_t vlen);
/* Convert a schema 1 index (before record checksums and slots). */
int meta_legacy_schema(struct objfs_meta *m, MDB_txn *txn);
int meta_super_get_raw(struct objfs_meta *m, MDB_txn *txn, const char *key,
		uint64_t *val);
/* Open LMDB's environment and DBs in @dir; its errors as errnos. */
int meta_env_open(struct objfs_meta *m, const char *dir, int rdonly);
int meta_open_err(int rc);
/* The batch, the journal and the checkpoint (m->lock held). */
int meta_ensure_batch(struct objfs_meta *m);
int meta_replay(struct objfs_meta *m, uint64_t *n);
int meta_checkpoint(struct objfs_meta *m);
/* Store @v under @k in @txn with its trailer (the stored value, for the
 * journal, in *@stored): a positive MDB error or 0. */
int meta_raw_put(MDB_txn *txn, MDB_dbi dbi, int db, const void *k,
		size_t klen, const void *v, size_t vlen, MDB_val *stored);
int meta_outbox_put(struct objfs_meta *m, MDB_txn *txn, uint64_t seq,
		const void *p, size_t len);
int meta_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
void meta_lock(struct objfs_meta *m);
void meta_unlock(struct objfs_meta *m);

#endif
