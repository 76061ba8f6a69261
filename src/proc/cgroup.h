/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup.h - which cgroup a process is in, and which container that is.
 *
 * Owns: reading /proc/PID/cgroup (cgroups(7): one "ID:CONTROLLERS:PATH"
 * line per hierarchy, "0::PATH" for cgroup v2) down to the one path that
 * says most about the process, and recognising container ids in cgroup
 * paths as the container runtimes name them:
 *
 *   docker, cgroupfs driver      /docker/<id>
 *   docker, systemd driver       /system.slice/docker-<id>.scope
 *   containerd/CRI, cgroupfs     /kubepods/besteffort/pod<uid>/<id>
 *   containerd/CRI, systemd      /kubepods.slice/.../kubepods-burstable-pod<uid>.slice/
 *                                cri-containerd-<id>.scope
 *   containerd, cgroupfs on v2   .../kubepods-besteffort-pod<uid>.slice:cri-containerd:<id>
 *   nerdctl                      nerdctl-<id>.scope
 *   CRI-O                        crio-<id>.scope or crio-<id>
 *   podman                       /machine.slice/libpod-<id>.scope, and below it
 *                                (libpod-<id>.scope/container), /libpod_parent/libpod-<id>
 *
 * where <id> is 64 lowercase hex digits. The runtimes' monitor processes
 * (crio-conmon-<id>.scope, libpod-conmon-<id>.scope) are not in the
 * container and get no id. A process in a cgroup below its container's
 * (a container that made its own sub-cgroups) gets the container's id;
 * nested containers (docker in docker, kind) get the innermost.
 */
#ifndef PROFD_PROC_CGROUP_H
#define PROFD_PROC_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Bytes of a container id with its NUL: 64 hex digits. */
#define CGROUP_CONTAINER_ID_LEN 65

/*
 * cgroup_pick - the cgroup path of a process from @text, the contents of
 * its /proc/PID/cgroup (NUL-terminated), copied into @path (@len bytes).
 * The path chosen: the first one holding a container id, looking at the
 * cgroup v2 line, then v1 "name=systemd", then the other v1 lines in file
 * order; otherwise the v2 path if it is not "/", else name=systemd's if
 * not "/", else the first other v1 path that is not "/", else "/". A
 * " (deleted)" suffix (a removed cgroup) is dropped.
 * Returns 0, -ENODATA when @text has no cgroup line, -ENAMETOOLONG when
 * the path does not fit @len (@path is then "").
 */
int cgroup_pick(const char *text, char *path, size_t len);

/*
 * proc_read_cgroup - cgroup_pick() on /proc/@pid/cgroup. Returns 0, the
 * errors of cgroup_pick(), or a negative errno of reading the file
 * (-ENOENT: the process is gone). @path is "" on error.
 */
int proc_read_cgroup(pid_t pid, char *path, size_t len);

/*
 * cgroup_container_id - the container id in @cgroup_path (formats above),
 * searched from the last path component up, into @id of @len >=
 * CGROUP_CONTAINER_ID_LEN bytes. Returns true when one was found; false
 * (and @id "" when @len > 0) otherwise.
 */
bool cgroup_container_id(const char *cgroup_path, char *id, size_t len);

#endif /* PROFD_PROC_CGROUP_H */
