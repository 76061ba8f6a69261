// SPDX-License-Identifier: GPL-2.0
/*
 * flamegraph.c - self-contained HTML flame graph (see flamegraph.h).
 *
 * Owns: the merged call tree and the page that draws it.
 *
 * The tree: nodes live in one array (node 0 is the root "all"), linked
 * parent -> first child -> next sibling. A child is found by one hash
 * table keyed on (parent, name, kind), so merging a sample costs O(depth).
 * Names are interned in the tree's own string table, because the
 * profiles merged into it are freed long before the page is written.
 *
 * The page: one HTML file, inline CSS and JS, a CSP that forbids any
 * network access. The tree is embedded as JSON in a
 * <script type="application/json"> block: a name table plus a flat
 * preorder array of (name index, value, kind, child count), children
 * sorted by name. Every string is escaped so that no byte sequence in a
 * symbol name (`</script>`, quotes, control characters, invalid UTF-8)
 * can end the block or break JSON.parse. The script builds DOM elements
 * with textContent (never innerHTML) and draws only frames wider than
 * 0.1% of the zoomed frame, so 100k-node trees stay fast.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/flamegraph.h"

#define KERNEL_MAPPING	"[kernel.kallsyms]"

/* Frame kinds, as the page's KINDS array numbers them. */
enum fg_kind {
	FG_ROOT = 0,
	FG_PROCESS = 1,
	FG_USER = 2,
	FG_KERNEL = 3,
};

struct fg_node {
	uint64_t value;		/* weight of this frame and everything above */
	uint32_t name;		/* index into fg->names */
	uint32_t first_child;	/* 0 = none: the root is never a child */
	uint32_t next_sibling;
	uint32_t parent;
	uint8_t kind;		/* enum fg_kind */
};

/* Open-addressing table of 0-based indices; slots hold index + 1. */
struct fg_slots {
	uint32_t *slots;
	uint32_t cap;		/* power of two */
	uint32_t n;
};

struct flamegraph {
	struct fg_node *nodes;
	uint32_t nnodes, cap_nodes;
	struct fg_slots children;	/* (parent, name, kind) -> node */

	char **names;
	uint32_t nnames, cap_names;
	struct fg_slots name_set;	/* name -> index */
};

static uint64_t hash_bytes(const void *data, size_t len, uint64_t h)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {	/* FNV-1a */
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define HASH_SEED 0xcbf29ce484222325ULL

static uint64_t name_hash(const char *s)
{
	return hash_bytes(s, strlen(s), HASH_SEED);
}

static uint64_t child_hash(uint32_t parent, uint32_t name, uint8_t kind)
{
	uint64_t h = hash_bytes(&parent, sizeof(parent), HASH_SEED);

	h = hash_bytes(&name, sizeof(name), h);
	return hash_bytes(&kind, sizeof(kind), h);
}

static uint64_t slot_hash(const struct flamegraph *fg, struct fg_slots *set,
			  uint32_t idx)
{
	const struct fg_node *n;

	if (set == &fg->name_set)
		return name_hash(fg->names[idx]);
	n = &fg->nodes[idx];
	return child_hash(n->parent, n->name, n->kind);
}

/* Double @set's capacity when it is 3/4 full. Returns 0 or -ENOMEM. */
static int slots_reserve(struct flamegraph *fg, struct fg_slots *set)
{
	uint32_t cap, *slots;

	if ((set->n + 1) * 4 < set->cap * 3)
		return 0;
	cap = set->cap ? set->cap * 2 : 1024;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < set->cap; i++) {
		uint32_t j;

		if (!set->slots[i])
			continue;
		j = slot_hash(fg, set, set->slots[i] - 1) & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = set->slots[i];
	}
	free(set->slots);
	set->slots = slots;
	set->cap = cap;
	return 0;
}

