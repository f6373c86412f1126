/* SPDX-License-Identifier: MIT */
/*
 * local_int.h - the backing directory as a chunk store (copy.h): what its
 * files share.  From the top: local.c (the ops table; loading, reads,
 * write-out batches, truncation, reservations), local_dedup.c (copies several
 * records use, dedup, deleting an object, the figures), local_space.c (giving
 * space back), local_obj.c (one object's state) and backing.c (the files'
 * I/O, backing.h); each calls only those below it.  Nothing above the
 * chunk-store layer includes this.
 *
 * Its copies: slot S of the backing file of object H, S * chunk size
 * bytes in; a chunk entry (chunk.h) names the slot, a second slot (alt)
 * and H when H is not its own object (home).  Per object it keeps, in the
 * inode, under the inode's lock: the slot map, the backing file's fd,
 * and the slots being read without the lock.
 */
#ifndef OBJFS_LOCAL_INT_H
#define OBJFS_LOCAL_INT_H

#include "src/copy.h"
#include "src/store_int.h"
#include "src/local/backing.h"

/* local_obj.c */
/* The backing file's fd (made, with @create, when missing; *@created
 * says so), or a negative errno. */
int local_backing_fd(struct objfs_store *s, struct objfs_inode *ip,
		int create, int *created);
/* The record of chunk @idx (@c), its sums into @tab (OBJFS_SUMS_MAX
 * room) and, when it has a second slot, where that is into @alt (may be
 * NULL).  -EIO, logged, when it is not the record of the copy @c
 * names. */
int local_chunk_rec(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t idx, const struct objfs_chunk *c,
		struct objfs_chunk_rec *r, unsigned char *tab,
		struct objfs_alt *alt);
/* May @ip have a backing file?  Then deleting it records a tombstone. */
int local_has_copies(const struct objfs_inode *ip);
/* The backing filesystem's size and free bytes (copy.h, space). */
int local_space(struct objfs_store *s, uint64_t *total, uint64_t *free,
		uint64_t *avail);
/* Is slot @slot of @ip's file being read without the lock? */
int local_reading(const struct objfs_inode *ip, uint64_t slot);

/* The object whose backing file holds @c's disk copy. */
static inline uint64_t
local_copy_home(const struct objfs_inode *ip, const struct objfs_chunk *c)
{
	return c->home ? c->home : ip->ino;
}
/* The fd through which chunk @c's disk copy is read: @ip's backing file,
 * or, for a copy shared from another object's, that file opened for
 * this read (*@own: local_copy_fd_done() closes it). */
int local_copy_fd(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_chunk *c, int *own);
void local_copy_fd_done(int fd, int own);
/* (And objfs_data_file_shared(), store_int.h: the checker and recovery
 * use it too.) */

/* local_dedup.c */
/* Is @c's disk copy shared, so that nothing may be written into it (no
 * append in place, no sub-blocks in its slots)?  1, 0, or -errno (to be
 * taken as 1). */
int local_copy_shared(struct objfs_store *s, const struct objfs_inode *ip,
		const struct objfs_chunk *c);
/* Dedup.  A disk copy, other than @c's own, holding the @len bytes of
 * @buf whose chunk checksum is @csum (candidates from the content DB,
 * each read, checked against its sums and compared byte for byte):
 * 1 and where it is, or 0.  No transaction held. */
int local_dedup_find(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_chunk *c, const void *buf, uint32_t len,
		uint64_t csum, uint64_t *home, uint64_t *slot);
/* In @t, the commit of a write-out: take a reference on the copy found,
 * if it is still what was read (its content entry unchanged, and
 * counted, or its one record still whole).  1 taken, 0 gone (write the
 * chunk instead), or -errno. */
int local_dedup_claim(struct objfs_meta_txn *t, uint64_t home, uint64_t slot,
		uint64_t csum, uint32_t len);
/* The ops of copy.h that local_dedup.c implements. */
int local_drop(struct objfs_store *s, struct objfs_meta_txn *t,
		const struct objfs_inode *ip, const struct objfs_chunk *c,
		unsigned *what);
void local_release(struct objfs_store *s, struct objfs_inode *ip,
		const struct objfs_chunk *c, unsigned what, uint64_t seq);
int local_users(struct objfs_store *s, const struct objfs_inode *ip,
		const struct objfs_chunk *c, uint64_t *n);
int local_share(struct objfs_store *s, struct objfs_inode *src,
		uint64_t off_in, struct objfs_inode *dst, uint64_t off_out,
		uint64_t len, uint64_t *done);
int local_doom(struct objfs_store *s, struct objfs_meta_txn *t,
		struct objfs_inode *ip, struct objfs_copy_doomed **d);
void local_gone(struct objfs_store *s, struct objfs_inode *ip, uint64_t seq,
		struct objfs_copy_doomed *d);
void local_doomed_free(struct objfs_copy_doomed *d);
int local_figures(struct objfs_store *s, struct objfs_status_figures *f);

/* local_space.c */
/* Put @slot of @ino on the list of space to give back once commit @seq
 * is durable (it stays taken meanwhile). */
void local_defer_slot(struct objfs_store *s, uint64_t ino, uint64_t slot,
		uint64_t seq);
/* Drop what is deferred for @ino: it is going as a whole. */
void local_forget_deferred(struct objfs_store *s, uint64_t ino);
/* Slots of @ip's file that wait to be given back are taken. */
int local_take_deferred(struct objfs_store *s, struct objfs_inode *ip);
void local_give_back(struct objfs_store *s, int all);
int local_reclaim(struct objfs_store *s);
uint64_t local_trim(struct objfs_store *s);

#endif
