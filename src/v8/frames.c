// SPDX-License-Identifier: GPL-2.0
/*
 * frames.c - the V8 frame at a frame pointer, named from user space
 * (see frames.h).
 *
 * Owns: checked reads of V8 heap objects in another process (tags, maps,
 * instance types, Smis), V8 strings to UTF-8, a ScopeInfo's function
 * name, the source position table decoder and the line lookup. Each
 * function reads only through remote_read() (reads that time out), and
 * returns -EPROTO when memory contradicts the layout.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "counters/counters.h"
#include "proc/remote.h"
#include "v8/frames.h"

COUNTER_DEFINE(v8_frame_unverified, COUNTER_PARTIAL,
	       "V8 frames left unnamed: their slots were no frame marker and no Context + JSFunction");
COUNTER_DEFINE(v8_read_errors, COUNTER_PARTIAL,
	       "V8 frames left unnamed: the process's memory could not be read (gone, unmapped)");
COUNTER_DEFINE(v8_name_unreadable, COUNTER_PARTIAL,
	       "V8 JS frames without a function name (unnamed in profiles): its String or ScopeInfo did not check out");
COUNTER_DEFINE(v8_file_unreadable, COUNTER_PARTIAL,
	       "V8 JS frames without a file (unnamed in profiles): the Script or its name did not check out");
COUNTER_DEFINE(v8_line_unknown, COUNTER_PARTIAL,
	       "V8 interpreted frames without a line: offset, position table or line ends unreadable");

/* An obvious ceiling for lengths read from the heap (V8's String::kMaxLength is < 2^30). */
#define LEN_MAX		(1u << 30)
#define LINE_ENDS_MAX	(1u << 26)

static int rd(const struct v8_reader *r, uint64_t addr, void *buf, size_t len)
{
	return remote_read(r->rr, r->pid, addr, buf, len);
}

static int rd64(const struct v8_reader *r, uint64_t addr, uint64_t *v)
{
	return rd(r, addr, v, sizeof(*v));
}

static bool is_heap(const struct v8_layout *l, uint64_t w)
{
	return (w & l->heap_object_tag_mask) == l->heap_object_tag;
}

/* A Smi: the tag, and nothing but the tag below the value. */
static bool is_smi(const struct v8_layout *l, uint64_t w)
{
	uint64_t low = l->smi_shift < 64 ? (1ULL << l->smi_shift) - 1 : ~0ULL;

	return (w & l->smi_tag_mask) == l->smi_tag && (w & low) == l->smi_tag;
}

static int64_t smi_value(const struct v8_layout *l, uint64_t w)
{
	return (int64_t)w >> l->smi_shift;
}

/* The object's untagged address. */
static uint64_t obj(const struct v8_layout *l, uint64_t tagged)
{
	return tagged - l->heap_object_tag;
}

/* The instance type of heap object @tagged (its map's), into *@type. */
static int obj_type(const struct v8_reader *r, uint64_t tagged, uint16_t *type)
{
	const struct v8_layout *l = r->l;
	uint64_t map;
	int err;

	if (!is_heap(l, tagged) || tagged < 4096)
		return -EPROTO;
	err = rd64(r, obj(l, tagged) + l->heap_object_map, &map);
	if (err)
		return err;
	if (!is_heap(l, map) || map < 4096)
		return -EPROTO;
	return rd(r, obj(l, map) + l->map_instance_type, type, sizeof(*type));
}

/* The tagged field at @off of heap object @tagged. */
static int field(const struct v8_reader *r, uint64_t tagged, uint32_t off, uint64_t *v)
{
	return rd64(r, obj(r->l, tagged) + off, v);
}

/* A Smi field at @off of @tagged, checked, into *@v. */
static int smi_field(const struct v8_reader *r, uint64_t tagged, uint32_t off, int64_t *v)
{
	uint64_t w;
	int err = field(r, tagged, off, &w);

	if (err)
		return err;
	if (!is_smi(r->l, w))
		return -EPROTO;
	*v = smi_value(r->l, w);
	return 0;
}

