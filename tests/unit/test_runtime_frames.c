// SPDX-License-Identifier: GPL-2.0
/*
 * test_runtime_frames.c - the runtimes' interned frame tables and their
 * two generations (src/runtime/frames.c), for two made-up runtimes: each
 * table holds its kind's fixed frames (ids 1..nfixed, the kind's names),
 * a full table answers its kind's "table full" frame and counts in its
 * kind's counter only, and the rotation rules (half full, or 60
 * intervals old and holding frames; tokens of both generations named
 * until the older is replaced). Prints one ok/FAIL line per check; exit
 * status 1 on any failure. Run by tests/test_python.py.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "counters/counters.h"
#include "runtime/frames.h"

/* Not in the registry: only their values are read here. */
static struct counter_def full_a = { .name = "a_frames_full" };
static struct counter_def full_b = { .name = "b_frames_full" };

static const char *const names_a[] = { NULL, "[a: one]", "[a: two]", "[a: full]" };
static const char *const names_b[] = { NULL, "[b: full]", "[b: other]" };

static const struct rt_frames_kind kind_a = {
	.tag = RUNTIME_IP_FRAME | 1ULL << RUNTIME_IP_ID_SHIFT,
	.fixed = names_a, .nfixed = 3, .full_id = 3, .full = &full_a,
};
static const struct rt_frames_kind kind_b = {
	.tag = RUNTIME_IP_FRAME | 2ULL << RUNTIME_IP_ID_SHIFT,
	.fixed = names_b, .nfixed = 2, .full_id = 1, .full = &full_b,
};

static bool named(struct rt_frames *t, uint32_t id, const char *fn, const char *file,
		  int line)
{
	struct rt_frame f;

	return !rt_frames_get(t, id, &f) && !strcmp(f.function, fn) &&
	       !strcmp(f.file, file) && f.line == line;
}

static bool token_named(struct rt_frame_gens *g, uint64_t token, const char *fn)
{
	struct rt_frame f;

	return !rt_frame_gens_get(g, token, &f) && !strcmp(f.function, fn);
}

/* Intern distinct 1000-character names into @t until it refuses one;
 * returns how many it took. */
static uint32_t fill(struct rt_frames *t, uint32_t full_id)
{
	char name[1001];
	uint32_t n;

	memset(name, 'x', 1000);
	name[1000] = 0;
	for (n = 0; n < 100000; n++) {
		snprintf(name, 16, "f%u_", n);
		name[strlen(name)] = 'x';
		if (rt_frames_intern(t, name, "file.x", 1, 1) == full_id)
			return n;
	}
	return n;
}

static void tables(void)
{
	struct rt_frames *a = rt_frames_new(&kind_a, 0), *b = rt_frames_new(&kind_b, 0);
	struct rt_frame f;
	uint64_t frames, full;
	uint32_t id;

	CHECK(a && b, "tables of two kinds made");
	CHECK(named(a, 1, "[a: one]", "", 0) && named(a, 2, "[a: two]", "", 0) &&
	      named(a, 3, "[a: full]", "", 0), "kind a: its fixed frames, ids 1-3");
	CHECK(named(b, 1, "[b: full]", "", 0) && named(b, 2, "[b: other]", "", 0) &&
	      rt_frames_get(b, 3, &f) == -ENOENT, "kind b: its own fixed frames only, ids 1-2");
	CHECK(rt_frames_get(a, 0, &f) == -ENOENT, "id 0 is no frame");
	CHECK(rt_frames_empty(a) && rt_frames_empty(b), "fresh tables are empty");
	id = rt_frames_intern(b, "fn", "f.rb", 7, 5);
	CHECK(id == 3 && named(b, id, "fn", "f.rb", 7), "first free id of kind b: 3 (%u)", id);
	CHECK(rt_frames_intern(b, "fn", "f.rb", 7, 5) == id &&
	      rt_frames_intern(b, "fn", "f.rb", 8, 5) == id + 1 &&
	      rt_frames_intern(b, "fn", "f.rb", 7, 6) == id + 2,
	      "same frame, same id; another line or first line, another");
	rt_frames_stats(b, &frames, &full);
	CHECK(frames == 3 && !full && !rt_frames_empty(b), "kind b holds 3 frames (%llu)",
	      (unsigned long long)frames);
	rt_frames_free(a);
	rt_frames_free(b);

	/* full: each kind answers and counts its own */
	a = rt_frames_new(&kind_a, 64 << 10);
	b = rt_frames_new(&kind_b, 64 << 10);
	CHECK(a && b, "small tables made");
	fill(a, kind_a.full_id);
	rt_frames_stats(a, &frames, &full);
	CHECK(full == 1 && full_a.value == 1 && !full_b.value && rt_frames_bytes(a) <= 64 << 10,
	      "a full table of kind a: refused, counted in a's counter only (%llu frames, "
	      "%llu bytes)", (unsigned long long)frames, (unsigned long long)rt_frames_bytes(a));
	CHECK(rt_frames_half_full(a) && !rt_frames_half_full(b), "a is half full, b not");
	fill(b, kind_b.full_id);
	CHECK(full_a.value == 1 && full_b.value == 1, "b full: counted in b's counter");
	rt_frames_free(a);
	rt_frames_free(b);
}

