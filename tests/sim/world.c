/* SPDX-License-Identifier: MIT */
/*
 * world.c - the simulated cluster: nodes (each a store of the real code
 * on a data directory of its own, with a main thread and request
 * threads, as a daemon has), the operations its request threads make
 * through the store's calls (what the FUSE adapter calls for a system
 * call), and the driver that runs the plan: operations, pauses,
 * partitions, kills, lost machines, clock jumps, fault windows and
 * exclusive mounts, each at its time, with the cheap invariants checked
 * after every action and the others once everything is quiet.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/sync.h"
#include "src/status.h"
#include "src/tier.h"
#include "src/store_int.h"
#include "src/cluster/tier_int.h"
#include "tests/sim/sim.h"

struct world *W;

#define MAX_CONTENT	(160u << 10)

/* ---- the namespace ---------------------------------------------------------- */

static void
add_path(struct world *w, const char *s, int dir, int owner)
{
	struct path *p = &w->paths[w->npaths];
	const char *slash = strrchr(s, '/');

	snprintf(p->s, sizeof(p->s), "%s", s);
	p->dir = dir;
	p->owner = owner;
	p->parent = -1;
	if (slash) {
		for (int i = 0; i < w->npaths; i++)
			if (w->paths[i].dir && strlen(w->paths[i].s) ==
			    (size_t)(slash - s) && !strncmp(w->paths[i].s, s,
			    (size_t)(slash - s)))
				p->parent = i;
	}
	w->npaths++;
}

void
world_paths(struct world *w)
{
	static const char *const dirs[] = { "a", "b", "a/c" };
	static const char *const files[] = { "f0", "f1", "f2", "a/f0", "a/f1",
		"a/f2", "b/f0", "b/f1", "a/c/f0", "a/c/f1" };
	char s[SIM_PATH_LEN];

	w->npaths = 0;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		add_path(w, dirs[i], 1, -1);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		add_path(w, files[i], 0, -1);
	/* Files one node alone writes (the exclusive mount's too): an
	 * acknowledged version of them is never replaced by another's. */
	for (int n = 0; n <= SIM_MAX_NODES; n++) {
		for (int k = 0; k < 3; k++) {
			snprintf(s, sizeof(s), "u%d-%d", n, k);
			add_path(w, s, 0, n);
		}
	}
}

static const char *
leaf(const struct path *p)
{
	const char *slash = strrchr(p->s, '/');

	return slash ? slash + 1 : p->s;
}

