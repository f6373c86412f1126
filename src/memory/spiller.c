/* SPDX-License-Identifier: MIT */
/*
 * spiller.c - keeps the arena below its watermarks, lets writers wait for
 * room instead of failing, and restores chunks ahead of readers.
 *
 * The spiller thread sleeps until arena use passes the high watermark or a
 * writer finds no free block; then it evicts until use is at the low
 * watermark and (if writers wait) a whole chunk is free.  Victims come
 * from the arena's clock (an LRU approximation over every block tagged
 * with its owner), clean chunks first: dropping a chunk whose disk copy is
 * current costs no I/O.  Only when no clean chunk is cold does it choose
 * dirty ones, write them out (spiller_ops.c, writeout.c, so the index never
 * points at bytes that fail their checksum) and drop them.  Chunks of
 * open files, and of the file being written, are eligible, which is how a
 * file larger than the arena streams through it.
 *
 * Back-pressure: a writer that finds no block releases its inode lock and
 * waits for one spiller pass.  If that pass freed nothing (the backing
 * directory is full, say) the write fails with ENOSPC; everything written
 * before stays readable.  Writers never hold an inode lock while they
 * wait, and the spiller takes inode locks only with no other lock held,
 * so the two cannot deadlock.
 *
 * Restoring: the restore thread serves a small ring of (inode, chunk)
 * requests made on open and by sequential reads; it restores only while
 * arena use stays below the low watermark, so restores never take the
 * room writers and the spiller need.  Above it, the same thread reads
 * chunks ahead of a sequential reader into the inode's read-ahead slots
 * (outside the arena; read.c), so the disk works while the reader
 * copies.
 *
 * Locking (the hierarchy is written once, in store_int.h): spill_lock
 * guards the fields marked so below; under it only the arena's lock is
 * taken (its use is read), and it is never held across a call into the
 * file layer (struct objfs_spiller_ops) or I/O.  The module sees only
 * the arena and those calls (spiller.h).
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/memory/arena.h"
#include "src/base/log.h"
#include "src/base/sync.h"
#include "src/memory/spiller.h"

#define BATCH		OBJFS_SPILLER_BATCH
#define RESTORE_AHEAD	4
#define RQ_SIZE		64
#define MAX_RESTORE_THREADS	8

struct objfs_spiller {
	struct objfs_arena *arena;
	const struct objfs_spiller_ops *ops;
	void *ctx;
	uint32_t chunk_size;
	uint64_t high_bytes, low_bytes;

	pthread_t spill_thread;
	pthread_mutex_t spill_lock;
	pthread_cond_t spill_cv;	/* wakes the spiller */
	pthread_cond_t space_cv;	/* wakes writers waiting for space */
	_Atomic int spill_busy;		/* the spiller is in a pass */
	int spill_stop;			/* protected by spill_lock */
	unsigned waiters;		/* protected by spill_lock */
	uint64_t spill_gen;		/* protected by spill_lock: passes */
	int spill_stuck;		/* protected by spill_lock: last pass
					 * freed nothing */
	uint64_t pass_id;		/* protected by spill_lock: passes
					 * started */
	uint64_t stuck_pass;		/* protected by spill_lock: the pass
					 * spill_stuck is about */
	int spill_err;			/* protected by spill_lock: its error */
	_Atomic uint64_t dropped_bytes, write_waits;

	/* Restore-ahead and read-ahead requests, a small ring: slot < 0
	 * restores chunks from idx into the arena, slot >= 0 loads chunk
	 * idx into that read-ahead slot (request gen). */
	pthread_t restore_thread[MAX_RESTORE_THREADS];
	unsigned restore_threads;	/* started */
	pthread_cond_t restore_cv;	/* with spill_lock */
	struct objfs_rq {
		uint64_t ino, idx, gen;
		int slot;
	} rq[RQ_SIZE];			/* protected by spill_lock */
	unsigned rq_head, rq_len;	/* protected by spill_lock */
};

static int
victim_cmp(const void *a, const void *b)
{
	const struct objfs_arena_victim *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int
need_room(struct objfs_spiller *s, int waiters)
{
	struct objfs_arena_stats st;

	objfs_arena_get_stats(s->arena, &st);
	if (st.used > s->low_bytes)
		return 1;
	return waiters && st.largest_free < s->chunk_size;
}

/* Evict one batch; returns bytes freed, and the first write error. */
static uint64_t
evict_batch(struct objfs_spiller *s, int *err)
{
	struct objfs_arena_victim v[BATCH];
	uint64_t freed = 0;
	int n, i, j;

	n = objfs_arena_clock(s->arena, 1, v, BATCH);
	/* Nothing clean: per-object files nobody uses cost nothing to
	 * drop either, before writing dirty chunks out. */
	if (n == 0 && s->ops->shed &&
	    (freed = s->ops->shed(s->ctx, (uint64_t)BATCH * s->chunk_size))) {
		atomic_fetch_add(&s->dropped_bytes, freed);
		return freed;
	}
	if (n == 0)
		n = objfs_arena_clock(s->arena, 0, v, BATCH / 4);
	qsort(v, (size_t)n, sizeof(v[0]), victim_cmp);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && v[j].ino == v[i].ino; j++)
			;
		freed += s->ops->evict(s->ctx, v + i, j - i, err);
	}
	atomic_fetch_add(&s->dropped_bytes, freed);
	return freed;
}

