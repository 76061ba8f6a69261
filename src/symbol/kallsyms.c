// SPDX-License-Identifier: GPL-2.0
/*
 * kallsyms.c - kernel symbols from /proc/kallsyms (see kallsyms.h).
 *
 * Owns: reading the file (its size reads as 0, so it is read to EOF in a
 * loop), one pass over the lines
 *   ffffffff81000000 T _stext
 *   ffffffffc0a01000 t nf_hook\t[nf_tables]
 * keeping text symbols, and the table sorted by address. The parser
 * writes a NUL over each separator of the buffer the file was read into;
 * then the kept names (and each module's name once) are copied into one
 * pool of their size and the buffer freed: ~5.6 MiB for this kernel's
 * 121k text symbols, where the file's buffer and the table had held
 * 11.5 MiB for the whole run.
 *
 * kallsyms has no sizes, so a lookup bounds the symbol it finds by what
 * the file does say:
 *   - vmlinux text ends at _etext (core text) and _einittext (init text);
 *     both are "T" symbols in the table, and an address that lands on
 *     one of them (at or past the end, up to the next real symbol) is
 *     outside the kernel's text: no symbol;
 *   - otherwise a symbol covers up to the next symbol when that one
 *     belongs to the same module (or both to vmlinux);
 *   - the last symbol of a run (its module's last one, or vmlinux's in a
 *     file without the end markers) covers at most KSYM_MAX_GAP bytes.
 *     That is more than any function this kernel's own vmlinux has
 *     (largest gap between its consecutive symbols, holes aside, is
 *     ~20 KiB), and it keeps code kallsyms does not list (a trampoline
 *     after a module) from being named after the module's last function.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbol/kallsyms.h"

#define KSYM_MAX_GAP	(64 << 10)	/* bytes past the last symbol of a run */

struct kallsyms {
	struct ksym *syms;
	size_t n;
	char *text;		/* names and module names; syms point into it */
};

