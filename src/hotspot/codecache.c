// SPDX-License-Identifier: GPL-2.0
/*
 * codecache.c - a pc in a JVM's code cache to its CodeBlob and name
 * (see codecache.h).
 *
 * Owns: the heap list read, the segment map walk, the blob and method
 * reads and their checks. HotSpot's side (heap.hpp/heap.cpp,
 * codeBlob.hpp, nmethod.hpp, method.hpp, constMethod.hpp,
 * constantPool.hpp, symbol.hpp): a CodeHeap maps code in segments of
 * 1 << _log2_segment_size bytes; its segment map has one byte a segment,
 * 0xFF (free_sentinel) for unused, 0 for a block's first segment and, in
 * the others, how many segments to step back towards it (at most 0xFE
 * a step); block i starts at _memory.low() + (i << log2), with a
 * HeapBlock header (length in segments, used) before the CodeBlob.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "counters/counters.h"
#include "hotspot/codecache.h"
#include "hotspot/mem.h"

COUNTER_DEFINE(hotspot_codecache_bad, COUNTER_STAT,
	       "JVM code heaps whose ranges were impossible: their pcs not named");
COUNTER_DEFINE(hotspot_pc_free, COUNTER_STAT,
	       "JVM code cache pcs in an unused segment or a free block: nothing named");
COUNTER_DEFINE(hotspot_pc_unverified, COUNTER_PARTIAL,
	       "JVM code cache pcs left unnamed: memory contradicted the layout or changed");
COUNTER_DEFINE(hotspot_pc_read_error, COUNTER_PARTIAL,
	       "JVM code cache pcs left unnamed: the process's memory could not be read");
COUNTER_DEFINE(hotspot_pc_name_too_long, COUNTER_PARTIAL,
	       "JVM code cache pcs left unnamed: a name longer than its cap");

#define INTERP_TAIL_SLACK	4096	/* bytes past the codelets of a trimmed buffer */
#define FREE_SENTINEL	0xFF
#define SEGMAP_WINDOW	4096	/* segment map bytes read at a time */
#define MAX_SEGMENT_LOG2 20	/* 1 MiB segments: HotSpot's are 64..1024 bytes */

static int get_ptr(struct hs_mem *m, uint64_t addr, struct hs_off f, uint64_t *v)
{
	if (f.size != 8)
		return -ENOTSUP;
	return hs_mem_u64(m, addr + f.off, v);
}

/* A field of @size bytes of the bytes @b (@len of them), zero-extended. */
static uint64_t field_u(const uint8_t *b, size_t len, struct hs_off f)
{
	uint64_t v = 0;

	if (!f.size || f.size > 8 || f.off > len || len - f.off < f.size)
		return 0;
	memcpy(&v, b + f.off, f.size);	/* little-endian: the low bytes */
	return v;
}

/* The same, sign-extended from its width. */
static int64_t field_s(const uint8_t *b, size_t len, struct hs_off f)
{
	uint64_t v = field_u(b, len, f);

	if (f.size && f.size < 8 && (v >> (f.size * 8 - 1)) & 1)
		v |= ~0ULL << (f.size * 8);
	return (int64_t)v;
}

