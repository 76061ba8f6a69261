// SPDX-License-Identifier: GPL-2.0
/*
 * tracer.c - loading and running profd's BPF programs (see tracer.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "profd.skel.h"
#include "counters/counters.h"
#include "proc/maps.h"
#include "tracer/bpf_log.h"
#include "tracer/preflight.h"
#include "tracer/tracer_internal.h"

int parse_cpu_list(const char *s, bool *online, int n)
{
	char *end;

	memset(online, 0, n * sizeof(*online));
	while (*s && *s != '\n') {
		long a = strtol(s, &end, 10), b;

		if (end == s || a < 0)
			return -EINVAL;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a)
				return -EINVAL;
			s = end;
		}
		for (long c = a; c <= b && c < n; c++)
			online[c] = true;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -EINVAL;
	}
	return 0;
}

static int read_online_cpus(bool *online, int n)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int ret = -EIO;

	if (!f)
		return -errno;
	if (fgets(buf, sizeof(buf), f))
		ret = parse_cpu_list(buf, online, n);
	fclose(f);
	return ret;
}

static int perf_event_open_cpu_clock(int cpu, unsigned int hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		/* cpu-clock counts nanoseconds: a fixed period, not freq mode */
		.sample_period = 1000000000ULL / hz,
		.disabled = 1,
	};

	return syscall(SYS_perf_event_open, &attr, -1, cpu, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct tracer *t = ctx;

	if (size < sizeof(__u32))
		return 0;
	return t->fn(t->ctx, data, size);
}

/*
 * Task storage may be made in sched_switch from Linux 6.4 on (allocated
 * with bpf_mem_alloc, then kmalloc_nolock; before, kmalloc(GFP_ATOMIC)
 * under the runqueue lock): bpf/offcpu.bpf.h, offcpu_tid_hash. Off
 * unless PROFD_OFFCPU_TASK_STORAGE=1 for now: with it test_offcpu.py's
 * chains saw ends whose stacks never matched (off_cpu_no_end =
 * off_cpu_no_stack, 2 of 11 runs; none in 6 runs on the hash), not yet
 * explained (docs/PERFORMANCE.md, "Off-CPU: the floor").
 */
static bool task_storage_in_sched_switch(void)
{
	const char *env = getenv("PROFD_OFFCPU_TASK_STORAGE");
	struct utsname u;
	int major, minor;

	if (!env || strcmp(env, "1"))
		return false;
	if (uname(&u) || preflight_parse_release(u.release, &major, &minor))
		return false;
	return major > 6 || (major == 6 && minor >= 4);
}

/* The .rodata configuration and the sizes of the unscaled maps. */
static void configure(struct profd_bpf *skel, const struct tracer_opts *o)
{
	bool task_storage = task_storage_in_sched_switch();

	skel->rodata->cfg_filter_pids = o->npids > 0;
	skel->rodata->cfg_include_idle = o->include_idle;
	skel->rodata->cfg_max_user_frames = o->max_stack_depth;
	skel->rodata->cfg_dwarf_unwinding = o->dwarf_unwinding;
	skel->rodata->cfg_follow_children = o->follow_children;
	skel->rodata->cfg_stack_copy_bytes = o->dwarf_unwinding ? o->stack_copy_bytes : 0;
	skel->rodata->cfg_stack_copy_always = o->stack_copy_always;
	skel->rodata->cfg_off_cpu_threshold = o->off_cpu ?
		(__u64)(o->off_cpu_threshold * 4294967296.0) : 0;
	skel->rodata->cfg_offcpu_task_storage = task_storage;
	if (task_storage || !o->off_cpu)
		bpf_map__set_max_entries(skel->maps.offcpu_tid_hash, 1);
	if (o->npids)
		bpf_map__set_max_entries(skel->maps.pid_filter,
					 o->follow_children ? PID_FILTER_TREE_MAX : o->npids);
}

/*
 * Without --off-cpu the sched_switch programs (the entry and its unwinder
 * chain, all of section tp_btf/sched_switch) are neither loaded nor
 * verified: start-up cost nobody asked for. Their program array then
 * keeps empty slots (libbpf skips a slot whose program is not loaded).
 */
static void set_autoload(struct bpf_object *obj, const struct tracer_opts *o)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
		if (!strcmp(bpf_program__section_name(prog), "tp_btf/sched_switch"))
			bpf_program__set_autoload(prog, o->off_cpu);
}

