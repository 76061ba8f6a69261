/* SPDX-License-Identifier: GPL-2.0 */
/*
 * offsets.h - CRuby struct layouts and constants, by version.
 *
 * Owns: the one table of what profd reads in a CRuby process: the
 * vm -> ractor -> thread -> execution context -> control frame chain the
 * BPF unwinder walks (turned into its struct profd_ruby_proc state by
 * rb_offsets_bpf_state()), and the iseq, method entry, string, array and
 * symbol table fields user space reads to name a frame. x86-64 release
 * builds. Derived from each version's own headers (vm_core.h, iseq.h,
 * method.h, ractor_core.h, symbol.c, include/ruby/internal/core/) by
 * compiling scripts/ruby-offsets.c against the configured source tree
 * (see that file); a version not in the table is refused and counted.
 */
#ifndef PROFD_RUBY_OFFSETS_H
#define PROFD_RUBY_OFFSETS_H

#include <stdbool.h>
#include <stdint.h>

struct profd_ruby_proc;

struct rb_offsets {
	uint8_t major, minor;		/* the version these hold for (x.y.*) */
	uint8_t teeny_min, teeny_max;	/* teeny versions verified */

	/* rb_vm_t */
	uint16_t vm_main_ractor;	/* ractor.main_ractor */
	uint16_t vm_main_thread;	/* ractor.main_thread */
	uint16_t vm_ractor_set;		/* ractor.set: list_head of every ractor
					 * running or blocking, the main one first */
	uint16_t vm_ractor_cnt;		/* ractor.cnt (unsigned int) */
	/* rb_ractor_t */
	uint16_t ractor_vmlr_node;	/* vmlr_node: list_node {next, prev} */
	uint16_t ractor_threads;	/* threads.set: list_head {next, prev} */
	uint16_t ractor_threads_cnt;	/* threads.cnt (unsigned int) */
	/* rb_thread_t */
	uint16_t thread_lt_node;	/* lt_node: list_node {next, prev} */
	uint16_t thread_ec;		/* ec */
	uint16_t thread_tid;		/* tid (int, the kernel's) */
	uint16_t thread_vm;		/* vm */
	/* rb_execution_context_t */
	uint16_t ec_vm_stack;
	uint16_t ec_vm_stack_size;	/* in VALUEs */
	uint16_t ec_cfp;
	uint16_t ec_thread_ptr;
	/* rb_control_frame_t */
	uint16_t cfp_size;
	uint16_t cfp_pc;
	uint16_t cfp_iseq;
	uint16_t cfp_self;
	uint16_t cfp_ep;
	/* the environment data below ep, VALUE indexes */
	int8_t ep_flags;		/* VM_ENV_DATA_INDEX_FLAGS */
	int8_t ep_me_cref;		/* VM_ENV_DATA_INDEX_ME_CREF */
	uint32_t frame_magic_mask;	/* VM_FRAME_MAGIC_MASK */
	uint32_t frame_magic_cfunc;	/* VM_FRAME_MAGIC_CFUNC */
	uint32_t frame_magic_method;	/* VM_FRAME_MAGIC_METHOD */
	uint32_t frame_magic_ifunc;	/* VM_FRAME_MAGIC_IFUNC */
	uint32_t frame_flag_finish;	/* VM_FRAME_FLAG_FINISH */
	uint32_t frame_flag_cframe;	/* VM_FRAME_FLAG_CFRAME */

	/* rb_iseq_t (T_IMEMO/iseq) */
	uint16_t iseq_body;
	/* struct rb_iseq_constant_body */
	uint16_t body_type;		/* enum rb_iseq_type (int) */
	uint16_t body_iseq_size;	/* unsigned int, in VALUEs */
	uint16_t body_iseq_encoded;
	uint16_t body_location_pathobj;	/* String, or Array [path, realpath] */
	uint16_t body_location_base_label;
	uint16_t body_location_label;
	uint16_t body_location_first_lineno;	/* VALUE (a Fixnum) */
	uint16_t body_insns_info_body;	/* struct iseq_insn_info_entry * */
	uint16_t body_insns_info_positions;	/* unsigned int *, NULL once encoded */
	uint16_t body_insns_info_size;	/* unsigned int */
	uint16_t body_insns_info_succ_index_table;
	uint16_t body_local_iseq;
	uint16_t body_parent_iseq;
	uint16_t insn_info_entry_size;	/* sizeof(struct iseq_insn_info_entry) */
	uint16_t insn_info_line_no;	/* int */
	uint16_t succ_immediate_table_size;	/* IMMEDIATE_TABLE_SIZE (iseq.c) */