/* ---- strings ---- */

struct strbuf {
	char *p;
	size_t n, cap;		/* cap counts the NUL */
	/* counting mode (p NULL): line terminators before position @stop */
	uint64_t unit, stop, lines;
	bool cr;		/* the unit before was a '\r' */
};

/*
 * Count code unit @c, the @b->unit'th, in @b->lines when it ends a line
 * before @b->stop: V8's String::CalculateLineEnds() (a '\r' not followed
 * by '\n', '\n', U+2028, U+2029).
 */
static void count_unit(struct strbuf *b, uint32_t c)
{
	if (b->cr && c != '\n')
		b->lines++;	/* the '\r' at unit - 1 < stop */
	b->cr = false;
	if (b->unit++ >= b->stop)
		return;
	if (c == '\r')
		b->cr = true;
	else if (c == '\n' || c == 0x2028 || c == 0x2029)
		b->lines++;
}

static int put_cp(struct strbuf *b, uint32_t cp)
{
	char u[4];
	size_t k;

	if (cp >= 0xd800 && cp <= 0xdfff)
		cp = 0xfffd;	/* a lone surrogate has no UTF-8 form */
	if (cp < 0x80) {
		u[0] = (char)cp;
		k = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		k = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		k = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		k = 4;
	}
	if (b->cap - 1 - b->n < k)
		return -E2BIG;
	memcpy(b->p + b->n, u, k);
	b->n += k;
	return 0;
}

/* Characters [@start, @start + @len) of a sequential string at @tagged. */
static int seq_chars(const struct v8_reader *r, uint64_t tagged, bool one_byte,
		     uint32_t start, uint32_t len, struct strbuf *b)
{
	const struct v8_layout *l = r->l;
	uint8_t buf[512];
	uint32_t csize = one_byte ? 1 : 2;
	uint64_t base = obj(l, tagged) +
		(one_byte ? l->seq_one_byte_chars : l->seq_two_byte_chars) + (uint64_t)start * csize;
	uint32_t hi = 0;	/* a pending high surrogate */

	if (b->p && len > b->cap)	/* each character is at least one byte out */
		return -E2BIG;
	while (len) {
		uint32_t n = len > sizeof(buf) / csize ? (uint32_t)(sizeof(buf) / csize) : len;
		int err = rd(r, base, buf, (size_t)n * csize);

		if (err)
			return err;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t c = one_byte ? buf[i] : (uint32_t)(buf[2 * i] | buf[2 * i + 1] << 8);

			if (!b->p) {
				count_unit(b, c);
				continue;
			}

			if (hi && c >= 0xdc00 && c <= 0xdfff) {
				c = 0x10000 + ((hi - 0xd800) << 10) + (c - 0xdc00);
				hi = 0;
			} else if (hi) {
				if ((err = put_cp(b, 0xfffd)))
					return err;
				hi = 0;
			}
			if (!one_byte && c >= 0xd800 && c <= 0xdbff) {
				hi = c;
				continue;
			}
			if ((err = put_cp(b, c)))
				return err;
		}
		base += (uint64_t)n * csize;
		len -= n;
	}
	return hi && b->p ? put_cp(b, 0xfffd) : 0;
}

/*
 * Append characters [@start, @start + @len) of String @tagged (whose type
 * is @type) to @b; @len UINT32_MAX: to its end.
 */
