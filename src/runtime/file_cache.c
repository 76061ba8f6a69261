// SPDX-License-Identifier: GPL-2.0
/*
 * file_cache.c - the per-file detection cache runtimes share (see
 * file_cache.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <gelf.h>

#include "proc/maps.h"
#include "runtime/file_cache.h"
#include "util/mapping.h"
#include "util/build_lane.h"

void rt_file_cache_init(struct rt_file_cache *c, size_t size, rt_detect_fn detect)
{
	*c = (struct rt_file_cache){ .size = size, .detect = detect };
	elf_version(EV_CURRENT);
}

void rt_file_cache_clear(struct rt_file_cache *c)
{
	for (size_t b = 0; b < RT_FILE_BUCKETS; b++) {
		struct rt_file *f = c->bucket[b], *next;

		for (; f; f = next) {
			next = f->next;
			free(f);
		}
		c->bucket[b] = NULL;
	}
	c->n = 0;
}

static size_t bucket_of(uint32_t maj, uint32_t min, uint64_t ino)
{
	uint64_t h = (ino * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)maj << 20 | min);

	return (h ^ (h >> 29)) & (RT_FILE_BUCKETS - 1);
}

static void read_loads(int fd, struct rt_file *f)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n = 0;

	if (!e)
		return;
	if (elf_kind(e) == ELF_K_ELF && !elf_getphdrnum(e, &n)) {
		for (size_t i = 0; i < n && f->nloads < RT_FILE_MAX_LOADS; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD)
				continue;
			f->loads[f->nloads].offset = ph.p_offset;
			f->loads[f->nloads].vaddr = ph.p_vaddr;
			f->loads[f->nloads].filesz = ph.p_filesz;
			f->nloads++;
		}
	}
	elf_end(e);
}

/* The record of @m's file, detected on first sight (NULL: not now). */
static struct rt_file *get(struct rt_file_cache *c, pid_t pid, const struct proc_mapping *m)
{
	size_t b = bucket_of(m->dev_major, m->dev_minor, m->inode);
	struct rt_file *f;
	char path[128];
	bool lane;
	int fd;

	for (f = c->bucket[b]; f; f = f->next)
		if (f->inode == m->inode && f->dev_major == m->dev_major &&
		    f->dev_minor == m->dev_minor)
			return f;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;	/* gone, or no access: try again next read */
	if (c->n >= RT_FILE_CACHE_MAX) {
		rt_file_cache_clear(c);
		b = bucket_of(m->dev_major, m->dev_minor, m->inode);
	}
	f = calloc(1, c->size);
	if (!f) {
		close(fd);
		return NULL;
	}
	f->dev_major = m->dev_major;
	f->dev_minor = m->dev_minor;
	f->inode = m->inode;
	/* a big file's symbol tables, read by the detector, in the lane */
	lane = build_lane_enter_fd(fd);
	f->result = c->detect(fd, f);
	build_lane_leave(lane);
	if (f->result == 1 || f->result == -ENOTSUP)
		read_loads(fd, f);
	close(fd);
	f->next = c->bucket[b];
	c->bucket[b] = f;
	c->n++;
	return f;
}

/* The load bias of the file mapped by @m (offset -> vaddr via PT_LOAD). */
static bool load_bias(const struct rt_file *f, const struct proc_mapping *m, uint64_t *bias)
{
	for (uint32_t i = 0; i < f->nloads; i++) {
		if (m->offset >= f->loads[i].offset &&
		    m->offset < f->loads[i].offset + f->loads[i].filesz) {
			*bias = m->start - (f->loads[i].vaddr + (m->offset - f->loads[i].offset));
			return true;
		}
	}
	return false;
}

struct rt_file *rt_file_find(struct rt_file_cache *c, pid_t pid,
			     const struct proc_maps *maps,
			     const struct proc_mapping **found, uint64_t *bias)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];
		struct rt_file *f;

		if (!m->inode || m->special || !m->executable)
			continue;
		f = get(c, pid, m);
		if (f && (f->result == 1 || f->result == -ENOTSUP)) {
			*found = m;
			return load_bias(f, m, bias) ? f : NULL;
		}
	}
	return NULL;
}
