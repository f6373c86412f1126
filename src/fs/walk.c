/* SPDX-License-Identifier: MIT */
/*
 * walk.c - shared mode: an open that answers ESTALE so that the kernel
 * walks the path again, and that walk (doc/design.md, "The kernel's
 * caches on a shared mount").
 *
 * Another node may have changed a file, or taken one of its names, after
 * this node's kernel last looked it up: an open may then have come
 * through a gone name, or with an old size (copy_file_range and reads
 * trust the kernel's).  Such an open answers ESTALE, and the kernel walks
 * the path again with LOOKUP_REVAL, in the same thread, every name looked
 * up, and opens what it finds.  It walks again only once: a second
 * ESTALE would reach the caller.  The kernel names the thread in every
 * request (its id, not its process's), so the walk again is known by it:
 * the open that ends it goes through (a pass no other thread's lookup or
 * open can take).
 *
 * And it must open the version its lookup brought the size of: another
 * node's record applied between that lookup and the open would give the
 * open a version longer or shorter than the kernel's size (a reader got
 * the new version's first bytes, the old version's length).  So the walk
 * again of a read-only open pins the tree: from its first lookup to its
 * open, no other node's record is applied here (applies wait, for
 * WALK_PASS_NS at most).  The open then keeps the version it opened, as
 * every open does, when the next record comes.  A write open's walk pins
 * nothing: its lease (which may need the log applied) decides what it
 * may write.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "src/base/clock.h"
#include "src/base/sync.h"
#include "src/store_int.h"

/* A pass is for the walk again that follows the ESTALE at once: one that
 * brought no open within this long after its last lookup (its walk ended
 * elsewhere: a directory, a permission) is dropped, and applies wait for
 * a pin no longer than this. */
#define WALK_PASS_NS	1000000000ull

/* @tid's slot, or NULL (walk_mu held). */
static struct objfs_walk *
walk_find(struct objfs_store *s, int32_t tid)
{
	for (size_t i = 0; i < OBJFS_WALK_SLOTS; i++)
		if (s->walk[i].tid == tid)
			return &s->walk[i];
	return NULL;
}

/* Free @w (walk_mu held), and wake applies that waited for its pin. */
static void
walk_free(struct objfs_store *s, struct objfs_walk *w)
{
	if (w->pin && w->looked)
		pthread_cond_broadcast(&s->walk_cv);
	if (w->tid)
		atomic_fetch_sub(&s->walk_used, 1);
	w->tid = 0;
	w->ns = 0;
	w->looked = w->pin = 0;
}

void
objfs_walk_init(struct objfs_store *s)
{
	/* Neither fails on glibc (as the store's other locks, unchecked). */
	pthread_mutex_init(&s->walk_mu, NULL);
	(void)objfs_cond_init(&s->walk_cv);
}

void
objfs_walk_destroy(struct objfs_store *s)
{
	pthread_cond_destroy(&s->walk_cv);
	pthread_mutex_destroy(&s->walk_mu);
}

void
objfs_walk_estale(struct objfs_store *s, int32_t tid, int flags)
{
	struct objfs_walk *w;

	if (!s->shared || tid <= 0)
		return;	/* a caller the kernel could not name: no pass */
	pthread_mutex_lock(&s->walk_mu);
	w = walk_find(s, tid);
	/* Else a free slot, or the one used longest ago: more threads than
	 * slots walking again at one moment lose the oldest pass. */
	if (!w) {
		w = &s->walk[0];
		for (size_t i = 1; i < OBJFS_WALK_SLOTS; i++)
			if (s->walk[i].ns < w->ns)
				w = &s->walk[i];
	}
	walk_free(s, w);
	atomic_fetch_add(&s->walk_used, 1);
	w->tid = tid;
	w->ns = objfs_mono_ns();
	w->pin = (flags & (O_ACCMODE | O_CREAT | O_TRUNC)) == O_RDONLY;
	pthread_mutex_unlock(&s->walk_mu);
}

int
objfs_walk_lookup(struct objfs_store *s, int32_t tid)
{
	struct objfs_walk *w;

	if (!s->shared || tid <= 0 || !atomic_load(&s->walk_used))
		return 0;
	pthread_mutex_lock(&s->walk_mu);
	w = walk_find(s, tid);
	if (w) {
		w->looked = 1;
		w->ns = objfs_mono_ns();
		/* An apply under way ends before the name is read: none
		 * starts after (walk_apply_begin). */
		while (w->pin && s->walk_applying)
			pthread_cond_wait(&s->walk_cv, &s->walk_mu);
	}
	pthread_mutex_unlock(&s->walk_mu);
	return w != NULL;
}

