/* SPDX-License-Identifier: GPL-2.0 */
/*
 * process_internal.h - what process.c (the table, its snapshots, a
 * process's lifecycle) and process_jobs.c (the jobs handed to the object
 * loader) share: the table itself and the ways to queue a job.
 */
#ifndef PROFD_PROC_PROCESS_INTERNAL_H
#define PROFD_PROC_PROCESS_INTERNAL_H

#include <pthread.h>

#include "proc/fork_views.h"
#include "proc/process.h"

#define NBUCKETS 4096
/*
 * Objects asked for a reload of their shed symbol table (one job each,
 * not one per sampled frame), remembered RELOAD_ASK_NS.
 */
#define RELOAD_ASKED	64
#define RELOAD_ASK_NS	(1000ULL * 1000 * 1000)

struct process_table {
	struct process *buckets[NBUCKETS];
	struct symbolizer *sym;
	pthread_mutex_t *sym_lock;
	struct process_table_stats stats;
	struct process_listener listener;
	struct file_gate *gate;		/* NULL: files are opened unchecked */
	struct object_loader *loader;	/* NULL: jobs run on the reader */
	struct fork_views *forks;	/* children's views of their parent's maps */
	uint64_t (*exec_ns)(void *ctx, pid_t pid);	/* the image clock, or NULL */
	void *exec_ctx;
	/* objects whose shed symbol table a JOB_RELOAD was queued for lately */
	struct { const struct sym_object *o; uint64_t ns; } reload_asked[RELOAD_ASKED];
	uint32_t reload_next;
};

/*
 * process_jobs_snapshot - the loader's work on new snapshot @s: the
 * gate's checks of its files, the listener's maps_read(), the
 * executable's build ID (@exe, a path taken over; may be NULL). Not
 * queued (queue full, counted object_queue_full): no build ID, and no
 * maps_read() until the next maps read.
 */
void process_jobs_snapshot(struct process_table *pt, struct proc_snapshot *s, char *exe);

/*
 * process_jobs_object - ask the loader for the object of @s's mapping
 * @idx (once; again after its file was pending). Mappings with nothing
 * to open are done at once.
 */
void process_jobs_object(struct process_table *pt, struct proc_snapshot *s, int idx);

/*
 * process_jobs_reload - queue the reload of the shed symbol table of @s's
 * mapping @idx's object (symbolizer_reload()).
 */
void process_jobs_reload(struct process_table *pt, struct proc_snapshot *s, int idx);

/*
 * process_jobs_removed - tell the listener @pid left, after the jobs
 * queued before it (in order); at once when no job can be allocated.
 */
void process_jobs_removed(struct process_table *pt, pid_t pid);

#endif
