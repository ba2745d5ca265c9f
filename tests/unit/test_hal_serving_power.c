/* The serving backend's power side (option power_backend): a sim device
 * behind sample, get_limits and the clock / power-limit writes, its plant
 * advanced to the device clock and its timestamps moved onto it; option
 * errors of both sides. No server is needed: the scrape target refuses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "common/diag.h"
#include "hal/hal.h"
#include "hal/hal_serving.h"

struct fake_clock {
	uint64_t now_ms;
};

static uint64_t fc_now(void *ctx)
{
	return ((struct fake_clock *)ctx)->now_ms;
}

static int fc_wait(void *ctx, uint64_t t_ms)
{
	struct fake_clock *c = ctx;
	if (t_ms > c->now_ms)
		c->now_ms = t_ms;
	return 0;
}

static const struct govd_clock_ops fc_ops = { .now_ms = fc_now, .wait_until = fc_wait };

static bool has_diag(const struct diag_list *l, const char *path, const char *code)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].path, path) && !strcmp(l->v[i].code, code))
			return true;
	return false;
}

static int open_kv(struct hal_dev *dev, const char *const *kv, const struct govd_clock *clk,
		   struct diag_list *diags)
{
	const char *keys[32], *vals[32];
	size_t n = 0;
	for (; kv[2 * n]; n++) {
		assert_true(n < 32);
		keys[n] = kv[2 * n];
		vals[n] = kv[2 * n + 1];
	}
	struct hal_dev_cfg cfg = { .name = "gpu0", .backend = "serving", .n_opts = n, .keys = keys,
				   .values = vals, .clock = clk };
	return hal_open(dev, &cfg, diags);
}

static void test_sim_power_side(void **state)
{
	(void)state;
	char dir[] = "/tmp/govd-svpw-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char doc[64];
	snprintf(doc, sizeof(doc), "%s/precision.json", dir);
	struct fake_clock fc = { .now_ms = 50000 };
	struct govd_clock clk = { .ops = &fc_ops, .ctx = &fc };
	struct diag_list diags = { 0 };
	struct hal_dev dev;
	const char *const kv[] = { "url", "http://127.0.0.1:1/metrics", "timeout_ms", "100",
				   "slices", "code,chat,math", "precision", "file",
				   "precision_target", doc, "power_backend", "sim",
				   "power.scenario", "configs/scenarios/default.yaml", "power.seed", "1",
				   NULL };
	assert_int_equal(open_kv(&dev, kv, &clk, &diags), 0);
	assert_true(hal_can_set_clocks(&dev));
	assert_true(hal_can_set_power_limit(&dev));
	assert_true(hal_can_read_serving(&dev));
	assert_true(hal_can_set_precision(&dev));
	assert_false(hal_can_read_quality(&dev)); /* no quality source configured */
	assert_false(hal_can_alert(&dev));

	struct hal_limits lim;
	assert_int_equal(dev.ops->get_limits(&dev, &lim), 0);
	assert_string_equal(lim.model, "h200-sxm");
	assert_int_equal(lim.clk_max_khz, 1980000);

	/* plant time 0 is the clock at open: timestamps land on the device clock */
	struct hal_sample s;
	assert_int_equal(dev.ops->sample(&dev, &s), 0);
	assert_int_equal(s.t_ms, 50000);
	fc.now_ms = 52000;
	assert_int_equal(dev.ops->sample(&dev, &s), 0);
	assert_int_equal(s.t_ms, 52000); /* the plant advanced with the clock */
	assert_true(s.power_mw[HAL_RAIL_ACCEL].valid);
	assert_true(s.power_mw[HAL_RAIL_ACCEL].t_ms >= 50000 && s.power_mw[HAL_RAIL_ACCEL].t_ms <= 52000);
	assert_true(s.temp_mc[HAL_TEMP_JUNCTION].valid);
	assert_true(s.temp_mc[HAL_TEMP_JUNCTION].t_ms >= 50000);
	assert_true(s.temp_mc[HAL_TEMP_JUNCTION].v > 20000 && s.temp_mc[HAL_TEMP_JUNCTION].v < 90000);

	/* writes reach the plant */
	assert_int_equal(dev.ops->set_power_limit(&dev, 300000), 0);
	assert_int_equal(dev.ops->set_clock_range(&dev, 1005000, 1005000), 0);
	fc.now_ms = 54000;
	assert_int_equal(dev.ops->sample(&dev, &s), 0);
	assert_int_equal(s.power_limit_mw.v, 300000);
	assert_true(s.clk_khz.valid);
	assert_true(s.clk_khz.v <= 1005000 + (int64_t)lim.clk_step_khz);
	assert_int_equal(dev.ops->reset_clocks(&dev), 0);

	/* the document goes to the server's actuator as before */
	const double frac[3] = { 1.0, 0.5, 0.0 };
	assert_int_equal(dev.ops->set_precision(&dev, frac, 3), 0);
	FILE *f = fopen(doc, "r");
	assert_non_null(f);
	char buf[256] = "";
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_non_null(strstr(buf, "\"generation\":1"));
	assert_non_null(strstr(buf, "\"chat\":0.5"));
	const double bad[3] = { 1.0, 2.0, 0.0 };
	assert_int_equal(dev.ops->set_precision(&dev, bad, 3), -EINVAL);

	/* the serving side is unchanged: a refused scrape is reported in-band */
	struct hal_serving sv;
	assert_int_equal(dev.ops->read_serving(&dev, &sv), 0);
	assert_false(sv.valid);
	assert_true(sv.fault_bits & HAL_SVF_CONNECT);
	assert_int_equal(sv.n_slices, 3);
	assert_int_equal(sv.precision_gen_set, 1);

	hal_close(&dev);
	diag_clear(&diags);
	unlink(doc);
	rmdir(dir);
}

static void test_power_option_errors(void **state)
{
	(void)state;
	struct diag_list diags = { 0 };
	struct hal_dev dev;
	const char *const orphan[] = { "url", "http://127.0.0.1:1/metrics", "power.scenario", "x.yaml",
				       NULL };
	assert_int_equal(open_kv(&dev, orphan, NULL, &diags), -EINVAL);
	assert_true(has_diag(&diags, "options.power_backend", "missing-key"));
	diag_clear(&diags);

	const char *const self[] = { "url", "http://127.0.0.1:1/metrics", "power_backend", "serving",
				     NULL };
	assert_int_equal(open_kv(&dev, self, NULL, &diags), -EINVAL);
	assert_true(has_diag(&diags, "options.power_backend", "bad-value"));
	diag_clear(&diags);

	const char *const unknown[] = { "url", "http://127.0.0.1:1/metrics", "power_backend", "nosuch",
					NULL };
	assert_int_equal(open_kv(&dev, unknown, NULL, &diags), -ENOENT);
	assert_true(has_diag(&diags, "", "unknown-backend"));
	diag_clear(&diags);

	/* the power side's own option errors, keys without the power. prefix */
	const char *const inner[] = { "url", "http://127.0.0.1:1/metrics", "power_backend", "sim",
				      "power.colour", "red", NULL };
	assert_int_equal(open_kv(&dev, inner, NULL, &diags), -EINVAL);
	assert_true(has_diag(&diags, "options.colour", "unknown-key"));
	assert_true(has_diag(&diags, "options.scenario", "missing-option"));
	assert_null(dev.ops);
	diag_clear(&diags);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sim_power_side),
		cmocka_unit_test(test_power_option_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
