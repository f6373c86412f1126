/* SPDX-License-Identifier: MIT */
/*
 * connect.c - the store behind the remote tier, by the kind its spec
 * names: rados:POOL[/NAMESPACE] (src/rados/), s3://BUCKET[/PREFIX]
 * (src/s3/).  Both fill the table of src/remote.h; the tier and the
 * offline checker (src/tools/check_pool.c) see only that.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "src/cluster/tier_int.h"
#include "src/rados/remote.h"
#include "src/s3/s3.h"

int
objfs_tier_remote_connect(const struct objfs_remote_config *cfg,
		struct objfs_remote **out, char *err, size_t errsize)
{
	const char *spec = cfg->spec ? cfg->spec : "";

	*out = NULL;
	if (strncmp(spec, "rados:", 6) == 0)
		return objfs_rados_connect(cfg, out, err, errsize);
	if (strncmp(spec, "s3://", 5) == 0)
		return objfs_s3_connect(cfg, out, err, errsize);
	snprintf(err, errsize, "remote=%s: expected rados:POOL[/NAMESPACE] "
		"or s3://BUCKET[/PREFIX]", spec);
	return -EINVAL;
}
