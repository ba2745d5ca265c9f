/* Policy loader: every key lands in its field; every error names
 * file:line:col, the key path and what is allowed; loading is all-or-nothing;
 * tests/policies/bad/ and good/ print exactly their .expect files; every
 * shipped policy loads; the envelope check and the per-slice view. */
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/ycfg.h"
#include "governor/controllers/controller.h"
#include "governor/policy/policy.h"

static struct policy *load(const char *text, struct diag_list *d)
{
	struct policy *p = NULL;
	int rc = policy_load_string("t.yaml", text, strlen(text), &p, d);
	assert_true((rc == 0) == (p != NULL));
	return p;
}

/* The diag list printed, one per line. */
static char *printed(const struct diag_list *d)
{
	static char buf[32768];
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < d->n && off < sizeof(buf) - 1; i++) {
		diag_format(&d->v[i], buf + off, sizeof(buf) - off);
		off += strlen(buf + off);
		if (off < sizeof(buf) - 1)
			buf[off++] = '\n';
		buf[off] = '\0';
	}
	return buf;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	static char buf[32768];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* "{controllers}" in an .expect stands for the registry's names, so adding a
 * controller changes no expectation. */
static void expand(const char *in, char *out, size_t len)
{
	char names[512];
	const char *tag = "{controllers}";
	size_t k = 0, tl = strlen(tag);
	controller_names_joined(names, sizeof(names));
	while (*in && k + 1 < len) {
		if (!strncmp(in, tag, tl)) {
			for (const char *s = names; *s && k + 1 < len; s++)
				out[k++] = *s;
			in += tl;
		} else {
			out[k++] = *in++;
		}
	}
	out[k] = '\0';
}

static const char full_text[] =
	"name: p1\n"
	"description: all keys\n"
	"metadata:\n"
	"  owners: [alice, team-b]\n"
	"  workload_profile: azure-code\n"
	"  model_revision: llama@abc\n"
	"  power_mode: MaxQ\n"
	"  validated_with: {compiler: gcc 12.2, runtime: vllm 0.6, driver: '550.90', firmware: fw1}\n"
	"objective: {kind: min_energy, power_rails: [accel, host]}\n"
	"control:\n"
	"  controller: ipa\n"
	"  period_ms: 250\n"
	"  params: {sustainable_power_w: 500, switch_on_c: 65}\n"
	"sla: {window_s: 30, ttft_p99_ms: 1500, tbt_p99_ms: 80, e2e_p99_ms: 20000,\n"
	"      ttft_p95_ms: 900, tbt_p95_ms: 60, e2e_p95_ms: 15000, min_tokens_per_s: 1200,\n"
	"      attainment: 0.95}\n"
	"thermal: {ceiling_c: 80, hysteresis_c: 3}\n"
	"power: {cap_w: 600, budget_w: 800, budget_window_s: 300}\n"
	"frequency: {min_mhz: 600, max_mhz: 1800, max_step_mhz: 90}\n"
	"precision:\n"
	"  modes: [bf16, int8]\n"
	"  fallback: bf16\n"
	"  int8_fraction: 0.25\n"
	"  int8_min_fraction: 0\n"
	"  int8_max_fraction: 0.9\n"
	"  slices: {code: 0.9, math: {int8_fraction: 0, int8_max_fraction: 0}, chat: {int8_max_fraction: 0.5}}\n"
	"quality:\n"
	"  default_max_drop: 0.02\n"
	"  confidence: 0.9\n"
	"  min_samples: 300\n"
	"  shadow_rate: 0.03\n"
	"  slices: {chat: {max_drop: 0.005, confidence: 0.99, min_samples: 1000, shadow_rate: 0.1},\n"
	"           code: {max_drop: 0.01}}\n"
	"envelope:\n"
	"  inlet_min_c: 15\n"
	"  inlet_max_c: 35\n"
	"  power_limit_min_w: 200\n"
	"  power_limit_max_w: 700\n"
	"  clk_min_mhz: 345\n"
	"  clk_max_mhz: 1980\n"
	"  slowdown_c: 88\n"
	"  driver_versions: ['550.*', 'sim-*']\n"
	"  firmware_versions: [fw1]\n"
	"safe_point: {clk_max_mhz: 1200, power_cap_w: 400, int8_fraction: 0, hold_periods: 4}\n"
	"rollback:\n"
	"  triggers: {sla_violated_windows: 2, sla_of_windows: 4, quality_breach: false,\n"
	"             thermal_clamp_events: 3, telemetry_faults: 0}\n"
	"  canary_s: 240\n"
	"  hold_s: 120\n"
	"  backoff_factor: 1.5\n"
	"  max_hold_s: 900\n"
	"  last_known_good: {min_clean_windows: 7, fallback: firmware_default}\n"
	"telemetry: {ewma_tau_s: 1.5, stale_ms: 900, stuck_periods: 6}\n";

