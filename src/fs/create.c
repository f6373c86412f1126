/* SPDX-License-Identifier: MIT */
/*
 * create.c - making nodes: create, mknod, mkdir, symlink; and, on a
 * shared mount, group commit of the creates of concurrent threads.
 *
 * A create reads the directory's entry (EEXIST), then writes the entry,
 * the new inode, the directory's attributes and the next free inode
 * number and cookie in one transaction, under ns_lock and the
 * directory's lock.  On a shared mount that transaction's commit puts a
 * record in the pool's log before it returns (lease.c's hook), and holds
 * ns_lock for the put.  Creates of other threads that come meanwhile
 * queue; the thread that finds no create under way leads: it makes what
 * waits (at most MK_GROUP_MAX) in one transaction, so one record, and
 * every member returns with its own answer.  The group is an
 * optimisation only: if its commit fails, nothing of it was committed
 * here.  Lost the race for the log's next record (-ERESTART): each
 * member returns it to its own OBJFS_SHARED, which applies the log and
 * comes back to group again.  Anything else (the node's deadline, another
 * node holding a directory, the pool): every member makes its node
 * alone, as if there had been no group, with its own retries and answer.
 * doc/design.md, "Group commit".
 *
 * Locking: see store_int.h.  mk_mu (the queue) is taken with no lock
 * held but the apply lock (shared), and none under it.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/store_int.h"
#include "meta/meta_keys.h"

/* An open that comes with a create. */
struct create_open {
	int flags, bypass;
};

/* One node to make, on its caller's stack. */
struct mk_req {
	struct mk_req *next;
	uint64_t parent;
	const char *name;
	size_t len;
	uint32_t mode;
	uint64_t rdev;
	const char *target;
	const struct objfs_cred *cr;
	struct objfs_attr *out;
	const struct create_open *op;
	int rc, done, alone;
	/* the leader's */
	struct objfs_inode *dp;
	struct objfs_attr a;
	int made;
};

/* The most creates one commit makes. */
#define MK_GROUP_MAX	64

/* @r's new inode @ino in a directory of attributes @pa. */
static void
new_attr(struct objfs_attr *a, const struct mk_req *r,
		const struct objfs_attr *pa, uint64_t ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->mode = r->mode;
	a->uid = r->cr->uid;
	a->gid = r->cr->gid;
	if (pa->mode & S_ISGID) {
		a->gid = pa->gid;
		if (S_ISDIR(r->mode))
			a->mode |= S_ISGID;
	}
	a->nlink = S_ISDIR(r->mode) ? 2 : 1;
	a->parent = S_ISDIR(r->mode) ? r->parent : 0;
	a->rdev = r->rdev;
	objfs_attr_touch_mc(a);
	a->atime_sec = a->mtime_sec;
	a->atime_nsec = a->mtime_nsec;
	if (r->target)
		a->size = strlen(r->target);
}

/* @r's records in @t: its entry, its inode (its symlink target), and
 * its lease when it is created open for writing on a shared mount. */
static int
put_node(struct objfs_store *s, struct objfs_meta_txn *t,
		const struct mk_req *r, const struct objfs_attr *a,
		uint64_t cookie)
{
	int rc;

	if ((rc = objfs_meta_dirent_add(t, r->parent, r->name, r->len, a->ino,
				a->mode & S_IFMT, cookie)) < 0 ||
	    (rc = objfs_meta_inode_put(t, a)) < 0 ||
	    (r->target && (rc = objfs_meta_symlink_put(t, a->ino, r->target,
				strlen(r->target))) < 0))
		return rc;
	/* Shared mode: created open for writing, leased in the same
	 * commit. */
	if (s->shared && r->op && (r->op->flags & O_ACCMODE) != O_RDONLY)
		rc = s->tier_ops->lease(s->tier, t, a->ino, 1);
	return rc;
}

/* @r's node, committed: in memory with one lookup (and open).  ns_lock
 * held, no inode's lock. */
