// SPDX-License-Identifier: GPL-2.0
/*
 * parts.c - loader of parts.bpf.c: attaches each program to its own
 * cpu-clock perf event on every online CPU, turns on BPF run-time stats
 * for its own lifetime (BPF_ENABLE_STATS, no sysctl change), drains the
 * ringbufs, and prints per program: run count, mean ns per run and the
 * median of 0.5 s window averages.
 * Usage: parts OBJ HZ SECONDS [PROGRAM]   (PROGRAM: attach only that one)
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define MAXP 16
#define MAXW 1024

static int on_rec(void *ctx, void *data, size_t size) { return 0; }

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int stats(int fd, __u64 *ns, __u64 *cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	*ns = info.run_time_ns;
	*cnt = info.run_cnt;
	return 0;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct ring_buffer *rb;
	struct bpf_program *progs[MAXP];
	static double win[MAXP][MAXW];
	__u64 ns0[MAXP], cnt0[MAXP], nsp[MAXP], cntp[MAXP], ns, cnt;
	int nwin[MAXP] = {0}, np = 0, ncpu, hz, secs, stats_fd, tail_fd = -1;
	struct timespec t0, t;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: parts OBJ HZ SECONDS [PROGRAM]\n");
		return 64;
	}
	hz = atoi(argv[2]);
	secs = atoi(argv[3]);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		fprintf(stderr, "parts: BPF_ENABLE_STATS: %s\n", strerror(errno));
		return 1;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "parts: cannot load %s\n", argv[1]);
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!strcmp(bpf_program__name(prog), "p_tail_target")) {
			tail_fd = bpf_program__fd(prog);
			continue;
		}
		if (np == MAXP)
			break;
		if (argc == 5 && strcmp(bpf_program__name(prog), argv[4]))
			continue;
		progs[np++] = prog;
		for (int cpu = 0; cpu < ncpu; cpu++) {
			struct perf_event_attr a = {
				.type = PERF_TYPE_SOFTWARE,
				.size = sizeof(a),
				.config = PERF_COUNT_SW_CPU_CLOCK,
				.sample_period = 1000000000ULL / hz,
			};
			int fd = syscall(SYS_perf_event_open, &a, -1, cpu, -1,
					 PERF_FLAG_FD_CLOEXEC);

			if (fd < 0 || !bpf_program__attach_perf_event(prog, fd)) {
				fprintf(stderr, "parts: attach %s cpu %d: %s\n",
					bpf_program__name(prog), cpu, strerror(errno));
				return 1;
			}
		}
	}
	rb = ring_buffer__new(bpf_map__fd(bpf_object__find_map_by_name(obj, "rb_wake")),
			      on_rec, NULL, NULL);
	if (!rb || ring_buffer__add(rb, bpf_map__fd(bpf_object__find_map_by_name(obj, "rb_nowake")),
				    on_rec, NULL)) {
		fprintf(stderr, "parts: ringbuf setup failed\n");
		return 1;
	}
	for (int i = 0; i < np; i++) {
		stats(bpf_program__fd(progs[i]), &ns0[i], &cnt0[i]);
		nsp[i] = ns0[i];
		cntp[i] = cnt0[i];
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	double next = 0.5;
	for (;;) {
		double el;

		ring_buffer__poll(rb, 50);
		ring_buffer__consume(rb);
		clock_gettime(CLOCK_MONOTONIC, &t);
		el = (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
		if (el < next)
			continue;
		next += 0.5;
		for (int i = 0; i < np; i++) {
			stats(bpf_program__fd(progs[i]), &ns, &cnt);
			if (cnt > cntp[i] && nwin[i] < MAXW)
				win[i][nwin[i]++] = (double)(ns - nsp[i]) / (cnt - cntp[i]);
			nsp[i] = ns;
			cntp[i] = cnt;
		}
		if (el >= secs)
			break;
	}
	printf("%-16s %9s %10s %12s\n", "program", "runs", "mean_ns", "median_ns");
	for (int i = 0; i < np; i++) {
		stats(bpf_program__fd(progs[i]), &ns, &cnt);
		qsort(win[i], nwin[i], sizeof(double), cmp);
		printf("%-16s %9llu %10.0f %12.0f\n", bpf_program__name(progs[i]),
		       (unsigned long long)(cnt - cnt0[i]),
		       cnt > cnt0[i] ? (double)(ns - ns0[i]) / (cnt - cnt0[i]) : 0.0,
		       nwin[i] ? win[i][nwin[i] / 2] : 0.0);
	}
	if (tail_fd >= 0 && !stats(tail_fd, &ns, &cnt))
		printf("p_tail_target run_cnt=%llu (tail calls are not counted)\n",
		       (unsigned long long)cnt);
	close(stats_fd);
	return 0;
}
