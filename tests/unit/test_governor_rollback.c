/* Rollback manager: what counts as a change, each trigger, last known good,
 * hold with back-off and recovery (docs/rollback.md). Time steps of 1 s,
 * SLA windows of 10 s, canary 60 s. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "governor/loop/rollback.h"

static const struct hal_limits lim = {
	.clk_min_khz = 345000, .clk_max_khz = 1980000, .clk_step_khz = 15000,
	.clk_default_max_khz = 1980000, .power_limit_min_mw = 200000,
	.power_limit_max_mw = 700000, .power_limit_default_mw = 700000,
};

static struct gov_opoint unlocked(void)
{
	struct gov_opoint o = { .clk_locked = false, .clk_min_khz = 345000, .clk_max_khz = 1980000,
				.power_limit_mw = 700000, .n_slices = 2 };
	return o;
}

static struct gov_opoint locked(uint32_t hi_mhz)
{
	struct gov_opoint o = unlocked();
	o.clk_locked = true;
	o.clk_max_khz = hi_mhz * 1000;
	return o;
}

struct fx {
	struct policy pol;
	struct rollback rb;
	struct gov_estimates est;
	struct gov_opoint cur;
	uint64_t t_ms;
	uint64_t clamp, faults;
	bool safety;
	uint32_t slow_below_khz; /* set: TTFT misses while the clock cap is under it */
	bool heat_cut;           /* the controller's point is its thermal cut (binding ceiling) */
	/* last step */
	uint32_t reasons;
	enum gov_binding binding;
	bool override;
};

static void fx_init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	policy_defaults(&f->pol);
	f->pol.sla.window_s = 10;
	f->pol.sla.latency_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 1000;
	f->pol.rollback.sla_violated_windows = 2;
	f->pol.rollback.sla_of_windows = 3;
	f->pol.rollback.canary_s = 60;
	f->pol.rollback.hold_s = 30;
	f->pol.rollback.backoff_factor = 2;
	f->pol.rollback.max_hold_s = 100;
	f->pol.rollback.lkg_min_clean_windows = 2;
	f->est.serving_ok = true;
	f->est.window_requests = 100;
	f->est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 500;
	f->est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P95)] = f->est.quantile_ms[SLA_INDEX(SLA_TBT, SLA_P95)] = f->est.quantile_ms[SLA_INDEX(SLA_TBT, SLA_P99)] = NAN;
	f->est.quantile_ms[SLA_INDEX(SLA_E2E, SLA_P95)] = f->est.quantile_ms[SLA_INDEX(SLA_E2E, SLA_P99)] = NAN;
	f->est.n_slices = 2;
	for (int s = 0; s < 2; s++)
		f->est.q_drop_upper[s] = 1; /* the estimator's value without samples */
	f->cur = unlocked();
}

/* firmware-default fallback unless the test sets another */
static void fx_start(struct fx *f, const struct gov_opoint *fallback)
{
	struct rb_cfg c = { .pol = &f->pol, .lim = &lim, .n_slices = 2,
			    .max_drop = { 0.01, 0.01 }, .min_samples = { 100, 100 } };
	c.fallback = fallback ? *fallback : unlocked();
	c.safe = unlocked(); /* a safe point that limits nothing, unless a test sets one */
	c.safe.power_limit_mw = 0;
	assert_int_equal(rollback_init(&f->rb, &c), 0);
}

/* One period at t: the controller wants `want`; what comes out is applied
 * (no guard here) and time moves on 1 s. */
static struct gov_opoint step(struct fx *f, const struct gov_opoint *want)
{
	struct gov_opoint w = *want;
	if (f->slow_below_khz)
		f->est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = f->cur.clk_locked && f->cur.clk_max_khz < f->slow_below_khz ? 2000
											 : 500;
	struct rb_input in = { .t_ms = f->t_ms, .est = &f->est, .cur = &f->cur,
			       .safety = f->safety, .clamp_events = f->clamp,
			       .fault_onsets = f->faults };
	f->reasons = 0;
	f->binding = f->heat_cut ? GOV_B_CEILING : GOV_B_SLA;
	f->override = rollback_step(&f->rb, &in, &w, &f->reasons, &f->binding);
	f->cur = w;
	f->t_ms += 1000;
	return w;
}