	/* struct RBasic / RString / RArray */
	uint16_t rstring_len;		/* as.heap.len */
	uint16_t rstring_ptr;		/* as.heap.ptr */
	uint16_t rstring_embed_ary;	/* as.embed.ary */
	uint32_t rstring_noembed;	/* RSTRING_NOEMBED flag */
	uint32_t rstring_embed_len_mask;
	uint8_t rstring_embed_len_shift;
	uint16_t rarray_len;		/* as.heap.len */
	uint16_t rarray_ptr;		/* as.heap.ptr */
	uint16_t rarray_embed_ary;	/* as.ary */
	uint32_t rarray_embed_flag;
	uint32_t rarray_embed_len_mask;
	uint8_t rarray_embed_len_shift;
	uint8_t t_mask, t_string, t_array, t_imemo;	/* RUBY_T_* */
	uint8_t imemo_shift, imemo_mask, imemo_ment, imemo_iseq, imemo_svar;	/* imemo type in flags */
	uint16_t svar_cref_or_me;	/* struct vm_svar.cref_or_me */

	/* rb_callable_method_entry_t, rb_method_definition_t */
	uint16_t cme_def;
	uint16_t cme_called_id;
	uint16_t cme_owner;
	uint16_t cme_defined_class;
	uint16_t def_type;		/* bits 0-3 of the first int (BITFIELD type : 4) */
	uint16_t def_original_id;
	uint16_t def_cfunc_func;	/* body.cfunc.func */
	uint16_t def_iseq_ptr;		/* body.iseq.iseqptr */
	uint8_t method_type_cfunc, method_type_iseq;

	/* classes: a class's path is its `__classpath__` ivar (variable.c),
	 * a singleton's object its `__attached__` ivar, both in the class's
	 * iv table: RCLASS_IV_TBL(), an st_table keyed by ID */
	uint16_t rbasic_klass;		/* RBasic.klass (an iclass's module) */
	uint16_t rclass_ext;		/* RClass.ptr (rb_classext_t *) */
	uint16_t classext_iv_tbl;	/* rb_classext_t.iv_tbl (st_table *) */
	uint16_t st_entries_start;	/* st_table.entries_start (st_index_t) */
	uint16_t st_entries_bound;	/* st_table.entries_bound */
	uint16_t st_entries;		/* st_table.entries: {hash, key, record} */
	uint8_t t_class, t_module, t_iclass;	/* RUBY_T_* */
	uint32_t fl_singleton;		/* RUBY_FL_SINGLETON */

	/* rb_symbols_t ruby_global_symbols, ID -> String (symbol.c) */
	uint16_t symbols_last_id;	/* rb_id_serial_t (uint32) */
	uint16_t symbols_ids;		/* VALUE: Array of Arrays */
	uint16_t id_entry_unit;		/* ID_ENTRY_UNIT */
	uint8_t id_entry_size;		/* ID_ENTRY_SIZE */
	uint8_t id_scope_shift;		/* RUBY_ID_SCOPE_SHIFT */
	uint32_t last_op_id;		/* tLAST_OP_ID */

	/* enum rb_iseq_type */
	uint8_t iseq_type_top, iseq_type_method, iseq_type_block, iseq_type_class,
		iseq_type_rescue, iseq_type_ensure, iseq_type_eval, iseq_type_main,
		iseq_type_plain;
};

/*
 * rb_offsets_find - the layout of CRuby @major.@minor.@teeny, or NULL if
 * the table has none (the process is refused; its caller counts it).
 * The result is static.
 */
const struct rb_offsets *rb_offsets_find(unsigned int major, unsigned int minor,
					 unsigned int teeny);

/*
 * rb_offsets_bpf_state - fill the BPF unwinder's per-process state @out
 * from @off, with @vm_ptr_addr the runtime address of the process's
 * ruby_current_vm_ptr. Returns false if an offset does not fit the
 * walker's read buffers (a table error).
 */
bool rb_offsets_bpf_state(const struct rb_offsets *off, uint64_t vm_ptr_addr,
			  struct profd_ruby_proc *out);

#endif /* PROFD_RUBY_OFFSETS_H */
