/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scopes.h - the Java methods at a pc of compiled code: the nmethod's own
 * and those the compiler inlined there, innermost first, each with its bci
 * and source line, read from the nmethod's debug info in the live JVM.
 *
 * Owns: the walk HotSpot does for a compiled frame's vframes
 * (nmethod::pc_desc_at() / pc_desc_near(), ScopeDesc::decode_body(),
 * ScopeDesc::sender()): the nmethod's PcDesc table (pc offsets from
 * code_begin(), sorted, a sentinel at -1 first and one at the end) gives
 * the pc's scope decode offset into the scopes data, a stream of
 * UNSIGNED5 numbers (CompressedReadStream); at each offset: the sender's
 * (the caller scope's) offset, 0 at the outermost, the Method* as an
 * index into the nmethod's metadata (1-based), the bci + 1, then three
 * offsets of values profd does not read. Where the tables lie differs
 * by JDK (offsets.h).
 *
 * Which PcDesc: a caller's frame has a return address, where the JVM
 * recorded the call's scopes exactly (pc_desc_at()). A leaf's pc lies
 * anywhere: HotSpot's pc_desc_near() takes the first PcDesc at or after
 * it, exact only with -XX:+DebugNonSafepoints (else the next safepoint,
 * possibly in another inlined method). Here a leaf keeps only the scopes
 * that PcDesc and the one before it agree on (from the outermost: the
 * same method, and the same bci in each outer level), the line of the
 * innermost kept only where both agree on its bci too: fewer inlined
 * frames, never one the pc is not in.
 *
 * Checked: every table in its nmethod's bounds (17: the blob; 25: its
 * immutable and mutable data sizes), PcDescs in order around the pc,
 * decode offsets inside the scopes data and each sender's before its
 * callee's (so the chain ends), at most HS_SCOPES_MAX levels, metadata
 * indexes inside the metadata, each Method* named as codecache.c checks
 * methods (holder class, name Symbol) with its bci inside its bytecodes,
 * the outermost the nmethod's own method, and the nmethod's header read
 * the same before and after (its compile id: a flushed nmethod's debug
 * info is never read as another's).
 *
 * Also owns struct hs_chains, the scopes of the compiled pcs seen, cached
 * by the sample's stamps of the nmethod (bpf/unwind_hotspot.h) and pc.
 *
 * Threads: one caller at a time per struct hs_mem and struct hs_chains.
 */
#ifndef PROFD_HOTSPOT_SCOPES_H
#define PROFD_HOTSPOT_SCOPES_H

#include <stdbool.h>
#include <stdint.h>

#include "hotspot/codecache.h"
#include "hotspot/offsets.h"

struct hs_mem;

#define HS_SCOPES_MAX		32	/* levels at one pc: C2's MaxInlineLevel is 15 */
#define HS_SCOPES_PCDESCS_MAX	(1u << 20)	/* PcDescs of one nmethod */
#define HS_SCOPES_DATA_MAX	(64u << 20)	/* bytes of any one debug info table */

struct hs_scope {
	uint64_t method;		/* Method* */
	int32_t bci;			/* -1: the method's entry */
	int line;			/* 0: unknown */
	char name[HS_CC_NAME_MAX];	/* "java.util.HashMap.get" */
	char file[HS_CC_FILE_MAX];	/* "HashMap.java", "" unknown */
};

/*
 * hs_scopes_at - the scopes at @pc in the nmethod @nm (what
 * hs_codecache_pc() gave for it: kind HS_PC_NMETHOD, verified), innermost
 * first, into @out (@cap of them, at most HS_SCOPES_MAX used); the last
 * is @nm's own method. @call: @pc is a return address (a caller's
 * frame: its own PcDesc; a call without one, into a stub, is read as a
 * leaf pc), else a leaf's pc (see above). @jdk_major: the JVM's major
 * version (the stream's encoding and the line tables'). Needs
 * HS_FEAT_SCOPES. Returns how many (>= 1), or -ENOTSUP (feature off, or
 * a native method's wrapper: no debug info), -E2BIG (more than @cap levels), -EPROTO (memory
 * contradicts the layout, or the nmethod changed while read), or a read
 * error. Not counted: the caller counts what it loses.
 */
int hs_scopes_at(struct hs_mem *m, const struct hs_offsets *o, const struct hs_pc_info *nm,
		 uint64_t pc, bool call, int jdk_major, struct hs_scope *out, uint32_t cap);

/* One compiled pc's scopes as hs_chains_get() keeps them: strings owned. */
struct hs_chain_frame {
	char *name, *file;	/* file NULL when unknown */
	int line;		/* 0: unknown */
};

struct hs_chain {
	uint64_t gen, w0, w1, pc;	/* the key: w0 without its index; pc | a call bit */
	uint32_t n;			/* frames, innermost first; 0: unread */
	bool no_scopes;			/* n 0 by design: no debug info there (a native
					 * method's wrapper, or scopes off): not a loss */
	bool used;			/* false: an empty slot */
	struct hs_chain_frame *f;
};

#define HS_CHAINS		8192	/* entries, direct-mapped */

struct hs_chains {
	struct hs_chain e[HS_CHAINS];
	uint64_t n, bytes;		/* slots used, heap bytes of their frames */
};

struct hs_codecache;

/*
 * hs_chains_get - the scopes at @pc of the nmethod frame a sample
 * recorded as (@w0, @w1) (bpf/unwind_hotspot.h) in the JVM of attach
 * generation @gen, read through @m (@o, @cc: its offsets and code heaps)
 * on a miss: from the live blob at w0's address only if it still has the
 * frame's stamps (compile id, _name), then hs_scopes_at(@pc, @call,
 * @jdk_major). Returns the entry (owned by @c, valid until the next
 * call): n 0 when they could not be read or verified (kept so: not read
 * again for that key; the caller counts each use).
 */
const struct hs_chain *hs_chains_get(struct hs_chains *c, struct hs_mem *m,
				     const struct hs_offsets *o, const struct hs_codecache *cc,
				     uint64_t gen, uint64_t w0, uint64_t w1, uint64_t pc, bool call,
				     int jdk_major);

/* hs_chains_clear - free every entry of @c (left empty, usable). */
void hs_chains_clear(struct hs_chains *c);

#endif /* PROFD_HOTSPOT_SCOPES_H */
