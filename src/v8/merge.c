// SPDX-License-Identifier: GPL-2.0
/*
 * merge.c - JS frames named and put in place of their native IPs (see
 * v8.h: v8_merge_stack(), v8_frame(), v8_new_interval()).
 *
 * Owns: V8's kind of frame table (src/runtime/frames.h), the name cache
 * (SharedFunctionInfo -> function name, file: an addr_cache keyed by
 * the process's generation and the SharedFunctionInfo's address, bounded
 * by the runtime's budget) and the merge.
 *
 * Each JS frame the walker recorded (bpf/unwind_v8.h) stands for the
 * native IP its pc is: the leaf's for the frame at the sample's rbp, else
 * the first native return address equal to it past the frame before
 * (both walks follow the same frame pointers, leaf first). It replaces
 * that IP only when:
 *   - the code there is V8's JS code: JIT code (an anonymous mapping) or
 *     the interpreter (its trampolines, bytecode handlers); builtins
 *     (Array.prototype.sort's code ...) and native code keep their
 *     native names, counted in v8_frame_native_code;
 *   - for the leaf, the word at sp is no code address (a function in its
 *     prologue or epilogue runs with its caller's rbp: its frame would be
 *     its caller's) or, in a bytecode handler, the return address into
 *     the interpreter's trampoline (leaf_verified()), else
 *     v8_leaf_unverified;
 *   - the SharedFunctionInfo read now is still one, with the name and
 *     script fields BPF saw (profd_v8_check()), else v8_frame_stale:
 *     V8's GC moved or freed it, the frame stays unnamed (native);
 *   - its name and file were read (v8_sfi_describe() without name_err
 *     or file_err): a name that did not check out is no "(anonymous)".
 * Interpreted frames get the line of their bytecode offset (the offset
 * register for a leaf in a bytecode handler, else the frame's slot), read
 * from the recorded BytecodeArray only while it is still its function's
 * (SharedFunctionInfo::function_data, or its baseline code's
 * bytecode_or_interpreter_data), else line 0 (v8_line_unverified).
 * Frames whose pc is JIT code: the optimized Code holding the pc
 * (code.h) must be the SharedFunctionInfo's (else line 0,
 * v8_code_unverified); its functions inlined at the pc become frames of
 * their own before it, innermost first, each SharedFunctionInfo checked
 * and named like a frame's, each line from its own Script (an inlined
 * function that does not check out: the outer frame alone, without a
 * line, v8_inline_unread). Baseline code: the line of the pc's bytecode
 * offset (code.h), its BytecodeArray the function's (else line 0,
 * v8_code_unverified). A pc in no such Code, or a bytecode offset or
 * position not read: line 0 (v8_jit_line_unknown).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/profd.h"
#include "bpf/unwind_v8.h"
#include "counters/counters.h"
#include "proc/remote.h"
#include "unwind/callsite.h"	/* callsite_x86_after_call() */
#include "v8/code.h"
#include "v8/v8.h"
#include "v8/v8_internal.h"

#define V8_BUDGET		(32ULL << 20)	/* when v8_new() is given none */
#define NAME_CACHE_ENTRIES	65536

COUNTER_DEFINE(v8_frames_named, COUNTER_STAT, "JS frames named in V8 samples");
COUNTER_DEFINE(v8_frame_stale, COUNTER_PARTIAL,
	       "JS frames left unnamed: the SharedFunctionInfo BPF saw was moved or freed since");
COUNTER_DEFINE(v8_frame_unmatched, COUNTER_PARTIAL,
	       "JS frames left unnamed: no native IP of the sample had their pc");
COUNTER_DEFINE(v8_frame_native_code, COUNTER_STAT,
	       "JS frames whose pc is in builtins or native code: the native name kept");
COUNTER_DEFINE(v8_leaf_unverified, COUNTER_PARTIAL,
	       "V8 leaf frames left unnamed: [sp] held a code address (prologue or epilogue)");
COUNTER_DEFINE(v8_line_unverified, COUNTER_PARTIAL,
	       "interpreted JS frames without a line: their BytecodeArray is no longer their function's");
