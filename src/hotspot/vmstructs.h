/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vmstructs.h - a live JVM's own description of itself: the
 * Serviceability Agent's tables (HotSpot's vmStructs.cpp), read from the
 * process, so that no per-version table of offsets is needed.
 *
 * Owns: struct hs_vmstructs, a copy of the four tables, sorted for
 * lookup: "Type::field" -> offset (a nonstatic field) or address (a
 * static one), "Type" -> size, constant name -> value.
 *
 * The tables (vmStructs.hpp): arrays of entries of a stride the JVM
 * exports, each ended by an entry whose first name is NULL:
 *   VMStructEntry { typeName, fieldName, typeString, isStatic (int32),
 *                   offset (uint64), address (void *) }
 *   VMTypeEntry   { typeName, superclassName, isOopType, isIntegerType,
 *                   isUnsigned (int32 each), size (uint64) }
 *   VMIntConstantEntry  { name, value (int32) }
 *   VMLongConstantEntry { name, value (uint64) }
 * The positions of the members come from the exported
 * gHotSpotVM*Offset symbols, never from a header (detect.h).
 *
 * Untrusted memory: each table is cut at HS_VM_MAX_ENTRIES entries,
 * each name at HS_VM_NAME_MAX bytes; an entry whose names are unreadable
 * or unterminated is left out; every failure is a named counter.
 */
#ifndef PROFD_HOTSPOT_VMSTRUCTS_H
#define PROFD_HOTSPOT_VMSTRUCTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hotspot/detect.h"

#define HS_VM_MAX_ENTRIES	16384	/* per table: JDK 17 and 25 have < 2000 */
#define HS_VM_NAME_MAX		256	/* bytes of a name, NUL included */
#define HS_VM_STRIDE_MAX	256	/* bytes of one entry */

struct hs_vm_field {
	const char *type, *name;	/* "CodeBlob", "_name" */
	const char *type_string;	/* the field's C++ type: "char*", "int", "" if none */
	bool is_static;
	uint64_t offset;		/* nonstatic: bytes from the object's start */
	uint64_t address;		/* static: runtime address of the variable */
};

struct hs_vm_type {
	const char *name, *super;	/* super "" when none */
	bool is_oop, is_int, is_unsigned;
	uint64_t size;			/* sizeof, bytes */
};

struct hs_vm_const {
	const char *name;
	int64_t value;			/* an int constant sign-extended */
};

struct hs_vmstructs {
	struct hs_vm_field *fields;	/* sorted by (type, name) */
	size_t nfields;
	struct hs_vm_type *types;	/* sorted by name */
	size_t ntypes;
	struct hs_vm_const *ints, *longs;	/* sorted by name */
	size_t nints, nlongs;
	char *names;			/* every name, one blob */
	size_t bytes;			/* heap bytes held */
	uint64_t remote_reads;		/* reads of the process it took */
	size_t skipped;			/* entries left out (unreadable names) */
	bool capped;			/* a table was cut at HS_VM_MAX_ENTRIES */
};

struct remote_reader;

/*
 * hs_vmstructs_read - read the four tables of the JVM @bin mapped at
 * load bias @bias in process @pid through @r into @out (caller-owned,
 * filled; free with hs_vmstructs_free(), also after an error). Returns
 * 0; -EAGAIN when the JVM has not set its tables up yet (a stride or a
 * table pointer still 0: libjvm's initialisers have not run; try again
 * later); -EPROTO when the entry layout it exports is impossible (an
 * offset past the stride, a stride over HS_VM_STRIDE_MAX, no entry at
 * all); -ENOMEM; or the read error (-ESRCH gone, -EFAULT, -ETIMEDOUT).
 * Each failure is counted (hotspot_vmstructs_*).
 */
int hs_vmstructs_read(struct remote_reader *r, pid_t pid, const struct hs_binary *bin,
		      uint64_t bias, struct hs_vmstructs *out);

/* hs_vmstructs_free - free @vm's contents and leave it empty. */
void hs_vmstructs_free(struct hs_vmstructs *vm);

/* hs_vm_field - the entry of @type's field @name, or NULL. Borrowed from @vm. */
const struct hs_vm_field *hs_vm_field(const struct hs_vmstructs *vm, const char *type,
				      const char *name);

/* hs_vm_type - the entry of type @name, or NULL. Borrowed from @vm. */
const struct hs_vm_type *hs_vm_type(const struct hs_vmstructs *vm, const char *name);

/* hs_vm_int, hs_vm_long - constant @name's value into *@v; false if absent. */
bool hs_vm_int(const struct hs_vmstructs *vm, const char *name, int64_t *v);
bool hs_vm_long(const struct hs_vmstructs *vm, const char *name, int64_t *v);

#endif /* PROFD_HOTSPOT_VMSTRUCTS_H */
