// SPDX-License-Identifier: GPL-2.0
/*
 * v8.c - V8 (Node) processes: recognising V8 in a process's mapped files,
 * the process table and its runtime_procs entries (see v8.h). Naming and
 * the merge are merge.c's.
 *
 * A mapped file holds V8 when it has V8's postmortem metadata
 * (metadata.c: `v8dbg_HeapObjectTag` among its symbols; node, libnode),
 * read once per file (rt_file_cache), with the interpreter's address
 * ranges from its symbols: Builtins_InterpreterEntryTrampoline*,
 * Builtins_InterpreterEnterAt* (where interpreted frames return to) and
 * the bytecode handlers, Builtins_*Handler. A process mapping such a
 * file, whose layout has frames and names, gets a runtime_procs entry
 * (bpf/unwind_v8.h) on every maps read (an exec deleted it) and a copy
 * of its mappings; a new generation whenever it is new or its V8 object
 * changed (the name cache's key). Layouts that cannot name (a pointer
 * compressed heap, missing symbols) are counted and left native.
 */
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "bpf/profd.h"
#include "bpf/unwind_v8.h"
#include "counters/counters.h"
#include "proc/maps.h"
#include "proc/remote.h"
#include "runtime/elf_detect.h"
#include "v8/v8.h"
#include "v8/code.h"
#include "v8/v8_internal.h"

COUNTER_DEFINE(v8_read_timeout, COUNTER_PARTIAL,
	       "node processes whose memory reads were abandoned or over the remote reader's time budget (shunned 10 s: their JS frames go unnamed meanwhile)");
COUNTER_DEFINE_BPF(v8_samples, COUNTER_STAT, PROFD_CNT_V8_SAMPLES,
		   "samples of V8 (Node) processes walked");
COUNTER_DEFINE_BPF(v8_js_frames, COUNTER_STAT, PROFD_CNT_V8_FRAMES,
		   "JS frames the V8 walker recorded");
COUNTER_DEFINE_BPF(v8_slots_not_js, COUNTER_STAT, PROFD_CNT_V8_NOT_JS,
		   "V8 walker frames whose slots held heap objects of other types: left native");
COUNTER_DEFINE_BPF(v8_stack_truncated, COUNTER_PARTIAL, PROFD_CNT_V8_TRUNCATED,
		   "V8 samples with more frames than walked or kept: the rest stay native");
COUNTER_DEFINE_BPF(v8_leaf_no_frame, COUNTER_STAT, PROFD_CNT_V8_PROLOGUE,
		   "V8 samples whose leaf frame at rbp had its slots not pushed yet: not recorded");
COUNTER_DEFINE_BPF(v8_object_read_error, COUNTER_PARTIAL, PROFD_CNT_V8_OBJ_READ,
		   "V8 frames whose Context, JSFunction or SharedFunctionInfo BPF could not read: left native");
COUNTER_DEFINE_BPF(v8_walks_from_native, COUNTER_STAT, PROFD_CNT_V8_FROM_NATIVE,
		   "V8 walks started at the first native frame keeping a frame pointer (a leaf in C++ code)");
COUNTER_DEFINE(v8_unsupported, COUNTER_STAT,
	       "V8 processes whose layout cannot name frames (pointer compression, missing symbols): native only");
COUNTER_DEFINE(v8_update_error, COUNTER_PARTIAL,
	       "runtime_procs updates for V8 processes that failed");
COUNTER_DEFINE(v8_maps_dropped, COUNTER_PARTIAL,
	       "mappings of V8 processes past the 8192 kept: their pcs are not classified");

