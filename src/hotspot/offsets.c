// SPDX-License-Identifier: GPL-2.0
/*
 * offsets.c - the fields profd reads in a JVM, from its vmStructs (see
 * offsets.h).
 *
 * Owns: the list of (type, field) names each member of struct hs_offsets
 * is taken from (alternatives in order: the first present wins), the
 * width of each from its C++ type, and which features the fields found
 * make possible.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "counters/counters.h"
#include "hotspot/offsets.h"
#include "hotspot/vmstructs.h"

COUNTER_DEFINE(hotspot_feature_off, COUNTER_STAT,
	       "HotSpot features turned off: a field they need is not in the JVM's vmStructs");

#define MAX_ALTS 2

static const struct {
	size_t at;				/* offsetof(struct hs_offsets, member) */
	struct { const char *type, *field; } alt[MAX_ALTS];
} fields[] = {
#define F(m, t, f)		{ offsetof(struct hs_offsets, m), { { t, f } } }
#define F2(m, t, f, t2, f2)	{ offsetof(struct hs_offsets, m), { { t, f }, { t2, f2 } } }
	F2(array_len, "GrowableArrayBase", "_len", "GenericGrowableArray", "_len"),
	F(array_data, "GrowableArray<int>", "_data"),
	F(heap_memory, "CodeHeap", "_memory"),
	F(heap_segmap, "CodeHeap", "_segmap"),
	F(heap_log2_segment_size, "CodeHeap", "_log2_segment_size"),
	F(vs_low, "VirtualSpace", "_low"),
	F(vs_high, "VirtualSpace", "_high"),
	F(vs_high_boundary, "VirtualSpace", "_high_boundary"),
	F(blob_name, "CodeBlob", "_name"),
	F(blob_size, "CodeBlob", "_size"),
	F(blob_header_size, "CodeBlob", "_header_size"),
	F(blob_frame_size, "CodeBlob", "_frame_size"),
	F(blob_frame_complete, "CodeBlob", "_frame_complete_offset"),
	F(blob_code_begin, "CodeBlob", "_code_begin"),
	F(blob_code_end, "CodeBlob", "_code_end"),
	F(blob_code_offset, "CodeBlob", "_code_offset"),
	F(blob_data_offset, "CodeBlob", "_data_offset"),
	F(blob_kind, "CodeBlob", "_kind"),
	F2(nm_method, "nmethod", "_method", "CompiledMethod", "_method"),
	F(nm_compile_id, "nmethod", "_compile_id"),
	F(nm_entry_bci, "nmethod", "_entry_bci"),
	F(nm_comp_level, "nmethod", "_comp_level"),
	F(nm_scopes_pcs_offset, "nmethod", "_scopes_pcs_offset"),
	F2(nm_scopes_data, "nmethod", "_scopes_data_offset",
	   "CompiledMethod", "_scopes_data_begin"),
	F(nm_immutable_data, "nmethod", "_immutable_data"),
	F(nm_metadata_offset, "nmethod", "_metadata_offset"),
	F(nm_dependencies_offset, "nmethod", "_dependencies_offset"),
	F(nm_immutable_data_size, "nmethod", "_immutable_data_size"),
	F(blob_mutable_data, "CodeBlob", "_mutable_data"),
	F(blob_mutable_data_size, "CodeBlob", "_mutable_data_size"),
	F(blob_relocation_size, "CodeBlob", "_relocation_size"),
	F(pc_pc_offset, "PcDesc", "_pc_offset"),
	F(pc_scope_offset, "PcDesc", "_scope_decode_offset"),
	F(cp_source_file, "ConstantPool", "_source_file_name_index"),
	F(method_const_method, "Method", "_constMethod"),
	F(cm_constants, "ConstMethod", "_constants"),
	F(cm_name_index, "ConstMethod", "_name_index"),
	F(cm_signature_index, "ConstMethod", "_signature_index"),
	F(cp_pool_holder, "ConstantPool", "_pool_holder"),
	F(cp_tags, "ConstantPool", "_tags"),
	F(cp_length, "ConstantPool", "_length"),
	F(ik_constants, "InstanceKlass", "_constants"),
	F(klass_name, "Klass", "_name"),
	F(array_u1_data, "Array<u1>", "_data"),
	F(sym_length, "Symbol", "_length"),
	F(sym_body, "Symbol", "_body"),
	F(sq_stub_buffer, "StubQueue", "_stub_buffer"),
	F(sq_buffer_limit, "StubQueue", "_buffer_limit"),
	F(sq_queue_begin, "StubQueue", "_queue_begin"),
	F(sq_queue_end, "StubQueue", "_queue_end"),
	F(cm_code_size, "ConstMethod", "_code_size"),
	F2(cm_flags, "ConstMethod", "_flags._flags", "ConstMethod", "_flags"),
	F(cm_size, "ConstMethod", "_constMethod_size"),
#undef F
#undef F2
};