int hs_codecache_read(struct hs_mem *m, const struct hs_offsets *o, struct hs_codecache *cc)
{
	uint64_t arr, data, len = 0;
	int err;

	cc->nheaps = 0;
	if (!(o->features & HS_FEAT_FIND_BLOB))
		return -ENOTSUP;
	if ((err = hs_mem_u64(m, o->codecache_heaps, &arr)))
		return err;
	if (!arr)
		return -EAGAIN;
	if ((err = hs_mem_uint(m, arr + o->array_len.off, o->array_len.size, &len)) ||
	    (err = hs_mem_u64(m, arr + o->array_data.off, &data)))
		return err;
	if (!len || !data)
		return -EAGAIN;
	if (len > HS_CC_MAX_HEAPS) {
		counter_inc(&counter_hotspot_codecache_bad);
		return -EPROTO;
	}
	for (uint64_t i = 0; i < len; i++) {
		struct hs_codeheap *h = &cc->heap[cc->nheaps];
		uint64_t heap, log2;

		if ((err = hs_mem_u64(m, data + i * 8, &heap)) ||
		    (err = hs_mem_u64(m, heap + o->heap_memory.off + o->vs_low.off, &h->low)) ||
		    (err = hs_mem_u64(m, heap + o->heap_memory.off + o->vs_high.off, &h->high)) ||
		    (err = hs_mem_u64(m, heap + o->heap_segmap.off + o->vs_low.off, &h->segmap_low)) ||
		    (err = hs_mem_u64(m, heap + o->heap_segmap.off + o->vs_high.off,
				      &h->segmap_high)) ||
		    (err = hs_mem_uint(m, heap + o->heap_log2_segment_size.off,
				       o->heap_log2_segment_size.size, &log2)))
			return err;
		h->reserved_high = 0;
		if (o->vs_high_boundary.size == 8 &&
		    (err = hs_mem_u64(m, heap + o->heap_memory.off + o->vs_high_boundary.off,
				      &h->reserved_high)))
			return err;
		if (h->high < h->low || h->segmap_high < h->segmap_low || log2 > MAX_SEGMENT_LOG2 ||
		    (h->reserved_high && h->reserved_high < h->high) ||
		    ((h->high - h->low) >> log2) > h->segmap_high - h->segmap_low) {
			counter_inc(&counter_hotspot_codecache_bad);
			return -EPROTO;
		}
		h->log2_segment_size = (uint32_t)log2;
		cc->nheaps++;
	}
	return 0;
}

/*
 * The first segment of the block holding segment @seg of @h: *@first.
 * 0, -ENODATA (unused segment), -EPROTO (the hops lead nowhere), or a
 * read error.
 */
static int block_start(struct hs_mem *m, const struct hs_codeheap *h, uint64_t seg,
		       uint64_t *first)
{
	uint8_t win[SEGMAP_WINDOW];
	uint64_t win_lo = 1, win_hi = 0;	/* segments [win_lo, win_hi] held */
	int err;

	for (int hops = 0; hops <= HS_CC_MAX_HOPS; hops++) {
		uint8_t v;

		if (seg < win_lo || seg > win_hi) {
			win_hi = seg;
			win_lo = seg >= SEGMAP_WINDOW - 1 ? seg - (SEGMAP_WINDOW - 1) : 0;
			if ((err = hs_mem_read(m, h->segmap_low + win_lo, win, win_hi - win_lo + 1)))
				return err;
		}
		v = win[seg - win_lo];
		if (v == FREE_SENTINEL)
			return hops ? -EPROTO : -ENODATA;
		if (!v) {
			*first = seg;
			return 0;
		}
		if (v > seg)
			return -EPROTO;
		seg -= v;
	}
	return -EPROTO;
}

/* A Symbol's bytes into @buf (NUL-terminated). Its length or an error. */
static int read_symbol(struct hs_mem *m, const struct hs_offsets *o, uint64_t sym,
		       char *buf, size_t cap)
{
	uint64_t len;
	int err;

	if (!sym)
		return -EPROTO;
	if ((err = hs_mem_uint(m, sym + o->sym_length.off, o->sym_length.size, &len)))
		return err;
	if (len >= cap)
		return -ENAMETOOLONG;
	if (len && (err = hs_mem_read(m, sym + o->sym_body.off, buf, len)))
		return err;
	buf[len] = '\0';
	if (memchr(buf, '\0', len))
		return -EPROTO;
	return (int)len;
}

/* The Symbol of constant pool @cp's UTF-8 entry @idx (checked: in range, tagged Utf8). */
static int pool_symbol(struct hs_mem *m, const struct hs_offsets *o, uint64_t cp,
		       uint64_t cp_len, uint64_t tags, uint64_t idx, uint64_t *sym)
{
	uint64_t tag;
	int err;

	if (!idx || idx >= cp_len)
		return -EPROTO;
	if ((err = hs_mem_uint(m, tags + o->array_u1_data.off + idx, 1, &tag)))
		return err;
	if ((int64_t)tag != o->utf8_tag)
		return -EPROTO;
	return hs_mem_u64(m, cp + o->cp_size + idx * 8, sym);
}

