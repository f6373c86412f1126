/* SPDX-License-Identifier: MIT */
/*
 * fan.c - independent requests to the remote store, many at once: a
 * service that answers each in tens of milliseconds (S3) is as slow as
 * its latency times the count when they go one after another.  The
 * caller's own thread takes part; a thread that cannot be made only
 * means fewer at once.  No lock: the next index is an atomic counter.
 */
#include <config.h>

#include <pthread.h>
#include <stdatomic.h>

#include "src/cluster/tier_int.h"

#define FAN_MAX	16

struct fan {
	size_t n;
	atomic_size_t next;
	void (*fn)(void *arg, size_t i);
	void *arg;
};

static void *
fan_main(void *arg)
{
	struct fan *f = arg;
	size_t i;

	while ((i = atomic_fetch_add(&f->next, 1)) < f->n)
		f->fn(f->arg, i);
	return NULL;
}

void
tier_fan(size_t n, unsigned width, void (*fn)(void *arg, size_t i), void *arg)
{
	struct fan f = { .n = n, .fn = fn, .arg = arg };
	pthread_t th[FAN_MAX];
	unsigned k = 0;

	atomic_init(&f.next, 0);
	if (width > FAN_MAX)
		width = FAN_MAX;
	while (k + 1 < width && k + 1 < n &&
	       pthread_create(&th[k], NULL, fan_main, &f) == 0)
		k++;
	(void)fan_main(&f);
	while (k)
		pthread_join(th[--k], NULL);
}
