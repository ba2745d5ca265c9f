/* Controller internals: the pure maths of the feedback baselines and of the
 * govd / slo-dvfs loops, shared by their files and unit tested directly.
 * Not part of the registry interface (controller.h); only governor/controllers
 * and the tests include it. */
#ifndef GOVD_GOVERNOR_CTL_INTERNAL_H
#define GOVD_GOVERNOR_CTL_INTERNAL_H
#include "governor/controllers/controller.h"

/* Exposed for tests: the pure maths of the two feedback baselines. */
struct ondemand_state {
	double upthreshold, downdifferential; /* percent */
};
/* devfreq simple_ondemand: next frequency in kHz (before snapping). */
uint32_t ondemand_target_khz(double util_pct, uint32_t cur_khz, uint32_t max_khz,
			     double upthreshold, double downdifferential, uint32_t *reason);

struct ipa_state {
	double sustainable_power_w, control_temp_c, switch_on_c; /* switch_on_c < 0: none */
	double k_po, k_pu, k_i, k_d, integral_cutoff_c;
	double err_integral_c, prev_err_c;
	double max_power_w;
	bool passive;
};
void ipa_setup(struct ipa_state *s, double sustainable_power_w, double control_temp_c,
	       double switch_on_c, double max_power_w);
/* One throttle() call: granted power (W), or max power below switch-on. */
double ipa_throttle(struct ipa_state *s, double temp_c, double period_ms, uint32_t *reason);

/* Exposed for tests: the govd / slo-dvfs loops (governor/controllers/ctl_govd.c). */
struct ctl_govd_tuning {
	double slack_low, slack_high, raise_gain, lower_pct_per_s, surge_queue, peak_memory_s;
	double lower_min_requests;
	double horizon_s, r_fast_c_per_w, thermal_margin_c, sat_hold_s, sat_s, tbt_exponent;
	double thermal_floor_share, junction_lag_s;
};
struct ctl_govd_mix {
	double tbt_at_max[2]; /* BF16, mix: TBT/target scaled to the max clock (EWMA) */
	double sat_since_s;
	double last_sat_s, hold_s; /* back-off of the BF16 hold */
	bool last_bf16;
	double mode_since_s;       /* when the current mode began */
};
/* Precision mode under load: the new end of the BF16 hold (see ctl_govd.c). */
double ctl_govd_mix_decide(const struct ctl_govd_tuning *t, struct ctl_govd_mix *m, double now_s,
		       double bf16_until_s, double tbt_ratio, double f_frac);
/* The precision benefit learned per batch range (docs/govd-controller.md,
 * "The benefit learned"): energy per generated token, as a ratio of two
 * EWMAs (energy, tokens; time constant tau_s), per mode (0 BF16, 1 low
 * precision on some slice) and bucket of the running batch, from the
 * periods a mode has been in force settle_s or longer. Low precision pays
 * in a bucket until both modes have min_s behind them there and low's
 * J/token is not under (1 - margin) x BF16's; then BF16 for a hold that
 * doubles on each repeat (to an hour) and halves back when low pays again. */
#define GOVD_BENEFIT_BUCKETS 4
struct ctl_govd_benefit_cfg {
	double tau_s, settle_s, min_s, margin, hold_s;
};
struct ctl_govd_benefit {
	double e_j[2][GOVD_BENEFIT_BUCKETS], tok[2][GOVD_BENEFIT_BUCKETS];
	double seen_s[2][GOVD_BENEFIT_BUCKETS];
	int mode;
	double mode_since_s;
	double until_s[GOVD_BENEFIT_BUCKETS]; /* BF16 in this bucket until */
	double hold_s[GOVD_BENEFIT_BUCKETS];
};
void ctl_govd_benefit_init(struct ctl_govd_benefit *b);
/* The bucket of a running batch: [0, 8), [8, 32), [32, 96), [96, inf). */
int ctl_govd_benefit_bucket(uint64_t running);
/* One period: learns from what mode (in force over the period just gone)
 * delivered, then returns true when low precision does not pay at this
 * load (serve BF16). */
