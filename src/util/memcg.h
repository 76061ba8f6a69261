/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memcg.h - the room left in profd's own memory cgroup.
 *
 * Owns: reading the memory limit profd runs under, so that the memory it
 * chooses to take (the BPF maps --bpf-map-scale-factor grows, the unwind
 * tables' default) fits that limit instead of meeting it. BPF map memory
 * is charged to the memory cgroup of the process that creates the map,
 * and a cgroup at its limit reclaims, then OOM-kills, on the next page
 * fault.
 *
 * The cgroup is found from /proc/self/cgroup (v2: the "0::" line; v1:
 * the line whose controllers include "memory") and its directory through
 * /proc/self/mountinfo (the mount of that hierarchy whose root is a prefix
 * of the path, as in a container). Each level from the cgroup up to the
 * hierarchy's root counts: its room is limit - (usage - inactive file
 * pages), the limit being memory.max (v2) or memory.limit_in_bytes (v1),
 * the usage memory.current / memory.usage_in_bytes, the inactive file
 * pages (reclaimed first, never a reason to OOM) memory.stat's
 * inactive_file / total_inactive_file. See the kernel's
 * Documentation/admin-guide/cgroup-v2.rst and cgroup-v1/memory.rst.
 */
#ifndef PROFD_UTIL_MEMCG_H
#define PROFD_UTIL_MEMCG_H

#include <stdint.h>

/*
 * memcg_room - the bytes profd's memory cgroup (and every ancestor with a
 * limit) can still be charged: the least room of those levels.
 * UINT64_MAX where no level has a limit, where profd is in no memory
 * cgroup, or where the files cannot be read (so the caller falls back to
 * its other bounds). Reads /proc/self/cgroup and /proc/self/mountinfo.
 */
uint64_t memcg_room(void);

/*
 * memcg_room_from - memcg_room() with the two /proc files named (tests
 * give fakes whose mount points are directories they made).
 * @cgroup_file: a /proc/PID/cgroup text; @mountinfo_file: a
 * /proc/PID/mountinfo text. Same results as memcg_room().
 */
uint64_t memcg_room_from(const char *cgroup_file, const char *mountinfo_file);

#endif
