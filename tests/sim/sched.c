/* SPDX-License-Identifier: MIT */
/*
 * sched.c - the simulator's scheduler: every thread of the real code runs,
 * but one at a time, and a seeded generator decides which, so that a seed
 * replays the same run exactly (the way FoundationDB's simulation and
 * TigerBeetle's VOPR run their real code).
 *
 * How.  The simulator is linked with -Wl,--wrap for the calls through
 * which threads meet each other and the world: mutexes, condition
 * variables, the read-write lock, thread creation and joining, the
 * clocks, sleeping, flock, the host name, the pid and objfs's one source
 * of randomness (objfs_random64).  Every thread made through the wrapped
 * pthread_create is a real thread that runs only while it holds the
 * baton (cur == it); all others wait on a condition variable of their
 * own.  A wrapped call is a point where the holder may pass the baton:
 * always when it blocks (a mutex held by another, a wait, a sleep, a
 * join), and, at points where it could run on, SWITCH_PM times in a
 * million (the run's preemption rate, drawn from its seed).  The next
 * thread is drawn from those that can run.  Mutexes, condition variables
 * and the read-write lock are the scheduler's own: the pthread objects
 * are only keys into a table of their state (owner, readers, clock), so
 * a thread never blocks inside libc where the scheduler cannot see it.
 *
 * Time.  Virtual: it moves by a microsecond at each step and, when no
 * thread can run, jumps to the earliest deadline (a timed wait, a sleep,
 * a paused node's resumption).  Each node has its own monotonic and wall
 * clocks (offsets from the run's), which the driver may skew or jump.
 * No deadline and nothing to run is a deadlock, reported with what every
 * thread waits for.
 *
 * Nodes.  A thread belongs to the node of the thread that made it (the
 * driver names the node of the store it opens).  A paused node's threads
 * do not run until it resumes (SIGSTOP); a killed node's never run again
 * (SIGKILL): its threads stay parked, its memory stays mapped, the flock
 * locks it took are released, and a new store may be opened on its data
 * directory (an index opened with MDB_NOLOCK and serialised by objfs's
 * own mutex, so the parked one holds nothing the new one needs).
 *
 * What it does not cover: code in shared libraries that blocks in its
 * own pthread calls (not wrapped; LMDB's locking is off, and librados and
 * libcurl are not loaded by the simulator's stores), and atomics used
 * without a wrapped call around them (they are exact here: one thread at
 * a time runs, so the simulator cannot show a reordering of them).
 */
#include <config.h>

#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "src/base/deadline.h"
#include "tests/sim/sched.h"
#include "tests/sim/wraps.h"

#define MAXTH		1024
#define NHASH		4096
#define QUANTUM_NS	1000u		/* a step's cost in virtual time */
#define MAX_FLOCKS	256

enum { S_FREE, S_RUN, S_BLOCK, S_DONE };
enum { B_NONE, B_MUTEX, B_COND, B_RD, B_WR, B_JOIN, B_SLEEP, B_WAIT };
static const char *const bnames[] = { "-", "mutex", "cond", "rdlock",
	"wrlock", "join", "sleep", "wait" };

struct sth {
	int id, node, state, kind;
	const void *obj;
	uint64_t wake_at;		/* 0: no deadline */
	int timedout;
	int atomic;
	int joined;
	pthread_cond_t go;
	pthread_t pt;
	void *(*fn)(void *);
	void *arg, *ret;
	void *where[6];			/* where it blocked */
	int nwhere;
};

struct obj {
	const void *addr;
	int owner;			/* thread id + 1 (mutex, writer) */
	int readers, wr_waiting;
	int prefer_writer;
	clockid_t clock;
	struct obj *next;
};

static pthread_mutex_t G = PTHREAD_MUTEX_INITIALIZER;
static struct sth th[MAXTH];
static int nth_hi;			/* slots in use are below it */
static struct sth *cur;
static __thread struct sth *self;
static __thread int make_node_set, make_node;
static int on;
static uint64_t rng, now_ns, steps, switches;
static unsigned switch_pm;
static struct obj *objs[NHASH];
static struct sth *cand[MAXTH];
static void (*deadlock_fn)(void);
static int where;		/* OBJFS_SIM_WHERE: blocks say where */

