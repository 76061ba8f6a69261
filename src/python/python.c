// SPDX-License-Identifier: GPL-2.0
/*
 * python.c - CPython processes (see python.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "bpf/profd.h"
#include "bpf/unwind_python.h"
#include "counters/counters.h"
#include "proc/process.h"
#include "python/code.h"
#include "python/detect.h"
#include "python/linetable.h"
#include "python/offsets.h"
#include "python/python.h"
#include "runtime/file_cache.h"

#define CODE_CACHE_ENTRIES	65536
#define PYTHON_BUDGET		(64u << 20)	/* when python_new() is given none */
/* exited interpreters whose code objects wait to be dropped (beyond: LRU) */
#define DEAD_GENS_MAX		1024

/* One file, by (device, inode): is it an interpreter. */
struct detected {
	struct rt_file f;		/* first: the cache's (result: py_detect_fd()) */
	struct py_binary bin;
};

/* One CPython process. */
struct pyproc {
	pid_t pid;
	uint64_t gen;			/* new for each interpreter instance */
	uint64_t bias;			/* runtime = ELF vaddr + bias */
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	const struct py_offsets *off;
	struct py_types types;		/* runtime addresses */
	uint64_t eval_start, eval_end, cold_start, cold_end;
	/* the CPython process this one was forked from (same interpreter at
	 * the same address): its code objects were copied, so its cache
	 * names ours while they keep their fingerprints; 0 if none */
	pid_t parent;
	uint64_t parent_gen;
	struct pyproc *next;
};

struct python {
	int procs_fd;
	int verbose;
	struct rt_file_cache det;	/* the object loader's (python_maps_read) */
	pthread_mutex_t procs_lock;	/* procs, next_gen and runtime_procs entries */
	struct pyproc *procs[1024];
	uint64_t next_gen;
	struct py_code_cache *codes;
	struct rt_frame_gens frames;	/* interned frames, two generations */
	/* under procs_lock: generations of processes removed since the
	 * reader last dropped their code objects (python_forget_exited()) */
	uint64_t dead_gens[DEAD_GENS_MAX];
	uint32_t ndead;
	struct python_stats st;		/* atomics: read by python_stats() */
};

#define STAT_ADD(py, field, v) __atomic_add_fetch(&(py)->st.field, (v), __ATOMIC_RELAXED)
/* STAT_ADD() of a field that is also the reported counter_NAME */
#define PY_COUNT(py, field, name) do {					\
	STAT_ADD(py, field, 1);						\
	counter_inc(&counter_##name);					\
} while (0)

/*
 * Python's counters: the unwinder's in BPF (bpf/unwind_python.bpf.h) and
 * this file's (python_frames_full: counted by src/runtime/frames.c for
 * Python's tables); python_read_timeout is code.c's.
 */
COUNTER_DEFINE_BPF(python_samples, COUNTER_STAT, PROFD_CNT_PY_SAMPLES,
		   "samples of CPython processes walked");
COUNTER_DEFINE_BPF(python_no_thread_state, COUNTER_STAT, PROFD_CNT_PY_NO_THREAD_STATE,
		   "samples of CPython threads without a PyThreadState");
COUNTER_DEFINE_BPF(python_frame_read_error, COUNTER_PARTIAL, PROFD_CNT_PY_READ_ERR,
		   "Python frame or thread state unreadable: walk ended");
COUNTER_DEFINE_BPF(python_stack_truncated, COUNTER_PARTIAL, PROFD_CNT_PY_TRUNCATED,
		   "samples with more Python frames than kept");
COUNTER_DEFINE(python_code_error, COUNTER_PARTIAL,
	       "samples with a Python frame whose code object was unreadable");
COUNTER_DEFINE(python_unsupported_version, COUNTER_STAT,
	       "CPython interpreters of an unsupported version seen");
COUNTER_DEFINE(python_update_error, COUNTER_PARTIAL,
	       "python_procs map updates that failed");
COUNTER_DEFINE(python_frame_table_rotations, COUNTER_STAT,
	       "Python frame tables started afresh");
COUNTER_DEFINE(python_frames_full, COUNTER_PARTIAL,
	       "Python frames not named: the frame table was full");