static void test_full_policy(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	struct policy *p = load(full_text, &d);
	if (d.n)
		printf("%s", printed(&d));
	assert_non_null(p);
	assert_int_equal(d.n, 0); /* not even a warning */
	assert_string_equal(p->name, "p1");
	assert_int_equal(p->metadata.n_owners, 2);
	assert_string_equal(p->metadata.owners[1], "team-b");
	assert_string_equal(p->metadata.workload_profile, "azure-code");
	assert_string_equal(p->metadata.model_revision, "llama@abc");
	assert_string_equal(p->metadata.power_mode, "MaxQ");
	assert_string_equal(p->metadata.validated_with.compiler, "gcc 12.2");
	assert_string_equal(p->metadata.validated_with.driver, "550.90");
	assert_int_equal(p->objective.kind, POLICY_OBJ_MIN_ENERGY);
	assert_int_equal(p->objective.rails,
			 POLICY_RAIL_BIT(HAL_RAIL_ACCEL) | POLICY_RAIL_BIT(HAL_RAIL_HOST));
	assert_string_equal(p->control.controller, "ipa");
	assert_int_equal(p->control.period_ms, 250);
	assert_true(policy_param(p, "sustainable_power_w", 0) == 500);
	assert_true(policy_param(p, "k_d", -3) == -3);
	assert_true(p->sla.window_s == 30 && p->sla.latency_ms[SLA_INDEX(SLA_TBT, SLA_P95)] == 60 && p->sla.attainment == 0.95);
	assert_true(p->sla.latency_ms[SLA_INDEX(SLA_E2E, SLA_P95)] == 15000 && p->sla.min_tokens_per_s == 1200);
	assert_true(p->thermal.ceiling_c == 80 && p->thermal.hysteresis_c == 3);
	assert_true(p->power.cap_w == 600 && p->power.budget_w == 800 && p->power.budget_window_s == 300);
	assert_true(p->frequency.max_step_mhz == 90);
	assert_int_equal(p->precision.modes, POLICY_PREC_BIT(POLICY_PREC_BF16) |
						     POLICY_PREC_BIT(POLICY_PREC_INT8));
	assert_int_equal(p->precision.fallback, POLICY_PREC_BF16);
	assert_true(p->precision.int8_max_fraction == 0.9);
	struct policy_slice_rule r;
	policy_slice_rule(p, "code", &r);
	assert_true(r.int8_fraction == 0.9);
	policy_slice_rule(p, "other", &r);
	assert_true(r.int8_fraction == 0.25);
	assert_true(policy_slice_max_drop(p, "chat") == 0.005);
	assert_true(policy_slice_max_drop(p, "math") == 0.02);
	policy_slice_rule(p, "chat", &r);
	assert_true(r.int8_fraction == 0.25); /* policy-wide share, slice bound */
	assert_true(r.int8_allowed && r.int8_max_fraction == 0.5 && r.confidence == 0.99);
	assert_true(r.min_samples == 1000 && r.shadow_rate == 0.1 && r.max_drop == 0.005);
	policy_slice_rule(p, "math", &r);
	assert_true(r.int8_fraction == 0);
	assert_false(r.int8_allowed);
	assert_true(r.confidence == 0.9 && r.min_samples == 300 && r.shadow_rate == 0.03);
	policy_slice_rule(p, "unnamed", &r);
	assert_true(r.int8_allowed && r.int8_max_fraction == 0.9 && r.max_drop == 0.02);
	assert_true(p->quality.confidence == 0.9 && p->quality.min_samples == 300);
	assert_true(p->envelope.inlet_min_c == 15 && p->envelope.inlet_max_c == 35);
	assert_true(p->envelope.power_limit_max_w == 700 && p->envelope.clk_min_mhz == 345);
	assert_true(p->envelope.slowdown_c == 88);
	assert_int_equal(p->envelope.n_driver, 2);
	assert_string_equal(p->envelope.driver_versions[1], "sim-*");
	assert_int_equal(p->envelope.n_firmware, 1);
	assert_true(p->safe_point.clk_max_mhz == 1200 && p->safe_point.hold_periods == 4);
	assert_int_equal(p->rollback.sla_violated_windows, 2);
	assert_int_equal(p->rollback.sla_of_windows, 4);
	assert_false(p->rollback.quality_breach);
	assert_int_equal(p->rollback.thermal_clamp_events, 3);
	assert_int_equal(p->rollback.telemetry_faults, 0);
	assert_true(p->rollback.canary_s == 240 && p->rollback.hold_s == 120);
	assert_true(p->rollback.backoff_factor == 1.5 && p->rollback.max_hold_s == 900);
	assert_int_equal(p->rollback.lkg_min_clean_windows, 7);
	assert_int_equal(p->rollback.lkg_fallback, POLICY_LKG_FIRMWARE_DEFAULT);
	assert_int_equal(p->telemetry.stale_ms, 900);
	assert_int_equal(p->telemetry.stuck_periods, 6);
	/* hash of the bytes */
	assert_true(p->hash == fnv1a64(full_text, strlen(full_text)));
	assert_non_null(strstr(p->hash_hex, "fnv1a64:"));
	policy_free(p);
	assert_true(fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull); /* FNV-1a 64 reference */
}