static int grow(void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
	uint32_t ncap;
	void *na;

	if (n < *cap)
		return 0;
	if (*cap >= UINT32_MAX / 2)
		return -ENOMEM;
	ncap = *cap ? *cap * 2 : 256;
	na = realloc(*arr, (size_t)ncap * elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

/* Index of @s in the name table, adding a copy if new; -ENOMEM. */
static int64_t fg_intern(struct flamegraph *fg, const char *s)
{
	struct fg_slots *set = &fg->name_set;
	uint32_t j;

	if (slots_reserve(fg, set))
		return -ENOMEM;
	for (j = name_hash(s) & (set->cap - 1); set->slots[j];
	     j = (j + 1) & (set->cap - 1)) {
		if (strcmp(fg->names[set->slots[j] - 1], s) == 0)
			return set->slots[j] - 1;
	}
	if (grow((void **)&fg->names, &fg->cap_names, fg->nnames,
		 sizeof(*fg->names)))
		return -ENOMEM;
	fg->names[fg->nnames] = strdup(s);
	if (!fg->names[fg->nnames])
		return -ENOMEM;
	set->slots[j] = ++fg->nnames;
	set->n++;
	return fg->nnames - 1;
}

/* The child of @parent called @name of @kind, created if new; -ENOMEM. */
static int64_t fg_child(struct flamegraph *fg, uint32_t parent, uint32_t name,
			uint8_t kind)
{
	struct fg_slots *set = &fg->children;
	struct fg_node *n;
	uint32_t j;

	if (slots_reserve(fg, set))
		return -ENOMEM;
	for (j = child_hash(parent, name, kind) & (set->cap - 1);
	     set->slots[j]; j = (j + 1) & (set->cap - 1)) {
		n = &fg->nodes[set->slots[j] - 1];
		if (n->parent == parent && n->name == name && n->kind == kind)
			return set->slots[j] - 1;
	}
	if (grow((void **)&fg->nodes, &fg->cap_nodes, fg->nnodes,
		 sizeof(*fg->nodes)))
		return -ENOMEM;
	n = &fg->nodes[fg->nnodes];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->kind = kind;
	n->parent = parent;
	n->next_sibling = fg->nodes[parent].first_child;
	fg->nodes[parent].first_child = fg->nnodes;
	set->slots[j] = ++fg->nnodes;
	set->n++;
	return fg->nnodes - 1;
}

struct flamegraph *flamegraph_new(void)
{
	struct flamegraph *fg = calloc(1, sizeof(*fg));

	if (!fg)
		return NULL;
	/* Node 0: the root, named "all" (name index 0). */
	if (fg_intern(fg, "all") != 0 ||
	    grow((void **)&fg->nodes, &fg->cap_nodes, 0, sizeof(*fg->nodes))) {
		flamegraph_free(fg);
		return NULL;
	}
	memset(&fg->nodes[0], 0, sizeof(fg->nodes[0]));
	fg->nodes[0].kind = FG_ROOT;
	fg->nnodes = 1;
	return fg;
}

void flamegraph_free(struct flamegraph *fg)
{
	if (!fg)
		return;
	for (uint32_t i = 0; i < fg->nnames; i++)
		free(fg->names[i]);
	free(fg->names);
	free(fg->name_set.slots);
	free(fg->nodes);
	free(fg->children.slots);
	free(fg);
}

uint64_t flamegraph_total(const struct flamegraph *fg)
{
	return fg->nodes[0].value;
}

static bool is_kernel_mapping(const struct profile_mapping *m)
{
	return m && m->filename &&
	       strncmp(m->filename, KERNEL_MAPPING,
		       sizeof(KERNEL_MAPPING) - 1) == 0;
}

/*
 * Name index and kind of location @id, interned on first use and cached
 * in @cache (name + 1, 0 = not yet) and @kinds. Returns the name index or
 * -ENOMEM.
 */
static int64_t location_frame(struct flamegraph *fg, const struct profile *p,
			      uint32_t id, uint32_t *cache, uint8_t *kinds)
{
	const struct profile_location *loc = profile_location(p, id);
	const struct profile_mapping *m;
	const struct profile_function *f;
	char buf[4200];
	const char *name = NULL;
	int64_t idx;

	if (loc && cache[id])
		return cache[id] - 1;
	m = loc ? profile_mapping(p, loc->mapping_id) : NULL;
	f = loc ? profile_function(p, loc->function_id) : NULL;
	if (f && f->name && *f->name)
		name = f->name;
	else if (f && f->system_name && *f->system_name)
		name = f->system_name;
	else if (m && m->filename && *m->filename)
		snprintf(buf, sizeof(buf), "[unknown] 0x%" PRIx64 " (%s)",
			 loc->address, m->filename);
	else
		snprintf(buf, sizeof(buf), "[unknown] 0x%" PRIx64,
			 loc ? loc->address : 0);
	idx = fg_intern(fg, name ? name : buf);
	if (idx >= 0 && loc) {
		cache[id] = idx + 1;
		kinds[id] = is_kernel_mapping(m) ? FG_KERNEL : FG_USER;
	}
	return idx;
}

static const char *sample_comm(const struct profile_sample *s)
{
	for (uint32_t i = 0; i < s->nlabels; i++) {
		const struct profile_label *l = &s->labels[i];

		if (l->key && l->str && *l->str && strcmp(l->key, "comm") == 0)
			return l->str;
	}
	return NULL;
}

int flamegraph_add_profile(struct flamegraph *fg, const struct profile *p,
			   uint32_t value_index)
{
	uint32_t *cache = NULL, *path = NULL, maxdepth = 0;
	uint8_t *kinds = NULL;
	int err = 0;

	if (value_index >= p->nsample_types)
		return -EINVAL;
	for (uint32_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].nlocations > maxdepth)
			maxdepth = p->samples[i].nlocations;
	cache = calloc(p->nlocations + 1, sizeof(*cache));
	kinds = calloc(p->nlocations + 1, sizeof(*kinds));
	/* Nodes of one sample's path: comm + one per frame. */
	path = calloc((size_t)maxdepth + 1, sizeof(*path));
	if (!cache || !kinds || !path) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const char *comm = sample_comm(s);
		int64_t w = s->values[value_index], idx, node = 0;
		uint32_t depth = 0;

		if (w <= 0)
			continue;
		/* Find or create the whole path first, then add the weight. */
		if (comm) {
			idx = fg_intern(fg, comm);
			if (idx >= 0)
				node = fg_child(fg, 0, idx, FG_PROCESS);
			if (idx < 0 || node < 0) {
				err = -ENOMEM;
				goto out;
			}
			path[depth++] = node;
		}
		for (uint32_t j = s->nlocations; j-- > 0;) {
			uint32_t id = s->location_ids[j];

			if (id > p->nlocations)
				continue;
			idx = location_frame(fg, p, id, cache, kinds);
			if (idx >= 0)
				node = fg_child(fg, node, idx,
						kinds[id] ? kinds[id] : FG_USER);
			if (idx < 0 || node < 0) {
				err = -ENOMEM;
				goto out;
			}
			path[depth++] = node;
		}
		fg->nodes[0].value += w;
		for (uint32_t j = 0; j < depth; j++)
			fg->nodes[path[j]].value += w;
	}
out:
	free(path);
	free(kinds);
	free(cache);
	return err;
}

