/* SPDX-License-Identifier: MIT */
/*
 * inode.c - the inode table: finding, loading, counting and letting go of
 * in-memory inodes; writing their attributes through to the index; the
 * status file's node (recognised here: its inode is never got, EPERM).
 *
 * An inode is in the table while the kernel holds a lookup on it, while
 * it is open, while a request uses it (refs), or while it has bytes in
 * the arena.  When the last of those goes it is destroyed (no names
 * left) or dropped from memory.
 *
 * Locking: see store_int.h.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/base/log.h"
#include "src/base/sync.h"
#include "src/status.h"
#include "src/store_int.h"
#include "meta/meta_keys.h"

/* ---- index writes ------------------------------------------------------ */

/*
 * Begin a namespace or attribute change.  -ENOSPC means the index's disk
 * is full: the maintenance thread is woken to checkpoint and to give back
 * what deletes freed, so that space returns as soon as it can.
 */
int
objfs_store_begin_change(struct objfs_store *s, struct objfs_meta_txn **t)
{
	int rc = objfs_meta_begin(s->meta, OBJFS_META_WRITE, t);

	if (rc == -ENOSPC && s->maint_started) {
		pthread_mutex_lock(&s->maint_lock);
		pthread_cond_signal(&s->maint_cv);
		pthread_mutex_unlock(&s->maint_lock);
	}
	return rc;
}

/* ---- the status file (status.c serves its text) ---------------------- */

int
objfs_is_status_ino(uint64_t ino)
{
	return ino == OBJFS_STATUS_INO;
}

int
objfs_is_reserved_name(uint64_t parent, const char *name)
{
	return parent == OBJFS_ROOT_INO && strcmp(name, OBJFS_STATUS_NAME) == 0;
}

void
objfs_status_node_attr(struct objfs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = OBJFS_STATUS_INO;
	/* The owner's write bit lets the mount's owner set its request
	 * names (gc, catch-up) past the kernel's permission check; writes
	 * to it are refused (open_file), and the adapter lets only the
	 * owner and root act through it. */
	a->mode = S_IFREG | 0644;
	a->nlink = 1;
	a->uid = (uint32_t)getuid();
	a->gid = (uint32_t)getgid();
	objfs_attr_touch_mc(a);
	a->atime_sec = a->mtime_sec;
	a->atime_nsec = a->mtime_nsec;
}

/* ---- inode table ---------------------------------------------------- */

static size_t
bucket(const struct objfs_store *s, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) &
		(s->nbuckets - 1);
}

struct objfs_inode *
objfs_inode_find_locked(struct objfs_store *s, uint64_t ino)
{
	struct objfs_inode *ip;

	objfs_store_assert_locked(s);
	ip = s->table[bucket(s, ino)];
	while (ip && ip->ino != ino)
		ip = ip->hnext;
	return ip;
}

static void
table_grow_locked(struct objfs_store *s)
{
	size_t n = s->nbuckets * 2, old = s->nbuckets;
	struct objfs_inode **t = calloc(n, sizeof(*t)), **o = s->table;

	objfs_store_assert_locked(s);
	if (!t)
		return;		/* longer chains, still correct */
	s->table = t;
	s->nbuckets = n;
	for (size_t i = 0; i < old; i++) {
		while (o[i]) {
			struct objfs_inode *ip = o[i];
			size_t b = bucket(s, ip->ino);

			o[i] = ip->hnext;
			ip->hnext = t[b];
			t[b] = ip;
		}
	}
	free(o);
}

static void
table_remove_locked(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_inode **pp = &s->table[bucket(s, ip->ino)];

	objfs_store_assert_locked(s);
	while (*pp != ip)
		pp = &(*pp)->hnext;
	*pp = ip->hnext;
	s->count--;
}

/* Is @ino being let go (objfs_inode_put())?  A get waits for that. */
static int
releasing_locked(const struct objfs_store *s, uint64_t ino)
{
	for (const struct objfs_inode *ip = s->releasing; ip; ip = ip->hnext)
		if (ip->ino == ino)
			return 1;
	return 0;
}

static void
table_insert_locked(struct objfs_store *s, struct objfs_inode *ip)
{
	objfs_store_assert_locked(s);
	if (s->count >= s->nbuckets)
		table_grow_locked(s);
	ip->hnext = s->table[bucket(s, ip->ino)];
	s->table[bucket(s, ip->ino)] = ip;
	s->count++;
}

