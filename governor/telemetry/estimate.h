/* Estimation: filtered rail power (EWMA), windowed latency quantiles from the
 * deltas of the cumulative serving histograms over the SLA window,
 * throughput, thermal headroom and its trend, per-slice quality counts.
 * Equations in docs/decision-log.md. Pure except for the heap it owns. */
#ifndef GOVD_GOVERNOR_ESTIMATE_H
#define GOVD_GOVERNOR_ESTIMATE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hist.h"
#include "common/sla.h"
#include "governor/telemetry/validate.h"
#include "hal/hal.h"

/* The quality gate's rows: one per (slice, low mode). A slice's INT8 row is
 * its index, its FP8 row (the precision ladder's first rung) HAL_MAX_SLICES
 * further: est_q_row(). */
#define EST_Q_ROWS (HAL_MAX_SLICES * HAL_LOW_N)
static inline size_t est_q_row(size_t slice, enum hal_low_mode mode)
{
	return (size_t)mode * HAL_MAX_SLICES + slice;
}

struct gov_estimates {
	double t_s;
	double power_w[HAL_RAIL_N]; /* EWMA filtered */
	double power_total_w;
	double temp_c[HAL_TEMP_N];  /* last good reading */
	double headroom_c;          /* ceiling - junction */
	double headroom_trend_c_per_s; /* EWMA of d(headroom)/dt; < 0: heating */
	double clk_mhz;
	double util;                /* busy share 0..1, NaN if unknown */
	double power_limit_w;
	uint32_t throttle;
	/* Serving, over the window (window_s may be shorter at the start). */
	bool serving_ok;
	double window_s;
	uint64_t window_requests, window_tokens, window_tokens_int8;
	double quantile_ms[SLA_N_ROWS]; /* by SLA_INDEX() (common/sla.h) */
	double tokens_per_s, requests_per_s, int8_token_share;
	/* Periods whose serving delta could not be stored (out of memory); the
	 * next successful period's delta carries their requests. Cumulative. */
	uint64_t window_errors;
	uint64_t queue_len, running;
	/* Quality over the window, per slice. */
	size_t n_slices;
	uint64_t q_samples[HAL_MAX_SLICES], q_mismatches[HAL_MAX_SLICES];
	double q_drop_est[HAL_MAX_SLICES];   /* window mismatches / samples, NaN if none */
	/* Requests of each slice completed in the window (0 where the server
	 * does not report slices): with q_samples, the shadow rate in force. */
	uint64_t slice_requests[HAL_MAX_SLICES];
	/* The quality gate's evidence per row (est_q_row: slice and mode): the
	 * policy's offline prior plus
	 * every online shadow sample since start; once the regression detector
	 * fires, only the online samples after its last alarm. q_drop_upper:
	 * its one-sided Wilson upper bound at the slice's confidence (1 without
	 * evidence); q_gate_open: at least min_samples behind it and the bound
	 * <= max_drop, so after an alarm it reopens only once fresh samples show
	 * the slice recovered. */
	uint64_t q_total_samples[EST_Q_ROWS], q_total_mismatches[EST_Q_ROWS]; /* online */
	uint64_t q_evidence_n[EST_Q_ROWS];
	double q_drop_upper[EST_Q_ROWS];
	double q_drop_lower[EST_Q_ROWS]; /* its lower twin (0 without evidence) */
	/* The lower bound with the prior counted before it is confirmed (as
	 * q_drop_lower once it is, or once it is dropped): over max_drop, the
	 * qualification run alone already puts the slice over its threshold. */
	double q_drop_lower_prior[EST_Q_ROWS];
	double q_cusum[EST_Q_ROWS];      /* regression CUSUM statistic (log-likelihood ratio) */
	bool q_alarm[EST_Q_ROWS];        /* the detector fired this run: the prior is dropped */
	bool q_gate_open[EST_Q_ROWS];
	/* The gate with the prior counted before confirm_samples online
	 * samples stand beside it (as q_gate_open once they do, or once the
	 * prior is dropped). */
	bool q_gate_open_prior[EST_Q_ROWS];
	/* Slice-periods whose shadow-sample increase exceeded
	 * ESTIMATE_Q_MAX_PER_PERIOD: not counted. Cumulative. */
	uint64_t q_rejected_periods;
	/* Short window (estimate_cfg.short_window_s): the fast latency signal
	 * controllers steer with; the SLA window above is what is judged. */
	double short_window_s;
	uint64_t short_requests;
	double short_quantile_ms[SLA_N_ROWS];
	uint64_t period_requests; /* this period's delta */
	uint64_t period_tokens;   /* ... and its generated tokens */
	double period_p99_ms[SLA_N_METRICS]; /* this period's alone, NAN if none */
	/* This period's samples over estimate_cfg.over_ms (0 where none is
	 * set), and all its samples, per metric: a share of the samples over
	 * the SLA's p99 target pooled over any set of periods (the window
	 * search judges its heavy periods on them). */
	uint64_t period_over[SLA_N_METRICS], period_n[SLA_N_METRICS];
	/* Validation result of this period. */
	unsigned n_faults;
	bool critical_fault;
};

