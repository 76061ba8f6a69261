// SPDX-License-Identifier: GPL-2.0
/*
 * metadata.c - V8's postmortem metadata read from an ELF object's
 * `v8dbg_*` symbols (see metadata.h).
 *
 * Owns: nothing past one call. The object is read through libelf with
 * ELF_C_READ (pread: a file truncated under us is a read error, never a
 * SIGBUS), as src/ruby/detect.c and src/python/detect.c do; the cheap
 * reject of an object that is not V8 is a memmem of its symbol string
 * tables for "v8dbg_HeapObjectTag". Each wanted symbol's value is read
 * with pread from its section's file image (st_shndx; SHT_NOBITS: 0),
 * only for a symbol of size 4 or 8.
 *
 * The wanted symbols are one table (fields[]): a symbol name (or two: a
 * field renamed across versions), the member of struct v8_layout it
 * fills and the features it is needed for. A symbol of neither table
 * turns those features off and is counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counters/counters.h"
#include "runtime/elf_detect.h"
#include "runtime/elf_syms.h"
#include "v8/metadata.h"

COUNTER_DEFINE(v8_metadata_missing, COUNTER_PARTIAL,
	       "v8dbg_ symbols a V8 binary lacks: the feature needing each is off");

#define PREFIX		"v8dbg_"
#define PREFIX_LEN	(sizeof(PREFIX) - 1)
#define NEEDLE		"v8dbg_HeapObjectTag"
#define MAX_SYMS	4096	/* v8dbg_ symbols kept (node 20 has 531) */
/* v8::internal::interpreter::Bytecodes::kBytecodeSizes */
#define SIZES_SYM	"_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE"
#define SIZE_MAX_BYTES	32	/* a bytecode's size: the opcode, at most 5 operands of 4 bytes */

/* One symbol read: its name (in the ELF's string data) and value. */
struct vsym {
	const char *name;
	int64_t value;
};

struct symset {
	struct vsym *v;
	size_t n;
	uint8_t sizes[3 * V8_BYTECODES_MAX];	/* SIZES_SYM's bytes */
	size_t nsizes;
};

enum kind { K_U16, K_I32, K_U64, K_UINT };

#define F(name, member, kind, feats)	\
	{ name, NULL, offsetof(struct v8_layout, member), kind, feats }
#define F2(name, alt, member, kind, feats)	\
	{ name, alt, offsetof(struct v8_layout, member), kind, feats }

#define ALL	(V8_FEAT_FRAMES | V8_FEAT_NAMES | V8_FEAT_SCOPE_INFO | V8_FEAT_SCRIPT | \
		 V8_FEAT_LINES | V8_FEAT_CODE | V8_FEAT_BASELINE)
#define NAMES	(V8_FEAT_NAMES | V8_FEAT_SCOPE_INFO | V8_FEAT_SCRIPT | V8_FEAT_LINES | \
		 V8_FEAT_CODE | V8_FEAT_BASELINE)
#define SCRIPT	(V8_FEAT_SCRIPT | V8_FEAT_LINES | V8_FEAT_CODE | V8_FEAT_BASELINE)
#define CODE	(V8_FEAT_CODE | V8_FEAT_BASELINE)

