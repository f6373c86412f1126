/* SPDX-License-Identifier: MIT */
/*
 * sim.c - objfs-sim: the cluster protocol's real code (src/cluster/,
 * src/fs/, meta/) run as several nodes in one process against an
 * in-memory pool, under one seeded scheduler (doc/design.md, "The
 * simulator").  Test builds only.
 *
 *	objfs-sim [--seed N] [--seeds K] [--ops N] [--minutes M]
 *		[--replay FILE] [--no-shrink] [--trace] [--quiet]
 *		[--set KEY=VALUE ...]
 *
 * Each seed runs in a process of its own (this program again, with
 * --child), started with address randomisation off, so that a seed
 * replays exactly: the same plan, the same thread switches, the same
 * faults.  A seed that breaks an invariant is shrunk: actions are taken
 * out of its plan while the same invariant still breaks, and the
 * shortest plan found is written out to replay (--replay).  The last
 * line says how many seeds ran and how many failed.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <malloc.h>
#include <sched.h>

#include "src/base/log.h"
#include "src/cluster/tier_int.h"
#include "tests/sim/sim.h"
#include "tests/sim/wraps.h"

/* ---- the plan from a seed -------------------------------------------------- */

static uint64_t
prng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t
pick(uint64_t *s, uint64_t n)
{
	return n ? prng(s) % n : 0;
}

/* Draw the run's configuration from its seed (an option may set any of
 * it afterwards). */
static void
config_from_seed(struct config *c, uint64_t seed)
{
	static const unsigned timeouts[] = { 5, 10, 30 };
	static const unsigned holds[] = { 10, 15, 30 };
	static const unsigned pms[] = { 2000, 20000, 100000, 300000 };
	uint64_t s = seed ^ 0xc0ffee;
	unsigned r;

	c->seed = seed;
	/* S10 on (--set check_time=0 turns it off; it takes nothing from
	 * the seed's stream, so a seed's run is what it was). */
	c->check_time = 1;
	c->nodes = 2 + (int)pick(&s, 2);
	c->timeout_s = timeouts[pick(&s, 3)];
	c->hold_s = holds[pick(&s, 3)];
	r = (unsigned)pick(&s, 100);
	c->lease_s = r < 70 ? c->hold_s : r < 85 ? c->hold_s / 2 :
		c->hold_s * 2;
	c->batch_ms = pick(&s, 2) ? 50 : 0;
	c->compact = pick(&s, 2) ? 0 : 5 + (long)pick(&s, 40);
	c->chunk = 64u << 10;
	c->switch_pm = pms[pick(&s, 4)];
	c->exclusive = 1;
	c->faults = 1;
}

static int
pick_path(struct world *w, uint64_t *s, int dir, int node)
{
	int cand[SIM_PATHS], n = 0;

	for (int i = 0; i < w->npaths; i++) {
		const struct path *p = &w->paths[i];

		if (p->dir != dir)
			continue;
		/* A node's own files: only it writes them. */
		if (p->owner >= 0 && p->owner != node)
			continue;
		cand[n++] = i;
	}
	return n ? cand[pick(s, (uint64_t)n)] : -1;
}

static int
pick_any_file(struct world *w, uint64_t *s)
{
	int cand[SIM_PATHS], n = 0;

	for (int i = 0; i < w->npaths; i++)
		if (!w->paths[i].dir)
			cand[n++] = i;
	return cand[pick(s, (uint64_t)n)];
}

static void
plan_add(struct world *w, size_t *cap, const struct action *a)
{
	if (w->nplan == *cap) {
		*cap = *cap ? 2 * *cap : 256;
		w->plan = realloc(w->plan, *cap * sizeof(*w->plan));
		if (!w->plan)
			abort();
	}
	w->plan[w->nplan] = *a;
	w->plan[w->nplan].id = w->nplan + 1;
	w->nplan++;
}