/*
 * The width of a field of C++ type @ts: 8 for a pointer, else its type's
 * size from the types table (qualifiers "const"/"volatile" dropped); 1
 * when unknown (an opaque member such as Symbol::_body: present, but no
 * scalar to read).
 */
static uint32_t width_of(const struct hs_vmstructs *vm, const char *ts)
{
	char buf[HS_VM_NAME_MAX];
	const struct hs_vm_type *t;
	size_t n;

	for (;;) {
		if (!strncmp(ts, "const ", 6))
			ts += 6;
		else if (!strncmp(ts, "volatile ", 9))
			ts += 9;
		else
			break;
	}
	n = strlen(ts);
	if (n >= sizeof(buf))
		return 1;
	memcpy(buf, ts, n + 1);
	while (n > 6 && !strcmp(buf + n - 6, " const"))
		buf[n -= 6] = '\0';
	if (n && buf[n - 1] == '*')
		return 8;
	t = hs_vm_type(vm, buf);
	if (!t || !t->size || t->size > UINT32_MAX)
		return 1;
	/* a type spelled with qualifiers may be listed only that way */
	return (uint32_t)t->size;
}

static uint32_t type_size(const struct hs_vmstructs *vm, const char *name)
{
	const struct hs_vm_type *t = hs_vm_type(vm, name);

	return t && t->size && t->size <= UINT32_MAX ? (uint32_t)t->size : 0;
}

/* A field @vm has: offset and width; size 0 when absent or static. */
static struct hs_off lookup(const struct hs_vmstructs *vm, const char *type, const char *field)
{
	const struct hs_vm_field *f = hs_vm_field(vm, type, field);

	if (!f || f->is_static || f->offset > UINT32_MAX)
		return (struct hs_off){ 0, 0 };
	return (struct hs_off){ (uint32_t)f->offset, width_of(vm, f->type_string) };
}

static uint64_t static_addr(const struct hs_vmstructs *vm, const char *type, const char *field)
{
	const struct hs_vm_field *f = hs_vm_field(vm, type, field);

	return f && f->is_static ? f->address : 0;
}

static bool scalar(struct hs_off f)
{
	return f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8;
}

static bool ptr(struct hs_off f)
{
	return f.size == 8;
}

