// SPDX-License-Identifier: GPL-2.0
/*
 * iseq.c - naming CRuby frames from a live process (see iseq.h).
 *
 * Owns: what each kind of object (iseqs, method entries, IDs, class
 * names) is decoded from and re-checked against, and the composition of
 * a frame's name from them. The cache and its GC-epoch rule are
 * iseq_cache.c's, the object readers rvalue.c's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/unwind_ruby.h"
#include "ruby/iseq_internal.h"
#include "ruby/symbols.h"

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
		off->body_insns_info_succ_index_table, off->body_parent_iseq,
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
int rb_iseq_header(struct ctx *x, uint64_t iseq, uint8_t body[BODY_MAX],
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

/* The label and path of the iseq whose body is @body (caller frees). */
int rb_iseq_strings(struct ctx *x, const uint8_t *body, char **label, char **path)
{
	const struct rb_offsets *off = x->off;
	uint64_t pathobj, p;
	int err;

	*label = *path = NULL;
	err = rv_string(&x->rv, off, rv_u64(body, off->body_location_label), label);
	if (err)
		return err;
	/* rb_iseq_path(): a String, or [path, realpath] */
	pathobj = rv_u64(body, off->body_location_pathobj);
	err = rv_string(&x->rv, off, pathobj, path);
	if (err == -EINVAL) {
		err = rv_array_at(&x->rv, off, pathobj, 0, &p);
		if (!err)
			err = rv_string(&x->rv, off, p, path);
		else if (err == -ENOENT)
			err = -EINVAL;
	}
	if (err) {
		free(*label);
		*label = NULL;
	}
	return err;
}

/* Parent iseqs looked at to tell whether a block is in eval'd code. */
#define EVAL_SCOPE_MAX	16

/*
 * Whether the iseq whose body header is @body is eval'd code, or a block
 * (rescue, ensure clause) whose nearest enclosing iseq that is not one is
 * eval'd code: compiled anew on every call and freed soon after. An
 * unreadable parent counts as eval'd (the stricter rule).
 */
static bool in_eval(struct ctx *x, const uint8_t *body)
{
	const struct rb_offsets *off = x->off;
	uint8_t buf[BODY_MAX];
	uint64_t print[NPRINT];
	uint32_t type = rv_u32(body, off->body_type);
	uint64_t parent = rv_u64(body, off->body_parent_iseq);

	for (int depth = 0; depth < EVAL_SCOPE_MAX; depth++) {
		if (type == off->iseq_type_eval)
			return true;
		if (type != off->iseq_type_block && type != off->iseq_type_rescue &&
		    type != off->iseq_type_ensure && type != off->iseq_type_plain)
			return false;
		if (!parent || rb_iseq_header(x, parent, buf, print))
			return true;
		type = rv_u32(buf, off->body_type);
		parent = rv_u64(buf, off->body_parent_iseq);
	}
	return true;
}

static int iseq_decode(struct ctx *x, uint64_t iseq, struct entry *e)
{
	const struct rb_offsets *off = x->off;
	uint8_t body[BODY_MAX];
	uint64_t first;
	int err;

	err = rb_iseq_header(x, iseq, body, e->print);
	if (err)
		return err;
	e->encoded = rv_u64(body, off->body_iseq_encoded);
	e->iseq_size = rv_u32(body, off->body_iseq_size);
	e->eval = in_eval(x, body);
	first = rv_u64(body, off->body_location_first_lineno);
	if (!(first & 1))
		return -EINVAL;	/* not a Fixnum */
	e->first_line = (int)((int64_t)first >> 1);
	err = rb_iseq_strings(x, body, &e->name, &e->path);
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
int rb_me_header(struct ctx *x, uint64_t addr, uint8_t cme[ME_HDR],
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

/* The name of ID @id (no ID table: -ENOENT). The result is the cache's:
 * use it before the next rb_obj_get(). */
static const char *id_name(struct ctx *x, uint64_t id, int *err)
{
	struct entry *e = rb_obj_get(x, K_ID, id, err);

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
	struct entry *o = rb_obj_get(x, K_CLASS, owner, &err);

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

	err = rb_me_header(x, addr, cme, def, e->print);
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
		name = strdup(mname);	/* the next rb_obj_get() may evict it */
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

int rb_obj_decode(struct ctx *x, enum kind k, uint64_t addr, struct entry *e)
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
	struct entry *e = rb_obj_get(x, K_ISEQ, iseq, &err);

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

	rb_ctx_init(&x, c, pid, gen, off, addrs, w1, now_ns, budget);
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

	rb_ctx_init(&x, c, pid, gen, off, addrs, w1, now_ns, budget);
	me = rb_obj_get(&x, K_ME, me_or_svar, &err);
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

	rb_ctx_init(&x, c, pid, gen, off, addrs, w1, now_ns, budget);
	e = rb_obj_get(&x, K_ME, cme, &err);
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
