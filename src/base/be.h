/* SPDX-License-Identifier: MIT */
/*
 * be.h - big-endian 64-bit integers in byte buffers (the index's keys,
 * the remote tier's log records).
 */
#ifndef OBJFS_BASE_BE_H
#define OBJFS_BASE_BE_H

#include <stdint.h>

static inline void
put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (unsigned char)v;
		v >>= 8;
	}
}

static inline uint64_t
get_be64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

#endif
