/* The decision log's write-failure handling (governor/daemon/logrot.c, issue 12):
 * a write that fails part-way (here: RLIMIT_FSIZE, which fails a write past
 * the limit with EFBIG after writing up to it, as a full disk does with
 * ENOSPC) leaves no partial line; the record is dropped whole and counted,
 * the episode is visible (logrot_failing) and ends with the next good write;
 * a record longer than the stream buffer that fails has its tail dropped up
 * to its newline. The tmpfs version: tests/hardening/log_full_disk.sh. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "governor/daemon/logrot.h"

static char dir[] = "/tmp/test_logrot_full_XXXXXX";
static struct rlimit saved;

static int setup(void **st)
{
	(void)st;
	signal(SIGXFSZ, SIG_IGN); /* the write fails with EFBIG instead */
	getrlimit(RLIMIT_FSIZE, &saved);
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	(void)st;
	setrlimit(RLIMIT_FSIZE, &saved);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static off_t size_of(const char *p)
{
	struct stat s;
	assert_int_equal(stat(p, &s), 0);
	return s.st_size;
}

static void limit(rlim_t bytes)
{
	struct rlimit r = { .rlim_cur = bytes, .rlim_max = saved.rlim_max };
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &r), 0);
}

/* Every line of the file ends in a newline and starts with '{'. */
static size_t whole_lines(const char *p)
{
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	char *line = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		assert_int_equal(line[len - 1], '\n');
		assert_int_equal(line[0], '{');
		n++;
	}
	free(line);
	fclose(f);
	return n;
}

static void record(FILE *f, size_t pad)
{
	char *b = malloc(pad + 1);
	assert_non_null(b);
	memset(b, 'x', pad);
	b[pad] = '\0';
	fprintf(f, "{\"type\":\"decision\",\"pad\":\"%s\"}\n", b);
	fflush(f);
	free(b);
}

static void test_failed_write_cut_back(void **st)
{
	(void)st;
	char path[256];
	snprintf(path, sizeof(path), "%s/gpu0.jsonl", dir);
	struct logrot *l;
	struct logrot_cfg c = { .path = path, .header_prefix = "{\"type\":\"header\"" };
	assert_int_equal(logrot_open(&l, &c), 0);
	FILE *f = logrot_file(l);
	fputs("{\"type\":\"header\"}\n", f);
	record(f, 100);
	fflush(f);
	off_t good = size_of(path);
	assert_false(logrot_failing(l));

	/* room for 50 more bytes: a 300-byte record is written part-way */
	limit((rlim_t)good + 50);
	record(f, 300);
	assert_true(logrot_failing(l));
	assert_int_equal(logrot_dropped(l), 1);
	assert_true(logrot_errors(l) >= 1);
	assert_int_equal(logrot_last_error(l), -EFBIG);
	assert_int_equal(size_of(path), good); /* cut back: no partial line */
	record(f, 10); /* fits in the 50 bytes: the episode ends */
	assert_false(logrot_failing(l));

	/* a record longer than the 64 KiB stream buffer reaches the file in
	 * several writes; the first fails, the tail is dropped to its newline */
	off_t before = size_of(path);
	limit((rlim_t)before + 1000);
	record(f, 100000);
	assert_true(logrot_failing(l));
	assert_int_equal(size_of(path), before);
	limit(saved.rlim_cur);
	record(f, 20);
	assert_false(logrot_failing(l));
	assert_int_equal(logrot_close(l), -EFBIG); /* the close reports the episode */
	assert_int_equal(whole_lines(path), 4);    /* header, 100, 10, 20 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_failed_write_cut_back),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
