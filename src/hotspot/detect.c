// SPDX-License-Identifier: GPL-2.0
/*
 * detect.c - HotSpot JVMs recognised by their exported gHotSpotVM*
 * symbols (see detect.h).
 *
 * Owns: nothing past one call. The file is read through libelf with
 * ELF_C_READ (pread: a file truncated under us is a read error, never a
 * SIGBUS); the symbols come from .dynsym (libjvm exports them for the
 * Serviceability Agent) or .symtab (src/runtime/elf_syms.h), and a file
 * whose symbol strings do not hold "gHotSpotVMStructs" is rejected after
 * reading its section headers and string tables.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotspot/detect.h"
#include "proc/maps.h"
#include "runtime/elf_detect.h"
#include "runtime/elf_syms.h"
#include "runtime/file_cache.h"

static const char *const sym_names[HS_SYM_COUNT] = {
	[HS_SYM_STRUCTS]		= "gHotSpotVMStructs",
	[HS_SYM_STRUCT_TYPE_NAME]	= "gHotSpotVMStructEntryTypeNameOffset",
	[HS_SYM_STRUCT_FIELD_NAME]	= "gHotSpotVMStructEntryFieldNameOffset",
	[HS_SYM_STRUCT_TYPE_STRING]	= "gHotSpotVMStructEntryTypeStringOffset",
	[HS_SYM_STRUCT_IS_STATIC]	= "gHotSpotVMStructEntryIsStaticOffset",
	[HS_SYM_STRUCT_OFFSET]		= "gHotSpotVMStructEntryOffsetOffset",
	[HS_SYM_STRUCT_ADDRESS]		= "gHotSpotVMStructEntryAddressOffset",
	[HS_SYM_STRUCT_STRIDE]		= "gHotSpotVMStructEntryArrayStride",
	[HS_SYM_TYPES]			= "gHotSpotVMTypes",
	[HS_SYM_TYPE_TYPE_NAME]		= "gHotSpotVMTypeEntryTypeNameOffset",
	[HS_SYM_TYPE_SUPER_NAME]	= "gHotSpotVMTypeEntrySuperclassNameOffset",
	[HS_SYM_TYPE_IS_OOP]		= "gHotSpotVMTypeEntryIsOopTypeOffset",
	[HS_SYM_TYPE_IS_INT]		= "gHotSpotVMTypeEntryIsIntegerTypeOffset",
	[HS_SYM_TYPE_IS_UNSIGNED]	= "gHotSpotVMTypeEntryIsUnsignedOffset",
	[HS_SYM_TYPE_SIZE]		= "gHotSpotVMTypeEntrySizeOffset",
	[HS_SYM_TYPE_STRIDE]		= "gHotSpotVMTypeEntryArrayStride",
	[HS_SYM_INTS]			= "gHotSpotVMIntConstants",
	[HS_SYM_INT_NAME]		= "gHotSpotVMIntConstantEntryNameOffset",
	[HS_SYM_INT_VALUE]		= "gHotSpotVMIntConstantEntryValueOffset",
	[HS_SYM_INT_STRIDE]		= "gHotSpotVMIntConstantEntryArrayStride",
	[HS_SYM_LONGS]			= "gHotSpotVMLongConstants",
	[HS_SYM_LONG_NAME]		= "gHotSpotVMLongConstantEntryNameOffset",
	[HS_SYM_LONG_VALUE]		= "gHotSpotVMLongConstantEntryValueOffset",
	[HS_SYM_LONG_STRIDE]		= "gHotSpotVMLongConstantEntryArrayStride",
};

const char *hs_sym_name(enum hs_sym s)
{
	return (unsigned int)s < HS_SYM_COUNT ? sym_names[s] : "?";
}

int hs_detect_fd(int fd, struct hs_binary *out)
{
	struct runtime_elf_sym syms[HS_SYM_COUNT];
	size_t found;
	Elf *elf;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = runtime_elf_begin(fd, &elf);
	if (ret <= 0)
		return ret;
	found = runtime_elf_find_syms(elf, fd, sym_names, HS_SYM_COUNT, syms, sym_names[HS_SYM_STRUCTS]);
	elf_end(elf);
	if (!syms[HS_SYM_STRUCTS].found)
		return 0;
	for (int i = 0; i < HS_SYM_COUNT; i++)
		out->sym[i] = syms[i].value;
	return found == HS_SYM_COUNT ? 1 : -ENOTSUP;
}

/* The file cache's record: struct rt_file first. */
struct hs_file {
	struct rt_file f;
	struct hs_binary bin;
};

static int detect_record(int fd, struct rt_file *f)
{
	return hs_detect_fd(fd, &((struct hs_file *)f)->bin);
}

int hs_find_jvm(pid_t pid, const struct proc_maps *maps, struct hs_binary *out,
		uint64_t *bias)
{
	const struct proc_mapping *m = NULL;
	struct rt_file_cache *c = calloc(1, sizeof(*c));
	struct rt_file *f;
	int ret = 0;

	if (!c)
		return -ENOMEM;
	rt_file_cache_init(c, sizeof(struct hs_file), detect_record);
	f = rt_file_find(c, pid, maps, &m, bias);
	if (f) {
		*out = ((struct hs_file *)f)->bin;
		ret = f->result;
	}
	rt_file_cache_clear(c);
	free(c);
	return ret;
}
