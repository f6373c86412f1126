/* SPDX-License-Identifier: MIT */
/*
 * local.c - the backing directory as a chunk store (copy.h, local_int.h):
 * loading an object's copies, reading them, write-out batches,
 * truncation's shorter copies and fallocate's reservations.  Shared
 * copies, dedup and deletion are local_dedup.c's; giving space back is
 * local_space.c's; the files' I/O backing.c's.
 *
 * Write-out is copy-on-write, so that no crash, at any instant, loses a
 * disk copy the index pointed at:
 *	1. each dirty chunk goes to a free slot of the backing file, never
 *	   to the slot of a copy that a record, durable or not, points at
 *	   (its all-zero 4 KiB blocks punched there, not written: backing.c);
 *	2. fdatasync the backing file (and, for a new file, the directory):
 *	   the index must never reach the disk before what it points to;
 *	3. one index commit puts the new records and the attributes;
 *	4. the old slots are given back (punched) only once that commit is
 *	   durable (local_space.c), since until then a machine crash would bring
 *	   their records back.
 * A daemon killed between 1 and 3 leaves the old records, pointing at
 * intact old copies; a torn write can only tear a slot no record needs.
 * The two exceptions write where no durable record reads: an append in
 * place after a copy's durable end, and sub-blocks into a chunk's second
 * slot (design.md, "Write-out").
 *
 * Called with the inode's lock held, but for read_run.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/local/local_int.h"

/* ---- loading ---------------------------------------------------------- */

struct load_ctx {
	struct objfs_store *s;
	struct objfs_inode *ip;
	uint64_t n;			/* records found */
	int bad;			/* some could not be used */
	uint64_t seq;			/* the last commit: records loaded are
					 * taken as made by it */
	struct objfs_slotmap shared;	/* its copies the share DB counts */
};

static int
chunk_record(void *arg, uint64_t idx, const struct objfs_chunk_rec *r)
{
	struct load_ctx *l = arg;
	struct objfs_inode *ip = l->ip;
	uint64_t max = l->s->max_size >> l->s->chunk_shift, home;
	struct objfs_chunk *c;
	int rc;

	if (!r || idx >= max || r->slot >= 4 * max ||
	    r->len > l->s->chunk_size) {
		l->bad = 1;
		return 0;
	}
	c = objfs_chunkmap_add(&ip->chunks, idx);
	if (!c)
		return -ENOMEM;
	/* A copy in another object's file takes no slot of this one's;
	 * several records may point at one of its own that is shared. */
	home = r->home == ip->ino ? 0 : r->home;
	rc = home ? 0 : objfs_slots_take(&ip->slots, r->slot);
	if (rc == -EEXIST && objfs_slots_taken(&l->shared, r->slot))
		rc = 0;
	if (rc == -EEXIST) {		/* two records, one slot */
		l->bad = 1;
		return 0;
	}
	if (rc < 0)
		return rc;
	if (r->shift && r->shift != l->s->sub_shift) {
		l->bad = 1;		/* not a size this store writes */
		return 0;
	}
	if (r->has_alt) {
		rc = r->alt < 4 * max ? objfs_slots_take(&ip->slots, r->alt) :
			-EEXIST;
		if (rc == -EEXIST) {	/* its second slot is another's */
			l->bad = 1;
			return 0;
		}
		if (rc < 0)
			return rc;
		c->alt = r->alt;
	}
	c->flags = OBJFS_CHUNK_ONDISK | (r->shift ? OBJFS_CHUNK_SUMS : 0) |
		(r->has_alt ? OBJFS_CHUNK_ALT : 0);
	c->csum = r->csum;
	c->slot = r->slot;
	c->home = home;
	c->disk_len = r->len;
	c->rec_seq = l->seq;
	l->n++;
	return 0;
}

/* A copy of @ip's file that the share DB counts stays taken, whatever
 * @ip's own records say (others may point at it). */
static int
share_slot(void *arg, uint64_t slot, uint64_t n)
{
	struct objfs_slotmap *m = arg;
	int rc = objfs_slots_take(m, slot);

	(void)n;
	return rc == -EEXIST ? 0 : rc;
}