static int str_range(const struct v8_reader *r, uint64_t tagged, uint16_t type,
		     uint32_t start, uint32_t len, struct strbuf *b, int depth)
{
	const struct v8_layout *l = r->l;
	uint16_t rep = type & l->str_rep_mask;
	uint64_t part;
	uint16_t ptype;
	int32_t slen;
	int64_t off;
	int err;

	if (type >= l->first_nonstring || depth > V8_STRING_DEPTH)
		return -EPROTO;
	if ((err = rd(r, obj(l, tagged) + l->string_length, &slen, sizeof(slen))))
		return err;
	if (slen < 0 || (uint32_t)slen > LEN_MAX || start > (uint32_t)slen)
		return -EPROTO;
	if (len == UINT32_MAX)
		len = (uint32_t)slen - start;
	if (len > (uint32_t)slen - start)
		return -EPROTO;
	if (!len)
		return 0;
	if (rep == l->str_seq)
		return seq_chars(r, tagged, (type & l->str_enc_mask) == l->str_one_byte,
				 start, len, b);
	if (rep == l->str_thin) {
		if ((err = field(r, tagged, l->thin_actual, &part)) ||
		    (err = obj_type(r, part, &ptype)))
			return err;
		return str_range(r, part, ptype, start, len, b, depth + 1);
	}
	if (rep == l->str_sliced) {
		if ((err = field(r, tagged, l->sliced_parent, &part)) ||
		    (err = obj_type(r, part, &ptype)) ||
		    (err = smi_field(r, tagged, l->sliced_offset, &off)))
			return err;
		if (off < 0 || off > LEN_MAX)
			return -EPROTO;
		return str_range(r, part, ptype, start + (uint32_t)off, len, b, depth + 1);
	}
	if (rep == l->str_cons) {
		uint64_t second;
		uint16_t stype;
		int32_t flen;

		if ((err = field(r, tagged, l->cons_first, &part)) ||
		    (err = obj_type(r, part, &ptype)) ||
		    (err = field(r, tagged, l->cons_second, &second)) ||
		    (err = obj_type(r, second, &stype)) ||
		    (err = rd(r, obj(l, part) + l->string_length, &flen, sizeof(flen))))
			return err;
		if (flen < 0 || flen > slen)
			return -EPROTO;
		if (start < (uint32_t)flen) {
			uint32_t n = (uint32_t)flen - start < len ? (uint32_t)flen - start : len;

			if ((err = str_range(r, part, ptype, start, n, b, depth + 1)))
				return err;
			len -= n;
			start = (uint32_t)flen;
		}
		return len ? str_range(r, second, stype, start - (uint32_t)flen, len, b,
				       depth + 1) : 0;
	}
	return -ENOTSUP;	/* external strings: their data is the embedder's */
}

/* String @tagged (of type @type) into @out (@cap bytes with the NUL). */
static int read_string(const struct v8_reader *r, uint64_t tagged, uint16_t type,
		       char *out, size_t cap)
{
	struct strbuf b = { .p = out, .cap = cap };
	int err = str_range(r, tagged, type, 0, UINT32_MAX, &b, 0);

	out[err ? 0 : b.n] = 0;
	return err;
}

/* ---- names ---- */

/*
 * The function name a ScopeInfo holds (V8's SharedFunctionInfo::Name(),
 * then DebugName()'s fallback to the inferred name): see metadata.c for
 * the layout.
 */
static int scope_info_name(const struct v8_reader *r, uint64_t si, char *out, size_t cap)
{
	const struct v8_layout *l = r->l;
	uint64_t base = obj(l, si) + l->heap_object_map + l->tagged_size;
	uint64_t w[4], hdr[3];
	int64_t flags, nlocals;
	uint32_t idx;
	uint16_t type;
	int err;

	out[0] = 0;
	if (!(l->features & V8_FEAT_SCOPE_INFO) || l->si_idx_ncontext_locals > 2)
		return -ENOTSUP;
	if ((err = rd(r, base, hdr, sizeof(hdr))))
		return err;
	if (!is_smi(l, hdr[0]) || !is_smi(l, hdr[l->si_idx_ncontext_locals]))
		return -EPROTO;
	flags = smi_value(l, hdr[0]);
	nlocals = smi_value(l, hdr[l->si_idx_ncontext_locals]);
	if (flags < 0 || nlocals < 0 || nlocals > (1 << 20))
		return -EPROTO;
	if ((flags & ((1 << l->si_scope_type_bits) - 1)) != l->si_function_scope)
		return -ENOTSUP;	/* script, module, eval scopes: not laid out here */
	idx = l->si_idx_first_vars + (nlocals < l->si_max_inlined ? (uint32_t)nlocals : 1) +
	      (uint32_t)nlocals + (uint32_t)(flags >> l->si_saved_class_var_bit & 1);
	/* w[0]: the slot before (a Smi: a local's info, the saved class
	 * variable or the local count), w[1..2]: the function variable, w[3] */
	if ((err = rd(r, base + (uint64_t)(idx - 1) * l->tagged_size, w, sizeof(w))))
		return err;
	if (!is_smi(l, w[0]))
		return -EPROTO;
	idx = 1;
	if (flags >> l->si_function_var_shift & 3) {	/* != VariableAllocationInfo::NONE */
		if (!is_smi(l, w[2]))
			return -EPROTO;
		if (!is_smi(l, w[1]) || smi_value(l, w[1])) {	/* name: String|Zero */
			if ((err = obj_type(r, w[1], &type)))
				return err;
			if ((err = read_string(r, w[1], type, out, cap)))
				return err;
		}
		idx = 3;
	}
	if (out[0] || !(flags >> l->si_inferred_name_bit & 1))
		return 0;
	/* inferred_function_name: String|Undefined */
	if ((err = obj_type(r, w[idx], &type)))
		return err;
	if (type == l->t_oddball)
		return 0;
	return read_string(r, w[idx], type, out, cap);
}

