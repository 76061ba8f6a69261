// SPDX-License-Identifier: GPL-2.0
/*
 * resolve.c - looking a file offset up in one symbolizer object (see
 * symbolizer.h: sym_object_resolve()).
 *
 * Owns: the per-object caches, both open addressing:
 *   - file offset -> result (hits and misses), emptied wholesale when it
 *     grows past OFFSET_CACHE_MAX entries;
 *   - symbol name -> demangled name, computed once per name.
 * The offset map may be emptied alone; both go with the symbol table
 * when it is shed for the budget (budget.c: names handed out are copied
 * by their users under the lock). A copy resolves through the object it
 * copies; in the vDSO a miss is named by its FDE (vdso_object.c); a Go
 * executable's pcs are named by its pclntab first (go_symtab.c). A
 * miss in an object whose debug file debuginfod is fetching says so
 * (-EINPROGRESS); attaching it empties both caches (debuginfod_attach.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/demangle.h"
#include "symbol/elf_file.h"
#include "symbol/symbolizer_internal.h"
#include "util/clock.h"

/* Frames asked of a Go pc for its real function (the last). */
#define GO_FRAMES_MAX	16

static uint64_t ptr_hash(const void *p)
{
	return sym_mix64((uint64_t)(uintptr_t)p);
}

static struct off_slot *off_find(struct sym_object *o, uint64_t off)
{
	uint32_t mask = o->offs_cap - 1, i;

	if (!o->offs_cap)
		return NULL;
	for (i = (uint32_t)sym_mix64(off) & mask;; i = (i + 1) & mask) {
		struct off_slot *sl = &o->offs[i];

		if (sl->state == SLOT_EMPTY)
			return NULL;
		if (sl->offset == off)
			return sl;
	}
}

static void off_put_slot(struct off_slot *tab, uint32_t cap,
			 const struct off_slot *v)
{
	uint32_t mask = cap - 1, i;

	for (i = (uint32_t)sym_mix64(v->offset) & mask;
	     tab[i].state != SLOT_EMPTY; i = (i + 1) & mask)
		;
	tab[i] = *v;
}

/* Remember @v (not present yet). Silently drops it on out of memory. */
static void off_insert(struct sym_object *o, const struct off_slot *v)
{
	if (o->offs_n >= OFFSET_CACHE_MAX) {
		memset(o->offs, 0, o->offs_cap * sizeof(*o->offs));
		o->offs_n = 0;
	}
	/* Keep the load at or under one half. */
	if ((o->offs_n + 1) * 2 > o->offs_cap) {
		uint32_t ncap = o->offs_cap ? o->offs_cap * 2 : 64, i;
		struct off_slot *nt = calloc(ncap, sizeof(*nt));

		if (!nt)
			return;
		for (i = 0; i < o->offs_cap; i++)
			if (o->offs[i].state != SLOT_EMPTY)
				off_put_slot(nt, ncap, &o->offs[i]);
		free(o->offs);
		o->offs = nt;
		o->offs_cap = ncap;
	}
	off_put_slot(o->offs, o->offs_cap, v);
	o->offs_n++;
}

/*
 * The display name of @sys (a name owned by o->ef): its demangled form,
 * computed once and kept for the object's lifetime, or @sys itself.
 */
static const char *display_name(struct sym_object *o, const char *sys)
{
	uint32_t mask, i;
	char *dem;

	if (o->names_cap) {
		mask = o->names_cap - 1;
		for (i = (uint32_t)ptr_hash(sys) & mask;
		     o->names[i].system_name; i = (i + 1) & mask)
			if (o->names[i].system_name == sys)
				return o->names[i].name ? o->names[i].name :
							  sys;
	}
	if ((o->names_n + 1) * 2 > o->names_cap) {
		uint32_t ncap = o->names_cap ? o->names_cap * 2 : 64, j;
		struct name_slot *nt = calloc(ncap, sizeof(*nt));

		if (!nt)
			return sys;
		for (j = 0; j < o->names_cap; j++) {
			struct name_slot *sl = &o->names[j];

			if (!sl->system_name)
				continue;
			for (i = (uint32_t)ptr_hash(sl->system_name) & (ncap - 1);
			     nt[i].system_name; i = (i + 1) & (ncap - 1))
				;
			nt[i] = *sl;
		}
		free(o->names);
		o->names = nt;
		o->names_cap = ncap;
	}
	mask = o->names_cap - 1;
	for (i = (uint32_t)ptr_hash(sys) & mask; o->names[i].system_name;
	     i = (i + 1) & mask)
		;
	dem = demangle(sys);
	o->names[i].system_name = sys;
	o->names[i].name = dem;
	o->names_n++;
	return dem ? dem : sys;
}

/* sym_object_forget - see symbolizer_internal.h. */
uint64_t sym_object_forget(struct sym_object *o)
{
	uint64_t bytes = (uint64_t)o->offs_cap * sizeof(*o->offs) +
			 (uint64_t)o->names_cap * sizeof(*o->names);

	for (uint32_t i = 0; i < o->names_cap; i++)
		free(o->names[i].name);
	free(o->names);
	o->names = NULL;
	o->names_cap = o->names_n = 0;
	free(o->offs);
	o->offs = NULL;
	o->offs_cap = o->offs_n = 0;
	return bytes;
}

/*
 * sym_object_resolve - see symbolizer.h. The strings in @out stay valid
 * until @o is freed.
 */
int sym_object_resolve(struct sym_object *o, uint64_t file_offset,
		       struct sym_result *out)
{
	struct off_slot *sl = off_find(o, file_offset);
	struct off_slot v = { .offset = file_offset, .state = SLOT_MISS };
	uint64_t vaddr;

	if (o->owner)
		o->last_use = ++o->owner->clock;
	if (o->same)	/* a copy: resolved by the object of the first */
		return sym_object_resolve(o->same, file_offset, out);
	if (o->too_big)	/* larger than the budget: not read (budget.c) */
		return -EFBIG;
	if (o->shed)	/* not read here: the writer does no file I/O */
		return -EAGAIN;
	o->resolved_ns = clock_mono_ns();

	if (!sl) {
		if (!elf_file_offset_to_vaddr(o->ef, file_offset, &vaddr)) {
			struct sym_frame fr[GO_FRAMES_MAX];
			int n = o->vdso ? -ENOENT :
				elf_file_go_frames(o->ef, vaddr, fr, GO_FRAMES_MAX,
						   &v.sym_vaddr);

			/* Go's names as the runtime prints them: not demangled */
			if (n > 0) {
				v.name = v.system_name = fr[n - 1].name;
				v.file = fr[n - 1].file;
				v.line = fr[n - 1].line;
				v.state = SLOT_HIT;
			} else if ((v.system_name = elf_file_lookup(o->ef, vaddr,
								    &v.sym_vaddr))) {
				v.name = display_name(o, v.system_name);
				v.state = SLOT_HIT;
			} else if (o->vdso) {
				v.system_name = sym_vdso_fde_name(o, vaddr,
							      &v.sym_vaddr);
				v.name = v.system_name;
				if (v.name)
					v.state = SLOT_HIT;
			}
		}
		off_insert(o, &v);
		sl = &v;
	}
	if (sl->state != SLOT_HIT)
		return sym_fetched_pending(o) ? -EINPROGRESS :
		       sym_fetched_failed(o) ? -ENOLINK : -ENOENT;
	out->name = sl->name;
	out->system_name = sl->system_name;
	out->sym_vaddr = sl->sym_vaddr;
	out->file = sl->file;
	out->line = sl->line;
	return 0;
}