/* Per-slice quality gate settings (resolved policy_slice_rule). */
struct est_quality_cfg {
	double max_drop, confidence;
	uint32_t min_samples;
	uint32_t prior_samples, prior_mismatches;
	/* Online samples before the prior counts, and only while they are
	 * consistent with it (docs/govd-controller.md); 0: at once. */
	uint32_t confirm_samples;
};

struct estimate_cfg {
	double period_s;
	double ewma_tau_s;
	double trend_tau_s;
	double window_s;
	double ceiling_c;
	double short_window_s;  /* 0: ESTIMATE_SHORT_WINDOW_S */
	double over_ms[SLA_N_METRICS]; /* period_over's thresholds (the p99 targets; 0: none) */
	size_t n_q;             /* slices with gate settings; others: no gate (bound 1) */
	struct est_quality_cfg q[EST_Q_ROWS]; /* by est_q_row; FP8 rows zero: no gate */
};
#define ESTIMATE_SHORT_WINDOW_S 10.0
/* Shadow samples one slice may add in one period (any backend); more is
 * dropped as implausible. The serving backend's own bound
 * (quality_max_samples, default 10,000) is tighter. */
#define ESTIMATE_Q_MAX_PER_PERIOD UINT64_C(1000000000)
/* The regression detector: its alternative is this multiple of the slice's
 * max_drop, its threshold (log-likelihood ratio) ESTIMATE_CUSUM_H. With a
 * prior at 0.67 % and max_drop 1 %: about 1 % false alarms per 20,000
 * in-control shadow samples, a shift to 4 % caught after ~245 samples
 * (simulated; docs/govd-controller.md). */
#define ESTIMATE_CUSUM_P1_RATIO 3.0
#define ESTIMATE_CUSUM_H 9.0
/* A second CUSUM for the small, slow shifts (a slow drift, a prior that is
 * wrong by a little): alternative 1.5 x max_drop, threshold 8. Simulated
 * (prior 33/5000, max_drop 1 %, 300 runs): no false alarm in 20,000
 * in-control samples; 1.5 % caught after ~1960 samples, 2 % after ~950
 * (the 3x detector: ~3200 and ~1270). */
#define ESTIMATE_CUSUM_SMALL_P1_RATIO 1.5
#define ESTIMATE_CUSUM_SMALL_H 8.0
/* The prior-consistency test: the online mismatches of a slice, against
 * the prior's rate, reject the prior below this tail probability. With a
 * prior at 0.67 %: a slice really at 4 % is rejected after ~150 samples,
 * at 2 % after ~600 (the CUSUMs: ~245 and ~950). */
#define ESTIMATE_PRIOR_REJECT_P 0.001
/* Whether online evidence (n, k since start) rejects a prior (prior_n,
 * prior_k). Pure; exposed for tests. */
bool estimate_prior_rejected(uint64_t n_online, uint64_t k_online, uint32_t prior_n,
			     uint32_t prior_k);
/* The documented detection delay, in shadow samples, of a slice whose true
 * drop is p_true (> max_drop) against the prior (prior_k of prior_n; none: max_drop/2):
 * ESTIMATE_DETECT_ALLOWANCE x the expected samples (Wald's approximation
 * h / E[log-likelihood ratio per sample]) of the faster of the two CUSUMs,
 * which start from zero at any onset. INFINITY where neither drifts up
 * (p_true too close to p0). Pure; the INT8 gate of the govd controller and
 * the benchmark's "breach beyond the detection delay" both use it. */