static void test_defaults(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	struct policy *p = load("name: m\ncontrol: {controller: firmware-default}\n", &d);
	assert_non_null(p);
	assert_int_equal(p->control.period_ms, 500);
	assert_int_equal(p->telemetry.stale_ms, 1500);
	assert_true(p->thermal.ceiling_c == 83 && p->sla.window_s == 60);
	assert_true(p->quality.default_max_drop == 0.01 && p->quality.confidence == 0.95);
	assert_int_equal(p->objective.kind, POLICY_OBJ_PERF_PER_WATT);
	assert_int_equal(p->objective.rails, POLICY_RAILS_ALL);
	assert_int_equal(p->precision.fallback, POLICY_PREC_BF16);
	assert_true(isinf(p->envelope.inlet_min_c) && p->envelope.inlet_min_c < 0);
	assert_true(p->envelope.slowdown_c == 89);
	assert_true(p->rollback.quality_breach && p->rollback.sla_of_windows == 5);
	/* Legal: only warnings (no owner, INT8 allowed with no threshold written). */
	assert_int_equal(diag_count(&d, DIAG_ERROR), 0);
	assert_int_equal(diag_count(&d, DIAG_WARNING), 2);
	policy_free(p);
	diag_clear(&d);
	p = load("name: m\ncontrol: {controller: static, period_ms: 200}\n", &d);
	assert_int_equal(p->telemetry.stale_ms, 600);
	policy_free(p);
	diag_clear(&d);
}

static void test_errors_have_positions(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	const char *text = "name: bad\n"                      /* 1 */
			   "control:\n"                       /* 2 */
			   "  controller: ondemand\n"         /* 3 */
			   "  period_ms: 5\n"                 /* 4: below 10 */
			   "  params: {upthreshold: 150, sampling_rate: 3}\n" /* 5 */
			   "thermal: {ceiling_cc: 80}\n"      /* 6: unknown key */
			   "frequency: {min_mhz: 1500, max_mhz: 900}\n" /* 7: min > max */
			   "quality: {slices: {code: {max_drop: 2}}}\n" /* 8 */
			   "colour: blue\n";                  /* 9 */
	struct policy *p = load(text, &d);
	assert_null(p);
	char *s = printed(&d);
	assert_non_null(strstr(s, "t.yaml:4:14: error: control.period_ms: 5 is out of range; allowed 10..60000 ms"));
	assert_non_null(strstr(s, "t.yaml:5:25: error: control.params.upthreshold: 150 is out of range; allowed 1..100"));
	assert_non_null(strstr(s, "sampling_rate"));
	assert_non_null(strstr(s, "downdifferential")); /* the allowed keys are listed */
	assert_non_null(strstr(s, "t.yaml:6:11: error: thermal.ceiling_cc: unknown key"));
	assert_non_null(strstr(s, "did you mean 'ceiling_c'"));
	assert_non_null(strstr(s, "t.yaml:7:22: error: frequency.min_mhz"));
	assert_non_null(strstr(s, "t.yaml:8:37: error: quality.slices.code.max_drop: 2 is out of range; allowed 0..1"));
	assert_non_null(strstr(s, "t.yaml:9:1: error: colour"));
	assert_int_equal(diag_count(&d, DIAG_ERROR), 7);
	/* file order */
	for (size_t i = 1; i < d.n; i++)
		assert_true(d.v[i - 1].line < d.v[i].line ||
			    (d.v[i - 1].line == d.v[i].line && d.v[i - 1].col <= d.v[i].col));
	diag_clear(&d);
}

/* The loader alone keeps control.params as located raw values; binding to a
 * controller's table checks names and ranges at those locations. */
/* The key table drives the loader: every number, boolean, enum, set, text
 * and list it lists is read into its field, a value past its range (or not
 * one of its values) is an error at its path, and policy_defaults gives its
 * default.
 * A row the loader did not read, or read with another range, fails here. */
static void key_yaml(const struct policy_key *k, const char *value, char *buf, size_t len)
{
	char parts[8][48] = { { 0 } };
	size_t n = 0;
	const char *s = k->path;
	while (*s && n < 8) {
		size_t l = strcspn(s, ".");
		snprintf(parts[n], sizeof(parts[n]), "%.*s", (int)l, s);
		if (!strcmp(parts[n], "*"))
			snprintf(parts[n], sizeof(parts[n]), "a");
		n++;
		s += l + (s[l] == '.');
	}
	bool in_control = !strcmp(parts[0], "control");
	size_t o = (size_t)snprintf(buf, len, "name: t\n%s", in_control ? "" : "control: {controller: static}\n");
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s: %s%s",
				      /* its bound, the other key, out of the way */
				      i + 1 == n && !strcmp(parts[i], "offline_mismatches")
					      ? "offline_samples: 1000000000, "
				      : i + 1 == n && !strcmp(parts[i], "fp8_offline_mismatches")
					      ? "fp8_offline_samples: 1000000000, "
					      : "",
				      parts[i],
				      i + 1 < n ? "{" : "", in_control && i == 0 ? "controller: static, " : "");
	o += (size_t)snprintf(buf + o, len - o, "%s", value);
	for (size_t i = 1; i < n; i++)
		o += (size_t)snprintf(buf + o, len - o, "}");
	snprintf(buf + o, len - o, "\n");
}