/*
 * Fill the program array of the unwinder chain of @kind (made with
 * PROFD_DEFINE_UNWINDERS_UNLINKED(), bpf/stack.bpf.h) with its loaded
 * programs. Returns 0 or a negative errno.
 */
static int link_chain(struct bpf_object *obj, struct bpf_map *progs, const char *kind)
{
#define RUNTIME_SLOT_(ID, name, a, b, c) \
	{ PROFD_PROG_RUNTIME + PROFD_RUNTIME_##ID - 1, "unwind_" #name },
	static const struct { __u32 slot; const char *prefix; } chain[] = {
		{ PROFD_PROG_UNWIND_FP, "unwind_fp" },
		{ PROFD_PROG_UNWIND_DWARF, "unwind_dwarf" },
		{ PROFD_PROG_EMIT, "emit" },
		PROFD_RUNTIMES(RUNTIME_SLOT_, 0, 0, 0)
	};
#undef RUNTIME_SLOT_
	int map_fd = bpf_map__fd(progs);

	for (size_t i = 0; i < sizeof(chain) / sizeof(chain[0]); i++) {
		char name[64];
		struct bpf_program *prog;
		int fd;

		snprintf(name, sizeof(name), "%s_%s", chain[i].prefix, kind);
		prog = bpf_object__find_program_by_name(obj, name);
		fd = prog ? bpf_program__fd(prog) : -ENOENT;
		if (fd < 0)
			return fd;
		if (bpf_map_update_elem(map_fd, &chain[i].slot, &fd, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* tracer_load_logged() callbacks: the skeleton, and a copy of it. */
struct skel_loader {
	struct profd_bpf *skel;
	const struct tracer_opts *o;
};

static int load_skel(void *ctx)
{
	struct skel_loader *l = ctx;

	return profd_bpf__load(l->skel);
}

static int load_one_copy(void *ctx, const char *prog, unsigned int level)
{
	struct skel_loader *l = ctx;
	struct tracer_map_size sized[TRACER_SIZED_MAPS];
	struct profd_bpf *copy = profd_bpf__open();
	int err;

	if (!copy)
		return -errno;
	configure(copy, l->o);
	set_autoload(copy->obj, l->o);
	tracer_gpu_configure(copy);
	tracer_maps_unscaled(sized, tracer_maps_plan(copy, l->o, sized));
	err = tracer_load_only(copy->obj, prog, level);
	profd_bpf__destroy(copy);
	return err;
}

/* Size, create and load; prints the error line. */
static int load(struct tracer *t, const struct tracer_opts *o)
{
	struct tracer_map_size sized[TRACER_SIZED_MAPS];
	struct skel_loader sl = { .skel = t->skel, .o = o };
	struct tracer_loader l = {
		.load = load_skel, .load_one = load_one_copy, .ctx = &sl,
	};
	int err;

	configure(t->skel, o);
	set_autoload(t->skel->obj, o);
	t->gpu_multi = tracer_gpu_configure(t->skel);
	err = tracer_maps_create(sized, tracer_maps_plan(t->skel, o, sized),
				 o->memcg_reserve_bytes);
	if (err)
		return err;
	err = tracer_load_logged(&l, o->verifier_log_level);
	if (err)
		fprintf(stderr, "profd: error: loading the BPF programs failed: %s (%s)\n",
			strerror(-err), o->verifier_log_level ?
			"libbpf's messages and the verifier log are above" :
			"--bpf-verifier-log-level 1 or 2 prints the verifier log");
	return err;
}

static int setup_pid_filter(struct tracer *t, const struct tracer_opts *o)
{
	int fd = bpf_map__fd(t->skel->maps.pid_filter);
	__u8 one = 1;

	for (size_t i = 0; i < o->npids; i++) {
		__u32 pid = o->pids[i];

		if (bpf_map_update_elem(fd, &pid, &one, BPF_ANY))
			return -errno;
	}
	return 0;
}

/*
 * The dynamic loader's shared-library hook, in every process using the
 * same ld.so as profd (its PT_INTERP). Without it the agent's slower
 * maps scan finds the CUDA injection library.
 */
static void attach_dl_event(struct tracer *t, const struct tracer_opts *o)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "_dl_debug_state");
	char ldso[4096] = "";
	struct proc_maps maps;

	if (!proc_maps_read(getpid(), &maps)) {
		for (size_t i = 0; i < maps.n && !ldso[0]; i++)
			if (strstr(maps.v[i].path, "/ld-linux"))
				snprintf(ldso, sizeof(ldso), "%s", maps.v[i].path);
		proc_maps_free(&maps);
	}
	if (ldso[0])
		t->skel->links.profd_dl_event = bpf_program__attach_uprobe_opts(
			t->skel->progs.profd_dl_event, -1, ldso, 0, &uo);
	if (!t->skel->links.profd_dl_event && o->verbose)
		fprintf(stderr, "profd: warning: cannot watch %s for library loads (%s): "
			"the CUDA injection library is found by a slower scan\n",
			ldso[0] ? ldso : "ld.so", strerror(errno));
}

static int attach_samplers(struct tracer *t, const struct tracer_opts *o)
{
	bool *online = calloc(t->ncpus_possible, sizeof(*online));
	int ret = 0, last_err = 0;

	if (!online)
		return -ENOMEM;
	ret = read_online_cpus(online, t->ncpus_possible);
	if (ret) {
		fprintf(stderr, "profd: error: cannot read /sys/devices/system/cpu/online: %s\n",
			strerror(-ret));
		goto out;
	}
	for (int cpu = 0; cpu < t->ncpus_possible; cpu++) {
		int fd;

		if (!online[cpu])
			continue;
		fd = perf_event_open_cpu_clock(cpu, o->frequency_hz);
		if (fd < 0) {
			last_err = -errno;
			fprintf(stderr, "profd: warning: no cpu-clock event on CPU %d: %s\n",
				cpu, strerror(errno));
			continue;
		}
		t->perf_fds[cpu] = fd;
		t->perf_links[cpu] = bpf_program__attach_perf_event(
			t->skel->progs.profd_sample, fd);
		if (!t->perf_links[cpu]) {
			last_err = -errno;
			fprintf(stderr, "profd: warning: cannot attach the sampler on CPU %d: %s\n",
				cpu, strerror(errno));
			close(fd);
			t->perf_fds[cpu] = -1;
			continue;
		}
		t->nsampled++;
	}
	if (!t->nsampled) {
		fprintf(stderr, "profd: error: no CPU could be sampled (%s): "
			"check kernel.perf_event_paranoid and CAP_PERFMON\n",
			strerror(-last_err));
		ret = last_err ? last_err : -ENODEV;
	}
out:
	free(online);
	return ret;
}

struct tracer *tracer_open(const struct tracer_opts *o, tracer_event_fn fn,
			   void *ctx)
{
	struct tracer *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return NULL;
	t->fn = fn;
	t->ctx = ctx;
	pthread_mutex_init(&t->spec_lock, NULL);
	tracer_libbpf_setup(o->verbose);

	t->ncpus_possible = libbpf_num_possible_cpus();
	if (t->ncpus_possible <= 0)
		goto fail;
	t->perf_fds = malloc(t->ncpus_possible * sizeof(*t->perf_fds));
	t->perf_links = calloc(t->ncpus_possible, sizeof(*t->perf_links));
	if (!t->perf_fds || !t->perf_links)
		goto fail;
	for (int i = 0; i < t->ncpus_possible; i++)
		t->perf_fds[i] = -1;

	t->skel = profd_bpf__open();
	if (!t->skel) {
		fprintf(stderr, "profd: error: cannot open the BPF object: %s\n",
			strerror(errno));
		goto fail;
	}
	if (load(t, o))
		goto fail;
	tracer_ringbufs_map(t);
	attach_dl_event(t, o);
	err = setup_pid_filter(t, o);
	if (err) {
		fprintf(stderr, "profd: error: cannot fill the PID filter: %s\n",
			strerror(-err));
		goto fail;
	}
	t->skel->links.profd_proc_exec =
		bpf_program__attach(t->skel->progs.profd_proc_exec);
	t->skel->links.profd_proc_exit =
		bpf_program__attach(t->skel->progs.profd_proc_exit);
	t->skel->links.profd_proc_fork =
		bpf_program__attach(t->skel->progs.profd_proc_fork);
	if (!t->skel->links.profd_proc_exec || !t->skel->links.profd_proc_exit ||
	    !t->skel->links.profd_proc_fork) {
		fprintf(stderr, "profd: error: cannot attach the sched tracepoints: %s\n",
			strerror(errno));
		goto fail;
	}
	/* the exec's start for the image clock: optional (tracer_exec_ns()) */
	t->skel->links.profd_exec_rename =
		bpf_program__attach(t->skel->progs.profd_exec_rename);
	if (!t->skel->links.profd_exec_rename && o->verbose)
		fprintf(stderr, "profd: note: no task_rename tracepoint (%s): a maps "
			"read during an exec is dated by its end\n", strerror(errno));
	if (o->off_cpu) {
		err = link_chain(t->skel->obj, t->skel->maps.unwind_progs_sched, "sched");
		if (err) {
			fprintf(stderr, "profd: error: cannot link the sched_switch "
				"unwinders: %s\n", strerror(-err));
			goto fail;
		}
		t->skel->links.profd_sched_switch =
			bpf_program__attach(t->skel->progs.profd_sched_switch);
		if (!t->skel->links.profd_sched_switch) {
			fprintf(stderr, "profd: error: cannot attach the sched_switch "
				"tracepoint (--off-cpu): %s\n", strerror(errno));
			goto fail;
		}
	}
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), on_record,
				 t, NULL);
	if (!t->rb) {
		fprintf(stderr, "profd: error: cannot open the events ringbuf: %s\n",
			strerror(errno));
		goto fail;
	}
	err = ring_buffer__add(t->rb, bpf_map__fd(t->skel->maps.cupti_events),
			       on_record, t);
	if (err) {
		fprintf(stderr, "profd: error: cannot open the cupti_events ringbuf: %s\n",
			strerror(-err));
		goto fail;
	}
	if (attach_samplers(t, o))
		goto fail;
	/* libbpf enables each event as it attaches the program */
	if (tracer_set_sampling(t, !o->start_disabled)) {
		fprintf(stderr, "profd: error: cannot %s the perf events: %s\n",
			o->start_disabled ? "disable" : "enable", strerror(errno));
		goto fail;
	}
	return t;
fail:
	tracer_close(t);
	return NULL;
}

int tracer_poll(struct tracer *t, int timeout_ms)
{
	int n = ring_buffer__poll(t->rb, timeout_ms), m;

	if (n == -EINTR)
		n = 0;
	if (n == -ECANCELED)
		return INT_MAX;	/* the callback ended the batch: more waits */
	if (n < 0)
		return n;
	/* records written with BPF_RB_NO_WAKEUP did not wake the poll */
	m = ring_buffer__consume(t->rb);
	if (m == -ECANCELED)
		return INT_MAX;
	return m < 0 ? m : n + m;
}

int tracer_drain(struct tracer *t)
{
	int n = ring_buffer__consume(t->rb);

	return n == -ECANCELED ? INT_MAX : n;
}

int tracer_set_sampling(struct tracer *t, bool on)
{
	int ret = 0;

	for (int cpu = 0; cpu < t->ncpus_possible; cpu++) {
		if (t->perf_fds[cpu] < 0)
			continue;
		if (ioctl(t->perf_fds[cpu],
			  on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) &&
		    !ret)
			ret = -errno;
	}
	return ret;
}

/*
 * The sampler's and the capture chain's BPF counters (bpf/profd.bpf.c,
 * bpf/stack.bpf.h); the unwinders', the runtimes', the GPU's and NVTX's are
 * declared in their components.
 */
COUNTER_DEFINE_BPF(bpf_samples, COUNTER_STAT, PROFD_CNT_SAMPLES,
		   "perf_event program runs");
COUNTER_DEFINE_BPF(idle_skipped, COUNTER_STAT, PROFD_CNT_IDLE_SKIPPED,
		   "samples of the idle task (pid 0) dropped unless --include-idle");
COUNTER_DEFINE_BPF(pid_filtered, COUNTER_STAT, PROFD_CNT_FILTERED,
		   "samples of processes outside --pid / the exec'd command");
COUNTER_DEFINE_BPF(ringbuf_full, COUNTER_LOST, PROFD_CNT_RINGBUF_FULL,
		   "sample records dropped: the events ringbuf was full");
COUNTER_DEFINE_BPF(kernel_stack_error, COUNTER_PARTIAL, PROFD_CNT_KERNEL_STACK_ERR,
		   "samples whose kernel stack bpf_get_stack could not read");
COUNTER_DEFINE_BPF(user_stack_read_error, COUNTER_PARTIAL, PROFD_CNT_USER_READ_ERR,
		   "samples whose user stack read faulted: stack cut short");
COUNTER_DEFINE_BPF(user_stack_truncated, COUNTER_PARTIAL, PROFD_CNT_USER_TRUNCATED,
		   "samples whose user stack was longer than the frame limit");
COUNTER_DEFINE_BPF(tail_call_failed, COUNTER_LOST, PROFD_CNT_TAIL_CALL_FAILED,
		   "samples lost: the unwinder chain's tail call failed");
COUNTER_DEFINE_BPF(no_scratch, COUNTER_LOST, PROFD_CNT_NO_SCRATCH,
		   "samples lost: the per-CPU scratch lookup failed");
COUNTER_DEFINE_BPF(proc_event_lost, COUNTER_LOST, PROFD_CNT_PROC_EVENT_LOST,
		   "process exec/exit/fork events dropped: the events ringbuf was full");
COUNTER_DEFINE_BPF(signal_frames, COUNTER_STAT, PROFD_CNT_SIGNAL_FRAMES,
		   "signal (sigreturn) frames unwound");
COUNTER_DEFINE_BPF(followed_children, COUNTER_STAT, PROFD_CNT_FOLLOWED_CHILDREN,
		   "children of followed processes added to the PID filter");
COUNTER_DEFINE_BPF(scratch_busy, COUNTER_LOST, PROFD_CNT_SCRATCH_BUSY,
		   "captures dropped: a preempted capture held the CPU's scratch");
COUNTER_DEFINE_BPF(scratch_lost, COUNTER_LOST, PROFD_CNT_SCRATCH_LOST,
		   "captures dropped: their scratch was taken over by another capture");

int tracer_read_counters(struct tracer *t, uint64_t out[PROFD_CNT_MAX])
{
	int fd = bpf_map__fd(t->skel->maps.counters);
	__u64 *vals = calloc(t->ncpus_possible, sizeof(*vals));

	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < PROFD_CNT_MAX; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int c = 0; c < t->ncpus_possible; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

int tracer_pid_forget(struct tracer *t, uint32_t pid)
{
	int fd = bpf_map__fd(t->skel->maps.pid_filter);
	__u8 v = 0;

	if (bpf_map_lookup_elem(fd, &pid, &v) || v != PROFD_PID_EXITED)
		return 0;	/* gone, or a new process of that PID */
	return bpf_map_delete_elem(fd, &pid) ? -errno : 0;
}

uint64_t tracer_exec_ns(const struct tracer *t, pid_t pid)
{
	__u32 key = pid;
	__u64 ns = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.exec_times), &key, &ns))
		return 0;
	return ns;
}

