/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_dwarf.bpf.h - the DWARF CFI unwinder over compact unwind tables.
 *
 * Owns: the maps that hold unwind rows (`unwind_shards`, an array of
 * mmap-able arrays filled by src/unwind/) and each process's executable
 * ranges (`unwind_procs`), and one frame step: find the range of the pc,
 * binary-search its row, compute the CFA, read the return address,
 * restore rbp. Frames without a usable row fall back to the frame pointer
 * (mixed mode: JIT code, objects without tables); the kernel's sigreturn
 * trampoline continues from the saved ucontext.
 *
 * The step is a global (noinline) function so the verifier checks it once,
 * not once per unrolled frame.
 */
#ifndef PROFD_BPF_UNWIND_DWARF_BPF_H
#define PROFD_BPF_UNWIND_DWARF_BPF_H

#include "maps.bpf.h"
#include "runtime.bpf.h"
#include "unwind_table.h"

/* Frames one DWARF program invocation walks before tail-calling itself. */
#define PROFD_DWARF_FRAMES_PER_PROG	16
/*
 * The kernel allows 33 tail calls per chain: entry -> DWARF, 31 DWARF ->
 * DWARF, DWARF -> emit. 32 invocations of 16 frames cover 512 frames.
 */
#define PROFD_DWARF_MAX_TAIL_CALLS \
	(PROFD_MAX_USER_FRAMES / PROFD_DWARF_FRAMES_PER_PROG - 1)

/*
 * A shard is one array element of UNWIND_SHARD_ROWS rows (1 MiB): one
 * lookup gives the whole shard, and the binary search indexes it directly
 * (masked, so the verifier sees every access in bounds) instead of making
 * a helper call per step.
 */
struct unwind_shard {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, UNWIND_SHARD_ROWS * sizeof(struct unwind_row));
};


struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, UNWIND_MAX_SHARDS);
	__type(key, __u32);
	__array(values, struct unwind_shard);
} unwind_shards SEC(".maps");

/* The rows of shard @shard, or NULL. */
static __always_inline const struct unwind_row *shard_rows(__u32 shard)
{
	__u32 zero = 0;
	void *inner = bpf_map_lookup_elem(&unwind_shards, &shard);

	return inner ? bpf_map_lookup_elem(inner, &zero) : NULL;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);		/* resized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_procs SEC(".maps");

/*
 * tgid -> bpf_ktime_get_ns() of its last exec (profd_proc_exec). Exec
 * events reach user space late (they do not wake the reader), so until
 * the new image's maps are read, the old image's unwind_procs entry
 * stays: an entry read before the exec is not used (unwind_proc_current).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);	/* scaled by the loader */
	__type(key, __u32);
	__type(value, __u64);
} exec_times SEC(".maps");

/* @pid's unwind_procs entry if it describes its current image, else NULL. */
static __always_inline const struct unwind_proc *unwind_proc_current(__u32 pid)
{
	const struct unwind_proc *proc = bpf_map_lookup_elem(&unwind_procs, &pid);
	const __u64 *exec_ns;

	if (!proc)
		return NULL;
	exec_ns = bpf_map_lookup_elem(&exec_times, &pid);
	if (exec_ns && *exec_ns >= proc->maps_read_ns)
		return NULL;
	return proc;
}

enum dwarf_step {
	DWARF_STEP_NEXT = 0,	/* st->ip/sp/bp hold the caller's frame */
	DWARF_STEP_DONE = 1,	/* outermost frame reached */
	DWARF_STEP_ERROR = 2,	/* read fault or inconsistent frame: stop */
	DWARF_STEP_BOGUS = 3,	/* this frame's pc is in no known range: it
				 * came from a frame-pointer guess, drop it */
};

/* Go's stack switches: go_switch_step() (uses enum dwarf_step) */
#include "unwind_go.bpf.h"

