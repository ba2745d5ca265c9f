/* sim_run end to end on a short default scenario: the summary's figures are
 * consistent with each other and with what each baseline does. */
#include <errno.h>
#include <jansson.h>
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

#include "governor/sim/sim.h"
#include "governor/sim/summary_read.h"

static const char *scenario = "configs/scenarios/default.yaml";

static json_t *run(const char *policy, const char *dir, double duration_s)
{
	struct sim_opts o = { .scenario_path = scenario, .policy_path = policy, .seed = 3,
			      .have_seed = true, .duration_s = duration_s, .out_dir = dir };
	struct sim_result r;
	struct diag_list d = { 0 };
	int rc = sim_run(&o, &r, &d);
	if (rc)
		diag_print(&d, stdout);
	diag_clear(&d);
	assert_int_equal(rc, 0);
	assert_true(fabs(r.sim_s - duration_s) < 0.011);
	char path[4200];
	json_error_t err;
	snprintf(path, sizeof(path), "%s/summary.json", dir);
	json_t *s = json_load_file(path, 0, &err);
	assert_non_null(s);
	/* its reader (governor/sim/summary_read.c) gives back what was written */
	struct sim_summary ss;
	char rerr[512];
	assert_int_equal(sim_summary_load(path, 1 << 24, &ss, rerr, sizeof(rerr)), 0);
	json_t *sla = json_object_get(s, "sla");
	assert_true(ss.tokens_per_joule == json_number_value(json_object_get(s, "tokens_per_joule")));
	assert_true(ss.energy_total_j ==
		    json_number_value(json_object_get(json_object_get(s, "energy_j"), "total")));
	assert_true(ss.attainment == json_number_value(json_object_get(sla, "attainment")));
	assert_true(ss.windows_met == json_number_value(json_object_get(sla, "windows_met")));
	assert_int_equal(ss.n_win, json_array_size(json_object_get(sla, "per_window")));
	json_t *e2e = json_object_get(sla, "e2e_p99_ms");
	if (json_is_number(e2e))
		assert_true(ss.q_ms[SLA_INDEX(SLA_E2E, SLA_P99)] == json_number_value(e2e));
	assert_int_equal(ss.n_slices,
			 json_object_size(json_object_get(json_object_get(s, "quality"), "per_slice")));
	for (size_t i = 0; i < ss.n_slices; i++)
		assert_true(ss.slice[i].in_quality);
	sim_summary_free(&ss);
	return s;
}

static double num(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(o, a);
	if (b)
		v = json_object_get(v, b);
	assert_true(json_is_number(v));
	return json_number_value(v);
}

static void check_common(json_t *s, double duration_s)
{
	double ea = num(s, "energy_j", "accel"), em = num(s, "energy_j", "memory");
	double eh = num(s, "energy_j", "host"), et = num(s, "energy_j", "total");
	assert_true(ea > 0 && em > 0 && eh > 0);
	assert_true(fabs(et - (ea + em + eh)) < 1e-6 * et);
	double tok = num(s, "tokens_generated", NULL);
	assert_true(tok > 0);
	assert_true(fabs(num(s, "tokens_per_joule", NULL) - tok / et) < 1e-9 * tok / et + 1e-12);
	double att = num(s, "sla", "attainment");
	assert_true(att >= 0 && att <= 1);
	assert_true(num(s, "sla", "windows_met") <= num(s, "sla", "windows"));
	assert_true(num(s, "sla", "ttft_p99_ms") >= num(s, "sla", "ttft_p95_ms"));
	assert_true(num(s, "sla", "e2e_p99_ms") >= num(s, "sla", "ttft_p99_ms"));
	assert_true(num(s, "thermal", "max_junction_c") > 25);
	assert_true(num(s, "duration_s", NULL) >= duration_s - 0.011);
	assert_false(json_is_true(json_object_get(s, "failed")));
}

