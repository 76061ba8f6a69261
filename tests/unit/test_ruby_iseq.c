// SPDX-License-Identifier: GPL-2.0
/*
 * test_ruby_iseq.c - naming CRuby frames (src/ruby/iseq.h, rvalue.h,
 * symbols.h) without a Ruby: the objects a CRuby 3.1 process would hold
 * (iseqs with their succinct line tables, method entries, svars, classes
 * with iv tables, the ID table) are built in this process's own memory
 * with the 3.1 layout and read back through process_vm_readv, as profd
 * reads a Ruby process. Then the hostile cases: garbage addresses, wrong
 * types, absurd lengths, inconsistent line tables, random bytes in every
 * object (errors, never a crash; run under ASan by tests/test_ruby_names.py
 * when it can be built), a spent budget.
 * The live-Ruby check is tests/unit/ruby_walk.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "proc/remote.h"
#include "ruby/iseq.h"
#include "ruby/rvalue.h"
#include "ruby/symbols.h"

static const struct rb_offsets *off;

/* 8-aligned zeroed heap object of @n bytes (freed at exit). */
static uint8_t *obj(size_t n)
{
	uint8_t *p = aligned_alloc(16, (n + 15) & ~15UL);

	memset(p, 0, (n + 15) & ~15UL);
	return p;
}

