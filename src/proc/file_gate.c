// SPDX-License-Identifier: GPL-2.0
/*
 * file_gate.c - reads of mapped files that time out (see file_gate.h).
 *
 * Owns: a small table of verdicts keyed by file identity (OK until a
 * time; PENDING: its read missed the caller's wait and runs on; HUNG:
 * blocked FILE_GATE_HUNG_NS, with whether its thread still is),
 * the jobs handed to the disposable reader threads, and the list of
 * threads left blocked. One mutex guards all of it; no I/O is done
 * under it.
 *
 * A job is shared by the caller and its thread (two references). The
 * caller waits on the gate's condition variable until the job is done or
 * the deadline passes; on a timeout it marks the job abandoned (the file
 * PENDING) and drops its reference. sweep(), run by every call, declares
 * abandoned jobs older than FILE_GATE_HUNG_NS hung (warning, counter).
 * The thread, when its read returns, takes the job off the stuck list,
 * turns PENDING into OK or clears HUNG's "blocked" mark, and frees the
 * job (and the gate, if it was freed meanwhile and no thread is left).
 *
 * The reading follows elf(5): Elf64 headers, read defensively (every
 * count and offset is clamped to the file size and to sane bounds); a
 * 32-bit ELF file is read whole (up to READ_ALL_MAX), anything that is
 * not ELF only for its first bytes (the parsers stop there too).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "counters/counters.h"
#include "proc/file_gate.h"

COUNTER_DEFINE(file_read_timeouts, COUNTER_STAT,
	       "mapped-file reads abandoned at the deadline");

#define ENTRIES		1024	/* verdicts kept; power of two */
#define PROBE		8	/* slots tried per key */
#define CHUNK		(256 * 1024)
#define READ_ALL_MAX	(256ULL << 20)
#define SHNUM_MAX	65536
#define SHSTR_MAX	(1U << 20)

/* PENDING: read not done at the caller's deadline; HUNG: still not done
 * FILE_GATE_HUNG_NS after it started (then warned about, counted). */
enum verdict { V_NONE, V_OK, V_PENDING, V_HUNG };

struct entry {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	uint8_t verdict;	/* enum verdict */
	bool blocked;		/* PENDING/HUNG: its thread has not returned yet */
	uint64_t since_ns;	/* when the verdict was given */
};

struct job {
	struct file_gate *g;
	int refs;		/* under g->lock */
	bool done, abandoned;
	bool declared;		/* abandoned, then found hung by sweep() */
	int ret;
	pid_t pid;
	struct proc_mapping m;	/* m.path owned */
	uint64_t start_ns;
};

struct file_gate {
	pthread_mutex_t lock;
	pthread_cond_t done;
	uint64_t timeout_ns;
	struct entry e[ENTRIES];
	struct job *stuck[FILE_GATE_MAX_STUCK];
	uint32_t nstuck;
	bool freed;
	struct file_gate_stats st;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* ---- reading (gate thread, no lock) ---- */

static bool same_file(const struct stat *st, const struct proc_mapping *m)
{
	return S_ISREG(st->st_mode) && st->st_ino == m->inode &&
	       major(st->st_dev) == m->dev_major &&
	       minor(st->st_dev) == m->dev_minor;
}

/* The mapped file, O_NONBLOCK (a FIFO planted at the path cannot block us). */
static int open_file(pid_t pid, const struct proc_mapping *m, uint64_t *size)
{
	char path[4200];
	struct stat st;
	int fd, pass;

	for (pass = 0; pass < 3; pass++) {
		if (pass == 0)
			snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx",
				 (int)pid, (unsigned long long)m->start,
				 (unsigned long long)m->end);
		else if (m->path[0] != '/')
			return -ENOENT;
		else if (pass == 1)
			snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, m->path);
		else
			snprintf(path, sizeof(path), "%s", m->path);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (!fstat(fd, &st) && same_file(&st, m)) {
			*size = st.st_size;
			return fd;
		}
		close(fd);
	}
	return -ENOENT;
}

/* Read [@off, @off + @len) of the file (clamped to @size) into @buf, discarded. */
static int read_range(int fd, uint8_t *buf, uint64_t off, uint64_t len,
		      uint64_t size)
{
	if (off >= size)
		return 0;
	if (len > size - off)
		len = size - off;
	while (len) {
		size_t n = len < CHUNK ? len : CHUNK;
		ssize_t r = pread(fd, buf, n, off);

		if (r < 0)
			return errno == EINTR ? 0 : -errno;
		if (r == 0)
			return 0;
		off += r;
		len -= r;
	}
	return 0;
}