/*
 * A class's internal name @s as Java writes it, in place, as HotSpot's
 * Klass::external_name() does: "java/util/HashMap" -> "java.util.HashMap";
 * a hidden class (a lambda's) keeps its suffix "+0x<hex>" internally,
 * written "/0x<hex>": "p/C$$Lambda+0x0a08" -> "p.C$$Lambda/0x0a08".
 */
static void external_name(char *s)
{
	char *plus = strrchr(s, '+');

	for (char *p = s; *p; p++)
		if (*p == '/')
			*p = '.';
	if (plus && plus[1] == '0' && plus[2] == 'x' && plus[3] &&
	    strspn(plus + 3, "0123456789abcdefABCDEF") == strlen(plus + 3))
		*plus = '/';
}

/*
 * out->file: the source file constant pool @cp (@cp_len entries, tags
 * @tags) names (ConstantPool::_source_file_name_index; 0: none), or "".
 */
static void source_file(struct hs_mem *m, const struct hs_offsets *o, uint64_t cp,
			uint64_t cp_len, uint64_t tags, struct hs_pc_info *out)
{
	uint64_t idx, sym;

	out->file[0] = '\0';
	if (!o->cp_source_file.size ||
	    hs_mem_uint(m, cp + o->cp_source_file.off, o->cp_source_file.size, &idx) || !idx ||
	    pool_symbol(m, o, cp, cp_len, tags, idx, &sym) ||
	    read_symbol(m, o, sym, out->file, sizeof(out->file)) < 0)
		out->file[0] = '\0';
}

/* Name Method* @method: out->name "pkg.Class.method", out->signature. */
static int name_method(struct hs_mem *m, const struct hs_offsets *o, uint64_t method,
		       struct hs_pc_info *out)
{
	uint64_t cm, cp, holder, holder_cp, klass_sym, tags, cp_len, name_idx, sig_idx;
	uint64_t name_sym, sig_sym;
	char mname[HS_CC_NAME_MAX];
	int err, n;

	if (!(o->features & HS_FEAT_METHOD_NAME))
		return -ENOTSUP;
	if (!method)
		return -EPROTO;
	if ((err = get_ptr(m, method, o->method_const_method, &cm)) || !cm ||
	    (err = get_ptr(m, cm, o->cm_constants, &cp)) || !cp ||
	    (err = get_ptr(m, cp, o->cp_pool_holder, &holder)) || !holder ||
	    (err = get_ptr(m, holder, o->ik_constants, &holder_cp)))
		return err ? err : -EPROTO;
	/*
	 * The holder must be a class whose own pool points back at it. The
	 * method's pool is the class's, or (a method handle intrinsic such
	 * as MethodHandle.linkToStatic, an old method of a redefined class)
	 * another pool of the same holder.
	 */
	if (holder_cp != cp) {
		uint64_t back;

		if (!holder_cp || (err = get_ptr(m, holder_cp, o->cp_pool_holder, &back)))
			return err ? err : -EPROTO;
		if (back != holder)
			return -EPROTO;
	}
	if ((err = hs_mem_uint(m, cm + o->cm_name_index.off, o->cm_name_index.size, &name_idx)) ||
	    (err = hs_mem_uint(m, cm + o->cm_signature_index.off, o->cm_signature_index.size,
			       &sig_idx)) ||
	    (err = hs_mem_uint(m, cp + o->cp_length.off, o->cp_length.size, &cp_len)) ||
	    (err = get_ptr(m, cp, o->cp_tags, &tags)) ||
	    (err = get_ptr(m, holder, o->klass_name, &klass_sym)))
		return err;
	if (!tags)
		return -EPROTO;
	if ((err = pool_symbol(m, o, cp, cp_len, tags, name_idx, &name_sym)) ||
	    (err = pool_symbol(m, o, cp, cp_len, tags, sig_idx, &sig_sym)))
		return err;
	if ((n = read_symbol(m, o, klass_sym, out->name, sizeof(out->name))) < 0)
		return n;
	external_name(out->name);
	if ((err = read_symbol(m, o, name_sym, mname, sizeof(mname))) < 0 ||
	    (err = read_symbol(m, o, sig_sym, out->signature, sizeof(out->signature))) < 0)
		return err;
	if ((size_t)n + 1 + strlen(mname) >= sizeof(out->name))
		return -ENAMETOOLONG;
	out->name[n] = '.';
	strcpy(out->name + n + 1, mname);
	out->method = method;
	out->klass_sym = klass_sym;
	source_file(m, o, cp, cp_len, tags, out);
	return 0;
}

