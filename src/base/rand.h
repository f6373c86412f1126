/* SPDX-License-Identifier: MIT */
/*
 * rand.h - objfs's one source of random numbers (names of nodes, trees,
 * snapshots, data directories): the kernel's generator.  One function,
 * so that the simulator (tests/sim/) can replace it with its seeded one
 * and a seed replays a run exactly.
 */
#ifndef OBJFS_BASE_RAND_H
#define OBJFS_BASE_RAND_H

#include <stdint.h>

/* 64 random bits, never 0. */
uint64_t objfs_random64(void);

#endif