/* Whether a section named @name is one the parsers may read. */
static bool wanted(const char *name)
{
	if (!strncmp(name, ".debug_", 7))
		return !strcmp(name, ".debug_frame");
	return strncmp(name, ".zdebug_", 8) != 0;
}

static int read_elf64(int fd, uint8_t *buf, uint64_t size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	char *shstr = NULL;
	uint64_t shnum, shstrndx, shstrsz = 0;
	int ret;

	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh))
		return 0;
	if (eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum) {
		ret = read_range(fd, buf, eh.e_phoff,
				 (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), size);
		if (ret)
			return ret;
	}
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shoff || eh.e_shoff >= size)
		return 0;
	shnum = eh.e_shnum;
	shstrndx = eh.e_shstrndx;
	if (!shnum || shstrndx == SHN_XINDEX) {
		Elf64_Shdr s0;

		if (pread(fd, &s0, sizeof(s0), eh.e_shoff) != sizeof(s0))
			return 0;
		if (!shnum)
			shnum = s0.sh_size;
		if (shstrndx == SHN_XINDEX)
			shstrndx = s0.sh_link;
	}
	if (!shnum || shnum > SHNUM_MAX || shnum * sizeof(*sh) > size - eh.e_shoff)
		return 0;
	sh = malloc(shnum * sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	if (pread(fd, sh, shnum * sizeof(*sh), eh.e_shoff) !=
	    (ssize_t)(shnum * sizeof(*sh))) {
		ret = -EIO;
		goto out;
	}
	if (shstrndx < shnum && sh[shstrndx].sh_size <= SHSTR_MAX &&
	    sh[shstrndx].sh_offset < size) {
		shstrsz = sh[shstrndx].sh_size;
		shstr = calloc(1, shstrsz + 1);
		if (!shstr) {
			ret = -ENOMEM;
			goto out;
		}
		if (pread(fd, shstr, shstrsz, sh[shstrndx].sh_offset) < 0) {
			ret = -errno;
			goto out;
		}
	}
	ret = 0;
	for (uint64_t i = 1; i < shnum && !ret; i++) {
		const char *name = shstr && sh[i].sh_name < shstrsz ?
				   shstr + sh[i].sh_name : "";

		if (sh[i].sh_type == SHT_NOBITS || !sh[i].sh_size ||
		    (sh[i].sh_flags & SHF_EXECINSTR) || !wanted(name))
			continue;
		ret = read_range(fd, buf, sh[i].sh_offset, sh[i].sh_size, size);
	}
out:
	free(shstr);
	free(sh);
	return ret;
}

/* Read what the parsers of @m's file will read. 0, or -errno of a read. */
static int read_parts(pid_t pid, const struct proc_mapping *m)
{
	unsigned char ident[EI_NIDENT];
	uint64_t size = 0;
	uint8_t *buf;
	int fd, ret = 0;

	fd = open_file(pid, m, &size);
	if (fd < 0)
		return 0;	/* not ours to report: the parser's open fails too */
	buf = malloc(CHUNK);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	if (pread(fd, ident, sizeof(ident), 0) == sizeof(ident) &&
	    !memcmp(ident, ELFMAG, SELFMAG)) {
		if (ident[EI_CLASS] == ELFCLASS64)
			ret = read_elf64(fd, buf, size);
		else
			ret = read_range(fd, buf, 0, size < READ_ALL_MAX ? size :
					 READ_ALL_MAX, size);
	}
	free(buf);
	close(fd);
	return ret;
}

/* ---- the verdict table (under g->lock) ---- */

static uint32_t key_slot(uint32_t maj, uint32_t min, uint64_t ino)
{
	uint64_t x = ino ^ ((uint64_t)maj << 40) ^ ((uint64_t)min << 20);

	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ULL;
	return (uint32_t)(x >> 32);
}

