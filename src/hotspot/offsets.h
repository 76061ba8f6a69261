/* SPDX-License-Identifier: GPL-2.0 */
/*
 * offsets.h - what profd's HotSpot code reads in a JVM, and where, taken
 * from the JVM's own vmStructs (vmstructs.h): no per-version table.
 *
 * Owns: struct hs_offsets, the fields the code cache walk (codecache.h)
 * and, later, the BPF walker need, each with its width, and the features
 * they make possible. A field absent from a JVM's tables turns off the
 * feature that needs it (counted: hotspot_feature_off), never guessed.
 *
 * What differs between the JDKs seen (vmStructs of 17.0 and 25):
 *  - CodeBlob's code range: 17 keeps pointers (_code_begin, _code_end);
 *    25 keeps offsets from the blob (_code_offset, _data_offset: the code
 *    ends where the data begins).
 *  - Telling an nmethod: 25 has CodeBlob::_kind (CodeBlobKind, 1 byte)
 *    and the constant CodeBlobKind::Nmethod; 17 has neither, and its
 *    nmethods are the blobs whose _name is "nmethod" (compiled) or
 *    "native nmethod" (JNI wrappers), as nmethod's constructors name
 *    them.
 *  - nmethod::_method: in 17 declared by CompiledMethod (the vmStructs
 *    entry is "CompiledMethod::_method"), in 25 by nmethod.
 *  - _header_size: int in 17, u2 in 25; _frame_complete_offset: int,
 *    int16_t; HeapBlock::Header::_length: size_t (16-byte HeapBlock),
 *    uint32_t (8-byte HeapBlock). Widths come from each field's type.
 *  - GrowableArray's capacity is _max in 17, _capacity in 25 (unused).
 *  - An nmethod's debug info: 17 keeps it in the blob (offsets from it:
 *    _metadata_offset, _scopes_pcs_offset, _dependencies_offset, and the
 *    pointer CompiledMethod::_scopes_data_begin); 25 keeps the PcDescs
 *    and scopes in _immutable_data (C heap; _scopes_pcs_offset,
 *    _scopes_data_offset, _immutable_data_size) and the metadata in
 *    CodeBlob::_mutable_data after the relocations (_relocation_size,
 *    _mutable_data_size). Where 25 ends the metadata is not exported
 *    (nmethod::_metadata_size exists only with JVMCI): it is bounded by
 *    the mutable data's end (nmethod.hpp, metadata_begin()/_end()).
 */
#ifndef PROFD_HOTSPOT_OFFSETS_H
#define PROFD_HOTSPOT_OFFSETS_H

#include <stdbool.h>
#include <stdint.h>

struct hs_vmstructs;

/* One nonstatic field: bytes from its object's start, its width in bytes
 * (1, 2, 4, 8; a struct-typed field: the struct's size). size 0: absent. */
struct hs_off {
	uint32_t off;
	uint32_t size;
};

/* Features, each on when every field it needs was found. */
enum {
	HS_FEAT_FIND_BLOB	= 1u << 0,	/* pc -> its CodeBlob (segment map) */
	HS_FEAT_BLOB_NAME	= 1u << 1,	/* a blob's _name, its bounds */
	HS_FEAT_NMETHOD		= 1u << 2,	/* tell nmethods from other blobs */
	HS_FEAT_METHOD_NAME	= 1u << 3,	/* Method* -> Class.method(signature) */
	HS_FEAT_CODE_RANGE	= 1u << 4,	/* a blob's code begin/end */
	HS_FEAT_INTERP		= 1u << 5,	/* interpreted frames: code, slots, bci */
	HS_FEAT_LINES		= 1u << 6,	/* a method's line number table */
	HS_FEAT_SCOPES		= 1u << 7,	/* an nmethod's PcDescs and scopes */
};

struct hs_offsets {
	uint32_t features;		/* HS_FEAT_* */

	/* CodeCache's statics: runtime addresses of the variables */
	uint64_t codecache_heaps;	/* GrowableArray<CodeHeap*>* CodeCache::_heaps */
	uint64_t codecache_low;		/* address CodeCache::_low_bound */
	uint64_t codecache_high;	/* address CodeCache::_high_bound */
	struct hs_off array_len;	/* GrowableArrayBase::_len */
	struct hs_off array_data;	/* GrowableArray<int>::_data (any element type) */

	/* CodeHeap and its VirtualSpaces */
	struct hs_off heap_memory, heap_segmap;		/* VirtualSpace members */
	struct hs_off heap_log2_segment_size;
	struct hs_off vs_low, vs_high;			/* VirtualSpace::_low, _high */
	struct hs_off vs_high_boundary;			/* VirtualSpace::_high_boundary */
	uint32_t heap_block_size;			/* sizeof(HeapBlock) */
	struct hs_off block_length, block_used;		/* HeapBlock::_header's members */