static const struct field {
	const char *name, *alt;		/* without the "v8dbg_" prefix */
	size_t off;
	enum kind kind;
	uint32_t feats;			/* turned off when missing */
} fields[] = {
	F("HeapObjectTag", heap_object_tag, K_U64, ALL),
	F("HeapObjectTagMask", heap_object_tag_mask, K_U64, ALL),
	F("SmiTag", smi_tag, K_U64, ALL),
	F("SmiTagMask", smi_tag_mask, K_U64, ALL),
	F("TaggedSize", tagged_size, K_UINT, ALL),
	F("SystemPointerSize", pointer_size, K_UINT, ALL),

	F2("off_fp_context_or_frame_type", "off_fp_context", fp_context, K_I32, ALL),
	F("off_fp_function", fp_function, K_I32, ALL),
	F("off_fp_args", fp_args, K_I32, 0),
	F("off_fp_bytecode_array", fp_bytecode_array, K_I32, V8_FEAT_LINES),
	F("off_fp_bytecode_offset", fp_bytecode_offset, K_I32, V8_FEAT_LINES),

	F("type_JSFunction__JS_FUNCTION_TYPE", t_js_function, K_U16, NAMES),
	F("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", t_sfi, K_U16, NAMES),
	F("type_ScopeInfo__SCOPE_INFO_TYPE", t_scope_info, K_U16, V8_FEAT_SCOPE_INFO),
	F("type_Script__SCRIPT_TYPE", t_script, K_U16, SCRIPT),
	F("type_Oddball__ODDBALL_TYPE", t_oddball, K_U16, NAMES),
	F("type_BytecodeArray__BYTECODE_ARRAY_TYPE", t_bytecode_array, K_U16, V8_FEAT_LINES),
	F("type_ByteArray__BYTE_ARRAY_TYPE", t_byte_array, K_U16, V8_FEAT_LINES),
	F("type_FixedArray__FIXED_ARRAY_TYPE", t_fixed_array, K_U16, V8_FEAT_LINES),
	F("FirstNonstringType", first_nonstring, K_U16, NAMES),
	F("FirstContextType", first_context, K_U16, NAMES),
	F("LastContextType", last_context, K_U16, NAMES),
	F("StringRepresentationMask", str_rep_mask, K_U16, NAMES),
	F("StringEncodingMask", str_enc_mask, K_U16, NAMES),
	F("SeqStringTag", str_seq, K_U16, NAMES),
	F("ConsStringTag", str_cons, K_U16, NAMES),
	F("ExternalStringTag", str_external, K_U16, NAMES),
	F("SlicedStringTag", str_sliced, K_U16, NAMES),
	F("ThinStringTag", str_thin, K_U16, NAMES),
	F("OneByteStringTag", str_one_byte, K_U16, NAMES),
	F("TwoByteStringTag", str_two_byte, K_U16, NAMES),

	F("class_HeapObject__map__Map", heap_object_map, K_U16, NAMES),
	F("class_Map__instance_type__uint16_t", map_instance_type, K_U16, NAMES),
	F("class_JSFunction__shared__SharedFunctionInfo", js_function_shared, K_U16, NAMES),
	F("class_SharedFunctionInfo__name_or_scope_info__Object",
	  sfi_name_or_scope_info, K_U16, NAMES),
	F("class_SharedFunctionInfo__function_data__Object", sfi_function_data, K_U16, 0),
	F2("class_SharedFunctionInfo__script_or_debug_info__HeapObject",
	   "class_SharedFunctionInfo__script_or_debug_info__Object",
	   sfi_script_or_debug_info, K_U16, SCRIPT),
	F("class_Script__name__Object", script_name, K_U16, SCRIPT),
	F("class_Script__source__Object", script_source, K_U16, V8_FEAT_LINES),
	F("class_Script__line_ends__Object", script_line_ends, K_U16, V8_FEAT_LINES),
	F("class_String__length__int32_t", string_length, K_U16, NAMES),
	F("class_SeqOneByteString__chars__char", seq_one_byte_chars, K_U16, NAMES),
	F("class_SeqTwoByteString__chars__char", seq_two_byte_chars, K_U16, NAMES),
	F("class_ConsString__first__String", cons_first, K_U16, NAMES),
	F("class_ConsString__second__String", cons_second, K_U16, NAMES),
	F("class_ThinString__actual__String", thin_actual, K_U16, NAMES),
	F("class_SlicedString__parent__String", sliced_parent, K_U16, NAMES),
	F("class_SlicedString__offset__SMI", sliced_offset, K_U16, NAMES),
	F("class_FixedArrayBase__length__SMI", fixed_array_length, K_U16, V8_FEAT_LINES),
	F("class_FixedArray__data__uintptr_t", fixed_array_data, K_U16, V8_FEAT_LINES),
	F("class_BytecodeArray__data__uintptr_t", bytecode_array_data, K_U16, V8_FEAT_LINES),
	F("class_Code__bytecode_or_interpreter_data__HeapObject", code_bytecode, K_U16,
	  V8_FEAT_BASELINE),

	F("type_InstructionStream__INSTRUCTION_STREAM_TYPE", t_instruction_stream, K_U16, CODE),
	F("type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE", t_weak_fixed_array, K_U16, CODE),
	F("type_Code__CODE_TYPE", t_code, K_U16, CODE),
	F("class_InstructionStream__instruction_start__uintptr_t", istream_start, K_U16, CODE),
	F("class_Code__deoptimization_data__FixedArray", code_deopt_data, K_U16, CODE),
	F("class_Code__source_position_table__ByteArray", code_positions, K_U16, CODE),
	F("CodeKindFieldMask", code_kind_mask, K_U16, CODE),
	F("CodeKindFieldShift", code_kind_shift, K_U16, CODE),
	F("CodeKindBaseline", code_kind_maglev, K_U16, CODE),
	F("DeoptimizationDataLiteralArrayIndex", deopt_literals, K_U16, CODE),
	F("DeoptimizationDataSharedFunctionInfoIndex", deopt_sfi, K_U16, CODE),
	F("DeoptimizationDataInliningPositionsIndex", deopt_inlining, K_U16, CODE),
	F("class_Code__bytecode_offset_table__ByteArray", code_offset_table, K_U16,
	  V8_FEAT_BASELINE),

	F("scopeinfo_idx_ncontextlocals", si_idx_ncontext_locals, K_U16, V8_FEAT_SCOPE_INFO),
	F("scopeinfo_idx_first_vars", si_idx_first_vars, K_U16, V8_FEAT_SCOPE_INFO),
};

