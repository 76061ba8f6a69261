/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exec.h - the command `profd exec` runs under the profiler.
 *
 * Owns: starting CMD in a child that waits until profd's programs are
 * loaded (so its first instructions are profiled), with
 * CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH pointing at profd's
 * injection library, then reaping it and reporting its exit status.
 */
#ifndef PROFD_AGENT_EXEC_H
#define PROFD_AGENT_EXEC_H

#include <stdbool.h>
#include <sys/types.h>

struct exec_child {
	pid_t pid;		/* 0: none */
	int go_fd;		/* write end: one byte lets the child exec */
	int err_fd;		/* read end: the child's exec errno, EOF on success */
	int status;		/* wait status once exited */
	bool exited;
};

/*
 * exec_child_start - fork a child that will exec @argv[0] (PATH search)
 * with @argv once released. @inject_library (may be NULL) becomes
 * CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH unless the caller's
 * environment already sets them. Signals blocked in the caller are
 * unblocked in the child. Returns 0 or a negative errno.
 */
int exec_child_start(struct exec_child *c, char *const *argv,
		     const char *inject_library);

/*
 * exec_child_release - let the child exec. Returns 0 once it did, or the
 * negative errno of its failed exec (the child has exited, status 127).
 */
int exec_child_release(struct exec_child *c);

/*
 * exec_child_reap - true once the child has exited (waits only when
 * @block). Safe to call again after it returned true.
 */
bool exec_child_reap(struct exec_child *c, bool block);

/* exec_child_kill - profd failed before release: end the child, reap it. */
void exec_child_kill(struct exec_child *c);

/*
 * exec_find_command - 0 if @cmd can be run (as execvp would find it:
 * a path, or a name searched in $PATH), else -ENOENT or -EACCES.
 */
int exec_find_command(const char *cmd);

/*
 * exec_private_library - a copy of @lib in a new directory under $TMPDIR
 * (or /tmp), so that only the command's process tree maps it: uprobes are
 * per file, and attaching to the shared library would switch CUDA
 * activity on in every process using it. Returns the copy's path
 * (malloc'd) or NULL (then use @lib; errno says why: EXDEV when the
 * temporary directory is mounted noexec). Remove it with
 * exec_private_library_remove().
 */
char *exec_private_library(const char *lib);

/* exec_private_library_remove - delete the copy and its directory. */
void exec_private_library_remove(char *copy);

/*
 * exec_child_exit_code - the shell convention: the exit status, or
 * 128 + signal number if a signal killed it.
 */
int exec_child_exit_code(const struct exec_child *c);

#endif /* PROFD_AGENT_EXEC_H */