static void fmt_num(double v, char *buf, size_t len)
{
	if (v == floor(v))
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.10g", v);
}

/* The parsed policy and whether an error with code (NULL: any) names path. */
static struct policy *parse_key(const struct policy_key *k, const char *value, const char *code,
				bool *found)
{
	char text[512], path[128];
	key_yaml(k, value, text, sizeof(text));
	snprintf(path, sizeof(path), "%s", k->path);
	char *star = strchr(path, '*');
	if (star)
		*star = 'a';
	struct diag_list d = { 0 };
	struct policy *p = NULL;
	policy_parse_string("t.yaml", text, strlen(text), &p, &d);
	assert_non_null(p);
	*found = false;
	for (size_t i = 0; i < d.n; i++)
		if (d.v[i].sev == DIAG_ERROR && !strcmp(d.v[i].path, path) &&
		    (!code || !strcmp(d.v[i].code, code)))
			*found = true;
	diag_clear(&d);
	return p;
}

static const void *key_field(const struct policy *p, const struct policy_key *k)
{
	if (k->slice) {
		assert_true(p->n_slices == 1);
		return (const char *)&p->slices[0] + k->off;
	}
	return (const char *)p + k->off;
}

static void test_key_table(void **state)
{
	(void)state;
	struct policy def;
	policy_defaults(&def);
	size_t scalars = 0, texts = 0;
	for (size_t i = 0; i < policy_key_count(); i++) {
		const struct policy_key *k = policy_key_at(i);
		bool err;
		struct policy *p;
		if (k->type == POLICY_KEY_TEXT && k->size) {
			p = parse_key(k, "x1", NULL, &err);
			assert_false(err);
			assert_string_equal((const char *)key_field(p, k), "x1");
			policy_free(p);
			texts++;
			continue;
		}
		if (k->type == POLICY_KEY_LIST && k->size) {
			p = parse_key(k, "[a1, b2]", NULL, &err);
			assert_false(err);
			assert_int_equal(*(const size_t *)((const char *)p + k->count_off), 2);
			assert_string_equal((const char *)key_field(p, k) + k->size, "b2");
			policy_free(p);
			texts++;
			continue;
		}
		if (!policy_key_defaulted(k))
			continue;
		/* An integer's range message names the unit its suffix tells
		 * (ycfg_key_unit): the row must say the same, or none. */
		const char *told = ycfg_key_unit(policy_key_name(k));
		if ((k->type == POLICY_KEY_UINT || k->type == POLICY_KEY_INT64) && *told &&
		    strcmp(told + 1, k->unit))
			fail_msg("%s: row unit '%s', its suffix says '%s'", k->path, k->unit, told + 1);
		scalars++;
		if (k->type == POLICY_KEY_ENUM) {
			p = parse_key(k, k->names[1], NULL, &err);
			assert_false(err);
			assert_int_equal(*(const int *)key_field(p, k), 1);
			policy_free(p);
			p = parse_key(k, "no_such_value", "enum", &err);
			assert_true(err);
			policy_free(p);
			assert_int_equal(*(const int *)key_field(&def, k), (int)k->def);
			continue;
		}
		if (k->type == POLICY_KEY_SET) {
			char v[64];
			snprintf(v, sizeof(v), "[%s]", k->names[0]);
			p = parse_key(k, v, NULL, &err);
			assert_false(err);
			assert_int_equal(*(const uint32_t *)key_field(p, k), 1);
			policy_free(p);
			p = parse_key(k, "[]", "range", &err);
			assert_true(err);
			policy_free(p);
			assert_int_equal(*(const uint32_t *)key_field(&def, k), (uint32_t)k->def);
			continue;
		}
		if (k->type == POLICY_KEY_BOOL) {
			p = parse_key(k, "false", NULL, &err);
			assert_false(err);
			assert_false(*(const bool *)key_field(p, k));
			policy_free(p);
			p = parse_key(k, "maybe", "type", &err);
			assert_true(err);
			policy_free(p);
			if (!k->slice)
				assert_true(*(const bool *)key_field(&def, k) == (k->def != 0));
			continue;
		}
		char v[64];
		double mid = k->lo + (k->hi - k->lo) / 2;
		if (k->type != POLICY_KEY_NUMBER)
			mid = floor(mid);
		fmt_num(mid, v, sizeof(v));
		p = parse_key(k, v, "range", &err);
		if (err)
			fail_msg("%s: %s is inside %g..%g but refused", k->path, v, k->lo, k->hi);
		double got = k->type == POLICY_KEY_NUMBER ? *(const double *)key_field(p, k)
			   : k->type == POLICY_KEY_UINT ? *(const uint32_t *)key_field(p, k)
						      : (double)*(const int64_t *)key_field(p, k);
		if (got != mid)
			fail_msg("%s: %s read as %g", k->path, v, got);
		policy_free(p);
		fmt_num(k->hi + 1, v, sizeof(v));
		p = parse_key(k, v, "range", &err);
		if (!err)
			fail_msg("%s: %s is over %g but no range error", k->path, v, k->hi);
		policy_free(p);
		fmt_num(k->lo - 1, v, sizeof(v));
		p = parse_key(k, v, "range", &err);
		if (!err)
			fail_msg("%s: %s is under %g but no range error", k->path, v, k->lo);
		policy_free(p);
		if (k->slice || isnan(k->def))
			continue;
		double d = k->type == POLICY_KEY_NUMBER ? *(const double *)key_field(&def, k)
			 : k->type == POLICY_KEY_UINT ? *(const uint32_t *)key_field(&def, k)
						    : (double)*(const int64_t *)key_field(&def, k);
		if (d != k->def)
			fail_msg("%s: default %g, its row says %g", k->path, d, k->def);
	}
	assert_true(scalars >= 55);
	assert_true(texts >= 10);
}

