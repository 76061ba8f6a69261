// SPDX-License-Identifier: GPL-2.0
/*
 * resource.c - OTLP resources of processes and of profd's host (see
 * resource.h).
 *
 * Owns: reading a process's identity from /proc (exe, cmdline, environ's
 * OTEL_SERVICE_NAME, stat's start time), the host's (gethostname,
 * /etc/machine-id), and the cache of the resulting attribute lists by
 * pid. Attribute names follow the OpenTelemetry semantic conventions
 * (service, process, container, host, telemetry resources); the external
 * labels (--label) come next, and OTEL_RESOURCE_ATTRIBUTES fills in what
 * is left, per the SDK resource specification.
 *
 * How it fits: every exporter path (profiles, NVTX spans and logs) asks
 * for a pid's resource and gets the same attributes and the same
 * otlp_resource.key, so batches group by key and backends can join
 * signals. A cached entry is re-checked at most once a second against
 * the process's start time: a reused pid gets a new entry. An entry that
 * leaves the cache (pid reused, otlp_resources_forget()) is retired and
 * freed GRACE_NS later, so a caller on another thread that got it just
 * before is never left holding freed memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "export/resource.h"
#include "proc/cgroup.h"
#include "proc/process.h"
#include "util/utf8.h"
#include "util/version.h"

#define RES_OWN_ATTRS	11	/* service, process.*, container.id, host, telemetry */
#define RES_MAX_OWNED	8
#define RECHECK_NS	1000000000ull
#define GRACE_NS	(10 * 1000000000ull)	/* retired entries outlive their users */
#define CMDLINE_MAX	4096
#define ENVIRON_MAX	(256u << 10)

struct entry {
	struct entry *next;		/* hash chain, or retired list */
	pid_t pid;
	unsigned long long start;	/* /proc/PID/stat starttime; 0: unknown */
	bool no_exe;			/* built without an executable path */
	uint64_t checked_ns;		/* CLOCK_MONOTONIC of the last check */
	uint64_t retired_ns;		/* when it left the cache */
	struct otlp_resource res;
	char *owned[RES_MAX_OWNED];	/* strings the attributes point into */
	uint32_t nowned;
	uint32_t cap;			/* of attrs */
	struct otlp_attr attrs[];
};

struct otlp_resources {
	pthread_mutex_t lock;
	char *service_name;		/* profd's OTEL_SERVICE_NAME, or NULL */
	char *keys[OTLP_MAX_RESOURCE_ATTRS], *values[OTLP_MAX_RESOURCE_ATTRS];
	unsigned int nresource;
	char *label_keys[RES_MAX_LABELS], *label_values[RES_MAX_LABELS];
	unsigned int nlabels;		/* otlp_resources_add_label() */
	char *host_name, *host_id;	/* NULL: unknown */
	struct entry *host;
	struct entry **buckets;
	uint32_t nbuckets, count;	/* nbuckets: power of two */
	struct entry *retired;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * read_file - up to @max bytes of @path, NUL-terminated (malloc'ed, the
 * length in *@len). NULL when unreadable or out of memory.
 */
static char *read_file(const char *path, size_t max, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1), *nb;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0 || !buf)
		goto fail;
	for (;;) {
		if (n == cap) {
			if (cap >= max)
				break;
			cap = cap * 2 > max ? max : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb)
				goto fail;
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		n += r;
	}
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/* starttime (field 22) of /proc/@pid/stat, in clock ticks; 0 if unreadable. */
static unsigned long long proc_start_time(pid_t pid)
{
	unsigned long long start = 0;
	char path[64], *buf, *p;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	buf = read_file(path, 4096, &len);
	if (!buf)
		return 0;
	/* comm may hold spaces and parentheses: count from the last ')' */
	p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		start = strtoull(p + 1, NULL, 10);
	free(buf);
	return start;
}

/* Keep @s (malloc'ed, may be NULL) in @x, made valid UTF-8. Returns it or NULL. */
static const char *own(struct entry *x, char *s)
{
	if (!s)
		return NULL;
	if (!utf8_valid(s)) {
		char *r = utf8_repair(s);

		free(s);
		s = r;
		if (!s)
			return NULL;
	}
	if (x->nowned == RES_MAX_OWNED) {
		free(s);
		return NULL;
	}
	x->owned[x->nowned++] = s;
	return s;
}