/* Steps until t (exclusive) with the same wish; ORs the reasons seen. */
static uint32_t run_until(struct fx *f, uint64_t t_ms, const struct gov_opoint *want)
{
	uint32_t all = 0;
	while (f->t_ms < t_ms) {
		step(f, want);
		all |= f->reasons;
	}
	return all;
}

static void test_hold_maths(void **state)
{
	(void)state;
	struct policy_rollback r = { .hold_s = 30, .backoff_factor = 2, .max_hold_s = 100 };
	assert_true(rollback_hold_s(&r, 1) == 30);
	assert_true(rollback_hold_s(&r, 2) == 60);
	assert_true(rollback_hold_s(&r, 3) == 100);
	assert_true(rollback_hold_s(&r, 200) == 100);
	r.backoff_factor = 1;
	assert_true(rollback_hold_s(&r, 5) == 30);
	assert_string_equal(rollback_state_name(RB_HOLD), "hold");
}

static void test_sla_met(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	assert_true(rollback_sla_met(&f.pol, &f.est));
	f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 1001;
	assert_false(rollback_sla_met(&f.pol, &f.est));
	f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = NAN; /* no TTFT in the window: not judged */
	assert_true(rollback_sla_met(&f.pol, &f.est));
	f.pol.sla.latency_ms[SLA_INDEX(SLA_TBT, SLA_P95)] = 50;
	f.est.quantile_ms[SLA_INDEX(SLA_TBT, SLA_P95)] = 60; /* p95 target judged against the p95 estimate */
	f.est.quantile_ms[SLA_INDEX(SLA_TBT, SLA_P99)] = 40;
	assert_false(rollback_sla_met(&f.pol, &f.est));
	f.est.quantile_ms[SLA_INDEX(SLA_TBT, SLA_P95)] = 45;
	assert_true(rollback_sla_met(&f.pol, &f.est));
	f.pol.sla.min_tokens_per_s = 1000;
	f.est.tokens_per_s = 500;
	assert_true(rollback_sla_met(&f.pol, &f.est)); /* nothing waits */
	f.est.queue_len = 3;
	assert_false(rollback_sla_met(&f.pol, &f.est));
}

static void test_what_is_a_change(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	fx_start(&f, NULL);
	struct gov_opoint w = locked(1900); /* -4 %: inside the tolerance */
	run_until(&f, 5000, &w);
	assert_int_equal(f.rb.state, RB_NORMAL);
	assert_int_equal(f.rb.canaries, 0);
	w = locked(1850); /* -6.6 % from the 1980 reference: the creep adds up */
	run_until(&f, 7000, &w);
	assert_int_equal(f.rb.state, RB_CANARY);
	assert_true(f.reasons & GOV_R_CANARY);
	assert_int_equal(f.rb.armed, GOV_T_SLA | GOV_T_QUALITY | GOV_T_THERMAL | GOV_T_TELEMETRY);
	assert_false(f.override);
	assert_int_equal(f.rb.canaries, 1);
	/* Toward safety restarts nothing; the canary runs out 60 s after its
	 * last change and the change passed. */
	w = unlocked();
	run_until(&f, 66000, &w);
	assert_int_equal(f.rb.state, RB_CANARY);
	run_until(&f, 67000, &w);
	assert_int_equal(f.rb.state, RB_NORMAL);
	assert_int_equal(f.rb.armed, GOV_T_SLA | GOV_T_QUALITY | GOV_T_THERMAL | GOV_T_TELEMETRY);
	run_until(&f, 68000, &w); /* armed until the last canary period was judged */
	assert_int_equal(f.rb.armed, 0);
	assert_false(f.reasons & GOV_R_CANARY);
	/* power limit down */
	w.power_limit_mw = 600000;
	run_until(&f, 70000, &w);
	assert_int_equal(f.rb.canaries, 2);
	/* precision mix, either way, restarts the canary */
	uint64_t end = f.rb.canary_end_ms;
	w.int8_frac[1] = 0.25;
	run_until(&f, 80000, &w);
	assert_int_equal(f.rb.canaries, 2); /* restarted, not a new one */
	assert_true(f.rb.canary_end_ms > end);
	assert_int_equal(f.rb.canary_end_ms, 71000 + 60000);
	/* a safety move (guard safe point) is not canaried */
	f.safety = true;
	w = locked(1000);
	w.power_limit_mw = 300000;
	run_until(&f, 200000, &w);
	assert_int_equal(f.rb.state, RB_NORMAL);
	assert_int_equal(f.rb.canaries, 2);
	assert_int_equal(f.rb.rollbacks, 0);
}

