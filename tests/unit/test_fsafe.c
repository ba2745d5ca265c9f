/* common/fsafe: non-blocking regular-file reads under bounds, creation that
 * never writes through a planted entry, private directories, trusted files,
 * names that become paths, escaping (docs/hardening.md). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fsafe.h"

static char dir[] = "/tmp/test_fsafe_XXXXXX";

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

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_special_files_refused(void **st)
{
	(void)st;
	char fifo[256];
	struct fsafe_err e;
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* returns at once: O_NONBLOCK on the open, then the type check */
	assert_int_equal(fsafe_open_read(fifo, 0, &e), -EINVAL);
	assert_string_equal(e.msg, "is a FIFO, not a regular file");
	assert_int_equal(fsafe_open_read(dir, 0, &e), -EISDIR);
	assert_string_equal(e.msg, "is a directory, not a regular file");
	assert_int_equal(fsafe_open_read("/dev/zero", 0, &e), -EINVAL);
	assert_string_equal(e.msg, "is a character device, not a regular file");
	assert_null(fsafe_fopen_read("/dev/null", 0, &e));
	assert_int_equal(errno, EINVAL);
}

static void test_read_bounds(void **st)
{
	(void)st;
	char p[256], *buf;
	size_t len;
	struct fsafe_err e;
	snprintf(p, sizeof(p), "%s/f", dir);
	put(p, "ab\ncdefgh\nij\n");
	assert_int_equal(fsafe_read_all(p, 100, 6, &buf, &len, &e), 0);
	assert_int_equal(len, 13);
	assert_string_equal(buf, "ab\ncdefgh\nij\n");
	free(buf);
	assert_int_equal(fsafe_read_all(p, 100, 5, &buf, &len, &e), -EFBIG);
	assert_null(buf);
	assert_int_equal(e.line, 2);
	assert_string_equal(e.msg, "line 2 is longer than 5 bytes");
	assert_int_equal(fsafe_read_all(p, 12, 0, &buf, &len, &e), -EFBIG);
	assert_non_null(strstr(e.msg, "over the limit of 12"));
	/* stream lines under a bound */
	FILE *f = fsafe_fopen_read(p, 0, &e);
	assert_non_null(f);
	char *line = NULL;
	size_t cap = 0;
	assert_int_equal(fsafe_getline(f, &line, &cap, 4), 3);
	assert_string_equal(line, "ab\n");
	assert_int_equal(fsafe_getline(f, &line, &cap, 4), -E2BIG);
	fclose(f);
	f = fsafe_fopen_read(p, 0, &e);
	assert_int_equal(fsafe_getline(f, &line, &cap, 100), 3);
	assert_int_equal(fsafe_getline(f, &line, &cap, 100), 7);
	assert_int_equal(fsafe_getline(f, &line, &cap, 100), 3);
	assert_int_equal(fsafe_getline(f, &line, &cap, 100), -1);
	fclose(f);
	free(line);
}

static void test_create_never_follows(void **st)
{
	(void)st;
	char victim[256], link[256], buf[32] = "";
	struct fsafe_err e;
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(link, sizeof(link), "%s/out", dir);
	put(victim, "untouched");
	assert_int_equal(symlink(victim, link), 0);
	/* without replace: refused */
	assert_true(fsafe_create(link, 0644, false, &e) < 0);
	/* with replace: the link goes, a fresh file is made */
	FILE *f = fsafe_fcreate(link, 0644, true, &e);
	assert_non_null(f);
	fputs("new", f);
	fclose(f);
	struct stat s;
	assert_int_equal(lstat(link, &s), 0);
	assert_true(S_ISREG(s.st_mode));
	FILE *v = fopen(victim, "r");
	assert_non_null(fgets(buf, sizeof(buf), v));
	fclose(v);
	assert_string_equal(buf, "untouched");
	/* a directory is never replaced */
	assert_int_equal(fsafe_create(dir, 0644, true, &e), -EISDIR);
}

static void test_private_dirs_and_trusted_files(void **st)
{
	(void)st;
	char d[256], f[300];
	struct fsafe_err e;
	snprintf(d, sizeof(d), "%s/a/b", dir);
	assert_int_equal(fsafe_private_dir(d, 0700, &e), 0); /* created */
	struct stat s;
	assert_int_equal(stat(d, &s), 0);
	assert_int_equal(s.st_mode & 0777, 0700);
	assert_int_equal(chmod(d, 0770), 0);
	assert_int_equal(fsafe_private_dir(d, 0700, &e), -EPERM);
	assert_non_null(strstr(e.msg, "writable by its group"));
	assert_int_equal(chmod(d, 0755), 0);
	snprintf(f, sizeof(f), "%s/state.json", d);
	assert_int_equal(fsafe_private_dir_of(f, 0700, &e), 0);
	assert_int_equal(fsafe_trusted_file(f, &e), -ENOENT);
	put(f, "{}");
	assert_int_equal(chmod(f, 0600), 0);
	assert_int_equal(fsafe_trusted_file(f, &e), 0);
	assert_int_equal(chmod(f, 0666), 0);
	assert_int_equal(fsafe_trusted_file(f, &e), -EPERM);
	assert_int_equal(chmod(f, 0600), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(f, 65534, 65534), 0);
		assert_int_equal(fsafe_trusted_file(f, &e), -EPERM);
		assert_non_null(strstr(e.msg, "owned by uid 65534"));
		assert_int_equal(chown(d, 65534, 65534), 0);
		assert_int_equal(fsafe_private_dir(d, 0700, &e), -EPERM);
	}
	/* a symlink in place of the directory */
	char l[256];
	snprintf(l, sizeof(l), "%s/link", dir);
	assert_int_equal(symlink(d, l), 0);
	assert_int_equal(fsafe_private_dir(l, 0700, &e), -ENOTDIR);
}

static void test_names_and_escape(void **st)
{
	(void)st;
	struct fsafe_err e;
	assert_true(fsafe_name_ok("gpu0", 47, &e));
	assert_true(fsafe_name_ok("node-1_a.b", 47, &e));
	assert_false(fsafe_name_ok("", 47, &e));
	assert_false(fsafe_name_ok("..", 47, &e));
	assert_false(fsafe_name_ok("../x", 47, &e));
	assert_false(fsafe_name_ok("a/b", 47, &e));
	assert_false(fsafe_name_ok("a b", 47, &e));
	assert_false(fsafe_name_ok("a\x1b", 47, &e));
	assert_false(fsafe_name_ok("abcdef", 5, &e));
	char out[64];
	assert_string_equal(fsafe_escape(out, sizeof(out), "a\x1b[2Jb\n\x7f"), "a\\x1b[2Jb\\x0a\\x7f");
	assert_string_equal(fsafe_escape(out, sizeof(out), "\xc2\x9b" "31m \xc3\xa9"),
			    "\\u009b31m \xc3\xa9"); /* C1 CSI escaped, other UTF-8 kept */
	/* truncation never splits an escape */
	assert_string_equal(fsafe_escape(out, 6, "ab\x1b"), "ab");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_special_files_refused),
		cmocka_unit_test(test_read_bounds),
		cmocka_unit_test(test_create_never_follows),
		cmocka_unit_test(test_private_dirs_and_trusted_files),
		cmocka_unit_test(test_names_and_escape),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