bool ctl_govd_benefit_step(struct ctl_govd_benefit *b, const struct ctl_govd_benefit_cfg *c, double now_s,
		       double period_s, int mode, uint64_t running, double tokens, double energy_j);
/* The learned J/token of mode in bucket (NaN: not seen min_s yet). */
double ctl_govd_benefit_j_per_token(const struct ctl_govd_benefit *b, const struct ctl_govd_benefit_cfg *c,
				int mode, int bucket);
/* Worst quantile over its target among q_ms[SLA_N_ROWS] (one metric, or -1:
 * all); 0 when none has data. */
double ctl_govd_tail_ratio(const double *q_ms, const struct policy *pol, int only_metric);
/* Worst short-window quantile over its SLA target, across the policy's
 * targets of one metric (enum sla_metric) or all (-1); 0 when none has data. */
double ctl_govd_sla_ratio(const struct gov_estimates *e, const struct policy *pol, int only_metric);
/* Same for this period's own TTFT/TBT p99 against the p99 targets. */
double ctl_govd_period_ratio(const struct gov_estimates *e, const struct policy *pol);
/* Lowest clock the remembered TBT peak (scaled to the max clock) allows. */
/* Evidence on demand (docs/govd-controller.md, "Evidence on demand"): the
 * shadow rate to ask per slice. A slice INT8 may serve whose gate is
 * undecided (closed, its drop's lower bound not over max_drop) gets the
 * policy's probation_rate; one INT8 serves gets the rate at which its
 * detectors catch a drift to 3 x max_drop within max_detect_s, at its
 * measured request rate. Nothing is asked at or under the rate the policy
 * says the server runs (rule shadow_rate). The asks' extra re-runs
 * together stay within shadow_budget of all requests (scaled down
 * evenly). int8_served: the INT8 share the controller serves per slice;
 * need: per slice, the shadow rate the expected-value gate
 * (int8_max_detect_s) needs, at the slice's sustained request rate, before
 * it lets the slice's rung serve (0: no such gate; INFINITY: ask nothing).
 * A rung that gate holds shut while its quality gate is open
 * (out->detect_held_s) is asked the detection-delay rate too (`held`). Any
 * ask that, after the budget, stays under the need buys nothing: it is
 * dropped and its share of the budget goes to the other asks. row: per
 * slice, the gate row (est_q_row) of its rung in question.
 * decided_bad (per slice, the caller's state): set when the lower bound
 * passes max_drop, cleared only when it falls under 0.8 x max_drop or the
 * gate opens, so a bound near the threshold does not toggle the ask every
 * period. Pure but for that state. */
void ctl_govd_evidence(const struct ctl_input *in, const double *int8_served,
		       const double *need, const size_t *row, bool *decided_bad,
		       struct ctl_output *out);
uint32_t ctl_govd_load_floor_khz(const struct ctl_govd_tuning *t, double tbt_peak_at_max,
			     uint32_t floor_khz, uint32_t fmax_khz);
/* Latency loop: updates *f_khz; returns the reason bit. */
uint32_t ctl_govd_latency_step(const struct ctl_govd_tuning *t, double *f_khz, double ratio, bool busy,
			   uint64_t queue_len, double period_s, uint32_t floor_khz,
			   uint32_t idle_khz, uint32_t fmax_khz);
struct ctl_govd_thermal {
	bool have;
	double sink_c, sink_rate_c_per_s, t_s;
	double p_lag_w; /* the power as the junction has followed it so far */
	double floor_w; /* the last step's floor when it held the prediction (NaN: it did not) */
};
/* Thermal loop: the accelerator power that keeps the junction at the
 * ceiling minus the margin on the heatsink extrapolated horizon_s ahead
 * (*p_allow_w, p_min..p_max). Returns GOV_R_THERMAL_PREDICT when that is
 * below p_max, else 0. */
uint32_t ctl_govd_thermal_step(const struct ctl_govd_tuning *t, struct ctl_govd_thermal *th,
			   const struct gov_estimates *e, double ceiling_c, double p_min_w,
			   double p_max_w, double *p_allow_w);

#endif
