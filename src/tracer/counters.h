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

/* profd_counter_name - stable snake_case name of BPF counter @c. */
const char *profd_counter_name(enum profd_counter c);

/* profd_counter_is_drop - true when @c counts lost or damaged data. */
bool profd_counter_is_drop(enum profd_counter c);

#endif /* PROFD_TRACER_COUNTERS_H */