static void
plan_from_seed(struct world *w, int nops)
{
	const struct config *c = &w->cfg;
	uint64_t s = c->seed ^ 0x91a9;
	uint64_t lease = (uint64_t)(c->lease_s < c->hold_s ? c->lease_s :
		c->hold_s) * SIM_NS;
	size_t cap = 0;

	/* A new plan (a driver makes one for each failing seed it shrinks:
	 * the second ran past the first's array until 23ae407). */
	free(w->plan);
	w->plan = NULL;
	w->nplan = 0;
	world_paths(w);
	for (int i = 0; i < 3; i++) {
		struct action a = { .kind = A_OP, .op = OP_MKDIR, .node = 0,
			.path = i, .path2 = -1, .wait = SIM_NS / 100 };

		plan_add(w, &cap, &a);
	}
	for (int k = 0; k < nops; k++) {
		struct action a = { .kind = A_OP, .path = -1, .path2 = -1 };
		unsigned r = (unsigned)pick(&s, 1000);

		a.wait = pick(&s, 10) ? pick(&s, 60 * 1000000ull) :
			pick(&s, 4 * SIM_NS);
		a.node = (int)pick(&s, (uint64_t)c->nodes);
		a.client = (int)pick(&s, SIM_CLIENTS);
		if (c->faults && r < 130) {
			a.path = -1;
			if (r < 25) {
				a.kind = A_PAUSE;
				a.dur = pick(&s, 2) ? pick(&s, lease / 2) :
					lease + pick(&s, 2 * lease);
			} else if (r < 45) {
				a.kind = A_PARTITION;
				a.dur = pick(&s, 2) ? pick(&s, lease / 2) :
					lease + pick(&s, 2 * lease);
			} else if (r < 55) {
				a.kind = A_KILL;
				a.dur = pick(&s, 2 * lease);
			} else if (r < 60) {
				a.kind = A_LOSE;
				a.dur = pick(&s, lease);
			} else if (r < 70) {
				a.kind = A_OSD_PAUSE;
				a.dur = pick(&s, 2ull * c->timeout_s * SIM_NS);
			} else if (r < 75) {
				a.kind = A_CLOCK;
				a.arg = (int64_t)pick(&s, SIM_NS) -
					(int64_t)(SIM_NS / 2);
			} else if (r < 80) {
				a.kind = A_SKEW;
				a.arg = (int64_t)pick(&s, 2 * SIM_NS) -
					(int64_t)SIM_NS;
			} else if (r < 100) {
				a.kind = A_FAULTS;
				a.arg = pick(&s, 3) ? (int64_t)(5000 +
					pick(&s, 150000)) : 0;
			} else if (r < 108 && c->exclusive) {
				a.kind = A_EXCL;
				a.dur = pick(&s, 3 * SIM_NS);
			} else if (r < 118) {
				a.kind = A_GC;
			} else if (r < 124) {
				a.kind = A_SYNC;
			} else {
				a.kind = A_CATCHUP;
			}
			plan_add(w, &cap, &a);
			continue;
		}
		r = (unsigned)pick(&s, 100);
		a.op = r < 6 ? OP_MKDIR : r < 9 ? OP_RMDIR : r < 24 ? OP_CREATE :
			r < 36 ? OP_WRITE : r < 43 ? OP_UNLINK : r < 50 ?
			OP_RENAME : r < 55 ? OP_CHMOD : r < 72 ? OP_READ :
			r < 76 ? OP_LIST : r < 83 ? OP_HOPEN : r < 90 ?
			OP_HWRITE : r < 95 ? OP_HFSYNC : OP_HCLOSE;
		switch (a.op) {
		case OP_MKDIR:
		case OP_RMDIR:
		case OP_LIST:
			a.path = pick_path(w, &s, 1, a.node);
			break;
		case OP_READ:
			a.path = pick_any_file(w, &s);
			break;
		case OP_RENAME:
			a.path = pick_path(w, &s, 0, -1);
			a.path2 = pick_path(w, &s, 0, -1);
			if (a.path2 == a.path)
				a.op = OP_READ;
			break;
		default:
			a.path = pick_path(w, &s, 0, a.node);
		}
		a.len = pick(&s, 4) ? (uint32_t)pick(&s, 3000) + 21 :
			(uint32_t)pick(&s, 150u << 10) + 21;
		plan_add(w, &cap, &a);
	}
}