static uint64_t A(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void put64(uint8_t *b, size_t o, uint64_t v)
{
	memcpy(b + o, &v, 8);
}

static void put32(uint8_t *b, size_t o, uint32_t v)
{
	memcpy(b + o, &v, 4);
}

static uint64_t imemo_flags(unsigned int type)
{
	return off->t_imemo | (uint64_t)type << off->imemo_shift | (1 << 5) /* GC bit */;
}

/* A String: embedded when it fits, else on the heap. */
static uint64_t rstring(const char *s)
{
	size_t n = strlen(s);
	uint8_t *o = obj(40);

	if (n <= 23) {
		put64(o, 0, off->t_string | (uint64_t)n << off->rstring_embed_len_shift);
		memcpy(o + off->rstring_embed_ary, s, n);
	} else {
		char *heap = strdup(s);

		put64(o, 0, off->t_string | off->rstring_noembed);
		put64(o, off->rstring_len, n);
		put64(o, off->rstring_ptr, A(heap));
	}
	return A(o);
}

/* A heap Array of @n elements @v. */
static uint64_t rarray(const uint64_t *v, size_t n)
{
	uint8_t *o = obj(40);
	uint64_t *e = (uint64_t *)obj(n * 8 + 8);

	memcpy(e, v, n * 8);
	put64(o, 0, off->t_array);
	put64(o, off->rarray_len, n);
	put64(o, off->rarray_ptr, A(e));
	return A(o);
}

/* An embedded Array of @n (<= 3) elements. */
static uint64_t rarray_embed(const uint64_t *v, size_t n)
{
	uint8_t *o = obj(40);

	put64(o, 0, off->t_array | off->rarray_embed_flag |
		    (uint64_t)n << off->rarray_embed_len_shift);
	memcpy(o + off->rarray_embed_ary, v, n * 8);
	return A(o);
}

/* iseq.c's succ_index_table_create(), verbatim in substance. */
static uint8_t *succ_create(int max_pos, const int *data, int size, size_t *len)
{
	const int imm = off->succ_immediate_table_size;
	const int imm_size = (max_pos < imm ? max_pos + 8 : imm) / 9;
	const int succ_size = (max_pos < imm ? 0 : (max_pos - imm + 511)) / 512;
	uint8_t *t;
	int r = 0;

	*len = (size_t)imm_size * 8 + (size_t)succ_size * 80;
	t = obj((imm / 9) * 8 + succ_size * 80 + 8);
	for (int j = 0; j < imm_size; j++) {
		uint64_t v = 0;

		for (int i = 0; i < 9; i++) {
			if (r < size && data[r] == j * 9 + i)
				r++;
			v |= (uint64_t)r << (7 * i);
		}
		put64(t, 8 * j, v);
	}
	for (int k = 0; k < succ_size; k++) {
		uint8_t *b = t + (imm / 9) * 8 + k * 80;
		uint64_t small = 0;
		int small_rank = 0;

		put32(b, 0, r);
		for (int j = 0; j < 8; j++) {
			uint64_t bits = 0;

			if (j)
				small |= (uint64_t)small_rank << (9 * (j - 1));
			for (int i = 0; i < 64; i++) {
				if (r < size && data[r] == k * 512 + j * 64 + i + imm) {
					bits |= 1ULL << i;
					r++;
				}
			}
			put64(b, 16 + 8 * j, bits);
			small_rank += __builtin_popcountll(bits);
		}
		put64(b, 8, small);
	}
	return t;
}

struct fake_iseq {
	uint8_t *iseq, *body, *infos, *succ;
	uint64_t *encoded;
	int size, ninfo;
};

/*
 * A method iseq "@label" of @path (a String, or [path, realpath] when
 * @array_path), @size instructions; line table: instruction 0 and every
 * @step-th after it starts an entry whose line is first + index.
 */
static struct fake_iseq fake_iseq(const char *label, const char *path, bool array_path,
				  int first, int size, int step)
{
	struct fake_iseq f = { .size = size };
	int *pos = calloc(size, sizeof(int));
	size_t tlen;
	uint64_t p;

	for (int i = 0; i < size; i += step)
		pos[f.ninfo++] = i;
	f.iseq = obj(40);
	f.body = obj(256);
	f.encoded = (uint64_t *)obj(size * 8);
	f.infos = obj(f.ninfo * off->insn_info_entry_size);
	for (int i = 0; i < f.ninfo; i++)
		put32(f.infos, i * off->insn_info_entry_size + off->insn_info_line_no, first + i);
	f.succ = succ_create(size, pos, f.ninfo, &tlen);
	put64(f.iseq, 0, imemo_flags(off->imemo_iseq));
	put64(f.iseq, off->iseq_body, A(f.body));
	put32(f.body, off->body_type, off->iseq_type_method);
	put32(f.body, off->body_iseq_size, size);
	put64(f.body, off->body_iseq_encoded, A(f.encoded));
	p = rstring(path);
	if (array_path) {
		uint64_t pr[2] = { p, rstring("/real/path.rb") };

		p = rarray_embed(pr, 2);
	}
	put64(f.body, off->body_location_pathobj, p);
	put64(f.body, off->body_location_label, rstring(label));
	put64(f.body, off->body_location_first_lineno, (uint64_t)first << 1 | 1);
	put64(f.body, off->body_insns_info_body, A(f.infos));
	put32(f.body, off->body_insns_info_size, f.ninfo);
	put64(f.body, off->body_insns_info_succ_index_table, A(f.succ));
	free(pos);
	return f;
}

/* Serial of the i-th name of a fake ID table (real ones start past the
 * operators, tLAST_OP_ID), and its ID (scope bits 0). */
#define SERIAL(i)	(200 + (i))
#define ID(i)		((uint64_t)SERIAL(i) << 4)

/* The ID table: ID(i) is names[i]. */
static uint64_t fake_symbols(const char *const *names, int n)
{
	uint64_t chunk[1024] = { 0 }, ids, chunkv;
	uint8_t *gs = obj(32);

	for (int i = 1; i < n; i++)
		chunk[SERIAL(i) * 2] = rstring(names[i]);
	chunkv = rarray(chunk, 1024);
	ids = rarray_embed(&chunkv, 1);
	put32(gs, off->symbols_last_id, SERIAL(n - 1));
	put64(gs, off->symbols_ids, ids);
	return A(gs);
}

/* A class (or, @singleton, a singleton class) whose iv table holds
 * (@keys[i] -> @vals[i]), @n of them, the first @deleted of them deleted. */
static uint8_t *fake_class(bool singleton, const uint64_t *keys, const uint64_t *vals,
			   int n, int deleted)
{
	uint8_t *k = obj(48), *ext = obj(64), *st = obj(64), *ents = obj(24 * n + 8);

	put64(k, 0, off->t_class | (singleton ? off->fl_singleton : 0));
	put64(k, off->rclass_ext, A(ext));
	put64(ext, off->classext_iv_tbl, A(st));
	put64(st, off->st_entries_start, 0);
	put64(st, off->st_entries_bound, n);
	put64(st, off->st_entries, A(ents));
	for (int i = 0; i < n; i++) {
		put64(ents, 24 * i, i < deleted ? ~0ULL : 12345);
		put64(ents, 24 * i + 8, keys[i]);
		put64(ents, 24 * i + 16, vals[i]);
	}
	return k;
}

static uint8_t *fake_me(bool cfunc, uint64_t iseq_or_id, uint64_t owner)
{
	uint8_t *me = obj(48), *def = obj(64);

	put64(me, 0, imemo_flags(off->imemo_ment));
	put64(me, off->cme_def, A(def));
	put64(me, off->cme_owner, owner);
	put64(me, off->cme_defined_class, owner);
	put32(def, off->def_type, (cfunc ? off->method_type_cfunc : off->method_type_iseq) | 0x10);
	if (cfunc)
		put64(def, off->def_original_id, iseq_or_id);
	else
		put64(def, off->def_iseq_ptr, iseq_or_id);
	return me;
}

static void test_succ(void)
{
	const int sizes[] = { 1, 2, 8, 9, 53, 54, 55, 63, 100, 565, 566, 600, 2000, 5000 };

	srand(7);
	for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		int max_pos = sizes[t], n = 0, bad = 0, got;
		int *data = calloc(max_pos, sizeof(int));
		uint32_t *pos = calloc(max_pos + 1, sizeof(uint32_t));
		size_t len;
		uint8_t *tbl;

		for (int i = 0; i < max_pos; i++)
			if (!i || rand() % 3 == 0)
				data[n++] = i;
		tbl = succ_create(max_pos, data, n, &len);
		CHECK(rv_succ_table_len(max_pos, off->succ_immediate_table_size) == len,
		      "succ table of %d instructions: %zu bytes", max_pos, len);
		got = rv_succ_positions(tbl, len, max_pos, off->succ_immediate_table_size,
					pos, max_pos + 1);
		for (int i = 0; got == n && i < n; i++)
			bad += pos[i] != (uint32_t)data[i];
		CHECK(got == n && !bad, "succ table of %d instructions decodes to its %d positions (got %d, %d wrong)",
		      max_pos, n, got, bad);
		if (len) {
			got = rv_succ_positions(tbl, len - 1, max_pos,
						off->succ_immediate_table_size, pos, max_pos + 1);
			CHECK(got == -EINVAL, "a short succ table is refused (%d)", got);
		}
		if (max_pos > 54 + 64) {	/* a block's rank that disagrees */
			put32(tbl + 48, 0, 1000);
			got = rv_succ_positions(tbl, len, max_pos, off->succ_immediate_table_size,
						pos, max_pos + 1);
			CHECK(got == -EINVAL, "an inconsistent succ table is refused (%d)", got);
		}
		free(data);
		free(pos);
	}
}

