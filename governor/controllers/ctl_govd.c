/* govd: the closed-loop controller (design and rejected alternatives:
 * docs/govd-controller.md). Three loops, each pure maths on the estimates:
 *
 *  - latency: the lowest clock whose short-window p95/p99 stay inside a dead
 *    band under every SLA target (multiplicative raise proportional to the
 *    excess, slow decay below the band, a jump to the max clock on a queue
 *    surge), never under a load floor learned from recent bursts' TBT;
 *  - thermal: a power limit from a heatsink estimate (junction minus
 *    R_fast x power), extrapolated horizon_s ahead, so the junction settles
 *    under the ceiling minus the margin;
 *  - precision: INT8 on a slice while the estimator's quality gate is open
 *    (prior + shadow evidence, upper bound under max_drop, no regression
 *    alarm); mixed precision pays both engines' weights per cycle, so when
 *    the mix's TBT at the max clock stays over the band and BF16 did no
 *    worse, the controller serves BF16 for a hold with back-off.
 *
 * The shipped policies take the clock from the window search instead of the
 * latency loop (param search; ctl_govd_search.c): a base per load class,
 * moved when an SLA window closes.
 *
 * slo-dvfs (the DVFS-only peer, throttLL'eM / GreenLLM style) is the latency
 * loop alone: BF16, no thermal prediction, firmware power limit. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sla.h"
#include "governor/controllers/ctl_govd_search.h"
#include "governor/controllers/ctl_internal.h"
#include "governor/controllers/govd_predict.h"

/* The latency loop's parameters, shared by govd and slo-dvfs. */
#define LATENCY_PARAMS                                                                         \
	{ "slack_low", 0.1, 1.0, 0.6, "below this share of every SLA target the clock decays" },  \
	{ "slack_high", 0.2, 1.0, 0.8, "above this share of any SLA target the clock rises" },    \
	{ "raise_gain", 0.1, 10.0, 1.5, "clock raise per unit of excess over slack_high" },       \
	{ "lower_pct_per_s", 0.1, 50.0, 1.5, "clock decay in % per second while under slack_low" }, \
	{ "surge_queue", 1, 100000, 8, "waiting requests that send the clock to max at once" },   \
	{ "peak_memory_s", 1, 86400, 600,                                                     \
	  "time constant of the remembered TBT peak (load floor)" },                          \
	{ "lower_min_requests", 0, 100000, 5,                                                 \
	  "requests completed in the short window before the clock may decay" },             \
	{ "tbt_exponent", 0.0, 1.5, 0.8,                                                      \
	  "TBT ~ clock^-x, to scale the TBT seen now to the max clock" },                     \
	{ "idle_mhz", 0, 100000, NAN,                                                         \
	  "clock while nothing runs or waits (default: hold the last busy clock)" },          \
	{ "floor_mhz", 0, 100000, NAN, "lowest clock the latency loop uses (default: policy min)" }

static const struct ctl_param ctl_govd_params[] = {
	LATENCY_PARAMS,
	{ "horizon_s", 1, 600, 30, "heatsink extrapolation horizon" },
	{ "r_fast_c_per_w", 0.001, 1, 0.025,
	  "junction-to-heatsink resistance (H200/H100 SXM: 0.025; measure with a power step)" },
	{ "thermal_margin_c", 0, 20, 1.0, "kept between the predicted junction and the ceiling" },
	{ "junction_lag_s", 0, 60, 0,
	  "> 0: the heatsink is estimated from the power lagged by this time constant (the "
	  "junction follows a power step over seconds; without it a rising burst reads as a "
	  "cooler heatsink and lifts the limit); 0: the power as filtered" },
	{ "thermal_floor_share", 0, 1, 0,
	  "> 0: the heatsink's predicted rise cuts the power limit to no less than this share "
	  "of the power cap; under it only the junction as it is now does (a burst's heat is "
	  "spent at the knee clock, not answered before it comes with a clock the SLA misses at); "
	  "0: the prediction alone" },
	{ "sat_hold_s", 0, 3600, 120, "BF16 hold after mixed precision saturated at max clock" },
	{ "sat_s", 0.5, 600, 5, "mix over slack_high at the max clock this long: BF16" },
	{ "predict", 0, 1, 1, "1: the clock from the online model (least predicted power meeting "
			      "the tails); 0: the creeping latency loop alone" },
	{ "predict_margin", 0.2, 1.0, 0.8, "predicted TTFT/TBT p99 kept under this share of the target" },
	{ "predict_sigmas", 0, 5, 1.5, "residual standard deviations (log) added to a prediction" },
	{ "util_max", 0.1, 1.0, 0.9, "busy share a lower clock may cause at most" },
	{ "power_spread_mhz", 0, 2000, 300,
	  "clocks seen over this span before the power model chooses (else the lowest feasible)" },
	{ "predict_floor", 0, 1, 1, "1: never under the load floor (remembered TBT peak)" },
	{ "search", 0, 1, 0,
	  "1: a base clock searched window by window on the judged SLA window's tail "
	  "(lowered while it is under search_low, raised over search_high), instead of the model" },
	{ "search_low", 0.1, 1.0, 0.8, "window tail / target under which the base clock steps down" },
	{ "search_high", 0.1, 1.0, 0.93, "window tail / target over which the base clock steps up" },
	{ "search_down_mhz", 0, 1000, 45, "step down per quiet window" },
	{ "search_up_mhz", 0, 1000, 90, "step up per window over search_high" },
	{ "search_short_s", 0, 600, 0,
	  "seconds between two raises on the short window's tail inside a window (0: every period)" },
	{ "search_memory", 0, 100, 0,
	  "windows a clock that failed stays barred from the descent (0: none)" },
	{ "search_overload", 0, 100, 0,
	  "> 0: a tail over this share of its target made while the queue surged raises no "
	  "base (overload no clock meets; the surge rule answers it); 0: every tail raises" },
	{ "search_start_mhz", 0, 5000, 0, "the base clock at start (0: the max clock)" },
	{ "search_per_mode", 0, 1, 0,
	  "1: one base clock per precision mode (BF16, low precision on some slice): a mode "
	  "runs at its own searched clock, and a window in which the mode changed moves none" },
	{ "search_thermal", 0, 1, 0,
	  "1: a window in which the thermal loop held the power limit closes a step down and "
	  "raises nothing (under a thermal limit a lower clock does more work per joule of heat)" },
	{ "search_idle_hot_s", 0, 86400, 0,
	  "> 0: idle periods take idle_mhz only within this many seconds of the thermal limit "
	  "binding and hold the base clock otherwise (a low idle clock cools a hot device but "
	  "meets a cool one's next burst slow); 0: idle_mhz always" },
	{ "search_heavy_running", 0, 100000, 0,
	  "> 0: two base clocks, by load: periods with at least this many requests running or "
	  "waiting run at the heavy base, others at the light one; a window closing moves the "
	  "heavy base if search_heavy_share of its busy periods were heavy, else the light one; "
	  "the heavy base never sits under the light one. 0: one base" },
	{ "search_heavy_start_mhz", 0, 5000, 0,
	  "the heavy base at start, when over search_start_mhz (0: the same base)" },
	{ "search_heavy_share", 0, 1, 0.35, "share of a window's busy periods that makes it heavy" },
	{ "search_heavy_hot_s", 0, 86400, 900,
	  "within this many seconds of the thermal limit binding every period takes the light "
	  "base (a higher clock under heat spends the heat the next burst needs)" },
	{ "search_surge_release", -1, 100000, -1,
	  ">= 0: a queue surge (surge_queue) keeps the max clock until the queue falls to this "
	  "many waiting requests, unless the thermal limit bound within search_heavy_hot_s (the "
	  "surge's heat is the next burst's); -1: a surge ends under surge_queue" },
	{ "search_risk_surge", 0, 100000, 0,
	  "> 0: once the run's missed windows pass the risk budget (search_risk_windows), "
	  "this many waiting requests send the clock to the max, unless the thermal limit "
	  "bound within search_heavy_hot_s (a burst's first waiting requests are its onset, "
	  "and a backlog built then is carried through the burst); 0: off" },
	{ "search_blame_wait", 0, 1, 0,
	  "1: a window that missed on its TTFT tail alone (TBT within search_high) moves the "
	  "base of the class whose periods held most of its waiting (requests waiting, summed "
	  "over the periods: the requests that missed waited there), whatever share of the "
	  "window was heavy (search_heavy_running); 0: the window's heavy share alone decides" },
	{ "search_down_requests", 0, 1e6, 0,
	  "a window steps the base down only when at least this many requests completed in the "
	  "SLA window (a near-idle window's tail says nothing about the next busy one)" },
	{ "search_thin_low", 0, 1, 0,
	  "> 0: busy windows with fewer requests than search_down_requests, in a row at one "
	  "base, each with its tail under this share of the target (and under search_low), pool "
	  "their requests; once the pool holds search_down_requests the base steps down, never "
	  "under the lowest base a full window has met (before one has, one step under the start "
	  "at most); 0: such windows move nothing" },
	{ "search_heavy_surge_share", 0, 1, 0,
	  "> 0: a window that moves the heavy base (search_heavy_running) and met the SLA with "
	  "its tail over search_low, while queue surges held the max clock in at least this "
	  "share of its busy periods, raises the heavy base a step (the max clock met it; the "
	  "base alone falls behind the load); 0: off" },
	{ "search_heavy_judge_share", 0, 0.01, 0,
	  "> 0: a window that moves the light base (search_heavy_running) and met the SLA steps "
	  "the heavy base down when its heavy periods held 2000 TBT samples or more, under this "
	  "share of them over the target (the heavy periods' own tail); 0: off" },
	{ "search_spike_unbarred", 0, 1, 0,
	  "1: a short-window raise on a spike of the TBT tail alone (the short TTFT tail within "
	  "its target), with no request waiting and the SLA window's tail under search_low, bars "
	  "nothing (search_memory): the next window closing under search_low may step back "
	  "down" },
	{ "search_miss_at_max", 0, 1, 0,
	  "1: a window missed with its base at the max clock (no clock the search could choose "
	  "kept it) spends no risk budget (search_risk_windows) and lifts its class's bar "
	  "(search_memory)" },
	{ "search_bar_lift", 0, 1, 0,
	  "> 0: a busy window closing with its tail under this share of the target (and under "
	  "the step-down threshold in force) lifts its class's bar (search_memory) before it moves "
	  "the base; 0: a bar lasts its search_memory windows" },
	{ "search_aftermath_s", 0, 120, 0,
	  "> 0: a light period's short-window raise is held while, over this many seconds back, "
	  "the waiting was overload (at least half of it, requests waiting summed over the "
	  "periods, at the max clock or a thermal cut) and light periods had requests waiting for at most "
	  "search_aftermath_wait_s: the tail is the burst's, not the light base's (with one base, "
	  "or under heat, every period is light); 0: off" },
	{ "search_aftermath_wait_s", 0, 120, 3,
	  "seconds of light periods with requests waiting that make a light raise the light "
	  "base's own (search_aftermath_s)" },
	{ "search_aftermath_share", 0, 1, 0,
	  "> 0: a light raise is the light base's own only when its periods also held more than "
	  "this share of the waiting over search_aftermath_s (requests waiting summed over the "
	  "periods, the overload judgement's weight): a queue of one or two that outlived the "
	  "burst at the light base leaves the tail the burst's; 0: the seconds alone decide" },
	{ "search_risk_windows", 0, 100000, 0,
	  "> 0: the risk budget: once the busy windows missed this run pass the policy's allowed "
	  "share (1 - sla.attainment, counted over at least this many windows), the step-down "
	  "threshold search_low shrinks by the square root of allowed / missed; 0: off" },
	{ "search_risk_calm", 0, 100000, 0,
	  "> 0: once this many busy windows in a row have met the SLA since the run's last miss, "
	  "a spent risk budget (search_risk_windows) no longer shrinks search_low nor sends a "
	  "waiting request to the max (search_risk_surge), until the next miss; 0: the whole "
	  "run's count decides" },
	{ "benefit", 0, 1, 0,
	  "1: low precision only where its learned energy per token beats BF16's at the running "
	  "batch, and on a ladder INT8 only where it beats FP8's (per batch range; "
	  "docs/govd-controller.md, \"The benefit learned\")" },
	{ "heat_prior", 0, 1, 0,
	  "1: while the thermal limit binds, a slice's first rung opens on its qualification prior "
	  "before quality.confirm_samples confirm it, and stays open until they do or a detector "
	  "drops the prior (docs/govd-controller.md, \"Under heat\")" },
	{ "benefit_margin", 0, 0.5, 0.02, "J/token low precision must save over BF16 to be served" },
	{ "benefit_tau_s", 5, 3600, 60, "time constant of the learned energy and tokens" },
	{ "benefit_min_s", 1, 3600, 60, "busy seconds of a mode in a batch range before it is judged" },
	{ "benefit_hold_s", 10, 3600, 300, "BF16 hold after low precision did not pay (doubles on repeat)" },
	{ "low_all_or_none", 0, 1, 0,
	  "1: low precision serves only while every slice's rung is open, so the BF16 engine never "
	  "shares the device with an 8-bit one (a partial mix streams both engines' weights and its "
	  "tail raises the clock it saves; docs/govd-controller.md, \"All or none\"); 0: each slice "
	  "on its own gate" },
	{ "int8_max_detect_s", 0, 1e7, NAN,
	  "INT8 on a slice only while the time its detectors need to catch a drift to 3x "
	  "max_drop (samples / its measured shadow-sample rate) is under this (default: no limit)" },
	{ NULL, 0, 0, 0, NULL },
};