COUNTER_DEFINE(v8_jit_line_unknown, COUNTER_PARTIAL,
	       "compiled JS frames without a line: no optimized or baseline Code found at the pc, or its position unread");
COUNTER_DEFINE(v8_code_unverified, COUNTER_PARTIAL,
	       "compiled JS frames without a line: the Code at their pc is not their function's");
COUNTER_DEFINE(v8_inline_unread, COUNTER_PARTIAL,
	       "optimized JS frames shown without their inlined functions: the chain did not check out");
COUNTER_DEFINE(v8_inlined_frames, COUNTER_STAT, "inlined JS frames named in V8 samples");
COUNTER_DEFINE(v8_frame_table_rotations, COUNTER_STAT, "V8 frame tables started afresh");
COUNTER_DEFINE(v8_frames_full, COUNTER_PARTIAL,
	       "JS frames not named: the V8 frame table was full");
COUNTER_DEFINE(v8_leaves_from_code, COUNTER_STAT,
	       "optimized JS leaves named from the Code at their pc (no frame read)");
COUNTER_DEFINE(v8_leaf_callers_restored, COUNTER_STAT,
	       "callers of optimized JS leaves without a frame put back from the return address at sp");
COUNTER_DEFINE(v8_leaf_caller_unverified, COUNTER_PARTIAL,
	       "V8 stacks cut after an optimized leaf without a frame: its return address did not check out");
COUNTER_DEFINE(v8_leaf_frame_mismatch, COUNTER_PARTIAL,
	       "V8 stacks cut after an optimized leaf: the frame at rbp is not its function's");
COUNTER_DEFINE(v8_callee_callers_restored, COUNTER_STAT,
	       "compiled JS callers of a frameless leaf (a builtin, a stub) put back from the return address at sp");
COUNTER_DEFINE(v8_leaf_unnamed, COUNTER_PARTIAL,
	       "V8 leaves in JIT code left unnamed: not optimized code, its frame not recorded");
COUNTER_DEFINE(v8_jit_frame_unnamed, COUNTER_PARTIAL,
	       "frames below the leaf in V8's JIT code that no JS frame of the walk named "
	       "(the native walk's return address, the walk's frames elsewhere): shown as "
	       "the anonymous code they are in (a perf map node writes may still name them)");

enum { V8_FRAME_TABLE_FULL = 1, V8_CALLER_UNVERIFIED = 2, V8_FIXED_FRAMES = 2 };

static const char *const fixed_names[V8_FIXED_FRAMES + 1] = {
	[V8_FRAME_TABLE_FULL] = "[v8: frame table full]",
	[V8_CALLER_UNVERIFIED] = "[v8: caller unverified]",
};

static const struct rt_frames_kind v8_frame_kind = {
	.tag = RUNTIME_IP_FRAME | ((uint64_t)PROFD_RUNTIME_V8 << RUNTIME_IP_ID_SHIFT),
	.fixed = fixed_names,
	.nfixed = V8_FIXED_FRAMES,
	.full_id = V8_FRAME_TABLE_FULL,
	.full = &counter_v8_frames_full,
};

/* A SharedFunctionInfo's name and file, as read while its check held. */
struct name_entry {
	struct addr_entry e;
	uint32_t check;		/* profd_v8_check() of its fields then */
	uint64_t script;	/* its Script (tagged), 0 if none */
	char *name, *file;
};

static void free_name(struct addr_entry *e)
{
	struct name_entry *n = (struct name_entry *)e;

	free(n->name);
	free(n->file);
	free(n);
}

int v8_merge_init(struct v8 *v, uint64_t budget)
{
	if (!budget)
		budget = V8_BUDGET;
	v->names = addr_cache_new(NAME_CACHE_ENTRIES, budget / 2, free_name);
	if (!v->names)
		return -ENOMEM;
	return rt_frame_gens_init(&v->frames, &v8_frame_kind, budget / 4);
}

void v8_merge_fini(struct v8 *v)
{
	addr_cache_free(v->names);
	rt_frame_gens_fini(&v->frames);
}

/*
 * The name entry of @sfi in @p if it still is what BPF saw (@check).
 * NULL: stale (*@stale set, counted by the caller), or its name or file
 * unreadable (counted by v8_sfi_describe(): a function whose name could
 * not be read is not "(anonymous)", nor one whose file could not be read
 * an eval's; V8's GC may be moving them while they are read).
 */
