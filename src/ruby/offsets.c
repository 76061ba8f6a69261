// SPDX-License-Identifier: GPL-2.0
/*
 * offsets.c - the CRuby layout table (see offsets.h).
 *
 * Owns: one struct rb_offsets per CRuby minor version profd knows, as
 * printed by scripts/ruby-offsets.c from that version's configured source
 * tree, and their translation into the BPF walker's state.
 *
 * Verified live: 3.1.2 (Debian 12's ruby3.1, 3.1.2-7+deb12u1 and
 * 3.1.7+really3.1.2-0+deb12u1; layouts from Debian's source package of
 * 3.1.2). Teeny releases of one minor version keep these structs, so a
 * 3.1.x other than 3.1.2 is accepted; every process is still checked
 * against its live memory at attach (src/ruby/detect.c).
 */
#include <stddef.h>

#include "bpf/unwind_ruby.h"
#include "ruby/offsets.h"

static const struct rb_offsets rb_table[] = {
	/* 3.1 (./ro in ruby-3.1.2, Debian's orig tarball) */
	{
		.major = 3, .minor = 1, .teeny_min = 0, .teeny_max = 99,
		.vm_main_ractor = 32,
		.vm_main_thread = 40,
		.vm_ractor_set = 8,
		.vm_ractor_cnt = 24,
		.ractor_vmlr_node = 568,
		.ractor_threads = 304,
		.ractor_threads_cnt = 320,
		.thread_lt_node = 0,
		.thread_ec = 40,
		.thread_tid = 88,
		.thread_vm = 32,
		.ec_vm_stack = 0,
		.ec_vm_stack_size = 8,
		.ec_cfp = 16,
		.ec_thread_ptr = 48,
		.cfp_size = 64,
		.cfp_pc = 0,
		.cfp_iseq = 16,
		.cfp_self = 24,
		.cfp_ep = 32,
		.ep_flags = 0,
		.ep_me_cref = -2,
		.frame_magic_mask = 2147418113,
		.frame_magic_cfunc = 1431633921,
		.frame_magic_method = 286326785,
		.frame_magic_ifunc = 1717960705,
		.frame_flag_finish = 32,
		.frame_flag_cframe = 128,
		.iseq_body = 16,
		.body_type = 0,
		.body_iseq_size = 4,
		.body_iseq_encoded = 8,
		.body_location_pathobj = 64,
		.body_location_base_label = 72,
		.body_location_label = 80,
		.body_location_first_lineno = 88,
		.body_insns_info_body = 120,
		.body_insns_info_positions = 128,
		.body_insns_info_size = 136,
		.body_insns_info_succ_index_table = 144,
		.body_local_iseq = 176,
		.body_parent_iseq = 168,
		.insn_info_entry_size = 12,
		.insn_info_line_no = 0,
		.rstring_len = 16,
		.rstring_ptr = 24,
		.rstring_embed_ary = 16,
		.rstring_noembed = 8192,
		.rstring_embed_len_mask = 507904,
		.rstring_embed_len_shift = 14,
		.rarray_len = 16,
		.rarray_ptr = 32,
		.rarray_embed_ary = 16,
		.rarray_embed_flag = 8192,
		.rarray_embed_len_mask = 98304,
		.rarray_embed_len_shift = 15,
		.t_mask = 31,
		.t_string = 5,
		.t_array = 7,
		.t_imemo = 26,
		.imemo_shift = 12,
		.imemo_mask = 15,
		.imemo_ment = 6,
		.imemo_iseq = 7,
		.imemo_svar = 2,
		.svar_cref_or_me = 8,
		.cme_def = 16,
		.cme_called_id = 24,
		.cme_owner = 32,
		.cme_defined_class = 8,
		.def_type = 0,
		.def_original_id = 32,
		.def_cfunc_func = 8,
		.def_iseq_ptr = 8,
		.rbasic_klass = 8,
		.rclass_ext = 24,
		.classext_iv_tbl = 8,
		.st_entries_start = 32,
		.st_entries_bound = 40,
		.st_entries = 48,
		.t_class = 2,
		.t_module = 3,
		.t_iclass = 28,
		.fl_singleton = 4096,
		.method_type_cfunc = 1,
		.method_type_iseq = 0,
		.symbols_last_id = 0,
		.symbols_ids = 16,
		.id_entry_unit = 512,
		.id_entry_size = 2,
		.id_scope_shift = 4,
		.last_op_id = 169,
		.succ_immediate_table_size = 54,
		.iseq_type_top = 0,
		.iseq_type_method = 1,
		.iseq_type_block = 2,
		.iseq_type_class = 3,
		.iseq_type_rescue = 4,
		.iseq_type_ensure = 5,
		.iseq_type_eval = 6,
		.iseq_type_main = 7,
		.iseq_type_plain = 8,
	},
};

const struct rb_offsets *rb_offsets_find(unsigned int major, unsigned int minor,
					 unsigned int teeny)
{
	for (size_t i = 0; i < sizeof(rb_table) / sizeof(rb_table[0]); i++) {
		const struct rb_offsets *o = &rb_table[i];

		if (o->major == major && o->minor == minor &&
		    teeny >= o->teeny_min && teeny <= o->teeny_max)
			return o;
	}
	return NULL;
}

bool rb_offsets_bpf_state(const struct rb_offsets *off, uint64_t vm_ptr_addr,
			  struct profd_ruby_proc *out)
{
	if (off->thread_ec > PROFD_RB_THREAD_BUF - 8 ||
	    off->thread_tid > PROFD_RB_THREAD_BUF - 4 ||
	    off->cfp_size > 128 || off->cfp_pc > off->cfp_size - 8 ||
	    off->cfp_iseq > off->cfp_size - 8 || off->cfp_ep > off->cfp_size - 8)
		return false;
	*out = (struct profd_ruby_proc){
		.vm_ptr_addr = vm_ptr_addr,
		.vm_ractor_set = off->vm_ractor_set,
		.ractor_vmlr_node = off->ractor_vmlr_node,
		.ractor_threads = off->ractor_threads,
		.thread_lt_node = off->thread_lt_node,
		.thread_ec = off->thread_ec,
		.thread_tid = off->thread_tid,
		.ec_vm_stack = off->ec_vm_stack,
		.ec_vm_stack_size = off->ec_vm_stack_size,
		.ec_cfp = off->ec_cfp,
		.cfp_size = off->cfp_size,
		.cfp_pc = off->cfp_pc,
		.cfp_iseq = off->cfp_iseq,
		.cfp_ep = off->cfp_ep,
		.ep_flags = (int16_t)(off->ep_flags * 8),
		.ep_me_cref = (int16_t)(off->ep_me_cref * 8),
		.frame_magic_mask = off->frame_magic_mask,
		.frame_magic_cfunc = off->frame_magic_cfunc,
		.frame_magic_method = off->frame_magic_method,
		.frame_flag_finish = off->frame_flag_finish,
	};
	return true;
}