static void test_parse_then_bind(void **state)
{
	(void)state;
	static const char text[] = "name: x\n"
				   "control:\n"
				   "  controller: mine\n"
				   "  params: {gain: 7, other: 1}\n";
	static const struct ctl_param table[] = {
		{ .name = "gain", .min = 0, .max = 5, .def = 1, .doc = "" },
		{ .name = "offset_mhz", .min = 0, .max = 100, .def = 0, .doc = "" },
		{ 0 },
	};
	struct diag_list d = { 0 };
	struct policy *p = NULL;
	assert_int_equal(policy_parse_string("t.yaml", text, strlen(text), &p, &d), 0);
	assert_non_null(p);
	assert_int_equal(diag_count(&d, DIAG_ERROR), 0); /* no registry: nothing to judge yet */
	assert_int_equal(p->control.n_params, 2);
	assert_string_equal(p->control.params[0].name, "gain");
	assert_string_equal(p->control.params[0].text, "7");
	assert_int_equal(p->control.params[0].line, 4);
	assert_int_equal(p->control.params[0].col, 18);
	assert_int_equal(p->control.controller_line, 3);

	assert_int_equal(policy_bind_controller(p, true, "mine", table, &d, 0), -EINVAL);
	char *s = printed(&d);
	assert_non_null(strstr(s, "t.yaml:4:18: error: control.params.gain: 7 is out of range; "
				  "allowed 0..5"));
	assert_non_null(strstr(s, "t.yaml:4:21: error: control.params.other: unknown key 'other'"));
	assert_true(strstr(s, ":4:18:") < strstr(s, ":4:21:")); /* file order */
	diag_clear(&d);

	assert_int_equal(policy_bind_controller(p, false, "a, b", NULL, &d, 0), -EINVAL);
	assert_non_null(strstr(printed(&d), "t.yaml:3:15: error: control.controller: unknown "
					    "controller 'mine'; valid: a, b"));
	diag_clear(&d);

	p->control.params[0].value = 3; /* as if written 3 */
	p->control.n_params = 1;
	assert_int_equal(policy_bind_controller(p, true, "mine", table, &d, 0), 0);
	assert_true(policy_param(p, "gain", 1) == 3);
	policy_free(p);
}

static void test_unknown_controller_and_missing(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	struct policy *p = load("name: x\ncontrol:\n  controller: schedutil\n", &d);
	assert_null(p);
	char *s = printed(&d);
	assert_non_null(strstr(s, "t.yaml:3:15:"));
	assert_non_null(strstr(s, "schedutil"));
	for (size_t i = 0; i < controller_count(); i++)
		assert_non_null(strstr(s, controller_at(i)->name));
	diag_clear(&d);

	/* Every registered controller is accepted: the loader has no list of its own. */
	for (size_t i = 0; i < controller_count(); i++) {
		char text[256];
		snprintf(text, sizeof(text), "name: c\ncontrol: {controller: %s}\n", controller_at(i)->name);
		p = load(text, &d);
		assert_non_null(p);
		policy_free(p);
		diag_clear(&d);
	}

	p = load("description: no name, no control\n", &d);
	assert_null(p);
	s = printed(&d);
	assert_non_null(strstr(s, "name: missing required key 'name'"));
	assert_non_null(strstr(s, "'control' is required"));
	diag_clear(&d);

	assert_int_not_equal(policy_load("/nonexistent/p.yaml", &p, &d), 0);
	assert_null(p);
	assert_non_null(strstr(printed(&d), "/nonexistent/p.yaml"));
	diag_clear(&d);

	/* from a file: the hash is of the file's bytes */
	const char *bytes = slurp("policies/balanced.yaml");
	assert_non_null(bytes);
	assert_int_equal(policy_load("policies/balanced.yaml", &p, &d), 0);
	assert_true(p->hash == fnv1a64(bytes, strlen(bytes)));
	assert_string_equal(p->path, "policies/balanced.yaml");
	policy_free(p);
	diag_clear(&d);
}

/* The caller swaps only on success: a failed load leaves its pointer alone
 * and the policy in force untouched. */
