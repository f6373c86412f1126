/* SPDX-License-Identifier: MIT */
/*
 * wraps.h - the calls the simulator takes over at link time
 * (-Wl,--wrap=NAME, Makefile.am): __wrap_NAME is the simulator's,
 * __real_NAME the library's.  sched.c and sim.c define them.
 */
#ifndef OBJFS_SIM_WRAPS_H
#define OBJFS_SIM_WRAPS_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "src/remote.h"

#define SIM_WRAP(ret, name, args) ret __wrap_##name args; ret __real_##name args;

SIM_WRAP(int, pthread_mutex_lock, (pthread_mutex_t *m))
SIM_WRAP(int, pthread_mutex_trylock, (pthread_mutex_t *m))
SIM_WRAP(int, pthread_mutex_unlock, (pthread_mutex_t *m))
SIM_WRAP(int, pthread_mutex_timedlock, (pthread_mutex_t *m,
		const struct timespec *abs))
SIM_WRAP(int, pthread_mutex_init, (pthread_mutex_t *m,
		const pthread_mutexattr_t *a))
SIM_WRAP(int, pthread_mutex_destroy, (pthread_mutex_t *m))
SIM_WRAP(int, pthread_cond_init, (pthread_cond_t *c,
		const pthread_condattr_t *a))
SIM_WRAP(int, pthread_cond_destroy, (pthread_cond_t *c))
SIM_WRAP(int, pthread_cond_wait, (pthread_cond_t *c, pthread_mutex_t *m))
SIM_WRAP(int, pthread_cond_timedwait, (pthread_cond_t *c, pthread_mutex_t *m,
		const struct timespec *abs))
SIM_WRAP(int, pthread_cond_signal, (pthread_cond_t *c))
SIM_WRAP(int, pthread_cond_broadcast, (pthread_cond_t *c))
SIM_WRAP(int, pthread_rwlock_init, (pthread_rwlock_t *rw,
		const pthread_rwlockattr_t *a))
SIM_WRAP(int, pthread_rwlock_destroy, (pthread_rwlock_t *rw))
SIM_WRAP(int, pthread_rwlock_rdlock, (pthread_rwlock_t *rw))
SIM_WRAP(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t *rw,
		const struct timespec *abs))
SIM_WRAP(int, pthread_rwlock_wrlock, (pthread_rwlock_t *rw))
SIM_WRAP(int, pthread_rwlock_unlock, (pthread_rwlock_t *rw))
SIM_WRAP(int, pthread_create, (pthread_t *pt, const pthread_attr_t *a,
		void *(*fn)(void *), void *arg))
SIM_WRAP(int, pthread_join, (pthread_t pt, void **ret))
SIM_WRAP(int, clock_gettime, (clockid_t clk, struct timespec *ts))
SIM_WRAP(time_t, time, (time_t *t))
SIM_WRAP(int, nanosleep, (const struct timespec *req, struct timespec *rem))
SIM_WRAP(int, sched_yield, (void))
SIM_WRAP(int, flock, (int fd, int op))
SIM_WRAP(int, gethostname, (char *name, size_t len))
SIM_WRAP(pid_t, getpid, (void))
SIM_WRAP(uint64_t, objfs_random64, (void))
SIM_WRAP(int, objfs_tier_remote_connect, (const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize))

#undef SIM_WRAP

#endif
