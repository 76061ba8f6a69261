/* SPDX-License-Identifier: GPL-2.0 */
/*
 * clock.h - CLOCK_MONOTONIC to Unix epoch ns.
 *
 * Owns: the offset CLOCK_REALTIME - CLOCK_MONOTONIC, measured by
 * bracketing (read MONOTONIC, REALTIME, MONOTONIC a few times and keep
 * the tightest pair), and its periodic re-sync (NTP slews and steps move
 * REALTIME, never MONOTONIC). BPF timestamps (bpf_ktime_get_ns()) are
 * CLOCK_MONOTONIC; OTLP wants Unix ns.
 *
 * Threads: one thread re-syncs (clock_sync_now()/clock_sync_maybe());
 * any thread may convert (clock_sync_to_unix(), one atomic load).
 */
#ifndef PROFD_UTIL_CLOCK_H
#define PROFD_UTIL_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#define CLOCK_SYNC_PERIOD_NS	(10ULL * 1000 * 1000 * 1000)
#define CLOCK_SYNC_TRIES	8	/* bracketing reads per sync */

struct clock_sync {
	int64_t offset_ns;		/* REALTIME - MONOTONIC (__atomic) */
	int64_t width_ns;		/* the tightest bracket of the last sync (__atomic) */
	uint64_t synced_mono_ns;	/* MONOTONIC at the last sync (syncing thread) */
	bool fixed;			/* never re-synced (tests, replays) */
};

/* clock_mono_ns / clock_real_ns - CLOCK_MONOTONIC / CLOCK_REALTIME now, ns. */
uint64_t clock_mono_ns(void);
uint64_t clock_real_ns(void);

/* clock_sync_init - measure the offset now (clock_sync_now()). */
void clock_sync_init(struct clock_sync *c);

/*
 * clock_sync_init_fixed - a clock whose offset is @offset_ns (REALTIME -
 * MONOTONIC) for good: clock_sync_now()/_maybe() leave it alone.
 */
void clock_sync_init_fixed(struct clock_sync *c, int64_t offset_ns);

/*
 * clock_sync_now - re-measure the offset: CLOCK_SYNC_TRIES brackets
 * MONOTONIC, REALTIME, MONOTONIC; the narrowest gives offset = REALTIME -
 * midpoint. Call from one thread at a time. Returns the bracket's width
 * in ns (the offset's uncertainty is half of it).
 */
int64_t clock_sync_now(struct clock_sync *c);

/*
 * clock_sync_maybe - clock_sync_now() if CLOCK_SYNC_PERIOD_NS passed
 * since the last sync; @mono_now_ns: CLOCK_MONOTONIC now. Returns true
 * if it re-synced.
 */
bool clock_sync_maybe(struct clock_sync *c, uint64_t mono_now_ns);

/* clock_sync_offset - REALTIME - MONOTONIC, ns. Any thread. */
static inline int64_t clock_sync_offset(const struct clock_sync *c)
{
	return __atomic_load_n(&c->offset_ns, __ATOMIC_RELAXED);
}

/*
 * clock_sync_to_unix - CLOCK_MONOTONIC @mono_ns as Unix epoch ns,
 * saturated: 0 if it would be before the epoch, UINT64_MAX past 2554
 * (garbage times stay ordered). Any thread.
 */
static inline uint64_t clock_sync_to_unix(const struct clock_sync *c, uint64_t mono_ns)
{
	int64_t off = clock_sync_offset(c);

	if (off < 0 && mono_ns < (uint64_t)-off)
		return 0;
	if (off > 0 && mono_ns > UINT64_MAX - (uint64_t)off)
		return UINT64_MAX;
	return mono_ns + (uint64_t)off;
}

#endif /* PROFD_UTIL_CLOCK_H */