/* Node incarnations: index node + 1 (0 is SIM_NONE). */
static uint64_t paused_until[SIM_NODES + 1];
static int dead[SIM_NODES + 1];
static int64_t mono_off[SIM_NODES + 1], real_off[SIM_NODES + 1];
static char host[SIM_NODES + 1][64];
static int pids[SIM_NODES + 1];
static struct { int fd, node; } flocks[MAX_FLOCKS];
static int nflocks;

static void
fatal(const char *what)
{
	fprintf(stderr, "sim: scheduler: %s\n", what);
	sim_dump_threads();
	fflush(stderr);
	_exit(70);
}

static uint64_t
splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int
nidx(int node)
{
	if (node < SIM_NONE || node >= SIM_NODES)
		fatal("node out of range");
	return node + 1;
}

/* ---- the objects' table (G held) ------------------------------------- */

static unsigned
ohash(const void *p)
{
	uintptr_t x = (uintptr_t)p;

	return (unsigned)((x >> 3) * 0x9e3779b97f4a7c15ull >> 52) & (NHASH - 1);
}

static struct obj *
oget(const void *p)
{
	unsigned h = ohash(p);
	struct obj *o;

	for (o = objs[h]; o; o = o->next)
		if (o->addr == p)
			return o;
	o = calloc(1, sizeof(*o));
	if (!o)
		fatal("out of memory");
	o->addr = p;
	o->clock = CLOCK_REALTIME;
	o->next = objs[h];
	objs[h] = o;
	return o;
}

static void
odel(const void *p)
{
	unsigned h = ohash(p);

	for (struct obj **pp = &objs[h]; *pp; pp = &(*pp)->next) {
		if ((*pp)->addr == p) {
			struct obj *o = *pp;

			*pp = o->next;
			free(o);
			return;
		}
	}
}

/* ---- choosing the next thread (G held) -------------------------------- */

static int
eligible(const struct sth *t)
{
	int i = t->node + 1;

	return !dead[i] && paused_until[i] <= now_ns;
}

/* Timed waits whose time came are woken. */
static void
expire(void)
{
	for (int i = 0; i < nth_hi; i++) {
		struct sth *t = &th[i];

		if (t->state == S_BLOCK && t->wake_at && t->wake_at <= now_ns) {
			t->state = S_RUN;
			t->timedout = 1;
			t->wake_at = 0;
		}
	}
}

static struct sth *
pick(void)
{
	for (;;) {
		uint64_t next = UINT64_MAX;
		int n = 0;

		expire();
		for (int i = 0; i < nth_hi; i++) {
			struct sth *t = &th[i];

			if (t->state == S_RUN && eligible(t))
				cand[n++] = t;
		}
		if (n)
			return cand[splitmix(&rng) % (uint64_t)n];
		/* Nothing can run now: the next time something can. */
		for (int i = 0; i < nth_hi; i++) {
			struct sth *t = &th[i];
			int k = t->node + 1;

			if (dead[k])
				continue;
			if (t->state == S_BLOCK && t->wake_at && t->wake_at < next)
				next = t->wake_at;
			if (t->state == S_RUN && paused_until[k] > now_ns &&
			    paused_until[k] < next)
				next = paused_until[k];
		}
		if (next == UINT64_MAX) {
			if (deadlock_fn) {
				void (*fn)(void) = deadlock_fn;

				deadlock_fn = NULL;
				__real_pthread_mutex_unlock(&G);
				fn();
			}
			fatal("deadlock: no thread can run, and none waits "
				"for a time");
		}
		if (next > now_ns)
			now_ns = next;
	}
}

/* Pass the baton to @next and wait until it comes back to @me (G held). */
static void
hand_over(struct sth *me, struct sth *next)
{
	if (next == me)
		return;
	cur = next;
	switches++;
	__real_pthread_cond_signal(&next->go);
	if (me->state == S_DONE)
		return;
	while (cur != me)
		__real_pthread_cond_wait(&me->go, &G);
}

static int deadline_waits;
static uint64_t clock_of(int node, clockid_t clk);

/* Where a wait past a call's deadline begins, once per place. */
static void
where_report(int kind, uint64_t over)
{
	static char seen[64][512];
	static int nseen;
	void *bt[8];
	char **sym, key[512] = "";
	int n = backtrace(bt, 8);

	sym = backtrace_symbols(bt, n);
	for (int k = 2; sym && k < n && k < 6; k++)
		snprintf(key + strlen(key), sizeof(key) - strlen(key), "%s%s",
			k > 2 ? " < " : "", sym[k]);
	free(sym);
	for (int i = 0; i < nseen; i++)
		if (!strcmp(seen[i], key))
			return;
	if (nseen < 64)
		snprintf(seen[nseen++], sizeof(seen[0]), "%s", key);
	fprintf(stderr, "sim: a wait (%s) ended %.1f s past a call's "
		"deadline: %s\n", bnames[kind], (double)over / 1e9, key);
}

