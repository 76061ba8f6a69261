// SPDX-License-Identifier: GPL-2.0
/*
 * flamegraph_html.c - the flame graph's page (see flamegraph.h).
 *
 * Owns: writing one or more trees (views) into one self-contained HTML
 * file, inline CSS and JS (flamegraph_page.h), a CSP that forbids any
 * network access. The trees are embedded as JSON in one
 * <script type="application/json"> block: {"title", "views": [...]},
 * each view {"name", "unit", "total", "truncated", "names", "nodes",
 * "pruned", "empty"}: the names of its frames, a flat preorder array of
 * (name index, value, kind, child count), children sorted by name, the
 * frames folded to stay in the node bound, and the text shown if the
 * tree is empty. Every string is escaped so that no byte sequence
 * in a symbol name or note (`</script>`, quotes, control characters,
 * invalid UTF-8) can end the block or break JSON.parse; the script puts
 * strings into the page as text (textContent, canvas text), never as
 * markup. The script builds a view's arrays when its tab is first shown
 * and keeps them for later switches, lays out only frames wider than
 * 0.1% of the zoomed frame as an icicle (root on top) and paints on a
 * canvas only the rows in the window, so 100k-node trees stay fast.
 * The file is replaced atomically.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/flamegraph_internal.h"
#include "output/flamegraph_page.h"
#include "util/atomic_file.h"
#include "util/utf8.h"

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
		size_t len = utf8_seq_len(s, left), run = 0;

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
		size_t len = utf8_seq_len(s, left);

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
 * children sorted by name, each name as its index in the page's table
 * (@names: the tree's name index -> the page's). Iterative: stacks can be
 * deep.
 */
static int emit_nodes(const struct flamegraph *fg, const uint32_t *names,
		      struct sbuf *b)
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
			  first ? "" : ",", names[n->name], n->value,
			  (unsigned int)n->kind, nk);
		first = false;
		while (nk)
			stack[sp++] = kids[--nk];
	}
	free(stack);
	free(kids);
	return 0;
}

/*
 * One view's JSON object: labels, total, names, the preorder nodes and
 * the text shown when the tree is empty.
 */
static int emit_view(const struct flamegraph_view *v, struct sbuf *b)
{
	const struct flamegraph *fg = v->fg;
	uint32_t *names, used = 0;
	int err;

	sb_puts(b, "{\"name\":");
	sb_json_str(b, v->name);
	sb_puts(b, ",\"unit\":");
	sb_json_str(b, v->unit ? v->unit : "samples");
	sb_printf(b, ",\"total\":%" PRIu64 ",\"truncated\":%" PRIu64,
		  flamegraph_total(fg), fg->truncated);
	/* Only the names of kept frames: folded ones leave theirs behind. */
	names = calloc(fg->nnames, sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (uint32_t i = 0; i < fg->nnodes; i++)
		names[fg->nodes[i].name] = 1;
	sb_puts(b, ",\n\"names\":[");
	for (uint32_t i = 0; i < fg->nnames; i++) {
		if (!names[i])
			continue;
		names[i] = used++;
		if (names[i])
			sb_put(b, ",", 1);
		sb_json_str(b, fg->names[i]);
	}
	sb_puts(b, "],\n\"nodes\":[");
	err = emit_nodes(fg, names, b);
	free(names);
	sb_printf(b, "],\n\"pruned\":%" PRIu64, fg->pruned);
	sb_puts(b, ",\n\"empty\":");
	sb_json_str(b, v->empty_note ? v->empty_note : FLAMEGRAPH_EMPTY_NOTE);
	sb_puts(b, "}");
	return err;
}

int flamegraph_write_views(const char *path, const char *title,
			   const struct flamegraph_view *views,
			   unsigned int nviews)
{
	struct sbuf b = { 0 };
	int err = 0;

	if (!path || !views || !nviews)
		return -EINVAL;
	for (unsigned int i = 0; i < nviews; i++)
		if (!views[i].name || !views[i].fg)
			return -EINVAL;
	if (!title)
		title = "profd flame graph";
	sb_puts(&b, page_head);
	sb_puts(&b, "<title>");
	sb_html_str(&b, title);
	sb_puts(&b, "</title>\n<script id=\"fg-data\" type=\"application/json\">");
	sb_puts(&b, "{\"title\":");
	sb_json_str(&b, title);
	sb_puts(&b, ",\"views\":[\n");
	for (unsigned int i = 0; i < nviews && !err; i++) {
		if (i)
			sb_puts(&b, ",\n");
		err = emit_view(&views[i], &b);
	}
	sb_puts(&b, "]}\n");
	sb_puts(&b, page_tail);
	if (!err)
		err = b.err;
	if (!err)
		err = write_file_atomic(path, b.p, b.n);
	free(b.p);
	return err;
}

int flamegraph_write_html(const struct flamegraph *fg, const char *path,
			  const char *title, const char *unit)
{
	struct flamegraph_view v = {
		.name = title ? title : "profd flame graph",
		.fg = fg,
		.unit = unit,
	};

	return flamegraph_write_views(path, title, &v, 1);
}