/* The SharedFunctionInfo's debug name into @out. */
static int sfi_name(const struct v8_reader *r, uint64_t sfi, char *out, size_t cap)
{
	const struct v8_layout *l = r->l;
	uint64_t nos;
	uint16_t type;
	int err;

	out[0] = 0;
	if ((err = field(r, sfi, l->sfi_name_or_scope_info, &nos)))
		return err;
	if (is_smi(l, nos))
		return smi_value(l, nos) ? -EPROTO : 0;	/* kNoSharedNameSentinel */
	if ((err = obj_type(r, nos, &type)))
		return err;
	if (type < l->first_nonstring)
		return read_string(r, nos, type, out, cap);
	if (type == l->t_scope_info)
		return scope_info_name(r, nos, out, cap);
	return -EPROTO;
}

/* The Script of @sfi into *@script (0: none, a builtin). */
static int sfi_script(const struct v8_reader *r, uint64_t sfi, uint64_t *script)
{
	const struct v8_layout *l = r->l;
	uint64_t s;
	uint16_t type;
	int err;

	*script = 0;
	if (!(l->features & V8_FEAT_SCRIPT))
		return -ENOTSUP;
	if ((err = field(r, sfi, l->sfi_script_or_debug_info, &s)) ||
	    (err = obj_type(r, s, &type)))
		return err;
	if (type == l->t_oddball)
		return 0;	/* undefined: no script */
	if (type != l->t_script)
		return -ENOTSUP;	/* a DebugInfo (a debugger attached) */
	*script = s;
	return 0;
}

static int script_file(const struct v8_reader *r, uint64_t script, char *out, size_t cap)
{
	uint64_t name;
	uint16_t type;
	int err;

	out[0] = 0;
	if ((err = field(r, script, r->l->script_name, &name)))
		return err;
	if (is_smi(r->l, name))
		return -EPROTO;
	if ((err = obj_type(r, name, &type)))
		return err;
	if (type == r->l->t_oddball)
		return 0;	/* an eval's script has no name */
	return read_string(r, name, type, out, cap);
}

/* ---- lines ---- */

