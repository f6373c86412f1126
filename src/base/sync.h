/* SPDX-License-Identifier: MIT */
/*
 * sync.h - condition variables for the store's threads.  Their timed
 * waits run on CLOCK_MONOTONIC, so that a step of the wall clock (NTP, an
 * operator, a VM resumed) neither stretches a one-second tick into hours
 * nor turns it into a busy loop.
 */
#ifndef OBJFS_SYNC_H
#define OBJFS_SYNC_H

#include <pthread.h>

/* Initialise @cv for objfs_cond_wait_ms.  0 or an errno value. */
int objfs_cond_init(pthread_cond_t *cv);

/* Wait on @cv, holding @mu, for at most @ms milliseconds.  0 when woken
 * (or spuriously), ETIMEDOUT when the time ran out. */
int objfs_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, unsigned ms);

#endif
