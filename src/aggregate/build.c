// SPDX-License-Identifier: GPL-2.0
/*
 * build.c - turning one interval's stacks into a pprof-model profile.
 *
 * Owns: the symbolization of every distinct stack (kallsyms for kernel
 * frames, the snapshot's ELF objects for user frames) and the mapping,
 * function, location and label layout of profd's CPU profiles, the
 * per-process metadata labels included (shared with the GPU profiles).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/aggregate.h"
#include "aggregate/wait.h"
#include "bpf/profd.h"
#include "counters/counters.h"
#include "proc/process_jit.h"

#define KERNEL_MAPPING_NAME "[kernel.kallsyms]"
/* The mapping of JIT code named from the process's perf map or jitdump. */
#define JIT_MAPPING_NAME "[jit]"
#define KERNEL_START 0xffff800000000000ULL

/* (snapshot, mapping index) -> profile mapping id, open addressing. */
struct mapping_key {
	const struct proc_snapshot *snap;
	int idx;
	uint32_t id;
};

struct stack_builder {
	struct profile *p;
	const struct build_opts *o;
	struct mapping_key *mkeys;
	uint32_t mcap, mn;
	uint32_t kernel_mapping;
	uint32_t runtime_mapping[PROFD_RUNTIME_END];	/* by runtime id, added on first use */
	uint32_t jit_mapping;	/* "[jit]" for JIT code outside every mapping */
	uint32_t truncated_location;
	uint32_t *locs;		/* scratch: location ids of one stack */
};

static uint64_t key_hash(const struct proc_snapshot *snap, int idx)
{
	uint64_t h = (uintptr_t)snap * 0x9e3779b97f4a7c15ULL ^ (uint64_t)idx;

	return h ^ (h >> 29);
}

static int mkeys_grow(struct stack_builder *b)
{
	uint32_t ncap = b->mcap ? b->mcap * 2 : 256;
	struct mapping_key *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->mcap; i++) {
		uint32_t j;

		if (!b->mkeys[i].id)
			continue;
		j = key_hash(b->mkeys[i].snap, b->mkeys[i].idx) & (ncap - 1);
		while (n[j].id)
			j = (j + 1) & (ncap - 1);
		n[j] = b->mkeys[i];
	}
	free(b->mkeys);
	b->mkeys = n;
	b->mcap = ncap;
	return 0;
}

static uint32_t user_mapping_id(struct stack_builder *b, struct proc_snapshot *snap,
				int idx)
{
	const struct proc_mapping *m = &snap->maps.v[idx];
	struct sym_object *obj = proc_snapshot_object(snap, idx, NULL);
	uint32_t j;

	if ((b->mn + 1) * 2 > b->mcap && mkeys_grow(b))
		return 0;
	j = key_hash(snap, idx) & (b->mcap - 1);
	while (b->mkeys[j].id) {
		if (b->mkeys[j].snap == snap && b->mkeys[j].idx == idx)
			return b->mkeys[j].id;
		j = (j + 1) & (b->mcap - 1);
	}
	b->mkeys[j].snap = snap;
	b->mkeys[j].idx = idx;
	b->mkeys[j].id = profile_add_mapping(b->p, m->start, m->end, m->offset,
					     m->path[0] ? m->path :
					     jit_syms_found(proc_snapshot_jit(snap)) ? JIT_MAPPING_NAME :
					     "[anon]",
					     obj ? sym_object_build_id(obj) : "");
	if (b->mkeys[j].id)
		b->mn++;
	return b->mkeys[j].id;
}

/* User locations written unsymbolized, by why (user_location()). */
COUNTER_DEFINE(file_pending, COUNTER_PARTIAL,
	       "frames left unsymbolized: their file's read-ahead was not done yet");
COUNTER_DEFINE(file_hung, COUNTER_PARTIAL,
	       "frames left unsymbolized: their file's reads hung");