static void add_str(struct entry *x, const char *key, const char *val)
{
	struct otlp_attr *a;

	if (!val || x->res.nattrs == x->cap)
		return;
	for (uint32_t i = 0; i < x->res.nattrs; i++)
		if (strcmp(x->attrs[i].key, key) == 0)
			return;		/* the first value of a key wins */
	a = &x->attrs[x->res.nattrs++];
	a->key = key;
	a->type = OTLP_VALUE_STRING;
	a->str = val;
}

static void add_int(struct entry *x, const char *key, int64_t val)
{
	struct otlp_attr *a;

	if (x->res.nattrs == x->cap)
		return;
	a = &x->attrs[x->res.nattrs++];
	a->key = key;
	a->type = OTLP_VALUE_INT;
	a->i = val;
}

/* The value of OTEL_SERVICE_NAME in /proc/@pid/environ (malloc'ed), or NULL. */
static char *proc_service_name(pid_t pid)
{
	static const char var[] = "OTEL_SERVICE_NAME=";
	char path[64], *buf, *p, *name = NULL;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	buf = read_file(path, ENVIRON_MAX, &len);
	if (!buf)
		return NULL;
	for (p = buf; p < buf + len; p += strlen(p) + 1) {
		if (strncmp(p, var, sizeof(var) - 1) == 0 && p[sizeof(var) - 1]) {
			free(name);	/* the last definition wins, as getenv's */
			name = strdup(p + sizeof(var) - 1);
		}
	}
	free(buf);
	return name;
}

/* /proc/@pid/cmdline with arguments joined by spaces (malloc'ed), or NULL. */
static char *proc_cmdline(pid_t pid)
{
	char path[64], *buf;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	buf = read_file(path, CMDLINE_MAX, &len);
	if (!buf)
		return NULL;
	while (len && !buf[len - 1])
		len--;
	buf[len] = 0;
	for (size_t i = 0; i < len; i++)
		if (!buf[i])
			buf[i] = ' ';
	if (!len) {		/* kernel threads, zombies */
		free(buf);
		return NULL;
	}
	return buf;
}

/* /proc/@pid/exe's target (malloc'ed) without " (deleted)", or NULL. */
static char *proc_exe(pid_t pid)
{
	char path[64], buf[4096];
	ssize_t n;
	size_t dl = strlen(" (deleted)");

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	if ((size_t)n > dl && strcmp(buf + n - dl, " (deleted)") == 0)
		buf[n - dl] = 0;
	return strdup(buf);
}

/*
 * The attributes every resource shares: the external labels, host and
 * telemetry, then OTEL_RESOURCE_ATTRIBUTES.
 */
static void add_common(struct otlp_resources *rs, struct entry *x)
{
	for (unsigned int i = 0; i < rs->nlabels; i++)
		add_str(x, rs->label_keys[i], rs->label_values[i]);
	add_str(x, "host.name", rs->host_name);
	add_str(x, "host.id", rs->host_id);
	add_str(x, "telemetry.sdk.name", "profd");
	add_str(x, "telemetry.sdk.language", "c");
	add_str(x, "telemetry.sdk.version", PROFD_VERSION);
	for (unsigned int i = 0; i < rs->nresource; i++)
		add_str(x, rs->keys[i], rs->values[i]);
}

static void entry_free(struct entry *x)
{
	for (uint32_t i = 0; i < x->nowned; i++)
		free(x->owned[i]);
	free(x);
}

