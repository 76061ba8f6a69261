// SPDX-License-Identifier: GPL-2.0
/*
 * v8_walk.c - a test-only harness for tests/test_v8.py: stop the main
 * thread of a running node (ptrace PTRACE_SEIZE + PTRACE_INTERRUPT),
 * walk its frame-pointer chain from its registers (V8's code keeps frame
 * pointers on x86-64), name each V8 frame with src/v8/frames.h through
 * the layout src/v8/metadata.h read from the process's V8 object, print
 * the frames leaf first, one per line, then let the thread go:
 *   js<TAB>NAME<TAB>FILE<TAB>LINE<TAB>CODE<TAB>NAME_ERR FILE_ERR LINE_ERR
 *   typed<TAB>FRAME_TYPE
 *   native<TAB>SYMBOL (or "?")
 *   unverified<TAB>PC      (a pc in V8 code whose frame did not check out)
 *   error<TAB>ERRNO        (the frame's slots could not be read)
 * CODE is "interp" (the pc is in the interpreter: trampoline or bytecode
 * handlers, by the V8 object's symbols) or "jit" (JIT code in an
 * anonymous executable mapping, or another builtin). First a line
 *   layout<TAB>MAJOR.MINOR.BUILD<TAB>FEATURES<TAB>NMISSING<TAB>FIRST_MISSING
 * and last the V8 counters, "counter<TAB>NAME<TAB>VALUE".
 *
 * Usage: v8_walk [--perturb MEMBER=DELTA] [--kill] PID
 *        v8_walk --dump-layout ELF   (prints "field<TAB>MEMBER<TAB>VALUE"
 *        lines of the layout read from ELF, for a check against nm)
 *   --perturb  add DELTA to a layout member before the walk (a wrong
 *              offset must give no names, never wrong ones)
 *   --kill     SIGKILL the process after stopping it, before the walk
 *              (a process that exits mid-read); the stop is retried
 *              until the process is caught in V8 code (not in GC or
 *              another native leaf, whose walk would read no V8 frame)
 * Exit: 0 walked (even with errors), 2 usage or setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "counters/counters.h"
#include "proc/maps.h"
#include "proc/remote.h"
#include "symbol/elf_file.h"
#include "v8/frames.h"
#include "v8/metadata.h"

COUNTER_EXTERN(v8_frame_unverified);
COUNTER_EXTERN(v8_read_errors);
COUNTER_EXTERN(v8_name_unreadable);
COUNTER_EXTERN(v8_file_unreadable);
COUNTER_EXTERN(v8_line_unknown);
COUNTER_EXTERN(v8_metadata_missing);

#define MAX_FRAMES	256

static pid_t pid;
static int seized;

static void die(const char *msg)
{
	fprintf(stderr, "v8_walk: %s: %s\n", msg, strerror(errno));
	if (seized)
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
	exit(2);
}

/* The V8 object of @maps: its layout, opened ELF and path. */
struct v8obj {
	struct v8_layout l;
	struct elf_file *ef;
	const char *path;
};

static int find_v8(const struct proc_maps *maps, struct v8obj *o)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];
		char mf[128];
		int err, fd;

		if (!m->path[0] || m->special || !m->executable)
			continue;
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		fd = open(mf, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (v8_metadata_read_fd(fd, &o->l) != 1) {
			close(fd);
			continue;
		}
		o->ef = elf_file_open_fd(fd, &err);
		if (!o->ef)
			return -1;
		o->path = m->path;
		return 0;
	}
	return -1;
}

