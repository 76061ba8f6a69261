// SPDX-License-Identifier: GPL-2.0
/*
 * code.c - V8's optimized code at a pc: its Code object, the functions
 * inlined there (see code.h).
 *
 * Owns: the search for the InstructionStream holding a pc and the
 * inlining chain of its source position. Reads only through
 * remote_read() and frames.h's checked object reads.
 *
 * The search: an InstructionStream is its map, its Code, then the
 * instructions, which start code-aligned (kCodeAlignment: 32 or 64
 * bytes on x86-64); so from the pc down, at each 32-byte boundary A,
 * the two words below A are looked at: the first must be the
 * InstructionStream map (an object whose map's instance type is
 * INSTRUCTION_STREAM_TYPE; cached per process once seen), the second a
 * Code whose code_entry_point is A and whose instruction_size covers
 * the pc. The first map match decides: a Code whose instructions do not
 * hold the pc ends the search (the pc is in no code). Memory read in
 * 4 KiB chunks, at most V8_CODE_SCAN_MAX bytes below the pc.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proc/remote.h"
#include "v8/code.h"

#define ALIGN		32u		/* the smallest kCodeAlignment of x86-64 V8 */
#define CHUNK		4096u

static bool heap(const struct v8_layout *l, uint64_t w)
{
	return (w & l->heap_object_tag_mask) == l->heap_object_tag && w > 4096;
}

static bool smi(const struct v8_layout *l, uint64_t w)
{
	uint64_t low = l->smi_shift < 64 ? (1ULL << l->smi_shift) - 1 : ~0ULL;

	return (w & l->smi_tag_mask) == l->smi_tag && (w & low) == l->smi_tag;
}

/*
 * The length of @arr, an object of instance type @type whose length is a
 * Smi at FixedArrayBase::length (a FixedArray, ByteArray, BytecodeArray),
 * into *@len. 0, -EPROTO (another type, no Smi), or a read's error.
 */
static int array_length(const struct v8_reader *r, uint64_t arr, uint16_t type, int64_t *len)
{
	const struct v8_layout *l = r->l;
	uint64_t w;
	uint16_t t;
	int err;

	if ((err = v8_object_type(r, arr, &t)))
		return err;
	if (t != type)
		return -EPROTO;
	if ((err = v8_object_field(r, arr, l->fixed_array_length, &w)))
		return err;
	if (!smi(l, w))
		return -EPROTO;
	*len = (int64_t)w >> l->smi_shift;
	return 0;
}

/* Element @i of (Weak)FixedArray @arr of instance type @type, checked against its length. */
static int element(const struct v8_reader *r, uint64_t arr, uint16_t type, int64_t i,
		   uint64_t *v)
{
	const struct v8_layout *l = r->l;
	int64_t len;
	int err;

	if ((err = array_length(r, arr, type, &len)))
		return err;
	if (i < 0 || i >= len)
		return -EPROTO;
	return v8_object_field(r, arr, (uint32_t)(l->fixed_array_data + i * l->tagged_size), v);
}

/*
 * Whether the InstructionStream whose instructions would start at @a
 * (map @m, Code @code below it) holds @p: 1 yes (*@code_out, its
 * instructions' size *@size_out), 0 not an
 * InstructionStream, -ENOENT one that does not hold @p.
 */
static int istream_at(const struct v8_reader *r, struct v8_code_cache *cc, uint64_t a,
		      uint64_t m, uint64_t code, uint64_t p, uint64_t *code_out, uint32_t *size_out)
{
	const struct v8_layout *l = r->l;
	uint64_t entry;
	uint16_t type;
	int32_t size;

	if (!heap(l, m) || !heap(l, code))
		return 0;
	if (cc->istream_map ? m != cc->istream_map :
	    remote_read(r->rr, r->pid, m - l->heap_object_tag + l->map_instance_type,
			&type, sizeof(type)) || type != l->t_instruction_stream)
		return 0;
	if (v8_object_type(r, code, &type) || type != l->t_code ||
	    v8_object_field(r, code, l->code_entry, &entry) || entry != a ||
	    remote_read(r->rr, r->pid, code - l->heap_object_tag + l->code_size, &size,
			sizeof(size)))
		return 0;
	cc->istream_map = m;	/* a map, its Code pointing back: seen */
	if (size <= 0 || p - a >= (uint64_t)size)
		return -ENOENT;
	*code_out = code;
	*size_out = (uint32_t)size;
	return 1;
}

