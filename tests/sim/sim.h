/* SPDX-License-Identifier: MIT */
/*
 * sim.h - what the simulator's files share (tests/sim/: sched.c, pool.c,
 * world.c, model.c, check.c, sim.c).  doc/design.md, "The simulator",
 * says what it is for and how a run goes.
 */
#ifndef OBJFS_SIM_H
#define OBJFS_SIM_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "src/store.h"
#include "tests/sim/pool.h"
#include "tests/sim/sched.h"

#define SIM_MAX_NODES	4		/* logical nodes */
/* The kernel's O_LARGEFILE, which every open(2) of a 64-bit process
 * carries to the daemon (the C library's is 0 there): the store tells
 * the kernel's own opens by its absence. */
#define SIM_O_LARGEFILE	0100000
#define SIM_CLIENTS	2		/* request threads of a node */
#define SIM_PATHS	40
#define SIM_PATH_LEN	32

/* ---- the plan: what a run does, drawn from its seed ---------------------- */

enum {
	A_OP = 1,	/* a client's operation (below) */
	A_PAUSE,	/* node stopped for @dur (SIGSTOP) */
	A_PARTITION,	/* node's requests dropped for @dur */
	A_KILL,		/* node killed; restarted on its data after @dur */
	A_LOSE,		/* node lost with its data directory; a new one
			 * mounts after @dur */
	A_OSD_PAUSE,	/* the OSD holds every request for @dur */
	A_CLOCK,	/* the OSD's clock jumps by @arg ns (signed) */
	A_SKEW,		/* node's wall clock jumps by @arg ns */
	A_FAULTS,	/* request faults at rate @arg (ppm) for @dur */
	A_EXCL,		/* an exclusive mount tries to take the namespace */
	A_GC,		/* node collects the pool's garbage */
	A_CATCHUP,	/* node: objfsctl catch-up */
	A_SYNC,		/* node: objfsctl sync */
	A_NKINDS
};

enum {
	OP_MKDIR = 1, OP_RMDIR, OP_CREATE, OP_WRITE, OP_UNLINK, OP_RENAME,
	OP_CHMOD, OP_READ, OP_LIST, OP_HOPEN, OP_HWRITE, OP_HFSYNC, OP_HCLOSE,
	OP_NKINDS
};

struct action {
	uint64_t wait;		/* virtual ns before it */
	int kind;
	int node, client;
	int op, path, path2;
	uint32_t len;
	int64_t arg;
	uint64_t dur;
	uint64_t id;		/* its number in the plan: content ids */
};

struct config {
	uint64_t seed;
	int nodes;
	unsigned timeout_s, hold_s, lease_s;
	long batch_ms, compact;
	uint32_t chunk;
	unsigned switch_pm;
	int ops;
	int exclusive;		/* A_EXCL allowed */
	int faults;		/* fault actions allowed */
	int check_time;		/* one call, one timeout */
	int s3;			/* the namespace in S3 (s3gw.c): every
				 * mount exclusive, one at a time */
};

/* ---- the namespace a run works in ---------------------------------------- */

struct path {
	char s[SIM_PATH_LEN];
	int dir;		/* a directory's path (else a file's) */
	int parent;		/* index of its directory, -1: the root */
	int owner;		/* a file only this node writes, or -1 */
};

/* ---- nodes ------------------------------------------------------------------ */

struct op_result {
	int rc;
	uint64_t t0, t1;
	uint64_t seen;		/* OP_READ: the content id read, below */
	int nested;		/* a composite op's part that failed */
	int rc2;		/* ... and its result */
};

/* What a read found. */
#define V_ABSENT	0ull
#define V_EMPTY		1ull
#define V_DIR		2ull
#define V_CORRUPT	3ull
#define V_ANY		4ull	/* a rename's target: whatever it was */
#define V_UNREADABLE	5ull	/* its read failed (EIO) */
#define V_ID(id)	((id) + 16)


struct client {
	struct node *n;
	int idx;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int busy;		/* an action is posted or running */
	int stop;
	struct action a;
	struct op_result res;
	/* The handle it keeps open (OP_HOPEN .. OP_HCLOSE). */
	int h_open;
	int h_path;
	uint64_t h_gen;		/* its path's renames when it opened */
	uint64_t h_ino;
	uint64_t h_value;	/* what it holds now */
	int h_dirty;		/* written since its last publish */
};

#define SIM_HELD	32