static struct entry *find(struct file_gate *g, const struct proc_mapping *m,
			  bool create)
{
	uint32_t h = key_slot(m->dev_major, m->dev_minor, m->inode);
	struct entry *victim = NULL;

	for (int i = 0; i < PROBE; i++) {
		struct entry *e = &g->e[(h + i) & (ENTRIES - 1)];

		if (e->verdict != V_NONE && e->inode == m->inode &&
		    e->dev_major == m->dev_major && e->dev_minor == m->dev_minor)
			return e;
		/* a blocked HUNG entry is never evicted: it must stay known */
		if (!e->blocked && (!victim || e->verdict == V_NONE ||
				    (victim->verdict != V_NONE &&
				     e->since_ns < victim->since_ns)))
			victim = e;
	}
	if (!create || !victim)
		return NULL;
	memset(victim, 0, sizeof(*victim));
	victim->dev_major = m->dev_major;
	victim->dev_minor = m->dev_minor;
	victim->inode = m->inode;
	return victim;
}

static void job_put(struct job *j)
{
	if (--j->refs)
		return;
	free(j->m.path);
	free(j);
}

static void *gate_thread(void *arg)
{
	struct job *j = arg;
	struct file_gate *g = j->g;
	int ret = read_parts(j->pid, &j->m);
	bool free_gate = false;

	pthread_mutex_lock(&g->lock);
	j->ret = ret;
	j->done = true;
	if (j->abandoned) {
		struct entry *e = find(g, &j->m, false);

		if (e && e->verdict == V_HUNG) {
			e->blocked = false;	/* tried again after FILE_GATE_RETRY_NS */
		} else if (e && e->verdict == V_PENDING) {
			e->verdict = V_OK;	/* slow, not hung */
			e->blocked = false;
			e->since_ns = mono_ns();
		}
		for (uint32_t i = 0; i < g->nstuck; i++)
			if (g->stuck[i] == j) {
				g->stuck[i] = g->stuck[--g->nstuck];
				break;
			}
		free_gate = g->freed && !g->nstuck;
	}
	pthread_cond_broadcast(&g->done);
	job_put(j);
	pthread_mutex_unlock(&g->lock);
	if (free_gate) {
		pthread_mutex_destroy(&g->lock);
		pthread_cond_destroy(&g->done);
		free(g);
	}
	return NULL;
}

/* file_gate_new - see file_gate.h. */
struct file_gate *file_gate_new(uint64_t timeout_ns)
{
	struct file_gate *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;

	if (!g)
		return NULL;
	g->timeout_ns = timeout_ns ? timeout_ns : FILE_GATE_TIMEOUT_NS;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->done, &ca);
	pthread_condattr_destroy(&ca);
	return g;
}

/* file_gate_free - see file_gate.h. */
void file_gate_free(struct file_gate *g)
{
	bool leave;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->freed = true;
	leave = g->nstuck > 0;	/* the last blocked thread frees it */
	pthread_mutex_unlock(&g->lock);
	if (leave)
		return;
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->done);
	free(g);
}

static void warn_hung(const struct job *j)
{
	fprintf(stderr, "profd: warning: reading %s (mapped by pid %d) did not "
		"finish in %llu ms: its frames stay unsymbolized "
		"(partial.file_hung) and it is not read again while the read "
		"hangs\n", j->m.path, (int)j->pid,
		(unsigned long long)(FILE_GATE_HUNG_NS / 1000000));
}

/* Pending reads blocked for FILE_GATE_HUNG_NS become hung: warned, counted. */
static void sweep(struct file_gate *g, uint64_t now)
{
	for (uint32_t i = 0; i < g->nstuck; i++) {
		struct job *j = g->stuck[i];
		struct entry *e;

		if (j->declared || now - j->start_ns < FILE_GATE_HUNG_NS)
			continue;
		j->declared = true;
		g->st.timeouts++;
		counter_inc(&counter_file_read_timeouts);
		e = find(g, &j->m, true);
		if (e) {
			e->verdict = V_HUNG;
			e->blocked = true;
			e->since_ns = now;
		}
		warn_hung(j);
	}
}