static const struct ctl_param slo_params[] = {
	LATENCY_PARAMS,
	{ NULL, 0, 0, 0, NULL },
};

struct ctl_govd_state {
	bool peer; /* slo-dvfs: latency loop only */
	struct ctl_govd_tuning tun;
	uint32_t fmin_khz, fmax_khz, floor_khz, idle_khz;
	double f_khz;   /* latency loop's clock */
	struct ctl_govd_thermal th;

	double bf16_until_s;
	struct ctl_govd_mix mix;
	int cur_mode;          /* 0: BF16 everywhere, 1: INT8 on some slice */
	double tbt_peak[2];    /* decaying peak of TBT/target scaled to the max clock */
	bool was_bf16_hold;
	bool gate_was_open[HAL_MAX_SLICES];
	bool all_or_none;                /* low_all_or_none */
	uint8_t rung[HAL_MAX_SLICES]; /* the ladder's rung (enum hal_low_mode) while open */
	/* The ladder's INT8 rung learned against FP8 (benefit: 1): mode 0 the
	 * 8-bit shares all FP8, 1 some at INT8, -1 none served; int8_no_gain:
	 * INT8 does not pay over FP8 at this load, the slices stay on FP8. */
	struct ctl_govd_benefit rung_benefit;
	int rung_mode;
	bool int8_no_gain;
	/* heat_prior: the first rung open on the unconfirmed prior (latched
	 * from a thermally bound period until confirmed or dropped). */
	bool heat_prior_on;
	bool heat_prior[HAL_MAX_SLICES];
	bool predict, predict_floor;
	/* Window search (param search; ctl_govd_search.c). */
	bool search;
	struct ctl_search srch;
	/* The clock the SLA window's tails were made at: busy periods' clock,
	 * averaged over half the window (NaN: none yet; search_advice). */
	double win_clk_mhz;
	bool th_bound;      /* the thermal limit bound last period */
	double last_hot_s;  /* when the limit last bound */
	double predict_margin, predict_sigmas, util_max, power_spread_mhz;
	double int8_max_detect_s; /* NAN: no limit */
	/* Where this controller started: the estimates' clock is the host's
	 * (monotonic since boot in the daemon), and their sample counts run
	 * from the estimator's start, not from a reload. */
	bool started;
	double t0_s;
	uint64_t samples0[EST_Q_ROWS];
	struct gp_model model;
	bool ev_bad[HAL_MAX_SLICES]; /* ctl_govd_evidence's decided-bad latch */
	double slice_rps[HAL_MAX_SLICES]; /* requests/s, EWMA over EV_RATE_TAU_S; NaN: none yet */
	uint64_t rps_periods;
	bool benefit_on;
	struct ctl_govd_benefit_cfg benefit_cfg;
	struct ctl_govd_benefit benefit;
};

/* For the parameters whose table default is NaN: a value derived here. */
static double param_or(const struct policy *pol, const struct controller_ops *c, const char *name,
		       double derived)
{
	double v = ctl_param_value(pol, c, name);
	return isnan(v) ? derived : v;
}

