/* Compact decision log: the same governor run on the sim (virtual time,
 * 100 ms period) logged in full and in compact mode. The compact log is a
 * fraction of the size, and govctl report's loader, filling each missing
 * period with the record before it, gets back exactly the full log's
 * decisions period by period (reasons, faults, operating point) and the same
 * rollback and fault counts; the measured figures (energy) are held between
 * records and stay close. Prints the bytes per simulated second of both
 * (docs/decision-log.md, "Size and retention"). Also the record-level rule:
 * a heartbeat is due after heartbeat_ms, an emergency is always written, a
 * new header resets the comparison. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "governor/controllers/controller.h"
#include "report/report.h"

#include <cmocka.h>

#include "common/clock.h"
#include "governor/loop/governor.h"
#include "hal/hal_sim.h"
#include "plant_models/plant.h"
#include "plant_models/scenario.h"

#define SIM_S 900

/* One governor run of SIM_S simulated seconds into path; its size. */
static long run(const char *path, uint32_t heartbeat_ms)
{
	struct diag_list diags = { 0 };
	struct scenario *sc = NULL;
	struct policy *pol = NULL;
	struct plant *plant = NULL;
	struct hal_dev dev = { 0 };
	struct govd_clock clk;
	struct governor *g = NULL;
	assert_int_equal(scenario_load("configs/scenarios/sensor-faults.yaml", &sc, &diags), 0);
	assert_int_equal(policy_load("policies/thermal-conservative.yaml", &pol, &diags), 0);
	assert_int_equal(plant_create(sc, sc->default_seed, &plant, &diags), 0);
	struct hal_dev_cfg hc = { .name = "gpu0", .backend = "sim", .plant = plant };
	assert_int_equal(hal_open(&dev, &hc, &diags), 0);
	assert_int_equal(hal_sim_clock(&dev, &clk), 0);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	struct governor_cfg gc = { .pol = pol, .dev = &dev, .clock = &clk, .seed = sc->default_seed,
				   .declog = f, .declog_heartbeat_ms = heartbeat_ms };
	assert_int_equal(governor_new(&gc, &g, &diags), 0);
	uint64_t period_ms = pol->control.period_ms;
	for (uint64_t t = govd_clock_now_ms(&clk); t < SIM_S * 1000ull; t += period_ms) {
		assert_true(governor_tick(g) >= 0);
		assert_int_equal(govd_clock_wait_until(&clk, t + period_ms), 0);
	}
	governor_restore(g);
	governor_free(g);
	hal_close(&dev);
	plant_destroy(plant);
	policy_free(pol);
	scenario_free(sc);
	diag_clear(&diags);
	long n = ftell(f);
	fclose(f);
	return n;
}