static void *
spill_main(void *arg)
{
	struct objfs_spiller *s = arg;
	uint64_t freed, f;
	int err, waiters, stop, reclaimed;

	pthread_mutex_lock(&s->spill_lock);
	while (!s->spill_stop) {
		struct objfs_arena_stats st;

		objfs_arena_get_stats(s->arena, &st);
		if (st.used <= s->high_bytes && s->waiters == 0) {
			objfs_cond_wait_ms(&s->spill_cv, &s->spill_lock, 1000);
			continue;
		}
		atomic_store(&s->spill_busy, 1);
		s->pass_id++;
		pthread_mutex_unlock(&s->spill_lock);
		freed = 0;
		err = 0;
		reclaimed = 0;
		do {
			f = evict_batch(s, &err);
			if (!f && err == -ENOSPC && !reclaimed) {
				/* A full disk: space that deletes and
				 * rewrites freed may be waiting to be given
				 * back.  Take it now, and try again. */
				reclaimed = s->ops->reclaim(s->ctx);
				if (reclaimed) {
					err = 0;
					f = evict_batch(s, &err);
				}
			}
			freed += f;
			pthread_mutex_lock(&s->spill_lock);
			waiters = (int)s->waiters;
			stop = s->spill_stop;
			if (f && waiters) {
				/* Let waiting writers go as soon as there
				 * is room, not only at the end of the pass. */
				s->spill_gen++;
				s->spill_stuck = 0;
				pthread_cond_broadcast(&s->space_cv);
			}
			pthread_mutex_unlock(&s->spill_lock);
		} while (f && !stop && need_room(s, waiters));
		pthread_mutex_lock(&s->spill_lock);
		atomic_store(&s->spill_busy, 0);
		s->spill_gen++;
		/* Stuck only when writing out failed: a pass that freed
		 * nothing because its victims changed under it (truncated,
		 * unlinked, rewritten meanwhile) is no verdict, and the
		 * writers try again; they fail with ENOSPC only when the
		 * backing filesystem refuses (a short write under a busy
		 * 4 MiB arena, test_stress under valgrind, came from it). */
		s->spill_stuck = freed == 0 && err != 0;
		s->stuck_pass = s->pass_id;
		s->spill_err = err;
		pthread_cond_broadcast(&s->space_cv);
		if (freed == 0) {
			/* Nothing could be evicted (all hot, or the backing
			 * directory refuses writes): do not spin. */
			objfs_cond_wait_ms(&s->spill_cv, &s->spill_lock,
				s->waiters ? 1 : 100);
		}
	}
	pthread_mutex_unlock(&s->spill_lock);
	return NULL;
}

void
objfs_spiller_kick(struct objfs_spiller *s)
{
	if (!s || objfs_arena_used(s->arena) <= s->high_bytes ||
	    atomic_load_explicit(&s->spill_busy, memory_order_relaxed))
		return;
	pthread_mutex_lock(&s->spill_lock);
	pthread_cond_signal(&s->spill_cv);
	pthread_mutex_unlock(&s->spill_lock);
}

int
objfs_spiller_wait_space(struct objfs_spiller *s)
{
	uint64_t gen, first;
	int rc = 0;

	if (!s)
		return -ENOSPC;
	atomic_fetch_add(&s->write_waits, 1);
	pthread_mutex_lock(&s->spill_lock);
	/* Only a pass that starts after this call may say "nothing can be
	 * freed": one already under way may have failed for a reason (a full
	 * disk, say) that is gone now. */
	first = s->pass_id + 1;
	s->waiters++;
	for (;;) {
		gen = s->spill_gen;
		pthread_cond_signal(&s->spill_cv);
		while (s->spill_gen == gen && !s->spill_stop)
			pthread_cond_wait(&s->space_cv, &s->spill_lock);
		if (s->spill_stop) {
			rc = -ENOSPC;
			break;
		}
		if (!s->spill_stuck)
			break;
		if (s->stuck_pass >= first) {
			rc = s->spill_err == -ENOSPC || s->spill_err == 0 ?
				-ENOSPC : s->spill_err;
			break;
		}
	}
	s->waiters--;
	pthread_mutex_unlock(&s->spill_lock);
	return rc;
}

/* Queue @r for the restore threads (spill_lock held); -EAGAIN when the
 * ring is full or the threads are stopping. */
static int
rq_push_locked(struct objfs_spiller *s, const struct objfs_rq *r)
{
	if (s->rq_len >= RQ_SIZE || s->spill_stop)
		return -EAGAIN;
	s->rq[(s->rq_head + s->rq_len) % RQ_SIZE] = *r;
	s->rq_len++;
	pthread_cond_signal(&s->restore_cv);
	return 0;
}

