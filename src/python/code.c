// SPDX-License-Identifier: GPL-2.0
/*
 * code.c - CPython code objects read out of a live process (see code.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "bpf/unwind_python.h"
#include "counters/counters.h"
#include "python/code.h"
#include "proc/remote.h"
#include "runtime/addr_cache.h"
#include "util/heap_cost.h"

COUNTER_DEFINE(python_read_timeout, COUNTER_PARTIAL,
	       "Python process memory reads abandoned: they hung");

#define HDR_MAX 256

struct entry {
	struct addr_entry ae;	/* first: the key (pid, gen, addr) and links */
	struct py_code code;
	uint64_t checked_ns;
	int failed;		/* < 0: reading it failed (cached like a success) */
	uint32_t bpf_print;	/* fingerprint BPF saw (0: none) */
	uint64_t print[7];	/* the fields read: compared on recheck */
};

struct py_code_cache {
	struct addr_cache *lru;		/* src/runtime/addr_cache.h */
	struct remote_reader *remote;	/* reads that cannot hang us */
	struct py_code_stats st;
};

static uint64_t get_u64(const uint8_t *b, uint16_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static int32_t get_i32(const uint8_t *b, uint16_t off)
{
	int32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp >= 0xd800 && cp <= 0xdfff)
		cp = '?';	/* a lone surrogate has no UTF-8 form */
	if (cp < 0x80) {
		out[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = 0xc0 | cp >> 6;
		out[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = 0xe0 | cp >> 12;
		out[1] = 0x80 | (cp >> 6 & 0x3f);
		out[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	if (cp > 0x10ffff)
		cp = 0xfffd;
	out[0] = 0xf0 | cp >> 18;
	out[1] = 0x80 | (cp >> 12 & 0x3f);
	out[2] = 0x80 | (cp >> 6 & 0x3f);
	out[3] = 0x80 | (cp & 0x3f);
	return 4;
}

/*
 * read_str - the str object at @addr as a new UTF-8 string (at most
 * PY_NAME_MAX characters). Only compact strings (all that code objects
 * hold) are read.
 */
static int read_str(struct py_code_cache *c, pid_t pid, uint64_t addr, const struct py_offsets *off,
		    const struct py_types *types, char **out)
{
	uint8_t hdr[128], data[PY_NAME_MAX * 4];
	uint32_t state, kind;
	int64_t length;
	uint64_t data_addr;
	size_t hlen = off->unicode_compact_data, n = 0;
	char *s;
	int err;

	if (hlen > sizeof(hdr) || (size_t)off->unicode_state + 4 > hlen)
		return -EINVAL;
	err = remote_read(c->remote, pid, addr, hdr, hlen);
	if (err)
		return err;
	if (types->unicode && get_u64(hdr, off->ob_type) != types->unicode)
		return -EINVAL;
	memcpy(&state, hdr + off->unicode_state, sizeof(state));
	memcpy(&length, hdr + off->unicode_length, sizeof(length));
	kind = state >> 2 & 7;
	if (!(state >> 5 & 1) || length < 0 || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	if (length > PY_NAME_MAX)
		length = PY_NAME_MAX;
	data_addr = addr + ((state >> 6 & 1) ? off->unicode_ascii_data
					     : off->unicode_compact_data);
	if (length) {
		err = remote_read(c->remote, pid, data_addr, data, (size_t)length * kind);
		if (err)
			return err;
	}
	s = malloc((size_t)length * 4 + 1);
	if (!s)
		return -ENOMEM;
	for (int64_t i = 0; i < length; i++) {
		uint32_t cp;

		if (kind == 1) {
			cp = data[i];
		} else if (kind == 2) {
			uint16_t u;

			memcpy(&u, data + 2 * i, 2);
			cp = u;
		} else {
			memcpy(&cp, data + 4 * i, 4);
		}
		if (!cp)
			cp = '?';	/* keep the C string whole */
		n += put_utf8(s + n, cp);
	}
	s[n] = 0;
	/* room was made for 4 bytes a character: give back what UTF-8 left */
	*out = realloc(s, n + 1);
	if (!*out)
		*out = s;
	return 0;
}

static int read_bytes(struct py_code_cache *c, pid_t pid, uint64_t addr, const struct py_offsets *off,
		      const struct py_types *types, uint8_t **out, size_t *len)
{
	uint8_t hdr[64];
	int64_t size;
	uint8_t *b;
	int err;

	if (off->bytes_sval > sizeof(hdr) || off->ob_size + 8 > off->bytes_sval)
		return -EINVAL;
	err = remote_read(c->remote, pid, addr, hdr, off->bytes_sval);
	if (err)
		return err;
	if (types->bytes && get_u64(hdr, off->ob_type) != types->bytes)
		return -EINVAL;
	memcpy(&size, hdr + off->ob_size, sizeof(size));
	if (size < 0 || size > (1LL << 40))
		return -EINVAL;
	if (size > PY_LINETABLE_MAX)
		size = PY_LINETABLE_MAX;	/* lines past the cut read as unknown */
	b = malloc(size ? size : 1);
	if (!b)
		return -ENOMEM;
	err = size ? remote_read(c->remote, pid, addr + off->bytes_sval, b, size) : 0;
	if (err) {
		free(b);
		return err;
	}
	*out = b;
	*len = size;
	return 0;
}

#define NFIELDS 7

static void fields(const struct py_offsets *off, uint16_t f[NFIELDS])
{
	f[0] = off->ob_type;
	f[1] = off->code_filename;
	f[2] = off->code_name;
	f[3] = off->code_qualname;
	f[4] = off->code_firstlineno;
	f[5] = off->code_linetable;
	f[6] = off->code_firsttraceable;
}

/* Bytes of the code object header holding every field we read. */
static uint32_t header_len(const struct py_offsets *off)
{
	uint16_t f[NFIELDS];
	uint32_t len = 0;

	fields(off, f);
	for (size_t i = 0; i < NFIELDS; i++)
		if (f[i] != PY_OFF_NONE && f[i] + 8u > len)
			len = f[i] + 8u;
	return len;
}

/* The values of the fields we read (ints as 4 bytes), for rechecks. */
static void fingerprint(const struct py_offsets *off, const uint8_t *hdr,
			uint64_t out[NFIELDS])
{
	uint16_t f[NFIELDS];

	fields(off, f);
	for (size_t i = 0; i < NFIELDS; i++) {
		out[i] = 0;
		if (f[i] == PY_OFF_NONE)
			continue;
		if (i == 4 || i == 6)
			out[i] = (uint32_t)get_i32(hdr, f[i]);
		else
			out[i] = get_u64(hdr, f[i]);
	}
}

static void code_clear(struct py_code *c)
{
	free(c->name);
	free(c->file);
	free(c->linetable);
	memset(c, 0, sizeof(*c));
}

static int decode(struct py_code_cache *cache, pid_t pid, const uint8_t *hdr,
		  const struct py_offsets *off, const struct py_types *types,
		  struct py_code *c)
{
	uint16_t name_off = off->code_qualname != PY_OFF_NONE ? off->code_qualname
							      : off->code_name;
	int err;

	memset(c, 0, sizeof(*c));
	if (types->code && get_u64(hdr, off->ob_type) != types->code)
		return -EINVAL;
	c->first_line = get_i32(hdr, off->code_firstlineno);
	if (off->code_firsttraceable != PY_OFF_NONE)
		c->first_traceable = get_i32(hdr, off->code_firsttraceable);
	err = read_str(cache, pid, get_u64(hdr, name_off), off, types, &c->name);
	if (!err)
		err = read_str(cache, pid, get_u64(hdr, off->code_filename), off,
			       types, &c->file);
	if (!err)
		err = read_bytes(cache, pid, get_u64(hdr, off->code_linetable), off,
				 types, &c->linetable, &c->linetable_len);
	if (err)
		code_clear(c);
	return err;
}

/* The fingerprint of a code object header, as BPF computes it. */
static uint32_t code_print(const struct py_offsets *off, const uint8_t *hdr)
{
	uint16_t name_off = off->code_qualname != PY_OFF_NONE ? off->code_qualname
							      : off->code_name;

	return profd_py_fingerprint((uint32_t)get_i32(hdr, off->code_firstlineno),
				    get_u64(hdr, name_off),
				    get_u64(hdr, off->code_filename));
}

static void entry_free(struct addr_entry *ae)
{
	struct entry *e = (struct entry *)ae;

	code_clear(&e->code);
	free(e);
}

struct py_code_cache *py_code_cache_new(size_t max_entries, size_t max_bytes)
{
	struct py_code_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->lru = addr_cache_new(max_entries, max_bytes, entry_free);
	c->remote = remote_reader_new();
	if (c->remote)
		remote_reader_count_timeouts(c->remote, &counter_python_read_timeout);
	if (!c->lru || !c->remote) {
		addr_cache_free(c->lru);
		remote_reader_free(c->remote);
		free(c);
		return NULL;
	}
	return c;
}

void py_code_cache_free(struct py_code_cache *c)
{
	if (!c)
		return;
	addr_cache_free(c->lru);
	remote_reader_free(c->remote);
	free(c);
}

void py_code_forget(struct py_code_cache *c, const uint64_t *gens, size_t n)
{
	addr_cache_forget(c->lru, gens, n);
}

/* Heap an entry holds: itself, its names and line table, as malloc keeps them. */
static size_t code_bytes(const struct py_code *k)
{
	return heap_cost(sizeof(struct entry)) +
	       (k->name ? heap_cost(strlen(k->name) + 1) : 0) +
	       (k->file ? heap_cost(strlen(k->file) + 1) : 0) +
	       (k->linetable ? heap_cost(k->linetable_len ? k->linetable_len : 1) : 0);
}

/* The cached entry of (@pid, @gen, @addr), or NULL. */
static struct entry *lookup(struct py_code_cache *c, pid_t pid, uint64_t gen,
			    uint64_t addr)
{
	return (struct entry *)addr_cache_lookup(c->lru, pid, gen, 0, addr);
}

const struct py_code *py_code_get(struct py_code_cache *c, pid_t pid,
				  uint64_t gen, pid_t parent, uint64_t parent_gen,
				  uint64_t addr,
				  const struct py_offsets *off,
				  const struct py_types *types, uint32_t print_bpf,
				  uint64_t now_ns, size_t *budget, int *err)
{
	uint32_t hlen = header_len(off);
	uint64_t print[NFIELDS] = { 0 };
	uint8_t hdr[HDR_MAX];
	struct entry *e;
	int ret;

	if (hlen > HDR_MAX) {
		*err = -EINVAL;
		return NULL;
	}
	e = lookup(c, pid, gen, addr);
	if (parent && print_bpf && (!e || e->failed)) {
		/* copied by fork and unchanged (same fingerprint): the parent's
		 * copy names it, even after this process exited */
		const struct py_code *pc;
		int perr = 0;

		pc = py_code_get(c, parent, parent_gen, 0, 0, addr, off, types,
				 print_bpf, now_ns, budget, &perr);
		if (pc)
			return pc;
		e = lookup(c, pid, gen, addr);	/* may have been evicted */
	}
	if (e && print_bpf && e->bpf_print != print_bpf) {
		addr_cache_remove(c->lru, &e->ae);	/* another object now lives there */
		e = NULL;
	}
	/* with a fingerprint to match, a good entry needs no re-check */
	if (e && ((print_bpf && !e->failed) ||
		  now_ns - e->checked_ns < PY_CODE_RECHECK_NS)) {
		c->st.hits++;
		addr_cache_touch(c->lru, &e->ae);
		if (e->failed) {
			c->st.errors++;
			*err = e->failed;
			return NULL;
		}
		return &e->code;
	}
	if (*budget < hlen) {
		if (e && !e->failed)
			return &e->code;	/* recheck later */
		*err = -EAGAIN;	/* this sample read enough already */
		return NULL;
	}
	*budget -= hlen;
	ret = remote_read(c->remote, pid, addr, hdr, hlen);
	if (!ret)
		fingerprint(off, hdr, print);
	if (e && !e->failed && (ret == -ETIMEDOUT || ret == -EAGAIN ||
		  (!ret && !memcmp(print, e->print, sizeof(print))))) {
		/* same object still there (or the process's memory hangs:
		 * keep what was read before) */
		c->st.rechecks++;
		e->checked_ns = now_ns;
		addr_cache_touch(c->lru, &e->ae);
		return &e->code;
	}
	if (e)
		addr_cache_remove(c->lru, &e->ae);
	e = calloc(1, sizeof(*e));
	if (!e) {
		ret = -ENOMEM;
		goto fail;
	}
	if (!ret && print_bpf && code_print(off, hdr) != print_bpf)
		ret = -ESTALE;	/* freed and replaced since the sample */
	if (!ret) {
		ret = decode(c, pid, hdr, off, types, &e->code);
		c->st.reads++;
	}
	e->bpf_print = print_bpf;
	e->ae.pid = pid;
	e->ae.gen = gen;
	e->ae.addr = addr;
	e->checked_ns = now_ns;
	e->failed = ret;
	memcpy(e->print, print, sizeof(print));
	addr_cache_insert(c->lru, &e->ae, code_bytes(&e->code));
	if (ret)
		goto fail;
	*budget = *budget > e->ae.bytes ? *budget - e->ae.bytes : 0;
	return &e->code;
fail:
	c->st.errors++;
	*err = ret;
	return NULL;
}

void py_code_cache_stats(const struct py_code_cache *c, struct py_code_stats *out)
{
	struct addr_cache_counts n;

	addr_cache_counts(c->lru, &n);
	*out = c->st;
	out->entries = n.entries;
	out->bytes = n.bytes;
	out->evictions = n.evictions;
	out->timeouts = remote_reader_timeouts(c->remote);
}
