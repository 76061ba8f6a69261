// SPDX-License-Identifier: GPL-2.0
/*
 * preflight.c - start-up checks of kernel and privileges (see preflight.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <bpf/libbpf.h>

#include "tracer/preflight.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

/* Every capability profd uses (the setcap hints). */
#define ALL_CAPS "cap_bpf,cap_perfmon,cap_syslog,cap_sys_ptrace,cap_dac_read_search," \
		 "cap_checkpoint_restore,cap_sys_admin"

/* What profd loses without each capability it can run without. */
static const struct {
	int cap, alt;		/* either one will do (alt -1: none) */
	const char *name, *loss;
} optional_caps[] = {
	{ CAP_SYSLOG, -1, "cap_syslog", "kernel frames stay addresses" },
	{ CAP_SYS_PTRACE, -1, "cap_sys_ptrace",
	  "other users' processes lose symbols and language runtime frames" },
	{ CAP_DAC_READ_SEARCH, -1, "cap_dac_read_search",
	  "binaries in directories profd cannot read stay addresses" },
	{ CAP_CHECKPOINT_RESTORE, CAP_SYS_ADMIN, "cap_checkpoint_restore",
	  "deleted or hidden binaries (/proc/PID/map_files) stay addresses" },
	{ CAP_SYS_ADMIN, -1, "cap_sys_admin", "no GPU or NVTX uprobes" },
};

int preflight_parse_release(const char *release, int *major, int *minor)
{
	return sscanf(release, "%d.%d", major, minor) == 2 ? 0 : -1;
}

static bool has_cap(const struct __user_cap_data_struct d[2], int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

/* The path of this binary for the setcap hint ("profd" if unknown). */
static const char *self_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n <= 0)
		return "profd";
	buf[n] = 0;
	return buf;
}

/* One warning line naming the optional capabilities missing and their cost. */
static void warn_optional_caps(const struct __user_cap_data_struct d[2], bool uprobes)
{
	char msg[1024] = "", self[PATH_MAX];
	size_t m = 0;

	for (size_t i = 0; i < sizeof(optional_caps) / sizeof(optional_caps[0]); i++) {
		if (has_cap(d, optional_caps[i].cap) ||
		    (optional_caps[i].alt >= 0 && has_cap(d, optional_caps[i].alt)))
			continue;
		if (optional_caps[i].cap == CAP_SYS_ADMIN && optional_caps[i].alt < 0 &&
		    !uprobes)
			continue;	/* --no-gpu: no GPU or NVTX uprobes */
		m += snprintf(msg + m, m < sizeof(msg) ? sizeof(msg) - m : 0, "%s%s (%s)",
			      m ? ", " : "", optional_caps[i].name, optional_caps[i].loss);
	}
	if (m)
		fprintf(stderr, "profd: warning: without %s; to give them: "
			"setcap " ALL_CAPS "+ep \"%s\"\n", msg, self_path(self, sizeof(self)));
}

static int check_caps(bool uprobes)
{
	char self[PATH_MAX];
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = { 0 };

	if (syscall(SYS_capget, &hdr, data)) {
		fprintf(stderr, "profd: error: capget failed: %s\n", strerror(errno));
		return -1;
	}
	if (has_cap(data, CAP_SYS_ADMIN) ||
	    (has_cap(data, CAP_BPF) && has_cap(data, CAP_PERFMON))) {
		warn_optional_caps(data, uprobes);
		return 0;
	}
	self_path(self, sizeof(self));
	fprintf(stderr, "profd: error: needs root, or CAP_BPF and CAP_PERFMON "
		"(%s): run as root, e.g. sudo \"%s\", or "
		"setcap " ALL_CAPS "+ep \"%s\"\n",
		geteuid() ? "not running as root" : "capabilities dropped", self, self);
	return -1;
}

int preflight_check(bool check_version, bool uprobes)
{
	struct utsname u;
	int major, minor, ret;

	if (check_version) {
		if (uname(&u) || preflight_parse_release(u.release, &major, &minor)) {
			fprintf(stderr, "profd: error: cannot read the kernel version; "
				"pass --no-kernel-version-check to skip this check\n");
			return -1;
		}
		if (major < PROFD_MIN_KERNEL_MAJOR ||
		    (major == PROFD_MIN_KERNEL_MAJOR && minor < PROFD_MIN_KERNEL_MINOR)) {
			fprintf(stderr, "profd: error: kernel %s is too old: profd needs "
				"Linux %d.%d or newer (upgrade the kernel)\n", u.release,
				PROFD_MIN_KERNEL_MAJOR, PROFD_MIN_KERNEL_MINOR);
			return -1;
		}
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		fprintf(stderr, "profd: error: no kernel BTF at /sys/kernel/btf/vmlinux: "
			"boot a kernel built with CONFIG_DEBUG_INFO_BTF=y\n");
		return -1;
	}
	if (check_caps(uprobes))
		return -1;
	ret = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL);
	if (ret != 1) {
		fprintf(stderr, "profd: error: the bpf() syscall cannot load programs "
			"(%s): check kernel.unprivileged_bpf_disabled, seccomp or "
			"container restrictions, and CONFIG_BPF_SYSCALL\n",
			ret < 0 ? strerror(-ret) : "perf_event programs unsupported");
		return -1;
	}
	return 0;
}
