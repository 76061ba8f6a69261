// SPDX-License-Identifier: GPL-2.0
/*
 * fork_views.c - forked children's views of their parent's mappings,
 * from the fork record to the child's first maps read (see fork_views.h).
 */
#include <stdlib.h>

#include "proc/fork_views.h"
#include "proc/process.h"

struct fork_view {
	pid_t pid;			/* 0: empty */
	struct proc_snapshot *snap;	/* a reference */
	uint64_t ns;			/* when the fork record was read */
	uint64_t fork_ns;		/* when the fork happened (the record's time) */
};

struct fork_views {
	struct fork_view v[FORK_VIEWS];
};

struct fork_views *fork_views_new(void)
{
	return calloc(1, sizeof(struct fork_views));
}

static void clear(struct fork_view *v)
{
	proc_snapshot_put(v->snap);
	*v = (struct fork_view){ 0 };
}

void fork_views_free(struct fork_views *fv)
{
	if (!fv)
		return;
	for (int i = 0; i < FORK_VIEWS; i++)
		clear(&fv->v[i]);
	free(fv);
}

static struct fork_view *slot(struct fork_views *fv, pid_t pid)
{
	return &fv->v[(uint32_t)pid % FORK_VIEWS];
}

void fork_views_set(struct fork_views *fv, pid_t pid, struct proc_snapshot *snap,
		    uint64_t now, uint64_t fork_ns)
{
	struct fork_view *v = slot(fv, pid);

	clear(v);
	if (snap)
		*v = (struct fork_view){ .pid = pid, .snap = proc_snapshot_get(snap),
					 .ns = now, .fork_ns = fork_ns };
}

struct proc_snapshot *fork_views_take(struct fork_views *fv, pid_t pid,
				      uint64_t *fork_ns)
{
	struct fork_view *v = slot(fv, pid);
	struct proc_snapshot *s;

	if (v->pid != pid || !v->snap)
		return NULL;
	s = v->snap;
	if (fork_ns)
		*fork_ns = v->fork_ns;
	*v = (struct fork_view){ 0 };
	return s;
}

void fork_views_drop(struct fork_views *fv, pid_t pid)
{
	struct fork_view *v = slot(fv, pid);

	if (v->pid == pid)
		clear(v);
}

void fork_views_expire(struct fork_views *fv, uint64_t before)
{
	for (int i = 0; i < FORK_VIEWS; i++)
		if (fv->v[i].snap && fv->v[i].ns < before)
			clear(&fv->v[i]);
}
