// SPDX-License-Identifier: GPL-2.0
/*
 * scopes.c - the inlined methods and lines at a pc of an nmethod (see
 * scopes.h).
 *
 * Owns: where an nmethod's debug info lies (its header's fields), the
 * PcDesc search, the scope chain's decode and its checks. HotSpot's side:
 * nmethod.hpp (the sections), pcDesc.hpp, nmethod.cpp
 * (PcDescContainer::find_pc_desc_internal()), scopeDesc.cpp
 * (decode_body()), debugInfo.hpp (DebugInfoReadStream: read_method(),
 * read_bci()), debugInfoRec.hpp (serialized_null is 0). And the cache
 * of chains by pc (struct hs_chains).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/unwind_hotspot.h"
#include "hotspot/mem.h"
#include "hotspot/scopes.h"

#define PCDESC_WINDOW	256	/* PcDescs read at a time once the search narrows */
#define SCOPE_HEADER	32	/* bytes of a scope's header at most: 6 numbers of 5 */
#define SERIALIZED_NULL	0	/* DebugInformationRecorder::serialized_null */

/* Where one nmethod's debug info lies, from its header. */
struct debug_info {
	uint64_t pcs, npcs;		/* the PcDesc array, entries */
	uint64_t data, data_len;	/* the scopes data */
	uint64_t meta, nmeta;		/* the metadata array, words */
	uint64_t method;		/* nmethod::_method */
	int64_t compile_id;
};

/* A field of the header bytes @b (@len), zero- or sign-extended; 0 when out of it. */
static uint64_t fld(const uint8_t *b, size_t len, struct hs_off f, bool sign)
{
	uint64_t v = 0;

	if (!f.size || f.size > 8 || f.off > len || len - f.off < f.size)
		return 0;
	memcpy(&v, b + f.off, f.size);
	if (sign && f.size < 8 && (v >> (f.size * 8 - 1)) & 1)
		v |= ~0ULL << (f.size * 8);
	return v;
}

/* The header bytes this file reads. */
static size_t header_len(const struct hs_offsets *o)
{
	const struct hs_off *f[] = {
		&o->blob_size, &o->nm_method, &o->nm_compile_id, &o->nm_scopes_pcs_offset,
		&o->nm_scopes_data, &o->nm_metadata_offset, &o->nm_dependencies_offset,
		&o->nm_immutable_data, &o->nm_immutable_data_size, &o->blob_mutable_data,
		&o->blob_mutable_data_size, &o->blob_relocation_size,
	};
	size_t need = 0;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i]->size <= 8 && f[i]->off + f[i]->size > need)
			need = f[i]->off + f[i]->size;
	return need;
}

/* [begin, end) a sane range: ordered, at most HS_SCOPES_DATA_MAX bytes. */
static bool range_ok(uint64_t begin, uint64_t end)
{
	return begin && begin <= end && end - begin <= HS_SCOPES_DATA_MAX;
}

