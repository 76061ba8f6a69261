// SPDX-License-Identifier: GPL-2.0
/*
 * process_jobs.c - the jobs the process table hands to the object loader
 * (object_loader.h; see process.h): a new snapshot's (gate checks of its
 * files, the listener's maps_read(), the executable's object and build
 * ID, the objects its first samples asked for), a mapping's object, a
 * symbol table shed for the budget and sampled again, a JIT dump's read,
 * and a process's removal told to the listener in order. Mapped files
 * are opened here only, never on the reader.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "counters/counters.h"
#include "proc/file_gate.h"
#include "proc/object_loader.h"
#include "proc/process_internal.h"
#include "proc/process_jit.h"

COUNTER_DEFINE(elf_open_error, COUNTER_PARTIAL,
	       "mapped files unreadable or not ELF");
COUNTER_DEFINE(object_queue_full, COUNTER_PARTIAL,
	       "object loader jobs dropped: its queue was full");

/* What the loader is asked to do (see the file's top comment). */
enum job_kind { JOB_SNAPSHOT, JOB_OBJECT, JOB_REMOVED, JOB_RELOAD, JOB_JIT };

struct load_job {
	enum job_kind kind;
	struct process_table *pt;
	struct proc_snapshot *s;	/* a reference; NULL for JOB_REMOVED */
	int idx;			/* JOB_OBJECT, JOB_RELOAD: the mapping */
	pid_t pid;			/* JOB_REMOVED */
	char *exe;			/* JOB_SNAPSHOT: /proc/PID/exe's target; NULL */
};

static void load_object(struct process_table *pt, struct proc_snapshot *s,
			int idx);

/*
 * The executable mapping of the file @exe (the target of /proc/PID/exe)
 * in @s: by path, else by file identity (for when the two paths differ,
 * e.g. the file was renamed after exec). -1 if none.
 */
static int exe_mapping(const struct proc_snapshot *s, const char *exe)
{
	char link[64];
	struct stat st;

	for (size_t i = 0; i < s->maps.n; i++)
		if (s->maps.v[i].executable && !strcmp(s->maps.v[i].path, exe))
			return i;
	snprintf(link, sizeof(link), "/proc/%d/exe", s->pid);
	if (stat(link, &st))
		return -1;
	for (size_t i = 0; i < s->maps.n; i++) {
		const struct proc_mapping *m = &s->maps.v[i];

		if (m->executable && m->inode == st.st_ino &&
		    m->dev_major == major(st.st_dev) && m->dev_minor == minor(st.st_dev))
			return i;
	}
	return -1;
}

/*
 * On the loader: the build ID of @exe's object (opened now if need be)
 * into s->meta, then meta_ready (release).
 */
static void read_build_id(struct process_table *pt, struct proc_snapshot *s,
			  const char *exe)
{
	struct sym_object *o;
	int idx = exe ? exe_mapping(s, exe) : -1;

	if (idx >= 0) {
		load_object(pt, s, idx);
		o = proc_snapshot_object(s, idx, NULL);
		if (o)
			snprintf(s->meta.build_id, sizeof(s->meta.build_id), "%s",
				 sym_object_build_id(o));
	}
	__atomic_store_n(&s->meta_ready, 1, __ATOMIC_RELEASE);
}

/*
 * The gate's word on @m's file: 0 (read, or nothing to read), or < 0:
 * not to be opened now (-EINPROGRESS: read still running, -ETIMEDOUT:
 * hung, -EBUSY: too many reads blocked). Waits only for a file not read
 * recently.
 */
static int mapping_gate(struct process_table *pt, const struct proc_snapshot *s,
			const struct proc_mapping *m)
{
	return file_gate_check(pt->gate, s->pid, m);
}

/*
 * Before anything opens them: read the files of @s's executable mappings
 * through the gate (each file once, with a deadline), so a file whose
 * reads hang is known as hung and left alone by every parser.
 */
static void check_files(struct process_table *pt, struct proc_snapshot *s)
{
	if (!pt->gate)
		return;
	for (size_t i = 0; i < s->maps.n; i++) {
		const struct proc_mapping *m = &s->maps.v[i];

		if (m->executable && m->inode && !m->special && m->path[0])
			file_gate_check(pt->gate, s->pid, m);
	}
}