static void test_transaction(void **state)
{
	(void)state;
	struct diag_list d = { 0 };
	struct policy *cur = load("name: cur\nquality: {default_max_drop: 0.01}\nmetadata: {owners: [a]}\n"
				  "control: {controller: ondemand}\nthermal: {ceiling_c: 80}\n", &d);
	assert_non_null(cur);
	struct policy *next = (struct policy *)0x1; /* overwritten with NULL on failure */
	const char *bad = "name: next\ncontrol: {controller: ondemand}\nthermal: {ceiling_c: 95}\n";
	assert_int_equal(policy_load_string("n.yaml", bad, strlen(bad), &next, &d), -EINVAL);
	assert_null(next);
	assert_string_equal(cur->name, "cur");
	assert_true(cur->thermal.ceiling_c == 80);
	/* Errors of an earlier file in the same list do not fail the next load. */
	const char *good = "name: next\ncontrol: {controller: ondemand}\n";
	assert_int_equal(policy_load_string("g.yaml", good, strlen(good), &next, &d), 0);
	assert_non_null(next);
	policy_free(next);
	policy_free(cur);
	diag_clear(&d);
}

/* YAML 1.1 readers (editors, the schema check) and the loader read scalars
 * alike: what they would read differently is an error. */
static void test_yaml11_scalars(void **state)
{
	(void)state;
	static const struct {
		const char *line, *want;
	} cases[] = {
		{ "power: {cap_w: 1e3}", "'1e3' is read differently" },
		{ "power: {cap_w: 0x100}", "'0x100' is read differently" },
		{ "telemetry: {stuck_periods: 010}", "'010' is read differently" },
		{ "telemetry: {stuck_periods: 10.0}", "expected an integer" },
		{ "metadata: {model_revision: 1.10}", "YAML reads as a number; quote it: \"1.10\"" },
		{ "metadata: {power_mode: yes}", "YAML reads as a boolean" },
		{ "metadata: {power_mode: ~}", "YAML reads as null" },
		{ "metadata: {model_revision: 2024-01-02}", "YAML reads as a date" },
		{ "metadata: {owners: [12]}", "YAML reads as an integer" },
		{ "rollback: {triggers: {quality_breach: off}}", "expected a boolean (true/false)" },
		{ "rollback: {triggers: {quality_breach: tRuE}}", "expected a boolean (true/false)" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct diag_list d = { 0 };
		char text[512];
		snprintf(text, sizeof(text), "name: s\ncontrol: {controller: static}\n%s\n", cases[i].line);
		struct policy *p = load(text, &d);
		if (p || !strstr(printed(&d), cases[i].want))
			printf("case %zu: %s\n%s", i, cases[i].line, printed(&d));
		assert_null(p);
		assert_non_null(strstr(printed(&d), cases[i].want));
		for (size_t k = 0; k < d.n; k++)
			if (d.v[k].sev == DIAG_ERROR)
				assert_int_equal(d.v[k].line, 3);
		diag_clear(&d);
	}
	/* ... and what they read alike loads. */
	struct diag_list d = { 0 };
	struct policy *p = load("name: s\ncontrol: {controller: static}\npower: {cap_w: 1.0e+3}\n"
				"metadata: {model_revision: \"1.10\", power_mode: 'yes', owners: [v1.2]}\n"
				"rollback: {triggers: {quality_breach: No}}\n", &d);
	assert_non_null(p);
	assert_true(p->power.cap_w == 1000);
	assert_string_equal(p->metadata.model_revision, "1.10");
	assert_string_equal(p->metadata.owners[0], "v1.2");
	assert_false(p->rollback.quality_breach);
	policy_free(p);
	diag_clear(&d);
}

/* Each file of a corpus prints exactly its .expect (none: no diagnostics). */
static void check_corpus(const char *dir, bool want_fail)
{
	char pat[256];
	glob_t g;
	snprintf(pat, sizeof(pat), "%s/*.yaml", dir);
	assert_int_equal(glob(pat, 0, NULL, &g), 0);
	assert_true(g.gl_pathc >= 5);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *yaml = g.gl_pathv[i];
		char expf[512], want[32768];
		snprintf(expf, sizeof(expf), "%.*s.expect", (int)(strlen(yaml) - 5), yaml);
		const char *raw = slurp(expf);
		if (!raw && want_fail) {
			printf("%s has no .expect\n", yaml);
			fail();
		}
		expand(raw ? raw : "", want, sizeof(want));
		struct diag_list d = { 0 };
		struct policy *p = NULL;
		int rc = policy_load(yaml, &p, &d);
		const char *got = printed(&d);
		if (strcmp(got, want) || (rc != 0) != want_fail)
			printf("%s: rc %d\n--- want\n%s--- got\n%s", yaml, rc, want, got);
		assert_string_equal(got, want);
		assert_int_equal(rc != 0, want_fail);
		if (want_fail)
			assert_true(diag_count(&d, DIAG_ERROR) >= 1);
		else
			assert_int_equal(diag_count(&d, DIAG_ERROR), 0);
		policy_free(p);
		diag_clear(&d);
	}
	globfree(&g);
	/* No orphaned expectation. */
	snprintf(pat, sizeof(pat), "%s/*.expect", dir);
	if (glob(pat, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			char yaml[512];
			snprintf(yaml, sizeof(yaml), "%.*s.yaml", (int)(strlen(g.gl_pathv[i]) - 7),
				 g.gl_pathv[i]);
			FILE *f = fopen(yaml, "r");
			if (!f)
				printf("%s has no .yaml\n", g.gl_pathv[i]);
			assert_non_null(f);
			fclose(f);
		}
		globfree(&g);
	}
}

