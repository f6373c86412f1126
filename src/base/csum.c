/* SPDX-License-Identifier: MIT */
/*
 * csum.c - the only file that includes xxhash.h: chunk checksums, and
 * the whole-object checksum.
 */
#include <config.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "src/base/csum.h"

uint64_t
objfs_csum64(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

uint64_t
objfs_csum64_seed(const void *buf, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(buf, len, seed);
}

void
objfs_csum_to_canonical(uint64_t h, unsigned char out[8])
{
	XXH64_canonical_t c;

	XXH64_canonicalFromHash(&c, h);
	memcpy(out, c.digest, 8);
}

uint64_t
objfs_csum_from_canonical(const unsigned char in[8])
{
	XXH64_canonical_t c;

	memcpy(c.digest, in, 8);
	return XXH64_hashFromCanonical(&c);
}

unsigned
objfs_sub_shift(uint32_t chunk_size, uint32_t sums)
{
	unsigned shift = OBJFS_SUMS_MIN_SHIFT;

	while ((uint64_t)(1u << shift) * sums < chunk_size)
		shift++;
	return shift;
}

uint32_t
objfs_sub_sum(const void *buf, uint32_t len, uint32_t i)
{
	return (uint32_t)XXH3_64bits_withSeed(buf, len, i);
}

int
objfs_subs_match(const void *buf, uint32_t first, uint32_t last,
		uint32_t end, unsigned shift, const unsigned char *tab)
{
	const unsigned char *p = buf;
	uint32_t sub = 1u << shift;

	for (uint32_t i = first; i <= last; i++) {
		uint32_t l = end - (i << shift) < sub ? end - (i << shift) : sub;
		const unsigned char *t = tab + 4 * (size_t)i;
		uint32_t want = (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 |
			(uint32_t)t[2] << 8 | t[3];

		if (objfs_sub_sum(p + ((size_t)(i - first) << shift), l, i) !=
				want)
			return 0;
	}
	return 1;
}

uint64_t
objfs_sums_csum(const unsigned char *tab, uint32_t len, unsigned shift)
{
	return XXH3_64bits_withSeed(tab, 4 * (size_t)objfs_nsums(len, shift),
			(uint64_t)len << 8 | shift);
}

void
objfs_content_hash128(const void *buf, uint32_t len, unsigned char out[16])
{
	XXH128_hash_t h = XXH3_128bits_withSeed(buf, len, len);

	for (int i = 0; i < 8; i++) {
		out[i] = (unsigned char)(h.high64 >> (56 - 8 * i));
		out[8 + i] = (unsigned char)(h.low64 >> (56 - 8 * i));
	}
}

uint64_t
objfs_chunk_csum(const void *buf, uint32_t len, unsigned shift,
		unsigned char *tab)
{
	const unsigned char *p = buf;
	uint32_t sub = 1u << (shift ? shift : 31), n;

	if (shift == 0)
		return XXH3_64bits(buf, len);
	n = objfs_nsums(len, shift);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t l = len - i * sub < sub ? len - i * sub : sub;
		uint32_t h = objfs_sub_sum(p + (size_t)i * sub, l, i);

		tab[4 * i] = (unsigned char)(h >> 24);
		tab[4 * i + 1] = (unsigned char)(h >> 16);
		tab[4 * i + 2] = (unsigned char)(h >> 8);
		tab[4 * i + 3] = (unsigned char)h;
	}
	return objfs_sums_csum(tab, len, shift);
}

/* ---- whole-object checksums ------------------------------------------ */

struct objfs_osum {
	XXH3_state_t *st;
};

static void
put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

struct objfs_osum *
objfs_osum_new(uint64_t size)
{
	struct objfs_osum *o = malloc(sizeof(*o));
	unsigned char b[8];

	if (!o)
		return NULL;
	o->st = XXH3_createState();
	if (!o->st) {
		free(o);
		return NULL;
	}
	XXH3_128bits_reset(o->st);
	put_be64(b, size);
	XXH3_128bits_update(o->st, b, sizeof(b));
	return o;
}

void
objfs_osum_piece(struct objfs_osum *o, uint64_t piece_hash)
{
	unsigned char b[8];

	put_be64(b, piece_hash);
	XXH3_128bits_update(o->st, b, sizeof(b));
}

void
objfs_osum_end(struct objfs_osum *o, char hex[33])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(o->st));
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", c.digest[i]);
	XXH3_freeState(o->st);
	free(o);
}

static uint64_t zero_full;
static pthread_once_t zero_once = PTHREAD_ONCE_INIT;

static uint64_t
zero_piece(uint32_t len)
{
	static const unsigned char zero[1u << OBJFS_OSUM_SHIFT];
	const uint32_t sub = sizeof(zero);
	unsigned char tab[4 * OBJFS_SUMS_MAX];
	uint32_t n = objfs_nsums(len, OBJFS_OSUM_SHIFT);

	for (uint32_t i = 0; i < n; i++) {
		uint32_t l = len - i * sub < sub ? len - i * sub : sub;
		uint32_t h = objfs_sub_sum(zero, l, i);

		tab[4 * i] = (unsigned char)(h >> 24);
		tab[4 * i + 1] = (unsigned char)(h >> 16);
		tab[4 * i + 2] = (unsigned char)(h >> 8);
		tab[4 * i + 3] = (unsigned char)h;
	}
	return objfs_sums_csum(tab, len, OBJFS_OSUM_SHIFT);
}

static void
zero_init(void)
{
	zero_full = zero_piece(OBJFS_OSUM_PIECE);
}

uint64_t
objfs_osum_zero_piece(uint32_t len)
{
	if (len != OBJFS_OSUM_PIECE)
		return zero_piece(len);
	pthread_once(&zero_once, zero_init);
	return zero_full;
}