/* ---- the plan as text ---------------------------------------------------------- */

static void
plan_write(const struct world *w, FILE *f, int invariant)
{
	const struct config *c = &w->cfg;

	fprintf(f, "# objfs-sim plan: replay with objfs-sim --replay FILE\n");
	fprintf(f, "seed %" PRIu64 "\nnodes %d\ntimeout %u\nhold %u\nlease %u\n"
		"batch %ld\ncompact %ld\nchunk %u\nswitch %u\ncheck_time %d\n",
		c->seed, c->nodes, c->timeout_s, c->hold_s, c->lease_s,
		c->batch_ms, c->compact, c->chunk, c->switch_pm,
		c->check_time);
	if (c->s3)
		fprintf(f, "s3 %d\n", c->s3);
	if (invariant)
		fprintf(f, "breaks S%d\n", invariant);
	for (size_t i = 0; i < w->nplan; i++) {
		const struct action *a = &w->plan[i];

		fprintf(f, "a %" PRIu64 " %d %d %d %d %d %d %u %" PRId64 " %"
			PRIu64 " %" PRIu64 "\n", a->wait, a->kind, a->node,
			a->client, a->op, a->path, a->path2, a->len, a->arg,
			a->dur, a->id);
	}
}

static int
plan_read(struct world *w, const char *file, int *invariant)
{
	FILE *f = fopen(file, "r");
	char line[512];
	size_t cap = 0;

	if (!f)
		return -errno;
	*invariant = 0;
	memset(&w->cfg, 0, sizeof(w->cfg));
	w->cfg.chunk = 64u << 10;
	free(w->plan);
	w->plan = NULL;
	w->nplan = 0;
	while (fgets(line, sizeof(line), f)) {
		struct action a = { 0 };
		struct config *c = &w->cfg;

		if (sscanf(line, "seed %" SCNu64, &c->seed) == 1 ||
		    sscanf(line, "nodes %d", &c->nodes) == 1 ||
		    sscanf(line, "timeout %u", &c->timeout_s) == 1 ||
		    sscanf(line, "hold %u", &c->hold_s) == 1 ||
		    sscanf(line, "lease %u", &c->lease_s) == 1 ||
		    sscanf(line, "batch %ld", &c->batch_ms) == 1 ||
		    sscanf(line, "compact %ld", &c->compact) == 1 ||
		    sscanf(line, "chunk %u", &c->chunk) == 1 ||
		    sscanf(line, "switch %u", &c->switch_pm) == 1 ||
		    sscanf(line, "check_time %d", &c->check_time) == 1 ||
		    sscanf(line, "s3 %d", &c->s3) == 1 ||
		    sscanf(line, "breaks S%d", invariant) == 1)
			continue;
		if (sscanf(line, "a %" SCNu64 " %d %d %d %d %d %d %u %" SCNd64
				" %" SCNu64 " %" SCNu64, &a.wait, &a.kind,
				&a.node, &a.client, &a.op, &a.path, &a.path2,
				&a.len, &a.arg, &a.dur, &a.id) == 11) {
			if (w->nplan == cap) {
				cap = cap ? 2 * cap : 256;
				w->plan = realloc(w->plan, cap *
					sizeof(*w->plan));
				if (!w->plan)
					abort();
			}
			w->plan[w->nplan++] = a;
		}
	}
	fclose(f);
	if (w->cfg.nodes < 1 || w->cfg.nodes > SIM_MAX_NODES ||
	    !w->cfg.timeout_s || !w->cfg.hold_s || !w->cfg.lease_s)
		return -EINVAL;
	return 0;
}

/* ---- one run, in a child process ------------------------------------------ */

static struct world world;

