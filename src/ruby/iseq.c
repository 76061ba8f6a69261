// SPDX-License-Identifier: GPL-2.0
/*
 * iseq.c - naming CRuby frames from a live process (see iseq.h).
 *
 * Owns: the cache of decoded objects (four kinds, one LRU: iseqs, method
 * entries, IDs, class names), what each kind is decoded from and
 * re-checked against, and the composition of a frame's name from them.
 * The object readers are rvalue.c's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpf/unwind_ruby.h"
#include "ruby/iseq.h"
#include "ruby/rvalue.h"
#include "ruby/symbols.h"
#include "runtime/addr_cache.h"
#include "util/heap_cost.h"

enum kind {
	K_ISEQ = 1,	/* rb_iseq_t: label, path, lines */
	K_ME,		/* a method entry (or the svar holding it) */
	K_ID,		/* an ID: its name */
	K_CLASS,	/* a class or module: its path ("" when it has none) */
};

#define NPRINT		10	/* fields compared on a recheck */
#define IMEMO_HDR	24	/* rb_iseq_t {flags, wrapper, body} */
#define BODY_MAX	256
#define ME_HDR		40	/* rb_callable_method_entry_t, vm_svar */
#define DEF_HDR		48
#define SUCC_MAX	(128u << 10)	/* bytes of a succinct line table read */

struct entry {
	struct addr_entry ae;	/* first: key (pid, gen, kind, address), links */
	uint64_t checked_ns;
	/* ISEQ, ME with GC epochs: first read at t_lo (CLOCK_MONOTONIC,
	 * taken before the read) in GC epoch epoch_lo, found unchanged by
	 * the latest read at t_hi, in epoch epoch_hi; epoch_lo NO_EPOCH:
	 * decoded without epochs */
	uint64_t epoch_lo, t_lo, epoch_hi, t_hi;
	int failed;		/* < 0: decoding failed (cached like a success) */
	uint64_t print[NPRINT];	/* what it was decoded from */
	char *name;		/* ISEQ: label; ME: cfunc: its full name, method:
				 * the owner prefix ("Foo#", "Foo.", ""); ID: the
				 * name; CLASS: the path */
	char *path;		/* ISEQ: location path */
	int first_line;		/* ISEQ */
	bool singleton;		/* CLASS: a singleton of a class or module
				 * (name is then the attached one's path) */
	bool unnamed;		/* ME: a C method named RB_CFUNC_UNNAMED */
	uint8_t def_type;	/* ME: rb_method_type_t */
	uint64_t encoded;	/* ISEQ: iseq_encoded */
	uint32_t iseq_size;	/* ISEQ: in VALUEs */
	uint64_t iseq;		/* ME of a Ruby method: its iseq */
	struct rv_lines lines;	/* ISEQ: its line table */
};

struct rb_iseq_cache {
	struct addr_cache *lru;
	struct remote_reader *remote;	/* borrowed */
	struct rb_iseq_stats st;
	/* the last GC count read, reused for the frames of one sample */
	pid_t gc_pid;
	uint64_t gc_gen, gc_now, gc_count;
	char fn[2 * RB_NAME_MAX + 4];	/* a method frame's composed name */
};

#define NO_EPOCH	UINT64_MAX

/* One naming call: where reads go, what the decoders need. */
struct ctx {
	struct rb_iseq_cache *c;
	pid_t pid;
	uint64_t gen, now;
	uint64_t epoch;		/* the sample's GC count; NO_EPOCH: none */
	bool quiet;		/* no GC was marking at the sample (PROFD_RB_GC_QUIET) */
	const struct rb_offsets *off;
	const struct rb_proc_addrs *addrs;	/* NULL: none (no ID table) */
	struct rv_reader rv;
};

static void entry_free(struct addr_entry *ae)
{
	struct entry *e = (struct entry *)ae;

	free(e->name);
	free(e->path);
	rv_lines_free(&e->lines);
	free(e);
}

static size_t entry_bytes(const struct entry *e)
{
	return heap_cost(sizeof(*e)) +
	       (e->name ? heap_cost(strlen(e->name) + 1) : 0) +
	       (e->path ? heap_cost(strlen(e->path) + 1) : 0) +
	       (e->lines.pos ? 2 * heap_cost((size_t)e->lines.n * 4) : 0);
}

