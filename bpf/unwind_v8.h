/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_v8.h - the contract between the BPF V8 (Node) walker and user
 * space (src/v8/).
 *
 * User space recognises V8 in a process by its postmortem metadata
 * (`v8dbg_*` symbols of node or libnode, src/v8/metadata.c) and writes
 * one `runtime_procs` entry (bpf/runtime.h) of runtime PROFD_RUNTIME_V8
 * whose state is a struct profd_v8_proc: V8's frame slots, tags and the
 * few object offsets and instance types the walker checks.
 *
 * V8 keeps frame pointers in its JIT code, builtins and interpreter, so
 * the native walk already reaches main; this walker follows the same
 * frame-pointer chain from the sample's registers (rbp, then [fp] ...)
 * and, for each frame whose slots hold a JS function's frame (the
 * context slot a Context, the function slot a JSFunction, its `shared`
 * a SharedFunctionInfo: every object's map's instance type checked),
 * records what user space needs to name it later and to tell whether
 * the objects are still what they were (V8's GC moves and frees them).
 * A typed frame (a Smi marker in the context slot: entry, exit, stub,
 * builtin frames) or a native frame is passed over.
 *
 * sample.interp_len entries of two __u64 each follow the user IPs:
 *
 *   entry 0 (the sample's header):
 *     [0] the word at the sample's sp (user space tells a leaf in a
 *         function's prologue or epilogue by it: a return address there);
 *         when it equals rbp (a leaf that pushed rbp and has not moved
 *         it yet), the word above it, its return address, flagged
 *         PROFD_V8_H_PUSHED
 *     [1] the interpreter's bytecode offset register at the sample
 *         (v8dbg_InterpreterBytecodeOffsetRegister, r9 on x86-64), for a
 *         leaf in a bytecode handler, whose frame slot is stale
 *   then two entries per JS frame, leaf first:
 *     [0] the frame's pc: the sample's ip for the frame at rbp, else the
 *         return address its callee's frame holds (user space finds the
 *         native IP it stands for by it) | PROFD_V8_F_* << 56
 *     [1] the SharedFunctionInfo (tagged) JSFunction::shared held
 *     [2] low 32 bits: the frame's bytecode offset slot's Smi value (when
 *         PROFD_V8_F_OFFSET); high 32: profd_v8_check() of the
 *         SharedFunctionInfo's name_or_scope_info and script_or_debug_info
 *         as BPF read them
 *     [3] the frame's BytecodeArray slot (when PROFD_V8_F_OFFSET), else 0
 *
 * What tells user space the objects still are what BPF saw: the
 * SharedFunctionInfo read later must still be one (its map's instance
 * type) with the same name and script fields (the check); a function
 * moved by the GC leaves its SharedFunctionInfo in place (they live in
 * old space) and is still named, a SharedFunctionInfo moved or freed
 * fails the check (`v8_frame_stale`), never names another function.
 * A line is read from the recorded BytecodeArray only while it is still
 * its SharedFunctionInfo's (function_data, or the baseline code's
 * bytecode_or_interpreter_data).
 */
#ifndef PROFD_BPF_UNWIND_V8_H
#define PROFD_BPF_UNWIND_V8_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "runtime.h"

/* JS frames kept per sample: the header entry, then two entries each. */
#define PROFD_V8_MAX_FRAMES		((PROFD_MAX_INTERP_FRAMES - 1) / 2)
/* Frame-pointer frames one program invocation looks at. */
#define PROFD_V8_FRAMES_PER_PROG	16
/* Self tail calls the V8 walker may take: 4 invocations, 64 frames. */
#define PROFD_V8_MAX_TAIL_CALLS		3
/* Native frames v8_first_frame() looks at for the walk's first frame. */
#define PROFD_V8_SCAN_FRAMES		48
/* Bytes read per frame: [fp - PROFD_V8_FP_BELOW, fp + 16) */
#define PROFD_V8_FP_BELOW		48
/* Bytes of a SharedFunctionInfo read: its fields must lie below. */
#define PROFD_V8_SFI_READ		48
/* The bytes of a JSFunction read from its start: `shared` lies below. */
#define PROFD_V8_FN_READ		48

