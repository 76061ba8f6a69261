// SPDX-License-Identifier: GPL-2.0
/*
 * interval.c - which interval a sample belongs to, the interval swap, and
 * when exited processes leave the process table (see agent_internal.h).
 *
 * Intervals are cut on CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns(),
 * so a sample's own timestamp decides where it goes, not the moment the
 * reader gets to it. A flush opens the next interval's table with its
 * boundary first, lets the reader take in the ringbuf (bounded wait), then
 * swaps: samples taken before the boundary but read after the swap are
 * late (counted, dropped), samples taken after it but read before the swap
 * go to the next table.
 *
 * Exited processes: the exit event marks the entry; samples taken while the
 * task was exiting (PROFD_SAMPLE_EXITING) may follow the event and keep
 * the entry's labels. EXIT_GRACE_NS after the event the entry's BPF map
 * entries (unwind_procs, runtime_procs) go; the entry itself goes at the
 * first reap after the interval holding its last samples was swapped out.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/agent_internal.h"
#include "util/clock.h"

COUNTER_DEFINE(late, COUNTER_LOST,
	       "samples read after their interval was swapped out");

/* Samples of an exiting task come within milliseconds of its exit event. */
#define EXIT_GRACE_NS (500ULL * 1000 * 1000)

void agent_reader_sync(struct agent *ag)
{
	agent_reader_sync_for(ag, READER_SYNC_MS);
}

void agent_reader_sync_for(struct agent *ag, unsigned int ms_max)
{
	unsigned int want = __atomic_add_fetch(&ag->reader_sync_req, 1, __ATOMIC_ACQ_REL);
	uint64_t deadline = clock_mono_ns() + ms_max * 1000000ULL;
	const struct timespec ms = { .tv_nsec = 1000000 };

	while ((int)(__atomic_load_n(&ag->reader_sync_done, __ATOMIC_ACQUIRE) - want) < 0 &&
	       !__atomic_load_n(&ag->reader_exited, __ATOMIC_ACQUIRE) &&
	       clock_mono_ns() < deadline)
		nanosleep(&ms, NULL);
}

struct aggregate *agent_sample_table(struct agent *ag, uint64_t ktime)
{
	if (ktime < ag->cur_start_mono) {
		counter_inc(&counter_late);
		return NULL;
	}
	if (ag->next && ktime >= ag->next_start_mono)
		return ag->next;
	return ag->cur;
}

uint64_t agent_sample_interval(struct agent *ag, uint64_t ktime)
{
	uint64_t interval = __atomic_load_n(&ag->interval, __ATOMIC_ACQUIRE);
	uint64_t next = __atomic_load_n(&ag->next_start_mono, __ATOMIC_ACQUIRE);

	/* a swap meanwhile bumps ag->interval: the caller checks it again */
	return interval + (next && ktime >= next);
}

/* How long a flush waits for the reader: the interval, 1 to 10 s. */
static unsigned int flush_sync_ms(const struct agent *ag)
{
	unsigned int s = ag->cfg->interval_s;

	return (s < 1 ? 1 : s > 10 ? 10 : s) * 1000;
}

struct aggregate *agent_interval_swap(struct agent *ag, uint64_t *end_real,
				     void (*at_boundary)(struct agent *, uint64_t))
{
	struct aggregate *a, *fresh = aggregate_new(MAX_STACKS_PER_INTERVAL, 0);
	uint64_t boundary;

	if (!fresh)
		return NULL;
	pthread_mutex_lock(&ag->agg_lock);
	boundary = clock_mono_ns();
	*end_real = clock_real_ns();
	fresh->start_ns = *end_real;
	ag->next = fresh;
	__atomic_store_n(&ag->next_start_mono, boundary, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ag->agg_lock);
	if (at_boundary)
		at_boundary(ag, boundary);

	/*
	 * What was sampled before the boundary is in the ringbuf: take it in.
	 * A reader busy building tables may take seconds; the interval's end
	 * is the boundary, not this write, so waiting only delays the file.
	 */
	agent_reader_sync_for(ag, flush_sync_ms(ag));

	pthread_mutex_lock(&ag->agg_lock);
	a = ag->cur;
	/* threads still blocked: their time up to the boundary is this interval's */
	agent_offcpu_boundary(ag, a, boundary);
	ag->cur = ag->next;
	ag->next = NULL;
	__atomic_store_n(&ag->next_start_mono, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&ag->cur_start_mono, boundary, __ATOMIC_RELEASE);
	__atomic_add_fetch(&ag->interval, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ag->agg_lock);
	return a;
}

void agent_exit_seen(struct agent *ag, pid_t pid, uint64_t now)
{
	if (!ag->cfg->exec_argv)
		return;		/* only `profd exec` follows children */
	if (ag->nexited == ag->exited_cap) {
		size_t cap = ag->exited_cap ? 2 * ag->exited_cap : 64;
		struct exited_pid *v = realloc(ag->exited, cap * sizeof(*v));

		if (!v) {
			tracer_pid_forget(ag->tracer, pid);	/* at once, then */
			return;
		}
		ag->exited = v;
		ag->exited_cap = cap;
	}
	ag->exited[ag->nexited++] = (struct exited_pid){ .pid = pid, .ns = now };
}

void agent_exited_free(struct agent *ag)
{
	free(ag->exited);
	ag->exited = NULL;
	ag->nexited = ag->exited_cap = 0;
}

void agent_reap(struct agent *ag, uint64_t now)
{
	uint64_t release = now > EXIT_GRACE_NS ? now - EXIT_GRACE_NS : 0;
	uint64_t swapped = __atomic_load_n(&ag->cur_start_mono, __ATOMIC_ACQUIRE);
	size_t i = 0;

	for (; i < ag->nexited && ag->exited[i].ns < release; i++)
		tracer_pid_forget(ag->tracer, ag->exited[i].pid);
	if (i) {
		memmove(ag->exited, ag->exited + i,
			(ag->nexited - i) * sizeof(*ag->exited));
		ag->nexited -= i;
	}

	process_table_reap(ag->procs, now, IDLE_PROCESS_NS, release,
			   swapped < release ? swapped : release);
}
