/* SPDX-License-Identifier: MIT */
/*
 * objfsctl - print what objfs exposes, for people.
 *
 *   objfsctl status MOUNTPOINT	the mount's .objfs-status, sizes made
 *				readable
 *   objfsctl stat FILE...	where each file's bytes are: the
 *				user.objfs.* extended attributes
 *   objfsctl check DATA	verify a data directory offline (check.c)
 *   objfsctl recover DATA [DEST]
 *				save what can be saved of a data
 *				directory, however damaged (check.c)
 *
 * status and stat read only what any program can read (a file and
 * getxattr); check and recover read the data directory while no daemon
 * serves it, and change nothing in it.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "check.h"
#include "units.h"

static void
usage(FILE *f)
{
	fprintf(f,
"usage: objfsctl status MOUNTPOINT\n"
"       objfsctl stat FILE...\n"
"       objfsctl check DATA\n"
"       objfsctl recover DATA [DEST]\n"
"\n"
"status  the mount's arena, spill and restore figures (MOUNTPOINT/.objfs-status)\n"
"stat    for each file in an objfs mount: bytes in the arena, not yet on\n"
"        disk, on disk, only on disk, and its chunks\n"
"check   verify a data directory that no objfs serves: the index, every\n"
"        name, every chunk against its checksum; exit 1 on damage\n"
"recover save every object whose bytes still verify, from a data directory\n"
"        however damaged, into DEST (default DATA/lost+found), named by\n"
"        inode number, with the names found in DEST/NAMES and DEST/tree\n");
}

static int
cmd_status(const char *mnt)
{
	char path[4096], line[256], key[128], h[32];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "%s/.objfs-status", mnt);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "objfsctl: %s: %s (is %s an objfs mount?)\n",
			path, strerror(errno), mnt);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127[^:]: %llu", key, &v) != 2)
			continue;
		if (strstr(key, "_bytes"))
			printf("%-28s %s\n", key, objfs_format_size(v, h, sizeof(h)));
		else
			printf("%-28s %llu\n", key, v);
	}
	fclose(f);
	return 0;
}

static int
get_u64(const char *file, const char *name, uint64_t *v)
{
	char buf[32];
	ssize_t n = getxattr(file, name, buf, sizeof(buf) - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*v = strtoull(buf, NULL, 10);
	return 0;
}

static int
cmd_stat(int n, char **files)
{
	static const char *const names[] = {
		"resident", "dirty", "disk", "spilled", "chunk_size",
		"chunks_resident", "chunks_spilled", "chunks_hole",
	};
	uint64_t v[8];
	char attr[64], h[32];
	struct stat st;
	int status = 0;

	for (int i = 0; i < n; i++) {
		int rc = stat(files[i], &st);

		for (int k = 0; rc == 0 && k < 8; k++) {
			snprintf(attr, sizeof(attr), "user.objfs.%s", names[k]);
			rc = get_u64(files[i], attr, &v[k]);
		}
		if (rc != 0) {
			fprintf(stderr, "objfsctl: %s: %s\n", files[i],
				rc < 0 ? strerror(-rc) : strerror(errno));
			if (rc == -ENODATA || rc == -ENOTSUP)
				fprintf(stderr, "objfsctl: %s: not a regular file in an objfs mount\n",
					files[i]);
			status = 1;
			continue;
		}
		printf("%s\n", files[i]);
		printf("  size      %s\n", objfs_format_size((uint64_t)st.st_size, h, sizeof(h)));
		printf("  resident  %s (in the arena)\n", objfs_format_size(v[0], h, sizeof(h)));
		printf("  dirty     %s (in the arena, not yet on disk)\n", objfs_format_size(v[1], h, sizeof(h)));
		printf("  disk      %s (current copy on disk)\n", objfs_format_size(v[2], h, sizeof(h)));
		printf("  spilled   %s (only on disk)\n", objfs_format_size(v[3], h, sizeof(h)));
		printf("  chunks    %" PRIu64 " resident, %" PRIu64 " spilled, %" PRIu64
			" holes, of %s each\n", v[5], v[6], v[7], objfs_format_size(v[4], h, sizeof(h)));
	}
	return status;
}

int
main(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 ||
			  strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && (strcmp(argv[1], "-V") == 0 ||
			  strcmp(argv[1], "--version") == 0)) {
		printf("objfsctl %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "status") == 0)
		return cmd_status(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "stat") == 0)
		return cmd_stat(argc - 2, argv + 2);
	if (argc == 3 && strcmp(argv[1], "check") == 0) {
		int rc = objfs_check(argv[2], stdout);

		return rc < 0 ? 2 : rc > 0;
	}
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "recover") == 0) {
		int rc = objfs_recover(argv[2], argc == 4 ? argv[3] : NULL,
				stdout);

		return rc < 0 ? 2 : rc > 0;
	}
	usage(stderr);
	return 2;
}
