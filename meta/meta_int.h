/* SPDX-License-Identifier: MIT */
/*
 * meta_int.h - what meta.c shares with salvage.c.  Not for other code.
 */
#ifndef OBJFS_META_INT_H
#define OBJFS_META_INT_H

#include <stddef.h>
#include <stdint.h>

#include "meta/meta_keys.h"

#define OBJFS_META_TRAILER	8	/* record checksum, ends every value */
#define OBJFS_META_JHDR		24	/* journal record header */

/* LMDB 0.9's file format (mdb.c), 64-bit: a page starts with a 16-byte
 * header (pgno, pad, flags, lower, upper); a meta page's offsets. */
#define LMDB_PAGEHDR		16
#define LMDB_P_META		0x08
#define LMDB_MAGIC		0xBEEFC0DEu
#define LMDB_META_DBS		40	/* mm_dbs */
#define LMDB_META_TXNID		144	/* mm_txnid */

enum { DB_SUPER, DB_INODE, DB_DIRENT, DB_DIRCOOKIE, DB_XATTR, DB_SYMLINK,
	DB_CHUNK, DB_ORPHAN, DB_DELETED, DB_SHARE, DB_CONTENT,
	DB_BYCSUM, DB_OUTBOX };

extern const char *const objfs_meta_db_names[OBJFS_META_NDBS];

/* Is @v[0..vlen) (trailer included) a value stored under @k in @db? */
int objfs_meta_rec_ok(int db, const void *k, size_t klen, const void *v,
		size_t vlen);
/* The journal record at @off numbered @expect, into *@buf: its payload
 * length, or 0 when there is none (the end, torn or stale). */
size_t objfs_meta_journal_read(int fd, uint64_t jsize, uint64_t off,
		uint64_t expect, unsigned char **buf, size_t *cap);
/* Walk one record's payload: @cb gets each entry (op, DB, key, value). */
int objfs_meta_journal_entries(const unsigned char *p, size_t len,
		int (*cb)(void *arg, int op, int db, const unsigned char *k,
			size_t klen, const unsigned char *v, size_t vlen),
		void *arg);

#endif
