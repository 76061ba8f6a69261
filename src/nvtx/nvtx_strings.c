// SPDX-License-Identifier: GPL-2.0
/*
 * nvtx_strings.c - each process's NVTX strings: id -> text.
 *
 * Owns: the string table of a process (struct nvtx_strtab), bounded by
 * NVTX_MAX_STRINGS strings and NVTX_MAX_STRING_BYTES of text per process
 * and NVTX_MAX_ALL_STR_BYTES for all, least recently used (defined or
 * looked up) evicted first; the refcounts that keep a string alive while
 * a range, mark or name holds it after eviction or redefinition; making
 * text valid UTF-8 (OTLP strings must be).
 */
#include <stdlib.h>
#include <string.h>

#include "nvtx/nvtx_internal.h"
#include "util/utf8.h"

struct nvtx_str nvtx_str_unknown = {
	.text = NVTX_UNKNOWN_STRING,
	.len = sizeof(NVTX_UNKNOWN_STRING) - 1,
	.is_static = true,
};

/*
 * nvtx_utf8_sanitize - replace each byte of @s[0..len) that is not part
 * of a valid UTF-8 sequence (and each NUL) by '?', in place, so the text
 * is a valid OTLP string of the same length. Returns the bytes replaced.
 */
size_t nvtx_utf8_sanitize(char *s, size_t len)
{
	unsigned char *u = (unsigned char *)s;
	size_t i = 0, bad = 0;

	while (i < len) {
		size_t n = u[i] ? utf8_seq_len(u + i, len - i) : 0;

		if (!n) {
			u[i++] = '?';
			bad++;
			continue;
		}
		i += n;
	}
	return bad;
}

void nvtx_str_put(struct nvtx_str *s)
{
	if (!s || s->is_static)
		return;
	if (--s->refs == 0)
		free(s);
}

static void lru_unlink(struct nvtx_strtab *tab, struct nvtx_str *s)
{
	if (s->lru_prev)
		s->lru_prev->lru_next = s->lru_next;
	else
		tab->lru_head = s->lru_next;
	if (s->lru_next)
		s->lru_next->lru_prev = s->lru_prev;
	else
		tab->lru_tail = s->lru_prev;
	s->lru_prev = s->lru_next = NULL;
}

static void lru_push_head(struct nvtx_strtab *tab, struct nvtx_str *s)
{
	s->lru_prev = NULL;
	s->lru_next = tab->lru_head;
	if (tab->lru_head)
		tab->lru_head->lru_prev = s;
	else
		tab->lru_tail = s;
	tab->lru_head = s;
}

/* Take @s out of its table (holders keep it alive). */
static void table_remove(struct nvtx_tracer *t, struct nvtx_strtab *tab, struct nvtx_str *s)
{
	idmap_del(&tab->ids, s->id);
	lru_unlink(tab, s);
	tab->bytes -= s->len;
	t->str_bytes -= s->len;
	s->in_table = false;
	nvtx_str_put(s);
}

/*
 * nvtx_str_define - @p defines string @id as @len bytes of @text (made
 * valid UTF-8), replacing an earlier definition of @id and evicting the
 * least recently used strings over the bounds. Returns the string (the
 * table's reference, borrowed) or NULL (counted tables_full).
 */
struct nvtx_str *nvtx_str_define(struct nvtx_tracer *t, struct nvtx_proc *p, uint32_t id,
				 const char *text, size_t len)
{
	struct nvtx_strtab *tab = &p->strings;
	struct nvtx_str *s = idmap_get(&tab->ids, id);

	if (s)
		table_remove(t, tab, s);
	while (tab->ids.n >= NVTX_MAX_STRINGS ||
	       tab->bytes + len > NVTX_MAX_STRING_BYTES ||
	       t->str_bytes + len > NVTX_MAX_ALL_STR_BYTES) {
		if (!tab->lru_tail) {
			NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
			return NULL;
		}
		table_remove(t, tab, tab->lru_tail);
	}
	s = malloc(sizeof(*s) + len + 1);
	if (!s) {
		NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
		return NULL;
	}
	memset(s, 0, sizeof(*s));
	memcpy(s->buf, text, len);
	s->buf[len] = '\0';
	nvtx_utf8_sanitize(s->buf, len);
	s->text = s->buf;
	s->len = len;
	s->id = id;
	s->refs = 1;
	s->in_table = true;
	if (idmap_put(&tab->ids, id, s)) {
		free(s);
		NVTX_COUNT(t, tables_full, nvtx_tables_full, 1);
		return NULL;
	}
	lru_push_head(tab, s);
	tab->bytes += len;
	t->str_bytes += len;
	return s;
}

/*
 * nvtx_str_lookup - the string @id of @p (borrowed: nvtx_str_get() to
 * keep it), now its most recently used. NULL for id 0 (no string);
 * &nvtx_str_unknown, counted strings_unknown, for an id not defined
 * (or evicted).
 */
struct nvtx_str *nvtx_str_lookup(struct nvtx_tracer *t, struct nvtx_proc *p, uint32_t id)
{
	struct nvtx_strtab *tab = &p->strings;
	struct nvtx_str *s;

	if (!id)
		return NULL;
	s = idmap_get(&tab->ids, id);
	if (!s) {
		NVTX_COUNT(t, strings_unknown, nvtx_strings_unknown, 1);
		return &nvtx_str_unknown;
	}
	if (tab->lru_head != s) {
		lru_unlink(tab, s);
		lru_push_head(tab, s);
	}
	return s;
}

/* nvtx_strtab_free - drop the table's references; holders keep theirs. */
void nvtx_strtab_free(struct nvtx_tracer *t, struct nvtx_proc *p)
{
	struct nvtx_strtab *tab = &p->strings;

	while (tab->lru_head)
		table_remove(t, tab, tab->lru_head);
	idmap_free(&tab->ids);
}