static int common_init(void **state, const struct policy *pol, const struct hal_limits *lim,
		       const struct controller_ops *c, bool peer)
{
	struct ctl_govd_state *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->peer = peer;
	s->fmin_khz = lim->clk_min_khz;
	s->fmax_khz = lim->clk_default_max_khz ? lim->clk_default_max_khz : lim->clk_max_khz;
	if (pol->frequency.min_mhz > 0 && gov_mhz_to_khz(pol->frequency.min_mhz) > s->fmin_khz)
		s->fmin_khz = gov_mhz_to_khz(pol->frequency.min_mhz);
	if (pol->frequency.max_mhz > 0 && gov_mhz_to_khz(pol->frequency.max_mhz) < s->fmax_khz)
		s->fmax_khz = gov_mhz_to_khz(pol->frequency.max_mhz);
	if (s->fmin_khz > s->fmax_khz) {
		free(s);
		return -EINVAL;
	}
	struct ctl_govd_tuning *t = &s->tun;
	t->slack_low = ctl_param_value(pol, c, "slack_low");
	t->slack_high = ctl_param_value(pol, c, "slack_high");
	t->raise_gain = ctl_param_value(pol, c, "raise_gain");
	t->lower_pct_per_s = ctl_param_value(pol, c, "lower_pct_per_s");
	t->surge_queue = ctl_param_value(pol, c, "surge_queue");
	t->peak_memory_s = ctl_param_value(pol, c, "peak_memory_s");
	t->lower_min_requests = ctl_param_value(pol, c, "lower_min_requests");
	t->tbt_exponent = ctl_param_value(pol, c, "tbt_exponent");
	double floor_mhz = param_or(pol, c, "floor_mhz", s->fmin_khz / 1000.0);
	double idle_mhz = param_or(pol, c, "idle_mhz", 0); /* 0: hold */
	if (!peer) {
		t->horizon_s = ctl_param_value(pol, c, "horizon_s");
		t->r_fast_c_per_w = ctl_param_value(pol, c, "r_fast_c_per_w");
		t->thermal_margin_c = ctl_param_value(pol, c, "thermal_margin_c");
		t->thermal_floor_share = ctl_param_value(pol, c, "thermal_floor_share");
		t->junction_lag_s = ctl_param_value(pol, c, "junction_lag_s");
		t->sat_hold_s = ctl_param_value(pol, c, "sat_hold_s");
		t->sat_s = ctl_param_value(pol, c, "sat_s");
		s->predict = ctl_param_value(pol, c, "predict") >= 0.5;
		s->predict_margin = ctl_param_value(pol, c, "predict_margin");
		s->predict_sigmas = ctl_param_value(pol, c, "predict_sigmas");
		s->util_max = ctl_param_value(pol, c, "util_max");
		s->power_spread_mhz = ctl_param_value(pol, c, "power_spread_mhz");
		s->predict_floor = ctl_param_value(pol, c, "predict_floor") >= 0.5;
		s->search = ctl_param_value(pol, c, "search") >= 0.5;
		s->last_hot_s = -INFINITY;
		s->int8_max_detect_s = ctl_param_value(pol, c, "int8_max_detect_s"); /* NaN: no limit */
		s->benefit_on = ctl_param_value(pol, c, "benefit") >= 0.5;
		s->heat_prior_on = ctl_param_value(pol, c, "heat_prior") >= 0.5;
		s->all_or_none = ctl_param_value(pol, c, "low_all_or_none") >= 0.5;
		s->benefit_cfg = (struct ctl_govd_benefit_cfg){
			.tau_s = ctl_param_value(pol, c, "benefit_tau_s"),
			.settle_s = ESTIMATE_SHORT_WINDOW_S * 2,
			.min_s = ctl_param_value(pol, c, "benefit_min_s"),
			.margin = ctl_param_value(pol, c, "benefit_margin"),
			.hold_s = ctl_param_value(pol, c, "benefit_hold_s"),
		};
		ctl_govd_benefit_init(&s->benefit);
		ctl_govd_benefit_init(&s->rung_benefit);
		s->rung_mode = -1;
	}
	if (t->slack_low >= t->slack_high) {
		free(s);
		return -EINVAL;
	}
	s->floor_khz = gov_mhz_to_khz(floor_mhz);
	s->idle_khz = gov_mhz_to_khz(idle_mhz);
	if (s->floor_khz < s->fmin_khz)
		s->floor_khz = s->fmin_khz;
	if (s->floor_khz > s->fmax_khz)
		s->floor_khz = s->fmax_khz;
	if (s->idle_khz && s->idle_khz < s->floor_khz)
		s->idle_khz = s->floor_khz;
	if (s->idle_khz > s->fmax_khz)
		s->idle_khz = s->fmax_khz;
	if (!peer)
		ctl_search_init(&s->srch, pol, c, s->fmax_khz, s->floor_khz, s->idle_khz,
				t->surge_queue);
	s->f_khz = s->fmax_khz; /* start where the firmware would be */
	gp_model_init(&s->model, s->fmin_khz / 1000.0, s->fmax_khz / 1000.0, t->tbt_exponent);
	s->win_clk_mhz = NAN;

	s->bf16_until_s = -INFINITY;
	s->mix.tbt_at_max[0] = s->mix.tbt_at_max[1] = NAN;
	s->mix.sat_since_s = NAN;
	s->mix.mode_since_s = -INFINITY;
	s->mix.last_sat_s = -INFINITY;
	s->mix.hold_s = s->tun.sat_hold_s / 2;
	*state = s;
	return 0;
}

static int ctl_govd_init(void **state, const struct policy *pol, const struct hal_limits *lim)
{
	return common_init(state, pol, lim, &ctl_govd, false);
}

static int slo_init(void **state, const struct policy *pol, const struct hal_limits *lim)
{
	return common_init(state, pol, lim, &ctl_slo_dvfs, true);
}

static void ctl_govd_fini(void *state)
{
	free(state);
}

double ctl_govd_tail_ratio(const double *q_ms, const struct policy *pol, int only_metric)
{
	double r = 0;
	for (size_t i = 0; i < SLA_N_ROWS; i++) {
		if (only_metric >= 0 && (int)sla_rows[i].metric != only_metric)
			continue;
		double target = pol->sla.latency_ms[i];
		if (!(target > 0))
			continue;
		double v = q_ms[i];
		if (isfinite(v) && v > 0 && v / target > r)
			r = v / target;
	}
	return r;
}

double ctl_govd_sla_ratio(const struct gov_estimates *e, const struct policy *pol, int only_metric)
{
	return ctl_govd_tail_ratio(e->short_quantile_ms, pol, only_metric);
}

/* The p99 targets of TTFT and TBT against this period's own p99 alone. */
double ctl_govd_period_ratio(const struct gov_estimates *e, const struct policy *pol)
{
	static const enum sla_metric fast[] = { SLA_TTFT, SLA_TBT };
	double r = 0;
	for (size_t k = 0; k < sizeof(fast) / sizeof(fast[0]); k++) {
		double target = pol->sla.latency_ms[SLA_INDEX(fast[k], SLA_P99)];
		double v = e->period_p99_ms[fast[k]];
		if (target > 0 && isfinite(v))
			r = fmax(r, v / target);
	}
	return r;
}

uint32_t ctl_govd_load_floor_khz(const struct ctl_govd_tuning *t, double tbt_peak_at_max,
			     uint32_t floor_khz, uint32_t fmax_khz)
{
	if (!(tbt_peak_at_max > 0) || !(t->tbt_exponent > 0))
		return floor_khz;
	double f = fmax_khz * pow(tbt_peak_at_max / t->slack_high, 1.0 / t->tbt_exponent);
	if (f > fmax_khz)
		return fmax_khz;
	return f > floor_khz ? (uint32_t)f : floor_khz;
}

uint32_t ctl_govd_latency_step(const struct ctl_govd_tuning *t, double *f_khz, double ratio, bool busy,
			   uint64_t queue_len, double period_s, uint32_t floor_khz,
			   uint32_t idle_khz, uint32_t fmax_khz)
{
	uint32_t reason;
	double f = *f_khz;

	if ((double)queue_len >= t->surge_queue) {
		f = fmax_khz;
		reason = GOV_R_QUEUE_SURGE;
	} else if (!busy) {
		/* Nothing to serve. The first period of a burst runs at whatever
		 * clock idling left, before the loop sees it: holding the last busy
		 * clock (idle_khz 0) costs a little leakage (about 14 W between
		 * 1980 and 1200 MHz on the H200 preset) and keeps that period
		 * inside the TBT target; an explicit idle_khz trades that back. */
		if (idle_khz)
			f = idle_khz;
		reason = GOV_R_SLA_KEEP;
	} else if (ratio > t->slack_high) {
		double up = t->raise_gain * (ratio - t->slack_high);
		if (up < 0.05)
			up = 0.05;
		f *= 1.0 + up;
		reason = GOV_R_SLA_RAISE;
	} else if (ratio < t->slack_low) {
		f *= 1.0 - t->lower_pct_per_s / 100.0 * period_s;
		reason = GOV_R_SLA_LOWER;
	} else {
		reason = GOV_R_SLA_KEEP;
	}
	if (f > fmax_khz)
		f = fmax_khz;
	if (f < floor_khz && busy)
		f = floor_khz;
	*f_khz = f;
	return reason;
}