/* A copy of hint string @s, or NULL when there is none. */
static char *hint_dup(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/*
 * A new entry for @pid (0: the host), from /proc and, for what /proc no
 * longer tells, from @h (may be NULL). NULL on out of memory.
 */
static struct entry *entry_new(struct otlp_resources *rs, pid_t pid,
			       const struct otlp_process_hint *h)
{
	const char *comm = h ? h->comm : NULL;
	uint32_t cap = RES_OWN_ATTRS + rs->nlabels + rs->nresource;
	struct entry *x = calloc(1, sizeof(*x) + cap * sizeof(x->attrs[0]));
	const char *service = NULL, *exe = NULL, *name = NULL, *cmdline;
	char *buf, cg[4096], id[CGROUP_CONTAINER_ID_LEN];

	if (!x)
		return NULL;
	x->cap = cap;
	x->pid = pid;
	x->res.attrs = x->attrs;
	x->checked_ns = mono_ns();
	if (pid <= 0) {
		service = rs->service_name;
		for (unsigned int i = 0; !service && i < rs->nresource; i++)
			if (strcmp(rs->keys[i], "service.name") == 0)
				service = rs->values[i];
		add_str(x, "service.name", service ? service : "unknown_service:profd");
		add_common(rs, x);
		return x;
	}

	x->start = proc_start_time(pid);
	x->res.key = (uint64_t)pid << 32 | (x->start & 0xffffffffu);
	service = own(x, proc_service_name(pid));
	if (!service && h)
		service = own(x, hint_dup(h->service_name));
	exe = own(x, proc_exe(pid));
	if (!exe && h)
		exe = own(x, hint_dup(h->exe_path));
	x->no_exe = !exe;
	if (exe) {
		const char *slash = strrchr(exe, '/');

		name = slash ? slash + 1 : exe;
	} else if (comm && *comm) {
		name = own(x, strdup(comm));
	} else {
		char c[64];

		proc_read_comm(pid, 0, c, sizeof(c));
		if (c[0])
			name = own(x, strdup(c));
	}
	if (!service)
		service = rs->service_name;
	for (unsigned int i = 0; !service && i < rs->nresource; i++)
		if (strcmp(rs->keys[i], "service.name") == 0)
			service = rs->values[i];
	if (!service && name) {
		if (asprintf(&buf, "unknown_service:%s", name) < 0)
			buf = NULL;
		service = own(x, buf);
	}
	add_str(x, "service.name", service ? service : "unknown_service");
	add_int(x, "process.pid", pid);
	add_str(x, "process.executable.name", name);
	add_str(x, "process.executable.path", exe);
	cmdline = own(x, proc_cmdline(pid));
	if (!cmdline && h)
		cmdline = own(x, hint_dup(h->command_line));
	add_str(x, "process.command_line", cmdline);
	if (!proc_read_cgroup(pid, cg, sizeof(cg)) &&
	    cgroup_container_id(cg, id, sizeof(id)))
		add_str(x, "container.id", own(x, strdup(id)));
	add_common(rs, x);
	return x;
}

/* A copy of @s made valid UTF-8, or NULL on out of memory. */
static char *dup_utf8(const char *s)
{
	return utf8_valid(s) ? strdup(s) : utf8_repair(s);
}

/* Move @x (already unlinked) to the retired list; free those past grace. */
static void retire(struct otlp_resources *rs, struct entry *x, uint64_t now)
{
	struct entry **pp = &rs->retired, *y;

	x->retired_ns = now;
	x->next = rs->retired;
	rs->retired = x;
	while ((y = *pp)) {
		if (now - y->retired_ns > GRACE_NS) {
			*pp = y->next;
			entry_free(y);
		} else {
			pp = &y->next;
		}
	}
}

static uint32_t bucket(const struct otlp_resources *rs, pid_t pid)
{
	return ((uint32_t)pid * 2654435761u) & (rs->nbuckets - 1);
}

static void rehash(struct otlp_resources *rs)
{
	uint32_t n = rs->nbuckets * 2, old = rs->nbuckets;
	struct entry **b = calloc(n, sizeof(*b)), **ob = rs->buckets;

	if (!b)
		return;		/* longer chains, still correct */
	rs->buckets = b;
	rs->nbuckets = n;
	for (uint32_t i = 0; i < old; i++) {
		for (struct entry *x = ob[i], *next; x; x = next) {
			uint32_t j = bucket(rs, x->pid);

			next = x->next;
			x->next = b[j];
			b[j] = x;
		}
	}
	free(ob);
}

struct otlp_resources *otlp_resources_new(const struct otlp_config *c)
{
	struct otlp_resources *rs = calloc(1, sizeof(*rs));
	char host[256];
	size_t len;

	if (!rs)
		return NULL;
	pthread_mutex_init(&rs->lock, NULL);
	rs->nbuckets = 256;
	rs->buckets = calloc(rs->nbuckets, sizeof(*rs->buckets));
	if (!rs->buckets)
		goto oom;
	if (c && c->service_name && !(rs->service_name = dup_utf8(c->service_name)))
		goto oom;
	for (unsigned int i = 0; c && i < c->nresource; i++) {
		rs->keys[i] = dup_utf8(c->resource_keys[i]);
		rs->values[i] = dup_utf8(c->resource_values[i]);
		rs->nresource = i + 1;
		if (!rs->keys[i] || !rs->values[i])
			goto oom;
	}
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = 0;
		rs->host_name = dup_utf8(host);
	}
	rs->host_id = read_file("/etc/machine-id", 256, &len);
	if (rs->host_id) {
		while (len && (rs->host_id[len - 1] == '\n' || rs->host_id[len - 1] == ' '))
			rs->host_id[--len] = 0;
		if (!len || !utf8_valid(rs->host_id)) {
			free(rs->host_id);
			rs->host_id = NULL;
		}
	}
	rs->host = entry_new(rs, 0, NULL);
	if (!rs->host)
		goto oom;
	return rs;
oom:
	otlp_resources_free(rs);
	return NULL;
}

