// SPDX-License-Identifier: GPL-2.0
/*
 * symbols.c - where a CRuby process keeps its ID table, and the names of
 * operator IDs (see symbols.h).
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "ruby/symbols.h"

int rb_global_symbols_from_code(const uint8_t *code, size_t len, uint64_t fn,
				const struct rb_offsets *off, uint64_t *out)
{
	int32_t rel;

	if (len < RB_SYM_COUNT_CODE_LEN || code[0] != 0x8b || code[1] != 0x05 ||
	    code[6] != 0xc3)
		return 0;
	memcpy(&rel, code + 2, sizeof(rel));
	/* the rip-relative operand is last_id: the table starts before it */
	*out = fn + 6 + (int64_t)rel - off->symbols_last_id;
	return 1;
}

int rb_global_symbols_find_fd(int fd, uint64_t fn_vaddr,
			      const struct rb_offsets *off, uint64_t *out)
{
	uint8_t code[RB_SYM_COUNT_CODE_LEN];
	size_t nph = 0;
	int ret = 0;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EIO;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -EIO;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		elf_end(elf);
		return -EIO;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (fn_vaddr < ph.p_vaddr || ph.p_filesz < sizeof(code) ||
		    fn_vaddr - ph.p_vaddr > ph.p_filesz - sizeof(code))
			continue;
		if (pread(fd, code, sizeof(code),
			  (off_t)(ph.p_offset + (fn_vaddr - ph.p_vaddr))) != sizeof(code)) {
			ret = -EIO;
			break;
		}
		ret = rb_global_symbols_from_code(code, sizeof(code), fn_vaddr, off, out);
		break;
	}
	elf_end(elf);
	return ret;
}

/* parse.y's op_tbl (3.1), by token value (id.h: RUBY_TOKEN_DOT2 = 128 ...). */
static const char *const op_tbl[] = {
	[128 - 128] = "..",  [129 - 128] = "...", [130 - 128] = "..",
	[131 - 128] = "...", [132 - 128] = "+@",  [133 - 128] = "-@",
	[134 - 128] = "**",  [135 - 128] = "<=>", [136 - 128] = "<<",
	[137 - 128] = ">>",  [138 - 128] = "<=",  [139 - 128] = ">=",
	[140 - 128] = "==",  [141 - 128] = "===", [142 - 128] = "!=",
	[143 - 128] = "=~",  [144 - 128] = "!~",  [145 - 128] = "[]",
	[146 - 128] = "[]=", [147 - 128] = "::",  [148 - 128] = "&&",
	[149 - 128] = "||",  [150 - 128] = "&.",
};

/* The one-character operator methods, whose ID is the character. */
static const char *const singles[] = {
	"!", "%", "&", "*", "+", "-", "/", "<", ">", "^", "`", "|", "~",
};

const char *rb_op_name(const struct rb_offsets *off, uint64_t id)
{
	if (id > off->last_op_id)
		return NULL;
	if (id >= 128 && id - 128 < sizeof(op_tbl) / sizeof(op_tbl[0]))
		return op_tbl[id - 128];
	for (size_t i = 0; i < sizeof(singles) / sizeof(singles[0]); i++)
		if ((uint64_t)(unsigned char)singles[i][0] == id)
			return singles[i];
	return NULL;
}
