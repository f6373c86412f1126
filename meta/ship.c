/* SPDX-License-Identifier: MIT */
/*
 * ship.c - what the remote tier needs of the index (meta.h, "Shipping"):
 * the outbox of commits not yet in the pool's log, a dump of the whole
 * index in the journal's entry format (a snapshot), and the import of
 * such entries into a new index.
 *
 * The outbox is a DB keyed by commit number whose values are the commits'
 * journal payloads, put into the batch by the commit itself (meta.c,
 * meta_outbox_put) and again by the journal's replay: a commit and its
 * outbox entry reach LMDB in the same checkpoint, so no crash keeps one
 * without the other.  Taking entries out (objfs_meta_outbox_done) has no
 * journal record: a daemon killed before the next checkpoint finds them
 * again, and the tier puts them again (a log record is created only where
 * none is, and one that is there with the same bytes is taken as put).
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta/meta_priv.h"

/* Super keys that belong to this data directory, not to the tree: never
 * in a dump, never taken from one (the remote tier's, src/cluster/tier.c, say
 * which tree, epoch and mount the index is the cache of). */
static int
local_key(int db, const unsigned char *k, size_t klen)
{
	static const char *const own[] = { OBJFS_SUPER_ID, OBJFS_SUPER_CLEAN,
		OBJFS_SUPER_JOURNAL, "remote_tree", "remote_epoch",
		"remote_owner", OBJFS_SUPER_REMOTE_POS, OBJFS_SUPER_IDS_INO,
		OBJFS_SUPER_IDS_INO_END, OBJFS_SUPER_IDS_CK,
		OBJFS_SUPER_IDS_CK_END, OBJFS_SUPER_SHIPPED };

	if (db == DB_OUTBOX)
		return 1;
	if (db != DB_SUPER)
		return 0;
	/* A data directory's earlier daemons (src/cluster/shared.c). */
	if (klen > 4 && memcmp(k, "own.", 4) == 0)
		return 1;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (klen == strlen(own[i]) && memcmp(k, own[i], klen) == 0)
			return 1;
	return 0;
}

int
objfs_meta_outbox_next(struct objfs_meta *m, uint64_t after, uint64_t *seq,
		void **buf, size_t *len)
{
	unsigned char kb[8];
	MDB_cursor *cur;
	MDB_val k = { 8, kb }, v;
	int rc = 0;

	put_be64(kb, after + 1);
	meta_lock(m);
	if (m->broken || (rc = meta_ensure_batch(m)) < 0) {
		meta_unlock(m);
		return m->broken ? -EIO : rc;
	}
	rc = mdb_cursor_open(m->batch, m->dbi[DB_OUTBOX], &cur);
	if (rc == 0) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		mdb_cursor_close(cur);
	}
	if (rc == 0 && (k.mv_size != 8 || !objfs_meta_rec_ok(DB_OUTBOX,
			k.mv_data, 8, v.mv_data, v.mv_size))) {
		rc = meta_damaged(DB_OUTBOX, k.mv_data, k.mv_size);
		meta_unlock(m);
		return rc;
	}
	if (rc == 0) {
		*len = v.mv_size - TRAILER;
		*buf = malloc(*len ? *len : 1);
		if (*buf) {
			memcpy(*buf, v.mv_data, *len);
			*seq = get_be64(k.mv_data);
		} else {
			rc = ENOMEM;
		}
	}
	meta_unlock(m);
	return map_err(rc, "outbox");
}

