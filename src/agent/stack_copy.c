// SPDX-License-Identifier: GPL-2.0
/*
 * stack_copy.c - samples that carry a copy of their user stack, on the
 * reader thread (see agent_internal.h).
 *
 * Owns: the queue of held samples (a FIFO of record copies, bounded in
 * bytes) and the --check-unwinder comparison. A sample taken before its
 * process's unwind tables were in BPF (PROFD_SAMPLE_UNWIND_MISSING)
 * carries its registers and user stack; it waits here while the maps
 * read its arrival asked for builds the tables, then is walked in user
 * space with the same rows and rules (src/unwind/walk.c) and goes down
 * the one record path (agent_handle_sample()) as if BPF had walked it.
 * One that cannot be walked in time keeps the frame-pointer walk BPF
 * made (whose callers user space checks), counted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_internal.h"
#include "counters/counters.h"
#include "unwind/walk.h"

COUNTER_DEFINE(stack_copy_unwalked, COUNTER_PARTIAL,
	       "stack copies not walked (tables not loaded in time, process "
	       "exec'd, queue full): the frame-pointer walk kept");
COUNTER_DEFINE(stack_copy_bytes, COUNTER_STAT,
	       "bytes of user stack the samples' copies carried (ringbuf cost)");
COUNTER_DEFINE(unwinder_check_match, COUNTER_STAT,
	       "--check-unwinder: stacks the user-space walk of the copy agreed on");
COUNTER_DEFINE(unwinder_check_mismatch, COUNTER_PARTIAL,
	       "--check-unwinder: stacks the user-space walk of the copy disagreed on");

/*
 * How long a sample waits for its tables (a maps read, a table build):
 * less than an exited process's grace (EXIT_GRACE_NS, interval.c), so
 * its entry and snapshot are still there.
 */
#define HOLD_MAX_NS	(400ULL * 1000 * 1000)
/*
 * Most bytes of held records (the rest are walked or delivered at once):
 * part of --memory-limit's fixed base. A new process's first samples
 * carry a few KiB each (a main thread's copy ends at its argv).
 */
#define HOLD_MAX_BYTES	(4u << 20)

struct held_sample {
	struct held_sample *next;
	uint64_t arrived_ns;
	uint64_t ktime_ns;	/* the sample's */
	size_t size;
	uint64_t rec[];		/* the record: struct profd_sample, ips, copy */
};

int agent_stack_copies_init(struct agent *ag)
{
	int shards_fd, procs_fd, exec_fd;

	if (!ag->unwind || !ag->cfg->stack_copy_bytes)
		return 0;
	tracer_unwind_maps(ag->tracer, &shards_fd, &procs_fd, &exec_fd);
	ag->walker = unwind_walker_new(procs_fd, shards_fd, exec_fd,
				       ag->cfg->stack_copy_bytes);
	/* a record: header, kernel and user IPs, runtime frames */
	ag->walk_ips = calloc(sizeof(struct profd_sample) / 8 + PROFD_MAX_RECORD_SLOTS + 1,
			      sizeof(uint64_t));
	return ag->walker && ag->walk_ips ? 0 : -ENOMEM;
}

void agent_stack_copies_free(struct agent *ag)
{
	struct held_sample *h, *next;

	for (h = ag->held_head; h; h = next) {
		next = h->next;
		free(h);
	}
	ag->held_head = ag->held_tail = NULL;
	ag->held_bytes = 0;
	unwind_walker_free(ag->walker);
	ag->walker = NULL;
	free(ag->walk_ips);
	ag->walk_ips = NULL;
}

/* The copy's registers and bytes in record @s (checked by the caller). */
static const struct profd_stack_copy *copy_of(const struct profd_sample *s)
{
	const uint64_t *ips = (const uint64_t *)(s + 1);

	return (const void *)(ips + s->kernel_len + s->user_len + 2 * (size_t)s->interp_len);
}

/*
 * Walk @s's copy; on success build the record with the walk's user frames
 * in ag->walk_ips (header, kernel IPs, user IPs, runtime frames) and
 * return it, else NULL with *@st saying why. @count: the walk's stack is
 * the one kept (its cuts are counted).
 */
static const struct profd_sample *walk_record(struct agent *ag,
					      const struct profd_sample *s,
					      enum unwind_walk_status *st, bool count)
{
	const struct profd_stack_copy *c = copy_of(s);
	const uint64_t *ips = (const uint64_t *)(s + 1);
	struct profd_sample *out = (struct profd_sample *)ag->walk_ips;
	uint64_t *oips = (uint64_t *)(out + 1);
	uint32_t max = ag->cfg->max_stack_depth, n, flags;

	if (max > PROFD_MAX_IPS - (uint32_t)s->kernel_len)
		max = PROFD_MAX_IPS - (uint32_t)s->kernel_len;
	*st = unwind_walker_walk(ag->walker, s, c, (const uint8_t *)(c + 1),
				 oips + s->kernel_len, max, &n, &flags, count);
	if (*st != UNWIND_WALK_OK)
		return NULL;
	*out = *s;
	out->user_len = n;
	out->stack_len = 0;
	out->flags = (s->flags & ~(PROFD_SAMPLE_USER_TRUNCATED | PROFD_SAMPLE_USER_ERROR |
				   PROFD_SAMPLE_USER_COMPLETE | PROFD_SAMPLE_UNWIND_MISSING |
				   PROFD_SAMPLE_DWARF)) | flags;
	memcpy(oips, ips, s->kernel_len * sizeof(*ips));
	memcpy(oips + s->kernel_len + n, ips + s->kernel_len + s->user_len,
	       2 * (size_t)s->interp_len * sizeof(*ips));
	return out;
}