static struct name_entry *sfi_entry(struct v8 *v, const struct v8proc *p,
				    const struct v8_reader *r, uint64_t sfi, uint32_t check,
				    bool *stale)
{
	const struct v8_layout *l = &p->bin.l;
	struct name_entry *n;
	struct addr_entry *e;
	struct v8_frame f;
	uint64_t name, script, sc;
	uint16_t type;

	if (v8_object_type(r, sfi, &type) || type != l->t_sfi ||
	    v8_object_field(r, sfi, l->sfi_name_or_scope_info, &name) ||
	    v8_object_field(r, sfi, l->sfi_script_or_debug_info, &script) ||
	    profd_v8_check(name, script) != check) {
		*stale = true;
		return NULL;
	}
	e = addr_cache_lookup(v->names, p->pid, p->gen, 0, sfi);
	n = (struct name_entry *)e;
	if (n && n->check == check) {
		addr_cache_touch(v->names, e);
		return n;
	}
	if (n)
		addr_cache_remove(v->names, e);	/* another function there now */
	if (v8_sfi_describe(r, sfi, &f, &sc) || f.name_err || f.file_err ||
	    !(n = calloc(1, sizeof(*n))))
		return NULL;
	n->check = check;
	n->script = sc;
	n->name = strdup(f.name[0] ? f.name : "(anonymous)");
	n->file = strdup(f.file);
	if (!n->name || !n->file) {
		free_name(&n->e);
		return NULL;
	}
	n->e.pid = p->pid;
	n->e.gen = p->gen;
	n->e.kind = 0;
	n->e.addr = sfi;
	addr_cache_insert(v->names, &n->e,
			  sizeof(*n) + strlen(n->name) + strlen(n->file) + 2 + 64);
	return n;
}

/* The name entry of an inlined function's SharedFunctionInfo (its type checked, its check now). */
static struct name_entry *inlined_entry(struct v8 *v, const struct v8proc *p,
					const struct v8_reader *r, uint64_t sfi)
{
	const struct v8_layout *l = &p->bin.l;
	uint64_t name, script;
	bool stale = false;	/* the caller counts any failure v8_inline_unread */

	if (v8_object_field(r, sfi, l->sfi_name_or_scope_info, &name) ||
	    v8_object_field(r, sfi, l->sfi_script_or_debug_info, &script))
		return NULL;
	return sfi_entry(v, p, r, sfi, profd_v8_check(name, script), &stale);
}

/*
 * The frames of compiled (optimized or baseline) JS frame @n
 * (SharedFunctionInfo @sfi) at @pc into @ids: its inlined functions
 * innermost first, then itself, with their lines. Returns the count (>= 1).
 */
static uint32_t compiled_ids(struct v8 *v, struct v8proc *p, const struct v8_reader *r,
			      struct name_entry *n, uint64_t sfi, uint64_t pc, bool exact,
			      uint32_t *ids)
{
	struct v8_code_frame fr[V8_INLINE_MAX];
	struct name_entry *e[V8_INLINE_MAX];
	int k, nf, inline_err, line;

	nf = v8_code_frames(r, p->code_cache, pc, exact, sfi, fr, V8_INLINE_MAX, &inline_err);
	if (nf < 1) {
		counter_inc(nf == -ESTALE ? &counter_v8_code_unverified : &counter_v8_jit_line_unknown);
		ids[0] = rt_frame_gens_intern(&v->frames, n->name, n->file, 0, 0);
		return 1;
	}
	e[nf - 1] = n;
	for (k = 0; k < nf - 1; k++) {
		if (!(e[k] = inlined_entry(v, p, r, fr[k].sfi))) {
			inline_err = -ESTALE;
			break;
		}
	}
	if (inline_err) {
		counter_inc(&counter_v8_inline_unread);
		fr[0] = (struct v8_code_frame){ .sfi = sfi, .pos = -1 };
		e[0] = n;
		nf = 1;
	}
	for (k = 0; k < nf; k++) {
		if (fr[k].pos < 0 || !e[k]->script ||
		    v8_script_line(r, e[k]->script, fr[k].pos, &line) || line < 0) {
			line = 0;
			counter_inc(&counter_v8_jit_line_unknown);
		}
		if (k < nf - 1)
			counter_inc(&counter_v8_inlined_frames);
		ids[k] = rt_frame_gens_intern(&v->frames, e[k]->name, e[k]->file, line, 0);
	}
	return (uint32_t)nf;
}

