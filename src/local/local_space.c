/* SPDX-License-Identifier: MIT */
/*
 * local_space.c - the backing directory's space that waits to be given back
 * (local_int.h): the slots a durable commit freed and the backing files of
 * deleted objects (the deferred list, under defer_lock), and, after an
 * unclean stop, the slots no record points at.  A live object's slots are
 * given back under its lock, taken through the inode table, and never one
 * read without the lock meanwhile (local_reading).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/base/csum.h"
#include "src/base/log.h"
#include "src/base/sync.h"
#include "src/local/local_int.h"

/* Put @slot of @ip on the list of space to give back once commit @seq is
 * durable (it stays taken meanwhile). */
void
local_defer_slot(struct objfs_store *s, uint64_t ino, uint64_t slot, uint64_t seq)
{
	pthread_mutex_lock(&s->defer_lock);
	if (s->ndefer == s->defer_cap) {
		size_t n = s->defer_cap ? 2 * s->defer_cap : 256;
		struct objfs_deferred *d = realloc(s->defer, n * sizeof(*d));

		if (!d) {
			/* The slot stays taken (until the inode leaves
			 * memory): space, not bytes, is what is lost. */
			pthread_mutex_unlock(&s->defer_lock);
			objfs_log(OBJFS_LOG_WARNING, "inode %" PRIu64 ": out of "
				"memory: slot %" PRIu64 " not given back", ino,
				slot);
			return;
		}
		s->defer = d;
		s->defer_cap = n;
	}
	s->defer[s->ndefer++] = (struct objfs_deferred){ ino, slot, seq };
	pthread_mutex_unlock(&s->defer_lock);
}

int
local_take_deferred(struct objfs_store *s, struct objfs_inode *ip)
{
	int rc = 0;

	pthread_mutex_lock(&s->defer_lock);
	for (size_t i = 0; rc == 0 && i < s->ndefer; i++)
		if (s->defer[i].ino == ip->ino &&
		    s->defer[i].slot != OBJFS_WHOLE_FILE &&
		    !objfs_slots_taken(&ip->slots, s->defer[i].slot))
			rc = objfs_slots_take(&ip->slots, s->defer[i].slot);
	pthread_mutex_unlock(&s->defer_lock);
	return rc;
}

/* Drop what is deferred for @ino: it is going as a whole. */
void
local_forget_deferred(struct objfs_store *s, uint64_t ino)
{
	size_t k = 0;

	pthread_mutex_lock(&s->defer_lock);
	for (size_t i = 0; i < s->ndefer; i++)
		if (s->defer[i].ino != ino)
			s->defer[k++] = s->defer[i];
	s->ndefer = k;
	pthread_mutex_unlock(&s->defer_lock);
}

/* ---- giving deferred space back ---------------------------------------- */

static int
defer_cmp(const void *a, const void *b)
{
	const struct objfs_deferred *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Take @d[0..n) off the list (they are done). */
static void
undefer(struct objfs_store *s, const struct objfs_deferred *d, size_t n)
{
	size_t k = 0;

	pthread_mutex_lock(&s->defer_lock);
	for (size_t i = 0; i < s->ndefer; i++) {
		int done = 0;

		for (size_t j = 0; j < n && !done; j++)
			done = s->defer[i].ino == d[j].ino &&
				s->defer[i].slot == d[j].slot &&
				s->defer[i].seq == d[j].seq;
		if (!done)
			s->defer[k++] = s->defer[i];
	}
	s->ndefer = k;
	pthread_mutex_unlock(&s->defer_lock);
}


/* Shorten @ip's backing file to the end of its last slot in use (whole
 * slots: an older record of that slot, longer than the current one, may
 * still be the durable one). */
static void
shrink_file(struct objfs_store *s, struct objfs_inode *ip, int fd)
{
	uint64_t end = objfs_slots_end(&ip->slots) << s->chunk_shift;
	struct stat st;

	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > end &&
	    ftruncate(fd, (off_t)end) < 0)
		objfs_log(OBJFS_LOG_WARNING, "inode %" PRIu64
			": cannot shorten the backing file: %m", ip->ino);
}

