/* Decision log records: optional fields appear exactly when there is
 * something to report, and parse back as documented in docs/decision-log.md. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "governor/loop/declog.h"
#include "hal/hal_serving.h"

struct rec_fx {
	struct gov_estimates est;
	enum gov_fault faults[GOV_SIG_N];
	struct gov_opoint op;
	struct declog_record rec;
};

static void fx_init(struct rec_fx *f)
{
	memset(f, 0, sizeof(*f));
	f->est.util = NAN;
	f->rec = (struct declog_record){ .t_ms = 500, .seq = 1, .est = &f->est, .faults = f->faults,
					 .before = &f->op, .after = &f->op, .policy_name = "p",
					 .policy_hash = "fnv1a64:0", .seed = 3 };
}

/* One decision record written and parsed back. */
static json_t *written(const struct declog_record *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct declog d;
	declog_init(&d, f);
	assert_int_equal(declog_decision(&d, r), 0);
	declog_fini(&d);
	fclose(f);
	json_error_t err;
	json_t *o = json_loads(buf, 0, &err);
	free(buf);
	assert_non_null(o);
	return o;
}

static void test_window_errors(void **state)
{
	(void)state;
	struct rec_fx f;
	fx_init(&f);
	json_t *o = written(&f.rec);
	json_t *sla = json_object_get(json_object_get(o, "inputs"), "sla");
	assert_non_null(sla);
	assert_null(json_object_get(sla, "window_errors"));
	json_decref(o);

	f.est.window_errors = 2;
	o = written(&f.rec);
	sla = json_object_get(json_object_get(o, "inputs"), "sla");
	assert_int_equal(json_integer_value(json_object_get(sla, "window_errors")), 2);
	json_decref(o);
}

static void test_backend_faults(void **state)
{
	(void)state;
	struct rec_fx f;
	fx_init(&f);
	f.rec.serving_fault_msg = "ignored without bits";
	json_t *o = written(&f.rec);
	assert_null(json_object_get(o, "serving_faults"));
	assert_null(json_object_get(o, "quality_faults"));
	json_decref(o);

	f.rec.serving_faults = HAL_SVF_PARSE;
	f.rec.serving_fault_msg = "line 3: bad sample";
	f.rec.quality_faults = HAL_SVF_QUALITY_MSG | HAL_SVF_MISSING;
	f.rec.quality_fault_msg = NULL;
	o = written(&f.rec);
	json_t *sf = json_object_get(o, "serving_faults");
	assert_string_equal(json_string_value(json_array_get(json_object_get(sf, "faults"), 0)),
			    "parse");
	assert_int_equal(json_array_size(json_object_get(sf, "faults")), 1);
	assert_string_equal(json_string_value(json_object_get(sf, "msg")), "line 3: bad sample");
	json_t *qf = json_object_get(o, "quality_faults");
	json_t *names = json_object_get(qf, "faults");
	assert_int_equal(json_array_size(names), 2);
	assert_string_equal(json_string_value(json_array_get(names, 0)), "missing-metric");
	assert_string_equal(json_string_value(json_array_get(names, 1)), "quality-message");
	assert_true(json_is_null(json_object_get(qf, "msg")));
	json_decref(o);
}

/* Reason lists as the sim's time series writes them. */
static void test_reasons_join(void **state)
{
	(void)state;
	char buf[64];
	assert_string_equal(gov_reasons_join(0, buf, sizeof(buf)), "");
	assert_string_equal(gov_reasons_join(GOV_R_INIT | GOV_R_STATIC | GOV_R_RESTORE, buf,
					     sizeof(buf)),
			    "init|static|restore");
	char small[12];
	assert_string_equal(gov_reasons_join(GOV_R_INIT | GOV_R_FIRMWARE_DEFAULT, small,
					     sizeof(small)),
			    "init|fir...");
}

/* Rollback and envelope fields: always present, null when nothing to say. */
static void test_rollback_fields(void **state)
{
	(void)state;
	struct rec_fx f;
	fx_init(&f);
	json_t *o = written(&f.rec);
	assert_int_equal(json_array_size(json_object_get(o, "armed")), 0);
	assert_true(json_is_null(json_object_get(o, "fired")));
	json_t *rb = json_object_get(o, "rollback");
	assert_string_equal(json_string_value(json_object_get(rb, "state")), "normal");
	assert_true(json_is_null(json_object_get(rb, "lkg")));
	assert_true(json_real_value(json_object_get(rb, "hold_left_s")) == 0);
	assert_int_equal(json_integer_value(json_object_get(rb, "rollbacks")), 0);
	assert_true(json_is_null(json_object_get(o, "envelope")));
	assert_false(json_is_true(json_object_get(o, "operator_hold")));
	assert_true(json_is_null(json_object_get(o, "power_budget_mw")));
	assert_null(json_object_get(o, "emergency"));
	json_decref(o);

	struct gov_opoint lkg = { .clk_locked = true, .clk_max_khz = 1410000,
				  .power_limit_mw = 500000, .n_slices = 1 };
	f.rec.armed = GOV_T_SLA | GOV_T_THERMAL;
	f.rec.fired = GOV_T_THERMAL;
	f.rec.rb_state = RB_HOLD;
	f.rec.lkg = &lkg;
	f.rec.hold_left_s = 600;
	f.rec.rollbacks = 2;
	f.rec.envelope = "inlet 41.0 C outside 10..40 C";
	f.rec.operator_hold = true;
	f.rec.power_budget_on = true;
	f.rec.power_budget_mw = 450000;
	f.rec.emergency = "gpio";
	o = written(&f.rec);
	json_t *a = json_object_get(o, "armed");
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_array_get(a, 0)), "sla");
	assert_string_equal(json_string_value(json_array_get(a, 1)), "thermal");
	assert_string_equal(json_string_value(json_object_get(o, "fired")), "thermal");
	rb = json_object_get(o, "rollback");
	assert_string_equal(json_string_value(json_object_get(rb, "state")), "hold");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(rb, "lkg"), "clk_max_khz")),
			 1410000);
	assert_true(json_real_value(json_object_get(rb, "hold_left_s")) == 600);
	assert_int_equal(json_integer_value(json_object_get(rb, "rollbacks")), 2);
	assert_string_equal(json_string_value(json_object_get(o, "envelope")),
			    "inlet 41.0 C outside 10..40 C");
	assert_true(json_is_true(json_object_get(o, "operator_hold")));
	assert_int_equal(json_integer_value(json_object_get(o, "power_budget_mw")), 450000);
	assert_string_equal(json_string_value(json_object_get(o, "emergency")), "gpio");
	json_decref(o);
}