struct node {
	int idx;		/* logical */
	int inc;		/* the scheduler's node: this incarnation */
	int gen;		/* incarnations so far */
	int up;			/* mounted and serving */
	int dead;		/* killed or lost: waits for its restart */
	uint64_t restart_at;
	int lose;		/* its restart is on a new data directory */
	int exclusive;		/* an exclusive mount (A_EXCL) */
	char dir[512];
	struct objfs_store *s;
	pthread_t main;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state;		/* 0 starting, 1 up, -1 failed, 2 stop asked,
				 * 3 stopped */
	int open_rc;
	char msg[512];
	struct client c[SIM_CLIENTS];
	uint64_t paused_until, part_until;
	uint64_t npauses;	/* pauses so far (a call across one is not
				 * bound by its timeout: S10) */
	uint64_t last_sync_ok;	/* an fsync of this incarnation ended ok */
	/* What each inode holds on this node (its clients share it): a
	 * handle's fsync or close publishes that, whichever client wrote
	 * it last (seed 5071: a path write after a handle's open). */
	uint64_t held_ino[SIM_HELD], held_val[SIM_HELD];
	unsigned nheld_next;
};

/* ---- the model: what each path may hold --------------------------------- */

/* EV_PENDING: written to a node's arena, not published: it appears
 * only if that node is killed and its data directory mounted again
 * (the arena adopted, what it wrote published): then it is unknown. */
enum { EV_OK = 0, EV_FAIL, EV_UNKNOWN, EV_PENDING };

struct event {
	uint64_t value;
	uint64_t t0, t1;	/* invoked, answered */
	int status;
	int node_inc;		/* who; namespace changes of a node with
				 * remote_batch wait for a sync */
	int batched;
	uint64_t action;
};

/* ---- a run ------------------------------------------------------------------ */

struct world {
	struct config cfg;
	struct sim_pool *pool;
	char root[256];		/* the run's temporary directory */
	struct path paths[SIM_PATHS];
	int npaths;
	struct node nodes[SIM_MAX_NODES + 1];	/* + the exclusive one */
	struct action *plan;
	size_t nplan;
	size_t step;		/* the action running */
	/* the model */
	struct event *ev[SIM_PATHS];
	size_t nev[SIM_PATHS], capev[SIM_PATHS];
	/* the checker */
	struct checker *chk;
	/* what happened */
	uint64_t counts[A_NKINDS], opcounts[OP_NKINDS], skipped;
	uint64_t oprc_ok, oprc_fail, oprc_unknown;
	int violated;
	char why[4096];
	int verbose;
	int log_actions;	/* OBJFS_SIM_LOG: actions in the log too */
	FILE *trace;
};

extern struct world *W;

/* world.c */
void world_paths(struct world *w);
int world_run(struct world *w);
void world_stop_all(struct world *w);
const char *action_text(const struct action *a, char *buf, size_t size);
uint64_t world_content(uint64_t id, uint32_t len, unsigned char *buf);

/* model.c */
void model_event(struct world *w, int path, uint64_t value, uint64_t t0,
		uint64_t t1, int rc, int node_inc, int batched,
		uint64_t action);
void model_synced(struct world *w, int node_inc, uint64_t t0);
void model_pending(struct world *w, int path, uint64_t value, uint64_t t0,
		int node_inc, uint64_t action);
/* Node @node_inc was killed: what it wrote may appear yet, and so may
 * what its operations under way were doing (@a, each of its clients'). */
void model_forget_node(struct world *w, int node_inc);
/* Node @node_inc's sync of everything (objfsctl sync) answered: it
 * publishes every file open for writing there (objfs_share_publish_all),
 * so what its handles wrote and had not published may be seen now. */
void model_published_all(struct world *w, int node_inc);
void model_inflight(struct world *w, const struct action *a,
		uint64_t h_value, int h_path, int node_inc);
/* Can @value be what @path holds, read between @t0 and @t1?  1 yes, 0
 * no (why in @why). */
int model_check(struct world *w, int path, uint64_t value, uint64_t t0,
		uint64_t t1, char *why, size_t size);
int model_status(int rc);

/* check.c: the invariants, numbered as doc/design.md numbers them. */
enum {
	INV_ACKED = 1,		/* S1 */
	INV_AGREE,		/* S2 */
	INV_ONE_INODE,		/* S3 */
	INV_NO_HOLE,		/* S4 */
	INV_LEASES,		/* S5 */
	INV_ONE_HOLDER,		/* S6 */
	INV_GC,			/* S7 */
	INV_ONCE,		/* S8 */
	INV_READ,		/* S9 */
	INV_ONE_TIMEOUT,	/* S10 */
	INV_ALIVE,		/* S11: the run ends (no deadlock) */
	INV_N
};
extern const char *const inv_names[INV_N];

struct checker *checker_new(struct world *w);
void checker_free(struct checker *c);
/* After each action: the cheap invariants (3, 4, 6, 8). */
void check_step(struct world *w);
/* Every node caught up and idle: 2 and 5. */
void check_quiet(struct world *w);
/* The tree a fresh mount reads against the model: 1. */
void check_fresh(struct world *w, struct objfs_store *fresh);
/* After the run: collection is not blocked by a dead node: 7. */
void check_gc(struct world *w, struct node *n);

/* A violation: recorded (the first is kept), the run ends after it. */
void violation(struct world *w, int inv, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