static int
local_load(struct objfs_store *s, struct objfs_inode *ip, uint64_t *n,
		int *bad)
{
	struct load_ctx l = { s, ip, 0, 0, 0, { 0 } };
	struct objfs_meta_txn *t;
	int rc = objfs_meta_begin(s->meta, 0, &t);

	if (rc < 0)
		return rc;
	/* A record may have changed in this run while the inode was out of
	 * memory: take each as made by the last commit, durable no sooner. */
	(void)objfs_meta_commit_seq(t, &l.seq);
	rc = objfs_meta_begin(s->meta, 0, &t);
	if (rc < 0)
		return rc;
	objfs_slots_init(&l.shared);
	rc = objfs_meta_share_list(t, ip->ino, share_slot, &l.shared);
	if (rc == 0)
		rc = objfs_meta_chunk_list(t, ip->ino, chunk_record, &l);
	objfs_meta_abort(t);
	for (uint64_t k = 0; rc == 0 && k < l.shared.n; k++)
		for (uint64_t sl = l.shared.run[k].lo; rc == 0 &&
		     sl < l.shared.run[k].hi; sl++)
			rc = share_slot(&ip->slots, sl, 0);
	objfs_slots_fini(&l.shared);
	if (rc == 0)
		rc = local_take_deferred(s, ip);
	if (rc < 0) {
		objfs_slots_fini(&ip->slots);
		return rc;
	}
	*n = l.n;
	*bad = l.bad;
	return 0;
}

static void
local_unload(struct objfs_store *s, struct objfs_inode *ip)
{
	(void)s;
	objfs_slots_fini(&ip->slots);
	if (ip->bfd >= 0)
		close(ip->bfd);
	ip->bfd = -1;
}

/* ---- reads ------------------------------------------------------------ */

/* @c's copy cannot be reached: logged, -EIO. */
static int
unreachable(struct objfs_inode *ip, const struct objfs_chunk *c, int err)
{
	objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 ": backing file of %" PRIu64
		": %s", ip->ino, local_copy_home(ip, c), strerror(-err));
	return -EIO;
}

static int
bad_sums(struct objfs_store *s, int rc)
{
	if (rc == -EBADMSG) {
		atomic_fetch_add(&s->csum_failures, 1);
		rc = -EIO;
	}
	return rc;
}

static int
local_read(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, void *buf)
{
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	struct objfs_chunk_rec r;
	struct objfs_alt alt;
	int rc, own, fd = local_copy_fd(s, ip, c, &own);

	if (fd < 0)
		return unreachable(ip, c, fd);
	/* Which sub-blocks are in the second slot is in the record. */
	if ((c->flags & OBJFS_CHUNK_ALT) &&
	    (rc = local_chunk_rec(s, ip, idx, c, &r, tab, &alt)) < 0) {
		local_copy_fd_done(fd, own);
		return rc;
	}
	rc = objfs_backing_read(fd, ip->ino, idx, c->slot,
			(c->flags & OBJFS_CHUNK_ALT) ? &alt : NULL,
			s->chunk_size, buf, c->disk_len, chunk_sub_shift(s, c),
			c->csum);
	local_copy_fd_done(fd, own);
	return bad_sums(s, rc);
}

static int
local_read_part(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, void *buf, uint32_t lo, uint32_t hi)
{
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	uint32_t shift = s->sub_shift, base, end;
	struct objfs_chunk_rec r;
	struct objfs_alt alt;
	int rc, fd, own;

	/* The sums, and where the sub-blocks are, are in the record, not
	 * in memory: one index read. */
	rc = local_chunk_rec(s, ip, idx, c, &r, tab, &alt);
	if (rc < 0)
		return rc;
	fd = local_copy_fd(s, ip, c, &own);
	if (fd < 0)
		return unreachable(ip, c, fd);
	rc = objfs_backing_read_part(fd, ip->ino, idx, c->slot,
			(c->flags & OBJFS_CHUNK_ALT) ? &alt : NULL,
			s->chunk_size, buf, lo, hi, c->disk_len, shift, tab);
	local_copy_fd_done(fd, own);
	if (rc < 0)
		return bad_sums(s, rc);
	/* The read is whole blocks: past the copy's end, zeros. */
	base = lo >> shift << shift;
	end = (uint32_t)min64(((uint64_t)((hi - 1) >> shift) + 1) << shift,
			c->disk_len);
	if (end == c->disk_len)
		memset((unsigned char *)buf + (end - base), 0,
			objfs_backing_span(end - base) - (end - base));
	atomic_fetch_add(&s->part_reads, 1);
	return 0;
}