/*
 * The remembered InstructionStream holding @p, checked now as the search
 * checks one (istream_at()): 0 (*@code, *@start), or -ENOENT (none
 * remembered holds it, or the one that did no longer checks out: it is
 * forgotten).
 */
static int remembered_code(const struct v8_reader *r, struct v8_code_cache *cc, uint64_t p,
			   uint64_t *code, uint64_t *start)
{
	const struct v8_layout *l = r->l;
	uint64_t hdr[2];
	uint32_t size;

	for (uint32_t i = 0; i < V8_CODE_RANGES; i++) {
		struct v8_code_range *g = &cc->ranges[i];

		if (p < g->start || p >= g->end)
			continue;
		if (!remote_read(r->rr, r->pid, g->start - l->istream_start, &hdr[0], 8) &&
		    !remote_read(r->rr, r->pid, g->start - l->istream_start + l->istream_code,
				 &hdr[1], 8) &&
		    istream_at(r, cc, g->start, hdr[0], hdr[1], p, code, &size) == 1) {
			*start = g->start;
			return 0;
		}
		g->start = g->end = 0;
		return -ENOENT;
	}
	return -ENOENT;
}

/* The Code whose instructions hold @p, into *@code, their start into *@start. */
static int find_code(const struct v8_reader *r, struct v8_code_cache *cc, uint64_t p,
		     uint64_t *code, uint64_t *start)
{
	const struct v8_layout *l = r->l;
	uint64_t buf[(CHUNK + 64) / 8], c0 = 0, a;
	bool have = false;
	uint32_t size;
	int ret, err;

	if (p < V8_CODE_SCAN_MAX)
		return -ENOENT;
	if (!remembered_code(r, cc, p, code, start))
		return 0;
	for (a = p & ~(uint64_t)(ALIGN - 1); a + V8_CODE_SCAN_MAX > p; a -= ALIGN) {
		if (!have || a - l->istream_start < c0) {
			/* the chunk ends at a + istream_start; at a mapping's
			 * start, from the header's page on */
			c0 = a + l->istream_start - CHUNK;
			err = remote_read(r->rr, r->pid, c0, buf, CHUNK);
			if (err == -EFAULT) {
				c0 = (a - l->istream_start) & ~(uint64_t)(CHUNK - 1);
				err = remote_read(r->rr, r->pid, c0, buf, a + l->istream_start - c0);
			}
			if (err)
				return err == -EFAULT ? -ENOENT : err;
			have = true;
		}
		ret = istream_at(r, cc, a,
				 buf[(a - l->istream_start - c0) / 8],
				 buf[(a - l->istream_start + l->istream_code - c0) / 8], p, code,
				 &size);
		if (ret < 0)
			return ret;
		if (ret) {
			*start = a;
			cc->ranges[cc->next_range++ % V8_CODE_RANGES] =
				(struct v8_code_range){ .start = a, .end = a + size };
			return 0;
		}
	}
	return -ENOENT;
}