/* Output buffer; the first failure sticks in err. */
struct sbuf {
	char *p;
	size_t n, cap;
	int err;
};

static void sb_put(struct sbuf *b, const void *data, size_t len)
{
	if (b->err)
		return;
	if (b->n + len > b->cap) {
		size_t cap = b->cap ? b->cap : 64 * 1024;
		char *np;

		while (cap < b->n + len)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, len);
	b->n += len;
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		b->err = b->err ? b->err : -EINVAL;
	else
		sb_put(b, tmp, n);
}

/*
 * Length of the valid UTF-8 sequence at @s (@left bytes available), or 0
 * if it is invalid: overlong forms, surrogates and code points past
 * U+10FFFF are invalid too.
 */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (left < len)
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/*
 * @s as a JSON string that is also safe inside a <script> element: '<',
 * '>' and '&' are \u-escaped (so no "</script>" or "<!--"), as are control
 * characters and U+2028/9; invalid UTF-8 bytes become U+FFFD.
 */
static void sb_json_str(struct sbuf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t left = strlen(str);

	sb_put(b, "\"", 1);
	while (left) {
		size_t len = utf8_len(s, left), run = 0;

		if (len == 1 && *s >= 0x20 && *s != 0x7f && *s != '"' &&
		    *s != '\\' && *s != '<' && *s != '>' && *s != '&') {
			/* Copy a run of plain ASCII at once. */
			while (run < left && s[run] >= 0x20 && s[run] < 0x7f &&
			       s[run] != '"' && s[run] != '\\' &&
			       s[run] != '<' && s[run] != '>' && s[run] != '&')
				run++;
			sb_put(b, s, run);
			s += run;
			left -= run;
			continue;
		}
		if (len == 0) {
			sb_puts(b, "\\ufffd");
			len = 1;
		} else if (len == 1 && (*s == '"' || *s == '\\')) {
			sb_put(b, "\\", 1);
			sb_put(b, s, 1);
		} else if (len == 1) {
			sb_printf(b, "\\u%04x", *s);
		} else if (len == 3 && s[0] == 0xe2 && s[1] == 0x80 &&
			   (s[2] == 0xa8 || s[2] == 0xa9)) {
			sb_printf(b, "\\u%04x", 0x2000 + (s[2] & 0x3f));
		} else {
			sb_put(b, s, len);
		}
		s += len;
		left -= len;
	}
	sb_put(b, "\"", 1);
}

