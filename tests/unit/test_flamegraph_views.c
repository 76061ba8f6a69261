// SPDX-License-Identifier: GPL-2.0
/*
 * test_flamegraph_views.c - flamegraph_write_views(): a CPU profile
 * (samples) and a GPU kernel-time profile (nanoseconds, kernels as leaves
 * under the "[cuda]" mapping) written as one two-tab page, then the page's
 * embedded JSON read back and checked against the inputs: tab names,
 * units, totals, every frame, the frame kinds (GPU kernels "cuda", kernel
 * frames "kernel"), the node bound per tree and the folding of light
 * frames at the bound, an empty view's note (default and caller's,
 * escaped), errors, and flamegraph_write_html() as a one-view page.
 *
 * Usage: test_flamegraph_views [DIR]
 *   Writes DIR/views.html (CPU + GPU), DIR/empty.html (CPU + an empty GPU
 *   view), DIR/note.html (the same, the empty view with a note of
 *   markup characters), DIR/capped.html (the GPU tree bounded to 3
 *   frames), DIR/single.html (flamegraph_write_html) and DIR/pruned.html
 *   (a 64-frame tree that folded light frames); tests/test_output.py
 *   renders them in chromium. Without DIR, a temporary directory is used
 *   and removed. Prints one line per check; exits 1 if any failed.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/flamegraph.h"
#include "profile/profile.h"

#include "check.h"

/* The inputs; tests/test_output.py restates them to compare against. */
#define APP		"/usr/bin/trainer"
#define KERNEL		"[kernel.kallsyms]"
#define CUDA		"[cuda]"
#define COMM		"trainer"
#define SGEMM		"ampere_sgemm_128x64_nn"
#define SOFTMAX		"softmax_kernel_f32"
#define SGEMM_NS	12345678	/* 12.3 ms */
#define SOFTMAX_NS	1200000000	/* 1.20 s */
#define CPU_TOTAL	(5 + 3 + 2)
#define GPU_TOTAL	((uint64_t)SGEMM_NS + SOFTMAX_NS)

/* Frame kinds as the page numbers them (enum fg_kind in flamegraph.c). */
enum { K_ROOT, K_PROCESS, K_USER, K_KERNEL, K_CUDA };

enum { F_MAIN, F_STEP, F_LOSS, F_MATMUL, F_SOFTMAX_LAUNCH, F_LAUNCH, F_WRITE,
       F_SYSCALL, F_SGEMM, F_SOFTMAX, NFUNCS };

static const struct {
	const char *name;
	int mapping;	/* 0 app, 1 kernel, 2 cuda */
} funcs[NFUNCS] = {
	[F_MAIN]		= { "main", 0 },
	[F_STEP]		= { "train_step", 0 },
	[F_LOSS]		= { "compute_loss", 0 },
	[F_MATMUL]		= { "launch_matmul", 0 },
	[F_SOFTMAX_LAUNCH]	= { "launch_softmax", 0 },
	[F_LAUNCH]		= { "cudaLaunchKernel", 0 },
	[F_WRITE]		= { "write", 0 },
	[F_SYSCALL]		= { "do_syscall_64", 1 },
	[F_SGEMM]		= { SGEMM, 2 },
	[F_SOFTMAX]		= { SOFTMAX, 2 },
};

/* A profile knowing every function above; @loc gets the location ids. */
static struct profile *new_profile(uint32_t *loc, bool gpu)
{
	struct profile *p = profile_new();
	uint32_t maps[3];

	CHECK(p != NULL, "profile_new");
	if (gpu) {
		profile_add_sample_type(p, "kernels", "count");
		profile_add_sample_type(p, "gpu_kernel_time", "nanoseconds");
	} else {
		profile_add_sample_type(p, "samples", "count");
	}
	maps[0] = profile_add_mapping(p, 0x400000, 0x800000, 0, APP, "");
	maps[1] = profile_add_mapping(p, 0xffffffff81000000,
				      0xffffffff83000000, 0, KERNEL, "");
	maps[2] = profile_add_mapping(p, 0, 0, 0, CUDA, "");
	for (int i = 0; i < NFUNCS; i++) {
		uint32_t f = profile_function_id(p, funcs[i].name, NULL, "");

		loc[i] = profile_location_id(p, maps[funcs[i].mapping],
					     0x401000 + 16 * i, f, 0);
		CHECK(f && loc[i], "location of %s", funcs[i].name);
	}
	return p;
}