static int
made_node(struct objfs_store *s, const struct mk_req *r,
		const struct objfs_attr *a)
{
	struct objfs_inode *ip;
	int rc = objfs_inode_get(s, a->ino, &ip);

	if (rc < 0)
		return rc;
	objfs_inode_add_lookups(s, ip, 1);
	objfs_inode_lock(ip);
	ip->no_file = 1;	/* inode numbers are never reused */
	if (r->op)
		objfs_inode_open_locked(ip, r->op->flags, r->op->bypass);
	if (s->shared && r->op && (r->op->flags & O_ACCMODE) != O_RDONLY)
		objfs_share_created(s, ip);
	objfs_inode_unlock(ip);
	*r->out = *a;
	objfs_inode_put(s, ip);
	return 0;
}

/*
 * Create an inode of @mode named @name in @parent, alone.  For symlinks
 * @target is stored too.  The new inode gets one lookup, and with @op is
 * counted open before any unlink can see it.
 */
static int
make_one(struct objfs_store *s, const struct mk_req *r)
{
	struct objfs_meta_txn *t;
	struct objfs_inode *dp;
	struct objfs_attr a, pa;
	struct objfs_dirent d;
	int rc;

	pthread_mutex_lock(&s->ns_lock);
	rc = objfs_inode_get_dir(s, r->parent, &dp);
	if (rc < 0)
		goto out_unlock;
	if (atomic_load(&s->ninodes) >= MAX_INODES) {
		rc = -ENOSPC;
		goto out_dp;
	}
	rc = objfs_ids_room(s, 1, 1);
	if (rc < 0)
		goto out_dp;
	objfs_inode_lock(dp);
	pa = dp->attr;
	new_attr(&a, r, &pa, s->next_ino);
	objfs_attr_touch_mc(&pa);
	if (S_ISDIR(r->mode))
		pa.nlink++;

	rc = objfs_store_begin_change(s, &t);
	if (rc < 0)
		goto out_dplock;
	rc = objfs_meta_dirent_get(t, r->parent, r->name, r->len, &d);
	if (rc == 0)
		rc = -EEXIST;
	if (rc != -ENOENT)
		goto out_abort;
	if ((rc = put_node(s, t, r, &a, s->next_cookie)) < 0 ||
	    (rc = objfs_meta_inode_put(t, &pa)) < 0 ||
	    (rc = objfs_ids_put(s, t, a.ino + 1, s->next_cookie + 1)) < 0)
		goto out_abort;
	rc = objfs_meta_commit(t);
	if (rc < 0)
		goto out_dplock;
	s->next_ino++;
	s->next_cookie++;
	atomic_fetch_add(&s->ninodes, 1);
	dp->attr = pa;
	objfs_inode_unlock(dp);
	objfs_inode_put(s, dp);
	rc = made_node(s, r, &a);
	pthread_mutex_unlock(&s->ns_lock);
	return rc;

out_abort:
	objfs_meta_abort(t);
out_dplock:
	objfs_inode_unlock(dp);
out_dp:
	objfs_inode_put(s, dp);
out_unlock:
	pthread_mutex_unlock(&s->ns_lock);
	return rc;
}

