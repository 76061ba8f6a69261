// SPDX-License-Identifier: GPL-2.0
/*
 * ruby.c - CRuby processes: the process table, attaching, the
 * runtime_procs entries and their lifecycle (see ruby.h). Naming and the
 * merge are merge.c's.
 *
 * A process's life here: its maps show an interpreter (detect.c, once
 * per file) -> PENDING (the layout of its version is known) -> the attach
 * check against its memory (rb_attach_check(); without the lock) ->
 * ATTACHED (its entry written: BPF walks it) or REFUSED (counted), or
 * still PENDING while its VM is not set up (tried again at the next maps
 * read and by this file's retry thread, every RB_RETRY_NS at first: a
 * ruby started under profd is attached within ~50 ms of its VM). A version without
 * a layout is UNSUPPORTED (counted). Each attach gets a new generation:
 * the naming cache's key, so an exec'd or re-attached process never
 * reuses the names of the one before. Every maps read of an ATTACHED
 * process checks that ruby_current_vm_ptr still holds its VM (an exec of
 * the same binary at the same place makes a new one) and writes the
 * entry again (exec deleted it). A forked child is attached on its own
 * maps read (its memory is a copy of the parent's) and linked to its
 * parent when both run the same interpreter at the same place, so a
 * short-lived child's frames are named from the parent after it exited.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "bpf/profd.h"
#include "bpf/unwind_ruby.h"
#include "counters/counters.h"
#include "proc/process.h"
#include "proc/remote.h"
#include "ruby/detect.h"
#include "ruby/ruby_internal.h"

#define RUBY_BUDGET		(64u << 20)	/* when ruby_new() is given none */
/* PENDING processes are tried every RB_RETRY_NS for RB_RETRY_FAST_NS,
 * then every RB_RETRY_SLOW_NS */
#define RB_RETRY_NS		(50ULL * 1000 * 1000)
#define RB_RETRY_FAST_NS	(10ULL * 1000 * 1000 * 1000)
#define RB_RETRY_SLOW_NS	(1000ULL * 1000 * 1000)
#define NAME_CACHE_ENTRIES	65536

/*
 * CRuby's counters: the walker's in BPF (bpf/unwind_ruby.bpf.h), this
 * file's, and merge.c's.
 */
COUNTER_DEFINE_BPF(ruby_samples, COUNTER_STAT, PROFD_CNT_RB_SAMPLES,
		   "samples of CRuby processes walked");
COUNTER_DEFINE_BPF(ruby_no_thread, COUNTER_STAT, PROFD_CNT_RB_NO_THREAD,
		   "samples of CRuby process threads without a Ruby thread");
COUNTER_DEFINE_BPF(ruby_frame_read_error, COUNTER_PARTIAL, PROFD_CNT_RB_READ_ERR,
		   "Ruby control frame or execution context unreadable: walk ended");
COUNTER_DEFINE_BPF(ruby_stack_truncated, COUNTER_PARTIAL, PROFD_CNT_RB_TRUNCATED,
		   "samples with more Ruby frames than kept");
COUNTER_DEFINE_BPF(ruby_bad_stack, COUNTER_PARTIAL, PROFD_CNT_RB_BAD_STACK,
		   "samples whose Ruby frame pointer lay outside its VM stack: walk refused");
COUNTER_DEFINE(ruby_unsupported_version, COUNTER_STAT,
	       "CRuby interpreters of a version without a known layout seen");
COUNTER_DEFINE(ruby_attach_refused, COUNTER_STAT,
	       "CRuby processes whose memory did not match their version's layout: not walked");
COUNTER_DEFINE(ruby_attach_deferred, COUNTER_STAT,
	       "CRuby attaches put off: the VM was not set up yet (tried again)");
COUNTER_DEFINE(ruby_update_error, COUNTER_PARTIAL,
	       "runtime_procs updates for CRuby processes that failed");
COUNTER_DEFINE(ruby_read_timeout, COUNTER_PARTIAL,
	       "reads of CRuby process memory that hung (abandoned)");

static void *retry_main(void *arg);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* rt_detect_fn of CRuby. */
static int detect_fd(int fd, struct rt_file *f)
{
	return rb_detect_fd(fd, &((struct rb_detected *)f)->bin);
}