static void test_sla_rollback_backoff_recover(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	fx_start(&f, NULL);
	struct gov_opoint bad = locked(1500);
	f.slow_below_khz = 1600000; /* the bad point misses, the fallback meets */
	/* t=0 applies it, t=1 sees it: canary; windows close at 10 and 20 */
	run_until(&f, 20000, &bad);
	assert_int_equal(f.rb.state, RB_CANARY);
	assert_int_equal(f.rb.rollbacks, 0);
	struct gov_opoint got = step(&f, &bad); /* t=20: 2 of the last 3 missed */
	assert_true(f.reasons & GOV_R_ROLLBACK);
	assert_true(f.override);
	assert_int_equal(f.binding, GOV_B_ROLLBACK);
	assert_int_equal(f.rb.fired, GOV_T_SLA);
	assert_int_equal(f.rb.rollbacks, 1);
	assert_int_equal(f.rb.rollbacks_by[0], 1);
	assert_false(f.rb.have_lkg);
	struct gov_opoint fb = unlocked();
	assert_true(gov_opoint_equal(&got, &fb)); /* no LKG yet: the fallback */
	assert_true(rollback_hold_left_s(&f.rb, 20000) == 30);
	/* held 30 s */
	uint32_t seen = run_until(&f, 50000, &bad);
	assert_true(seen & GOV_R_ROLLBACK_HOLD);
	assert_false(seen & (GOV_R_CANARY | GOV_R_ROLLBACK_RECOVER));
	assert_true(gov_opoint_equal(&f.cur, &fb));
	assert_int_equal(f.rb.armed, 0); /* nothing armed while holding */
	got = step(&f, &bad); /* t=50: recover, the controller's point goes through */
	assert_true(f.reasons & GOV_R_ROLLBACK_RECOVER);
	assert_false(f.override);
	assert_true(gov_opoint_equal(&got, &bad));
	assert_int_equal(f.rb.recoveries, 1);
	/* its return is canaried again; windows at 60 and 70 miss: k = 2, 60 s */
	run_until(&f, 70000, &bad);
	assert_int_equal(f.rb.state, RB_CANARY);
	step(&f, &bad);
	assert_int_equal(f.rb.rollbacks, 2);
	assert_true(rollback_hold_left_s(&f.rb, 70000) == 60);
	run_until(&f, 130000, &bad);
	assert_int_equal(f.rb.state, RB_HOLD);
	run_until(&f, 151000, &bad); /* recover 130, canary 131, windows 140, 150 */
	assert_int_equal(f.rb.rollbacks, 3);
	assert_true(rollback_hold_left_s(&f.rb, 150000) == 100); /* 120 capped */
	/* a canary that passes resets the back-off */
	f.slow_below_khz = 0;
	f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 500;
	run_until(&f, 260000, &bad);
	assert_int_equal(f.rb.state, RB_CANARY);
	run_until(&f, 320000, &bad);
	assert_int_equal(f.rb.state, RB_NORMAL);
	assert_int_equal(f.rb.consecutive, 0);
	assert_int_equal(f.rb.recoveries, 3);
}