/* Thermal loop: the power limit is the actuator (it bounds heat directly
 * and leaves the clock to the latency loop). Two-node model: the junction
 * sits r_fast_c_per_w x P above the heatsink within seconds, the heatsink
 * moves over minutes. The heatsink is estimated from the junction and the
 * power (T_sink = T_j - R_fast P), its rate filtered, and extrapolated
 * horizon_s ahead; the limit is the power that would put the junction at
 * the target (ceiling - margin) on that heatsink:
 *   P_allow = (target - T_sink(now + horizon)) / R_fast.
 * The fast transient cannot then cross the target, and the slow rise is met
 * before it gets there. With thermal_floor_share the prediction cuts to no
 * less than that share of p_max_w; the heatsink as it is now still may
 * (P_now = (target - T_sink) / R_fast), so the junction stays at the target:
 * a burst shorter than the heatsink's minutes spends the heat it has left
 * at the knee clock instead of missing its SLA at a clock cut in advance.
 * With junction_lag_s the heatsink is read against the power lagged as the
 * junction follows it: a junction still catching up with a power step would
 * otherwise read as a cooler heatsink and lift the limit in the step. */
uint32_t ctl_govd_thermal_step(const struct ctl_govd_tuning *t, struct ctl_govd_thermal *th,
			   const struct gov_estimates *e, double ceiling_c, double p_min_w,
			   double p_max_w, double *p_allow_w)
{
	double tj = e->temp_c[HAL_TEMP_JUNCTION];
	double p = e->power_w[HAL_RAIL_ACCEL];
	double target = ceiling_c - t->thermal_margin_c;

	*p_allow_w = p_max_w;
	th->floor_w = NAN;
	if (!isfinite(tj) || !isfinite(p) || !(t->r_fast_c_per_w > 0))
		return 0;
	double dt = th->have ? e->t_s - th->t_s : 0;
	if (!th->have || !(t->junction_lag_s > 0))
		th->p_lag_w = p;
	else if (dt > 0)
		th->p_lag_w += (1.0 - exp(-dt / t->junction_lag_s)) * (p - th->p_lag_w);
	double sink = tj - t->r_fast_c_per_w * th->p_lag_w;
	if (dt > 0) {
		double rate = (sink - th->sink_c) / dt;
		double a = 1.0 - exp(-dt / 30.0);
		th->sink_rate_c_per_s += a * (rate - th->sink_rate_c_per_s);
	}
	th->sink_c = sink;
	th->t_s = e->t_s;
	th->have = true;
	double sink_pred = sink + (th->sink_rate_c_per_s > 0 ? th->sink_rate_c_per_s * t->horizon_s : 0);
	double allow = (target - sink_pred) / t->r_fast_c_per_w;
	if (t->thermal_floor_share > 0) {
		double fl = fmin(t->thermal_floor_share * p_max_w,
				 (target - sink) / t->r_fast_c_per_w);
		if (allow < fl) {
			allow = fl;
			th->floor_w = fl;
		}
	}
	if (allow < p_min_w)
		allow = p_min_w;
	if (allow >= p_max_w)
		return 0;
	*p_allow_w = allow;
	return GOV_R_THERMAL_PREDICT;
}

/* Mixed precision on one GPU streams both engines' weights per cycle, so
 * whether the mix beats BF16 on TBT depends on how often the BF16 slice
 * shares the batch: from 0.5x (rare BF16 requests) to 1.4x (bursty trace).
 * It is learned: the TBT ratio seen now, scaled to the max clock
 * (TBT ~ f^-tbt_exponent), is averaged per mode (m[0] BF16, m[1] mix; NAN
 * until seen). The mix is left for BF16 (for sat_hold_s) when its scaled
 * ratio stays over slack_high for sat_s and BF16 has not done worse; a
 * BF16 hold ends early when BF16 does worse than the mix did. Returns the
 * new end of the BF16 hold. */
double ctl_govd_mix_decide(const struct ctl_govd_tuning *t, struct ctl_govd_mix *m, double now_s,
		       double bf16_until_s, double tbt_ratio, double f_frac)
{
	bool bf16 = now_s < bf16_until_s;
	double at_max = tbt_ratio * pow(f_frac, t->tbt_exponent);
	double *cur = &m->tbt_at_max[bf16 ? 0 : 1];

	/* The short window still holds the other mode's tokens for a while
	 * after a switch: learn, and judge, only once it has turned over. */
	if (bf16 != m->last_bf16) {
		m->last_bf16 = bf16;
		m->mode_since_s = now_s;
	}
	if (now_s - m->mode_since_s < ESTIMATE_SHORT_WINDOW_S)
		return bf16_until_s;
	*cur = isnan(*cur) ? at_max : *cur + 0.1 * (at_max - *cur);
	if (!bf16) {
		bool bf16_no_worse = isnan(m->tbt_at_max[0]) || m->tbt_at_max[0] < m->tbt_at_max[1];
		if (m->tbt_at_max[1] > t->slack_high && bf16_no_worse) {
			if (isnan(m->sat_since_s))
				m->sat_since_s = now_s;
			if (now_s - m->sat_since_s >= t->sat_s) {
				/* Back-off: each saturation soon after the last
				 * doubles the hold (to an hour); a mix that ran
				 * clean for four base holds starts over. */
				if (now_s - m->last_sat_s > 4 * t->sat_hold_s + m->hold_s)
					m->hold_s = t->sat_hold_s;
				else
					m->hold_s = fmin(2 * m->hold_s, 3600);
				m->last_sat_s = now_s;
				m->sat_since_s = NAN;
				return now_s + m->hold_s;
			}
		} else {
			m->sat_since_s = NAN;
		}
		return bf16_until_s;
	}
	if (!isnan(m->tbt_at_max[1]) && m->tbt_at_max[0] > 1.1 * m->tbt_at_max[1])
		return now_s; /* BF16 is worse: back to the mix */
	return bf16_until_s;
}

/* The horizon of a slice's sustained request rate, against which the
 * expected-value gate's need is judged (the gate's own rate runs from the
 * controller's start). */
#define EV_RATE_TAU_S 600.0
/* How long after the thermal limit last bound no re-runs are asked: the
 * heatsink they would warm keeps its heat for minutes (tau 80-256 s,
 * docs/govd-controller.md, "Thermal"), about 3.5 of them. */
#define EV_HEAT_MEMORY_S 900.0

/* Shadow samples the detectors need to catch a drift of a slice to 3 x
 * max_drop (estimate_detect_samples). */
static double drift_detect_samples(const struct policy_slice_rule *r)
{
	return estimate_detect_samples(ESTIMATE_CUSUM_P1_RATIO * r->max_drop, r->offline_samples,
				       r->offline_mismatches, r->max_drop);
}

/* Expected value of INT8 on one slice: a drift is served past the
 * threshold until the detectors catch it, and every window with one breach
 * request earns nothing, so the expected loss per drift grows with the
 * detection delay while the gain does not. The delay is the samples the
 * CUSUMs need at 3 x max_drop (estimate_detect_samples) over the slice's
 * shadow-sample rate measured since this controller started (at least 120 s
 * of it, so a slice that has not been seen yet counts as thinly sampled).
 * row: the gate row (est_q_row) of the rung in question. */
static bool ctl_govd_detect_ok(const struct ctl_govd_state *s, const struct gov_estimates *e,
			   const struct policy_slice_rule *r, size_t row, double *held_s)
{
	if (isnan(s->int8_max_detect_s))
		return true;
	double n = drift_detect_samples(r);
	uint64_t total = e->q_total_samples[row], before = s->samples0[row];
	double rate = (double)(total > before ? total - before : 0) / fmax(e->t_s - s->t0_s, 120.0);
	double delay_s = rate > 0 ? n / rate : INFINITY;
	if (delay_s <= s->int8_max_detect_s)
		return true;
	*held_s = delay_s;
	return false;
}

