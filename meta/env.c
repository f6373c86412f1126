/* SPDX-License-Identifier: MIT */
/*
 * env.c - LMDB's environment of the index: opened (read-only for the
 * verifying child), its errors as errnos, and which schema a file has.
 * Opening the index (open.c) and verifying it (verify.c) both start here;
 * it calls neither.
 */
#include <config.h>

#include <errno.h>
#include <lmdb.h>
#include <stdint.h>
#include <string.h>

#include "meta/meta.h"
#include "meta/meta_int.h"
#include "meta/meta_keys.h"
#include "meta/meta_priv.h"

int
meta_env_open(struct objfs_meta *m, const char *dir, int rdonly)
{
	int rc = mdb_env_create(&m->env);

	if (rc)
		return rc;
	rc = mdb_env_set_maxdbs(m->env, OBJFS_META_NDBS);
	if (rc == 0)
		rc = mdb_env_set_mapsize(m->env, MAP_SIZE);
	if (rc == 0)
		rc = mdb_env_open(m->env, dir, MDB_NOLOCK |
				(rdonly ? MDB_RDONLY : 0), 0600);
	if (rc) {
		mdb_env_close(m->env);
		m->env = NULL;
	}
	return rc;
}

int
meta_open_err(int rc)
{
	switch (rc) {
	case EACCES:
	case ENOENT:
	case EROFS:
	case ENOSPC:
	case ENOMEM:
		return -rc;
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
		return -EPROTO;
	default:
		return map_err(rc, "open");
	}
}

/* Is the file of schema 1 (open.c migrates it)? */
int
meta_legacy_schema(struct objfs_meta *m, MDB_txn *txn)
{
	MDB_val k = { 6, (void *)OBJFS_SUPER_SCHEMA }, v;
	uint64_t schema;

	if (mdb_get(txn, m->dbi[DB_SUPER], &k, &v) || v.mv_size != 8)
		return 0;
	memcpy(&schema, v.mv_data, 8);
	return schema == 1;
}