/* The tier's connection to "the pool": the simulator's, for the calling
 * node. */
int
__wrap_objfs_tier_remote_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize)
{
	(void)err;
	(void)errsize;
	/* S3: the real client, over the simulator's bucket (s3gw.c). */
	if (!W || !W->pool || strncmp(cfg->spec, "s3://", 5) == 0)
		return __real_objfs_tier_remote_connect(cfg, out, err,
				errsize);
	*out = simpool_connect(W->pool, sim_self_node(), cfg->timeout_s);
	return 0;
}

static void
on_deadlock(void)
{
	/* No thread can run: report it as the run's end. */
	violation(W, INV_ALIVE, "deadlock: no thread can run, and none "
		"waits for a time");
	sim_dump_threads();
	fflush(stderr);
	if (W->trace)
		fflush(W->trace);
	printf("result %d %s\n", W->violated, W->why);
	fflush(stdout);
	_exit(1);
}

static void
report_counts(struct world *w)
{
	struct sim_pool_counts pc;

	simpool_counts(w->pool, &pc);
	printf("counts actions=%zu ops=%" PRIu64 " skipped=%" PRIu64
		" ok=%" PRIu64 " failed=%" PRIu64 " unknown=%" PRIu64
		" pauses=%" PRIu64 " partitions=%" PRIu64 " kills=%" PRIu64
		" losses=%" PRIu64 " osd_pauses=%" PRIu64 " clock_jumps=%"
		PRIu64 " skews=%" PRIu64 " fault_windows=%" PRIu64
		" exclusive=%" PRIu64 " gc=%" PRIu64 " catchup=%" PRIu64
		" syncs=%" PRIu64
		" requests=%" PRIu64 " land_timeout=%" PRIu64 " lost=%" PRIu64
		" late=%" PRIu64 " slow=%" PRIu64 " partitioned=%" PRIu64
		" osd_held=%" PRIu64 " notifies=%" PRIu64 " notify_lost=%"
		PRIu64 " notify_dup=%" PRIu64 " notify_late=%" PRIu64
		" watches_dropped=%" PRIu64 " s3_busy=%" PRIu64 " steps=%"
		PRIu64 " switches=%"
		PRIu64 " vtime=%.1f\n",
		w->nplan, w->counts[A_OP] - w->skipped, w->skipped, w->oprc_ok,
		w->oprc_fail, w->oprc_unknown, w->counts[A_PAUSE],
		w->counts[A_PARTITION], w->counts[A_KILL], w->counts[A_LOSE],
		w->counts[A_OSD_PAUSE], w->counts[A_CLOCK], w->counts[A_SKEW],
		w->counts[A_FAULTS], w->counts[A_EXCL], w->counts[A_GC],
		w->counts[A_CATCHUP], w->counts[A_SYNC], pc.requests, pc.land_timeout, pc.lost,
		pc.late, pc.slow, pc.partitioned, pc.osd_paused, pc.notifies,
		pc.notify_lost, pc.notify_dup, pc.notify_late,
		pc.watches_dropped, pc.s3_busy, sim_steps(), sim_switches(),
		(double)sim_now() / 1e9);
}

/* A private tmpfs for the run's data directories and arenas, when this
 * process may make one (root): nothing of it outlives the run. */
static int
private_root(char *root, size_t size, const char *base)
{
	snprintf(root, size, "%s/objfs-sim.XXXXXX", base);
	if (!mkdtemp(root))
		return -errno;
	if (unshare(CLONE_NEWNS) == 0 &&
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0)
		(void)mount("sim", root, "tmpfs", 0, "size=2g,mode=0700");
	return 0;
}