/*
 * The frame ids of JS frame @w (4 words) at pc kind @kind into @ids
 * (V8_INLINE_MAX), innermost first; 0: leave it native. @exact: its pc
 * is the sampled ip.
 */
static uint32_t frame_ids(struct v8 *v, struct v8proc *p, const struct v8_reader *r,
			  const uint64_t *w, enum v8_pc_kind kind, uint64_t live_offset,
			  bool exact, uint32_t *ids)
{
	uint64_t sfi = w[1], ba = w[3];
	uint32_t check = (uint32_t)(w[2] >> 32);
	bool stale = false;
	struct name_entry *n = sfi_entry(v, p, r, sfi, check, &stale);
	int line = 0;

	if (!n) {
		if (stale)
			counter_inc(&counter_v8_frame_stale);
		return 0;
	}
	counter_inc(&counter_v8_frames_named);
	if (kind == V8_PC_JIT)
		return compiled_ids(v, p, r, n, sfi, w[0] & PROFD_V8_PC_MASK, exact, ids);
	if ((kind == V8_PC_TRAMPOLINE || kind == V8_PC_HANDLER) && (w[0] & PROFD_V8_F_OFFSET) &&
	    ba && n->script) {
		int64_t raw = (w[0] & PROFD_V8_F_LEAF) && kind == V8_PC_HANDLER ?
			      (int64_t)live_offset : (int64_t)(int32_t)(uint32_t)w[2];

		if (v8_sfi_has_bytecode(r, sfi, ba))
			v8_bytecode_line(r, ba, raw, n->script, &line);
		else
			counter_inc(&counter_v8_line_unverified);
	}
	ids[0] = rt_frame_gens_intern(&v->frames, n->name, n->file, line > 0 ? line : 0, 0);
	return 1;
}

/*
 * Whether the frame at the sample's rbp is the leaf's (code of kind
 * @kind), by the word at sp, @spw: in a bytecode handler (its frame is
 * elided: it runs in the interpreter's frame) it is the return address
 * into the interpreter's trampoline that called the first handler, as
 * V8's own sampler has it (SafeStackFrameIterator); elsewhere it must be
 * no code address (a function before its `push rbp` or after its `pop
 * rbp` has its return address there, and its caller's rbp).
 */
static bool leaf_verified(const struct v8proc *p, enum v8_pc_kind kind, uint64_t spw)
{
	if (spw & PROFD_V8_H_PUSHED)
		return false;	/* [sp] was rbp: a frame not set up */
	if (kind == V8_PC_HANDLER)
		return spw && v8_classify(p, spw - 1) == V8_PC_TRAMPOLINE;
	return !v8_exec_addr(p, spw);
}

/*
 * Whether @ra is a return address in V8's code (JIT code or the V8
 * object's, builtins included): an executable mapping of those, the
 * bytes before it a near call (src/unwind/callsite.h's decoder, the one
 * the native walk's return addresses are checked by).
 */
static bool return_address(const struct v8proc *p, const struct v8_reader *r, uint64_t ra)
{
	uint8_t b[7];

	if (ra < 8 || !v8_own_code(p, ra - 1) ||
	    remote_read(r->rr, r->pid, ra - sizeof(b), b, sizeof(b)))
		return false;
	return callsite_x86_after_call(b, sizeof(b), ra, NULL, NULL);
}

/* What leaf_optimized() did: out[] entries written, what the merge goes on with. */
struct leaf_done {
	uint32_t n;		/* entries written to out */
	bool used_entry;	/* the walker's first (leaf-flagged) entry is spent */
	bool cut;		/* the stack ends there */
};

