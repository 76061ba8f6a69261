// SPDX-License-Identifier: GPL-2.0
/*
 * mem.c - a JVM's memory for the HotSpot readers: bounded strings and a
 * page cache (see mem.h).
 */
#include <errno.h>
#include <string.h>

#include "hotspot/mem.h"
#include "proc/remote.h"

void hs_mem_init(struct hs_mem *m, struct remote_reader *r, pid_t pid, bool cache)
{
	m->r = r;
	m->pid = pid;
	m->cache = cache;
	m->next = 0;
	m->remote_reads = 0;
	hs_mem_drop(m);
}

void hs_mem_drop(struct hs_mem *m)
{
	for (uint32_t i = 0; i < HS_MEM_PAGES; i++)
		m->page[i].ok = false;
}

/* The cached page at page-aligned @addr, fetched if absent; NULL and *@err. */
static const uint8_t *page_at(struct hs_mem *m, uint64_t addr, int *err)
{
	uint32_t slot;

	for (uint32_t i = 0; i < HS_MEM_PAGES; i++)
		if (m->page[i].ok && m->page[i].addr == addr)
			return m->page[i].b;
	slot = m->next++ % HS_MEM_PAGES;
	m->page[slot].ok = false;
	m->remote_reads++;
	*err = remote_read(m->r, m->pid, addr, m->page[slot].b, HS_MEM_PAGE);
	if (*err)
		return NULL;
	m->page[slot].addr = addr;
	m->page[slot].ok = true;
	return m->page[slot].b;
}

int hs_mem_read(struct hs_mem *m, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;
	int err = 0;

	if (!len || len > REMOTE_READ_MAX || addr + len < addr)
		return -EINVAL;
	if (!m->cache) {
		m->remote_reads++;
		return remote_read(m->r, m->pid, addr, buf, len);
	}
	while (len) {
		uint64_t base = addr & ~(uint64_t)(HS_MEM_PAGE - 1);
		size_t in = addr - base, n = HS_MEM_PAGE - in;
		const uint8_t *p = page_at(m, base, &err);

		if (!p)
			return err;
		if (n > len)
			n = len;
		memcpy(out, p + in, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

int hs_mem_u64(struct hs_mem *m, uint64_t addr, uint64_t *v)
{
	return hs_mem_read(m, addr, v, sizeof(*v));
}

int hs_mem_uint(struct hs_mem *m, uint64_t addr, unsigned int width, uint64_t *v)
{
	union { uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64; } u;
	int err;

	if (width != 1 && width != 2 && width != 4 && width != 8)
		return -EINVAL;
	if ((err = hs_mem_read(m, addr, &u, width)))
		return err;
	*v = width == 1 ? u.u8 : width == 2 ? u.u16 : width == 4 ? u.u32 : u.u64;
	return 0;
}

int hs_mem_string(struct hs_mem *m, uint64_t addr, char *buf, size_t cap)
{
	size_t have = 0;

	if (!addr || !cap)
		return -EINVAL;
	while (have < cap - 1) {
		uint64_t at = addr + have;
		size_t n = HS_MEM_PAGE - (at & (HS_MEM_PAGE - 1));
		char *nul;
		int err;

		if (at < addr)
			return -EFAULT;
		if (n > cap - 1 - have)
			n = cap - 1 - have;
		if ((err = hs_mem_read(m, at, buf + have, n))) {
			buf[have] = '\0';
			return err;
		}
		nul = memchr(buf + have, '\0', n);
		if (nul)
			return (int)(nul - buf);
		have += n;
	}
	buf[cap - 1] = '\0';
	return -ENAMETOOLONG;
}