static uint32_t features(const struct hs_offsets *o)
{
	uint32_t feat = 0;

	if (o->codecache_heaps && scalar(o->array_len) && ptr(o->array_data) &&
	    o->heap_memory.size && o->heap_segmap.size && scalar(o->heap_log2_segment_size) &&
	    ptr(o->vs_low) && ptr(o->vs_high) && o->heap_block_size &&
	    scalar(o->block_length) && scalar(o->block_used))
		feat |= HS_FEAT_FIND_BLOB;
	if (ptr(o->blob_name) && scalar(o->blob_size))
		feat |= HS_FEAT_BLOB_NAME;
	if ((ptr(o->blob_code_begin) && ptr(o->blob_code_end)) ||
	    (scalar(o->blob_code_offset) && scalar(o->blob_data_offset)))
		feat |= HS_FEAT_CODE_RANGE;
	/* 25: by _kind; 17 (no _kind): by the name nmethod's constructors give */
	if (ptr(o->nm_method) && (feat & HS_FEAT_BLOB_NAME) &&
	    (o->blob_kind.size ? scalar(o->blob_kind) && o->kind_nmethod >= 0 : true))
		feat |= HS_FEAT_NMETHOD;
	if (ptr(o->method_const_method) && ptr(o->cm_constants) && scalar(o->cm_name_index) &&
	    scalar(o->cm_signature_index) && o->cp_size && ptr(o->cp_pool_holder) &&
	    ptr(o->cp_tags) && scalar(o->cp_length) && ptr(o->ik_constants) &&
	    ptr(o->klass_name) && o->array_u1_data.size && scalar(o->sym_length) &&
	    o->sym_body.size && o->utf8_tag >= 0)
		feat |= HS_FEAT_METHOD_NAME;
	if ((feat & HS_FEAT_METHOD_NAME) && o->interpreter_code && ptr(o->sq_stub_buffer) &&
	    scalar(o->sq_buffer_limit) && o->interp_last_sp_offset < 0 &&
	    o->interp_last_sp_offset > -16 && o->interp_sender_sp_offset < 0 &&
	    o->interp_sender_sp_offset > -16 && scalar(o->cm_code_size) && o->const_method_size)
		feat |= HS_FEAT_INTERP;
	if ((feat & HS_FEAT_INTERP) && scalar(o->cm_flags) && scalar(o->cm_size) &&
	    o->has_linenumber_flag > 0 && o->vm_major_version)
		feat |= HS_FEAT_LINES;
	/* 17: all in the blob; 25: immutable and mutable data */
	if ((feat & HS_FEAT_NMETHOD) && (feat & HS_FEAT_METHOD_NAME) &&
	    (feat & HS_FEAT_CODE_RANGE) && scalar(o->nm_compile_id) &&
	    scalar(o->pc_pc_offset) && scalar(o->pc_scope_offset) && o->pc_desc_size &&
	    scalar(o->nm_scopes_pcs_offset) &&
	    (o->nm_immutable_data.size ?
	     ptr(o->nm_immutable_data) && scalar(o->nm_immutable_data_size) &&
	     scalar(o->nm_scopes_data) && o->nm_scopes_data.size < 8 &&
	     ptr(o->blob_mutable_data) && scalar(o->blob_mutable_data_size) &&
	     scalar(o->blob_relocation_size) :
	     ptr(o->nm_scopes_data) && scalar(o->nm_metadata_offset) &&
	     scalar(o->nm_dependencies_offset)))
		feat |= HS_FEAT_SCOPES;
	return feat;
}