/* @me blocks on @kind/@obj until woken or @wake_at (G held). */
static void
block(struct sth *me, int kind, const void *obj, uint64_t wake_at)
{
	if (me->atomic)
		fatal("a thread blocked inside an atomic section");
	uint64_t end = 0;

	if (deadline_waits && objfs_deadline() && !me->atomic) {
		/* OBJFS_SIM_DEADLINE_WAITS: a wait of a thread serving a
		 * system call that ends past the call's deadline. */
		uint64_t have = clock_of(me->node, CLOCK_MONOTONIC);
		uint64_t d = objfs_deadline();

		end = now_ns + (d > have ? d - have : 0);
		if (end < now_ns + SIM_NS / 2)
			end = 0;	/* the deadline is here anyway */
	}
	me->state = S_BLOCK;
	me->kind = kind;
	me->obj = obj;
	me->wake_at = wake_at;
	me->timedout = 0;
	/* Where (for a deadlock's report): costly, so on request. */
	me->nwhere = where ? backtrace(me->where, 6) : 0;
	hand_over(me, pick());
	if (end && now_ns > end + SIM_NS && paused_until[me->node + 1] < end)
		where_report(kind, now_ns - end);
	me->kind = B_NONE;
	me->obj = NULL;
}

/* Wake the threads blocked on @kind/@obj: all, or one drawn at random. */
static int
wake(int kind, const void *obj, int all)
{
	int n = 0;

	for (int i = 0; i < nth_hi; i++) {
		struct sth *t = &th[i];

		if (t->state == S_BLOCK && t->kind == kind && t->obj == obj)
			cand[n++] = t;
	}
	if (!n)
		return 0;
	if (!all) {
		cand[0] = cand[splitmix(&rng) % (uint64_t)n];
		n = 1;
	}
	for (int i = 0; i < n; i++) {
		cand[i]->state = S_RUN;
		cand[i]->wake_at = 0;
	}
	return n;
}

/* A step: time moves, and maybe another thread runs (G held). */
static void
step(struct sth *me)
{
	steps++;
	now_ns += QUANTUM_NS;
	if (me->atomic)
		return;
	if (splitmix(&rng) % 1000000u < switch_pm)
		hand_over(me, pick());
}

static struct sth *
enter(void)
{
	struct sth *me = self;

	if (!on || !me)
		return NULL;
	__real_pthread_mutex_lock(&G);
	if (cur != me)
		fatal("a thread ran without the baton");
	return me;
}

static void
leave(void)
{
	__real_pthread_mutex_unlock(&G);
}

/* ---- the driver's calls ------------------------------------------------ */

void
sim_sched_init(uint64_t seed, unsigned pm)
{
	rng = seed ^ 0x5ced5ced5ced5cedull;
	switch_pm = pm;
	now_ns = SIM_NS;
	th[0].id = 0;
	th[0].node = SIM_NONE;
	th[0].state = S_RUN;
	th[0].pt = pthread_self();
	__real_pthread_cond_init(&th[0].go, NULL);
	nth_hi = 1;
	self = cur = &th[0];
	snprintf(host[0], sizeof(host[0]), "sim-driver");
	pids[0] = 100;
	where = getenv("OBJFS_SIM_WHERE") != NULL;
	deadline_waits = getenv("OBJFS_SIM_DEADLINE_WAITS") != NULL;
	on = 1;
}

uint64_t
sim_now(void)
{
	return now_ns;
}

int
sim_self_node(void)
{
	return self ? self->node : SIM_NONE;
}

void
sim_set_node(int node)
{
	(void)nidx(node);
	make_node_set = 1;
	make_node = node;
}

uint64_t
sim_sched_rand(void)
{
	return splitmix(&rng);
}

void
sim_sleep_until(uint64_t t)
{
	struct sth *me = enter();

	if (!me)
		return;
	steps++;
	if (t > now_ns)
		block(me, B_SLEEP, NULL, t);
	else
		step(me);
	leave();
}

void
sim_sleep(uint64_t ns)
{
	sim_sleep_until(now_ns + (ns ? ns : 1));
}

