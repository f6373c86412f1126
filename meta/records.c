/* SPDX-License-Identifier: MIT */
/*
 * records.c - the records of each DB (super, inodes, names, readdir
 * cookies, xattrs, symlinks, chunks, orphans, tombstones) and the walks
 * over a whole DB.  Formats in meta_keys.h; every value carries its
 * checksum trailer (meta.c).
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

/* ---- records ------------------------------------------------------------ */

int
objfs_meta_super_get(struct objfs_meta_txn *t, const char *key, uint64_t *val)
{
	MDB_val v;
	int rc = meta_get(t, DB_SUPER, key, strlen(key), &v);

	if (rc < 0)
		return rc;
	if (v.mv_size != sizeof(*val))
		return meta_damaged(DB_SUPER, key, strlen(key));
	memcpy(val, v.mv_data, sizeof(*val));
	return 0;
}

int
objfs_meta_super_put(struct objfs_meta_txn *t, const char *key, uint64_t val)
{
	return meta_put(t, DB_SUPER, key, strlen(key), &val, sizeof(val), 0);
}

int
objfs_meta_super_del(struct objfs_meta_txn *t, const char *key)
{
	return meta_del(t, DB_SUPER, key, strlen(key));
}

int
objfs_meta_inode_get(struct objfs_meta_txn *t, uint64_t ino,
		struct objfs_attr *a)
{
	unsigned char kb[8];
	MDB_val v;
	int rc;

	put_be64(kb, ino);
	rc = meta_get(t, DB_INODE, kb, 8, &v);
	if (rc < 0)
		return rc;
	if (v.mv_size != OBJFS_ATTR_RECORD)
		return meta_damaged(DB_INODE, kb, 8);
	memcpy(a, v.mv_data, OBJFS_ATTR_RECORD);
	a->held = 0;
	return 0;
}

int
objfs_meta_inode_put(struct objfs_meta_txn *t, const struct objfs_attr *a)
{
	unsigned char kb[8];

	put_be64(kb, a->ino);
	return meta_put(t, DB_INODE, kb, 8, a, OBJFS_ATTR_RECORD, 0);
}