/* The per-slice quality keys that appear only while they hold: heat_prior
 * and detect_held_s (null: no samples yet, so held for good). */
static void test_quality_held_keys(void **state)
{
	(void)state;
	struct rec_fx f;
	fx_init(&f);
	f.est.n_slices = 3;
	double held_s[HAL_MAX_SLICES] = { 0, 1968.5, INFINITY };
	f.rec.detect_held_s = held_s;
	f.rec.heat_prior = 1u << 0;
	json_t *o = written(&f.rec);
	json_t *q = json_object_get(json_object_get(o, "inputs"), "quality");
	assert_int_equal(json_array_size(q), 3);
	assert_true(json_is_true(json_object_get(json_array_get(q, 0), "heat_prior")));
	assert_null(json_object_get(json_array_get(q, 0), "detect_held_s"));
	assert_null(json_object_get(json_array_get(q, 1), "heat_prior"));
	assert_true(json_real_value(json_object_get(json_array_get(q, 1), "detect_held_s")) == 1968.5);
	json_t *inf = json_object_get(json_array_get(q, 2), "detect_held_s");
	assert_non_null(inf);
	assert_true(json_is_null(inf));
	json_decref(o);
	/* No controller output: no key. */
	f.rec.detect_held_s = NULL;
	o = written(&f.rec);
	q = json_object_get(json_object_get(o, "inputs"), "quality");
	assert_null(json_object_get(json_array_get(q, 1), "detect_held_s"));
	json_decref(o);
}

/* Header: run metadata and versions. */
static void test_header(void **state)
{
	(void)state;
	struct hal_limits l = { .clk_max_khz = 1 };
	snprintf(l.driver_version, sizeof(l.driver_version), "sim-0.1.0");
	snprintf(l.firmware_version, sizeof(l.firmware_version), "fw-2");
	struct declog_header h = { .policy_name = "p", .policy_path = "p.yaml",
				   .policy_hash = "fnv1a64:0", .controller = "static",
				   .period_ms = 500, .seed = 9, .lim = &l, .dry_run = true,
				   .model_revision = "llama-3.1-8b" };
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	struct declog d;
	declog_init(&d, fp);
	assert_int_equal(declog_header(&d, &h), 0);
	assert_true(len > 0 && buf[len - 1] == '\n'); /* flushed without fclose */
	declog_fini(&d);
	fclose(fp);
	json_error_t err;
	json_t *o = json_loads(buf, 0, &err);
	free(buf);
	assert_non_null(o);
	assert_true(json_is_true(json_object_get(o, "dry_run")));
	json_t *v = json_object_get(o, "versions");
	assert_string_equal(json_string_value(json_object_get(v, "govd")), GOVD_VERSION);
	assert_string_equal(json_string_value(json_object_get(v, "driver")), "sim-0.1.0");
	assert_string_equal(json_string_value(json_object_get(v, "firmware")), "fw-2");
	assert_non_null(json_string_value(json_object_get(v, "compiler")));
	assert_non_null(json_string_value(json_object_get(v, "jansson")));
	json_t *md = json_object_get(o, "policy_metadata");
	assert_string_equal(json_string_value(json_object_get(md, "model_revision")), "llama-3.1-8b");
	assert_string_equal(json_string_value(json_object_get(md, "power_mode")), "");
	/* govd: no scenario file, no command: the keys are absent */
	assert_null(json_object_get(o, "scenario_path"));
	assert_null(json_object_get(o, "command"));
	json_decref(o);

	h.scenario = "s";
	h.scenario_path = "configs/scenarios/s.yaml";
	h.command = "govctl sim --scenario configs/scenarios/s.yaml --policy p.yaml --seed 9";
	fp = open_memstream(&buf, &len);
	declog_init(&d, fp);
	assert_int_equal(declog_header(&d, &h), 0);
	declog_fini(&d);
	fclose(fp);
	o = json_loads(buf, 0, &err);
	free(buf);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "scenario_path")), h.scenario_path);
	assert_string_equal(json_string_value(json_object_get(o, "command")), h.command);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_errors),
		cmocka_unit_test(test_backend_faults),
		cmocka_unit_test(test_reasons_join),
		cmocka_unit_test(test_rollback_fields),
		cmocka_unit_test(test_quality_held_keys),
		cmocka_unit_test(test_header),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