/* InliningPositions[@id] of @dd: the call's raw SourcePosition, the inlined function's SFI. */
static int inlined(const struct v8_reader *r, uint64_t dd, int id, int64_t *raw, uint64_t *sfi)
{
	const struct v8_layout *l = r->l;
	uint64_t pods, lits, len, w;
	struct {
		int64_t position;
		int32_t fn;
	} ip;
	uint16_t type;
	int err;

	if ((err = element(r, dd, l->t_fixed_array, l->deopt_inlining, &pods)) ||
	    (err = v8_object_type(r, pods, &type)))
		return err;
	if (type != l->t_byte_array)
		return -EPROTO;
	if ((err = v8_object_field(r, pods, l->fixed_array_length, &len)))
		return err;
	if (!smi(l, len) || id < 0 ||
	    (uint64_t)(id + 1) * l->inlining_position_size > (len >> l->smi_shift))
		return -EPROTO;
	if ((err = remote_read(r->rr, r->pid,
			       pods - l->heap_object_tag + l->byte_array_data +
			       (uint64_t)id * l->inlining_position_size, &ip, 12)))
		return err;
	if ((err = element(r, dd, l->t_fixed_array, l->deopt_literals, &lits)) ||
	    (err = element(r, lits, l->t_weak_fixed_array, ip.fn, &w)))
		return err;
	if ((w & 3) == 3)
		w &= ~2ULL;	/* a weak reference (kWeakHeapObjectTag) */
	if ((err = v8_object_type(r, w, &type)))
		return err;
	if (type != l->t_sfi)
		return -EPROTO;
	*raw = ip.position;
	*sfi = w;
	return 0;
}

/* The Code holding @p (the sampled ip, or a return address - 1), its instructions' start, its CodeKind. */
static int code_at(const struct v8_reader *r, struct v8_code_cache *cc, uint64_t p, uint64_t *code,
		   uint64_t *start, uint32_t *kind)
{
	const struct v8_layout *l = r->l;
	uint32_t flags;
	int err;

	if (!(l->features & V8_FEAT_CODE))
		return -ENOTSUP;
	if ((err = find_code(r, cc, p, code, start)))
		return err;
	if ((err = remote_read(r->rr, r->pid, *code - l->heap_object_tag + l->code_flags, &flags,
			       sizeof(flags))))
		return err;
	*kind = flags >> l->code_kind_shift & l->code_kind_mask;
	return 0;
}

/* Optimized Code @code's function's SharedFunctionInfo (its DeoptimizationData's) into *@own. */
static int optimized_sfi(const struct v8_reader *r, uint64_t code, uint64_t *own)
{
	uint64_t dd;
	int err;

	if ((err = v8_object_field(r, code, r->l->code_deopt_data, &dd)))
		return err;
	return element(r, dd, r->l->t_fixed_array, r->l->deopt_sfi, own);
}

/*
 * The optimized Code holding @p into *@code, its instructions' start
 * into *@start, its function's SharedFunctionInfo into *@own.
 */
static int optimized_code(const struct v8_reader *r, struct v8_code_cache *cc, uint64_t p,
			  uint64_t *code, uint64_t *start, uint64_t *own)
{
	const struct v8_layout *l = r->l;
	uint32_t kind;
	int err;

	if ((err = code_at(r, cc, p, code, start, &kind)))
		return err;
	if (kind != l->code_kind_turbofan && kind != l->code_kind_maglev)
		return -ENOTSUP;
	return optimized_sfi(r, *code, own);
}

/*
 * Whether the bytes @b[@q..@n) (@n: the pc's index) are the tail of an
 * epilogue after its `pop rbp`: *@ra_at_sp whether the return address
 * is at [sp] at the pc. The instructions V8's x64 code generator puts
 * there (AssembleReturn: the argument count check, `ret n`, the path
 * dropping a dynamic argument count): cmp rcx, imm; jg; ret [n];
 * pop r10; lea rsp, [rsp + rcx * 8]; push r10. Anything else: no.
 */