int
objfs_meta_inode_del(struct objfs_meta_txn *t, uint64_t ino)
{
	unsigned char kb[8];
	int rc;

	put_be64(kb, ino);
	rc = meta_del(t, DB_INODE, kb, 8);
	if (rc < 0)
		return rc;
	rc = meta_del(t, DB_SYMLINK, kb, 8);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	rc = meta_del_range(t, DB_XATTR, ino, NULL, 0);
	if (rc < 0)
		return rc;
	return meta_del_range(t, DB_CHUNK, ino, NULL, 0);
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
	rc = meta_get(t, DB_DIRENT, kb, klen, &v);
	if (rc < 0)
		return rc;
	if (v.mv_size != sizeof(dv))
		return meta_damaged(DB_DIRENT, kb, klen);
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
	if (!objfs_name_ok(name, len))
		return -EINVAL;		/* read back, it would be damaged */
	rc = meta_put(t, DB_DIRENT, kb, make_key(kb, parent, name, len), &dv,
			sizeof(dv), MDB_NOOVERWRITE);
	if (rc < 0)
		return rc;
	put_be64(cb, parent);
	put_be64(cb + 8, cookie);
	return meta_put(t, DB_DIRCOOKIE, cb, 16, name, len, MDB_NOOVERWRITE);
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
	rc = meta_del(t, DB_DIRENT, kb, make_key(kb, parent, name, len));
	if (rc < 0)
		return rc;
	put_be64(cb, parent);
	put_be64(cb + 8, d.cookie);
	return meta_del(t, DB_DIRCOOKIE, cb, 16);
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
	int rc = meta_range(t, DB_DIRCOOKIE, parent, NULL, 0, stop_at_first,
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
		return meta_damaged(DB_DIRCOOKIE, k->mv_data, k->mv_size);
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
	return meta_range(t, DB_DIRCOOKIE, parent, from, 8, dir_list_one, &c);
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
	rc = meta_get(t, DB_XATTR, kb, xattr_key(kb, ino, name), &v);
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
	rc = meta_get(t, DB_XATTR, kb, klen, &v);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (rc == 0 && (flags & XATTR_CREATE))
		return -EEXIST;
	if (rc == -ENOENT && (flags & XATTR_REPLACE))
		return -ENODATA;
	return meta_put(t, DB_XATTR, kb, klen, val, len, 0);
}

int
objfs_meta_xattr_del(struct objfs_meta_txn *t, uint64_t ino, const char *name)
{
	unsigned char kb[8 + OBJFS_XATTR_NAME_MAX];
	int rc;

	if (strlen(name) > OBJFS_XATTR_NAME_MAX)
		return -ERANGE;
	rc = meta_del(t, DB_XATTR, kb, xattr_key(kb, ino, name));
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
		return meta_damaged(DB_XATTR, k->mv_data, k->mv_size);
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
	int rc = meta_range(t, DB_XATTR, ino, NULL, 0, xattr_list_one, &c);

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
	return meta_put(t, DB_SYMLINK, kb, 8, target, len, 0);
}

int
objfs_meta_symlink_get(struct objfs_meta_txn *t, uint64_t ino, char *buf,
		size_t size, size_t *len_out)
{
	unsigned char kb[8];
	MDB_val v;
	int rc;

	put_be64(kb, ino);
	rc = meta_get(t, DB_SYMLINK, kb, 8, &v);
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
	unsigned char kb[16], vb[CHUNK_VAL_MAX];
	size_t vlen = CHUNK_VAL;

	put_be64(kb, ino);
	put_be64(kb + 8, idx);
	objfs_csum_to_canonical(r->csum, vb);
	memcpy(vb + 8, &r->len, 4);
	memcpy(vb + 12, &r->slot, 8);
	if (r->shift) {
		uint32_t n = objfs_nsums(r->len, r->shift);

		if (n > OBJFS_SUMS_MAX || r->shift > 31)
			return -EINVAL;
		vb[CHUNK_VAL] = (unsigned char)r->shift;
		memcpy(vb + CHUNK_VAL + 1, r->tab, 4 * (size_t)n);
		vlen += 1 + 4 * (size_t)n;
		if (r->home && r->has_alt)
			return -EINVAL;	/* a shared copy has no second slot */
		if (r->home) {
			put_be64(vb + vlen, r->home);
			vlen += CHUNK_HOME;
		} else if (r->has_alt) {
			put_be64(vb + vlen, r->alt);
			for (uint32_t w = 0; w < CHUNK_MAP_WORDS(n); w++)
				put_be64(vb + vlen + 8 + 8 * w, r->map[w]);
			vlen += CHUNK_ALT(n);
		}
	} else if (r->has_alt || r->home) {
		return -EINVAL;		/* both need sub-blocks */
	}
	return meta_put(t, DB_CHUNK, kb, 16, vb, vlen, 0);
}

_Static_assert(CHUNK_MAP_WORDS(OBJFS_SUMS_MAX) == OBJFS_BITS_WORDS,
		"a chunk value holds the largest map of sub-blocks");

/* Decode a chunk value of @vlen bytes (trailer off) into @r, its table
 * pointing into @v; 0 when it is not one objfs writes. */
static int
chunk_decode(const unsigned char *v, size_t vlen, struct objfs_chunk_rec *r)
{
	size_t base;
	uint32_t n;

	if (vlen < CHUNK_VAL)
		return 0;
	r->csum = objfs_csum_from_canonical(v);
	memcpy(&r->len, v + 8, 4);
	memcpy(&r->slot, v + 12, 8);

	r->shift = 0;
	r->tab = NULL;
	r->has_alt = 0;
	r->alt = 0;
	r->home = 0;
	objfs_bits_zero(r->map);
	if (vlen == CHUNK_VAL)
		return 1;
	r->shift = v[CHUNK_VAL];
	r->tab = v + CHUNK_VAL + 1;
	if (r->shift < OBJFS_SUMS_MIN_SHIFT || r->shift > 31 ||
	    objfs_nsums(r->len, r->shift) > OBJFS_SUMS_MAX)
		return 0;
	n = objfs_nsums(r->len, r->shift);
	base = CHUNK_VAL + 1 + 4 * (size_t)n;
	if (vlen == base)
		return 1;
	if (vlen == base + CHUNK_HOME) {	/* CHUNK_ALT is longer */
		r->home = get_be64(v + base);
		return r->home != 0;
	}
	if (vlen != base + CHUNK_ALT(n))
		return 0;
	r->has_alt = 1;
	r->alt = get_be64(v + base);
	for (uint32_t w = 0; w < CHUNK_MAP_WORDS(n); w++)
		r->map[w] = get_be64(v + base + 8 + 8 * w);
	return 1;
}

int
objfs_meta_chunk_get(struct objfs_meta_txn *t, uint64_t ino, uint64_t idx,
		struct objfs_chunk_rec *r, unsigned char *tab)
{
	unsigned char kb[16];
	MDB_val v;
	int rc;

	put_be64(kb, ino);
	put_be64(kb + 8, idx);
	rc = meta_get(t, DB_CHUNK, kb, 16, &v);
	if (rc < 0)
		return rc;
	if (!chunk_decode(v.mv_data, v.mv_size, r))
		return meta_damaged(DB_CHUNK, kb, 16);
	if (r->shift) {
		memcpy(tab, r->tab, 4 * (size_t)objfs_nsums(r->len, r->shift));
		r->tab = tab;
	}
	return 0;
}

int
objfs_meta_chunk_del(struct objfs_meta_txn *t, uint64_t ino, uint64_t idx)
{
	unsigned char kb[16];
	int rc;

	put_be64(kb, ino);
	put_be64(kb + 8, idx);
	rc = meta_del(t, DB_CHUNK, kb, 16);
	return rc == -ENOENT ? 0 : rc;
}

int
objfs_meta_chunk_del_from(struct objfs_meta_txn *t, uint64_t ino,
		uint64_t first)
{
	unsigned char from[8];

	put_be64(from, first);
	return meta_del_range(t, DB_CHUNK, ino, from, 8);
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
	if (ok && k->mv_size == 16 && chunk_decode(v->mv_data, v->mv_size, &r)) {
		rp = &r;
	} else {
		(void)meta_damaged(DB_CHUNK, k->mv_data, k->mv_size);
	}
	return c->cb ? c->cb(c->arg, idx, rp) : c->cb_all(c->arg, ino, idx, rp);
}

int
objfs_meta_chunk_list(struct objfs_meta_txn *t, uint64_t ino,
		int (*cb)(void *arg, uint64_t idx,
			const struct objfs_chunk_rec *r), void *arg)
{
	struct chunk_list_ctx c = { cb, NULL, arg };

	return meta_range(t, DB_CHUNK, ino, NULL, 0, chunk_list_one, &c);
}

int
objfs_meta_chunk_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino, uint64_t idx,
			const struct objfs_chunk_rec *r), void *arg)
{
	struct chunk_list_ctx c = { NULL, cb, arg };

	return meta_walk_db(t, DB_CHUNK, chunk_list_one, &c);
}