/* @d from the header bytes @h of the nmethod @nm. 0, -ENOTSUP or -EPROTO. */
static int debug_layout(const struct hs_offsets *o, const struct hs_pc_info *nm,
			const uint8_t *h, size_t len, struct debug_info *d)
{
	uint64_t blob = nm->blob, pcs, pcs_end, data, data_end, meta, meta_end;
	int64_t pcs_off = (int64_t)fld(h, len, o->nm_scopes_pcs_offset, true);

	d->method = fld(h, len, o->nm_method, false);
	d->compile_id = (int64_t)fld(h, len, o->nm_compile_id, true);
	if (o->nm_immutable_data.size) {
		/* 25: nmethod.hpp, scopes_pcs_begin() ... metadata_end() */
		uint64_t imm = fld(h, len, o->nm_immutable_data, false);
		int64_t imm_size = (int64_t)fld(h, len, o->nm_immutable_data_size, true);
		int64_t data_off = (int64_t)fld(h, len, o->nm_scopes_data, true);
		uint64_t mut = fld(h, len, o->blob_mutable_data, false);
		int64_t mut_size = (int64_t)fld(h, len, o->blob_mutable_data_size, true);
		int64_t reloc = (int64_t)fld(h, len, o->blob_relocation_size, true);

		if (!imm || !mut)
			return -ENOTSUP;	/* a native method's wrapper */
		if (pcs_off < 0 || data_off < pcs_off || imm_size < data_off || reloc < 0 ||
		    mut_size < reloc)
			return -EPROTO;
		pcs = imm + (uint64_t)pcs_off;
		pcs_end = data = imm + (uint64_t)data_off;
		data_end = imm + (uint64_t)imm_size;
		meta = mut + (uint64_t)reloc;
		meta_end = mut + (uint64_t)mut_size;
	} else {
		/* 17: nmethod.hpp, all from header_begin(), the blob */
		int64_t meta_off = (int64_t)fld(h, len, o->nm_metadata_offset, true);
		int64_t dep_off = (int64_t)fld(h, len, o->nm_dependencies_offset, true);
		uint64_t size = nm->blob_end - blob;

		data = fld(h, len, o->nm_scopes_data, false);
		if (meta_off < 0 || pcs_off < meta_off || dep_off < pcs_off ||
		    (uint64_t)dep_off > size)
			return -EPROTO;
		meta = blob + (uint64_t)meta_off;
		meta_end = data;
		data_end = pcs = blob + (uint64_t)pcs_off;
		pcs_end = blob + (uint64_t)dep_off;
		if (data < meta || data > data_end)
			return -EPROTO;
	}
	if (!range_ok(pcs, pcs_end) || !range_ok(data, data_end) || !range_ok(meta, meta_end) ||
	    (pcs_end - pcs) % o->pc_desc_size || (meta_end - meta) % 8)
		return -EPROTO;
	d->pcs = pcs;
	d->npcs = (pcs_end - pcs) / o->pc_desc_size;
	d->data = data;
	d->data_len = data_end - data;
	d->meta = meta;
	d->nmeta = (meta_end - meta) / 8;
	if (!d->npcs)
		return -ENOTSUP;
	return d->npcs > HS_SCOPES_PCDESCS_MAX ? -EPROTO : 0;
}

struct pc_desc {
	int64_t pc;		/* offset from code_begin() */
	int64_t scope;		/* decode offset, SERIALIZED_NULL: none */
};

/* PcDescs [@first, @first + @n) of @d into @out. */
static int read_descs(struct hs_mem *m, const struct hs_offsets *o, const struct debug_info *d,
		      uint64_t first, uint32_t n, struct pc_desc *out)
{
	uint8_t b[PCDESC_WINDOW * 32];
	uint32_t sz = o->pc_desc_size;
	int err;

	if (sz > 32 || n > PCDESC_WINDOW || first + n > d->npcs)
		return -EPROTO;
	if ((err = hs_mem_read(m, d->pcs + first * sz, b, (size_t)n * sz)))
		return err;
	for (uint32_t i = 0; i < n; i++) {
		out[i].pc = (int64_t)fld(b + (size_t)i * sz, sz, o->pc_pc_offset, true);
		out[i].scope = (int64_t)fld(b + (size_t)i * sz, sz, o->pc_scope_offset, true);
	}
	return 0;
}

/*
 * The PcDescs around pc offset @target: *@at the first at or after it
 * (the last, the end sentinel, left out: find_pc_desc_internal()), *@before
 * the one before that. 0, -ENOENT (none at or after it), or an error.
 */