struct objfs_copy_read {
	uint64_t ino, idx, slot, csum;
	uint32_t len;
	unsigned shift;
	int fd, own, has_alt;
	struct objfs_alt alt;
};

static int
local_read_start(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, struct objfs_copy_read **out)
{
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	struct objfs_copy_read *rd;
	struct objfs_chunk_rec r;
	int rc;

	if (ip->nreading == OBJFS_READING_MAX)
		return -EBUSY;
	rd = malloc(sizeof(*rd));
	if (!rd)
		return -ENOMEM;
	rd->fd = local_copy_fd(s, ip, c, &rd->own);
	if (rd->fd < 0) {
		rc = unreachable(ip, c, rd->fd);
		free(rd);
		return rc;
	}
	/* Where its sub-blocks are, taken while the lock still keeps the
	 * record as the chunk map says. */
	rd->has_alt = !!(c->flags & OBJFS_CHUNK_ALT);
	rc = rd->has_alt ? local_chunk_rec(s, ip, idx, c, &r, tab, &rd->alt) :
		0;
	if (rc < 0) {
		local_copy_fd_done(rd->fd, rd->own);
		free(rd);
		return rc;
	}
	rd->ino = ip->ino;
	rd->idx = idx;
	rd->slot = c->slot;
	rd->csum = c->csum;
	rd->len = c->disk_len;
	rd->shift = chunk_sub_shift(s, c);
	/* Its slot is not given back until read_end (local_space.c). */
	ip->reading[ip->nreading++] = c->slot;
	*out = rd;
	return 0;
}

static int
local_read_run(struct objfs_store *s, struct objfs_copy_read *rd, void *buf)
{
	return bad_sums(s, objfs_backing_read(rd->fd, rd->ino, rd->idx,
			rd->slot, rd->has_alt ? &rd->alt : NULL,
			s->chunk_size, buf, rd->len, rd->shift, rd->csum));
}

static void
local_read_end(struct objfs_store *s, struct objfs_inode *ip,
		struct objfs_copy_read *rd)
{
	(void)s;
	for (unsigned i = 0; i < ip->nreading; i++)
		if (ip->reading[i] == rd->slot) {
			ip->reading[i] = ip->reading[--ip->nreading];
			break;
		}
	local_copy_fd_done(rd->fd, rd->own);
	free(rd);
}

static uint64_t
local_key(const struct objfs_chunk *c)
{
	return c->slot;
}

/* ---- write-out batches ------------------------------------------------ */

/* A chunk written out, not yet recorded. */
struct written {
	uint64_t idx, slot, csum;
	uint32_t len;
	int tail;		/* into its own slot, after its copy */
	int subs;		/* only its changed sub-blocks, at their other
				 * place (slot or alt.slot) */
	int new_alt;		/* ... into a second slot taken for it */
	int dup;		/* not written: an equal copy is on disk
				 * already, slot @slot of object @home's
				 * file (local_dedup.c) */
	int skip;		/* (dup) gone before the commit: not recorded,
				 * the chunk stays dirty */
	uint64_t home;		/* (dup) */
	unsigned drop;		/* what its old copy gives (local_dedup.c) */
	unsigned nsubs;		/* ... how many */
	struct objfs_alt alt;	/* (subs) the second slot, and the map */
	unsigned char tab[4 * OBJFS_SUMS_MAX];	/* its sub-block sums */
	struct objfs_copy_made made;
};