static bool prefix(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

static bool suffix(const char *s, const char *p)
{
	size_t n = strlen(s), k = strlen(p);

	return n >= k && !strcmp(s + n - k, p);
}

/* The interpreter kind of builtin symbol @name, or V8_PC_OTHER. */
static enum v8_pc_kind builtin_kind(const char *name)
{
	if (!prefix(name, "Builtins_"))
		return V8_PC_OTHER;
	if (prefix(name, "Builtins_InterpreterEntryTrampoline") ||
	    prefix(name, "Builtins_InterpreterEnterAt"))
		return V8_PC_TRAMPOLINE;
	if (suffix(name, "Handler"))
		return V8_PC_HANDLER;
	return V8_PC_OTHER;
}

static int cmp_range(const void *a, const void *b)
{
	const struct v8_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Add the builtin ranges of @elf's first table of @type to @all (@n of @cap). */
static int table_ranges(Elf *elf, Elf64_Word type, struct v8_range **all, size_t *n,
			size_t *cap)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	size_t count;

	while ((scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			break;
	if (!scn || !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
		return 0;
	count = d->d_size / sh.sh_entsize;
	for (size_t i = 1; i < count && i < (1u << 24); i++) {
		GElf_Sym sym;
		const char *name;
		enum v8_pc_kind k;

		if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    !sym.st_size || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name || (k = builtin_kind(name)) == V8_PC_OTHER)
			continue;
		if (*n == *cap) {
			size_t c = *cap ? *cap * 2 : 512;
			struct v8_range *g = realloc(*all, c * sizeof(**all));

			if (!g)
				return -ENOMEM;
			*all = g;
			*cap = c;
		}
		(*all)[(*n)++] = (struct v8_range){ sym.st_value, sym.st_value + sym.st_size, k };
	}
	return 0;
}

/*
 * The interpreter ranges of @fd's symbol tables into @b (merged by kind).
 * Each table is read in an ELF session of its own, ended before the next:
 * libelf keeps what it read until elf_end(), and node's two tables with
 * their strings are 17 MiB.
 */
static void read_ranges(int fd, struct v8_binary *b)
{
	static const Elf64_Word types[2] = { SHT_DYNSYM, SHT_SYMTAB };
	struct v8_range *all = NULL;
	size_t n = 0, cap = 0;

	b->nranges = 0;
	for (int t = 0; t < 2; t++) {
		Elf *elf;
		int err;

		if (runtime_elf_begin(fd, &elf) != 1)
			break;
		err = table_ranges(elf, types[t], &all, &n, &cap);
		elf_end(elf);
		if (err)
			goto out;
	}
	if (!n)
		goto out;
	qsort(all, n, sizeof(*all), cmp_range);
	/* neighbours of one kind (alignment gaps < 64 bytes) are one range;
	 * ranges past V8_RANGES_MAX are left out (their pcs stay native) */
	for (size_t i = 0; i < n; i++) {
		struct v8_range *last = b->nranges ? &b->ranges[b->nranges - 1] : NULL;

		if (last && last->kind == all[i].kind && all[i].start <= last->end + 64) {
			if (all[i].end > last->end)
				last->end = all[i].end;
			continue;
		}
		if (b->nranges == V8_RANGES_MAX)
			break;
		b->ranges[b->nranges++] = all[i];
	}
out:
	free(all);
}

/* rt_detect_fn of V8. */
static int detect_fd(int fd, struct rt_file *f)
{
	struct v8_binary *b = (struct v8_binary *)f;
	int ret = v8_metadata_read_fd(fd, &b->l);

	if (ret != 1)
		return ret;
	read_ranges(fd, b);
	return (b->l.features & (V8_FEAT_FRAMES | V8_FEAT_NAMES)) ==
	       (V8_FEAT_FRAMES | V8_FEAT_NAMES) ? 1 : -ENOTSUP;
}

struct v8 *v8_new(int procs_fd, uint64_t budget, int verbose)
{
	struct v8 *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	pthread_mutex_init(&v->lock, NULL);
	v->procs_fd = procs_fd;
	v->verbose = verbose;
	rt_file_cache_init(&v->det, sizeof(struct v8_binary), detect_fd);
	if (!(v->reader = remote_reader_new()) || v8_merge_init(v, budget)) {
		v8_free(v);
		return NULL;
	}
	remote_reader_count_timeouts(v->reader, &counter_v8_read_timeout);
	return v;
}

static void proc_free(struct v8proc *p)
{
	free(p->maps);
	free(p->code_cache);
	free(p);
}

void v8_free(struct v8 *v)
{
	if (!v)
		return;
	for (size_t b = 0; b < V8_BUCKETS; b++) {
		struct v8proc *p = v->procs[b], *next;

		for (; p; p = next) {
			next = p->next;
			proc_free(p);
		}
	}
	rt_file_cache_clear(&v->det);
	v8_merge_fini(v);
	remote_reader_free(v->reader);
	pthread_mutex_destroy(&v->lock);
	free(v);
}

struct v8proc **v8_proc_slot(struct v8 *v, pid_t pid)
{
	struct v8proc **pp = &v->procs[(uint32_t)pid & (V8_BUCKETS - 1)];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

/* pt_regs offset of x86-64 register code @code (0 rax ... 15 r15), 0xffff if none. */
static uint16_t pt_regs_offset(int code)
{
	/* struct pt_regs: r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di ... */
	static const int8_t slot[16] = { 10, 11, 12, 5, -1, 4, 13, 14, 9, 8, 7, 6, 3, 2, 1, 0 };

	if (code < 0 || code > 15 || slot[code] < 0)
		return 0xffff;
	return (uint16_t)(slot[code] * 8);
}

/* @l as the walker's state; false when it does not fit its bounds. */
static bool bpf_state(const struct v8_layout *l, struct profd_v8_proc *s)
{
	memset(s, 0, sizeof(*s));
	if (l->fp_context < -PROFD_V8_FP_BELOW || l->fp_context > -8 ||
	    l->fp_function < -PROFD_V8_FP_BELOW || l->fp_function > -8 ||
	    l->fp_bytecode_array < -PROFD_V8_FP_BELOW || l->fp_bytecode_array > -8 ||
	    l->fp_bytecode_offset < -PROFD_V8_FP_BELOW || l->fp_bytecode_offset > -8 ||
	    l->js_function_shared > PROFD_V8_FN_READ - 8 ||
	    l->sfi_name_or_scope_info > PROFD_V8_SFI_READ - 8 ||
	    l->sfi_script_or_debug_info > PROFD_V8_SFI_READ - 8 ||
	    l->heap_object_tag > 255 || l->heap_object_tag_mask > 255 ||
	    l->smi_tag > 255 || l->smi_tag_mask > 255 || l->smi_shift > 63)
		return false;
	s->fp_context = (int8_t)l->fp_context;
	s->fp_function = (int8_t)l->fp_function;
	s->fp_bytecode_array = (int8_t)l->fp_bytecode_array;
	s->fp_bytecode_offset = (int8_t)l->fp_bytecode_offset;
	s->heap_tag = (uint8_t)l->heap_object_tag;
	s->heap_tag_mask = (uint8_t)l->heap_object_tag_mask;
	s->smi_tag = (uint8_t)l->smi_tag;
	s->smi_tag_mask = (uint8_t)l->smi_tag_mask;
	s->smi_shift = (uint8_t)l->smi_shift;
	s->map = l->heap_object_map;
	s->map_instance_type = l->map_instance_type;
	s->fn_shared = l->js_function_shared;
	s->sfi_name = l->sfi_name_or_scope_info;
	s->sfi_script = l->sfi_script_or_debug_info;
	s->t_js_function = l->t_js_function;
	s->t_js_function_last = l->t_js_function_last;
	s->t_sfi = l->t_sfi;
	s->first_context = l->first_context;
	s->last_context = l->last_context;
	s->offset_reg = pt_regs_offset(l->offset_register);
	return true;
}

/* Write @p's runtime_procs entry: 0 (also without BPF), or -1. */
static int entry_write(struct v8 *v, const struct v8proc *p)
{
	struct profd_runtime_proc rp = { .runtime = PROFD_RUNTIME_V8 };
	struct profd_v8_proc s;
	__u32 key = (__u32)p->pid;

	if (v->procs_fd < 0)
		return 0;
	if (!bpf_state(&p->bin.l, &s))
		return -1;
	memcpy(rp.state, &s, sizeof(s));
	return bpf_map_update_elem(v->procs_fd, &key, &rp, BPF_ANY) ? -1 : 0;
}

/* Forget @pid: its entry (ours) goes, its names with it. Lock held. */
static void proc_remove(struct v8 *v, pid_t pid)
{
	struct v8proc **pp = v8_proc_slot(v, pid), *p = *pp;
	__u32 key = (__u32)pid;

	if (!p)
		return;
	if (v->procs_fd >= 0)
		bpf_map_delete_elem(v->procs_fd, &key);
	if (v->ndead < V8_DEAD_GENS_MAX)
		v->dead_gens[v->ndead++] = p->gen;
	*pp = p->next;
	proc_free(p);
	__atomic_sub_fetch(&v->nprocs, 1, __ATOMIC_RELAXED);
}

/* @maps as @p's copy (the V8 object: @obj's file). 0 or -ENOMEM. */
static int copy_maps(struct v8proc *p, const struct proc_maps *maps,
		     const struct proc_mapping *obj)
{
	size_t n = maps->n < V8_MAPS_MAX ? maps->n : V8_MAPS_MAX;
	struct v8_map *m = calloc(n ? n : 1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	if (maps->n > n)
		counter_add(&counter_v8_maps_dropped, maps->n - n);
	for (size_t i = 0; i < n; i++) {
		const struct proc_mapping *s = &maps->v[i];

		m[i].start = s->start;
		m[i].end = s->end;
		m[i].offset = s->offset;
		m[i].anon = !s->inode && !s->special && !s->path[0];
		m[i].exec = s->executable;
		m[i].v8obj = s->inode == obj->inode && s->dev_major == obj->dev_major &&
			     s->dev_minor == obj->dev_minor;
	}
	free(p->maps);
	p->maps = m;
	p->nmaps = n;
	return 0;
}

void v8_maps_read(struct v8 *v, pid_t pid, const struct proc_maps *maps)
{
	const struct proc_mapping *found = NULL;
	struct v8_binary *b;
	struct v8proc *p;
	uint64_t bias = 0;

	b = (struct v8_binary *)rt_file_find(&v->det, pid, maps, &found, &bias);
	pthread_mutex_lock(&v->lock);
	p = *v8_proc_slot(v, pid);
	if (!b || b->f.result != 1) {
		if (b && !p) {
			counter_inc(&counter_v8_unsupported);
			if (v->verbose)
				fprintf(stderr, "profd: pid %d: V8 %u.%u in %s cannot be walked "
					"(%s%s): native frames only\n", (int)pid, b->l.major,
					b->l.minor, found->path, b->l.nmissing ? "missing " : "layout",
					b->l.missing);
		}
		if (p)	/* it ran V8 and no longer does (exec) */
			proc_remove(v, pid);
		pthread_mutex_unlock(&v->lock);
		return;
	}
	if (p && (p->inode != found->inode || p->dev_major != found->dev_major ||
		  p->dev_minor != found->dev_minor)) {
		proc_remove(v, pid);
		p = NULL;
	}
	if (!p) {
		if (!(p = calloc(1, sizeof(*p))) ||
		    !(p->code_cache = calloc(1, sizeof(*p->code_cache)))) {
			free(p);
			pthread_mutex_unlock(&v->lock);
			return;
		}
		p->pid = pid;
		p->gen = ++v->next_gen;
		p->dev_major = found->dev_major;
		p->dev_minor = found->dev_minor;
		p->inode = found->inode;
		p->bin = *b;
		p->next = v->procs[(uint32_t)pid & (V8_BUCKETS - 1)];
		v->procs[(uint32_t)pid & (V8_BUCKETS - 1)] = p;
		__atomic_add_fetch(&v->nprocs, 1, __ATOMIC_RELAXED);
		if (v->verbose)
			fprintf(stderr, "profd: pid %d: V8 %u.%u.%u in %s\n", (int)pid,
				b->l.major, b->l.minor, b->l.build, found->path);
	}
	if (copy_maps(p, maps, found) || entry_write(v, p))
		counter_inc(&counter_v8_update_error);
	pthread_mutex_unlock(&v->lock);
}

void v8_removed(struct v8 *v, pid_t pid)
{
	pthread_mutex_lock(&v->lock);
	proc_remove(v, pid);
	pthread_mutex_unlock(&v->lock);
}

/* The mapping of @p holding @addr, or NULL. */
static const struct v8_map *map_of(const struct v8proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

enum v8_pc_kind v8_classify(const struct v8proc *p, uint64_t pc)
{
	const struct v8_map *m = map_of(p, pc);
	uint64_t off, vaddr = 0;
	bool found = false;

	if (!m)
		return V8_PC_OTHER;
	if (m->anon)
		return V8_PC_JIT;
	if (!m->v8obj)
		return V8_PC_OTHER;
	/*
	 * By file offset: V8 maps its builtins' pages a second time near its
	 * JIT code (short builtin calls) and runs them there.
	 */
	off = pc - m->start + m->offset;
	for (uint32_t i = 0; i < p->bin.f.nloads && !found; i++) {
		if (off >= p->bin.f.loads[i].offset &&
		    off - p->bin.f.loads[i].offset < p->bin.f.loads[i].filesz) {
			vaddr = p->bin.f.loads[i].vaddr + (off - p->bin.f.loads[i].offset);
			found = true;
		}
	}
	if (!found)
		return V8_PC_OTHER;
	for (uint32_t i = 0; i < p->bin.nranges; i++)
		if (vaddr >= p->bin.ranges[i].start && vaddr < p->bin.ranges[i].end)
			return p->bin.ranges[i].kind;
	return V8_PC_OTHER;
}

bool v8_exec_addr(const struct v8proc *p, uint64_t addr)
{
	const struct v8_map *m = map_of(p, addr);

	return m && m->exec;
}

bool v8_own_code(const struct v8proc *p, uint64_t addr)
{
	const struct v8_map *m = map_of(p, addr);

	return m && m->exec && (m->anon || m->v8obj);
}

uint64_t v8_processes(struct v8 *v)
{
	return __atomic_load_n(&v->nprocs, __ATOMIC_RELAXED);
}