/* Entry flags, word [0] << 56. */
#define PROFD_V8_F_LEAF		(1ULL << 56)	/* the frame at the sample's rbp */
#define PROFD_V8_F_OFFSET	(1ULL << 57)	/* the offset slot held a Smi */
#define PROFD_V8_PC_MASK	((1ULL << 56) - 1)
/* Header flag, word [0]: it holds [sp + 8], the word at sp was rbp. */
#define PROFD_V8_H_PUSHED	(1ULL << 63)

/* The runtime_procs state of a V8 process (offsets in bytes). */
struct profd_v8_proc {
	__s8 fp_context;		/* context or frame type marker: -8 */
	__s8 fp_function;		/* the JSFunction: -16 */
	__s8 fp_bytecode_array;		/* -32 */
	__s8 fp_bytecode_offset;	/* -40 */
	__u8 heap_tag, heap_tag_mask;	/* 1, 3 */
	__u8 smi_tag, smi_tag_mask;	/* 0, 1 */
	__u8 smi_shift;			/* value = word >> smi_shift (32) */
	__u8 _pad0;
	__u16 map;			/* HeapObject::map */
	__u16 map_instance_type;	/* Map::instance_type (a __u16) */
	__u16 fn_shared;		/* JSFunction::shared, < PROFD_V8_FN_READ - 8 */
	__u16 sfi_name;			/* name_or_scope_info, < PROFD_V8_SFI_READ - 8 */
	__u16 sfi_script;		/* script_or_debug_info, < PROFD_V8_SFI_READ - 8 */
	__u16 t_js_function, t_sfi;	/* instance types */
	__u16 first_context, last_context;
	/* where the bytecode offset register is in struct pt_regs; 0xffff: none */
	__u16 offset_reg;
	__u16 t_js_function_last;	/* JSFunction's subtypes (class constructors ...) up to it */
	__u16 _pad1[2];
};

/* profd_v8_check - 32 bits of a SharedFunctionInfo's name and script
 * fields; alike in BPF and user space (src/v8/merge.c). Never 0. */
static inline __u32 profd_v8_check(__u64 name, __u64 script)
{
	__u64 h = (name >> 3) * 0x9e3779b97f4a7c15ULL;

	h ^= (script >> 3) * 0xff51afd7ed558ccdULL;
	h ^= h >> 29;
	return (__u32)(h ^ (h >> 32)) | 1;
}

/* The V8 walker's counters (slots of bpf/profd.h's `counters`). */
#define PROFD_CNT_V8_SAMPLES \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_V8, 0)	/* samples walked (not a loss) */
#define PROFD_CNT_V8_FRAMES \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_V8, 1)	/* JS frames recorded */
#define PROFD_CNT_V8_NOT_JS \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_V8, 2)	/* heap-tagged slots that were no JS frame */
#define PROFD_CNT_V8_TRUNCATED \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_V8, 3)	/* more frames than kept or walked */
#define PROFD_CNT_V8_PROLOGUE \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_V8, 4)	/* leaf frame at rbp whose slots are not pushed yet */
#define PROFD_CNT_V8_OBJ_READ \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_V8, 5)	/* a JS frame's objects unreadable: left native */
#define PROFD_CNT_V8_FROM_NATIVE \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_V8, 6)	/* walks started at a native frame past the leaf */

_Static_assert(sizeof(struct profd_v8_proc) <= PROFD_RUNTIME_STATE_SIZE,
	       "V8's state fits runtime_procs");
_Static_assert(PROFD_V8_MAX_TAIL_CALLS <= PROFD_RUNTIME_TAIL_CALLS,
	       "the native walk leaves V8 its tail calls");
_Static_assert(PROFD_V8_FP_BELOW + 16 + PROFD_V8_SFI_READ + PROFD_V8_FN_READ + 64 <=
	       PROFD_RUNTIME_BUF, "V8's reads fit the scratch buffer");

#endif /* PROFD_BPF_UNWIND_V8_H */