void
sim_yield(void)
{
	struct sth *me = enter();

	if (!me)
		return;
	step(me);
	leave();
}

int
sim_wait(const void *obj, uint64_t deadline)
{
	struct sth *me = enter();
	int to;

	if (!me)
		return -EINVAL;
	steps++;
	if (deadline && deadline <= now_ns) {
		leave();
		return -ETIMEDOUT;
	}
	block(me, B_WAIT, obj, deadline);
	to = me->timedout;
	leave();
	return to ? -ETIMEDOUT : 0;
}

void
sim_wake(const void *obj)
{
	struct sth *me = enter();

	if (!me)
		return;
	(void)wake(B_WAIT, obj, 1);
	leave();
}

void
sim_pause_node(int node, uint64_t until)
{
	paused_until[nidx(node)] = until;
}

uint64_t
sim_paused_until(int node)
{
	return paused_until[nidx(node)];
}

void
sim_kill_node(int node)
{
	int i = nidx(node);

	dead[i] = 1;
	/* The kernel lets a dead process's flock locks go. */
	for (int k = 0; k < nflocks; k++) {
		if (flocks[k].node != node)
			continue;
		(void)__real_flock(flocks[k].fd, LOCK_UN);
		flocks[k] = flocks[--nflocks];
		k--;
	}
}

int
sim_node_dead(int node)
{
	return dead[nidx(node)];
}

void
sim_set_clock(int node, int64_t mono, int64_t real)
{
	int i = nidx(node);

	mono_off[i] = mono;
	real_off[i] = real;
}

void
sim_get_clock(int node, int64_t *mono, int64_t *real)
{
	int i = nidx(node);

	*mono = mono_off[i];
	*real = real_off[i];
}

void
sim_set_identity(int node, const char *h, int pid)
{
	int i = nidx(node);

	snprintf(host[i], sizeof(host[i]), "%s", h);
	pids[i] = pid;
}

void
sim_atomic_begin(void)
{
	if (self)
		self->atomic++;
}

void
sim_atomic_end(void)
{
	if (self)
		self->atomic--;
}

uint64_t
sim_steps(void)
{
	return steps;
}

uint64_t
sim_switches(void)
{
	return switches;
}

void
sim_set_deadlock_handler(void (*fn)(void))
{
	deadlock_fn = fn;
}

void
sim_dump_threads(void)
{
	fprintf(stderr, "sim: at %.6f s, %d thread slot(s):\n",
		(double)now_ns / 1e9, nth_hi);
	for (int i = 0; i < nth_hi; i++) {
		struct sth *t = &th[i];
		char **sym;

		if (t->state == S_FREE || t->state == S_DONE)
			continue;
		fprintf(stderr, "  thread %d node %d%s%s: %s%s %s %p%s\n", t->id,
			t->node, dead[t->node + 1] ? " (dead)" : "",
			paused_until[t->node + 1] > now_ns ? " (paused)" : "",
			t->state == S_RUN ? "runnable" : "blocked on ",
			t->state == S_RUN ? "" : bnames[t->kind],
			t == cur ? "(running)" : "", t->obj,
			t->wake_at ? " (timed)" : "");
		if (t->state != S_BLOCK || !t->nwhere)
			continue;
		sym = backtrace_symbols(t->where, t->nwhere);
		for (int k = 1; sym && k < t->nwhere; k++)
			fprintf(stderr, "      %s\n", sym[k]);
		free(sym);
	}
}

/* ---- the wrapped calls -------------------------------------------------- */

static void
mutex_take(struct sth *me, pthread_mutex_t *m)
{
	struct obj *o = oget(m);

	while (o->owner) {
		if (o->owner == me->id + 1)
			fatal("a thread locked a mutex it holds");
		block(me, B_MUTEX, m, 0);
		o = oget(m);
	}
	o->owner = me->id + 1;
}

static void
mutex_give(struct sth *me, pthread_mutex_t *m)
{
	struct obj *o = oget(m);

	if (o->owner != me->id + 1)
		fatal("a thread unlocked a mutex it does not hold");
	o->owner = 0;
	(void)wake(B_MUTEX, m, 1);
}

int
__wrap_pthread_mutex_lock(pthread_mutex_t *m)
{
	struct sth *me = enter();

	if (!me)
		return __real_pthread_mutex_lock(m);
	step(me);
	mutex_take(me, m);
	leave();
	return 0;
}