/*
 * What V8 does not export about ScopeInfo, by version, each checked live
 * against node's own names (tests/test_v8.py). V8 11.3
 * (src/objects/scope-info.tq): the Smi `flags` (ScopeFlags:
 * scope_type 4 bits, ..., has_saved_class_variable bit 10,
 * function_variable 2 bits at 12, has_inferred_function_name bit 14),
 * then parameter_count, context_local_count, the context local names
 * (inline when fewer than kScopeInfoMaxInlinedLocalNamesSize, 75, else
 * one hash table slot), their infos, saved_class_variable_info?,
 * function_variable_info? {name, slot}, inferred_function_name?, ...
 * ScopeType FUNCTION_SCOPE is 2 (CLASS, EVAL, FUNCTION, ...).
 */
static const struct si_layout {
	unsigned int major, minor;
	uint16_t max_inlined;
	uint8_t type_bits, function_scope, saved_class_bit, function_var_shift, inferred_bit;
} si_layouts[] = {
	{ 11, 3, 75, 4, 2, 10, 12, 14 },
};

/*
 * What V8 does not export about optimized code, by version (metadata.h
 * lists it), checked live (tests/test_v8_frames.py): V8 11.3
 * (src/objects/code.h CODE_DATA_FIELDS: ..., source_position_table,
 * instruction_stream, code_entry_point, flags (int32), builtin_id
 * (int16), kind_specific_flags (int16), instruction_size (int);
 * instruction-stream.h: map, code, then the instructions; code-kind.h:
 * ..., BASELINE, MAGLEV, TURBOFAN; source-position.h: struct
 * InliningPosition { SourcePosition (uint64); int }).
 */
static const struct code_layout {
	unsigned int major, minor;
	uint8_t entry, flags, size;	/* bytes after Code::source_position_table */
	uint8_t inlining_position_size;
} code_layouts[] = {
	{ 11, 3, 16, 24, 32, 16 },
};

/*
 * What V8 does not export about bytecodes, by version, checked live
 * (tests/test_v8_frames.py): how many of the first bytecodes are the
 * operand scaling prefixes (V8 11.3, src/interpreter/bytecodes.h
 * BYTECODE_LIST: Wide, ExtraWide, DebugBreakWide, DebugBreakExtraWide).
 */
static const struct bytecode_layout {
	unsigned int major, minor;
	uint8_t prefixes;
} bytecode_layouts[] = {
	{ 11, 3, 4 },
};

static int cmp_vsym(const void *a, const void *b)
{
	return strcmp(((const struct vsym *)a)->name, ((const struct vsym *)b)->name);
}