static bool epilogue_tail(const uint8_t *b, int q, int n, bool *ra_at_sp)
{
	bool ra = true;

	while (q < n) {
		if (b[q] == 0x48 && b[q + 1] == 0x83 && b[q + 2] == 0xf9)
			q += 4;			/* cmp rcx, imm8 */
		else if (b[q] == 0x48 && b[q + 1] == 0x81 && b[q + 2] == 0xf9)
			q += 7;			/* cmp rcx, imm32 */
		else if (b[q] == 0x7f)
			q += 2;			/* jg rel8 */
		else if (b[q] == 0x0f && b[q + 1] == 0x8f)
			q += 6;			/* jg rel32 */
		else if (b[q] == 0xc2)
			q += 3;			/* ret imm16 */
		else if (b[q] == 0x41 && b[q + 1] == 0x5a)
			q += 2, ra = false;	/* pop r10: the return address in r10 */
		else if (b[q] == 0x48 && b[q + 1] == 0x8d && b[q + 2] == 0x24 && b[q + 3] == 0xcc)
			q += 4;			/* lea rsp, [rsp + rcx * 8] */
		else if (b[q] == 0x41 && b[q + 1] == 0x52)
			q += 2, ra = true;	/* push r10 */
		else
			return false;
	}
	*ra_at_sp = ra;
	return q == n;
}

/* How far back from a pc an epilogue's `mov rsp, rbp; pop rbp` is looked for. */
#define EPILOGUE_BACK	24
/* The bytes from an optimized Code's start its frame set-up is looked for in. */
#define PROLOGUE_SCAN	64

int v8_code_leaf(const struct v8_reader *r, struct v8_code_cache *cc, uint64_t pc, uint64_t *sfi,
		 enum v8_leaf_state *state)
{
	static const uint8_t setup[] = { 0x55, 0x48, 0x89, 0xe5, 0x56, 0x57 };
	uint8_t b[PROLOGUE_SCAN > EPILOGUE_BACK + 16 ? PROLOGUE_SCAN : EPILOGUE_BACK + 16];
	uint64_t code, start, off, from;
	bool ra;
	int err, q, n, push = -1;

	if ((err = optimized_code(r, cc, pc, &code, &start, sfi)))
		return err;
	/* push rbp; mov rbp, rsp; push rsi (the context); push rdi (the function) */
	if ((err = remote_read(r->rr, r->pid, start, b, PROLOGUE_SCAN)))
		return err;
	for (q = 0; q + (int)sizeof(setup) <= PROLOGUE_SCAN && push < 0; q++)
		if (!memcmp(b + q, setup, sizeof(setup)))
			push = q;
	if (push < 0)
		return -EPROTO;
	off = pc - start;
	if (off <= (uint64_t)push) {
		*state = V8_LEAF_NO_FRAME;
		return 0;
	}
	if (off == (uint64_t)push + 1) {
		*state = V8_LEAF_PUSHED;
		return 0;
	}
	if (off < (uint64_t)push + sizeof(setup)) {
		*state = V8_LEAF_SETTING_UP;
		return 0;
	}
	/* an epilogue: mov rsp, rbp; pop rbp; then its tail up to the pc */
	from = pc - start >= EPILOGUE_BACK ? pc - EPILOGUE_BACK : start;
	n = (int)(pc - from);
	if ((err = remote_read(r->rr, r->pid, from, b, (size_t)n + 8)))
		return err;
	*state = V8_LEAF_FRAME;
	for (q = 4; q <= n; q++) {
		if (b[q - 4] == 0x48 && (b[q - 3] == 0x8b || b[q - 3] == 0x89) &&
		    b[q - 2] == (b[q - 3] == 0x8b ? 0xe5 : 0xec) && b[q - 1] == 0x5d &&
		    epilogue_tail(b, q, n, &ra)) {
			*state = ra ? V8_LEAF_NO_FRAME : V8_LEAF_RA_UNKNOWN;
			break;
		}
	}
	return 0;
}

/* ---- baseline (Sparkplug) code ---- */