/* @s as HTML text: markup characters as entities, bad bytes as U+FFFD. */
static void sb_html_str(struct sbuf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t left = strlen(str);

	while (left) {
		size_t len = utf8_len(s, left);

		if (len == 0) {
			sb_puts(b, "\xef\xbf\xbd");
			len = 1;
		} else if (*s == '&') {
			sb_puts(b, "&amp;");
		} else if (*s == '<') {
			sb_puts(b, "&lt;");
		} else if (*s == '>') {
			sb_puts(b, "&gt;");
		} else if (*s == '"') {
			sb_puts(b, "&quot;");
		} else if (*s == '\'') {
			sb_puts(b, "&#39;");
		} else if (len == 1 && (*s < 0x20 || *s == 0x7f)) {
			sb_put(b, " ", 1);
		} else {
			sb_put(b, s, len);
		}
		s += len;
		left -= len;
	}
}

struct sort_ctx {
	const struct flamegraph *fg;
};

static int child_cmp(const void *a, const void *b, void *arg)
{
	const struct flamegraph *fg = ((const struct sort_ctx *)arg)->fg;
	const struct fg_node *x = &fg->nodes[*(const uint32_t *)a];
	const struct fg_node *y = &fg->nodes[*(const uint32_t *)b];
	int c = strcmp(fg->names[x->name], fg->names[y->name]);

	return c ? c : (int)x->kind - (int)y->kind;
}

/*
 * The tree as "nodes":[name,value,kind,nchildren,...] in preorder,
 * children sorted by name. Iterative: stacks can be deep.
 */