/* The bytes of content @id, @len long: its number, then a pattern. */
uint64_t
world_content(uint64_t id, uint32_t len, unsigned char *buf)
{
	uint64_t x = id * 0x9e3779b97f4a7c15ull + 1;
	char head[24];

	for (uint32_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
	snprintf(head, sizeof(head), "id:%016" PRIx64 "\n", id);
	memcpy(buf, head, len < 21 ? len : 21);
	return id;
}

/* What @buf (@len bytes) holds: V_EMPTY, V_ID(id) or V_CORRUPT. */
static uint64_t
content_value(const unsigned char *buf, size_t len)
{
	unsigned char *want;
	uint64_t id;
	char head[24];
	int ok;

	if (len == 0)
		return V_EMPTY;
	if (len < 21 || len > MAX_CONTENT)
		return V_CORRUPT;
	memcpy(head, buf, 21);
	head[21] = '\0';
	if (sscanf(head, "id:%16" SCNx64, &id) != 1)
		return V_CORRUPT;
	want = malloc(len);
	if (!want)
		abort();
	world_content(id, (uint32_t)len, want);
	ok = memcmp(want, buf, len) == 0;
	free(want);
	return ok ? V_ID(id) : V_CORRUPT;
}

const char *
action_text(const struct action *a, char *buf, size_t size)
{
	static const char *const kinds[A_NKINDS] = { "?", "op", "pause",
		"partition", "kill", "lose", "osd-pause", "osd-clock",
		"skew", "faults", "exclusive", "gc", "catch-up", "sync" };
	static const char *const ops[OP_NKINDS] = { "?", "mkdir", "rmdir",
		"create", "write", "unlink", "rename", "chmod", "read",
		"list", "hopen", "hwrite", "hfsync", "hclose" };
	const struct path *p = a->path >= 0 && W && a->path < W->npaths ?
		&W->paths[a->path] : NULL;
	const struct path *p2 = a->path2 >= 0 && W && a->path2 < W->npaths ?
		&W->paths[a->path2] : NULL;

	if (a->kind == A_OP)
		snprintf(buf, size, "+%.3fs node%d/%d %s %s%s%s len=%u id=%"
			PRIu64, (double)a->wait / 1e9, a->node, a->client,
			ops[a->op], p ? p->s : "-", p2 ? " " : "",
			p2 ? p2->s : "", a->len, a->id);
	else
		snprintf(buf, size, "+%.3fs %s node%d arg=%" PRId64
			" dur=%.3fs", (double)a->wait / 1e9, kinds[a->kind],
			a->node, a->arg, (double)a->dur / 1e9);
	return buf;
}

/* ---- a client's operations ----------------------------------------------- */

/* Every open(2) of a 64-bit process carries SIM_O_LARGEFILE (the store tells
 * the kernel's own opens by its absence). */

static const struct objfs_cred root_cred = { 0, 0 };

struct walk {
	uint64_t ino[4];
	int n;
};

static void
walk_forget(struct objfs_store *s, struct walk *wk)
{
	for (int i = 0; i < wk->n; i++)
		objfs_store_forget(s, wk->ino[i], 1);
	wk->n = 0;
}

/* The inode of path @p (its lookups counted in @wk): 0 or -errno. */
static int
resolve(struct world *w, struct objfs_store *s, int p, struct walk *wk,
		uint64_t *ino, struct objfs_attr *out)
{
	uint64_t parent = 1;
	struct objfs_attr a;
	int rc;

	if (p < 0) {
		*ino = 1;
		return 0;
	}
	if (w->paths[p].parent >= 0) {
		rc = resolve(w, s, w->paths[p].parent, wk, &parent, NULL);
		if (rc < 0)
			return rc;
	}
	rc = objfs_store_lookup(s, parent, leaf(&w->paths[p]), &a);
	if (rc < 0)
		return rc;
	if (wk->n < 4)
		wk->ino[wk->n++] = a.ino;
	else
		objfs_store_forget(s, a.ino, 1);
	*ino = a.ino;
	if (out)
		*out = a;
	return 0;
}

static int
parent_of(struct world *w, struct objfs_store *s, int p, struct walk *wk,
		uint64_t *pino)
{
	return resolve(w, s, w->paths[p].parent, wk, pino, NULL);
}

/* @ino holds @v on node @n now. */
static void
held_set(struct node *n, uint64_t ino, uint64_t v)
{
	unsigned i;

	for (i = 0; i < SIM_HELD && n->held_ino[i] != ino; i++)
		;
	if (i == SIM_HELD) {
		i = n->nheld_next++ % SIM_HELD;
		n->held_ino[i] = ino;
	}
	n->held_val[i] = v;
}

/* What @ino holds on node @n: @dflt when it is not known there. */
static uint64_t
held_get(const struct node *n, uint64_t ino, uint64_t dflt)
{
	for (unsigned i = 0; i < SIM_HELD; i++)
		if (n->held_ino[i] == ino)
			return n->held_val[i];
	return dflt;
}

/* Write content @id (@len bytes) over the whole of @ino. */
static int
write_content_2(struct objfs_store *s, uint64_t ino, uint64_t id, uint32_t len,
		int *wrote);

static int
write_content(struct objfs_store *s, uint64_t ino, uint64_t id, uint32_t len)
{
	int wrote;

	return write_content_2(s, ino, id, len, &wrote);
}

/* The same; *@wrote: the bytes went in (the size may not have followed:
 * then a longer file holds them and its old tail). */
static int
write_content_2(struct objfs_store *s, uint64_t ino, uint64_t id, uint32_t len,
		int *wrote)
{
	unsigned char *buf = malloc(len ? len : 1);
	struct objfs_writer wr = { 0 };
	struct objfs_setattr sa = { .valid = OBJFS_SET_SIZE, .size = len };
	struct objfs_attr a;
	size_t n = 0;
	int changed = 0, rc = 0;

	if (!buf)
		return -ENOMEM;
	world_content(id, len, buf);
	if (len)
		rc = objfs_store_write(s, ino, 0, buf, len, &wr, &changed, &n);
	if (rc == 0 && n != len)
		rc = -ENOSPC;
	*wrote = rc == 0 || n > 0;
	if (rc == 0)
		rc = objfs_store_setattr(s, ino, &sa, &a);
	free(buf);
	return rc;
}

static uint64_t
read_value(struct objfs_store *s, uint64_t ino, int *rcp)
{
	unsigned char *buf = malloc(MAX_CONTENT + 1);
	enum objfs_cache cache;
	size_t got = 0, n;
	int rc;

	if (!buf)
		abort();
	rc = objfs_store_open_file(s, ino, O_RDONLY | SIM_O_LARGEFILE, 0, &cache);
	while (rc == 0 && got <= MAX_CONTENT) {
		rc = objfs_store_read(s, ino, got, buf + got,
				MAX_CONTENT + 1 - got, &n);
		if (rc < 0 || n == 0)
			break;
		got += n;
	}
	if (rc != -ENOENT && rc != -ESTALE) {
		int r2 = objfs_store_release(s, ino, O_RDONLY | SIM_O_LARGEFILE, 0);

		(void)r2;
	}
	*rcp = rc;
	n = rc == 0 ? content_value(buf, got) : V_UNREADABLE;
	free(buf);
	return n;
}

static int
is_shared(struct node *n)
{
	return !n->exclusive && !W->cfg.s3;
}

/* Writers of @path on node @inc: a read there may see what they have
 * not published. */
static int local_writers[SIM_NODES + 1][SIM_PATHS];
static uint64_t local_gen[SIM_NODES + 1][SIM_PATHS];

static void
writing(struct node *n, int path, int d)
{
	local_writers[n->inc + 1][path] += d;
	local_gen[n->inc + 1][path]++;
}

/* Renames and unlinks of each path, counted as they begin and end: a
 * file written through an open (a handle, or a write's own) whose path
 * was renamed or unlinked meanwhile may be elsewhere now. */
static uint64_t path_gen[SIM_PATHS];

static void
moved(int path)
{
	if (path >= 0)
		path_gen[path]++;
}

/* The count of @from's renames when a rename of it to @to began (0:
 * never): a file open on @from before then may be at @to since. */
static uint64_t renamed_to[SIM_PATHS][SIM_PATHS];

/* What a write through an open of @path (since its count @g0) gave
 * @value: unknown at every path a rename since may have taken the file
 * to, and from there on, a few renames deep (seed 86 of 200 actions on
 * S3: a handle's file renamed, then written through the handle). */
static void
moved_event(struct client *c, int path, uint64_t value, uint64_t t0,
		uint64_t g0, const struct action *a, int depth)
{
	for (int q = 0; depth < 3 && q < W->npaths; q++) {
		if (q == path || renamed_to[path][q] <= g0 ||
		    renamed_to[path][q] == 0)
			continue;
		model_event(W, q, value, t0, UINT64_MAX, -EIO, c->n->inc, 0,
			a->id);
		moved_event(c, q, value, t0, renamed_to[path][q] - 1, a,
			depth + 1);
	}
}

/* A change of @path, with what it gives it; @g0: for a file's content,
 * the path's count of renames when its open began (a change since, and
 * the content may be anywhere: unknown here). */
static void
event_g(struct client *c, int path, uint64_t value, uint64_t t0, int rc,
		const struct action *a, int ns, uint64_t g0)
{
	struct node *n = c->n;

	/* @ns: 1 a namespace change, 2 a file published by its close (its
	 * name may still wait in the outbox), 0 by an fsync (which ships
	 * what waits). */
	if (ns != 1 && g0 != path_gen[path] && value >= 16)
		moved_event(c, path, value, t0, g0, a, 0);
	if (ns != 1 && g0 != path_gen[path] && rc == 0)
		rc = -EIO;
	/* A publish refused for a directory another node holds is done
	 * later by the follower: not a refusal. */
	if (ns != 1 && rc == -EBUSY)
		rc = -EIO;
	/* A namespace change (or a close) on an exclusive mount is in the
	 * pool only once an fsync shipped it, as with remote_batch. */
	model_event(W, path, value, t0, sim_now(), rc, n->inc,
		ns && (W->cfg.batch_ms > 0 || !is_shared(n)), a->id);
}

#define event(c, path, value, t0, rc, a, ns) \
	event_g(c, path, value, t0, rc, a, ns, g0)

static int
count_entry(void *arg, const char *name, const struct objfs_attr *x,
		uint64_t next)
{
	(void)name;
	(void)x;
	(void)next;
	(*(int *)arg)++;
	return 0;
}

static void
run_op(struct client *c, const struct action *a, struct op_result *res)
{
	struct world *w = W;
	struct node *n = c->n;
	struct objfs_store *s = n->s;
	struct walk wk = { { 0 }, 0 };
	struct objfs_attr at;
	enum objfs_cache cache;
	uint64_t pino = 0, ino = 0, t0 = sim_now();
	int p = a->path, rc = 0, r2, wrote = 0;
	uint64_t g0 = p >= 0 ? path_gen[p] : 0;

	memset(res, 0, sizeof(*res));
	res->t0 = t0;
	/* One writer of a file per node at a time: two writers of one
	 * file on one node mix their bytes, as on any file system, and
	 * what each publishes is then no one's content (the model could
	 * not say what the file holds).  Writers on different nodes are
	 * what the leases are for: those are tried. */
	if ((a->op == OP_CREATE || a->op == OP_WRITE || a->op == OP_HOPEN) &&
	    p >= 0 && local_writers[n->inc + 1][p] > 0) {
		res->rc = -EALREADY;
		res->t1 = sim_now();
		return;
	}
	if (a->op == OP_HWRITE && c->h_open &&
	    local_writers[n->inc + 1][c->h_path] > 1) {
		res->rc = -EALREADY;
		res->t1 = sim_now();
		return;
	}
	switch (a->op) {
	case OP_MKDIR:
		rc = parent_of(w, s, p, &wk, &pino);
		if (rc == 0) {
			rc = objfs_store_mkdir(s, pino, leaf(&w->paths[p]), 0755,
					&root_cred, &at);
			if (rc == 0)
				objfs_store_forget(s, at.ino, 1);
			event(c, p, V_DIR, t0, rc, a, 1);
		}
		break;
	case OP_RMDIR:
		rc = parent_of(w, s, p, &wk, &pino);
		if (rc == 0) {
			rc = objfs_store_rmdir(s, pino, leaf(&w->paths[p]));
			event(c, p, V_ABSENT, t0, rc, a, 1);
		}
		break;
	case OP_CREATE:
		rc = parent_of(w, s, p, &wk, &pino);
		if (rc < 0)
			break;
		writing(n, p, 1);
		rc = objfs_store_create(s, pino, leaf(&w->paths[p]), 0644,
				O_CREAT | O_EXCL | O_WRONLY | SIM_O_LARGEFILE, 0, &root_cred, &at);
		event(c, p, V_EMPTY, t0, rc, a, 1);
		if (rc == 0) {
			uint64_t t1 = sim_now();

			ino = at.ino;
			held_set(n, ino, V_EMPTY);
			r2 = write_content(s, ino, a->id, a->len);
			if (r2 == 0) {
				model_pending(w, p, V_ID(a->id), t1, n->inc,
					a->id);
				held_set(n, ino, V_ID(a->id));
			}
			if (r2 == 0 && is_shared(n)) {
				r2 = objfs_store_fsync(s, ino,
						OBJFS_FSYNC_CLOSE);
				event(c, p, V_ID(a->id), t1, r2, a, 2);
			} else if (r2 == 0) {
				r2 = objfs_store_fsync(s, ino, 0);
				event(c, p, V_ID(a->id), t1, r2, a, 0);
				if (r2 == 0) {
					n->last_sync_ok = sim_now();
					model_synced(w, n->inc, t1);
				}
			} else {
				event(c, p, V_ID(a->id), t1, -EIO, a, 0);
			}
			res->rc2 = r2;
			(void)objfs_store_release(s, ino, O_WRONLY, 0);
			objfs_store_forget(s, ino, 1);
		}
		writing(n, p, -1);
		break;
	case OP_WRITE:
		rc = resolve(w, s, p, &wk, &ino, &at);
		if (rc < 0)
			break;
		if (S_ISDIR(at.mode)) {
			rc = -EISDIR;
			break;
		}
		writing(n, p, 1);
		rc = objfs_store_open_file(s, ino, O_WRONLY | O_TRUNC | SIM_O_LARGEFILE, 0, &cache);
		if (rc == 0) {
			uint64_t t1 = sim_now();

			model_pending(w, p, V_EMPTY, t1, n->inc, a->id);
			held_set(n, ino, V_EMPTY);
			r2 = write_content(s, ino, a->id, a->len);
			if (r2 == 0) {
				model_pending(w, p, V_ID(a->id), t1, n->inc,
					a->id);
				held_set(n, ino, V_ID(a->id));
			}
			if (r2 == 0) {
				r2 = objfs_store_fsync(s, ino, 0);
				event(c, p, V_ID(a->id), t1, r2, a, 0);
				if (r2 == 0)
					model_synced(w, n->inc, t1);
			} else {
				/* Truncated here, not published: its
				 * close may publish the empty file. */
				event(c, p, V_EMPTY, t1, -EIO, a, 0);
			}
			if (is_shared(n)) {
				int r3 = objfs_store_fsync(s, ino,
						OBJFS_FSYNC_CLOSE);

				if (r2 || r3)
					event(c, p, r2 ? V_EMPTY : V_ID(a->id),
						t1, r3 ? r3 : -EIO, a, 2);
				if (!r2)
					r2 = r3;
			}
			res->rc2 = r2;
			(void)objfs_store_release(s, ino, O_WRONLY | O_TRUNC, 0);
		}
		writing(n, p, -1);
		break;
	case OP_UNLINK:
		rc = parent_of(w, s, p, &wk, &pino);
		if (rc == 0) {
			moved(p);
			rc = objfs_store_unlink(s, pino, leaf(&w->paths[p]));
			moved(p);
			event(c, p, V_ABSENT, t0, rc, a, 1);
		}
		break;
	case OP_RENAME: {
		uint64_t pino2 = 0;

		rc = parent_of(w, s, p, &wk, &pino);
		if (rc == 0)
			rc = parent_of(w, s, a->path2, &wk, &pino2);
		if (rc < 0)
			break;
		moved(p);
		moved(a->path2);
		renamed_to[p][a->path2] = path_gen[p];
		rc = objfs_store_rename(s, pino, leaf(&w->paths[p]), pino2,
				leaf(&w->paths[a->path2]), 0, &root_cred);
		moved(p);
		moved(a->path2);
		event(c, p, V_ABSENT, t0, rc, a, 1);
		event(c, a->path2, V_ANY, t0, rc, a, 1);
		break;
	}
	case OP_CHMOD: {
		struct objfs_setattr sa = { .valid = OBJFS_SET_MODE,
			.mode = (a->len & 1) ? 0600 : 0644 };

		rc = resolve(w, s, p, &wk, &ino, &at);
		if (rc == 0) {
			sa.mode |= at.mode & S_IFMT;
			rc = objfs_store_setattr(s, ino, &sa, &at);
		}
		break;
	}
	case OP_READ: {
		uint64_t lg0 = local_gen[n->inc + 1][p];
		int busy = local_writers[n->inc + 1][p];

		rc = resolve(w, s, p, &wk, &ino, &at);
		if (rc == -ENOENT) {
			res->seen = V_ABSENT;
			rc = 0;
		} else if (rc == 0 && S_ISDIR(at.mode)) {
			res->seen = V_DIR;
		} else if (rc == 0) {
			res->seen = read_value(s, ino, &rc);
		}
		res->t1 = sim_now();
		if (rc == 0 && !busy && !local_writers[n->inc + 1][p] &&
		    lg0 == local_gen[n->inc + 1][p] && is_shared(n)) {
			char why[512];

			if (!model_check(w, p, res->seen, t0, res->t1, why,
					sizeof(why)))
				violation(w, INV_READ, "node%d read %s: %s",
					n->idx, w->paths[p].s, why);
		}
		break;
	}
	case OP_LIST: {
		int k = 0;

		rc = resolve(w, s, p, &wk, &ino, &at);
		if (rc == 0)
			rc = objfs_store_readdir(s, ino, 0, 0, count_entry, &k);
		break;
	}
	case OP_HOPEN:
		if (c->h_open) {
			rc = -EALREADY;
			break;
		}
		rc = resolve(w, s, p, &wk, &ino, &at);
		if (rc == -ENOENT) {
			walk_forget(s, &wk);
			rc = parent_of(w, s, p, &wk, &pino);
			if (rc < 0)
				break;
			rc = objfs_store_create(s, pino, leaf(&w->paths[p]),
					0644, O_CREAT | O_WRONLY | O_TRUNC | SIM_O_LARGEFILE, 0,
					&root_cred, &at);
			event(c, p, V_EMPTY, t0, rc, a, 1);
			if (rc < 0)
				break;
			ino = at.ino;
		} else if (rc == 0 && S_ISDIR(at.mode)) {
			rc = -EISDIR;
			break;
		} else if (rc == 0) {
			rc = objfs_store_open_file(s, ino, O_WRONLY | O_TRUNC |
					SIM_O_LARGEFILE, 0, &cache);
			if (rc < 0)
				break;
			model_pending(w, p, V_EMPTY, t0, n->inc, a->id);
			wk.n--;	/* the handle keeps this lookup */
		} else {
			break;
		}
		c->h_open = 1;
		c->h_gen = g0;
		c->h_path = p;
		c->h_ino = ino;
		c->h_value = V_EMPTY;
		c->h_dirty = 1;
		held_set(n, ino, V_EMPTY);
		writing(n, p, 1);
		break;
	case OP_HWRITE:
		if (!c->h_open) {
			rc = -EBADF;
			break;
		}
		rc = write_content_2(s, c->h_ino, a->id, a->len, &wrote);
		if (rc < 0 && wrote) {
			/* In, but not its size: the file may hold these
			 * bytes and its old tail, which a later publish
			 * shows (seed 45 of 300 actions). */
			model_event(w, c->h_path, V_ID(a->id), t0, UINT64_MAX,
				-EIO, n->inc, 0, a->id);
			model_event(w, c->h_path, V_CORRUPT, t0, UINT64_MAX,
				-EIO, n->inc, 0, a->id);
			c->h_value = V_CORRUPT;
			c->h_dirty = 1;
			held_set(n, c->h_ino, c->h_value);
			if (c->h_gen != path_gen[c->h_path]) {
				moved_event(c, c->h_path, V_ID(a->id), t0,
					c->h_gen, a, 0);
				moved_event(c, c->h_path, V_CORRUPT, t0,
					c->h_gen, a, 0);
			}
		}
		if (rc == 0) {
			model_pending(w, c->h_path, V_ID(a->id), t0, n->inc,
				a->id);
			c->h_value = V_ID(a->id);
			c->h_dirty = 1;
			held_set(n, c->h_ino, c->h_value);
			if (c->h_gen != path_gen[c->h_path])
				moved_event(c, c->h_path, c->h_value, t0,
					c->h_gen, a, 0);
		}
		break;
	case OP_HFSYNC:
		if (!c->h_open) {
			rc = -EBADF;
			break;
		}
		/* What the file holds here: another client may have
		 * written it since this one did. */
		c->h_value = held_get(n, c->h_ino, c->h_value);
		rc = objfs_store_fsync(s, c->h_ino, 0);
		event_g(c, c->h_path, c->h_value, t0, rc, a, 0, c->h_gen);
		if (rc == 0) {
			c->h_dirty = 0;
			model_synced(w, n->inc, t0);
		}
		break;
	case OP_HCLOSE:
		if (!c->h_open) {
			rc = -EBADF;
			break;
		}
		c->h_value = held_get(n, c->h_ino, c->h_value);
		rc = is_shared(n) ? objfs_store_fsync(s, c->h_ino,
				OBJFS_FSYNC_CLOSE) : 0;
		if (c->h_dirty && is_shared(n))
			event_g(c, c->h_path, c->h_value, t0, rc, a, 2,
				c->h_gen);
		(void)objfs_store_release(s, c->h_ino, O_WRONLY, 0);
		objfs_store_forget(s, c->h_ino, 1);
		writing(n, c->h_path, -1);
		c->h_open = 0;
		break;
	default:
		rc = -EINVAL;
	}
	walk_forget(s, &wk);
	res->rc = rc;
	res->t1 = sim_now();
}

static void
run_action(struct client *c, const struct action *a, struct op_result *res)
{
	struct objfs_store *s = c->n->s;
	char num[8];

	memset(res, 0, sizeof(*res));
	res->t0 = sim_now();
	switch (a->kind) {
	case A_OP:
		run_op(c, a, res);
		return;
	case A_CATCHUP:
		res->rc = objfs_store_setxattr(s, OBJFS_STATUS_INO,
				OBJFS_XATTR_CATCH_UP, "1", 1, 0);
		break;
	case A_SYNC:
		res->rc = objfs_store_fsync(s, OBJFS_STATUS_INO, 0);
		if (res->rc == 0) {
			model_synced(W, c->n->inc, res->t0);
			if (is_shared(c->n))
				model_published_all(W, c->n->inc);
		}
		break;
	case A_GC:
		snprintf(num, sizeof(num), "0");
		res->rc = objfs_store_setxattr(s, OBJFS_STATUS_INO,
				OBJFS_XATTR_GC, num, strlen(num), 0);
		break;
	default:
		res->rc = -EINVAL;
	}
	res->t1 = sim_now();
}

static void *
client_main(void *arg)
{
	struct client *c = arg;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		struct action a;
		struct op_result res;
		uint64_t over, pauses;

		while (!c->busy && !c->stop)
			pthread_cond_wait(&c->cv, &c->mu);
		if (!c->busy)
			break;
		a = c->a;
		pthread_mutex_unlock(&c->mu);
		(void)objfs_deadline_overrun();
		pauses = c->n->npauses;
		run_action(c, &a, &res);
		/* Each system call the action made (an open, a write, a
		 * close...; objfsctl's commands, on the status file, run to
		 * their end) ends within 2 s of its deadline: remote_timeout
		 * after the cluster's last answer to it, on the node's own
		 * clock (a pause of the node stops that clock's reader, not
		 * the clock: calls across one are not judged). */
		over = objfs_deadline_overrun();
		if (W->cfg.check_time && over > 2 * SIM_NS &&
		    pauses == c->n->npauses && c->n->paused_until < res.t0) {
			char buf[256];

			violation(W, INV_ONE_TIMEOUT, "a call of %s ended %.1f "
				"s past remote_timeout (%u s) after the "
				"cluster's last answer to it (the action ran "
				"from %.3f to %.3f s)", action_text(&a, buf,
				sizeof(buf)), (double)over / 1e9,
				W->cfg.timeout_s, (double)res.t0 / 1e9,
				(double)res.t1 / 1e9);
		}
		if (res.rc == 0)
			W->oprc_ok++;
		else if (model_status(res.rc) == EV_FAIL)
			W->oprc_fail++;
		else
			W->oprc_unknown++;
		if (W->trace) {
			char buf[256];

			fprintf(W->trace, "%.6f done %s: %d (%d)\n",
				(double)sim_now() / 1e9, action_text(&a, buf,
				sizeof(buf)), res.rc, res.rc2);
			if (W->log_actions)
				fprintf(stderr, "sim %.6f: done %s: %d (%d)\n",
					(double)sim_now() / 1e9, buf, res.rc,
					res.rc2);
		}
		pthread_mutex_lock(&c->mu);
		c->res = res;
		c->busy = 0;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* ---- nodes ------------------------------------------------------------------ */

static void *
node_main(void *arg)
{
	struct node *n = arg;
	struct world *w = W;
	char arena[300];
	struct objfs_store_config cfg = {
		.data_dir = n->dir,
		.arena_size = 8u << 20,
		.chunk_size = w->cfg.chunk,
		.tier_ops = &objfs_tier_rados,
		.remote = w->cfg.s3 ? "s3://sim" : "rados:sim",
		.remote_endpoint = w->cfg.s3 ? "https://s3.sim.invalid" : NULL,
		.remote_addressing = w->cfg.s3 ? "path" : NULL,
		.remote_timeout = w->cfg.timeout_s,
		.remote_hold = w->cfg.hold_s,
		.remote_shared = is_shared(n),
		.remote_lease = w->cfg.lease_s,
		.remote_batch_ms = w->cfg.batch_ms,
		.remote_compact = w->cfg.compact,
	};
	struct objfs_store *s = NULL;
	const char *msg = NULL;
	long holder = 0;
	int rc;

	snprintf(arena, sizeof(arena), "%s/shm", w->root);
	cfg.arena_dir = arena;
	rc = objfs_store_open(&cfg, &s, &msg, &holder);
	pthread_mutex_lock(&n->mu);
	n->open_rc = rc;
	snprintf(n->msg, sizeof(n->msg), "%s", msg ? msg : "");
	if (rc == 0) {
		n->s = s;
		for (int i = 0; i < SIM_CLIENTS; i++) {
			struct client *c = &n->c[i];

			memset(c, 0, sizeof(*c));
			c->n = n;
			c->idx = i;
			pthread_mutex_init(&c->mu, NULL);
			objfs_cond_init(&c->cv);
			pthread_create(&c->th, NULL, client_main, c);
		}
	}
	n->state = rc == 0 ? 1 : -1;
	pthread_cond_broadcast(&n->cv);
	if (rc < 0) {
		pthread_mutex_unlock(&n->mu);
		return NULL;
	}
	while (n->state != 2)
		pthread_cond_wait(&n->cv, &n->mu);
	pthread_mutex_unlock(&n->mu);
	for (int i = 0; i < SIM_CLIENTS; i++) {
		struct client *c = &n->c[i];

		pthread_mutex_lock(&c->mu);
		c->stop = 1;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->th, NULL);
	}
	rc = objfs_store_close(s);
	pthread_mutex_lock(&n->mu);
	n->open_rc = rc;
	n->state = 3;
	pthread_cond_broadcast(&n->cv);
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

/* Wait (the driver) until node @n's state is @want or past it, at most
 * @ns: 0, or -ETIMEDOUT. */
static int
node_wait(struct node *n, int want, uint64_t ns)
{
	uint64_t end = sim_now() + ns;
	int rc = 0;

	pthread_mutex_lock(&n->mu);
	while (!(n->state == want || (want == 1 && n->state == -1) ||
		 (want == 3 && n->state == 3))) {
		if (sim_now() >= end || sim_node_dead(n->inc)) {
			rc = -ETIMEDOUT;
			break;
		}
		objfs_cond_wait_ms(&n->cv, &n->mu,
			(unsigned)((end - sim_now()) / 1000000u) + 1);
	}
	pthread_mutex_unlock(&n->mu);
	return rc;
}

static int next_inc;

/* Start node @n (a new incarnation, a new process): 0 when it mounted. */
static int
node_start(struct world *w, struct node *n)
{
	int64_t mono = (int64_t)(sim_sched_rand() % (1000ull * SIM_NS));
	int64_t real = (int64_t)(sim_sched_rand() % (400ull * 1000000u)) -
		200ll * 1000000;
	char host[64];
	int rc;

	if (next_inc >= SIM_NODES - 1)
		return -EAGAIN;
	n->inc = next_inc++;
	n->gen++;
	n->state = 0;
	n->paused_until = n->part_until = 0;
	n->last_sync_ok = 0;
	memset(n->held_ino, 0, sizeof(n->held_ino));
	n->nheld_next = 0;
	snprintf(host, sizeof(host), "host%d", n->idx);
	sim_set_identity(n->inc, host, 1000 + n->inc);
	sim_set_clock(n->inc, mono, real);
	pthread_mutex_init(&n->mu, NULL);
	objfs_cond_init(&n->cv);
	sim_set_node(n->inc);
	rc = pthread_create(&n->main, NULL, node_main, n);
	sim_set_node(SIM_NONE);
	if (rc)
		return -rc;
	rc = node_wait(n, 1, 20ull * ((uint64_t)w->cfg.timeout_s + 10) *
			SIM_NS);
	if (rc == 0 && n->state == 1) {
		if (getenv("DBG_META"))
			fprintf(stderr, "sim: node%d inc %d meta %p\n", n->idx,
				n->inc, (void *)n->s->meta);
		n->up = 1;
		n->dead = 0;
		return 0;
	}
	if (W->trace)
		fprintf(W->trace, "%.6f node%d (inc %d) did not mount: %d %s\n",
			(double)sim_now() / 1e9, n->idx, n->inc, n->open_rc,
			n->msg);
	n->up = 0;
	if (rc == 0 && n->state == -1) {
		/* Its main thread ended: the incarnation is free again. */
		pthread_join(n->main, NULL);
		if (n->inc == next_inc - 1)
			next_inc--;
		return n->open_rc;
	}
	return -ETIMEDOUT;
}

/* Unmount @n cleanly (the driver waits, bounded). */
static int
node_stop(struct world *w, struct node *n)
{
	int rc;

	if (!n->up)
		return 0;
	pthread_mutex_lock(&n->mu);
	n->state = 2;
	pthread_cond_broadcast(&n->cv);
	pthread_mutex_unlock(&n->mu);
	rc = node_wait(n, 3, 40ull * ((uint64_t)w->cfg.timeout_s + 10) *
			SIM_NS);
	n->up = 0;
	if (rc == 0) {
		pthread_join(n->main, NULL);
		rc = n->open_rc;
	}
	return rc;
}

static void
node_kill(struct world *w, struct node *n)
{
	sim_kill_node(n->inc);
	simpool_node_down(w->pool, n->inc, sim_now(), UINT64_MAX);
	simpool_partition(w->pool, n->inc, UINT64_MAX);
	model_forget_node(w, n->inc);
	for (int i = 0; i < SIM_CLIENTS; i++)
		if (n->c[i].busy)
			model_inflight(w, &n->c[i].a, n->c[i].h_value,
				n->c[i].h_open ? n->c[i].h_path : -1, n->inc);
	n->up = 0;
	n->dead = 1;
}

/* ---- the driver --------------------------------------------------------- */

static int
post(struct world *w, struct node *n, int client, const struct action *a)
{
	struct client *c;
	int rc = 0;

	if (!n->up || n->state != 1)
		return -ENODEV;
	c = &n->c[client];
	pthread_mutex_lock(&c->mu);
	if (c->busy) {
		rc = -EBUSY;
	} else {
		c->a = *a;
		c->busy = 1;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	(void)w;
	return rc;
}

/* Wait until the clients of @n are idle, at most @ns. */
static int
idle(struct node *n, uint64_t ns)
{
	uint64_t end = sim_now() + ns;

	for (int i = 0; i < SIM_CLIENTS && n->up; i++) {
		struct client *c = &n->c[i];

		pthread_mutex_lock(&c->mu);
		while (c->busy && sim_now() < end && !sim_node_dead(n->inc))
			objfs_cond_wait_ms(&c->cv, &c->mu,
				(unsigned)((end - sim_now()) / 1000000u) + 1);
		i = c->busy ? SIM_CLIENTS : i;
		pthread_mutex_unlock(&c->mu);
		if (i == SIM_CLIENTS)
			return -ETIMEDOUT;
	}
	return 0;
}

/* Post @a to a free client of @n and wait for its answer (bounded). */
static int
do_now(struct world *w, struct node *n, const struct action *a,
		struct op_result *res, uint64_t ns)
{
	uint64_t end = sim_now() + ns;

	for (;;) {
		for (int i = 0; i < SIM_CLIENTS; i++) {
			struct client *c = &n->c[i];
			int rc = post(w, n, i, a);

			if (rc == -EBUSY)
				continue;
			if (rc < 0)
				return rc;
			pthread_mutex_lock(&c->mu);
			while (c->busy && sim_now() < end)
				objfs_cond_wait_ms(&c->cv, &c->mu,
					(unsigned)((end - sim_now()) /
						1000000u) + 1);
			rc = c->busy ? -ETIMEDOUT : 0;
			if (rc == 0 && res)
				*res = c->res;
			pthread_mutex_unlock(&c->mu);
			return rc;
		}
		if (sim_now() >= end)
			return -ETIMEDOUT;
		sim_sleep(SIM_NS / 10);
	}
}

static void
restart_due(struct world *w, int all)
{
	for (int i = 0; i < w->cfg.nodes; i++) {
		struct node *n = &w->nodes[i];

		if (!n->dead || (!all && n->restart_at > sim_now()))
			continue;
		if (n->lose) {
			/* A new machine: a new data directory. */
			snprintf(n->dir, sizeof(n->dir), "%s/node%d.%d",
				w->root, i, n->gen);
			mkdir(n->dir, 0700);
			n->lose = 0;
		}
		n->dead = 0;
		if (node_start(w, n) < 0) {
			/* Refused (a namespace taken exclusively, its
			 * hold): tried again later. */
			n->dead = 1;
			n->restart_at = sim_now() + SIM_NS;
		}
	}
}

static void
exclusive(struct world *w, const struct action *a)
{
	struct node *n = &w->nodes[SIM_MAX_NODES];
	struct action op = *a;
	struct op_result res;

	if (n->up)
		return;
	n->exclusive = 1;
	n->idx = SIM_MAX_NODES;
	snprintf(n->dir, sizeof(n->dir), "%s/excl.%d", w->root, n->gen);
	mkdir(n->dir, 0700);
	if (node_start(w, n) < 0)
		return;
	op.kind = A_OP;
	op.op = OP_CREATE;
	op.node = SIM_MAX_NODES;
	op.path = -1;
	for (int i = 0; i < w->npaths; i++)
		if (w->paths[i].owner == SIM_MAX_NODES &&
		    (uint64_t)i % 3 == a->id % 3)
			op.path = i;
	op.len = 100 + (uint32_t)(a->id % 5000);
	if (op.path >= 0)
		(void)do_now(w, n, &op, &res, 4ull * w->cfg.timeout_s * SIM_NS);
	sim_sleep(a->dur);
	(void)node_stop(w, n);
}

static void
act(struct world *w, const struct action *a)
{
	struct node *n = a->node >= 0 && a->node < w->cfg.nodes ?
		&w->nodes[a->node] : NULL;
	uint64_t now = sim_now();
	struct sim_faults f = { 0 };

	w->counts[a->kind]++;
	switch (a->kind) {
	case A_OP: {
		int rc = post(w, n, a->client, a);

		/* Its client is busy: another of the node's may take it
		 * (a handle's operations stay with the handle's). */
		if (rc == -EBUSY && a->op != OP_HWRITE &&
		    a->op != OP_HFSYNC && a->op != OP_HCLOSE)
			rc = post(w, n, !a->client, a);
		if (rc < 0) {
			w->skipped++;
			if (w->trace)
				fprintf(w->trace, "%.6f   (skipped: %s)\n",
					(double)sim_now() / 1e9, rc == -EBUSY ?
					"its clients are busy" : "node down");
		} else {
			w->opcounts[a->op]++;
		}
		break;
	}
	case A_PAUSE:
		if (!n->up)
			break;
		n->paused_until = now + a->dur;
		n->npauses++;
		sim_pause_node(n->inc, now + a->dur);
		simpool_node_down(w->pool, n->inc, now, now + a->dur);
		break;
	case A_PARTITION:
		if (!n->up)
			break;
		n->part_until = now + a->dur;
		simpool_partition(w->pool, n->inc, now + a->dur);
		simpool_node_down(w->pool, n->inc, now, now + a->dur);
		break;
	case A_KILL:
	case A_LOSE:
		if (!n->up)
			break;
		node_kill(w, n);
		n->restart_at = now + a->dur;
		n->lose = a->kind == A_LOSE;
		break;
	case A_OSD_PAUSE:
		simpool_osd_pause(w->pool, now + a->dur);
		break;
	case A_CLOCK:
		simpool_clock_jump(w->pool, a->arg);
		break;
	case A_SKEW:
		if (n->up) {
			int64_t mono, real;

			sim_get_clock(n->inc, &mono, &real);
			sim_set_clock(n->inc, mono, real + a->arg);
		}
		break;
	case A_FAULTS:
		f.land_timeout = f.lost = f.late = (unsigned)a->arg;
		f.slow = (unsigned)a->arg / 2;
		f.busy = (unsigned)a->arg / 2;	/* S3 only */
		f.notify_lost = f.notify_dup = f.notify_late =
			(unsigned)a->arg * 4;
		simpool_set_faults(w->pool, &f);
		break;
	case A_EXCL:
		exclusive(w, a);
		break;
	case A_GC:
	case A_CATCHUP:
	case A_SYNC:
		if (post(w, n, a->client, a) < 0)
			w->skipped++;
		break;
	}
}

/* Some node has work its follower is to do later (a publish, a record
 * in doubt). */
static int
todo_left(struct world *w)
{
	for (int i = 0; i < w->cfg.nodes; i++) {
		struct node *n = &w->nodes[i];
		size_t todo;

		if (!n->up || !n->s)
			continue;
		pthread_mutex_lock(&n->s->todo_mu);
		todo = n->s->ntodo;
		pthread_mutex_unlock(&n->s->todo_mu);
		if (todo || (n->s->tier && n->s->tier->ndoubt))
			return 1;
	}
	return 0;
}

/* Everything healed, every operation answered, every handle closed,
 * every node caught up. */
static void
quiesce(struct world *w)
{
	struct sim_faults none = { 0 };
	uint64_t bound = 6ull * ((uint64_t)w->cfg.timeout_s + 5) * SIM_NS;

	simpool_set_faults(w->pool, &none);
	simpool_osd_pause(w->pool, 0);
	for (int i = 0; i < w->cfg.nodes; i++) {
		struct node *n = &w->nodes[i];

		if (!n->up)
			continue;
		if (n->paused_until > sim_now())
			sim_pause_node(n->inc, 0);
		simpool_partition(w->pool, n->inc, 0);
		if (n->paused_until > sim_now() || n->part_until > sim_now())
			simpool_node_down(w->pool, n->inc,
				n->paused_until > n->part_until ?
				n->paused_until : n->part_until, sim_now());
		n->paused_until = n->part_until = 0;
	}
	/* S3: a mount whose hold another took while it could not reach the
	 * bucket learns it at its next renewal (then it is fenced out and
	 * mounted again, below): one renewal's time, and a try's. */
	if (w->cfg.s3)
		sim_sleep(((uint64_t)w->cfg.hold_s / 3 + 2ull *
			w->cfg.timeout_s + 2) * SIM_NS);
	restart_due(w, 1);
	restart_due(w, 1);
	for (int i = 0; i < w->cfg.nodes; i++) {
		struct node *n = &w->nodes[i];

		if (n->up && idle(n, bound) < 0) {
			violation(w, INV_ALIVE, "node%d: an operation did not "
				"end within %.0f s after every fault healed",
				i, (double)bound / 1e9);
			return;
		}
	}
	/* Handles closed (their writes published). */
	for (int i = 0; i < w->cfg.nodes; i++) {
		struct node *n = &w->nodes[i];

		for (int k = 0; n->up && k < SIM_CLIENTS; k++) {
			struct action a = { .kind = A_OP, .op = OP_HCLOSE,
				.node = i, .client = k, .path = -1,
				.path2 = -1 };

			if (!n->c[k].h_open)
				continue;
			(void)post(w, n, k, &a);
			(void)idle(n, bound);
		}
	}
	/* Every node catches up, twice (a recall in the first may ship what
	 * the second applies elsewhere); a node found fenced out then is
	 * mounted again (what its user does), and all catch up again.  What
	 * a node's follower does later (a close whose publish failed, a
	 * record in doubt) is waited for first, within a bound. */
	for (int pass = 0; pass < 3; pass++) {
		int again = 0;

		for (uint64_t end = sim_now() + bound; sim_now() < end;) {
			if (!todo_left(w))
				break;
			sim_sleep(SIM_NS / 5);
		}

		for (int round = 0; round < 3; round++) {
			for (int i = 0; i < w->cfg.nodes; i++) {
				struct node *n = &w->nodes[i];
				struct action a = { .kind = round ? A_CATCHUP :
					A_SYNC, .node = i, .path = -1,
					.path2 = -1 };
				struct op_result res;

				if (n->up)
					(void)do_now(w, n, &a, &res, bound);
			}
		}
		/* A publish that failed meanwhile (an answer that came
		 * late) is the follower's to do again: waited for in the
		 * next pass (seed 226 of 400 actions). */
		if (todo_left(w))
			again = 1;
		for (int i = 0; i < w->cfg.nodes; i++) {
			struct node *n = &w->nodes[i];
			struct objfs_tier *t;

			if (!n->up || !n->s || !(t = n->s->tier) ||
			    !(t->lost || t->diverged))
				continue;
			if (w->trace)
				fprintf(w->trace, "%.6f node%d: mounted again "
					"(%s)\n", (double)sim_now() / 1e9, i,
					t->lost ? "fenced out" : "diverged");
			(void)idle(n, bound);
			(void)node_stop(w, n);
			n->dead = 1;
			n->restart_at = 0;
			again = 1;
		}
		if (!again)
			break;
		restart_due(w, 1);
	}
	/* What a node's follower shipped meanwhile (a publish it did
	 * later, a directory given back) reaches every node too: more
	 * rounds while the log grows, within a bound. */
	for (int round = 0; round < 10; round++) {
		uint64_t end = simpool_log_end(w->pool);
		int behind = 0;

		for (int i = 0; i < w->cfg.nodes; i++) {
			struct node *n = &w->nodes[i];
			struct action a = { .kind = A_CATCHUP, .node = i,
				.path = -1, .path2 = -1 };
			struct op_result res;

			if (!n->up || !n->s || !n->s->tier)
				continue;
			if (atomic_load(&n->s->tier->pos) < end) {
				behind = 1;
				(void)do_now(w, n, &a, &res, bound);
			}
		}
		if (!behind && end == simpool_log_end(w->pool))
			break;
		sim_sleep(SIM_NS / 5);
	}
}

int
world_run(struct world *w)
{
	struct node *fresh;
	int rc;

	world_paths(w);
	for (int i = 0; i <= SIM_MAX_NODES; i++) {
		w->nodes[i].idx = i;
		w->nodes[i].inc = -1;
		snprintf(w->nodes[i].dir, sizeof(w->nodes[i].dir),
			"%s/node%d.0", w->root, i);
		mkdir(w->nodes[i].dir, 0700);
	}
	rc = simpool_start(w->pool);
	if (rc < 0)
		return rc;
	for (int i = 0; i < w->cfg.nodes; i++) {
		rc = node_start(w, &w->nodes[i]);
		if (rc < 0 && w->cfg.s3 && i > 0) {
			/* S3: one mount at a time; the others try again
			 * (restart_due), and take over when its hold lapses
			 * or it unmounts. */
			w->nodes[i].dead = 1;
			w->nodes[i].restart_at = sim_now() + SIM_NS;
			continue;
		}
		if (rc < 0) {
			violation(w, INV_ALIVE, "node%d could not mount at the "
				"start: %s (%s)", i, strerror(-rc),
				w->nodes[i].msg);
			return 0;
		}
	}
	for (w->step = 0; w->step < w->nplan && !w->violated; w->step++) {
		const struct action *a = &w->plan[w->step];

		sim_sleep(a->wait);
		restart_due(w, 0);
		if (w->trace) {
			char buf[256];

			fprintf(w->trace, "%.6f %s\n", (double)sim_now() / 1e9,
				action_text(a, buf, sizeof(buf)));
			if (w->log_actions)
				fprintf(stderr, "sim %.6f: %s\n",
					(double)sim_now() / 1e9, buf);
		}
		act(w, a);
		check_step(w);
	}
	if (w->violated)
		return 0;
	quiesce(w);
	if (getenv("OBJFS_SIM_DUMP"))
		sim_dump_threads();
	if (w->violated)
		return 0;
	check_step(w);
	check_quiet(w);
	if (w->violated)
		return 0;
	/* Every node unmounted; a fresh one reads the tree. */
	for (int i = 0; i < w->cfg.nodes; i++) {
		rc = node_stop(w, &w->nodes[i]);
		if (rc < 0 && !w->violated)
			violation(w, INV_ALIVE, "node%d: unmount failed: %s", i,
				strerror(-rc));
	}
	fresh = &w->nodes[0];
	fresh->exclusive = 0;
	fresh->dead = 0;
	snprintf(fresh->dir, sizeof(fresh->dir), "%s/fresh", w->root);
	mkdir(fresh->dir, 0700);
	/* An exclusive mount that could not give its hold back leaves it
	 * to expire: a user waits for it. */
	for (uint64_t end = sim_now() + 3ull * (w->cfg.hold_s +
	     w->cfg.timeout_s) * SIM_NS;;) {
		rc = node_start(w, fresh);
		if (rc != -EBUSY || sim_now() >= end)
			break;
		sim_sleep(SIM_NS);
	}
	if (rc < 0) {
		if (!w->violated)
			violation(w, INV_ALIVE, "a fresh node could not mount: "
				"%s (%s)", strerror(-rc), fresh->msg);
		return 0;
	}
	check_fresh(w, fresh->s);
	check_gc(w, fresh);
	(void)node_stop(w, fresh);
	return 0;
}

void
world_stop_all(struct world *w)
{
	(void)w;
}
