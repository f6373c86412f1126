/* SPDX-License-Identifier: MIT */
/*
 * backing.h - the backing directory: one file per object, holding the disk
 * copies of its chunks in chunk-sized slots, slot s at offset s * chunk
 * size.  Chunk i is in slot i unless copy-on-write had to put it
 * elsewhere (local.c), so an object written out once is a plain file
 * holding exactly its bytes.
 *
 * File names are the object's inode number in 16 hex digits, never a name
 * a user chose, and every file is opened relative to the directory's fd
 * with O_NOFOLLOW.  Thread-safe: the struct is immutable after open and
 * each call is positional I/O on a caller-owned fd.
 */
#ifndef OBJFS_BACKING_H
#define OBJFS_BACKING_H

#include <stddef.h>
#include <stdint.h>
#include "meta/meta.h"
#include "src/base/bits.h"

struct objfs_backing;

/* Open the backing directory @path (created 0700 if missing). */
int objfs_backing_open(const char *path, struct objfs_backing **out);
void objfs_backing_close(struct objfs_backing *b);

/* Open (with @create, creating) the file of object @ino.  Returns an fd
 * or -errno; -ENOENT when absent and !@create.  *@created (if non-NULL)
 * says whether this call made the file: its name is durable only after
 * objfs_backing_sync_dir().  The fd does direct I/O (O_DIRECT) when the
 * backing filesystem supports it, so that spilled bytes neither fill the
 * page cache nor pay for fresh page-cache memory; objfs_backing_write/read
 * handle the alignment either way. */
int objfs_backing_file(struct objfs_backing *b, uint64_t ino, int create,
		int *created);

/* Direct I/O moves whole aligned blocks: buffers passed to
 * objfs_backing_write/read must be OBJFS_BACKING_ALIGN-aligned and hold
 * objfs_backing_span(len) bytes (the bytes past @len zero for writes). */
#define OBJFS_BACKING_ALIGN	4096u
static inline uint32_t
objfs_backing_span(uint32_t len)
{
	return (len + OBJFS_BACKING_ALIGN - 1) & ~(OBJFS_BACKING_ALIGN - 1);
}
/* Remove the file of object @ino; absent is not an error. */
int objfs_backing_remove(struct objfs_backing *b, uint64_t ino);
/* Call @cb for every object file in the directory (names objfs made),
 * stopping at the first nonzero return, which is returned. */
int objfs_backing_list(struct objfs_backing *b,
		int (*cb)(void *arg, uint64_t ino), void *arg);
/* Make directory entries durable (fsync of the directory). */
int objfs_backing_sync_dir(struct objfs_backing *b);
/* The largest size, up to @want, that the backing filesystem lets a file
 * have (ext4 with 4 KiB blocks stops just short of 16 TiB, say), found
 * with ftruncate on an unnamed file. */
int objfs_backing_max_size(struct objfs_backing *b, uint64_t want,
		uint64_t *out);
/* The backing filesystem's size, its free bytes (root's reserve
 * included) and those free for unprivileged writers; @free may be NULL. */
int objfs_backing_free(struct objfs_backing *b, uint64_t *total,
		uint64_t *free, uint64_t *avail);

/*
 * Write @len bytes from @buf into slot @slot of @fd (a whole span of
 * aligned blocks), and compute the checksum of the @len bytes into
 * @csum_out, in sub-blocks of 1 << @shift bytes, their sums into @tab
 * (csum.h).  Returns 0, -ENOSPC, -EIO (short write) or another -errno; on
 * failure the slot's bytes are undefined (no record may point at them).
 * Not durable until fdatasync.
 */
int objfs_backing_write(int fd, uint64_t slot, uint32_t chunk_size,
		const void *buf, uint32_t len, unsigned shift,
		unsigned char *tab, uint64_t *csum_out);

