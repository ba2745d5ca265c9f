/* govctl report: what the evidence can carry (docs/report.md): simulation,
 * a dry-run or fewer than 3 seeds cap the verdict at GO WITH CONDITIONS with
 * the condition that lifts it; the gain is judged against its spread over
 * seeds; the ranking is by energy share and a class holding most windows
 * never costs 0 J by construction. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "report/report.h"

#include <cmocka.h>

static bool has(const struct rp_decision *d, bool blocker, const char *needle)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->reasons[i].blocker == blocker && strstr(d->reasons[i].text, needle))
			return true;
	return false;
}

static struct rp_decision go(void)
{
	struct rp_decision d;
	memset(&d, 0, sizeof(d));
	d.verdict = RP_GO;
	d.gain = 0.2;
	return d;
}

static void spread_of(void **state)
{
	double v[5] = { 3, NAN, 1, 2, 10 };
	struct rp_spread s = rp_spread_of(v, 5);
	assert_int_equal(s.n, 4);
	assert_float_equal(s.min, 1, 0);
	assert_float_equal(s.max, 10, 0);
	assert_float_equal(s.median, 2.5, 1e-12);
	double w[3] = { 5, 4, 6 };
	s = rp_spread_of(w, 3);
	assert_float_equal(s.median, 5, 0);
	s = rp_spread_of(w, 0);
	assert_int_equal(s.n, 0);
	assert_true(isnan(s.median));
}

static void simulation_caps_go(void **state)
{
	struct rp_decision d = go();
	struct rp_spread one = { .n = 1, .min = 0.2, .median = 0.2, .max = 0.2 };
	rp_cap_evidence(&d, RP_EV_SIMULATED, "plant preset h200-sxm", &one, &rp_default_thresholds);
	assert_int_equal(d.verdict, RP_GO_COND);
	assert_true(has(&d, false, "simulated (plant preset h200-sxm)"));
	assert_true(has(&d, false, "dry-run on the target hardware"));
	assert_true(has(&d, false, "at least 3 seeds"));

	/* A dry-run: a live canary lifts it. */
	d = go();
	struct rp_spread three = { .n = 3, .min = 0.15, .median = 0.2, .max = 0.25 };
	rp_cap_evidence(&d, RP_EV_DRY_RUN, "device gpu0", &three, &rp_default_thresholds);
	assert_int_equal(d.verdict, RP_GO_COND);
	assert_true(has(&d, false, "live governed canary"));
	assert_false(has(&d, false, "seeds (govctl compare"));

	/* Live governed, 3 seeds that agree: GO stays GO. */
	d = go();
	rp_cap_evidence(&d, RP_EV_GOVERNED, "device gpu0", &three, &rp_default_thresholds);
	assert_int_equal(d.verdict, RP_GO);
	assert_int_equal(d.n, 0);
	assert_float_equal(d.gain, 0.2, 1e-12);

	/* Live governed but one seed: conditional, and says how to lift it. */
	d = go();
	rp_cap_evidence(&d, RP_EV_GOVERNED, "device gpu0", &one, &rp_default_thresholds);
	assert_int_equal(d.verdict, RP_GO_COND);
	assert_true(has(&d, false, "1 seed(s) only"));
	rp_cap_evidence(&d, RP_EV_GOVERNED, "device gpu0", NULL, &rp_default_thresholds);
	assert_int_equal(d.verdict, RP_GO_COND);
}

static void nogo_stays_nogo(void **state)
{
	struct rp_decision d = go();
	d.verdict = RP_NOGO;
	d.n = 1;
	d.reasons[0].blocker = true;
	snprintf(d.reasons[0].text, sizeof(d.reasons[0].text), "2 clamps");
	struct rp_spread three = { .n = 3, .min = 0.15, .median = 0.2, .max = 0.25 };
	rp_cap_evidence(&d, RP_EV_GOVERNED, "x", &three, &rp_default_thresholds);
	assert_int_equal(d.verdict, RP_NOGO);
}

static void gain_against_spread(void **state)
{
	const struct rp_thresholds *th = &rp_default_thresholds;
	/* A seed loses to the baseline: conditional, never GO. */
	struct rp_decision d = go();
	struct rp_spread s = { .n = 3, .min = -0.01, .median = 0.1, .max = 0.2 };
	rp_cap_evidence(&d, RP_EV_GOVERNED, "x", &s, th);
	assert_int_equal(d.verdict, RP_GO_COND);
	assert_true(has(&d, false, "not consistent over seeds"));
	assert_float_equal(d.gain, 0.1, 1e-12);
	/* The median loses: NO-GO whatever the first seed said. */
	d = go();
	s = (struct rp_spread){ .n = 3, .min = -0.2, .median = -0.05, .max = 0.2 };
	rp_cap_evidence(&d, RP_EV_GOVERNED, "x", &s, th);
	assert_int_equal(d.verdict, RP_NOGO);
	assert_true(has(&d, true, "median tokens/J gain over 3 seeds is -5.0%"));
	/* Every seed gains, but the spread is wider than the gain. */
	d = go();
	s = (struct rp_spread){ .n = 4, .min = 0.01, .median = 0.05, .max = 0.2 };
	rp_cap_evidence(&d, RP_EV_GOVERNED, "x", &s, th);
	assert_int_equal(d.verdict, RP_GO_COND);
	assert_true(has(&d, false, "spread of the gain"));
	/* Consistent but under the noise threshold. */
	d = go();
	s = (struct rp_spread){ .n = 3, .min = 0.009, .median = 0.01, .max = 0.011 };
	rp_cap_evidence(&d, RP_EV_GOVERNED, "x", &s, th);
	assert_int_equal(d.verdict, RP_GO_COND);
	assert_true(has(&d, false, "median gain +1.0%"));
}

