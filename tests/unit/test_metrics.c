/* Metrics: snapshot bookkeeping from synthetic periods (counters, resets,
 * onsets, SLA windows), the text exposition (escaping, families, histogram),
 * the HTTP endpoint (GET /metrics, 404, 405, bind errors) and a sim run whose
 * metrics agree with govctl sim's summary. */
#include <arpa/inet.h>
#include <curl/curl.h>
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

#include "common/hist.h"
#include "governor/controllers/controller.h"
#include "governor/daemon/metrics.h"
#include "governor/policy/policy.h"
#include "governor/sim/sim.h"
#include "hal/hal_sim.h"
#include "plant_models/plant.h"
#include "plant_models/scenario.h"

/* cmocka 1.1 has no assert_double_equal. */
#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

/* A period the test edits between updates. */
struct fake {
	struct hal_sample sample;
	struct hal_serving serving;
	struct gov_estimates est;
	enum gov_fault faults[GOV_SIG_N];
	struct gov_opoint before, after;
	struct gov_period p; /* its rec is the decision record */
	struct hal_limits lim;
};

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->after.clk_locked = true;
	f->after.clk_min_khz = 1000000;
	f->after.clk_max_khz = 1500000;
	f->after.power_limit_mw = 500000;
	f->after.n_slices = 2;
	f->after.int8_frac[0] = 0.25;
	f->after.int8_frac[1] = 1.0;
	f->before = f->after;
	f->est.clk_mhz = 1410;
	f->est.power_w[HAL_RAIL_ACCEL] = 300;
	f->est.power_w[HAL_RAIL_MEMORY] = 50;
	f->est.power_w[HAL_RAIL_HOST] = 50;
	f->est.power_total_w = 400;
	f->est.temp_c[HAL_TEMP_JUNCTION] = 60;
	f->est.temp_c[HAL_TEMP_MEMORY] = 55;
	f->est.temp_c[HAL_TEMP_INLET] = 25;
	f->est.headroom_c = 25;
	f->est.serving_ok = true;
	f->est.tokens_per_s = 2000;
	f->est.window_requests = 10;
	f->est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 800;
	f->est.quantile_ms[SLA_INDEX(SLA_TBT, SLA_P99)] = 40;
	f->est.quantile_ms[SLA_INDEX(SLA_E2E, SLA_P99)] = 9000;
	f->est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P95)] = 500;
	f->est.quantile_ms[SLA_INDEX(SLA_TBT, SLA_P95)] = 30;
	f->est.quantile_ms[SLA_INDEX(SLA_E2E, SLA_P95)] = 7000;
	f->serving.valid = true;
	f->lim.clk_min_khz = 345000;
	f->lim.clk_max_khz = 1980000;
	f->lim.clk_default_max_khz = 1980000;
	f->p.sample = &f->sample;
	f->p.serving = &f->serving;
	f->p.rec.est = &f->est;
	f->p.rec.faults = f->faults;
	f->p.rec.before = &f->before;
	f->p.rec.after = &f->after;
	f->p.rec.binding = GOV_B_UTILISATION;
}

static void step(struct metrics_device *d, struct fake *f, uint64_t t_ms, const struct policy *pol,
		 uint32_t reasons, uint32_t fired)
{
	f->p.rec.t_ms = t_ms;
	f->sample.t_ms = t_ms;
	f->p.rec.reasons = reasons;
	metrics_device_update_from(d, &f->lim, pol, &f->p, fired);
}