struct objfs_copy_batch {
	struct objfs_store *s;
	struct objfs_inode *ip;
	int fd;
	uint64_t nchunks;	/* the file's chunks: second slots go past */
	uint64_t durable;	/* the index's durable commit */
	size_t n;
	struct written w[];
};

/* Changed sub-blocks at most, of a chunk's, for a write-out of those
 * alone: beyond this, writing the whole chunk to a new slot costs little
 * more and leaves one slot. */
#define SUBS_MAX_PART	4	/* a quarter of the sub-blocks */

/* How many of the chunks @sel[0..n) local_put_subs() would write as
 * sub-blocks, but for their records not being durable; each PARTIAL one
 * counts 4 (written whole, it must read its other sub-blocks first). */
static unsigned
subs_waiting(struct objfs_store *s, struct objfs_inode *ip,
		const uint64_t *sel, size_t n, uint64_t durable)
{
	unsigned w = 0;

	for (size_t k = 0; k < n; k++) {
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, sel[k]);
		unsigned d;

		if (!c || !c->cap || !(c->flags & OBJFS_CHUNK_DIRTY) ||
		    (c->flags & (OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS)) !=
			(OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS) || c->home ||
		    c->rec_seq <= durable)
			continue;
		d = objfs_bits_count(c->dsub);
		if (d && d <= objfs_nsums(c->disk_len, s->sub_shift) /
				SUBS_MAX_PART)
			w += (c->flags & OBJFS_CHUNK_PARTIAL) ? 4 : 1;
	}
	return w;
}

static int
local_batch_new(struct objfs_store *s, struct objfs_inode *ip,
		const uint64_t *sel, size_t n, int evicting,
		struct objfs_copy_batch **out)
{
	struct objfs_copy_batch *b = malloc(sizeof(*b) + n * sizeof(b->w[0]));

	if (!b)
		return -ENOMEM;
	b->fd = local_backing_fd(s, ip, 1, NULL);
	if (b->fd < 0) {
		int rc = b->fd;

		free(b);
		return rc;
	}
	b->s = s;
	b->ip = ip;
	b->n = 0;
	b->nchunks = (ip->attr.size + s->chunk_size - 1) >> s->chunk_shift;
	b->durable = objfs_meta_durable_seq(s->meta);
	/* Chunks that could be written as a few sub-blocks but whose
	 * records are not durable yet (rewritten within the last second, as
	 * random writes beyond the arena do, or loaded since the last
	 * flush) are made durable first, with one flush of the journal:
	 * otherwise each is written whole, and one with only some
	 * sub-blocks in the arena (PARTIAL) must first read the rest.  An
	 * eviction does so for any; an fsync, which pays its own flush at
	 * the end, only when that spares more than one whole chunk. */
	if (subs_waiting(s, ip, sel, n, b->durable) > (evicting ? 0u : 1u) &&
	    objfs_meta_sync(s->meta) == 0)
		b->durable = objfs_meta_durable_seq(s->meta);
	*out = b;
	return 0;
}

static struct written *
next_entry(struct objfs_copy_batch *b, uint64_t idx, uint32_t len)
{
	struct written *x = &b->w[b->n];

	memset(&x->made, 0, sizeof(x->made));
	x->idx = idx;
	x->len = len;
	x->tail = x->subs = x->new_alt = x->dup = x->skip = 0;
	x->home = 0;
	x->drop = 0;
	x->nsubs = 0;
	return x;
}

/*
 * Write only the changed sub-blocks of chunk @idx, at the places of the
 * chunk's two slots their current versions are not at.  Only when the
 * chunk's record is durable: then no older record can come back in a
 * crash, and the other places hold bytes no record needs.
 */
