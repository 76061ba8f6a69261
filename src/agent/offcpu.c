// SPDX-License-Identifier: GPL-2.0
/*
 * offcpu.c - off-CPU periods: a blocked thread's stack joined with the
 * time it stayed blocked (see agent_internal.h, bpf/offcpu.bpf.h).
 *
 * Owns: the stacks of recorded switch-outs waiting for their end
 * (struct offcpu, by thread id), the join with each struct
 * profd_offcpu_end, --off-cpu-min-block, and the split of a period over
 * the intervals it spans: a thread still blocked when an interval ends
 * counts in it up to the boundary (agent_offcpu_boundary(), called at the
 * swap), the rest where it ends; one whose process exits without an end
 * record ends at the exit. Each period adds its time to the interval
 * tables as AGG_OFF_CPU stacks (one switch, in the first interval it
 * counts in). Every loss is a counter.
 *
 * Threads: the reader adds and ends periods, the main thread's swap
 * accounts the blocked ones; both under agg_lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_internal.h"
#include "aggregate/aggregate.h"
#include "bpf/profd.h"
#include "symbol/kallsyms.h"

COUNTER_EXTERN(aggregation_full);

COUNTER_DEFINE_BPF(off_cpu_recorded, COUNTER_STAT, PROFD_CNT_OFFCPU_RECORDED,
		   "blocking switch-outs recorded (--off-cpu)");
COUNTER_DEFINE_BPF(off_cpu_pending_failed, COUNTER_LOST, PROFD_CNT_OFFCPU_PENDING_FAILED,
		   "blocking switch-outs not recorded: their pending entry could not "
		   "be made (offcpu_tid_hash full; task storage: no memory, or busy)");
COUNTER_DEFINE_BPF(off_cpu_end_lost, COUNTER_LOST, PROFD_CNT_OFFCPU_END_LOST,
		   "off-CPU period ends dropped: ringbuf full (their stacks end at "
		   "the thread's next recorded switch-out, uncounted)");
COUNTER_DEFINE_BPF(off_cpu_in_unseen, COUNTER_PARTIAL, PROFD_CNT_OFFCPU_IN_UNSEEN,
		   "off-CPU periods whose switch-in no sched_switch showed (the kernel "
		   "left it out): ended at the thread's next switch-out less the CPU "
		   "time it ran since");
COUNTER_DEFINE(off_cpu_no_stack, COUNTER_LOST,
	       "off-CPU period ends whose stack never came (capture dropped)");
COUNTER_DEFINE(off_cpu_no_end, COUNTER_LOST,
	       "off-CPU stacks whose end never came (replaced by the thread's next)");
COUNTER_DEFINE(off_cpu_table_full, COUNTER_LOST,
	       "off-CPU stacks dropped: too many threads blocked at once");
COUNTER_DEFINE(off_cpu_short, COUNTER_STAT,
	       "off-CPU periods shorter than --off-cpu-min-block: dropped");
COUNTER_DEFINE(off_cpu_exited, COUNTER_STAT,
	       "off-CPU periods ended by the thread's or its process's exit");

/* Threads waiting at once, and the bytes their stacks may hold. */
#define OFFCPU_MAX_PENDING	16384
#define OFFCPU_MAX_BYTES	(32ULL << 20)
#define OFFCPU_BUCKETS		4096	/* power of two */
/*
 * Ends read before their stack: a stack held for its process's unwind
 * tables (stack_copy.c: up to HOLD_MAX_NS, 400 ms) comes after its end.
 * Kept in a ring, found by tid through a hash, until the stack comes;
 * one overwritten unmatched counts as off_cpu_no_stack. The ring holds
 * what a new process's threads end in one hold at ~10k switch-outs a
 * second (256 were overwritten in the first interval of a process
 * blocking that often: its held stacks then came without their ends).
 */