/* ---- shared disk copies ------------------------------------------------ */

int
objfs_meta_share_get(struct objfs_meta_txn *t, uint64_t home, uint64_t slot,
		uint64_t *n)
{
	unsigned char kb[16];
	MDB_val v;
	int rc;

	put_be64(kb, home);
	put_be64(kb + 8, slot);
	rc = meta_get(t, DB_SHARE, kb, 16, &v);
	if (rc < 0)
		return rc;
	if (v.mv_size != 8)
		return meta_damaged(DB_SHARE, kb, 16);
	*n = get_be64(v.mv_data);
	return 0;
}

int
objfs_meta_share_put(struct objfs_meta_txn *t, uint64_t home, uint64_t slot,
		uint64_t n)
{
	unsigned char kb[16], vb[8];
	int rc;

	put_be64(kb, home);
	put_be64(kb + 8, slot);
	if (n == 0) {
		rc = meta_del(t, DB_SHARE, kb, 16);
		return rc == -ENOENT ? 0 : rc;
	}
	put_be64(vb, n);
	return meta_put(t, DB_SHARE, kb, 16, vb, 8, 0);
}

struct share_ctx {
	int (*cb)(void *arg, uint64_t slot, uint64_t n);
	int (*cb_all)(void *arg, uint64_t home, uint64_t slot, uint64_t n);
	void *arg;
};

