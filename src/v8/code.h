/* SPDX-License-Identifier: GPL-2.0 */
/*
 * code.h - V8's compiled code at a pc (TurboFan, Maglev, Sparkplug): the
 * Code object whose instructions hold it, and the JS frames the pc
 * stands for, the functions inlined there innermost first and the code's
 * own function last, each with its script offset.
 *
 * Owns: finding the InstructionStream that holds a pc (its map, the
 * back pointer to its Code, the Code's entry point and instruction size
 * checked), where a leaf's frame is at its pc (its prologue, its
 * epilogue), the check that the Code is the frame's function's (its
 * DeoptimizationData's SharedFunctionInfo), and the inlining chain: the
 * pc's SourcePosition in the Code's source position table carries an
 * inlining id; DeoptimizationData's InliningPositions[id] gives the
 * inlined function (an index in its literal array) and the position of
 * the call in its caller, whose inlining id goes on, up to -1 (V8's
 * SourcePosition::InliningStack(); what `--cpu-prof` shows).
 * Baseline (Sparkplug) code: the pc's bytecode offset, from the Code's
 * bytecode offset table walked in step with its BytecodeArray's
 * bytecodes (their sizes: V8's Bytecodes::kBytecodeSizes, metadata.h),
 * as V8's Code::GetBytecodeOffsetForBaselinePC(); the BytecodeArray
 * checked to be the frame's function's; then the offset's position as
 * an interpreted frame's.
 *
 * The layout is metadata.h's (V8_FEAT_CODE, V8_FEAT_BASELINE); every
 * object's instance type is checked, every index against its array's
 * length, every bytecode and table entry against its array's end.
 *
 * Threads: the caller's (remote.h: one caller per reader at a time).
 */
#ifndef PROFD_V8_CODE_H
#define PROFD_V8_CODE_H

#include <stdbool.h>
#include <stdint.h>

#include "v8/frames.h"

#define V8_INLINE_MAX		16		/* frames of one pc, inlined ones and the outer one */
#define V8_CODE_SCAN_MAX	(1u << 20)	/* bytes below a pc searched for its code's start */
#define V8_BYTECODES_MAX_BYTES	(1u << 20)	/* bytes of a BytecodeArray walked (baseline code) */

/* One JS frame of an optimized pc. */
struct v8_code_frame {
	uint64_t sfi;		/* its SharedFunctionInfo (tagged) */
	int64_t pos;		/* script offset in the function's Script; -1 unknown */
};

/* Where an optimized function's frame is at a pc (v8_code_leaf()). */
enum v8_leaf_state {
	V8_LEAF_FRAME,		/* set up: rbp is its own, its caller's return address at [rbp + 8] */
	V8_LEAF_SETTING_UP,	/* rbp its own, its context and function slots not pushed yet */
	V8_LEAF_NO_FRAME,	/* before `push rbp`, or after the epilogue's `pop rbp`: rbp is
				 * its caller's, the return address at [sp] */
	V8_LEAF_PUSHED,		/* rbp pushed, not moved yet: the return address at [sp + 8] */
	V8_LEAF_RA_UNKNOWN,	/* in an epilogue's path that holds the return address in r10 */
};

#define V8_BASELINE_CACHE	512	/* bytecode offsets of baseline pcs kept */
#define V8_CODE_RANGES		256	/* InstructionStreams remembered */

/*
 * What code.c keeps of one process between lookups: V8's
 * InstructionStream map once seen (0: not yet), the InstructionStreams
 * found (a pc inside one is checked there first, as the search would,
 * before the search back through up to a MiB below it), and the bytecode offset
 * of baseline pcs, by (Code, its bytecode offset table, its
 * BytecodeArray, code offset): each lookup reads those three live (small
 * reads) and walks the table and the bytecodes (up to a MiB each) only
 * on a miss — per sample they would exhaust the remote reader's
 * slow-memory budget (remote.h) and shun the process. A Code replaced at
 * the same address has another table. Zeroed: empty.
 */
struct v8_code_cache {
	uint64_t istream_map;
	struct v8_code_range {		/* an InstructionStream found: where a pc's search starts */
		uint64_t start, end;	/* its instructions */
	} ranges[V8_CODE_RANGES];
	uint32_t next_range;		/* the slot the next one replaces */
	struct v8_baseline_entry {
		uint64_t code, table, ba, target;
		int64_t offset;	/* the bytecode offset */
		int64_t pos;	/* its source position once read, else -1 */
	} baseline[V8_BASELINE_CACHE];
};

