// SPDX-License-Identifier: GPL-2.0
/*
 * debug.c - per-sample debug output (see debug.h).
 *
 * Owns: the block --debug-pid (and -vvv) prints for each sample, on the
 * reader thread, as the sample is aggregated:
 *
 *   profd: debug: sample pid=1234 tid=1235 comm=chain cpu=1 origin=cpu-clock
 *          unwinder=dwarf+RT flags=user_complete kernel=0 user=7 (native 6, RT 2)
 *          ktime=123456789012
 *     #0 user   0x000055d0c0a01189 /tmp/chain+0x1189 chain_e
 *     #1 kernel 0xffffffff81e0012f [kernel] asm_sysvec_apic_timer_interrupt+0xf
 *     #2 RT     0x4100000000000012 [RT] work (stacks.rt:12)
 *
 * (the header is one line; ktime is the sample's bpf_ktime_get_ns(),
 * CLOCK_MONOTONIC ns, so a benchmark can time samples against its own
 * clock_gettime() stamps). User addresses are placed in the process's
 * maps snapshot (path and file offset); names come from kallsyms, the ELF
 * symbol tables already opened for the snapshot (under sym_lock, never
 * opening a file here) and the sample's runtime (its frame table). The block is written
 * under stderr's stdio lock, so lines of other threads do not split it.
 */
#include <stdio.h>
#include <string.h>

#include "agent/agent_internal.h"
#include "agent/debug.h"
#include "proc/maps.h"
#include "runtime/runtime.h"

bool agent_debug_wanted(const struct agent *ag, pid_t pid)
{
	if (ag->cfg->verbose > 2)
		return true;
	for (size_t i = 0; i < ag->cfg->ndebug_pids; i++)
		if (ag->cfg->debug_pids[i] == pid)
			return true;
	return false;
}

static const struct {
	uint32_t bit;
	const char *name;
} flag_names[] = {
	{ PROFD_SAMPLE_USER_TRUNCATED, "user_truncated" },
	{ PROFD_SAMPLE_USER_ERROR, "user_read_error" },
	{ PROFD_SAMPLE_KERNEL_MODE, "kernel_mode" },
	{ PROFD_SAMPLE_NO_USER, "no_user_stack" },
	{ PROFD_SAMPLE_UNWIND_MISSING, "unwind_info_missing" },
	{ PROFD_SAMPLE_DWARF, "dwarf" },
	{ PROFD_SAMPLE_INTERP, "" },	/* the runtime's name */
	{ PROFD_SAMPLE_INTERP_TRUNCATED, "_truncated" },	/* after it */
	{ PROFD_SAMPLE_INTERP_ERROR, "_read_error" },
	{ PROFD_SAMPLE_USER_COMPLETE, "user_complete" },
};

/* The sample's runtime's name ("runtime" when unknown). */
static const char *runtime_name(const struct profd_sample *s)
{
	const struct runtime_ops *ops = runtimes_ops(s->runtime);

	return ops ? ops->name : "runtime";
}

/* The flags that are not the unwinder's name, comma-separated. */
static void flags_str(const struct profd_sample *s, bool cut, char *buf, size_t len)
{
	uint32_t flags = s->flags;
	size_t n = 0;

	buf[0] = '\0';
	if (cut)	/* ends in [truncated], as the walk's own cut does */
		n += snprintf(buf, len, "unverified_caller");
	for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++) {
		bool interp = flag_names[i].bit & (PROFD_SAMPLE_INTERP_TRUNCATED |
						   PROFD_SAMPLE_INTERP_ERROR);

		if (!(flags & flag_names[i].bit) ||
		    flag_names[i].bit & (PROFD_SAMPLE_DWARF | PROFD_SAMPLE_INTERP))
			continue;
		n += snprintf(buf + n, n < len ? len - n : 0, "%s%s%s",
			      n ? "," : "", interp ? runtime_name(s) : "",
			      flag_names[i].name);
		flags &= ~flag_names[i].bit;
	}
	flags &= ~(PROFD_SAMPLE_DWARF | PROFD_SAMPLE_INTERP);
	if (flags)
		n += snprintf(buf + n, n < len ? len - n : 0, "%s0x%x",
			      n ? "," : "", flags);
	if (!n)
		snprintf(buf, len, "none");
}

/* Which walkers produced the user stack: "dwarf", "fp+RT" (a runtime's name), ... */
static void unwinder_str(const struct profd_sample *s, char *buf, size_t len)
{
	const char *native = s->flags & PROFD_SAMPLE_NO_USER || !s->user_len ? NULL :
			     s->flags & PROFD_SAMPLE_DWARF ? "dwarf" : "fp";

	if (!(s->flags & PROFD_SAMPLE_INTERP))
		snprintf(buf, len, "%s", native ? native : "none");
	else
		snprintf(buf, len, "%s%s%s", native ? native : "",
			 native ? "+" : "", runtime_name(s));
}

