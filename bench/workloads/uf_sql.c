/*
 * uf_sql.c - bench/unnamed_frames.sh: a driver of sqlite3's amalgamation
 * (linked in, from npm's better-sqlite3 package): an in-memory table of
 * 20 000 rows, then grouped, sorted, LIKE and update queries in a loop.
 *
 * Usage: uf_sql (runs until killed)
 * Build: gcc -O2 -g uf_sql.c sqlite3.c -lm
 */
#include <stdio.h>
#include <stdlib.h>

#include "sqlite3.h"

static void run(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "uf_sql: %s: %s\n", sql, err ? err : "?");
		exit(1);
	}
}

int main(void)
{
	static const char *const queries[] = {
		"SELECT substr(b, 1, 2), count(*), avg(a) FROM t GROUP BY 1 ORDER BY 2 DESC",
		"SELECT sum(a) FROM t WHERE b LIKE '%ab%'",
		"SELECT a, b FROM t ORDER BY b, a LIMIT 50",
		"UPDATE t SET a = (a * 1103515245 + 12345) % 1000003 WHERE a % 7 = 0",
	};
	sqlite3 *db;
	sqlite3_stmt *ins;
	char b[24];

	if (sqlite3_open(":memory:", &db) != SQLITE_OK)
		return 1;
	run(db, "CREATE TABLE t (a INTEGER, b TEXT)");
	run(db, "BEGIN");
	if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?, ?)", -1, &ins, NULL) != SQLITE_OK)
		return 1;
	for (int i = 0; i < 20000; i++) {
		unsigned x = (unsigned)i * 2654435761u;

		for (int k = 0; k < 12; k++, x = x * 1103515245u + 12345u)
			b[k] = (char)('a' + (x >> 16) % 26);
		b[12] = 0;
		sqlite3_bind_int(ins, 1, (int)(x % 1000003));
		sqlite3_bind_text(ins, 2, b, -1, SQLITE_TRANSIENT);
		sqlite3_step(ins);
		sqlite3_reset(ins);
	}
	sqlite3_finalize(ins);
	run(db, "COMMIT");
	for (unsigned n = 0;; n++)
		run(db, queries[n % 4]);
}