/* Punch @d[0..n) in the backing file of an object that is deleted: its
 * file stayed for copies other objects share (local_dedup.c), and these slots
 * no record needs any more.  Nothing else may change in that file: no
 * slot map of the deleted object knows which of its slots are shared, so
 * it is never shortened (shrink_file) here. */
static void
punch_gone(struct objfs_store *s, struct objfs_deferred *d, size_t n)
{
	int fd = objfs_backing_file(s->backing, d[0].ino, 0, NULL);

	for (size_t i = 0; fd >= 0 && i < n; i++)
		(void)objfs_backing_punch(fd, d[i].slot, s->chunk_size);
	if (fd >= 0)
		close(fd);
	undefer(s, d, n);
}

/* Give back @d[0..n), the slots of one object. */
static void
release_slots(struct objfs_store *s, struct objfs_deferred *d, size_t n)
{
	struct objfs_inode *ip;
	size_t k = 0;
	int fd;

	if (s->inode_get(s, d[0].ino, &ip) < 0) {
		punch_gone(s, d, n);
		return;
	}
	objfs_inode_lock(ip);
	if (ip->gone) {
		/* Deleted, yet still known (a lookup or an O_PATH descriptor
		 * holds it): its chunks and slot map went at the deletion. */
		objfs_inode_unlock(ip);
		s->inode_put(s, ip);
		punch_gone(s, d, n);
		return;
	}
	fd = local_backing_fd(s, ip, 0, NULL);
	for (size_t i = 0; i < n; i++) {
		/* Keep what a read-ahead is reading, until next time. */
		if (local_reading(ip, d[i].slot))
			continue;
		if (fd >= 0 && objfs_backing_punch(fd, d[i].slot,
				s->chunk_size) < 0 && errno != EOPNOTSUPP)
			objfs_log(OBJFS_LOG_WARNING, "inode %" PRIu64 ": cannot "
				"give slot %" PRIu64 " back: %m", ip->ino,
				d[i].slot);
		objfs_slots_put(&ip->slots, d[i].slot);
		d[k++] = d[i];
	}
	if (fd >= 0 && k)
		shrink_file(s, ip, fd);
	objfs_inode_unlock(ip);
	s->inode_put(s, ip);
	undefer(s, d, k);
}

/* Remove the backing file of a deleted object, then its tombstone. */
static void
release_file(struct objfs_store *s, const struct objfs_deferred *d)
{
	struct objfs_meta_txn *t;
	int rc = objfs_backing_remove(s->backing, d->ino);

	if (rc < 0) {
		objfs_log(OBJFS_LOG_WARNING, "inode %" PRIu64 ": cannot remove "
			"its backing file: %s", d->ino, strerror(-rc));
		return;		/* try again later */
	}
	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (rc == 0) {
		rc = objfs_meta_deleted_del(t, d->ino);
		rc = objfs_commit_or_abort(t, rc, NULL);
	}
	if (rc == 0)
		undefer(s, d, 1);
}

/* A test's wait between the list's copy and its use (NULL: none). */
void (*objfs_test_give_back_copied)(struct objfs_store *s);

void
local_give_back(struct objfs_store *s, int all)
{
	uint64_t durable;
	struct objfs_deferred *d;
	size_t n = 0, i, j;

	/* One give-back at a time, each copying the list under give_mu:
	 * two at once (the maintenance thread's and a reclaim on ENOSPC)
	 * each copied an entry, the first gave its slot back, a write-out
	 * took the slot again, and the second punched the new copy
	 * (issue 46's review: data lost). */
	pthread_mutex_lock(&s->give_mu);
	durable = objfs_meta_durable_seq(s->meta);
	pthread_mutex_lock(&s->defer_lock);
	d = s->ndefer ? malloc(s->ndefer * sizeof(*d)) : NULL;
	for (i = 0; d && i < s->ndefer; i++)
		if (all || s->defer[i].seq <= durable)
			d[n++] = s->defer[i];
	pthread_mutex_unlock(&s->defer_lock);
	if (!n) {
		free(d);
		pthread_mutex_unlock(&s->give_mu);
		return;
	}
	if (objfs_test_give_back_copied)
		objfs_test_give_back_copied(s);
	qsort(d, n, sizeof(*d), defer_cmp);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && d[j].ino == d[i].ino; j++)
			;
		if (d[j - 1].slot == OBJFS_WHOLE_FILE)
			release_file(s, &d[j - 1]);	/* sorts last */
		else
			release_slots(s, d + i, j - i);
	}
	free(d);
	pthread_mutex_unlock(&s->give_mu);
}

