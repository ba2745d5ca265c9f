/* Decision-log rotation: size threshold, N files kept, header repeated in
 * each new file, whole lines only; a writer killed with SIGKILL leaves a file
 * that is valid up to its last complete line. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "governor/daemon/logrot.h"

static char dir[] = "/tmp/test_logrot_XXXXXX";

static int setup(void **st)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int exists(const char *p)
{
	struct stat s;
	return stat(p, &s) == 0;
}

/* Lines of a file, each parsed as JSON; -1 when one does not parse or the
 * file does not end in a newline. */
/* Complete lines (ending in a newline) that parse; -1 if one does not. A
 * last line without its newline is a write torn by SIGKILL (a write(2) of a
 * multi-page line can stop between pages): "valid up to its last complete
 * line" allows it, so it is skipped when torn_tail_ok. */
static int count_json_lines_tail(const char *path, int *headers, int *first_is_header,
				 bool torn_tail_ok)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lines = 0, bad = 0;
	*headers = 0;
	*first_is_header = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] != '\n') {
			if (!torn_tail_ok)
				bad = 1;
			break; /* only the last line can lack its newline */
		}
		json_error_t e;
		json_t *o = json_loads(line, 0, &e);
		if (!o) {
			bad = 1;
		} else {
			const char *t = json_string_value(json_object_get(o, "type"));
			if (t && !strcmp(t, "header")) {
				(*headers)++;
				if (lines == 0)
					*first_is_header = 1;
			}
			json_decref(o);
		}
		lines++;
	}
	free(line);
	fclose(f);
	return bad ? -1 : lines;
}

static int count_json_lines(const char *path, int *headers, int *first_is_header)
{
	return count_json_lines_tail(path, headers, first_is_header, false);
}

static void test_rotation_keeps_n(void **st)
{
	char path[256], p[300];
	snprintf(path, sizeof(path), "%s/rot.jsonl", dir);
	struct logrot *l;
	struct logrot_cfg c = { .path = path, .max_bytes = 1000, .keep = 3,
				.header_prefix = "{\"type\":\"header\"" };
	assert_int_equal(logrot_open(&l, &c), 0);
	FILE *f = logrot_file(l);
	fprintf(f, "{\"type\":\"header\",\"policy\":\"a\"}\n");
	for (int i = 0; i < 200; i++)
		fprintf(f, "{\"type\":\"decision\",\"seq\":%d,\"pad\":\"%040d\"}\n", i, i);
	assert_int_equal(logrot_close(l), 0);

	/* ~13 KB of records at 1000 bytes per file: many rotations, 3 kept */
	assert_true(exists(path));
	for (int i = 1; i <= 3; i++) {
		snprintf(p, sizeof(p), "%s.%d", path, i);
		assert_true(exists(p));
		int h, first;
		int n = count_json_lines(p, &h, &first);
		assert_true(n > 1);
		assert_int_equal(h, 1);
		assert_int_equal(first, 1); /* each rotated file starts with the header */
		struct stat s;
		stat(p, &s);
		/* a file passes max_bytes by at most one line */
		assert_true(s.st_size >= 1000 && s.st_size < 1100);
	}
	snprintf(p, sizeof(p), "%s.4", path);
	assert_false(exists(p));
	/* the decisions are in order across the files: the newest file holds seq 199 */
	FILE *f2 = fopen(path, "r");
	char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f2);
	buf[n] = '\0';
	fclose(f2);
	assert_non_null(strstr(buf, "\"seq\":199,"));
}

/* A rotation whose reopen fails (the directory went away) does not end the
 * log: once the directory is back, the next line lands in a new file that
 * starts with the header. */
static void test_rotation_reopen_retried(void **st)
{
	char sub[256], path[300], cmd[300];
	snprintf(sub, sizeof(sub), "%s/gone", dir);
	snprintf(path, sizeof(path), "%s/r.jsonl", sub);
	assert_int_equal(mkdir(sub, 0700), 0);
	struct logrot *l;
	struct logrot_cfg c = { .path = path, .max_bytes = 200, .keep = 1,
				.header_prefix = "{\"type\":\"header\"" };
	assert_int_equal(logrot_open(&l, &c), 0);
	FILE *f = logrot_file(l);
	fprintf(f, "{\"type\":\"header\",\"policy\":\"a\"}\n");
	fflush(f);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", sub);
	assert_int_equal(system(cmd), 0);
	/* passes max_bytes: the rotation cannot reopen */
	fprintf(f, "{\"type\":\"decision\",\"pad\":\"%0200d\"}\n", 0);
	fflush(f);
	assert_false(exists(path));
	assert_true(logrot_errors(l) > 0);
	clearerr(f);
	assert_int_equal(mkdir(sub, 0700), 0);
	fprintf(f, "{\"type\":\"decision\",\"seq\":1}\n");
	fflush(f);
	assert_true(exists(path));
	int h, first;
	assert_int_equal(count_json_lines(path, &h, &first), 2);
	assert_int_equal(first, 1);
	assert_true(logrot_close(l) != 0); /* the failure is still reported */
}

static void test_reopen_appends(void **st)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/app.jsonl", dir);
	struct logrot *l;
	struct logrot_cfg c = { .path = path, .max_bytes = 0, .keep = 2 };
	for (int k = 0; k < 2; k++) {
		assert_int_equal(logrot_open(&l, &c), 0);
		fprintf(logrot_file(l), "{\"k\":%d}\n", k);
		assert_int_equal(logrot_close(l), 0);
	}
	int h, first;
	assert_int_equal(count_json_lines(path, &h, &first), 2);
}

static void test_shift(void **st)
{
	char path[256], p[300];
	snprintf(path, sizeof(path), "%s/shift.log", dir);
	FILE *f = fopen(path, "w");
	fputs("x\n", f);
	fclose(f);
	assert_int_equal(logrot_shift(path, 2), 0);
	assert_false(exists(path));
	snprintf(p, sizeof(p), "%s.1", path);
	assert_true(exists(p));
	assert_int_equal(logrot_shift(path, 0), 0); /* path absent: fine */
	assert_int_equal(logrot_open(&(struct logrot *){ NULL }, &(struct logrot_cfg){ .path = "/nonexistent/dir/x" }),
			 -ENOENT);
}

/* A child writes records as fast as it can and is killed mid-stream. */
static void test_kill9_leaves_whole_lines(void **st)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/kill.jsonl", dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct logrot *l;
		struct logrot_cfg c = { .path = path, .max_bytes = 1 << 30, .keep = 1 };
		if (logrot_open(&l, &c))
			_exit(1);
		FILE *f = logrot_file(l);
		char pad[3000];
		memset(pad, 'x', sizeof(pad) - 1);
		pad[sizeof(pad) - 1] = '\0';
		for (unsigned long i = 0;; i++)
			fprintf(f, "{\"seq\":%lu,\"pad\":\"%.*s\"}\n", i, (int)(i % 2999), pad);
	}
	struct stat s;
	do {
		usleep(1000);
	} while (stat(path, &s) || s.st_size < 2000000);
	kill(pid, SIGKILL);
	int status;
	waitpid(pid, &status, 0);
	assert_true(WIFSIGNALED(status));
	int h, first;
	int n = count_json_lines_tail(path, &h, &first, true);
	assert_true(n > 100); /* every complete line parses */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rotation_keeps_n),
		cmocka_unit_test(test_rotation_reopen_retried),
		cmocka_unit_test(test_reopen_appends),
		cmocka_unit_test(test_shift),
		cmocka_unit_test(test_kill9_leaves_whole_lines),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
