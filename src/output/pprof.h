/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pprof.h - pprof writer.
 *
 * Owns: encoding a struct profile as a perftools.profiles.Profile message
 * (proto/profile.proto, same wire contract as Google's pprof) with
 * protobuf-c, and writing it gzipped (zlib) as pprof expects.
 */
#ifndef PROFD_OUTPUT_PPROF_H
#define PROFD_OUTPUT_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/*
 * pprof_encode - serialize @p (uncompressed protobuf). On success *@buf is
 * a malloc'd buffer of *@len bytes the caller frees. Returns 0, -ENOMEM,
 * or -EINVAL for ids out of range or too many sample types.
 */
int pprof_encode(const struct profile *p, uint8_t **buf, size_t *len);

/*
 * pprof_write - write @p gzipped to @path, atomically (temp file + rename).
 * Returns 0, -EINVAL (see pprof_encode) or a negative errno.
 */
int pprof_write(const struct profile *p, const char *path);

#endif /* PROFD_OUTPUT_PPROF_H */