COUNTER_DEFINE(symbols_shed, COUNTER_PARTIAL,
	       "frames left unsymbolized: their symbol table was shed for the "
	       "memory budget and not read back yet");
COUNTER_DEFINE(symbols_too_big, COUNTER_PARTIAL,
	       "frames left unsymbolized: their object's symbol table is larger "
	       "than the whole symbol cache budget, so it is not read");
COUNTER_DEFINE(symbols_pending_debuginfod, COUNTER_PARTIAL,
	       "frames left unsymbolized: their object's debug file was being "
	       "fetched from debuginfod (named from a later interval on)");
COUNTER_DEFINE(symbols_debuginfod_missing, COUNTER_PARTIAL,
	       "frames left unsymbolized: their object has no symbols of its own "
	       "and debuginfod gave no debug file for it (not found, or the fetch "
	       "failed: stat.debuginfod_*; asked again later)");

COUNTER_DEFINE(jit_unknown, COUNTER_PARTIAL,
	       "JIT frames left unnamed: no perf map / jitdump entry held their "
	       "address when the sample was taken (or it was left out for the budget)");
COUNTER_DEFINE(jit_ambiguous, COUNTER_PARTIAL,
	       "JIT frames left unnamed: the code at their address changed within "
	       "the sample's time bin (or the entries there were too many to tell)");

static uint32_t kernel_location(struct stack_builder *b, uint64_t ip, bool leaf)
{
	const struct ksym *ks = NULL;
	uint32_t fn = 0;
	char name[256];

	if (b->o->ksyms)
		ks = kallsyms_lookup(b->o->ksyms, leaf ? ip : ip - 1);
	if (ks) {
		if (ks->module && ks->module[0]) {
			snprintf(name, sizeof(name), "%s [%s]", ks->name, ks->module);
			fn = profile_function_id(b->p, name, ks->name, "");
		} else {
			fn = profile_function_id(b->p, ks->name, ks->name, "");
		}
	}
	return profile_location_id(b->p, b->kernel_mapping, ip, fn, 0);
}

/*
 * The function and line of each level of @fr[0..n-1] (innermost first,
 * the last the symbol table's function) into @inl (the inlined levels)
 * and *@fn, *@line (the last). Lock held: the strings are the object's.
 */
static uint32_t frames_lines(struct stack_builder *b, const struct sym_frame *fr,
			     int n, struct profile_line *inl, uint32_t *fn,
			     int64_t *line)
{
	uint32_t ninl = 0;

	for (int i = 0; i < n - 1; i++) {
		inl[ninl].function_id = profile_function_id(b->p, fr[i].name,
							    fr[i].system_name,
							    fr[i].file ? fr[i].file : "");
		inl[ninl].line = fr[i].line;
		if (inl[ninl].function_id)
			ninl++;
	}
	*fn = profile_function_id(b->p, fr[n - 1].name, fr[n - 1].system_name,
				  fr[n - 1].file ? fr[n - 1].file : "");
	*line = fr[n - 1].line;
	return ninl;
}

/*
 * Name JIT frame @lookup of @snap (in anonymous executable memory, or no
 * mapping) by the code there in @time_bin (0: any time) from the
 * process's perf map / jitdump: *@fn and *@line, or nothing (counted).
 */
static void jit_name(struct stack_builder *b, struct proc_snapshot *snap,
		     uint64_t lookup, uint32_t time_bin, uint32_t *fn, int64_t *line)
{
	uint64_t lo = 0, hi = UINT64_MAX;
	struct jit_frame f;
	int ret;

	if (time_bin) {
		lo = (uint64_t)(time_bin - 1) << JIT_TIME_BIN_SHIFT;
		hi = lo + JIT_TIME_BIN_NS;
	}
	ret = jit_syms_lookup(proc_snapshot_jit(snap), lookup, lo, hi, &f);
	if (ret == -EAGAIN) {
		counter_inc(&counter_jit_ambiguous);
		return;
	}
	if (ret) {
		counter_inc(&counter_jit_unknown);
		return;
	}
	/* no system name: pprof would demangle it as C++ */
	*fn = profile_function_id(b->p, f.name, "", f.file ? f.file : "");
	*line = f.line;
}