/* Read @ip's records from the index (ip->lock held, no other lock). */
static int
load(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_meta_txn *t;
	int rc;

	/* Shared mode: -EAGAIN, another node's record came between the
	 * two reads (objfs_data_load): both again. */
	for (int tries = 0; tries < 16; tries++) {
		rc = objfs_meta_begin(s->meta, 0, &t);
		if (rc < 0)
			return rc;
		rc = objfs_meta_inode_get(t, ip->ino, &ip->attr);
		objfs_meta_abort(t);
		if (rc == 0 && S_ISREG(ip->attr.mode))
			rc = objfs_data_load(s, ip);
		if (rc != -EAGAIN)
			break;
	}
	return rc;
}

/*
 * Find or load @ino and take a reference.  No lock held: loading reads
 * the index, which is done under the new inode's lock only, with the
 * inode already in the table (state LOADING) so that a second get of it
 * waits on that lock instead of loading it twice.
 */
int
objfs_inode_get(struct objfs_store *s, uint64_t ino, struct objfs_inode **out)
{
	struct objfs_inode *ip;
	int st;

	/* The status file is not an inode of the index: every request
	 * that gets its inode (a change, a write) is refused, unless its
	 * entry point answers for the status file first (status.h). */
	if (objfs_is_status_ino(ino))
		return -EPERM;
	objfs_store_lock(s);
	while (!(ip = objfs_inode_find_locked(s, ino)) &&
	       releasing_locked(s, ino))
		objfs_store_wait(s, &s->release_cv);
	if (ip) {
		ip->refs++;
		objfs_store_unlock(s);
		st = atomic_load(&ip->state);
		if (st == OBJFS_INODE_LOADING) {
			objfs_inode_lock(ip);	/* the loader's */
			st = atomic_load(&ip->state);
			objfs_inode_unlock(ip);
		}
		if (st < 0) {
			objfs_inode_put(s, ip);
			return st;
		}
		*out = ip;
		return 0;
	}
	ip = calloc(1, sizeof(*ip));
	if (!ip) {
		objfs_store_unlock(s);
		return -ENOMEM;
	}
	ip->ino = ino;
	ip->bfd = -1;
	ip->refs = 1;
	objfs_chunkmap_init(&ip->chunks);
	objfs_slots_init(&ip->slots);
	objfs_mutex_init(&ip->lock);
	objfs_inode_lock(ip);	/* nobody else has it yet */
	table_insert_locked(s, ip);
	objfs_store_unlock(s);
	st = load(s, ip);
	atomic_store(&ip->state, st < 0 ? st : OBJFS_INODE_READY);
	objfs_inode_unlock(ip);
	if (st < 0) {
		objfs_inode_put(s, ip);
		return st;
	}
	*out = ip;
	return 0;
}

/* Look up @parent as a directory; takes a reference (store_int.h). */
int
objfs_inode_get_dir(struct objfs_store *s, uint64_t parent,
		struct objfs_inode **out)
{
	struct objfs_inode *dp;
	struct objfs_attr a;
	int rc = objfs_inode_get(s, parent, &dp);

	if (rc < 0)
		return rc;
	objfs_inode_lock(dp);
	a = dp->attr;
	objfs_inode_unlock(dp);
	if (!S_ISDIR(a.mode))
		rc = -ENOTDIR;
	else if (a.nlink == 0)
		rc = -ENOENT;		/* removed directory */
	if (rc < 0) {
		objfs_inode_put(s, dp);
		return rc;
	}
	*out = dp;
	return 0;
}

int
objfs_inode_persist_attr(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_meta_txn *t;
	int rc;

	objfs_inode_assert_locked(ip);
	if (ip->gone) {
		ip->attr_dirty = 0;	/* nothing left to write to */
		return 0;
	}
	rc = objfs_meta_begin(s->meta, OBJFS_META_ESSENTIAL, &t);
	if (rc < 0)
		return rc;
	rc = objfs_meta_inode_put(t, &ip->attr);
	if (rc < 0) {
		objfs_meta_abort(t);
		return rc;
	}
	rc = objfs_meta_commit(t);
	if (rc == 0)
		ip->attr_dirty = 0;
	return rc;
}

struct objfs_attr
objfs_inode_attr_out(const struct objfs_inode *ip)
{
	struct objfs_attr a = ip->attr;

	a.held = S_ISREG(a.mode) ? objfs_chunkmap_held(&ip->chunks) : 0;
	return a;
}

void
objfs_inode_free(struct objfs_inode *ip)
{
	objfs_mutex_destroy(&ip->lock);
	free(ip);
}

/* Is @ino an orphan of this data directory's (unlinked while open here)? */
static int
own_orphan(struct objfs_store *s, uint64_t ino)
{
	struct objfs_meta_txn *tx;
	int rc = objfs_meta_begin(s->meta, 0, &tx);

	if (rc < 0)
		return 1;	/* as without shared mode: try */
	rc = objfs_meta_orphan_has(tx, ino);
	objfs_meta_abort(tx);
	return rc != 0;
}

