// SPDX-License-Identifier: GPL-2.0
/*
 * rvalue.c - reading CRuby objects out of another process (see rvalue.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proc/remote.h"
#include "ruby/iseq.h"
#include "ruby/rvalue.h"
#include "util/utf8.h"

#define OBJ_HDR		40	/* sizeof(struct RString) = sizeof(struct RArray) (3.1) */
#define ST_ENTRY	24	/* st.c: struct st_table_entry {hash, key, record} */
#define SUCC_BLOCK	80	/* iseq.c: struct succ_dict_block */

int rv_read(struct rv_reader *r, uint64_t addr, void *buf, size_t len)
{
	int err;

	if (*r->budget < len)
		return -EAGAIN;
	*r->budget -= len;
	err = remote_read(r->remote, r->pid, addr, buf, len);
	if (err == -ETIMEDOUT && r->timeouts)
		(*r->timeouts)++;
	return err;
}

/* Read an object's first OBJ_HDR bytes, checking it has type @type. */
static int read_obj(struct rv_reader *r, const struct rb_offsets *off,
		    uint64_t v, unsigned int type, uint8_t hdr[OBJ_HDR])
{
	int err;

	if (!rv_is_obj(v))
		return -EINVAL;
	err = rv_read(r, v, hdr, OBJ_HDR);
	if (err)
		return err;
	return rv_type(off, rv_u64(hdr, 0)) == type ? 0 : -EINVAL;
}

/* @n bytes of @s as a C string: NULs as '?', valid UTF-8. */
static char *clean_copy(const char *s, size_t n)
{
	char *out = malloc(n + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++)
		out[i] = s[i] ? s[i] : '?';
	out[n] = 0;
	if (!utf8_valid(out)) {
		char *fixed = utf8_repair(out);

		free(out);
		out = fixed;
	}
	return out;
}

int rv_string(struct rv_reader *r, const struct rb_offsets *off, uint64_t v,
	      char **out)
{
	uint8_t hdr[OBJ_HDR];
	char buf[RB_NAME_MAX];
	uint64_t flags, ptr;
	int64_t len;
	int err;

	if (off->rstring_ptr + 8 > OBJ_HDR || off->rstring_len + 8 > OBJ_HDR ||
	    off->rstring_embed_ary >= OBJ_HDR)
		return -EINVAL;
	err = read_obj(r, off, v, off->t_string, hdr);
	if (err)
		return err;
	flags = rv_u64(hdr, 0);
	if (!(flags & off->rstring_noembed)) {
		len = (int64_t)((flags & off->rstring_embed_len_mask) >>
				off->rstring_embed_len_shift);
		if (len > OBJ_HDR - off->rstring_embed_ary)
			return -EINVAL;
		*out = clean_copy((const char *)hdr + off->rstring_embed_ary, (size_t)len);
		return *out ? 0 : -ENOMEM;
	}
	len = (int64_t)rv_u64(hdr, off->rstring_len);
	ptr = rv_u64(hdr, off->rstring_ptr);
	if (len < 0 || len > (1LL << 40) || (len && (!ptr || ptr >= (1ULL << 47))))
		return -EINVAL;
	if (len > RB_NAME_MAX)
		len = RB_NAME_MAX;	/* the rest is cut */
	if (len) {
		err = rv_read(r, ptr, buf, (size_t)len);
		if (err)
			return err;
	}
	*out = clean_copy(buf, (size_t)len);
	return *out ? 0 : -ENOMEM;
}

int rv_array_at(struct rv_reader *r, const struct rb_offsets *off, uint64_t ary,
		uint64_t i, uint64_t *out)
{
	uint8_t hdr[OBJ_HDR];
	uint64_t flags, len, ptr;
	int err;

	if (off->rarray_ptr + 8 > OBJ_HDR || off->rarray_len + 8 > OBJ_HDR ||
	    off->rarray_embed_ary >= OBJ_HDR)
		return -EINVAL;
	err = read_obj(r, off, ary, off->t_array, hdr);
	if (err)
		return err;
	flags = rv_u64(hdr, 0);
	if (flags & off->rarray_embed_flag) {
		len = (flags & off->rarray_embed_len_mask) >> off->rarray_embed_len_shift;
		if (len > (uint64_t)(OBJ_HDR - off->rarray_embed_ary) / 8)
			return -EINVAL;
		if (i >= len)
			return -ENOENT;
		*out = rv_u64(hdr, off->rarray_embed_ary + 8 * i);
		return 0;
	}
	len = rv_u64(hdr, off->rarray_len);
	ptr = rv_u64(hdr, off->rarray_ptr);
	if (len > (1ULL << 36) || (len && !rv_is_obj(ptr)))
		return -EINVAL;
	if (i >= len)
		return -ENOENT;
	return rv_read(r, ptr + 8 * i, out, 8);
}