static int emit_nodes(const struct flamegraph *fg, struct sbuf *b)
{
	uint32_t *stack, *kids, sp = 0;
	struct sort_ctx ctx = { fg };
	bool first = true;

	/* Each node is pushed once, so nnodes bounds both arrays. */
	stack = malloc(fg->nnodes * sizeof(*stack));
	kids = malloc(fg->nnodes * sizeof(*kids));
	if (!stack || !kids) {
		free(stack);
		free(kids);
		return -ENOMEM;
	}
	stack[sp++] = 0;
	while (sp && !b->err) {
		const struct fg_node *n = &fg->nodes[stack[--sp]];
		uint32_t nk = 0;

		for (uint32_t c = n->first_child; c;
		     c = fg->nodes[c].next_sibling)
			kids[nk++] = c;
		qsort_r(kids, nk, sizeof(*kids), child_cmp, &ctx);
		sb_printf(b, "%s%" PRIu32 ",%" PRIu64 ",%u,%" PRIu32,
			  first ? "" : ",", n->name, n->value,
			  (unsigned int)n->kind, nk);
		first = false;
		while (nk)
			stack[sp++] = kids[--nk];
	}
	free(stack);
	free(kids);
	return 0;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* Write @len bytes to @path via a temp file and rename. 0 or -errno. */
static int write_file_atomic(const char *path, const void *data, size_t len)
{
	char *tmp;
	int fd, err;

	if (asprintf(&tmp, "%s.tmpXXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		free(tmp);
		return err;
	}
	err = write_all(fd, data, len);
	if (!err && fchmod(fd, 0644))
		err = -errno;
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	free(tmp);
	return err;
}

/* The page up to the <title>: document head and stylesheet. */
static const char page_head[] =
	"<!DOCTYPE html>\n"
	"<html lang=\"en\">\n"
	"<head>\n"
	"<meta charset=\"utf-8\">\n"
	"<meta http-equiv=\"Content-Security-Policy\"\n"
	" content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<style>\n"
	"body{margin:0;padding:8px 10px;font:12px/1.4 sans-serif;color:#222;\n"
	" background:#fafafa}\n"
	"#hdr{display:flex;flex-wrap:wrap;align-items:center;gap:8px;margin-bottom:6px}\n"
	"#hdr h1{font-size:15px;margin:0 12px 0 0;font-weight:600}\n"
	"#hdr input{width:22em;padding:2px 4px;font:inherit}\n"
	"#hdr button{font:inherit;padding:1px 8px}\n"
	"#match{color:#a0208e;font-weight:600}\n"
	"#fg{position:relative;width:100%;overflow:hidden;border-top:1px solid #ddd}\n"
	".f{position:absolute;height:16px;box-sizing:border-box;padding:0 2px;\n"
	" border:1px solid #fafafa;border-width:0 1px 1px 0;overflow:hidden;\n"
	" white-space:nowrap;text-overflow:ellipsis;font:11px/15px monospace;\n"
	" cursor:pointer;color:#000}\n"
	".f:hover{border-color:#222}\n"
	".f.a{opacity:.55}\n"
	".f.m{background:#e040fb !important;color:#fff}\n"
	"#status{margin-top:6px;min-height:1.4em;font:11px monospace;\n"
	" white-space:pre;overflow:hidden;text-overflow:ellipsis}\n"
	"#legend span{display:inline-block;padding:0 6px;margin-right:4px;\n"
	" font:11px monospace}\n"
	"</style>\n";

/*
 * The page after the data block: body and script. The script reads the
 * tree from #fg-data; state lives in the URL: #s=<search>&z=<frame>.
 */
static const char page_tail[] =
	"</script>\n"
	"</head>\n"
	"<body>\n"
	"<div id=\"hdr\"><h1 id=\"title\"></h1>\n"
	"<input id=\"search\" type=\"search\" placeholder=\"Search (regex or text)\"\n"
	" autocomplete=\"off\" spellcheck=\"false\">\n"
	"<button id=\"reset\" type=\"button\">Reset zoom</button>\n"
	"<span id=\"match\"></span>\n"
	"<span id=\"legend\"><span style=\"background:#ef8a3a\">user</span><span\n"
	" style=\"background:#5fa8d3\">kernel</span><span\n"
	" style=\"background:#b9b0d6\">process</span></span></div>\n"
	"<div id=\"fg\"></div>\n"
	"<div id=\"status\"></div>\n"
	"<script>\n"
	"(function () {\n"
	"'use strict';\n"
	"var D = JSON.parse(document.getElementById('fg-data').textContent);\n"
	"var names = D.names, raw = D.nodes, N = raw.length / 4, unit = D.unit || '';\n"
	"var ROW = 16, MINFRAC = 0.001;\n"
	"var KINDS = ['root', 'process', 'user', 'kernel'];\n"
	"var nm = new Uint32Array(N), val = new Float64Array(N), kind = new Uint8Array(N);\n"
	"var end = new Uint32Array(N), dep = new Uint32Array(N), xs = new Float64Array(N);\n"
	"var par = new Int32Array(N), nx = new Float64Array(N), rem = new Uint32Array(N);\n"
	"var stack = [], i;\n"
	"\n"
	"/* Nodes come in preorder as (name, value, kind, child count). */\n"
	"for (i = 0; i < N; i++) {\n"
	"	var nc = raw[4 * i + 3];\n"
	"	nm[i] = raw[4 * i]; val[i] = raw[4 * i + 1]; kind[i] = raw[4 * i + 2];\n"
	"	if (stack.length) {\n"
	"		var p = stack[stack.length - 1];\n"
	"		par[i] = p; dep[i] = dep[p] + 1;\n"
	"		xs[i] = nx[p]; nx[p] += val[i]; rem[p]--;\n"
	"	} else {\n"
	"		par[i] = -1;\n"
	"	}\n"
	"	nx[i] = xs[i]; rem[i] = nc;\n"
	"	if (nc > 0) {\n"
	"		stack.push(i);\n"
	"	} else {\n"
	"		end[i] = i + 1;\n"
	"		while (stack.length && rem[stack[stack.length - 1]] === 0)\n"
	"			end[stack.pop()] = i + 1;\n"
	"	}\n"
	"}\n"
	"while (stack.length)\n"
	"	end[stack.pop()] = N;\n"
	"\n"
	"var total = N ? val[0] : 0, zoom = 0, nameHit = null, lastQuery = '';\n"
	"var fg = document.getElementById('fg'), status = document.getElementById('status');\n"
	"var matchEl = document.getElementById('match');\n"
	"var searchEl = document.getElementById('search');\n"
	"document.getElementById('title').textContent = D.title || '';\n"
	"\n"
	"function fmt(v) {\n"
	"	var s = Math.round(v).toString(), o = '';\n"
	"	while (s.length > 3) { o = ',' + s.slice(-3) + o; s = s.slice(0, -3); }\n"
	"	return s + o;\n"
	"}\n"
	"function pct(v, of) { return of > 0 ? (100 * v / of).toFixed(2) : '0.00'; }\n"
	"function hash(s) {\n"
	"	var h = 2166136261;\n"
	"	for (var j = 0; j < s.length; j++) {\n"
	"		h ^= s.charCodeAt(j);\n"
	"		h = Math.imul(h, 16777619);\n"
	"	}\n"
	"	return (h >>> 0) / 4294967296;\n"
	"}\n"
	"function colour(name, k) {\n"
	"	var r = hash(name), r2 = hash(name + '.');\n"
	"	if (k === 3) /* kernel: blues */\n"
	"		return 'hsl(' + Math.round(195 + 25 * r) + ',' +\n"
	"			Math.round(55 + 20 * r2) + '%,' + Math.round(62 + 12 * r) + '%)';\n"
	"	if (k === 1) /* process: lavender */\n"
	"		return 'hsl(' + Math.round(245 + 20 * r) + ',30%,' +\n"
	"			Math.round(74 + 8 * r2) + '%)';\n"
	"	if (k === 0)\n"
	"		return '#c8c8c8';\n"
	"	/* user: warm, as in flamegraph.pl */\n"
	"	return 'rgb(' + Math.round(205 + 50 * r2) + ',' + Math.round(230 * r) + ',' +\n"
	"		Math.round(55 * r2) + ')';\n"
	"}\n"
	"function describe(u) {\n"
	"	var s = names[nm[u]] + '\\n' + fmt(val[u]) + ' ' + unit + ' (' +\n"
	"		pct(val[u], total) + '% of all';\n"
	"	if (zoom && u !== zoom && dep[u] > dep[zoom])\n"
	"		s += ', ' + pct(val[u], val[zoom]) + '% of zoomed';\n"
	"	s += ')';\n"
	"	if (end[u] > u + 1) {\n"
	"		var self = val[u], c = u + 1;\n"
	"		for (; c < end[u]; c = end[c])\n"
	"			self -= val[c];\n"
	"		s += ', self ' + fmt(self);\n"
	"	}\n"
	"	return s + ' [' + KINDS[kind[u]] + ']';\n"
	"}\n"
	"function hit(u) {\n"
	"	return nameHit !== null && nameHit[nm[u]] === 1 && kind[u] !== 0;\n"
	"}\n"
	"function frame(u, left, width, cls, frag) {\n"
	"	var e = document.createElement('div'), name = names[nm[u]];\n"
	"	e.className = cls;\n"
	"	e.style.left = left + '%';\n"
	"	e.style.width = width + '%';\n"
	"	e.style.bottom = (dep[u] * ROW) + 'px';\n"
	"	if (!hit(u))\n"
	"		e.style.background = colour(name, kind[u]);\n"
	"	e.setAttribute('data-name', name);\n"
	"	e.setAttribute('data-kind', KINDS[kind[u]]);\n"
	"	e.setAttribute('data-i', u);\n"
	"	e.title = describe(u);\n"
	"	e.textContent = name;\n"
	"	frag.appendChild(e);\n"
	"}\n"
	"function render() {\n"
	"	var frag = document.createDocumentFragment(), z = zoom;\n"
	"	var zx = xs[z], zw = val[z] || 1, minw = zw * MINFRAC, maxd = dep[z];\n"
	"	var a, todo = [z], u, c, cls, drawn = 0, n0;\n"
	"	for (a = par[z]; a >= 0; a = par[a], drawn++)\n"
	"		frame(a, 0, 100, 'f a', frag);\n"
	"	while (todo.length) {\n"
	"		u = todo.pop();\n"
	"		if (val[u] < minw || val[u] <= 0)\n"
	"			continue;\n"
	"		cls = 'f';\n"
	"		if (kind[u] === 3) cls += ' k';\n"
	"		if (hit(u)) cls += ' m';\n"
	"		frame(u, 100 * (xs[u] - zx) / zw, 100 * val[u] / zw, cls, frag);\n"
	"		drawn++;\n"
	"		if (dep[u] > maxd) maxd = dep[u];\n"
	"		/* Push children right to left: the DOM reads left to right. */\n"
	"		n0 = todo.length;\n"
	"		for (c = u + 1; c < end[u]; c = end[c])\n"
	"			todo.push(c);\n"
	"		for (c = todo.length - 1; n0 < c; n0++, c--) {\n"
	"			var t = todo[n0]; todo[n0] = todo[c]; todo[c] = t;\n"
	"		}\n"
	"	}\n"
	"	fg.textContent = '';\n"
	"	fg.style.height = ((maxd + 1) * ROW) + 'px';\n"
	"	fg.setAttribute('data-nodes', N);\n"
	"	fg.setAttribute('data-drawn', drawn);\n"
	"	fg.appendChild(frag);\n"
	"}\n"
	"function matcher(q) {\n"
	"	var flags = q === q.toLowerCase() ? 'i' : '';\n"
	"	try {\n"
	"		var re = new RegExp(q, flags);\n"
	"		return function (s) { return re.test(s); };\n"
	"	} catch (e) {\n"
	"		var lq = flags ? q.toLowerCase() : q;\n"
	"		return function (s) {\n"
	"			return (flags ? s.toLowerCase() : s).indexOf(lq) >= 0;\n"
	"		};\n"
	"	}\n"
	"}\n"
	"function search(q) {\n"
	"	lastQuery = q;\n"
	"	if (!q) {\n"
	"		nameHit = null;\n"
	"		matchEl.textContent = '';\n"
	"		return;\n"
	"	}\n"
	"	var m = matcher(q), hit = new Uint8Array(names.length), j, sum = 0;\n"
	"	for (j = 0; j < names.length; j++)\n"
	"		hit[j] = m(names[j]) ? 1 : 0;\n"
	"	/* Count a match once, not again for matches nested below it. */\n"
	"	for (j = 0; j < N;) {\n"
	"		if (hit[nm[j]] && kind[j] !== 0) {\n"
	"			sum += val[j];\n"
	"			j = end[j];\n"
	"		} else {\n"
	"			j++;\n"
	"		}\n"
	"	}\n"
	"	nameHit = hit;\n"
	"	matchEl.setAttribute('data-matched', sum);\n"
	"	matchEl.textContent = 'Matched: ' + pct(sum, total) + '% (' + fmt(sum) +\n"
	"		' ' + unit + ')';\n"
	"}\n"
	"function saveHash() {\n"
	"	var h = [];\n"
	"	if (lastQuery) h.push('s=' + encodeURIComponent(lastQuery));\n"
	"	if (zoom) h.push('z=' + zoom);\n"
	"	try {\n"
	"		history.replaceState(null, '', h.length ? '#' + h.join('&') :\n"
	"				     location.pathname + location.search);\n"
	"	} catch (e) {}\n"
	"}\n"
	"function setZoom(u) {\n"
	"	zoom = u >= 0 && u < N ? u : 0;\n"
	"	render();\n"
	"	saveHash();\n"
	"}\n"
	"fg.addEventListener('click', function (ev) {\n"
	"	var t = ev.target.closest('.f');\n"
	"	if (t) setZoom(+t.getAttribute('data-i'));\n"
	"});\n"
	"fg.addEventListener('mouseover', function (ev) {\n"
	"	var t = ev.target.closest('.f');\n"
	"	status.textContent = t ? t.title.replace(/\\n/g, '  ') : '';\n"
	"});\n"
	"document.getElementById('reset').addEventListener('click', function () {\n"
	"	setZoom(0);\n"
	"});\n"
	"var timer = 0;\n"
	"searchEl.addEventListener('input', function () {\n"
	"	clearTimeout(timer);\n"
	"	timer = setTimeout(function () {\n"
	"		search(searchEl.value);\n"
	"		render();\n"
	"		saveHash();\n"
	"	}, 120);\n"
	"});\n"
	"document.addEventListener('keydown', function (ev) {\n"
	"	if (ev.key === 'Escape') {\n"
	"		searchEl.value = '';\n"
	"		search('');\n"
	"		setZoom(0);\n"
	"	} else if ((ev.ctrlKey || ev.metaKey) && ev.key === 'f') {\n"
	"		ev.preventDefault();\n"
	"		searchEl.focus();\n"
	"	}\n"
	"});\n"
	"\n"
	"/* State from the URL: #s=<search>&z=<frame index>. */\n"
	"location.hash.replace(/^#/, '').split('&').forEach(function (kv) {\n"
	"	var k = kv.split('=')[0], v = kv.slice(k.length + 1);\n"
	"	try { v = decodeURIComponent(v); } catch (e) {}\n"
	"	if (k === 's') { searchEl.value = v; search(v); }\n"
	"	else if (k === 'z') zoom = +v >= 0 && +v < N ? +v : 0;\n"
	"});\n"
	"if (N)\n"
	"	render();\n"
	"else\n"
	"	status.textContent = 'No samples.';\n"
	"})();\n"
	"</script>\n"
	"</body>\n"
	"</html>\n";

int flamegraph_write_html(const struct flamegraph *fg, const char *path,
			  const char *title, const char *unit)
{
	struct sbuf b = { 0 };
	int err;

	if (!title)
		title = "profd flame graph";
	if (!unit)
		unit = "samples";
	sb_puts(&b, page_head);
	sb_puts(&b, "<title>");
	sb_html_str(&b, title);
	sb_puts(&b, "</title>\n<script id=\"fg-data\" type=\"application/json\">");
	sb_puts(&b, "{\"title\":");
	sb_json_str(&b, title);
	sb_puts(&b, ",\"unit\":");
	sb_json_str(&b, unit);
	sb_puts(&b, ",\n\"names\":[");
	for (uint32_t i = 0; i < fg->nnames; i++) {
		if (i)
			sb_put(&b, ",", 1);
		sb_json_str(&b, fg->names[i]);
	}
	sb_puts(&b, "],\n\"nodes\":[");
	err = emit_nodes(fg, &b);
	sb_puts(&b, "]}\n");
	sb_puts(&b, page_tail);
	if (!err)
		err = b.err;
	if (!err)
		err = write_file_atomic(path, b.p, b.n);
	free(b.p);
	return err;
}
