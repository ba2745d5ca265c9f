/* common/log: journal priority prefixes under systemd ($JOURNAL_STREAM
 * matching the sink's dev:ino, systemd.exec(5)), level filtering, and
 * log_level_parse's errno. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "common/log.h"

/* Everything logged to f so far. */
static void slurp(FILE *f, char *buf, size_t len)
{
	fflush(f);
	rewind(f);
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
}

static void set_stream(FILE *f, long ino_delta)
{
	struct stat st;
	char v[64];
	assert_int_equal(fstat(fileno(f), &st), 0);
	snprintf(v, sizeof(v), "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino + ino_delta);
	assert_int_equal(setenv("JOURNAL_STREAM", v, 1), 0);
}

static void test_journal_prefixes(void **state)
{
	(void)state;
	char buf[1024];
	FILE *f = tmpfile();
	assert_non_null(f);
	set_stream(f, 0);
	log_init(LOG_DEBUG, f);
	assert_true(log_to_journal());
	log_err("e %d", 1);
	log_warn("w");
	log_notice("n");
	log_info("i");
	log_debug("d");
	slurp(f, buf, sizeof(buf));
	assert_string_equal(buf, "<3>govd: error: e 1\n"
				 "<4>govd: warning: w\n"
				 "<5>govd: notice: n\n"
				 "<6>govd: info: i\n"
				 "<7>govd: debug: d\n");
	log_fini();
	unsetenv("JOURNAL_STREAM");
	fclose(f);
}

/* Set but naming another stream (a redirected child), or malformed: plain. */
static void test_journal_only_when_matching(void **state)
{
	(void)state;
	static const char *const bad[] = { "", "abc", "12", "12:", ":34", "1:2x", "-1:-1", "1:2:3" };
	char buf[256];
	FILE *f = tmpfile();
	assert_non_null(f);

	set_stream(f, 1);
	log_init(LOG_NOTICE, f);
	assert_false(log_to_journal());
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(setenv("JOURNAL_STREAM", bad[i], 1), 0);
		log_init(LOG_NOTICE, f);
		assert_false(log_to_journal());
	}
	unsetenv("JOURNAL_STREAM");
	log_init(LOG_NOTICE, f);
	assert_false(log_to_journal());
	log_err("x");
	log_info("filtered out");
	slurp(f, buf, sizeof(buf));
	assert_string_equal(buf, "govd: error: x\n");
	log_fini();
	assert_false(log_to_journal());
	fclose(f);
}

static void test_level_parse(void **state)
{
	(void)state;
	static const char *const names[] = { "error", "warning", "notice", "info", "debug" };
	enum log_level lv;
	for (int i = 0; i < 5; i++) {
		lv = (enum log_level)-1;
		assert_int_equal(log_level_parse(names[i], &lv), 0);
		assert_int_equal(lv, i);
	}
	lv = LOG_INFO;
	assert_int_equal(log_level_parse("warn", &lv), -EINVAL);
	assert_int_equal(log_level_parse("", &lv), -EINVAL);
	assert_int_equal(log_level_parse("ERROR", &lv), -EINVAL);
	assert_int_equal(lv, LOG_INFO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_journal_prefixes),
		cmocka_unit_test(test_journal_only_when_matching),
		cmocka_unit_test(test_level_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