static const char *const py_fixed_names[PY_FIXED_FRAMES + 1] = {
	[PY_FRAME_UNREADABLE] = "[python: unreadable frame]",
	[PY_FRAME_BAD_CODE] = "[python: unknown code object]",
	[PY_FRAME_TRUNCATED] = "[python: truncated]",
	[PY_FRAME_TABLE_FULL] = "[python: frame table full]",
};

/* Python's frame tables: its tokens, fixed frames and counter. */
static const struct rt_frames_kind py_frame_kind = {
	.tag = PY_IP_FRAME,
	.fixed = py_fixed_names,
	.nfixed = PY_FIXED_FRAMES,
	.full_id = PY_FRAME_TABLE_FULL,
	.full = &counter_python_frames_full,
};

/* rt_detect_fn of CPython. */
static int detect_fd(int fd, struct rt_file *f)
{
	return py_detect_fd(fd, &((struct detected *)f)->bin);
}

struct python *python_new(int procs_fd, uint64_t budget, int verbose)
{
	struct python *py = calloc(1, sizeof(*py));

	if (!py)
		return NULL;
	pthread_mutex_init(&py->procs_lock, NULL);
	py->procs_fd = procs_fd;
	py->verbose = verbose;
	rt_file_cache_init(&py->det, sizeof(struct detected), detect_fd);
	if (!budget)
		budget = PYTHON_BUDGET;
	py->codes = py_code_cache_new(CODE_CACHE_ENTRIES, budget / 2);
	if (rt_frame_gens_init(&py->frames, &py_frame_kind, budget / 4) || !py->codes) {
		python_free(py);
		return NULL;
	}
	return py;
}

void python_free(struct python *py)
{
	if (!py)
		return;
	rt_file_cache_clear(&py->det);
	for (size_t b = 0; b < sizeof(py->procs) / sizeof(py->procs[0]); b++) {
		struct pyproc *p = py->procs[b], *next;

		for (; p; p = next) {
			next = p->next;
			free(p);
		}
	}
	py_code_cache_free(py->codes);
	rt_frame_gens_fini(&py->frames);
	pthread_mutex_destroy(&py->procs_lock);
	free(py);
}