int
__wrap_pthread_mutex_trylock(pthread_mutex_t *m)
{
	struct sth *me = enter();
	struct obj *o;
	int rc = 0;

	if (!me)
		return __real_pthread_mutex_trylock(m);
	step(me);
	o = oget(m);
	if (o->owner)
		rc = EBUSY;
	else
		o->owner = me->id + 1;
	leave();
	return rc;
}

static uint64_t clock_of(int node, clockid_t clk);

/* Until @abs on the wall clock: 0 when taken, ETIMEDOUT. */
int
__wrap_pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abs)
{
	struct sth *me = enter();
	uint64_t want, have, wake_at;
	clockid_t clk = CLOCK_REALTIME;
	struct obj *o;

	if (!me)
		return __real_pthread_mutex_timedlock(m, abs);
	step(me);
	want = (uint64_t)abs->tv_sec * SIM_NS + (uint64_t)abs->tv_nsec;
	have = clock_of(me->node, clk);
	wake_at = now_ns + (want > have ? want - have : 0) + 1;
	o = oget(m);
	while (o->owner) {
		if (o->owner == me->id + 1)
			fatal("a thread locked a mutex it holds");
		if (now_ns >= wake_at) {
			leave();
			return ETIMEDOUT;
		}
		block(me, B_MUTEX, m, wake_at);
		o = oget(m);
	}
	o->owner = me->id + 1;
	leave();
	return 0;
}

int
__wrap_pthread_mutex_unlock(pthread_mutex_t *m)
{
	struct sth *me = enter();

	if (!me)
		return __real_pthread_mutex_unlock(m);
	mutex_give(me, m);
	step(me);
	leave();
	return 0;
}

int
__wrap_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	if (!on)
		return __real_pthread_mutex_init(m, a);
	__real_pthread_mutex_lock(&G);
	odel(m);
	__real_pthread_mutex_unlock(&G);
	memset(m, 0, sizeof(*m));
	return 0;
}

int
__wrap_pthread_mutex_destroy(pthread_mutex_t *m)
{
	if (on) {
		__real_pthread_mutex_lock(&G);
		odel(m);
		__real_pthread_mutex_unlock(&G);
	}
	return 0;
}

int
__wrap_pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
	clockid_t clk = CLOCK_REALTIME;

	if (a)
		(void)pthread_condattr_getclock(a, &clk);
	if (on) {
		__real_pthread_mutex_lock(&G);
		oget(c)->clock = clk;
		__real_pthread_mutex_unlock(&G);
	}
	return __real_pthread_cond_init(c, a);
}

int
__wrap_pthread_cond_destroy(pthread_cond_t *c)
{
	if (on) {
		__real_pthread_mutex_lock(&G);
		odel(c);
		__real_pthread_mutex_unlock(&G);
	}
	return 0;
}

static int
cond_wait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abs)
{
	struct sth *me = enter();
	uint64_t wake_at = 0;
	int to;

	if (!me)
		return abs ? __real_pthread_cond_timedwait(c, m, abs) :
			__real_pthread_cond_wait(c, m);
	steps++;
	if (abs) {
		uint64_t want = (uint64_t)abs->tv_sec * SIM_NS +
			(uint64_t)abs->tv_nsec;
		uint64_t have = clock_of(me->node, oget(c)->clock);

		wake_at = now_ns + (want > have ? want - have : 0) + 1;
	}
	mutex_give(me, m);
	block(me, B_COND, c, wake_at);
	to = me->timedout;
	mutex_take(me, m);
	leave();
	return to ? ETIMEDOUT : 0;
}

int
__wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	return cond_wait(c, m, NULL);
}

int
__wrap_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
		const struct timespec *abs)
{
	return cond_wait(c, m, abs);
}

int
__wrap_pthread_cond_signal(pthread_cond_t *c)
{
	struct sth *me = enter();

	if (!me)
		return __real_pthread_cond_signal(c);
	(void)wake(B_COND, c, 0);
	step(me);
	leave();
	return 0;
}

int
__wrap_pthread_cond_broadcast(pthread_cond_t *c)
{
	struct sth *me = enter();

	if (!me)
		return __real_pthread_cond_broadcast(c);
	(void)wake(B_COND, c, 1);
	step(me);
	leave();
	return 0;
}