static int64_t zigzag(uint64_t u)
{
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/*
 * The SourcePosition (raw) of code offset @offset in source position table
 * @tab (@n bytes): V8's SourcePositionTableIterator (code offsets from
 * kFunctionEntryBytecodeOffset, -1; a negative code delta marks a
 * non-statement entry, -(delta + 1)), the last entry at or before @offset.
 */
static int table_raw(const uint8_t *tab, uint32_t n, int64_t offset, int64_t *out)
{
	int64_t code = -1, raw = 0;
	bool found = false;
	uint32_t i = 0;

	while (i < n) {
		int64_t dcode, draw;
		uint64_t u;

		if (v8_vlq(tab, n, &i, &u))
			return -EPROTO;
		dcode = zigzag(u);
		if (dcode < 0)
			dcode = -(dcode + 1);
		if (v8_vlq(tab, n, &i, &u))
			return -EPROTO;
		draw = zigzag(u);
		if (code + dcode > offset)
			break;
		code += dcode;
		raw += draw;
		found = true;
	}
	if (!found || raw < 0 || (raw & 1))	/* none, or an external (file, line) position */
		return -ENOENT;
	*out = raw;
	return 0;
}

/* The script offset of bytecode offset @offset in @tab: the SourcePosition's
 * script offset (bits 1-30, stored + 1). */
static int table_position(const uint8_t *tab, uint32_t n, int64_t offset, int64_t *pos)
{
	int64_t raw;
	int err = table_raw(tab, n, offset, &raw);

	if (err)
		return err;
	*pos = v8_position_offset(raw);
	return *pos < 0 ? -ENOENT : 0;
}

/*
 * The line of script offset @pos counted in the Script's source, for a
 * script whose line ends V8 has not computed (no stack trace asked for
 * them yet): the terminators before @pos (at most V8_SOURCE_SCAN_MAX
 * characters read; an external string, node's own modules, is -ENOTSUP).
 */
static int source_line(const struct v8_reader *r, uint64_t script, int64_t pos,
		       int64_t line_offset, int *line)
{
	const struct v8_layout *l = r->l;
	struct strbuf b = { .stop = (uint64_t)pos };
	uint64_t src;
	uint16_t type;
	int32_t slen;
	int err;

	if ((err = field(r, script, l->script_source, &src)) ||
	    (err = obj_type(r, src, &type)))
		return err;
	if (type >= l->first_nonstring)
		return -ENOENT;
	if ((err = rd(r, obj(l, src) + l->string_length, &slen, sizeof(slen))))
		return err;
	if (slen < 0 || pos > slen)
		return -EPROTO;
	if (pos > V8_SOURCE_SCAN_MAX)
		return -E2BIG;
	/* one character past @pos: a '\r' just before it ends a line only
	 * when no '\n' follows */
	if ((err = str_range(r, src, type, 0, pos < slen ? (uint32_t)pos + 1 : (uint32_t)slen,
			     &b, 0)))
		return err;
	if (b.cr)
		b.lines++;	/* a '\r' at the source's end */
	*line = (int)(b.lines + 1 + (uint64_t)line_offset);
	return 0;
}

/* The 1-based line of script offset @pos in @script (Script::GetPositionInfo()). */
static int script_line(const struct v8_reader *r, uint64_t script, int64_t pos, int *line)
{
	const struct v8_layout *l = r->l;
	uint64_t ends;
	int64_t n, lo, hi, off, v;
	uint16_t type;
	int err;

	if ((err = smi_field(r, script, l->script_line_offset, &off)))
		return err;
	if (off < 0 || off > LINE_ENDS_MAX)
		return -EPROTO;
	if ((err = field(r, script, l->script_line_ends, &ends)) ||
	    (err = obj_type(r, ends, &type)))
		return err;
	if (type != l->t_fixed_array)	/* undefined: V8 computes them on demand */
		return source_line(r, script, pos, off, line);
	if ((err = smi_field(r, ends, l->fixed_array_length, &n)))
		return err;
	if (n <= 0 || n > LINE_ENDS_MAX)
		return -EPROTO;
	/* the first line end at or after @pos */
	lo = 0;
	hi = n;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if ((err = smi_field(r, ends, l->fixed_array_data + (uint32_t)mid * l->tagged_size, &v)))
			return err;
		if (v >= pos)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo == n)
		return -EPROTO;	/* past the script's end */
	*line = (int)(lo + 1 + off);
	return 0;
}

