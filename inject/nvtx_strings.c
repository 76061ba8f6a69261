// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nvtx_strings.c - NVTX message texts: UTF-8 bytes, hashes, and the
 * per-thread cache of texts already defined.
 *
 * Owns: turning an NVTX message into the bytes that travel in a
 * PROFD_NVTX_STRING definition (ASCII used in place, wchar_t converted to
 * UTF-8, both cut at PROFD_NVTX_STRING_MAX on a character boundary), and
 * struct nvtx_strings: an open-addressing table text -> string id, one
 * per thread (used under that thread's batch lock only), compared by
 * content because a message pointer may be a buffer the caller rewrites.
 * It grows from 256 slots and is emptied when it holds NVTX_STRINGS_MAX
 * texts: a thread then defines its texts again under new ids, which the
 * contract allows, so memory stays bounded whatever the program names.
 */
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "nvtx.h"

#define SLOTS_MIN 256

struct nvtx_string_slot {
	uint64_t hash;		/* 0: empty */
	char *text;		/* malloc'ed copy, len bytes */
	uint32_t len;
	uint32_t id;
};

/* Cut an ASCII/UTF-8 text to max bytes without splitting a character. */
static uint32_t cut_utf8(const char *s, uint32_t max)
{
	uint32_t len = max;

	/* s[len] is the first byte left out: back off while it continues a char */
	while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
		len--;
	return len;
}

/* Encode code point c at out; returns bytes written (1..4). */
static uint32_t put_utf8(char *out, uint32_t c)
{
	if (c >= 0xd800 && c <= 0xdfff)
		c = 0xfffd;	/* a lone surrogate is no character */
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	if (c > 0x10ffff)
		return put_utf8(out, 0xfffd);
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* wchar_t (UTF-32 on Linux) to UTF-8 in buf; cut when it would not fit. */
static void wide_to_utf8(const wchar_t *w, char *buf, struct nvtx_text *t)
{
	char enc[4];
	uint32_t len = 0, n;

	t->cut = 0;
	for (; *w; w++) {
		n = put_utf8(enc, (uint32_t)*w);
		if (len + n > PROFD_NVTX_STRING_MAX) {
			t->cut = 1;
			break;
		}
		memcpy(buf + len, enc, n);
		len += n;
	}
	t->s = buf;
	t->len = len;
}

int nvtx_text_get(const struct nvtx_msg *m, char *buf, struct nvtx_text *t)
{
	size_t len;

	if (!m || !m->p)
		return -1;
	switch (m->type) {
	case NVTX_MSG_ASCII:
		t->s = m->p;
		len = strnlen(t->s, PROFD_NVTX_STRING_MAX + 1);
		t->cut = len > PROFD_NVTX_STRING_MAX;
		t->len = t->cut ? cut_utf8(t->s, PROFD_NVTX_STRING_MAX) : (uint32_t)len;
		return 0;
	case NVTX_MSG_UNICODE:
		wide_to_utf8(m->p, buf, t);
		return 0;
	default:
		return -1;
	}
}

uint64_t nvtx_text_hash(const struct nvtx_text *t)
{
	const unsigned char *p = (const unsigned char *)t->s;
	uint32_t n = t->len;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;

	for (; n >= 8; n -= 8, p += 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	if (n) {
		w = 0;
		memcpy(&w, p, n);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h ? h : 1;
}

uint32_t nvtx_strings_find(const struct nvtx_strings *c, const struct nvtx_text *t,
			   uint64_t h)
{
	const struct nvtx_string_slot *s;
	uint32_t i;

	if (!c->slots)
		return 0;
	for (i = (uint32_t)h & c->mask;; i = (i + 1) & c->mask) {
		s = &c->slots[i];
		if (!s->hash)
			return 0;
		if (s->hash == h && s->len == t->len && !memcmp(s->text, t->s, t->len))
			return s->id;
	}
}

static void slot_put(struct nvtx_string_slot *slots, uint32_t mask,
		     const struct nvtx_string_slot *src)
{
	uint32_t i;

	for (i = (uint32_t)src->hash & mask; slots[i].hash; i = (i + 1) & mask)
		;
	slots[i] = *src;
}

/* Double the table; -1 without memory (the old one is kept). */
static int grow(struct nvtx_strings *c)
{
	uint32_t n = c->mask + 1, i;
	struct nvtx_string_slot *s = calloc(2 * n, sizeof(*s));

	if (!s)
		return -1;
	for (i = 0; i < n; i++)
		if (c->slots[i].hash)
			slot_put(s, 2 * n - 1, &c->slots[i]);
	free(c->slots);
	c->slots = s;
	c->mask = 2 * n - 1;
	return 0;
}

void nvtx_strings_reset(struct nvtx_strings *c)
{
	uint32_t i;

	if (c->slots) {
		for (i = 0; i <= c->mask; i++)
			free(c->slots[i].text);
		free(c->slots);
	}
	c->slots = NULL;
	c->mask = 0;
	c->used = 0;
}

int nvtx_strings_add(struct nvtx_strings *c, const struct nvtx_text *t,
		     uint64_t h, uint32_t id)
{
	struct nvtx_string_slot s = { .hash = h, .len = t->len, .id = id };

	if (c->used >= NVTX_STRINGS_MAX)
		nvtx_strings_reset(c);
	if (!c->slots) {
		c->slots = calloc(SLOTS_MIN, sizeof(*c->slots));
		if (!c->slots)
			return -1;
		c->mask = SLOTS_MIN - 1;
	}
	/* keep the table at most 3/4 full */
	if ((c->used + 1) * 4 > (c->mask + 1) * 3 && grow(c) < 0)
		return -1;
	s.text = malloc(t->len ? t->len : 1);
	if (!s.text)
		return -1;
	memcpy(s.text, t->s, t->len);
	slot_put(c->slots, c->mask, &s);
	c->used++;
	return 0;
}
