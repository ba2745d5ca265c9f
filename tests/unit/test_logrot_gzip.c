/* Compressed rotation (logrot_cfg.compress): each rotated file becomes
 * path.N.gz through a child gzip, holds whole lines starting with the
 * header, shifts like path.N, at most keep of them remain in either form,
 * and the child is reaped (no zombie left). */
#include <errno.h>
#include <setjmp.h>
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

static char dir[] = "/tmp/test_logrot_gzip_XXXXXX";

static int setup(void **st)
{
	(void)st;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	(void)st;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* base.i (gz false) or base.i.gz; i 0: base itself. */
static bool exists_(const char *base, unsigned i, bool gz)
{
	char p[256];
	struct stat s;
	if (i == 0)
		snprintf(p, sizeof(p), "%s", base);
	else
		snprintf(p, sizeof(p), "%s.%u%s", base, i, gz ? ".gz" : "");
	return stat(p, &s) == 0;
}

/* Lines of a gzip file (gzip -dc); the first must be the header. */
static int gz_lines(const char *base, unsigned i)
{
	char cmd[300], line[512];
	snprintf(cmd, sizeof(cmd), "gzip -dc %s.%u.gz", base, i);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		assert_non_null(strchr(line, '\n'));
		if (n == 0)
			assert_non_null(strstr(line, "{\"type\":\"header\""));
		n++;
	}
	assert_int_equal(pclose(f), 0);
	return n;
}

static void test_rotated_files_compressed(void **st)
{
	(void)st;
	char path[128];
	snprintf(path, sizeof(path), "%s/gpu0.jsonl", dir);
	struct logrot *l;
	struct logrot_cfg c = { .path = path, .max_bytes = 4000, .keep = 3,
				.header_prefix = "{\"type\":\"header\"", .compress = true };
	assert_int_equal(logrot_open(&l, &c), 0);
	FILE *f = logrot_file(l);
	fprintf(f, "{\"type\":\"header\",\"period_ms\":100}\n");
	for (int i = 0; i < 400; i++)
		fprintf(f, "{\"type\":\"decision\",\"seq\":%d,\"pad\":\"%060d\"}\n", i, i);
	assert_true(logrot_rotations(l) >= 5);
	assert_int_equal(logrot_close(l), 0);
	for (unsigned i = 1; i <= 3; i++) {
		assert_true(exists_(path, i, true));
		assert_false(exists_(path, i, false));
		assert_true(gz_lines(path, i) > 10);
	}
	assert_false(exists_(path, 4, true));
	assert_false(exists_(path, 4, false));
	/* Every gzip child was waited for. */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* Compression turned on over an uncompressed history: at most keep files. */
static void test_shift_mixed_forms(void **st)
{
	(void)st;
	char path[128], p[160];
	snprintf(path, sizeof(path), "%s/mixed.jsonl", dir);
	const char *names[] = { "", ".1.gz", ".2", ".3" };
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s%s", path, names[i]);
		FILE *f = fopen(p, "w");
		assert_non_null(f);
		fprintf(f, "%d\n", i);
		fclose(f);
	}
	assert_int_equal(logrot_shift(path, 3), 0);
	assert_false(exists_(path, 0, false));
	assert_true(exists_(path, 1, false));    /* the live file */
	assert_true(exists_(path, 2, true)); /* was .1.gz */
	assert_true(exists_(path, 3, false));    /* was .2; the old .3 is gone */
	assert_false(exists_(path, 3, true));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rotated_files_compressed),
		cmocka_unit_test(test_shift_mixed_forms),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