static void test_symbols(void)
{
	const uint8_t code[] = { 0x8b, 0x05, 0xea, 0x5e, 0x1a, 0x00, 0xc3 };
	uint8_t bad[sizeof(code)];
	uint64_t gs = 0;

	CHECK(rb_global_symbols_from_code(code, sizeof(code), 0x2092d0, off, &gs) == 1 &&
	      gs == 0x3af1c0, "rb_sym_immortal_count's mov eax,[rip+rel32]; ret gives 0x%llx",
	      (unsigned long long)gs);
	for (size_t i = 0; i < sizeof(code); i++) {
		if (i >= 2 && i < 6)
			continue;	/* the displacement */
		memcpy(bad, code, sizeof(code));
		bad[i] ^= 0x40;
		gs = 0;
		CHECK(rb_global_symbols_from_code(bad, sizeof(bad), 0x2092d0, off, &gs) == 0 && !gs,
		      "other code (byte %zu changed) is unknown", i);
	}
	CHECK(rb_global_symbols_from_code(code, 6, 0x2092d0, off, &gs) == 0, "too short: unknown");
	CHECK(rb_op_name(off, '+') && !strcmp(rb_op_name(off, '+'), "+"), "op '+'");
	CHECK(rb_op_name(off, 145) && !strcmp(rb_op_name(off, 145), "[]"), "op []");
	CHECK(rb_op_name(off, 135) && !strcmp(rb_op_name(off, 135), "<=>"), "op <=>");
	CHECK(rb_op_name(off, 146) && !strcmp(rb_op_name(off, 146), "[]="), "op []=");
	CHECK(!rb_op_name(off, 'a') && !rb_op_name(off, 170) && !rb_op_name(off, 1000),
	      "not operators: 'a', 170, 1000");
}

#define NOW0	(5ULL * 1000 * 1000 * 1000)