/* The precision ladder (docs/govd-controller.md): one rung at a time, each
 * behind its own gate. Without fp8 in the policy the one rung is INT8, as
 * before the ladder. Sets s->rung[i] and *row, the gate row that matters now
 * (the rung served; at BF16 the first rung, for evidence) and *held_s (the
 * detection delay holding the rung in question shut; 0: none); true while
 * the rung may serve. heat_all: this period every slice's first rung is
 * open or may be trusted under heat. fp8_served: FP8 serves the slice in
 * the point in force; a slice steps to INT8 only from there. */
static bool ctl_govd_rung(struct ctl_govd_state *s, const struct gov_estimates *e,
			  const struct policy_slice_rule *r, size_t i, bool heat_all, bool fp8_served,
			  size_t *row, double *held_s)
{
	size_t r8 = est_q_row(i, HAL_LOW_INT8), rf = est_q_row(i, HAL_LOW_FP8);
	/* Under heat, waiting for the prior's confirmation costs the SLA and
	 * every window at BF16: the first rung may open on the prior alone
	 * (the detectors still run; a drop of the prior shuts it). */
	size_t first = r->fp8_allowed ? rf : r8;
	bool trust = heat_all && e->q_gate_open_prior[first] &&
		     (s->th_bound || s->heat_prior[i]);
	s->heat_prior[i] = trust && !e->q_gate_open[first];
	double held8_s = 0, heldf_s = 0; /* the detection delay that holds a rung */
	bool int8_open = r->int8_allowed && (e->q_gate_open[r8] || (trust && first == r8)) &&
			 ctl_govd_detect_ok(s, e, r, r8, &held8_s);
	if (!r->fp8_allowed) {
		s->rung[i] = HAL_LOW_INT8;
		*row = r8;
		*held_s = held8_s;
		return int8_open;
	}
	bool fp8_open = (e->q_gate_open[rf] || trust) && ctl_govd_detect_ok(s, e, r, rf, &heldf_s);
	bool was = s->gate_was_open[i];
	if (s->int8_no_gain && fp8_open)
		int8_open = false; /* INT8 measured no better than FP8 here: FP8's rung */
	if (was && s->rung[i] == HAL_LOW_INT8) {
		if (!int8_open) /* up one rung, or two where FP8's gate shut too */
			s->rung[i] = HAL_LOW_FP8, was = fp8_open;
	} else if (was) {
		if (!fp8_open)
			was = false;
		else if (int8_open && fp8_served) /* down one rung: FP8 served, INT8's gate open */
			s->rung[i] = HAL_LOW_INT8;
	} else {
		s->rung[i] = HAL_LOW_FP8;
		was = fp8_open;
	}
	*row = est_q_row(i, s->rung[i]);
	/* the rung in question: the first one at BF16, INT8 from FP8 */
	*held_s = !was ? heldf_s : s->rung[i] == HAL_LOW_FP8 ? held8_s : 0;
	return was;
}

/* Each slice's requests per second over the SLA window; a server that
 * reports no slices: an even split. */
static void slice_rates(const struct gov_estimates *e, size_t n, double *rate)
{
	double total = 0;
	for (size_t i = 0; i < n; i++)
		total += (double)e->slice_requests[i];
	for (size_t i = 0; i < n; i++)
		rate[i] = e->window_s > 0 ? (total > 0 ? (double)e->slice_requests[i]
						     : (double)e->window_requests / (double)n) /
						    e->window_s
					  : 0;
}

void ctl_govd_evidence(const struct ctl_input *in, const double *int8_served,
		       const double *need, const size_t *row, bool *decided_bad,
		       struct ctl_output *out)
{
	const struct gov_estimates *e = in->est;
	const struct policy *pol = in->pol;
	double rate[HAL_MAX_SLICES] = { 0 }, extra_i[HAL_MAX_SLICES] = { 0 }, extra = 0;
	size_t n = in->slices->n < HAL_MAX_SLICES ? in->slices->n : HAL_MAX_SLICES;

	slice_rates(e, n, rate);
	for (size_t i = 0; i < n; i++) {
		out->op.shadow_rate[i] = 0;
		out->evidence[i] = GOV_EV_NONE;
	}
	out->evidence_budget = false;
	double all = 0;
	for (size_t i = 0; i < n; i++)
		all += rate[i];
	for (size_t i = 0; i < n; i++) {
		const struct policy_slice_rule *r = &in->slices->rule[i];
		if (!r->low_allowed || !(r->max_drop > 0))
			continue;
		double own = r->shadow_rate, ask = 0;
		enum gov_evidence why = GOV_EV_NONE;
		size_t q = row[i];
		/* decided by the evidence, or by the qualification run before
		 * any online sample could confirm it: no probation to pay for */
		if (e->q_drop_lower[q] > r->max_drop || e->q_drop_lower_prior[q] > r->max_drop)
			decided_bad[i] = true;
		else if (e->q_drop_lower[q] < 0.8 * r->max_drop || e->q_gate_open[q])
			decided_bad[i] = false;
		if (!e->q_gate_open[q] && !decided_bad[i]) {
			ask = pol->quality.probation_rate;
			why = GOV_EV_PROBATION;
		} else if (e->q_gate_open[q] && (int8_served[i] > 0 || out->detect_held_s[i] > 0) &&
			   pol->quality.max_detect_s > 0 && rate[i] > 0) {
			ask = fmin(1.0, drift_detect_samples(r) / (pol->quality.max_detect_s * rate[i]));
			why = int8_served[i] > 0 ? GOV_EV_DETECT : GOV_EV_HELD;
		}
		if (!(ask > own) || ask < need[i])
			continue; /* nothing over own, or too little for the gate */
		out->op.shadow_rate[i] = ask;
		out->evidence[i] = why;
		/* A sample is scored where the slice's next decision lies: one
		 * re-run, two where a ladder slice serves FP8 (the BF16
		 * reference and the INT8 rung below; docs/serving-model.md). */
		bool two = r->fp8_allowed && r->int8_allowed && int8_served[i] > 0 &&
			   out->op.low_mode[i] == HAL_LOW_FP8;
		/* Shares unknown (no request in the window: the first period, or
		 * the first of a burst after an idle stretch): each ask is
		 * counted as if its slice carried all the traffic, so the asks
		 * together stay within the budget whatever the mix turns out. */
		extra_i[i] = (ask - own) * (all > 0 ? rate[i] / all : 1.0) * (two ? 2.0 : 1.0);
		extra += extra_i[i];
	}
	/* Over budget every ask keeps the same share of its extra; an ask
	 * that share leaves under the gate's need is dropped, and the others
	 * share the budget again. */
	double budget = pol->quality.shadow_budget, k = 1;
	for (size_t pass = 0; pass <= n && extra > budget && extra > 0; pass++) {
		k = budget / extra;
		bool dropped = false;
		for (size_t i = 0; i < n; i++) {
			double own = in->slices->rule[i].shadow_rate;
			if (out->evidence[i] == GOV_EV_NONE ||
			    own + (out->op.shadow_rate[i] - own) * k >= need[i])
				continue;
			out->op.shadow_rate[i] = 0;
			out->evidence[i] = GOV_EV_NONE;
			extra -= extra_i[i];
			dropped = true;
		}
		if (!dropped)
			break;
		k = extra > budget ? budget / extra : 1;
	}
	if (k >= 1)
		return;
	out->evidence_budget = true;
	for (size_t i = 0; i < n; i++) {
		double own = in->slices->rule[i].shadow_rate;
		if (out->evidence[i] != GOV_EV_NONE) /* asked over own: stays over it */
			out->op.shadow_rate[i] = own + (out->op.shadow_rate[i] - own) * k;
	}
}

static uint32_t snap(const struct hal_limits *lim, double khz)
{
	if (khz <= lim->clk_min_khz)
		return lim->clk_min_khz;
	if (!lim->clk_step_khz)
		return (uint32_t)khz;
	uint32_t k = (uint32_t)((khz - lim->clk_min_khz) / lim->clk_step_khz + 0.5);
	return lim->clk_min_khz + k * lim->clk_step_khz;
}

/* The model learns from the period just gone, at the clock it ran; the
 * power law only where the model chooses the clock (the search's advice
 * scales tails, it weighs no power). */
static void model_observe(struct ctl_govd_state *s, const struct gov_estimates *e, bool power)
{
	struct gp_obs o = {
		.mode = s->cur_mode, .clk_mhz = e->clk_mhz > 0 ? e->clk_mhz : s->f_khz / 1000.0,
		.running = (double)e->running, .queue = (double)e->queue_len, .util = e->util,
		.power_w = power ? e->power_w[HAL_RAIL_ACCEL] : NAN,
		.tbt_p99_ms = e->period_p99_ms[SLA_TBT],
		.ttft_p99_ms = e->period_p99_ms[SLA_TTFT],
	};
	gp_observe(&s->model, &o);
}