struct rb_iseq_cache *rb_iseq_cache_new(struct remote_reader *reader,
					size_t max_entries, size_t max_bytes)
{
	struct rb_iseq_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->lru = addr_cache_new(max_entries, max_bytes, entry_free);
	if (!c->lru) {
		free(c);
		return NULL;
	}
	c->remote = reader;
	return c;
}

void rb_iseq_cache_free(struct rb_iseq_cache *c)
{
	if (!c)
		return;
	addr_cache_free(c->lru);
	free(c);
}

void rb_iseq_forget(struct rb_iseq_cache *c, const uint64_t *gens, size_t n)
{
	addr_cache_forget(c->lru, gens, n);
}

void rb_iseq_stats(struct rb_iseq_cache *c, struct rb_iseq_stats *out)
{
	struct addr_cache_counts n;

	addr_cache_counts(c->lru, &n);
	*out = c->st;
	out->entries = n.entries;
	out->bytes = n.bytes;
	out->evictions = n.evictions;
}

/* The type bits of an object's flags (the rest, GC age and the like, move). */
static uint64_t type_bits(const struct rb_offsets *off, uint64_t flags)
{
	return flags & ((uint64_t)off->t_mask |
			(uint64_t)off->imemo_mask << off->imemo_shift);
}

/* ------------------------------------------------------------------ */
/* iseqs */

static uint32_t body_len(const struct rb_offsets *off)
{
	const uint16_t f[] = {
		off->body_type, off->body_iseq_size, off->body_iseq_encoded,
		off->body_location_pathobj, off->body_location_label,
		off->body_location_first_lineno, off->body_insns_info_body,
		off->body_insns_info_positions, off->body_insns_info_size,
		off->body_insns_info_succ_index_table,
	};
	uint32_t len = 0;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i] + 8u > len)
			len = f[i] + 8u;
	return len;
}

/*
 * Read the iseq at @iseq and its body's header into @body, checking the
 * imemo type, and fill @print with what a name is decoded from.
 */
static int iseq_header(struct ctx *x, uint64_t iseq, uint8_t body[BODY_MAX],
		       uint64_t print[NPRINT])
{
	const struct rb_offsets *off = x->off;
	uint32_t blen = body_len(off), size;
	uint8_t hdr[IMEMO_HDR];
	uint64_t b;
	int err;

	if (blen > BODY_MAX || off->iseq_body + 8 > IMEMO_HDR || !rv_is_obj(iseq))
		return -EINVAL;
	err = rv_read(&x->rv, iseq, hdr, sizeof(hdr));
	if (err)
		return err;
	if (rv_imemo_type(off, rv_u64(hdr, 0)) != off->imemo_iseq)
		return -EINVAL;
	b = rv_u64(hdr, off->iseq_body);
	if (!rv_is_obj(b))
		return -EINVAL;
	err = rv_read(&x->rv, b, body, blen);
	if (err)
		return err;
	size = rv_u32(body, off->body_iseq_size);
	if (rv_u32(body, off->body_type) > off->iseq_type_plain || !size ||
	    size > RB_ISEQ_SIZE_MAX || !rv_is_obj(rv_u64(body, off->body_iseq_encoded)))
		return -EINVAL;
	print[0] = type_bits(off, rv_u64(hdr, 0));
	print[1] = b;
	print[2] = (uint64_t)rv_u32(body, off->body_type) << 32 | size;
	print[3] = rv_u64(body, off->body_iseq_encoded);
	print[4] = rv_u64(body, off->body_location_pathobj);
	print[5] = rv_u64(body, off->body_location_label);
	print[6] = rv_u64(body, off->body_location_first_lineno);
	print[7] = rv_u64(body, off->body_insns_info_body);
	print[8] = rv_u64(body, off->body_insns_info_positions) ^
		   rv_u64(body, off->body_insns_info_succ_index_table);
	print[9] = rv_u32(body, off->body_insns_info_size);
	return 0;
}

