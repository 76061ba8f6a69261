/* SPDX-License-Identifier: GPL-2.0 */
/*
 * codecache.h - what a pc in a JVM's code cache is: its CodeBlob and, for
 * compiled Java code, the method, read from the live process.
 *
 * Owns: the code heaps of one JVM (struct hs_codecache: each CodeHeap's
 * committed range and segment map) and the walk from a pc to its blob,
 * as HotSpot's CodeHeap::find_start() does it: the segment of the pc in
 * the heap's segment map, back by the hop counts the map holds to the
 * first segment of the block (a 0), the HeapBlock there (used, length
 * in segments), the CodeBlob right after its header. Then the blob is
 * named: an nmethod as `package.Class.method` from Method ->
 * ConstMethod -> ConstantPool -> its holder's name and the name Symbol
 * (plus the signature apart), any other blob by its _name
 * ("Interpreter", "StubRoutines (1)", "I2C/C2I adapters").
 *
 * Never a wrong name: the pc must lie in the block and in the blob's
 * bounds, the block must be in use, the method's constant pool must
 * name a holder class whose own pool names it back, the name entries
 * must be UTF-8 entries of the pool, and the blob's header must read the same before and after the
 * naming (a blob freed or replaced meanwhile is caught). Anything else
 * gives no name, counted (hotspot_pc_*); a hostile process's memory
 * costs at most HS_CC_MAX_HOPS hops and a few bounded reads per pc.
 *
 * Threads: one caller at a time per struct hs_mem.
 */
#ifndef PROFD_HOTSPOT_CODECACHE_H
#define PROFD_HOTSPOT_CODECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hotspot/offsets.h"

struct hs_mem;

#define HS_CC_MAX_HEAPS		8	/* JDK 9+: 3 (segmented) or 1 */
#define HS_CC_MAX_HOPS		4096	/* segment map hops back to a block's start */
#define HS_CC_NAME_MAX		512	/* bytes of a name (class.method or blob) */
#define HS_CC_SIG_MAX		256	/* bytes of a method signature */
#define HS_CC_HEADER_MAX	1024	/* bytes of a blob's header read */
#define HS_CC_FILE_MAX		128	/* bytes of a source file's name */

struct hs_codeheap {
	uint64_t low, high;		/* committed code: [low, high) */
	uint64_t reserved_high;		/* reserved: [low, reserved_high); 0 unknown */
	uint64_t segmap_low, segmap_high;	/* its segment map, one byte a segment */
	uint32_t log2_segment_size;
};

struct hs_codecache {
	struct hs_codeheap heap[HS_CC_MAX_HEAPS];
	uint32_t nheaps;
};

enum hs_pc_kind {
	HS_PC_NMETHOD = 1,	/* compiled Java method (or a JNI wrapper) */
	HS_PC_BLOB,		/* another blob: stubs, adapters, the interpreter */
};

struct hs_pc_info {
	enum hs_pc_kind kind;
	uint64_t blob, blob_end;		/* [blob, blob + _size) */
	uint64_t code_begin, code_end;		/* 0, 0 when unknown */
	int32_t frame_size;			/* CodeBlob::_frame_size, words */
	uint64_t name_addr;			/* the _name pointer (what BPF records) */
	char name[HS_CC_NAME_MAX];		/* "java.util.HashMap.get", or the
						 * blob's _name */
	/* nmethods only */
	char signature[HS_CC_SIG_MAX];		/* "(Ljava/lang/Object;)I" */
	uint64_t method;			/* Method* */
	int32_t compile_id, entry_bci, comp_level;
	uint64_t klass_sym;			/* Symbol* of the holder's name */
	char file[HS_CC_FILE_MAX];		/* the class's source file ("HashMap.java"),
						 * "" when it has none or it is unread */
	uint32_t code_size;			/* hs_codecache_method(): bytecodes */
	bool osr;				/* entry_bci != InvocationEntryBci */
};

/*
 * hs_codecache_read - read the JVM's code heaps (CodeCache::_heaps, each
 * CodeHeap's _memory and _segmap) through @m into @cc. Needs
 * HS_FEAT_FIND_BLOB. Returns 0, -ENOTSUP (feature off), -EAGAIN (no heap
 * yet: the code cache is not initialised), -EPROTO (a heap's ranges are
 * impossible; counted hotspot_codecache_bad), or a read error.
 */