/* Run a gate thread on @m and wait for it. Called and returns with g->lock held. */
static int try_read(struct file_gate *g, struct entry *e, pid_t pid,
		    const struct proc_mapping *m, uint64_t now)
{
	struct job *j = calloc(1, sizeof(*j));
	uint64_t deadline = now + g->timeout_ns;
	struct timespec ts = { .tv_sec = deadline / 1000000000ULL,
			       .tv_nsec = deadline % 1000000000ULL };
	pthread_attr_t attr;
	pthread_t t;
	int ret;

	if (!j)
		return -ENOMEM;
	j->g = g;
	j->refs = 2;
	j->pid = pid;
	j->m = *m;
	j->m.path = strdup(m->path);
	j->start_ns = now;
	if (!j->m.path) {
		free(j);
		return -ENOMEM;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	ret = pthread_create(&t, &attr, gate_thread, j);
	pthread_attr_destroy(&attr);
	if (ret) {
		free(j->m.path);
		free(j);
		return -ret;
	}
	g->st.checks++;
	/* a read in flight: another thread asking meanwhile is told pending,
	 * not given a second reader thread (and a second warning) */
	e->verdict = V_PENDING;
	e->blocked = true;
	e->since_ns = now;
	while (!j->done && pthread_cond_timedwait(&g->done, &g->lock, &ts) != ETIMEDOUT)
		;
	/* the lock was dropped while waiting: the slot may hold another file */
	e = find(g, m, true);
	if (j->done) {
		if (!e) {
			job_put(j);
			return 0;
		}
		/* open/read errors are the parsers' to meet; only time is ours */
		e->verdict = V_OK;
		e->since_ns = mono_ns();
		job_put(j);
		return 0;
	}
	j->abandoned = true;
	g->stuck[g->nstuck++] = j;
	if (e) {
		e->verdict = V_PENDING;
		e->blocked = true;
		e->since_ns = now;
	}
	job_put(j);
	return -EINPROGRESS;
}

/* Reads blocked on @m's device (lock held). */
static uint32_t stuck_on_dev(const struct file_gate *g, const struct proc_mapping *m)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < g->nstuck; i++)
		n += g->stuck[i]->m.dev_major == m->dev_major &&
		     g->stuck[i]->m.dev_minor == m->dev_minor;
	return n;
}

/* file_gate_check - see file_gate.h. */
int file_gate_check(struct file_gate *g, pid_t pid, const struct proc_mapping *m)
{
	uint64_t now = mono_ns();
	struct entry *e;
	int ret = 0;

	if (!g || !m->inode || m->special || !m->path[0])
		return 0;
	pthread_mutex_lock(&g->lock);
	sweep(g, now);
	e = find(g, m, true);
	if (!e) {
		/* every slot of this key holds a blocked file: refuse */
		ret = -EBUSY;
	} else if (e->verdict == V_OK && now - e->since_ns < FILE_GATE_OK_NS) {
		ret = 0;
	} else if (e->verdict == V_PENDING) {
		ret = -EINPROGRESS;
	} else if (e->verdict == V_HUNG &&
		   (e->blocked || now - e->since_ns < FILE_GATE_RETRY_NS)) {
		ret = -ETIMEDOUT;
	} else if (stuck_on_dev(g, m) >= FILE_GATE_MAX_STUCK_DEV) {
		/* its file system stopped answering: hung untried, tried again
		 * after FILE_GATE_RETRY_NS */
		fprintf(stderr, "profd: warning: not reading %s (mapped by pid %d): "
			"%d reads of its file system hang; its frames stay "
			"unsymbolized (partial.file_hung)\n", m->path, (int)pid,
			FILE_GATE_MAX_STUCK_DEV);
		e->verdict = V_HUNG;
		e->blocked = false;
		e->since_ns = now;
		g->st.timeouts++;
		counter_inc(&counter_file_read_timeouts);
		ret = -ETIMEDOUT;
	} else if (g->nstuck >= FILE_GATE_MAX_STUCK) {
		ret = e->verdict == V_HUNG ? -ETIMEDOUT : -EBUSY;
	} else {
		ret = try_read(g, e, pid, m, now);
	}
	if (ret == -ETIMEDOUT || ret == -EBUSY)
		g->st.refused++;
	pthread_mutex_unlock(&g->lock);
	return ret;
}

/* file_gate_stats - see file_gate.h. */
void file_gate_stats(struct file_gate *g, struct file_gate_stats *out)
{
	uint64_t now = mono_ns();

	memset(out, 0, sizeof(*out));
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	sweep(g, now);
	*out = g->st;
	for (uint32_t i = 0; i < g->nstuck; i++) {
		if (!g->stuck[i]->declared)
			continue;	/* slow so far, not hung */
		out->stuck_now++;
		if (now - g->stuck[i]->start_ns > out->stuck_oldest_ns)
			out->stuck_oldest_ns = now - g->stuck[i]->start_ns;
	}
	pthread_mutex_unlock(&g->lock);
}
