/* SPDX-License-Identifier: GPL-2.0 */
/*
 * resource.h - the OTLP resource of a process, shared by every signal
 * profd exports for it (profiles, NVTX spans and logs), so a backend can
 * join them.
 *
 * Attributes (OpenTelemetry semantic conventions): service.name (the
 * process's own OTEL_SERVICE_NAME from /proc/PID/environ, else profd's
 * OTEL_SERVICE_NAME, else service.name in profd's OTEL_RESOURCE_ATTRIBUTES,
 * else "unknown_service:<executable name>"),
 * process.pid, process.executable.name, process.executable.path,
 * process.command_line, container.id (when /proc/PID/cgroup names a
 * container, see src/proc/cgroup.h), the external labels
 * (otlp_resources_add_label: profd's --label), host.name, host.id
 * (/etc/machine-id when readable), telemetry.sdk.name "profd",
 * telemetry.sdk.language "c", telemetry.sdk.version, then
 * OTEL_RESOURCE_ATTRIBUTES. The first value of a key wins: labels and
 * OTEL_RESOURCE_ATTRIBUTES never override the process's own attributes,
 * and labels beat OTEL_RESOURCE_ATTRIBUTES. The host's resource (pid 0)
 * has service.name, the labels and the shared attributes.
 *
 * Read once per process while it lives, cached by pid + start time
 * (/proc/PID/stat, re-checked at most once a second, so a reused pid
 * gets a new resource and a new key) and forgotten with
 * otlp_resources_forget() after it exits. Strings are made valid UTF-8.
 * otlp_resource.key: pid << 32 | (start time & 0xffffffff); 0 for the
 * host. Thread-safe.
 */
#ifndef PROFD_EXPORT_RESOURCE_H
#define PROFD_EXPORT_RESOURCE_H

#include <stdint.h>
#include <sys/types.h>

#include "export/otlp.h"
#include "export/otlp_types.h"

struct otlp_resources;

/* Most external labels (otlp_resources_add_label keys). */
#define RES_MAX_LABELS 32

/* otlp_resources_new - a cache using @c's service name and resource attributes (copied). */
struct otlp_resources *otlp_resources_new(const struct otlp_config *c);

/*
 * otlp_resources_add_label - an external label (@key = @value, copied,
 * made valid UTF-8) on every resource from now on; a key added again
 * gets the new value. Call before the first otlp_resources_get(): not
 * thread-safe against it, and resources already cached keep what they
 * had. Returns 0, -EINVAL (NULL @rs, empty @key, NULL @value), -ENOSPC
 * beyond RES_MAX_LABELS keys, or -ENOMEM.
 */
int otlp_resources_add_label(struct otlp_resources *rs, const char *key,
			     const char *value);

/*
 * What profd knows of a process besides /proc (any field may be NULL):
 * used only for what /proc/PID no longer tells once the process is gone.
 */
struct otlp_process_hint {
	const char *comm;		/* its name, from a BPF event */
	const char *exe_path;		/* process.executable.path, as the process said */
	const char *command_line;	/* process.command_line, as the process said */
	const char *service_name;	/* its OTEL_SERVICE_NAME, as the process said */
};

/*
 * otlp_resources_get - the resource of @pid, read from /proc/PID, with
 * @hint (may be NULL) filling what /proc no longer tells (a process gone
 * before its first record was read), or of profd's host when @pid is 0.
 * A cached resource built without an executable path is built again
 * when a hint brings one. The returned
 * resource stays valid until otlp_resources_free(), and for at least
 * 10 s after otlp_resources_forget(@pid) or a pid reuse is noticed
 * (callers hold it only within one call); never NULL unless out of
 * memory or @rs is NULL.
 */
const struct otlp_resource *otlp_resources_get(struct otlp_resources *rs, pid_t pid,
					       const struct otlp_process_hint *hint);

/* otlp_resources_forget - drop @pid's cached resource (the process exited). */
void otlp_resources_forget(struct otlp_resources *rs, pid_t pid);

void otlp_resources_free(struct otlp_resources *rs);

#endif /* PROFD_EXPORT_RESOURCE_H */