/* Send held @s down the record path: as walked (@w), or as BPF walked it. */
static void deliver(struct agent *ag, const struct profd_sample *s,
		    const struct profd_sample *w, uint64_t now)
{
	struct profd_sample hdr;

	if (w) {
		agent_handle_sample(ag, w, (const uint64_t *)(w + 1), now);
		return;
	}
	counter_inc(&counter_stack_copy_unwalked);
	hdr = *s;
	hdr.flags &= ~PROFD_SAMPLE_UNWIND_MISSING;	/* asked for already */
	hdr.stack_len = 0;
	agent_handle_sample(ag, &hdr, (const uint64_t *)(s + 1), now);
}

/* --check-unwinder: walk @s's copy and compare with what BPF walked. */
static void check(struct agent *ag, const struct profd_sample *s)
{
	enum unwind_walk_status st;
	const struct profd_sample *w = walk_record(ag, s, &st, false);
	const uint64_t *a = (const uint64_t *)(s + 1) + s->kernel_len;
	const uint64_t *b = w ? (const uint64_t *)(w + 1) + s->kernel_len : NULL;
	uint32_t n;
	bool same;

	if (!w)
		return;
	/* a copy that ended early gives a prefix of BPF's walk */
	n = w->user_len < s->user_len ? w->user_len : s->user_len;
	same = (w->user_len == s->user_len ||
		(w->user_len < s->user_len && (w->flags & PROFD_SAMPLE_USER_TRUNCATED))) &&
	       !memcmp(a, b, n * sizeof(*a));
	if (same) {
		counter_inc(&counter_unwinder_check_match);
		return;
	}
	counter_inc(&counter_unwinder_check_mismatch);
	if (ag->cfg->verbose && counter_get(&counter_unwinder_check_mismatch) <= 20) {
		fprintf(stderr, "profd: check-unwinder: pid %u: BPF walked %u frames "
			"(flags %#x), the copy %u (flags %#x, %u bytes):",
			s->pid, s->user_len, s->flags, w->user_len, w->flags, s->stack_len);
		for (uint32_t i = 0; i < s->user_len || i < w->user_len; i++)
			fprintf(stderr, " %llx/%llx",
				i < s->user_len ? (unsigned long long)a[i] : 0ULL,
				i < w->user_len ? (unsigned long long)b[i] : 0ULL);
		fputc('\n', stderr);
	}
}

bool agent_stack_copy_take(struct agent *ag, const struct profd_sample *s, size_t size,
			   uint64_t now)
{
	struct held_sample *h;
	size_t need = sizeof(*s) + ((size_t)s->kernel_len + s->user_len +
				    2 * (size_t)s->interp_len) * 8;

	if (!s->stack_len)
		return false;
	counter_add(&counter_stack_copy_bytes, s->stack_len + sizeof(struct profd_stack_copy));
	if (size < need + sizeof(struct profd_stack_copy) + s->stack_len ||
	    s->stack_len > PROFD_STACK_COPY_MAX || !ag->walker) {
		if (ag->walker)
			counter_inc(&counter_stack_copy_unwalked);
		return false;	/* handled as BPF walked it */
	}
	if (!(s->flags & PROFD_SAMPLE_UNWIND_MISSING)) {
		check(ag, s);	/* --check-unwinder */
		return false;
	}
	/* open its files, read its maps (the tables' build starts) */
	agent_sample_process(ag, s, (const uint64_t *)(s + 1), now);
	h = ag->held_bytes + size <= HOLD_MAX_BYTES ? malloc(sizeof(*h) + size) : NULL;
	if (!h) {
		enum unwind_walk_status st;

		deliver(ag, s, walk_record(ag, s, &st, true), now);
		return true;
	}
	h->next = NULL;
	h->arrived_ns = now;
	h->ktime_ns = s->ktime_ns;
	h->size = size;
	memcpy(h->rec, s, size);
	if (ag->held_tail)
		ag->held_tail->next = h;
	else
		ag->held_head = h;
	ag->held_tail = h;
	ag->held_bytes += size;
	return true;
}

void agent_stack_copies_poll(struct agent *ag, uint64_t now, bool all)
{
	struct held_sample **pp = &ag->held_head, *h;

	ag->held_tail = NULL;
	while ((h = *pp)) {
		const struct profd_sample *s = (const void *)h->rec;
		enum unwind_walk_status st;
		const struct profd_sample *w = walk_record(ag, s, &st, true);

		if (!w && st == UNWIND_WALK_NOT_READY && !all &&
		    now - h->arrived_ns < HOLD_MAX_NS) {
			ag->held_tail = h;	/* the tables are still coming */
			pp = &h->next;
			continue;
		}
		deliver(ag, s, w, now);
		*pp = h->next;
		ag->held_bytes -= h->size;
		free(h);
	}
}

bool agent_stack_copies_pending_before(const struct agent *ag, uint64_t ktime_ns)
{
	for (const struct held_sample *h = ag->held_head; h; h = h->next)
		if (h->ktime_ns < ktime_ns)
			return true;
	return false;
}