static void test_lkg(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	struct gov_opoint safe = locked(1000);
	fx_start(&f, &safe);
	struct gov_opoint good = locked(1800), bad = locked(1500), late = locked(1700);
	f.cur = good;
	run_until(&f, 20000, &good); /* window at 10 clean */
	assert_false(f.rb.have_lkg);
	step(&f, &good); /* window at 20: second clean one */
	assert_true(f.rb.have_lkg);
	assert_true(gov_opoint_equal(&f.rb.lkg, &good));
	/* windows with no requests are skipped, not missed */
	f.est.window_requests = 0;
	run_until(&f, 31000, &good);
	assert_int_equal(f.rb.windows_judged, 2);
	f.est.window_requests = 100;
	/* a change at 39 s: the clean window closing at 40 vouches for the point
	 * that began it, not for the one applied a second ago */
	run_until(&f, 39000, &good);
	run_until(&f, 41000, &late);
	assert_int_equal(f.rb.state, RB_CANARY);
	assert_true(gov_opoint_equal(&f.rb.lkg, &good));
	/* it served the whole clean window 40..50: now it is good */
	run_until(&f, 51000, &late);
	assert_true(gov_opoint_equal(&f.rb.lkg, &late));
	/* the bad step misses from the start and never qualifies */
	f.slow_below_khz = 1600000;
	run_until(&f, 70000, &bad);
	struct gov_opoint got = step(&f, &bad); /* misses at 60, 70 */
	assert_int_equal(f.rb.fired, GOV_T_SLA);
	assert_true(gov_opoint_equal(&got, &late)); /* back to LKG, not the fallback */
	assert_int_equal(f.rb.clean_windows, 0);
	/* clean windows during the hold make the held point LKG again */
	run_until(&f, 91000, &bad);
	assert_int_equal(f.rb.state, RB_HOLD);
	assert_true(gov_opoint_equal(&f.rb.lkg, &late));
}

static void test_quality(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	fx_start(&f, NULL);
	struct gov_opoint lkg = locked(1800);
	lkg.int8_frac[0] = 0.3;
	f.cur = lkg;
	f.est.q_samples[0] = 500;
	f.est.q_drop_upper[0] = 0.008;
	run_until(&f, 21000, &lkg);
	assert_true(f.rb.have_lkg);
	struct gov_opoint more = lkg;
	more.int8_frac[0] = 0.6;
	more.int8_frac[1] = 0.5;
	run_until(&f, 23000, &more);
	assert_int_equal(f.rb.state, RB_CANARY);
	/* slice 1: INT8 served but too few samples for the bound to mean much */
	f.est.q_samples[1] = 50;
	f.est.q_drop_upper[1] = 0.2;
	run_until(&f, 25000, &more);
	assert_int_equal(f.rb.rollbacks, 0);
	/* slice 0 regresses */
	f.est.q_drop_upper[0] = 0.02;
	struct gov_opoint got = step(&f, &more);
	assert_int_equal(f.rb.fired, GOV_T_QUALITY);
	assert_int_equal(f.rb.rollbacks_by[1], 1);
	assert_true(got.int8_frac[0] == 0); /* BF16 on the breached slice, in LKG too */
	assert_true(f.rb.lkg.int8_frac[0] == 0);
	assert_true(got.int8_frac[1] == 0); /* LKG's own share */
	assert_int_equal(got.clk_max_khz, 1800000);
	/* a BF16 slice over its threshold is no breach */
	struct fx g;
	fx_init(&g);
	fx_start(&g, NULL);
	struct gov_opoint w = locked(1500);
	g.est.q_samples[0] = 500;
	g.est.q_drop_upper[0] = 0.5;
	run_until(&g, 30000, &w);
	assert_int_equal(g.rb.state, RB_CANARY);
	assert_int_equal(g.rb.rollbacks, 0);
}

static void test_thermal_and_telemetry(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	fx_start(&f, NULL);
	struct gov_opoint w = unlocked();
	/* outside a canary nothing is armed: clamps and faults do not count */
	f.clamp = 5;
	f.faults = 10;
	run_until(&f, 5000, &w);
	assert_int_equal(f.rb.rollbacks, 0);
	w = locked(1500);
	run_until(&f, 7000, &w); /* canary from 6 */
	f.faults = 12; /* two onsets: under 3 */
	run_until(&f, 9000, &w);
	assert_int_equal(f.rb.rollbacks, 0);
	f.faults = 13;
	step(&f, &w);
	assert_int_equal(f.rb.fired, GOV_T_TELEMETRY);

	fx_init(&f);
	fx_start(&f, NULL);
	w = locked(1500);
	f.clamp = 5;
	run_until(&f, 3000, &w);
	assert_int_equal(f.rb.state, RB_CANARY);
	f.clamp = 6; /* one slowdown entry in the canary (policy default 1) */
	step(&f, &w);
	assert_int_equal(f.rb.fired, GOV_T_THERMAL);
	assert_int_equal(f.rb.rollbacks_by[2], 1);
}

