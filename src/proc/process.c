// SPDX-License-Identifier: GPL-2.0
/*
 * process.c - the table of processes seen in samples (see process.h).
 *
 * Owns also the reading of each snapshot's maps and metadata:
 * /proc/PID/maps, /proc/PID/cgroup (through cgroup.c), /proc/PID/exe
 * (the executable's build ID is read by a loader job, process_jobs.c);
 * which image names a sample (the image clock, a forked child's view of
 * its parent's, the image before an exec whose record is still to come);
 * a process's lifecycle (fork, exec, exit records, reaping). /proc is
 * read on the reader; mapped files only in the loader's jobs.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counters/counters.h"
#include "proc/fork_views.h"
#include "proc/process_internal.h"
#include "proc/process_jit.h"
#include "proc/procfs.h"

COUNTER_DEFINE(maps_read_error, COUNTER_PARTIAL,
	       "processes gone before their /proc/PID/maps was read");
COUNTER_DEFINE(maps_inherited_from_parent, COUNTER_STAT,
	       "forked children gone before their maps were read: named by their "
	       "parent's mappings at the fork");
COUNTER_DEFINE(samples_after_exit, COUNTER_STAT,
	       "samples of an exiting process read after its exit event");
COUNTER_DEFINE(exited_processes_removed, COUNTER_STAT,
	       "process entries removed after their exit event");

void process_table_set_loader(struct process_table *pt, struct object_loader *ol)
{
	pt->loader = ol;
}

void process_table_set_gate(struct process_table *pt, struct file_gate *g)
{
	pt->gate = g;
}

void process_table_set_image_clock(struct process_table *pt,
				   uint64_t (*exec_ns)(void *ctx, pid_t pid), void *ctx)
{
	pt->exec_ns = exec_ns;
	pt->exec_ctx = ctx;
}

/* When @pid last exec'd (0: never, unknown, or no clock). */
static uint64_t image_clock(const struct process_table *pt, pid_t pid)
{
	return pt->exec_ns ? pt->exec_ns(pt->exec_ctx, pid) : 0;
}

void process_table_set_listener(struct process_table *pt,
				const struct process_listener *l)
{
	if (l)
		pt->listener = *l;
	else
		memset(&pt->listener, 0, sizeof(pt->listener));
}

struct proc_snapshot *proc_snapshot_get(struct proc_snapshot *s)
{
	if (s)
		__atomic_add_fetch(&s->refcnt, 1, __ATOMIC_RELAXED);
	return s;
}

/* Heap bytes of all live snapshots (process_table_stats.snapshot_bytes). */
static uint64_t snapshot_bytes;

/* What @s holds on the heap: itself, its mappings and their paths, meta. */
static size_t snapshot_size(const struct proc_snapshot *s)
{
	size_t n = sizeof(*s) + s->maps.n * (sizeof(*s->maps.v) + sizeof(*s->objs) +
					      sizeof(*s->obj_state));

	for (size_t i = 0; i < s->maps.n; i++)
		n += s->maps.v[i].path ? strlen(s->maps.v[i].path) + 1 : 0;
	if (s->meta.cgroup)
		n += strlen(s->meta.cgroup) + 1;
	if (s->meta.executable)
		n += strlen(s->meta.executable) + 1;
	return n;
}

void proc_snapshot_put(struct proc_snapshot *s)
{
	if (!s || __atomic_sub_fetch(&s->refcnt, 1, __ATOMIC_ACQ_REL))
		return;
	__atomic_sub_fetch(&snapshot_bytes, s->bytes, __ATOMIC_RELAXED);
	pthread_mutex_lock(s->sym_lock);
	for (size_t i = 0; i < s->maps.n; i++)
		sym_object_put(s->objs[i]);
	pthread_mutex_unlock(s->sym_lock);
	jit_syms_put(s->jit);
	proc_maps_free(&s->maps);
	free(s->meta.cgroup);
	free(s->meta.executable);
	free(s->objs);
	free(s->obj_state);
	free(s);
}

