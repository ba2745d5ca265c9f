/* Every device the daemon config allows (CONFIG_MAX_DEVICES) gets its own
 * metrics slot and samples; one more is -ENOSPC. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "governor/daemon/config.h"
#include "governor/daemon/metrics.h"

static void test_config_max_devices(void **state)
{
	(void)state;
	static struct metrics_snapshot s;
	char name[32], line[128];
	metrics_snapshot_init(&s);
	for (int i = 0; i < CONFIG_MAX_DEVICES; i++) {
		snprintf(name, sizeof(name), "gpu%02d", i);
		assert_int_equal(metrics_add_device(&s, name), i);
		s.dev[i].periods = (uint64_t)i + 100;
	}
	assert_int_equal(metrics_add_device(&s, "one-too-many"), -ENOSPC);
	assert_int_equal(s.n_devices, CONFIG_MAX_DEVICES);

	char *t;
	size_t len;
	assert_int_equal(metrics_render_alloc(&s, &t, &len), 0);
	for (int i = 0; i < CONFIG_MAX_DEVICES; i++) {
		snprintf(line, sizeof(line), "\ngovd_periods_total{device=\"gpu%02d\"} %d\n", i, i + 100);
		assert_non_null(strstr(t, line));
	}
	assert_null(strstr(t, "one-too-many"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_max_devices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