static void test_compact_reads_back(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_declog_compact-XXXXXX", full[96], compact[96], err[1400] = "";
	assert_non_null(mkdtemp(dir));
	snprintf(full, sizeof(full), "%s/full.jsonl", dir);
	snprintf(compact, sizeof(compact), "%s/compact.jsonl", dir);
	long nf = run(full, 0), nc = run(compact, 10000);
	print_message("decision log over %d s of sim at 100 ms: full %ld B (%.0f B/s), compact "
		      "(heartbeat 10 s) %ld B (%.0f B/s), %.1f %%\n",
		      SIM_S, nf, (double)nf / SIM_S, nc, (double)nc / SIM_S, 100.0 * nc / nf);
	assert_true(nc < nf / 2);

	static struct rp_run a, b;
	assert_int_equal(rp_run_load(full, &a, err, sizeof(err)), 0);
	assert_int_equal(rp_run_load(compact, &b, err, sizeof(err)), 0);
	/* Every period back, in order, with the full log's decision. */
	assert_int_equal(a.np, b.np);
	for (size_t i = 0; i < a.np; i++) {
		const struct declog_period *p = &a.p[i], *q = &b.p[i];
		assert_true(fabs(p->t_s - q->t_s) < 1e-9);
		assert_int_equal(p->reasons, q->reasons);
		assert_int_equal(p->n_faults, q->n_faults);
		assert_int_equal(p->clk_locked, q->clk_locked);
		for (size_t s = 0; s < a.n_slices; s++)
			assert_true(p->int8_after[s] == q->int8_after[s]);
	}
	assert_int_equal(rp_run_windows(&a), 0);
	assert_int_equal(rp_run_windows(&b), 0);
	assert_true(a.rollbacks == b.rollbacks);
	assert_true(a.telemetry_faults == b.telemetry_faults);
	assert_true(a.windows == b.windows);
	print_message("energy full %.0f J, compact %.0f J (%+.2f %%); tokens %+.2f %%\n", a.e_total,
		      b.e_total, 100.0 * (b.e_total - a.e_total) / a.e_total,
		      100.0 * (b.tokens - a.tokens) / a.tokens);
	assert_true(fabs(b.e_total - a.e_total) < 0.05 * a.e_total);
	rp_run_free(&a);
	rp_run_free(&b);

	/* A seq gap longer than the heartbeat allows is refused, with the line. */
	FILE *in = fopen(compact, "r"), *out;
	char bad[96], line[65536];
	snprintf(bad, sizeof(bad), "%s/bad.jsonl", dir);
	out = fopen(bad, "w");
	assert_non_null(in);
	assert_non_null(out);
	int n = 0;
	while (fgets(line, sizeof(line), in) && n < 3) {
		if (n == 2) { /* the third line: its seq pushed 1000 periods on */
			char *s = strstr(line, "\"seq\":");
			assert_non_null(s);
			long long seq = atoll(s + 6);
			fprintf(out, "%.*s\"seq\":%lld%s", (int)(s - line), line, seq + 1000,
				strchr(s + 6, ','));
		} else {
			fputs(line, out);
		}
		n++;
	}
	fclose(in);
	fclose(out);
	static struct rp_run c;
	assert_int_equal(rp_run_load(bad, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bad.jsonl:3:1: error: seq jumps over"));
	rp_run_free(&c);
	unlink(full);
	unlink(compact);
	unlink(bad);
	rmdir(dir);
}

/* The record-level rule on hand-made records. */
static void test_compact_rule(void **state)
{
	(void)state;
	struct gov_estimates est;
	enum gov_fault faults[GOV_SIG_N] = { 0 };
	struct gov_opoint op = { .power_limit_mw = 500000 };
	memset(&est, 0, sizeof(est));
	struct hal_limits lim = { 0 };
	struct declog_header h = { .policy_name = "p", .policy_path = "p.yaml", .policy_hash = "h",
				   .controller = "govd", .period_ms = 100, .lim = &lim };
	struct declog_record r = { .est = &est, .faults = faults, .before = &op, .after = &op,
				   .policy_name = "p", .policy_hash = "h" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct declog d;
	declog_init(&d, f);
	declog_set_compact(&d, 1000);
	assert_int_equal(declog_header(&d, &h), 0);
	for (int i = 0; i < 25; i++) { /* 2.5 s unchanged: t 0, 1000, 2000 written */
		r.t_ms = 100 * (uint64_t)i;
		r.seq = (uint64_t)i;
		assert_int_equal(declog_decision(&d, &r), 0);
	}
	op.power_limit_mw = 450000; /* a change: written */
	r.t_ms = 2500, r.seq = 25;
	declog_decision(&d, &r);
	r.t_ms = 2600, r.seq = 26;
	r.emergency = "thermal alert"; /* always written */
	declog_decision(&d, &r);
	r.emergency = NULL;
	r.t_ms = 2700, r.seq = 27;
	declog_decision(&d, &r); /* same as the emergency's: skipped */
	declog_fini(&d);
	fclose(f);
	int lines = 0;
	for (char *p = buf; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 1 + 3 + 2);
	assert_non_null(strstr(buf, "\"log_mode\":\"compact\",\"heartbeat_ms\":1000"));
	assert_non_null(strstr(buf, "\"seq\":10,"));
	assert_null(strstr(buf, "\"seq\":11,"));
	assert_non_null(strstr(buf, "\"seq\":26,"));
	assert_null(strstr(buf, "\"seq\":27,"));
	assert_int_equal(d.skipped, 28 - 5);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compact_rule),
		cmocka_unit_test(test_compact_reads_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