/* Add one sample: @stack of F_* leaf first, ended by -1. */
static void add(struct profile *p, const uint32_t *loc, const int *stack,
		int64_t v0, int64_t v1)
{
	struct profile_label l = { .key = "comm", .str = COMM };
	int64_t values[2] = { v0, v1 };
	uint32_t ids[16], n = 0;

	for (; stack[n] >= 0; n++)
		ids[n] = loc[stack[n]];
	CHECK(profile_add_sample(p, ids, n, values, &l, 1) == 0,
	      "add a sample of %" PRId64, v0);
}

static struct profile *cpu_profile(void)
{
	uint32_t loc[NFUNCS];
	struct profile *p = new_profile(loc, false);

	add(p, loc, (int[]){ F_LOSS, F_STEP, F_MAIN, -1 }, 5, 0);
	add(p, loc, (int[]){ F_LAUNCH, F_MATMUL, F_STEP, F_MAIN, -1 }, 3, 0);
	add(p, loc, (int[]){ F_SYSCALL, F_WRITE, F_MAIN, -1 }, 2, 0);
	return p;
}

static struct profile *gpu_profile(void)
{
	uint32_t loc[NFUNCS];
	struct profile *p = new_profile(loc, true);

	add(p, loc, (int[]){ F_SGEMM, F_LAUNCH, F_MATMUL, F_STEP, F_MAIN, -1 },
	    4, SGEMM_NS);
	add(p, loc, (int[]){ F_SOFTMAX, F_LAUNCH, F_SOFTMAX_LAUNCH, F_STEP,
			     F_MAIN, -1 },
	    2, SOFTMAX_NS);
	return p;
}

/* --- reading the page back ------------------------------------------- */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc(len + 1))) {
		if (fread(buf, 1, len, f) != (size_t)len) {
			free(buf);
			buf = NULL;
		} else {
			buf[len] = 0;
		}
	}
	fclose(f);
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *s = hay; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

/* One view of the page's JSON (plain names only: no escapes here). */
struct pview {
	char unit[32];
	uint64_t total, truncated;
	char *names[256];
	unsigned int nnames;
	uint64_t *nodes;	/* (name, value, kind, nchildren) * nnodes */
	unsigned int nnodes;
};

static void pview_free(struct pview *v)
{
	for (unsigned int i = 0; i < v->nnames; i++)
		free(v->names[i]);
	free(v->nodes);
	memset(v, 0, sizeof(*v));
}

/* Parse view @name of @html into @v. Returns 0, or -1 if malformed. */
static int parse_view(const char *html, const char *name, struct pview *v)
{
	char key[128];
	const char *s, *e;
	char *end;
	size_t cap = 0;

	memset(v, 0, sizeof(*v));
	snprintf(key, sizeof(key), "{\"name\":\"%s\",\"unit\":\"", name);
	s = strstr(html, key);
	if (!s)
		return -1;
	s += strlen(key);
	e = strchr(s, '"');
	if (!e || e - s >= (long)sizeof(v->unit))
		return -1;
	memcpy(v->unit, s, e - s);
	if (strncmp(e, "\",\"total\":", 10))
		return -1;
	v->total = strtoull(e + 10, &end, 10);
	if (strncmp(end, ",\"truncated\":", 13))
		return -1;
	v->truncated = strtoull(end + 13, &end, 10);
	if (strncmp(end, ",\n\"names\":[", 11))
		return -1;
	for (s = end + 11; *s == '"'; s = e + 1) {
		e = strchr(s + 1, '"');
		if (!e || memchr(s, '\\', e - s) || v->nnames == 256)
			return -1;
		v->names[v->nnames++] = strndup(s + 1, e - s - 1);
		if (e[1] == ',')
			e++;
	}
	if (strncmp(s, "],\n\"nodes\":[", 12))
		return -1;
	for (s += 12; *s != ']'; v->nnodes++) {
		if ((size_t)v->nnodes * 4 + 4 > cap) {
			cap = cap ? cap * 2 : 64;
			v->nodes = realloc(v->nodes, cap * sizeof(*v->nodes));
			if (!v->nodes)
				return -1;
		}
		for (int k = 0; k < 4; k++) {
			v->nodes[v->nnodes * 4 + k] = strtoull(s, &end, 10);
			if (end == s)
				return -1;
			s = end;
			if (*s == ',')
				s++;
			else if (*s != ']' || k < 3)
				return -1;
		}
	}
	return v->nnodes ? 0 : -1;
}

