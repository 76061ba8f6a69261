/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vdso.h - profd's own vDSO image.
 *
 * Every process of the running kernel maps the same vDSO, so profd reads
 * its own (AT_SYSINFO_EHDR) for symbols and unwind tables of every
 * process's [vdso] mapping of the same size.
 */
#ifndef PROFD_PROC_VDSO_H
#define PROFD_PROC_VDSO_H

#include <stddef.h>
#include <stdint.h>

/*
 * own_vdso - where profd's vDSO is mapped and its size in bytes (the
 * whole [vdso] mapping). Returns 0, or -ENOENT when there is none.
 */
int own_vdso(uintptr_t *base, size_t *size);

#endif /* PROFD_PROC_VDSO_H */
