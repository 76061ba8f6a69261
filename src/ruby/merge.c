// SPDX-License-Identifier: GPL-2.0
/*
 * merge.c - Ruby frames named and spliced into native stacks (see
 * ruby.h: ruby_merge_stack(), ruby_frame(), ruby_new_interval()).
 *
 * Owns: CRuby's kind of frame table (src/runtime/frames.h: its fixed
 * frames, ruby_frames_full), its two generations and the merge. A frame
 * is named through src/ruby/iseq.h from the words the walker wrote
 * (bpf/unwind_ruby.h): a method frame from its method entry and pc,
 * another Ruby frame from its iseq and pc, a C frame from its method
 * entry. A frame that cannot be named, or whose pc does not lie in
 * the iseq it names, is "[ruby: unknown frame]" (counted): never a
 * guessed name. A forked child's frames that can no longer be read (it
 * exited) are named from its parent.
 *
 * Pairing: each group of Ruby frames (leaf first, up to one with
 * PROFD_RB_GROUP_END: the frames one rb_vm_exec() call runs) replaces
 * that call's native frame, paired from the root; when either walk was
 * cut short, from the leaf; groups left over go above (innermost) or
 * below (outermost) the native frames, as python_merge_stack() does.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bpf/profd.h"
#include "bpf/unwind_ruby.h"
#include "counters/counters.h"
#include "ruby/ruby_internal.h"

#define MAX_GROUPS			(PROFD_MAX_RUBY_FRAMES + 2)

COUNTER_DEFINE(ruby_frame_unnamed, COUNTER_PARTIAL,
	       "samples with a Ruby frame that could not be named or verified");
COUNTER_DEFINE(ruby_frame_table_rotations, COUNTER_STAT,
	       "Ruby frame tables started afresh");

COUNTER_DEFINE(ruby_frames_full, COUNTER_PARTIAL,
	       "Ruby frames not named: the frame table was full");

static const char *const fixed_names[RB_FIXED_FRAMES + 1] = {
	[RB_FRAME_UNREADABLE] = "[ruby: unreadable frame]",
	[RB_FRAME_TRUNCATED] = "[ruby: truncated]",
	[RB_FRAME_UNKNOWN] = "[ruby: unknown frame]",
	[RB_FRAME_TABLE_FULL] = "[ruby: frame table full]",
};

/* CRuby's frame tables: its tokens, fixed frames and counter. */
static const struct rt_frames_kind rb_frame_kind = {
	.tag = RB_IP_FRAME,
	.fixed = fixed_names,
	.nfixed = RB_FIXED_FRAMES,
	.full_id = RB_FRAME_TABLE_FULL,
	.full = &counter_ruby_frames_full,
};

int rb_frames_init(struct ruby *rb, uint64_t max_bytes)
{
	return rt_frame_gens_init(&rb->frames, &rb_frame_kind, max_bytes);
}

uint64_t rb_frames_bytes(struct ruby *rb, uint64_t *frames)
{
	uint64_t full;

	rt_frame_gens_stats(&rb->frames, frames, &full);
	return rt_frame_gens_bytes(&rb->frames);
}

/* Name raw frame (@w0, @w1) of process @pid generation @gen. 0 or -errno. */
static int name_in(struct ruby *rb, const struct rbproc *p, pid_t pid, uint64_t gen,
		   uint64_t w0, uint64_t w1, uint64_t now, size_t *budget,
		   struct rb_frame_name *nm)
{
	uint64_t addr = w0 & PROFD_RB_ADDR_MASK;

	if (w0 & PROFD_RB_CFUNC)
		return rb_cme_name(rb->names, pid, gen, p->off, &p->addrs, addr, w1, now,
				   budget, nm);
	if (w0 & PROFD_RB_METHOD)
		return rb_method_frame_name(rb->names, pid, gen, p->off, &p->addrs, addr,
					    w1, now, budget, nm);
	return rb_iseq_name(rb->names, pid, gen, p->off, &p->addrs, addr, w1, now, budget, nm);
}

/* The interned id of raw frame (@w0, @w1); RB_FRAME_UNKNOWN's when it has no name. */
static uint32_t frame_id(struct ruby *rb, const struct rbproc *p, uint64_t w0,
			 uint64_t w1, uint64_t now, size_t *budget, bool *unnamed)
{
	struct rb_frame_name nm;
	int err;

	err = name_in(rb, p, p->pid, p->gen, w0, w1, now, budget, &nm);
	if (err == -ESRCH && p->parent)	/* an exited child: its parent's copy */
		err = name_in(rb, p, p->parent, p->parent_gen, w0, w1, now, budget, &nm);
	if (err) {
		if (rb->verbose > 2)
			fprintf(stderr, "profd: pid %d: ruby frame %#llx/%#llx: %s\n",
				(int)p->pid, (unsigned long long)w0,
				(unsigned long long)w1, strerror(-err));
		*unnamed = true;
		return RB_FRAME_UNKNOWN;
	}
	return rt_frame_gens_intern(&rb->frames, nm.function, nm.file ? nm.file : "",
				    nm.line > 0 ? nm.line : 0, nm.first_line);
}

static bool in_exec(const struct rbproc *p, uint64_t pc)
{
	return pc >= p->exec_start && pc < p->exec_end;
}

static uint32_t copy_native(const uint64_t *user, uint32_t nuser, uint64_t *out,
			    uint32_t cap)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < nuser && n < cap; i++)
		out[n++] = user[i];
	return n;
}

