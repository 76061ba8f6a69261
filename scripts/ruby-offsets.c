/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ruby-offsets.c - print the struct rb_offsets initializer
 * (src/ruby/offsets.c) of the CRuby version whose source tree it is
 * compiled in, from that version's own headers.
 *
 * Usage (Debian's source of the installed version, e.g. ruby3.1):
 *   apt-get source -d ruby3.1 && tar xf ruby3.1_*.orig.tar.xz
 *   cd ruby-3.1.2 && ./configure --enable-shared --disable-install-doc
 *   cp /path/to/profd/scripts/ruby-offsets.c . &&
 *   gcc -I. -I.ext/include/x86_64-linux -Iinclude ruby-offsets.c -o ro && ./ro
 * Paste the output into src/ruby/offsets.c. IMMEDIATE_TABLE_SIZE,
 * ID_ENTRY_UNIT and ID_ENTRY_SIZE are local to iseq.c / symbol.c: check
 * them there (3.1: 54, 512, 2).
 */
#include "ruby/ruby.h"
#include "vm_core.h"
#include "iseq.h"
#include "method.h"
#include "ractor_core.h"
#include "internal/string.h"
#include "internal/array.h"
#include "internal/imemo.h"
#include "internal/class.h"
#include "ruby/st.h"
#include "symbol.h"
#include "ruby/version.h"
#include "version.h"
#include <stdio.h>
#include <stddef.h>

#define F(field, v) printf("\t.%s = %ld,\n", field, (long)(v))
#define O(name, T, f) F(name, offsetof(T, f))

int main(void)
{
	printf("{\n\t.major = %d, .minor = %d, .teeny_min = %d, .teeny_max = %d,\n",
	       RUBY_VERSION_MAJOR, RUBY_VERSION_MINOR, RUBY_VERSION_TEENY,
	       RUBY_VERSION_TEENY);
	O("vm_main_ractor", rb_vm_t, ractor.main_ractor);
	O("vm_main_thread", rb_vm_t, ractor.main_thread);
	O("vm_ractor_set", rb_vm_t, ractor.set);
	O("vm_ractor_cnt", rb_vm_t, ractor.cnt);
	O("ractor_vmlr_node", rb_ractor_t, vmlr_node);
	O("ractor_threads", rb_ractor_t, threads.set);
	O("ractor_threads_cnt", rb_ractor_t, threads.cnt);
	O("thread_lt_node", rb_thread_t, lt_node);
	O("thread_ec", rb_thread_t, ec);
	O("thread_tid", rb_thread_t, tid);
	O("thread_vm", rb_thread_t, vm);
	O("ec_vm_stack", rb_execution_context_t, vm_stack);
	O("ec_vm_stack_size", rb_execution_context_t, vm_stack_size);
	O("ec_cfp", rb_execution_context_t, cfp);
	O("ec_thread_ptr", rb_execution_context_t, thread_ptr);
	F("cfp_size", sizeof(rb_control_frame_t));
	O("cfp_pc", rb_control_frame_t, pc);
	O("cfp_iseq", rb_control_frame_t, iseq);
	O("cfp_self", rb_control_frame_t, self);
	O("cfp_ep", rb_control_frame_t, ep);
	F("ep_flags", VM_ENV_DATA_INDEX_FLAGS);
	F("ep_me_cref", VM_ENV_DATA_INDEX_ME_CREF);
	F("frame_magic_mask", VM_FRAME_MAGIC_MASK);
	F("frame_magic_cfunc", VM_FRAME_MAGIC_CFUNC);
	F("frame_magic_method", VM_FRAME_MAGIC_METHOD);
	F("frame_magic_ifunc", VM_FRAME_MAGIC_IFUNC);
	F("frame_flag_finish", VM_FRAME_FLAG_FINISH);
	F("frame_flag_cframe", VM_FRAME_FLAG_CFRAME);
	O("iseq_body", rb_iseq_t, body);
	O("body_type", struct rb_iseq_constant_body, type);
	O("body_iseq_size", struct rb_iseq_constant_body, iseq_size);
	O("body_iseq_encoded", struct rb_iseq_constant_body, iseq_encoded);
	O("body_location_pathobj", struct rb_iseq_constant_body, location.pathobj);
	O("body_location_base_label", struct rb_iseq_constant_body, location.base_label);
	O("body_location_label", struct rb_iseq_constant_body, location.label);
	O("body_location_first_lineno", struct rb_iseq_constant_body, location.first_lineno);
	O("body_insns_info_body", struct rb_iseq_constant_body, insns_info.body);
	O("body_insns_info_positions", struct rb_iseq_constant_body, insns_info.positions);
	O("body_insns_info_size", struct rb_iseq_constant_body, insns_info.size);
	O("body_insns_info_succ_index_table", struct rb_iseq_constant_body,
	  insns_info.succ_index_table);
	O("body_local_iseq", struct rb_iseq_constant_body, local_iseq);
	O("body_parent_iseq", struct rb_iseq_constant_body, parent_iseq);
	F("insn_info_entry_size", sizeof(struct iseq_insn_info_entry));
	O("insn_info_line_no", struct iseq_insn_info_entry, line_no);
	O("rstring_len", struct RString, as.heap.len);
	O("rstring_ptr", struct RString, as.heap.ptr);
	O("rstring_embed_ary", struct RString, as.embed.ary);
	F("rstring_noembed", RSTRING_NOEMBED);
	F("rstring_embed_len_mask", RSTRING_EMBED_LEN_MASK);
	F("rstring_embed_len_shift", RSTRING_EMBED_LEN_SHIFT);
	O("rarray_len", struct RArray, as.heap.len);
	O("rarray_ptr", struct RArray, as.heap.ptr);
	O("rarray_embed_ary", struct RArray, as.ary);
	F("rarray_embed_flag", RARRAY_EMBED_FLAG);
	F("rarray_embed_len_mask", RARRAY_EMBED_LEN_MASK);
	F("rarray_embed_len_shift", RARRAY_EMBED_LEN_SHIFT);
	F("t_mask", RUBY_T_MASK);
	F("t_string", RUBY_T_STRING);
	F("t_array", RUBY_T_ARRAY);
	F("t_imemo", RUBY_T_IMEMO);
	F("imemo_shift", RUBY_FL_USHIFT);
	F("imemo_mask", IMEMO_MASK);
	F("imemo_ment", imemo_ment);
	F("imemo_iseq", imemo_iseq);
	F("imemo_svar", imemo_svar);
	O("svar_cref_or_me", struct vm_svar, cref_or_me);
	O("cme_def", rb_callable_method_entry_t, def);
	O("cme_called_id", rb_callable_method_entry_t, called_id);
	O("cme_owner", rb_callable_method_entry_t, owner);
	O("cme_defined_class", rb_callable_method_entry_t, defined_class);
	F("def_type", 0);
	O("def_original_id", rb_method_definition_t, original_id);
	O("def_cfunc_func", rb_method_definition_t, body.cfunc.func);
	O("def_iseq_ptr", rb_method_definition_t, body.iseq.iseqptr);
	O("rbasic_klass", struct RBasic, klass);
	O("rclass_ext", struct RClass, ptr);	/* !USE_RVARGC: checked below */
	O("classext_iv_tbl", rb_classext_t, iv_tbl);
	O("st_entries_start", st_table, entries_start);
	O("st_entries_bound", st_table, entries_bound);
	O("st_entries", st_table, entries);
	F("t_class", RUBY_T_CLASS);
	F("t_module", RUBY_T_MODULE);
	F("t_iclass", RUBY_T_ICLASS);
	F("fl_singleton", RUBY_FL_SINGLETON);
	if (USE_RVARGC)
		fprintf(stderr, "USE_RVARGC: RCLASS_EXT follows struct RClass, not .ptr\n");
	F("method_type_cfunc", VM_METHOD_TYPE_CFUNC);
	F("method_type_iseq", VM_METHOD_TYPE_ISEQ);
	O("symbols_last_id", rb_symbols_t, last_id);
	O("symbols_ids", rb_symbols_t, ids);
	F("id_entry_unit", 512);
	F("id_entry_size", 2);
	F("id_scope_shift", RUBY_ID_SCOPE_SHIFT);
	F("last_op_id", tLAST_OP_ID);
	F("succ_immediate_table_size", 54);
	F("iseq_type_top", ISEQ_TYPE_TOP);
	F("iseq_type_method", ISEQ_TYPE_METHOD);
	F("iseq_type_block", ISEQ_TYPE_BLOCK);
	F("iseq_type_class", ISEQ_TYPE_CLASS);
	F("iseq_type_rescue", ISEQ_TYPE_RESCUE);
	F("iseq_type_ensure", ISEQ_TYPE_ENSURE);
	F("iseq_type_eval", ISEQ_TYPE_EVAL);
	F("iseq_type_main", ISEQ_TYPE_MAIN);
	F("iseq_type_plain", ISEQ_TYPE_PLAIN);
	printf("},\n");
	return 0;
}