int rv_class_ivars(struct rv_reader *r, const struct rb_offsets *off,
		   uint64_t klass, uint64_t *keys, uint64_t *vals, int max)
{
	uint8_t hdr[OBJ_HDR], st[64], ents[RV_IVTBL_MAX * ST_ENTRY];
	uint64_t ext, tbl, start, bound, entries;
	unsigned int type;
	int err, n = 0;

	if (off->rclass_ext + 8 > OBJ_HDR || off->st_entries + 8u > sizeof(st) ||
	    off->st_entries_start + 8u > sizeof(st) || off->st_entries_bound + 8u > sizeof(st))
		return -EINVAL;
	if (max > RV_IVTBL_MAX)
		max = RV_IVTBL_MAX;
	if (!rv_is_obj(klass))
		return -EINVAL;
	err = rv_read(r, klass, hdr, OBJ_HDR);
	if (err)
		return err;
	type = rv_type(off, rv_u64(hdr, 0));
	if (type != off->t_class && type != off->t_module && type != off->t_iclass)
		return -EINVAL;
	ext = rv_u64(hdr, off->rclass_ext);
	if (!rv_is_obj(ext))
		return -EINVAL;
	err = rv_read(r, ext + off->classext_iv_tbl, &tbl, 8);
	if (err)
		return err;
	if (!tbl)
		return 0;
	if (!rv_is_obj(tbl))
		return -EINVAL;
	err = rv_read(r, tbl, st, off->st_entries + 8);
	if (err)
		return err;
	start = rv_u64(st, off->st_entries_start);
	bound = rv_u64(st, off->st_entries_bound);
	entries = rv_u64(st, off->st_entries);
	if (start > bound || bound - start > (1u << 24) || (bound > start && !rv_is_obj(entries)))
		return -EINVAL;
	if (bound - start > (uint64_t)max)
		bound = start + (uint64_t)max;	/* a big table: its first entries only */
	if (bound == start)
		return 0;
	err = rv_read(r, entries + start * ST_ENTRY, ents, (bound - start) * ST_ENTRY);
	if (err)
		return err;
	for (uint64_t i = 0; i < bound - start; i++) {
		const uint8_t *e = ents + i * ST_ENTRY;

		if (rv_u64(e, 0) == ~0ULL)
			continue;	/* deleted (st.c: RESERVED_HASH_VAL) */
		keys[n] = rv_u64(e, 8);
		vals[n] = rv_u64(e, 16);
		n++;
	}
	return n;
}

/* succ_index_table_create()'s sizes (iseq.c). */
static void succ_sizes(uint32_t max_pos, unsigned int imm_table_size,
		       uint32_t *imm_size, uint32_t *succ_size)
{
	*imm_size = (max_pos < imm_table_size ? max_pos + 8 : imm_table_size) / 9;
	*succ_size = (max_pos < imm_table_size ? 0 : (max_pos - imm_table_size + 511)) / 512;
}

size_t rv_succ_table_len(uint32_t max_pos, unsigned int imm_table_size)
{
	uint32_t imm_size, succ_size;

	succ_sizes(max_pos, imm_table_size, &imm_size, &succ_size);
	return (size_t)imm_size * 8 + (size_t)succ_size * SUCC_BLOCK;
}

