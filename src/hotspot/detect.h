/* SPDX-License-Identifier: GPL-2.0 */
/*
 * detect.h - is this ELF object a HotSpot JVM (libjvm.so), and where are
 * its serviceability tables?
 *
 * Owns: recognising HotSpot by its symbols, never by file name: an
 * object that defines `gHotSpotVMStructs` and the other exported
 * `gHotSpotVM*` symbols the Serviceability Agent reads (vmStructs.cpp:
 * the structs, types, int and long constants tables and the offsets and
 * strides of their entries) is a JVM, whether libjvm.so of any vendor, a
 * renamed copy or a static launcher. The addresses are ELF virtual
 * addresses; the values behind them are read from the live process
 * (vmstructs.h): the entry offsets live in .bss, set when libjvm's static
 * initialisers run, and the table pointers are relocated.
 *
 * And finding a process's JVM: the first executable file mapping whose
 * file is one (through /proc/PID/map_files, src/runtime/file_cache.h),
 * with its load bias.
 */
#ifndef PROFD_HOTSPOT_DETECT_H
#define PROFD_HOTSPOT_DETECT_H

#include <stdint.h>
#include <sys/types.h>

/* The exported symbols, in this order in struct hs_binary's sym[]. */
enum hs_sym {
	HS_SYM_STRUCTS,			/* VMStructEntry *gHotSpotVMStructs */
	HS_SYM_STRUCT_TYPE_NAME,	/* uint64_t gHotSpotVMStructEntryTypeNameOffset */
	HS_SYM_STRUCT_FIELD_NAME,
	HS_SYM_STRUCT_TYPE_STRING,
	HS_SYM_STRUCT_IS_STATIC,
	HS_SYM_STRUCT_OFFSET,
	HS_SYM_STRUCT_ADDRESS,
	HS_SYM_STRUCT_STRIDE,		/* gHotSpotVMStructEntryArrayStride */
	HS_SYM_TYPES,			/* VMTypeEntry *gHotSpotVMTypes */
	HS_SYM_TYPE_TYPE_NAME,
	HS_SYM_TYPE_SUPER_NAME,
	HS_SYM_TYPE_IS_OOP,
	HS_SYM_TYPE_IS_INT,
	HS_SYM_TYPE_IS_UNSIGNED,
	HS_SYM_TYPE_SIZE,
	HS_SYM_TYPE_STRIDE,
	HS_SYM_INTS,			/* VMIntConstantEntry *gHotSpotVMIntConstants */
	HS_SYM_INT_NAME,
	HS_SYM_INT_VALUE,
	HS_SYM_INT_STRIDE,
	HS_SYM_LONGS,			/* VMLongConstantEntry *gHotSpotVMLongConstants */
	HS_SYM_LONG_NAME,
	HS_SYM_LONG_VALUE,
	HS_SYM_LONG_STRIDE,
	HS_SYM_COUNT
};

/* One JVM object: where each symbol is (ELF virtual addresses). */
struct hs_binary {
	uint64_t sym[HS_SYM_COUNT];
};

/* hs_sym_name - the symbol's name ("gHotSpotVMStructs", ...); static. */
const char *hs_sym_name(enum hs_sym s);

/*
 * hs_detect_fd - inspect the ELF object open on @fd (not taken over; read
 * with pread). Returns 1 and fills @out when it defines every symbol of
 * enum hs_sym, 0 when it defines none of them or is not ELF (or not a
 * regular file), -ENOTSUP when it defines gHotSpotVMStructs but not all
 * the others (a JVM this reader cannot describe), or a negative errno on
 * a read error. Untrusted file: a corrupt one is 0 or an error, never a
 * crash. Thread-safe.
 */
int hs_detect_fd(int fd, struct hs_binary *out);

struct proc_maps;

/*
 * hs_find_jvm - the JVM object mapped executable by process @pid (maps
 * @maps, read by the caller), detected through /proc/@pid/map_files:
 * its symbols in *@out and the mapping's load bias (runtime address =
 * ELF vaddr + bias) in *@bias. For a one-off look (tools, tests): it
 * keeps no cache. Returns 1 found, 0 none, -ENOTSUP (a JVM without every
 * table), or -ENOMEM.
 */
int hs_find_jvm(pid_t pid, const struct proc_maps *maps, struct hs_binary *out,
		uint64_t *bias);

#endif /* PROFD_HOTSPOT_DETECT_H */
