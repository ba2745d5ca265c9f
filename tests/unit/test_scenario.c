/* Unit tests for plant_models/scenario: the shipped scenarios load cleanly and
 * drive a workload; good fixtures map onto the struct as documented
 * (docs/scenarios.md); every bad fixture gives its exact message(s). */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include "tests/unit/test_skip.h"

#include "common/diag.h"
#include "common/rng.h"
#include "plant_models/device.h"
#include "plant_models/scenario.h"
#include "plant_models/server.h"
#include "plant_models/workload.h"

#define GOOD "tests/data/scenarios/good/"
#define BAD "tests/data/scenarios/bad/"

static char fmt_buf[2048];

static const char *diag_str(const struct diag_list *l, size_t i)
{
	assert_true(i < l->n);
	diag_format(&l->v[i], fmt_buf, sizeof(fmt_buf));
	return fmt_buf;
}

static struct scenario *load_ok(const char *path, struct diag_list *dl)
{
	struct scenario *s = NULL;
	int rc = scenario_load(path, &s, dl);
	if (rc) {
		diag_print(dl, stdout);
		fail_msg("%s: rc %d", path, rc);
	}
	assert_non_null(s);
	return s;
}

static bool shared_trace_present(void)
{
	const char *dir = getenv("GOVD_SHARED_DATA");
	char p[4096];
	if (!dir || !dir[0])
		return false;
	snprintf(p, sizeof(p), "%s/AzureLLMInferenceTrace2023_code.csv", dir);
	return access(p, R_OK) == 0;
}

/* Every shipped scenario loads without errors or warnings and opens a workload. */
static void test_shipped_scenarios_load_and_run(void **state)
{
	(void)state;
	glob_t g;
	assert_int_equal(glob("configs/scenarios/*.yaml", 0, NULL, &g), 0);
	assert_true(g.gl_pathc >= 7);
	bool have_trace = shared_trace_present();
	size_t loaded = 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct diag_list dl = {0};
		struct scenario *s = NULL;
		int rc = scenario_load(g.gl_pathv[i], &s, &dl);
		if (rc && !have_trace && dl.n == 1 && strcmp(dl.v[0].code, "trace-missing") == 0) {
			test_skip_note("%s needs the Azure trace (GOVD_SHARED_DATA absent)",
				       g.gl_pathv[i]);
			diag_clear(&dl);
			continue;
		}
		if (rc || dl.n) {
			diag_print(&dl, stdout);
			fail_msg("%s: rc %d, %zu diagnostics", g.gl_pathv[i], rc, dl.n);
		}
		assert_non_null(s->server.model);
		assert_string_equal(s->preset, "h200-sxm");
		assert_string_equal(s->model, "llama-3.1-8b");
		assert_true(s->inlet_c >= 30);
		struct trace *t = NULL;
		if (s->workload.kind == WORKLOAD_TRACE)
			assert_int_equal(trace_load(s->workload.trace_path, &t, &dl), 0);
		struct rng root;
		rng_seed(&root, s->default_seed);
		struct workload *w;
		assert_int_equal(workload_open(&s->workload, t, &root, &w), 0);
		struct request r;
		for (int k = 0; k < 100; k++) {
			assert_int_equal(workload_next(w, &r), 0);
			assert_true(r.slice < s->n_slices);
		}
		workload_close(w);
		trace_free(t);
		scenario_free(s);
		diag_clear(&dl);
		loaded++;
	}
	globfree(&g);
	assert_true(loaded >= 5);
}

static void test_default_scenario_content(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct scenario *s = load_ok("configs/scenarios/default.yaml", &dl);
	assert_string_equal(s->name, "default");
	assert_true(s->duration_s == 3600);
	assert_true(s->inlet_c == 30);
	assert_int_equal(s->workload.kind, WORKLOAD_GENERATOR);
	assert_true(s->workload.gen.rate_rps == generator_azure_code_fit.rate_rps);
	assert_true(s->workload.gen.ctx_mu == generator_azure_code_fit.ctx_mu);
	assert_int_equal(s->n_slices, 3);
	assert_int_equal(s->workload.n_slices, 3);
	assert_int_equal(s->server.n_slices, 3);
	double sum = 0;
	int above_1pct = 0;
	for (uint32_t i = 0; i < s->n_slices; i++) {
		sum += s->workload.slice_fraction[i];
		assert_true(s->workload.slice_fraction[i] == s->slices[i].fraction);
		above_1pct += s->slices[i].int8_drop > 0.01;
	}
	assert_true(fabs(sum - 1) < 1e-9);
	assert_int_equal(above_1pct, 1);
	assert_string_equal(s->slices[2].name, "math");
	scenario_free(s);
	assert_int_equal(dl.n, 0);
}

