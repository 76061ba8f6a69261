/* SPDX-License-Identifier: GPL-2.0 */
/*
 * counters.h - the counter registry: every loss, partial and stat counter
 * profd reports, declared once next to the code that counts.
 *
 * Owns: the declaration macros, the counters' values (user-space ones) and
 * the one order in which the status line, the profile comments and
 * /metrics (profd_lost_total{reason}, profd_partial_total{reason},
 * profd_events_total{name}) list them.
 *
 * Adding a counter: one COUNTER_DEFINE() in the .c file that counts, and
 * counter_inc()/counter_add() where it counts. A BPF counter (a slot of
 * enum profd_counter, bpf/profd.h) is declared with COUNTER_DEFINE_BPF()
 * in the component whose BPF code counts; its value is read from the
 * `counters` map. Declare in a file that profd links for other reasons
 * (a file the agent calls into): libprofd_core.a leaves out objects
 * nothing references, and their counters with them. Names are unique:
 * each declaration defines the global `counter_NAME`, so a second one of
 * the same name does not link.
 *
 * How: each declaration puts a pointer to its struct counter_def in the
 * ELF section "profd_counters"; the registry walks
 * __start_profd_counters..__stop_profd_counters once, sorts the entries
 * (kind: lost, partial, stat; then name) and numbers them (->index).
 *
 * Threads: any thread may count (relaxed atomics) and read; the registry
 * is built once (pthread_once) on first use.
 */
#ifndef PROFD_COUNTERS_COUNTERS_H
#define PROFD_COUNTERS_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

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

/* One counter. Declared with COUNTER_DEFINE*(), never built at run time. */
struct counter_def {
	const char *name;	/* snake_case, unique: "lost.NAME" */
	const char *help;	/* one line, for /metrics and the docs */
	enum counter_kind kind;
	int bpf_slot;		/* enum profd_counter, or -1: @value is the value */
	uint64_t value;		/* user-space counters: cumulative, relaxed atomic */
	uint32_t index;		/* position in the registry's order (counters_at()) */
};

#define COUNTER_SECTION "profd_counters"

#define COUNTER_DEFINE_SLOT_(id, k, slot, text)					\
	struct counter_def counter_##id = {					\
		.name = #id, .help = text, .kind = k, .bpf_slot = slot,		\
	};									\
	static struct counter_def *const counter_entry_##id			\
	__attribute__((used, section(COUNTER_SECTION), aligned(sizeof(void *)))) = \
		&counter_##id

/*
 * COUNTER_DEFINE - declare the user-space counter NAME (a C identifier,
 * the name it is reported under) of kind @k (COUNTER_LOST, _PARTIAL or
 * _STAT) with the one-line @help; defines `struct counter_def counter_NAME`.
 * At file scope, once in the whole program.
 */
#define COUNTER_DEFINE(name, k, help) COUNTER_DEFINE_SLOT_(name, k, -1, help)

/*
 * COUNTER_DEFINE_BPF - declare the BPF counter NAME, slot @slot (enum
 * profd_counter) of the per-CPU `counters` map; counted by BPF code only.
 */
#define COUNTER_DEFINE_BPF(name, k, slot, help) COUNTER_DEFINE_SLOT_(name, k, slot, help)

/* COUNTER_EXTERN - use counter NAME declared in another file. */
#define COUNTER_EXTERN(name) extern struct counter_def counter_##name

/* counter_add - add @n to user-space counter @c. Any thread. */
static inline void counter_add(struct counter_def *c, uint64_t n)
{
	__atomic_fetch_add(&c->value, n, __ATOMIC_RELAXED);
}

/* counter_inc - add 1 to user-space counter @c. Any thread. */
static inline void counter_inc(struct counter_def *c)
{
	counter_add(c, 1);
}

/*
 * counter_set - set user-space counter @c to @v: for a count kept
 * elsewhere as a running total (it must never go down). Any thread.
 */
static inline void counter_set(struct counter_def *c, uint64_t v)
{
	__atomic_store_n(&c->value, v, __ATOMIC_RELAXED);
}

/* counter_get - the value of user-space counter @c (0 for a BPF one). */
static inline uint64_t counter_get(const struct counter_def *c)
{
	return __atomic_load_n(&c->value, __ATOMIC_RELAXED);
}

/* counter_kind_name - "stat", "partial" or "lost". */
const char *counter_kind_name(enum counter_kind k);

/*
 * counters_count - how many counters are declared (user-space and BPF);
 * the length of the arrays counters_read() fills. Builds the registry on
 * first use. Any thread.
 */
size_t counters_count(void);

/*
 * counters_at - the counter at position @i (< counters_count()) of the
 * registry's order: by kind (lost, partial, stat), then by name. The
 * returned definition is static: never freed. Any thread.
 */
const struct counter_def *counters_at(size_t i);

/*
 * counters_read - the value of every counter into @out (counters_count()
 * entries, by position): user-space ones from their atomics, BPF ones from
 * @bpf (the `counters` map summed over CPUs, PROFD_CNT_MAX entries, as
 * tracer_read_counters() fills it; NULL: BPF counters read 0). Any thread.
 */
void counters_read(const uint64_t *bpf, uint64_t *out);

/*
 * counters_check - 0 when every BPF slot below @nrequired is declared
 * exactly once, every slot from @nrequired to @nslots at most once (a
 * runtime's spare slots), none at or past @nslots, and every name is
 * unique; else -EINVAL, the first fault named in @err (@errlen bytes).
 * For start-up and unit tests.
 */
int counters_check(int nrequired, int nslots, char *err, size_t errlen);

#endif /* PROFD_COUNTERS_COUNTERS_H */