/*
 * v8_code_leaf - the function and the frame state of the optimized
 * (TurboFan, Maglev) code at @pc, the sampled ip: *@sfi the
 * SharedFunctionInfo (tagged) its Code's DeoptimizationData names (what
 * proves which function runs there, with no frame read), *@state where
 * its frame is, from the instructions: the Code's frame set-up (`push
 * rbp; mov rbp, rsp; push rsi; push rdi`, looked for in its first 64
 * bytes) and, past it, an epilogue (`mov rsp, rbp; pop rbp`, within 24
 * bytes before @pc, followed up to @pc only by the instructions V8's
 * return sequence has). @cc as in v8_code_frames().
 * Returns 0, or -ENOENT (no Code holds @pc), -ENOTSUP (no optimized
 * code, or no V8_FEAT_CODE), -EPROTO (no frame set-up found), a read's
 * error. Counts nothing.
 */
int v8_code_leaf(const struct v8_reader *r, struct v8_code_cache *cc, uint64_t pc, uint64_t *sfi,
		 enum v8_leaf_state *state);

/*
 * v8_code_frames - the JS frames at @pc in the compiled code of the
 * frame whose function's SharedFunctionInfo is @sfi: @exact when @pc is
 * the sampled ip, else a return address (the call before it is looked
 * up). @cc is the process's (struct v8_code_cache: the InstructionStream
 * map once seen, baseline frames' bytecode offsets and positions).
 * Returns the frame count n (1..@cap): out[0..n-2] the inlined functions
 * innermost first, out[n-1] @sfi itself (a position of -1: its source
 * position table had none); *@inline_err is 0, or why the inlined
 * functions were left out (n is then 1: an inlined function's
 * SharedFunctionInfo or its InliningPosition did not check out, -EPROTO;
 * more than @cap, -E2BIG). Baseline code: n is 1, the position of the
 * pc's bytecode. Errors: -ENOENT (no Code found holding @pc), -ENOTSUP
 * (the Code is no optimized or baseline code: a stub; or the layout has
 * no V8_FEAT_CODE, or for baseline code no V8_FEAT_BASELINE), -ESTALE
 * (the Code is another function's: replaced since the sample), -EPROTO
 * (memory contradicts the layout: a bytecode offset table or bytecodes
 * that end before the pc ...), -E2BIG (a BytecodeArray over
 * V8_BYTECODES_MAX_BYTES, a table over V8_POSITIONS_MAX), -ENOMEM, or a
 * read's error (-ESRCH, -EFAULT ...). Counts nothing.
 */
int v8_code_frames(const struct v8_reader *r, struct v8_code_cache *cc, uint64_t pc, bool exact,
		   uint64_t sfi, struct v8_code_frame *out, int cap, int *inline_err);

/*
 * v8_baseline_offset - the bytecode offset, into *@offset, of code
 * offset @target (the sampled pc's offset + 1: the instruction there is
 * the one running; a return address's offset: the call before it) of
 * baseline code whose bytecode offset table is @tab (@ntab bytes) and
 * bytecodes @bc (@nbc bytes): V8's BytecodeOffsetIterator
 * (src/baseline/bytecode-offset-iterator.h, AdvanceToPCOffset()). The
 * table is the end of the prologue's code (bytecode offset -1,
 * kFunctionEntryBytecodeOffset), then of each bytecode's, as unsigned
 * VLQ deltas; the first bytecode whose code ends at or after @target is
 * the one. Each bytecode's size is @l's table's; a prefix (the first
 * l->nprefixes bytecodes: Wide and DebugBreakWide at even ids scale the
 * next bytecode's operands to double, ExtraWide and DebugBreakExtraWide
 * at odd ids to quadruple; metadata.c checks the order by V8 version)
 * adds one byte. Returns 0, or -EPROTO: the table or the bytecodes end
 * before @target, an unknown bytecode, a prefix not followed by a
 * bytecode it can scale. Reads nothing else.
 */
int v8_baseline_offset(const struct v8_layout *l, const uint8_t *tab, uint32_t ntab,
		       const uint8_t *bc, uint32_t nbc, uint64_t target, int64_t *offset);

/*
 * v8_sfi_has_bytecode - whether BytecodeArray @ba is SharedFunctionInfo
 * @sfi's now: its function_data, or the bytecode_or_interpreter_data of
 * the baseline Code there. false on any read error.
 */
bool v8_sfi_has_bytecode(const struct v8_reader *r, uint64_t sfi, uint64_t ba);

#endif /* PROFD_V8_CODE_H */
