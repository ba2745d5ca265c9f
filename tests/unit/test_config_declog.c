/* The decision log's compact and compression keys: defaults (full, 10 s
 * heartbeat, plain rotation), values read, bad values located with their
 * key path, and a change of any of them refused by a reload. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "governor/daemon/config.h"

static const char dev[] = "devices:\n  - {name: gpu0, backend: sim, options: {scenario: s.yaml}}\n";

static int load(const char *dl, struct config **c, struct diag_list *d)
{
	char text[512];
	snprintf(text, sizeof(text), "policy: p.yaml\n%s%s", dl, dev);
	return config_load_string("/etc/govd/govd.yaml", text, strlen(text), c, d);
}

static bool has_path(const struct diag_list *d, int line, const char *path)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].line == line && !strcmp(d->v[i].path, path) && d->v[i].col > 0)
			return true;
	return false;
}

static void test_defaults_and_values(void **st)
{
	(void)st;
	struct config *c = NULL;
	struct diag_list d = { 0 };
	assert_int_equal(load("", &c, &d), 0);
	assert_false(c->declog.compact);
	assert_int_equal(c->declog.heartbeat_s, CONFIG_DEFAULT_LOG_HEARTBEAT_S);
	assert_false(c->declog.compress);
	config_free(c);
	assert_int_equal(load("decision_log: {mode: compact, heartbeat_s: 30, compress: true}\n", &c, &d), 0);
	assert_true(c->declog.compact);
	assert_int_equal(c->declog.heartbeat_s, 30);
	assert_true(c->declog.compress);
	struct config *b = NULL;
	assert_int_equal(load("decision_log: {mode: full, heartbeat_s: 30, compress: true}\n", &b, &d), 0);
	char why[128];
	assert_false(config_reloadable(c, b, why, sizeof(why)));
	assert_non_null(strstr(why, "decision_log"));
	config_free(b);
	config_free(c);
	diag_clear(&d);
}

static void test_bad_values(void **st)
{
	(void)st;
	const char *bad[] = {
		"decision_log: {mode: terse}\n",
		"decision_log: {heartbeat_s: 0}\n",
		"decision_log: {heartbeat_s: 3601}\n",
		"decision_log: {compress: maybe}\n",
	};
	const char *path[] = { "decision_log.mode", "decision_log.heartbeat_s",
			       "decision_log.heartbeat_s", "decision_log.compress" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct config *c = NULL;
		struct diag_list d = { 0 };
		assert_int_not_equal(load(bad[i], &c, &d), 0);
		assert_true(has_path(&d, 2, path[i]));
		diag_clear(&d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_values),
		cmocka_unit_test(test_bad_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