static void generations(void)
{
	struct rt_frame_gens g;
	uint64_t t0, t1, frames, full;
	uint32_t renewals = 0;

	CHECK(!rt_frame_gens_init(&g, &kind_a, 0), "generations made");
	CHECK(rt_frame_gens_tag(&g) == kind_a.tag, "generation 0: the kind's tag");
	for (int i = 0; i < 100; i++)
		renewals += rt_frame_gens_new_interval(&g);
	CHECK(!renewals, "empty tables are never renewed");
	t0 = rt_frame_gens_tag(&g) | rt_frame_gens_intern(&g, "old", "o.x", 1, 1);
	CHECK(rt_frame_gens_new_interval(&g),
	      "a table 60+ intervals old renewed at the first interval it holds frames");
	CHECK(rt_frame_gens_tag(&g) == (kind_a.tag | RT_FRAME_GEN),
	      "generation 1: the tag with RT_FRAME_GEN");
	t1 = rt_frame_gens_tag(&g) | rt_frame_gens_intern(&g, "new", "n.x", 2, 2);
	CHECK(token_named(&g, t0, "old") && token_named(&g, t1, "new") &&
	      token_named(&g, kind_a.tag | RT_FRAME_GEN | 1, "[a: one]"),
	      "tokens of both generations named");
	rt_frame_gens_stats(&g, &frames, &full);
	CHECK(frames == 1 && !full, "stats: the current generation's frames (%llu)",
	      (unsigned long long)frames);
	for (int i = 0; i < RT_FRAMES_RENEW_INTERVALS - 1; i++)
		renewals += rt_frame_gens_new_interval(&g);
	CHECK(!renewals, "holding frames: not renewed before %d intervals",
	      RT_FRAMES_RENEW_INTERVALS);
	CHECK(rt_frame_gens_new_interval(&g) && rt_frame_gens_tag(&g) == kind_a.tag,
	      "renewed at interval %d: back to generation 0", RT_FRAMES_RENEW_INTERVALS);
	CHECK(!token_named(&g, t0, "old") && token_named(&g, t1, "new"),
	      "the generation before last is gone, the last one named");
	rt_frame_gens_fini(&g);

	/* half full: renewed at the next interval; refusals outlive their table */
	CHECK(!rt_frame_gens_init(&g, &kind_b, 64 << 10), "small generations made");
	full_b.value = 0;
	fill(g.t[g.cur], kind_b.full_id);
	CHECK(rt_frame_gens_new_interval(&g), "a half-full table is renewed at once");
	CHECK(!rt_frame_gens_new_interval(&g), "the fresh table is not renewed next interval");
	renewals = 0;
	for (int i = 0; i < RT_FRAMES_RENEW_INTERVALS - 1; i++)
		renewals += rt_frame_gens_new_interval(&g);
	CHECK(renewals == 1, "the fresh table, empty, is renewed 60 intervals on: "
	      "the other generation holds frames");
	rt_frame_gens_stats(&g, &frames, &full);
	CHECK(full == 1 && full_b.value == 1 && rt_frame_gens_bytes(&g) <= 2 * (64 << 10),
	      "a retired table's refusals still counted (%llu)", (unsigned long long)full);
	rt_frame_gens_fini(&g);
}

int main(void)
{
	tables();
	generations();
	if (!failures)
		printf("all passed\n");
	return failures ? 1 : 0;
}
