/* SPDX-License-Identifier: MIT */
/*
 * objsum.c - the whole-object checksum of a regular file (csum.h): what
 * the read-only xattr user.objfs.checksum and objfsctl sum give.
 *
 * A piece's hash is the checksum objfs keeps for a chunk anyway when
 * chunks are 1 MiB with 4 KiB sub-blocks (the default, index schema 4):
 * a chunk whose disk copy is current and as long as the piece gives it
 * without any I/O, a resident one is hashed where it is in the arena, a
 * hole is a constant.  Anything else (a PARTIAL chunk, a disk copy
 * shorter than the piece, a damaged object, other chunk or sub-block
 * sizes) is read as a reader would read it (objfs_data_read_to, also
 * how sealed.c fills a per-object file).  Called with ip->lock held.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/csum.h"
#include "src/bytes/data_int.h"

#define PIECE	OBJFS_OSUM_PIECE
#define SHIFT	OBJFS_OSUM_SHIFT

/* The hash of piece @c (@len bytes) without reading anything from disk:
 * 1, or 0 when it must be read. */
static int
piece_known(struct objfs_store *s, const struct objfs_chunk *c, uint32_t len,
		uint64_t *h)
{
	unsigned char tab[4 * OBJFS_SUMS_MAX];

	if (!c || objfs_chunk_state(c) == OBJFS_CHUNK_HOLE) {
		*h = objfs_osum_zero_piece(len);
		return 1;
	}
	if ((c->flags & OBJFS_CHUNK_PARTIAL))
		return 0;
	if (!(c->flags & OBJFS_CHUNK_DIRTY) && (c->flags & OBJFS_CHUNK_ONDISK) &&
	    (c->flags & OBJFS_CHUNK_SUMS) && c->disk_len == len) {
		*h = c->csum;		/* the current disk copy's */
		return 1;
	}
	if (c->cap >= len) {
		*h = objfs_chunk_csum(objfs_arena_ptr(s->arena, c->off), len,
				SHIFT, tab);
		return 1;
	}
	return 0;
}

/*
 * Bytes [@off, @off + @len) of @ip as a read gets them (ip->lock held),
 * handed to @fn as one list of pieces and then let go: how the daemon
 * reads an object for itself (its checksum, a sealed object's own file).
 * -EIO when fewer than @len bytes came (the size said there were more).
 */
int
objfs_data_read_to(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t off, uint32_t len,
		int (*fn)(void *arg, struct iovec *iov, size_t n), void *arg)
{
	struct objfs_iov v = { 0 };
	size_t got = 0;
	int rc;

	v.iov = malloc(objfs_data_iov_max(s, len) * sizeof(v.iov[0]));
	if (!v.iov)
		return -ENOMEM;
	rc = objfs_data_read_iov(s, ip, off, len, &v);
	for (size_t i = 0; rc == 0 && i < v.n; i++)
		got += v.iov[i].iov_len;
	if (rc == 0 && got != len)
		rc = -EIO;
	if (rc == 0)
		rc = fn(arg, v.iov, v.n);
	objfs_iov_release(&v);
	free(v.iov);
	return rc;
}

/* The pieces of a read, one after the other into the buffer @arg. */
static int
gather(void *arg, struct iovec *iov, size_t n)
{
	unsigned char *buf = arg;

	for (size_t i = 0; i < n; i++) {
		memcpy(buf, iov[i].iov_base, iov[i].iov_len);
		buf += iov[i].iov_len;
	}
	return 0;
}

int
objfs_data_object_sum(struct objfs_store *s, struct objfs_inode *ip,
		char hex[33])
{
	uint64_t size = ip->attr.size, n = (size + PIECE - 1) / PIECE;
	int fast = s->chunk_size == PIECE && s->sub_shift == SHIFT &&
		!(ip->attr.pad & OBJFS_ATTR_DAMAGED);
	struct objfs_osum *o = objfs_osum_new(size);
	unsigned char *buf = NULL, tab[4 * OBJFS_SUMS_MAX];
	int rc = 0;

	if (!o)
		return -ENOMEM;
	for (uint64_t k = 0; k < n; k++) {
		uint32_t len = size - k * PIECE < PIECE ?
			(uint32_t)(size - k * PIECE) : PIECE;
		uint64_t h;

		if (fast && piece_known(s, objfs_chunkmap_get(&ip->chunks, k),
				len, &h)) {
			objfs_osum_piece(o, h);
			continue;
		}
		if (!buf && !(buf = malloc(PIECE))) {
			rc = -ENOMEM;
			break;
		}
		rc = objfs_data_read_to(s, ip, k * PIECE, len, gather, buf);
		if (rc < 0)
			break;
		objfs_osum_piece(o, objfs_chunk_csum(buf, len, SHIFT, tab));
	}
	free(buf);
	objfs_osum_end(o, hex);	/* frees it */
	if (rc < 0)
		hex[0] = '\0';
	return rc;
}