struct ruby *ruby_new(int procs_fd, uint64_t budget, int verbose)
{
	struct ruby *rb = calloc(1, sizeof(*rb));

	if (!rb)
		return NULL;
	pthread_mutex_init(&rb->lock, NULL);
	pthread_cond_init(&rb->retry_cond, NULL);
	rb->procs_fd = procs_fd;
	rb->verbose = verbose;
	rt_file_cache_init(&rb->det, sizeof(struct rb_detected), detect_fd);
	if (!budget)
		budget = RUBY_BUDGET;
	rb->loader_reader = remote_reader_new();
	rb->reader = remote_reader_new();
	rb->retry_reader = remote_reader_new();
	if (!rb->loader_reader || !rb->reader || !rb->retry_reader)
		goto fail;
	remote_reader_count_timeouts(rb->loader_reader, &counter_ruby_read_timeout);
	remote_reader_count_timeouts(rb->reader, &counter_ruby_read_timeout);
	remote_reader_count_timeouts(rb->retry_reader, &counter_ruby_read_timeout);
	rb->names = rb_iseq_cache_new(rb->reader, NAME_CACHE_ENTRIES, budget / 2);
	if (!rb->names || rb_frames_init(rb, budget / 4))
		goto fail;
	if (pthread_create(&rb->retry_thread, NULL, retry_main, rb))
		goto fail;
	rb->retry_started = true;
	return rb;
fail:
	ruby_free(rb);
	return NULL;
}

void ruby_free(struct ruby *rb)
{
	if (!rb)
		return;
	if (rb->retry_started) {
		pthread_mutex_lock(&rb->lock);
		rb->stopping = true;
		pthread_cond_signal(&rb->retry_cond);
		pthread_mutex_unlock(&rb->lock);
		pthread_join(rb->retry_thread, NULL);
	}
	rt_file_cache_clear(&rb->det);
	for (size_t b = 0; b < RB_BUCKETS; b++) {
		struct rbproc *p = rb->procs[b], *next;

		for (; p; p = next) {
			next = p->next;
			free(p);
		}
	}
	rb_iseq_cache_free(rb->names);
	remote_reader_free(rb->reader);
	remote_reader_free(rb->loader_reader);
	remote_reader_free(rb->retry_reader);
	pthread_cond_destroy(&rb->retry_cond);
	rt_frame_gens_fini(&rb->frames);
	pthread_mutex_destroy(&rb->lock);
	free(rb);
}