static const struct vsym *find(const struct symset *s, const char *name)
{
	struct vsym key = { .name = name };

	return s->n ? bsearch(&key, s->v, s->n, sizeof(*s->v), cmp_vsym) : NULL;
}

/* @len bytes of @sym's data (in its section's file image; SHT_NOBITS: zeros) into @buf. */
static int read_bytes(Elf *elf, int fd, const GElf_Sym *sym, void *buf, size_t len)
{
	Elf_Scn *scn;
	GElf_Shdr sh;
	uint64_t rel;

	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE)
		return -EINVAL;
	scn = elf_getscn(elf, sym->st_shndx);
	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
		return -EINVAL;
	if (sym->st_value < sh.sh_addr || sym->st_value - sh.sh_addr > sh.sh_size ||
	    sh.sh_size - (sym->st_value - sh.sh_addr) < len)
		return -EINVAL;
	if (sh.sh_type == SHT_NOBITS) {
		memset(buf, 0, len);	/* a constant 0 lands in .bss */
		return 0;
	}
	rel = sym->st_value - sh.sh_addr;
	if (sh.sh_offset > INT64_MAX - rel)
		return -EINVAL;
	if (pread(fd, buf, len, (off_t)(sh.sh_offset + rel)) != (ssize_t)len)
		return -EIO;
	return 0;
}

/* The value of @sym (size 4 or 8, signed) from its section's file image. */
static int read_value(Elf *elf, int fd, const GElf_Sym *sym, int64_t *out)
{
	int32_t v32;
	int64_t v64;
	int err;

	if (sym->st_size == 4) {
		err = read_bytes(elf, fd, sym, &v32, 4);
		v64 = v32;
	} else if (sym->st_size == 8) {
		err = read_bytes(elf, fd, sym, &v64, 8);
	} else {
		return -EINVAL;
	}
	if (!err)
		*out = v64;
	return err;
}

static bool wanted(const char *name, size_t left)
{
	static const char ver[] = "_ZN2v88internal7Version";

	if (left > PREFIX_LEN && !memcmp(name, PREFIX, PREFIX_LEN))
		return true;
	return left > sizeof(ver) - 1 && !memcmp(name, ver, sizeof(ver) - 1);
}

/* Add the wanted symbols of table @scn (strings @strs) to @s. */
static int scan(Elf *elf, int fd, Elf_Scn *scn, const Elf_Data *strs, struct symset *s)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const char *str = strs->d_buf;
	size_t entsz, n;

	entsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!d || !entsz)
		return 0;
	n = d->d_size / entsz;
	if (n > INT_MAX)
		n = INT_MAX;
	for (size_t i = 1; i < n && s->n < MAX_SYMS; i++) {
		GElf_Sym sym;
		int64_t v;

		if (!gelf_getsym(d, (int)i, &sym))
			break;
		if (sym.st_name >= strs->d_size ||
		    !memchr(str + sym.st_name, 0, strs->d_size - sym.st_name))
			continue;
		if (!strcmp(str + sym.st_name, SIZES_SYM)) {
			if (!s->nsizes && sym.st_size && sym.st_size <= sizeof(s->sizes) &&
			    !read_bytes(elf, fd, &sym, s->sizes, sym.st_size))
				s->nsizes = sym.st_size;
			continue;
		}
		if (!wanted(str + sym.st_name, strs->d_size - sym.st_name))
			continue;
		if (read_value(elf, fd, &sym, &v) ||
		    !(s->v[s->n].name = strdup(str + sym.st_name)))
			continue;
		s->v[s->n++].value = v;
	}
	return 0;
}

static void store(struct v8_layout *l, const struct field *f, int64_t v)
{
	char *p = (char *)l + f->off;

	switch (f->kind) {
	case K_U16:
		*(uint16_t *)p = (uint16_t)v;
		break;
	case K_I32:
		*(int32_t *)p = (int32_t)v;
		break;
	case K_U64:
		*(uint64_t *)p = (uint64_t)v;
		break;
	case K_UINT:
		*(unsigned int *)p = (unsigned int)v;
		break;
	}
}

