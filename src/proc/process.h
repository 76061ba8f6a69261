/* SPDX-License-Identifier: GPL-2.0 */
/*
 * process.h - the table of processes seen in samples.
 *
 * Owns: per-process state (name, a snapshot of its mappings, the ELF
 * objects behind them, the process's metadata, exit status) and the
 * policy of when mappings are re-read: on first sight, after exec, and
 * when a sampled address lies outside every known mapping (at most once
 * per PROCESS_REFRESH_MIN_NS; a process's first PROCESS_QUICK_REFRESHES
 * re-reads, while ld.so maps its libraries, after PROCESS_QUICK_REFRESH_NS). The metadata (cgroup, container id,
 * executable and its build ID) is read with every maps read, so a
 * process moved to another cgroup shows it from its next re-read on.
 * Each read records when the image it found was exec'd (image clock):
 * a sample taken before that, read after it, is named by the image it
 * ran if the table still knows it (process_sample_snapshot()), never by
 * the later one.
 * With a file gate set (process_table_set_gate), every executable
 * mapping's file is read ahead with a deadline before anything opens it,
 * and the mappings of files found hung are neither opened nor offered to
 * the listener.
 *
 * Threads: the table is used by the reader thread only, except for what
 * it hands to an object loader (process_table_set_loader): opening and
 * parsing a mapping's ELF file (through the file gate), the executable's
 * build ID and the listener's maps_read()/removed() run there, in the
 * order asked, so the reader never opens an ELF file nor waits on the
 * gate. Those jobs hold a snapshot reference and publish into it:
 * objs[i] then obj_state[i] (release; read obj_state with acquire before
 * objs), and meta.build_id then meta_ready. Snapshots are otherwise
 * immutable once published and reference counted, so samples aggregated
 * under one stay symbolizable after the process exited or re-read its
 * maps. Every call into the symbolizer is made under `sym_lock` (see
 * process_table_new), which the profile writer takes too; the loader
 * drops it while a file is parsed.
 */
#ifndef PROFD_PROC_PROCESS_H
#define PROFD_PROC_PROCESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/cgroup.h"
#include "proc/maps.h"
#include "proc/procfs.h"	/* proc_read_comm(), proc_parent_pid() */
#include "symbol/jit_syms.h"
#include "symbol/symbolizer.h"

#define PROCESS_COMM_LEN 16
#define PROCESS_REFRESH_MIN_NS (250ULL * 1000 * 1000)
/*
 * A new process maps its libraries in its first milliseconds: a read
 * taken then lacks them, and one that waited 250 ms would come after a
 * short-lived process (20-60 ms) is gone. Its first re-reads come sooner.
 */
#define PROCESS_QUICK_REFRESHES 4
#define PROCESS_QUICK_REFRESH_NS (5ULL * 1000 * 1000)
#define PROC_BUILD_ID_LEN 129		/* hex of the longest build ID + NUL */

/*
 * What a process is, beyond its pid, as of one maps read: strings are
 * "" or NULL when unknown (a kernel thread has no executable; a process
 * gone before the read has nothing).
 */
struct proc_meta {
	char container_id[CGROUP_CONTAINER_ID_LEN];	/* 64 hex; "" outside containers */
	char build_id[PROC_BUILD_ID_LEN];	/* the executable's GNU build ID, hex; "" */
	char *cgroup;			/* owned; path from /proc/PID/cgroup (see cgroup.h) */
	char *executable;		/* owned; basename of /proc/PID/exe */
};

/* Where a mapping's object stands (proc_snapshot.obj_state[i]). */
enum proc_obj_state {
	PROC_OBJ_NONE,		/* not asked for yet, or its file was pending: ask again */
	PROC_OBJ_QUEUED,	/* a loader job will open it */
	PROC_OBJ_DONE,		/* opened (objs[i]), failed, or nothing to open */
	PROC_OBJ_HUNG,		/* its file hung (file gate): not opened */
};