int
objfs_meta_outbox_done(struct objfs_meta *m, uint64_t upto)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	meta_lock(m);
	if (m->broken || m->rdonly || m->w) {
		meta_unlock(m);
		return m->broken ? -EIO : 0;
	}
	rc = meta_ensure_batch(m);
	if (rc < 0) {
		meta_unlock(m);
		return rc;
	}
	rc = mdb_cursor_open(m->batch, m->dbi[DB_OUTBOX], &cur);
	if (rc == 0) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		while (rc == 0 && k.mv_size == 8 &&
		       get_be64(k.mv_data) <= upto) {
			rc = mdb_cursor_del(cur, 0);
			m->raw_dirty = 1;
			if (rc == 0)
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		}
		mdb_cursor_close(cur);
	}
	meta_unlock(m);
	return rc == MDB_NOTFOUND ? 0 : map_err(rc, "outbox");
}

uint64_t
objfs_meta_last_seq(struct objfs_meta *m)
{
	uint64_t seq;

	meta_lock(m);
	seq = m->seq;
	meta_unlock(m);
	return seq;
}

/* ---- shared mode's deferred commits (meta.h), from inside the hook ----- */

int
objfs_meta_hook_defer(struct objfs_meta_txn *t, const void *p, size_t len)
{
	struct objfs_meta *m = t->m;
	unsigned char kb[8];
	MDB_cursor *cur;
	MDB_val k, v, stored;
	uint64_t seq = 1;
	int rc = mdb_cursor_open(t->txn, m->dbi[DB_OUTBOX], &cur);

	if (rc == 0) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
		if (rc == 0 && k.mv_size == 8)
			seq = get_be64(k.mv_data) + 1;
		mdb_cursor_close(cur);
		if (rc == MDB_NOTFOUND)
			rc = 0;
	}
	if (rc)
		return map_err(rc, "outbox");
	put_be64(kb, seq);
	m->w_touched = 1;
	rc = meta_raw_put(t->txn, m->dbi[DB_OUTBOX], DB_OUTBOX, kb, 8, p, len,
			&stored);
	if (rc)
		return map_err(rc, "outbox");
	return meta_jlog(m, OBJFS_JOURNAL_PUT, DB_OUTBOX, kb, 8,
			stored.mv_data, stored.mv_size);
}

static int
hook_outbox(struct objfs_meta_txn *t, void **buf, size_t *len,
		size_t *count, int remove)
{
	struct objfs_meta *m = t->m;
	unsigned char *out = NULL;
	size_t n = 0, cap = 0, c = 0;
	MDB_cursor *cur = NULL;
	MDB_val k, v;
	int rc = mdb_cursor_open(t->txn, m->dbi[DB_OUTBOX], &cur);

	if (rc == 0)
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == 0) {
		unsigned char kb[8];
		size_t vl;

		if (k.mv_size != 8 || !objfs_meta_rec_ok(DB_OUTBOX, k.mv_data,
				8, v.mv_data, v.mv_size)) {
			rc = -1;
			break;
		}
		vl = v.mv_size - TRAILER;
		if (n + vl > cap) {
			size_t nc = cap ? cap : 4096;
			unsigned char *np;

			while (nc < n + vl)
				nc *= 2;
			np = realloc(out, nc);
			if (!np) {
				rc = ENOMEM;
				break;
			}
			out = np;
			cap = nc;
		}
		memcpy(out + n, v.mv_data, vl);
		n += vl;
		c++;
		memcpy(kb, k.mv_data, 8);
		if (remove) {
			m->w_touched = 1;
			rc = mdb_cursor_del(cur, 0);
			if (rc == 0 && meta_jlog(m, OBJFS_JOURNAL_DEL, DB_OUTBOX,
					kb, 8, NULL, 0) < 0)
				rc = ENOMEM;
		}
		if (rc == 0)
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	if (cur)
		mdb_cursor_close(cur);
	if (rc == -1) {
		free(out);
		return meta_damaged(DB_OUTBOX, k.mv_data, k.mv_size);
	}
	if (rc && rc != MDB_NOTFOUND) {
		free(out);
		return map_err(rc, "outbox");
	}
	*buf = out;
	*len = n;
	*count = c;
	return 0;
}