static int
by_ino(const void *x, const void *y)
{
	const struct objfs_inode *a = *(struct objfs_inode *const *)x;
	const struct objfs_inode *b = *(struct objfs_inode *const *)y;

	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

/*
 * The creates @w[0..@n) in one transaction (ns_lock taken here): 0 with
 * each member's answer set, or -errno with nothing committed (each then
 * makes its node alone).
 */
static int
make_group(struct objfs_store *s, struct mk_req **w, size_t n)
{
	struct objfs_inode *dirs[MK_GROUP_MAX];
	struct objfs_attr pa[MK_GROUP_MAX];
	int touched[MK_GROUP_MAX] = { 0 };
	struct objfs_meta_txn *t = NULL;
	uint64_t ino, ck;
	size_t nd = 0, live = 0, made = 0;
	int rc = 0, locked;

	pthread_mutex_lock(&s->ns_lock);
	for (size_t i = 0; i < n; i++) {
		w[i]->dp = NULL;
		w[i]->made = 0;
		w[i]->rc = objfs_inode_get_dir(s, w[i]->parent, &w[i]->dp);
		if (w[i]->rc == 0)
			live++;
	}
	if (atomic_load(&s->ninodes) + live > MAX_INODES)
		rc = -ENOSPC;		/* alone, each its own answer */
	if (rc == 0)
		rc = objfs_ids_room(s, live, live);
	/* Each directory once, locked in inode order (more than one inode
	 * lock only under ns_lock: store_int.h). */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t j;

		if (!w[i]->dp)
			continue;
		for (j = 0; j < nd && dirs[j] != w[i]->dp; j++)
			;
		if (j == nd)
			dirs[nd++] = w[i]->dp;
	}
	if (rc == 0)
		qsort(dirs, nd, sizeof(dirs[0]), by_ino);
	for (size_t j = 0; rc == 0 && j < nd; j++) {
		objfs_inode_lock(dirs[j]);
		pa[j] = dirs[j]->attr;
	}
	locked = rc == 0;
	if (rc == 0)
		rc = objfs_store_begin_change(s, &t);
	ino = s->next_ino;
	ck = s->next_cookie;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct mk_req *r = w[i];
		struct objfs_dirent d;
		size_t j;

		if (!r->dp)
			continue;
		for (j = 0; dirs[j] != r->dp; j++)
			;
		rc = objfs_meta_dirent_get(t, r->parent, r->name, r->len, &d);
		if (rc == 0) {
			r->rc = -EEXIST;	/* here, or made by the group */
			continue;
		}
		if (rc != -ENOENT)
			break;
		new_attr(&r->a, r, &pa[j], ino);
		objfs_attr_touch_mc(&pa[j]);
		if (S_ISDIR(r->mode))
			pa[j].nlink++;
		touched[j] = 1;
		rc = put_node(s, t, r, &r->a, ck);
		if (rc < 0)
			break;
		r->made = 1;
		ino++;
		ck++;
		made++;
	}
	for (size_t j = 0; rc == 0 && j < nd; j++)
		if (touched[j])
			rc = objfs_meta_inode_put(t, &pa[j]);
	if (rc == 0 && made)
		rc = objfs_ids_put(s, t, ino, ck);
	if (t && (rc < 0 || !made))
		objfs_meta_abort(t);
	else if (t)
		rc = objfs_meta_commit(t);
	if (rc == 0 && made) {
		s->next_ino = ino;
		s->next_cookie = ck;
		atomic_fetch_add(&s->ninodes, made);
		for (size_t j = 0; j < nd; j++)
			dirs[j]->attr = pa[j];
	}
	for (size_t j = 0; locked && j < nd; j++)
		objfs_inode_unlock(dirs[j]);
	for (size_t i = 0; i < n; i++)
		if (w[i]->dp)
			objfs_inode_put(s, w[i]->dp);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (w[i]->made)
			w[i]->rc = made_node(s, w[i], &w[i]->a);
	pthread_mutex_unlock(&s->ns_lock);
	if (rc == 0 && made > 1) {
		atomic_fetch_add(&s->mk_groups, 1);
		atomic_fetch_add(&s->mk_grouped, made - 1);
	}
	return rc;
}

/* @r taken out of the queue of creates not yet in a group (mk_mu held):
 * 1, or 0 when a group took it already. */
static int
unqueue(struct objfs_store *s, struct mk_req *r)
{
	for (struct mk_req **pp = &s->mk_head; *pp; pp = &(*pp)->next) {
		if (*pp != r)
			continue;
		*pp = r->next;
		if (s->mk_tail == &r->next)
			s->mk_tail = pp;
		return 1;
	}
	return 0;
}

/* @r made with the creates other threads of this node make at the same
 * moment (publish.c's group commit, for creates). */
