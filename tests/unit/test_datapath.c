/* Unit tests for common/datapath: the installed-data search path
 * ($GOVD_DATA_PATH in order, then the compiled-in GOVD_DATADIR). */
#include <errno.h>
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

#include "common/datapath.h"

static char root[64];

static void put(const char *rel)
{
	char p[256], dir[256];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", p);
	for (char *s = dir + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(dir, 0700);
		*s = '/';
	}
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
}

static int setup(void **st)
{
	snprintf(root, sizeof(root), "/tmp/govd-datapath-XXXXXX");
	assert_non_null(mkdtemp(root));
	put("a/policies/x.yaml");
	put("b/policies/x.yaml");
	put("b/policies/y.yaml");
	return 0;
}

static int teardown(void **st)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	unsetenv("GOVD_DATA_PATH");
	return 0;
}

static void test_order_and_miss(void **st)
{
	char path[512], want[256], env[256];
	snprintf(env, sizeof(env), "::%s/a:%s/b:", root, root); /* empty entries skipped */
	setenv("GOVD_DATA_PATH", env, 1);
	assert_int_equal(govd_data_find("policies/x.yaml", path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/a/policies/x.yaml", root);
	assert_string_equal(path, want); /* the first folder wins */
	assert_int_equal(govd_data_find("policies/y.yaml", path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/b/policies/y.yaml", root);
	assert_string_equal(path, want);
	assert_int_equal(govd_data_find("policies/none.yaml", path, sizeof(path)), -ENOENT);
	assert_int_equal(govd_data_find("/abs/x.yaml", path, sizeof(path)), -EINVAL);
	assert_int_equal(govd_data_find("", path, sizeof(path)), -EINVAL);
	/* A buffer too small for the candidate finds nothing rather than a truncated path. */
	assert_int_equal(govd_data_find("policies/x.yaml", path, 8), -ENOENT);
	char text[512];
	govd_data_path_text(text, sizeof(text));
	assert_non_null(strstr(text, govd_datadir()));
	assert_non_null(strstr(text, env));
}

static void test_unset_uses_datadir_only(void **st)
{
	char path[512];
	unsetenv("GOVD_DATA_PATH");
	assert_true(govd_datadir()[0] == '/');
	/* Nothing of the test folder is found without the variable. */
	assert_int_equal(govd_data_find("policies/y.yaml", path, sizeof(path)) == 0 &&
				 strstr(path, root) != NULL,
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order_and_miss, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unset_uses_datadir_only, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
