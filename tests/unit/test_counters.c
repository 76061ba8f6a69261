// SPDX-License-Identifier: GPL-2.0
/*
 * test_counters.c - unit tests of the counter registry (src/counters/):
 * declarations found in the ELF section, their order (lost, partial,
 * stat; by name) and positions, values from atomics and from the BPF
 * array, counts from many threads, and the start-up check of BPF slots.
 * Prints one ok/FAIL line per check; exit status 1 on any failure.
 * Run by tests/test_metrics.py.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "counters/counters.h"

COUNTER_DEFINE(zeta_stat, COUNTER_STAT, "a statistic");
COUNTER_DEFINE(beta_lost, COUNTER_LOST, "lost, second by name");
COUNTER_DEFINE(alpha_lost, COUNTER_LOST, "lost, first by name");
COUNTER_DEFINE(mid_partial, COUNTER_PARTIAL, "partial");
COUNTER_DEFINE_BPF(bpf_zero, COUNTER_STAT, 0, "BPF slot 0");
COUNTER_DEFINE_BPF(bpf_two, COUNTER_PARTIAL, 2, "BPF slot 2");

#define THREADS 4
#define PER_THREAD 100000

static void *count_many(void *arg)
{
	for (int i = 0; i < PER_THREAD; i++)
		counter_inc(&counter_zeta_stat);
	return arg;
}

int main(void)
{
	static const char *const order[] = {
		"alpha_lost", "beta_lost", "bpf_two", "mid_partial", "bpf_zero", "zeta_stat",
	};
	uint64_t bpf[3] = { 7, 8, 9 }, out[6];
	pthread_t t[THREADS];
	char err[128] = "";
	size_t n = counters_count();

	CHECK(n == 6, "6 counters declared (%zu)", n);
	for (size_t i = 0; i < n && i < 6; i++) {
		const struct counter_def *c = counters_at(i);

		CHECK(!strcmp(c->name, order[i]) && c->index == i,
		      "position %zu: %s (got %s, index %u)", i, order[i], c->name, c->index);
	}
	CHECK(counters_at(n) == NULL, "past the end: NULL");
	CHECK(!strcmp(counter_kind_name(counters_at(0)->kind), "lost") &&
	      !strcmp(counter_kind_name(counter_mid_partial.kind), "partial") &&
	      !strcmp(counter_kind_name(counter_zeta_stat.kind), "stat"),
	      "kind names lost/partial/stat");
	CHECK(!strcmp(counter_alpha_lost.help, "lost, first by name"), "help text kept");

	counter_add(&counter_alpha_lost, 5);
	counter_inc(&counter_beta_lost);
	counter_set(&counter_mid_partial, 42);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, count_many, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	counters_read(bpf, out);
	CHECK(out[0] == 5 && out[1] == 1 && out[3] == 42,
	      "user-space values by position (%llu %llu %llu)", (unsigned long long)out[0],
	      (unsigned long long)out[1], (unsigned long long)out[3]);
	CHECK(out[5] == (uint64_t)THREADS * PER_THREAD, "%d threads' counts all kept (%llu)",
	      THREADS, (unsigned long long)out[5]);
	CHECK(out[2] == 9 && out[4] == 7, "BPF values from their slots (%llu %llu)",
	      (unsigned long long)out[2], (unsigned long long)out[4]);
	counters_read(NULL, out);
	CHECK(out[2] == 0 && out[4] == 0 && out[0] == 5, "no BPF array: BPF counters read 0");

	CHECK(counters_check(1, 1, err, sizeof(err)) == -EINVAL && strstr(err, "past"),
	      "slot 2 past 1 refused (%s)", err);
	CHECK(counters_check(3, 3, err, sizeof(err)) == -EINVAL && strstr(err, "slot 1"),
	      "slot 1 undeclared refused (%s)", err);
	CHECK(counters_check(0, 0, err, sizeof(err)) == -EINVAL, "BPF slots past 0 refused");
	CHECK(counters_check(1, 3, err, sizeof(err)) == 0,
	      "slot 1 may be left spare past the required ones (%s)", err);
	CHECK(counters_check(2, 3, err, sizeof(err)) == -EINVAL && strstr(err, "slot 1"),
	      "slot 1 undeclared below the required bound refused (%s)", err);
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
