/* SPDX-License-Identifier: MIT */
/*
 * be.h - big-endian 64- and 32-bit integers in byte buffers (the index's keys,
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

static inline void
put_be32(unsigned char *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--) {
		p[i] = (unsigned char)v;
		v >>= 8;
	}
}

static inline uint32_t
get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		(uint32_t)p[2] << 8 | p[3];
}

#endif