static void test_sensor_faults_scenario_content(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct scenario *s = load_ok("configs/scenarios/sensor-faults.yaml", &dl);
	assert_int_equal(s->n_events, 5);
	const enum fault_kind faults[] = {FAULT_STUCK, FAULT_NAN, FAULT_DROPOUT, FAULT_VALUE};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(s->events[i].kind, EV_SENSOR_FAULT);
		assert_int_equal(s->events[i].fault, faults[i]);
	}
	assert_int_equal(s->events[0].sensor, SENSOR_JUNCTION);
	assert_true(s->events[3].value == -274);
	assert_int_equal(s->events[4].kind, EV_METER_LOSS);
	assert_int_equal(s->events[4].sensor, SENSOR_POWER_ACCEL);
	assert_true(s->events[4].duration_s == 120);
	assert_string_equal(event_kind_name(EV_METER_LOSS), "meter_loss");
	assert_string_equal(sensor_name(SENSOR_POWER_HOST), "power_host");
	scenario_free(s);
}

static void test_minimal_defaults(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct scenario *s = load_ok(GOOD "minimal.yaml", &dl);
	assert_int_equal(dl.n, 0);
	assert_string_equal(s->name, "minimal"); /* file name without extension */
	assert_string_equal(s->preset, "h200-sxm");
	assert_string_equal(s->model, "llama-3.1-8b");
	assert_true(s->duration_s == 3600);
	assert_true(s->default_seed == 1);
	assert_true(s->inlet_c == 25);
	assert_true(s->cooling_factor == 1);
	assert_true(s->memory_c_offset == 0);
	assert_int_equal(s->server.max_batch, 0);
	assert_int_equal(s->server.max_queue, 0);
	assert_true(s->server.kv_capacity_tokens == 0);
	assert_true(s->server.chunked_prefill);
	assert_int_equal(s->server.max_prefill_tokens, 0);
	assert_true(s->workload.time_scale == 1);
	assert_memory_equal(&s->workload.gen, &generator_azure_code_fit,
			    sizeof(generator_azure_code_fit));
	assert_int_equal(s->n_slices, 1);
	assert_string_equal(s->slices[0].name, "all");
	assert_true(s->workload.slice_fraction[0] == 1);
	assert_int_equal(s->n_events, 0);
	assert_null(s->events);
	scenario_free(s);
}

/* server.chunked_prefill / max_prefill_tokens reach server_cfg. */
static void test_server_prefill_keys(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct scenario *s = load_ok(GOOD "server-prefill.yaml", &dl);
	assert_int_equal(dl.n, 0);
	assert_false(s->server.chunked_prefill);
	assert_int_equal(s->server.max_prefill_tokens, 512);
	scenario_free(s);
}

/* server.stack picks the serving stack; absent, the model's own (NULL). */
static void test_server_stack_key(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct scenario *s = load_ok(GOOD "server-stack.yaml", &dl);
	assert_int_equal(dl.n, 0);
	assert_non_null(s->server.stack);
	assert_string_equal(s->server.stack->name, "tensorrt-llm");
	scenario_free(s);
	s = load_ok(GOOD "minimal.yaml", &dl);
	assert_null(s->server.stack);
	scenario_free(s);
}

static void test_trace_relative_to_scenario_file(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct scenario *s = load_ok(GOOD "trace-relative.yaml", &dl);
	assert_int_equal(s->workload.kind, WORKLOAD_TRACE);
	assert_string_equal(s->workload.trace_path, GOOD "../../traces/four-rows-1s.csv");
	assert_true(s->workload.time_scale == 2);
	assert_false(s->workload.loop);
	assert_true(s->workload.start_offset_s == 1);
	struct trace *t;
	assert_int_equal(trace_load(s->workload.trace_path, &t, &dl), 0);
	assert_int_equal(t->n, 4);
	trace_free(t);
	scenario_free(s);
}