/* The change applied in the period before the canary saw it counts: its
 * clamp shows at the next sample. */
static void test_clamp_right_after_change(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	fx_start(&f, NULL);
	struct gov_opoint w = locked(1500);
	step(&f, &w); /* applied at t=0 */
	f.clamp = 1;  /* seen at t=1, where the canary starts */
	step(&f, &w);
	assert_int_equal(f.rb.fired, GOV_T_THERMAL);
}

/* Only a regression is blamed on a change: windows already missing before
 * it do not roll it back. */
static void test_sla_needs_regression(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	fx_start(&f, NULL);
	struct gov_opoint w = unlocked();
	f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 2000;
	run_until(&f, 31000, &w); /* misses at 10, 20, 30 */
	w = locked(1500);
	run_until(&f, 90000, &w);
	assert_int_equal(f.rb.canaries, 1);
	assert_int_equal(f.rb.pre_misses, 3); /* of the last 3 */
	assert_int_equal(f.rb.rollbacks, 0);
	assert_int_equal(f.rb.windows_missed, 8);
}

/* Windows missed that held at least half of their waiting (requests
 * waiting summed over periods) at the max clock cap (or at the
 * controller's thermal cut, which a hold keeps) are overload: no rollback
 * has more clock to give, so the SLA trigger does not blame the change.
 * Under that share they count. */
static void test_sla_overload_not_blamed(void **state)
{
	(void)state;
	const struct gov_opoint base = locked(1500), max = locked(1980);
	for (int at_max = 3; at_max <= 6; at_max += 3) {
		struct fx f;
		fx_init(&f);
		fx_start(&f, NULL);
		f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 2000; /* every window misses */
		f.est.queue_len = 20;
		/* a surge controller: at_max of every 10 periods at the max,
		 * the rest at its base (each fall back a change) */
		while (f.t_ms < 60000 && f.rb.rollbacks == 0)
			step(&f, (f.t_ms / 1000) % 10 < (uint64_t)at_max ? &max : &base);
		if (at_max < 5) {
			assert_int_equal(f.rb.rollbacks, 1); /* 3 of 10 at the max: blamed */
			assert_int_equal(f.rb.fired, GOV_T_SLA);
			assert_int_equal(f.rb.windows_overload, 0);
		} else {
			assert_int_equal(f.rb.rollbacks, 0);
			assert_true(f.rb.canaries >= 1);
			assert_int_equal(f.rb.windows_missed, 5); /* closed at 10 .. 50 s */
			assert_int_equal(f.rb.windows_overload, 5);
		}
	}
	/* weighted by the queue: 3 of 10 periods at the max with 20 waiting,
	 * the other 7 at the base with 2 waiting (a burst the surge rule
	 * served, its tail at the base): 60 of 74 waiting at the max, not
	 * blamed; the same periods with the queues swapped are the base's */
	for (int swap = 0; swap <= 1; swap++) {
		struct fx f;
		fx_init(&f);
		fx_start(&f, NULL);
		f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 2000;
		while (f.t_ms < 60000 && f.rb.rollbacks == 0) {
			bool burst = (f.t_ms / 1000) % 10 < 3;
			f.est.queue_len = burst != (swap == 1) ? 20 : 2;
			step(&f, burst ? &max : &base);
		}
		assert_int_equal(f.rb.rollbacks, swap ? 1 : 0);
		assert_int_equal(f.rb.windows_overload, swap ? 0 : 5);
	}
	/* at the controller's thermal cut, far under the max: not blamed */
	struct fx f;
	fx_init(&f);
	fx_start(&f, NULL);
	f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 2000;
	f.est.queue_len = 20;
	f.heat_cut = true;
	run_until(&f, 41000, &base);
	assert_int_equal(f.rb.state, RB_CANARY);
	assert_int_equal(f.rb.rollbacks, 0);
	assert_int_equal(f.rb.windows_overload, 4);
	/* the cut lifts inside the canary: the same misses are the base's */
	f.heat_cut = false;
	run_until(&f, 61000, &base);
	assert_int_equal(f.rb.rollbacks, 1);
	assert_int_equal(f.rb.windows_overload, 4);
	/* with nothing waiting nothing is overload, at any clock */
	fx_init(&f);
	fx_start(&f, NULL);
	f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 2000;
	run_until(&f, 60000, &base);
	assert_int_equal(f.rb.rollbacks, 1);
	assert_int_equal(f.rb.windows_overload, 0);
}