static void test_names(struct remote_reader *rr)
{
	struct rb_iseq_cache *c = rb_iseq_cache_new(rr, 1000, 1 << 20);
	const char *names[] = { NULL, "__classpath__", "bar", "__attached__", "cool", "each" };
	struct fake_iseq f = fake_iseq("bar", "/tmp/some/rather/long/path/foo.rb", false, 10, 700, 7);
	struct fake_iseq g = fake_iseq("block in bar", "/x.rb", true, 3, 20, 1);
	struct rb_proc_addrs addrs = { .global_symbols = fake_symbols(names, 6) };
	struct rb_proc_addrs none = { 0 };
	uint64_t keys[3] = { ID(3), ID(1) }, vals[3] = { 0, rstring("Foo::Bar") };
	uint8_t *foo = fake_class(false, keys, vals, 2, 1), *util, *sing, *me, *svar, *cme, *cme2;
	struct rb_frame_name n;
	struct rb_iseq_stats st;
	size_t budget = RB_READ_BUDGET;
	pid_t pid = getpid();
	uint64_t pc;
	int err;

	/* a Ruby frame: label, path, first line, the line before pc */
	pc = A(f.encoded) + 8 * 1;	/* after instruction 0 */
	err = rb_iseq_name(c, pid, 1, off, NULL, A(f.iseq), pc, NOW0, &budget, &n);
	CHECK(!err && !strcmp(n.function, "bar") && !strcmp(n.file, "/tmp/some/rather/long/path/foo.rb") &&
	      n.first_line == 10 && n.line == 10, "iseq: bar /tmp/.../foo.rb:10 (first 10) (err %d: %s %s:%d)",
	      err, err ? "" : n.function, err ? "" : n.file, err ? 0 : n.line);
	CHECK(budget < RB_READ_BUDGET, "reads charged to the budget (%zu left)", budget);
	for (int insn = 0; insn < f.size; insn += 37) {
		/* pc after instruction insn: the entry holding insn */
		err = rb_iseq_name(c, pid, 1, off, NULL, A(f.iseq), A(f.encoded) + 8 * (insn + 1),
				   NOW0, &budget, &n);
		if (err || n.line != 10 + insn / 7)
			CHECK(0, "line at instruction %d: %d, want %d (err %d)", insn, n.line,
			      10 + insn / 7, err);
	}
	CHECK(1, "lines at every 37th instruction of 700 (succinct part included)");
	err = rb_iseq_name(c, pid, 1, off, NULL, A(f.iseq), A(f.encoded) + 8 * 701, NOW0, &budget, &n);
	CHECK(err == -ESTALE, "pc past the iseq: -ESTALE (%d)", err);
	err = rb_iseq_name(c, pid, 1, off, NULL, A(f.iseq), A(f.encoded) - 8, NOW0, &budget, &n);
	CHECK(err == -ESTALE, "pc before the iseq: -ESTALE (%d)", err);
	err = rb_iseq_name(c, pid, 1, off, NULL, A(f.iseq), A(f.encoded) + 3, NOW0, &budget, &n);
	CHECK(err == -ESTALE, "pc between instructions: -ESTALE (%d)", err);
	err = rb_iseq_name(c, pid, 1, off, NULL, A(f.iseq), 0, NOW0, &budget, &n);
	CHECK(!err && n.line == 10, "pc 0: the first line (%d)", n.line);
	err = rb_iseq_name(c, pid, 1, off, NULL, A(g.iseq), A(g.encoded) + 8 * 5, NOW0, &budget, &n);
	CHECK(!err && !strcmp(n.function, "block in bar") && !strcmp(n.file, "/x.rb") && n.line == 3 + 4,
	      "path [path, realpath] -> path; line of instruction 4: %d", err ? -1 : n.line);

	/* the cache: a hit reads nothing; a change is seen after the recheck time */
	rb_iseq_stats(c, &st);
	{
		uint64_t hits = st.hits;
		size_t b0 = budget;

		err = rb_iseq_name(c, pid, 1, off, NULL, A(f.iseq), pc, NOW0 + 1, &budget, &n);
		rb_iseq_stats(c, &st);
		CHECK(!err && st.hits == hits + 1 && budget == b0, "cached: a hit, nothing read");
		put64(f.body, off->body_location_label, rstring("renamed"));
		err = rb_iseq_name(c, pid, 1, off, NULL, A(f.iseq), pc, NOW0 + 2, &budget, &n);
		CHECK(!err && !strcmp(n.function, "bar"), "before the recheck time: the cached name");
		err = rb_iseq_name(c, pid, 1, off, NULL, A(f.iseq), pc, NOW0 + RB_ISEQ_RECHECK_NS + 3,
				   &budget, &n);
		CHECK(!err && !strcmp(n.function, "renamed"), "after it: the object is read again (%s)",
		      err ? "" : n.function);
		put64(f.body, off->body_location_label, rstring("bar"));
		err = rb_iseq_name(c, pid, 2, off, NULL, A(f.iseq), pc, NOW0, &budget, &n);
		CHECK(!err && !strcmp(n.function, "bar"), "another process generation: its own entry");
	}

	/* method frames: Owner#label, Owner.label for a module's singleton method */
	me = fake_me(false, A(f.iseq), A(foo));
	err = rb_method_frame_name(c, pid, 1, off, &addrs, A(me), pc, NOW0, &budget, &n);
	CHECK(!err && !strcmp(n.function, "Foo::Bar#bar") && n.line == 10,
	      "method frame: %s (err %d)", err ? "" : n.function, err);
	svar = obj(40);
	put64(svar, 0, imemo_flags(off->imemo_svar));
	put64(svar, off->svar_cref_or_me, A(me));
	err = rb_method_frame_name(c, pid, 1, off, &addrs, A(svar), pc, NOW0, &budget, &n);
	CHECK(!err && !strcmp(n.function, "Foo::Bar#bar"), "through an svar: %s (err %d)",
	      err ? "" : n.function, err);
	{
		uint64_t uk[1] = { ID(1) }, uv[1] = { rstring("Util") }, sk[1] = { ID(3) }, sv[1];

		util = fake_class(false, uk, uv, 1, 0);
		put64(util, 0, off->t_module);
		sv[0] = A(util);
		sing = fake_class(true, sk, sv, 1, 0);
	}
	err = rb_method_frame_name(c, pid, 1, off, &addrs, A(fake_me(false, A(f.iseq), A(sing))),
				   pc, NOW0, &budget, &n);
	CHECK(!err && !strcmp(n.function, "Util.bar"), "singleton method: %s (err %d)",
	      err ? "" : n.function, err);
	err = rb_method_frame_name(c, pid, 1, off, &addrs,
				   A(fake_me(false, A(f.iseq), A(fake_class(false, keys, vals, 0, 0)))),
				   pc, NOW0, &budget, &n);
	CHECK(!err && !strcmp(n.function, "bar"), "anonymous class: the label alone (%s)",
	      err ? "" : n.function);
	err = rb_method_frame_name(c, pid, 3, off, &none, A(me), pc, NOW0, &budget, &n);
	CHECK(!err && !strcmp(n.function, "bar"), "no ID table: the label alone (%s)",
	      err ? "" : n.function);
	err = rb_method_frame_name(c, pid, 1, off, &addrs, A(f.iseq), pc, NOW0, &budget, &n);
	CHECK(err == -EINVAL, "an iseq is not a method entry: -EINVAL (%d)", err);

	/* C frames */
	cme = fake_me(true, ID(5), A(foo));
	err = rb_cme_name(c, pid, 1, off, &addrs, A(cme), 0, NOW0, &budget, &n);
	CHECK(!err && !strcmp(n.function, "Foo::Bar#each") && !*n.file && !n.line,
	      "C frame: %s (err %d)", err ? "" : n.function, err);
	cme2 = fake_me(true, 145, A(sing));
	err = rb_cme_name(c, pid, 1, off, &addrs, A(cme2), 0, NOW0, &budget, &n);
	CHECK(!err && !strcmp(n.function, "Util.[]"), "C operator method: %s", err ? "" : n.function);
	err = rb_cme_name(c, pid, 1, off, &addrs, A(fake_me(true, ID(40), A(foo))), 0, NOW0, &budget, &n);
	CHECK(!err && !strcmp(n.function, RB_CFUNC_UNNAMED), "an ID past last_id: %s",
	      err ? "" : n.function);
	rb_iseq_stats(c, &st);
	err = rb_cme_name(c, pid, 4, off, &none, A(cme), 0, NOW0, &budget, &n);
	{
		struct rb_iseq_stats st2;

		rb_iseq_stats(c, &st2);
		CHECK(!err && !strcmp(n.function, RB_CFUNC_UNNAMED) && st2.unnamed == st.unnamed + 1,
		      "no ID table: " RB_CFUNC_UNNAMED ", counted");
	}
	err = rb_cme_name(c, pid, 1, off, &addrs, A(me), 0, NOW0, &budget, &n);
	CHECK(err == -EINVAL, "a Ruby method's entry is not a C frame: -EINVAL (%d)", err);

	/* the budget: spent is -EAGAIN, not cached */
	{
		struct fake_iseq h = fake_iseq("late", "/late.rb", false, 1, 10, 2);
		size_t small = 30;

		err = rb_iseq_name(c, pid, 1, off, NULL, A(h.iseq), A(h.encoded) + 8, NOW0, &small, &n);
		CHECK(err == -EAGAIN && small <= 30, "budget spent: -EAGAIN (%d)", err);
		err = rb_iseq_name(c, pid, 1, off, NULL, A(h.iseq), A(h.encoded) + 8, NOW0, &budget, &n);
		CHECK(!err && !strcmp(n.function, "late"), "with budget again: named (not a cached failure)");
	}
	rb_iseq_forget(c, (uint64_t[]){ 1, 2 }, 2);
	rb_iseq_stats(c, &st);
	CHECK(st.entries > 0 && st.bytes > 0, "forget: generations 3 and 4 stay (%llu entries)",
	      (unsigned long long)st.entries);
	rb_iseq_forget(c, (uint64_t[]){ 3, 4 }, 2);
	rb_iseq_stats(c, &st);
	CHECK(st.entries == 0 && st.bytes == 0, "forget: all gone");
	rb_iseq_cache_free(c);
}