static const char *node_name(const struct pview *v, unsigned int i)
{
	uint64_t n = v->nodes[4 * i];

	return n < v->nnames ? v->names[n] : "?";
}

/* Index of the node named @name (the first in preorder), or -1. */
static int find_node(const struct pview *v, const char *name)
{
	for (unsigned int i = 0; i < v->nnodes; i++)
		if (strcmp(node_name(v, i), name) == 0)
			return i;
	return -1;
}

/* Weight of the frames named @name, summed over the tree. */
static uint64_t weight_of(const struct pview *v, const char *name)
{
	uint64_t w = 0;

	for (unsigned int i = 0; i < v->nnodes; i++)
		if (strcmp(node_name(v, i), name) == 0)
			w += v->nodes[4 * i + 1];
	return w;
}

/* Every frame but the root has a kind other than root, and so on. */
static void check_kinds(const struct pview *v, const char *what, bool gpu)
{
	unsigned int ncuda = 0, bad = 0;

	for (unsigned int i = 0; i < v->nnodes; i++) {
		const char *n = node_name(v, i);
		uint64_t kind = v->nodes[4 * i + 2];
		uint64_t want = i == 0 ? K_ROOT :
				strcmp(n, COMM) == 0 ? K_PROCESS :
				strcmp(n, SGEMM) == 0 ||
				strcmp(n, SOFTMAX) == 0 ? K_CUDA :
				strcmp(n, "do_syscall_64") == 0 ? K_KERNEL :
				K_USER;

		if (kind != want) {
			printf("  %s: %s has kind %" PRIu64 ", want %" PRIu64 "\n",
			       what, n, kind, want);
			bad++;
		}
		if (kind == K_CUDA) {
			ncuda++;
			/* GPU kernels are leaves: nothing runs above them. */
			if (v->nodes[4 * i + 3] != 0)
				bad++;
		}
	}
	CHECK(bad == 0, "%s: every frame has its kind (cuda leaves, kernel, "
	      "user, process)", what);
	CHECK(ncuda == (gpu ? 2u : 0u), "%s: %u GPU kernel frames", what, ncuda);
}

/* Values add up: each frame weighs at least its children together. */
static void check_sums(const struct pview *v, const char *what)
{
	unsigned int bad = 0, stack[64], left[64], sp = 0;
	uint64_t sum[64];

	for (unsigned int i = 0; i < v->nnodes && sp < 64; i++) {
		if (sp) {
			sum[sp - 1] += v->nodes[4 * i + 1];
			left[sp - 1]--;
		}
		stack[sp] = i;
		left[sp] = v->nodes[4 * i + 3];
		sum[sp++] = 0;
		while (sp && left[sp - 1] == 0) {
			sp--;
			if (v->nodes[4 * stack[sp] + 3] &&
			    sum[sp] > v->nodes[4 * stack[sp] + 1])
				bad++;
		}
	}
	CHECK(bad == 0 && sp == 0, "%s: the tree is well formed", what);
}

/* --- the pages ---------------------------------------------------------- */

static char dir[4096];

