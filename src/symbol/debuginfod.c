// SPDX-License-Identifier: GPL-2.0
/*
 * debuginfod.c - debug files fetched by build ID in the background (see
 * debuginfod.h).
 *
 * Owns: the entries (a chained hash by build ID, never freed before the
 * fetcher: an object keeps a pointer to its entry), the queue of entries
 * waiting for a worker, the workers and their libdebuginfod clients, and
 * what a fetch ends in (ready, failed, rejected: counted). One mutex
 * guards the hash, the queue and every entry's path and retry time; an
 * entry's state is also read without it (atomic), by the reader thread.
 * The mutex is never held across a fetch, a file check or any I/O.
 *
 * A worker's fetch is bounded by libdebuginfod's own timeouts
 * (DEBUGINFOD_TIMEOUT for the transfer to start and keep moving,
 * DEBUGINFOD_MAXTIME for all of it, DEBUGINFOD_MAXSIZE for the size)
 * and by our progress callback, which cancels when profd stops, when
 * more than the cache's cap arrived, or after DBGD_FETCH_MAX_NS.
 *
 * What a failure means decides when it is asked again. libdebuginfod
 * (0.188, debuginfod-client.c) returns -ENOENT for every HTTP error
 * status alike, 404 or 500 or 503, and leaves its miss marker (an empty
 * file, believed for its cache_miss_s) for each. The status each server
 * answered is in the client's verbose output ("header HTTP/1.1 500 ...",
 * "url N The requested URL returned error: 500"), which each worker
 * keeps in a memfd: a 5xx from any server is a server error, not a miss,
 * and so is a transfer cut on the way ("server response Transferred a
 * partial file": curl's errors other than an HTTP status all come back
 * as -ENOENT), a failed fetch.
 * A miss (404 everywhere) or a rejected file is asked again after
 * DBGD_RETRY_S; a server error, a timeout or an unreachable server
 * after DBGD_ERROR_RETRY_S, doubled at each such failure in a row up to
 * DBGD_RETRY_S, with the client's miss marker deleted so that the retry
 * reaches the servers. A file that fails the check (from the cache, or
 * as it came) is deleted and fetched again at once, once: the second
 * file in a row that fails it fails the entry.
 */
#include <errno.h>
#include <elfutils/debuginfod.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "counters/counters.h"
#include "symbol/debuginfod.h"
#include "symbol/elf_file.h"
#include "util/clock.h"
#include "util/hash.h"

COUNTER_DEFINE(debuginfod_fetched, COUNTER_STAT,
	       "debug files fetched from debuginfod servers, checked and cached");
COUNTER_DEFINE(debuginfod_not_found, COUNTER_STAT,
	       "build IDs no debuginfod server had a debug file for (HTTP 404): "
	       "asked again after 10 minutes");
COUNTER_DEFINE(debuginfod_server_errors, COUNTER_STAT,
	       "debuginfod fetches a server answered with an error (HTTP 5xx): "
	       "asked again after 1 minute, doubling while it lasts");
COUNTER_DEFINE(debuginfod_failed, COUNTER_STAT,
	       "debuginfod fetches that failed: server unreachable, timed out, cut off "
	       "mid-transfer (asked again after 1 minute, doubling), too big, cancelled");
COUNTER_DEFINE(debuginfod_rejected, COUNTER_STAT,
	       "files debuginfod servers sent that were not the object's debug "
	       "file (another build ID, not ELF, no .symtab): deleted, never used");
COUNTER_DEFINE(debuginfod_dropped, COUNTER_STAT,
	       "debuginfod requests not queued (queue or build ID table full): "
	       "asked again later");
COUNTER_DEFINE(debuginfod_evicted, COUNTER_STAT,
	       "files deleted from the debuginfod cache for its size cap");

#define DBGD_BUCKETS		1024	/* power of two */
#define DBGD_BUILD_ID_MAX	128	/* hex digits (64 bytes) */
#define DBGD_FETCH_MAX_NS	(300ULL * 1000000000ULL)
#define DBGD_WARN_MAX		4	/* failures printed without -v */

