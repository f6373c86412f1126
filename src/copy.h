/* SPDX-License-Identifier: MIT */
/*
 * copy.h - the chunk-store layer: the durable copies of chunks.
 *
 * The one place that knows where a chunk's durable copy is and how to
 * write it, read it (whole or a range, checked against its sums), share
 * it, count the records that use it and give it back once no durable
 * record needs it.  The file-bytes modules (data.c, writeout.c,
 * read.c) reach copies only through the calls below.  A chunk entry
 * (chunk.h) says which copy it has: its length (disk_len), checksum
 * (csum), the commit that recorded it (rec_seq) and flags, and a name
 * that only the store reads (slot, alt, home); the store says how to
 * reach it.
 *
 * A store is a table of operations (struct objfs_copy_ops) that the
 * store's @copy points at, chosen when it opens.  The first is the
 * backing directory (local.c, with local_dedup.c, local_space.c, local_obj.c and
 * backing.c: one file per object, copies in chunk-sized slots).  A second,
 * a pool of a cluster say, fills in the same table and is chosen at open;
 * data.c, writeout.c and read.c do not change (doc/design.md, "The
 * chunk store").
 *
 * The rules every store keeps (the durability model):
 *	- a new copy never overwrites bytes a record, durable or not, may
 *	  still name: a crash at any instant finds every recorded copy whole;
 *	- a batch's copies are durable (batch_sync) before the commit that
 *	  records them (batch_record) can reach the index's disk;
 *	- a copy a commit stops using is given back only once that commit
 *	  is durable (release, give_back), and one shared by several records
 *	  only when the last of them goes (drop counts);
 *	- every read is checked against the chunk's checksum or the sums of
 *	  its sub-blocks: a mismatch is -EIO (counted in csum_failures),
 *	  never bytes.
 *
 * Unless a call says otherwise the inode's lock is held (store_int.h,
 * which has the lock hierarchy) and @c is entry @idx of @ip's chunk map.
 */
#ifndef OBJFS_COPY_H
#define OBJFS_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct objfs_store;
struct objfs_inode;
struct objfs_chunk;
struct objfs_meta_txn;
struct objfs_status_figures;

struct objfs_copy_read;		/* a read prepared under the lock */
struct objfs_copy_batch;	/* the new copies of one write-out */
struct objfs_copy_cut;		/* a copy made shorter (truncate) */
struct objfs_copy_doomed;	/* what a deleted object gives back */

/* What a write-out made of one chunk (objfs_copy_batch_entry). */
struct objfs_copy_made {
	uint64_t idx;
	uint64_t written;	/* bytes written to the store for it */
	uint32_t len;		/* bytes the new copy holds */
	unsigned dup : 1;	/* an equal copy there already was used */
	unsigned subs : 1;	/* only its changed sub-blocks were written */
	unsigned skip : 1;	/* not recorded: write it again */
};

/* What dropping a copy leaves to release (objfs_copy_drop). */
#define OBJFS_COPY_FREE	1u	/* no record points at the copy any more */
#define OBJFS_COPY_FILE	2u	/* ... and all its store held for a deleted
				 * object goes with it */

struct objfs_copy_ops {
	const char *name;

	/* ---- an object in memory ---- */
	/* Fill @ip's chunk map from its records: the copies, and the store's
	 * own state of the object.  *@n gets the records used, *@bad 1 when
	 * some could not be (damaged, or naming what another one does). */
	int (*load)(struct objfs_store *s, struct objfs_inode *ip,
			uint64_t *n, int *bad);
	/* Let go of that state (the copies stay in the store). */
	void (*unload)(struct objfs_store *s, struct objfs_inode *ip);