/* x86-64 struct ucontext: uc_mcontext.gregs[] starts at byte 40. */
#define UC_GREGS_OFF	40
#define UC_REG_RBP	10
#define UC_REG_RSP	15
#define UC_REG_RIP	16

/*
 * The two binary searches are global functions: the verifier checks each
 * once, and their results are plain scalars to the caller, so the paths
 * through the search do not multiply the caller's states.
 */

/* proc_find_mapping - index of @proc's range containing @pc, or -1. */
__attribute__((noinline))
int proc_find_mapping(const struct unwind_proc *proc, __u64 pc)
{
	__u32 lo = 0, hi, mid;
	const struct unwind_mapping *m;

	if (!proc)
		return -1;
	hi = proc->nmappings;
	if (hi > UNWIND_MAX_PROC_MAPPINGS)
		hi = UNWIND_MAX_PROC_MAPPINGS;
	for (int i = 0; i <= UNWIND_PROC_MAPPING_BITS; i++) {
		if (lo >= hi)
			break;
		mid = (lo + hi) / 2;
		if (proc->mappings[mid & (UNWIND_MAX_PROC_MAPPINGS - 1)].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	m = &proc->mappings[(lo - 1) & (UNWIND_MAX_PROC_MAPPINGS - 1)];
	return pc < m->end ? (int)((lo - 1) & (UNWIND_MAX_PROC_MAPPINGS - 1)) : -1;
}

/*
 * shard_find_row - offset (in [0, nrows)) of the last row with pc <= @rel
 * among rows [first, first + nrows) of @shard, or -1.
 */
__attribute__((noinline))
int shard_find_row(__u32 shard, __u32 first, __u32 nrows, __u32 rel)
{
	const struct unwind_row *rows = shard_rows(shard);
	__u32 lo = 0, hi = nrows, mid;

	if (!rows || nrows > UNWIND_SHARD_ROWS)
		return -1;
	for (int i = 0; i <= UNWIND_SHARD_ROW_BITS; i++) {
		if (lo >= hi)
			break;
		mid = (lo + hi) / 2;
		if (rows[(first + mid) & (UNWIND_SHARD_ROWS - 1)].pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (int)(lo - 1) : -1;
}

/* One frame-pointer step: ip = [bp + 8], sp = bp + 16, bp = [bp]. */
static __always_inline int fp_step(struct profd_unwind_state *st)
{
	__u64 frame[2];

	if (!st->bp)
		return DWARF_STEP_DONE;
	if (bpf_probe_read_user(frame, sizeof(frame), (void *)st->bp)) {
		count(PROFD_CNT_USER_READ_ERR);
		return DWARF_STEP_ERROR;
	}
	if (!frame[1])
		return DWARF_STEP_DONE;
	if (frame[0] && frame[0] <= st->bp)
		return DWARF_STEP_DONE;	/* frame chain does not go up: bottom */
	st->ip = frame[1];
	st->sp = st->bp + 16;
	st->bp = frame[0];
	st->pc_exact = 0;
	return DWARF_STEP_NEXT;
}

/* Continue from the ucontext the kernel saved for a signal handler. */
static __always_inline int signal_step(struct profd_unwind_state *st)
{
	__u64 regs[UC_REG_RIP + 1 - UC_REG_RBP];

	if (bpf_probe_read_user(regs, sizeof(regs),
				(void *)(st->sp + UC_GREGS_OFF + UC_REG_RBP * 8))) {
		count(PROFD_CNT_USER_READ_ERR);
		return DWARF_STEP_ERROR;
	}
	count(PROFD_CNT_SIGNAL_FRAMES);
	st->bp = regs[0];
	st->sp = regs[UC_REG_RSP - UC_REG_RBP];
	st->ip = regs[UC_REG_RIP - UC_REG_RBP];
	st->pc_exact = 1;	/* interrupted, not called: the pc is exact */
	return st->ip ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
}

/*
 * dwarf_step - move st->ip/sp/bp from the current frame to its caller's,
 * using @proc's tables. Sets PROFD_SAMPLE_UNWIND_MISSING in the sample for
 * a pc outside every known range, so user space refreshes the process.
 */
__attribute__((noinline))
int dwarf_step(struct profd_unwind_state *st, const struct unwind_proc *proc)
{
	const struct unwind_mapping *m;
	const struct unwind_row *row;
	struct unwind_row r;
	__u64 pc, cfa, ra, slot[1];
	const struct unwind_row *rows;
	__u32 shard;
	int idx, off;
	__u8 cfa_type, rbp_type;

	if (!st || !proc)
		return DWARF_STEP_ERROR;
	pc = st->pc_exact ? st->ip : st->ip - 1;
	idx = proc_find_mapping(proc, pc);
	if (idx < 0) {
		count(PROFD_CNT_DWARF_PC_UNKNOWN);
		st->sample.flags |= PROFD_SAMPLE_UNWIND_MISSING;
		/*
		 * Where the CPU was is real (code mapped after the maps were
		 * read: user space re-reads them); a return address outside
		 * every executable range is garbage from a frame-pointer
		 * step through code that has neither frame pointers nor CFI.
		 */
		return st->pc_exact ? fp_step(st) : DWARF_STEP_BOGUS;
	}
	m = &proc->mappings[idx & (UNWIND_MAX_PROC_MAPPINGS - 1)];
	shard = m->shard;
	if (shard == UNWIND_NO_TABLE)
		return fp_step(st);
	if (shard == UNWIND_EVICTED) {
		count(PROFD_CNT_DWARF_TABLE_EVICTED);
		st->sample.flags |= PROFD_SAMPLE_UNWIND_MISSING;
		return fp_step(st);
	}
	row = NULL;
	if (pc >= m->pc_base && pc - m->pc_base <= 0xffffffffULL) {
		off = shard_find_row(shard, m->first_row, m->nrows,
				     (__u32)(pc - m->pc_base));
		rows = shard_rows(shard);
		if (off >= 0 && rows)
			row = &rows[(m->first_row + off) & (UNWIND_SHARD_ROWS - 1)];
	}
	if (!row) {
		count(PROFD_CNT_DWARF_NO_ROW);
		return fp_step(st);
	}
	r = *row;
	cfa_type = UNWIND_ROW_CFA_TYPE(&r);
	rbp_type = UNWIND_ROW_RBP_TYPE(&r);
	switch (cfa_type) {
	case UNWIND_CFA_RSP:
		cfa = st->sp + (__u64)r.cfa_off8 * 8;
		break;
	case UNWIND_CFA_RBP:
		cfa = st->bp + (__u64)r.cfa_off8 * 8;
		break;
	case UNWIND_CFA_PLT1:
		cfa = st->sp + 8 + ((st->ip & 15) >= 11 ? 8 : 0);
		break;
	case UNWIND_CFA_PLT2:
		cfa = st->sp + 8 + ((st->ip & 15) >= 10 ? 8 : 0);
		break;
	case UNWIND_CFA_PLT3:
		cfa = st->sp + 8 + ((st->ip & 15) >= 9 ? 8 : 0);
		break;
	case UNWIND_CFA_SIGNAL:
		return signal_step(st);
	case UNWIND_CFA_GO_SWITCH:
		return go_switch_step(st, &r);
	case UNWIND_CFA_RA_UNDEFINED:
		/* _start, clone3: the whole stack was walked */
		st->sample.flags |= PROFD_SAMPLE_USER_COMPLETE;
		return DWARF_STEP_DONE;
	case UNWIND_CFA_END:
		count(PROFD_CNT_DWARF_NO_ROW);
		return fp_step(st);
	default:
		count(PROFD_CNT_DWARF_UNSUPPORTED);
		return fp_step(st);
	}
	if (cfa <= st->sp && cfa_type != UNWIND_CFA_RBP) {
		count(PROFD_CNT_DWARF_BAD_FRAME);
		return DWARF_STEP_ERROR;
	}
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8))) {
		count(PROFD_CNT_USER_READ_ERR);
		return DWARF_STEP_ERROR;
	}
	if (rbp_type == UNWIND_RBP_CFA_OFFSET) {
		if (bpf_probe_read_user(slot, sizeof(slot),
					(void *)(cfa + (__s64)r.rbp_off8 * 8))) {
			count(PROFD_CNT_USER_READ_ERR);
			return DWARF_STEP_ERROR;
		}
		st->bp = slot[0];
	} else if (rbp_type == UNWIND_RBP_UNSUPPORTED) {
		count(PROFD_CNT_DWARF_UNSUPPORTED);
	}
	if (cfa <= st->sp) {
		count(PROFD_CNT_DWARF_BAD_FRAME);
		return DWARF_STEP_ERROR;
	}
	st->sp = cfa;
	st->ip = ra;
	st->pc_exact = 0;
	return ra ? DWARF_STEP_NEXT : DWARF_STEP_DONE;
}

/*
 * unwind_dwarf_step - walk up to PROFD_DWARF_FRAMES_PER_PROG frames with
 * dwarf_step(), recording each pc, then tail-call itself or emit.
 */
static __always_inline int unwind_dwarf_step(void *ctx, void *progs, __u32 slot)
{
	struct profd_unwind_state *st = unwind_state(slot);
	const struct unwind_proc *proc;
	__u32 n, base, pid;
	bool done = false;
	__u64 ip;
	int ret;

	if (!st)
		return 0;
	pid = st->sample.pid;
	proc = unwind_proc_current(pid);
	if (!proc) {
		/* the process went away from the map meanwhile */
		bpf_tail_call(ctx, progs, PROFD_PROG_UNWIND_FP);
		return chain_broken(st);
	}
	st->sample.flags |= PROFD_SAMPLE_DWARF;
	n = st->sample.user_len;
	base = st->sample.kernel_len;
	for (int i = 0; i < PROFD_DWARF_FRAMES_PER_PROG; i++) {
		if (n >= st->max_user_frames) {
			st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
			count(PROFD_CNT_USER_TRUNCATED);
			done = true;
			break;
		}
		if (base + n >= PROFD_MAX_IPS) {
			done = true;
			break;
		}
		ip = st->ip | (n && st->pc_exact ? PROFD_IP_EXACT : 0);
		put_ip(st, base + n, ip);
		n++;
		ret = dwarf_step(st, proc);
		if (ret == DWARF_STEP_NEXT && st->pc_exact)
			/* a sigreturn step: the frame just recorded is the
			 * trampoline, entered at its first byte, not called */
			put_ip(st, base + n - 1, ip | PROFD_IP_EXACT);
		if (ret != DWARF_STEP_NEXT) {
			if (ret == DWARF_STEP_ERROR || ret == DWARF_STEP_BOGUS)
				st->sample.flags |= PROFD_SAMPLE_USER_ERROR;
			if (ret == DWARF_STEP_BOGUS)
				n--;
			done = true;
			break;
		}
	}
	st->sample.user_len = n;
	if (!done && st->tail_calls < PROFD_DWARF_MAX_TAIL_CALLS &&
	    st->tail_calls < st->native_tail_calls) {
		st->tail_calls++;
		bpf_tail_call(ctx, progs, PROFD_PROG_UNWIND_DWARF);
	}
	if (!done) {
		/* depth limit or tail-call budget reached with frames left */
		st->sample.flags |= PROFD_SAMPLE_USER_TRUNCATED;
		count(PROFD_CNT_USER_TRUNCATED);
	}
	/* then the runtime's frames, or emit (runtime.bpf.h) */
	return runtime_dispatch(ctx, progs, st);
}

#endif /* PROFD_BPF_UNWIND_DWARF_BPF_H */