struct dbgd_entry {
	struct dbgd_entry *next;	/* hash chain */
	struct dbgd_entry *qnext;	/* queue */
	int state;			/* enum dbgd_state; atomic */
	char *path;			/* DBGD_READY: the file in the cache */
	uint64_t retry_ns;		/* DBGD_FAILED: queued again from then */
	unsigned int errors;		/* server errors/timeouts in a row */
	unsigned int rejections;	/* files rejected in a row */
	char build_id[DBGD_BUILD_ID_MAX + 1];
};

struct dbgd_worker {
	struct dbgd_fetcher *d;
	pthread_t thread;
	unsigned int index;
	uint64_t start_ns;		/* CLOCK_MONOTONIC start of its fetch */
	int cancelled;			/* why progress() cancelled it, or 0 */
	int vfd;			/* memfd: the client's verbose output, or -1 */
};

struct dbgd_fetcher {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* queue not empty, or stop */
	pthread_cond_t exited;		/* a worker left */
	struct dbgd_entry *buckets[DBGD_BUCKETS];
	size_t nentries;
	struct dbgd_entry *qhead, *qtail;
	size_t qlen;
	bool stop;			/* atomic: read by progress callbacks */
	unsigned int running;		/* workers not exited yet */
	unsigned int started;
	struct dbgd_worker workers[DBGD_WORKERS];
	char *cache_dir;
	uint64_t cap;
	uint64_t error_retry_ns;	/* first retry after a server error */
	int verbose;
	unsigned int warned;		/* failures printed */
};

/* Set @name to @value unless it is set already (@force: always). */
static int env_default(const char *name, const char *value, bool force)
{
	if (!force && getenv(name))
		return 0;
	return setenv(name, value, 1) ? -errno : 0;
}

/* dbgd_env_setup - see debuginfod.h. */
int dbgd_env_setup(const struct dbgd_config *cfg)
{
	char num[32];
	int ret;

	ret = env_default(DEBUGINFOD_URLS_ENV_VAR, cfg->urls ? cfg->urls : "", true);
	if (!ret)
		ret = env_default(DEBUGINFOD_CACHE_PATH_ENV_VAR,
				  cfg->cache_dir ? cfg->cache_dir : DBGD_CACHE_DIR, true);
	snprintf(num, sizeof(num), "%d", DBGD_TIMEOUT_S);
	if (!ret)
		ret = env_default(DEBUGINFOD_TIMEOUT_ENV_VAR, num, false);
	snprintf(num, sizeof(num), "%d", DBGD_MAXTIME_S);
	if (!ret)
		ret = env_default(DEBUGINFOD_MAXTIME_ENV_VAR, num, false);
	snprintf(num, sizeof(num), "%" PRIu64, cfg->cache_bytes);
	if (!ret)
		ret = env_default(DEBUGINFOD_MAXSIZE_ENV_VAR, num, false);
	return ret;
}

/* dbgd_urls_valid - see debuginfod.h. */
bool dbgd_urls_valid(const char *s)
{
	static const char *const schemes[] = { "http://", "https://", "file://" };

	while (*s) {
		size_t n = strcspn(s, " "), i;

		for (i = 0; n && i < 3; i++)
			if (n > strlen(schemes[i]) &&
			    !strncmp(s, schemes[i], strlen(schemes[i])))
				break;
		if (n && i == 3)
			return false;
		s += n + (s[n] == ' ');
	}
	return true;
}

