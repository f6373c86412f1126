/* SPDX-License-Identifier: MIT */
/*
 * csum.h - chunk checksums.
 *
 * Every chunk written to the backing directory carries the xxh3-64 of its
 * bytes.  In LMDB the checksum is stored in canonical (big-endian) form, so
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

/* Canonical big-endian byte form of a checksum, and back. */
void objfs_csum_to_canonical(uint64_t h, unsigned char out[8]);
uint64_t objfs_csum_from_canonical(const unsigned char in[8]);

#endif