static int
make_grouped(struct objfs_store *s, struct mk_req *r)
{
	int rc;

	pthread_mutex_lock(&s->mk_mu);
	*s->mk_tail = r;
	s->mk_tail = &r->next;
	while (!r->done) {
		struct mk_req *w[MK_GROUP_MAX];
		size_t n = 0;

		if (s->mk_busy) {
			/* Another thread's group under way; this request, if
			 * not yet taken into one, leaves at the call's
			 * deadline (one taken is answered by its group). */
			if (objfs_cond_wait_until(&s->mk_cv, &s->mk_mu) ==
			    ETIMEDOUT && unqueue(s, r)) {
				pthread_mutex_unlock(&s->mk_mu);
				return -ETIMEDOUT;
			}
			continue;
		}
		while (s->mk_head && n < MK_GROUP_MAX) {
			w[n++] = s->mk_head;
			s->mk_head = s->mk_head->next;
		}
		if (!s->mk_head)
			s->mk_tail = &s->mk_head;
		s->mk_busy = 1;
		pthread_mutex_unlock(&s->mk_mu);
		if (n == 1) {
			/* This thread's own (it queued itself before it
			 * looked): made while it leads, so that what comes
			 * meanwhile waits to go together. */
			w[0]->rc = make_one(s, w[0]);
		} else if ((rc = make_group(s, w, n)) < 0) {
			/* Lost the race for the log's next record: each
			 * member's own retry applies the log and comes back,
			 * to group again.  Anything else: each alone, with
			 * its own answer. */
			for (size_t i = 0; i < n; i++) {
				if (rc == -ERESTART)
					w[i]->rc = rc;
				else
					w[i]->alone = 1;
			}
		}
		pthread_mutex_lock(&s->mk_mu);
		for (size_t i = 0; i < n; i++)
			w[i]->done = 1;
		s->mk_busy = 0;
		pthread_cond_broadcast(&s->mk_cv);
	}
	pthread_mutex_unlock(&s->mk_mu);
	return r->alone ? make_one(s, r) : r->rc;
}

static int
make_node(struct objfs_store *s, uint64_t parent, const char *name,
		uint32_t mode, uint64_t rdev, const char *target,
		const struct objfs_cred *cr, struct objfs_attr *out,
		const struct create_open *op)
{
	struct mk_req r = {
		.parent = parent, .name = name, .len = strlen(name),
		.mode = mode, .rdev = rdev, .target = target, .cr = cr,
		.out = out, .op = op,
	};
	int rc;

	if (r.len > OBJFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (objfs_is_reserved_name(parent, name))
		return -EEXIST;
	/* Shared mode: the directory taken, if nobody holds it. */
	rc = objfs_share_dir_use(s, parent);
	if (rc < 0)
		return rc;
	return s->shared ? make_grouped(s, &r) : make_one(s, &r);
}

int
objfs_store_mknod(struct objfs_store *s, uint64_t parent, const char *name,
		uint32_t mode, uint64_t rdev, const struct objfs_cred *cr,
		struct objfs_attr *out)
{
	OBJFS_CALL_ANY(s);
	switch (mode & S_IFMT) {
	case 0:
		mode |= S_IFREG;
		break;
	case S_IFREG:
	case S_IFIFO:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFSOCK:
		break;
	default:
		return -EINVAL;
	}
	int rc;

	OBJFS_SHARED(s, rc, make_node(s, parent, name, mode, rdev, NULL, cr,
			out, NULL));
	return rc;
}

int
objfs_store_mkdir(struct objfs_store *s, uint64_t parent, const char *name,
		uint32_t mode, const struct objfs_cred *cr,
		struct objfs_attr *out)
{
	OBJFS_CALL_ANY(s);
	int rc;

	OBJFS_SHARED(s, rc, make_node(s, parent, name, S_IFDIR | (mode &
			07777), 0, NULL, cr, out, NULL));
	return rc;
}

int
objfs_store_symlink(struct objfs_store *s, uint64_t parent, const char *name,
		const char *target, const struct objfs_cred *cr,
		struct objfs_attr *out)
{
	OBJFS_CALL_ANY(s);
	size_t len = strlen(target);

	if (len == 0)
		return -ENOENT;
	if (len >= 4096)
		return -ENAMETOOLONG;
	int rc;

	OBJFS_SHARED(s, rc, make_node(s, parent, name, S_IFLNK | 0777, 0,
			target, cr, out, NULL));
	return rc;
}

int
objfs_store_create(struct objfs_store *s, uint64_t parent, const char *name,
		uint32_t mode, int flags, int bypass,
		const struct objfs_cred *cr, struct objfs_attr *out)
{
	OBJFS_CALL_ANY(s);
	struct create_open op = { flags, bypass };
	int rc;

	OBJFS_SHARED(s, rc, make_node(s, parent, name, S_IFREG | (mode &
			07777), 0, NULL, cr, out, &op));
	return rc;
}