/*
 * Hand @s's mappings to the listener's maps_read() (unwind tables,
 * runtime detection), less those whose file is hung: they open and
 * parse the files. On the loader.
 */
static void offer_maps(struct process_table *pt, struct proc_snapshot *s)
{
	struct proc_maps view = { 0 };
	size_t nhung = 0;

	for (size_t i = 0; i < s->maps.n; i++)
		nhung += mapping_gate(pt, s, &s->maps.v[i]) < 0;
	if (!nhung) {
		pt->listener.maps_read(pt->listener.ctx, s->pid, &s->maps);
		return;
	}
	view.v = malloc(s->maps.n * sizeof(*view.v));
	if (!view.v)
		return;		/* no tables this time; the next read offers again */
	for (size_t i = 0; i < s->maps.n; i++)
		if (mapping_gate(pt, s, &s->maps.v[i]) >= 0)
			view.v[view.n++] = s->maps.v[i];	/* paths stay @s's */
	pt->listener.maps_read(pt->listener.ctx, s->pid, &view);
	free(view.v);
}

/* On the loader: open the objects of @s's mappings already asked for. */
static void open_asked(struct process_table *pt, struct proc_snapshot *s)
{
	for (size_t i = 0; i < s->maps.n; i++)
		if (__atomic_load_n(&s->obj_state[i], __ATOMIC_ACQUIRE) == PROC_OBJ_QUEUED)
			load_object(pt, s, i);
}

static void job_free(struct load_job *j)
{
	proc_snapshot_put(j->s);
	free(j->exe);
	free(j);
}

/* object_job_fn of every job: run it (unless cancelled), then free it. */
static void run_job(void *arg, bool cancel)
{
	struct load_job *j = arg;
	struct process_table *pt = j->pt;

	if (cancel) {
		job_free(j);
		return;
	}
	switch (j->kind) {
	case JOB_SNAPSHOT:
		check_files(pt, j->s);
		/* unwind tables first: needed by BPF now, the build ID at write-out */
		if (pt->listener.maps_read)
			offer_maps(pt, j->s);
		read_build_id(pt, j->s, j->exe);
		/* what its first samples asked for, not behind other jobs */
		open_asked(pt, j->s);
		break;
	case JOB_OBJECT:
		load_object(pt, j->s, j->idx);
		break;
	case JOB_REMOVED:
		if (pt->listener.removed)
			pt->listener.removed(pt->listener.ctx, j->pid);
		break;
	case JOB_RELOAD:
		symbolizer_reload(pt->sym, pt->sym_lock,
				  proc_snapshot_object(j->s, j->idx, NULL));
		break;
	case JOB_JIT:
		process_jit_read(j->s);
		break;
	}
	job_free(j);
}

/*
 * Queue job @kind (taking a reference to @s, and @exe). Returns 0, or
 * < 0 when it was not queued (freed; counted as loader_dropped).
 */
static int queue_job(struct process_table *pt, enum job_kind kind,
		     struct proc_snapshot *s, int idx, pid_t pid, char *exe)
{
	struct load_job *j = calloc(1, sizeof(*j));
	int ret;

	if (!j) {
		free(exe);
		return -ENOMEM;
	}
	j->kind = kind;
	j->pt = pt;
	j->s = proc_snapshot_get(s);
	j->idx = idx;
	j->pid = pid;
	j->exe = exe;
	ret = object_loader_add(pt->loader, run_job, j, kind == JOB_REMOVED);
	if (ret) {
		job_free(j);
		__atomic_add_fetch(&pt->stats.loader_dropped, 1, __ATOMIC_RELAXED);
		counter_inc(&counter_object_queue_full);
	}
	return ret;
}

/*
 * The loader's work on new snapshot @s: the gate's checks of its files,
 * the listener's maps_read(), the executable's build ID (@exe, taken).
 * Not queued (queue full): no build ID, and no maps_read() until the next
 * maps read.
 */