/* A thermal rollback never raises the clock cap or the power limit. */
static void test_thermal_no_hotter(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	fx_start(&f, NULL); /* fallback: unlocked, 700 W */
	struct gov_opoint w = locked(1500);
	w.power_limit_mw = 500000;
	w.int8_frac[0] = 0.5;
	run_until(&f, 3000, &w);
	f.clamp = 1;
	struct gov_opoint got = step(&f, &w);
	assert_int_equal(f.rb.fired, GOV_T_THERMAL);
	assert_true(got.clk_locked);
	assert_int_equal(got.clk_max_khz, 1500000);
	assert_int_equal(got.power_limit_mw, 500000);
	assert_true(got.int8_frac[0] == 0); /* the rest of the change is undone */

	/* and not above the policy's safe point either */
	fx_init(&f);
	struct rb_cfg c = { .pol = &f.pol, .lim = &lim, .n_slices = 2, .fallback = unlocked(),
			    .safe = locked(1200), .max_drop = { 0.01, 0.01 } };
	c.safe.power_limit_mw = 450000;
	assert_int_equal(rollback_init(&f.rb, &c), 0);
	w = locked(1980);
	w.int8_frac[1] = 1;
	run_until(&f, 3000, &w);
	f.clamp = 2;
	got = step(&f, &w);
	assert_int_equal(f.rb.fired, GOV_T_THERMAL);
	assert_int_equal(got.clk_max_khz, 1200000);
	assert_int_equal(got.power_limit_mw, 450000);
}

/* An SLA rollback to a slow fallback keeps the clocks that missed; a
 * thermal trigger firing with it wins. */
static void test_sla_no_slower(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	struct gov_opoint safe = locked(1000);
	safe.power_limit_mw = 300000;
	fx_start(&f, &safe);
	struct gov_opoint w = locked(1500);
	w.power_limit_mw = 500000;
	w.int8_frac[0] = 0.5;
	f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 2000;
	run_until(&f, 20000, &w);
	struct gov_opoint got = step(&f, &w);
	assert_int_equal(f.rb.fired, GOV_T_SLA);
	assert_int_equal(got.clk_max_khz, 1500000);
	assert_int_equal(got.power_limit_mw, 500000);
	assert_true(got.int8_frac[0] == 0);

	fx_init(&f);
	fx_start(&f, &safe);
	f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 2000;
	run_until(&f, 20000, &w);
	f.clamp = 1;
	got = step(&f, &w);
	assert_int_equal(f.rb.fired, GOV_T_SLA | GOV_T_THERMAL);
	assert_int_equal(f.rb.rollbacks, 1);
	assert_int_equal(f.rb.rollbacks_by[0] + f.rb.rollbacks_by[2], 2);
	assert_int_equal(got.clk_max_khz, 1500000); /* no hotter than what clamped */
}

/* During a hold the controller's thermal cuts still go through. */
static void test_hold_lets_thermal_cuts_through(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	fx_start(&f, NULL); /* fallback: unlocked, 700 W */
	struct gov_opoint w = locked(1500);
	f.slow_below_khz = 1600000;
	run_until(&f, 21000, &w);
	assert_int_equal(f.rb.state, RB_HOLD);
	struct gov_opoint cut = locked(1200);
	cut.power_limit_mw = 400000;
	struct gov_opoint got = cut;
	struct rb_input in = { .t_ms = f.t_ms, .est = &f.est, .cur = &f.cur };
	uint32_t reasons = 0;
	enum gov_binding b = GOV_B_CEILING;
	assert_true(rollback_step(&f.rb, &in, &got, &reasons, &b));
	assert_int_equal(got.clk_max_khz, 1200000);
	assert_int_equal(got.power_limit_mw, 400000);
	assert_int_equal(b, GOV_B_CEILING);
	assert_true(reasons & GOV_R_ROLLBACK_HOLD);
	/* any other binding: the held point as it is */
	got = cut;
	b = GOV_B_SLA;
	assert_true(rollback_step(&f.rb, &in, &got, &reasons, &b));
	assert_false(got.clk_locked);
	assert_int_equal(got.power_limit_mw, 700000);
	assert_int_equal(b, GOV_B_ROLLBACK);
}