static int
local_put_subs(struct objfs_copy_batch *b, uint64_t idx, struct objfs_chunk *c,
		uint32_t len)
{
	struct objfs_store *s = b->s;
	struct objfs_inode *ip = b->ip;
	struct written *x = next_entry(b, idx, len);
	uint32_t n = objfs_nsums(len, s->sub_shift);
	unsigned char otab[4 * OBJFS_SUMS_MAX];
	struct objfs_chunk_rec r;
	unsigned k = objfs_bits_count(c->dsub);
	int rc;

	/* Never into a shared copy (local_dedup.c). */
	if ((c->flags & (OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS)) !=
			(OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS) ||
	    len != c->disk_len || c->rec_seq > b->durable || k == 0 ||
	    k > n / SUBS_MAX_PART || local_copy_shared(s, ip, c) != 0)
		return 0;
	/* The record's sums stand for the sub-blocks not written, and name
	 * the second slot, if there is one.  Without them (logged), the
	 * chunk is written whole, as ever. */
	if (local_chunk_rec(s, ip, idx, c, &r, otab, &x->alt) < 0)
		return 0;
	x->new_alt = !(c->flags & OBJFS_CHUNK_ALT);
	if (x->new_alt) {
		objfs_bits_zero(x->alt.map);
		rc = objfs_slots_alloc(&ip->slots, b->nchunks, b->nchunks,
				&x->alt.slot);
		if (rc < 0)
			return rc;
	}
	x->slot = c->slot;
	rc = objfs_backing_write_subs(b->fd, x->slot, &x->alt, s->chunk_size,
			objfs_arena_ptr(s->arena, c->off), x->len, s->sub_shift,
			c->dsub, otab, x->tab, &x->csum);
	if (rc < 0) {
		if (x->new_alt)
			objfs_slots_put(&ip->slots, x->alt.slot);
		return rc;
	}
	x->nsubs = k;
	x->subs = 1;
	b->n++;
	return 1;
}

static int
local_put(struct objfs_copy_batch *b, uint64_t idx, struct objfs_chunk *c,
		uint32_t len, int nodup)
{
	struct objfs_store *s = b->s;
	struct objfs_inode *ip = b->ip;
	struct written *x = next_entry(b, idx, len);
	int rc;

	/* (Not with a second slot: the bytes before the copy's end are not
	 * all in the first.) */
	x->tail = (c->flags & OBJFS_CHUNK_ONDISK) &&
		!(c->flags & OBJFS_CHUNK_ALT) &&
		c->dirty_lo >= c->disk_len && x->len > c->disk_len &&
		c->rec_seq <= b->durable && local_copy_shared(s, ip, c) == 0;
	if (x->tail) {
		/* It only grew since its disk copy, and its record is durable
		 * (so no older, longer one of this slot can come back): the
		 * new bytes go after that copy, in its own slot.  Nothing a
		 * record needs is changed: the partial block before them is
		 * written with the bytes it holds (sector writes are whole
		 * or not at all). */
		x->slot = c->slot;
		rc = objfs_backing_write_tail(b->fd, x->slot, s->chunk_size,
				objfs_arena_ptr(s->arena, c->off),
				c->disk_len & ~(OBJFS_BACKING_ALIGN - 1),
				x->len, s->sub_shift, x->tab, &x->csum);
		if (rc < 0)
			return rc;
		b->n++;
		return 0;
	}
	/* Its sums first: a copy with the same bytes may be on disk already
	 * (dedup), and then nothing is written. */
	x->csum = objfs_chunk_csum(objfs_arena_ptr(s->arena, c->off), x->len,
			s->sub_shift, x->tab);
	if (s->dedup && !nodup && x->len && local_dedup_find(s, ip, c,
			objfs_arena_ptr(s->arena, c->off), x->len, x->csum,
			&x->home, &x->slot)) {
		x->dup = 1;
		b->n++;
		return 0;
	}
	/* Slot idx if free; never the one a record points at. */
	rc = objfs_slots_alloc(&ip->slots, idx, b->nchunks, &x->slot);
	if (rc < 0)
		return rc;
	rc = objfs_backing_write_raw(b->fd, x->slot, s->chunk_size,
			objfs_arena_ptr(s->arena, c->off), x->len);
	if (rc < 0) {
		/* What a part of the write left, punched with the slot. */
		(void)objfs_backing_punch(b->fd, x->slot, s->chunk_size);
		objfs_slots_put(&ip->slots, x->slot);
		return rc;
	}
	b->n++;
	return 0;
}