/* One read of /proc/PID/maps and the ELF objects of its mappings. */
struct proc_snapshot {
	int refcnt;			/* atomic */
	pid_t pid;
	struct proc_maps maps;
	struct proc_meta meta;		/* read with the maps; build_id: see meta_ready */
	int meta_ready;			/* atomic: meta.build_id is final */
	/* per mapping: the object (NULL: none yet, or none) and enum proc_obj_state */
	struct sym_object **objs;	/* atomic pointers */
	uint8_t *obj_state;		/* atomic */
	struct symbolizer *sym;		/* for releasing objs */
	pthread_mutex_t *sym_lock;
	size_t bytes;			/* heap it holds, counted in snapshot_bytes */
	/*
	 * The process's JIT symbols (perf map, jitdump: process_jit.h), a
	 * reference, or NULL; atomic: the reader sets it once on the
	 * snapshot that was current when they were first wanted.
	 */
	struct jit_syms *jit;
};

struct process {
	pid_t pid;
	char comm[PROCESS_COMM_LEN];	/* process name: main thread's comm */
	struct proc_snapshot *snap;	/* NULL until read; never NULL after a read succeeded */
	/*
	 * When the image @snap describes was exec'd (CLOCK_MONOTONIC, from
	 * the table's image clock at the read; 0: never exec'd under profd,
	 * or unknown). A sample taken before it ran an earlier image: see
	 * process_sample_snapshot().
	 */
	uint64_t image_ns;
	/*
	 * When @snap's image ended, when known to have (an exec seen after
	 * it, by its record or the image clock, whose image no read found:
	 * the process was gone): samples from then on are named by no
	 * image. 0: not ended; 1: ended, time unknown.
	 */
	uint64_t image_end_ns;
	/*
	 * The image before @image_ns, for samples taken from @pre_exec_ns
	 * until @image_ns and read before the exec record: a forked child's
	 * view of its parent's (its first read came after its exec), or the
	 * snapshot a re-read replaced that found a later image. A reference,
	 * or NULL; dropped at the exec record (a later sample is past it).
	 */
	struct proc_snapshot *pre_exec;
	uint64_t pre_exec_ns;
	uint64_t refreshed_ns;		/* CLOCK_MONOTONIC of the last read */
	uint64_t unwind_requested_ns;	/* last process_request_unwind() served */
	uint32_t refreshes;		/* maps re-reads since the first (or exec) */
	bool stale;			/* exec seen: re-read at the next sample */
	bool exited;			/* exit seen: reaped after the next flush */
	uint64_t exited_ns;		/* CLOCK_MONOTONIC the exit was seen */
	uint64_t exit_event_ns;		/* ... and when it happened (the event's time) */
	bool released;			/* exited: the listener was told (removed()) */
	bool gone;			/* /proc/PID vanished before we read it */
	uint64_t last_sample_ns;
	uint64_t unwind_touched_ns;	/* last sample handed to the unwind LRU */
	struct jit_syms *jit;		/* its JIT symbols (process_jit.h), or NULL */
	uint64_t jit_probe_ns;		/* last look for its JIT files */
	uint64_t jit_read_ns;		/* last re-read of them asked for */
	struct process *next;		/* hash chain */
};

struct process_table_stats {
	uint64_t processes;		/* in the table now */
	uint64_t maps_reads;		/* /proc/PID/maps reads */
	uint64_t maps_read_errors;	/* process gone before its maps were read */
	uint64_t maps_inherited;	/* ... a forked child: its parent's view used */
	uint64_t elf_open_errors;	/* mappings whose file could not be opened */
	uint64_t loader_dropped;	/* loader jobs not queued (queue full): done later */
	uint64_t samples_after_exit;	/* exiting samples read after the exit event */
	uint64_t exited_removed;	/* entries removed after their exit event */
	uint64_t snapshot_bytes;	/* gauge: heap of the live maps snapshots
					 * (entries' and those jobs still hold) */
};

struct process_table;

/*
 * Told about every successful maps read (the mappings stay valid for the
 * call only) and about every process leaving the table. maps_seen() is
 * called on the reader thread with every read, before any file is
 * opened: it must not read the mapped files. maps_read() gets the
 * mappings less those whose file hung and removed() follows, both on the
 * object loader's thread (the reader without one), in the order the
 * reads and removals happened. Used to keep the BPF unwind tables and
 * runtime detection in step.
 */
struct process_listener {
	void (*maps_seen)(void *ctx, pid_t pid, const struct proc_maps *maps);
	void (*maps_read)(void *ctx, pid_t pid, const struct proc_maps *maps);
	void (*removed)(void *ctx, pid_t pid);
	void *ctx;
};