/* The bytes of source position table @spt (a ByteArray) into *@tab (malloc'd), *@n. */
static int read_positions(const struct v8_reader *r, uint64_t spt, uint8_t **tab, uint32_t *n)
{
	const struct v8_layout *l = r->l;
	int64_t tlen;
	uint16_t type;
	int err;

	if ((err = obj_type(r, spt, &type)))
		return err;
	if (type != l->t_byte_array)
		return -ENOENT;	/* not collected (lazy source positions) */
	if ((err = smi_field(r, spt, l->fixed_array_length, &tlen)))
		return err;
	if (tlen < 0 || tlen > V8_POSITIONS_MAX)
		return -E2BIG;
	if (!(*tab = malloc(tlen ? (size_t)tlen : 1)))
		return -ENOMEM;
	err = tlen ? rd(r, obj(l, spt) + l->byte_array_data, *tab, (size_t)tlen) : 0;
	if (err) {
		free(*tab);
		*tab = NULL;
		return err;
	}
	*n = (uint32_t)tlen;
	return 0;
}

/* The line of the interpreted frame at @fp running bytecode array @ba. */
static int interpreted_line(const struct v8_reader *r, uint64_t ba, uint64_t offset_slot,
			    int64_t live_offset, uint64_t script, int *line)
{
	const struct v8_layout *l = r->l;
	uint8_t *tab;
	int64_t raw, offset, len, pos;
	uint32_t tlen;
	uint64_t spt;
	uint16_t type;
	int err;

	if (!(l->features & V8_FEAT_LINES) || !script)
		return -ENOTSUP;
	if ((err = obj_type(r, ba, &type)))
		return err;
	if (type != l->t_bytecode_array)
		return -EPROTO;
	if (live_offset >= 0) {
		raw = live_offset;
	} else {
		if (!is_smi(l, offset_slot))
			return -EPROTO;
		raw = smi_value(l, offset_slot);
	}
	/* InterpretedFrame::GetBytecodeOffset(): less the header, plus the tag */
	offset = raw - ((int64_t)l->bytecode_array_data - (int64_t)l->heap_object_tag);
	if ((err = smi_field(r, ba, l->fixed_array_length, &len)))
		return err;
	if (offset < -1 || offset >= len)	/* -1: kFunctionEntryBytecodeOffset */
		return -EPROTO;
	if ((err = field(r, ba, l->bytecode_array_positions, &spt)) ||
	    (err = read_positions(r, spt, &tab, &tlen)))
		return err;
	err = table_position(tab, tlen, offset, &pos);
	free(tab);
	return err ? err : script_line(r, script, pos, line);
}

/* ---- the frame ---- */