static uint32_t user_location(struct stack_builder *b, struct proc_snapshot *snap,
			      uint64_t ip, bool exact, uint32_t time_bin)
{
	uint64_t lookup = exact ? ip : ip - 1;
	struct profile_line inl[SYM_FRAMES_MAX];
	struct sym_frame fr[SYM_FRAMES_MAX];
	const struct proc_mapping *m;
	enum proc_obj_state state;
	struct sym_object *obj;
	uint32_t mapping_id, fn = 0, ninl = 0;
	int64_t line = 0;
	bool known = false;
	int idx, n = 0;

	m = snap ? proc_maps_find(&snap->maps, lookup) : NULL;
	if (!m && snap && jit_syms_found(proc_snapshot_jit(snap))) {
		/* JIT code unmapped since: named by what was there then */
		if (!b->jit_mapping)
			b->jit_mapping = profile_add_mapping(b->p, 0, 0, 0,
							     JIT_MAPPING_NAME, "");
		jit_name(b, snap, lookup, time_bin, &fn, &line);
		return profile_location_id(b->p, b->jit_mapping, ip, fn, line);
	}
	if (!m)
		return profile_location_id(b->p, 0, ip, 0, 0);
	idx = m - snap->maps.v;
	mapping_id = user_mapping_id(b, snap, idx);
	obj = proc_snapshot_object(snap, idx, &state);
	if (!obj && proc_mapping_anon_exec(m) && jit_syms_found(proc_snapshot_jit(snap))) {
		jit_name(b, snap, lookup, time_bin, &fn, &line);
		return profile_location_id(b->p, mapping_id, ip, fn, line);
	}
	if (obj) {
		pthread_mutex_lock(b->o->sym_lock);
		n = sym_object_resolve_frames(obj, lookup - m->start + m->offset,
					      fr, SYM_FRAMES_MAX);
		if (n > 0) {
			/* a file from DWARF: its inlined levels were looked up */
			known = fr[n - 1].file && fr[n - 1].file[0];
			ninl = frames_lines(b, fr, n, inl, &fn, &line);
		}
		pthread_mutex_unlock(b->o->sym_lock);
		if (n == -EAGAIN)
			counter_inc(&counter_symbols_shed);
		else if (n == -EFBIG)
			counter_inc(&counter_symbols_too_big);
		else if (n == -EINPROGRESS)
			counter_inc(&counter_symbols_pending_debuginfod);
		else if (n == -ENOLINK)
			counter_inc(&counter_symbols_debuginfod_missing);
	} else if (state == PROC_OBJ_HUNG) {
		counter_inc(&counter_file_hung);
	} else if (state != PROC_OBJ_DONE) {
		counter_inc(&counter_file_pending);	/* still queued, or its file pending */
	}
	return profile_location_id_lines(b->p, mapping_id, ip, fn, line, inl,
					 ninl, known);
}

/* The location of runtime frame token @token: its runtime's mapping, the
 * function, file and line it names (none when it cannot say). */
static uint32_t runtime_location(struct stack_builder *b, uint64_t token)
{
	const struct runtime_ops *ops = runtime_ip_ops(token);
	unsigned int id = ops->id;
	struct runtime_frame f;
	uint32_t fn = 0;

	if (!b->runtime_mapping[id])
		b->runtime_mapping[id] = profile_add_mapping(b->p, 0, 0, 0,
							     ops->mapping, "");
	if (!b->runtime_mapping[id])
		return 0;
	/*
	 * No system name: it is what pprof demangles as C++ when it equals
	 * the name, and runtime names are not C++ ("Point#<=>", "<main>",
	 * "block in <class:C>" lost their <...> and (...) to it).
	 */
	if (!runtimes_frame(b->o->rts, token, &f))
		fn = profile_function_id(b->p, f.function, "", f.file ? f.file : "");
	else
		f.line = 0;
	return profile_location_id(b->p, b->runtime_mapping[id], 0, fn, f.line);
}