static int iseq_decode(struct ctx *x, uint64_t iseq, struct entry *e)
{
	const struct rb_offsets *off = x->off;
	uint8_t body[BODY_MAX];
	uint64_t pathobj, first;
	int err;

	err = iseq_header(x, iseq, body, e->print);
	if (err)
		return err;
	e->encoded = rv_u64(body, off->body_iseq_encoded);
	e->iseq_size = rv_u32(body, off->body_iseq_size);
	if (rv_u32(body, off->body_type) == off->iseq_type_eval) {
		e->name = strdup(RB_EVAL_UNNAMED);
		e->path = strdup("");
		e->first_line = 0;
		return e->name && e->path ? 0 : -ENOMEM;
	}
	first = rv_u64(body, off->body_location_first_lineno);
	if (!(first & 1))
		return -EINVAL;	/* not a Fixnum */
	e->first_line = (int)((int64_t)first >> 1);
	err = rv_string(&x->rv, off, rv_u64(body, off->body_location_label), &e->name);
	if (err)
		return err;
	/* rb_iseq_path(): a String, or [path, realpath] */
	pathobj = rv_u64(body, off->body_location_pathobj);
	err = rv_string(&x->rv, off, pathobj, &e->path);
	if (err == -EINVAL) {
		uint64_t p;

		err = rv_array_at(&x->rv, off, pathobj, 0, &p);
		if (!err)
			err = rv_string(&x->rv, off, p, &e->path);
		else if (err == -ENOENT)
			err = -EINVAL;
	}
	if (err)
		return err;
	return rv_iseq_lines(&x->rv, off, body, e->iseq_size, SUCC_MAX, &e->lines);
}

/* The line of the instruction before @pc (calc_pos(), vm_backtrace.c). */
static int line_at(const struct entry *e, uint64_t pc)
{
	uint64_t pos = (pc - e->encoded) / 8;

	if (!pc || !e->lines.n)
		return e->first_line;
	return rv_lines_at(&e->lines, pos ? pos - 1 : 0);	/* pc is past the instruction */
}

/* ------------------------------------------------------------------ */
/* method entries */

/*
 * Read the method entry at @addr (or the one the svar there holds) and
 * its definition, checking their types; fill @print.
 */
static int me_header(struct ctx *x, uint64_t addr, uint8_t cme[ME_HDR],
		     uint8_t def[DEF_HDR], uint64_t print[NPRINT])
{
	const struct rb_offsets *off = x->off;
	uint64_t d;
	int err, t;

	if (off->cme_owner + 8 > ME_HDR || off->cme_def + 8 > ME_HDR ||
	    off->cme_called_id + 8 > ME_HDR || off->svar_cref_or_me + 8 > ME_HDR ||
	    off->def_original_id + 8 > DEF_HDR || off->def_iseq_ptr + 8 > DEF_HDR ||
	    off->def_type + 4 > DEF_HDR || !rv_is_obj(addr))
		return -EINVAL;
	err = rv_read(&x->rv, addr, cme, ME_HDR);
	if (err)
		return err;
	t = rv_imemo_type(off, rv_u64(cme, 0));
	print[0] = type_bits(off, rv_u64(cme, 0));
	print[1] = 0;
	if (t == off->imemo_svar) {
		uint64_t me = rv_u64(cme, off->svar_cref_or_me);

		print[1] = me;
		if (!rv_is_obj(me))
			return -EINVAL;
		err = rv_read(&x->rv, me, cme, ME_HDR);
		if (err)
			return err;
		t = rv_imemo_type(off, rv_u64(cme, 0));
	}
	if (t != off->imemo_ment)
		return -EINVAL;
	d = rv_u64(cme, off->cme_def);
	if (!rv_is_obj(d))
		return -EINVAL;
	err = rv_read(&x->rv, d, def, DEF_HDR);
	if (err)
		return err;
	print[2] = type_bits(off, rv_u64(cme, 0));
	print[3] = d;
	print[4] = rv_u64(cme, off->cme_owner);
	print[5] = rv_u64(cme, off->cme_called_id);
	print[6] = rv_u32(def, off->def_type) & 0xf;
	print[7] = rv_u64(def, off->def_original_id);
	print[8] = rv_u64(def, off->def_iseq_ptr);
	return 0;
}