static char *render(const struct metrics_snapshot *s)
{
	char *buf;
	size_t len;
	assert_int_equal(metrics_render_alloc(s, &buf, &len), 0);
	assert_int_equal(strlen(buf), len);
	return buf;
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

static void test_escape_label(void **state)
{
	char buf[64];
	assert_true(metrics_escape_label("gpu0", buf, sizeof(buf)));
	assert_string_equal(buf, "gpu0");
	assert_true(metrics_escape_label("a\"b\\c\nd", buf, sizeof(buf)));
	assert_string_equal(buf, "a\\\"b\\\\c\\nd");
	/* Truncation never splits an escape. */
	char small[4];
	assert_false(metrics_escape_label("ab\"c", small, sizeof(small)));
	assert_string_equal(small, "ab");
}

static void test_parse_listen(void **state)
{
	struct sockaddr_storage ss;
	unsigned len;
	assert_int_equal(metrics_parse_listen("127.0.0.1:9464", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 9464);
	assert_int_equal(metrics_parse_listen("[::1]:0", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	const char *bad[] = { "", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "localhost:80",
			      "::1:80", "[::1]80", "1.2.3.4:-1", "1.2.3.4:8x", "[::1:80" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(metrics_parse_listen(bad[i], &ss, &len), -EINVAL);
}

static void test_empty_snapshot(void **state)
{
	static struct metrics_snapshot s;
	metrics_snapshot_init(&s);
	char *t = render(&s);
	assert_true(has_line(t, "govd_build_info{version=\"" GOVD_VERSION "\"} 1"));
	assert_true(has_line(t, "govd_loop_overruns_total 0"));
	assert_true(has_line(t, "govd_tick_duration_seconds_bucket{le=\"+Inf\"} 0"));
	/* No budget, no policy, no devices: those samples are absent. */
	assert_null(strstr(t, "\ngovd_node_power_budget_watts "));
	assert_null(strstr(t, "govd_policy_info{"));
	assert_null(strstr(t, "device=\""));
	free(t);
}

/* Every sample belongs to a family declared above it with HELP and TYPE;
 * counters end in _total; histogram samples use the family's suffixes. */
static void check_families(const char *text)
{
	char fam[128] = "", type[32] = "";
	bool help = false;
	const char *p = text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		assert_non_null(nl);
		char line[512];
		size_t n = (size_t)(nl - p);
		assert_true(n < sizeof(line));
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl + 1;
		if (!strncmp(line, "# HELP ", 7)) {
			assert_int_equal(sscanf(line + 7, "%127s", fam), 1);
			help = true;
			type[0] = '\0';
			continue;
		}
		if (!strncmp(line, "# TYPE ", 7)) {
			char name[128];
			assert_int_equal(sscanf(line + 7, "%127s %31s", name, type), 2);
			assert_true(help);
			assert_string_equal(name, fam);
			size_t fl = strlen(fam);
			bool total = fl > 6 && !strcmp(fam + fl - 6, "_total");
			assert_true(!strcmp(type, "counter") == total);
			continue;
		}
		assert_true(type[0]);
		size_t nl_ = strcspn(line, "{ ");
		char name[128];
		memcpy(name, line, nl_);
		name[nl_] = '\0';
		if (!strcmp(type, "histogram")) {
			size_t fl = strlen(fam);
			assert_memory_equal(name, fam, fl);
			assert_true(!strcmp(name + fl, "_bucket") || !strcmp(name + fl, "_sum") ||
				    !strcmp(name + fl, "_count"));
		} else {
			assert_string_equal(name, fam);
		}
		/* The value parses as a float. */
		const char *v = strrchr(line, ' ');
		assert_non_null(v);
		char *end;
		strtod(v + 1, &end);
		assert_true(*end == '\0');
	}
}

static void test_device_gauges(void **state)
{
	static struct metrics_snapshot s;
	struct fake f;
	fake_init(&f);
	metrics_snapshot_init(&s);
	assert_int_equal(metrics_add_device(&s, "gpu\"0"), 0);
	struct metrics_device *d = &s.dev[0];
	snprintf(d->slice_name[0], sizeof(d->slice_name[0]), "chat");
	snprintf(d->slice_name[1], sizeof(d->slice_name[1]), "code");
	step(d, &f, 0, NULL, GOV_R_INIT, 0);
	assert_true(d->clk_locked);
	assert_near(d->clk_min_hz, 1e9, 0);
	assert_near(d->clk_max_hz, 1.5e9, 0);
	assert_near(d->power_limit_w, 500, 0);
	assert_near(d->clk_hz, 1.41e9, 1);
	assert_near(d->tokens_per_joule, 5.0, 1e-12);

	/* Unlocked clocks report the firmware range; an empty window has no quantiles. */
	f.after.clk_locked = false;
	f.est.window_requests = 0;
	step(d, &f, 100, NULL, 0, 0);
	assert_false(d->clk_locked);
	assert_near(d->clk_min_hz, 345e6, 0);
	assert_near(d->clk_max_hz, 1980e6, 0);
	assert_true(isnan(d->latency_s[SLA_INDEX(SLA_TTFT, SLA_P99)]));

	s.node_budget_w = 2400;
	s.held = true;
	metrics_device_set_policy(d, &(struct policy){ .name = "bal\\anced", .hash_hex = "fnv1a64:00" });
	char *t = render(&s);
	check_families(t);
	assert_true(has_line(t, "govd_policy_info{device=\"gpu\\\"0\",policy=\"bal\\\\anced\",hash=\"fnv1a64:00\"} 1"));
	assert_true(has_line(t, "govd_node_power_budget_watts 2400"));
	assert_true(has_line(t, "govd_hold 1"));
	assert_true(has_line(t, "govd_dry_run 0"));
	assert_true(has_line(t, "govd_clock_locked{device=\"gpu\\\"0\"} 0"));
	assert_true(has_line(t, "govd_clock_max_hertz{device=\"gpu\\\"0\"} 1980000000"));
	assert_true(has_line(t, "govd_int8_share_ratio{device=\"gpu\\\"0\",slice=\"chat\"} 0.25"));
	assert_true(has_line(t, "govd_int8_share_ratio{device=\"gpu\\\"0\",slice=\"code\"} 1"));
	assert_true(has_line(t, "govd_power_watts{device=\"gpu\\\"0\",rail=\"memory\"} 50"));
	assert_true(has_line(t, "govd_temperature_celsius{device=\"gpu\\\"0\",sensor=\"inlet\"} 25"));
	assert_true(has_line(t, "govd_thermal_headroom_celsius{device=\"gpu\\\"0\"} 25"));
	assert_true(has_line(t, "govd_binding{device=\"gpu\\\"0\",binding=\"utilisation\"} 1"));
	assert_true(has_line(t, "govd_binding{device=\"gpu\\\"0\",binding=\"thermal\"} 0"));
	assert_true(has_line(t, "govd_periods_total{device=\"gpu\\\"0\"} 2"));
	/* Unknown quantiles are absent, not zero. */
	assert_null(strstr(t, "govd_window_latency_p99_seconds{"));
	free(t);

	/* Serving gone: its gauges disappear too. */
	f.est.serving_ok = false;
	f.p.serving = NULL;
	step(d, &f, 200, NULL, 0, 0);
	t = render(&s);
	assert_true(has_line(t, "govd_serving_up{device=\"gpu\\\"0\"} 0"));
	assert_null(strstr(t, "govd_tokens_per_joule{"));
	free(t);
}

/* govd_policy_info per device, govd_device_info with dcgm-exporter's label
 * names, unknown identity labels left out. */
static void test_info(void **state)
{
	static struct metrics_snapshot s;
	struct fake f;
	fake_init(&f);
	metrics_snapshot_init(&s);
	snprintf(s.hostname, sizeof(s.hostname), "node-a");
	metrics_add_device(&s, "gpu0");
	metrics_add_device(&s, "gpu1");
	struct policy pa = { .name = "balanced", .hash_hex = "fnv1a64:aa" };
	struct policy pb = { .name = "eco", .hash_hex = "fnv1a64:bb" };
	snprintf(f.lim.model, sizeof(f.lim.model), "NVIDIA H200");
	snprintf(f.lim.uuid, sizeof(f.lim.uuid), "GPU-fa4e0000-0000-4000-8000-000000000000");
	snprintf(f.lim.pci_bus_id, sizeof(f.lim.pci_bus_id), "00000000:18:00.0");
	f.lim.have_index = true;
	f.lim.index = 0;
	step(&s.dev[0], &f, 0, &pa, GOV_R_INIT, 0);
	memset(f.lim.uuid, 0, sizeof(f.lim.uuid));
	memset(f.lim.pci_bus_id, 0, sizeof(f.lim.pci_bus_id));
	f.lim.have_index = false;
	step(&s.dev[1], &f, 0, &pb, GOV_R_INIT, 0);
	char *t = render(&s);
	check_families(t);
	assert_true(has_line(t, "govd_policy_info{device=\"gpu0\",policy=\"balanced\",hash=\"fnv1a64:aa\"} 1"));
	assert_true(has_line(t, "govd_policy_info{device=\"gpu1\",policy=\"eco\",hash=\"fnv1a64:bb\"} 1"));
	assert_true(has_line(t, "govd_device_info{device=\"gpu0\",gpu=\"0\",UUID=\"GPU-fa4e0000-0000-4000-8000-000000000000\","
			     "pci_bus_id=\"00000000:18:00.0\",modelName=\"NVIDIA H200\",Hostname=\"node-a\"} 1"));
	assert_true(has_line(t, "govd_device_info{device=\"gpu1\",modelName=\"NVIDIA H200\",Hostname=\"node-a\"} 1"));
	free(t);
	/* a MIG instance: the parent's UUID, its instance id and own UUID */
	snprintf(f.lim.uuid, sizeof(f.lim.uuid), "GPU-fa4e0000-0000-4000-8000-000000000001");
	snprintf(f.lim.mig_uuid, sizeof(f.lim.mig_uuid), "MIG-fa4e0000-0000-4000-9000-000001000001");
	f.lim.mig_gi_id = 2;
	f.lim.mig_enabled = true;
	f.lim.have_index = true;
	f.lim.index = 1;
	metrics_add_device(&s, "gpu2"); /* identity is taken at a device's start */
	step(&s.dev[2], &f, 0, &pb, GOV_R_INIT, 0);
	t = render(&s);
	assert_true(has_line(t, "govd_device_info{device=\"gpu2\",gpu=\"1\",UUID=\"GPU-fa4e0000-0000-4000-8000-000000000001\","
			     "modelName=\"NVIDIA H200\",Hostname=\"node-a\",GPU_I_ID=\"2\","
			     "mig_uuid=\"MIG-fa4e0000-0000-4000-9000-000001000001\",mig=\"enabled\"} 1"));
	free(t);
	memset(f.lim.mig_uuid, 0, sizeof(f.lim.mig_uuid));
	f.lim.mig_enabled = false;
	/* Quality gate: open, closed (one closure), still closed, open again. */
	bool seq[] = { true, false, false, true };
	for (int k = 0; k < 4; k++) {
		f.est.q_gate_open[1] = seq[k];
		step(&s.dev[0], &f, 100 * (uint64_t)(k + 1), &pa, 0, 0);
	}
	assert_int_equal(s.dev[0].gate_closures[1], 1);
	assert_int_equal(s.dev[0].gate_closures[0], 0);
	t = render(&s);
	assert_true(has_line(t, "govd_quality_gate_closures_total{device=\"gpu0\",slice=\"1\"} 1"));
	assert_true(has_line(t, "govd_quality_gate_open{device=\"gpu0\",slice=\"1\"} 1"));
	assert_true(has_line(t, "govd_quality_gate_open{device=\"gpu0\",slice=\"0\"} 0"));
	free(t);
	/* The precision ladder: slice 1 served FP8 behind its FP8 gate (its own row). */
	f.after.low_mode[1] = HAL_LOW_FP8;
	f.est.q_gate_open[est_q_row(1, HAL_LOW_FP8)] = true;
	step(&s.dev[0], &f, 600, &pa, 0, 0);
	t = render(&s);
	assert_true(has_line(t, "govd_fp8_rung{device=\"gpu0\",slice=\"1\"} 1"));
	assert_true(has_line(t, "govd_fp8_rung{device=\"gpu0\",slice=\"0\"} 0"));
	assert_true(has_line(t, "govd_quality_fp8_gate_open{device=\"gpu0\",slice=\"1\"} 1"));
	assert_true(has_line(t, "govd_quality_fp8_gate_open{device=\"gpu0\",slice=\"0\"} 0"));
	free(t);
	f.after.low_mode[1] = HAL_LOW_INT8;
}

/* The server's cumulative histograms become govd_request_latency_seconds:
 * the first read only bases, later reads add their gain, a server restart
 * (total down) adds everything it has. */
static void test_latency_histogram(void **state)
{
	static struct metrics_snapshot s;
	static struct hist ttft, tbt, e2e;
	struct fake f;
	fake_init(&f);
	metrics_snapshot_init(&s);
	metrics_add_device(&s, "gpu0");
	struct metrics_device *d = &s.dev[0];
	hist_reset(&ttft), hist_reset(&tbt), hist_reset(&e2e);
	f.serving.ttft = &ttft, f.serving.tbt = &tbt, f.serving.e2e = &e2e;
	hist_add(&ttft, 400, 5); /* before govd: not counted */
	step(d, &f, 0, NULL, GOV_R_INIT, 0);
	assert_int_equal(d->lat[0].count, 0);
	hist_add(&ttft, 40, 3);   /* le 0.05 */
	hist_add(&ttft, 400, 2);  /* le 0.5 */
	hist_add(&ttft, 90000, 1); /* > 60 s: +Inf only */
	hist_add(&tbt, 20.5, 4);  /* just above 0.02: le 0.03 */
	step(d, &f, 100, NULL, 0, 0);
	assert_int_equal(d->lat[0].count, 6);
	assert_int_equal(d->lat[0].le[3], 0);  /* 0.03 */
	assert_int_equal(d->lat[0].le[4], 3);  /* 0.05 */
	assert_int_equal(d->lat[0].le[9], 5);  /* 0.5 */
	assert_int_equal(d->lat[0].le[15], 5); /* 60 */
	assert_near(d->lat[0].sum_s, (3 * 40 + 2 * 400 + 90000) / 1000.0, 1e-9);
	assert_int_equal(d->lat[1].le[2], 0);
	assert_int_equal(d->lat[1].le[3], 4);
	char *t = render(&s);
	check_families(t);
	assert_true(has_line(t, "govd_request_latency_seconds_bucket{device=\"gpu0\",kind=\"ttft\",le=\"0.05\"} 3"));
	assert_true(has_line(t, "govd_request_latency_seconds_bucket{device=\"gpu0\",kind=\"ttft\",le=\"+Inf\"} 6"));
	assert_true(has_line(t, "govd_request_latency_seconds_count{device=\"gpu0\",kind=\"tbt\"} 4"));
	assert_true(has_line(t, "govd_request_latency_seconds_count{device=\"gpu0\",kind=\"e2e\"} 0"));
	free(t);
	/* An invalid read changes nothing; a restart counts what the new server has. */
	f.serving.valid = false;
	step(d, &f, 200, NULL, 0, 0);
	assert_int_equal(d->lat[0].count, 6);
	f.serving.valid = true;
	hist_reset(&ttft);
	hist_add(&ttft, 4, 2);
	step(d, &f, 300, NULL, 0, 0);
	assert_int_equal(d->lat[0].count, 8);
	assert_int_equal(d->lat[0].le[0], 2);
	assert_int_equal(d->lat[0].le[4], 5);
}

static void test_counters(void **state)
{
	static struct metrics_snapshot s;
	struct fake f;
	fake_init(&f);
	metrics_snapshot_init(&s);
	metrics_add_device(&s, "gpu0");
	struct metrics_device *d = &s.dev[0];

	/* Decisions per reason bit, rollbacks per fired trigger. */
	step(d, &f, 0, NULL, GOV_R_INIT | GOV_R_UTIL_SCALE, 0);
	step(d, &f, 100, NULL, GOV_R_UTIL_SCALE | GOV_R_STEP_LIMIT, 0);
	step(d, &f, 200, NULL, GOV_R_ROLLBACK, GOV_T_THERMAL | GOV_T_SLA);
	step(d, &f, 300, NULL, GOV_R_ROLLBACK | GOV_R_ACTUATE_ERROR, 0);
	assert_int_equal(d->decisions[0], 1);  /* init */
	assert_int_equal(d->decisions[6], 2);  /* util_scale */
	assert_int_equal(d->decisions[13], 1); /* step_limit */
	assert_int_equal(d->decisions[26], 2); /* rollback */
	assert_int_equal(d->rollbacks[2], 1);  /* thermal */
	assert_int_equal(d->rollbacks[0], 1);  /* sla */
	assert_int_equal(d->rollbacks[1], 0);
	assert_int_equal(d->rollbacks_unattributed, 1);
	assert_int_equal(d->actuate_errors, 1);

	/* Fault onsets: a fault lasting three periods is one; it returns: two. */
	f.faults[GOV_SIG_TEMP_INLET] = GOV_FAULT_STUCK;
	step(d, &f, 400, NULL, 0, 0);
	step(d, &f, 500, NULL, 0, 0);
	f.faults[GOV_SIG_TEMP_INLET] = GOV_FAULT_STALE; /* still faulted: no onset */
	step(d, &f, 600, NULL, 0, 0);
	f.faults[GOV_SIG_TEMP_INLET] = GOV_FAULT_NONE;
	step(d, &f, 700, NULL, 0, 0);
	f.faults[GOV_SIG_TEMP_INLET] = GOV_FAULT_DROPOUT;
	step(d, &f, 800, NULL, 0, 0);
	assert_int_equal(d->telemetry_faults[GOV_SIG_TEMP_INLET], 2);
	assert_int_equal(d->telemetry_faults[GOV_SIG_TEMP_JUNCTION], 0);

	char *t = render(&s);
	check_families(t);
	assert_true(has_line(t, "govd_decisions_total{device=\"gpu0\",reason=\"util_scale\"} 2"));
	assert_true(has_line(t, "govd_decisions_total{device=\"gpu0\",reason=\"canary\"} 0"));
	assert_true(has_line(t, "govd_rollbacks_total{device=\"gpu0\",trigger=\"thermal\"} 1"));
	assert_true(has_line(t, "govd_rollbacks_total{device=\"gpu0\",trigger=\"unknown\"} 1"));
	assert_true(has_line(t, "govd_telemetry_faults_total{device=\"gpu0\",signal=\"temp_inlet\"} 2"));
	assert_true(has_line(t, "govd_actuation_errors_total{device=\"gpu0\"} 1"));
	free(t);
}

static void test_cumulative_sources(void **state)
{
	static struct metrics_snapshot s;
	struct fake f;
	fake_init(&f);
	metrics_snapshot_init(&s);
	metrics_add_device(&s, "gpu0");
	struct metrics_device *d = &s.dev[0];
	struct hal_value *ea = &f.sample.energy_mj[HAL_RAIL_ACCEL];

	/* Tokens: deltas; a reset counts the new value; a zero (failed read) is
	 * skipped so the next good read does not count everything twice. */
	uint64_t tok[] = { 100, 150, 20, 0, 30 };
	/* Clamp events likewise. */
	uint64_t clamps[] = { 5, 7, 7, 0, 8 };
	/* Accel energy counter: valid, valid, invalid (power integrated), valid
	 * (re-based only), valid. */
	int64_t mj[] = { 1000, 3000, -1, 9000, 9500 };
	for (int i = 0; i < 5; i++) {
		f.serving.tokens_generated = tok[i];
		f.sample.clamp_events = clamps[i];
		f.sample.clamp_time_ms = clamps[i] * 100;
		ea->valid = mj[i] >= 0;
		ea->v = mj[i];
		step(d, &f, (uint64_t)i * 500, NULL, 0, 0);
	}
	assert_int_equal(d->tokens_total, 50 + 20 + 10);
	assert_int_equal(d->clamp_events, 2 + 0 + 1);
	assert_near(d->clamp_s, 0.3, 1e-12);
	/* 2 J from the counter, 300 W x 0.5 s while invalid, 0.5 J after. */
	assert_near(d->energy_j[HAL_RAIL_ACCEL], 2.0 + 150.0 + 0.5, 1e-9);
	/* Memory and host have no counter: power x time (4 intervals of 0.5 s). */
	assert_near(d->energy_j[HAL_RAIL_MEMORY], 50 * 2.0, 1e-9);
}

static void test_sla_windows(void **state)
{
	static struct metrics_snapshot s;
	struct policy pol;
	struct fake f;
	policy_defaults(&pol);
	pol.sla.window_s = 1.0;
	memset(&pol.sla, 0, sizeof(pol.sla));
	pol.sla.window_s = 1.0;
	pol.sla.latency_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 1000;
	pol.sla.latency_ms[SLA_INDEX(SLA_TBT, SLA_P95)] = 50;
	fake_init(&f);
	metrics_snapshot_init(&s);
	metrics_add_device(&s, "gpu0");
	struct metrics_device *d = &s.dev[0];

	step(d, &f, 0, &pol, 0, 0);
	step(d, &f, 500, &pol, 0, 0);
	assert_int_equal(d->sla_windows, 0);
	step(d, &f, 1000, &pol, 0, 0); /* met: 800 <= 1000, 30 <= 50 */
	f.est.quantile_ms[SLA_INDEX(SLA_TBT, SLA_P95)] = 60;
	step(d, &f, 2000, &pol, 0, 0); /* missed on TBT p95 */
	f.est.quantile_ms[SLA_INDEX(SLA_TBT, SLA_P95)] = 30;
	f.est.window_requests = 0;
	step(d, &f, 3000, &pol, 0, 0); /* idle: not judged */
	f.est.queue_len = 3;
	step(d, &f, 4000, &pol, 0, 0); /* nothing done while requests wait: missed */
	f.est.queue_len = 0;
	f.est.window_requests = 5;
	f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = NAN;
	step(d, &f, 5000, &pol, 0, 0); /* no TTFT sample: not judged (sla_judge), TBT met */
	f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 900;
	f.est.serving_ok = false;
	step(d, &f, 6000, &pol, 0, 0); /* serving unknown: not judged */
	f.est.serving_ok = true;
	step(d, &f, 7000, &pol, 0, 0); /* met */
	assert_int_equal(d->sla_windows, 5);
	assert_int_equal(d->sla_windows_met, 3);
	char *t = render(&s);
	assert_true(has_line(t, "govd_sla_windows_total{device=\"gpu0\"} 5"));
	assert_true(has_line(t, "govd_sla_attainment_ratio{device=\"gpu0\"} 0.6"));
	free(t);
}

static void test_tick_histogram(void **state)
{
	static struct metrics_snapshot s;
	metrics_snapshot_init(&s);
	metrics_observe_tick(&s, 30e-6);
	metrics_observe_tick(&s, 50e-6); /* on a bound: that bucket (le) */
	metrics_observe_tick(&s, 0.7e-3);
	metrics_observe_tick(&s, 2.0);   /* over the last bound: +Inf only */
	metrics_observe_tick(&s, NAN);   /* ignored */
	metrics_observe_tick(&s, -1);    /* ignored */
	s.loop_overruns = 3;
	char *t = render(&s);
	check_families(t);
	assert_true(has_line(t, "govd_tick_duration_seconds_bucket{le=\"0.000025\"} 0"));
	assert_true(has_line(t, "govd_tick_duration_seconds_bucket{le=\"0.00005\"} 2"));
	assert_true(has_line(t, "govd_tick_duration_seconds_bucket{le=\"0.0005\"} 2"));
	assert_true(has_line(t, "govd_tick_duration_seconds_bucket{le=\"0.001\"} 3"));
	assert_true(has_line(t, "govd_tick_duration_seconds_bucket{le=\"0.1\"} 3"));
	assert_true(has_line(t, "govd_tick_duration_seconds_bucket{le=\"+Inf\"} 4"));
	assert_true(has_line(t, "govd_tick_duration_seconds_count 4"));
	assert_true(has_line(t, "govd_tick_duration_seconds_sum 2.00078"));
	assert_true(has_line(t, "govd_loop_overruns_total 3"));
	free(t);
}

/* ---- HTTP ---------------------------------------------------------------- */

struct body {
	char *p;
	size_t n;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct body *b = ud;
	size_t n = size * nmemb;
	char *q = realloc(b->p, b->n + n + 1);
	if (!q)
		return 0;
	memcpy(q + b->n, data, n);
	b->p = q;
	b->n += n;
	b->p[b->n] = '\0';
	return n;
}

static long http(unsigned port, const char *path, bool post, struct body *b)
{
	char url[128];
	long code = 0;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	CURL *c = curl_easy_init();
	assert_non_null(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (post)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "x=1");
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	return code;
}

static void test_http(void **state)
{
	static struct metrics_snapshot s;
	struct metrics_server *m;
	struct diag_list dl = { 0 };
	struct metrics_cfg cfg = { .listen = "127.0.0.1:0" };
	struct fake f;

	assert_int_equal(metrics_start(&m, &cfg, &dl), 0);
	unsigned port = metrics_port(m);
	assert_true(port > 0);

	/* Before the first publish: a valid, device-less exposition. */
	struct body b = { 0 };
	assert_int_equal(http(port, "/metrics", false, &b), 200);
	assert_null(strstr(b.p, "device=\""));
	free(b.p);

	fake_init(&f);
	metrics_snapshot_init(&s);
	metrics_add_device(&s, "gpu0");
	step(&s.dev[0], &f, 0, NULL, GOV_R_INIT, 0);
	metrics_publish(m, &s);
	/* Later edits to the loop's copy are not seen until published again. */
	s.dev[0].periods = 99;
	b = (struct body){ 0 };
	assert_int_equal(http(port, "/metrics", false, &b), 200);
	assert_true(has_line(b.p, "govd_periods_total{device=\"gpu0\"} 1"));
	s.dev[0].periods = 1;
	s.seq = 1; /* what publish stamped */
	char *want = render(&s);
	assert_string_equal(b.p, want);
	free(want);
	free(b.p);

	b = (struct body){ 0 };
	assert_int_equal(http(port, "/", false, &b), 404);
	free(b.p);
	b = (struct body){ 0 };
	assert_int_equal(http(port, "/metricsx", false, &b), 404);
	free(b.p);
	b = (struct body){ 0 };
	assert_int_equal(http(port, "/metrics", true, &b), 405);
	free(b.p);
	assert_int_equal(metrics_scrapes(m), 2);

	/* The port is taken: a second server fails with a diag naming it. */
	char listen[32];
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
	struct metrics_server *m2;
	struct metrics_cfg cfg2 = { .listen = listen };
	assert_int_equal(metrics_start(&m2, &cfg2, &dl), -EADDRINUSE);
	assert_null(m2);
	assert_int_equal(dl.n, 1);
	assert_non_null(strstr(dl.v[0].msg, listen));
	diag_clear(&dl);
	metrics_stop(m);

	cfg2.listen = "localhost:80";
	assert_int_equal(metrics_start(&m2, &cfg2, &dl), -EINVAL);
	assert_int_equal(dl.n, 1);
	assert_string_equal(dl.v[0].path, "metrics.listen");
	diag_clear(&dl);
}

/* ---- a sim run: the metrics agree with govctl sim's summary ------------- */

struct run_ctx {
	struct metrics_snapshot *s;
	struct governor *g;
};

static int on_period(void *ctx, const struct gov_period *p)
{
	struct run_ctx *r = ctx;
	metrics_device_update(&r->s->dev[0], r->g, p, 0);
	return 0;
}

static void test_agrees_with_sim(void **state)
{
	const char *scen = "configs/scenarios/sensor-faults.yaml", *polp = "policies/balanced.yaml";
	const double dur_s = 700;
	static struct metrics_snapshot s;
	struct diag_list dl = { 0 };
	struct scenario *sc;
	struct policy *pol;
	struct plant *plant;
	struct hal_dev dev = { 0 };
	struct govd_clock clk;
	struct governor *g = NULL;

	assert_int_equal(scenario_load(scen, &sc, &dl), 0);
	assert_int_equal(policy_load(polp, &pol, &dl), 0);
	assert_int_equal(plant_create(sc, sc->default_seed, &plant, &dl), 0);
	struct hal_dev_cfg hc = { .name = "sim0", .backend = "sim", .plant = plant };
	assert_int_equal(hal_open(&dev, &hc, &dl), 0);
	assert_int_equal(hal_sim_clock(&dev, &clk), 0);
	metrics_snapshot_init(&s);
	metrics_add_device(&s, "sim0");
	struct run_ctx rc = { &s, NULL };
	struct governor_cfg gc = { .pol = pol, .dev = &dev, .clock = &clk, .seed = sc->default_seed,
				   .on_period = on_period, .cb_ctx = &rc };
	assert_int_equal(governor_new(&gc, &g, &dl), 0);
	rc.g = g;
	assert_int_equal(governor_run(g, (uint64_t)(dur_s * 1000)), 0);
	struct governor_status gs;
	governor_status(g, &gs);
	uint64_t onsets = gs.fault_onsets;
	governor_free(g);
	hal_close(&dev);
	plant_destroy(plant);

	char dir[] = "/tmp/test_metrics_XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct sim_opts o = { .scenario_path = scen, .policy_path = polp, .duration_s = dur_s,
			      .out_dir = dir };
	struct sim_result res;
	assert_int_equal(sim_run(&o, &res, &dl), 0);
	char path[4200];
	snprintf(path, sizeof(path), "%s/summary.json", dir);
	json_t *sum = json_load_file(path, 0, NULL);
	assert_non_null(sum);
	json_t *sla = json_object_get(sum, "sla");

	const struct metrics_device *d = &s.dev[0];
	assert_int_equal(d->periods, res.periods);
	/* Same windows as the sim's judge, which counts idle ones apart. */
	assert_int_equal(d->sla_windows, json_integer_value(json_object_get(sla, "windows")));
	assert_int_equal(d->sla_windows_met, json_integer_value(json_object_get(sla, "windows_met")));
	assert_true(d->sla_windows > 5);
	/* Fault onsets: the validator's own count. */
	uint64_t ours = 0;
	for (int i = 0; i < GOV_SIG_N; i++)
		ours += d->telemetry_faults[i];
	assert_int_equal(ours, onsets);
	assert_int_equal(ours, json_integer_value(json_object_get(sum, "telemetry_faults")));
	assert_true(d->telemetry_faults[GOV_SIG_TEMP_JUNCTION] >= 1);
	/* Tokens: the server's count up to the last period. */
	assert_true(d->tokens_total > 0 && d->tokens_total <= res.tokens_generated);
	assert_true((double)d->tokens_total > 0.97 * (double)res.tokens_generated);
	/* Energy per rail within a period's worth of the plant's integral. */
	json_t *ej = json_object_get(sum, "energy_j");
	const char *rails[HAL_RAIL_N] = { "accel", "memory", "host" };
	for (int r = 0; r < HAL_RAIL_N; r++) {
		double want = json_number_value(json_object_get(ej, rails[r]));
		assert_true(want > 0);
		assert_true(fabs(d->energy_j[r] - want) < 0.01 * want);
	}
	json_decref(sum);
	policy_free(pol);
	scenario_free(sc);
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_label),
		cmocka_unit_test(test_parse_listen),
		cmocka_unit_test(test_empty_snapshot),
		cmocka_unit_test(test_device_gauges),
		cmocka_unit_test(test_info),
		cmocka_unit_test(test_latency_histogram),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_cumulative_sources),
		cmocka_unit_test(test_sla_windows),
		cmocka_unit_test(test_tick_histogram),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_agrees_with_sim),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