static uint32_t merge_stack(struct ruby *rb, const struct rbproc *p, uint32_t flags,
			    const uint64_t *user, uint32_t nuser,
			    const uint64_t *frames, uint32_t nframes,
			    uint64_t *out, uint32_t cap, uint64_t now)
{
	uint32_t ids[PROFD_MAX_RUBY_FRAMES + 1];
	uint32_t gstart[MAX_GROUPS], glen[MAX_GROUPS], ng = 0, nids = 0;
	uint32_t execs[PROFD_MAX_USER_FRAMES], nex = 0;
	int32_t pair[PROFD_MAX_USER_FRAMES];	/* native index -> group, -1 */
	uint64_t tag = rt_frame_gens_tag(&rb->frames);
	uint32_t n = 0, k, first_pair, last_pair;
	size_t budget = RB_READ_BUDGET;
	bool from_root, open = false, unnamed = false;

	/* Name the frames and cut them into groups (one per rb_vm_exec call). */
	for (uint32_t i = 0; i < nframes; i++) {
		uint64_t w0 = frames[2 * i];

		if (!open) {
			gstart[ng] = nids;
			glen[ng] = 0;
			open = true;
		}
		ids[nids++] = frame_id(rb, p, w0, frames[2 * i + 1], now, &budget, &unnamed);
		glen[ng]++;
		if (w0 & PROFD_RB_GROUP_END) {
			ng++;
			open = false;
		}
	}
	if (flags & (PROFD_SAMPLE_INTERP_ERROR | PROFD_SAMPLE_INTERP_TRUNCATED)) {
		/* the chain's root end is missing: say so where it would be */
		if (!open) {
			gstart[ng] = nids;
			glen[ng] = 0;
			open = true;
		}
		ids[nids++] = (flags & PROFD_SAMPLE_INTERP_ERROR) ? RB_FRAME_UNREADABLE :
								    RB_FRAME_TRUNCATED;
		glen[ng]++;
	}
	if (open)
		ng++;
	if (unnamed)
		counter_inc(&counter_ruby_frame_unnamed);

	/* Pair groups with the native rb_vm_exec frames. */
	for (uint32_t i = 0; i < nuser; i++) {
		uint64_t ip = user[i] & ~PROFD_IP_EXACT;
		bool exact = !i || (user[i] & PROFD_IP_EXACT);

		pair[i] = -1;
		if (in_exec(p, exact ? ip : ip - 1))
			execs[nex++] = i;
	}
	from_root = nex && (flags & PROFD_SAMPLE_USER_COMPLETE) &&
		    !(flags & (PROFD_SAMPLE_USER_TRUNCATED | PROFD_SAMPLE_USER_ERROR |
			       PROFD_SAMPLE_INTERP_ERROR | PROFD_SAMPLE_INTERP_TRUNCATED));
	k = nex < ng ? nex : ng;
	for (uint32_t j = 0; j < k; j++) {
		if (from_root)
			pair[execs[nex - 1 - j]] = (int32_t)(ng - 1 - j);
		else
			pair[execs[j]] = (int32_t)j;
	}
	/* Groups left unpaired: innermost ones (pairing from the root) go
	 * on top of the stack, outermost ones (from the leaf) below it. */
	first_pair = from_root ? ng - k : 0;
	last_pair = from_root ? ng : k;
	for (uint32_t g = 0; g < first_pair; g++)
		for (uint32_t j = 0; j < glen[g] && n < cap; j++)
			out[n++] = tag | ids[gstart[g] + j];
	for (uint32_t i = 0; i < nuser; i++) {
		if (pair[i] < 0) {
			if (n < cap)
				out[n++] = user[i] | (i == 0 ? PROFD_IP_EXACT : 0);
			continue;
		}
		for (uint32_t j = 0; j < glen[pair[i]] && n < cap; j++)
			out[n++] = tag | ids[gstart[pair[i]] + j];
	}
	for (uint32_t g = last_pair; g < ng; g++)
		for (uint32_t j = 0; j < glen[g] && n < cap; j++)
			out[n++] = tag | ids[gstart[g] + j];
	return n;
}

uint32_t ruby_merge_stack(struct ruby *rb, pid_t pid, uint32_t flags,
			  const uint64_t *user, uint32_t nuser,
			  const uint64_t *frames, uint32_t nframes,
			  uint64_t *out, uint32_t cap, uint64_t now_ns)
{
	const struct rbproc *p;
	uint32_t n;

	if (nframes > PROFD_MAX_RUBY_FRAMES)
		nframes = PROFD_MAX_RUBY_FRAMES;
	if (nuser > PROFD_MAX_USER_FRAMES)
		nuser = PROFD_MAX_USER_FRAMES;
	pthread_mutex_lock(&rb->lock);
	p = *rb_proc_slot(rb, pid);
	if (!p || p->state != RBP_ATTACHED || !(flags & PROFD_SAMPLE_INTERP))
		n = copy_native(user, nuser, out, cap);
	else
		n = merge_stack(rb, p, flags, user, nuser, frames, nframes, out, cap, now_ns);
	pthread_mutex_unlock(&rb->lock);
	return n;
}

int ruby_frame(struct ruby *rb, uint64_t token, struct rt_frame *out)
{
	return rt_frame_gens_get(&rb->frames, token, out);
}

void ruby_new_interval(struct ruby *rb)
{
	if (rt_frame_gens_new_interval(&rb->frames))
		counter_inc(&counter_ruby_frame_table_rotations);
}