static struct entry *get(struct ctx *x, enum kind k, uint64_t addr, int *err);

/* The name of ID @id (no ID table: -ENOENT). The result is the cache's:
 * use it before the next get(). */
static const char *id_name(struct ctx *x, uint64_t id, int *err)
{
	struct entry *e = get(x, K_ID, id, err);

	return e ? e->name : NULL;
}

static int id_decode(struct ctx *x, uint64_t id, struct entry *e)
{
	const struct rb_offsets *off = x->off;
	const char *op = rb_op_name(off, id);
	uint8_t hdr[32];
	uint64_t serial, ids, chunk, str, gs = x->addrs ? x->addrs->global_symbols : 0;
	uint32_t last;
	int err;

	if (op) {
		e->name = strdup(op);
		return e->name ? 0 : -ENOMEM;
	}
	if (!gs || off->symbols_ids + 8u > sizeof(hdr) || off->symbols_last_id + 4u > sizeof(hdr) ||
	    !off->id_entry_unit || !off->id_entry_size)
		return -ENOENT;
	serial = id > off->last_op_id ? id >> off->id_scope_shift : id;
	err = rv_read(&x->rv, gs, hdr, sizeof(hdr));
	if (err)
		return err;
	last = rv_u32(hdr, off->symbols_last_id);
	ids = rv_u64(hdr, off->symbols_ids);
	if (!serial || serial > last)
		return -ENOENT;
	err = rv_array_at(&x->rv, off, ids, serial / off->id_entry_unit, &chunk);
	if (!err && !rv_is_obj(chunk))
		err = -ENOENT;	/* nil: no IDs there */
	if (!err)
		err = rv_array_at(&x->rv, off, chunk,
				  (serial % off->id_entry_unit) * off->id_entry_size, &str);
	if (!err && !rv_is_obj(str))
		err = -ENOENT;
	if (!err)
		err = rv_string(&x->rv, off, str, &e->name);
	return err;
}

/*
 * The value of the ivar named @want among @keys/@vals (@n) into *@out (0:
 * none). Returns 0, or -EAGAIN (budget spent naming the keys).
 */
static int ivar_named(struct ctx *x, const uint64_t *keys, const uint64_t *vals,
		      int n, const char *want, uint64_t *out)
{
	*out = 0;
	for (int i = 0; i < n; i++) {
		int err = 0;
		const char *s = id_name(x, keys[i], &err);

		if (s && !strcmp(s, want)) {
			*out = vals[i];
			return 0;
		}
		if (!s && err == -EAGAIN)
			return err;
	}
	return 0;
}

/* The permanent path of class or module @klass (variable.c: classname()). */
static int classpath(struct ctx *x, uint64_t klass, char **out)
{
	uint64_t keys[RV_IVTBL_MAX], vals[RV_IVTBL_MAX], v;
	int n = rv_class_ivars(&x->rv, x->off, klass, keys, vals, RV_IVTBL_MAX), err;

	if (n < 0)
		return n;
	err = ivar_named(x, keys, vals, n, "__classpath__", &v);
	if (err)
		return err;
	if (!v)
		return -ENOENT;	/* anonymous (or only a temporary path) */
	return rv_string(&x->rv, x->off, v, out);
}