static struct pyproc **proc_slot(struct python *py, pid_t pid)
{
	struct pyproc **pp = &py->procs[(uint32_t)pid & 1023];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

/*
 * Write @pid's runtime_procs entry: runtime CPython, state @v. Returns 0
 * (also without BPF), or -1 when @v does not fit the BPF walker or the
 * update failed (the caller counts it).
 */
static int entry_write(struct python *py, pid_t pid, const struct profd_python_proc *v)
{
	struct profd_runtime_proc rp = { .runtime = PROFD_RUNTIME_CPYTHON };
	__u32 key = pid;

	if (py->procs_fd < 0)
		return 0;
	if (!py_offsets_bpf_usable(v))
		return -1;
	memcpy(rp.state, v, sizeof(*v));
	return bpf_map_update_elem(py->procs_fd, &key, &rp, BPF_ANY) ? -1 : 0;
}

static void proc_remove(struct python *py, pid_t pid)
{
	struct pyproc **pp = proc_slot(py, pid), *p = *pp;
	__u32 key = pid;

	if (!p)
		return;
	*pp = p->next;
	if (py->ndead < DEAD_GENS_MAX)
		py->dead_gens[py->ndead++] = p->gen;	/* its code objects go */
	/* an unsupported version wrote no entry: the pid's may be another runtime's */
	if (p->off && py->procs_fd >= 0)
		bpf_map_delete_elem(py->procs_fd, &key);
	free(p);
	STAT_ADD(py, processes, -1);
}

static void maps_read(struct python *py, pid_t pid, const struct proc_maps *maps,
		      bool is_parent);

/*
 * A parent never sampled yet (one that only forks spends little CPU) is
 * looked at now, before its child is linked to it: its copies of the
 * code objects name a short-lived child's frames after the child exited.
 * Without the lock (detection reads files).
 */
static void look_at_parent(struct python *py, pid_t ppid)
{
	struct proc_maps maps = { 0 };
	bool known;

	if (ppid <= 1)
		return;
	pthread_mutex_lock(&py->procs_lock);
	known = *proc_slot(py, ppid) != NULL;
	pthread_mutex_unlock(&py->procs_lock);
	if (known)
		return;
	if (!proc_maps_read(ppid, &maps))
		maps_read(py, ppid, &maps, true);
	proc_maps_free(&maps);
}

/*
 * Link @p to its parent @ppid when that is the same interpreter, same
 * place. procs_lock held.
 */
static void set_parent(struct python *py, struct pyproc *p, pid_t ppid)
{
	struct pyproc *q = ppid > 0 ? *proc_slot(py, ppid) : NULL;

	p->parent = 0;
	p->parent_gen = 0;
	if (q && q->off && q->inode == p->inode && q->dev_major == p->dev_major &&
	    q->dev_minor == p->dev_minor && q->bias == p->bias) {
		p->parent = q->pid;
		p->parent_gen = q->gen;
	}
}

void python_maps_read(struct python *py, pid_t pid, const struct proc_maps *maps)
{
	maps_read(py, pid, maps, false);
}

static void update_proc(struct python *py, pid_t pid,
			const struct proc_mapping *found,
			const struct detected *d, uint64_t bias, pid_t ppid);

/* python_maps_read(); @is_parent: called for a child's parent (no further up). */
static void maps_read(struct python *py, pid_t pid, const struct proc_maps *maps,
		      bool is_parent)
{
	const struct proc_mapping *found = NULL;
	struct detected *d = NULL, det;
	struct pyproc *p;
	uint64_t bias = 0;
	pid_t ppid = 0;
	bool same;

	/* detection: files read, no lock (the cache is this thread's) */
	d = (struct detected *)rt_file_find(&py->det, pid, maps, &found, &bias);
	if (!d) {
		pthread_mutex_lock(&py->procs_lock);
		proc_remove(py, pid);
		pthread_mutex_unlock(&py->procs_lock);
		return;
	}
	det = *d;	/* the parent's detection may clear the cache */
	pthread_mutex_lock(&py->procs_lock);
	p = *proc_slot(py, pid);
	same = p && p->inode == found->inode && p->dev_major == found->dev_major &&
	       p->dev_minor == found->dev_minor && p->bias == bias;
	if (same) {
		/* same interpreter: its BPF entry is written again (exec) */
		update_proc(py, pid, found, &det, bias, 0);
		pthread_mutex_unlock(&py->procs_lock);
		return;
	}
	pthread_mutex_unlock(&py->procs_lock);
	if (det.f.result == 1 && py_offsets_find(det.bin.major, det.bin.minor)) {
		ppid = proc_parent_pid(pid);
		if (!is_parent)
			look_at_parent(py, ppid);
	}
	pthread_mutex_lock(&py->procs_lock);
	update_proc(py, pid, found, &det, bias, ppid);
	pthread_mutex_unlock(&py->procs_lock);
}

/*
 * Add or update @pid's entry: interpreter @d in @found at @bias, parent
 * @ppid. procs_lock held; no file is read.
 */
static void update_proc(struct python *py, pid_t pid,
			const struct proc_mapping *found,
			const struct detected *d, uint64_t bias, pid_t ppid)
{
	struct pyproc **pp = proc_slot(py, pid), *p = *pp;
	struct profd_python_proc v;
	__u32 key = pid;
	bool had_entry;

	if (p && p->inode == found->inode && p->dev_major == found->dev_major &&
	    p->dev_minor == found->dev_minor && p->bias == bias) {
		/*
		 * Same interpreter as before, maybe after an exec of the same
		 * binary, which deleted the BPF entry (profd_proc_exec): the
		 * entry is written again.
		 */
		if (p->off) {
			py_offsets_bpf_state(p->off, &v);
			v.runtime = d->bin.runtime + bias;
			if (entry_write(py, pid, &v))
				PY_COUNT(py, map_errors, python_update_error);
		}
		return;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return;
		p->pid = pid;
		p->next = NULL;
		*pp = p;
		STAT_ADD(py, processes, 1);
	}
	had_entry = p->off != NULL;	/* runtime_procs has an entry of ours */
	p->off = d->f.result == 1 ? py_offsets_find(d->bin.major, d->bin.minor) : NULL;
	p->bias = bias;
	p->dev_major = found->dev_major;
	p->dev_minor = found->dev_minor;
	p->inode = found->inode;
	if (!p->off) {
		/* counted once per process and interpreter */
		PY_COUNT(py, unsupported, python_unsupported_version);
		if (py->verbose)
			fprintf(stderr, "profd: pid %d: CPython %u.%u in %s is not "
				"supported (3.9 - 3.13): native frames only\n",
				(int)pid, d->bin.major, d->bin.minor, found->path);
		/* ours only: the entry of the pid may be another runtime's */
		if (had_entry && py->procs_fd >= 0)
			bpf_map_delete_elem(py->procs_fd, &key);
		return;
	}
	p->gen = ++py->next_gen;
	p->bias = bias;
	set_parent(py, p, ppid);
	p->types.code = d->bin.code_type ? d->bin.code_type + bias : 0;
	p->types.unicode = d->bin.unicode_type ? d->bin.unicode_type + bias : 0;
	p->types.bytes = d->bin.bytes_type ? d->bin.bytes_type + bias : 0;
	p->eval_start = d->bin.eval_start + bias;
	p->eval_end = d->bin.eval_end + bias;
	p->cold_start = d->bin.eval_cold_start ? d->bin.eval_cold_start + bias : 0;
	p->cold_end = d->bin.eval_cold_start ? d->bin.eval_cold_end + bias : 0;
	py_offsets_bpf_state(p->off, &v);
	v.runtime = d->bin.runtime + bias;
	if (py->verbose)
		fprintf(stderr, "profd: pid %d: CPython %u.%u.%u in %s\n", (int)pid,
			d->bin.major, d->bin.minor, d->bin.micro, found->path);
	if (entry_write(py, pid, &v))
		PY_COUNT(py, map_errors, python_update_error);
}

void python_removed(struct python *py, pid_t pid)
{
	pthread_mutex_lock(&py->procs_lock);
	proc_remove(py, pid);
	pthread_mutex_unlock(&py->procs_lock);
}

static bool in_eval(const struct pyproc *p, uint64_t pc)
{
	return (pc >= p->eval_start && pc < p->eval_end) ||
	       (pc >= p->cold_start && pc < p->cold_end);
}

/*
 * frame_id - the interned id of raw Python frame (@code_word, @instr), or
 * 0 for a frame that has not started (incomplete: skipped, as CPython's
 * own tracebacks do).
 */
static uint32_t frame_id(struct python *py, const struct pyproc *p,
			 uint64_t code_addr, uint64_t instr, uint64_t now_ns,
			 size_t *budget)
{
	const struct py_offsets *o = p->off;
	const struct py_code *c;
	int64_t units;
	int err = 0, line;

	if (!code_addr)
		return 0;	/* placeholder of an empty group (unwind_python.h) */
	c = py_code_get(py->codes, p->pid, p->gen, p->parent, p->parent_gen,
			code_addr, o, &p->types, (uint32_t)(instr >> 32), now_ns,
			budget, &err);
	if (!c) {
		if (py->verbose > 2)
			fprintf(stderr, "profd: pid %d: code object at %#llx: %s\n",
				(int)p->pid, (unsigned long long)code_addr,
				strerror(-err));
		return PY_FRAME_BAD_CODE;
	}
	switch (o->lasti_kind) {
	case PY_LASTI_BYTES:
		units = (int32_t)instr / 2;
		break;
	case PY_LASTI_CODEUNITS:
		units = (int32_t)instr;
		break;
	default:	/* BPF made the pointer an offset in the code object */
		units = ((int64_t)(int32_t)instr - o->code_code_adaptive) / 2;
		if (units < c->first_traceable)
			return 0;
		break;
	}
	if (units < 0)
		units = 0;	/* 3.9/3.10: f_lasti -1, not started */
	if (units > (1 << 28))
		line = -1;
	else
		line = py_linetable_line(o->linetable_format, c->linetable,
					 c->linetable_len, c->first_line,
					 (uint32_t)units * 2);
	return rt_frame_gens_intern(&py->frames, c->name, c->file, line > 0 ? line : 0,
				    c->first_line);
}

#define MAX_GROUPS (PROFD_MAX_PYTHON_FRAMES + 2)

static uint32_t merge_stack(struct python *py, pid_t pid, uint32_t flags,
			    const uint64_t *user, uint32_t nuser,
			    const uint64_t *frames, uint32_t nframes,
			    uint64_t *out, uint32_t cap, uint64_t now_ns);

/* python_merge_stack - see python.h; the process table is locked throughout. */
uint32_t python_merge_stack(struct python *py, pid_t pid, uint32_t flags,
			    const uint64_t *user, uint32_t nuser,
			    const uint64_t *frames, uint32_t nframes,
			    uint64_t *out, uint32_t cap, uint64_t now_ns)
{
	uint32_t n;

	pthread_mutex_lock(&py->procs_lock);
	n = merge_stack(py, pid, flags, user, nuser, frames, nframes, out, cap,
			now_ns);
	pthread_mutex_unlock(&py->procs_lock);
	return n;
}

static uint32_t merge_stack(struct python *py, pid_t pid, uint32_t flags,
			    const uint64_t *user, uint32_t nuser,
			    const uint64_t *frames, uint32_t nframes,
			    uint64_t *out, uint32_t cap, uint64_t now_ns)
{
	uint32_t ids[PROFD_MAX_PYTHON_FRAMES + 2];
	uint32_t gstart[MAX_GROUPS], glen[MAX_GROUPS], ng = 0, nids = 0;
	uint32_t evals[PROFD_MAX_USER_FRAMES], nev = 0;
	int32_t pair[PROFD_MAX_USER_FRAMES];	/* native index -> group, -1 */
	struct pyproc *p = *proc_slot(py, pid);
	uint64_t tag = rt_frame_gens_tag(&py->frames);
	bool from_root, open = false, bad_code = false;
	uint32_t n = 0, k, first_pair_group = 0, last_pair_group = 0;
	size_t budget = PY_READ_BUDGET;

	if (nframes > PROFD_MAX_PYTHON_FRAMES)
		nframes = PROFD_MAX_PYTHON_FRAMES;
	if (nuser > PROFD_MAX_USER_FRAMES)
		nuser = PROFD_MAX_USER_FRAMES;
	if (!p || !p->off || !(flags & PROFD_SAMPLE_INTERP)) {
		for (uint32_t i = 0; i < nuser && n < cap; i++)
			out[n++] = user[i];
		return n;
	}
	/* Name the frames, and cut them into groups (one per eval call). */
	for (uint32_t i = 0; i < nframes; i++) {
		uint64_t w = frames[2 * i];
		uint32_t id = frame_id(py, p, w & ~PROFD_PY_GROUP_END,
				       frames[2 * i + 1], now_ns, &budget);

		bad_code |= id == PY_FRAME_BAD_CODE;
		/*
		 * A frame not started yet (id 0) is not shown, but its group
		 * stays, even empty: a frame is only linked once its eval
		 * call ran its prologue, so that native frame exists.
		 */
		if (!open) {
			gstart[ng] = nids;
			glen[ng] = 0;
			open = true;
		}
		if (id) {
			ids[nids++] = id;
			glen[ng]++;
		}
		if (w & PROFD_PY_GROUP_END) {
			ng++;
			open = false;
		}
	}
	if (open && !glen[ng])
		open = false;	/* a trailing group of unstarted frames only */
	if (flags & (PROFD_SAMPLE_INTERP_ERROR | PROFD_SAMPLE_INTERP_TRUNCATED)) {
		/* the chain's root end is missing: say so where it would be */
		if (!open) {
			gstart[ng] = nids;
			glen[ng] = 0;
			open = true;
		}
		ids[nids++] = (flags & PROFD_SAMPLE_INTERP_ERROR) ? PY_FRAME_UNREADABLE
								  : PY_FRAME_TRUNCATED;
		glen[ng]++;
	}
	if (open)
		ng++;
	if (bad_code)
		PY_COUNT(py, code_errors, python_code_error);

	/* Pair groups with the native eval frames. */
	for (uint32_t i = 0; i < nuser; i++) {
		uint64_t ip = user[i] & ~PROFD_IP_EXACT;
		bool exact = !i || (user[i] & PROFD_IP_EXACT);

		pair[i] = -1;
		if (in_eval(p, exact ? ip : ip - 1))
			evals[nev++] = i;
	}
	from_root = nev && (flags & PROFD_SAMPLE_USER_COMPLETE) &&
		    !(flags & (PROFD_SAMPLE_USER_TRUNCATED |
				      PROFD_SAMPLE_USER_ERROR |
				      PROFD_SAMPLE_INTERP_ERROR |
				      PROFD_SAMPLE_INTERP_TRUNCATED));
	k = nev < ng ? nev : ng;
	for (uint32_t j = 0; j < k; j++) {
		if (from_root)
			pair[evals[nev - 1 - j]] = ng - 1 - j;
		else
			pair[evals[j]] = j;
	}
	/* Groups left unpaired: innermost ones (pairing from the root) go
	 * on top of the stack, outermost ones (from the leaf) below it. */
	first_pair_group = from_root ? ng - k : 0;
	last_pair_group = from_root ? ng : k;
	for (uint32_t g = 0; g < first_pair_group; g++)
		for (uint32_t j = 0; j < glen[g] && n < cap; j++)
			out[n++] = tag | ids[gstart[g] + j];
	for (uint32_t i = 0; i < nuser; i++) {
		if (pair[i] < 0 || !glen[pair[i]]) {
			if (n < cap)
				out[n++] = user[i] | (i == 0 ? PROFD_IP_EXACT : 0);
			continue;
		}
		for (uint32_t j = 0; j < glen[pair[i]] && n < cap; j++)
			out[n++] = tag | ids[gstart[pair[i]] + j];
	}
	for (uint32_t g = last_pair_group; g < ng; g++)
		for (uint32_t j = 0; j < glen[g] && n < cap; j++)
			out[n++] = tag | ids[gstart[g] + j];
	return n;
}

int python_frame(struct python *py, uint64_t token, struct rt_frame *out)
{
	return rt_frame_gens_get(&py->frames, token, out);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void python_forget_exited(struct python *py)
{
	uint64_t gens[DEAD_GENS_MAX];
	uint32_t n;

	pthread_mutex_lock(&py->procs_lock);
	n = py->ndead;
	memcpy(gens, py->dead_gens, n * sizeof(*gens));
	py->ndead = 0;
	pthread_mutex_unlock(&py->procs_lock);
	if (!n)
		return;
	qsort(gens, n, sizeof(*gens), cmp_u64);
	py_code_forget(py->codes, gens, n);
}

void python_new_interval(struct python *py)
{
	if (rt_frame_gens_new_interval(&py->frames))
		PY_COUNT(py, frame_rotations, python_frame_table_rotations);
}

void python_stats(struct python *py, struct python_stats *out)
{
	struct py_code_stats cs;

	out->processes = __atomic_load_n(&py->st.processes, __ATOMIC_RELAXED);
	out->unsupported = __atomic_load_n(&py->st.unsupported, __ATOMIC_RELAXED);
	out->code_errors = __atomic_load_n(&py->st.code_errors, __ATOMIC_RELAXED);
	out->map_errors = __atomic_load_n(&py->st.map_errors, __ATOMIC_RELAXED);
	py_code_cache_stats(py->codes, &cs);	/* racy sizes: fine for stats */
	out->code_reads = cs.reads;
	out->code_evictions = cs.evictions;
	out->code_objects = cs.entries;
	out->read_timeouts = cs.timeouts;
	rt_frame_gens_stats(&py->frames, &out->frames, &out->frames_full);
	out->frame_rotations = __atomic_load_n(&py->st.frame_rotations, __ATOMIC_RELAXED);
	out->bytes = cs.bytes + rt_frame_gens_bytes(&py->frames);
}
