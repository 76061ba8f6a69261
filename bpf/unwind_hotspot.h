/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_hotspot.h - the contract between the BPF HotSpot walker and
 * user space (src/hotspot/).
 *
 * User space recognises a JVM by libjvm's gHotSpotVM* symbols, reads its
 * vmStructs and code heaps, and writes one `runtime_procs` entry
 * (bpf/runtime.h) of runtime PROFD_RUNTIME_HOTSPOT whose state is a
 * struct profd_hotspot_proc: each code heap's reserved range and segment
 * map, the interpreter's code range, and the few offsets the walker reads.
 *
 * The walker runs after the native walk (runtime_dispatch()). It looks
 * at the native user IPs from its cursor on; at the first one in the
 * JVM's code it takes over: the native frames from there on are dropped
 * (the native walk cannot unwind compiled code that keeps no frame
 * pointer) and it walks on from that frame's registers (kept by the
 * native walk: PROFD_FRAME_BP_SLOT(), PROFD_FRAME_SP_SLOT(), bpf/profd.h)
 * by HotSpot's own rules, appending each pc to the native IPs and a
 * frame record for it: a compiled frame or stub with a frame size by that
 * size (frame::sender_for_compiled_frame: the caller's sp = sp + size
 * words, its pc at sp - 8, rbp saved at sp - 16), an interpreted frame by
 * its fp (the caller's pc at fp + 8, its rbp at fp, its sp in the
 * frame's sender sp slot), a stub without a frame size (the call stub)
 * by its fp. When the pc leaves the JVM's code (the call stub returns
 * into JavaCalls; a JNI call), the native walk takes over again, and
 * comes back here when it ends. Unverifiable (a pc in a code heap no
 * blob holds, a leaf in a compiled frame's prologue, a leaf in a stub
 * without a frame size whose return address does not check out): the
 * walk ends, truncated and counted. A leaf in a stub without a frame size
 * (StubRoutines: arraycopy, fill) finds its return address at [sp],
 * [sp + 8] or [rbp + 8] by where its pc is (hs_stub_leaf()), taken only
 * when it returns into the JVM's code after a call into that blob.
 *
 * Its frames (two __u64 each, leaf first, in native order) are staged
 * (PROFD_RUNTIME_STAGE()) and copied after the final native IPs at emit:
 *
 *   [0] bits 0-47: the CodeBlob's address (PROFD_HS_FRAME_BLOB) or the
 *       Method* of an interpreted frame (PROFD_HS_FRAME_INTERP);
 *       bits 48-57: the index of the native user IP it stands for;
 *       bits 60-62: the kind
 *   [1] BLOB: low 32 bits: the 32-bit word at the nmethod's _compile_id
 *       offset (0 when the blob is shorter), high 32 bits: the low 32 bits
 *       of the blob's _name pointer: user space names the frame only if
 *       the live blob at that address still has both (a flushed nmethod's
 *       place reused by another is never named after it);
 *       INTERP: bits 0-47: the Symbol* of the name of the method's class
 *       (Method -> ConstMethod -> ConstantPool -> pool holder -> _name),
 *       read while the method ran; bits 48-63: the bci (the bcp less the
 *       start of the ConstMethod's bytecodes), PROFD_HS_BCI_NATIVE for a
 *       native method's frame (its bcp slot holds 0). A Method* freed with its
 *       class and reused by another class's method (class unloading) is
 *       caught by the class name: user space names the frame only if the
 *       live Method's class has that name Symbol.
 *
 * The interpreter frame's slots (frame_x86.hpp): the Method* one word
 * below interpreter_frame_last_sp_offset, the bcp six words below it;
 * vmStructs exports frame::interpreter_frame_last_sp_offset (-2 in JDK
 * 17 and 25), user space derives the slots from it.
 */
#ifndef PROFD_BPF_UNWIND_HOTSPOT_H
#define PROFD_BPF_UNWIND_HOTSPOT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "runtime.h"

#define PROFD_HS_MAX_HEAPS		3	/* segmented code cache: 3 heaps */
/* Native frames one HotSpot program invocation looks at before it
 * tail-calls itself (PROFD_RUNTIME_TAIL_CALLS of them: 256 in all). */
#define PROFD_HS_FRAMES_PER_PROG	64
#define PROFD_HS_MAX_TAIL_CALLS		PROFD_RUNTIME_TAIL_CALLS
/* Segment map hops back to a block's start (each steps up to 254 segments). */
#define PROFD_HS_MAX_HOPS		32

#define PROFD_HS_ADDR_MASK		((1ULL << 48) - 1)
#define PROFD_HS_INDEX_SHIFT		48
#define PROFD_HS_INDEX_MASK		0x3ffULL
#define PROFD_HS_KIND_SHIFT		60
enum profd_hs_frame_kind {
	PROFD_HS_FRAME_BLOB = 1,	/* a CodeBlob: nmethod, stub, adapter */
	PROFD_HS_FRAME_INTERP = 2,	/* an interpreted frame */
};

/*
 * The runtime_procs state of a JVM: code heap i is [heap_low[i],
 * heap_low[i] + heap_size[i]) reserved, one segment map byte per segment
 * at heap_segmap[i]; the interpreter's code [interp_low, + interp_size).
 */
struct profd_hotspot_proc {
	__u64 heap_low[PROFD_HS_MAX_HEAPS];
	__u64 heap_segmap[PROFD_HS_MAX_HEAPS];
	__u32 heap_size[PROFD_HS_MAX_HEAPS];	/* HotSpot's code cache is < 4 GiB */
	__u32 interp_size;
	__u64 interp_low;
	__u8 nheaps;
	__u8 log2_segment;		/* CodeHeap::_log2_segment_size (same in all) */
	__u8 block_header;		/* sizeof(HeapBlock): the blob follows it */
	__u8 blob_size_off;		/* CodeBlob::_size (int) */
	__u8 blob_name_off;		/* CodeBlob::_name (char *) */
	__s8 interp_method_slot;	/* words from fp to the Method*; the bcp
					 * is 5 words further down */
	__u16 compile_id_off;		/* nmethod::_compile_id (int) */
	/* an interpreted frame's method: Method -> ConstMethod -> pool ->
	 * holder -> name, each a pointer at these offsets */
	__u8 method_const_method;	/* Method::_constMethod */
	__u8 cm_constants;		/* ConstMethod::_constants */
	__u8 cp_pool_holder;		/* ConstantPool::_pool_holder */
	__u8 klass_name;		/* Klass::_name */
	__u8 const_method_size;		/* sizeof(ConstMethod): the bytecodes follow */
	/* unwinding compiled frames by their size (frame::sender_for_compiled_frame) */
	__u8 blob_frame_size_off;	/* CodeBlob::_frame_size (int, words) */
	__u8 blob_frame_complete_off;	/* CodeBlob::_frame_complete_offset */
	__u8 blob_frame_complete_size;	/* its width: 4 (17) or 2 (25) */
	__u8 blob_code_off;		/* _code_begin (17: a pointer) or _code_offset
					 * (25: an int from the blob) */
	__u8 blob_code_is_ptr;
	__s8 interp_sender_sp_slot;	/* words from fp: the caller's sp
					 * (frame::interpreter_frame_sender_sp_offset) */
};

#define PROFD_HS_BCP_BELOW_METHOD	5	/* frame_x86.hpp: bcp = method - 5 */
#define PROFD_HS_BCI_SHIFT		48
#define PROFD_HS_BCI_NATIVE		0xffff	/* a native method's frame: no bcp */

/*
 * profd_hs_frame0 - word [0] of a frame: address @addr, native index @idx,
 * kind @kind.
 */
static inline __u64 profd_hs_frame0(__u64 addr, __u32 idx, __u32 kind)
{
	return (addr & PROFD_HS_ADDR_MASK) |
	       ((__u64)idx & PROFD_HS_INDEX_MASK) << PROFD_HS_INDEX_SHIFT |
	       (__u64)(kind & 7) << PROFD_HS_KIND_SHIFT;
}

/* The HotSpot walker's counters (slots of bpf/profd.h's `counters`). */
#define PROFD_CNT_HS_SAMPLES \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_HOTSPOT, 0)	/* samples walked (not a loss) */
#define PROFD_CNT_HS_NO_BLOB \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_HOTSPOT, 1)	/* pc in a code heap, no blob holds it */
#define PROFD_CNT_HS_READ_ERR \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_HOTSPOT, 2)	/* code heap or frame unreadable */
#define PROFD_CNT_HS_TRUNCATED \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_HOTSPOT, 3)	/* more frames than looked at or kept */
#define PROFD_CNT_HS_BAD_INTERP \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_HOTSPOT, 4)	/* interpreted frame's bcp outside its method */
#define PROFD_CNT_HS_UNWIND_STOP \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_HOTSPOT, 5)	/* a JVM frame that cannot be unwound:
							 * walk cut, truncated */
#define PROFD_CNT_HS_HANDBACKS \
	PROFD_CNT_RUNTIME(PROFD_RUNTIME_HOTSPOT, 6)	/* JVM walks handed back to the native
							 * walk (not a loss) */

_Static_assert(sizeof(struct profd_hotspot_proc) <= PROFD_RUNTIME_STATE_SIZE,
	       "HotSpot's state fits runtime_procs");

#endif /* PROFD_BPF_UNWIND_HOTSPOT_H */