uint32_t hs_offsets_from(const struct hs_vmstructs *vm, struct hs_offsets *o)
{
	struct hs_off header, length, used;
	uint32_t want = HS_FEAT_FIND_BLOB | HS_FEAT_BLOB_NAME | HS_FEAT_NMETHOD |
			HS_FEAT_METHOD_NAME | HS_FEAT_CODE_RANGE | HS_FEAT_INTERP | HS_FEAT_LINES |
			HS_FEAT_SCOPES;
	int64_t v;

	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		struct hs_off *dst = (struct hs_off *)((char *)o + fields[i].at);

		for (int k = 0; k < MAX_ALTS && fields[i].alt[k].type && !dst->size; k++)
			*dst = lookup(vm, fields[i].alt[k].type, fields[i].alt[k].field);
	}
	o->codecache_heaps = static_addr(vm, "CodeCache", "_heaps");
	o->codecache_low = static_addr(vm, "CodeCache", "_low_bound");
	o->codecache_high = static_addr(vm, "CodeCache", "_high_bound");
	o->heap_block_size = type_size(vm, "HeapBlock");
	o->interpreter_code = static_addr(vm, "AbstractInterpreter", "_code");
	o->const_method_size = type_size(vm, "ConstMethod");
	o->interp_last_sp_offset = hs_vm_int(vm, "frame::interpreter_frame_last_sp_offset", &v) ?
				   v : 0;
	o->interp_sender_sp_offset = hs_vm_int(vm, "frame::interpreter_frame_sender_sp_offset",
					       &v) ? v : 0;
	/* the flag's name: ConstMethodFlags (21+) or ConstMethod (17) */
	o->has_linenumber_flag =
		hs_vm_int(vm, "ConstMethodFlags::_misc_has_linenumber_table", &v) ||
		hs_vm_int(vm, "ConstMethod::_has_linenumber_table", &v) ? v : -1;
	o->vm_major_version = static_addr(vm, "Abstract_VM_Version", "_vm_major_version");
	o->cp_size = type_size(vm, "ConstantPool");
	o->pc_desc_size = type_size(vm, "PcDesc");
	header = lookup(vm, "HeapBlock", "_header");
	length = lookup(vm, "HeapBlock::Header", "_length");
	used = lookup(vm, "HeapBlock::Header", "_used");
	if (header.size && length.size)
		o->block_length = (struct hs_off){ header.off + length.off, length.size };
	if (header.size && used.size)
		o->block_used = (struct hs_off){ header.off + used.off, used.size };
	o->kind_nmethod = hs_vm_int(vm, "CodeBlobKind::Nmethod", &v) ? v : -1;
	o->utf8_tag = hs_vm_int(vm, "JVM_CONSTANT_Utf8", &v) ? v : -1;
	o->has_invocation_entry_bci = hs_vm_int(vm, "InvocationEntryBci", &v);
	o->invocation_entry_bci = o->has_invocation_entry_bci ? v : 0;
	o->features = features(o);
	for (uint32_t f = want & ~o->features; f; f &= f - 1)
		counter_inc(&counter_hotspot_feature_off);
	return o->features;
}

void hs_offsets_each(const struct hs_vmstructs *vm, const struct hs_offsets *o,
		     void (*fn)(void *arg, const char *name, int64_t value), void *arg)
{
	char name[2 * HS_VM_NAME_MAX];

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct hs_off *f = (const struct hs_off *)((const char *)o + fields[i].at);
		int k = 0;

		/* the name it was found under, or the first */
		while (k + 1 < MAX_ALTS && fields[i].alt[k + 1].type &&
		       !lookup(vm, fields[i].alt[k].type, fields[i].alt[k].field).size)
			k++;
		snprintf(name, sizeof(name), "%s::%s", fields[i].alt[k].type,
			 fields[i].alt[k].field);
		fn(arg, name, f->size ? (int64_t)f->off : -1);
	}
	fn(arg, "HeapBlock::_header._length", o->block_length.size ? (int64_t)o->block_length.off : -1);
	fn(arg, "HeapBlock::_header._used", o->block_used.size ? (int64_t)o->block_used.off : -1);
	fn(arg, "sizeof(HeapBlock)", o->heap_block_size);
	fn(arg, "sizeof(ConstantPool)", o->cp_size);
	fn(arg, "sizeof(PcDesc)", o->pc_desc_size);
	fn(arg, "&CodeCache::_heaps", (int64_t)o->codecache_heaps);
	fn(arg, "&CodeCache::_low_bound", (int64_t)o->codecache_low);
	fn(arg, "&CodeCache::_high_bound", (int64_t)o->codecache_high);
	fn(arg, "CodeBlobKind::Nmethod", o->kind_nmethod);
	fn(arg, "JVM_CONSTANT_Utf8", o->utf8_tag);
	fn(arg, "InvocationEntryBci", o->invocation_entry_bci);
	fn(arg, "&AbstractInterpreter::_code", (int64_t)o->interpreter_code);
	fn(arg, "frame::interpreter_frame_last_sp_offset", o->interp_last_sp_offset);
	fn(arg, "frame::interpreter_frame_sender_sp_offset", o->interp_sender_sp_offset);
	fn(arg, "sizeof(ConstMethod)", o->const_method_size);
	fn(arg, "has_linenumber_table", o->has_linenumber_flag);
	fn(arg, "features", o->features);
}
