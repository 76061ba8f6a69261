/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vdso.h - profd's own vDSO image.
 *
 * Every process of the running kernel maps the same vDSO, so profd reads
 * its own (AT_SYSINFO_EHDR) for symbols (src/symbol/vdso_object.c) and
 * unwind tables (src/unwind/loader.c) of every process's [vdso] mapping
 * of the same size. Below both: it reads /proc/self/maps itself.
 */
#ifndef PROFD_UTIL_VDSO_H
#define PROFD_UTIL_VDSO_H

#include <stddef.h>
#include <stdint.h>

/*
 * own_vdso - where profd's vDSO is mapped and its size in bytes (the
 * whole [vdso] mapping). Returns 0, -ENOENT when there is none, or the
 * negative errno of reading /proc/self/maps.
 */
int own_vdso(uintptr_t *base, size_t *size);

#endif /* PROFD_UTIL_VDSO_H */