static void test_trace_env_expansion(void **state)
{
	(void)state;
	char cwd[PATH_MAX], dir[PATH_MAX + 32];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(dir, sizeof(dir), "%s/tests/data/traces", cwd);
	setenv("GOVD_TEST_TRACE_DIR", dir, 1);
	struct diag_list dl = {0};
	struct scenario *s = load_ok(GOOD "trace-env.yaml", &dl);
	char want[PATH_MAX + 64];
	snprintf(want, sizeof(want), "%s/four-rows-1s.csv", dir);
	assert_string_equal(s->workload.trace_path, want);
	scenario_free(s);
	unsetenv("GOVD_TEST_TRACE_DIR");
}

/* A shipped scenario names only the file; it is found through $GOVD_SHARED_DATA. */
static void test_azure_trace_found_via_shared_data(void **state)
{
	(void)state;
	if (!shared_trace_present()) {
		TEST_SKIP("GOVD_SHARED_DATA trace absent");
	}
	struct diag_list dl = {0};
	struct scenario *s = load_ok("configs/scenarios/azure-code-hot.yaml", &dl);
	const char *p = s->workload.trace_path;
	const char *want = "/AzureLLMInferenceTrace2023_code.csv";
	assert_true(strlen(p) > strlen(want));
	assert_string_equal(p + strlen(p) - strlen(want), want);
	assert_true(s->inlet_c == 40);
	assert_true(s->cooling_factor > 1);
	assert_true(s->workload.loop);
	scenario_free(s);
}

static void test_events_sorted_stable_and_late_warned(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct scenario *s = load_ok(GOOD "events-unsorted.yaml", &dl);
	assert_int_equal(s->n_events, 5);
	const double at[] = {10, 20, 50, 50, 150};
	const enum event_kind kind[] = {EV_LOAD_SCALE, EV_QUALITY_DRIFT, EV_INLET_C, EV_COOLING,
					EV_INLET_C};
	for (int i = 0; i < 5; i++) {
		assert_true(s->events[i].at_s == at[i]);
		assert_int_equal(s->events[i].kind, kind[i]);
	}
	assert_int_equal(s->events[0].line, 8);
	assert_true(s->events[0].duration_s == 5);
	assert_true(s->events[0].value == 3);
	assert_int_equal(s->events[1].slice, 1);
	assert_true(s->events[1].value == 0.02);
	assert_true(s->slices[0].int8_drop == 0.01);
	assert_true(s->slices[1].int8_drop == 0);
	assert_int_equal(dl.n, 1);
	assert_string_equal(diag_str(&dl, 0),
			    GOOD "events-unsorted.yaml:11:12: warning: events[4]: event at 150 s never "
				 "happens: the scenario ends at 100 s");
	scenario_free(s);
	diag_clear(&dl);
}

struct bad_case {
	const char *file;
	int rc;
	const char *msgs[10];
};