int otlp_resources_add_label(struct otlp_resources *rs, const char *key,
			     const char *value)
{
	struct entry *host;
	char *k, *v;
	unsigned int i;

	if (!rs || !key || !*key || !value)
		return -EINVAL;
	for (i = 0; i < rs->nlabels; i++)
		if (!strcmp(rs->label_keys[i], key))
			break;
	if (i == RES_MAX_LABELS)
		return -ENOSPC;
	k = i < rs->nlabels ? NULL : dup_utf8(key);
	v = dup_utf8(value);
	if ((i == rs->nlabels && !k) || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	if (i == rs->nlabels) {
		rs->label_keys[i] = k;
		rs->nlabels++;
	} else {
		free(rs->label_values[i]);
	}
	rs->label_values[i] = v;
	/* the host's resource was built without it */
	host = entry_new(rs, 0, NULL);
	if (!host)
		return -ENOMEM;
	entry_free(rs->host);
	rs->host = host;
	return 0;
}

const struct otlp_resource *otlp_resources_get(struct otlp_resources *rs, pid_t pid,
					       const struct otlp_process_hint *hint)
{
	struct entry **pp, *x;
	uint64_t now;

	if (!rs)
		return NULL;
	if (pid <= 0)
		return &rs->host->res;
	pthread_mutex_lock(&rs->lock);
	for (pp = &rs->buckets[bucket(rs, pid)]; (x = *pp); pp = &x->next)
		if (x->pid == pid)
			break;
	now = mono_ns();
	if (x && now - x->checked_ns >= RECHECK_NS) {
		unsigned long long start = proc_start_time(pid);

		x->checked_ns = now;
		if (start && start != x->start) {
			/* the pid was reused: retire the old entry */
			*pp = x->next;
			rs->count--;
			retire(rs, x, now);
			x = NULL;
		}
	}
	if (x && x->no_exe && hint && hint->exe_path && hint->exe_path[0]) {
		/* built after the process was gone: what it says of itself */
		*pp = x->next;
		rs->count--;
		retire(rs, x, now);
		x = NULL;
	}
	if (!x) {
		x = entry_new(rs, pid, hint);
		if (x) {
			uint32_t j = bucket(rs, pid);

			x->next = rs->buckets[j];
			rs->buckets[j] = x;
			if (++rs->count > rs->nbuckets * 2)
				rehash(rs);
		}
	}
	pthread_mutex_unlock(&rs->lock);
	return x ? &x->res : NULL;
}

void otlp_resources_forget(struct otlp_resources *rs, pid_t pid)
{
	struct entry **pp, *x;

	if (!rs || pid <= 0)
		return;
	pthread_mutex_lock(&rs->lock);
	for (pp = &rs->buckets[bucket(rs, pid)]; (x = *pp); pp = &x->next) {
		if (x->pid == pid) {
			*pp = x->next;
			rs->count--;
			retire(rs, x, mono_ns());
			break;
		}
	}
	pthread_mutex_unlock(&rs->lock);
}

void otlp_resources_free(struct otlp_resources *rs)
{
	struct entry *x, *next;

	if (!rs)
		return;
	for (uint32_t i = 0; rs->buckets && i < rs->nbuckets; i++)
		for (x = rs->buckets[i]; x; x = next) {
			next = x->next;
			entry_free(x);
		}
	for (x = rs->retired; x; x = next) {
		next = x->next;
		entry_free(x);
	}
	if (rs->host)
		entry_free(rs->host);
	free(rs->buckets);
	free(rs->service_name);
	for (unsigned int i = 0; i < rs->nresource; i++) {
		free(rs->keys[i]);
		free(rs->values[i]);
	}
	for (unsigned int i = 0; i < rs->nlabels; i++) {
		free(rs->label_keys[i]);
		free(rs->label_values[i]);
	}
	free(rs->host_name);
	free(rs->host_id);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}