/* Read all of @path into a NUL-terminated malloc'd buffer. */
static int read_file(const char *path, char **out, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	int fd, err = 0;
	char *buf;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r;

		if (cap - n < 65536 + 1) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static const signed char hexdigit[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5,
	['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

static bool is_text_type(char t)
{
	return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Same address: keep file order (names point into the buffer). */
	return x->name < y->name ? -1 : x->name > y->name;
}

/*
 * Parse the buffer in place. Each kept line gets its name (and module)
 * NUL-terminated inside @text. Sets *@nonzero when any address is not 0.
 */
static int parse(struct kallsyms *k, char *text, size_t len, bool *nonzero)
{
	char *p = text, *end = text + len;
	size_t cap = 1 << 16;

	k->syms = malloc(cap * sizeof(*k->syms));
	if (!k->syms)
		return -ENOMEM;
	*nonzero = false;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *eol = nl ? nl : end, *name, *mod = NULL, *q;
		uint64_t addr = 0;
		int digits = 0, d;
		char type;

		while (p < eol && (d = hexdigit[(unsigned char)*p]) && digits < 16) {
			addr = (addr << 4) | (uint64_t)(d - 1);
			digits++;
			p++;
		}
		if (!digits || eol - p < 4 || p[0] != ' ' || p[2] != ' ')
			goto next;
		if (addr)
			*nonzero = true;
		type = p[1];
		if (!is_text_type(type))
			goto next;
		name = p + 3;
		/* "name" or "name\t[module]" */
		for (q = name; q < eol && *q != '\t' && *q != ' '; q++)
			;
		if (q == name)
			goto next;
		if (q < eol) {
			char *m = q + 1, *close;

			while (m < eol && (*m == ' ' || *m == '\t'))
				m++;
			if (m < eol && *m == '[') {
				close = memchr(m, ']', (size_t)(eol - m));
				if (close) {
					*close = '\0';
					mod = m + 1;
				}
			}
		}
		*q = '\0';
		if (k->n == cap) {
			struct ksym *nv = realloc(k->syms,
						  2 * cap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			k->syms = nv;
			cap *= 2;
		}
		k->syms[k->n++] = (struct ksym){
			.addr = addr,
			.name = name,
			.module = mod ? mod : "",
		};
next:
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/*
 * Copy the kept names, in file order (cmp_ksym's tie-break on name
 * pointers still holds), and each run's module name once, into a pool
 * of their size; free the file's buffer and the table's spare room.
 */
static int compact(struct kallsyms *k)
{
	size_t bytes = 1;
	const char *prev = NULL;
	char *pool, *p, *mod = NULL;
	struct ksym *v;

	for (size_t i = 0; i < k->n; i++) {
		bytes += strlen(k->syms[i].name) + 1;
		if (k->syms[i].module[0] && (!prev || strcmp(prev, k->syms[i].module)))
			bytes += strlen(k->syms[i].module) + 1;
		if (k->syms[i].module[0])
			prev = k->syms[i].module;
	}
	pool = malloc(bytes);
	if (!pool)
		return -ENOMEM;
	p = pool;
	prev = NULL;
	for (size_t i = 0; i < k->n; i++) {
		struct ksym *s = &k->syms[i];
		size_t len = strlen(s->name) + 1;

		memcpy(p, s->name, len);
		s->name = p;
		p += len;
		if (!s->module[0])
			continue;
		if (!prev || strcmp(prev, s->module)) {
			prev = s->module;
			len = strlen(s->module) + 1;
			memcpy(p, s->module, len);
			mod = p;
			p += len;
		}
		s->module = mod;
	}
	free(k->text);
	k->text = pool;
	v = realloc(k->syms, (k->n ? k->n : 1) * sizeof(*v));
	if (v)
		k->syms = v;
	return 0;
}

/*
 * kallsyms_load - see kallsyms.h. The table owns its names' pool plus
 * 24 bytes per text symbol.
 */
struct kallsyms *kallsyms_load(const char *path, int *err)
{
	struct kallsyms *k;
	bool nonzero;
	size_t len = 0;
	int ret;

	k = calloc(1, sizeof(*k));
	if (!k) {
		*err = -ENOMEM;
		return NULL;
	}
	ret = read_file(path, &k->text, &len);
	if (ret)
		goto fail;
	ret = parse(k, k->text, len, &nonzero);
	if (ret)
		goto fail;
	if (k->n && !nonzero) {
		ret = -EPERM;
		goto fail;
	}
	ret = compact(k);
	if (ret)
		goto fail;
	qsort(k->syms, k->n, sizeof(*k->syms), cmp_ksym);
	return k;

fail:
	kallsyms_free(k);
	*err = ret;
	return NULL;
}

/* kallsyms_free - free @k and every name it handed out. NULL is fine. */
void kallsyms_free(struct kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->text);
	free(k);
}

/* vmlinux's "end of text" markers: nothing at or after them is code. */
static bool is_text_end(const struct ksym *k)
{
	return !k->module[0] &&
	       (!strcmp(k->name, "_etext") || !strcmp(k->name, "_einittext"));
}

/*
 * kallsyms_lookup - see kallsyms.h. Of several symbols at the same
 * address, the first in file order is returned. Result owned by @k.
 */
const struct ksym *kallsyms_lookup(const struct kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n, first, i;
	const struct ksym *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* [first, lo) are the symbols at the address found. */
	first = lo - 1;
	while (first && k->syms[first - 1].addr == k->syms[lo - 1].addr)
		first--;
	s = &k->syms[first];
	for (i = first; i < lo; i++)
		if (is_text_end(&k->syms[i]))
			return NULL;
	if (lo < k->n && !strcmp(k->syms[lo].module, s->module))
		return s;	/* addr < the next symbol of the same run */
	return addr - s->addr < KSYM_MAX_GAP ? s : NULL;
}

/* kallsyms_range - see kallsyms.h. */
int kallsyms_range(const struct kallsyms *k, const char *name, uint64_t *start,
		   uint64_t *end)
{
	for (size_t i = 0; k && i < k->n; i++) {
		const struct ksym *s = &k->syms[i];
		size_t j = i + 1;

		if (s->module[0] || strcmp(s->name, name))
			continue;
		while (j < k->n && k->syms[j].addr == s->addr)
			j++;
		*start = s->addr;
		*end = j < k->n && !strcmp(k->syms[j].module, s->module) ?
		       k->syms[j].addr : s->addr + KSYM_MAX_GAP;
		return 0;
	}
	return -ENOENT;
}

/* kallsyms_count - see kallsyms.h. */
uint64_t kallsyms_count(const struct kallsyms *k)
{
	return k->n;
}