struct sym_object *proc_snapshot_object(const struct proc_snapshot *s, int idx,
					 enum proc_obj_state *state)
{
	uint8_t st = __atomic_load_n(&s->obj_state[idx], __ATOMIC_ACQUIRE);

	if (state)
		*state = st;
	return st == PROC_OBJ_DONE ? __atomic_load_n(&s->objs[idx], __ATOMIC_ACQUIRE)
				   : NULL;
}

const char *proc_snapshot_build_id(const struct proc_snapshot *s)
{
	return __atomic_load_n(&s->meta_ready, __ATOMIC_ACQUIRE) ? s->meta.build_id : "";
}

struct process_table *process_table_new(struct symbolizer *sym,
					pthread_mutex_t *sym_lock)
{
	struct process_table *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return NULL;
	pt->forks = fork_views_new();
	if (!pt->forks) {
		free(pt);
		return NULL;
	}
	pt->sym = sym;
	pt->sym_lock = sym_lock;
	return pt;
}

/* Forget @p's JIT symbols (a new image, a new process): its snapshots keep theirs. */
static void drop_jit(struct process *p)
{
	jit_syms_put(p->jit);
	p->jit = NULL;
	p->jit_probe_ns = p->jit_read_ns = 0;
}

/* @s (a reference, taken) names @p's samples from @from_ns to its image's exec. */
static void set_pre_exec(struct process *p, struct proc_snapshot *s, uint64_t from_ns)
{
	proc_snapshot_put(p->pre_exec);
	p->pre_exec = s;
	p->pre_exec_ns = from_ns;
}

static void process_free(struct process *p)
{
	proc_snapshot_put(p->snap);
	proc_snapshot_put(p->pre_exec);
	drop_jit(p);
	free(p);
}

void process_table_free(struct process_table *pt)
{
	if (!pt)
		return;
	for (int b = 0; b < NBUCKETS; b++) {
		struct process *p = pt->buckets[b], *next;

		for (; p; p = next) {
			next = p->next;
			process_free(p);
		}
	}
	fork_views_free(pt->forks);
	free(pt);
}