static int
child(struct world *w, const char *tmp, const char *trace)
{
	char shm[300];
	int rc;

	if (private_root(w->root, sizeof(w->root), tmp) < 0) {
		fprintf(stderr, "sim: cannot make a directory in %s\n", tmp);
		return 2;
	}
	snprintf(shm, sizeof(shm), "%s/shm", w->root);
	mkdir(shm, 0700);
	if (trace) {
		w->trace = fopen(trace, "w");
		if (w->trace)
			setvbuf(w->trace, NULL, _IOLBF, 0);
		if (getenv("OBJFS_SIM_REQUESTS"))
			simpool_trace = w->trace;
	}
	W = w;
	objfs_log_max = getenv("OBJFS_SIM_LOG") ? OBJFS_LOG_DEBUG :
		OBJFS_LOG_ERR;
	w->log_actions = getenv("OBJFS_SIM_LOG") != NULL;
	sim_sched_init(w->cfg.seed, w->cfg.switch_pm);
	sim_set_deadlock_handler(on_deadlock);
	w->pool = simpool_new(w->cfg.seed);
	w->chk = checker_new(w);
	world_paths(w);
	printf("config nodes=%d timeout=%u hold=%u lease=%u batch=%ld "
		"compact=%ld switch=%u%s\n", w->cfg.nodes, w->cfg.timeout_s,
		w->cfg.hold_s, w->cfg.lease_s, w->cfg.batch_ms, w->cfg.compact,
		w->cfg.switch_pm, w->cfg.s3 ? " s3" : "");
	if (w->cfg.s3) {
		/* The client's configuration, its own: no file of the
		 * machine's, a service never reached. */
		setenv("AWS_ACCESS_KEY_ID", "sim", 1);
		setenv("AWS_SECRET_ACCESS_KEY", "sim", 1);
		setenv("AWS_REGION", "us-east-1", 1);
		setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null", 1);
		setenv("AWS_CONFIG_FILE", "/dev/null", 1);
		unsetenv("AWS_PROFILE");
		unsetenv("AWS_ENDPOINT_URL");
		unsetenv("AWS_ENDPOINT_URL_S3");
	}
	fflush(stdout);
	rc = world_run(w);
	report_counts(w);
	printf("result %d %s\n", w->violated, w->violated ? w->why :
		(rc < 0 ? strerror(-rc) : "ok"));
	fflush(stdout);
	if (w->trace)
		fflush(w->trace);
	/* Parked threads of killed nodes: the process ends with them. */
	_exit(w->violated ? 1 : rc < 0 ? 2 : 0);
}

/* ---- the parent: seeds, shrinking, the report ------------------------------ */

struct outcome {
	int status;		/* 0 ok, 1 violation, else broken */
	int invariant;
	char why[4096];
	char counts[8192];
	char config[256];
	char log[8192];
};

static char self_exe[4096];
static int opt_quiet, opt_trace;
static const char *opt_tmp = "/tmp";

static int
remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		(void)rmdir(path);
	else
		(void)unlink(path);
	return 0;
}

