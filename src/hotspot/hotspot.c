// SPDX-License-Identifier: GPL-2.0
/*
 * hotspot.c - HotSpot JVMs as a runtime of the seam (src/runtime/): the
 * process table, the runtime_procs entries, and naming the frames the
 * BPF walker recorded (bpf/unwind_hotspot.h).
 *
 * A process's life here: its maps show a JVM (libjvm's gHotSpotVM*
 * symbols, detect.h, once per file) -> its vmStructs read (vmstructs.h),
 * the offsets derived (offsets.h), its code heaps and the interpreter's
 * code read (codecache.h) -> ATTACHED: the entry written, BPF walks it.
 * A JVM that has not set its tables or code cache up yet is PENDING:
 * tried again at each maps read and from tick() (after 100 ms, backing
 * off to every 500 ms). One whose layout lacks a feature the walker needs, or
 * whose state does not fit the walker, is REFUSED (counted). Each attach
 * gets a new generation, part of every naming cache key.
 *
 * Naming (reader thread, merge_stack()): a blob frame is named from the
 * live blob at its address only if that blob still has the compile id
 * word and _name pointer the walker read at the sample (an nmethod's
 * compile id is unique in its JVM: a flushed method's place taken by
 * another is never named after either); else the frame stays the
 * native, unnamed pc, counted (hotspot_frame_stale). Other blobs are named
 * "[their _name]" ("[StubRoutines (1)]"). An interpreted frame
 * is named from its Method* (checked as codecache.c checks methods) only
 * if the live method's class has the name Symbol the walker read (a
 * Method* freed with its class and reused by another's is caught) and
 * the bci lies in its bytecodes. Names are cached by (generation, blob
 * and its two stamps) or (generation, Method*, class name Symbol*).
 * A named nmethod frame becomes one frame per scope at its pc (scopes.h:
 * the methods inlined there, innermost first, each with file and line),
 * cached by (generation, stamps, pc); where they cannot be read or
 * verified it keeps its one outer name (hotspot_inline_unread).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>

#include "bpf/profd.h"
#include "bpf/unwind_hotspot.h"
#include "counters/counters.h"
#include "hotspot/codecache.h"
#include "hotspot/detect.h"
#include "hotspot/mem.h"
#include "hotspot/offsets.h"
#include "hotspot/scopes.h"
#include "hotspot/vmstructs.h"
#include "proc/remote.h"
#include "runtime/file_cache.h"
#include "runtime/frames.h"
#include "runtime/runtime.h"

#define HS_BUCKETS		1024
#define HS_NAME_CACHE		16384	/* entries, direct-mapped */
#define HS_INL_TOKENS		PROFD_MAX_INTERP_FRAMES	/* inlined frames of one stack */
#define HS_RETRY_FIRST_NS	(100ULL * 1000 * 1000)
#define HS_RETRY_MAX_NS		(500ULL * 1000 * 1000)
#define HS_BAD_TRIES		8	/* inconsistent code heaps: deferred, then refused */
#define HS_BUDGET		(32u << 20)	/* when given none */

COUNTER_DEFINE_BPF(hotspot_samples, COUNTER_STAT, PROFD_CNT_HS_SAMPLES,
		   "samples of JVM processes walked");
COUNTER_DEFINE_BPF(hotspot_no_blob, COUNTER_PARTIAL, PROFD_CNT_HS_NO_BLOB,
		   "JVM code heap pcs no code blob held at the sample: left unnamed");
COUNTER_DEFINE_BPF(hotspot_walk_read_error, COUNTER_PARTIAL, PROFD_CNT_HS_READ_ERR,
		   "JVM code heap or frame unreadable at the sample: frame left unnamed");
COUNTER_DEFINE_BPF(hotspot_walk_truncated, COUNTER_PARTIAL, PROFD_CNT_HS_TRUNCATED,
		   "samples with more frames than the JVM walker looks at or keeps");
COUNTER_DEFINE_BPF(hotspot_bad_interpreted, COUNTER_PARTIAL, PROFD_CNT_HS_BAD_INTERP,
		   "interpreted JVM frames whose bcp lay outside their method: left unnamed");
COUNTER_DEFINE_BPF(hotspot_unwind_stopped, COUNTER_PARTIAL, PROFD_CNT_HS_UNWIND_STOP,
		   "JVM frames that could not be unwound (a leaf still building its frame): "
		   "stack truncated");
COUNTER_DEFINE_BPF(hotspot_handbacks, COUNTER_STAT, PROFD_CNT_HS_HANDBACKS,
		   "JVM walks that handed the stack back to the native walk");