void
objfs_spiller_restore_ahead(struct objfs_spiller *s, uint64_t ino,
		uint64_t idx)
{
	const struct objfs_rq r = { .ino = ino, .idx = idx, .slot = -1 };
	const struct objfs_rq *prev;

	if (!s)
		return;
	pthread_mutex_lock(&s->spill_lock);
	prev = &s->rq[(s->rq_head + s->rq_len + RQ_SIZE - 1) % RQ_SIZE];
	/* A repeat of the last request adds nothing. */
	if (s->rq_len == 0 || prev->ino != ino || prev->idx != idx ||
	    prev->slot >= 0)
		(void)rq_push_locked(s, &r);
	pthread_mutex_unlock(&s->spill_lock);
}

int
objfs_spiller_read_ahead(struct objfs_spiller *s, uint64_t ino, uint64_t idx,
		int slot, uint64_t gen)
{
	const struct objfs_rq r = { .ino = ino, .idx = idx, .gen = gen,
				    .slot = slot };
	int rc;

	if (!s)
		return -EAGAIN;
	pthread_mutex_lock(&s->spill_lock);
	rc = rq_push_locked(s, &r);
	pthread_mutex_unlock(&s->spill_lock);
	return rc;
}

static void *
restore_main(void *arg)
{
	struct objfs_spiller *s = arg;
	uint64_t ino, idx, gen;
	int slot;

	pthread_mutex_lock(&s->spill_lock);
	while (!s->spill_stop) {
		if (s->rq_len == 0) {
			pthread_cond_wait(&s->restore_cv, &s->spill_lock);
			continue;
		}
		ino = s->rq[s->rq_head].ino;
		idx = s->rq[s->rq_head].idx;
		slot = s->rq[s->rq_head].slot;
		gen = s->rq[s->rq_head].gen;
		s->rq_head = (s->rq_head + 1) % RQ_SIZE;
		s->rq_len--;
		pthread_mutex_unlock(&s->spill_lock);
		if (slot >= 0)
			s->ops->read_ahead(s->ctx, ino, idx, slot, gen);
		else
			s->ops->restore(s->ctx, ino, idx, RESTORE_AHEAD);
		pthread_mutex_lock(&s->spill_lock);
	}
	pthread_mutex_unlock(&s->spill_lock);
	return NULL;
}

static void
destroy_sync(struct objfs_spiller *s)
{
	pthread_cond_destroy(&s->restore_cv);
	pthread_cond_destroy(&s->space_cv);
	pthread_cond_destroy(&s->spill_cv);
	pthread_mutex_destroy(&s->spill_lock);
}

int
objfs_spiller_start(const struct objfs_spiller_config *cfg,
		struct objfs_spiller **out)
{
	struct objfs_spiller *s;
	unsigned want = cfg->restore_threads;
	int rc;

	if (want < 1 || want > MAX_RESTORE_THREADS)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->arena = cfg->arena;
	s->ops = cfg->ops;
	s->ctx = cfg->ctx;
	s->chunk_size = cfg->chunk_size;
	s->high_bytes = cfg->high_bytes;
	s->low_bytes = cfg->low_bytes;
	rc = pthread_mutex_init(&s->spill_lock, NULL);
	if (rc)
		goto out_free;
	if ((rc = objfs_cond_init(&s->spill_cv)) != 0)
		goto out_lock;
	if ((rc = objfs_cond_init(&s->space_cv)) != 0)
		goto out_spill_cv;
	if ((rc = objfs_cond_init(&s->restore_cv)) != 0)
		goto out_space_cv;
	/* Before the threads start: what they call may read it. */
	*out = s;
	rc = pthread_create(&s->spill_thread, NULL, spill_main, s);
	if (rc) {
		*out = NULL;
		destroy_sync(s);
		goto out_free;
	}
	for (s->restore_threads = 0; s->restore_threads < want;
	     s->restore_threads++) {
		rc = pthread_create(&s->restore_thread[s->restore_threads],
				NULL, restore_main, s);
		if (rc) {
			objfs_spiller_stop(s);
			*out = NULL;
			return -rc;
		}
	}
	return 0;

out_space_cv:
	pthread_cond_destroy(&s->space_cv);
out_spill_cv:
	pthread_cond_destroy(&s->spill_cv);
out_lock:
	pthread_mutex_destroy(&s->spill_lock);
out_free:
	free(s);
	return -rc;
}

void
objfs_spiller_stop(struct objfs_spiller *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->spill_lock);
	s->spill_stop = 1;
	pthread_cond_broadcast(&s->spill_cv);
	pthread_cond_broadcast(&s->space_cv);
	pthread_cond_broadcast(&s->restore_cv);
	pthread_mutex_unlock(&s->spill_lock);
	pthread_join(s->spill_thread, NULL);
	while (s->restore_threads > 0)
		pthread_join(s->restore_thread[--s->restore_threads], NULL);
	destroy_sync(s);
	free(s);
}

void
objfs_spiller_get_stats(struct objfs_spiller *s,
		struct objfs_spiller_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!s)
		return;
	st->dropped_bytes = atomic_load(&s->dropped_bytes);
	st->write_waits = atomic_load(&s->write_waits);
	st->high_bytes = s->high_bytes;
	st->low_bytes = s->low_bytes;
}