int stack_builder_locations(struct stack_builder *b, struct proc_snapshot *snap,
			    uint32_t flags, uint32_t time_bin,
			    const uint64_t *ips, uint16_t nkernel,
			    uint16_t nuser, uint32_t *locs, uint32_t *nlocs)
{
	uint32_t n = 0, nips = (uint32_t)nkernel + nuser;

	for (uint32_t i = 0; i < nkernel; i++)
		locs[n++] = kernel_location(b, ips[i], i == 0);
	for (uint32_t i = nkernel; i < nips && n < STACK_BUILDER_MAX_LOCATIONS - 1; i++) {
		if (runtime_ip_ops(ips[i])) {
			locs[n++] = runtime_location(b, ips[i]);
			continue;
		}
		locs[n++] = user_location(b, snap, ips[i] & ~PROFD_IP_EXACT,
					  i == nkernel || (ips[i] & PROFD_IP_EXACT),
					  time_bin);
	}
	if (flags & PROFD_SAMPLE_USER_TRUNCATED)
		locs[n++] = b->truncated_location;
	*nlocs = n;
	for (uint32_t i = 0; i < n; i++)
		if (!locs[i])
			return -ENOMEM;
	return 0;
}

uint32_t proc_meta_labels(const struct proc_snapshot *snap,
			  struct profile_label *out)
{
	const struct proc_meta *m = snap ? &snap->meta : NULL;
	uint32_t n = 0;

	if (!m)
		return 0;
	if (m->container_id[0])
		out[n++] = (struct profile_label){ .key = "container_id",
						   .str = m->container_id };
	if (m->cgroup && m->cgroup[0])
		out[n++] = (struct profile_label){ .key = "cgroup", .str = m->cgroup };
	if (m->executable && m->executable[0])
		out[n++] = (struct profile_label){ .key = "executable",
						   .str = m->executable };
	if (proc_snapshot_build_id(snap)[0])
		out[n++] = (struct profile_label){ .key = "build_id", .str = m->build_id };
	return n;
}

/*
 * The wait class (wait.h) of the first user frame, from the leaf, whose
 * function (or a function inlined in it) a class names; NULL if none.
 */
static const char *stack_wait_class(const struct stack_builder *b, const uint32_t *locs,
				    uint32_t first, uint32_t n)
{
	for (uint32_t i = first; i < n; i++) {
		const struct profile_location *l = profile_location(b->p, locs[i]);
		const struct profile_function *f;
		const char *w;

		if (!l)
			continue;
		for (uint32_t j = 0; j < l->ninlined; j++)
			if ((f = profile_function(b->p, l->inlined[j].function_id)) &&
			    (w = wait_class_of(f->name)))
				return w;
		if ((f = profile_function(b->p, l->function_id)) && (w = wait_class_of(f->name)))
			return w;
	}
	return NULL;
}

