/* SPDX-License-Identifier: MIT */
/*
 * benchio.c - the benchmark's byte source and sink.
 *
 *   benchio write FILE SIZE [BS] [direct] [fsync]
 *   benchio read  FILE SIZE [BS] [direct]
 *
 * write fills FILE with SIZE bytes of a pattern that depends on each
 * word's offset (so a misplaced chunk is caught), in BS-byte write()s
 * (default 1 MiB); read reads them back in BS-byte read()s and checks
 * every byte.  Generating and checking the pattern runs at several GB/s,
 * so the source is never the bottleneck.  Prints "SECONDS BYTES" on
 * success; on a mismatch prints the offset and exits 1.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
fill(uint64_t *w, size_t nwords, uint64_t off)
{
	uint64_t x = off / 8;

	for (size_t i = 0; i < nwords; i++, x++) {
		uint64_t z = x + 0x9e3779b97f4a7c15ull;

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		w[i] = z ^ (z >> 31);
	}
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t
parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'K': case 'k': v *= 1024; break;
	case 'M': case 'm': v *= 1024 * 1024; break;
	case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return (uint64_t)v;
}

int
main(int argc, char **argv)
{
	uint64_t size, bs = 1 << 20, done = 0;
	int writing, direct = 0, do_fsync = 0, fd;
	void *buf, *want = NULL;
	double t0, t1;

	if (argc < 4 || (strcmp(argv[1], "write") && strcmp(argv[1], "read"))) {
		fprintf(stderr, "usage: benchio write|read FILE SIZE [BS] [direct] [fsync]\n");
		return 2;
	}
	writing = strcmp(argv[1], "write") == 0;
	size = parse_size(argv[3]);
	for (int i = 4; i < argc; i++) {
		if (strcmp(argv[i], "direct") == 0)
			direct = 1;
		else if (strcmp(argv[i], "fsync") == 0)
			do_fsync = 1;
		else
			bs = parse_size(argv[i]);
	}
	if (bs == 0 || bs % 8 || posix_memalign(&buf, 4096, bs) ||
	    posix_memalign(&want, 4096, bs)) {
		fprintf(stderr, "benchio: bad block size\n");
		return 2;
	}
	fd = open(argv[2], (writing ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY) |
			(direct ? O_DIRECT : 0), 0644);
	if (fd < 0) {
		fprintf(stderr, "benchio: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	t0 = now();
	while (done < size) {
		size_t n = size - done < bs ? (size_t)(size - done) : (size_t)bs;
		ssize_t r;

		if (writing) {
			fill(buf, (n + 7) / 8, done);
			r = write(fd, buf, n);
		} else {
			r = read(fd, buf, n);
		}
		if (r <= 0) {
			fprintf(stderr, "benchio: %s at %" PRIu64 ": %s\n",
				argv[1], done, r < 0 ? strerror(errno) : "short");
			return 1;
		}
		if (!writing) {
			fill(want, ((size_t)r + 7) / 8, done);
			if (memcmp(buf, want, (size_t)r) != 0) {
				fprintf(stderr, "benchio: %s: wrong bytes near offset %" PRIu64 "\n",
					argv[2], done);
				return 1;
			}
		}
		done += (uint64_t)r;
	}
	if (do_fsync && fsync(fd) < 0) {
		fprintf(stderr, "benchio: fsync: %s\n", strerror(errno));
		return 1;
	}
	if (close(fd) < 0) {
		fprintf(stderr, "benchio: close: %s\n", strerror(errno));
		return 1;
	}
	t1 = now();
	printf("%.4f %" PRIu64 "\n", t1 - t0, done);
	free(buf);
	free(want);
	return 0;
}