static void page_path(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void check_views_page(const char *path)
{
	static const char *const cpu_frames[] = {
		COMM, "main", "train_step", "compute_loss", "launch_matmul",
		"cudaLaunchKernel", "write", "do_syscall_64",
	};
	static const char *const gpu_frames[] = {
		COMM, "main", "train_step", "launch_matmul", "launch_softmax",
		"cudaLaunchKernel", SGEMM, SOFTMAX,
	};
	char *html = slurp(path);
	struct pview cpu, gpu;
	int i;

	CHECK(html != NULL, "read %s", path);
	if (!html)
		return;
	CHECK(count(html, "<script id=\"fg-data\"") == 1,
	      "one data block for both views");
	CHECK(count(html, "{\"name\":") == 2, "two views in the data");
	CHECK(strstr(html, "\"title\":\"profd test: trainer\",\"views\":[") != NULL,
	      "the page title");
	CHECK(strstr(html, "{\"name\":\"CPU\"") <
	      strstr(html, "{\"name\":\"GPU kernel time\""),
	      "the CPU view comes first");
	CHECK(parse_view(html, "CPU", &cpu) == 0, "tab \"CPU\" parses");
	CHECK(parse_view(html, "GPU kernel time", &gpu) == 0,
	      "tab \"GPU kernel time\" parses");
	CHECK(strcmp(cpu.unit, "samples") == 0, "CPU unit: %s", cpu.unit);
	CHECK(strcmp(gpu.unit, "ns") == 0, "GPU unit: %s", gpu.unit);
	CHECK(cpu.total == CPU_TOTAL && cpu.nodes && cpu.nodes[1] == CPU_TOTAL,
	      "CPU total: %" PRIu64 " samples", cpu.total);
	CHECK(gpu.total == GPU_TOTAL && gpu.nodes && gpu.nodes[1] == GPU_TOTAL,
	      "GPU total: %" PRIu64 " ns", gpu.total);
	CHECK(cpu.truncated == 0 && gpu.truncated == 0, "nothing truncated");
	if (!cpu.nnodes || !gpu.nnodes)
		goto out;
	for (i = 0; i < (int)(sizeof(cpu_frames) / sizeof(*cpu_frames)); i++)
		CHECK(find_node(&cpu, cpu_frames[i]) > 0, "CPU frame %s",
		      cpu_frames[i]);
	for (i = 0; i < (int)(sizeof(gpu_frames) / sizeof(*gpu_frames)); i++)
		CHECK(find_node(&gpu, gpu_frames[i]) > 0, "GPU frame %s",
		      gpu_frames[i]);
	CHECK(find_node(&cpu, SGEMM) < 0 && find_node(&gpu, "compute_loss") < 0,
	      "each tree holds only its own frames");
	CHECK(cpu.nnodes == 9, "CPU tree: %u frames", cpu.nnodes);
	CHECK(gpu.nnodes == 10, "GPU tree: %u frames", gpu.nnodes);
	check_kinds(&cpu, "CPU", false);
	check_kinds(&gpu, "GPU", true);
	check_sums(&cpu, "CPU");
	check_sums(&gpu, "GPU");
	CHECK(weight_of(&gpu, SGEMM) == SGEMM_NS &&
	      weight_of(&gpu, SOFTMAX) == SOFTMAX_NS,
	      "GPU kernels weigh their nanoseconds");
	CHECK(weight_of(&gpu, "cudaLaunchKernel") == GPU_TOTAL,
	      "the launch site carries both kernels");
	CHECK(weight_of(&cpu, "compute_loss") == 5 &&
	      weight_of(&cpu, "do_syscall_64") == 2, "CPU leaves weigh their samples");
	i = find_node(&gpu, SGEMM);
	CHECK(i > 0 && strcmp(node_name(&gpu, i - 1), "cudaLaunchKernel") == 0,
	      "%s sits on its launching stack", SGEMM);
	/* The page's script knows the kind: class "g", label "cuda". */
	CHECK(strstr(html, "'kernel', 'cuda', 'interpreted', 'inlined',") != NULL, "KINDS names cuda");
	CHECK(strstr(html, "if (kind[u] === 4) cls += ' g';") != NULL,
	      "GPU kernel frames get class g");
	CHECK(strstr(html, "GPU kernel</span>") != NULL, "legend entry for GPU kernels");
out:
	pview_free(&cpu);
	pview_free(&gpu);
	free(html);
}

static void check_empty_page(const char *path)
{
	char *html = slurp(path);
	struct pview cpu, gpu;

	CHECK(html != NULL, "read %s", path);
	if (!html)
		return;
	CHECK(parse_view(html, "CPU", &cpu) == 0 && cpu.total == CPU_TOTAL,
	      "empty page: CPU view as before");
	CHECK(parse_view(html, "GPU kernel time", &gpu) == 0 &&
	      gpu.total == 0 && gpu.nnodes == 1 && gpu.nodes[1] == 0,
	      "empty page: the GPU tab is there with only the root");
	CHECK(strstr(html, "\"empty\":\"" FLAMEGRAPH_EMPTY_NOTE "\"}") != NULL,
	      "an empty view without a note says FLAMEGRAPH_EMPTY_NOTE");
	pview_free(&cpu);
	pview_free(&gpu);
	free(html);
}

static void check_note_page(const char *path)
{
	char *html = slurp(path);

	CHECK(html != NULL, "read %s", path);
	if (!html)
		return;
	CHECK(strstr(html, "\"empty\":\"\\u003c/script\\u003e\\u003cb "
			   "id=\\\"x\\\"\\u003eidle \\u0026 \\ufffd\"}") != NULL,
	      "the empty view's note is in the data, escaped");
	CHECK(count(html, "</script") == 2, "the note ends no script element");
	free(html);
}

static void check_capped_page(const char *path, uint64_t truncated)
{
	char *html = slurp(path);
	struct pview cpu, gpu;

	CHECK(html != NULL, "read %s", path);
	if (!html)
		return;
	CHECK(parse_view(html, "CPU", &cpu) == 0 && cpu.nnodes == 9 &&
	      cpu.truncated == 0, "capped page: the CPU tree keeps all 9 frames");
	CHECK(parse_view(html, "GPU kernel time", &gpu) == 0 &&
	      gpu.nnodes == 3 && gpu.total == GPU_TOTAL &&
	      gpu.truncated == truncated && truncated > 0,
	      "capped page: the GPU tree has 3 frames, all its weight, "
	      "%" PRIu64 " stacks cut", gpu.truncated);
	pview_free(&cpu);
	pview_free(&gpu);
	free(html);
}

/*
 * The node bound over a long run: 120 light stacks (weight 1) fill a
 * 64-frame tree, then a heavy one (1000) arrives; the lightest frames
 * are folded into their callers so that it gets its whole path, and no
 * weight is lost.
 */
static void check_pruning(void)
{
	struct flamegraph *fg = flamegraph_new(64);
	struct profile *light = profile_new(), *heavy = profile_new();
	struct profile_label l = { .key = "comm", .str = "app" };
	char path[4200], name[32];
	uint32_t m, ids[3];
	struct pview v;
	int64_t w;
	char *html;

	CHECK(fg && light && heavy, "pruning: new tree and profiles");
	if (!fg || !light || !heavy)
		return;
	profile_add_sample_type(light, "samples", "count");
	profile_add_sample_type(heavy, "samples", "count");
	m = profile_add_mapping(light, 0x1000, 0x100000, 0, APP, "");
	ids[1] = profile_location_id(light, m, 0x1000,
				     profile_function_id(light, "main", NULL, ""), 0);
	for (int i = 0; i < 120; i++) {
		snprintf(name, sizeof(name), "light_%d", i);
		ids[0] = profile_location_id(light, m, 0x2000 + i,
			profile_function_id(light, name, NULL, ""), 0);
		w = 1;
		profile_add_sample(light, ids, 2, &w, &l, 1);
	}
	m = profile_add_mapping(heavy, 0x1000, 0x100000, 0, APP, "");
	ids[2] = profile_location_id(heavy, m, 0x1000,
				     profile_function_id(heavy, "main", NULL, ""), 0);
	ids[1] = profile_location_id(heavy, m, 0x3000,
				     profile_function_id(heavy, "hot_a", NULL, ""), 0);
	ids[0] = profile_location_id(heavy, m, 0x3010,
				     profile_function_id(heavy, "hot_b", NULL, ""), 0);
	w = 1000;
	profile_add_sample(heavy, ids, 3, &w, &l, 1);
	CHECK(flamegraph_add_profile(fg, light, 0) == 0 &&
	      flamegraph_add_profile(fg, heavy, 0) == 0,
	      "pruning: merge 120 light stacks, then a heavy one");
	CHECK(flamegraph_total(fg) == 1120, "pruning: total %" PRIu64 " of 1120",
	      flamegraph_total(fg));
	CHECK(flamegraph_pruned(fg) > 0 && flamegraph_truncated(fg) == 0,
	      "pruning: %" PRIu64 " frames folded, none cut",
	      flamegraph_pruned(fg));
	page_path(path, sizeof(path), "pruned.html");
	CHECK(flamegraph_write_html(fg, path, "pruned", NULL) == 0,
	      "pruning: write %s", path);
	html = slurp(path);
	if (html && parse_view(html, "pruned", &v) == 0) {
		int a = find_node(&v, "hot_a"), b = find_node(&v, "hot_b");

		CHECK(v.nnodes <= 64, "pruning: %u frames in the page", v.nnodes);
		CHECK(a > 0 && b == a + 1 && v.nodes[4 * b + 1] == 1000 &&
		      strcmp(node_name(&v, a - 1), "main") == 0,
		      "pruning: the heavy stack has its whole path");
		CHECK(weight_of(&v, "main") == 1120,
		      "pruning: main keeps the folded weight as its own");
		check_sums(&v, "pruned");
		CHECK(strstr(html, "\"pruned\":") != NULL, "pruning: the page says so");
		pview_free(&v);
	} else {
		CHECK(false, "pruning: the page parses");
	}
	free(html);
	flamegraph_free(fg);
	profile_free(light);
	profile_free(heavy);
}

static void check_single_page(const char *path)
{
	char *html = slurp(path);
	struct pview v;

	CHECK(html != NULL, "read %s", path);
	if (!html)
		return;
	CHECK(count(html, "{\"name\":") == 1, "write_html: one view");
	CHECK(parse_view(html, "profd test: trainer", &v) == 0 &&
	      strcmp(v.unit, "samples") == 0 && v.total == CPU_TOTAL,
	      "write_html: the view is the tree in samples");
	CHECK(count(html, "</script") == 2, "write_html: two script elements");
	pview_free(&v);
	free(html);
}

static unsigned int leftover_tmp(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned int n = 0;

	if (!d)
		return 1;
	while ((e = readdir(d)))
		n += strstr(e->d_name, ".tmp") != NULL;
	closedir(d);
	return n;
}

static void remove_dir(void)
{
	static const char *const files[] = {
		"views.html", "empty.html", "note.html", "capped.html",
		"single.html", "pruned.html",
	};
	char path[4200];

	for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
		page_path(path, sizeof(path), files[i]);
		unlink(path);
	}
	rmdir(dir);
}

