/* SPDX-License-Identifier: MIT */
/*
 * entry.c - the journal's entry format (meta_keys.h): one put, delete or
 * range delete as bytes, and the walk of a record's entries.  The
 * journal (meta.c), the outbox and snapshots (ship.c), the salvage
 * (salvage.c) and the pool's log (src/cluster/lease.c) all speak it; it
 * calls nothing of theirs.
 */
#include <config.h>

#include <lmdb.h>
#include <string.h>

#include "meta/meta.h"
#include "meta/meta_int.h"

size_t
objfs_meta_entry_put(unsigned char *p, int op, int db, const void *k,
		size_t klen, const void *v, size_t vlen)
{
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
	return 8 + klen + vlen;
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
