/*
 * Skips that ctest counts. cmocka reports a skip()ped case as not failed, so
 * a binary whose cases skip would show Passed. A case (or a check inside
 * one) that cannot run here calls TEST_SKIP("why") or test_skip_note("why"),
 * and main returns test_exit(rc): a failure wins, else 77 when anything was
 * skipped (ctest: SKIP_RETURN_CODE 77, "Skipped"), else 0.
 *
 * Only for what this machine lacks (a peer, public data, a compiled-out
 * backend, root). A file the repository ships is never a reason to skip:
 * its absence is a failure.
 */
#ifndef GOVD_TEST_SKIP_H
#define GOVD_TEST_SKIP_H

#include <stdarg.h>
#include <stdio.h>

static int test_n_skipped;

/* Says why and counts one skip; the case goes on (a partial check skipped). */
static inline __attribute__((format(printf, 1, 2))) void test_skip_note(const char *fmt, ...)
{
	va_list ap;
	fputs("SKIP: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	test_n_skipped++;
}

/* Says why, counts it and ends the case as skipped. */
#define TEST_SKIP(...)                       \
	do {                                 \
		test_skip_note(__VA_ARGS__); \
		skip();                      \
	} while (0)

static inline int test_exit(int rc)
{
	return rc ? rc : test_n_skipped ? 77 : 0;
}

#endif
