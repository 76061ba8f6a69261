// SPDX-License-Identifier: GPL-2.0
/*
 * exec.c - the command `profd exec` runs (see exec.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libgen.h>
#include <limits.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/exec.h"

int exec_child_start(struct exec_child *c, char *const *argv,
		     const char *inject_library)
{
	int go[2], err[2];
	sigset_t none;

	memset(c, 0, sizeof(*c));
	c->go_fd = c->err_fd = -1;
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(err, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	c->pid = fork();
	if (c->pid < 0) {
		int e = -errno;

		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		c->pid = 0;
		return e;
	}
	if (c->pid == 0) {
		char b;
		int e;

		close(go[1]);
		close(err[0]);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		/* profd went away without releasing us: do not run unprofiled */
		if (read(go[0], &b, 1) != 1)
			_exit(127);
		if (inject_library) {
			setenv("CUDA_INJECTION64_PATH", inject_library, 0);
			setenv("NVTX_INJECTION64_PATH", inject_library, 0);
		}
		execvp(argv[0], argv);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	c->go_fd = go[1];
	c->err_fd = err[0];
	return 0;
}

int exec_child_release(struct exec_child *c)
{
	int e = 0;
	ssize_t n;

	if (write(c->go_fd, "x", 1) != 1)
		e = errno;
	close(c->go_fd);
	c->go_fd = -1;
	if (e)
		return -e;
	/* EOF: the exec closed the pipe (CLOEXEC); 4 bytes: its errno */
	do {
		n = read(c->err_fd, &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close(c->err_fd);
	c->err_fd = -1;
	if (n == sizeof(e)) {
		exec_child_reap(c, true);
		return -e;
	}
	return 0;
}

bool exec_child_reap(struct exec_child *c, bool block)
{
	pid_t r;

	if (!c->pid || c->exited)
		return c->exited;
	do {
		r = waitpid(c->pid, &c->status, block ? 0 : WNOHANG);
	} while (r < 0 && errno == EINTR);
	if (r == c->pid || (r < 0 && errno == ECHILD))
		c->exited = true;
	return c->exited;
}

void exec_child_kill(struct exec_child *c)
{
	if (!c->pid || c->exited)
		return;
	if (c->go_fd >= 0) {
		close(c->go_fd);	/* the child sees EOF and exits 127 */
		c->go_fd = -1;
	} else {
		kill(c->pid, SIGTERM);
	}
	if (c->err_fd >= 0) {
		close(c->err_fd);
		c->err_fd = -1;
	}
	exec_child_reap(c, true);
}

char *exec_private_library(const char *lib)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX], *copy = NULL;
	struct statvfs vfs;
	struct stat st;
	int in = -1, out = -1, e = 0;
	off_t off = 0;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (snprintf(dir, sizeof(dir), "%s/profd-exec.XXXXXX", tmp) >= (int)sizeof(dir)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (!statvfs(tmp, &vfs) && (vfs.f_flag & ST_NOEXEC)) {
		errno = EXDEV;	/* a library there could not be mapped executable */
		return NULL;
	}
	if (!mkdtemp(dir))
		return NULL;
	/* a command that drops privileges must still load it */
	chmod(dir, 0755);
	if (asprintf(&copy, "%s/libprofd_inject.so", dir) < 0) {
		copy = NULL;
		e = ENOMEM;
		goto fail;
	}
	in = open(lib, O_RDONLY | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) ||
	    (out = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755)) < 0) {
		e = errno;
		goto fail;
	}
	while (off < st.st_size) {
		ssize_t n = sendfile(out, in, &off, st.st_size - off);

		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			goto fail;
		}
	}
	if (close(out)) {
		out = -1;
		e = errno;
		goto fail;
	}
	close(in);
	return copy;
fail:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (copy)
		unlink(copy);
	rmdir(dir);
	free(copy);
	errno = e;
	return NULL;
}

void exec_private_library_remove(char *copy)
{
	if (!copy)
		return;
	unlink(copy);
	rmdir(dirname(copy));	/* modifies copy: last use */
}

int exec_find_command(const char *cmd)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	int err = ENOENT;

	struct stat st;

	if (strchr(cmd, '/')) {
		if (access(cmd, X_OK))
			return -errno;
		/* a directory passes access(X_OK) but cannot be run */
		return !stat(cmd, &st) && S_ISDIR(st.st_mode) ? -EACCES : 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? path : ".", cmd) <
		    (int)sizeof(buf)) {
			if (!access(buf, X_OK) && !(!stat(buf, &st) && S_ISDIR(st.st_mode)))
				return 0;
			if (errno == EACCES)
				err = EACCES;
		}
		path += n + (path[n] == ':');
	}
	return -err;
}

int exec_child_exit_code(const struct exec_child *c)
{
	if (WIFEXITED(c->status))
		return WEXITSTATUS(c->status);
	if (WIFSIGNALED(c->status))
		return 128 + WTERMSIG(c->status);
	return 1;
}