/*
 * process_table_set_image_clock - at each maps read, ask @exec_ns(@ctx,
 * pid) when the process last exec'd (CLOCK_MONOTONIC ns; 0: never, or
 * unknown): the exec time of the image read (struct process.image_ns).
 * The agent passes BPF's `exec_times`. Without a clock every sample is
 * named by the process's current snapshot.
 */
void process_table_set_image_clock(struct process_table *pt,
				   uint64_t (*exec_ns)(void *ctx, pid_t pid), void *ctx);

/* process_table_set_listener - install @l (copied; NULL removes it). */
void process_table_set_listener(struct process_table *pt,
				const struct process_listener *l);

struct file_gate;
struct object_loader;

/*
 * process_table_set_loader - open ELF objects, read build IDs and call
 * the listener's maps_read()/removed() on @ol's thread (see
 * object_loader.h) rather than the caller's. @ol is not owned and must
 * outlive the table (or be left alone with it, when it could not be
 * stopped). NULL: all of it on the reader.
 */
void process_table_set_loader(struct process_table *pt, struct object_loader *ol);

/*
 * process_table_set_gate - read every executable mapping's file through
 * @g (see file_gate.h) before it is opened or handed to the listener;
 * mappings of files found hung are not opened (their frames keep the
 * mapping's name; obj_state PROC_OBJ_HUNG) and not offered to
 * maps_read() (a file whose read-ahead is still running is asked about
 * again at the next sample or maps read). With a loader, the gate is
 * asked on the loader's thread only. @g is not owned
 * and must outlive the table. NULL: no gate.
 */
void process_table_set_gate(struct process_table *pt, struct file_gate *g);

/*
 * process_table_new - an empty table using symbolizer @sym, whose calls
 * are serialized by @sym_lock. NULL on out of memory.
 */
struct process_table *process_table_new(struct symbolizer *sym,
					pthread_mutex_t *sym_lock);

/* process_table_free - free the table; snapshots live on while referenced. */
void process_table_free(struct process_table *pt);

/*
 * process_get - the process @pid, created on first sight (reads its comm
 * and maps; if it is already gone the entry is kept with gone = true so
 * its samples still count). @now_ns is CLOCK_MONOTONIC. @exiting: the
 * sample was taken while its task exited (PROFD_SAMPLE_EXITING); such a
 * sample read after the exit event belongs to the exited entry (its
 * snapshot and metadata; /proc is not read again), while any other
 * sample of an exited PID is a new process reusing it. A process first
 * seen exiting is read once and marked exited. A process found exiting
 * or a zombie when read, with no mappings or executable left, gets no
 * snapshot (gone; counted as a maps read error) rather than its remains'
 * metadata (cgroup "/"). @comm: the process's name (its leader thread's
 * comm, e.g. from a sample of the leader), or NULL to read it from /proc.
 * @sample_ns: when the sample was taken (CLOCK_MONOTONIC; 0: now): one
 * taken before the exit (a sample held for its unwind tables) belongs
 * to the exited entry too.
 * NULL on OOM.
 */
struct process *process_get(struct process_table *pt, pid_t pid,
			    uint64_t now_ns, bool exiting, const char *comm,
			    uint64_t sample_ns);

/*
 * process_find_mapping - index of the mapping of @p containing @addr,
 * re-reading the maps (rate limited) when @addr is outside all of them
 * or the process exec'd. Asks for the mapping's ELF object on first use
 * (opened by the loader; at once without one).
 * Returns the index into p->snap->maps.v, or -1.
 */
int process_find_mapping(struct process_table *pt, struct process *p,
			 uint64_t addr, uint64_t now_ns);

/*
 * process_request_unwind - the BPF unwinder found no unwind info for @p
 * (PROFD_SAMPLE_UNWIND_MISSING): re-read its mappings (which hands them
 * to the listener), at most once per PROCESS_REFRESH_MIN_NS.
 */
void process_request_unwind(struct process_table *pt, struct process *p,
			    uint64_t now_ns);

/*
 * process_sample_snapshot - the snapshot that names the user frames of
 * @p's sample taken at @sample_ns (CLOCK_MONOTONIC; 0: unknown, now):
 * @p->snap, unless the sample predates the image it describes (@sample_ns
 * < @p->image_ns: the process exec'd between the sample and the read).
 * Such a sample gets @p->pre_exec, the image it ran, when held and the
 * sample falls in its time; else NULL: its user frames are named by no
 * image (a truncated stack rather than a wrong one). NULL too for a
 * sample at or after @p->image_end_ns (an exec whose image no read
 * found). Never reads /proc.
 */
