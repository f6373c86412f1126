/* SPDX-License-Identifier: MIT */
/*
 * bits.h - sets of a chunk's sub-blocks (at most OBJFS_SUMS_MAX, csum.h):
 * which are changed, held, or in the second slot.  A set is an array of
 * OBJFS_BITS_WORDS 64-bit words, bit i of the set being bit i % 64 of
 * word i / 64.
 */
#ifndef OBJFS_BITS_H
#define OBJFS_BITS_H

#include <stdint.h>
#include <string.h>

#include "src/base/csum.h"

#define OBJFS_BITS_WORDS	(OBJFS_SUMS_MAX / 64)
_Static_assert(OBJFS_BITS_WORDS * 64 == OBJFS_SUMS_MAX,
		"a set holds every sub-block of a chunk");

static inline int
objfs_bits_has(const uint64_t *m, uint32_t i)
{
	return (int)(m[i >> 6] >> (i & 63) & 1);
}

static inline void
objfs_bits_set(uint64_t *m, uint32_t i)
{
	m[i >> 6] |= 1ull << (i & 63);
}

static inline unsigned
objfs_bits_count(const uint64_t *m)
{
	unsigned n = 0;

	for (unsigned w = 0; w < OBJFS_BITS_WORDS; w++)
		n += (unsigned)__builtin_popcountll(m[w]);
	return n;
}

/* Every bit clear, or (objfs_bits_fill) every bit set. */
static inline void
objfs_bits_zero(uint64_t *m)
{
	memset(m, 0, OBJFS_BITS_WORDS * sizeof(*m));
}

static inline void
objfs_bits_fill(uint64_t *m)
{
	memset(m, 0xff, OBJFS_BITS_WORDS * sizeof(*m));
}

static inline void
objfs_bits_copy(uint64_t *d, const uint64_t *m)
{
	memcpy(d, m, OBJFS_BITS_WORDS * sizeof(*m));
}

/* d |= m, and d ^= m. */
static inline void
objfs_bits_or(uint64_t *d, const uint64_t *m)
{
	for (unsigned w = 0; w < OBJFS_BITS_WORDS; w++)
		d[w] |= m[w];
}

static inline void
objfs_bits_xor(uint64_t *d, const uint64_t *m)
{
	for (unsigned w = 0; w < OBJFS_BITS_WORDS; w++)
		d[w] ^= m[w];
}

/* Keep sub-blocks 0..@n-1 only. */
static inline void
objfs_bits_keep(uint64_t *m, uint32_t n)
{
	for (unsigned w = 0; w < OBJFS_BITS_WORDS; w++) {
		uint32_t lo = w * 64;

		if (n <= lo)
			m[w] = 0;
		else if (n - lo < 64)
			m[w] &= (1ull << (n - lo)) - 1;
	}
}

#endif