/* Beside the window search the model learns and advises, and moves nothing
 * (issue 32, part 4): the SLA window's observed TBT and TTFT p99 scaled
 * from the clock its busy periods ran at (win_clk_mhz) to the clock asked for
 * and to one search step lower by the clock exponents it has learned, the lowest clock at which they would still meet the
 * targets (model_mhz: the room the search leaves), and why the lower one
 * would lose against the search's step-down threshold (margin; window: the
 * scaled tails meet it there, the search waits for its window to close). */
static void search_advice(const struct ctl_govd_state *s, const struct gov_estimates *e,
			  const struct policy *pol, double clk_mhz, struct gov_why *why)
{
	if (why->bound != GOV_WHY_SEARCH)
		return; /* a surge, idle: nothing was weighed */
	static const enum sla_metric m[2] = { SLA_TBT, SLA_TTFT };
	double a[2], tail[2], target[2];
	gp_clock_exponents(&s->model, s->cur_mode, &a[0], &a[1]);
	double f_ref = s->win_clk_mhz > 0 ? s->win_clk_mhz : clk_mhz;
	double floor_mhz = s->srch.floor_khz / 1000.0, fmax_mhz = s->fmax_khz / 1000.0;
	double lower = fmax(clk_mhz - s->srch.down_khz / 1000.0, floor_mhz);
	double need = floor_mhz, pred[2][2]; /* [at clk, at lower][metric] */
	bool any = false;
	for (int k = 0; k < 2; k++) {
		tail[k] = e->quantile_ms[SLA_INDEX(m[k], SLA_P99)];
		target[k] = pol->sla.latency_ms[SLA_INDEX(m[k], SLA_P99)];
		pred[0][k] = pred[1][k] = NAN;
		if (!(isfinite(tail[k]) && tail[k] > 0 && f_ref > 0))
			continue;
		any = true;
		pred[0][k] = tail[k] * pow(f_ref / clk_mhz, a[k]);
		pred[1][k] = tail[k] * pow(f_ref / lower, a[k]);
		if (target[k] > 0)
			need = fmax(need, f_ref * pow(tail[k] / target[k], 1 / a[k]));
	}
	if (!any)
		return;
	why->sigmas = 0;
	why->tbt_pred_ms = pred[0][0];
	why->ttft_pred_ms = pred[0][1];
	why->model_mhz = fmin(ceil(need / 15.0 - 1e-9) * 15.0, fmax_mhz);
	if (clk_mhz <= floor_mhz + 1e-9) {
		why->lower_limit = GOV_WHY_L_FLOOR;
		return;
	}
	why->lower_mhz = lower;
	why->tbt_lower_ms = pred[1][0];
	why->ttft_lower_ms = pred[1][1];
	why->lower_limit = GOV_WHY_L_WINDOW;
	for (int k = 1; k >= 0; k--)
		if (target[k] > 0 && pred[1][k] > target[k] * why->margin)
			why->lower_limit = k ? GOV_WHY_L_TTFT : GOV_WHY_L_TBT;
}

/* Predict, do not creep: learn from this period's telemetry, then take
 * the clock with the least predicted power among those predicted to keep
 * the TTFT and TBT p99 under the targets with a margin (govd_predict.h).
 * What is observed overrides what is predicted: a queue surge sends the
 * clock to max, a tail over slack_high now raises it at least as the
 * latency loop would, and it never goes under floor_khz. */
static uint32_t predict_step(struct ctl_govd_state *s, const struct gov_estimates *e,
			     const struct policy *pol, double ratio, bool busy, uint32_t floor_khz,
			     struct gov_why *why)
{
	const struct ctl_govd_tuning *t = &s->tun;
	double f_now = e->clk_mhz > 0 ? e->clk_mhz : s->f_khz / 1000.0;
	double prev = s->f_khz;
	why->margin = s->predict_margin;
	why->sigmas = s->predict_sigmas;
	model_observe(s, e, true);
	if ((double)e->queue_len >= t->surge_queue) {
		s->f_khz = s->fmax_khz;
		why->bound = GOV_WHY_SURGE;
		return GOV_R_QUEUE_SURGE;
	}
	if (!busy) {
		if (s->idle_khz)
			s->f_khz = s->idle_khz;
		why->bound = GOV_WHY_IDLE;
		return GOV_R_SLA_KEEP;
	}
	struct gp_query q = {
		.mode = s->cur_mode, .clk_now_mhz = f_now, .running = (double)e->running,
		.queue = (double)e->queue_len, .util = e->util,
		.tbt_target_ms = pol->sla.latency_ms[SLA_INDEX(SLA_TBT, SLA_P99)],
		.ttft_target_ms = pol->sla.latency_ms[SLA_INDEX(SLA_TTFT, SLA_P99)],
		.margin = s->predict_margin, .sigmas = s->predict_sigmas, .util_max = s->util_max,
		.step_mhz = 15, .floor_mhz = floor_khz / 1000.0,
		.power_spread_mhz = s->power_spread_mhz,
	};
	struct gp_choice c;
	gp_choose(&s->model, &q, &c);
	double f = c.clk_mhz * 1000.0;
	why->model_mhz = c.clk_mhz;
	why->tbt_pred_ms = c.tbt_pred_ms;
	why->ttft_pred_ms = c.ttft_pred_ms;
	why->lower_mhz = c.lower_mhz;
	why->tbt_lower_ms = c.tbt_lower_ms;
	why->ttft_lower_ms = c.ttft_lower_ms;
	why->lower_limit = c.lower_limit;
	/* At the floor the model had nothing lower to offer: the floor bound. */
	why->bound = !c.feasible ? GOV_WHY_INFEASIBLE
		     : c.lower_limit == GOV_WHY_L_FLOOR
			 ? (why->floor_load ? GOV_WHY_LOAD_FLOOR : GOV_WHY_POLICY_FLOOR)
			 : GOV_WHY_MODEL;
	if (ratio > t->slack_high) {
		double up = fmax(0.05, t->raise_gain * (ratio - t->slack_high));
		double fo = f_now * 1000.0 * (1.0 + up);
		if (fo > f && c.clk_mhz * 1000.0 < s->fmax_khz) {
			f = fo;
			why->bound = GOV_WHY_OBSERVED;
		}
	}
	if (f > s->fmax_khz)
		f = s->fmax_khz;
	if (f < floor_khz) {
		f = floor_khz;
		why->bound = why->floor_load ? GOV_WHY_LOAD_FLOOR : GOV_WHY_POLICY_FLOOR;
	}
	s->f_khz = f;
	return f > prev * 1.001 ? GOV_R_SLA_RAISE : f < prev * 0.999 ? GOV_R_SLA_LOWER : GOV_R_SLA_KEEP;
}

/* What an evidence ask must reach per slice to buy anything (the need of
 * ctl_govd_evidence). The expected-value gate's need, as a shadow rate:
 * evidence that leaves the rung held shut (or shuts it) buys nothing. The
 * gate counts samples since the controller started, so the slice's
 * sustained request rate matters, not a burst's: from the first request
 * on, a running mean until EV_RATE_TAU_S has passed, then an EWMA; until
 * it has run one SLA window the need is not known and judges nothing.
 * Asked re-runs are background work on the served device: nothing while
 * the queue surges, the short window's tail is over its target, or within
 * EV_HEAT_MEMORY_S of the thermal limit binding (need infinite). */
static void evidence_need(struct ctl_govd_state *s, const struct ctl_input *in, double *need)
{
	const struct gov_estimates *e = in->est;
	const struct policy *pol = in->pol;
	bool room = (double)e->queue_len < s->tun.surge_queue &&
		    e->t_s - s->last_hot_s >= EV_HEAT_MEMORY_S &&
		    ctl_govd_sla_ratio(e, pol, -1) <= 1.0;
	bool seen = s->rps_periods > 0 || (e->window_requests > 0 && e->window_s > 0);
	double w = seen ? fmax(1.0 / (double)++s->rps_periods,
			       fmin(1.0, in->period_s / EV_RATE_TAU_S))
			: 0;
	bool known = (double)s->rps_periods * in->period_s >= fmax(pol->sla.window_s, in->period_s);
	size_t n = in->slices->n < HAL_MAX_SLICES ? in->slices->n : HAL_MAX_SLICES;
	double rate[HAL_MAX_SLICES] = { 0 };
	slice_rates(e, n, rate);
	for (size_t i = 0; i < n; i++) {
		double now = rate[i];
		double *r = &s->slice_rps[i];
		if (seen)
			*r = isnan(*r) ? now : *r + w * (now - *r);
		if (!room)
			need[i] = INFINITY;
		else if (!isnan(s->int8_max_detect_s) && known)
			need[i] = *r > 0 ? drift_detect_samples(&in->slices->rule[i]) /
						   (s->int8_max_detect_s * *r)
					 : INFINITY;
	}
}