/* The bytes of a blob's header this code reads (offsets + widths). */
static size_t header_need(const struct hs_offsets *o)
{
	const struct hs_off *f[] = {
		&o->blob_name, &o->blob_size, &o->blob_frame_size, &o->blob_code_begin,
		&o->blob_code_end, &o->blob_code_offset, &o->blob_data_offset, &o->blob_kind,
		&o->nm_method, &o->nm_compile_id, &o->nm_entry_bci, &o->nm_comp_level,
	};
	size_t need = 0;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i]->size <= 8 && f[i]->off + f[i]->size > need)
			need = f[i]->off + f[i]->size;
	return need > HS_CC_HEADER_MAX ? HS_CC_HEADER_MAX : need;
}

static bool is_nmethod(const struct hs_offsets *o, const uint8_t *hdr, size_t len,
		       const char *name)
{
	if (!(o->features & HS_FEAT_NMETHOD))
		return false;
	if (o->blob_kind.size)
		return field_s(hdr, len, o->blob_kind) == o->kind_nmethod;
	return !strcmp(name, "nmethod") || !strcmp(name, "native nmethod");
}

/* Fill @out from the blob at @blob within block [@blob, @limit); see hs_codecache_pc(). */
static int read_blob(struct hs_mem *m, const struct hs_offsets *o, uint64_t blob,
		     uint64_t limit, uint64_t pc, struct hs_pc_info *out)
{
	uint8_t hdr[HS_CC_HEADER_MAX], again[HS_CC_HEADER_MAX];
	size_t len = header_need(o);
	int64_t size;
	int err;

	if (!(o->features & HS_FEAT_BLOB_NAME))
		return -ENOTSUP;
	if (len > limit - blob)
		return -EPROTO;
	if ((err = hs_mem_read(m, blob, hdr, len)))
		return err;
	size = field_s(hdr, len, o->blob_size);
	if (size <= 0 || (uint64_t)size > limit - blob)
		return -EPROTO;
	if (pc >= blob + (uint64_t)size)
		return -ENODATA;	/* the block's tail the blob gave back */
	out->blob = blob;
	out->blob_end = blob + (uint64_t)size;
	out->frame_size = (int32_t)field_s(hdr, len, o->blob_frame_size);
	out->name_addr = field_u(hdr, len, o->blob_name);
	err = hs_mem_string(m, field_u(hdr, len, o->blob_name), out->name, sizeof(out->name));
	if (err < 0)
		return err == -EINVAL ? -EPROTO : err;
	if (o->features & HS_FEAT_CODE_RANGE) {
		if (o->blob_code_begin.size == 8) {
			out->code_begin = field_u(hdr, len, o->blob_code_begin);
			out->code_end = field_u(hdr, len, o->blob_code_end);
		} else {
			out->code_begin = blob + field_u(hdr, len, o->blob_code_offset);
			out->code_end = blob + field_u(hdr, len, o->blob_data_offset);
		}
		if (out->code_begin < blob || out->code_end < out->code_begin ||
		    out->code_end > out->blob_end)
			return -EPROTO;
	}
	out->kind = HS_PC_BLOB;
	if (is_nmethod(o, hdr, len, out->name)) {
		out->kind = HS_PC_NMETHOD;
		out->compile_id = (int32_t)field_s(hdr, len, o->nm_compile_id);
		out->entry_bci = (int32_t)field_s(hdr, len, o->nm_entry_bci);
		out->comp_level = (int32_t)field_s(hdr, len, o->nm_comp_level);
		out->osr = o->has_invocation_entry_bci && o->nm_entry_bci.size &&
			   out->entry_bci != o->invocation_entry_bci;
		if ((err = name_method(m, o, field_u(hdr, len, o->nm_method), out)))
			return err;
	}
	/* the blob must not have changed while it was named */
	if ((err = hs_mem_read(m, blob, again, len)))
		return err;
	return memcmp(hdr, again, len) ? -EPROTO : 0;
}