static void test_bad_corpus(void **state)
{
	(void)state;
	check_corpus("tests/policies/bad", true);
}

static void test_good_corpus(void **state)
{
	(void)state;
	check_corpus("tests/policies/good", false);
}

static void test_shipped_policies_load(void **state)
{
	(void)state;
	glob_t g;
	assert_int_equal(glob("policies/*.yaml", 0, NULL, &g), 0);
	assert_int_equal(glob("policies/baselines/*.yaml", GLOB_APPEND, NULL, &g), 0);
	assert_true(g.gl_pathc >= 11);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct diag_list d = { 0 };
		struct policy *p = NULL;
		bool library = !strstr(g.gl_pathv[i], "/baselines/");
		int rc = policy_load(g.gl_pathv[i], &p, &d);
		if (rc || (library && d.n))
			printf("%s\n%s", g.gl_pathv[i], printed(&d));
		assert_int_equal(rc, 0);
		assert_int_equal(diag_count(&d, DIAG_ERROR), 0);
		/* The library lints clean; baselines may warn (they have no rollback). */
		if (library)
			assert_int_equal(d.n, 0);
		assert_non_null(controller_find(p->control.controller));
		assert_true(p->metadata.n_owners >= 1);
		/* the shared yardstick (docs/baselines.md), tighter only in sla-strict */
		assert_true(p->sla.latency_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] > 0 && p->sla.latency_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] <= 2000);
		assert_true(p->sla.latency_ms[SLA_INDEX(SLA_TBT, SLA_P99)] > 0 && p->sla.latency_ms[SLA_INDEX(SLA_TBT, SLA_P99)] <= 100);
		assert_true(p->thermal.ceiling_c <= 85);
		policy_free(p);
		diag_clear(&d);
	}
	globfree(&g);
}

/* ---- policy_envelope_check ---- */

static struct hal_limits h200(void)
{
	struct hal_limits l = {
		.clk_min_khz = 345000, .clk_max_khz = 1980000, .clk_step_khz = 15000,
		.clk_default_max_khz = 1980000, .power_limit_min_mw = 200000,
		.power_limit_max_mw = 700000, .power_limit_default_mw = 700000,
		.slowdown_mc = 89000, .shutdown_mc = 92000,
	};
	snprintf(l.model, sizeof(l.model), "h200-sxm");
	snprintf(l.driver_version, sizeof(l.driver_version), "550.90.07");
	snprintf(l.firmware_version, sizeof(l.firmware_version), "96.00.99.00.01");
	return l;
}

static struct policy *env_policy(void)
{
	struct diag_list d = { 0 };
	struct policy *p = load("name: e\ncontrol: {controller: static}\n"
				"envelope: {inlet_min_c: 10, inlet_max_c: 35, power_limit_min_w: 200,\n"
				"  power_limit_max_w: 700, clk_min_mhz: 345, clk_max_mhz: 1980,\n"
				"  slowdown_c: 89, driver_versions: ['550.*', 'sim-*'],\n"
				"  firmware_versions: ['96.00.*']}\n", &d);
	assert_non_null(p);
	diag_clear(&d);
	return p;
}

static void test_envelope_inside(void **state)
{
	(void)state;
	struct policy *p = env_policy();
	struct hal_limits l = h200();
	char why[512] = "stale";
	assert_true(policy_envelope_check(p, &l, 30, why, sizeof(why)));
	assert_string_equal(why, "");
	assert_true(policy_envelope_check(p, &l, 10, NULL, 0)); /* edges are inside */
	assert_true(policy_envelope_check(p, &l, 35, NULL, 0));
	/* A device that can do more than assumed is inside. */
	l.power_limit_min_mw = 100000;
	l.power_limit_max_mw = 1000000;
	l.clk_max_khz = 2100000;
	l.slowdown_mc = 95000;
	assert_true(policy_envelope_check(p, &l, 20, why, sizeof(why)));
	/* No assumptions: anything, even an unknown inlet, is inside. */
	struct diag_list d = { 0 };
	struct policy *any = load("name: a\ncontrol: {controller: static}\n", &d);
	struct hal_limits z = { 0 };
	assert_true(policy_envelope_check(any, &z, NAN, why, sizeof(why)));
	policy_free(any);
	policy_free(p);
	diag_clear(&d);
}

