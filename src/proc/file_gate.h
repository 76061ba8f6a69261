/* SPDX-License-Identifier: GPL-2.0 */
/*
 * file_gate.h - reads of mapped files that time out.
 *
 * Owns: the verdict, per file identity (device, inode), on whether a
 * mapped file can be read without blocking, and the disposable threads
 * that find out. Before anything on the reader thread opens and parses a
 * mapping's file (the symbolizer, the unwind loader, runtime detection),
 * file_gate_check() reads the parts of it those parsers read — the ELF
 * header, program and section headers, and every section except code
 * (SHF_EXECINSTR) and DWARF debug data other than .debug_frame — on a
 * thread of its own with a deadline. Read once, those pages are in the
 * page cache, so the parsers that follow do not wait on the file's
 * device. A read that misses the caller's deadline leaves its thread
 * behind and the file pending: its mappings are left out for now and
 * asked about again later (a busy disk is slow, not hung). Once that
 * read has been blocked for FILE_GATE_HUNG_NS (a FUSE server that stopped
 * answering, a dead NFS server) the file is hung: a warning names it
 * once, it is counted, and it is not tried again while that thread is
 * still blocked (then after FILE_GATE_RETRY_NS). The thread frees what
 * it owns when its read finally returns, and a pending file whose read
 * returns is good. A device (file system) with FILE_GATE_MAX_STUCK_DEV
 * reads blocked is hung as a whole: its other files are hung without a
 * try, so one dead mount costs a few threads and files elsewhere are
 * still read. At most FILE_GATE_MAX_STUCK threads are left blocked in
 * all; past that, new files are refused without a try.
 *
 * Limits: a file that starts hanging between the check and the parse
 * (or whose pages were evicted in between) can still block the caller;
 * the verdict is kept for FILE_GATE_OK_NS.
 *
 * Threads: every function may be called from any thread (one mutex).
 */
#ifndef PROFD_PROC_FILE_GATE_H
#define PROFD_PROC_FILE_GATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/maps.h"

#define FILE_GATE_TIMEOUT_NS	(250ULL * 1000 * 1000)
#define FILE_GATE_HUNG_NS	(2000ULL * 1000 * 1000)
#define FILE_GATE_OK_NS		(600ULL * 1000 * 1000 * 1000)
#define FILE_GATE_RETRY_NS	(60ULL * 1000 * 1000 * 1000)
#define FILE_GATE_MAX_STUCK	64	/* threads left blocked, all devices */
#define FILE_GATE_MAX_STUCK_DEV	4	/* ... on one device: it is hung */

struct file_gate;

struct file_gate_stats {
	uint64_t checks;		/* files read by a gate thread */
	uint64_t timeouts;		/* ... found hung (blocked FILE_GATE_HUNG_NS) */
	uint64_t refused;		/* file_gate_check() calls answered -ETIMEDOUT/-EBUSY */
	uint64_t stuck_now;		/* reads found hung and still blocked */
	uint64_t stuck_oldest_ns;	/* how long the oldest of them has been */
};

/*
 * file_gate_new - a gate whose reads time out after @timeout_ns (0: the
 * default, FILE_GATE_TIMEOUT_NS). NULL on out of memory.
 */
struct file_gate *file_gate_new(uint64_t timeout_ns);

/*
 * file_gate_free - free the gate; threads still blocked keep what they
 * need (the gate itself is then left allocated for them). NULL is fine.
 */
void file_gate_free(struct file_gate *g);

/*
 * file_gate_check - whether the file behind mapping @m of process @pid
 * (opened through /proc/PID/map_files, else /proc/PID/root/PATH if it is
 * the same inode) can be read without blocking. Waits at most the gate's
 * timeout, and only when the file was not read recently. Returns 0 when
 * it was read in time (or recently was), or when the mapping has no file
 * to read (anonymous, special); -EINPROGRESS when the read is not done
 * yet (ask again later); -ETIMEDOUT when the file is hung, or its
 * device has FILE_GATE_MAX_STUCK_DEV reads blocked; -EBUSY when
 * FILE_GATE_MAX_STUCK threads are blocked already and the file was never
 * read; -ENOMEM. Open errors are not the gate's business: 0 (the parser
 * will fail on its own open, which cannot block longer than ours did).
 * When a read is found hung (by any call, stats included) a one-line
 * warning naming its file goes to stderr, once.
 */
int file_gate_check(struct file_gate *g, pid_t pid, const struct proc_mapping *m);

/* file_gate_stats - counters and the stuck gauge, consistent at the call. */
void file_gate_stats(struct file_gate *g, struct file_gate_stats *out);

#endif /* PROFD_PROC_FILE_GATE_H */