int rv_succ_positions(const uint8_t *table, size_t len, uint32_t max_pos,
		      unsigned int imm_table_size, uint32_t *pos, uint32_t cap)
{
	uint32_t imm_size, succ_size, rank = 0, n = 0;
	size_t succ_at = (size_t)(imm_table_size / 9) * 8;

	if (imm_table_size % 9 || imm_table_size >= 128 || !imm_table_size)
		return -EINVAL;
	succ_sizes(max_pos, imm_table_size, &imm_size, &succ_size);
	if (len < rv_succ_table_len(max_pos, imm_table_size) ||
	    (succ_size && len < succ_at + (size_t)succ_size * SUCC_BLOCK))
		return -EINVAL;
	/* the immediate part: the rank (positions <= x) of each x, 7 bits */
	for (uint32_t j = 0; j < imm_size; j++) {
		uint64_t w = rv_u64(table, 8 * j);

		for (uint32_t i = 0; i < 9; i++) {
			uint32_t r = (uint32_t)(w >> (7 * i)) & 0x7f;

			if (r == rank)
				continue;
			if (r != rank + 1)
				return -EINVAL;	/* a rank rises by one at a position */
			rank = r;
			if (n < cap)
				pos[n] = j * 9 + i;
			n++;
		}
	}
	/* the succinct part: 512-position blocks of bits, each with its rank */
	for (uint32_t k = 0; k < succ_size; k++) {
		const uint8_t *b = table + succ_at + (size_t)k * SUCC_BLOCK;
		uint32_t brank;

		memcpy(&brank, b, 4);
		if (brank != rank)
			return -EINVAL;
		for (uint32_t j = 0; j < 8; j++) {
			uint64_t bits = rv_u64(b, 16 + 8 * j);

			while (bits) {
				uint32_t i = (uint32_t)__builtin_ctzll(bits);

				bits &= bits - 1;
				if (n < cap)
					pos[n] = k * 512 + j * 64 + i + imm_table_size;
				n++;
				rank++;
			}
		}
	}
	return (int)n;
}

void rv_lines_free(struct rv_lines *l)
{
	free(l->pos);
	free(l->line);
	memset(l, 0, sizeof(*l));
}

int rv_iseq_lines(struct rv_reader *r, const struct rb_offsets *off,
		  const uint8_t *body, uint32_t iseq_size, size_t succ_max,
		  struct rv_lines *out)
{
	uint32_t n = rv_u32(body, off->body_insns_info_size);
	uint64_t infos = rv_u64(body, off->body_insns_info_body);
	uint64_t positions = rv_u64(body, off->body_insns_info_positions);
	uint64_t succ = rv_u64(body, off->body_insns_info_succ_index_table);
	size_t esz = off->insn_info_entry_size, tlen;
	uint8_t *buf;
	int err, got;

	memset(out, 0, sizeof(*out));
	if (!n)
		return 0;	/* no lines: 0 */
	if (n > iseq_size + 1u || !rv_is_obj(infos) || esz < 4 ||
	    off->insn_info_line_no + 4u > esz)
		return -EINVAL;
	if (n > RB_LINES_MAX)
		return 0;	/* too big to read: lines unknown */
	out->pos = calloc(n, sizeof(*out->pos));
	out->line = calloc(n, sizeof(*out->line));
	buf = malloc((size_t)n * esz);
	if (!out->pos || !out->line || !buf) {
		free(buf);
		return -ENOMEM;
	}
	err = rv_read(r, infos, buf, (size_t)n * esz);
	for (uint32_t i = 0; !err && i < n; i++)
		memcpy(&out->line[i], buf + (size_t)i * esz + off->insn_info_line_no, 4);
	free(buf);
	if (err)
		return err;
	if (n == 1) {
		out->n = 1;	/* get_insn_info(): the one entry, wherever pc is */
		return 0;
	}
	if (positions) {	/* not encoded (yet): the positions themselves */
		if (!rv_is_obj(positions))
			return -EINVAL;
		err = rv_read(r, positions, out->pos, (size_t)n * 4);
		if (err)
			return err;
		for (uint32_t i = 1; i < n; i++)
			if (out->pos[i] <= out->pos[i - 1])
				return -EINVAL;
		out->n = n;
		return 0;
	}
	if (!rv_is_obj(succ))
		return -EINVAL;
	tlen = rv_succ_table_len(iseq_size, off->succ_immediate_table_size);
	if (tlen > succ_max)
		return 0;	/* too big to read: lines unknown */
	buf = malloc(tlen ? tlen : 1);
	if (!buf)
		return -ENOMEM;
	err = rv_read(r, succ, buf, tlen);
	got = err ? err : rv_succ_positions(buf, tlen, iseq_size,
					    off->succ_immediate_table_size, out->pos, n);
	free(buf);
	if (got < 0)
		return got;
	if ((uint32_t)got != n)
		return -EINVAL;	/* the table and the body disagree */
	out->n = n;
	return 0;
}

int rv_lines_at(const struct rv_lines *l, uint64_t pos)
{
	uint32_t lo = 0, hi = l->n;

	if (!l->n)
		return 0;
	while (hi - lo > 1) {	/* the last entry whose first instruction is <= pos */
		uint32_t mid = lo + (hi - lo) / 2;

		if (l->pos[mid] <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return l->line[lo];
}