static void missing(struct v8_layout *l, const char *name, uint32_t feats)
{
	l->features &= ~feats;
	if (!l->nmissing++)
		snprintf(l->missing, sizeof(l->missing), PREFIX "%s", name);
	counter_inc(&counter_v8_metadata_missing);
}

/* The optimized code's fields V8 does not export (code_layouts[]), else no V8_FEAT_CODE. */
static void code_layout(struct v8_layout *l)
{
	/* read as CodeKindBaseline into code_kind_maglev */
	uint16_t baseline = l->code_kind_maglev;

	for (size_t i = 0; i < sizeof(code_layouts) / sizeof(code_layouts[0]); i++) {
		const struct code_layout *c = &code_layouts[i];

		if (c->major != l->major || c->minor != l->minor)
			continue;
		if (l->istream_start != 2 * l->tagged_size)
			break;	/* not map, code, instructions */
		l->istream_code = (uint16_t)l->tagged_size;
		l->code_entry = (uint16_t)(l->code_positions + c->entry);
		l->code_flags = (uint16_t)(l->code_positions + c->flags);
		l->code_size = (uint16_t)(l->code_positions + c->size);
		l->code_kind_baseline = baseline;
		l->code_kind_maglev = (uint16_t)(baseline + 1);
		l->code_kind_turbofan = (uint16_t)(baseline + 2);
		l->inlining_position_size = c->inlining_position_size;
		return;
	}
	l->features &= ~(uint32_t)(V8_FEAT_CODE | V8_FEAT_BASELINE);
}

/*
 * The bytecodes' sizes (SIZES_SYM) and prefixes (bytecode_layouts[]),
 * checked: three rows of one count, each size 1..SIZE_MAX_BYTES and not
 * smaller at a larger scale, each prefix one byte at every scale; else
 * no V8_FEAT_BASELINE (counted as a missing symbol).
 */
static void bytecode_sizes(const struct symset *s, struct v8_layout *l)
{
	size_t n = s->nsizes / 3, i, k;

	for (k = 0; k < sizeof(bytecode_layouts) / sizeof(bytecode_layouts[0]); k++)
		if (bytecode_layouts[k].major == l->major && bytecode_layouts[k].minor == l->minor)
			break;
	if (k == sizeof(bytecode_layouts) / sizeof(bytecode_layouts[0])) {
		l->features &= ~(uint32_t)V8_FEAT_BASELINE;	/* not checked for this version */
		return;
	}
	if (!s->nsizes || s->nsizes % 3 || n <= bytecode_layouts[k].prefixes ||
	    n > V8_BYTECODES_MAX)
		goto bad;
	for (i = 0; i < n; i++) {
		const uint8_t *b = &s->sizes[i];

		if (b[0] < 1 || b[0] > b[n] || b[n] > b[2 * n] || b[2 * n] > SIZE_MAX_BYTES ||
		    (i < bytecode_layouts[k].prefixes && b[2 * n] != 1))
			goto bad;
		l->bytecode_sizes[0][i] = b[0];
		l->bytecode_sizes[1][i] = b[n];
		l->bytecode_sizes[2][i] = b[2 * n];
	}
	l->nbytecodes = (uint16_t)n;
	l->nprefixes = bytecode_layouts[k].prefixes;
	return;
bad:
	l->features &= ~(uint32_t)V8_FEAT_BASELINE;
	if (!l->nmissing++)
		snprintf(l->missing, sizeof(l->missing), "%s", SIZES_SYM);
	counter_inc(&counter_v8_metadata_missing);
}