static void test_all_off_is_inert(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	f.pol.rollback.sla_violated_windows = 0;
	f.pol.rollback.quality_breach = false;
	f.pol.rollback.thermal_clamp_events = 0;
	f.pol.rollback.telemetry_faults = 0;
	fx_start(&f, NULL);
	f.est.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)] = 5000;
	struct gov_opoint w = locked(500);
	uint32_t seen = run_until(&f, 100000, &w);
	f.clamp = 10;
	f.faults = 10;
	seen |= run_until(&f, 200000, &w);
	assert_int_equal(seen, 0);
	assert_int_equal(f.rb.state, RB_NORMAL);
	assert_int_equal(f.rb.rollbacks, 0);
	assert_int_equal(f.rb.armed, 0);
}

/* During a hold, a slice whose quality gate has closed gets no more INT8
 * than the controller gives it (the LKG predates the regression); an open
 * gate keeps the LKG's share. */
static void test_hold_respects_closed_gate(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	fx_start(&f, NULL);
	struct gov_opoint lkg = locked(1800);
	lkg.int8_frac[0] = 0.5;
	lkg.int8_frac[1] = 0.5;
	f.est.q_gate_open[0] = f.est.q_gate_open[1] = true;
	f.cur = lkg;
	run_until(&f, 21000, &lkg);
	assert_true(f.rb.have_lkg);
	struct gov_opoint bad = lkg;
	bad.clk_max_khz = 1200000;
	f.slow_below_khz = 1600000;
	run_until(&f, 60000, &bad);
	assert_int_equal(f.rb.state, RB_HOLD);
	assert_true(f.cur.int8_frac[0] == 0.5 && f.cur.int8_frac[1] == 0.5);
	/* slice 0's gate closes mid-hold: the controller moves it to BF16 */
	f.est.q_gate_open[0] = false;
	struct gov_opoint want = bad;
	want.int8_frac[0] = 0;
	struct gov_opoint got = step(&f, &want);
	assert_true(f.override);
	assert_int_equal(f.rb.state, RB_HOLD);
	assert_true(got.int8_frac[0] == 0);
	assert_true(got.int8_frac[1] == 0.5);
	assert_int_equal(got.clk_max_khz, 1800000); /* the LKG's clock still */
}

/* A clamp counter that restarts (device re-initialised) during a canary:
 * its new counts are events inside the canary. */
static void test_counter_restart_in_canary(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f);
	fx_start(&f, NULL);
	f.pol.rollback.thermal_clamp_events = 2;
	fx_start(&f, NULL);
	struct gov_opoint w = locked(1500);
	f.clamp = 50;
	run_until(&f, 3000, &w);
	assert_int_equal(f.rb.state, RB_CANARY);
	f.clamp = 1; /* restarted, one entry since */
	step(&f, &w);
	assert_int_equal(f.rb.rollbacks, 0);
	f.clamp = 2;
	step(&f, &w);
	assert_int_equal(f.rb.fired, GOV_T_THERMAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold_maths),
		cmocka_unit_test(test_sla_met),
		cmocka_unit_test(test_what_is_a_change),
		cmocka_unit_test(test_sla_rollback_backoff_recover),
		cmocka_unit_test(test_lkg),
		cmocka_unit_test(test_quality),
		cmocka_unit_test(test_thermal_and_telemetry),
		cmocka_unit_test(test_clamp_right_after_change),
		cmocka_unit_test(test_sla_needs_regression),
		cmocka_unit_test(test_sla_overload_not_blamed),
		cmocka_unit_test(test_thermal_no_hotter),
		cmocka_unit_test(test_sla_no_slower),
		cmocka_unit_test(test_hold_lets_thermal_cuts_through),
		cmocka_unit_test(test_all_off_is_inert),
		cmocka_unit_test(test_hold_respects_closed_gate),
		cmocka_unit_test(test_counter_restart_in_canary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