/* Lowercase hex, an even number of digits, at most DBGD_BUILD_ID_MAX. */
static bool valid_build_id(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (!n || n > DBGD_BUILD_ID_MAX || n % 2)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

static struct dbgd_entry **bucket(struct dbgd_fetcher *d, const char *id)
{
	return &d->buckets[fnv1a_str(id) & (DBGD_BUCKETS - 1)];
}

static void set_state(struct dbgd_entry *e, enum dbgd_state st)
{
	__atomic_store_n(&e->state, (int)st, __ATOMIC_RELEASE);
}

/* dbgd_entry_state - see debuginfod.h. */
enum dbgd_state dbgd_entry_state(const struct dbgd_entry *e)
{
	return (enum dbgd_state)__atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
}

/* Put @e at the queue's tail and wake a worker. Lock held. */
static void enqueue(struct dbgd_fetcher *d, struct dbgd_entry *e)
{
	set_state(e, DBGD_QUEUED);
	e->qnext = NULL;
	if (d->qtail)
		d->qtail->qnext = e;
	else
		d->qhead = e;
	d->qtail = e;
	d->qlen++;
	pthread_cond_signal(&d->work);
}

/* dbgd_request - see debuginfod.h. */
struct dbgd_entry *dbgd_request(struct dbgd_fetcher *d, const char *build_id)
{
	struct dbgd_entry **b, *e;

	if (!d || !valid_build_id(build_id))
		return NULL;
	pthread_mutex_lock(&d->lock);
	b = bucket(d, build_id);
	for (e = *b; e; e = e->next)
		if (!strcmp(e->build_id, build_id))
			break;
	if (e) {
		if (dbgd_entry_state(e) == DBGD_FAILED &&
		    clock_mono_ns() >= e->retry_ns && !d->stop) {
			if (d->qlen < DBGD_QUEUE_MAX)
				enqueue(d, e);
			else
				counter_inc(&counter_debuginfod_dropped);
		}
		pthread_mutex_unlock(&d->lock);
		return e;
	}
	if (d->nentries >= DBGD_ENTRIES_MAX || d->qlen >= DBGD_QUEUE_MAX || d->stop ||
	    !(e = calloc(1, sizeof(*e)))) {
		pthread_mutex_unlock(&d->lock);
		counter_inc(&counter_debuginfod_dropped);
		return NULL;
	}
	strcpy(e->build_id, build_id);	/* checked: at most DBGD_BUILD_ID_MAX */
	e->next = *b;
	*b = e;
	d->nentries++;
	enqueue(d, e);
	pthread_mutex_unlock(&d->lock);
	return e;
}

/* One line for a failed fetch: the first few, or all with -v. */
static void warn_failure(struct dbgd_fetcher *d, const struct dbgd_entry *e,
			 const char *what, int err, const char *url)
{
	unsigned int n = __atomic_fetch_add(&d->warned, 1, __ATOMIC_RELAXED);

	if (!d->verbose && n > DBGD_WARN_MAX)
		return;
	if (!d->verbose && n == DBGD_WARN_MAX) {
		fprintf(stderr, "profd: warning: debuginfod: more fetches failed; "
			"counted only (debuginfod_* counters; -v prints each)\n");
		return;
	}
	fprintf(stderr, "profd: warning: debuginfod: build ID %s: %s: %s%s%s\n",
		e->build_id, what, strerror(-err), url ? " from " : "", url ? url : "");
}

/*
 * Whether a fetch that failed with @err may work soon: a server error
 * (-EREMOTEIO, from the status it answered), a timeout, a server not
 * reached. Not a miss (-ENOENT), a file too big, a rejected file.
 */
static bool transient(int err)
{
	switch (err) {
	case -EREMOTEIO: case -ETIME: case -ETIMEDOUT: case -ECONNREFUSED:
	case -ECONNRESET: case -EHOSTUNREACH: case -ENETUNREACH: case -EAGAIN:
	case -EIO:
		return true;
	default:
		return false;
	}
}

/*
 * @e failed with @err: retried after DBGD_RETRY_S, or, for a transient
 * failure, after the fetcher's error retry doubled for each one in a row
 * before (at most DBGD_RETRY_S); counted by kind (unless profd is
 * stopping: a cancelled fetch). @rejected: a file came but was not the
 * object's.
 */
static void fail(struct dbgd_fetcher *d, struct dbgd_entry *e, int err,
		 bool rejected, const char *url)
{
	uint64_t wait_ns = DBGD_RETRY_S * 1000000000ULL;
	bool again = !rejected && transient(err);

	if (__atomic_load_n(&d->stop, __ATOMIC_RELAXED)) {
		/* cancelled as profd stops: not the server's failure */
	} else if (rejected) {
		counter_inc(&counter_debuginfod_rejected);
		warn_failure(d, e, err == -ESTALE ? "rejected: a file of another build ID" :
			     "rejected: not an ELF file with a .symtab", err, url);
	} else if (err == -ENOENT) {
		counter_inc(&counter_debuginfod_not_found);
		if (d->verbose)
			warn_failure(d, e, "no server has it", err, url);
	} else if (err == -EREMOTEIO) {
		counter_inc(&counter_debuginfod_server_errors);
		warn_failure(d, e, "server error (HTTP 5xx)", err, url);
	} else {
		counter_inc(&counter_debuginfod_failed);
		warn_failure(d, e, "fetch failed", err, url);
	}
	pthread_mutex_lock(&d->lock);
	if (again) {
		unsigned int shift = e->errors < 16 ? e->errors : 16;

		if (d->error_retry_ns << shift < wait_ns)
			wait_ns = d->error_retry_ns << shift;
		e->errors++;
	} else {
		e->errors = 0;
	}
	if (!rejected)
		e->rejections = 0;
	e->retry_ns = clock_mono_ns() + wait_ns;
	free(e->path);
	e->path = NULL;
	set_state(e, DBGD_FAILED);
	pthread_mutex_unlock(&d->lock);
}

/*
 * The HTTP status of a line of libdebuginfod's verbose output: a status
 * line ("header HTTP/1.1 500 Internal Server Error") or curl's error
 * for a URL ("url 0 The requested URL returned error: 500"); 0 if none.
 */
static int line_status(const char *line)
{
	const char *p = NULL;

	if (!strncmp(line, "header HTTP/", 12)) {
		p = strchr(line + 12, ' ');
	} else if (!strncmp(line, "url ", 4)) {
		p = strstr(line, "returned error: ");
		p = p ? p + 15 : NULL;
	}
	if (!p || p[0] != ' ' || p[1] < '1' || p[1] > '5' || p[2] < '0' ||
	    p[2] > '9' || p[3] < '0' || p[3] > '9')
		return 0;
	return (p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0');
}

/*
 * Whether a line of libdebuginfod's verbose output says a transfer
 * failed on the way ("server response <curl's error>"), not with an HTTP
 * status (CURLE_HTTP_RETURNED_ERROR: a 404 or a 5xx, told by
 * line_status()): a connection cut mid-file (CURLE_PARTIAL_FILE), which
 * libdebuginfod 0.188 reports as -ENOENT with a miss marker.
 */
static bool line_transfer_failed(const char *line)
{
	/* curl_easy_strerror()'s words for a transfer that went well, an
	 * HTTP status, and a file:// or other file that is not there */
	static const char *const not_failures[] = {
		"No error", "HTTP response code said error",
		"Couldn't read a file:// file", "Remote file not found",
	};
	static const char pre[] = "server response ";

	if (strncmp(line, pre, sizeof(pre) - 1))
		return false;
	for (size_t i = 0; i < sizeof(not_failures) / sizeof(not_failures[0]); i++)
		if (!strcmp(line + sizeof(pre) - 1, not_failures[i]))
			return false;
	return true;
}

/* What a line of the verbose output tells of a failure: see fetch_failure(). */
static int line_failure(const char *line)
{
	if (line_status(line) / 100 == 5)
		return -EREMOTEIO;
	return line_transfer_failed(line) ? -EIO : 0;
}

/*
 * Why the last fetch of @w, which libdebuginfod called a miss (-ENOENT),
 * failed, from its verbose output read line by line (a line longer than
 * the buffer is skipped): -EREMOTEIO when a server answered a 5xx
 * status, else -EIO when a transfer failed on the way, else 0 (a miss).
 */
static int fetch_failure(struct dbgd_worker *w)
{
	char buf[1024];
	size_t have = 0;
	off_t off = 0;
	bool skip = false;
	int found = 0, f;
	ssize_t r;

	if (w->vfd < 0)
		return 0;
	while (found != -EREMOTEIO && (r = pread(w->vfd, buf + have,
						 sizeof(buf) - 1 - have, off)) > 0) {
		char *line = buf, *nl;

		off += r;
		have += (size_t)r;
		buf[have] = '\0';
		while (found != -EREMOTEIO && (nl = strchr(line, '\n')) != NULL) {
			*nl = '\0';
			if (!skip && (f = line_failure(line)) && found != -EREMOTEIO)
				found = f;
			skip = false;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1) {	/* no end in sight: skip it */
			have = 0;
			skip = true;
		}
	}
	if (found != -EREMOTEIO && have && !skip) {
		buf[have] = '\0';
		if ((f = line_failure(buf)))
			found = f;
	}
	return found;
}

/* Empty @w's verbose output before a fetch. */
static void verbose_reset(struct dbgd_worker *w)
{
	if (w->vfd >= 0 && (ftruncate(w->vfd, 0) || lseek(w->vfd, 0, SEEK_SET))) {
		close(w->vfd);	/* cannot tell server errors from misses now */
		w->vfd = -1;
	}
}

/*
 * libdebuginfod's progress callback (about once a second while it waits,
 * more often while data arrives; @got: bytes so far): non-zero cancels,
 * the reason kept for fetch() (the library reports a cancelled fetch as
 * not found, and remembers it as a miss for its cache_miss_s).
 */
static int progress(debuginfod_client *c, long got, long total)
{
	struct dbgd_worker *w = debuginfod_get_user_data(c);

	(void)total;
	if (__atomic_load_n(&w->d->stop, __ATOMIC_RELAXED))
		w->cancelled = -ECANCELED;
	else if (got > 0 && (uint64_t)got > w->d->cap)
		w->cancelled = -EFBIG;	/* no Content-Length, or a lying one */
	else if (clock_mono_ns() - w->start_ns > DBGD_FETCH_MAX_NS)
		w->cancelled = -ETIME;
	return w->cancelled != 0;
}

/*
 * A fetch cancelled because profd stops is no miss, but libdebuginfod
 * remembers it as one (an empty file where the artifact goes, for its
 * cache_miss_s): the next run would not ask for 10 minutes. Delete that
 * marker: only an empty regular file at BUILDID/debuginfo, the client's
 * layout; if the layout differs, nothing is deleted.
 */
static void forget_miss(struct dbgd_fetcher *d, const struct dbgd_entry *e)
{
	struct stat st;
	char *path;

	if (asprintf(&path, "%s/%s/debuginfo", d->cache_dir, e->build_id) < 0)
		return;
	if (!lstat(path, &st) && S_ISREG(st.st_mode) && !st.st_size)
		unlink(path);
	free(path);
}

/*
 * Fetch @e's debug file with client @c, check it, and say how it went:
 * a file that fails the check is deleted and fetched again, once.
 */
static void fetch(struct dbgd_worker *w, debuginfod_client *c, struct dbgd_entry *e)
{
	struct dbgd_fetcher *d = w->d;
	const char *u;
	char *path = NULL, *url = NULL;
	int fd, ret, evicted;

again:
	w->start_ns = clock_mono_ns();
	w->cancelled = 0;
	verbose_reset(w);
	fd = c ? debuginfod_find_debuginfo(c, (const unsigned char *)e->build_id, 0,
					   &path) : -ENOMEM;
	if (fd < 0 && w->cancelled)	/* the library says -ENOENT then */
		fd = w->cancelled;
	/* the library says -ENOENT for a 5xx and a cut transfer too */
	if (fd == -ENOENT && (ret = fetch_failure(w)))
		fd = ret;
	/* not a miss: the client's marker would answer the retry */
	if (fd == -ECANCELED || (fd < 0 && transient(fd)))
		forget_miss(d, e);
	u = c ? debuginfod_get_url(c) : NULL;
	url = u ? strdup(u) : NULL;
	if (fd < 0) {
		fail(d, e, fd, false, url);
		goto out;
	}
	ret = elf_debug_file_check(fd, e->build_id);
	close(fd);
	if (!path)
		ret = ret ? ret : -ENOMEM;
	if (ret) {
		if (path)
			unlink(path);	/* never to be served from the cache */
		if (ret != -ENOMEM && !e->rejections++ &&
		    !__atomic_load_n(&d->stop, __ATOMIC_RELAXED)) {
			/* one more try: the bad file may have been the cache's */
			counter_inc(&counter_debuginfod_rejected);
			warn_failure(d, e, "rejected, fetched again", ret, url);
			free(path);
			free(url);
			path = url = NULL;
			goto again;
		}
		fail(d, e, ret, ret != -ENOMEM, url);
		goto out;
	}
	counter_inc(&counter_debuginfod_fetched);
	evicted = dbgd_cache_trim(d->cache_dir, d->cap, path);
	if (evicted > 0)
		counter_add(&counter_debuginfod_evicted, (uint64_t)evicted);
	if (d->verbose)
		fprintf(stderr, "profd: debuginfod: build ID %s: %s\n", e->build_id, path);
	pthread_mutex_lock(&d->lock);
	free(e->path);
	e->path = path;
	path = NULL;
	e->errors = 0;
	set_state(e, DBGD_READY);
	pthread_mutex_unlock(&d->lock);
out:
	free(path);
	free(url);
}

static void *worker_main(void *arg)
{
	struct dbgd_worker *w = arg;
	struct dbgd_fetcher *d = w->d;
	debuginfod_client *c = debuginfod_begin();
	struct dbgd_entry *e;
	int evicted;

	w->vfd = memfd_create("profd-debuginfod", MFD_CLOEXEC);
	if (c) {
		debuginfod_set_user_data(c, w);
		debuginfod_set_progressfn(c, progress);
		/* the HTTP status of a failure: fetch_failure() */
		if (w->vfd >= 0)
			debuginfod_set_verbose_fd(c, w->vfd);
	}
	if (w->index == 0) {
		/* a cap lowered since the last run applies from the start */
		evicted = dbgd_cache_trim(d->cache_dir, d->cap, NULL);
		if (evicted > 0)
			counter_add(&counter_debuginfod_evicted, (uint64_t)evicted);
	}
	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		e = d->qhead;
		if (!e) {
			pthread_cond_wait(&d->work, &d->lock);
			continue;
		}
		d->qhead = e->qnext;
		if (!d->qhead)
			d->qtail = NULL;
		d->qlen--;
		set_state(e, DBGD_FETCHING);
		pthread_mutex_unlock(&d->lock);
		fetch(w, c, e);
		pthread_mutex_lock(&d->lock);
	}
	d->running--;
	pthread_cond_broadcast(&d->exited);
	pthread_mutex_unlock(&d->lock);
	if (c)
		debuginfod_end(c);
	if (w->vfd >= 0)
		close(w->vfd);
	return NULL;
}

static void free_entries(struct dbgd_fetcher *d)
{
	for (size_t b = 0; b < DBGD_BUCKETS; b++) {
		struct dbgd_entry *e = d->buckets[b], *next;

		for (; e; e = next) {
			next = e->next;
			free(e->path);
			free(e);
		}
	}
}

/* dbgd_fetcher_new - see debuginfod.h. */
struct dbgd_fetcher *dbgd_fetcher_new(const struct dbgd_config *cfg,
				      char *why, size_t why_len)
{
	const char *dir = cfg->cache_dir ? cfg->cache_dir : DBGD_CACHE_DIR;
	struct dbgd_fetcher *d;
	int ret;

	if (!cfg->urls || !cfg->urls[0]) {
		snprintf(why, why_len, "no server URLs");
		return NULL;
	}
	ret = dbgd_mkdirs(dir);
	if (ret) {
		snprintf(why, why_len, "cannot make cache directory %s: %s", dir,
			 strerror(-ret));
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d || !(d->cache_dir = strdup(dir))) {
		free(d);
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	d->cap = cfg->cache_bytes;
	d->error_retry_ns = cfg->error_retry_ms ? cfg->error_retry_ms * 1000000ULL :
				DBGD_ERROR_RETRY_S * 1000000000ULL;
	d->verbose = cfg->verbose;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->work, NULL);
	pthread_cond_init(&d->exited, NULL);
	for (unsigned int i = 0; i < DBGD_WORKERS; i++) {
		struct dbgd_worker *w = &d->workers[i];

		w->d = d;
		w->index = i;
		pthread_mutex_lock(&d->lock);
		d->running++;
		pthread_mutex_unlock(&d->lock);
		if (pthread_create(&w->thread, NULL, worker_main, w)) {
			pthread_mutex_lock(&d->lock);
			d->running--;
			pthread_mutex_unlock(&d->lock);
			snprintf(why, why_len, "cannot start a worker thread");
			dbgd_fetcher_free(d, 5000000000ULL);
			return NULL;
		}
		pthread_setname_np(w->thread, "profd-debuginfod");
		d->started++;
	}
	return d;
}

/* dbgd_fetcher_free - see debuginfod.h. */
bool dbgd_fetcher_free(struct dbgd_fetcher *d, uint64_t wait_ns)
{
	struct timespec until;
	bool stopped;

	if (!d)
		return true;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(wait_ns / 1000000000ULL);
	until.tv_nsec += (long)(wait_ns % 1000000000ULL);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&d->lock);
	__atomic_store_n(&d->stop, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&d->work);
	while (d->running &&
	       pthread_cond_timedwait(&d->exited, &d->lock, &until) != ETIMEDOUT)
		;
	stopped = !d->running;
	pthread_mutex_unlock(&d->lock);
	if (!stopped)
		return false;	/* left running with what it uses */
	for (unsigned int i = 0; i < d->started; i++)
		pthread_join(d->workers[i].thread, NULL);
	free_entries(d);
	pthread_cond_destroy(&d->exited);
	pthread_cond_destroy(&d->work);
	pthread_mutex_destroy(&d->lock);
	free(d->cache_dir);
	free(d);
	return true;
}