/* @s (sorted) -> @l. Field values out of their type's range count as missing. */
static void build(const struct symset *s, struct v8_layout *l)
{
	static const char *const ver[4] = { "major_", "minor_", "build_", "patch_" };
	unsigned int *verp[4] = { &l->major, &l->minor, &l->build, &l->patch };
	char name[128];
	const struct vsym *v;

	l->features = ALL;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct field *f = &fields[i];

		snprintf(name, sizeof(name), PREFIX "%s", f->name);
		v = find(s, name);
		if (!v && f->alt) {
			snprintf(name, sizeof(name), PREFIX "%s", f->alt);
			v = find(s, name);
		}
		if (!v || (f->kind == K_U16 && (v->value < 0 || v->value > UINT16_MAX))) {
			missing(l, f->name, f->feats);
			continue;
		}
		store(l, f, v->value);
	}
	for (int i = 0; i < 4; i++) {
		/* _ZN2v88internal7Version6major_E: the length prefix is 6 */
		snprintf(name, sizeof(name), "_ZN2v88internal7Version%zu%sE", strlen(ver[i]), ver[i]);
		v = find(s, name);
		*verp[i] = v && v->value >= 0 && v->value < 1000 ? (unsigned int)v->value : 0;
	}
	v = find(s, PREFIX "InterpreterBytecodeOffsetRegister");
	l->offset_register = v && v->value >= 0 && v->value < 16 ? (int32_t)v->value : -1;
	/* frame types: v8dbg_frametype_NAME = id */
	for (int t = 0; t < V8_FRAME_TYPES_MAX; t++)
		l->frame_type_names[t][0] = 0;
	l->ft_interpreted = l->ft_baseline = l->ft_turbofan = l->ft_maglev = -1;
	for (size_t i = 0; i < s->n; i++) {
		const char *n = s->v[i].name + PREFIX_LEN;
		int64_t id = s->v[i].value;

		if (strncmp(n, "frametype_", 10) || id < 0 || id >= V8_FRAME_TYPES_MAX)
			continue;
		n += 10;
		snprintf(l->frame_type_names[id], sizeof(l->frame_type_names[id]), "%s", n);
		if (!strcmp(n, "InterpretedFrame"))
			l->ft_interpreted = (int)id;
		else if (!strcmp(n, "BaselineFrame"))
			l->ft_baseline = (int)id;
		else if (!strcmp(n, "TurbofanFrame") || !strcmp(n, "OptimizedFrame"))
			l->ft_turbofan = (int)id;
		else if (!strcmp(n, "MaglevFrame"))
			l->ft_maglev = (int)id;
	}
	/* the Smi value's shift: kSmiTagSize + kSmiShiftSize */
	v = find(s, PREFIX "SmiShiftSize");
	{
		const struct vsym *t = find(s, PREFIX "SmiValueShift");

		if (!v || !t || v->value < 0 || t->value < 0 || v->value + t->value > 63)
			missing(l, "SmiShiftSize", ALL);
		else {
			l->smi_shift = (unsigned int)(v->value + t->value);
			/* StackFrame::TypeToMarker(): type << kSmiTagSize | kSmiTag */
			l->marker_shift = (unsigned int)t->value;
		}
	}
	/*
	 * Tagged fields are full pointers only without pointer compression
	 * (kTaggedSize == kSystemPointerSize == 8); a compressed heap needs
	 * the cage base, which the metadata does not give.
	 */
	if (l->tagged_size != 8 || l->pointer_size != 8)
		l->features = 0;
	/* not exported, derived (metadata.h says from what) */
	l->byte_array_data = l->fixed_array_data;
	l->bytecode_array_positions = (uint16_t)(l->fixed_array_length + 3 * l->tagged_size);
	l->script_line_offset = (uint16_t)(l->script_name + l->tagged_size);
	code_layout(l);
	bytecode_sizes(s, l);
	/* JSFunction's subtypes after JS_FUNCTION_TYPE (metadata.h) */
	l->t_js_function_last = l->t_js_function;
	if (l->major == 11 && l->minor == 3)
		l->t_js_function_last = (uint16_t)(l->t_js_function + 15);
	l->features &= ~(uint32_t)V8_FEAT_SCOPE_INFO;
	for (size_t i = 0; i < sizeof(si_layouts) / sizeof(si_layouts[0]); i++) {
		const struct si_layout *sl = &si_layouts[i];

		if (sl->major != l->major || sl->minor != l->minor)
			continue;
		l->si_max_inlined = sl->max_inlined;
		l->si_scope_type_bits = sl->type_bits;
		l->si_function_scope = sl->function_scope;
		l->si_saved_class_var_bit = sl->saved_class_bit;
		l->si_function_var_shift = sl->function_var_shift;
		l->si_inferred_name_bit = sl->inferred_bit;
		if (l->features & V8_FEAT_NAMES && l->t_scope_info)
			l->features |= V8_FEAT_SCOPE_INFO;
	}
}