static int
share_one(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct share_ctx *c = arg;
	uint64_t home, slot, n = 0;

	if (k->mv_size != 16)
		return meta_damaged(DB_SHARE, k->mv_data, k->mv_size);
	home = get_be64(k->mv_data);
	slot = get_be64((unsigned char *)k->mv_data + 8);
	if (ok && v->mv_size == 8)
		n = get_be64(v->mv_data);
	else
		(void)meta_damaged(DB_SHARE, k->mv_data, k->mv_size);
	if (c->cb)
		return n ? c->cb(c->arg, slot, n) : -EIO;
	return c->cb_all(c->arg, home, slot, n);
}

int
objfs_meta_share_list(struct objfs_meta_txn *t, uint64_t home,
		int (*cb)(void *arg, uint64_t slot, uint64_t n), void *arg)
{
	struct share_ctx c = { cb, NULL, arg };

	return meta_range(t, DB_SHARE, home, NULL, 0, share_one, &c);
}

int
objfs_meta_share_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t home, uint64_t slot, uint64_t n),
		void *arg)
{
	struct share_ctx c = { NULL, cb, arg };

	return meta_walk_db(t, DB_SHARE, share_one, &c);
}

/* ---- what copies hold (dedup) ------------------------------------------ */

int
objfs_meta_content_get(struct objfs_meta_txn *t, uint64_t home, uint64_t slot,
		uint64_t *csum, uint64_t *idx)
{
	unsigned char kb[16];
	MDB_val v;
	int rc;

	put_be64(kb, home);
	put_be64(kb + 8, slot);
	rc = meta_get(t, DB_CONTENT, kb, 16, &v);
	if (rc < 0)
		return rc;
	if (v.mv_size != 16)
		return meta_damaged(DB_CONTENT, kb, 16);
	*csum = get_be64(v.mv_data);
	*idx = get_be64((unsigned char *)v.mv_data + 8);
	return 0;
}

int
objfs_meta_content_del(struct objfs_meta_txn *t, uint64_t home, uint64_t slot)
{
	unsigned char kb[24];
	uint64_t csum, idx;
	int rc = objfs_meta_content_get(t, home, slot, &csum, &idx);

	if (rc == -ENOENT)
		return 0;
	put_be64(kb, home);
	put_be64(kb + 8, slot);
	if (rc == 0 || rc == -EIO)	/* a damaged one goes too */
		rc = meta_del(t, DB_CONTENT, kb, 16);
	if (rc < 0)
		return rc;
	put_be64(kb, csum);
	put_be64(kb + 8, home);
	put_be64(kb + 16, slot);
	rc = meta_del(t, DB_BYCSUM, kb, 24);
	return rc == -ENOENT ? 0 : rc;
}

int
objfs_meta_content_set(struct objfs_meta_txn *t, uint64_t home, uint64_t slot,
		uint64_t csum, uint64_t idx)
{
	unsigned char kb[24], vb[16];
	int rc = objfs_meta_content_del(t, home, slot);

	if (rc < 0)
		return rc;
	put_be64(kb, home);
	put_be64(kb + 8, slot);
	put_be64(vb, csum);
	put_be64(vb + 8, idx);
	rc = meta_put(t, DB_CONTENT, kb, 16, vb, 16, 0);
	if (rc < 0)
		return rc;
	put_be64(kb, csum);
	put_be64(kb + 8, home);
	put_be64(kb + 16, slot);
	return meta_put(t, DB_BYCSUM, kb, 24, "", 0, 0);
}