/* Whether the process is a zombie (or gone): its memory is released. */
static bool zombie(void)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (!(f = fopen(path, "r")))
		return true;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !p || (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

static uint64_t reg(const struct user_regs_struct *r, int code)
{
	switch (code) {
	case 0: return r->rax;
	case 1: return r->rcx;
	case 2: return r->rdx;
	case 3: return r->rbx;
	case 4: return r->rsp;
	case 5: return r->rbp;
	case 6: return r->rsi;
	case 7: return r->rdi;
	case 8: return r->r8;
	case 9: return r->r9;
	case 10: return r->r10;
	case 11: return r->r11;
	case 12: return r->r12;
	case 13: return r->r13;
	case 14: return r->r14;
	case 15: return r->r15;
	}
	return 0;
}

static bool starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

static bool ends(const char *s, const char *p)
{
	size_t n = strlen(s), k = strlen(p);

	return n >= k && !strcmp(s + n - k, p);
}

/*
 * Whether the code at @pc is V8's (a candidate frame), and which: JIT
 * code in an anonymous executable mapping, the interpreter, another
 * builtin. *@sym: the symbol of a pc in a file, or NULL.
 */
static bool classify(const struct proc_maps *maps, struct v8obj *o, uint64_t pc,
		     enum v8_code *code, const char **sym)
{
	const struct proc_mapping *m = proc_maps_find(maps, pc);
	uint64_t start, vaddr;

	*sym = NULL;
	*code = V8_CODE_OTHER;
	if (!m || !m->executable)
		return false;
	if (!m->path[0])
		return true;	/* JIT code */
	/*
	 * By file offset, not by one load bias: outside --jitless, V8 maps
	 * the builtins' pages of its own file a second time, near its JIT
	 * code (short builtin calls), and runs them there.
	 */
	if (strcmp(m->path, o->path) ||
	    elf_file_offset_to_vaddr(o->ef, pc - m->start + m->offset, &vaddr))
		return false;
	*sym = elf_file_lookup(o->ef, vaddr, &start);
	if (!*sym || !starts(*sym, "Builtins_"))
		return false;
	if (starts(*sym, "Builtins_InterpreterEntryTrampoline") || ends(*sym, "Handler"))
		*code = V8_CODE_INTERPRETED;
	return true;
}

static int dump_layout(const char *path)
{
	struct v8_layout l;
	int ret = v8_metadata_read_path(path, &l);

	if (ret != 1) {
		fprintf(stderr, "v8_walk: %s: no V8 metadata (%d)\n", path, ret);
		return 2;
	}
#define D(m)	printf("field\t%s\t%lld\n", #m, (long long)l.m)
	D(fp_context); D(fp_function); D(fp_bytecode_array); D(fp_bytecode_offset);
	D(js_function_shared); D(sfi_name_or_scope_info); D(script_name);
	D(t_js_function); D(t_scope_info); D(heap_object_map);
	D(bytecode_array_data); D(offset_register); D(smi_shift); D(tagged_size);
	D(code_offset_table); D(nbytecodes); D(nprefixes);
#undef D
	printf("field\tbytecode_sizes\t");
	for (int s = 0; s < 3; s++)
		for (int i = 0; i < l.nbytecodes; i++)
			printf("%02x", l.bytecode_sizes[s][i]);
	printf("\n");
	printf("field\tversion\t%u.%u\n", l.major, l.minor);
	printf("field\tfeatures\t0x%x\n", l.features);
	printf("field\tmissing\t%u\n", l.nmissing);
	return 0;
}

/* Stop seized @pid (PTRACE_INTERRUPT) and read its registers. */
static void interrupt(pid_t pid, struct user_regs_struct *regs)
{
	int st;

	if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL))
		die("PTRACE_INTERRUPT");
	if (waitpid(pid, &st, __WALL) != pid)
		die("waitpid");
	if (ptrace(PTRACE_GETREGS, pid, NULL, regs))
		die("PTRACE_GETREGS");
}