int
__wrap_pthread_rwlock_init(pthread_rwlock_t *rw,
		const pthread_rwlockattr_t *a)
{
	int kind = PTHREAD_RWLOCK_PREFER_READER_NP;

	struct obj *o;

	if (!on)
		return __real_pthread_rwlock_init(rw, a);
	if (a)
		(void)pthread_rwlockattr_getkind_np(a, &kind);
	__real_pthread_mutex_lock(&G);
	odel(rw);
	o = oget(rw);
	o->prefer_writer = kind != PTHREAD_RWLOCK_PREFER_READER_NP;
	__real_pthread_mutex_unlock(&G);
	memset(rw, 0, sizeof(*rw));
	return 0;
}

int
__wrap_pthread_rwlock_destroy(pthread_rwlock_t *rw)
{
	if (on) {
		__real_pthread_mutex_lock(&G);
		odel(rw);
		__real_pthread_mutex_unlock(&G);
	}
	return 0;
}

int
__wrap_pthread_rwlock_rdlock(pthread_rwlock_t *rw)
{
	struct sth *me = enter();
	struct obj *o;

	if (!me)
		return __real_pthread_rwlock_rdlock(rw);
	step(me);
	for (o = oget(rw); o->owner || (o->prefer_writer && o->wr_waiting);
	     o = oget(rw)) {
		if (o->owner == me->id + 1)
			fatal("a thread read-locked a lock it holds for writing");
		block(me, B_RD, rw, 0);
	}
	o->readers++;
	leave();
	return 0;
}

int
__wrap_pthread_rwlock_timedrdlock(pthread_rwlock_t *rw,
		const struct timespec *abs)
{
	struct sth *me = enter();
	uint64_t want, have, wake_at;
	clockid_t clk = CLOCK_REALTIME;
	struct obj *o;

	if (!me)
		return __real_pthread_rwlock_timedrdlock(rw, abs);
	step(me);
	want = (uint64_t)abs->tv_sec * SIM_NS + (uint64_t)abs->tv_nsec;
	have = clock_of(me->node, clk);
	wake_at = now_ns + (want > have ? want - have : 0) + 1;
	for (o = oget(rw); o->owner || (o->prefer_writer && o->wr_waiting);
	     o = oget(rw)) {
		if (o->owner == me->id + 1)
			fatal("a thread read-locked a lock it holds for writing");
		if (now_ns >= wake_at) {
			leave();
			return ETIMEDOUT;
		}
		block(me, B_RD, rw, wake_at);
	}
	o->readers++;
	leave();
	return 0;
}

int
__wrap_pthread_rwlock_wrlock(pthread_rwlock_t *rw)
{
	struct sth *me = enter();
	struct obj *o;

	if (!me)
		return __real_pthread_rwlock_wrlock(rw);
	step(me);
	o = oget(rw);
	o->wr_waiting++;
	while (o->owner || o->readers) {
		if (o->owner == me->id + 1)
			fatal("a thread write-locked a lock it holds");
		block(me, B_WR, rw, 0);
		o = oget(rw);
	}
	o->wr_waiting--;
	o->owner = me->id + 1;
	leave();
	return 0;
}

int
__wrap_pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
	struct sth *me = enter();
	struct obj *o;

	if (!me)
		return __real_pthread_rwlock_unlock(rw);
	o = oget(rw);
	if (o->owner == me->id + 1)
		o->owner = 0;
	else if (o->readers > 0)
		o->readers--;
	else
		fatal("a thread unlocked a read-write lock nobody holds");
	(void)wake(B_RD, rw, 1);
	(void)wake(B_WR, rw, 1);
	step(me);
	leave();
	return 0;
}

static void *
trampoline(void *arg)
{
	struct sth *t = arg;
	void *ret;

	self = t;
	__real_pthread_mutex_lock(&G);
	while (cur != t)
		__real_pthread_cond_wait(&t->go, &G);
	__real_pthread_mutex_unlock(&G);
	ret = t->fn(t->arg);
	__real_pthread_mutex_lock(&G);
	t->ret = ret;
	t->state = S_DONE;
	(void)wake(B_JOIN, t, 1);
	hand_over(t, pick());
	__real_pthread_mutex_unlock(&G);
	return ret;
}

