// SPDX-License-Identifier: GPL-2.0
/*
 * probabilistic.c - probabilistic profiling (--probabilistic-threshold,
 * --probabilistic-interval; see agent_internal.h).
 *
 * Owns: the draws, switching the perf events on and off (no reload), and
 * the time they were on: struct agent's sampling_on, interval_sampled,
 * on_since, on_ns, ended_on_ns, ended_sampled and the draw counters. The
 * main thread draws and switches (agent.c) and takes the ended interval's
 * figures at the boundary (agent_probabilistic_boundary(), from the swap
 * in flush.c); the reader and /metrics only read sampling_on and the
 * counters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_internal.h"
#include "util/clock.h"

COUNTER_DEFINE(probabilistic_intervals_off, COUNTER_STAT,
	       "probabilistic intervals not profiled");

bool agent_probabilistic_draw(struct agent *ag)
{
	bool on = arc4random_uniform(100) < ag->cfg->probabilistic_threshold;

	pthread_mutex_lock(&ag->agg_lock);
	ag->probabilistic_draws++;
	ag->probabilistic_on += on;
	counter_set(&counter_probabilistic_intervals_off,
		    ag->probabilistic_draws - ag->probabilistic_on);
	pthread_mutex_unlock(&ag->agg_lock);
	return on;
}

bool agent_probabilistic_set(struct agent *ag, bool on)
{
	uint64_t now;
	int err;

	if (on == ag->sampling_on)
		return false;
	err = tracer_set_sampling(ag->tracer, on);
	now = clock_mono_ns();
	if (err)
		fprintf(stderr, "profd: warning: cannot %s the perf events: %s\n",
			on ? "enable" : "disable", strerror(-err));
	if (on) {
		ag->on_since = now;
	} else {
		if (ag->on_since)
			ag->on_ns += now - ag->on_since;
		ag->on_since = 0;
		agent_reader_sync(ag);	/* not sampled time: the events are off */
	}
	pthread_mutex_lock(&ag->agg_lock);
	__atomic_store_n(&ag->sampling_on, on, __ATOMIC_RELAXED);	/* the reader reads it */
	ag->interval_sampled |= on;
	pthread_mutex_unlock(&ag->agg_lock);
	return true;
}

/*
 * Probabilistic profiling: how long (ns) the perf events were on in the
 * interval ending at @now (CLOCK_MONOTONIC ns). Main thread only, like
 * the switches.
 */
static uint64_t sampled_time_take(struct agent *ag, uint64_t now)
{
	uint64_t on = ag->on_ns;

	if (ag->on_since && now > ag->on_since) {
		on += now - ag->on_since;
		ag->on_since = now;
	}
	ag->on_ns = 0;
	return on;
}

void agent_probabilistic_boundary(struct agent *ag, uint64_t boundary)
{
	ag->ended_on_ns = sampled_time_take(ag, boundary);
	ag->ended_sampled = ag->interval_sampled;
	if (ag->draw_on_pending) {
		ag->draw_on_pending = false;
		ag->draw_switched = agent_probabilistic_set(ag, true);
	}
}