#define OFFCPU_EARLY_ENDS	4096	/* power of two */
#define OFFCPU_EARLY_BUCKETS	512	/* power of two */
#define EARLY_NONE		UINT32_MAX

struct early_end {
	struct profd_offcpu_end e;	/* e.tid 0: free */
	uint32_t next;		/* the next in its bucket, or EARLY_NONE */
};

struct offcpu_period {
	struct offcpu_period *next;
	pid_t pid;
	pid_t tid;
	uint64_t out_ns;	/* switch-out, bpf_ktime_get_ns() */
	uint64_t from_ns;	/* counted up to here (out_ns, or a boundary) */
	bool counted;		/* its switch went into an interval already */
	char comm[PROCESS_COMM_LEN];
	char thread_name[PROCESS_COMM_LEN];
	struct proc_snapshot *snap;	/* ref held; NULL if unknown */
	uint32_t flags;
	uint32_t time_bin;
	uint16_t nkernel;
	uint16_t nuser;
	uint64_t ips[];
};

struct offcpu {
	uint64_t min_block_ns;
	uint64_t sched_start, sched_end;	/* __schedule's text; 0, 0: unknown */
	struct offcpu_period *buckets[OFFCPU_BUCKETS];
	uint64_t n;
	uint64_t bytes;
	struct early_end early[OFFCPU_EARLY_ENDS];
	uint32_t early_head[OFFCPU_EARLY_BUCKETS];	/* by tid; EARLY_NONE */
	uint32_t nearly;	/* in use */
	uint32_t early_next;	/* the slot written next */
};

struct offcpu *agent_offcpu_new(uint64_t min_block_ns, const struct kallsyms *ksyms)
{
	struct offcpu *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->min_block_ns = min_block_ns;
	for (size_t b = 0; b < OFFCPU_EARLY_BUCKETS; b++)
		o->early_head[b] = EARLY_NONE;
	if (kallsyms_range(ksyms, "__schedule", &o->sched_start, &o->sched_end))
		o->sched_start = o->sched_end = 0;
	return o;
}

static size_t period_size(const struct offcpu_period *p)
{
	return sizeof(*p) + ((size_t)p->nkernel + p->nuser) * sizeof(p->ips[0]);
}

static void period_free(struct offcpu *o, struct offcpu_period *p)
{
	o->n--;
	o->bytes -= period_size(p);
	proc_snapshot_put(p->snap);
	free(p);
}

void agent_offcpu_free(struct offcpu *o)
{
	if (!o)
		return;
	for (size_t b = 0; b < OFFCPU_BUCKETS; b++)
		while (o->buckets[b]) {
			struct offcpu_period *p = o->buckets[b];

			o->buckets[b] = p->next;
			period_free(o, p);
		}
	free(o);
}

static struct offcpu_period **slot(struct offcpu *o, pid_t tid)
{
	struct offcpu_period **pp = &o->buckets[(uint32_t)tid & (OFFCPU_BUCKETS - 1)];

	while (*pp && (*pp)->tid != tid)
		pp = &(*pp)->next;
	return pp;
}

/*
 * The kernel frames above __schedule are the tracepoint's and the BPF
 * program's own: the stack starts at __schedule (kept whole when it is
 * not there). Its range was found once, at agent_offcpu_new().
 */
static uint16_t sched_frames_above(const struct offcpu *o, const uint64_t *ips,
				   uint16_t nkernel)
{
	for (uint16_t i = 0; o->sched_end && i < nkernel && i < 16; i++) {
		uint64_t pc = i ? ips[i] - 1 : ips[i];	/* a return address: its call */

		if (pc >= o->sched_start && pc < o->sched_end)
			return i;
	}
	return 0;
}

