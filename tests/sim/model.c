/* SPDX-License-Identifier: MIT */
/*
 * model.c - what each path of a run may hold, from the history of the
 * operations that changed it (Jepsen's register, one per path).  Each
 * change is an event: the value it gives the path, when it was invoked
 * and answered, and how it ended: ok, failed (nothing of it may stay:
 * EEXIST, ENOENT, EBUSY and the like), or unknown (ETIMEDOUT, EIO: it may
 * have been applied, now or later, whole or not at all).
 *
 * A value read between t0 and t1 is possible when some event that was
 * not a failure gave it (or it is the path's first state, absent), was
 * invoked before t1, and no event that ended ok began after it ended and
 * ended before t0 (that one would be the later write).  An unknown event
 * may take effect at any time after it began: it never ends.  A
 * namespace change acknowledged by a node that holds directories
 * (remote_batch) counts only once an fsync of that node began after it
 * (its waiting changes are then in the pool): before, it is unknown.
 *
 * This is sound for the operations the simulator makes (each sets a
 * path's value whole; a rename's target takes whatever the source held:
 * any value), not complete: a read that goes back in time between two
 * values both possible is not seen.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/sim/sim.h"

int
model_status(int rc)
{
	switch (-rc) {
	case 0:
		return EV_OK;
	case EEXIST:
	case ENOENT:
	case ENOTEMPTY:
	case EBUSY:
	case EISDIR:
	case ENOTDIR:
	case EINVAL:
	case EPERM:
	case EACCES:
	case EXDEV:
	case EALREADY:
	case EBADF:
		return EV_FAIL;
	default:
		return EV_UNKNOWN;
	}
}

void
model_event(struct world *w, int path, uint64_t value, uint64_t t0,
		uint64_t t1, int rc, int node_inc, int batched,
		uint64_t action)
{
	struct event *e;

	if (path < 0 || path >= w->npaths)
		return;
	if (w->nev[path] == w->capev[path]) {
		w->capev[path] = w->capev[path] ? 2 * w->capev[path] : 16;
		w->ev[path] = realloc(w->ev[path], w->capev[path] *
			sizeof(*w->ev[path]));
		if (!w->ev[path])
			abort();
	}
	e = &w->ev[path][w->nev[path]++];
	e->value = value;
	e->t0 = t0;
	e->t1 = t1;
	e->status = model_status(rc);
	e->node_inc = node_inc;
	e->batched = batched && e->status == EV_OK;
	e->action = action;
}

void
model_synced(struct world *w, int node_inc, uint64_t t0)
{
	for (int p = 0; p < w->npaths; p++)
		for (size_t i = 0; i < w->nev[p]; i++)
			if (w->ev[p][i].node_inc == node_inc &&
			    w->ev[p][i].batched && w->ev[p][i].t1 <= t0)
				w->ev[p][i].batched = 0;
}

void
model_pending(struct world *w, int path, uint64_t value, uint64_t t0,
		int node_inc, uint64_t action)
{
	model_event(w, path, value, t0, UINT64_MAX, 0, node_inc, 0, action);
	/* An exclusive mount (S3) ships what it writes whether or not an
	 * fsync came: the bytes may be in the tree at any time. */
	w->ev[path][w->nev[path] - 1].status = w->cfg.s3 ? EV_UNKNOWN :
		EV_PENDING;
}

void
model_forget_node(struct world *w, int node_inc)
{
	for (int p = 0; p < w->npaths; p++)
		for (size_t i = 0; i < w->nev[p]; i++)
			if (w->ev[p][i].node_inc == node_inc &&
			    w->ev[p][i].status == EV_PENDING)
				w->ev[p][i].status = EV_UNKNOWN;
}

void
model_published_all(struct world *w, int node_inc)
{
	/* Unknown, not sure: a write under way when the sync ran may be
	 * in it or not. */
	for (int p = 0; p < w->npaths; p++)
		for (size_t i = 0; i < w->nev[p]; i++)
			if (w->ev[p][i].node_inc == node_inc &&
			    w->ev[p][i].status == EV_PENDING)
				w->ev[p][i].status = EV_UNKNOWN;
}

