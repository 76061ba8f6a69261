// SPDX-License-Identifier: GPL-2.0
/*
 * callsite.c - the return-address check and its verdict cache (see
 * callsite.h for the rule and where the bytes come from).
 *
 * Owns: the x86-64 call decoder (callsite_x86_after_call(), a pure
 * function the unit test drives with real call sites), reading the code
 * bytes before a return address (the object's file, else process memory)
 * and the two-way set-associative cache of verdicts keyed by (device,
 * inode, file offset): a file-backed library's call sites are the same in
 * every process that maps it, so the cache is shared by all.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "bpf/profd.h"
#include "counters/counters.h"
#include "proc/process.h"
#include "runtime/runtime.h"
#include "symbol/symbolizer.h"
#include "unwind/callsite.h"

COUNTER_DEFINE(unwind_unverified_caller, COUNTER_PARTIAL,
	       "stacks cut at a caller that is not after a call instruction in an "
	       "executable mapping (it and its callers dropped; ends in [truncated])");
COUNTER_DEFINE(unwind_callsite_unchecked, COUNTER_STAT,
	       "callers kept unchecked: in an executable mapping, but its code "
	       "unreadable (process gone, JIT region gone, hung file)");
COUNTER_DEFINE(unwind_callsite_evictions, COUNTER_STAT,
	       "call-site verdicts pushed out of the cache");

/*
 * Length of the ModRM byte at @m and what follows it (SIB, displacement)
 * in 64-bit mode, from the @avail bytes there; 0 when a needed SIB byte
 * is past them. Intel SDM vol. 2, 2.1.5 and 2.2.1.6 (RIP-relative: mod 00,
 * r/m 101; REX.B does not change the SIB and RIP-relative cases).
 */
static size_t modrm_len(const uint8_t *m, size_t avail)
{
	unsigned int mod = m[0] >> 6, rm = m[0] & 7;
	size_t disp = mod == 1 ? 1 : mod == 2 ? 4 : 0;

	if (mod == 3)
		return 1;
	if (rm == 4) {
		if (avail < 2)
			return 0;
		if (mod == 0 && (m[1] & 7) == 5)
			disp = 4;	/* SIB, no base: disp32 */
		return 2 + disp;
	}
	if (mod == 0 && rm == 5)
		return 5;	/* RIP-relative disp32 */
	return 1 + disp;
}

/* callsite_x86_after_call - see callsite.h. */
bool callsite_x86_after_call(const uint8_t *code, size_t n, uint64_t ra,
			     callsite_target_fn target_ok, void *ctx)
{
	if (n > CALLSITE_WINDOW) {
		code += n - CALLSITE_WINDOW;
		n = CALLSITE_WINDOW;
	}
	if (n >= 5 && code[n - 5] == 0xe8) {
		int32_t rel;

		memcpy(&rel, code + n - 4, sizeof(rel));
		if (!target_ok || target_ok(ctx, ra + (uint64_t)(int64_t)rel))
			return true;
	}
	/* FF /2: opcode, ModRM, [SIB], [disp8|disp32]: 2 to 7 bytes */
	for (size_t len = 2; len <= 7 && len <= n; len++) {
		const uint8_t *p = code + n - len;

		if (p[0] == 0xff && ((p[1] >> 3) & 7) == 2 &&
		    modrm_len(p + 1, len - 1) == len - 1)
			return true;
	}
	return false;
}

enum verdict {
	V_NONE,		/* not cached */
	V_OK,
	V_BAD,
	V_UNCHECKED,	/* unreadable: kept, not cached */
	V_BAD_FOR_NOW,	/* cut, not cached: the file is not open yet */
};

struct slot {
	uint64_t dev;		/* major << 32 | minor; ~0: the vDSO */
	uint64_t inode;
	uint64_t off;		/* file offset of the return address */
	uint8_t verdict;	/* enum verdict: V_NONE is an empty slot */
	uint8_t recent;		/* the set's most recently used way */
};