/* Precision: the gate per slice (its ladder's rung), then whether mixing
 * pays. Sets the shares, the rungs and the evidence asks in out; may move
 * the clock to the max (a BF16 hold) and the binding to quality. */
static uint32_t precision_step(struct ctl_govd_state *s, const struct ctl_input *in, bool busy,
			       enum gov_binding *binding_io, struct ctl_output *out)
{
	const struct gov_estimates *e = in->est;
	const struct policy *pol = in->pol;
	const struct ctl_govd_tuning *t = &s->tun;
	uint32_t reasons = 0;
	enum gov_binding binding = *binding_io;

	if (s->benefit_on) {
		bool no8 = ctl_govd_benefit_step(&s->rung_benefit, &s->benefit_cfg, e->t_s,
						 in->period_s, s->rung_mode, e->running,
						 (double)e->period_tokens,
						 e->power_total_w * in->period_s);
		/* FP8 first: INT8 is tried once FP8 alone has been measured
		 * at this load, and kept only where it pays over it. */
		no8 = no8 || isnan(ctl_govd_benefit_j_per_token(
				     &s->rung_benefit, &s->benefit_cfg, 0,
				     ctl_govd_benefit_bucket(e->running)));
		if (no8 && !s->int8_no_gain)
			reasons |= GOV_R_PREC_NO_GAIN;
		s->int8_no_gain = no8;
	}
	/* The prior is trusted under heat only where it takes every slice off
	 * BF16: a mix that keeps the BF16 engine streaming is what heat
	 * punishes (docs/govd-controller.md, "Under heat"). */
	bool heat_all = s->heat_prior_on;
	for (size_t i = 0; heat_all && i < in->slices->n; i++) {
		const struct policy_slice_rule *r = &in->slices->rule[i];
		size_t first = est_q_row(i, r->fp8_allowed ? HAL_LOW_FP8 : HAL_LOW_INT8);
		heat_all = r->low_allowed && r->int8_max_fraction >= 1.0 &&
			   (e->q_gate_open[first] || e->q_gate_open_prior[first]);
	}
	size_t n_open = 0, row[HAL_MAX_SLICES] = { 0 };
	for (size_t i = 0; i < in->slices->n; i++) {
		/* FP8 in force on the slice (the point the loop applied, after
		 * its guard): the only way down to INT8 */
		bool fp8_served = in->cur && in->cur->int8_frac[i] > 0 &&
				  in->cur->low_mode[i] == HAL_LOW_FP8;
		bool open = ctl_govd_rung(s, e, &in->slices->rule[i], i, heat_all, fp8_served, &row[i],
					  &out->detect_held_s[i]);
		n_open += open;
		if (open != s->gate_was_open[i])
			reasons |= open ? GOV_R_INT8_GATE_OPEN : GOV_R_INT8_GATE_CLOSED;
		s->gate_was_open[i] = open;
	}
	bool mixed = n_open > 0 && n_open < in->slices->n;
	/* All or none: a partial mix is not served at all (no saturation to
	 * learn, no clock jump); the open slices wait in BF16 for the rest. */
	bool partial = s->all_or_none && mixed;
	double tbt_ratio = ctl_govd_sla_ratio(e, pol, SLA_TBT);
	if (mixed && !partial && busy && tbt_ratio > 0)
		s->bf16_until_s = ctl_govd_mix_decide(t, &s->mix, e->t_s, s->bf16_until_s,
						  tbt_ratio, s->f_khz / s->fmax_khz);
	bool bf16 = e->t_s < s->bf16_until_s;
	if (s->benefit_on) {
		bool no_gain = ctl_govd_benefit_step(&s->benefit, &s->benefit_cfg, e->t_s,
						 in->period_s, s->cur_mode, e->running,
						 (double)e->period_tokens,
						 e->power_total_w * in->period_s);
		if (no_gain && n_open > 0 && !bf16)
			reasons |= GOV_R_PREC_NO_GAIN;
		bf16 = bf16 || no_gain;
	}
	if (e->t_s < s->bf16_until_s) {
		reasons |= GOV_R_PREC_SATURATED;
		/* BF16 needs the higher clock the mix was saving. */
		if (!s->was_bf16_hold)
			s->f_khz = s->fmax_khz;
	}
	s->was_bf16_hold = bf16;
	bf16 = bf16 || partial;
	s->cur_mode = 0;
	s->rung_mode = -1;
	for (size_t i = 0; i < in->slices->n; i++) {
		bool open = s->gate_was_open[i];
		out->op.int8_frac[i] = open && !bf16 ? in->slices->rule[i].int8_max_fraction : 0;
		out->op.low_mode[i] = s->rung[i];
		if (out->op.int8_frac[i] > 0) {
			s->cur_mode = 1;
			if (in->slices->rule[i].fp8_allowed) /* a ladder: which rung it pays on */
				s->rung_mode = s->rung_mode == 1 || s->rung[i] == HAL_LOW_INT8;
		}
		if (in->slices->rule[i].low_allowed && !open && binding == GOV_B_SLA)
			binding = GOV_B_QUALITY;
		if (s->heat_prior[i] && out->op.int8_frac[i] > 0)
			out->heat_prior |= 1u << i;
		if (partial && open)
			out->mix_held |= 1u << i;
	}
	/* Evidence on demand only where the policy asks for it: the others'
	 * shadow rates stay the server's own (ctl_default_op's zeros). */
	if (pol->quality.probation_rate > 0 || pol->quality.max_detect_s > 0) {
		double need[HAL_MAX_SLICES] = { 0 };
		evidence_need(s, in, need);
		ctl_govd_evidence(in, out->op.int8_frac, need, row, s->ev_bad, out);
	}
	*binding_io = binding;
	return reasons;
}

