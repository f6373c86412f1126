/* SPDX-License-Identifier: MIT */
/*
 * units.h - sizes for people: "1.5 GiB".  Shared by objfs and objfsctl.
 */
#ifndef OBJFS_UNITS_H
#define OBJFS_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Write @v bytes in binary units into @buf (@n bytes); returns @buf. */
const char *objfs_format_size(uint64_t v, char *buf, size_t n);

#endif