/*
 * The sample's leaf @pc when it is optimized code (v8_code_leaf()):
 * named from its Code, the functions inlined there too. Where its frame
 * is at the pc decides its caller: a frame set up (rbp its own) keeps
 * the native walk's (the walker's frame at rbp, flagged the leaf, must
 * be the same function's, else the stack is cut there,
 * v8_leaf_frame_mismatch); no frame (prologue, epilogue) puts back the
 * caller the native walk skipped, by the return address at [sp] or
 * [sp + 8] (@spw, checked by return_address(), else the stack is cut,
 * v8_leaf_caller_unverified): named by the walker's frame at rbp (its
 * caller's frame then) when that is JS code, else its native name.
 * Returns false when the leaf is no optimized code (the caller merges
 * as before).
 */
static bool leaf_optimized(struct v8 *v, struct v8proc *p, const struct v8_reader *r,
			   uint64_t pc, const uint64_t *frames, uint32_t nframes,
			   uint64_t *out, uint32_t cap, struct leaf_done *d)
{
	uint64_t tag = rt_frame_gens_tag(&v->frames), spw = frames[0], sfi, ra, wc[4];
	const uint64_t *w = NULL;
	enum v8_leaf_state state;
	enum v8_pc_kind kind;
	struct name_entry *n;
	uint32_t ids[V8_INLINE_MAX], nid;

	*d = (struct leaf_done){ 0 };
	if (v8_classify(p, pc) != V8_PC_JIT || v8_code_leaf(r, p->code_cache, pc, &sfi, &state) ||
	    !(n = inlined_entry(v, p, r, sfi)))
		return false;
	if (nframes >= 3 && (frames[2] & PROFD_V8_F_LEAF) && (frames[2] & PROFD_V8_PC_MASK) == pc) {
		w = &frames[2];
		d->used_entry = true;
	}
	counter_inc(&counter_v8_leaves_from_code);
	counter_inc(&counter_v8_frames_named);
	nid = compiled_ids(v, p, r, n, sfi, pc, true, ids);
	for (uint32_t j = 0; j < nid && d->n < cap; j++)
		out[d->n++] = tag | ids[j];
	switch (state) {
	case V8_LEAF_SETTING_UP:
		return true;	/* rbp its own: the native caller is right */
	case V8_LEAF_FRAME:
		if (w && w[1] == sfi)
			return true;
		counter_inc(&counter_v8_leaf_frame_mismatch);
		break;
	case V8_LEAF_NO_FRAME:
	case V8_LEAF_PUSHED:
		ra = spw & PROFD_V8_PC_MASK;
		if (!(spw & PROFD_V8_H_PUSHED) != (state == V8_LEAF_NO_FRAME) ||
		    !return_address(p, r, ra)) {
			counter_inc(&counter_v8_leaf_caller_unverified);
			break;
		}
		counter_inc(&counter_v8_leaf_callers_restored);
		kind = v8_classify(p, ra - 1);
		nid = 0;
		if (w && kind != V8_PC_OTHER) {
			/* the frame at rbp is the caller's, at that return address */
			memcpy(wc, w, sizeof(wc));
			wc[0] = ra | (w[0] & PROFD_V8_F_OFFSET);
			nid = frame_ids(v, p, r, wc, kind, 0, false, ids);
		}
		for (uint32_t j = 0; j < nid && d->n < cap; j++)
			out[d->n++] = tag | ids[j];
		if (!nid && d->n < cap)
			out[d->n++] = ra;	/* a builtin's return address: its native name */
		return true;
	case V8_LEAF_RA_UNKNOWN:
		counter_inc(&counter_v8_leaf_caller_unverified);
		break;
	}
	if (d->n < cap)
		out[d->n++] = tag | V8_CALLER_UNVERIFIED;
	d->cut = true;
	return true;
}

/*
 * Copy native IPs user[@from, @to) to @out after its @n entries (up to
 * @cap); returns the entries now. One below the leaf in V8's JIT code
 * (an anonymous mapping) is a JS frame no frame of the walk named: it
 * stays, as the anonymous code it is, counted (v8_jit_frame_unnamed; an
 * unnamed leaf is counted where it is met).
 */