static int count(int err)
{
	switch (err) {
	case 0:
	case -ENOENT:
	case -ENOTSUP:
		break;
	case -ENODATA:
		counter_inc(&counter_hotspot_pc_free);
		break;
	case -EPROTO:
		counter_inc(&counter_hotspot_pc_unverified);
		break;
	case -ENAMETOOLONG:
		counter_inc(&counter_hotspot_pc_name_too_long);
		break;
	default:
		counter_inc(&counter_hotspot_pc_read_error);
		break;
	}
	return err;
}

int hs_codecache_pc(struct hs_mem *m, const struct hs_offsets *o,
		    const struct hs_codecache *cc, uint64_t pc, struct hs_pc_info *out)
{
	const struct hs_codeheap *h = NULL;
	uint64_t first, block, length, used, limit;
	int err;

	memset(out, 0, sizeof(*out));
	if (!(o->features & HS_FEAT_FIND_BLOB))
		return -ENOTSUP;
	for (uint32_t i = 0; i < cc->nheaps && !h; i++)
		if (pc >= cc->heap[i].low && pc < cc->heap[i].high)
			h = &cc->heap[i];
	if (!h)
		return -ENOENT;
	if ((err = block_start(m, h, (pc - h->low) >> h->log2_segment_size, &first)))
		return count(err);
	block = h->low + (first << h->log2_segment_size);
	if ((err = hs_mem_uint(m, block + o->block_length.off, o->block_length.size, &length)) ||
	    (err = hs_mem_uint(m, block + o->block_used.off, o->block_used.size, &used)))
		return count(err);
	if (!used)
		return count(-ENODATA);
	/* the block, [block, block + length segments), must hold the pc */
	if (!length || length > (h->high - block) >> h->log2_segment_size)
		return count(-EPROTO);
	limit = block + (length << h->log2_segment_size);
	if (pc >= limit || pc < block + o->heap_block_size)
		return count(-EPROTO);
	return count(read_blob(m, o, block + o->heap_block_size, limit, pc, out));
}

int hs_codecache_method(struct hs_mem *m, const struct hs_offsets *o, uint64_t method,
			struct hs_pc_info *out)
{
	uint64_t cm, code_size;
	int err;

	memset(out, 0, sizeof(*out));
	if (!(o->features & HS_FEAT_INTERP))
		return -ENOTSUP;
	if ((err = name_method(m, o, method, out)))
		return count(err);
	out->kind = HS_PC_NMETHOD;
	if ((err = get_ptr(m, method, o->method_const_method, &cm)) ||
	    (err = hs_mem_uint(m, cm + o->cm_code_size.off, o->cm_code_size.size, &code_size)))
		return count(err);
	out->code_size = (uint32_t)code_size;
	return 0;
}