static void kernel_frame(struct agent *ag, FILE *f, uint32_t i, uint64_t ip)
{
	const struct ksym *ks = ag->ksyms ?
		kallsyms_lookup(ag->ksyms, i ? ip - 1 : ip) : NULL;

	fprintf(f, "  #%-3u kernel 0x%016llx [kernel]", i, (unsigned long long)ip);
	if (ks) {
		bool mod = ks->module && ks->module[0];

		fprintf(f, " %s+0x%llx%s%s%s", ks->name,
			(unsigned long long)(ip - ks->addr), mod ? " [" : "",
			mod ? ks->module : "", mod ? "]" : "");
	}
	fputc('\n', f);
}

static void runtime_frame_line(struct agent *ag, FILE *f, uint32_t i,
			       uint64_t token)
{
	const struct runtime_ops *ops = runtime_ip_ops(token);
	struct runtime_frame pf;

	fprintf(f, "  #%-3u %s 0x%016llx %s", i, ops->name,
		(unsigned long long)token, ops->mapping);
	if (!runtimes_frame(ag->rts, token, &pf))
		fprintf(f, " %s (%s:%d)", pf.function ? pf.function : "?",
			pf.file ? pf.file : "?", pf.line);
	else
		fprintf(f, " frame %u", (uint32_t)token);
	fputc('\n', f);
}

static void user_frame(struct agent *ag, FILE *f, uint32_t i, uint64_t raw,
		       bool leaf, struct proc_snapshot *snap)
{
	bool exact = leaf || (raw & PROFD_IP_EXACT);
	uint64_t ip = raw & ~PROFD_IP_EXACT;
	uint64_t lookup = exact ? ip : ip - 1;
	const struct proc_mapping *m;
	struct sym_result r;
	struct sym_object *obj;
	size_t idx;

	fprintf(f, "  #%-3u user   0x%016llx", i, (unsigned long long)ip);
	m = snap ? proc_maps_find(&snap->maps, lookup) : NULL;
	if (!m) {
		fprintf(f, " %s\n", snap ? "[no mapping]" : "[maps not read]");
		return;
	}
	fprintf(f, " %s+0x%llx", m->path[0] ? m->path : "[anon]",
		(unsigned long long)(ip - m->start + m->offset));
	idx = m - snap->maps.v;
	obj = snap->objs ? proc_snapshot_object(snap, idx, NULL) : NULL;
	if (obj) {
		pthread_mutex_lock(&ag->sym_lock);
		if (!sym_object_resolve(obj, lookup - m->start + m->offset, &r))
			fprintf(f, " %s", r.name);
		pthread_mutex_unlock(&ag->sym_lock);
	}
	fputc('\n', f);
}

void agent_debug_sample(struct agent *ag, const struct profd_sample *s,
			const uint64_t *ips, uint32_t nuser,
			struct proc_snapshot *snap, bool cut)
{
	char comm[PROFD_TASK_COMM_LEN + 1], flags[256], unwinder[64];
	uint32_t nk = s->kernel_len;

	memcpy(comm, s->comm, PROFD_TASK_COMM_LEN);
	comm[PROFD_TASK_COMM_LEN] = '\0';
	flags_str(s, cut, flags, sizeof(flags));
	unwinder_str(s, unwinder, sizeof(unwinder));
	flockfile(stderr);
	fprintf(stderr, "profd: debug: sample pid=%u tid=%u comm=%s cpu=%u "
		"origin=%s unwinder=%s flags=%s kernel=%u user=%u "
		"(native %u, %s %u) ktime=%llu\n", s->pid, s->tid, comm, s->cpu,
		s->origin == PROFD_ORIGIN_PROBE ? "probe" : "cpu-clock",
		unwinder, flags, nk, nuser, s->user_len, runtime_name(s),
		s->interp_len, (unsigned long long)s->ktime_ns);
	for (uint32_t i = 0; i < nk; i++)
		kernel_frame(ag, stderr, i, ips[i]);
	for (uint32_t i = 0; i < nuser; i++) {
		uint64_t ip = ips[nk + i];

		if (runtime_ip_ops(ip))
			runtime_frame_line(ag, stderr, nk + i, ip);
		else
			user_frame(ag, stderr, nk + i, ip, i == 0, snap);
	}
	funlockfile(stderr);
}