static struct process **slot_of(struct process_table *pt, pid_t pid)
{
	struct process **pp = &pt->buckets[(uint32_t)pid % NBUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

/*
 * Fill s->meta from /proc (the build ID is the loader's: read_build_id());
 * what cannot be read stays "" / NULL. Returns the executable's path
 * (malloc'ed) for read_build_id(), or NULL.
 */
static char *read_meta(struct proc_snapshot *s)
{
	static const char deleted[] = " (deleted)";
	size_t dl = sizeof(deleted) - 1;
	char link[64], exe[PATH_MAX], cg[PATH_MAX];
	const char *base;
	ssize_t n;

	if (!proc_read_cgroup(s->pid, cg, sizeof(cg))) {
		s->meta.cgroup = strdup(cg);
		cgroup_container_id(cg, s->meta.container_id,
				    sizeof(s->meta.container_id));
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", s->pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;	/* kernel thread, or gone */
	exe[n] = '\0';
	if ((size_t)n > dl && !strcmp(exe + n - dl, deleted))
		exe[n - dl] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	if (*base)
		s->meta.executable = strdup(base);
	return strdup(exe);
}

/* The lowest mapping of a file in @s: the executable's first segment. */
static const struct proc_mapping *first_file(const struct proc_snapshot *s)
{
	for (size_t i = 0; i < s->maps.n; i++)
		if (!s->maps.v[i].special && s->maps.v[i].path[0] == '/')
			return &s->maps.v[i];
	return NULL;
}

/*
 * Whether snapshots @a and @b map one image: their lowest file mappings
 * are one file at one address (an exec maps another, or the same file
 * elsewhere: ASLR; a read during an exec's load finds none).
 */
static bool same_image(const struct proc_snapshot *a, const struct proc_snapshot *b)
{
	const struct proc_mapping *x = first_file(a), *y = first_file(b);

	return x && y && x->start == y->start && x->inode == y->inode &&
	       x->dev_major == y->dev_major && x->dev_minor == y->dev_minor &&
	       !strcmp(x->path, y->path);
}

/*
 * @p, a forked child never read, is gone: its parent's mappings at the
 * fork (fork_views.h) name its samples, if known (counted), from the fork
 * until an exec the image clock shows (its record, which drops the view,
 * still to come): samples after it are named by no image.
 */
static bool inherit(struct process_table *pt, struct process *p)
{
	uint64_t fork_ns = 0, exec_ns;
	struct proc_snapshot *view = fork_views_take(pt->forks, p->pid, &fork_ns);

	if (!view)
		return false;
	p->snap = view;
	p->image_ns = fork_ns;	/* the parent's image, the child's from its fork */
	/* an exec after the fork, its record not read yet: the view ends there */
	exec_ns = image_clock(pt, p->pid);
	p->image_end_ns = exec_ns > fork_ns ? exec_ns : 0;
	set_pre_exec(p, NULL, 0);
	pt->stats.maps_inherited++;
	counter_inc(&counter_maps_inherited_from_parent);
	return true;
}

/*
 * Read the maps into a new snapshot; keep the old one if the read fails.
 * A first read that fails because the process is gone falls back to its
 * fork view (inherit()).
 */
static int refresh(struct process_table *pt, struct process *p, uint64_t now)
{
	struct proc_snapshot *s = calloc(1, sizeof(*s));
	bool exec_seen = p->stale;
	uint64_t before, after;
	char *exe;
	int ret;

	if (p->stale)
		p->refreshes = 0;	/* a new image maps its libraries anew */
	else if (p->snap)
		p->refreshes++;
	p->refreshed_ns = now;
	p->stale = false;
	if (!s)
		return -ENOMEM;
	s->pid = p->pid;
	for (int tries = 0;; tries++) {
		/*
		 * The maps and /proc/PID/exe read are of the image exec'd at
		 * @after, unless it exec'd meanwhile: then read again, once;
		 * an exec during that read leaves the executable unnamed (its
		 * name would be the next image's, not these maps').
		 */
		before = image_clock(pt, p->pid);
		pt->stats.maps_reads++;
		ret = proc_maps_read(p->pid, &s->maps);
		exe = ret ? NULL : read_meta(s);
		after = image_clock(pt, p->pid);
		if (ret || before == after || tries)
			break;
		proc_maps_free(&s->maps);
		free(s->meta.cgroup);
		free(s->meta.executable);
		memset(&s->meta, 0, sizeof(s->meta));
		free(exe);
	}
	if (!ret && before != after) {
		free(s->meta.executable);
		s->meta.executable = NULL;
		free(exe);
		exe = NULL;
	}
	if (ret) {
		free(s);
		if ((ret != -ENOENT && ret != -ESRCH) || p->snap || !inherit(pt, p)) {
			pt->stats.maps_read_errors++;
			counter_inc(&counter_maps_read_error);
		}
		/*
		 * The snapshot kept describes the image before an exec seen
		 * since (its record read, or the image clock past the
		 * snapshot's image): no sample from that exec on is named by
		 * it, nor by the image nobody read (image_end_ns).
		 */
		if (p->snap && (exec_seen || after > p->image_ns))
			p->image_end_ns = after > p->image_ns ? after : 1;
		if ((ret == -ENOENT || ret == -ESRCH) && p->snap && !p->exited) {
			/*
			 * Read once, gone now: it exited (its exit event is on
			 * the way). It stays, with the snapshot its samples are
			 * named by, for the grace an exit gets; dropped as
			 * "gone", samples still held for it (stack copies)
			 * would find nothing.
			 */
			p->exited = true;
			p->exited_ns = now;
			p->exit_event_ns = now;
		} else if (ret == -ENOENT || ret == -ESRCH) {
			p->gone = true;
		}
		return ret;
	}
	s->objs = calloc(s->maps.n ? s->maps.n : 1, sizeof(*s->objs));
	s->obj_state = calloc(s->maps.n ? s->maps.n : 1, sizeof(*s->obj_state));
	if (!s->objs || !s->obj_state) {
		proc_maps_free(&s->maps);
		free(s->objs);
		free(s->obj_state);
		free(s->meta.cgroup);
		free(s->meta.executable);
		free(exe);
		free(s);
		return -ENOMEM;
	}
	s->refcnt = 1;
	s->pid = p->pid;
	s->sym = pt->sym;
	s->sym_lock = pt->sym_lock;
	s->jit = jit_syms_get(p->jit);
	s->bytes = snapshot_size(s);
	__atomic_add_fetch(&snapshot_bytes, s->bytes, __ATOMIC_RELAXED);
	if (p->snap && !exec_seen && p->snap->pid == p->pid &&
	    (after > p->image_ns || !same_image(p->snap, s))) {
		/* an exec whose record is still to come: the old image names
		 * the samples taken before it; one whose tracepoint has not
		 * fired yet (the clock did not move) is dated by this read */
		set_pre_exec(p, p->snap, p->image_ns);
		if (after <= p->image_ns)
			after = now;
	} else {
		proc_snapshot_put(p->snap);
	}
	p->snap = s;
	p->image_ns = after;
	p->image_end_ns = 0;
	if (pt->listener.maps_seen)
		pt->listener.maps_seen(pt->listener.ctx, s->pid, &s->maps);
	process_jobs_snapshot(pt, s, exe);
	return 0;
}

/*
 * The PID of an exited process was reused: everything after its exit
 * event belongs to the new process (one ringbuf keeps them in order).
 */
static void reset(struct process *p)
{
	proc_snapshot_put(p->snap);
	p->snap = NULL;
	p->image_ns = 0;
	p->image_end_ns = 0;
	set_pre_exec(p, NULL, 0);
	drop_jit(p);
	p->exited = false;
	p->exited_ns = 0;
	p->exit_event_ns = 0;
	p->released = false;
	p->gone = false;
	p->stale = false;
	p->refreshes = 0;
	p->comm[0] = '\0';
}

void process_drop_remains(struct process_table *pt, struct process *p)
{
	struct proc_snapshot *s = p->snap;

	if (!s || (s->maps.n && s->meta.executable) || !proc_exiting(p->pid))
		return;
	/*
	 * Read after its memory was torn down (the reader was behind): no
	 * mappings, no executable, cgroup "/". No labels rather than the
	 * remains': counted like a process gone before the read.
	 */
	proc_snapshot_put(s);
	p->snap = NULL;
	if (inherit(pt, p)) {
		/* a forked child never read before: its parent's view, as exited */
		p->exited = true;
		p->exited_ns = p->exit_event_ns = p->refreshed_ns;
		return;
	}
	p->gone = true;
	pt->stats.maps_read_errors++;
	counter_inc(&counter_maps_read_error);
}

/*
 * @p's first read found an image exec'd after its fork: its fork view
 * (the parent's image then) names its samples from before that exec,
 * until the exec record comes. A read before the exec needs no view.
 */
static void keep_fork_view(struct process_table *pt, struct process *p, uint64_t now)
{
	struct proc_snapshot *view;
	uint64_t fork_ns = 0;

	if (!p->snap || p->snap->pid != p->pid)
		return;
	view = fork_views_take(pt->forks, p->pid, &fork_ns);
	if (!view)
		return;
	/* another image than the parent's, the clock still before the fork:
	 * an exec under way (its tracepoint not fired yet), dated by the read */
	if (p->image_ns <= fork_ns && !same_image(view, p->snap))
		p->image_ns = now;
	if (fork_ns < p->image_ns)
		set_pre_exec(p, view, fork_ns);
	else
		proc_snapshot_put(view);
}

struct process *process_get(struct process_table *pt, pid_t pid, uint64_t now,
			    bool exiting, const char *comm, uint64_t sample_ns)
{
	struct process **pp = slot_of(pt, pid), *p = *pp;

	if (p && !p->exited)
		return p;
	if (p && sample_ns && sample_ns < p->exit_event_ns)
		return p;	/* taken before the exit, read after it */
	if (p && exiting) {
		/* after the exit event, before the task stopped: the same process */
		pt->stats.samples_after_exit++;
		counter_inc(&counter_samples_after_exit);
		return p;
	}
	if (p) {
		reset(p);
	} else {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->pid = pid;
		*pp = p;
		pt->stats.processes++;
	}
	if (comm && comm[0])	/* a task comm: at most 15 bytes + NUL */
		snprintf(p->comm, sizeof(p->comm), "%.15s", comm);
	else
		proc_read_comm(pid, 0, p->comm, sizeof(p->comm));
	refresh(pt, p, now);
	process_drop_remains(pt, p);
	keep_fork_view(pt, p, now);
	fork_views_drop(pt->forks, pid);	/* used, or its own maps read */
	if (exiting && !p->exited) {
		/* first seen exiting: its exit event may be read already */
		p->exited = true;
		p->exited_ns = now;
	}
	return p;
}

static int lookup(struct proc_snapshot *s, uint64_t addr)
{
	const struct proc_mapping *m;

	if (!s)
		return -1;
	m = proc_maps_find(&s->maps, addr);
	return m ? (int)(m - s->maps.v) : -1;
}

/*
 * @s's mapping @idx was sampled: its object's table counts as used now
 * (shed last), and if it was shed for the budget or its debug file was
 * fetched from debuginfod, its reload is queued (once per object per
 * RELOAD_ASK_NS).
 */
static void note_sampled(struct process_table *pt, struct proc_snapshot *s,
			 int idx, uint64_t now)
{
	struct sym_object *o = proc_snapshot_object(s, idx, NULL);
	uint32_t i;

	sym_object_sampled(o, now);
	if (!sym_object_wants_reload(o))
		return;
	for (i = 0; i < RELOAD_ASKED; i++)
		if (pt->reload_asked[i].o == o &&
		    now - pt->reload_asked[i].ns < RELOAD_ASK_NS)
			return;
	i = pt->reload_next++ % RELOAD_ASKED;
	pt->reload_asked[i].o = o;
	pt->reload_asked[i].ns = now;
	process_jobs_reload(pt, s, idx);
}

/* The least time between two maps reads of @p (see PROCESS_QUICK_REFRESHES). */
static uint64_t refresh_gap(const struct process *p)
{
	return p->refreshes < PROCESS_QUICK_REFRESHES ? PROCESS_QUICK_REFRESH_NS :
							 PROCESS_REFRESH_MIN_NS;
}

int process_find_mapping(struct process_table *pt, struct process *p,
			 uint64_t addr, uint64_t now)
{
	int idx = p->stale ? -1 : lookup(p->snap, addr);

	if (idx < 0 && !p->gone && !p->exited &&
	    (p->stale || !p->snap || now - p->refreshed_ns >= refresh_gap(p))) {
		refresh(pt, p, now);
		idx = lookup(p->snap, addr);
	}
	if (idx >= 0) {
		process_jobs_object(pt, p->snap, idx);
		note_sampled(pt, p->snap, idx, now);
	}
	return idx;
}

struct proc_snapshot *process_sample_snapshot(const struct process *p,
					       uint64_t sample_ns)
{
	if (p->image_end_ns && (!sample_ns || sample_ns >= p->image_end_ns))
		return NULL;	/* after an exec whose image was never read */
	if (!sample_ns || sample_ns >= p->image_ns)
		return p->snap;
	return p->pre_exec && sample_ns >= p->pre_exec_ns ? p->pre_exec : NULL;
}

int process_snapshot_mapping(struct process_table *pt, struct proc_snapshot *s,
			     uint64_t addr, uint64_t now)
{
	int idx = lookup(s, addr);

	if (idx >= 0) {
		process_jobs_object(pt, s, idx);
		note_sampled(pt, s, idx, now);
	}
	return idx;
}

void process_request_unwind(struct process_table *pt, struct process *p,
			    uint64_t now)
{
	if (!p->snap || !pt->listener.maps_read || p->exited || p->gone ||
	    now - p->refreshed_ns < refresh_gap(p) ||
	    now - p->unwind_requested_ns < refresh_gap(p))
		return;
	p->unwind_requested_ns = now;
	/*
	 * Re-read the maps rather than offer the old snapshot again: a first
	 * read taken while ld.so was still mapping libraries lacks them, and
	 * BPF would keep dropping their (real) return addresses.
	 */
	refresh(pt, p, now);
}

void process_exec(struct process_table *pt, pid_t pid, const char *comm)
{
	struct process *p = *slot_of(pt, pid);

	/* a new image: its parent's mappings name none of it */
	fork_views_drop(pt->forks, pid);
	if (!p)
		return;	/* read on first sample */
	/* every sample read from now on was taken after this exec */
	set_pre_exec(p, NULL, 0);
	if (p->exited)
		reset(p);	/* or an inherited view (inherit()): never after the exec */
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	p->stale = true;
	drop_jit(p);
	/*
	 * The old image's state (unwind tables, a runtime's offsets and
	 * caches) is forgotten before the new maps are offered: the same
	 * runtime at the same address (no ASLR) is another process now.
	 */
	process_jobs_removed(pt, pid);
}

void process_exit(struct process_table *pt, pid_t pid, uint64_t now, uint64_t event_ns)
{
	struct process *p = *slot_of(pt, pid);

	/* its fork view stays: samples of its exit may follow this record */
	if (p && !p->exited) {
		p->exited = true;
		p->exited_ns = now;
		p->exit_event_ns = event_ns;
	}
}

void process_fork(struct process_table *pt, pid_t pid, pid_t ppid, uint64_t now,
		  uint64_t event_ns)
{
	struct process *p = *slot_of(pt, pid), *parent = *slot_of(pt, ppid);
	bool current = parent && parent->snap && parent->snap->pid == ppid &&
		       !parent->stale && !parent->exited && !parent->gone;

	if (p && !p->exited) {
		/* the PID is new: its last process's exit event was lost */
		p->exited = true;
		p->exited_ns = now;
		p->exit_event_ns = event_ns;
	}
	fork_views_set(pt->forks, pid, current ? parent->snap : NULL, now, event_ns);
}

void process_table_reap(struct process_table *pt, uint64_t now,
			uint64_t idle_ns, uint64_t release_before,
			uint64_t remove_before)
{
	fork_views_expire(pt->forks, now > FORK_VIEW_TTL_NS ? now - FORK_VIEW_TTL_NS : 0);
	for (int b = 0; b < NBUCKETS; b++) {
		struct process **pp = &pt->buckets[b];

		while (*pp) {
			struct process *p = *pp;
			bool dead = p->exited && p->exited_ns < remove_before;
			bool drop = dead || (p->gone && !p->exited) ||
				    (!p->exited && now - p->last_sample_ns > idle_ns &&
				     !proc_alive(p->pid));

			if (!drop && p->exited && !p->released &&
			    p->exited_ns < release_before) {
				p->released = true;
				process_jobs_removed(pt, p->pid);
			}
			if (!drop) {
				pp = &p->next;
				continue;
			}
			pt->stats.exited_removed += dead;
			counter_add(&counter_exited_processes_removed, dead);
			*pp = p->next;
			if (!p->released)
				process_jobs_removed(pt, p->pid);
			process_free(p);
			pt->stats.processes--;
		}
	}
	pthread_mutex_lock(pt->sym_lock);
	symbolizer_trim(pt->sym);
	pthread_mutex_unlock(pt->sym_lock);
}

void process_table_stats(const struct process_table *pt,
			 struct process_table_stats *out)
{
	*out = pt->stats;
	out->loader_dropped = __atomic_load_n(&pt->stats.loader_dropped,
					      __ATOMIC_RELAXED);	/* also the flush's */
	out->elf_open_errors = __atomic_load_n(&pt->stats.elf_open_errors,
					       __ATOMIC_RELAXED);	/* the loader's */
	out->snapshot_bytes = __atomic_load_n(&snapshot_bytes, __ATOMIC_RELAXED);
}