static const struct bad_case bad_cases[] = {
	{"syntax.yaml", -EINVAL,
	 {"syntax.yaml:3:2: error: did not find expected key while parsing a block mapping (at line 1:1)"}},
	{"not-a-mapping.yaml", -EINVAL,
	 {"not-a-mapping.yaml:1:1: error: expected a mapping (key: value lines), got a list"}},
	{"empty.yaml", -EINVAL,
	 {"empty.yaml: error: empty scenario; expected a mapping with at least 'workload'"}},
	{"unknown-key.yaml", -EINVAL,
	 {"unknown-key.yaml:1:1: error: duraton_s: unknown key 'duraton_s' (did you mean "
	  "'duration_s'?); allowed: name, description, preset, model, duration_s, seed, "
	  "environment, server, workload, slices, events"}},
	{"duplicate-key.yaml", -EINVAL,
	 {"duplicate-key.yaml:4:1: error: duration_s: duplicate key 'duration_s' (first given at "
	  "line 1:1)"}},
	{"wrong-type.yaml", -EINVAL,
	 {"wrong-type.yaml:1:13: error: duration_s: expected a number, got 'abc'"}},
	{"out-of-range.yaml", -EINVAL,
	 {"out-of-range.yaml:2:12: error: environment.inlet_c: 95 is out of range; allowed 0..60 C"}},
	{"bad-enum.yaml", -EINVAL,
	 {"bad-enum.yaml:2:9: error: workload.kind: unknown value 'replay'; valid: trace, generator"}},
	{"unknown-preset.yaml", -EINVAL,
	 {"unknown-preset.yaml:1:9: error: preset: unknown value 'h200-sxn' (did you mean "
	  "'h200-sxm'?); valid: @PRESETS@"}},
	{"unknown-stack.yaml", -EINVAL,
	 {"unknown-stack.yaml:2:10: error: server.stack: unknown value 'tgi'; valid: vllm, tensorrt-llm"}},
	{"fp8-on-ampere.yaml", -EINVAL,
	 {"fp8-on-ampere.yaml:3:15: error: server.fp8_engine: preset a100-sxm does not run fp8; "
	  "allowed: false on this preset"}},
	{"unknown-model.yaml", -EINVAL,
	 {"unknown-model.yaml:1:8: error: model: unknown value 'gpt-5'; valid: @MODELS@"}},
	{"missing-workload.yaml", -EINVAL,
	 {"missing-workload.yaml:1:1: error: workload: missing required key 'workload' (a mapping "
	  "with kind: trace or generator)"}},
	{"missing-trace.yaml", -EINVAL,
	 {"missing-trace.yaml:3:10: error: workload.trace: trace file "
	  "tests/data/scenarios/bad/no-such-trace.csv not found (also searched $GOVD_SHARED_DATA "
	  "and traces/, shared/data/ in parent folders); tools/fetch-traces downloads the Azure "
	  "LLM traces"}},
	{"env-unset.yaml", -EINVAL,
	 {"env-unset.yaml:3:10: error: workload.trace: environment variable GOVD_SURELY_UNSET_VAR "
	  "is not set (used in '${GOVD_SURELY_UNSET_VAR}/t.csv')"}},
	{"generator-with-trace.yaml", -EINVAL,
	 {"generator-with-trace.yaml:5:5: error: workload.generator: 'generator' applies only to "
	  "kind: generator (kind is trace)"}},
	{"fractions-sum.yaml", -EINVAL,
	 {"fractions-sum.yaml:3:3: error: slices: slice fractions sum to 0.9; they must sum to 1 "
	  "(within 1e-6)"}},
	{"too-many-slices.yaml", -EINVAL,
	 {"too-many-slices.yaml:3:3: error: slices: 9 slices given; allowed 1..8"}},
	{"duplicate-slice.yaml", -EINVAL,
	 {"duplicate-slice.yaml:4:12: error: slices[1].name: slice name 'code' already used by "
	  "slices[0]; names must be unique"}},
	{"event-unknown-slice.yaml", -EINVAL,
	 {"event-unknown-slice.yaml:6:44: error: events[0].slice: unknown slice 'math'; slices: "
	  "code, chat"}},
	{"event-value-range.yaml", -EINVAL,
	 {"event-value-range.yaml:3:36: error: events[0].value: 95 is out of range for kind inlet; "
	  "allowed 0..60 C"}},
	{"event-missing-value.yaml", -EINVAL,
	 {"event-missing-value.yaml:3:5: error: events[0].value: missing required key 'value' (the "
	  "arrival-rate multiplier) for kind load"}},
	{"event-key-not-for-kind.yaml", -EINVAL,
	 {"event-key-not-for-kind.yaml:3:48: error: events[0].sensor: 'sensor' does not apply to "
	  "kind inlet"}},
	{"event-bad-sensor.yaml", -EINVAL,
	 {"event-bad-sensor.yaml:3:44: error: events[0].sensor: unknown value 'junktion' (did you "
	  "mean 'junction'?); valid: junction, memory_temp, inlet, power_accel, power_memory, "
	  "power_host, clock"}},
	{"meter-loss-not-power.yaml", -EINVAL,
	 {"meter-loss-not-power.yaml:3:57: error: events[0].sensor: meter_loss needs a power "
	  "sensor; valid: power_accel, power_memory, power_host"}},
	{"fault-value-missing.yaml", -EINVAL,
	 {"fault-value-missing.yaml:3:5: error: events[0].value: missing required key 'value' (the "
	  "reading reported) for fault: value"}},
	{"event-after-end.yaml", 0,
	 {"event-after-end.yaml:4:12: warning: events[0]: event at 900 s never happens: the "
	  "scenario ends at 600 s"}},
	{"many-errors.yaml", -EINVAL,
	 {"many-errors.yaml:2:9: error: preset: unknown value 'h300'; valid: @PRESETS@",
	  "many-errors.yaml:3:13: error: duration_s: -5 is out of range; allowed 1..2592000 s",
	  "many-errors.yaml:6:3: error: environment.cooling: unknown key 'cooling'; allowed: "
	  "inlet_c, cooling_factor, memory_c_offset",
	  "many-errors.yaml:5:12: error: environment.inlet_c: expected a number, got 'hot'",
	  "many-errors.yaml:10:15: error: workload.generator.rate_rps: 0 is out of range; allowed "
	  "0.001..100000 req/s",
	  "many-errors.yaml:11:15: error: workload.generator.burst_cv: expected a number, got the "
	  "quoted string '3' (remove the quotes)",
	  "many-errors.yaml:13:25: error: slices[0].fraction: 1.2 is out of range; allowed 0..1",
	  "many-errors.yaml:15:22: error: events[0].kind: unknown value 'explode'; valid: inlet, "
	  "cooling, load, quality_drift, sensor_fault, meter_loss"}},
};