static int find_descs(struct hs_mem *m, const struct hs_offsets *o, const struct debug_info *d,
		      int64_t target, struct pc_desc *before, struct pc_desc *at)
{
	struct pc_desc w[PCDESC_WINDOW];
	uint64_t lo = 0, hi = d->npcs - 1;	/* the answer is in [lo, hi] (hi: none) */
	int err;

	/* narrow by single reads while the range is wide (sorted by pc) */
	while (hi - lo + 2 > PCDESC_WINDOW) {
		uint64_t mid = lo + (hi - lo) / 2;

		if ((err = read_descs(m, o, d, mid, 1, w)))
			return err;
		if (w[0].pc < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* then read [lo - 1, hi] and scan: the one before comes along */
	{
		uint64_t first = lo ? lo - 1 : 0;
		uint32_t n = (uint32_t)(hi - first + 1), k;	/* <= PCDESC_WINDOW */

		if ((err = read_descs(m, o, d, first, n, w)))
			return err;
		for (k = (uint32_t)(lo - first); k < n && first + k < d->npcs - 1; k++)
			if (w[k].pc >= target)
				break;
		if (k >= n || first + k >= d->npcs - 1 || !k)
			return -ENOENT;
		if (w[k - 1].pc >= target)
			return -EPROTO;	/* not sorted */
		*before = w[k - 1];
		*at = w[k];
	}
	return 0;
}

struct raw_scope {
	uint64_t method;
	int32_t bci;
};

/*
 * The chain of scopes at decode offset @off of @d, innermost first, into
 * @out (@cap): ScopeDesc::decode_body() then sender() to the outermost.
 * The count, or -E2BIG, -EPROTO, or a read error.
 */
static int decode_chain(struct hs_mem *m, const struct hs_offsets *o,
			const struct debug_info *d, int64_t off, uint32_t x,
			struct raw_scope *out, uint32_t cap)
{
	int32_t entry = o->has_invocation_entry_bci ? (int32_t)o->invocation_entry_bci : -1;
	uint32_t n = 0;
	int err;

	if (off == SERIALIZED_NULL) {
		/* a sentinel: the nmethod's own method at its entry */
		if (!cap)
			return -E2BIG;
		out[0] = (struct raw_scope){ d->method, entry };
		return 1;
	}
	for (;;) {
		uint8_t b[SCOPE_HEADER];
		uint32_t sender, midx, bci;
		size_t len, pos = 0;

		if (off < 0 || (uint64_t)off >= d->data_len)
			return -EPROTO;
		if (n >= cap)
			return -E2BIG;
		len = d->data_len - (uint64_t)off < sizeof(b) ? d->data_len - (uint64_t)off
							     : sizeof(b);
		if ((err = hs_mem_read(m, d->data + (uint64_t)off, b, len)))
			return err;
		if ((err = hs_unsigned5(b, len, &pos, x, &sender)) ||
		    (err = hs_unsigned5(b, len, &pos, x, &midx)) ||
		    (err = hs_unsigned5(b, len, &pos, x, &bci)))
			return err;
		/* DebugInfoReadStream::read_method(): metadata_at(index), 1-based */
		if (!midx || midx > d->nmeta || bci > 0xffff + 1)
			return -EPROTO;
		if ((err = hs_mem_u64(m, d->meta + (uint64_t)(midx - 1) * 8, &out[n].method)))
			return err;
		out[n].bci = (int32_t)bci + entry;	/* read_bci(): + InvocationEntryBci */
		n++;
		if (sender == SERIALIZED_NULL)
			return (int)n;
		/* a sender is written before its callee: offsets go down */
		if ((int64_t)sender >= off)
			return -EPROTO;
		off = sender;
	}
}

/* @s named and checked: its Method*, its bci in its bytecodes, its line. */
static int name_scope(struct hs_mem *m, const struct hs_offsets *o, const struct raw_scope *r,
		      bool keep_line, int jdk_major, struct hs_scope *s)
{
	struct hs_pc_info pi;
	int err, line;

	if ((err = hs_codecache_method(m, o, r->method, &pi)))
		return err;
	if (r->bci < -1 || (r->bci >= 0 && (uint32_t)r->bci >= pi.code_size))
		return -EPROTO;
	s->method = r->method;
	s->bci = r->bci;
	memcpy(s->name, pi.name, sizeof(s->name));
	memcpy(s->file, pi.file, sizeof(s->file));
	/* Method::line_number_from_bci(): the entry's bci counts as 0 */
	line = keep_line ? hs_codecache_line(m, o, r->method, r->bci < 0 ? 0 : (uint32_t)r->bci,
					     jdk_major) : 0;
	s->line = line > 0 ? line : 0;
	return 0;
}

int hs_scopes_at(struct hs_mem *m, const struct hs_offsets *o, const struct hs_pc_info *nm,
		 uint64_t pc, bool call, int jdk_major, struct hs_scope *out, uint32_t cap)
{
	uint8_t h[HS_CC_HEADER_MAX], again[HS_CC_HEADER_MAX];
	struct raw_scope at[HS_SCOPES_MAX], before[HS_SCOPES_MAX];
	uint32_t x = hs_unsigned5_x(jdk_major), keep, line_level;
	size_t len = header_len(o);
	struct pc_desc pa, pb;
	struct debug_info d;
	int na, nb, err;

	if (!(o->features & HS_FEAT_SCOPES) || nm->kind != HS_PC_NMETHOD)
		return -ENOTSUP;
	if (len > HS_CC_HEADER_MAX || len > nm->blob_end - nm->blob || !nm->code_begin ||
	    pc < nm->code_begin || pc >= nm->code_end)
		return -EPROTO;
	if ((err = hs_mem_read(m, nm->blob, h, len)))
		return err;
	if ((err = debug_layout(o, nm, h, len, &d)))
		return err;
	/* the nmethod named before is the one read now */
	if (d.compile_id != nm->compile_id || d.method != nm->method)
		return -EPROTO;
	if ((err = find_descs(m, o, &d, (int64_t)(pc - nm->code_begin), &pa, &pb)))
		return err;
	/*
	 * pc_desc_at(): a return address has its own PcDesc — except after a
	 * call C2 records no debug information for (a leaf call into a stub,
	 * System.arraycopy's): then it is read like a leaf pc, by what the
	 * PcDescs before and after it agree on.
	 */
	if (call && pb.pc != (int64_t)(pc - nm->code_begin))
		call = false;
	if ((nb = decode_chain(m, o, &d, pb.scope, x, at, HS_SCOPES_MAX)) < 0)
		return nb;
	keep = (uint32_t)nb;
	line_level = keep;	/* every level keeps its line */
	if (!call) {
		/* a leaf: the levels both PcDescs agree on, from the outermost */
		if ((na = decode_chain(m, o, &d, pa.scope, x, before, HS_SCOPES_MAX)) < 0)
			return na;
		keep = 0;
		while (keep < (uint32_t)na && keep < (uint32_t)nb &&
		       at[nb - 1 - keep].method == before[na - 1 - keep].method &&
		       (!keep || at[nb - keep].bci == before[na - keep].bci))
			keep++;
		if (!keep)
			return -EPROTO;	/* not even the nmethod's own method */
		/* the innermost kept level's line only where its bci agrees */
		line_level = at[nb - keep].bci == before[na - keep].bci ? keep : keep - 1;
	}
	if (keep > cap)
		return -E2BIG;
	if (at[nb - 1].method != nm->method)
		return -EPROTO;
	for (uint32_t k = 0; k < keep; k++) {
		/* level k from the outermost, written innermost first */
		const struct raw_scope *r = &at[nb - 1 - k];

		if ((err = name_scope(m, o, r, k < line_level, jdk_major, &out[keep - 1 - k])))
			return err;
	}
	/* the nmethod did not change (nor was it flushed) while read */
	if ((err = hs_mem_read(m, nm->blob, again, len)))
		return err;
	return memcmp(h, again, len) ? -EPROTO : (int)keep;
}

#define CHAIN_CALL	(1ULL << 63)	/* in a key's pc: a return address */

static void chain_clear(struct hs_chains *c, struct hs_chain *e)
{
	for (uint32_t i = 0; i < e->n; i++) {
		c->bytes -= strlen(e->f[i].name) + 1 +
			    (e->f[i].file ? strlen(e->f[i].file) + 1 : 0);
		free(e->f[i].name);
		free(e->f[i].file);
	}
	if (e->n)
		c->bytes -= e->n * sizeof(*e->f);
	free(e->f);
	e->f = NULL;
	e->n = 0;
}

/* Fill @e with the @n scopes @s (none: an unread entry). */
static void chain_put(struct hs_chains *c, struct hs_chain *e, const struct hs_scope *s, int n)
{
	e->no_scopes = n == -ENOTSUP;	/* a native method's wrapper: none to read */
	if (n <= 0 || !(e->f = calloc((size_t)n, sizeof(*e->f))))
		return;
	c->bytes += (uint64_t)n * sizeof(*e->f);
	for (int i = 0; i < n; i++) {
		e->f[i].name = strdup(s[i].name);
		e->f[i].file = s[i].file[0] ? strdup(s[i].file) : NULL;
		e->f[i].line = s[i].line;
		e->n = (uint32_t)i + 1;
		if (!e->f[i].name || (s[i].file[0] && !e->f[i].file)) {
			chain_clear(c, e);	/* out of memory: unread */
			return;
		}
		c->bytes += strlen(s[i].name) + 1 + (s[i].file[0] ? strlen(s[i].file) + 1 : 0);
	}
}

const struct hs_chain *hs_chains_get(struct hs_chains *c, struct hs_mem *m,
				     const struct hs_offsets *o, const struct hs_codecache *cc,
				     uint64_t gen, uint64_t w0, uint64_t w1, uint64_t pc, bool call,
				     int jdk_major)
{
	uint64_t blob = w0 & PROFD_HS_ADDR_MASK;
	uint64_t key = w0 & ~(PROFD_HS_INDEX_MASK << PROFD_HS_INDEX_SHIFT);
	uint64_t cpc = pc | (call ? CHAIN_CALL : 0);
	uint64_t h = (gen * 0x9e3779b97f4a7c15ULL) ^ (key * 0xff51afd7ed558ccdULL) ^
		     (w1 * 0xc4ceb9fe1a85ec53ULL) ^ (cpc * 0x2545f4914f6cdd1dULL);
	struct hs_chain *e = &c->e[(h ^ (h >> 29)) % HS_CHAINS];
	struct hs_scope s[HS_SCOPES_MAX];
	struct hs_pc_info pi;
	int n = -ESTALE;	/* the blob changed: unread (counted) */

	if (e->used && e->gen == gen && e->w0 == key && e->w1 == w1 && e->pc == cpc)
		return e;
	if (!e->used)
		c->n++;
	chain_clear(c, e);
	*e = (struct hs_chain){ .gen = gen, .w0 = key, .w1 = w1, .pc = cpc, .used = true };
	/* the blob there must still be the one the walker saw: its compile id, _name */
	if (!hs_codecache_pc(m, o, cc, blob, &pi) && pi.blob == blob &&
	    pi.kind == HS_PC_NMETHOD && (uint32_t)pi.compile_id == (uint32_t)w1 &&
	    (uint32_t)pi.name_addr == (uint32_t)(w1 >> 32))
		n = hs_scopes_at(m, o, &pi, pc, call, jdk_major, s, HS_SCOPES_MAX);
	chain_put(c, e, s, n);
	return e;
}

void hs_chains_clear(struct hs_chains *c)
{
	for (size_t i = 0; i < HS_CHAINS; i++)
		chain_clear(c, &c->e[i]);
	memset(c, 0, sizeof(*c));
}