/* Hostile memory: errors, no crash. */
static void test_hostile(struct remote_reader *rr)
{
	struct rb_iseq_cache *c = rb_iseq_cache_new(rr, 64, 1 << 16);
	const char *names[] = { NULL, "__classpath__" };
	struct rb_proc_addrs addrs = { .global_symbols = fake_symbols(names, 2) };
	const uint64_t garbage[] = { 0, 8, 0x14, 0x34, 4095, 0x1001, 0xdeadbeef000ULL,
				     0x7ffffffff000ULL, ~0ULL, 1ULL << 47 };
	struct rb_frame_name n;
	size_t budget;
	pid_t pid = getpid();
	int err, fails = 0, crashes_would_be_here = 0;
	uint64_t gen = 100;

	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		budget = RB_READ_BUDGET;
		err = rb_iseq_name(c, pid, gen, off, NULL, garbage[i], garbage[i] + 8, NOW0, &budget, &n);
		fails += !err;
		err = rb_method_frame_name(c, pid, gen, off, &addrs, garbage[i], 8, NOW0, &budget, &n);
		fails += !err;
		err = rb_cme_name(c, pid, gen, off, &addrs, garbage[i], 0, NOW0, &budget, &n);
		fails += !err;
	}
	CHECK(!fails, "garbage addresses: every call an error");

	{
		struct fake_iseq f = fake_iseq("x", "/x.rb", false, 1, 100, 3);
		uint64_t pc = A(f.encoded) + 16, saved;

		budget = RB_READ_BUDGET;
		put64(f.iseq, 0, imemo_flags(off->imemo_ment));
		err = rb_iseq_name(c, pid, gen++, off, NULL, A(f.iseq), pc, NOW0, &budget, &n);
		CHECK(err == -EINVAL, "imemo type ment is not an iseq: -EINVAL (%d)", err);
		put64(f.iseq, 0, off->t_string);
		err = rb_iseq_name(c, pid, gen++, off, NULL, A(f.iseq), pc, NOW0, &budget, &n);
		CHECK(err == -EINVAL, "a String is not an iseq: -EINVAL (%d)", err);
		put64(f.iseq, 0, imemo_flags(off->imemo_iseq));
		put32(f.body, off->body_iseq_size, RB_ISEQ_SIZE_MAX + 1);
		err = rb_iseq_name(c, pid, gen++, off, NULL, A(f.iseq), pc, NOW0, &budget, &n);
		CHECK(err == -EINVAL, "absurd iseq_size: -EINVAL (%d)", err);
		put32(f.body, off->body_iseq_size, 100);
		saved = *(uint64_t *)(f.body + off->body_location_label);
		{
			uint8_t *s = obj(40);

			put64(s, 0, off->t_string | off->rstring_noembed);
			put64(s, off->rstring_len, 1ULL << 50);
			put64(s, off->rstring_ptr, A(f.encoded));
			put64(f.body, off->body_location_label, A(s));
			err = rb_iseq_name(c, pid, gen++, off, NULL, A(f.iseq), pc, NOW0, &budget, &n);
			CHECK(err == -EINVAL, "a String of 2^50 bytes: -EINVAL (%d)", err);
			put64(s, off->rstring_len, 1 << 20);
			put64(s, off->rstring_ptr, A(obj(1 << 20)));
			err = rb_iseq_name(c, pid, gen++, off, NULL, A(f.iseq), pc, NOW0, &budget, &n);
			CHECK(!err && strlen(n.function) == RB_NAME_MAX,
			      "a 1 MiB label of NULs: cut to %d bytes of '?'", RB_NAME_MAX);
			put64(s, 0, off->t_string | 31ULL << off->rstring_embed_len_shift);
			err = rb_iseq_name(c, pid, gen++, off, NULL, A(f.iseq), pc, NOW0, &budget, &n);
			CHECK(err == -EINVAL, "an embedded String longer than its room: -EINVAL (%d)", err);
		}
		put64(f.body, off->body_location_label, saved);
		put64(f.body, off->body_location_first_lineno, 20);
		err = rb_iseq_name(c, pid, gen++, off, NULL, A(f.iseq), pc, NOW0, &budget, &n);
		CHECK(err == -EINVAL, "first_lineno not a Fixnum: -EINVAL (%d)", err);
		put64(f.body, off->body_location_first_lineno, 3);
		put32(f.body, off->body_insns_info_size, f.ninfo + 1);
		err = rb_iseq_name(c, pid, gen++, off, NULL, A(f.iseq), pc, NOW0, &budget, &n);
		CHECK(err == -EINVAL, "line table size and succinct table disagree: -EINVAL (%d)", err);
		put32(f.body, off->body_insns_info_size, f.ninfo);

		/* random bytes in the body, the line table, the strings */
		srand(11);
		for (int round = 0; round < 3000; round++) {
			uint8_t *victim = round % 3 == 0 ? f.body : round % 3 == 1 ? f.succ : f.iseq;
			size_t vlen = round % 3 == 0 ? 160 : round % 3 == 1 ? 48 : 24;
			uint8_t keep[160];

			memcpy(keep, victim, vlen);
			for (int k = 0; k < 1 + rand() % 4; k++)
				victim[rand() % vlen] = (uint8_t)rand();
			budget = RB_READ_BUDGET;
			err = rb_iseq_name(c, pid, gen++, off, NULL, A(f.iseq), pc, NOW0, &budget, &n);
			if (!err && (!n.function || !n.file))
				crashes_would_be_here++;
			memcpy(victim, keep, vlen);
		}
		CHECK(!crashes_would_be_here, "3000 random corruptions of an iseq: errors or names, no crash");
	}
	{
		/* a method entry whose svar points at itself, an iv table of garbage */
		uint8_t *svar = obj(40), *me;
		uint64_t keys[4] = { ID(1), 99, 0xdeadbeef, 0 }, vals[4] = { 12, 0, 0, 8 };

		put64(svar, 0, imemo_flags(off->imemo_svar));
		put64(svar, off->svar_cref_or_me, A(svar));
		budget = RB_READ_BUDGET;
		err = rb_method_frame_name(c, pid, gen++, off, &addrs, A(svar), 8, NOW0, &budget, &n);
		CHECK(err == -EINVAL, "an svar holding an svar: -EINVAL (%d)", err);
		me = fake_me(true, ID(1), A(fake_class(false, keys, vals, 4, 0)));
		err = rb_cme_name(c, pid, gen++, off, &addrs, A(me), 0, NOW0, &budget, &n);
		CHECK(!err && !strcmp(n.function, "__classpath__"),
		      "a class path that is no String: the method name alone (%s)", err ? "" : n.function);
	}
	rb_iseq_cache_free(c);
}

int main(void)
{
	struct remote_reader *rr = remote_reader_new();

	off = rb_offsets_find(3, 1, 2);
	CHECK(off != NULL && rr != NULL, "3.1 layout and a reader");
	if (!off || !rr)
		return 1;
	test_succ();
	test_symbols();
	test_names(rr);
	test_hostile(rr);
	remote_reader_free(rr);
	if (!failures)
		printf("all passed\n");
	return failures ? 1 : 0;
}