int v8_read_frame(const struct v8_reader *r, uint64_t fp, enum v8_code code,
		  int64_t live_offset, struct v8_frame *out)
{
	const struct v8_layout *l = r->l;
	uint64_t ctx, fn, sfi, script = 0, ba = 0, offset_slot = 0;
	uint16_t type;
	int err;

	memset(out, 0, sizeof(*out));
	if (!(l->features & V8_FEAT_FRAMES))
		return -ENOTSUP;
	if ((err = rd64(r, fp + (int64_t)l->fp_context, &ctx)) ||
	    (err = rd64(r, fp + (int64_t)l->fp_function, &fn)))
		goto read_error;
	if ((ctx & l->smi_tag_mask) == l->smi_tag) {
		/* a typed frame: StackFrame::TypeToMarker(type) */
		int64_t t = (int64_t)(ctx >> l->marker_shift);

		if (ctx >> l->marker_shift >= V8_FRAME_TYPES_MAX || !v8_frame_type_name(l, t))
			goto unverified;
		out->kind = V8_FRAME_TYPED;
		out->type = t;
		return 0;
	}
	if (!(l->features & V8_FEAT_NAMES))
		return -ENOTSUP;
	err = obj_type(r, ctx, &type);
	if (err == -EPROTO || (!err && (type < l->first_context || type > l->last_context)))
		goto unverified;
	if (err)
		goto read_error;
	err = obj_type(r, fn, &type);
	if (err == -EPROTO ||
	    (!err && (type < l->t_js_function || type > l->t_js_function_last)))
		goto unverified;
	if (err)
		goto read_error;
	if ((err = field(r, fn, l->js_function_shared, &sfi)))
		goto read_error;
	err = obj_type(r, sfi, &type);
	if (err == -EPROTO || (!err && type != l->t_sfi))
		goto unverified;
	if (err)
		goto read_error;
	out->kind = V8_FRAME_JS;
	out->function = fn;

	if ((out->name_err = sfi_name(r, sfi, out->name, sizeof(out->name)))) {
		out->name[0] = 0;
		counter_inc(&counter_v8_name_unreadable);
	}
	if ((out->file_err = sfi_script(r, sfi, &script)) ||
	    (script && (out->file_err = script_file(r, script, out->file, sizeof(out->file))))) {
		out->file[0] = 0;
		script = 0;
		counter_inc(&counter_v8_file_unreadable);
	}
	if (code != V8_CODE_INTERPRETED) {
		out->line_err = -ENOTSUP;	/* compiled code: not read yet */
		return 0;
	}
	if ((out->line_err = rd64(r, fp + (int64_t)l->fp_bytecode_array, &ba)) ||
	    (live_offset < 0 &&
	     (out->line_err = rd64(r, fp + (int64_t)l->fp_bytecode_offset, &offset_slot))) ||
	    (out->line_err = interpreted_line(r, ba, offset_slot, live_offset, script,
					      &out->line))) {
		out->line = 0;
		counter_inc(&counter_v8_line_unknown);
	}
	return 0;

unverified:
	counter_inc(&counter_v8_frame_unverified);
	out->kind = V8_FRAME_NONE;
	return 0;
read_error:
	counter_inc(&counter_v8_read_errors);
	out->kind = V8_FRAME_NONE;
	return err;
}

/* ---- objects named after the frame is gone (src/v8/merge.c) ---- */

int v8_object_type(const struct v8_reader *r, uint64_t tagged, uint16_t *type)
{
	return obj_type(r, tagged, type);
}

int v8_object_field(const struct v8_reader *r, uint64_t tagged, uint32_t off, uint64_t *v)
{
	if (!is_heap(r->l, tagged) || tagged < 4096)
		return -EPROTO;
	return field(r, tagged, off, v);
}

int v8_sfi_describe(const struct v8_reader *r, uint64_t sfi, struct v8_frame *out,
		    uint64_t *script)
{
	memset(out, 0, sizeof(*out));
	*script = 0;
	if (!(r->l->features & V8_FEAT_NAMES))
		return -ENOTSUP;
	out->kind = V8_FRAME_JS;
	if ((out->name_err = sfi_name(r, sfi, out->name, sizeof(out->name)))) {
		out->name[0] = 0;
		counter_inc(&counter_v8_name_unreadable);
	}
	if ((out->file_err = sfi_script(r, sfi, script)) ||
	    (*script && (out->file_err = script_file(r, *script, out->file, sizeof(out->file))))) {
		out->file[0] = 0;
		*script = 0;
		counter_inc(&counter_v8_file_unreadable);
	}
	return 0;
}

int v8_bytecode_line(const struct v8_reader *r, uint64_t ba, int64_t raw_offset,
		     uint64_t script, int *line)
{
	int err;

	*line = 0;
	if (raw_offset < 0)
		return -EINVAL;
	err = interpreted_line(r, ba, 0, raw_offset, script, line);
	if (err) {
		*line = 0;
		counter_inc(&counter_v8_line_unknown);
	}
	return err;
}

int v8_position_at(const struct v8_reader *r, uint64_t table, int64_t offset, int64_t *raw)
{
	uint8_t *tab;
	uint32_t n;
	int err = read_positions(r, table, &tab, &n);

	if (err)
		return err;
	err = table_raw(tab, n, offset, raw);
	free(tab);
	return err;
}

int v8_script_line(const struct v8_reader *r, uint64_t script, int64_t pos, int *line)
{
	*line = 0;
	if (!(r->l->features & V8_FEAT_LINES) || !script)
		return -ENOTSUP;
	if (pos < 0)
		return -ENOENT;
	return script_line(r, script, pos, line);
}