void tracer_unwind_maps(const struct tracer *t, int *shards_fd, int *procs_fd,
			int *exec_fd)
{
	*exec_fd = bpf_map__fd(t->skel->maps.exec_times);
	*shards_fd = bpf_map__fd(t->skel->maps.unwind_shards);
	*procs_fd = bpf_map__fd(t->skel->maps.unwind_procs);
}

int tracer_runtime_procs_fd(const struct tracer *t)
{
	return bpf_map__fd(t->skel->maps.runtime_procs);
}

unsigned int tracer_ncpus(const struct tracer *t)
{
	return t->nsampled;
}

static void *detach_probes(void *arg)
{
	struct tracer *t = arg;

	tracer_gpu_detach_all(t);
	bpf_link__destroy(t->skel->links.profd_dl_event);
	t->skel->links.profd_dl_event = NULL;
	return NULL;
}

void tracer_detach_probes_start(struct tracer *t)
{
	if (!t || t->detaching)
		return;
	t->detaching = !pthread_create(&t->detacher, NULL, detach_probes, t);
}

void tracer_close(struct tracer *t)
{
	if (!t)
		return;
	if (t->detaching)
		pthread_join(t->detacher, NULL);
	if (t->perf_links) {
		for (int cpu = 0; cpu < t->ncpus_possible; cpu++)
			bpf_link__destroy(t->perf_links[cpu]);
	}
	if (t->perf_fds) {
		for (int cpu = 0; cpu < t->ncpus_possible; cpu++)
			if (t->perf_fds[cpu] >= 0)
				close(t->perf_fds[cpu]);
	}
	tracer_gpu_detach_all(t);
	ring_buffer__free(t->rb);
	tracer_ringbufs_unmap(t);
	profd_bpf__destroy(t->skel);
	free(t->perf_links);
	free(t->perf_fds);
	pthread_mutex_destroy(&t->spec_lock);
	free(t);
}