	/* ---- reads ---- */
	/* The copy of @c into @buf (objfs_copy_buf(disk_len)), verified. */
	int (*read)(struct objfs_store *s, struct objfs_inode *ip,
			uint64_t idx, const struct objfs_chunk *c, void *buf);
	/* Bytes [@lo, @hi) of it (@hi <= disk_len; only for a copy with
	 * sub-block sums, OBJFS_CHUNK_SUMS), read as the whole sub-blocks
	 * that hold them, each verified: @buf gets the copy's bytes from
	 * @lo rounded down to a sub-block, and holds objfs_copy_span() of
	 * them; past the copy's end, zeros. */
	int (*read_part)(struct objfs_store *s, struct objfs_inode *ip,
			uint64_t idx, const struct objfs_chunk *c, void *buf,
			uint32_t lo, uint32_t hi);
	/* A whole read done without the lock: prepared with it held
	 * (read_start), run without (read_run, which touches neither @ip
	 * nor its map), finished with it held again (read_end).  Between
	 * start and end the copy is not given back. */
	int (*read_start)(struct objfs_store *s, struct objfs_inode *ip,
			uint64_t idx, const struct objfs_chunk *c,
			struct objfs_copy_read **out);
	int (*read_run)(struct objfs_store *s, struct objfs_copy_read *rd,
			void *buf);
	void (*read_end)(struct objfs_store *s, struct objfs_inode *ip,
			struct objfs_copy_read *rd);
	/* A number that says which copy @c has: two entries of one object
	 * with the same key, checksum and length hold the same bytes. */
	uint64_t (*key)(const struct objfs_chunk *c);

	/* ---- write-out: new copies, then one commit ---- */
	/* A batch for the chunks @sel[0..n) of @ip (ascending), an
	 * eviction's with @evicting. */
	int (*batch_new)(struct objfs_store *s, struct objfs_inode *ip,
			const uint64_t *sel, size_t n, int evicting,
			struct objfs_copy_batch **out);
	/* Write only the changed sub-blocks (dsub) of dirty resident chunk
	 * @idx, whose new copy is to hold @len bytes, where the store can: 1 done, 0 the whole chunk is to be
	 * put instead, or -errno.  Only those sub-blocks of the block are
	 * read (a PARTIAL one holds no others). */
	int (*put_subs)(struct objfs_copy_batch *b, uint64_t idx,
			struct objfs_chunk *c, uint32_t len);
	/* Write the whole block of resident chunk @idx (its first @len
	 * bytes) as its new copy, or find an equal one already stored
	 * (dedup, unless @nodup).  0 or -errno (nothing taken then). */
	int (*put)(struct objfs_copy_batch *b, uint64_t idx,
			struct objfs_chunk *c, uint32_t len, int nodup);
	/* Make what was put durable, before any record names it.  On
	 * failure nothing put is kept: -errno. */
	int (*batch_sync)(struct objfs_copy_batch *b);
	/* In @t, the records of what was put, and the references they
	 * take and drop; *@added the records that are new. */
	int (*batch_record)(struct objfs_copy_batch *b,
			struct objfs_meta_txn *t, uint64_t *added);
	/* @t was not committed: give back what was put. */
	void (*batch_undo)(struct objfs_copy_batch *b);
	/* @t committed as @seq: each entry now names its new copy (csum,
	 * disk_len, rec_seq, ONDISK|SUMS), and the old copies are released.
	 * Entries skipped keep their old copy. */
	void (*batch_done)(struct objfs_copy_batch *b, uint64_t seq);
	/* Entry @k of what was put, for @k < the count returned by
	 * batch_count. */
	size_t (*batch_count)(const struct objfs_copy_batch *b);
	const struct objfs_copy_made *(*batch_entry)(
			const struct objfs_copy_batch *b, size_t k);
	void (*batch_free)(struct objfs_copy_batch *b);

