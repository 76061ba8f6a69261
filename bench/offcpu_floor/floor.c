// SPDX-License-Identifier: GPL-2.0
/*
 * floor.c - loader of floor.bpf.c: loads the object, attaches the one
 * program named, prints "attached" and holds it until SIGINT or SIGTERM.
 * Usage: floor OBJ PROGRAM
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

static volatile sig_atomic_t done;

static void on_signal(int sig) { done = 1; }

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_link *link;

	if (argc != 3) {
		fprintf(stderr, "usage: floor OBJ PROGRAM\n");
		return 64;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "floor: cannot open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(prog, obj)
		bpf_program__set_autoload(prog, !strcmp(bpf_program__name(prog), argv[2]));
	prog = bpf_object__find_program_by_name(obj, argv[2]);
	if (!prog || bpf_object__load(obj)) {
		fprintf(stderr, "floor: cannot load %s from %s\n", argv[2], argv[1]);
		return 1;
	}
	link = bpf_program__attach(prog);
	if (!link) {
		fprintf(stderr, "floor: cannot attach %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("attached\n");
	fflush(stdout);
	while (!done)
		pause();
	bpf_link__destroy(link);
	bpf_object__close(obj);
	return 0;
}
