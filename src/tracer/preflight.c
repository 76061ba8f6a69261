// SPDX-License-Identifier: GPL-2.0
/*
 * preflight.c - start-up checks of kernel and privileges (see preflight.h).
 */
#include <errno.h>
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

int preflight_parse_release(const char *release, int *major, int *minor)
{
	return sscanf(release, "%d.%d", major, minor) == 2 ? 0 : -1;
}

static bool has_cap(const struct __user_cap_data_struct d[2], int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

static int check_caps(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = { 0 };

	if (syscall(SYS_capget, &hdr, data)) {
		fprintf(stderr, "profd: error: capget failed: %s\n", strerror(errno));
		return -1;
	}
	if (has_cap(data, CAP_SYS_ADMIN) ||
	    (has_cap(data, CAP_BPF) && has_cap(data, CAP_PERFMON)))
		return 0;
	fprintf(stderr, "profd: error: needs root, or CAP_BPF and CAP_PERFMON "
		"(%s): run as root, e.g. 'sudo build/profd', or "
		"'setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep build/profd'\n",
		geteuid() ? "not running as root" : "capabilities dropped");
	return -1;
}

int preflight_check(bool check_version)
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
	if (check_caps())
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