int main(int argc, char **argv)
{
	struct profile *cp = cpu_profile(), *gp = gpu_profile();
	struct flamegraph *cpu = flamegraph_new(0), *gpu = flamegraph_new(0);
	struct flamegraph *empty = flamegraph_new(0), *capped = flamegraph_new(3);
	struct flamegraph_view views[2] = {
		{ .name = "CPU", .fg = cpu, .unit = "samples" },
		{ .name = "GPU kernel time", .fg = gpu, .unit = "ns" },
	};
	char path[4200];
	bool tmp = argc < 2;
	int err;

	if (tmp) {
		snprintf(dir, sizeof(dir), "/tmp/profd-fgviews-XXXXXX");
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			return 1;
		}
	} else {
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	}
	CHECK(cpu && gpu && empty && capped, "flamegraph_new");
	if (!cpu || !gpu || !empty || !capped)
		return 1;

	CHECK(flamegraph_add_profile(cpu, cp, 0) == 0, "merge the CPU profile");
	CHECK(flamegraph_add_profile(gpu, gp, 1) == 0,
	      "merge the GPU profile by gpu_kernel_time");
	CHECK(flamegraph_add_profile(capped, gp, 1) == 0,
	      "merge the GPU profile into a 3-frame tree");
	CHECK(flamegraph_total(cpu) == CPU_TOTAL, "CPU total %" PRIu64,
	      flamegraph_total(cpu));
	CHECK(flamegraph_total(gpu) == GPU_TOTAL, "GPU total %" PRIu64,
	      flamegraph_total(gpu));
	CHECK(flamegraph_total(capped) == GPU_TOTAL &&
	      flamegraph_truncated(capped) > 0,
	      "bounded GPU tree keeps its weight, counts %" PRIu64 " cut",
	      flamegraph_truncated(capped));

	page_path(path, sizeof(path), "views.html");
	err = flamegraph_write_views(path, "profd test: trainer", views, 2);
	CHECK(err == 0, "write_views %s: %d", path, err);
	check_views_page(path);

	views[1].fg = empty;
	page_path(path, sizeof(path), "empty.html");
	err = flamegraph_write_views(path, "profd test: trainer", views, 2);
	CHECK(err == 0, "write_views with an empty view: %d", err);
	check_empty_page(path);

	/* A caller's note: any bytes, escaped like a frame name. */
	views[1].empty_note = "</script><b id=\"x\">idle & \xff";
	page_path(path, sizeof(path), "note.html");
	err = flamegraph_write_views(path, "profd test: trainer", views, 2);
	CHECK(err == 0, "write_views with an empty view's note: %d", err);
	check_note_page(path);
	views[1].empty_note = NULL;

	views[1].fg = capped;
	page_path(path, sizeof(path), "capped.html");
	err = flamegraph_write_views(path, "profd test: trainer", views, 2);
	CHECK(err == 0, "write_views with a bounded view: %d", err);
	check_capped_page(path, flamegraph_truncated(capped));

	page_path(path, sizeof(path), "single.html");
	err = flamegraph_write_html(cpu, path, "profd test: trainer", NULL);
	CHECK(err == 0, "write_html %s: %d", path, err);
	check_single_page(path);

	check_pruning();

	/* Errors: nothing written, nothing left behind. */
	page_path(path, sizeof(path), "bad.html");
	CHECK(flamegraph_write_views(path, "t", views, 0) == -EINVAL,
	      "no views: -EINVAL");
	CHECK(flamegraph_write_views(path, "t", NULL, 1) == -EINVAL,
	      "NULL views: -EINVAL");
	views[1].fg = NULL;
	CHECK(flamegraph_write_views(path, "t", views, 2) == -EINVAL,
	      "a view without a tree: -EINVAL");
	views[1].fg = gpu;
	views[0].name = NULL;
	CHECK(flamegraph_write_views(path, "t", views, 2) == -EINVAL,
	      "a view without a name: -EINVAL");
	views[0].name = "CPU";
	CHECK(access(path, F_OK) != 0, "no page for bad arguments");
	page_path(path, sizeof(path), "missing/views.html");
	CHECK(flamegraph_write_views(path, "t", views, 2) == -ENOENT,
	      "missing directory: -ENOENT");
	CHECK(leftover_tmp() == 0, "no temporary files left in %s", dir);

	flamegraph_free(cpu);
	flamegraph_free(gpu);
	flamegraph_free(empty);
	flamegraph_free(capped);
	profile_free(cp);
	profile_free(gp);
	if (tmp)
		remove_dir();
	printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
	return failures ? 1 : 0;
}