struct callsite_cache {
	struct slot *slots;	/* nsets * 2 */
	uint32_t nsets;		/* power of two */
};

struct callsite_cache *callsite_cache_new(uint32_t slots)
{
	struct callsite_cache *c = calloc(1, sizeof(*c));
	uint32_t sets = 32;

	while (sets * 2 < slots && sets < (1u << 24))
		sets <<= 1;
	if (!c || !(c->slots = calloc((size_t)sets * 2, sizeof(*c->slots)))) {
		free(c);
		return NULL;
	}
	c->nsets = sets;
	return c;
}

void callsite_cache_free(struct callsite_cache *c)
{
	if (!c)
		return;
	free(c->slots);
	free(c);
}

static struct slot *cache_set(struct callsite_cache *c, uint64_t dev,
			      uint64_t inode, uint64_t off)
{
	uint64_t h = (dev * 0x9e3779b97f4a7c15ULL) ^ (inode * 0xc2b2ae3d27d4eb4fULL) ^ off;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return &c->slots[(h & (c->nsets - 1)) * 2];
}

static enum verdict cache_get(struct callsite_cache *c, uint64_t dev,
			      uint64_t inode, uint64_t off)
{
	struct slot *s = cache_set(c, dev, inode, off);

	for (int w = 0; w < 2; w++)
		if (s[w].verdict && s[w].off == off && s[w].inode == inode &&
		    s[w].dev == dev) {
			s[0].recent = (uint8_t)w;
			return s[w].verdict;
		}
	return V_NONE;
}

static void cache_put(struct callsite_cache *c, uint64_t dev, uint64_t inode,
		      uint64_t off, enum verdict v)
{
	struct slot *s = cache_set(c, dev, inode, off);
	int w = !s[0].verdict ? 0 : !s[1].verdict ? 1 : !s[0].recent;

	if (s[w].verdict)
		counter_inc(&counter_unwind_callsite_evictions);
	s[w] = (struct slot){ .dev = dev, .inode = inode, .off = off, .verdict = (uint8_t)v };
	s[0].recent = (uint8_t)w;
}

static bool in_exec_mapping(void *ctx, uint64_t addr)
{
	const struct proc_mapping *m = proc_maps_find(ctx, addr);

	return m && m->executable;
}

/*
 * The up to CALLSITE_WINDOW bytes before @ra in mapping @idx of @snap
 * (not before the mapping's start) into @buf: from the object's file when
 * it is open (from the page cache only: the reader never waits for
 * storage), else from the memory of process @pid unless the file hung.
 * Returns the bytes read, or < 0.
 */
static ssize_t read_code(const struct proc_snapshot *snap, pid_t pid, int idx,
			 uint64_t ra, uint8_t *buf)
{
	const struct proc_mapping *m = &snap->maps.v[idx];
	uint64_t from = ra - m->start > CALLSITE_WINDOW ? ra - CALLSITE_WINDOW : m->start;
	size_t len = (size_t)(ra - from);
	enum proc_obj_state state = PROC_OBJ_NONE;
	struct sym_object *o = m->inode || m->special ?
			       proc_snapshot_object(snap, idx, &state) : NULL;
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)from, .iov_len = len };
	ssize_t n;

	if (o) {
		n = sym_object_read(o, from - m->start + m->offset, buf, len);
		if (n == (ssize_t)len || n == -EAGAIN)
			return n;	/* not cached: not mapped either, memory would wait too */
	}
	if (state == PROC_OBJ_HUNG || pid <= 0)
		return -EIO;	/* hung, or no process holds this image's code */
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n == (ssize_t)len ? n : -EFAULT;
}

