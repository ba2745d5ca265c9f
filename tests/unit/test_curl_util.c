/* hal/curl_util: libcurl loaded with dlopen on first use. The tests run in
 * order: the missing-library cases first, while nothing is loaded yet (a
 * successful load is kept for the process). The HTTP exchanges themselves go
 * through the table in test_hal_serving and test_precision_act. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/diag.h"
#include "hal/curl_util.h"
#include "hal/hal.h"
#include "hal/hal_serving.h"
#include "hal/precision_act.h"

static void missing_library_is_reported(void **state)
{
	char err[200] = "";
	hal_curl_set_library("libcurl-absent-for-test.so.4");
	assert_int_equal(hal_curl_load(err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "libcurl not found"));
	assert_non_null(strstr(err, "libcurl-absent-for-test.so.4"));
	assert_null(hal_curl());
	/* a failure is not remembered: the same answer again, no crash */
	assert_int_equal(hal_curl_load(NULL, 0), -ENOENT);
	assert_null(hal_curl());
}

static void library_without_curl_symbols_is_refused(void **state)
{
	char err[200] = "";
	hal_curl_set_library("libc.so.6");
	assert_int_equal(hal_curl_load(err, sizeof(err)), -ENOSYS);
	assert_non_null(strstr(err, "has no symbol curl_easy_init"));
	assert_null(hal_curl());
}

static void serving_open_says_libcurl_not_found(void **state)
{
	hal_curl_set_library("libcurl-absent-for-test.so.4");
	const char *keys[] = { "url" }, *vals[] = { "http://127.0.0.1:1/metrics" };
	struct hal_dev_cfg cfg = { .name = "srv0", .backend = "serving", .n_opts = 1,
				   .keys = keys, .values = vals };
	struct hal_dev dev = { .ops = &hal_serving_ops };
	struct diag_list dl = { 0 };
	assert_int_equal(hal_serving_ops.open(&dev, &cfg, &dl), -ENOENT);
	assert_null(dev.priv);
	bool found = false;
	for (size_t i = 0; i < dl.n; i++)
		if (!strcmp(dl.v[i].code, "curl-not-found") && strstr(dl.v[i].msg, "libcurl not found"))
			found = true;
	assert_true(found);
	diag_clear(&dl);
}

static void http_actuator_says_libcurl_not_found(void **state)
{
	hal_curl_set_library("libcurl-absent-for-test.so.4");
	struct pact a;
	struct pact_cfg cfg = { .kind = PACT_HTTP, .target = "http://127.0.0.1:1/precision" };
	assert_int_equal(pact_init(&a, &cfg), -ENOENT);
	assert_non_null(strstr(a.err, "libcurl not found"));
	assert_null(a.curl);
	assert_null(a.target);
	/* other kinds never need libcurl */
	struct pact_cfg none = { .kind = PACT_NONE };
	assert_int_equal(pact_init(&a, &none), 0);
	pact_fini(&a);
}

static void default_library_loads_once(void **state)
{
	char err[200] = "";
	hal_curl_set_library(NULL);
	assert_int_equal(hal_curl_load(err, sizeof(err)), 0);
	const struct hal_curl *cu = hal_curl();
	assert_non_null(cu);
	/* loaded for the process: a later name changes nothing */
	hal_curl_set_library("libcurl-absent-for-test.so.4");
	assert_int_equal(hal_curl_load(err, sizeof(err)), 0);
	assert_ptr_equal(hal_curl(), cu);

	CURL *c = cu->easy_init();
	assert_non_null(c);
	hal_curl_reset(c, "file:///etc/passwd", 1000);
	/* hal_curl_reset allows http and https only */
	CURLcode cc = cu->easy_perform(c);
	assert_int_equal(cc, CURLE_UNSUPPORTED_PROTOCOL);
	assert_non_null(cu->easy_strerror(cc));
	struct curl_slist *l = cu->slist_append(NULL, "X-Test: 1");
	assert_non_null(l);
	cu->slist_free_all(l);
	cu->easy_cleanup(c);

	struct pact a;
	struct pact_cfg cfg = { .kind = PACT_HTTP, .target = "http://127.0.0.1:1/precision" };
	assert_int_equal(pact_init(&a, &cfg), 0);
	assert_non_null(a.curl);
	pact_fini(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(missing_library_is_reported),
		cmocka_unit_test(library_without_curl_symbols_is_refused),
		cmocka_unit_test(serving_open_says_libcurl_not_found),
		cmocka_unit_test(http_actuator_says_libcurl_not_found),
		cmocka_unit_test(default_library_loads_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