/* dbgd_entry_open - see debuginfod.h. */
int dbgd_entry_open(struct dbgd_fetcher *d, struct dbgd_entry *e)
{
	static const struct timespec now_atime[2] = {
		{ .tv_nsec = UTIME_NOW }, { .tv_nsec = UTIME_OMIT },
	};
	char *path = NULL;
	int fd;

	pthread_mutex_lock(&d->lock);
	if (dbgd_entry_state(e) == DBGD_READY && e->path)
		path = strdup(e->path);
	pthread_mutex_unlock(&d->lock);
	if (!path)
		return dbgd_entry_state(e) == DBGD_READY ? -ENOMEM : -EAGAIN;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		fd = -errno;
		fail(d, e, fd, false, NULL);
	} else {
		futimens(fd, now_atime);	/* used now: evicted last */
	}
	free(path);
	return fd;
}

/* dbgd_entry_reject - see debuginfod.h. */
void dbgd_entry_reject(struct dbgd_fetcher *d, struct dbgd_entry *e, int why)
{
	bool again;

	pthread_mutex_lock(&d->lock);
	if (e->path)
		unlink(e->path);
	again = !e->rejections++ && !d->stop && d->qlen < DBGD_QUEUE_MAX &&
		dbgd_entry_state(e) == DBGD_READY;
	if (again) {
		free(e->path);
		e->path = NULL;
		enqueue(d, e);	/* fetched again at once, once */
	}
	pthread_mutex_unlock(&d->lock);
	if (again) {
		counter_inc(&counter_debuginfod_rejected);
		warn_failure(d, e, "rejected, fetched again", why, NULL);
		return;
	}
	fail(d, e, why, true, NULL);
}
