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