COUNTER_DEFINE(hotspot_frame_stale, COUNTER_PARTIAL,
	       "JVM frames left unnamed: the code at their address changed since the sample");
COUNTER_DEFINE(hotspot_frame_unnamed, COUNTER_PARTIAL,
	       "JVM frames left unnamed: their blob or method could not be read or verified");
COUNTER_DEFINE(hotspot_inline_unread, COUNTER_PARTIAL,
	       "compiled JVM frames named without their inlined methods and lines: the "
	       "nmethod's debug info could not be read or verified, or the stack had no room");
COUNTER_DEFINE(hotspot_attach_refused, COUNTER_STAT,
	       "JVMs not walked: their vmStructs lack what the walker needs");
COUNTER_DEFINE(hotspot_attach_deferred, COUNTER_STAT,
	       "JVM attaches put off: the JVM was not set up yet (tried again)");
COUNTER_DEFINE(hotspot_update_error, COUNTER_PARTIAL,
	       "runtime_procs updates for JVM processes that failed");
COUNTER_DEFINE(hotspot_read_timeout, COUNTER_PARTIAL,
	       "reads of JVM process memory that hung (abandoned)");
COUNTER_DEFINE(hotspot_frames_full, COUNTER_PARTIAL,
	       "JVM frames not named: the frame table was full");

enum { HS_FRAME_TABLE_FULL = 1, HS_FIXED_FRAMES = 1 };

static const char *const hs_fixed_names[HS_FIXED_FRAMES + 1] = {
	[HS_FRAME_TABLE_FULL] = "[hotspot: frame table full]",
};

static const struct rt_frames_kind hs_frame_kind = {
	.tag = RUNTIME_IP_FRAME | (uint64_t)PROFD_RUNTIME_HOTSPOT << RUNTIME_IP_ID_SHIFT,
	.fixed = hs_fixed_names,
	.nfixed = HS_FIXED_FRAMES,
	.full_id = HS_FRAME_TABLE_FULL,
	.full = &counter_hotspot_frames_full,
};

/* The file cache's record: is this file a JVM. */
struct hs_detected {
	struct rt_file f;
	struct hs_binary bin;
};

enum hs_state { HS_PENDING = 1, HS_ATTACHED, HS_REFUSED };

struct hsproc {
	pid_t pid;
	enum hs_state state;
	uint64_t gen;
	uint32_t dev_major, dev_minor;
	uint64_t inode, bias;
	struct hs_binary bin;
	uint64_t next_try_ns, retry_ns;
	uint32_t bad_tries;		/* attaches that found the code heaps inconsistent */
	uint32_t interp_waits;		/* attaches that found the interpreter untrimmed */
	int jdk_major;			/* Abstract_VM_Version::_vm_major_version */
	struct hs_offsets off;
	struct hs_codecache cc;
	struct profd_hotspot_proc bpf;
	struct hsproc *next;
};

struct hs_name {
	uint64_t gen, w0, w1;
	int line;		/* interpreted frames: the bci's line, 0 unknown */
	bool nmethod;		/* a blob: compiled Java code (scopes to read) */
	char *name;		/* NULL: empty slot */
	char *file;		/* interpreted frames: the source file, or NULL */
};