/* A write-out that is not to be recorded: the slot it took goes back,
 * its blocks punched (no record names a slot taken for this batch; left,
 * they stayed allocated until an unclean stop's trim: found reviewing
 * issue 46). */
static void
put_back(struct objfs_store *s, struct objfs_inode *ip, int fd,
		const struct written *x)
{
	uint64_t slot;

	if (x->subs && x->new_alt)
		slot = x->alt.slot;
	else if (!x->subs && !x->tail && !x->dup)
		slot = x->slot;
	else
		return;
	if (fd >= 0)
		(void)objfs_backing_punch(fd, slot, s->chunk_size);
	objfs_slots_put(&ip->slots, slot);
}

static void
local_batch_undo(struct objfs_copy_batch *b)
{
	for (size_t k = 0; k < b->n; k++)
		put_back(b->s, b->ip, b->fd, &b->w[k]);
	b->n = 0;
}

static int
local_batch_sync(struct objfs_copy_batch *b)
{
	struct objfs_store *s = b->s;
	struct objfs_inode *ip = b->ip;
	int rc = 0;

	if (!b->n)
		return 0;
	/* Direct I/O wrote whole blocks: when the last slot's copy ends the
	 * file, cut the padding, so that an object written out once is a
	 * file holding exactly its bytes. */
	for (size_t k = 0; rc == 0 && k < b->n; k++) {
		const struct written *x = &b->w[k];

		if (!x->subs && !x->dup &&
		    x->slot + 1 == objfs_slots_end(&ip->slots) &&
		    ftruncate(b->fd, (off_t)((x->slot << s->chunk_shift) +
				x->len)) < 0)
			rc = -errno;
	}
	/* The records must never reach the disk before the bytes, nor
	 * before a new file's name. */
	if (rc == 0 && fdatasync(b->fd) < 0)
		rc = -errno;
	if (rc == 0 && ip->bfile_new &&
	    (rc = objfs_backing_sync_dir(s->backing)) == 0)
		ip->bfile_new = 0;
	if (rc < 0)
		local_batch_undo(b);
	return rc;
}

static int
local_batch_record(struct objfs_copy_batch *b, struct objfs_meta_txn *t,
		uint64_t *added)
{
	struct objfs_store *s = b->s;
	struct objfs_inode *ip = b->ip;
	int r = 0;

	*added = 0;
	for (size_t k = 0; r == 0 && k < b->n; k++) {
		struct written *x = &b->w[k];
		struct objfs_chunk_rec rec = { x->csum, x->slot, x->len,
			s->sub_shift, x->tab, x->subs, x->alt.slot, { 0 },
			x->home == ip->ino ? 0 : x->home };
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, x->idx);

		objfs_bits_copy(rec.map, x->alt.map);
		/* An equal copy found: take a reference on it, if it is still
		 * there as it was read. */
		if (x->dup) {
			r = local_dedup_claim(t, x->home, x->slot, x->csum,
					x->len);
			x->skip = r == 0;
			if (r <= 0)
				continue;
			r = 0;
		}
		/* A whole write leaves the old copy: it loses this record's
		 * reference (a shared one may stay). */
		x->drop = 0;
		if (!x->tail && !x->subs)
			r = local_drop(s, t, ip, c, &x->drop);
		/* What the copy holds, for later dedup: a new one, one that
		 * grew; none for one whose sub-blocks change in place. */
		if (r == 0 && x->subs)
			r = objfs_meta_content_del(t, ip->ino, c->slot);
		else if (r == 0 && !x->dup && s->dedup)
			r = objfs_meta_content_set(t, ip->ino, x->slot,
					x->csum, x->idx);
		if (r == 0)
			r = objfs_meta_chunk_put(t, ip->ino, x->idx, &rec);
		*added += !(c->flags & OBJFS_CHUNK_ONDISK);
	}
	return r;
}