static uint32_t copy_native(const struct v8proc *p, const uint64_t *user, uint32_t from,
			    uint32_t to, uint64_t *out, uint32_t n, uint32_t cap)
{
	for (uint32_t i = from; i < to && n < cap; i++) {
		uint64_t ip = user[i] & ~PROFD_IP_EXACT;

		if (i && v8_classify(p, user[i] & PROFD_IP_EXACT ? ip : ip - 1) == V8_PC_JIT)
			counter_inc(&counter_v8_jit_frame_unnamed);
		out[n++] = user[i];
	}
	return n;
}

/*
 * The sample's leaf @pc when it is no JS code of its own (a builtin, a
 * stub: builtins' name or JIT code that is no optimized Code) and runs
 * without a frame (before its `push rbp`, after its `pop rbp`, or never
 * setting one up, as Sparkplug's arithmetic builtins): the native walk,
 * by rbp, skips its caller, whose frame is the one at rbp (the walker's
 * leaf-flagged entry, recorded with @pc). Its caller is put back when
 * the word at sp (or above a pushed rbp) is a return address into V8's
 * code (return_address()) and the compiled Code there is that frame's
 * function's (v8_code_frames(): optimized code's DeoptimizationData,
 * baseline code's BytecodeArray): out[] is @pc (its native name; JIT
 * code that is no Code of a function stays unnamed, v8_leaf_unnamed),
 * then that frame at the return address, with its line. Returns false (nothing written) when
 * any of it does not check out: the caller merges as before.
 */
static bool leaf_in_callee(struct v8 *v, struct v8proc *p, const struct v8_reader *r,
			   uint64_t pc, const uint64_t *frames, uint32_t nframes,
			   uint64_t *out, uint32_t cap, struct leaf_done *d)
{
	uint64_t tag = rt_frame_gens_tag(&v->frames), ra = frames[0] & PROFD_V8_PC_MASK, wc[4];
	struct v8_code_frame fr[V8_INLINE_MAX];
	uint32_t ids[V8_INLINE_MAX], nid;
	enum v8_pc_kind kind = v8_classify(p, pc);
	int inline_err;

	*d = (struct leaf_done){ 0 };
	if (nframes < 3 || !(frames[2] & PROFD_V8_F_LEAF) ||
	    (frames[2] & PROFD_V8_PC_MASK) != pc || cap < 2 ||
	    (kind != V8_PC_OTHER && kind != V8_PC_JIT) ||
	    !return_address(p, r, ra) || v8_classify(p, ra - 1) != V8_PC_JIT ||
	    v8_code_frames(r, p->code_cache, ra, false, frames[3], fr, V8_INLINE_MAX,
			   &inline_err) < 1)
		return false;
	memcpy(wc, &frames[2], sizeof(wc));
	wc[0] = ra;	/* the caller's frame at its return address, no offset slot read */
	if (!(nid = frame_ids(v, p, r, wc, V8_PC_JIT, 0, false, ids)))
		return false;
	counter_inc(&counter_v8_callee_callers_restored);
	if (kind == V8_PC_JIT)
		counter_inc(&counter_v8_leaf_unnamed);	/* a stub's JIT code: stays unnamed */
	out[d->n++] = pc;
	for (uint32_t j = 0; j < nid && d->n < cap; j++)
		out[d->n++] = tag | ids[j];
	d->used_entry = true;
	return true;
}

