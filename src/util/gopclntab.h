/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gopclntab.h - decoding Go's pc-line table (.gopclntab), the one
 * reader both the unwinder (src/unwind/go.c: pcsp frame sizes, function
 * flags) and the symbolizer (src/symbol/go_symtab.c: names, file:line,
 * inlined frames) use.
 *
 * Owns: the pcHeader (Go 1.16-1.17 magic 0xfffffffa, 1.18-1.19
 * 0xfffffff0, 1.20+ 0xfffffff1; 64-bit only), the function table and
 * each function's _func, pcvalue tables (pcsp, pcfile, pcln, pcdata),
 * the file and name tables, funcdata offsets, and the inline tree entry
 * layouts (1.16-1.19 inlinedCall with parent/file/line, 1.20+ with
 * startLine). Spec: Go's src/runtime/symtab.go (pcHeader, moduledata,
 * _func, pcvalue/step, funcfile, funcline1) and runtime/symtabinl.go.
 *
 * Input is untrusted (any file a process maps): every offset and count
 * is checked against the table's size before it is read, and each
 * function's _func must name the same entry as the function table (a
 * consistency check every lookup makes), so a corrupt or foreign table
 * gives errors or misses, never a read out of bounds or a name of
 * another function. Nothing here allocates or owns the bytes.
 */
#ifndef PROFD_UTIL_GOPCLNTAB_H
#define PROFD_UTIL_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GOPCLNTAB_MAGIC_116	0xfffffffau	/* Go 1.16-1.17 */
#define GOPCLNTAB_MAGIC_118	0xfffffff0u	/* Go 1.18-1.19 */
#define GOPCLNTAB_MAGIC_120	0xfffffff1u	/* Go 1.20+ */

/* Table and funcdata indexes (src/runtime/symtab.go, funcdata.h). */
#define GOPCLNTAB_PCDATA_INLTREEINDEX	2
#define GOPCLNTAB_FUNCDATA_INLTREE	3

/* _func.flag bits (funcFlag; Go 1.17+) */
#define GOPCLNTAB_FLAG_TOPFRAME	1
#define GOPCLNTAB_FLAG_SPWRITE	2
#define GOPCLNTAB_FLAG_ASM	4

/* One parsed pclntab: offsets into bytes the caller keeps alive. */
struct gopclntab {
	const uint8_t *p;	/* the table, from its pcHeader on */
	size_t n;		/* its size, bytes */
	uint32_t magic;		/* GOPCLNTAB_MAGIC_* */
	uint8_t minlc;		/* pc quantum (1 on amd64) */
	uint64_t nfunc;
	uint64_t text;		/* vaddr entry offsets are from (1.18+; 0 for 1.16) */
	uint64_t nametab, cutab, filetab, pctab, functab;	/* offsets in p */
	uint64_t ncu;		/* uint32 entries of cutab */
};

/* A function's _func, decoded and checked (gopclntab_func()). */
struct gopclntab_func {
	uint64_t entry;		/* vaddr of its first instruction */
	uint64_t end;		/* vaddr of the next function's (exclusive) */
	uint32_t nameoff;	/* in the name table */
	uint32_t pcsp, pcfile, pcln;	/* pcvalue tables, offsets in pctab (0: none) */
	uint32_t npcdata;
	uint32_t cu;		/* cutab index of its compilation unit's first file */
	uint8_t funcid, flag, nfuncdata;
	const uint8_t *pcdata;	/* npcdata uint32s, then the funcdata */
	size_t funcdata_off;	/* offset in p of funcdata[0] */
};

/*
 * gopclntab_uvarint - Go's unsigned varint (encoding/binary.Uvarint: 7
 * bits a byte, low first, the top bit set on all but the last) at *@off
 * of @p[0..@n), into *@v; *@off moves past it. False when it runs past
 * @n or 64 bits. Go's pcvalue tables and build info use it.
 */
bool gopclntab_uvarint(const uint8_t *p, size_t n, size_t *off, uint64_t *v);

/*
 * gopclntab_init - check and parse the pcHeader at @p[0..@n) (not
 * copied: @p must outlive @pt). @text: the text's start vaddr to use
 * when the header's textStart is 0 (a PIE, relocated at load; 0 when not
 * known). Returns 0; -ENOENT not a 64-bit pclntab of a known magic with
 * quantum 1; -EPROTONOSUPPORT a pclntab of another Go version (before
 * 1.16, or a newer magic); -EINVAL header fields outside the table.
 */
int gopclntab_init(struct gopclntab *pt, const void *p, size_t n, uint64_t text);