/* The preset and model lists belong to other modules: expand them from there. */
static void expand_names(const char *tmpl, char *out, size_t len)
{
	char names[512] = "";
	const char *at = strstr(tmpl, "@PRESETS@");
	const char *const *v = plant_preset_names();
	const char *tag = "@PRESETS@";
	if (!at) {
		at = strstr(tmpl, "@MODELS@");
		v = model_spec_names();
		tag = "@MODELS@";
	}
	if (!at) {
		snprintf(out, len, BAD "%s", tmpl);
		return;
	}
	for (size_t i = 0; v[i]; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
			 v[i]);
	snprintf(out, len, BAD "%.*s%s%s", (int)(at - tmpl), tmpl, names, at + strlen(tag));
}

static void test_bad_fixtures_exact_messages(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		char path[256];
		snprintf(path, sizeof(path), BAD "%s", c->file);
		struct diag_list dl = {0};
		struct scenario *s = (struct scenario *)1;
		int rc = scenario_load(path, &s, &dl);
		if (rc != c->rc)
			fail_msg("%s: rc %d, expected %d", c->file, rc, c->rc);
		if (rc)
			assert_null(s);
		size_t want_n = 0;
		while (want_n < 10 && c->msgs[want_n])
			want_n++;
		if (dl.n != want_n) {
			diag_print(&dl, stdout);
			fail_msg("%s: %zu diagnostics, expected %zu", c->file, dl.n, want_n);
		}
		for (size_t k = 0; k < want_n; k++) {
			char want[1024];
			expand_names(c->msgs[k], want, sizeof(want));
			assert_string_equal(diag_str(&dl, k), want);
		}
		if (rc == 0)
			scenario_free(s);
		diag_clear(&dl);
	}
	/* Every fixture in bad/ is covered by a case above. */
	glob_t g;
	assert_int_equal(glob(BAD "*.yaml", 0, NULL, &g), 0);
	assert_int_equal(g.gl_pathc, sizeof(bad_cases) / sizeof(bad_cases[0]));
	globfree(&g);
}

/* Errors are judged by what this load added: earlier errors in the caller's
 * list neither fail a good scenario nor hide a bad one. */
static void test_errors_counted_per_load(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	diag_add(&dl, DIAG_ERROR, "earlier.yaml", 1, 1, "", "x", "an earlier error");
	struct scenario *s = load_ok(GOOD "minimal.yaml", &dl);
	assert_int_equal(dl.n, 1);
	scenario_free(s);
	s = (struct scenario *)1;
	assert_int_equal(scenario_load(BAD "bad-enum.yaml", &s, &dl), -EINVAL);
	assert_null(s);
	assert_true(diag_count(&dl, DIAG_ERROR) > 1);
	diag_clear(&dl);
}

static void test_missing_file(void **state)
{
	(void)state;
	struct diag_list dl = {0};
	struct scenario *s;
	assert_int_equal(scenario_load(BAD "nope.yaml", &s, &dl), -ENOENT);
	assert_null(s);
	assert_string_equal(diag_str(&dl, 0),
			    BAD "nope.yaml: error: cannot open: No such file or directory");
	diag_clear(&dl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_scenarios_load_and_run),
		cmocka_unit_test(test_default_scenario_content),
		cmocka_unit_test(test_sensor_faults_scenario_content),
		cmocka_unit_test(test_minimal_defaults),
		cmocka_unit_test(test_server_prefill_keys),
		cmocka_unit_test(test_server_stack_key),
		cmocka_unit_test(test_trace_relative_to_scenario_file),
		cmocka_unit_test(test_trace_env_expansion),
		cmocka_unit_test(test_azure_trace_found_via_shared_data),
		cmocka_unit_test(test_events_sorted_stable_and_late_warned),
		cmocka_unit_test(test_bad_fixtures_exact_messages),
		cmocka_unit_test(test_errors_counted_per_load),
		cmocka_unit_test(test_missing_file),
	};
	return test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