int hs_interpreter_read(struct hs_mem *m, const struct hs_offsets *o, uint64_t *low,
			uint64_t *size, bool *unsettled)
{
	uint64_t q, limit, begin = 0, end = 0;
	int err;

	*unsettled = false;
	if (!(o->features & HS_FEAT_INTERP))
		return -ENOTSUP;
	if ((err = hs_mem_u64(m, o->interpreter_code, &q)))
		return err;
	if (!q)
		return -EAGAIN;
	if ((err = get_ptr(m, q, o->sq_stub_buffer, low)) ||
	    (err = hs_mem_uint(m, q + o->sq_buffer_limit.off, o->sq_buffer_limit.size, &limit)))
		return err;
	if (!*low || !limit)
		return -EAGAIN;
	if (limit > (1u << 30) || *low + limit < *low)
		return -EPROTO;
	*size = limit;
	if (!o->sq_queue_begin.size || o->sq_queue_begin.size > 4 || !o->sq_queue_end.size ||
	    o->sq_queue_end.size > 4)
		return 0;
	if ((err = hs_mem_uint(m, q + o->sq_queue_begin.off, o->sq_queue_begin.size, &begin)) ||
	    (err = hs_mem_uint(m, q + o->sq_queue_end.off, o->sq_queue_end.size, &end)))
		return err;
	/* the interpreter's queue is one block from the buffer's start */
	if (begin || end > limit)
		return -EPROTO;
	if (!end)
		return -EAGAIN;
	*size = end;
	*unsettled = limit - end > INTERP_TAIL_SLACK;
	return 0;
}

#define LINE_TABLE_MAX	4096	/* bytes of a line number table read */

int hs_unsigned5(const uint8_t *b, size_t len, size_t *pos, uint32_t x, uint32_t *out)
{
	const uint32_t lg_h = 6, l = 256 - x - (1u << lg_h);
	uint32_t sum, shift = lg_h;

	if (*pos >= len || b[*pos] < x)
		return -EPROTO;
	sum = b[(*pos)++] - x;
	if (sum < l)
		goto done;
	for (int i = 1; i < 5; i++) {
		uint32_t bi;

		if (*pos >= len || b[*pos] < x)
			return -EPROTO;
		bi = b[(*pos)++];
		sum += (bi - x) << shift;
		if (bi < x + l || i == 4)
			goto done;
		shift += lg_h;
	}
done:
	*out = sum;
	return 0;
}

static int signed5(const uint8_t *b, size_t len, size_t *pos, uint32_t x, int32_t *out)
{
	uint32_t v = 0;
	int err = hs_unsigned5(b, len, pos, x, &v);

	*out = (int32_t)(v >> 1) ^ -(int32_t)(v & 1);
	return err;
}

int hs_codecache_line(struct hs_mem *m, const struct hs_offsets *o, uint64_t method,
		      uint32_t bci, int jdk_major)
{
	uint8_t b[LINE_TABLE_MAX];
	uint64_t cm, flags, code_size, words, start, end;
	uint32_t x = hs_unsigned5_x(jdk_major);
	int32_t cur_bci = 0, line = 0, best_bci = 0, best = -1;
	size_t len, pos = 0;
	int err;

	if (!(o->features & HS_FEAT_LINES))
		return -ENOTSUP;
	if ((err = get_ptr(m, method, o->method_const_method, &cm)) ||
	    (err = hs_mem_uint(m, cm + o->cm_flags.off, o->cm_flags.size, &flags)) ||
	    (err = hs_mem_uint(m, cm + o->cm_code_size.off, o->cm_code_size.size, &code_size)) ||
	    (err = hs_mem_uint(m, cm + o->cm_size.off, o->cm_size.size, &words)))
		return err;
	if (!(flags & (uint64_t)o->has_linenumber_flag))
		return -ENOENT;
	start = cm + o->const_method_size + code_size;
	end = cm + words * 8;
	if (end <= start)
		return -EPROTO;
	len = end - start < sizeof(b) ? end - start : sizeof(b);
	if ((err = hs_mem_read(m, start, b, len)))
		return err;
	for (;;) {
		uint8_t next;

		if (pos >= len)
			return -EPROTO;
		next = b[pos++];
		if (!next)
			break;
		if (next == 0xFF) {
			int32_t db, dl;

			if ((err = signed5(b, len, &pos, x, &db)) ||
			    (err = signed5(b, len, &pos, x, &dl)))
				return err;
			cur_bci += db;
			line += dl;
		} else {
			cur_bci += next >> 3;
			line += next & 7;
		}
		if ((uint32_t)cur_bci == bci)
			return line > 0 ? line : -ENOENT;
		if ((uint32_t)cur_bci < bci && cur_bci >= best_bci) {
			best_bci = cur_bci;
			best = line;
		}
	}
	return best > 0 ? best : -ENOENT;
}
