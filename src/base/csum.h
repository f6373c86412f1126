/* SPDX-License-Identifier: MIT */
/*
 * csum.h - chunk checksums.
 *
 * Every chunk written to the backing directory carries a checksum of its
 * bytes.  Chunks written since schema 3 are checked in sub-blocks: a
 * 32-bit sum per sub-block (the low half of its xxh3-64, seeded with its
 * number), kept big-endian in the chunk's record, so that part of a chunk
 * can be read from disk and verified alone; the chunk's checksum is the
 * xxh3-64 of that table, seeded with the length and the sub-block size.
 * Sub-blocks are 4 KiB, or a 256th of the chunk when that is larger, in
 * data directories made since schema 4; a 128th in those made before
 * (the index records which: meta_keys.h).  Records of
 * older indexes (shift 0) carry the xxh3-64 of the bytes and are read
 * whole.  In LMDB checksums are stored in canonical (big-endian) form, so
 * an index is portable between hosts of either byte order.
 */
#ifndef OBJFS_CSUM_H
#define OBJFS_CSUM_H

#include <stddef.h>
#include <stdint.h>

/* xxh3-64 of buf[0..len).  Pure; safe from any thread. */
uint64_t objfs_csum64(const void *buf, size_t len);
/* The same with a seed, to chain several pieces into one checksum. */
uint64_t objfs_csum64_seed(const void *buf, size_t len, uint64_t seed);

/* Sub-block sums per chunk at most: in a data directory made since
 * schema 4, and in one made before. */
#define OBJFS_SUMS_MAX		256u
#define OBJFS_SUMS_V3		128u
#define OBJFS_SUMS_MIN_SHIFT	12u
/* The log2 of the sub-block size for chunks of @chunk_size bytes with at
 * most @sums sub-blocks. */
unsigned objfs_sub_shift(uint32_t chunk_size, uint32_t sums);

/* Sums for @len bytes in sub-blocks of 1 << @shift. */
static inline uint32_t
objfs_nsums(uint32_t len, unsigned shift)
{
	return (uint32_t)(((uint64_t)len + (1u << shift) - 1) >> shift);
}

/*
 * The checksum of a chunk copy of @len bytes.  @shift 0: the xxh3-64 of
 * the bytes (records before schema 3).  Otherwise the sums of its
 * sub-blocks go into @tab (4 bytes each, big-endian; objfs_nsums() of
 * them), and the checksum is objfs_sums_csum() of that table.
 */
uint64_t objfs_chunk_csum(const void *buf, uint32_t len, unsigned shift,
		unsigned char *tab);
/* The chunk checksum that table @tab of a @len-byte copy stands for. */
uint64_t objfs_sums_csum(const unsigned char *tab, uint32_t len,
		unsigned shift);
/* The sum of sub-block @i, whose @len bytes are at @buf. */
uint32_t objfs_sub_sum(const void *buf, uint32_t len, uint32_t i);
/* Sub-blocks @first..@last of a chunk, read into @buf from sub-block
 * @first on (the chunk's bytes end at @end, relative to the chunk),
 * checked against the chunk's sums @tab: 1 when every one matches. */
int objfs_subs_match(const void *buf, uint32_t first, uint32_t last,
		uint32_t end, unsigned shift, const unsigned char *tab);

/* The name of @len bytes by their content (a chunk in a pool named by
 * what it holds): the xxh3-128 of the bytes, seeded with their length,
 * big-endian into @out. */
void objfs_content_hash128(const void *buf, uint32_t len,
		unsigned char out[16]);

/*
 * The whole-object checksum (doc/design.md, "Object checksums";
 * scripts/objfs-sum computes it from the bytes alone): the xxh3-128 of
 * be64(size) and then, for each 1 MiB piece of the object in order (the
 * last one shorter), be64 of its piece hash: objfs_chunk_csum() of the
 * piece with 4 KiB sub-blocks (OBJFS_OSUM_SHIFT).  objfs_osum_new()
 * returns NULL when out of memory; objfs_osum_end() writes 32 hex digits
 * and a NUL, and frees @o.
 */
#define OBJFS_OSUM_PIECE	(1u << 20)
#define OBJFS_OSUM_SHIFT	12u
struct objfs_osum;
struct objfs_osum *objfs_osum_new(uint64_t size);
void objfs_osum_piece(struct objfs_osum *o, uint64_t piece_hash);
void objfs_osum_end(struct objfs_osum *o, char hex[33]);
/* The piece hash of a piece of @len zero bytes. */
uint64_t objfs_osum_zero_piece(uint32_t len);

/* Canonical big-endian byte form of a checksum, and back. */
void objfs_csum_to_canonical(uint64_t h, unsigned char out[8]);
uint64_t objfs_csum_from_canonical(const unsigned char in[8]);

#endif