static void
remove_tree(const char *dir)
{
	(void)nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* Run the plan in @file (or seed @seed with @ops) in a child. */
static int
run_child(const char *file, uint64_t seed, int ops, const char *sets,
		struct outcome *o)
{
	char seed_s[32], ops_s[32], logf[300], tracef[256], run_dir[256];
	int pfd[2];
	pid_t pid;
	FILE *f;
	char line[8192];
	int st;

	memset(o, 0, sizeof(*o));
	snprintf(seed_s, sizeof(seed_s), "%" PRIu64, seed);
	snprintf(ops_s, sizeof(ops_s), "%d", ops);
	/* The child's directory (its tmpfs, if it could mount one, is in
	 * its own mount namespace; else its files are here), and its log:
	 * removed whole once it is gone, however it ended. */
	snprintf(run_dir, sizeof(run_dir), "%s/objfs-sim.XXXXXX", opt_tmp);
	if (!mkdtemp(run_dir))
		return -errno;
	snprintf(logf, sizeof(logf), "%s/log", run_dir);
	snprintf(tracef, sizeof(tracef), "%s/objfs-sim-%" PRIu64 ".trace",
		opt_tmp, seed);
	if (pipe(pfd) < 0) {
		int e = -errno;

		remove_tree(run_dir);
		return e;
	}
	pid = fork();
	if (pid < 0) {
		int e = -errno;

		close(pfd[0]);
		close(pfd[1]);
		remove_tree(run_dir);
		return e;
	}
	if (pid == 0) {
		int fd = open(logf, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(pfd[1], 1);
		if (fd >= 0)
			dup2(fd, 2);
		close(pfd[0]);
		if (file)
			execl(self_exe, self_exe, "--child", "--replay", file,
				"--tmp", run_dir, opt_trace ? "--trace-to" :
				NULL, tracef, (char *)NULL);
		else
			execl(self_exe, self_exe, "--child", "--seed", seed_s,
				"--ops", ops_s, "--tmp", run_dir, "--sets",
				sets ? sets : "", opt_trace ? "--trace-to" :
				NULL, tracef, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "result ", 7)) {
			char *sp;

			o->invariant = atoi(line + 7);
			sp = strchr(line + 7, ' ');
			snprintf(o->why, sizeof(o->why), "%s", sp ? sp + 1 : "");
		} else if (!strncmp(line, "config ", 7)) {
			snprintf(o->config, sizeof(o->config), "%.250s", line + 7);
		} else if (!strncmp(line, "counts ", 7)) {
			snprintf(o->counts, sizeof(o->counts), "%s", line + 7);
		}
	}
	if (f)
		fclose(f);
	waitpid(pid, &st, 0);
	if (WIFEXITED(st))
		o->status = WEXITSTATUS(st);
	else
		o->status = 128 + WTERMSIG(st);
	if (o->status > 1) {
		FILE *lf = fopen(logf, "r");
		size_t n = 0;

		if (lf) {
			/* The log's end. */
			fseek(lf, 0, SEEK_END);
			if (ftell(lf) > (long)sizeof(o->log) - 1)
				fseek(lf, -(long)sizeof(o->log) + 1, SEEK_END);
			else
				fseek(lf, 0, SEEK_SET);
			n = fread(o->log, 1, sizeof(o->log) - 1, lf);
			fclose(lf);
		}
		o->log[n] = '\0';
		if (!o->why[0])
			snprintf(o->why, sizeof(o->why), "the run crashed "
				"(status %d)", o->status);
	}
	if (getenv("OBJFS_SIM_KEEP"))	/* its log kept, to read */
		fprintf(stderr, "sim: seed %" PRIu64 ": kept %s\n", seed,
			run_dir);
	else
		remove_tree(run_dir);
	return 0;
}

/* Take actions out of @w's plan while the same invariant still breaks;
 * write the shortest plan found to @file. */
static void
shrink(struct world *w, int invariant, const char *file, int budget)
{
	struct action *best = malloc(w->nplan * sizeof(*best));
	size_t nbest = w->nplan, chunk;
	int runs = 0;
	char tmpf[600];

	if (!best)
		abort();
	memcpy(best, w->plan, nbest * sizeof(*best));
	snprintf(tmpf, sizeof(tmpf), "%s.try", file);
	for (chunk = nbest / 2; chunk >= 1 && runs < budget; chunk /= 2) {
		for (size_t at = 0; at < nbest && runs < budget;) {
			struct outcome o;
			size_t n = 0;
			FILE *f;

			/* The first three (the directories) stay. */
			if (at < 3) {
				at = 3;
				continue;
			}
			for (size_t i = 0; i < nbest; i++) {
				if (i >= at && i < at + chunk) {
							continue;
				}
				w->plan[n++] = best[i];
			}
			w->nplan = n;
			f = fopen(tmpf, "w");
			if (!f)
				break;
			plan_write(w, f, invariant);
			fclose(f);
			runs++;
			if (run_child(tmpf, w->cfg.seed, 0, NULL, &o) == 0 &&
			    o.status == 1 && o.invariant == invariant) {
				memcpy(best, w->plan, n * sizeof(*best));
				nbest = n;
				continue;	/* same place, smaller plan */
			}
			at += chunk;
		}
		if (chunk == 1)
			break;
	}
	memcpy(w->plan, best, nbest * sizeof(*best));
	w->nplan = nbest;
	{
		FILE *f = fopen(file, "w");

		if (f) {
			plan_write(w, f, invariant);
			fclose(f);
		}
	}
	unlink(tmpf);
	free(best);
	if (!opt_quiet)
		printf("#   shrunk to %zu actions in %d runs\n", nbest, runs);
}

static void
apply_sets(struct config *c, const char *sets)
{
	char buf[512], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", sets ? sets : "");
	for (char *kv = strtok_r(buf, ",", &save); kv;
	     kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		long v;

		if (!eq)
			continue;
		*eq = '\0';
		v = strtol(eq + 1, NULL, 0);
		if (!strcmp(kv, "nodes"))
			c->nodes = (int)v;
		else if (!strcmp(kv, "timeout"))
			c->timeout_s = (unsigned)v;
		else if (!strcmp(kv, "hold"))
			c->hold_s = (unsigned)v;
		else if (!strcmp(kv, "lease"))
			c->lease_s = (unsigned)v;
		else if (!strcmp(kv, "batch"))
			c->batch_ms = v;
		else if (!strcmp(kv, "compact"))
			c->compact = v;
		else if (!strcmp(kv, "switch"))
			c->switch_pm = (unsigned)v;
		else if (!strcmp(kv, "faults"))
			c->faults = (int)v;
		else if (!strcmp(kv, "exclusive"))
			c->exclusive = (int)v;
		else if (!strcmp(kv, "check_time"))
			c->check_time = (int)v;
		else if (!strcmp(kv, "s3"))
			c->s3 = (int)v;
	}
	/* In S3 every mount is exclusive already. */
	if (c->s3)
		c->exclusive = 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: objfs-sim [--seed N] [--seeds K] [--ops N] "
		"[--minutes M] [--replay FILE] [--set KEY=VALUE,...] "
		"[--no-shrink] [--trace] [--quiet] [--keep-going] "
		"[--out DIR] | --has-s3\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	uint64_t seed = 1, seeds = 1;
	int ops = 100, is_child = 0, do_shrink = 1, keep_going = 0;
	double minutes = 0;
	const char *replay = NULL, *sets = NULL, *trace_to = NULL,
		*out = ".";
	uint64_t ran = 0, failed = 0, broken = 0, t_start;
	uint64_t tot[64] = { 0 };
	char names[64][32];
	int ntot = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--child"))
			is_child = 1;
		else if (!strcmp(a, "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(a, "--seeds") && i + 1 < argc)
			seeds = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(a, "--ops") && i + 1 < argc)
			ops = atoi(argv[++i]);
		else if (!strcmp(a, "--minutes") && i + 1 < argc)
			minutes = atof(argv[++i]);
		else if (!strcmp(a, "--replay") && i + 1 < argc)
			replay = argv[++i];
		else if ((!strcmp(a, "--set") || !strcmp(a, "--sets")) &&
			 i + 1 < argc)
			sets = argv[++i];
		else if (!strcmp(a, "--tmp") && i + 1 < argc)
			opt_tmp = argv[++i];
		else if (!strcmp(a, "--trace-to") && i + 1 < argc)
			trace_to = argv[++i];
		else if (!strcmp(a, "--out") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(a, "--no-shrink"))
			do_shrink = 0;
		else if (!strcmp(a, "--has-s3"))
#ifdef HAVE_S3
			return 0;	/* built with the S3 client (s3gw.c) */
#else
			return 1;
#endif
		else if (!strcmp(a, "--trace"))
			opt_trace = 1;
		else if (!strcmp(a, "--quiet"))
			opt_quiet = 1;
		else if (!strcmp(a, "--keep-going"))
			keep_going = 1;
		else
			usage();
	}
	if (is_child) {
		int inv;

		mallopt(M_ARENA_MAX, 1);
		if (replay) {
			int rc = plan_read(&world, replay, &inv);

			if (rc < 0) {
				fprintf(stderr, "sim: %s: cannot read the plan: "
					"%s\n", replay, strerror(-rc));
				return 2;
			}
		} else {
			config_from_seed(&world.cfg, seed);
			apply_sets(&world.cfg, sets);
			plan_from_seed(&world, ops);
		}
		return child(&world, opt_tmp, trace_to);
	}
	/* Address randomisation off, for the children (exec keeps it). */
	if (!(personality(0xffffffff) & ADDR_NO_RANDOMIZE))
		(void)personality(ADDR_NO_RANDOMIZE);
	if (readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1) < 0)
		snprintf(self_exe, sizeof(self_exe), "%s", argv[0]);
	t_start = (uint64_t)time(NULL);
	if (replay) {
		struct outcome o;
		int inv;

		if (plan_read(&world, replay, &inv) < 0) {
			fprintf(stderr, "sim: %s: cannot read the plan\n", replay);
			return 2;
		}
		run_child(replay, world.cfg.seed, 0, NULL, &o);
		printf("%s replay %s (seed %" PRIu64 "): %s\n", o.status ?
			"FAIL" : "ok", replay, world.cfg.seed, o.status ?
			o.why : "no invariant broken");
		if (o.status > 1)
			printf("%s\n", o.log);
		if (!opt_quiet && o.counts[0])
			printf("# %s\n", o.counts);
		printf("1 run, %d failed\n", o.status ? 1 : 0);
		return o.status ? 1 : 0;
	}
	for (uint64_t k = 0; minutes > 0 ? (double)((uint64_t)time(NULL) -
	     t_start) < minutes * 60 : k < seeds; k++) {
		struct outcome o;
		uint64_t sd = seed + k;

		if (run_child(NULL, sd, ops, sets, &o) < 0) {
			perror("sim: fork");
			return 2;
		}
		ran++;
		/* Totals of the counts line. */
		for (char *p = o.counts; *p;) {
			char key[32];
			double v;
			int used = 0, slot = -1;

			if (sscanf(p, "%31[^=]=%lf%n", key, &v, &used) != 2)
				break;
			for (int t = 0; t < ntot; t++)
				if (!strcmp(names[t], key))
					slot = t;
			if (slot < 0 && ntot < 64) {
				slot = ntot++;
				snprintf(names[slot], sizeof(names[slot]), "%s",
					key);
			}
			if (slot >= 0)
				tot[slot] += (uint64_t)v;
			p += used;
			while (*p == ' ')
				p++;
		}
		if (o.status == 0) {
			if (!opt_quiet)
				printf("ok seed %" PRIu64 "\n", sd);
			continue;
		}
		if (o.status == 1)
			failed++;
		else
			broken++;
		printf("FAIL seed %" PRIu64 " (%s): %s\n", sd, o.config, o.why);
		if (o.status > 1)
			printf("# the run's log ends:\n%s\n", o.log);
		if (o.status == 1 && do_shrink) {
			char file[512];

			config_from_seed(&world.cfg, sd);
			apply_sets(&world.cfg, sets);
			plan_from_seed(&world, ops);
			snprintf(file, sizeof(file), "%s/sim-%" PRIu64 ".plan",
				out, sd);
			shrink(&world, o.invariant, file, 120);
			printf("#   plan: %s (objfs-sim --replay %s)\n", file,
				file);
			for (size_t i = 0; i < world.nplan && !opt_quiet; i++) {
				char buf[256];

				printf("#     %s\n", action_text(&world.plan[i],
					buf, sizeof(buf)));
			}
		}
		if (!keep_going)
			break;
	}
	printf("# totals:");
	for (int t = 0; t < ntot; t++)
		printf(" %s=%" PRIu64, names[t], tot[t]);
	printf("\n%" PRIu64 " seeds, %" PRIu64 " failed%s\n", ran,
		failed + broken, broken ? " (some crashed)" : "");
	return failed || broken ? 1 : 0;
}