int main(int argc, char **argv)
{
	const char *perturb = NULL;
	struct user_regs_struct regs;
	struct proc_maps maps = { 0 };
	struct v8obj o = { 0 };
	struct v8_reader r;
	bool kill_it = false;
	uint64_t pc, fp;
	int i, st;

	if (argc == 3 && !strcmp(argv[1], "--dump-layout"))
		return dump_layout(argv[2]);
	for (i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--perturb") && i + 1 < argc - 1)
			perturb = argv[++i];
		else if (!strcmp(argv[i], "--kill"))
			kill_it = true;
		else
			break;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: v8_walk [--perturb MEMBER=DELTA] [--kill] PID\n");
		return 2;
	}
	pid = atoi(argv[i]);
	if (proc_maps_read(pid, &maps))
		die("maps");
	if (find_v8(&maps, &o)) {
		errno = ENOENT;
		die("no V8 object with v8dbg_ metadata");
	}
	if (perturb) {
		char name[64];
		int delta;

		if (sscanf(perturb, "%63[^=]=%d", name, &delta) != 2 ||
		    v8_layout_perturb(&o.l, name, delta)) {
			errno = EINVAL;
			die("--perturb");
		}
	}
	printf("layout\t%u.%u.%u\t0x%x\t%u\t%s\n", o.l.major, o.l.minor, o.l.build,
	       o.l.features, o.l.nmissing, o.l.missing);

	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL))
		die("PTRACE_SEIZE");
	seized = 1;
	interrupt(pid, &regs);
	for (int tries = 0; kill_it && tries < 200; tries++) {
		enum v8_code code;
		const char *sym;

		if (classify(&maps, &o, regs.rip, &code, &sym))
			break;	/* V8 code: its frame read must fail */
		if (ptrace(PTRACE_CONT, pid, NULL, NULL))
			die("PTRACE_CONT");
		usleep(2000);
		interrupt(pid, &regs);
	}
	if (kill_it) {
		kill(pid, SIGKILL);
		while (waitpid(pid, &st, __WALL) == pid && !WIFEXITED(st) && !WIFSIGNALED(st))
			;
		seized = 0;
		/* the leader's exit is reported before its other threads
		 * finish and the memory goes: wait for the zombie */
		for (int t = 0; t < 500 && !zombie(); t++)
			usleep(10000);
	}

	r.rr = remote_reader_new();
	r.pid = pid;
	r.l = &o.l;
	if (!r.rr)
		die("remote_reader_new");
	pc = regs.rip;
	fp = regs.rbp;
	for (int n = 0; n < MAX_FRAMES && fp; n++) {
		enum v8_code code;
		struct v8_frame f;
		const char *sym;
		uint64_t next[2];
		int err;

		if (!classify(&maps, &o, pc, &code, &sym)) {
			printf("native\t%s\n", sym ? sym : "?");
		} else {
			int64_t live = -1;

			if (n == 0 && code == V8_CODE_INTERPRETED && o.l.offset_register >= 0)
				live = (int64_t)reg(&regs, o.l.offset_register);
			err = v8_read_frame(&r, fp, code, live, &f);
			if (err)
				printf("error\t%d\n", err);
			else if (f.kind == V8_FRAME_TYPED)
				printf("typed\t%s\n", v8_frame_type_name(&o.l, f.type));
			else if (f.kind == V8_FRAME_JS)
				printf("js\t%s\t%s\t%d\t%s\t%d %d %d\n", f.name, f.file, f.line,
				       code == V8_CODE_INTERPRETED ? "interp" : "jit",
				       f.name_err, f.file_err, f.line_err);
			else
				printf("unverified\t0x%llx\n", (unsigned long long)pc);
		}
		if (remote_read(r.rr, pid, fp, next, sizeof(next)) || next[0] <= fp)
			break;
		fp = next[0];
		pc = next[1];
	}
	if (seized)
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
	printf("counter\tv8_frame_unverified\t%llu\n",
	       (unsigned long long)counter_get(&counter_v8_frame_unverified));
	printf("counter\tv8_read_errors\t%llu\n",
	       (unsigned long long)counter_get(&counter_v8_read_errors));
	printf("counter\tv8_name_unreadable\t%llu\n",
	       (unsigned long long)counter_get(&counter_v8_name_unreadable));
	printf("counter\tv8_file_unreadable\t%llu\n",
	       (unsigned long long)counter_get(&counter_v8_file_unreadable));
	printf("counter\tv8_line_unknown\t%llu\n",
	       (unsigned long long)counter_get(&counter_v8_line_unknown));
	printf("counter\tv8_metadata_missing\t%llu\n",
	       (unsigned long long)counter_get(&counter_v8_metadata_missing));
	remote_reader_free(r.rr);
	elf_file_free(o.ef);
	proc_maps_free(&maps);
	return 0;
}
