// SPDX-License-Identifier: GPL-2.0
/*
 * clock.c - the CLOCK_REALTIME - CLOCK_MONOTONIC offset (see clock.h).
 */
#include <stdint.h>
#include <time.h>

#include "util/clock.h"

static uint64_t read_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t clock_mono_ns(void)
{
	return read_ns(CLOCK_MONOTONIC);
}

uint64_t clock_real_ns(void)
{
	return read_ns(CLOCK_REALTIME);
}

int64_t clock_sync_now(struct clock_sync *c)
{
	int64_t best_width = INT64_MAX, best_off = 0;
	uint64_t m1 = 0, m2 = 0;

	if (c->fixed)
		return 0;
	for (int i = 0; i < CLOCK_SYNC_TRIES; i++) {
		uint64_t real;

		m1 = read_ns(CLOCK_MONOTONIC);
		real = read_ns(CLOCK_REALTIME);
		m2 = read_ns(CLOCK_MONOTONIC);
		if ((int64_t)(m2 - m1) < best_width) {
			best_width = (int64_t)(m2 - m1);
			/* midpoint of the bracket, without overflow */
			best_off = (int64_t)(real - (m1 + (m2 - m1) / 2));
		}
	}
	__atomic_store_n(&c->offset_ns, best_off, __ATOMIC_RELAXED);
	__atomic_store_n(&c->width_ns, best_width, __ATOMIC_RELAXED);
	c->synced_mono_ns = m2;
	return best_width;
}

void clock_sync_init(struct clock_sync *c)
{
	c->fixed = false;
	c->synced_mono_ns = 0;
	clock_sync_now(c);
}

void clock_sync_init_fixed(struct clock_sync *c, int64_t offset_ns)
{
	__atomic_store_n(&c->offset_ns, offset_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&c->width_ns, 0, __ATOMIC_RELAXED);
	c->synced_mono_ns = 0;
	c->fixed = true;
}

bool clock_sync_maybe(struct clock_sync *c, uint64_t mono_now_ns)
{
	if (c->fixed || mono_now_ns - c->synced_mono_ns < CLOCK_SYNC_PERIOD_NS)
		return false;
	clock_sync_now(c);
	return true;
}