int hs_codecache_read(struct hs_mem *m, const struct hs_offsets *o, struct hs_codecache *cc);

/*
 * hs_codecache_pc - what is at @pc: fills @out and returns 0, or returns
 * -ENOENT (@pc in no code heap of @cc: not JIT code, or the heaps grew:
 * read them again), -ENODATA (@pc in an unused segment, a free block or
 * the tail of a block past its blob: no code there now), -ENOTSUP (a feature this needs is off), -EPROTO
 * (memory contradicts the layout, or the blob changed while read: no
 * name), -ENAMETOOLONG (a name over its cap), or a read error (-ESRCH,
 * -EFAULT, -ETIMEDOUT). Every outcome but 0 and -ENOENT is counted.
 */
int hs_codecache_pc(struct hs_mem *m, const struct hs_offsets *o,
		    const struct hs_codecache *cc, uint64_t pc, struct hs_pc_info *out);

/*
 * hs_codecache_method - name the Method* @method of an interpreted frame
 * into @out (the naming fields: name, signature, method; kind
 * HS_PC_NMETHOD, no blob), checked as an nmethod's method is, with the
 * Symbol* of its class's name in out->klass_sym and its bytecodes' size
 * in out->code_size. Needs HS_FEAT_INTERP. Returns 0, -ENOTSUP, -EPROTO
 * (not a method), -ENAMETOOLONG, or a read error; counted as
 * hs_codecache_pc()'s.
 */
int hs_codecache_method(struct hs_mem *m, const struct hs_offsets *o, uint64_t method,
			struct hs_pc_info *out);

/*
 * hs_codecache_line - the source line of @bci in Method* @method, from
 * its ConstMethod's compressed line number table (the pairs HotSpot's
 * CompressedLineNumberReadStream reads, after the bytecodes: a byte of
 * bci delta << 3 | line delta, or 0xFF and two signed UNSIGNED5 numbers;
 * 0 ends it), as Method::line_number_from_bci() picks it. @jdk_major: the
 * JVM's major version (UNSIGNED5 excludes the zero byte from 20 on).
 * Needs HS_FEAT_LINES. Returns the line (> 0), or -ENOENT (no table, or
 * no entry at or before @bci), -ENOTSUP, -EPROTO (a table running past
 * its method), or a read error. Not counted: the frame keeps its name.
 */
int hs_codecache_line(struct hs_mem *m, const struct hs_offsets *o, uint64_t method,
		      uint32_t bci, int jdk_major);

/*
 * hs_unsigned5 - one number of HotSpot's compressed streams (UNSIGNED5:
 * CompressedReadStream::read_int(), the line number table, the debug
 * info) from @b (@len bytes) at *@pos, which it advances; @x: the bytes
 * excluded (1 from JDK 20 on: no zero byte; 0 before). Returns 0 and
 * *@out, or -EPROTO (the number runs past @len, or an excluded byte).
 */
int hs_unsigned5(const uint8_t *b, size_t len, size_t *pos, uint32_t x, uint32_t *out);

/* hs_unsigned5_x - the excluded bytes of UNSIGNED5 in JDK @jdk_major. */
static inline uint32_t hs_unsigned5_x(int jdk_major)
{
	return jdk_major >= 20 ? 1 : 0;
}

/*
 * hs_interpreter_read - the interpreter's code, [*@low, *@low + *@size):
 * the codelets AbstractInterpreter::_code's StubQueue holds (its buffer up
 * to _queue_end; the whole buffer where vmStructs lacks the queue's
 * indices). *@unsettled is set while the buffer still has its unused tail
 * (StubQueue::deallocate_unused_tail() not run yet: the interpreter may
 * still be being generated, and the tail goes back to the code cache,
 * where other blobs then live). Needs HS_FEAT_INTERP. Returns 0,
 * -ENOTSUP, -EAGAIN (not generated yet), -EPROTO, or a read error.
 */
int hs_interpreter_read(struct hs_mem *m, const struct hs_offsets *o, uint64_t *low,
			uint64_t *size, bool *unsettled);

#endif /* PROFD_HOTSPOT_CODECACHE_H */