struct content_ctx {
	int (*cb)(void *arg, uint64_t home, uint64_t slot);
	void *arg;
};

static int
content_one(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct content_ctx *c = arg;
	const unsigned char *kb = k->mv_data;

	(void)v;
	if (!ok || k->mv_size != 24)
		return 0;	/* a damaged one finds nothing */
	return c->cb(c->arg, get_be64(kb + 8), get_be64(kb + 16));
}

int
objfs_meta_content_find(struct objfs_meta_txn *t, uint64_t csum,
		int (*cb)(void *arg, uint64_t home, uint64_t slot), void *arg)
{
	struct content_ctx c = { cb, arg };

	return meta_range(t, DB_BYCSUM, csum, NULL, 0, content_one, &c);
}

struct content_all_ctx {
	int (*cb)(void *arg, uint64_t home, uint64_t slot, int ok);
	void *arg;
};

static int
content_all_one(void *arg, MDB_val *k, MDB_val *v, int ok)
{
	struct content_all_ctx *c = arg;
	const unsigned char *kb = k->mv_data;

	if (k->mv_size != 16)
		return c->cb(c->arg, 0, 0, 0);
	return c->cb(c->arg, get_be64(kb), get_be64(kb + 8),
			ok && v->mv_size == 16);
}

int
objfs_meta_content_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t home, uint64_t slot, int ok),
		void *arg)
{
	struct content_all_ctx c = { cb, arg };

	return meta_walk_db(t, DB_CONTENT, content_all_one, &c);
}

/* The DBs keyed by inode number alone, with empty values. */
static int
ino_set_add(struct objfs_meta_txn *t, int db, uint64_t ino)
{
	unsigned char kb[8];

	put_be64(kb, ino);
	return meta_put(t, db, kb, 8, "", 0, 0);
}

static int
ino_set_del(struct objfs_meta_txn *t, int db, uint64_t ino)
{
	unsigned char kb[8];
	int rc;

	put_be64(kb, ino);
	rc = meta_del(t, db, kb, 8);
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
		return meta_damaged(c->db, k->mv_data, k->mv_size);
	return c->cb(c->arg, get_be64(k->mv_data));
}

static int
ino_set_list(struct objfs_meta_txn *t, int db,
		int (*cb)(void *arg, uint64_t ino), void *arg)
{
	struct ino_list_ctx c = { db, cb, arg };

	return meta_walk_db(t, db, ino_list_one, &c);
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
objfs_meta_orphan_has(struct objfs_meta_txn *t, uint64_t ino)
{
	unsigned char kb[8];
	MDB_val v;
	int rc;

	put_be64(kb, ino);
	rc = meta_get(t, DB_ORPHAN, kb, 8, &v);
	return rc == 0 ? 1 : rc == -ENOENT ? 0 : rc;
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
	return meta_get(t, DB_DELETED, kb, 8, &v);
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

	if (!ok || k->mv_size != 8 || v->mv_size != OBJFS_ATTR_RECORD)
		return c->cb(c->arg, ino, NULL);
	memcpy(&a, v->mv_data, OBJFS_ATTR_RECORD);
	a.held = 0;
	return c->cb(c->arg, ino, &a);
}

int
objfs_meta_inode_all(struct objfs_meta_txn *t,
		int (*cb)(void *arg, uint64_t ino, const struct objfs_attr *a),
		void *arg)
{
	struct inode_all_ctx c = { cb, arg };

	return meta_walk_db(t, DB_INODE, inode_all_one, &c);
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

	return meta_walk_db(t, DB_DIRENT, dirent_all_one, &c);
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

	return meta_walk_db(t, DB_DIRCOOKIE, cookie_all_one, &c);
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
	int rc = meta_walk_db(t, DB_XATTR, owner_all_one, &c);

	if (rc < 0)
		return rc;
	c.db = DB_SYMLINK;
	return meta_walk_db(t, DB_SYMLINK, owner_all_one, &c);
}
