/* SPDX-License-Identifier: MIT */
/*
 * csum.c - the only file that includes xxhash.h.
 */
#include <config.h>

#include <string.h>
#include <xxhash.h>

#include "csum.h"

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

uint64_t
objfs_sums_csum(const unsigned char *tab, uint32_t len, unsigned shift)
{
	return XXH3_64bits_withSeed(tab, 4 * (size_t)objfs_nsums(len, shift),
			(uint64_t)len << 8 | shift);
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