/*
 * gopclntab_header_ok - whether @p[0..@n) starts like a 64-bit pclntab
 * of a known magic (pad bytes 0, quantum 1, pointer size 8), for a scan
 * of a segment when the section headers are gone. Cheap; no offsets read.
 */
bool gopclntab_header_ok(const void *p, size_t n);

/*
 * gopclntab_entry - function @i's entry vaddr (@i == nfunc: the end of
 * the last function). The caller keeps @i <= nfunc.
 */
uint64_t gopclntab_entry(const struct gopclntab *pt, uint64_t i);

/*
 * gopclntab_find - index of the function whose [entry, next entry)
 * holds vaddr @pc, or -1 outside the table (Go's findfunc, by binary
 * search).
 */
int64_t gopclntab_find(const struct gopclntab *pt, uint64_t pc);

/*
 * gopclntab_func - decode function @i's _func into @f. Returns 0, or
 * -EINVAL when it lies outside the table, its pcdata/funcdata arrays do,
 * or its entry is not the function table's (a corrupt table).
 */
int gopclntab_func(const struct gopclntab *pt, uint64_t i,
		   struct gopclntab_func *f);

/*
 * gopclntab_name - the NUL-terminated name at @nameoff of the name
 * table (as runtime.FuncForPC().Name() prints it), or NULL when it runs
 * out of the table or is empty. Points into the table's bytes.
 */
const char *gopclntab_name(const struct gopclntab *pt, uint32_t nameoff);

/*
 * gopclntab_file - the file name of @f's per-CU file number @fileno, or
 * NULL (out of bounds, or no file: Go's "?"). Points into the table.
 */
const char *gopclntab_file(const struct gopclntab *pt,
			   const struct gopclntab_func *f, int32_t fileno);

/*
 * gopclntab_pcvalue - the value of @f's pcvalue table at @off (pctab
 * offset; pcsp, pcfile, pcln or a pcdata table) at vaddr @pc, Go's
 * pcvalue(): false (no value: Go's -1) when @off is 0, @pc is outside the
 * function, or the table runs out of bounds before reaching @pc.
 */
bool gopclntab_pcvalue(const struct gopclntab *pt, const struct gopclntab_func *f,
		       uint32_t off, uint64_t pc, int32_t *val);

/*
 * gopclntab_pcdata_off - the pctab offset of @f's pcdata table @k, 0
 * when it has none.
 */
uint32_t gopclntab_pcdata_off(const struct gopclntab_func *f, uint32_t k);

/*
 * gopclntab_funcdata - @f's funcdata @k: an offset from moduledata.gofunc
 * (1.18+) or an absolute vaddr (1.16-1.17). Returns false when @f has no
 * such funcdata (Go's nil).
 */
bool gopclntab_funcdata(const struct gopclntab *pt, const struct gopclntab_func *f,
			uint32_t k, uint64_t *val);

/* One pcvalue table walked step by step (src/runtime/symtab.go step()). */
struct gopclntab_iter {
	const struct gopclntab *pt;
	size_t off;		/* next byte in pt->p */
	uint64_t pc;		/* start of the current value's range */
	uint64_t next_pc;	/* its end (exclusive) */
	int32_t val;
	bool first;
};

/*
 * gopclntab_iter_start - start walking @f's table at pctab offset @off;
 * gopclntab_iter_next - the next [pc, next_pc) with its value, false at
 * the table's end (or when it runs out of the table's bytes).
 */
void gopclntab_iter_start(struct gopclntab_iter *it, const struct gopclntab *pt,
			  const struct gopclntab_func *f, uint32_t off);
bool gopclntab_iter_next(struct gopclntab_iter *it);

/*
 * An inline tree entry (FUNCDATA_InlTree, indexed by the
 * PCDATA_InlTreeIndex value), in the form every version can give.
 */
struct gopclntab_inl {
	uint8_t funcid;
	uint32_t nameoff;	/* in the name table */
	uint32_t parent_pc;	/* offset from the entry of an instruction at the call site */
};

/*
 * gopclntab_inl_size - bytes of one inline tree entry for @pt's
 * version: 20 (Go 1.16-1.19), 16 (1.20+).
 */
size_t gopclntab_inl_size(const struct gopclntab *pt);

/*
 * gopclntab_inl_decode - the entry at @e (gopclntab_inl_size() bytes
 * the caller checked are readable) into @out.
 */
void gopclntab_inl_decode(const struct gopclntab *pt, const uint8_t *e,
			  struct gopclntab_inl *out);

#endif /* PROFD_UTIL_GOPCLNTAB_H */