	/* ---- a chunk stops using its copy, or keeps a part ---- */
	/* In @t, @c stops pointing at its copy (rewritten, cut, punched):
	 * *@what gets OBJFS_COPY_FREE when the copy is to be given back once
	 * @t is durable, and OBJFS_COPY_FILE as well when that frees all
	 * a deleted object left. */
	int (*drop)(struct objfs_store *s, struct objfs_meta_txn *t,
			const struct objfs_inode *ip,
			const struct objfs_chunk *c, unsigned *what);
	/* After @t committed as @seq: give back what drop() said, once the
	 * commit is durable. */
	void (*release)(struct objfs_store *s, struct objfs_inode *ip,
			const struct objfs_chunk *c, unsigned what,
			uint64_t seq);
	/* Truncation: the copy of @c is to end at @len (< disk_len) and
	 * never bring the bytes after it back.  Prepared (may read the
	 * copy), recorded in @t, and applied to @c once @t committed as
	 * @seq; cut_free() in every case. */
	int (*cut_prepare)(struct objfs_store *s, struct objfs_inode *ip,
			uint64_t idx, const struct objfs_chunk *c,
			uint32_t len, struct objfs_copy_cut **out);
	int (*cut_record)(struct objfs_store *s, struct objfs_meta_txn *t,
			struct objfs_inode *ip, uint64_t idx,
			const struct objfs_chunk *c,
			const struct objfs_copy_cut *cut);
	void (*cut_done)(struct objfs_chunk *c,
			const struct objfs_copy_cut *cut, uint64_t seq);
	void (*cut_free)(struct objfs_copy_cut *cut);
	/* fallocate: room in the store for chunks @first..@last of @ip that
	 * have no copy, so that writing them out cannot fail for want of
	 * space.  All or nothing. */
	int (*reserve)(struct objfs_store *s, struct objfs_inode *ip,
			uint64_t first, uint64_t last);

	/* ---- shared copies ---- */
	/* copy_file_range without copying: chunk-aligned @off_in of @src
	 * and @off_out of @dst, whole chunks (and a last one that ends
	 * @src) whose copy is current are shared, in one commit with
	 * @dst's size.  *@done: the bytes so shared, from the start (0:
	 * copy them).  Both inode locks held (so ns_lock too; @src may be
	 * @dst).  0 or -ENOMEM. */
	int (*share)(struct objfs_store *s, struct objfs_inode *src,
			uint64_t off_in, struct objfs_inode *dst,
			uint64_t off_out, uint64_t len, uint64_t *done);
	/* How many records use @c's copy (1 when only @c's). */
	int (*users)(struct objfs_store *s, const struct objfs_inode *ip,
			const struct objfs_chunk *c, uint64_t *n);

	/* ---- deleting an object ---- */
	/* In @t, which deletes @ip's records: drop its references, and
	 * say what it gives back once @t is durable.  0 or -errno (@t is
	 * then to be aborted, and nothing is left to free). */
	int (*doom)(struct objfs_store *s, struct objfs_meta_txn *t,
			struct objfs_inode *ip, struct objfs_copy_doomed **d);
	/* @t committed as @seq: let go of @ip's state and give back what
	 * doom() said once that is durable; frees @d. */
	void (*gone)(struct objfs_store *s, struct objfs_inode *ip,
			uint64_t seq, struct objfs_copy_doomed *d);
	/* @t was not committed. */
	void (*doomed_free)(struct objfs_copy_doomed *d);

	/* ---- giving space back (no lock held) ---- */
	/* Give back what waits for commits durable now (all of it with
	 * @all, after a final sync). */
	void (*give_back)(struct objfs_store *s, int all);
	/* A full store: make the index durable and give back now.  1 if
	 * anything waited, else 0. */
	int (*reclaim)(struct objfs_store *s);
	/* After an unclean stop, before anything else: give back what no
	 * record names.  The bytes freed. */
	uint64_t (*trim)(struct objfs_store *s);

	/* ---- capacity (no lock held) ---- */
	/* The store's size, its free bytes and those free for writers (df:
	 * statfs's blocks, bfree and bavail before the arena's part). */
	int (*space)(struct objfs_store *s, uint64_t *total, uint64_t *free,
			uint64_t *avail);

	/* ---- the status file (no lock held) ---- */
	/* The figures of what the store holds: disk_bytes, disk_chunks,
	 * disk_stored, shared_now, fs_bytes, fs_avail (status.h). */
	int (*figures)(struct objfs_store *s, struct objfs_status_figures *f);
};

/* The backing directory (local.c). */
extern const struct objfs_copy_ops objfs_copy_local;

/* Buffers for copies: aligned to 4 KiB and a whole number of 4 KiB
 * blocks long (what direct I/O moves), objfs_copy_span(len) bytes. */
static inline uint32_t
objfs_copy_span(uint32_t len)
{
	return (len + 4095u) & ~4095u;
}
static inline void *
objfs_copy_buf(uint32_t len)
{
	void *p;

	return posix_memalign(&p, 4096, objfs_copy_span(len ? len : 1)) ?
		NULL : p;
}

#endif