/* Shared mode: the follower's list of what failed to be done at a close
 * or a destroy (publish.c, objfs_share_todo(), works it off).  Kept here,
 * below publish.c: letting an inode go may add to it. */
void
objfs_share_defer(struct objfs_store *s, uint64_t ino, int destroy)
{
	pthread_mutex_lock(&s->todo_mu);
	for (size_t i = 0; i < s->ntodo; i++)
		if (s->todo[i].ino == ino) {
			s->todo[i].destroy |= destroy;
			pthread_mutex_unlock(&s->todo_mu);
			return;
		}
	if (s->ntodo == s->captodo) {
		size_t cap = s->captodo ? 2 * s->captodo : 16;
		struct objfs_todo *v = realloc(s->todo, cap * sizeof(*v));

		if (!v) {
			pthread_mutex_unlock(&s->todo_mu);
			objfs_log(OBJFS_LOG_ERR, "inode %" PRIu64 ": out of memory "
				"to remember it; this data directory's next "
				"mount finishes it", ino);
			return;
		}
		s->todo = v;
		s->captodo = cap;
	}
	s->todo[s->ntodo++] = (struct objfs_todo){ ino, destroy };
	pthread_mutex_unlock(&s->todo_mu);
}

/*
 * Let @ip go from memory (ip->lock held, no other lock): destroy it when
 * it has no names left, else write its attributes and free its data.
 * 1 when it must stay (its attributes could not be written: the next put
 * tries again).
 */
static int
release(struct objfs_store *s, struct objfs_inode *ip)
{
	int rc;

	if (ip->attr.nlink == 0 && ip->gone) {
		objfs_data_unload(s, ip);	/* left the index at unlink */
		return 0;
	}
	if (ip->attr.nlink == 0 && s->shared && !own_orphan(s, ip->ino)) {
		/* Shared mode: another node unlinked it while it had it open
		 * there; that node removes it when it lets it go.  (Removing
		 * it here would touch a file another node holds.) */
		objfs_data_unload(s, ip);
		return 0;
	}
	if (ip->attr.nlink == 0) {
		rc = objfs_data_destroy(s, ip);
		if (rc < 0 && s->shared) {
			/* The log moved on, or the cluster did not answer:
			 * catching up here could wait for a request that waits
			 * for this inode.  The follower removes its records. */
			objfs_share_defer(s, ip->ino, 1);
			objfs_data_unload(s, ip);
		} else if (rc < 0) {
			/* Stays an orphan in the index; the next mount
			 * removes it.  (Shared mode: -ERESTART, another
			 * mount's commit came first; catching up here could
			 * wait for a request that waits for this inode.) */
			objfs_log(OBJFS_LOG_WARNING,
				"inode %" PRIu64 ": removing unlinked object: %s; "
				"this data directory's next mount removes it",
				ip->ino, rc == -ERESTART ? "the pool's log "
				"moved on meanwhile" : strerror(-rc));
			objfs_data_unload(s, ip);
		}
		atomic_fetch_sub(&s->ninodes, 1);
		return 0;
	}
	if (ip->attr_dirty && objfs_inode_persist_attr(s, ip) < 0)
		return 1;
	objfs_data_unload(s, ip);
	return 0;
}

/*
 * Drop a reference.  When nothing holds the inode any more (no request,
 * lookup or open) and it has no bytes in the arena, it leaves the table
 * for the releasing list while release() writes to the index without
 * store->lock; a get of the same inode waits for that to finish.  No lock
 * held.
 */
void
objfs_inode_put(struct objfs_store *s, struct objfs_inode *ip)
{
	struct objfs_inode **pp;
	int keep, res;

	objfs_store_lock(s);
	/* nopen changes under ip->lock, but only by a holder of a
	 * reference: with none left, it cannot change. */
	if (--ip->refs || ip->nlookup || ip->nopen || ip->ino == OBJFS_ROOT_INO) {
		objfs_store_unlock(s);
		return;
	}
	if (atomic_load(&ip->state) < 0) {	/* never loaded */
		table_remove_locked(s, ip);
		objfs_store_unlock(s);
		objfs_inode_free(ip);
		return;
	}
	objfs_inode_lock(ip);
	res = ip->attr.nlink && (objfs_chunkmap_has_resident(&ip->chunks) ||
			ip->so);
	objfs_inode_unlock(ip);
	if (res) {
		objfs_store_unlock(s);
		return;		/* its bytes keep it cached */
	}
	table_remove_locked(s, ip);
	ip->hnext = s->releasing;
	s->releasing = ip;
	objfs_store_unlock(s);

	objfs_inode_lock(ip);
	keep = release(s, ip);
	objfs_inode_unlock(ip);

	objfs_store_lock(s);
	for (pp = &s->releasing; *pp != ip; pp = &(*pp)->hnext)
		;
	*pp = ip->hnext;
	if (keep)
		table_insert_locked(s, ip);
	pthread_cond_broadcast(&s->release_cv);
	objfs_store_unlock(s);
	if (!keep)
		objfs_inode_free(ip);
}

