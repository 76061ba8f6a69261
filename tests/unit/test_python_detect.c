// SPDX-License-Identifier: GPL-2.0
/*
 * test_python_detect.c - src/python/detect.c and offsets.c behind a
 * small CLI; tests/test_python_offsets.py compares the output with gdb
 * (DWARF), readelf and live interpreters.
 *
 * Usage:
 *   test_python_detect PATH...    one JSON line per PATH: py_detect_path's
 *                                 return and every field of struct py_binary
 *                                 (also checks py_detect_fd agrees and
 *                                 leaves the descriptor's offset alone)
 *   test_python_detect --offsets  the offsets table as one JSON object
 *                                 {"3.9": {...}, ...}; also checks that
 *                                 py_offsets_find refuses other versions
 *
 * Exits 0 when the in-process checks held, 1 otherwise (message on
 * stderr), 2 on bad usage.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python/detect.h"
#include "python/offsets.h"

static int failures;

#define EXPECT(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__,	\
				__LINE__, #cond);			\
			fprintf(stderr, __VA_ARGS__);			\
			fprintf(stderr, "\n");				\
			failures++;					\
		}							\
	} while (0)

/* @s as a JSON string (bytes >= 0x80 are passed through as they are). */
static void put_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void put_binary(const char *path, int rc, const struct py_binary *b)
{
	printf("{\"path\": ");
	put_json_string(path);
	printf(", \"rc\": %d, \"major\": %u, \"minor\": %u, \"micro\": %u, "
	       "\"runtime\": %" PRIu64 ", \"eval_start\": %" PRIu64
	       ", \"eval_end\": %" PRIu64 ", \"eval_cold_start\": %" PRIu64
	       ", \"eval_cold_end\": %" PRIu64 ", \"code_type\": %" PRIu64
	       ", \"unicode_type\": %" PRIu64 ", \"bytes_type\": %" PRIu64 "}\n",
	       rc, b->major, b->minor, b->micro, b->runtime, b->eval_start,
	       b->eval_end, b->eval_cold_start, b->eval_cold_end, b->code_type,
	       b->unicode_type, b->bytes_type);
}

static void detect_one(const char *path)
{
	struct py_binary b, b2;
	int rc, rc2, fd;

	rc = py_detect_path(path, &b);
	put_binary(path, rc, &b);
	fflush(stdout);

	/* The descriptor form must agree, and leave the offset alone. */
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	if (lseek(fd, 3, SEEK_SET) == 3) {
		rc2 = py_detect_fd(fd, &b2);
		EXPECT(rc2 == rc, "%s: py_detect_fd %d, py_detect_path %d",
		       path, rc2, rc);
		EXPECT(!memcmp(&b, &b2, sizeof(b)), "%s: results differ", path);
		EXPECT(lseek(fd, 0, SEEK_CUR) == 3, "%s: offset moved", path);
	}
	close(fd);
}

#define FIELD(name)	printf(", \"" #name "\": %u", (unsigned int)o->name)

static void put_offsets(const struct py_offsets *o)
{
	printf("\"%u.%u\": {\"major\": %u, \"minor\": %u", o->major, o->minor,
	       o->major, o->minor);
	FIELD(frame_model);
	FIELD(lasti_kind);
	FIELD(linetable_format);
	FIELD(runtime_interpreters_head);
	FIELD(interp_next);
	FIELD(interp_threads_head);
	FIELD(tstate_next);
	FIELD(tstate_thread_id);
	FIELD(tstate_native_thread_id);
	FIELD(tstate_frame);
	FIELD(cframe_current_frame);
	FIELD(frame_code);
	FIELD(frame_previous);
	FIELD(frame_instr);
	FIELD(frame_is_entry);
	FIELD(frame_owner);
	FIELD(owner_cstack);
	FIELD(ob_type);
	FIELD(ob_size);
	FIELD(code_filename);
	FIELD(code_name);
	FIELD(code_qualname);
	FIELD(code_firstlineno);
	FIELD(code_linetable);
	FIELD(code_code_adaptive);
	FIELD(code_firsttraceable);
	FIELD(bytes_sval);
	FIELD(unicode_length);
	FIELD(unicode_state);
	FIELD(unicode_ascii_data);
	FIELD(unicode_compact_data);
	printf("}");
}

static void dump_offsets(void)
{
	static const unsigned int refused[][2] = {
		{ 3, 8 }, { 3, 14 }, { 2, 7 }, { 4, 9 }, { 3, 0 }, { 0, 0 },
	};
	unsigned int minor;
	size_t i;

	printf("{\"none\": %u", PY_OFF_NONE);
	for (minor = 9; minor <= 13; minor++) {
		const struct py_offsets *o = py_offsets_find(3, minor);

		EXPECT(o != NULL, "3.%u missing", minor);
		if (!o)
			continue;
		EXPECT(o->major == 3 && o->minor == minor, "3.%u is %u.%u",
		       minor, o->major, o->minor);
		EXPECT(py_offsets_find(3, minor) == o, "3.%u not static", minor);
		printf(", ");
		put_offsets(o);
	}
	printf("}\n");
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		EXPECT(!py_offsets_find(refused[i][0], refused[i][1]),
		       "%u.%u accepted", refused[i][0], refused[i][1]);
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s --offsets | PATH...\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "--offsets"))
		dump_offsets();
	else
		for (i = 1; i < argc; i++)
			detect_one(argv[i]);
	return failures ? 1 : 0;
}