/* The first section of @type (SHT_DYNSYM, SHT_SYMTAB) of @elf and its header. */
static Elf_Scn *find_table(Elf *elf, Elf64_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	return NULL;
}

/*
 * Read the wanted symbols of .dynsym, then .symtab, if V8's are among
 * them. Each table is read in an ELF session of its own, ended before
 * the next (libelf keeps what it read until elf_end(): node's two tables
 * and their strings are 17 MiB, the peak of profd's start beside a node),
 * so the names kept are copies.
 */
static int read_elf(int fd, struct v8_layout *out)
{
	static const Elf64_Word types[2] = { SHT_DYNSYM, SHT_SYMTAB };
	struct symset s = { 0 };
	bool v8 = false;
	int ret = 0;

	for (int t = 0; t < 2 && ret >= 0; t++) {
		Elf_Data *strs;
		Elf_Scn *scn;
		GElf_Shdr sh;
		Elf *elf;

		ret = runtime_elf_begin(fd, &elf);
		if (ret <= 0)
			break;
		/* the needle looked for by pread first: a file that is not
		 * V8 keeps its string tables out of memory */
		if (elf_kind(elf) == ELF_K_ELF && (scn = find_table(elf, types[t], &sh)) &&
		    runtime_elf_strings_hold(elf, fd, &sh, NEEDLE) &&
		    (strs = runtime_elf_sym_strings(elf, &sh)) &&
		    memmem(strs->d_buf, strs->d_size, NEEDLE, sizeof(NEEDLE))) {
			if (!s.v && !(s.v = calloc(MAX_SYMS, sizeof(*s.v))))
				ret = -ENOMEM;
			else
				scan(elf, fd, scn, strs, &s);
			v8 = true;
		}
		elf_end(elf);
	}
	if (v8 && ret >= 0) {
		qsort(s.v, s.n, sizeof(*s.v), cmp_vsym);
		memset(out, 0, sizeof(*out));
		build(&s, out);
	}
	for (size_t i = 0; i < s.n; i++)
		free((char *)s.v[i].name);
	free(s.v);
	return ret < 0 ? ret : v8;
}

int v8_metadata_read_fd(int fd, struct v8_layout *out)
{
	return read_elf(fd, out);
}

int v8_metadata_read_path(const char *path, struct v8_layout *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = v8_metadata_read_fd(fd, out);
	close(fd);
	return ret;
}

#define P(member, kind)	{ #member, offsetof(struct v8_layout, member), kind }

int v8_layout_perturb(struct v8_layout *l, const char *name, int delta)
{
	static const struct {
		const char *name;
		size_t off;
		enum kind kind;
	} members[] = {
		P(fp_context, K_I32), P(fp_function, K_I32),
		P(fp_bytecode_array, K_I32), P(fp_bytecode_offset, K_I32),
		P(js_function_shared, K_U16), P(sfi_name_or_scope_info, K_U16),
		P(sfi_script_or_debug_info, K_U16), P(script_name, K_U16),
		P(script_line_ends, K_U16), P(string_length, K_U16),
		P(seq_one_byte_chars, K_U16), P(bytecode_array_data, K_U16),
		P(bytecode_array_positions, K_U16), P(map_instance_type, K_U16),
		P(t_js_function, K_U16), P(si_idx_first_vars, K_U16),
	};

	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		char *p = (char *)l + members[i].off;

		if (strcmp(members[i].name, name))
			continue;
		if (members[i].kind == K_I32)
			*(int32_t *)p += delta;
		else
			*(uint16_t *)p = (uint16_t)(*(uint16_t *)p + delta);
		return 0;
	}
	return -ENOENT;
}

const char *v8_frame_type_name(const struct v8_layout *l, int64_t type)
{
	if (type < 0 || type >= V8_FRAME_TYPES_MAX || !l->frame_type_names[type][0])
		return NULL;
	return l->frame_type_names[type];
}