void
model_inflight(struct world *w, const struct action *a, uint64_t h_value,
		int h_path, int node_inc)
{
	uint64_t t0 = sim_now();

	if (a->kind != A_OP)
		return;
	switch (a->op) {
	case OP_MKDIR:
		model_event(w, a->path, V_DIR, t0, t0, -EIO, node_inc, 0,
			a->id);
		break;
	case OP_RMDIR:
	case OP_UNLINK:
		model_event(w, a->path, V_ABSENT, t0, t0, -EIO, node_inc, 0,
			a->id);
		break;
	case OP_RENAME:
		model_event(w, a->path, V_ABSENT, t0, t0, -EIO, node_inc, 0,
			a->id);
		model_event(w, a->path2, V_ANY, t0, t0, -EIO, node_inc, 0,
			a->id);
		break;
	case OP_CREATE:
	case OP_WRITE:
		model_event(w, a->path, V_EMPTY, t0, t0, -EIO, node_inc, 0,
			a->id);
		model_event(w, a->path, V_ID(a->id), t0, t0, -EIO, node_inc,
			0, a->id);
		break;
	case OP_HOPEN:
		model_event(w, a->path, V_EMPTY, t0, t0, -EIO, node_inc, 0,
			a->id);
		break;
	case OP_HWRITE:
	case OP_HFSYNC:
	case OP_HCLOSE:
		if (h_path >= 0)
			model_event(w, h_path, a->op == OP_HWRITE ?
				V_ID(a->id) : h_value, t0, t0, -EIO, node_inc,
				0, a->id);
		break;
	}
}

static int
sure(const struct event *e)
{
	return e->status == EV_OK && !e->batched;
}

static const char *
vtext(uint64_t v, char *buf, size_t size)
{
	switch (v) {
	case V_ABSENT:
		return "absent";
	case V_EMPTY:
		return "empty";
	case V_DIR:
		return "a directory";
	case V_CORRUPT:
		return "bytes no write wrote";
	case V_ANY:
		return "a rename's";
	case V_UNREADABLE:
		return "bytes that cannot be read (EIO)";
	default:
		snprintf(buf, size, "content %" PRIu64, v - 16);
		return buf;
	}
}

int
model_check(struct world *w, int path, uint64_t value, uint64_t t0,
		uint64_t t1, char *why, size_t size)
{
	const struct event *ev = w->ev[path];
	size_t n = w->nev[path];
	struct event first = { V_ABSENT, 0, 0, EV_OK, -1, 0, 0 };
	const struct event *later = NULL;
	char b1[64], b2[64];
	int found = 0;

	for (size_t i = 0; i <= n; i++) {
		const struct event *e = i < n ? &ev[i] : &first;
		uint64_t end;
		int ok = 1;

		/* An exclusive mount (S3) ships a write as it goes, chunk
		 * by chunk, fsync or not: until an fsync answered, a write
		 * whose end is unknown may be in the tree in part, as a
		 * local file system's may after a crash. */
		if (e->value != value && e->value != V_ANY &&
		    !(w->cfg.s3 && value == V_CORRUPT && e->value >= 16 &&
		      !sure(e)))
			continue;
		if (e->status == EV_FAIL || e->status == EV_PENDING ||
		    e->t0 >= t1)
			continue;
		found = 1;
		end = sure(e) ? e->t1 : UINT64_MAX;
		for (size_t k = 0; k < n && ok; k++) {
			if (&ev[k] == e || !sure(&ev[k]))
				continue;
			if (ev[k].t0 > end && ev[k].t1 < t0) {
				ok = 0;
				later = &ev[k];
			}
		}
		if (ok)
			return 1;
	}
	{
		size_t m;

		if (!found)
			m = (size_t)snprintf(why, size, "%s holds %s, which no "
				"operation that did not fail gave it",
				w->paths[path].s, vtext(value, b1, sizeof(b1)));
		else
			m = (size_t)snprintf(why, size, "%s holds %s, but action "
				"%" PRIu64 " gave it %s after that, acknowledged "
				"at %.6f s, before this was read (at %.6f s)",
				w->paths[path].s, vtext(value, b1, sizeof(b1)),
				later ? later->action : 0, later ?
				vtext(later->value, b2, sizeof(b2)) : "?", later ?
				(double)later->t1 / 1e9 : 0.0, (double)t0 / 1e9);
		/* Its history, the last changes first. */
		for (size_t i = n; i-- > 0 && m + 80 < size && n - i <= 12;) {
			static const char *const st[] = { "ok", "failed",
				"unknown", "pending" };

			m += (size_t)snprintf(why + m, size - m, "; action %"
				PRIu64 " %s %s (%.6f-%.6f s)%s", ev[i].action,
				st[ev[i].status], vtext(ev[i].value, b1,
				sizeof(b1)), (double)ev[i].t0 / 1e9,
				ev[i].t1 == UINT64_MAX ? -1.0 :
				(double)ev[i].t1 / 1e9, ev[i].batched ?
				" batched" : "");
		}
	}
	return 0;
}