static int add_stack(struct stack_builder *b, const struct agg_stack *s)
{
	uint32_t n, nl = 4;
	const char *wait;
	struct profile_label labels[5 + PROC_META_LABELS] = {
		{ .key = "pid", .num = s->pid },
		{ .key = "tid", .num = s->tid },
		{ .key = "comm", .str = s->comm },
		{ .key = "thread_name", .str = s->thread_name },
	};
	int64_t values[3] = {
		(int64_t)s->count,
		(int64_t)(s->kind == AGG_CPU ? s->count * b->o->period_ns : s->value),
	};
	int ret = stack_builder_locations(b, s->snap, s->flags, s->time_bin, s->ips,
					  s->nkernel, s->nuser, b->locs, &n);

	if (ret)
		return ret;
	if (b->o->kind == AGG_WALL) {
		/* cpu, off_cpu, wall: the stack's ns in its own column */
		int64_t ns = s->kind == AGG_CPU ? values[1] :
			     (int64_t)((double)s->value * b->o->off_cpu_scale + 0.5);

		values[0] = s->kind == AGG_CPU ? ns : 0;
		values[1] = s->kind == AGG_CPU ? 0 : ns;
		values[2] = ns;
	}
	if (s->kind == AGG_OFF_CPU &&
	    (wait = stack_wait_class(b, b->locs, s->nkernel, n)))
		labels[nl++] = (struct profile_label){ .key = "wait", .str = wait };
	nl += proc_meta_labels(s->snap, labels + nl);
	return profile_add_sample(b->p, b->locs, n, values, labels, nl);
}

struct stack_builder *stack_builder_new(struct profile *p,
					const struct build_opts *o)
{
	struct stack_builder *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->p = p;
	b->o = o;
	b->locs = malloc(STACK_BUILDER_MAX_LOCATIONS * sizeof(*b->locs));
	b->kernel_mapping = profile_add_mapping(p, KERNEL_START, UINT64_MAX, 0,
						KERNEL_MAPPING_NAME,
						o->kernel_build_id);
	b->truncated_location = profile_location_id(
		p, 0, 0, profile_function_id(p, "[truncated]", "[truncated]", ""), 0);
	if (!b->locs || !b->kernel_mapping || !b->truncated_location) {
		stack_builder_free(b);
		return NULL;
	}
	return b;
}

void stack_builder_free(struct stack_builder *b)
{
	if (!b)
		return;
	free(b->mkeys);
	free(b->locs);
	free(b);
}

struct profile *aggregate_build_profile(const struct aggregate *a,
					const struct build_opts *o)
{
	struct stack_builder *b = NULL;
	struct profile *p = profile_new();
	int ret = -ENOMEM;

	if (!p)
		return NULL;
	/* [kind]: its sample types (units: the first "count", the rest
	 * "nanoseconds"), the last also the period's */
	static const char *const types[AGG_WALL + 1][3] = {
		[AGG_CPU] = { "samples", "cpu" },
		[AGG_OFF_CPU] = { "switches", "off_cpu" },
		[AGG_WALL] = { "cpu", "off_cpu", "wall" },
	};
	uint32_t ntypes = o->kind == AGG_WALL ? 3 : 2;

	if (o->kind > AGG_WALL)
		goto out;
	for (uint32_t t = 0; t < ntypes; t++)
		if (profile_add_sample_type(p, types[o->kind][t],
					    t || o->kind == AGG_WALL ? "nanoseconds" : "count"))
			goto out;
	p->period_type.type = profile_intern(p, types[o->kind][ntypes - 1]);
	p->period_type.unit = profile_intern(p, "nanoseconds");
	p->period = o->kind == AGG_CPU ? o->period_ns : 1;
	p->time_nanos = a->start_ns;
	p->duration_nanos = o->end_ns > a->start_ns ? o->end_ns - a->start_ns : 0;
	for (uint32_t i = 0; i < o->ncomments; i++)
		if (profile_add_comment(p, o->comments[i]))
			goto out;
	b = stack_builder_new(p, o);
	if (!b)
		goto out;
	for (uint32_t i = 0; i < a->nbuckets; i++) {
		for (const struct agg_stack *s = a->buckets[i]; s; s = s->next) {
			if (s->kind != o->kind && o->kind != AGG_WALL)
				continue;
			ret = add_stack(b, s);
			if (ret)
				goto out;
		}
	}
	ret = 0;
out:
	stack_builder_free(b);
	if (ret) {
		profile_free(p);
		return NULL;
	}
	return p;
}