struct hotspot {
	int procs_fd;
	int verbose;
	struct rt_file_cache det;		/* the object loader's */
	pthread_mutex_t lock;			/* procs, gen, entries */
	struct hsproc *procs[HS_BUCKETS];
	uint64_t next_gen;
	uint64_t nprocs;			/* atomic */
	struct remote_reader *loader_reader, *reader;
	struct hs_mem *loader_mem, *mem;	/* by thread: loader, reader */
	struct hs_name names[HS_NAME_CACHE];	/* reader */
	uint64_t nnames;
	struct hs_chains chains;		/* reader */
	struct rt_frame_gens frames;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int detect_fd(int fd, struct rt_file *f)
{
	return hs_detect_fd(fd, &((struct hs_detected *)f)->bin);
}

static struct hsproc **proc_slot(struct hotspot *hs, pid_t pid)
{
	struct hsproc **pp = &hs->procs[(uint32_t)pid % HS_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

/* Write @p's runtime_procs entry. 0, or -1 (counted by the caller). */
static int entry_write(struct hotspot *hs, const struct hsproc *p)
{
	struct profd_runtime_proc rp = { .runtime = PROFD_RUNTIME_HOTSPOT };
	__u32 key = p->pid;

	if (hs->procs_fd < 0)
		return 0;
	memcpy(rp.state, &p->bpf, sizeof(p->bpf));
	/* the JVM's code: every heap (the interpreter is in one) */
	rp.code_low = UINT64_MAX;
	for (uint32_t i = 0; i < p->bpf.nheaps && i < PROFD_HS_MAX_HEAPS; i++) {
		if (p->bpf.heap_low[i] < rp.code_low)
			rp.code_low = p->bpf.heap_low[i];
		if (p->bpf.heap_low[i] + p->bpf.heap_size[i] > rp.code_high)
			rp.code_high = p->bpf.heap_low[i] + p->bpf.heap_size[i];
	}
	if (p->bpf.interp_size && p->bpf.interp_low < rp.code_low)
		rp.code_low = p->bpf.interp_low;
	if (p->bpf.interp_low + p->bpf.interp_size > rp.code_high)
		rp.code_high = p->bpf.interp_low + p->bpf.interp_size;
	if (rp.code_low > rp.code_high)
		rp.code_low = rp.code_high = 0;
	return bpf_map_update_elem(hs->procs_fd, &key, &rp, BPF_ANY) ? -1 : 0;
}

/* The walker's state from @p's offsets and heaps; -EPROTO if it does not fit. */
static int bpf_state(struct hsproc *p, uint64_t interp_low, uint64_t interp_size)
{
	const struct hs_offsets *o = &p->off;
	struct profd_hotspot_proc *b = &p->bpf;
	int64_t slot = o->interp_last_sp_offset - 1;	/* frame_x86.hpp: the Method* */

	memset(b, 0, sizeof(*b));
	if (!p->cc.nheaps || p->cc.nheaps > PROFD_HS_MAX_HEAPS || o->blob_size.size != 4 ||
	    o->blob_size.off > 255 || o->blob_name.off > 255 || o->heap_block_size > 255 ||
	    o->nm_compile_id.size != 4 || o->nm_compile_id.off > 0xffff || interp_size > UINT32_MAX ||
	    o->method_const_method.off > 255 || o->cm_constants.off > 255 ||
	    o->cp_pool_holder.off > 255 || o->klass_name.off > 255 || o->const_method_size > 255 ||
	    o->blob_frame_size.size != 4 || o->blob_frame_size.off > 255 ||
	    (o->blob_frame_complete.size != 2 && o->blob_frame_complete.size != 4) ||
	    o->blob_frame_complete.off > 255 ||
	    (o->blob_code_begin.size == 8 ? o->blob_code_begin.off > 255 :
	     o->blob_code_offset.size != 4 || o->blob_code_offset.off > 255))
		return -EPROTO;
	for (uint32_t i = 0; i < p->cc.nheaps; i++) {
		const struct hs_codeheap *h = &p->cc.heap[i];
		uint64_t high = h->reserved_high ? h->reserved_high : h->high;

		if (high - h->low > UINT32_MAX || h->log2_segment_size != p->cc.heap[0].log2_segment_size)
			return -EPROTO;
		b->heap_low[i] = h->low;
		b->heap_size[i] = (uint32_t)(high - h->low);
		b->heap_segmap[i] = h->segmap_low;
	}
	b->nheaps = (uint8_t)p->cc.nheaps;
	b->log2_segment = (uint8_t)p->cc.heap[0].log2_segment_size;
	b->block_header = (uint8_t)o->heap_block_size;
	b->blob_size_off = (uint8_t)o->blob_size.off;
	b->blob_name_off = (uint8_t)o->blob_name.off;
	b->compile_id_off = (uint16_t)o->nm_compile_id.off;
	b->interp_low = interp_low;
	b->interp_size = (uint32_t)interp_size;
	b->interp_method_slot = (int8_t)slot;
	b->method_const_method = (uint8_t)o->method_const_method.off;
	b->cm_constants = (uint8_t)o->cm_constants.off;
	b->cp_pool_holder = (uint8_t)o->cp_pool_holder.off;
	b->klass_name = (uint8_t)o->klass_name.off;
	b->const_method_size = (uint8_t)o->const_method_size;
	b->blob_frame_size_off = (uint8_t)o->blob_frame_size.off;
	b->blob_frame_complete_off = (uint8_t)o->blob_frame_complete.off;
	b->blob_frame_complete_size = (uint8_t)o->blob_frame_complete.size;
	if (o->blob_code_begin.size == 8) {
		b->blob_code_off = (uint8_t)o->blob_code_begin.off;
		b->blob_code_is_ptr = 1;
	} else {
		b->blob_code_off = (uint8_t)o->blob_code_offset.off;
	}
	b->interp_sender_sp_slot = (int8_t)o->interp_sender_sp_offset;
	return 0;
}

/*
 * Read @p's JVM through @m: vmStructs, offsets, heaps, interpreter, and
 * the walker's state. 0 (attach), -EAGAIN (not ready), or another error
 * (refuse; a read error: try again).
 */
static int attach_read(struct remote_reader *r, struct hs_mem *m, struct hsproc *p)
{
	struct hs_vmstructs vm;
	uint64_t ilow = 0, isize = 0, major = 0;
	bool unsettled = false;
	uint32_t need = HS_FEAT_FIND_BLOB | HS_FEAT_BLOB_NAME | HS_FEAT_NMETHOD |
			HS_FEAT_METHOD_NAME | HS_FEAT_INTERP | HS_FEAT_CODE_RANGE;
	int err;

	err = hs_vmstructs_read(r, p->pid, &p->bin, p->bias, &vm);
	if (!err)
		hs_offsets_from(&vm, &p->off);
	hs_vmstructs_free(&vm);
	if (err)
		return err;
	if ((p->off.features & need) != need)
		return -ENOTSUP;
	hs_mem_init(m, r, p->pid, false);
	if ((err = hs_codecache_read(m, &p->off, &p->cc)) ||
	    (err = hs_interpreter_read(m, &p->off, &ilow, &isize, &unsettled)))
		return err;
	/* the interpreter's buffer not trimmed yet: its tail, soon other
	 * blobs' code, must not be read as the interpreter's frames */
	if (unsettled && ++p->interp_waits <= HS_BAD_TRIES)
		return -EAGAIN;
	if (p->off.vm_major_version &&
	    !hs_mem_uint(m, p->off.vm_major_version, 4, &major) && major < 1000)
		p->jdk_major = (int)major;
	return bpf_state(p, ilow, isize);
}

/* Try to attach @p now (no lock held; @p is not in the table). */
static void attach(struct hotspot *hs, struct remote_reader *r, struct hs_mem *m,
		   struct hsproc *p)
{
	int err = attach_read(r, m, p);

	if (!err) {
		p->state = HS_ATTACHED;
		return;
	}
	/*
	 * Code heaps that fail their checks may be caught mid-change (a
	 * starting JVM, or CodeHeap::expand_by() between committing the heap
	 * and its segment map): tried again a few times before refused.
	 */
	if (err == -EAGAIN || err == -EFAULT || err == -ETIMEDOUT ||
	    (err == -EPROTO && ++p->bad_tries <= HS_BAD_TRIES)) {
		counter_inc(&counter_hotspot_attach_deferred);
		p->state = HS_PENDING;
		p->retry_ns = p->retry_ns ? p->retry_ns * 2 : HS_RETRY_FIRST_NS;
		if (p->retry_ns > HS_RETRY_MAX_NS)
			p->retry_ns = HS_RETRY_MAX_NS;
		p->next_try_ns = now_ns() + p->retry_ns;
		return;
	}
	counter_inc(&counter_hotspot_attach_refused);
	if (hs->verbose)
		fprintf(stderr, "profd: pid %d: JVM not walked: %s\n", (int)p->pid,
			strerror(-err));
	p->state = HS_REFUSED;
}

/*
 * Put @n in the table in place of @pid's entry (freed), write or delete
 * its BPF entry. Lock held.
 */
static void install(struct hotspot *hs, struct hsproc *n)
{
	struct hsproc **pp = proc_slot(hs, n->pid), *old = *pp;
	bool had_entry = old && old->state == HS_ATTACHED;
	__u32 key = n->pid;

	if (old) {
		n->next = old->next;
		free(old);
	} else {
		n->next = NULL;
		__atomic_add_fetch(&hs->nprocs, 1, __ATOMIC_RELAXED);
	}
	*pp = n;
	if (n->state == HS_ATTACHED) {
		n->gen = ++hs->next_gen;
		if (hs->verbose) {
			fprintf(stderr, "profd: pid %d: HotSpot JVM, %u code heaps:",
				(int)n->pid, n->cc.nheaps);
			for (uint32_t i = 0; i < n->bpf.nheaps && i < PROFD_HS_MAX_HEAPS; i++)
				fprintf(stderr, " %#llx+%#x segmap %#llx", (unsigned long long)n->bpf.heap_low[i],
					n->bpf.heap_size[i], (unsigned long long)n->bpf.heap_segmap[i]);
			fprintf(stderr, " interp %#llx+%#x\n", (unsigned long long)n->bpf.interp_low, n->bpf.interp_size);
		}
		if (entry_write(hs, n))
			counter_inc(&counter_hotspot_update_error);
	} else if (had_entry && hs->procs_fd >= 0) {
		bpf_map_delete_elem(hs->procs_fd, &key);
	}
}

static void proc_remove(struct hotspot *hs, pid_t pid)
{
	struct hsproc **pp = proc_slot(hs, pid), *p = *pp;
	__u32 key = pid;

	if (!p)
		return;
	*pp = p->next;
	if (p->state == HS_ATTACHED && hs->procs_fd >= 0)
		bpf_map_delete_elem(hs->procs_fd, &key);
	free(p);
	__atomic_sub_fetch(&hs->nprocs, 1, __ATOMIC_RELAXED);
}

static void hs_maps_read(void *rt, pid_t pid, const struct proc_maps *maps)
{
	struct hotspot *hs = rt;
	const struct proc_mapping *found = NULL;
	struct hs_detected *d;
	struct hsproc *p, *n;
	uint64_t bias = 0;

	d = (struct hs_detected *)rt_file_find(&hs->det, pid, maps, &found, &bias);
	pthread_mutex_lock(&hs->lock);
	if (!d || d->f.result != 1) {
		proc_remove(hs, pid);
		pthread_mutex_unlock(&hs->lock);
		return;
	}
	p = *proc_slot(hs, pid);
	if (p && p->inode == found->inode && p->dev_major == found->dev_major &&
	    p->dev_minor == found->dev_minor && p->bias == bias && p->state != HS_PENDING) {
		/* the same JVM: its entry again (an exec deleted it) */
		if (p->state == HS_ATTACHED && entry_write(hs, p))
			counter_inc(&counter_hotspot_update_error);
		pthread_mutex_unlock(&hs->lock);
		return;
	}
	pthread_mutex_unlock(&hs->lock);
	n = calloc(1, sizeof(*n));
	if (!n)
		return;
	n->pid = pid;
	n->bin = d->bin;
	n->bias = bias;
	n->inode = found->inode;
	n->dev_major = found->dev_major;
	n->dev_minor = found->dev_minor;
	attach(hs, hs->loader_reader, hs->loader_mem, n);
	pthread_mutex_lock(&hs->lock);
	install(hs, n);
	pthread_mutex_unlock(&hs->lock);
}

static void hs_removed(void *rt, pid_t pid)
{
	struct hotspot *hs = rt;

	pthread_mutex_lock(&hs->lock);
	proc_remove(hs, pid);
	pthread_mutex_unlock(&hs->lock);
}

/* tick - JVMs that were not ready: tried again when due. Reader thread. */
static void hs_tick(void *rt)
{
	struct hotspot *hs = rt;
	uint64_t now = now_ns();

	for (size_t b = 0; b < HS_BUCKETS; b++) {
		struct hsproc *p, copy;

		pthread_mutex_lock(&hs->lock);
		for (p = hs->procs[b]; p; p = p->next)
			if (p->state == HS_PENDING && p->next_try_ns <= now)
				break;
		if (p)
			copy = *p;
		pthread_mutex_unlock(&hs->lock);
		if (!p)
			continue;
		attach(hs, hs->reader, hs->mem, &copy);
		pthread_mutex_lock(&hs->lock);
		p = *proc_slot(hs, copy.pid);
		/* still the same pending process (no maps read meanwhile) */
		if (p && p->state == HS_PENDING && p->inode == copy.inode && p->bias == copy.bias) {
			struct hsproc *n = malloc(sizeof(*n));

			if (n) {
				*n = copy;
				install(hs, n);
			}
		}
		pthread_mutex_unlock(&hs->lock);
		now = now_ns();	/* one a bucket a tick: others wait for the next */
	}
}

static struct hs_name *name_slot(struct hotspot *hs, uint64_t gen, uint64_t w0, uint64_t w1)
{
	uint64_t h = (gen * 0x9e3779b97f4a7c15ULL) ^ (w0 * 0xff51afd7ed558ccdULL) ^
		     (w1 * 0xc4ceb9fe1a85ec53ULL);

	return &hs->names[(h ^ (h >> 31)) % HS_NAME_CACHE];
}

static void name_put(struct hotspot *hs, struct hs_name *e, uint64_t gen, uint64_t w0,
		     uint64_t w1, const char *name, const char *file)
{
	char *s = strdup(name), *f = file && *file ? strdup(file) : NULL;

	if (!s || (file && *file && !f)) {
		free(s);
		free(f);
		return;
	}
	if (!e->name)
		hs->nnames++;
	free(e->name);
	free(e->file);
	*e = (struct hs_name){ .gen = gen, .w0 = w0, .w1 = w1, .name = s, .file = f };
}

/*
 * A blob frame's name, or NULL (stale or unverified: counted); *@nmethod:
 * whether it is compiled Java code. Lock held.
 */
static const char *name_blob(struct hotspot *hs, struct hsproc *p, uint64_t w0, uint64_t w1,
			     bool *nmethod, const char **file)
{
	uint64_t blob = w0 & PROFD_HS_ADDR_MASK;
	uint64_t key = w0 & ~(PROFD_HS_INDEX_MASK << PROFD_HS_INDEX_SHIFT);	/* no index */
	struct hs_name *e = name_slot(hs, p->gen, key, w1);
	struct hs_pc_info pi;
	int err;

	if (e->name && e->gen == p->gen && e->w0 == key && e->w1 == w1) {
		*nmethod = e->nmethod;
		*file = e->file;
		return e->name;
	}
	hs_mem_init(hs->mem, hs->reader, p->pid, false);
	err = hs_codecache_pc(hs->mem, &p->off, &p->cc, blob, &pi);
	if (err == -ENOENT && !hs_codecache_read(hs->mem, &p->off, &p->cc))
		err = hs_codecache_pc(hs->mem, &p->off, &p->cc, blob, &pi);	/* heaps grew */
	if (err) {
		counter_inc(err == -ENODATA || err == -ENOENT ? &counter_hotspot_frame_stale
							     : &counter_hotspot_frame_unnamed);
		return NULL;
	}
	/* the blob there now must be the one the walker saw */
	if (pi.blob != blob || (uint32_t)pi.name_addr != (uint32_t)(w1 >> 32) ||
	    (pi.kind == HS_PC_NMETHOD && (uint32_t)pi.compile_id != (uint32_t)w1)) {
		counter_inc(&counter_hotspot_frame_stale);
		return NULL;
	}
	if (pi.kind != HS_PC_NMETHOD) {
		/* a stub, adapter or buffer: "[StubRoutines (1)]", never a method's name */
		char b[HS_CC_NAME_MAX + 2];

		snprintf(b, sizeof(b), "[%s]", pi.name);
		name_put(hs, e, p->gen, key, w1, b, NULL);
	} else {
		name_put(hs, e, p->gen, key, w1, pi.name, pi.file);
		e->nmethod = true;
	}
	*nmethod = pi.kind == HS_PC_NMETHOD;
	*file = e->file;
	return e->name;
}

/*
 * An interpreted frame's name, or NULL (counted). Lock held. The frame
 * (Method*, its class's name Symbol*, bci) names one method while a
 * class of that name keeps that Method*: cached without a look at the
 * live process.
 */
static const char *name_interp(struct hotspot *hs, struct hsproc *p, uint64_t w0, uint64_t w1,
			       int *line, const char **file)
{
	uint64_t method = w0 & PROFD_HS_ADDR_MASK, sym = w1 & PROFD_HS_ADDR_MASK;
	uint32_t bci = (uint32_t)(w1 >> PROFD_HS_BCI_SHIFT);
	struct hs_name *e = name_slot(hs, p->gen, method, w1);
	struct hs_pc_info pi;
	int err;

	if (e->name && e->gen == p->gen && e->w0 == method && e->w1 == w1) {
		*line = e->line;
		*file = e->file;
		return e->name;
	}
	hs_mem_init(hs->mem, hs->reader, p->pid, false);
	err = hs_codecache_method(hs->mem, &p->off, method, &pi);
	if (err) {
		counter_inc(&counter_hotspot_frame_unnamed);
		return NULL;
	}
	/* the method at that address now must be of the class the walker saw */
	/* a native method's frame: a method without bytecodes */
	if (pi.klass_sym != sym ||
	    (bci == PROFD_HS_BCI_NATIVE ? pi.code_size != 0 : bci >= pi.code_size)) {
		counter_inc(&counter_hotspot_frame_stale);
		return NULL;
	}
	*line = bci == PROFD_HS_BCI_NATIVE ? 0 :
		hs_codecache_line(hs->mem, &p->off, method, bci, p->jdk_major);
	if (*line < 0)
		*line = 0;
	name_put(hs, e, p->gen, method, w1, pi.name, pi.file);
	e->line = *line;
	*file = e->file;
	return e->name;
}

/*
 * The tokens of a compiled frame at native index @i (pc @ip as the walker
 * recorded it) named @name: its inlined methods' into @inl (from *@ninl,
 * room for HS_INL_TOKENS), their count in *@k, and its own, returned.
 */
static uint32_t compiled_frame(struct hotspot *hs, struct hsproc *p, uint64_t w0, uint64_t w1,
			       uint64_t ip, uint32_t i, const char *name, const char *file,
			       uint32_t *inl,
			       uint32_t *ninl, uint16_t *k)
{
	bool call = i && !(ip & PROFD_IP_EXACT);	/* a caller: a return address */
	const struct hs_chain *c = NULL;
	const struct hs_chain_frame *f;

	if (p->off.features & HS_FEAT_SCOPES) {
		hs_mem_init(hs->mem, hs->reader, p->pid, false);
		c = hs_chains_get(&hs->chains, hs->mem, &p->off, &p->cc, p->gen, w0, w1,
				  ip & ~PROFD_IP_EXACT, call, p->jdk_major);
	}
	*k = 0;
	if (!c || !c->n) {
		if (c && !c->no_scopes)
			counter_inc(&counter_hotspot_inline_unread);
		return rt_frame_gens_intern(&hs->frames, name, file ? file : "", 0, 0);
	}
	if (*ninl + c->n - 1 > HS_INL_TOKENS) {
		counter_inc(&counter_hotspot_inline_unread);	/* no room: the outer one */
	} else {
		for (uint32_t j = 0; j + 1 < c->n; j++) {
			f = &c->f[j];
			inl[*ninl + j] = rt_frame_gens_intern(&hs->frames, f->name,
							      f->file ? f->file : "", f->line, 0);
		}
		*k = (uint16_t)(c->n - 1);
		*ninl += c->n - 1;
	}
	f = &c->f[c->n - 1];
	return rt_frame_gens_intern(&hs->frames, f->name, f->file ? f->file : "", f->line, 0);
}

static uint32_t merge_locked(struct hotspot *hs, pid_t pid, uint32_t flags,
			     const uint64_t *user, uint32_t nuser, const uint64_t *frames,
			     uint32_t nframes, uint64_t *out, uint32_t cap)
{
	uint32_t ids[PROFD_MAX_USER_FRAMES] = { 0 }, n = 0;
	/* frame i's inlined methods: inl[at[i] ...], k[i] of them, innermost first */
	uint32_t inl[HS_INL_TOKENS], at[PROFD_MAX_USER_FRAMES], ninl = 0;
	uint16_t k[PROFD_MAX_USER_FRAMES] = { 0 };
	struct hsproc *p = *proc_slot(hs, pid);
	uint64_t tag = rt_frame_gens_tag(&hs->frames);

	if (nuser > PROFD_MAX_USER_FRAMES)
		nuser = PROFD_MAX_USER_FRAMES;
	if (nframes > PROFD_MAX_INTERP_FRAMES)
		nframes = PROFD_MAX_INTERP_FRAMES;
	if (p && p->state == HS_ATTACHED && (flags & PROFD_SAMPLE_INTERP)) {
		for (uint32_t f = 0; f < nframes; f++) {
			uint64_t w0 = frames[2 * f], w1 = frames[2 * f + 1];
			uint32_t idx = (uint32_t)(w0 >> PROFD_HS_INDEX_SHIFT & PROFD_HS_INDEX_MASK);
			uint32_t kind = (uint32_t)(w0 >> PROFD_HS_KIND_SHIFT) & 7;
			const char *name = NULL, *file = NULL;
			bool nmethod = false;
			int line = 0;

			if (idx >= nuser || ids[idx])
				continue;
			if (kind == PROFD_HS_FRAME_BLOB) {
				name = name_blob(hs, p, w0, w1, &nmethod, &file);
				if (name && nmethod) {
					at[idx] = ninl;
					ids[idx] = compiled_frame(hs, p, w0, w1, user[idx], idx,
								  name, file, inl, &ninl, &k[idx]);
					continue;
				}
			} else if (kind == PROFD_HS_FRAME_INTERP) {
				name = name_interp(hs, p, w0, w1, &line, &file);
			}
			if (name)
				ids[idx] = rt_frame_gens_intern(&hs->frames, name, file ? file : "",
								line, 0);
		}
	}
	for (uint32_t i = 0; i < nuser && n < cap; i++) {
		if (!ids[i]) {
			out[n++] = user[i] | (i == 0 ? PROFD_IP_EXACT : 0);
			continue;
		}
		/* inlined methods first, while the native frames left still fit */
		if (k[i] && n + k[i] + (nuser - i) <= cap) {
			for (uint32_t j = 0; j < k[i]; j++)
				out[n++] = tag | inl[at[i] + j];
		} else if (k[i]) {
			counter_inc(&counter_hotspot_inline_unread);
		}
		out[n++] = tag | ids[i];
	}
	return n;
}

static uint32_t hs_merge_stack(void *rt, pid_t pid, uint32_t flags, const uint64_t *user,
			       uint32_t nuser, const uint64_t *frames, uint32_t nframes,
			       uint64_t *out, uint32_t cap, uint64_t now)
{
	struct hotspot *hs = rt;
	uint32_t n;

	(void)now;
	pthread_mutex_lock(&hs->lock);
	n = merge_locked(hs, pid, flags, user, nuser, frames, nframes, out, cap);
	pthread_mutex_unlock(&hs->lock);
	return n;
}

static int hs_frame(void *rt, uint64_t token, struct runtime_frame *out)
{
	struct hotspot *hs = rt;
	struct rt_frame f;

	if (rt_frame_gens_get(&hs->frames, token, &f))
		return -ENOENT;
	out->function = f.function;
	out->file = f.file;
	out->line = f.line;
	return 0;
}

static void hs_new_interval(void *rt)
{
	struct hotspot *hs = rt;

	rt_frame_gens_new_interval(&hs->frames);
}

static void hs_stats(void *rt, struct runtime_stats *out)
{
	struct hotspot *hs = rt;

	out->processes = __atomic_load_n(&hs->nprocs, __ATOMIC_RELAXED);
	out->objects = hs->nnames + hs->chains.n;	/* racy: fine for stats */
	out->bytes = rt_frame_gens_bytes(&hs->frames) + sizeof(*hs) +
		     hs->nnames * HS_CC_NAME_MAX / 4 + hs->chains.bytes;
	out->evictions = 0;
}

static void hs_destroy(void *rt)
{
	struct hotspot *hs = rt;

	if (!hs)
		return;
	rt_file_cache_clear(&hs->det);
	for (size_t b = 0; b < HS_BUCKETS; b++) {
		struct hsproc *p = hs->procs[b], *next;

		for (; p; p = next) {
			next = p->next;
			free(p);
		}
	}
	for (size_t i = 0; i < HS_NAME_CACHE; i++) {
		free(hs->names[i].name);
		free(hs->names[i].file);
	}
	hs_chains_clear(&hs->chains);
	remote_reader_free(hs->loader_reader);
	remote_reader_free(hs->reader);
	free(hs->loader_mem);
	free(hs->mem);
	rt_frame_gens_fini(&hs->frames);
	pthread_mutex_destroy(&hs->lock);
	free(hs);
}

static void *hs_create(const struct runtime_env *env)
{
	struct hotspot *hs = calloc(1, sizeof(*hs));
	uint64_t budget = env->budget ? env->budget : HS_BUDGET;

	if (!hs)
		return NULL;
	pthread_mutex_init(&hs->lock, NULL);
	hs->procs_fd = env->procs_fd;
	hs->verbose = env->verbose;
	rt_file_cache_init(&hs->det, sizeof(struct hs_detected), detect_fd);
	hs->loader_reader = remote_reader_new();
	hs->reader = remote_reader_new();
	hs->loader_mem = calloc(1, sizeof(*hs->loader_mem));
	hs->mem = calloc(1, sizeof(*hs->mem));
	if (!hs->loader_reader || !hs->reader || !hs->loader_mem || !hs->mem ||
	    rt_frame_gens_init(&hs->frames, &hs_frame_kind, budget / 4)) {
		hs_destroy(hs);
		return NULL;
	}
	remote_reader_count_timeouts(hs->loader_reader, &counter_hotspot_read_timeout);
	remote_reader_count_timeouts(hs->reader, &counter_hotspot_read_timeout);
	return hs;
}

const struct runtime_ops hotspot_runtime_ops = {
	.name = "hotspot",
	.id = PROFD_RUNTIME_HOTSPOT,
	.mapping = "[hotspot]",
	.objects = "hotspot_names",
	.fast_poll = false,
	.create = hs_create,
	.destroy = hs_destroy,
	.maps_read = hs_maps_read,
	.removed = hs_removed,
	.merge_stack = hs_merge_stack,
	.frame = hs_frame,
	.new_interval = hs_new_interval,
	.tick = hs_tick,
	.stats = hs_stats,
};