bool v8_sfi_has_bytecode(const struct v8_reader *r, uint64_t sfi, uint64_t ba)
{
	const struct v8_layout *l = r->l;
	uint64_t data, inner;
	uint16_t type;

	if (v8_object_field(r, sfi, l->sfi_function_data, &data))
		return false;
	if (data == ba)
		return true;
	return l->t_code && l->code_bytecode && !v8_object_type(r, data, &type) &&
	       type == l->t_code && !v8_object_field(r, data, l->code_bytecode, &inner) &&
	       inner == ba;
}

/*
 * The bytes of @arr, a ByteArray or BytecodeArray (instance type @type,
 * its length a Smi at FixedArrayBase::length, its bytes at @data), at
 * most @max, into *@buf (malloc'd; the caller frees it), *@n.
 */
static int array_bytes(const struct v8_reader *r, uint64_t arr, uint16_t type, uint32_t data,
		       uint32_t max, uint8_t **buf, uint32_t *n)
{
	const struct v8_layout *l = r->l;
	int64_t len;
	int err;

	if ((err = array_length(r, arr, type, &len)))
		return err;
	if (len <= 0)
		return -EPROTO;
	if (len > max)
		return -E2BIG;
	if (!(*buf = malloc((size_t)len)))
		return -ENOMEM;
	if ((err = remote_read(r->rr, r->pid, arr - l->heap_object_tag + data, *buf, (size_t)len))) {
		free(*buf);
		*buf = NULL;
		return err;
	}
	*n = (uint32_t)len;
	return 0;
}

/* V8's BytecodeOffsetIterator::AdvanceToPCOffset() (see code.h). */
int v8_baseline_offset(const struct v8_layout *l, const uint8_t *tab, uint32_t ntab,
		       const uint8_t *bc, uint32_t nbc, uint64_t target, int64_t *offset)
{
	uint64_t end, d;
	uint32_t i = 0, at = 0, size;
	int64_t cur = -1;
	uint8_t b, next;

	if (v8_vlq(tab, ntab, &i, &end))
		return -EPROTO;
	while (end < target) {
		if (v8_vlq(tab, ntab, &i, &d) || at >= nbc)
			return -EPROTO;	/* the table or the bytecodes end before the pc */
		end += d;
		cur = at;
		b = bc[at];
		if (b >= l->nbytecodes)
			return -EPROTO;
		if (b < l->nprefixes) {
			if (at + 1 >= nbc || (next = bc[at + 1]) < l->nprefixes ||
			    next >= l->nbytecodes)
				return -EPROTO;
			size = 1u + l->bytecode_sizes[b & 1 ? 2 : 1][next];
		} else {
			size = l->bytecode_sizes[0][b];
		}
		if (size > nbc - at)
			return -EPROTO;
		at += size;
	}
	*offset = cur;
	return 0;
}

/*
 * The frame of baseline Code @code at code offset @target (the pc's
 * offset + 1, or a return address's offset) for the frame whose function
 * is @sfi: its bytecode offset (v8_baseline_offset()), then that offset's
 * script position in the BytecodeArray's source position table, as an
 * interpreted frame's. The Code's BytecodeArray must be @sfi's
 * (v8_sfi_has_bytecode()), else -ESTALE. Returns 1 (out[0]; a position
 * of -1: none recorded at the offset), or an error as v8_code_frames().
 */