static void common_step(void *state, const struct ctl_input *in, struct ctl_output *out)
{
	struct ctl_govd_state *s = state;
	const struct gov_estimates *e = in->est;
	const struct policy *pol = in->pol;
	const struct ctl_govd_tuning *t = &s->tun;
	uint32_t reasons = 0;
	enum gov_binding binding = GOV_B_SLA;

	ctl_default_op(in, &out->op);
	if (!s->started) {
		s->started = true;
		s->t0_s = e->t_s;
		memcpy(s->samples0, e->q_total_samples, sizeof(s->samples0));
		for (size_t i = 0; i < HAL_MAX_SLICES; i++)
			s->slice_rps[i] = NAN;
	}
	double ratio = ctl_govd_sla_ratio(e, pol, -1);
	/* This period alone sees a burst's first slow steps before they move
	 * the 10 s quantiles: raise on it too (never lower on it). */
	double fast = ctl_govd_period_ratio(e, pol);
	if (fast > ratio && fast > t->slack_high)
		ratio = fast;
	/* Busy now, not in the last 10 s: the short window outlives a burst,
	 * and lowering on its stale quantiles would leave the next burst a
	 * slow clock. */
	bool busy = e->queue_len > 0 || e->running > 0 || e->period_requests > 0;
	/* A lull between bursts leaves a few requests in the short window and
	 * a flattering quantile: lowering on it meets the next burst slow. */
	if (ratio < t->slack_low && (double)e->short_requests < t->lower_min_requests)
		ratio = 0.5 * (t->slack_low + t->slack_high);
	/* The floor the load allows: TBT seen at the effective clock, scaled
	 * to the max clock (TBT ~ f^-tbt_exponent), kept as a decaying peak per
	 * precision mode; the clock never decays below where that peak would
	 * sit at slack_high. Bursty loads thus keep the clock their bursts
	 * need between bursts, steady light loads earn a low one. */
	int mode = s->cur_mode;
	double tbt_ratio_now = ctl_govd_sla_ratio(e, pol, SLA_TBT);
	double f_eff_khz = e->clk_mhz > 0 ? e->clk_mhz * 1000.0 : s->f_khz;
	double decay = exp(-in->period_s / t->peak_memory_s);
	for (int m = 0; m < 2; m++)
		s->tbt_peak[m] *= decay;
	if (busy && tbt_ratio_now > 0) {
		double at_max = tbt_ratio_now * pow(f_eff_khz / s->fmax_khz, t->tbt_exponent);
		if (at_max > s->tbt_peak[mode])
			s->tbt_peak[mode] = at_max;
	}
	uint32_t floor_khz = ctl_govd_load_floor_khz(t, s->tbt_peak[mode], s->floor_khz, s->fmax_khz);
	/* The explanation the decision log carries (docs/decision-log.md, "why"). */
	struct gov_why *why = &out->why;
	uint32_t use_floor_khz = s->predict && !s->predict_floor ? s->floor_khz : floor_khz;
	*why = (struct gov_why){
		.valid = true,
		.bound = GOV_WHY_LOOP,
		.model_mhz = NAN, .tbt_pred_ms = NAN, .ttft_pred_ms = NAN,
		.lower_mhz = NAN, .tbt_lower_ms = NAN, .ttft_lower_ms = NAN,
		.margin = NAN, .sigmas = NAN,
		.floor_mhz = use_floor_khz / 1000.0,
		.floor_load = use_floor_khz > s->floor_khz,
		.tail_ratio = ratio,
		.base_mhz = NAN, .bar_mhz = NAN, .heat_floor_w = NAN,
	};
	if (s->search) {
		model_observe(s, e, false);
		if (busy && e->clk_mhz > 0) {
			double w = pol->sla.window_s > 0 ? pol->sla.window_s : 60;
			double k = 1 - exp(-in->period_s / (w / 2));
			s->win_clk_mhz = isnan(s->win_clk_mhz)
						 ? e->clk_mhz
						 : s->win_clk_mhz + k * (e->clk_mhz - s->win_clk_mhz);
		}
		reasons |= ctl_search_step(&s->srch,
					   &(struct ctl_search_in){
						   .period_s = in->period_s, .busy = busy,
						   .mode = s->cur_mode, .th_bound = s->th_bound,
						   .last_hot_s = s->last_hot_s,
					   },
					   e, pol, &s->f_khz, why);
	} else if (s->predict)
		reasons |= predict_step(s, e, pol, ratio, busy, use_floor_khz, why);
	else {
		reasons |= ctl_govd_latency_step(t, &s->f_khz, ratio, busy, e->queue_len, in->period_s,
					     floor_khz, s->idle_khz, s->fmax_khz);
		if (!busy)
			why->bound = GOV_WHY_IDLE;
	}
	/* max_throughput: the clock stays at the top of the policy's range; the
	 * thermal, budget and precision loops still act. */
	if (pol->objective.kind == POLICY_OBJ_MAX_THROUGHPUT) {
		s->f_khz = s->fmax_khz;
		why->bound = GOV_WHY_OBJECTIVE;
	}
	double f = s->f_khz;
	/* The policy's cap, never over what the device takes (the guard would
	 * clamp it; the thermal floor is a share of it). */
	uint32_t cap_mw = pol->power.cap_w > 0 ? gov_w_to_mw(pol->power.cap_w)
					       : in->lim->power_limit_default_mw;
	if (in->lim->power_limit_max_mw > 0 && cap_mw > in->lim->power_limit_max_mw)
		cap_mw = in->lim->power_limit_max_mw;

	if (!s->peer) {
		double p_allow_w, cap_w = cap_mw / 1000.0;
		uint32_t r = ctl_govd_thermal_step(t, &s->th, e, pol->thermal.ceiling_c,
					       in->lim->power_limit_min_mw / 1000.0, cap_w,
					       &p_allow_w);
		if (r) {
			cap_mw = gov_w_to_mw(p_allow_w);
			why->heat_floor_w = s->th.floor_w;
			/* Binding while the device draws near it. */
			if (e->power_w[HAL_RAIL_ACCEL] > 0.9 * p_allow_w) {
				binding = GOV_B_CEILING;
				reasons |= r;
			}
		}
		s->th_bound = binding == GOV_B_CEILING; /* for the next period's search */
		if (s->th_bound)
			s->last_hot_s = e->t_s;

		reasons |= precision_step(s, in, busy, &binding, out);
	}
	uint32_t fk = snap(in->lim, f);
	if (fk > s->fmax_khz)
		fk = s->fmax_khz;
	out->op.clk_locked = true;
	out->op.clk_min_khz = fk;
	out->op.clk_max_khz = fk;
	out->op.power_limit_mw = cap_mw;
	out->reasons = reasons;
	out->binding = binding;
	why->clk_mhz = fk / 1000.0;
	if (s->search)
		search_advice(s, e, pol, why->clk_mhz, why);
}

/* Rules between parameters: the load classes keep their bases in the
 * search's one base slot, which search_per_mode swaps per precision mode;
 * together the modes would trade one class's base for the other's. */
static int ctl_govd_check(const struct policy *pol, struct diag_list *diags)
{
	const struct policy_param *heavy = policy_param_find(pol, "search_heavy_running");
	const struct policy_param *per_mode = policy_param_find(pol, "search_per_mode");
	if (heavy && per_mode && heavy->value > 0 && per_mode->value >= 0.5) {
		diag_add(diags, DIAG_ERROR, pol->path, heavy->key_line, heavy->key_col,
			 "control.params.search_heavy_running", "conflict",
			 "search_heavy_running (two bases by load) and search_per_mode (one base per "
			 "precision mode) cannot be combined; set one of them to 0");
		return -EINVAL;
	}
	/* a key that only refines another does nothing while that one is off:
	 * say so at the key */
	static const struct {
		const char *key, *needs, *then;
		const char *or_key; /* ... or this one at >= or_min */
		double or_min;
	} refines[] = {
		{ "search_heavy_start_mhz", "search_heavy_running", "one base", NULL, 0 },
		{ "search_heavy_share", "search_heavy_running", "one base", NULL, 0 },
		{ "search_heavy_hot_s", "search_heavy_running", "one base", "search_surge_release", 0 },
		{ "search_aftermath_wait_s", "search_aftermath_s", "no raise is held", NULL, 0 },
		{ "search_aftermath_share", "search_aftermath_s", "no raise is held", NULL, 0 },
		{ "search_blame_wait", "search_heavy_running", "one base", NULL, 0 },
		{ "search_risk_surge", "search_risk_windows", "no risk budget", NULL, 0 },
		{ "search_risk_calm", "search_risk_windows", "no risk budget", NULL, 0 },
		{ "search_thin_low", "search_down_requests", "every window may step down", NULL, 0 },
		{ "search_heavy_surge_share", "search_heavy_running", "one base", NULL, 0 },
		{ "search_spike_unbarred", "search_memory", "nothing is barred", NULL, 0 },
		{ "search_heavy_judge_share", "search_heavy_running", "one base", NULL, 0 },
		{ "search_miss_at_max", "search_risk_windows", "no risk budget", "search_memory", 1 },
		{ "search_bar_lift", "search_memory", "nothing is barred", NULL, 0 },
	};
	for (size_t i = 0; i < sizeof(refines) / sizeof(*refines); i++) {
		const struct policy_param *pp = policy_param_find(pol, refines[i].key);
		const struct policy_param *on = policy_param_find(pol, refines[i].needs);
		const struct policy_param *alt =
			refines[i].or_key ? policy_param_find(pol, refines[i].or_key) : NULL;
		if (pp && !(on && on->value > 0) && !(alt && alt->value >= refines[i].or_min)) {
			char or_txt[96] = "";
			if (refines[i].or_key)
				snprintf(or_txt, sizeof(or_txt), " or %s >= %g", refines[i].or_key,
					 refines[i].or_min);
			diag_add(diags, DIAG_WARNING, pol->path, pp->key_line, pp->key_col,
				 "control.params", "no-effect", "%s has no effect without %s > 0 (%s)%s",
				 refines[i].key, refines[i].needs, refines[i].then, or_txt);
		}
	}
	return 0;
}

const struct controller_ops ctl_govd = {
	.name = "govd",
	.description = "tokens per joule under the SLA: latency-led clock, predicted thermal "
		       "ceiling, INT8 per slice behind the quality gate",
	.params = ctl_govd_params,
	.init = ctl_govd_init,
	.step = common_step,
	.fini = ctl_govd_fini,
	.check = ctl_govd_check,
};

const struct controller_ops ctl_slo_dvfs = {
	.name = "slo-dvfs",
	.description = "SLO-aware DVFS peer (throttLL'eM, GreenLLM): lowest clock meeting the "
		       "latency SLO, BF16, firmware power limit",
	.params = slo_params,
	.init = slo_init,
	.step = common_step,
	.fini = ctl_govd_fini,
};
