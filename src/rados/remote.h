/* SPDX-License-Identifier: MIT */
/*
 * remote.h - objfs's client of a Ceph pool (librados): a store behind the
 * table of src/remote.h (-o remote=rados:POOL[/NAMESPACE]).  One pool and
 * namespace per connection.  Everything the table has it can do: the
 * atomic operations (exclusive create, compare-and-swap of the head,
 * locks with a duration), omap, watch and notify.
 *
 * Built only where librados is (configure: HAVE_RADOS); without it,
 * objfs_rados_connect() says so.
 */
#ifndef OBJFS_RADOS_REMOTE_H
#define OBJFS_RADOS_REMOTE_H

#include <stddef.h>

#include "src/remote.h"

/* Split @spec ("rados:POOL[/NAMESPACE]") into @pool and @ns (empty when
 * none).  -EINVAL, with a message in @err, for anything else. */
int objfs_rados_parse(const char *spec, char pool[OBJFS_REMOTE_NAME_MAX],
		char ns[OBJFS_REMOTE_NAME_MAX], char *err, size_t errsize);

/* Connect, and open the pool: 0, or -errno with what went wrong in @err
 * (no configuration file, no monitor answering within the timeout, no
 * such pool, built without librados: -ENOTSUP). */
int objfs_rados_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize);

#endif