double estimate_detect_samples(double p_true, uint32_t prior_n, uint32_t prior_k, double max_drop);
/* The run length of a CUSUM spreads about its mean; twice the mean covers
 * >= 95 % of the runs at 1.5-5 % against a 1 % threshold (simulated,
 * docs/govd-controller.md, "Detection delay"). */
#define ESTIMATE_DETECT_ALLOWANCE 2.0

struct est_sparse; /* one period's histogram delta, sparse */

struct est_period {
	uint64_t t_ms;
	uint64_t requests, tokens, tokens_int8;
	uint64_t q_samples[HAL_MAX_SLICES], q_mismatches[HAL_MAX_SLICES];
	uint64_t q_samples_fp8[HAL_MAX_SLICES], q_mismatches_fp8[HAL_MAX_SLICES];
	uint64_t slice_requests[HAL_MAX_SLICES];
	struct est_sparse *h[SLA_N_METRICS];
};

struct estimator {
	struct estimate_cfg cfg;
	double alpha, trend_alpha;
	bool have_power[HAL_RAIL_N], have_temp[HAL_TEMP_N], have_headroom;
	double last_headroom, last_headroom_t_s;
	struct gov_estimates est;
	/* Window: ring of per-period deltas plus their running sum. */
	size_t ring_len, ring_head, ring_n;
	struct est_period *ring;
	struct hist win[SLA_N_METRICS];
	uint64_t win_requests, win_tokens, win_tokens_int8;
	size_t short_len;          /* periods in the short window (<= ring_len) */
	struct hist win_short[SLA_N_METRICS];
	uint64_t short_requests;
	bool q_prior_dropped[EST_Q_ROWS];
	double q_cusum_small[EST_Q_ROWS]; /* the small-shift CUSUM */
	double q_z[EST_Q_ROWS]; /* normal quantile of each row's confidence */
	uint64_t q_base_samples[EST_Q_ROWS], q_base_mismatches[EST_Q_ROWS]; /* at the last alarm */
	uint64_t win_q_samples[HAL_MAX_SLICES], win_q_mismatches[HAL_MAX_SLICES];
	uint64_t win_slice_requests[HAL_MAX_SLICES];
	/* Previous cumulative snapshot. */
	bool have_prev;
	struct hist prev[SLA_N_METRICS];
	uint64_t prev_requests, prev_tokens, prev_tokens_int8;
	uint64_t prev_slice_requests[HAL_MAX_SLICES];
	bool have_prev_q;
	uint64_t prev_q_samples[HAL_MAX_SLICES], prev_q_mismatches[HAL_MAX_SLICES];
	uint64_t prev_q_samples_fp8[HAL_MAX_SLICES], prev_q_mismatches_fp8[HAL_MAX_SLICES];
};

int estimate_init(struct estimator *e, const struct estimate_cfg *cfg);
void estimate_fini(struct estimator *e);
/* One period. serving / quality may be NULL (not offered). faults and
 * n_faults: the validator's verdict for in[] and its count (validate_step's
 * return); faulted readings are not used. */
const struct gov_estimates *estimate_step(struct estimator *e, uint64_t now_ms,
					  const struct gov_reading in[GOV_SIG_N],
					  const enum gov_fault faults[GOV_SIG_N], unsigned n_faults,
					  uint32_t throttle,
					  const struct hal_serving *serving,
					  const struct hal_quality *quality);
/* Wilson score upper bound (z = 1.96) of a binomial share. */
double wilson_upper(uint64_t k, uint64_t n);
/* Same at a one-sided confidence level (0.5 .. 0.9999). */
double wilson_upper_conf(double k, double n, double confidence);
/* Same with the normal quantile z of the confidence already taken. */
double wilson_upper_z(double k, double n, double z);
/* The lower bound at the same z (0 without evidence). */
double wilson_lower_z(double k, double n, double z);
/* Standard normal quantile (Acklam's rational approximation, |err| < 1.2e-9). */
double normal_quantile(double p);

/* The SLA window (window_s) as sla_judge() takes it. */
struct sla_window_obs estimate_sla_obs(const struct gov_estimates *e);

#endif