static void
local_batch_done(struct objfs_copy_batch *b, uint64_t seq)
{
	struct objfs_store *s = b->s;
	struct objfs_inode *ip = b->ip;

	for (size_t k = 0; k < b->n; k++) {
		struct written *x = &b->w[k];
		struct objfs_chunk *c = objfs_chunkmap_get(&ip->chunks, x->idx);

		x->made.idx = x->idx;
		x->made.len = x->len;
		x->made.dup = !!x->dup;
		x->made.subs = !!x->subs;
		x->made.skip = !!x->skip;
		x->made.written = x->dup ? 0 : x->subs ?
			(uint64_t)x->nsubs << s->sub_shift : x->len;
		if (x->skip)
			continue;	/* stays dirty, written next time */
		/* A whole write took a new slot: the old one, and a second
		 * one, go once this commit is durable.  A write of changed
		 * sub-blocks keeps both slots (the places it did not write
		 * still hold versions the record points at). */
		if (!x->tail && !x->subs)
			local_release(s, ip, c, x->drop, seq);
		c->home = x->home == ip->ino ? 0 : x->home;
		c->flags |= OBJFS_CHUNK_ONDISK | OBJFS_CHUNK_SUMS;
		c->flags &= ~OBJFS_CHUNK_ALT;
		if (x->subs) {
			c->flags |= OBJFS_CHUNK_ALT;
			c->alt = x->alt.slot;
		}
		c->slot = x->slot;
		c->csum = x->csum;
		c->disk_len = x->len;
		c->rec_seq = seq;
	}
}

static size_t
local_batch_count(const struct objfs_copy_batch *b)
{
	return b->n;
}

static const struct objfs_copy_made *
local_batch_entry(const struct objfs_copy_batch *b, size_t k)
{
	return &b->w[k].made;
}

static void
local_batch_free(struct objfs_copy_batch *b)
{
	free(b);
}

/* ---- truncation: a copy that ends sooner ------------------------------ */

struct objfs_copy_cut {
	uint64_t csum;
	uint32_t len;
	struct objfs_alt alt;
	unsigned char tab[4 * OBJFS_SUMS_MAX];
};

static int
local_cut_prepare(struct objfs_store *s, struct objfs_inode *ip, uint64_t idx,
		const struct objfs_chunk *c, uint32_t len,
		struct objfs_copy_cut **out)
{
	struct objfs_copy_cut *k = calloc(1, sizeof(*k));
	unsigned char otab[4 * OBJFS_SUMS_MAX], *b;
	struct objfs_chunk_rec orec;
	int rc = 0;

	if (!k)
		return -ENOMEM;
	k->len = len;
	/* A new checksum for the first @len bytes, which stay where they
	 * are: from the arena when the block equals the copy. */
	if (c->cap && !(c->flags & OBJFS_CHUNK_DIRTY)) {
		k->csum = objfs_chunk_csum(objfs_arena_ptr(s->arena, c->off),
				len, s->sub_shift, k->tab);
	} else if (!(b = objfs_copy_buf(c->disk_len))) {
		rc = -ENOMEM;
	} else {
		rc = local_read(s, ip, idx, c, b);
		if (rc == 0)
			k->csum = objfs_chunk_csum(b, len, s->sub_shift,
					k->tab);
		free(b);
	}
	/* Its sub-blocks stay where they are, in either slot. */
	if (rc == 0 && (c->flags & OBJFS_CHUNK_ALT)) {
		rc = local_chunk_rec(s, ip, idx, c, &orec, otab, &k->alt);
		if (rc == 0)
			objfs_bits_keep(k->alt.map,
					objfs_nsums(len, s->sub_shift));
	}
	if (rc < 0) {
		free(k);
		return rc;
	}
	*out = k;
	return 0;
}

static int
local_cut_record(struct objfs_store *s, struct objfs_meta_txn *t,
		struct objfs_inode *ip, uint64_t idx, const struct objfs_chunk *c,
		const struct objfs_copy_cut *k)
{
	struct objfs_chunk_rec r = { k->csum, c->slot, k->len, s->sub_shift,
		k->tab, !!(c->flags & OBJFS_CHUNK_ALT), k->alt.slot, { 0 },
		c->home };

	objfs_bits_copy(r.map, k->alt.map);
	return objfs_meta_chunk_put(t, ip->ino, idx, &r);
}

