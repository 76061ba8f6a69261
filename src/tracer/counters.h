/* SPDX-License-Identifier: GPL-2.0 */
/*
 * counters.h - names of profd's loss and error counters.
 *
 * Owns: the one name of each counter (BPF side: enum profd_counter in
 * bpf/profd.h; user side: enum agent_counter in agent/agent.h), used by
 * the status line, the profile comments and, later, /metrics.
 */
#ifndef PROFD_TRACER_COUNTERS_H
#define PROFD_TRACER_COUNTERS_H

#include <stdbool.h>
#include <linux/types.h>

#include "bpf/profd.h"

/* profd_counter_name - stable snake_case name of BPF counter @c; NULL for
 * a slot no counter uses (a runtime's spare slots). */
const char *profd_counter_name(enum profd_counter c);

/*
 * What a counter counts: samples lost entirely, samples kept with a
 * partial stack or unsymbolized frames, or a plain statistic. Reported as
 * "lost.NAME", "partial.NAME" and "stat.NAME".
 */
enum counter_kind {
	COUNTER_STAT = 0,
	COUNTER_PARTIAL = 1,
	COUNTER_LOST = 2,
};

/* counter_kind_name - "stat", "partial" or "lost". */
const char *counter_kind_name(enum counter_kind k);

/* profd_counter_kind - the kind of BPF counter @c. */
enum counter_kind profd_counter_kind(enum profd_counter c);

#endif /* PROFD_TRACER_COUNTERS_H */
