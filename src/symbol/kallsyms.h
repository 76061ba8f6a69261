/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kallsyms.h - kernel symbols from /proc/kallsyms (modules included).
 *
 * Owns: a sorted table of kernel text symbols and the address lookup.
 */
#ifndef PROFD_SYMBOL_KALLSYMS_H
#define PROFD_SYMBOL_KALLSYMS_H

#include <stdint.h>

struct ksym {
	uint64_t addr;
	const char *name;	/* owned by the table */
	const char *module;	/* "" for vmlinux, else the module name */
};

struct kallsyms;

/*
 * kallsyms_load - parse @path (normally "/proc/kallsyms"), keeping text
 * symbols (t/T/w/W). Returns NULL and *@err = -EPERM when every address
 * reads as zero (kptr_restrict; needs root/CAP_SYSLOG), -ENOENT, -ENOMEM.
 */
struct kallsyms *kallsyms_load(const char *path, int *err);

/* kallsyms_free - free @k and every name it handed out. NULL is fine. */
void kallsyms_free(struct kallsyms *k);

/*
 * kallsyms_lookup - the symbol at or below @addr, or NULL when @addr is
 * below all symbols or past the end of the text that symbol is in: at
 * or past vmlinux's _etext/_einittext (up to the next symbol), or more
 * than 64 KiB past the last symbol of a module (or of vmlinux, when the
 * file lacks those markers). See kallsyms.c for the rules.
 */
const struct ksym *kallsyms_lookup(const struct kallsyms *k, uint64_t addr);

/*
 * kallsyms_range - the text of vmlinux's function @name: [*@start, *@end)
 * in bytes, from its address to the next symbol's (at most 64 KiB when it
 * is the last). Returns 0, or -ENOENT when @k (NULL is fine) has no such
 * vmlinux symbol. For callers that test many addresses against one
 * function without a lookup each.
 */
int kallsyms_range(const struct kallsyms *k, const char *name, uint64_t *start,
		   uint64_t *end);

/* kallsyms_count - number of symbols held. */
uint64_t kallsyms_count(const struct kallsyms *k);

#endif /* PROFD_SYMBOL_KALLSYMS_H */
