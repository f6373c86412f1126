/* SPDX-License-Identifier: MIT */
/*
 * pool.h - the simulator's pool (pool.c): src/remote.h's table over
 * objects in memory, with RADOS's semantics, and the faults a real
 * network and OSD can show.  Test builds only: no user can mount it.
 */
#ifndef OBJFS_SIM_POOL_H
#define OBJFS_SIM_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "src/remote.h"

/* Faults, each in parts per million of the requests (or notifies) they
 * may strike. */
struct sim_faults {
	unsigned land_timeout;	/* applied, but the answer is lost */
	unsigned lost;		/* never applied, no answer */
	unsigned late;		/* applied after the caller gave up */
	unsigned slow;		/* answered, late in the timeout */
	unsigned busy;		/* S3: 503 SlowDown, nothing applied */
	unsigned notify_lost, notify_dup, notify_late;
};

/* What the pool did, for the checker and the report: each kind of fault
 * it dealt, and requests. */
struct sim_pool_counts {
	uint64_t requests, land_timeout, lost, late, slow, partitioned,
		osd_paused, notifies, notify_lost, notify_dup, notify_late,
		watches_dropped, s3_busy;
};

struct sim_pool;

struct sim_pool *simpool_new(uint64_t seed);
/* A new connection for node @node (a new librados client: locks it takes
 * are its own).  Each call is bounded by @timeout_s. */
struct objfs_remote *simpool_connect(struct sim_pool *p, int node,
		unsigned timeout_s);
/* The OSD's thread (late requests); call from the driver's thread. */
int simpool_start(struct sim_pool *p);

void simpool_set_faults(struct sim_pool *p, const struct sim_faults *f);
/* Node @node's requests are dropped until @until (a partition). */
void simpool_partition(struct sim_pool *p, int node, uint64_t until);
/* Node @node does not answer pings from @from until @until (stopped,
 * partitioned, or dead: UINT64_MAX): its watches lapse meanwhile. */
void simpool_node_down(struct sim_pool *p, int node, uint64_t from,
		uint64_t until);
/* The OSD takes no request until @until (it holds what comes). */
void simpool_osd_pause(struct sim_pool *p, uint64_t until);
/* The OSD's clock jumps by @ns. */
void simpool_clock_jump(struct sim_pool *p, int64_t ns);
void simpool_counts(struct sim_pool *p, struct sim_pool_counts *c);

/* The checker's view: no fault, no delay, no switch. */
int simpool_peek(struct sim_pool *p, const char *name, const void **data,
		size_t *len, uint64_t *ver);
/* Every object whose name begins with @prefix, in name order. */
int simpool_each(struct sim_pool *p, const char *prefix,
		int (*cb)(void *arg, const char *name, const void *data,
			size_t len),
		void *arg);
/* Lockers of lock "objfs" on @name (expired ones dropped): @cb gets each
 * locker's client, cookie, whether exclusive, and its expiry (the OSD's
 * clock). */
int simpool_lockers(struct sim_pool *p, const char *name,
		void (*cb)(void *arg, const char *client, const char *cookie,
			int exclusive, uint64_t expires),
		void *arg);
/* The highest log record's number of any epoch (0: none). */
uint64_t simpool_log_end(struct sim_pool *p);
/* The OSD's clock (ns since 1970). */
uint64_t simpool_clock(struct sim_pool *p);
/* Called after every change the pool applies (the request's object). */
void simpool_on_change(struct sim_pool *p,
		void (*fn)(void *arg, const char *name, int removed), void *arg);

/* Every request the OSD applies, when set (--trace). */
extern FILE *simpool_trace;

/* Another protocol's request (the S3 gateway, s3gw.c) over connection
 * @conn's network, with its faults: @apply(@arg) runs at the instant the
 * service applies it, if it does, and returns its status (for the
 * trace); @drop(@arg) frees it.  0 when it was answered by @deadline,
 * -ETIMEDOUT when not (applied, or not, or later).  *@kept: left to
 * apply later, @arg is the pool's from then on (it drops it). */
int simpool_ext_call(struct objfs_remote *conn, const char *what,
		int (*apply)(struct sim_pool *p, void *arg),
		void (*drop)(void *arg), void *arg, uint64_t deadline,
		int *kept);
#define SIM_FAULT_BUSY	1
/* A fault of kind @kind strikes now (the pool's generator). */
int simpool_chance(struct sim_pool *p, int kind);
/* S3's view of an object (s3gw.c): its bytes, time (the service's
 * clock, ns), ETag and metadata; -ENOENT. */
int simpool_s3_obj(struct sim_pool *p, const char *name, const void **data,
		size_t *len, uint64_t *mtime, const char **etag,
		const char **meta);
void simpool_s3_put(struct sim_pool *p, const char *name, const void *data,
		size_t len, const char *etag, const char *meta);
void simpool_s3_del(struct sim_pool *p, const char *name);

/* Connection @r's client name (client.N), node. */
const char *simpool_client(struct objfs_remote *r);

#endif