int
objfs_meta_hook_take(struct objfs_meta_txn *t, void **buf, size_t *len,
		size_t *count)
{
	return hook_outbox(t, buf, len, count, 1);
}

int
objfs_meta_hook_peek(struct objfs_meta_txn *t, void **buf, size_t *len,
		size_t *count)
{
	return hook_outbox(t, buf, len, count, 0);
}

int
objfs_meta_outbox_count(struct objfs_meta_txn *t, size_t *count)
{
	MDB_stat st;
	int rc = mdb_stat(t->txn, t->m->dbi[DB_OUTBOX], &st);

	if (rc)
		return map_err(rc, "outbox");
	*count = st.ms_entries;
	return 0;
}

/* ---- dump and import -------------------------------------------------- */

struct dump {
	unsigned char *p;
	size_t len, cap, part;
	int (*cb)(void *arg, const void *p, size_t len);
	void *arg;
};

static int
dump_flush(struct dump *d)
{
	int rc = d->len ? d->cb(d->arg, d->p, d->len) : 0;

	d->len = 0;
	return rc;
}

static int
dump_entry_op(struct dump *d, int op, int db, const MDB_val *k,
		const MDB_val *v);

static int
dump_entry(struct dump *d, int db, const MDB_val *k, const MDB_val *v)
{
	return dump_entry_op(d, OBJFS_JOURNAL_PUT, db, k, v);
}

static int
dump_entry_op(struct dump *d, int op, int db, const MDB_val *k,
		const MDB_val *v)
{
	size_t need = 8 + k->mv_size + v->mv_size;
	unsigned char *p;
	int rc;

	if (d->len && d->len + need > d->part && (rc = dump_flush(d)) != 0)
		return rc;
	if (d->len + need > d->cap) {
		size_t cap = d->cap ? d->cap : 1u << 20;

		while (cap < d->len + need)
			cap *= 2;
		p = realloc(d->p, cap);
		if (!p)
			return -ENOMEM;
		d->p = p;
		d->cap = cap;
	}
	d->len += objfs_meta_entry_put(d->p + d->len, op, db, k->mv_data,
			k->mv_size, v->mv_data, v->mv_size);
	return 0;
}

int
objfs_meta_inode_entries(struct objfs_meta_txn *t, uint64_t ino, void **buf,
		size_t *len)
{
	static const int dbs[] = { DB_INODE, DB_CHUNK, DB_XATTR, DB_SYMLINK };
	struct dump d = { NULL, 0, 0, SIZE_MAX, NULL, NULL };
	unsigned char kb[8];
	MDB_val id = { 8, kb }, none = { 0, kb };
	int rc = 0;

	put_be64(kb, ino);
	/* What another mount holds of @ino goes first. */
	for (int i = 1; rc == 0 && i < 4; i++)
		rc = dump_entry_op(&d, OBJFS_JOURNAL_DELRANGE, dbs[i], &id,
				&none);
	for (int i = 0; rc == 0 && i < 4; i++) {
		MDB_cursor *cur;
		MDB_val k = id, v;
		int r = mdb_cursor_open(t->txn, t->m->dbi[dbs[i]], &cur);

		if (r) {
			rc = map_err(r, "cursor");
			break;
		}
		for (r = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); r == 0 &&
		     k.mv_size >= 8 && memcmp(k.mv_data, kb, 8) == 0;
		     r = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			if (!objfs_meta_rec_ok(dbs[i], k.mv_data, k.mv_size,
					v.mv_data, v.mv_size)) {
				rc = meta_damaged(dbs[i], k.mv_data, k.mv_size);
				break;
			}
			rc = dump_entry(&d, dbs[i], &k, &v);
			if (rc)
				break;
		}
		mdb_cursor_close(cur);
		if (rc == 0 && r != 0 && r != MDB_NOTFOUND)
			rc = map_err(r, "walk");
	}
	if (rc < 0) {
		free(d.p);
		return rc;
	}
	*buf = d.p;
	*len = d.len;
	return 0;
}