static void
local_cut_done(struct objfs_chunk *c, const struct objfs_copy_cut *k,
		uint64_t seq)
{
	c->flags |= OBJFS_CHUNK_SUMS;
	c->csum = k->csum;
	c->disk_len = k->len;
	c->rec_seq = seq;
}

static void
local_cut_free(struct objfs_copy_cut *k)
{
	free(k);
}

/* ---- fallocate: room reserved ----------------------------------------- */

/*
 * Disk blocks for the chunks first..last that have no disk copy, in their
 * home slots.  The backing file's size covers them (a sparse end that
 * local_space.c cuts once those slots are given back).  All or nothing: on
 * failure what was allocated is given back (those slots were free: no
 * record points at them).
 */
static int
local_reserve(struct objfs_store *s, struct objfs_inode *ip, uint64_t first,
		uint64_t last)
{
	uint64_t i, j, done = first;
	struct objfs_chunk *c;
	int fd = local_backing_fd(s, ip, 1, NULL), rc = 0;

	if (fd < 0)
		return fd;
	for (i = first; i <= last; i = j) {
		for (j = i; j <= last; j++) {
			c = objfs_chunkmap_get(&ip->chunks, j);
			if ((c && (c->flags & OBJFS_CHUNK_ONDISK)) ||
			    objfs_slots_taken(&ip->slots, j))
				break;
		}
		if (j == i) {
			j = i + 1;
			continue;
		}
		/* Not KEEP_SIZE: blocks past the file's end could not be
		 * given back on failure (ext4 ignores a hole punched past
		 * the end), and nothing would show where they went. */
		if (fallocate(fd, 0, (off_t)(i << s->chunk_shift),
				(off_t)((j - i) << s->chunk_shift)) < 0) {
			rc = -errno;
			done = j;	/* the failed run may be partly there */
			break;
		}
	}
	if (rc == 0)
		return 0;
	/* A failed fallocate may have allocated part of its run, and moved
	 * the file's end past it: every punch below is inside the file. */
	for (i = first; i < done; i++) {
		c = objfs_chunkmap_get(&ip->chunks, i);
		if (!(c && (c->flags & OBJFS_CHUNK_ONDISK)) &&
		    !objfs_slots_taken(&ip->slots, i) &&
		    objfs_backing_punch(fd, i, s->chunk_size) < 0)
			/* Only space: no record points at these blocks, and
			 * the trim after an unclean stop, or the next write
			 * of the chunk, reuses them. */
			objfs_log(OBJFS_LOG_WARNING, "inode %" PRIu64 ": cannot "
				"give back the blocks reserved for chunk %"
				PRIu64 ": %m", ip->ino, i);
	}
	return rc;
}

const struct objfs_copy_ops objfs_copy_local = {
	.name = "local",
	.load = local_load,
	.unload = local_unload,
	.read = local_read,
	.read_part = local_read_part,
	.read_start = local_read_start,
	.read_run = local_read_run,
	.read_end = local_read_end,
	.key = local_key,
	.batch_new = local_batch_new,
	.put_subs = local_put_subs,
	.put = local_put,
	.batch_sync = local_batch_sync,
	.batch_record = local_batch_record,
	.batch_undo = local_batch_undo,
	.batch_done = local_batch_done,
	.batch_count = local_batch_count,
	.batch_entry = local_batch_entry,
	.batch_free = local_batch_free,
	.drop = local_drop,
	.release = local_release,
	.cut_prepare = local_cut_prepare,
	.cut_record = local_cut_record,
	.cut_done = local_cut_done,
	.cut_free = local_cut_free,
	.reserve = local_reserve,
	.share = local_share,
	.users = local_users,
	.doom = local_doom,
	.gone = local_gone,
	.doomed_free = local_doomed_free,
	.give_back = local_give_back,
	.reclaim = local_reclaim,
	.trim = local_trim,
	.space = local_space,
	.figures = local_figures,
};