int
__wrap_pthread_create(pthread_t *pt, const pthread_attr_t *a,
		void *(*fn)(void *), void *arg)
{
	struct sth *me = enter(), *t = NULL;
	int rc;

	if (!me)
		return __real_pthread_create(pt, a, fn, arg);
	for (int i = 0; i < MAXTH; i++) {
		if (th[i].state == S_FREE) {
			t = &th[i];
			if (i >= nth_hi)
				nth_hi = i + 1;
			break;
		}
	}
	if (!t)
		fatal("too many threads");
	memset(t, 0, sizeof(*t));
	t->id = (int)(t - th);
	t->node = make_node_set ? make_node : me->node;
	t->state = S_RUN;
	t->fn = fn;
	t->arg = arg;
	__real_pthread_cond_init(&t->go, NULL);
	rc = __real_pthread_create(&t->pt, a, trampoline, t);
	if (rc) {
		t->state = S_FREE;
		leave();
		return rc;
	}
	*pt = t->pt;
	step(me);
	leave();
	return 0;
}

int
__wrap_pthread_join(pthread_t pt, void **ret)
{
	struct sth *me = enter(), *t = NULL;

	if (!me)
		return __real_pthread_join(pt, ret);
	for (int i = 0; i < nth_hi; i++) {
		if (th[i].state != S_FREE &&
		    !th[i].joined && pthread_equal(th[i].pt, pt)) {
			t = &th[i];
			break;
		}
	}
	if (!t)
		fatal("join of a thread the scheduler does not know");
	while (t->state != S_DONE)
		block(me, B_JOIN, t, 0);
	if (ret)
		*ret = t->ret;
	t->joined = 1;
	t->state = S_FREE;
	step(me);
	leave();
	return __real_pthread_join(pt, NULL);
}

static uint64_t
clock_of(int node, clockid_t clk)
{
	int i = node + 1;

	switch (clk) {
	case CLOCK_REALTIME:
	case CLOCK_REALTIME_COARSE:
		return (uint64_t)((int64_t)(SIM_REAL_BASE + now_ns) +
			real_off[i]);
	default:
		return (uint64_t)((int64_t)(SIM_MONO_BASE + now_ns) +
			mono_off[i]);
	}
}

int
__wrap_clock_gettime(clockid_t clk, struct timespec *ts)
{
	uint64_t v;

	if (!on || !self)
		return __real_clock_gettime(clk, ts);
	v = clock_of(self->node, clk);
	ts->tv_sec = (time_t)(v / SIM_NS);
	ts->tv_nsec = (long)(v % SIM_NS);
	return 0;
}

time_t
__wrap_time(time_t *t)
{
	time_t v;

	if (!on || !self)
		return __real_time(t);
	v = (time_t)(clock_of(self->node, CLOCK_REALTIME) / SIM_NS);
	if (t)
		*t = v;
	return v;
}

int
__wrap_nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (!on || !self)
		return __real_nanosleep(req, rem);
	sim_sleep((uint64_t)req->tv_sec * SIM_NS + (uint64_t)req->tv_nsec);
	if (rem)
		rem->tv_sec = rem->tv_nsec = 0;
	return 0;
}

int
__wrap_sched_yield(void)
{
	struct sth *me = enter();

	if (!me)
		return __real_sched_yield();
	steps++;
	now_ns += QUANTUM_NS;
	if (!me->atomic)
		hand_over(me, pick());
	leave();
	return 0;
}

int
__wrap_flock(int fd, int op)
{
	int rc = __real_flock(fd, op);

	if (rc < 0 || !on || !self)
		return rc;
	__real_pthread_mutex_lock(&G);
	for (int k = 0; k < nflocks; k++) {
		if (flocks[k].fd == fd) {
			flocks[k] = flocks[--nflocks];
			break;
		}
	}
	if ((op & LOCK_EX || op & LOCK_SH) && nflocks < MAX_FLOCKS) {
		flocks[nflocks].fd = fd;
		flocks[nflocks++].node = self->node;
	}
	__real_pthread_mutex_unlock(&G);
	return rc;
}

int
__wrap_gethostname(char *name, size_t len)
{
	if (!on || !self)
		return __real_gethostname(name, len);
	snprintf(name, len, "%s", host[self->node + 1]);
	return 0;
}

pid_t
__wrap_getpid(void)
{
	if (!on || !self)
		return __real_getpid();
	return pids[self->node + 1];
}

uint64_t
__wrap_objfs_random64(void)
{
	uint64_t v;

	if (!on || !self)
		return __real_objfs_random64();
	__real_pthread_mutex_lock(&G);
	v = splitmix(&rng) | 1;
	__real_pthread_mutex_unlock(&G);
	return v;
}