struct rbproc **rb_proc_slot(struct ruby *rb, pid_t pid)
{
	struct rbproc **pp = &rb->procs[(uint32_t)pid & (RB_BUCKETS - 1)];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

/* Write @p's runtime_procs entry. 0 (also without BPF), or -1 (counted by the caller). */
static int entry_write(struct ruby *rb, const struct rbproc *p)
{
	struct profd_runtime_proc rp = { .runtime = PROFD_RUNTIME_CRUBY };
	struct profd_ruby_proc v;
	__u32 key = p->pid;

	if (rb->procs_fd < 0)
		return 0;
	if (!rb_offsets_bpf_state(p->off, p->vm_ptr_addr, &v))
		return -1;
	v.vm_main_thread = p->off->vm_main_thread;
	v.flags = p->stale_main_tid ? PROFD_RB_PROC_STALE_MAIN_TID : 0;
	v.gc_count_addr = p->addrs.gc_count;
	v.gc_flags_addr = p->gc_flags_addr;
	memcpy(rp.state, &v, sizeof(v));
	return bpf_map_update_elem(rb->procs_fd, &key, &rp, BPF_ANY) ? -1 : 0;
}

/* @p stops being walked: its entry (ours) goes, its names with it. Lock held. */
static void detach(struct ruby *rb, struct rbproc *p)
{
	__u32 key = p->pid;

	if (p->state != RBP_ATTACHED)
		return;
	if (rb->procs_fd >= 0)
		bpf_map_delete_elem(rb->procs_fd, &key);
	if (rb->ndead < RB_DEAD_GENS_MAX)
		rb->dead_gens[rb->ndead++] = p->gen;
	p->state = RBP_PENDING;
	__atomic_sub_fetch(&rb->nattached, 1, __ATOMIC_RELAXED);
}

static void proc_remove(struct ruby *rb, pid_t pid)
{
	struct rbproc **pp = rb_proc_slot(rb, pid), *p = *pp;

	if (!p)
		return;
	detach(rb, p);
	*pp = p->next;
	free(p);
	__atomic_sub_fetch(&rb->nprocs, 1, __ATOMIC_RELAXED);
}

static bool same_place(const struct rbproc *a, const struct rbproc *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && a->bias == b->bias;
}

/* The outcome @err of @p's attach check (VM @vm). Lock held. */
static void attach_done(struct ruby *rb, struct rbproc *p, int err, uint64_t vm,
			bool stale_main_tid, pid_t ppid)
{
	struct rbproc *q = ppid > 1 ? *rb_proc_slot(rb, ppid) : NULL;

	if (err == -EPROTO || err == -EFAULT) {
		p->state = RBP_REFUSED;
		counter_inc(&counter_ruby_attach_refused);
		if (rb->verbose)
			fprintf(stderr, "profd: pid %d: CRuby %u.%u.%u: memory does not match "
				"its layout (%s): native frames only\n", (int)p->pid,
				p->bin.major, p->bin.minor, p->bin.teeny, strerror(-err));
		return;
	}
	if (err) {
		/* not set up yet, gone, or unreadable for now: later */
		if (err == -EAGAIN)
			counter_inc(&counter_ruby_attach_deferred);
		if (rb->verbose > 1)
			fprintf(stderr, "profd: pid %d: CRuby not attached yet: %s\n",
				(int)p->pid, strerror(-err));
		p->retry_ns = now_ns() + RB_RETRY_NS;
		rb->retry_wanted = true;
		pthread_cond_signal(&rb->retry_cond);
		return;
	}
	p->vm = vm;
	p->stale_main_tid = stale_main_tid;
	p->gen = ++rb->next_gen;
	p->state = RBP_ATTACHED;
	p->parent = 0;
	p->parent_gen = 0;
	if (q && q->state == RBP_ATTACHED && same_place(p, q) && q->vm == vm) {
		p->parent = q->pid;
		p->parent_gen = q->gen;
	}
	__atomic_add_fetch(&rb->nattached, 1, __ATOMIC_RELAXED);
	if (rb->verbose)
		fprintf(stderr, "profd: pid %d: CRuby %u.%u.%u attached\n", (int)p->pid,
			p->bin.major, p->bin.minor, p->bin.teeny);
	if (entry_write(rb, p))
		counter_inc(&counter_ruby_update_error);
}

/*
 * The runtime address of process @pid's objspace (bpf/unwind_ruby.h's
 * epochs), from where rb_gc_count()'s code finds it (detect.c): its GOT
 * slot must hold @vm_ptr_addr, then VM @vm + gc_objspace holds the
 * objspace, whose GC count must be readable. 0: none (names are then
 * trusted for RB_ISEQ_RECHECK_NS).
 */
static uint64_t gc_objspace(struct remote_reader *reader, pid_t pid,
			    const struct rb_binary *bin, uint64_t bias,
			    uint64_t vm_ptr_addr, uint64_t vm)
{
	uint64_t slot = 0, objspace = 0, count = 0;

	if (!bin->gc_count || !vm ||
	    remote_read(reader, pid, bin->gc_got + bias, &slot, sizeof(slot)) ||
	    slot != vm_ptr_addr ||
	    remote_read(reader, pid, vm + bin->gc_objspace, &objspace, sizeof(objspace)) ||
	    !objspace || objspace % 8 ||
	    remote_read(reader, pid, objspace + bin->gc_count, &count, sizeof(count)))
		return 0;
	return objspace;
}

/*
 * Try to attach @pid (PENDING) with @reader: the check reads the
 * process without the lock; its outcome applies only if the process
 * is still what it was.
 */
static void try_attach(struct ruby *rb, struct remote_reader *reader, pid_t pid)
{
	struct rbproc *p;
	const struct rb_offsets *off;
	uint64_t ident, addr, bias, gc, vm = 0;
	struct rb_binary bin;
	bool stale = false;
	pid_t ppid;
	int err;

	pthread_mutex_lock(&rb->lock);
	p = *rb_proc_slot(rb, pid);
	if (!p || p->state != RBP_PENDING) {
		pthread_mutex_unlock(&rb->lock);
		return;
	}
	ident = p->ident;
	off = p->off;
	addr = p->vm_ptr_addr;
	bin = p->bin;
	bias = p->bias;
	pthread_mutex_unlock(&rb->lock);
	err = rb_attach_check(reader, pid, off, addr, &vm, &stale);
	ppid = err ? 0 : proc_parent_pid(pid);
	gc = err ? 0 : gc_objspace(reader, pid, &bin, bias, addr, vm);
	pthread_mutex_lock(&rb->lock);
	p = *rb_proc_slot(rb, pid);
	if (p && p->ident == ident && p->state == RBP_PENDING) {
		p->addrs.gc_count = gc ? gc + bin.gc_count : 0;
		p->gc_flags_addr = gc && bin.gc_flags_found ? gc + bin.gc_flags : 0;
		attach_done(rb, p, err, vm, stale, ppid);
	}
	pthread_mutex_unlock(&rb->lock);
}

/*
 * An ATTACHED process's maps were read again: is ruby_current_vm_ptr
 * still its VM? Yes (or unreadable): its entry is written again (an exec
 * deleted it). No: a new VM (exec of the same binary): detached, to be
 * attached anew. Returns true when it is to be attached.
 */
static bool recheck(struct ruby *rb, pid_t pid)
{
	struct rbproc *p;
	uint64_t ident, addr, vm = 0;
	bool again = false;
	int err;

	pthread_mutex_lock(&rb->lock);
	p = *rb_proc_slot(rb, pid);
	ident = p->ident;
	addr = p->vm_ptr_addr;
	pthread_mutex_unlock(&rb->lock);
	err = remote_read(rb->loader_reader, pid, addr, &vm, sizeof(vm));
	pthread_mutex_lock(&rb->lock);
	p = *rb_proc_slot(rb, pid);
	if (p && p->ident == ident && p->state == RBP_ATTACHED) {
		if (err || vm == p->vm) {
			if (entry_write(rb, p))
				counter_inc(&counter_ruby_update_error);
		} else {
			detach(rb, p);
			p->ident = ++rb->next_ident;
			p->pending_since = now_ns();
			again = true;
		}
	}
	pthread_mutex_unlock(&rb->lock);
	return again;
}

/* (Re)set @p to interpreter @d mapped by @m at @bias. Lock held. */
static void proc_init(struct ruby *rb, struct rbproc *p, const struct rb_detected *d,
		      const struct proc_mapping *m, uint64_t bias)
{
	const struct rb_offsets *off = d->f.result == 1 ?
		rb_offsets_find(d->bin.major, d->bin.minor, d->bin.teeny) : NULL;

	detach(rb, p);
	p->ident = ++rb->next_ident;
	p->dev_major = m->dev_major;
	p->dev_minor = m->dev_minor;
	p->inode = m->inode;
	p->bias = bias;
	p->bin = d->bin;
	p->vm_ptr_addr = d->bin.vm_ptr + bias;
	p->exec_start = d->bin.exec_start + bias;
	p->exec_end = d->bin.exec_end + bias;
	p->addrs.global_symbols = d->bin.global_symbols ? d->bin.global_symbols + bias : 0;
	p->vm = 0;
	p->retry_ns = 0;
	p->pending_since = now_ns();
	if (off && !rb_offsets_walkable(off))
		off = NULL;
	p->off = off;
	p->state = off ? RBP_PENDING : RBP_UNSUPPORTED;
	if (!off) {
		counter_inc(&counter_ruby_unsupported_version);
		if (rb->verbose)
			fprintf(stderr, "profd: pid %d: CRuby %u.%u.%u in %s is not supported "
				"(3.1): native frames only\n", (int)p->pid, d->bin.major,
				d->bin.minor, d->bin.teeny, m->path);
	}
}

void ruby_maps_read(struct ruby *rb, pid_t pid, const struct proc_maps *maps)
{
	const struct proc_mapping *found = NULL;
	struct rb_detected *d = NULL, det;
	struct rbproc *p, probe;
	uint64_t bias = 0;
	bool attach;

	/* detection: files read, no lock (the cache is this thread's) */
	d = (struct rb_detected *)rt_file_find(&rb->det, pid, maps, &found, &bias);
	pthread_mutex_lock(&rb->lock);
	if (!d) {
		proc_remove(rb, pid);
		pthread_mutex_unlock(&rb->lock);
		return;
	}
	det = *d;
	p = *rb_proc_slot(rb, pid);
	probe = (struct rbproc){ .inode = found->inode, .dev_major = found->dev_major,
				 .dev_minor = found->dev_minor, .bias = bias };
	if (p && same_place(p, &probe)) {
		attach = p->state == RBP_PENDING;
		if (p->state == RBP_ATTACHED) {
			pthread_mutex_unlock(&rb->lock);
			attach = recheck(rb, pid);
			pthread_mutex_lock(&rb->lock);
		}
	} else {
		if (!p) {
			p = calloc(1, sizeof(*p));
			if (!p) {
				pthread_mutex_unlock(&rb->lock);
				return;
			}
			p->pid = pid;
			p->next = rb->procs[(uint32_t)pid & (RB_BUCKETS - 1)];
			rb->procs[(uint32_t)pid & (RB_BUCKETS - 1)] = p;
			__atomic_add_fetch(&rb->nprocs, 1, __ATOMIC_RELAXED);
		}
		proc_init(rb, p, &det, found, bias);
		attach = p->state == RBP_PENDING;
	}
	pthread_mutex_unlock(&rb->lock);
	if (attach)
		try_attach(rb, rb->loader_reader, pid);
}

void ruby_removed(struct ruby *rb, pid_t pid)
{
	pthread_mutex_lock(&rb->lock);
	proc_remove(rb, pid);
	pthread_mutex_unlock(&rb->lock);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void ruby_tick(struct ruby *rb)
{
	uint64_t gens[RB_DEAD_GENS_MAX];
	uint32_t n;

	pthread_mutex_lock(&rb->lock);
	n = rb->ndead;
	memcpy(gens, rb->dead_gens, n * sizeof(*gens));
	rb->ndead = 0;
	pthread_mutex_unlock(&rb->lock);
	if (n) {
		qsort(gens, n, sizeof(*gens), cmp_u64);
		rb_iseq_forget(rb->names, gens, n);
	}
}

/*
 * The retry thread: while processes are PENDING (their VM not set up
 * when their maps were read: a ruby starting), try them every
 * RB_RETRY_NS, after RB_RETRY_FAST_NS every RB_RETRY_SLOW_NS; asleep
 * otherwise. Its own reader (a remote_reader has one caller).
 */
static void *retry_main(void *arg)
{
	struct ruby *rb = arg;
	pid_t retry[RB_RETRY_MAX];

	pthread_mutex_lock(&rb->lock);
	while (!rb->stopping) {
		uint64_t now = now_ns();
		uint32_t nretry = 0;
		bool pending = false;
		struct timespec until;

		for (size_t b = 0; b < RB_BUCKETS; b++)
			for (struct rbproc *p = rb->procs[b]; p; p = p->next) {
				if (p->state != RBP_PENDING)
					continue;
				pending = true;
				if (now >= p->retry_ns && nretry < RB_RETRY_MAX) {
					retry[nretry++] = p->pid;
					p->retry_ns = now + (now - p->pending_since < RB_RETRY_FAST_NS ?
							     RB_RETRY_NS : RB_RETRY_SLOW_NS);
				}
			}
		if (!pending && !rb->retry_wanted) {
			pthread_cond_wait(&rb->retry_cond, &rb->lock);
			continue;
		}
		rb->retry_wanted = false;
		pthread_mutex_unlock(&rb->lock);
		for (uint32_t i = 0; i < nretry; i++)
			try_attach(rb, rb->retry_reader, retry[i]);
		pthread_mutex_lock(&rb->lock);
		if (rb->stopping)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (long)RB_RETRY_NS;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&rb->retry_cond, &rb->lock, &until);
	}
	pthread_mutex_unlock(&rb->lock);
	return NULL;
}

void ruby_stats(struct ruby *rb, struct ruby_stats *out)
{
	struct rb_iseq_stats is;

	memset(out, 0, sizeof(*out));
	out->processes = __atomic_load_n(&rb->nprocs, __ATOMIC_RELAXED);
	out->attached = __atomic_load_n(&rb->nattached, __ATOMIC_RELAXED);
	rb_iseq_stats(rb->names, &is);	/* racy sizes: fine for stats */
	out->objects = is.entries;
	out->evictions = is.evictions;
	out->bytes = is.bytes + rb_frames_bytes(rb, &out->frames);
}