/* rb_profile_frame_classpath() (vm_backtrace.c) of owner @klass. */
static int class_decode(struct ctx *x, uint64_t klass, struct entry *e)
{
	const struct rb_offsets *off = x->off;
	uint64_t hdr[2], keys[RV_IVTBL_MAX], vals[RV_IVTBL_MAX], att, aflags;
	unsigned int t;
	int err, n;

	if (!rv_is_obj(klass) || off->rbasic_klass != 8)
		return -EINVAL;
	err = rv_read(&x->rv, klass, hdr, sizeof(hdr));
	if (err)
		return err;
	t = rv_type(off, hdr[0]);
	if (t == off->t_iclass) {	/* an included module's proxy: the module */
		klass = hdr[1];
		if (!rv_is_obj(klass))
			return -EINVAL;
		err = rv_read(&x->rv, klass, hdr, sizeof(hdr));
		if (err)
			return err;
		t = rv_type(off, hdr[0]);
	}
	if (t != off->t_class && t != off->t_module)
		return -EINVAL;
	if (t == off->t_class && (hdr[0] & off->fl_singleton)) {
		n = rv_class_ivars(&x->rv, off, klass, keys, vals, RV_IVTBL_MAX);
		if (n < 0)
			return n;
		err = ivar_named(x, keys, vals, n, "__attached__", &att);
		if (err)
			return err;
		if (!rv_is_obj(att))
			return -ENOENT;
		err = rv_read(&x->rv, att, &aflags, sizeof(aflags));
		if (err)
			return err;
		if (rv_type(off, aflags) != off->t_class && rv_type(off, aflags) != off->t_module)
			return -ENOENT;	/* a plain object's: "#<Foo:0x...>" in Ruby */
		e->singleton = true;
		klass = att;
	}
	return classpath(x, klass, &e->name);
}

/*
 * "Owner#" / "Owner." of a method entry's @owner into *@out (malloc), ""
 * when it has no readable name. Returns 0, -EAGAIN or -ENOMEM.
 */
static int owner_prefix(struct ctx *x, uint64_t owner, char **out)
{
	int err = 0;
	struct entry *o = get(x, K_CLASS, owner, &err);

	*out = NULL;
	if (!o && (err == -EAGAIN || err == -ENOMEM))
		return err;
	if (!o || !o->name)
		*out = strdup("");
	else if (asprintf(out, "%s%c", o->name, o->singleton ? '.' : '#') < 0)
		*out = NULL;
	return *out ? 0 : -ENOMEM;
}

static int me_decode(struct ctx *x, uint64_t addr, struct entry *e)
{
	const struct rb_offsets *off = x->off;
	uint8_t cme[ME_HDR], def[DEF_HDR];
	uint64_t owner;
	char *prefix;
	int err;

	err = me_header(x, addr, cme, def, e->print);
	if (err)
		return err;
	owner = rv_u64(cme, off->cme_owner);
	e->def_type = rv_u32(def, off->def_type) & 0xf;
	if (e->def_type == off->method_type_iseq) {
		e->iseq = rv_u64(def, off->def_iseq_ptr);
		if (!rv_is_obj(e->iseq))
			return -EINVAL;
		return owner_prefix(x, owner, &e->name);
	}
	if (e->def_type != off->method_type_cfunc)
		return -EINVAL;
	{
		uint64_t id = rv_u64(def, off->def_original_id);
		const char *mname;
		char *name;

		if (!id)
			id = rv_u64(cme, off->cme_called_id);
		mname = id_name(x, id, &err);
		if (!mname) {
			if (err == -EAGAIN)
				return err;
			e->unnamed = true;
			e->name = strdup(RB_CFUNC_UNNAMED);
			return e->name ? 0 : -ENOMEM;
		}
		name = strdup(mname);	/* the next get() may evict it */
		if (!name)
			return -ENOMEM;
		err = owner_prefix(x, owner, &prefix);
		if (!err && asprintf(&e->name, "%s%s", prefix, name) < 0) {
			e->name = NULL;
			err = -ENOMEM;
		}
		free(prefix);
		free(name);
		return err;
	}
}

/* ------------------------------------------------------------------ */
/* the cache */

static int decode(struct ctx *x, enum kind k, uint64_t addr, struct entry *e)
{
	switch (k) {
	case K_ISEQ:
		return iseq_decode(x, addr, e);
	case K_ME:
		return me_decode(x, addr, e);
	case K_ID:
		return id_decode(x, addr, e);
	case K_CLASS:
		return class_decode(x, addr, e);
	}
	return -EINVAL;
}

/*
 * A new entry for object @addr of kind @k, decoded now (not inserted);
 * a failed decode is an entry too (e->failed), cached like a success.
 * NULL and *@err when the failure is not the object's (budget, memory).
 */