/* The write alone, for a caller that has the sums already. */
int objfs_backing_write_raw(int fd, uint64_t slot, uint32_t chunk_size,
		const void *buf, uint32_t len);

/* The same for bytes [@from, @len) of the chunk only (@from aligned to
 * OBJFS_BACKING_ALIGN), into the same place of slot @slot; the checksum is
 * of all @len bytes of @buf. */
int objfs_backing_write_tail(int fd, uint64_t slot, uint32_t chunk_size,
		const void *buf, uint32_t from, uint32_t len, unsigned shift,
		unsigned char *tab, uint64_t *csum_out);

/*
 * A chunk's second slot.  A copy with sub-block sums may have some of its
 * sub-blocks at their place in a second slot instead of the first: bit i
 * of @map says sub-block i is in slot @slot.  A write-out that changes a
 * few sub-blocks puts their new versions at the other place (the one no
 * record points at) and flips their bits, instead of writing the whole
 * chunk to a new slot.
 */
struct objfs_alt {
	uint64_t slot;
	uint64_t map[OBJFS_BITS_WORDS];
};

static inline int
objfs_alt_has(const struct objfs_alt *a, uint32_t i)
{
	return a && objfs_bits_has(a->map, i);
}

/*
 * Write the sub-blocks (of 1 << @shift bytes) of the @len-byte chunk in
 * @buf whose bits are set in @dirty, each at the place that does not hold
 * its current version (slot @slot or @alt->slot, by @alt->map), and flip
 * their bits in @alt->map; then the sums into @tab: those of the
 * unchanged sub-blocks from @old_tab (the copy's record), those written
 * computed, and the chunk's checksum into @csum_out.  Only the written
 * sub-blocks of @buf are read.  Errors as objfs_backing_write; on failure
 * the map is as it was.
 */
int objfs_backing_write_subs(int fd, uint64_t slot, struct objfs_alt *alt,
		uint32_t chunk_size, const void *buf, uint32_t len,
		unsigned shift, const uint64_t *dirty,
		const unsigned char *old_tab, unsigned char *tab,
		uint64_t *csum_out);

/*
 * Read the @len-byte disk copy of chunk @idx from slot @slot (and, for
 * the sub-blocks @alt names, from its second slot; @alt may be NULL) into
 * @buf and check it against @csum (made with sub-blocks of 1 << @shift
 * bytes, or none when 0).  A short or unreadable file is -EIO and a
 * checksum mismatch is -EBADMSG, each logged with @ino and @idx; @buf is
 * then undefined.
 */
int objfs_backing_read(int fd, uint64_t ino, uint64_t idx, uint64_t slot,
		const struct objfs_alt *alt, uint32_t chunk_size, void *buf,
		uint32_t len, unsigned shift, uint64_t csum);

/*
 * Read only the sub-blocks of that copy that hold bytes [@lo, @hi) (@hi
 * <= @len; @shift != 0), checking each against its sum in @tab, into
 * @buf, which receives the copy's bytes from (@lo rounded down to a
 * sub-block) on and holds objfs_backing_span() of them.  Errors as
 * objfs_backing_read().
 */
int objfs_backing_read_part(int fd, uint64_t ino, uint64_t idx, uint64_t slot,
		const struct objfs_alt *alt, uint32_t chunk_size, void *buf,
		uint32_t lo, uint32_t hi, uint32_t len, unsigned shift,
		const unsigned char *tab);

/* Give the disk blocks of slot @slot back (punch a hole). */
int objfs_backing_punch(int fd, uint64_t slot, uint32_t chunk_size);

/* The second slot chunk record @r names, as backing.h takes it, in @a;
 * NULL when it has none. */
static inline const struct objfs_alt *
objfs_rec_alt(const struct objfs_chunk_rec *r, struct objfs_alt *a)
{
	a->slot = r->alt;
	objfs_bits_copy(a->map, r->map);
	return r->has_alt ? a : NULL;
}

#endif