int
local_reclaim(struct objfs_store *s)
{
	size_t n;

	pthread_mutex_lock(&s->defer_lock);
	n = s->ndefer;
	pthread_mutex_unlock(&s->defer_lock);
	if (!n)
		return 0;
	if (objfs_meta_sync(s->meta) == 0)
		local_give_back(s, 0);
	return 1;
}

/* ---- after an unclean stop: space no record points at ------------------ */

struct trim_ctx {
	struct objfs_slotmap slots;
	uint64_t ino;
};

/* A shared copy in the file stays, whoever's records point at it. */
static int
trim_share(void *arg, uint64_t slot, uint64_t n)
{
	struct trim_ctx *t = arg;

	(void)n;
	return objfs_slots_take(&t->slots, slot) == -ENOMEM ? -ENOMEM : 0;
}

static int
trim_take(void *arg, uint64_t idx, const struct objfs_chunk_rec *r)
{
	struct trim_ctx *t = arg;

	if (!r)
		return 0;
	if (r->home && r->home != t->ino)
		return 0;	/* in another object's file */
	if (objfs_slots_take(&t->slots, r->slot) == -ENOMEM ||
	    (r->has_alt && objfs_slots_take(&t->slots, r->alt) == -ENOMEM))
		return -ENOMEM;
	return 0;
}

/* Punch the slots of @ino's backing file that no record points at. */
static uint64_t
trim_file(struct objfs_store *s, uint64_t ino)
{
	struct trim_ctx t;
	struct objfs_meta_txn *txn;
	uint64_t freed = 0, end;
	off_t data, hole;
	int fd, rc;

	objfs_slots_init(&t.slots);
	t.ino = ino;
	rc = objfs_meta_begin(s->meta, 0, &txn);
	if (rc < 0)
		return 0;
	rc = objfs_meta_chunk_list(txn, ino, trim_take, &t);
	if (rc == 0)
		rc = objfs_meta_share_list(txn, ino, trim_share, &t);
	objfs_meta_abort(txn);
	fd = rc == 0 ? objfs_backing_file(s->backing, ino, 0, NULL) : -1;
	for (data = 0; fd >= 0 && (data = lseek(fd, data, SEEK_DATA)) >= 0;
	     data = hole) {
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			break;
		for (uint64_t sl = (uint64_t)data >> s->chunk_shift;
		     (sl << s->chunk_shift) < (uint64_t)hole; sl++) {
			if (objfs_slots_taken(&t.slots, sl))
				continue;
			if (objfs_backing_punch(fd, sl, s->chunk_size) == 0)
				freed += s->chunk_size;
		}
	}
	end = objfs_slots_end(&t.slots) << s->chunk_shift;
	if (fd >= 0 && lseek(fd, 0, SEEK_END) > (off_t)end &&
	    objfs_slots_end(&t.slots) == 0 && ftruncate(fd, 0) < 0)
		freed = 0;
	if (fd >= 0)
		close(fd);
	objfs_slots_fini(&t.slots);
	return freed;
}

static int
trim_one(void *arg, uint64_t ino)
{
	struct objfs_store *s = ((void **)arg)[0];
	uint64_t *freed = ((void **)arg)[1];
	struct objfs_meta_txn *t;
	struct objfs_attr a;
	int rc;

	if (objfs_meta_begin(s->meta, 0, &t) < 0)
		return 0;
	rc = objfs_meta_inode_get(t, ino, &a);
	/* A deleted object's file that stays for shared copies too. */
	if (rc == -ENOENT && objfs_data_file_shared(t, ino) == 1)
		a.mode = S_IFREG, rc = 0;
	objfs_meta_abort(t);
	if (rc == 0 && S_ISREG(a.mode))
		*freed += trim_file(s, ino);
	return 0;
}

uint64_t
local_trim(struct objfs_store *s)
{
	uint64_t freed = 0;
	void *arg[2] = { s, &freed };

	(void)objfs_backing_list(s->backing, trim_one, arg);
	return freed;
}