	/* CodeBlob */
	struct hs_off blob_name, blob_size, blob_header_size, blob_frame_size;
	struct hs_off blob_frame_complete;
	struct hs_off blob_code_begin, blob_code_end;	/* pointers (17) */
	struct hs_off blob_code_offset, blob_data_offset; /* offsets (23+) */
	struct hs_off blob_kind;			/* 23+ */
	int64_t kind_nmethod;				/* CodeBlobKind::Nmethod */

	/* nmethod (CompiledMethod in 17) */
	struct hs_off nm_method, nm_compile_id, nm_entry_bci, nm_comp_level;
	struct hs_off nm_scopes_pcs_offset;		/* from the blob */
	struct hs_off nm_scopes_data;	/* 17: _scopes_data_begin (pointer); 25:
					 * _scopes_data_offset (from _immutable_data) */
	struct hs_off nm_immutable_data;		/* 25 */
	/* the debug info (HS_FEAT_SCOPES, scopes.h): 17 from the blob, 25 in
	 * the immutable (PcDescs, scopes) and mutable (metadata) data */
	struct hs_off nm_metadata_offset;		/* 17 */
	struct hs_off nm_dependencies_offset;		/* 17: the PcDescs end there */
	struct hs_off nm_immutable_data_size;		/* 25 */
	struct hs_off blob_mutable_data, blob_mutable_data_size;	/* 25 */
	struct hs_off blob_relocation_size;		/* 25: metadata follows it */
	struct hs_off pc_pc_offset, pc_scope_offset;	/* PcDesc */
	uint32_t pc_desc_size;				/* sizeof(PcDesc) */
	struct hs_off cp_source_file;	/* ConstantPool::_source_file_name_index */
	int64_t invocation_entry_bci;			/* InvocationEntryBci: not OSR */
	bool has_invocation_entry_bci;

	/* Method -> ConstMethod -> ConstantPool -> holder Klass, Symbols */
	struct hs_off method_const_method;		/* Method::_constMethod */
	struct hs_off cm_constants, cm_name_index, cm_signature_index;
	uint32_t cp_size;				/* sizeof(ConstantPool) */
	struct hs_off cp_pool_holder, cp_tags, cp_length;
	struct hs_off ik_constants;			/* InstanceKlass::_constants */
	struct hs_off klass_name;			/* Klass::_name */
	struct hs_off array_u1_data;			/* Array<u1>::_data */
	struct hs_off sym_length, sym_body;		/* Symbol::_length, _body */
	int64_t utf8_tag;				/* JVM_CONSTANT_Utf8 */

	/* the interpreter (HS_FEAT_INTERP): its code, its frames' slots */
	uint64_t interpreter_code;	/* address of StubQueue* AbstractInterpreter::_code */
	struct hs_off sq_stub_buffer, sq_buffer_limit;	/* StubQueue */
	struct hs_off sq_queue_begin, sq_queue_end;	/* StubQueue: the codelets held */
	int64_t interp_last_sp_offset;	/* frame::interpreter_frame_last_sp_offset, words */
	int64_t interp_sender_sp_offset;	/* frame::interpreter_frame_sender_sp_offset */
	struct hs_off cm_code_size;			/* ConstMethod::_code_size */
	uint32_t const_method_size;			/* sizeof(ConstMethod): code follows */
	/* line numbers (HS_FEAT_LINES): the compressed table after the code */
	struct hs_off cm_flags;			/* ConstMethod::_flags(._flags) */
	struct hs_off cm_size;			/* ConstMethod::_constMethod_size, words */
	int64_t has_linenumber_flag;		/* its bit: -1 absent */
	uint64_t vm_major_version;	/* address of int Abstract_VM_Version::_vm_major_version */
};

/*
 * hs_offsets_from - fill @o from the JVM's tables @vm. Returns the
 * features found (o->features); each feature missing a field is counted
 * once (hotspot_feature_off). Never fails: a JVM whose tables lack
 * everything has features 0.
 */
uint32_t hs_offsets_from(const struct hs_vmstructs *vm, struct hs_offsets *o);

/*
 * hs_offsets_each - call @fn(@arg, name, value) for every offset and
 * value of @o, the fields under the name @vm (the tables @o came from)
 * has them ("CodeBlob::_name", 96; absent ones as -1): for tests and
 * debug output.
 */
void hs_offsets_each(const struct hs_vmstructs *vm, const struct hs_offsets *o,
		     void (*fn)(void *arg, const char *name, int64_t value), void *arg);

#endif /* PROFD_HOTSPOT_OFFSETS_H */
