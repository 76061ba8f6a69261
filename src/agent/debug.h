/* SPDX-License-Identifier: GPL-2.0 */
/*
 * debug.h - per-sample debug output (--debug-pid PID, and -vvv for every
 * process): one block per sample on stderr, for the chosen processes only.
 */
#ifndef PROFD_AGENT_DEBUG_H
#define PROFD_AGENT_DEBUG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/profd.h"
#include "proc/process.h"

struct agent;

/* agent_debug_wanted - whether samples of process @pid get debug output. */
bool agent_debug_wanted(const struct agent *ag, pid_t pid);

/*
 * agent_debug_sample - print sample @s (reader thread): a header line
 * "profd: debug: sample pid= tid= comm= cpu= origin= unwinder=
 * flags= kernel= user=" (unwinder: dwarf, fp, +RUNTIME, none; flags: why
 * a stack is partial, or none), then one line per frame of @ips
 * (@s->kernel_len kernel then @nuser user addresses after the runtime's
 * merge): index, kernel/user/RUNTIME, address, and the kernel symbol, the
 * mapping path + file offset in @snap (may be NULL) and the symbol when
 * its ELF file is open already (takes ag->sym_lock), or the runtime's frame.
 * @cut: the stack was cut at an unverified caller (unwind/callsite.h):
 * flags show "unverified_caller" and @nuser is what was kept.
 * Nothing is allocated; stdio errors are ignored.
 */
void agent_debug_sample(struct agent *ag, const struct profd_sample *s,
			const uint64_t *ips, uint32_t nuser,
			struct proc_snapshot *snap, bool cut);

#endif /* PROFD_AGENT_DEBUG_H */
