/* SPDX-License-Identifier: MIT */
/*
 * notify.c - shared mode's notices to the kernel (doc/design.md, "Many
 * nodes on one namespace"): the names and inodes another mount's commit
 * changed are queued while the record is applied (publish.c) and sent by
 * the log's follower with no lock held, so that the kernel drops what it
 * cached of them.  An inode's notice is also kept, up to
 * OBJFS_NOTIFY_KEEP, for a catch-up to send again.
 *
 * Locks: notify_send_mu (one sender at a time, taken with no other lock
 * held), notify_mu under it and a leaf (store_int.h).
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "src/store_int.h"

/* ---- the kernel's caches ---------------------------------------------- */

void
objfs_store_set_notify(struct objfs_store *s,
		void (*fn)(void *arg, uint64_t parent, const char *name,
			size_t len, uint64_t ino),
		void *arg)
{
	pthread_mutex_lock(&s->notify_mu);
	s->notify_fn = fn;
	s->notify_arg = arg;
	pthread_mutex_unlock(&s->notify_mu);
}

void
objfs_store_notify_add(struct objfs_store *s, uint64_t parent, const char *name,
		size_t len, uint64_t ino)
{
	struct objfs_notify *n;

	if (len > OBJFS_NAME_MAX)
		return;
	n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return;		/* the caches' timeouts bound it */
	n->parent = parent;
	n->ino = ino;
	n->len = len;
	if (len)		/* an inode's notice has no name */
		memcpy(n->name, name, len);
	n->name[len] = '\0';
	pthread_mutex_lock(&s->notify_mu);
	n->next = NULL;
	*s->notify_tail = n;
	s->notify_tail = &n->next;
	pthread_mutex_unlock(&s->notify_mu);
}

#define OBJFS_NOTIFY_KEEP	4096

void
objfs_store_notify_send(struct objfs_store *s, int inodes)
{
	struct objfs_notify *n, *next, *kept = NULL;
	void (*fn)(void *, uint64_t, const char *, size_t, uint64_t);
	void *arg;
	int all = 0;

	pthread_mutex_lock(&s->notify_send_mu);
	pthread_mutex_lock(&s->notify_mu);
	n = s->notify_head;
	s->notify_head = NULL;
	s->notify_tail = &s->notify_head;
	if (inodes) {
		kept = s->keep_head;
		all = s->keep_all;
		s->keep_head = NULL;
		s->nkeep = 0;
		s->keep_all = 0;
	}
	fn = s->notify_fn;
	arg = s->notify_arg;
	pthread_mutex_unlock(&s->notify_mu);
	for (; n; n = next) {
		next = n->next;
		if (fn && (n->len || inodes))
			fn(arg, n->parent, n->len ? n->name : NULL, n->len,
				inodes ? n->ino : 0);
		if (n->len || inodes || !n->ino) {
			free(n);
			continue;
		}
		/* An inode's attributes: kept for catch-up. */
		pthread_mutex_lock(&s->notify_mu);
		if (s->nkeep < OBJFS_NOTIFY_KEEP) {
			n->next = s->keep_head;
			s->keep_head = n;
			s->nkeep++;
			n = NULL;
		} else {
			s->keep_all = 1;
		}
		pthread_mutex_unlock(&s->notify_mu);
		free(n);
	}
	for (; kept; kept = next) {
		next = kept->next;
		if (fn && !all)
			fn(arg, 0, NULL, 0, kept->ino);
		free(kept);
	}
	if (fn && all) {
		struct objfs_inode **ips;
		size_t k;

		if (objfs_inode_snapshot(s, &ips, &k) == 0) {
			for (size_t i = 0; i < k; i++)
				fn(arg, 0, NULL, 0, ips[i]->ino);
			objfs_inode_put_all(s, ips, k);
		}
	}
	pthread_mutex_unlock(&s->notify_send_mu);
}