/*
 * Go plants a return address that follows no call: every goroutine's
 * first frame returns to runtime.goexit + 1, past its leading NOP
 * (runtime/asm_amd64.s: goexit is `BYTE $0x90` then CALL goexit1), so
 * that stacks end in goexit. It is the runtime's true bottom, not a
 * wrong caller: accepted when the function at file offset @nop_off (a
 * NOP) of mapping @idx is named so. Cut while the file is not open
 * (its symbols unknown), without caching the verdict.
 */
static enum verdict go_goexit(const struct proc_snapshot *snap, int idx, uint64_t nop_off)
{
	struct sym_object *o = proc_snapshot_object(snap, idx, NULL);
	struct sym_result r;
	bool goexit = false;

	if (!o)
		return V_BAD_FOR_NOW;
	pthread_mutex_lock(snap->sym_lock);
	if (!sym_object_resolve(o, nop_off, &r) && r.system_name)
		goexit = !strcmp(r.system_name, "runtime.goexit.abi0") ||
			 !strcmp(r.system_name, "runtime.goexit");
	pthread_mutex_unlock(snap->sym_lock);
	return goexit ? V_OK : V_BAD;
}

/* The verdict on return address @ra of @snap's process. */
static enum verdict check(struct callsite_cache *c, const struct proc_snapshot *snap,
			  pid_t pid, uint64_t ra)
{
	/* the call's last byte: a call may end its mapping */
	const struct proc_mapping *m = proc_maps_find(&snap->maps, ra - 1);
	uint8_t buf[CALLSITE_WINDOW];
	bool vdso, cached;
	uint64_t dev, off;
	enum verdict v;
	ssize_t n;

	if (!m || !m->executable)
		return V_BAD;
	vdso = m->special && !strcmp(m->path, "[vdso]");
	cached = m->inode || vdso;	/* anonymous (JIT) code may change */
	dev = vdso ? ~0ULL : (uint64_t)m->dev_major << 32 | m->dev_minor;
	off = ra - m->start + m->offset;
	if (cached && (v = cache_get(c, dev, m->inode, off)) != V_NONE)
		return v;
	n = read_code(snap, pid, (int)(m - snap->maps.v), ra, buf);
	if (n < 0)
		return V_UNCHECKED;	/* not cached: the file may open later */
	v = callsite_x86_after_call(buf, (size_t)n, ra, in_exec_mapping,
				    (void *)&snap->maps) ? V_OK : V_BAD;
	if (v == V_BAD && n && buf[n - 1] == 0x90)
		v = go_goexit(snap, (int)(m - snap->maps.v), off - 1);
	if (cached && v != V_BAD_FOR_NOW)
		cache_put(c, dev, m->inode, off, v);
	return v;
}

/* callsite_verify - see callsite.h. */
uint32_t callsite_verify(struct callsite_cache *c, const struct proc_snapshot *snap,
			 pid_t pid, const uint64_t *ips, uint32_t nuser, bool outermost)
{
	for (uint32_t i = 1; i < nuser; i++) {
		uint64_t ip = ips[i];
		const struct proc_mapping *m;

		if (runtime_ip_ops(ip))
			continue;
		if (!snap || !c) {
			counter_inc(&counter_unwind_callsite_unchecked);
			continue;
		}
		if ((ip & PROFD_IP_EXACT) || (outermost && i == nuser - 1)) {
			/*
			 * no call before it (an interrupted pc; a bottom frame
			 * the tables call outermost), but code all the same
			 */
			m = proc_maps_find(&snap->maps, ip & ~PROFD_IP_EXACT);
			if (m && m->executable)
				continue;
			counter_inc(&counter_unwind_unverified_caller);
			return i;
		}
		switch (check(c, snap, pid, ip)) {
		case V_BAD:
		case V_BAD_FOR_NOW:
			counter_inc(&counter_unwind_unverified_caller);
			return i;
		case V_UNCHECKED:
			counter_inc(&counter_unwind_callsite_unchecked);
			break;
		default:
			break;
		}
	}
	return nuser;
}