int
objfs_meta_payload_walk(const void *p, size_t len,
		int (*cb)(void *arg, int op, int db, const unsigned char *k,
			size_t klen, const unsigned char *v, size_t vlen),
		void *arg)
{
	int rc = objfs_meta_journal_entries(p, len, cb, arg);

	return rc == MDB_CORRUPTED ? -EIO : rc > 0 ? -EIO : rc;
}

int
objfs_meta_dump(struct objfs_meta *m, size_t part,
		int (*cb)(void *arg, const void *p, size_t len), void *arg,
		uint64_t *seq)
{
	struct dump d = { NULL, 0, 0, part, cb, arg };
	int rc = 0;

	meta_lock(m);
	if (m->broken)
		rc = -EIO;
	else if (m->w)
		rc = -EDEADLK;
	else
		rc = meta_ensure_batch(m);
	for (int db = 0; rc == 0 && db < OBJFS_META_NDBS; db++) {
		MDB_cursor *cur;
		MDB_val k, v;
		int r = mdb_cursor_open(m->batch, m->dbi[db], &cur);

		if (r) {
			rc = map_err(r, "cursor");
			break;
		}
		for (r = mdb_cursor_get(cur, &k, &v, MDB_FIRST); r == 0;
		     r = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			if (local_key(db, k.mv_data, k.mv_size))
				continue;
			/* A damaged record is not spread further. */
			if (!objfs_meta_rec_ok(db, k.mv_data, k.mv_size,
					v.mv_data, v.mv_size)) {
				rc = meta_damaged(db, k.mv_data, k.mv_size);
				break;
			}
			rc = dump_entry(&d, db, &k, &v);
			if (rc)
				break;
		}
		mdb_cursor_close(cur);
		if (rc == 0 && r != MDB_NOTFOUND)
			rc = map_err(r, "walk");
	}
	if (rc == 0) {
		*seq = m->seq;
		rc = dump_flush(&d);
	}
	meta_unlock(m);
	free(d.p);
	return rc;
}

struct import_ctx {
	struct objfs_meta *m;
	uint64_t n;
};

static int
import_one(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct import_ctx *a = arg;
	MDB_val key = { klen, (void *)k }, val = { vlen, (void *)v };
	int rc;

	if (local_key(db, k, klen))
		return 0;
	a->n++;
	switch (op) {
	case OBJFS_JOURNAL_PUT:
		/* Only records that carry their own checksum. */
		if (!objfs_meta_rec_ok(db, k, klen, v, vlen))
			return MDB_CORRUPTED;
		return mdb_put(a->m->batch, a->m->dbi[db], &key, &val, 0);
	case OBJFS_JOURNAL_DEL:
		rc = mdb_del(a->m->batch, a->m->dbi[db], &key, NULL);
		return rc == MDB_NOTFOUND ? 0 : rc;
	case OBJFS_JOURNAL_DELRANGE: {
		MDB_cursor *cur;
		MDB_val x;

		if (klen < 8)
			return MDB_CORRUPTED;
		rc = mdb_cursor_open(a->m->batch, a->m->dbi[db], &cur);
		if (rc)
			return rc;
		rc = mdb_cursor_get(cur, &key, &x, MDB_SET_RANGE);
		while (rc == 0 && key.mv_size >= 8 &&
		       memcmp(key.mv_data, k, 8) == 0) {
			rc = mdb_cursor_del(cur, 0);
			if (rc == 0)
				rc = mdb_cursor_get(cur, &key, &x, MDB_NEXT);
		}
		mdb_cursor_close(cur);
		return rc == MDB_NOTFOUND ? 0 : rc;
	}
	default:
		return MDB_CORRUPTED;
	}
}