void process_jobs_snapshot(struct process_table *pt, struct proc_snapshot *s,
			   char *exe)
{
	if (queue_job(pt, JOB_SNAPSHOT, s, -1, 0, exe))
		__atomic_store_n(&s->meta_ready, 1, __ATOMIC_RELEASE);
}

/*
 * Ask the loader for the object of @s's mapping @idx (once; again after
 * its file was pending). Mappings with nothing to open are done at once.
 */
void process_jobs_object(struct process_table *pt, struct proc_snapshot *s, int idx)
{
	const struct proc_mapping *m = &s->maps.v[idx];

	uint8_t none = PROC_OBJ_NONE, queued = PROC_OBJ_QUEUED;
	bool nothing = !m->executable || (m->special && strcmp(m->path, "[vdso]")) ||
		       !m->path[0];

	/* a CAS: the loader may be settling this mapping right now */
	if (__atomic_load_n(&s->obj_state[idx], __ATOMIC_ACQUIRE) != PROC_OBJ_NONE ||
	    !__atomic_compare_exchange_n(&s->obj_state[idx], &none,
					 nothing ? PROC_OBJ_DONE : PROC_OBJ_QUEUED, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
	    nothing)
		return;
	if (queue_job(pt, JOB_OBJECT, s, idx, 0, NULL))
		__atomic_compare_exchange_n(&s->obj_state[idx], &queued, PROC_OBJ_NONE,
					    false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

int process_queue_jit(struct process_table *pt, struct proc_snapshot *s)
{
	return queue_job(pt, JOB_JIT, s, -1, 0, NULL);
}

/* Tell the listener @pid left, after the jobs queued before (in order). */
void process_jobs_removed(struct process_table *pt, pid_t pid)
{
	if (!pt->listener.removed)
		return;
	if (queue_job(pt, JOB_REMOVED, NULL, -1, pid, NULL) == -ENOMEM)
		pt->listener.removed(pt->listener.ctx, pid);	/* no memory: now */
}

/* process_jobs_reload - see process_internal.h. */
void process_jobs_reload(struct process_table *pt, struct proc_snapshot *s, int idx)
{
	queue_job(pt, JOB_RELOAD, s, idx, 0, NULL);
}

/*
 * On the loader: open the object of @s's mapping @idx through the gate
 * and publish it (objs[idx], then obj_state[idx]: release). A file still
 * being read ahead leaves the state PROC_OBJ_NONE (asked again at its
 * next sample); a hung one PROC_OBJ_HUNG.
 */
static void load_object(struct process_table *pt, struct proc_snapshot *s,
			int idx)
{
	const struct proc_mapping *m = &s->maps.v[idx];
	uint8_t st = __atomic_load_n(&s->obj_state[idx], __ATOMIC_ACQUIRE);
	struct sym_object *o;
	int err = 0, gate;

	if (st == PROC_OBJ_DONE || st == PROC_OBJ_HUNG)
		return;
	if (__atomic_load_n(&s->objs[idx], __ATOMIC_ACQUIRE)) {
		/* opened by an earlier job; the reader queued this one meanwhile */
		__atomic_store_n(&s->obj_state[idx], PROC_OBJ_DONE, __ATOMIC_RELEASE);
		return;
	}
	if (!m->executable || (m->special && strcmp(m->path, "[vdso]")) || !m->path[0]) {
		__atomic_store_n(&s->obj_state[idx], PROC_OBJ_DONE, __ATOMIC_RELEASE);
		return;
	}
	gate = mapping_gate(pt, s, m);
	if (gate < 0) {
		__atomic_store_n(&s->obj_state[idx], gate == -ETIMEDOUT ?
				 PROC_OBJ_HUNG : PROC_OBJ_NONE, __ATOMIC_RELEASE);
		return;
	}
	o = symbolizer_get_unlocked(pt->sym, pt->sym_lock, s->pid, m, &err);
	__atomic_store_n(&s->objs[idx], o, __ATOMIC_RELEASE);
	__atomic_store_n(&s->obj_state[idx], PROC_OBJ_DONE, __ATOMIC_RELEASE);
	if (!o) {
		__atomic_add_fetch(&pt->stats.elf_open_errors, 1, __ATOMIC_RELAXED);
		counter_inc(&counter_elf_open_error);
	}
}