void
objfs_walk_unpin(struct objfs_store *s, int32_t tid)
{
	struct objfs_walk *w;

	if (!s->shared || tid <= 0 || !atomic_load(&s->walk_used))
		return;
	pthread_mutex_lock(&s->walk_mu);
	w = walk_find(s, tid);
	if (w && w->looked) {
		if (w->pin)
			pthread_cond_broadcast(&s->walk_cv);
		w->looked = 0;
	}
	pthread_mutex_unlock(&s->walk_mu);
}

void
objfs_walk_lookup_end(struct objfs_store *s, int32_t tid, int rc)
{
	if (rc < 0 && s->shared && tid > 0)	/* no open follows */
		objfs_walk_done(s, tid);
}

int
objfs_walk_take(struct objfs_store *s, int32_t tid)
{
	struct objfs_walk *w;
	int pass = 0;

	if (!s->shared || tid <= 0 || !atomic_load(&s->walk_used))
		return 0;
	pthread_mutex_lock(&s->walk_mu);
	w = walk_find(s, tid);
	if (w) {
		pass = w->looked && objfs_mono_ns() < w->ns + WALK_PASS_NS;
		if (!pass)	/* no walk again came (/proc/PID/fd) */
			walk_free(s, w);
		else
			atomic_fetch_add(&s->walk_passes, 1);
	}
	pthread_mutex_unlock(&s->walk_mu);
	return pass;
}

void
objfs_walk_done(struct objfs_store *s, int32_t tid)
{
	struct objfs_walk *w;

	if (!atomic_load(&s->walk_used))
		return;
	pthread_mutex_lock(&s->walk_mu);
	w = walk_find(s, tid);
	if (w)
		walk_free(s, w);
	pthread_mutex_unlock(&s->walk_mu);
}

void
objfs_walk_apply_begin(struct objfs_store *s)
{
	pthread_mutex_lock(&s->walk_mu);
	for (;;) {
		uint64_t now = objfs_mono_ns(), until = 0;

		for (size_t i = 0; i < OBJFS_WALK_SLOTS; i++) {
			struct objfs_walk *w = &s->walk[i];

			if (w->tid && w->pin && w->looked &&
			    now < w->ns + WALK_PASS_NS &&
			    w->ns + WALK_PASS_NS > until)
				until = w->ns + WALK_PASS_NS;
		}
		if (!until)
			break;
		atomic_fetch_add(&s->walk_waits, 1);
		objfs_cond_wait_ms(&s->walk_cv, &s->walk_mu,
				(unsigned)((until - now) / 1000000u) + 1);
	}
	s->walk_applying++;
	pthread_mutex_unlock(&s->walk_mu);
}

void
objfs_walk_apply_end(struct objfs_store *s)
{
	pthread_mutex_lock(&s->walk_mu);
	s->walk_applying--;
	pthread_cond_broadcast(&s->walk_cv);
	pthread_mutex_unlock(&s->walk_mu);
}

/*
 * Shared mode: another node changed @ip (locked) or took a name of it
 * since the kernel last looked it up, and the kernel may not know yet:
 * -ESTALE.  Not for the open of a walk again (@pass, objfs_walk_take);
 * nor twice for one change (an open through /proc/PID/fd names no path,
 * and the kernel's second try of it looks nothing up); @by_inode: the
 * kernel's own open of an open file.
 */
static int
walk_again(struct objfs_store *s, struct objfs_inode *ip, int by_inode,
		int pass)
{
	if (!s->shared || by_inode || pass ||
	    ip->change_gen <= ip->entry_gen ||
	    ip->estale_change == ip->change_gen)
		return 0;
	ip->estale_change = ip->change_gen;
	return -ESTALE;
}

int
objfs_walk_open(struct objfs_store *s, struct objfs_inode *ip, int flags,
		int32_t tid, int by_inode, int pass)
{
	int rc;

	objfs_inode_assert_locked(ip);
	/* Shared mode: another node published a new version while this
	 * one had the file open.  The opens may be closed already, their
	 * RELEASE on its way after close() returned: a moment for them, so
	 * that this open finds the new version (an open that stays keeps
	 * the old one for everybody here). */
	for (int i = 0; s->shared && ip->detached && ip->nopen && i < 50; i++) {
		struct timespec ts = { 0, 10 * 1000000L };

		objfs_inode_unlock(ip);
		nanosleep(&ts, NULL);
		objfs_inode_lock(ip);
	}
	if (ip->gone)
		rc = s->shared && !ip->nopen && !pass ? -ESTALE : -ENOENT;
	else
		rc = walk_again(s, ip, by_inode, pass);
	if (rc == -ESTALE)
		objfs_walk_estale(s, tid, flags);
	return rc;
}