int
objfs_meta_import(struct objfs_meta *m, const void *p, size_t len,
		uint64_t *entries)
{
	struct import_ctx a = { m, 0 };
	int rc;

	meta_lock(m);
	rc = m->broken ? -EIO : m->w ? -EDEADLK : meta_ensure_batch(m);
	if (rc == 0) {
		m->raw_dirty = 1;
		rc = objfs_meta_journal_entries(p, len, import_one, &a);
		if (rc == MDB_CORRUPTED) {
			objfs_log(OBJFS_LOG_ERR, "index: an imported record is "
				"damaged");
			rc = -EIO;
		} else {
			rc = map_err(rc, "import");
		}
		if (rc < 0) {
			/* Nothing of it stays: the batch as the journal says. */
			mdb_txn_abort(m->batch);
			m->batch = NULL;
			m->raw_dirty = 0;
			m->broken = 1;
		}
	}
	meta_unlock(m);
	if (rc == 0 && entries)
		*entries += a.n;
	return rc;
}

/* One entry of another mount's commit into @t: applied and journaled. */
static int
apply_one(void *arg, int op, int db, const unsigned char *k, size_t klen,
		const unsigned char *v, size_t vlen)
{
	struct objfs_meta_txn *t = arg;
	struct import_ctx a = { t->m, 0 };
	int rc;

	if (local_key(db, k, klen))
		return 0;
	if (db < 0 || db >= OBJFS_META_NDBS)
		return MDB_CORRUPTED;
	rc = import_one(&a, op, db, k, klen, v, vlen);
	if (rc)
		return rc;
	t->m->w_touched = 1;
	return meta_jlog(t->m, op, db, k, klen, v, vlen) < 0 ? ENOMEM : 0;
}

int
objfs_meta_apply(struct objfs_meta_txn *t, const void *p, size_t len)
{
	int rc;

	if (!t->write || t->m->w != t)
		return -EBADF;
	rc = objfs_meta_journal_entries(p, len, apply_one, t);
	if (rc == MDB_CORRUPTED) {
		objfs_log(OBJFS_LOG_ERR, "index: a record of the pool's log is "
			"damaged");
		return -EIO;
	}
	return map_err(rc, "apply");
}

int
objfs_meta_checkpoint_now(struct objfs_meta *m)
{
	int rc;

	meta_lock(m);
	rc = m->broken ? -EIO : m->w ? -EDEADLK : meta_checkpoint(m);
	meta_unlock(m);
	return rc;
}

/* ---- shared mode: the commit hook, entries, leases (meta.h) ---------- */

void
objfs_meta_set_hook(struct objfs_meta *m, objfs_meta_hook_fn fn, void *arg)
{
	meta_lock(m);
	m->hook = fn;
	m->hook_arg = arg;
	meta_unlock(m);
}

int
objfs_meta_super_list(struct objfs_meta_txn *t, const char *prefix,
		int (*cb)(void *arg, const char *key, uint64_t val), void *arg)
{
	size_t plen = strlen(prefix);
	MDB_cursor *cur;
	MDB_val k = { plen, (void *)prefix }, v;
	int rc = mdb_cursor_open(t->txn, t->m->dbi[DB_SUPER], &cur);

	if (rc)
		return map_err(rc, "cursor");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 &&
	     k.mv_size >= plen && memcmp(k.mv_data, prefix, plen) == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		char key[64];
		uint64_t val;
		int r;

		if (k.mv_size >= sizeof(key) || v.mv_size != 8 + TRAILER ||
		    !objfs_meta_rec_ok(DB_SUPER, k.mv_data, k.mv_size,
				v.mv_data, v.mv_size))
			continue;	/* not one of the caller's */
		memcpy(key, k.mv_data, k.mv_size);
		key[k.mv_size] = '\0';
		memcpy(&val, v.mv_data, 8);
		r = cb(arg, key, val);
		if (r) {
			mdb_cursor_close(cur);
			return r;
		}
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND || rc == 0 ? 0 : map_err(rc, "walk");
}