int
objfs_store_iget_cached(struct objfs_store *s, uint64_t ino,
		struct objfs_inode **out)
{
	struct objfs_inode *ip;

	objfs_store_lock(s);
	ip = objfs_inode_find_locked(s, ino);
	if (ip && atomic_load(&ip->state) == OBJFS_INODE_READY)
		ip->refs++;
	else
		ip = NULL;
	objfs_store_unlock(s);
	if (!ip)
		return -ENOENT;
	*out = ip;
	return 0;
}

int
objfs_store_iget_loaded(struct objfs_store *s, uint64_t ino,
		struct objfs_inode **out)
{
	struct objfs_inode *ip;
	int st;

	objfs_store_lock(s);
	ip = objfs_inode_find_locked(s, ino);
	if (ip)
		ip->refs++;
	objfs_store_unlock(s);
	if (!ip)
		return -ENOENT;
	st = atomic_load(&ip->state);
	if (st == OBJFS_INODE_LOADING) {
		objfs_inode_lock(ip);	/* the loader's, until it is done */
		st = atomic_load(&ip->state);
		objfs_inode_unlock(ip);
	}
	if (st < 0) {
		objfs_inode_put(s, ip);
		return -ENOENT;
	}
	*out = ip;
	return 0;
}

void
objfs_store_iput(struct objfs_store *s, struct objfs_inode *ip)
{
	objfs_inode_put(s, ip);
}

void
objfs_inode_add_lookups(struct objfs_store *s, struct objfs_inode *ip,
		uint64_t n)
{
	objfs_store_lock(s);
	ip->nlookup += n;
	objfs_store_unlock(s);
}

int
objfs_inode_snapshot(struct objfs_store *s, struct objfs_inode ***out,
		size_t *n_out)
{
	struct objfs_inode **v;
	size_t n = 0;

	objfs_store_lock(s);
	v = malloc((s->count ? s->count : 1) * sizeof(*v));
	if (!v) {
		objfs_store_unlock(s);
		return -ENOMEM;
	}
	for (size_t b = 0; b < s->nbuckets; b++)
		for (struct objfs_inode *ip = s->table[b]; ip; ip = ip->hnext)
			if (atomic_load(&ip->state) == OBJFS_INODE_READY) {
				ip->refs++;
				v[n++] = ip;
			}
	objfs_store_unlock(s);
	*out = v;
	*n_out = n;
	return 0;
}

void
objfs_inode_put_all(struct objfs_store *s, struct objfs_inode **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		objfs_inode_put(s, v[i]);
	free(v);
}

/*
 * Count an open (ip->lock held) and say how it meets the page cache.
 * A direct writer marks the cached pages of the file stale; the next
 * cached open drops them, and they stay marked while a direct writer
 * remains open.  (Kernels since 6.x also drop the pages a direct write
 * covers; this covers the ones that do not.)
 */
enum objfs_cache
objfs_inode_open_locked(struct objfs_inode *ip, int flags, int bypass)
{
	enum objfs_cache c = OBJFS_CACHE_KEEP;

	objfs_inode_assert_locked(ip);
	ip->nopen++;
	if ((flags & O_ACCMODE) != O_RDONLY)
		ip->nwriters++;
	if (bypass) {
		if ((flags & O_ACCMODE) != O_RDONLY) {
			ip->ndirect_w++;
			ip->cache_stale = 1;
		}
		return OBJFS_CACHE_BYPASS;
	}
	if (ip->cache_stale) {
		c = OBJFS_CACHE_DROP;
		ip->cache_stale = ip->ndirect_w > 0;
	}
	return c;
}

void
objfs_inode_close_locked(struct objfs_inode *ip, int flags, int bypass)
{
	objfs_inode_assert_locked(ip);
	if (ip->nopen)
		ip->nopen--;
	if ((flags & O_ACCMODE) != O_RDONLY && ip->nwriters)
		ip->nwriters--;
	if (bypass && (flags & O_ACCMODE) != O_RDONLY && ip->ndirect_w)
		ip->ndirect_w--;
}
