// SPDX-License-Identifier: GPL-2.0
/*
 * cubin.c - cubins read from process memory and their function symbols.
 *
 * Owns: the table of cubins by CRC (the key PC samples carry). The
 * injection library keeps a copy of each loaded module's cubin and sends
 * its address; the copy is read (through the hang-safe remote reader)
 * as that record arrives, while the process lives, once per CRC however
 * many processes load it, and parsed with libelf: each FUNC symbol becomes
 * (name, file offset, size), so a PC sample (function, offset in the
 * function) becomes an offset in the cubin file, the address of its
 * location in the PC-sample profile.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_internal.h"

static void load_once(struct gpu *g, struct gpu_cubin *c);

static struct gpu_cubin *cubin_find(struct gpu *g, uint64_t crc)
{
	struct gpu_cubin *c;

	if (!g->cubins_cap)
		return NULL;
	for (c = g->cubins[crc & (g->cubins_cap - 1)]; c; c = c->next)
		if (c->crc == crc)
			return c;
	return NULL;
}

void gpu_cubin_seen(struct gpu *g, pid_t pid, const struct profd_gpu_cubin *rec)
{
	struct gpu_cubin *c = cubin_find(g, rec->crc);

	if (!g->cubins_cap) {
		g->cubins = calloc(256, sizeof(*g->cubins));
		if (!g->cubins)
			return;
		g->cubins_cap = 256;
	}
	if (c) {
		/* not read yet: a newer copy in a live process is as good (a
		 * failed one is not tried again) */
		if (c->state == 0 && rec->image_ptr) {
			c->pid = pid;
			c->image_ptr = rec->image_ptr;
			c->size = rec->size;
		}
		return;
	}
	if (g->ncubins >= GPU_MAX_CUBINS)
		return;		/* its PC samples stay unresolved (counted) */
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->crc = rec->crc;
	c->pid = pid;
	c->image_ptr = rec->image_ptr;
	c->size = rec->size;
	c->state = rec->image_ptr ? 0 : -ENODATA;
	c->next = g->cubins[rec->crc & (g->cubins_cap - 1)];
	g->cubins[rec->crc & (g->cubins_cap - 1)] = c;
	g->ncubins++;
	/*
	 * Read it now, while the process surely lives: its PC samples come
	 * at its end (the library copies cubins only when they are collected).
	 */
	load_once(g, c);
}

static int sym_cmp(const void *a, const void *b)
{
	return strcmp(((const struct gpu_cubin_sym *)a)->name,
		      ((const struct gpu_cubin_sym *)b)->name);
}

/* Parse @image: FUNC symbols with their file offsets. */
static int parse(struct gpu_cubin *c, char *image, size_t size)
{
	Elf *e = elf_memory(image, size);
	Elf_Scn *scn = NULL;
	size_t strbytes = 0, n = 0;
	int ret = -ENOEXEC;

	if (!e)
		return -ENOEXEC;
	if (elf_kind(e) != ELF_K_ELF)
		goto out;
	/* two passes over the symbol tables: count, then copy */
	for (int pass = 0; pass < 2; pass++) {
		char *sp = c->strings;

		n = 0;
		scn = NULL;
		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
			    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
				continue;
			for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym s;
				GElf_Shdr tsh;
				Elf_Scn *ts;
				const char *name;

				if (!gelf_getsym(d, i, &s) ||
				    GELF_ST_TYPE(s.st_info) != STT_FUNC ||
				    s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE)
					continue;
				name = elf_strptr(e, sh.sh_link, s.st_name);
				ts = elf_getscn(e, s.st_shndx);
				if (!name || !*name || !ts || !gelf_getshdr(ts, &tsh))
					continue;
				if (pass == 0) {
					strbytes += strlen(name) + 1;
				} else {
					size_t len = strlen(name) + 1;

					memcpy(sp, name, len);
					c->syms[n].name = sp;
					sp += len;
					/* relocatable cubins: st_value is section-relative */
					c->syms[n].offset = tsh.sh_offset + s.st_value -
						(tsh.sh_addr && s.st_value >= tsh.sh_addr ?
						 tsh.sh_addr : 0);
					c->syms[n].size = s.st_size;
				}
				n++;
			}
		}
		if (pass == 0) {
			c->strings = malloc(strbytes ? strbytes : 1);
			c->syms = calloc(n ? n : 1, sizeof(*c->syms));
			if (!c->strings || !c->syms) {
				ret = -ENOMEM;
				goto out;
			}
		}
	}
	c->nsyms = n;
	qsort(c->syms, n, sizeof(*c->syms), sym_cmp);
	ret = 0;
out:
	elf_end(e);
	return ret;
}

static int load(struct gpu *g, struct gpu_cubin *c)
{
	char *image;
	int ret = 0;

	if (!c->size || c->size > GPU_MAX_CUBIN_BYTES ||
	    g->cubin_sym_bytes >= GPU_MAX_CUBIN_SYM_BYTES)
		return -EFBIG;
	image = malloc(c->size);
	if (!image)
		return -ENOMEM;
	for (uint64_t off = 0; off < c->size && !ret; off += REMOTE_READ_MAX) {
		uint64_t len = c->size - off < REMOTE_READ_MAX ? c->size - off :
			       REMOTE_READ_MAX;

		ret = remote_read(g->remote, c->pid, c->image_ptr + off,
				  image + off, len);
	}
	if (!ret)
		ret = parse(c, image, c->size);
	if (!ret)
		g->cubin_sym_bytes += c->nsyms * sizeof(*c->syms);
	free(image);
	return ret;
}

/* Read and parse @c once: 1 afterwards, or the -errno it failed with. */
static void load_once(struct gpu *g, struct gpu_cubin *c)
{
	if (c->state != 0)
		return;
	c->state = load(g, c);
	if (c->state == 0) {
		c->state = 1;
		GPU_STAT_ADD(g, cubins, 1);
	} else {
		GPU_COUNT(g, cubin_errors, gpu_cubin_errors, 1);
	}
}

bool gpu_cubin_resolve(struct gpu *g, uint64_t crc, const char *function,
		       uint64_t pc_offset, uint64_t *address)
{
	struct gpu_cubin *c = cubin_find(g, crc);
	struct gpu_cubin_sym key = { .name = function }, *s;

	if (!c)
		return false;
	load_once(g, c);
	if (c->state != 1)
		return false;
	s = bsearch(&key, c->syms, c->nsyms, sizeof(*c->syms), sym_cmp);
	if (!s || (s->size && pc_offset >= s->size))
		return false;
	*address = s->offset + pc_offset;
	return true;
}

void gpu_cubins_free(struct gpu *g)
{
	for (uint32_t i = 0; i < g->cubins_cap; i++) {
		while (g->cubins[i]) {
			struct gpu_cubin *c = g->cubins[i];

			g->cubins[i] = c->next;
			free(c->syms);
			free(c->strings);
			free(c);
		}
	}
	free(g->cubins);
	g->cubins = NULL;
	g->cubins_cap = 0;
}
