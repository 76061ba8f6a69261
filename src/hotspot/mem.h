/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mem.h - reads of a JVM's memory for the HotSpot readers: bounded
 * strings, and a small page cache for what never changes while a table
 * is read.
 *
 * Owns: a struct hs_mem over src/proc/remote.c (process_vm_readv on a
 * worker, with a timeout: a hung mapping never hangs the caller). With
 * the cache on, reads are served from up to HS_MEM_PAGES aligned pages
 * fetched once each (libjvm's vmStructs tables and the strings they point
 * to: .data and .rodata, a few hundred pages read for thousands of small
 * reads); with it off every read goes to the process (the code cache and
 * metaspace change under us). Strings are read page by page, so one that
 * ends just before an unmapped page still reads.
 *
 * Threads: one caller at a time (as remote_read()).
 */
#ifndef PROFD_HOTSPOT_MEM_H
#define PROFD_HOTSPOT_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HS_MEM_PAGE	4096u
#define HS_MEM_PAGES	32u

struct remote_reader;

struct hs_mem {
	struct remote_reader *r;	/* borrowed */
	pid_t pid;
	bool cache;			/* serve reads from the page cache */
	uint32_t next;			/* the next page slot to reuse */
	uint64_t remote_reads;		/* reads that went to the process */
	struct {
		uint64_t addr;		/* page-aligned; valid when @ok */
		bool ok;
		uint8_t b[HS_MEM_PAGE];
	} page[HS_MEM_PAGES];
};

/*
 * hs_mem_init - a reader of process @pid's memory through @r (borrowed),
 * caching when @cache. @m is caller-owned (about 130 KiB: allocate it).
 */
void hs_mem_init(struct hs_mem *m, struct remote_reader *r, pid_t pid, bool cache);

/* hs_mem_drop - forget every cached page (the memory may have changed). */
void hs_mem_drop(struct hs_mem *m);

/*
 * hs_mem_read - @len bytes at @addr into @buf. Returns 0, -EINVAL (@len
 * 0 or over REMOTE_READ_MAX, or the range wraps), or remote_read()'s
 * error (-EFAULT unmapped, -ESRCH gone, -ETIMEDOUT hung, ...).
 */
int hs_mem_read(struct hs_mem *m, uint64_t addr, void *buf, size_t len);

/* hs_mem_u64 - one native-endian 64-bit word at @addr; as hs_mem_read(). */
int hs_mem_u64(struct hs_mem *m, uint64_t addr, uint64_t *v);

/*
 * hs_mem_uint - an unsigned integer of @width bytes (1, 2, 4 or 8) at
 * @addr, zero-extended into *@v. -EINVAL for another width.
 */
int hs_mem_uint(struct hs_mem *m, uint64_t addr, unsigned int width, uint64_t *v);

/*
 * hs_mem_string - the NUL-terminated string at @addr into @buf (@cap
 * bytes, NUL included). Returns its length, -ENAMETOOLONG when no NUL
 * comes within @cap - 1 bytes (@buf holds the cut string), -EINVAL for
 * @addr 0 or @cap 0, or a read error.
 */
int hs_mem_string(struct hs_mem *m, uint64_t addr, char *buf, size_t cap);

#endif /* PROFD_HOTSPOT_MEM_H */