static struct entry *fresh_entry(struct ctx *x, enum kind k, uint64_t addr, int *err)
{
	struct entry *e = calloc(1, sizeof(*e));
	int ret;

	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	e->ae.pid = x->pid;
	e->ae.gen = x->gen;
	e->ae.kind = k;
	e->ae.addr = addr;
	e->epoch_lo = NO_EPOCH;
	ret = decode(x, k, addr, e);
	x->c->st.reads++;
	if (ret == -EAGAIN || ret == -ENOMEM) {	/* not the object's fault */
		entry_free(&e->ae);
		*err = ret;
		return NULL;
	}
	if (ret) {
		free(e->name);
		free(e->path);
		e->name = e->path = NULL;
		rv_lines_free(&e->lines);
	}
	e->failed = ret;
	e->checked_ns = x->now;
	return e;
}

/* Whether @e still describes the object at its address (one or two reads). */
static int recheck(struct ctx *x, struct entry *e)
{
	uint64_t print[NPRINT] = { 0 };
	uint8_t a[BODY_MAX], b[DEF_HDR];
	int err;

	switch ((enum kind)e->ae.kind) {
	case K_ISEQ:
		err = iseq_header(x, e->ae.addr, a, print);
		break;
	case K_ME:
		err = me_header(x, e->ae.addr, a, b, print);
		break;
	default:
		return -ESTALE;	/* a class: read it again */
	}
	if (err)
		return err;
	return memcmp(print, e->print, sizeof(print)) ? -ESTALE : 0;
}