static int baseline_frame(const struct v8_reader *r, struct v8_code_cache *cc, uint64_t code,
			  uint64_t target, uint64_t sfi, struct v8_code_frame *out)
{
	const struct v8_layout *l = r->l;
	uint8_t *tab = NULL, *bc = NULL;
	uint64_t ba, table, spt;
	uint32_t ntab, nbc;
	int64_t offset, raw;
	struct v8_baseline_entry *e;
	int err;

	if (!(l->features & V8_FEAT_BASELINE))
		return -ENOTSUP;
	if ((err = v8_object_field(r, code, l->code_bytecode, &ba)))
		return err;
	if (!v8_sfi_has_bytecode(r, sfi, ba))
		return -ESTALE;
	if ((err = v8_object_field(r, code, l->code_offset_table, &table)))
		return err;
	e = &cc->baseline[((code ^ table * 31 ^ target * 0x9e3779b97f4a7c15ULL) >> 4) %
			  V8_BASELINE_CACHE];
	if (e->code == code && e->table == table && e->ba == ba && e->target == target) {
		offset = e->offset;
		if (e->pos >= 0) {	/* a position once found stays the bytecode's */
			out[0] = (struct v8_code_frame){ .sfi = sfi, .pos = e->pos };
			return 1;
		}
	} else {
		if ((err = array_bytes(r, table, l->t_byte_array, l->byte_array_data,
				       V8_POSITIONS_MAX, &tab, &ntab)) ||
		    (err = array_bytes(r, ba, l->t_bytecode_array, l->bytecode_array_data,
				       V8_BYTECODES_MAX_BYTES, &bc, &nbc)) ||
		    (err = v8_baseline_offset(l, tab, ntab, bc, nbc, target, &offset)))
			goto out;
		*e = (struct v8_baseline_entry){ .code = code, .table = table, .ba = ba,
						 .target = target, .offset = offset, .pos = -1 };
	}
	out[0] = (struct v8_code_frame){ .sfi = sfi, .pos = -1 };
	if (!v8_object_field(r, ba, l->bytecode_array_positions, &spt) &&
	    !v8_position_at(r, spt, offset, &raw))
		out[0].pos = e->pos = v8_position_offset(raw);
	err = 1;
out:
	free(tab);
	free(bc);
	return err;
}

int v8_code_frames(const struct v8_reader *r, struct v8_code_cache *cc, uint64_t pc, bool exact,
		   uint64_t sfi, struct v8_code_frame *out, int cap, int *inline_err)
{
	const struct v8_layout *l = r->l;
	uint64_t p = exact ? pc : pc - 1, code, start, dd, own, spt, isfi;
	int64_t raw = 0;
	uint32_t kind;
	int n = 0, id, err;

	*inline_err = 0;
	if (cap < 1)
		return -ENOTSUP;
	if ((err = code_at(r, cc, p, &code, &start, &kind)))
		return err;
	if (kind == l->code_kind_baseline)
		return baseline_frame(r, cc, code, p - start + 1, sfi, out);
	if (kind != l->code_kind_turbofan && kind != l->code_kind_maglev)
		return -ENOTSUP;
	if ((err = optimized_sfi(r, code, &own)))
		return err;
	if (own != sfi)
		return -ESTALE;
	if ((err = v8_object_field(r, code, l->code_deopt_data, &dd)))
		return err;
	if ((err = v8_object_field(r, code, l->code_positions, &spt)) ||
	    v8_position_at(r, spt, (int64_t)(p - start), &raw)) {
		if (err)
			return err;
		out[0] = (struct v8_code_frame){ .sfi = sfi, .pos = -1 };
		return 1;
	}
	/* the inlining chain, innermost first, to the code's own function */
	for (id = v8_position_inlining_id(raw); id >= 0; id = v8_position_inlining_id(raw)) {
		int64_t pos = v8_position_offset(raw);

		if (n + 1 >= cap || n + 1 >= V8_INLINE_MAX) {
			*inline_err = -E2BIG;
			break;
		}
		if ((err = inlined(r, dd, id, &raw, &isfi))) {
			*inline_err = err;
			break;
		}
		out[n++] = (struct v8_code_frame){ .sfi = isfi, .pos = pos };
	}
	if (*inline_err) {
		/* the outer frame alone: its position is not known either */
		out[0] = (struct v8_code_frame){ .sfi = sfi, .pos = -1 };
		return 1;
	}
	out[n++] = (struct v8_code_frame){ .sfi = sfi, .pos = v8_position_offset(raw) };
	return n;
}