static uint32_t merge(struct v8 *v, struct v8proc *p, const uint64_t *user,
		      uint32_t nuser, const uint64_t *frames, uint32_t nframes,
		      uint64_t *out, uint32_t cap)
{
	struct v8_reader r = { .rr = v->reader, .pid = p->pid, .l = &p->bin.l };
	uint64_t tag = rt_frame_gens_tag(&v->frames);
	uint32_t next = 0, copied = 0, n = 0;
	uint64_t spw = frames[0], live = frames[1];
	uint32_t ids[V8_INLINE_MAX], k0 = 1;
	struct leaf_done d;

	if (nuser && leaf_optimized(v, p, &r, user[0] & ~PROFD_IP_EXACT, frames, nframes, out,
				    cap, &d)) {
		if (d.cut)
			return d.n;
		n = d.n;
		copied = next = 1;
		k0 = d.used_entry ? 3 : 1;
	} else if (nuser && leaf_in_callee(v, p, &r, user[0] & ~PROFD_IP_EXACT, frames, nframes,
					   out, cap, &d)) {
		out[0] = user[0];	/* the leaf's native IP, its flags kept */
		n = d.n;
		copied = next = 1;
		k0 = 3;
	} else if (nuser && (nframes < 3 || !(frames[2] & PROFD_V8_F_LEAF)) &&
		   v8_classify(p, user[0] & ~PROFD_IP_EXACT) == V8_PC_JIT) {
		counter_inc(&counter_v8_leaf_unnamed);
	}
	for (uint32_t k = k0; k + 1 < nframes; k += 2) {
		const uint64_t *w = &frames[2 * k];
		uint64_t pc = w[0] & PROFD_V8_PC_MASK;
		bool leaf = w[0] & PROFD_V8_F_LEAF, exact;
		enum v8_pc_kind kind;
		uint32_t i, nid;

		if (leaf)
			i = nuser && (user[0] & ~PROFD_IP_EXACT) == pc ? 0 : nuser;
		else
			for (i = next > 1 ? next : 1; i < nuser && (user[i] & ~PROFD_IP_EXACT) != pc; i++)
				;
		if (i >= nuser) {
			counter_inc(&counter_v8_frame_unmatched);
			continue;
		}
		next = i + 1;
		exact = leaf || (user[i] & PROFD_IP_EXACT);
		kind = v8_classify(p, exact ? pc : pc - 1);
		if (kind == V8_PC_OTHER) {
			counter_inc(&counter_v8_frame_native_code);
			continue;
		}
		if (leaf && !leaf_verified(p, kind, spw)) {
			counter_inc(&counter_v8_leaf_unverified);
			continue;
		}
		nid = frame_ids(v, p, &r, w, kind, live, exact, ids);
		if (!nid)
			continue;
		/* the native IPs before it, then its frames in its place */
		n = copy_native(p, user, copied, i, out, n, cap);
		for (uint32_t j = 0; j < nid && n < cap; j++)
			out[n++] = tag | ids[j];
		copied = i + 1;
	}
	return copy_native(p, user, copied, nuser, out, n, cap);
}

uint32_t v8_merge_stack(struct v8 *v, pid_t pid, uint32_t flags,
			const uint64_t *user, uint32_t nuser,
			const uint64_t *frames, uint32_t nframes,
			uint64_t *out, uint32_t cap)
{
	struct v8proc *p;
	uint32_t n;

	if (nuser > PROFD_MAX_USER_FRAMES)
		nuser = PROFD_MAX_USER_FRAMES;
	if (nframes > PROFD_MAX_INTERP_FRAMES)
		nframes = PROFD_MAX_INTERP_FRAMES;
	pthread_mutex_lock(&v->lock);
	p = *v8_proc_slot(v, pid);
	if (p && (flags & PROFD_SAMPLE_INTERP) && nframes >= 1) {
		n = merge(v, p, user, nuser, frames, nframes, out, cap);
	} else {
		n = nuser < cap ? nuser : cap;
		memcpy(out, user, n * sizeof(*out));
	}
	pthread_mutex_unlock(&v->lock);
	return n;
}

int v8_frame(struct v8 *v, uint64_t token, struct rt_frame *out)
{
	return rt_frame_gens_get(&v->frames, token, out);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void v8_new_interval(struct v8 *v)
{
	if (rt_frame_gens_new_interval(&v->frames))
		counter_inc(&counter_v8_frame_table_rotations);
	pthread_mutex_lock(&v->lock);
	if (v->ndead) {
		qsort(v->dead_gens, v->ndead, sizeof(v->dead_gens[0]), cmp_u64);
		addr_cache_forget(v->names, v->dead_gens, v->ndead);
		v->ndead = 0;
	}
	pthread_mutex_unlock(&v->lock);
}

void v8_cache_stats(struct v8 *v, uint64_t *bytes, uint64_t *objects, uint64_t *evictions)
{
	struct addr_cache_counts c;

	pthread_mutex_lock(&v->lock);
	addr_cache_counts(v->names, &c);
	pthread_mutex_unlock(&v->lock);
	*bytes = c.bytes + rt_frame_gens_bytes(&v->frames);
	*objects = c.entries;
	*evictions = c.evictions;
}