/* Add [p->from_ns, @upto) of @p to @table (NULL: none; its switch once). */
static void add_time(struct offcpu_period *p, struct aggregate *table, uint64_t upto)
{
	if (upto <= p->from_ns)
		return;
	if (table && aggregate_add_value(table, AGG_OFF_CPU, p->pid, p->tid, p->comm,
					 p->thread_name, p->snap, p->flags, p->time_bin,
					 p->ips, p->nkernel, p->nuser, !p->counted,
					 upto - p->from_ns))
		counter_inc(&counter_aggregation_full);
	p->counted = true;
	p->from_ns = upto;
}

/*
 * Count @p up to @end_ns in the tables open now: the part before the
 * next interval's start in cur, the rest in next (during a flush).
 */
static void account(struct agent *ag, struct offcpu_period *p, uint64_t end_ns)
{
	if (ag->next && p->from_ns < ag->next_start_mono && end_ns > ag->next_start_mono)
		add_time(p, ag->cur, ag->next_start_mono);
	add_time(p, ag->next && p->from_ns >= ag->next_start_mono ? ag->next : ag->cur,
		 end_ns);
}

/* End @p at @end_ns: counted (or dropped as short) and freed. */
static void period_end(struct agent *ag, struct offcpu_period **pp, uint64_t end_ns)
{
	struct offcpu_period *p = *pp;

	if (!p->counted && (end_ns < p->out_ns ||
			    end_ns - p->out_ns < ag->offcpu->min_block_ns))
		counter_inc(&counter_off_cpu_short);
	else
		account(ag, p, end_ns);
	*pp = p->next;
	period_free(ag->offcpu, p);
}

static uint32_t *early_bucket(struct offcpu *o, uint32_t tid)
{
	return &o->early_head[tid & (OFFCPU_EARLY_BUCKETS - 1)];
}

/* Take slot @i (in use) out of its bucket. */
static void early_unlink(struct offcpu *o, uint32_t i)
{
	uint32_t *pi = early_bucket(o, o->early[i].e.tid);

	while (*pi != i && *pi != EARLY_NONE)
		pi = &o->early[*pi].next;
	if (*pi == i)
		*pi = o->early[i].next;
}

/* Keep @e, whose stack has not come (yet). */
static void early_end_keep(struct offcpu *o, const struct profd_offcpu_end *e)
{
	uint32_t i = o->early_next, *head;

	if (o->early[i].e.tid) {
		counter_inc(&counter_off_cpu_no_stack);	/* it never came */
		early_unlink(o, i);
	} else {
		o->nearly++;
	}
	o->early[i].e = *e;
	head = early_bucket(o, e->tid);
	o->early[i].next = *head;
	*head = i;
	o->early_next = (i + 1) & (OFFCPU_EARLY_ENDS - 1);
}

/* The slot of the kept end of @tid's period that began at @out_ns, or EARLY_NONE. */
static uint32_t early_end_find(struct offcpu *o, pid_t tid, uint64_t out_ns)
{
	uint32_t i = *early_bucket(o, (uint32_t)tid);

	while (i != EARLY_NONE && (o->early[i].e.tid != (uint32_t)tid ||
				   o->early[i].e.out_ns != out_ns))
		i = o->early[i].next;
	return i;
}

/* End the period *@pp as @e says. */
static void end_with(struct agent *ag, struct offcpu_period **pp,
		     const struct profd_offcpu_end *e)
{
	if (e->flags & PROFD_OFFCPU_EXITED)
		counter_inc(&counter_off_cpu_exited);
	period_end(ag, pp, e->in_ns);
}