/* The process's GC count now (*@fresh: read again, not the sample's). */
static int gc_count_now(struct ctx *x, bool fresh, uint64_t *out)
{
	struct rb_iseq_cache *c = x->c;
	uint64_t v;
	int err;

	if (!fresh && c->gc_pid == x->pid && c->gc_gen == x->gen && c->gc_now == x->now) {
		*out = c->gc_count;
		return 0;
	}
	if ((err = rv_read(&x->rv, x->addrs->gc_count, &v, sizeof(v))))
		return err;
	c->gc_pid = x->pid;
	c->gc_gen = x->gen;
	c->gc_now = x->now;
	c->gc_count = v;
	*out = v;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Whether entry @e names the object the sample (taken at x->now) saw at
 * its address (bpf/unwind_ruby.h): the same content was read before and
 * after the sample (no object A -> B -> A with every field equal in
 * between), or the sample was quiet and a read after it ended in its GC
 * epoch (the object then lives until the next cycle sweeps). A read after
 * a sample taken while a GC was marking proves nothing: a frame that
 * returns before its iseq is marked lets the iseq be freed, and its
 * memory reused, in that cycle.
 */
static bool epoch_covers(const struct ctx *x, const struct entry *e)
{
	if (e->epoch_lo == NO_EPOCH)
		return false;
	if (e->t_lo <= x->now && x->now <= e->t_hi)
		return true;
	return x->quiet && ((x->now <= e->t_lo && e->epoch_lo == x->epoch) ||
			    (x->now <= e->t_hi && e->epoch_hi == x->epoch));
}

/*
 * Read (decode or re-check @e) between two reads of the GC count: the
 * count and the time taken before it in *@epoch and *@t; -EAGAIN when a
 * GC started during the read.
 */
static int read_in_epoch(struct ctx *x, enum kind k, uint64_t addr, struct entry **e,
			 uint64_t *epoch, uint64_t *t)
{
	uint64_t after;
	int ret = 0;

	if ((ret = gc_count_now(x, true, epoch)))
		return ret;
	*t = mono_ns();
	if (*e)
		ret = recheck(x, *e);
	else if (!(*e = fresh_entry(x, k, addr, &ret)))
		return ret;	/* (a decoding failure is the entry's: failed) */
	if (ret)
		return ret;
	if ((ret = gc_count_now(x, true, &after)))
		return ret;
	return after == *epoch ? 0 : -EAGAIN;
}

/*
 * get() of an iseq or method entry under GC epochs (bpf/unwind_ruby.h):
 * the entry is given only when epoch_covers() the sample, after a read
 * now if one can tell; else -ESTALE (the object may have been freed and
 * its memory reused by another since the sample). A read during which a
 * GC started is not trusted (-EAGAIN, not cached).
 */
static struct entry *get_epoch(struct ctx *x, enum kind k, uint64_t addr,
			       struct entry *e, int *err)
{
	struct rb_iseq_cache *c = x->c;
	struct entry *fresh = NULL;
	uint64_t epoch, t;
	int ret;

	if (e && epoch_covers(x, e))
		goto hit;
	if (e && (e->failed || e->epoch_lo == NO_EPOCH || (!x->quiet && x->now < e->t_lo))) {
		if (e->failed || e->epoch_lo == NO_EPOCH)
			goto replace;
		*err = -ESTALE;	/* nothing read now could tell what the sample saw */
		return NULL;
	}
	if (e) {
		ret = read_in_epoch(x, k, addr, &e, &epoch, &t);
		if (!ret) {
			c->st.rechecks++;
			e->t_hi = t;	/* unchanged since t_lo */
			e->epoch_hi = epoch;
			e->checked_ns = x->now;
			if (epoch_covers(x, e))
				goto hit;
			*err = -ESTALE;
			return NULL;
		}
		if (ret != -ESTALE) {
			*err = ret;
			return NULL;
		}
	}
replace:
	if (e)
		addr_cache_remove(c->lru, &e->ae);
	ret = read_in_epoch(x, k, addr, &fresh, &epoch, &t);
	if (ret) {
		if (fresh)
			entry_free(&fresh->ae);
		*err = ret;
		return NULL;
	}
	e = fresh;
	e->epoch_lo = e->epoch_hi = epoch;
	e->t_lo = e->t_hi = t;
	addr_cache_insert(c->lru, &e->ae, entry_bytes(e));
	if (!epoch_covers(x, e)) {
		*err = -ESTALE;		/* the sample's object is unknown */
		return NULL;
	}
	if (e->failed) {
		*err = e->failed;
		return NULL;
	}
	return e;
hit:
	c->st.hits++;
	addr_cache_touch(c->lru, &e->ae);
	if (e->failed) {
		*err = e->failed;
		return NULL;
	}
	return e;
}

/*
 * The entry of object @addr of kind @k, from the cache or decoded now;
 * NULL and *@err on failure. The entry is the cache's, valid until the
 * next get() (which may evict it).
 */
static struct entry *get(struct ctx *x, enum kind k, uint64_t addr, int *err)
{
	struct rb_iseq_cache *c = x->c;
	struct entry *e = (struct entry *)addr_cache_lookup(c->lru, x->pid, x->gen, k, addr);
	int ret;

	if (x->epoch != NO_EPOCH && (k == K_ISEQ || k == K_ME))
		return get_epoch(x, k, addr, e, err);
	if (e && ((k == K_ID && !e->failed) ||
		  x->now - e->checked_ns < RB_ISEQ_RECHECK_NS)) {
		c->st.hits++;
		addr_cache_touch(c->lru, &e->ae);
		if (e->failed) {
			*err = e->failed;
			return NULL;
		}
		return e;
	}
	if (e && !e->failed) {
		ret = recheck(x, e);
		if (!ret || ret == -ETIMEDOUT || ret == -EAGAIN) {
			/* unchanged (or unreadable now: keep what was read) */
			c->st.rechecks += !ret;
			if (!ret)
				e->checked_ns = x->now;
			addr_cache_touch(c->lru, &e->ae);
			return e;
		}
	}
	if (e)
		addr_cache_remove(c->lru, &e->ae);
	e = fresh_entry(x, k, addr, err);
	if (!e)
		return NULL;
	ret = e->failed;
	addr_cache_insert(c->lru, &e->ae, entry_bytes(e));
	if (ret) {
		*err = ret;
		return NULL;
	}
	return e;
}

/*
 * A naming call's context. @w1 is the frame's second word: the sample's
 * GC epoch (low 15 bits) when PROFD_RB_EPOCH is set, made whole from the
 * process's count now (samples are seconds old at most, the count's low
 * bits wrap after 32768 GCs), and whether the sample was quiet.
 */
static void ctx_init(struct ctx *x, struct rb_iseq_cache *c, pid_t pid, uint64_t gen,
		     const struct rb_offsets *off, const struct rb_proc_addrs *addrs,
		     uint64_t w1, uint64_t now, size_t *budget)
{
	uint64_t count;

	*x = (struct ctx){
		.c = c, .pid = pid, .gen = gen, .now = now, .off = off, .addrs = addrs,
		.epoch = NO_EPOCH,
		.rv = { .remote = c->remote, .pid = pid, .budget = budget,
			.timeouts = &c->st.timeouts },
	};
	if ((w1 & PROFD_RB_EPOCH) && addrs && addrs->gc_count &&
	    !gc_count_now(x, false, &count))
	{
		x->epoch = count - ((count - (w1 >> PROFD_RB_EPOCH_SHIFT)) & PROFD_RB_EPOCH_MASK);
		x->quiet = w1 & PROFD_RB_GC_QUIET;
	}
}

static int fail(struct rb_iseq_cache *c, int err)
{
	c->st.errors++;
	return err;
}

/* Name iseq frame @iseq at @pc into @out (function = the label). */
static int name_iseq(struct ctx *x, uint64_t iseq, uint64_t w1, struct rb_frame_name *out)
{
	uint64_t pc = w1 & PROFD_RB_PC_MASK;
	int err = 0;
	struct entry *e = get(x, K_ISEQ, iseq, &err);

	if (!e)
		return err;
	if (pc && (pc < e->encoded || pc > e->encoded + (uint64_t)e->iseq_size * 8 ||
		   (pc - e->encoded) % 8))
		return -ESTALE;
	out->function = e->name;
	out->file = e->path;
	out->first_line = e->first_line;
	out->line = line_at(e, pc);
	return 0;
}

int rb_iseq_name(struct rb_iseq_cache *c, pid_t pid, uint64_t gen,
		 const struct rb_offsets *off, const struct rb_proc_addrs *addrs,
		 uint64_t iseq, uint64_t w1, uint64_t now_ns, size_t *budget,
		 struct rb_frame_name *out)
{
	struct ctx x;
	int err;

	ctx_init(&x, c, pid, gen, off, addrs, w1, now_ns, budget);
	err = name_iseq(&x, iseq, w1, out);
	return err ? fail(c, err) : 0;
}

int rb_method_frame_name(struct rb_iseq_cache *c, pid_t pid, uint64_t gen,
			 const struct rb_offsets *off,
			 const struct rb_proc_addrs *addrs, uint64_t me_or_svar,
			 uint64_t w1, uint64_t now_ns, size_t *budget,
			 struct rb_frame_name *out)
{
	char prefix[RB_NAME_MAX + 2];
	struct entry *me;
	struct ctx x;
	uint64_t iseq;
	int err = 0;

	ctx_init(&x, c, pid, gen, off, addrs, w1, now_ns, budget);
	me = get(&x, K_ME, me_or_svar, &err);
	if (!me)
		return fail(c, err);
	if (me->def_type != off->method_type_iseq)
		return fail(c, -EINVAL);
	/* copied: naming the iseq may evict the method entry */
	snprintf(prefix, sizeof(prefix), "%s", me->name);
	iseq = me->iseq;
	err = name_iseq(&x, iseq, w1, out);
	if (err)
		return fail(c, err);
	snprintf(c->fn, sizeof(c->fn), "%s%s", prefix, out->function);
	out->function = c->fn;
	return 0;
}

int rb_cme_name(struct rb_iseq_cache *c, pid_t pid, uint64_t gen,
		const struct rb_offsets *off, const struct rb_proc_addrs *addrs,
		uint64_t cme, uint64_t w1, uint64_t now_ns, size_t *budget,
		struct rb_frame_name *out)
{
	struct entry *e;
	struct ctx x;
	int err = 0;

	ctx_init(&x, c, pid, gen, off, addrs, w1, now_ns, budget);
	e = get(&x, K_ME, cme, &err);
	if (!e)
		return fail(c, err);
	if (e->def_type != off->method_type_cfunc)
		return fail(c, -EINVAL);
	c->st.unnamed += e->unnamed;
	out->function = e->name;
	out->file = "";
	out->line = 0;
	out->first_line = 0;
	return 0;
}