static void test_envelope_outside(void **state)
{
	(void)state;
	struct policy *p = env_policy();
	char why[512];
	static const struct {
		const char *name, *want;
	} cases[] = {
		{ "inlet hot", "inlet 36.0 C outside 10..35 C" },
		{ "inlet cold", "inlet 9.5 C outside 10..35 C" },
		{ "inlet unknown", "inlet temperature unknown" },
		{ "power min", "device power limit minimum 300 W above the envelope's 200 W" },
		{ "power max", "device power limit maximum 600 W below the envelope's 700 W" },
		{ "clk min", "device clock minimum 500 MHz above the envelope's 345 MHz" },
		{ "clk max", "device clock maximum 1755 MHz below the envelope's 1980 MHz" },
		{ "slowdown", "device hardware slowdown 87.0 C below the envelope's 89 C" },
		{ "driver", "driver version '535.104.05' matches no envelope.driver_versions pattern" },
		{ "driver unknown", "driver version '' matches no" },
		{ "firmware", "firmware version '95.00.01' matches no envelope.firmware_versions" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hal_limits l = h200();
		double inlet = 25;
		switch (i) {
		case 0: inlet = 36; break;
		case 1: inlet = 9.5; break;
		case 2: inlet = NAN; break;
		case 3: l.power_limit_min_mw = 300000; break;
		case 4: l.power_limit_max_mw = 600000; break;
		case 5: l.clk_min_khz = 500000; break;
		case 6: l.clk_max_khz = 1755000; break;
		case 7: l.slowdown_mc = 87000; break;
		case 8: snprintf(l.driver_version, sizeof(l.driver_version), "535.104.05"); break;
		case 9: l.driver_version[0] = '\0'; break;
		case 10: snprintf(l.firmware_version, sizeof(l.firmware_version), "95.00.01"); break;
		}
		bool in = policy_envelope_check(p, &l, inlet, why, sizeof(why));
		if (in || !strstr(why, cases[i].want))
			printf("%s: in=%d why='%s'\n", cases[i].name, in, why);
		assert_false(in);
		assert_non_null(strstr(why, cases[i].want));
		assert_null(strchr(why, ';')); /* exactly one reason */
		assert_false(policy_envelope_check(p, &l, inlet, NULL, 0));
	}
	/* Several reasons at once, all named; a short buffer is truncated, not overrun. */
	struct hal_limits l = h200();
	l.slowdown_mc = 85000;
	snprintf(l.driver_version, sizeof(l.driver_version), "sim-0.1.0"); /* matches sim-* */
	assert_false(policy_envelope_check(p, &l, 50, why, sizeof(why)));
	assert_non_null(strstr(why, "inlet 50.0 C"));
	assert_non_null(strstr(why, "; device hardware slowdown 85.0 C"));
	assert_null(strstr(why, "driver"));
	char small[12];
	memset(small, 'x', sizeof(small));
	assert_false(policy_envelope_check(p, &l, 50, small, sizeof(small)));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	policy_free(p);
}

/* Every name of each enum table loads as its index (loader and names share the table). */
static void test_enum_names(void **state)
{
	(void)state;
	char text[512];
	struct diag_list d = { 0 };
	for (int k = 0; k < POLICY_OBJ_N; k++) {
		snprintf(text, sizeof(text),
			 "name: e\ncontrol: {controller: static}\nobjective: {kind: %s}\n",
			 policy_objective_names[k]);
		struct policy *p = load(text, &d);
		assert_non_null(p);
		assert_int_equal(p->objective.kind, k);
		policy_free(p);
	}
	assert_null(policy_objective_names[POLICY_OBJ_N]);
	for (int k = 0; k < POLICY_PREC_N; k++) {
		snprintf(text, sizeof(text),
			 "name: e\ncontrol: {controller: static}\nprecision: {modes: [%s], fallback: %s}\n",
			 policy_prec_names[k], policy_prec_names[k]);
		struct policy *p = load(text, &d);
		assert_non_null(p);
		assert_int_equal(p->precision.fallback, k);
		assert_int_equal(p->precision.modes, POLICY_PREC_BIT(k));
		assert_string_equal(policy_prec_name(p->precision.fallback), policy_prec_names[k]);
		policy_free(p);
	}
	assert_string_equal(policy_prec_name(POLICY_PREC_INT8), "int8");
	assert_string_equal(policy_prec_name(POLICY_PREC_N), "?");
	for (int k = 0; k < POLICY_LKG_N; k++) {
		snprintf(text, sizeof(text),
			 "name: e\ncontrol: {controller: static}\n"
			 "rollback: {last_known_good: {fallback: %s}}\n",
			 policy_lkg_names[k]);
		struct policy *p = load(text, &d);
		assert_non_null(p);
		assert_int_equal(p->rollback.lkg_fallback, k);
		policy_free(p);
	}
	diag_clear(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_policy),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_key_table),
		cmocka_unit_test(test_errors_have_positions),
		cmocka_unit_test(test_unknown_controller_and_missing),
		cmocka_unit_test(test_parse_then_bind),
		cmocka_unit_test(test_transaction),
		cmocka_unit_test(test_yaml11_scalars),
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_good_corpus),
		cmocka_unit_test(test_shipped_policies_load),
		cmocka_unit_test(test_enum_names),
		cmocka_unit_test(test_envelope_inside),
		cmocka_unit_test(test_envelope_outside),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