struct proc_snapshot *process_sample_snapshot(const struct process *p,
					       uint64_t sample_ns);

/*
 * process_snapshot_mapping - index of the mapping of @s containing @addr
 * (its object asked for on first use, as process_find_mapping() does),
 * or -1. Never re-reads the maps: for a snapshot other than the
 * process's current one (process_sample_snapshot()).
 */
int process_snapshot_mapping(struct process_table *pt, struct proc_snapshot *s,
			     uint64_t addr, uint64_t now_ns);

/*
 * process_drop_remains - @p's snapshot was read while it exited or as a
 * zombie (no mappings or no executable left, the process exiting): drop
 * it, so its samples get no labels rather than the remains' (cgroup "/");
 * @p is then gone (counted as a maps read error). process_get() does it
 * for a first read; call it after a re-read (process_find_mapping()).
 */
void process_drop_remains(struct process_table *pt, struct process *p);

/*
 * process_fork - fork record (PROFD_EVENT_PROC_FORK): process @pid was
 * forked by @ppid at @event_ns (the record's time; @now_ns when it was
 * read, both CLOCK_MONOTONIC). If @ppid's maps were read (its current
 * image), the child keeps that snapshot as its view until its first
 * maps read: a child gone by then (it lived a millisecond) is named by
 * it and marked exited there, counted as maps_inherited_from_parent, not
 * as a maps read error. A first read that finds an image exec'd after the
 * fork keeps the view as the child's pre_exec, for its samples from
 * before the exec. Its exec (process_exec) drops the view, its exit
 * record not (samples of the exit may follow it).
 * A live entry of @pid is marked exited at @event_ns (its PID is new).
 * The view shares the parent's snapshot (its pid is the parent's: the
 * files and code are the parent's; nothing reads the child's memory
 * through it, and JIT symbols are not looked for in it).
 */
void process_fork(struct process_table *pt, pid_t pid, pid_t ppid, uint64_t now_ns,
		  uint64_t event_ns);

/* process_exec - exec seen: new name, mappings to re-read; the listener
 * told the old image was removed (its removed(), before the new maps);
 * the view of the image before it (pre_exec) dropped: every sample read
 * from now on was taken after this exec. */
void process_exec(struct process_table *pt, pid_t pid, const char *comm);

/*
 * process_exit - exit seen at @now_ns (CLOCK_MONOTONIC), the exit event
 * taken at @event_ns: the entry stays for the samples that follow the
 * exit event and those taken before it but read after, and is removed by
 * process_table_reap().
 */
void process_exit(struct process_table *pt, pid_t pid, uint64_t now_ns,
		  uint64_t event_ns);

/*
 * process_table_reap - for processes whose exit was seen before
 * @release_before_ns, tell the listener (removed(): their BPF map entries
 * go) while the entry stays for samples still in flight; drop those whose
 * exit was seen before @remove_before_ns (the caller passes the time the
 * interval holding their last samples was swapped out, so an entry
 * outlives its process by at most one interval), those whose /proc entry
 * vanished before it was read, and those not sampled for @idle_ns whose
 * /proc entry is gone; then unreferenced ELF objects. removed() is called
 * once per entry.
 */
void process_table_reap(struct process_table *pt, uint64_t now_ns,
			uint64_t idle_ns, uint64_t release_before_ns,
			uint64_t remove_before_ns);

void process_table_stats(const struct process_table *pt,
			 struct process_table_stats *out);

/*
 * proc_snapshot_object - the object of @s's mapping @idx as far as it is
 * ready (acquire), NULL if none (yet); *@state (may be NULL) gets its
 * enum proc_obj_state. Any thread holding a reference.
 */
struct sym_object *proc_snapshot_object(const struct proc_snapshot *s, int idx,
					 enum proc_obj_state *state);

/*
 * proc_snapshot_build_id - the executable's build ID (hex) once the
 * loader read it, else "". Any thread holding a reference.
 */
const char *proc_snapshot_build_id(const struct proc_snapshot *s);

/* proc_snapshot_get/put - take/drop a reference (put frees at zero). */
struct proc_snapshot *proc_snapshot_get(struct proc_snapshot *s);
void proc_snapshot_put(struct proc_snapshot *s);

#endif /* PROFD_PROC_PROCESS_H */