static void test_baselines(void **state)
{
	(void)state;
	/* shipped with the repository: absent is a failure, not a skip */
	assert_int_equal(access(scenario, R_OK), 0);
	char tmpl[] = "/tmp/govd-sim-XXXXXX";
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	char a[4200], b[4200], c[4200];
	snprintf(a, sizeof(a), "%s/fw", dir);
	snprintf(b, sizeof(b), "%s/int8", dir);
	snprintf(c, sizeof(c), "%s/static", dir);
	const double dur = 300;

	json_t *fw = run("policies/baselines/firmware-default.yaml", a, dur);
	check_common(fw, dur);
	assert_true(num(fw, "precision", "int8_token_fraction") == 0);
	assert_true(num(fw, "quality", "breach_requests") == 0);
	assert_true(num(fw, "periods", NULL) == 300); /* 1 s period */

	/* INT8 everywhere: all tokens INT8, and the slice whose true drop is over
	 * the 1 % threshold (math, 1.8 %) breaches while code (0.4 %) does not */
	json_t *i8 = run("policies/baselines/naive-int8.yaml", b, dur);
	check_common(i8, dur);
	assert_true(num(i8, "precision", "int8_token_fraction") > 0.99);
	json_t *qs = json_object_get(json_object_get(i8, "quality"), "per_slice");
	assert_true(num(qs, "math", "breach_requests") > 0);
	assert_true(num(qs, "code", "breach_requests") == 0);
	json_t *pr = json_object_get(json_object_get(i8, "precision"), "per_slice");
	assert_true(num(qs, "math", "breach_requests") == num(pr, "math", "int8_requests"));

	/* clocks locked at <= 1410 MHz and 500 W: less accelerator energy than max boost */
	json_t *st = run("policies/baselines/static.yaml", c, dur);
	check_common(st, dur);
	assert_true(num(st, "energy_j", "accel") < num(fw, "energy_j", "accel"));
	assert_true(num(st, "mean_power_w", "accel") < num(fw, "mean_power_w", "accel"));
	/* clock churn: the firmware never locks (the max throughout), the static
	 * lock is set once */
	assert_true(num(fw, "clock", "changes") == 0);
	assert_true(num(fw, "clock", "mean_locked_mhz") == 1980);
	assert_true(num(st, "clock", "changes") <= 1);
	assert_true(num(st, "clock", "changes_per_min") <= 60.0 / dur);
	assert_true(fabs(num(st, "clock", "mean_locked_mhz") - 1410) < 2);

	json_decref(fw);
	json_decref(i8);
	json_decref(st);
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_bad_inputs(void **state)
{
	(void)state;
	struct sim_opts o = { .scenario_path = "/nonexistent/s.yaml",
			      .policy_path = "/nonexistent/p.yaml", .no_output = true };
	struct sim_result r;
	struct diag_list d = { 0 };
	assert_int_not_equal(sim_run(&o, &r, &d), 0);
	/* both files reported in one run */
	assert_true(diag_count(&d, DIAG_ERROR) >= 2);
	diag_clear(&d);
}

/* A copy of firmware-default.yaml with extra SLA lines after tbt_p99_ms. */
static void write_policy(const char *path, const char *extra_sla)
{
	FILE *in = fopen("policies/baselines/firmware-default.yaml", "r");
	assert_non_null(in);
	static char buf[16384];
	size_t n = fread(buf, 1, sizeof(buf) - 1, in);
	fclose(in);
	buf[n] = '\0';
	char *at = strstr(buf, "  tbt_p99_ms: 100\n");
	assert_non_null(at);
	at += strlen("  tbt_p99_ms: 100\n");
	FILE *out = fopen(path, "w");
	assert_non_null(out);
	fwrite(buf, 1, (size_t)(at - buf), out);
	fputs(extra_sla, out);
	fputs(at, out);
	fclose(out);
}

/* Every target the policy sets decides a window: an end-to-end p95 or a
 * throughput floor no run can meet turns met windows into missed ones. */
static void test_every_sla_target_judged(void **state)
{
	(void)state;
	/* shipped with the repository: absent is a failure, not a skip */
	assert_int_equal(access(scenario, R_OK), 0);
	char tmpl[] = "/tmp/govd-sla-XXXXXX";
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	char pol[4200], out[4200];
	const double dur = 600;

	snprintf(out, sizeof(out), "%s/base", dir);
	json_t *base = run("policies/baselines/firmware-default.yaml", out, dur);
	double windows = num(base, "sla", "windows");
	assert_true(windows > 0);
	assert_true(num(base, "sla", "windows_met") > 0);

	snprintf(pol, sizeof(pol), "%s/e2e.yaml", dir);
	write_policy(pol, "  e2e_p95_ms: 1\n");
	snprintf(out, sizeof(out), "%s/e2e", dir);
	json_t *e2e = run(pol, out, dur);
	assert_true(num(e2e, "sla", "windows_met") == 0);
	assert_true(num(json_object_get(e2e, "sla"), "targets", "e2e_p95_ms") == 1);

	/* The floor counts only while requests wait, so it cannot fail more
	 * windows than the baseline had, and some of the busy ones fail. */
	snprintf(pol, sizeof(pol), "%s/floor.yaml", dir);
	write_policy(pol, "  min_tokens_per_s: 1000000\n");
	snprintf(out, sizeof(out), "%s/floor", dir);
	json_t *fl = run(pol, out, dur);
	assert_true(num(fl, "sla", "windows_met") < num(base, "sla", "windows_met"));
	assert_true(num(fl, "sla", "windows") == windows);

	json_decref(base);
	json_decref(e2e);
	json_decref(fl);
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_shell_quote(void **state)
{
	(void)state;
	char b[64] = "govctl";
	assert_int_equal(sim_shell_append(b, sizeof(b), "configs/s-1_a.yaml"), 0);
	assert_int_equal(sim_shell_append(b, sizeof(b), "a b"), 0);
	assert_int_equal(sim_shell_append(b, sizeof(b), "it's"), 0);
	assert_int_equal(sim_shell_append(b, sizeof(b), ""), 0);
	assert_int_equal(sim_shell_append(b, sizeof(b), "$x"), 0);
	assert_string_equal(b, "govctl configs/s-1_a.yaml 'a b' 'it'\\''s' '' '$x'");
	/* Too long: an error and a terminated string inside the buffer. */
	char t[8] = "ab";
	assert_int_equal(sim_shell_append(t, sizeof(t), "cdefghij"), -ENAMETOOLONG);
	assert_true(strlen(t) < sizeof(t));
	char u[5] = "ab";
	assert_int_equal(sim_shell_append(u, sizeof(u), "x y"), -ENAMETOOLONG);
	assert_true(strlen(u) < sizeof(u));

	struct sim_opts o = { .scenario_path = "my scen.yaml", .duration_s = 0.1 };
	char c[256];
	assert_int_equal(sim_command(&o, "p.yaml", 7, c, sizeof(c)), 0);
	assert_string_equal(c, "govctl sim --scenario 'my scen.yaml' --policy p.yaml --seed 7 "
			       "--duration 0.1");
	o.duration_s = 0; /* the scenario's own duration: no --duration */
	assert_int_equal(sim_command(&o, "p.yaml", 18446744073709551615ull, c, sizeof(c)), 0);
	assert_string_equal(c, "govctl sim --scenario 'my scen.yaml' --policy p.yaml "
			       "--seed 18446744073709551615");
	assert_int_equal(sim_command(&o, "p.yaml", 7, c, 20), -ENAMETOOLONG);
}

static json_t *header_of(const char *dir)
{
	char path[4200], *line = NULL;
	size_t cap = 0;
	snprintf(path, sizeof(path), "%s/decisions.jsonl", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_true(getline(&line, &cap, f) > 0);
	fclose(f);
	json_error_t err;
	json_t *h = json_loads(line, 0, &err);
	free(line);
	assert_non_null(h);
	return h;
}

static const char *str(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	assert_non_null(v);
	return v;
}

/* summary.json and the decision-log header record the scenario path and the
 * command as given (no --out: two output directories give the same bytes),
 * and the compiler; a caller's command is recorded verbatim. */
static void test_run_metadata(void **state)
{
	(void)state;
	/* shipped with the repository: absent is a failure, not a skip */
	assert_int_equal(access(scenario, R_OK), 0);
	char tmpl[] = "/tmp/govd-meta-XXXXXX";
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	char a[4200], b[4200];
	const char *pol = "policies/baselines/ondemand.yaml";
	const char *want = "govctl sim --scenario configs/scenarios/default.yaml "
			   "--policy policies/baselines/ondemand.yaml --seed 3 --duration 20";
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	json_t *sa = run(pol, a, 20), *sb = run(pol, b, 20);
	assert_true(json_equal(sa, sb));
	assert_string_equal(str(sa, "scenario_path"), scenario);
	assert_string_equal(str(sa, "policy_path"), pol);
	assert_string_equal(str(sa, "command"), want);
	assert_true(strlen(str(sa, "compiler")) > 0);
	json_t *h = header_of(a);
	assert_string_equal(str(h, "scenario_path"), scenario);
	assert_string_equal(str(h, "command"), want);
	assert_string_equal(str(json_object_get(h, "versions"), "compiler"), str(sa, "compiler"));
	json_decref(h);

	struct sim_opts o = { .scenario_path = scenario, .policy_path = pol, .seed = 3,
			      .have_seed = true, .duration_s = 5, .out_dir = a,
			      .command = "govctl sim --scenario x" };
	struct sim_result r;
	struct diag_list d = { 0 };
	assert_int_equal(sim_run(&o, &r, &d), 0);
	diag_clear(&d);
	h = header_of(a);
	assert_string_equal(str(h, "command"), "govctl sim --scenario x");
	json_decref(h);

	json_decref(sa);
	json_decref(sb);
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shell_quote),
		cmocka_unit_test(test_run_metadata),
		cmocka_unit_test(test_baselines),
		cmocka_unit_test(test_every_sla_target_judged),
		cmocka_unit_test(test_bad_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
