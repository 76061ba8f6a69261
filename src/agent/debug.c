// SPDX-License-Identifier: GPL-2.0
/*
 * debug.c - per-sample debug output (see debug.h). STUB: being written.
 */
#include <stdio.h>

#include "agent/agent_internal.h"
#include "agent/debug.h"

bool agent_debug_wanted(const struct agent *ag, pid_t pid)
{
	if (ag->cfg->verbose > 2)
		return true;
	for (size_t i = 0; i < ag->cfg->ndebug_pids; i++)
		if (ag->cfg->debug_pids[i] == pid)
			return true;
	return false;
}

void agent_debug_sample(struct agent *ag, const struct profd_sample *s,
			const uint64_t *ips, uint32_t nuser,
			struct proc_snapshot *snap)
{
	fprintf(stderr, "profd: sample pid=%u tid=%u comm=%s k=%u u=%u\n",
		s->pid, s->tid, s->comm, s->kernel_len, nuser);
}