static void merge_seed_blockers(void **state)
{
	struct rp_decision d = go(), o = go();
	o.verdict = RP_NOGO;
	o.n = 2;
	o.reasons[0].blocker = true;
	snprintf(o.reasons[0].text, sizeof(o.reasons[0].text), "1 hardware thermal clamp event(s)");
	o.reasons[1].blocker = false;
	snprintf(o.reasons[1].text, sizeof(o.reasons[1].text), "a condition");
	rp_merge_seed(&d, &o, 7);
	assert_int_equal(d.verdict, RP_NOGO);
	assert_int_equal(d.n, 1);
	assert_true(has(&d, true, "seed 7: 1 hardware thermal clamp"));
}

static struct rp_wstats win(enum rp_class c, double tokens, double energy)
{
	struct rp_wstats w;
	memset(&w, 0, sizeof(w));
	w.busy = true;
	w.cls = c;
	w.tokens = tokens;
	w.energy_j = energy;
	w.tpj = tokens / energy;
	return w;
}

/* The class that holds most windows costs more than 0 J even when no peer
 * run did better (the run's own 90th percentile is the reference), and the
 * ranking follows the energy share, not the cost. */
static void majority_class_has_cost(void **state)
{
	struct rp_wstats w[8];
	for (int i = 0; i < 6; i++)
		w[i] = win(RP_C_MEMORY, 1000 + 100 * i, 10000); /* 0.10 .. 0.15 tokens/J */
	w[6] = win(RP_C_COMPUTE, 3000, 10000);                /* 0.30 */
	w[7] = win(RP_C_HOST, 3000, 9000);                    /* 0.33, the run's best */
	double own[8];
	for (int i = 0; i < 8; i++)
		own[i] = w[i].tpj;
	double ref = rp_reference_tpj(NAN, own, 8);
	assert_true(ref > 0.15);
	/* A peer below the run's own reference does not lower it; above it wins. */
	for (int i = 0; i < 8; i++)
		own[i] = w[i].tpj;
	assert_float_equal(rp_reference_tpj(0.01, own, 8), ref, 1e-12);
	for (int i = 0; i < 8; i++)
		own[i] = w[i].tpj;
	assert_float_equal(rp_reference_tpj(0.5, own, 8), 0.5, 0);
	double total_e = 0, total_t = 0;
	for (int i = 0; i < 8; i++) {
		w[i].cost_j = rp_window_cost_j(w[i].energy_j, w[i].tokens, ref);
		total_e += w[i].energy_j;
		total_t += w[i].tokens;
	}
	struct rp_rank r[RP_C_N];
	size_t n = rp_rank_classes(w, 8, total_t, total_e, r, RP_C_N);
	assert_int_equal(n, 3);
	assert_int_equal(r[0].cls, RP_C_MEMORY);
	assert_int_equal(r[0].windows, 6);
	assert_true(r[0].cost_j > 0);
	assert_float_equal(r[0].share_of_busy, 60000.0 / 79000.0, 1e-12);
	assert_float_equal(r[0].energy_j, 60000, 1e-9);
	assert_int_equal(rp_run_class(r, n, 0), RP_C_MEMORY);
	/* By energy share: compute (10000 J) before host (9000 J) although the
	 * host window is the run's most efficient. */
	assert_int_equal(r[1].cls, RP_C_COMPUTE);
	assert_int_equal(r[2].cls, RP_C_HOST);
}

static void evidence_name_strings(void **state)
{
	assert_string_equal(rp_evidence_name(RP_EV_SIMULATED), "simulated");
	assert_string_equal(rp_evidence_name(RP_EV_DRY_RUN), "live dry-run");
	assert_string_equal(rp_evidence_name(RP_EV_GOVERNED), "live governed");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spread_of),
		cmocka_unit_test(simulation_caps_go),
		cmocka_unit_test(nogo_stays_nogo),
		cmocka_unit_test(gain_against_spread),
		cmocka_unit_test(merge_seed_blockers),
		cmocka_unit_test(majority_class_has_cost),
		cmocka_unit_test(evidence_name_strings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
