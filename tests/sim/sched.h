/* SPDX-License-Identifier: MIT */
/*
 * sched.h - the simulator's scheduler (sched.c): the real code's threads
 * run one at a time, in an order a seeded generator decides, on clocks
 * that only the scheduler moves.  Test builds only (tests/sim/).
 */
#ifndef OBJFS_SIM_SCHED_H
#define OBJFS_SIM_SCHED_H

#include <stdint.h>

#define SIM_NODES	256		/* node incarnations, at most */
#define SIM_NONE	(-1)		/* the driver and the pool's threads */
#define SIM_NS		1000000000ull

/* The calling thread becomes the scheduler's first thread (node
 * SIM_NONE); every thread it or its threads make is scheduled.
 * @switch_pm: at a point where a thread could be preempted, it is,
 * this many times in a million. */
void sim_sched_init(uint64_t seed, unsigned switch_pm);

/* Virtual time, nanoseconds since the run began. */
uint64_t sim_now(void);

/* The calling thread's node (SIM_NONE for the driver's). */
int sim_self_node(void);
/* Threads this thread makes from now on belong to @node. */
void sim_set_node(int node);

/* The scheduler's own generator: decisions of the pool and the driver
 * come from generators of their own (seeded from the run's seed), so
 * that what one decides does not move what the others do. */
uint64_t sim_sched_rand(void);

/* Sleep until virtual time @t (or for @ns). */
void sim_sleep_until(uint64_t t);
void sim_sleep(uint64_t ns);
/* A point where the scheduler may run another thread. */
void sim_yield(void);

/* Wait on @obj until sim_wake(@obj) or virtual time @deadline (0: none):
 * 0 when woken, -ETIMEDOUT. */
int sim_wait(const void *obj, uint64_t deadline);
void sim_wake(const void *obj);

/* Node @node's threads do not run until @until (a stopped process). */
void sim_pause_node(int node, uint64_t until);
uint64_t sim_paused_until(int node);
/* Node @node's threads never run again (a killed process).  The flock
 * locks its threads took are let go, as the kernel does for a killed
 * process. */
void sim_kill_node(int node);
int sim_node_dead(int node);
/* Node @node's clocks: its monotonic clock is @mono_off ahead of the
 * run's, its wall clock @real_off (nanoseconds, may be negative). */
void sim_set_clock(int node, int64_t mono_off, int64_t real_off);
void sim_get_clock(int node, int64_t *mono_off, int64_t *real_off);
/* The node's host name and process id, as gethostname/getpid say. */
void sim_set_identity(int node, const char *host, int pid);

/* Code that must not be preempted (the pool applying a request, the
 * checker): no switch at the points inside; blocking there is a bug. */
void sim_atomic_begin(void);
void sim_atomic_end(void);

/* Scheduling steps so far (a measure of work), and thread switches. */
uint64_t sim_steps(void);
uint64_t sim_switches(void);

/* What every thread is doing, to stderr (a deadlock's report). */
void sim_dump_threads(void);

/* Called when no thread can run and none waits for a time: the run is
 * deadlocked.  Set by the driver (it reports and ends the run). */
void sim_set_deadlock_handler(void (*fn)(void));

/* Virtual wall clock of the pool and of the run (ns since 1970). */
#define SIM_REAL_BASE	(1796601600ull * SIM_NS)	/* 2026-12-07 */
#define SIM_MONO_BASE	(100000ull * SIM_NS)

#endif