void agent_offcpu_stack(struct agent *ag, const struct profd_sample *s, const char *comm,
			struct proc_snapshot *snap, uint32_t flags, uint32_t time_bin,
			const uint64_t *ips, uint16_t nuser)
{
	struct offcpu *o = ag->offcpu;
	uint16_t skip, nkernel;
	struct offcpu_period **pp, *p;
	uint32_t early;
	size_t size;

	if (!o)
		return;
	skip = sched_frames_above(o, ips, s->kernel_len);
	nkernel = s->kernel_len - skip;
	early = o->nearly ? early_end_find(o, s->tid, s->cookie) : EARLY_NONE;
	pp = slot(o, s->tid);
	if (*pp && early == EARLY_NONE) {
		struct offcpu_period *old = *pp;

		if (old->out_ns > s->cookie) {
			/* a stack held for its tables, older than the thread's
			 * pending one, and its end not seen: unknown period */
			counter_inc(&counter_off_cpu_no_end);
			return;
		}
		/* its end was lost: that stack's period is unknown */
		counter_inc(&counter_off_cpu_no_end);
		*pp = old->next;
		period_free(o, old);
	}
	size = sizeof(*p) + ((size_t)nkernel + nuser) * sizeof(*ips);
	if (o->n >= OFFCPU_MAX_PENDING || o->bytes + size > OFFCPU_MAX_BYTES ||
	    !(p = malloc(size))) {
		counter_inc(&counter_off_cpu_table_full);
		return;
	}
	memset(p, 0, sizeof(*p));
	p->pid = s->pid;
	p->tid = s->tid;
	p->out_ns = p->from_ns = s->cookie;
	strncpy(p->comm, comm, sizeof(p->comm) - 1);
	memcpy(p->thread_name, s->comm, PROFD_TASK_COMM_LEN < PROCESS_COMM_LEN ?
	       PROFD_TASK_COMM_LEN : PROCESS_COMM_LEN - 1);
	p->snap = proc_snapshot_get(snap);
	p->flags = flags;
	p->time_bin = time_bin;
	p->nkernel = nkernel;
	p->nuser = nuser;
	memcpy(p->ips, ips + skip, ((size_t)nkernel + nuser) * sizeof(*ips));
	pp = &o->buckets[(uint32_t)s->tid & (OFFCPU_BUCKETS - 1)];
	p->next = *pp;
	*pp = p;
	o->n++;
	o->bytes += size;
	if (early != EARLY_NONE) {
		/* its end came first (the stack waited for its tables) */
		end_with(ag, pp, &o->early[early].e);
		early_unlink(o, early);
		o->early[early].e.tid = 0;
		o->nearly--;
	}
}

void agent_offcpu_end(struct agent *ag, const struct profd_offcpu_end *e)
{
	struct offcpu_period **pp;

	if (!ag->offcpu || !e->tid)
		return;
	pthread_mutex_lock(&ag->agg_lock);
	pp = slot(ag->offcpu, e->tid);
	if (*pp && (*pp)->out_ns == e->out_ns)
		end_with(ag, pp, e);
	else
		early_end_keep(ag->offcpu, e);
	pthread_mutex_unlock(&ag->agg_lock);
}

void agent_offcpu_proc_exit(struct agent *ag, pid_t pid, uint64_t ktime_ns)
{
	struct offcpu *o = ag->offcpu;

	if (!o)
		return;
	pthread_mutex_lock(&ag->agg_lock);
	for (size_t b = 0; b < OFFCPU_BUCKETS; b++) {
		struct offcpu_period **pp = &o->buckets[b];

		while (*pp) {
			if ((*pp)->pid != pid || (*pp)->out_ns > ktime_ns) {
				pp = &(*pp)->next;
				continue;
			}
			counter_inc(&counter_off_cpu_exited);
			period_end(ag, pp, ktime_ns);
		}
	}
	pthread_mutex_unlock(&ag->agg_lock);
}

void agent_offcpu_boundary(struct agent *ag, struct aggregate *ending, uint64_t boundary)
{
	struct offcpu *o = ag->offcpu;

	if (!o)
		return;
	for (size_t b = 0; b < OFFCPU_BUCKETS; b++) {
		for (struct offcpu_period *p = o->buckets[b]; p; p = p->next) {
			/* a wait still short at the boundary may yet end short */
			if (p->out_ns >= boundary ||
			    (!p->counted && boundary - p->out_ns < o->min_block_ns))
				continue;
			add_time(p, ending, boundary);
		}
	}
}
