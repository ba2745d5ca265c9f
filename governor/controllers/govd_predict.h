/* The govd controller's model (docs/govd-controller.md, "Predict, do not
 * creep"): learned online from the controller's own telemetry, never from
 * the scenario. Recursive least squares with forgetting (pure maths):
 *
 *   ln TBT p99  = a0 + a1 ln(f/fmax) + a2 ln(1 + running)          per precision mode
 *   ln TTFT p99 = b0 + b1 ln(f/fmax) + b2 ln(1 + running + queue)   per precision mode
 *   P_accel     = c0 + c1 phi + c2 u + c3 u phi + c4 u phi^2        (phi = f/fmax, u = busy share)
 *
 * (throttLL'eM's per-iteration latency predictor, GreenLLM's split of the
 * latency and the energy question.) Every period the controller asks for the
 * clock with the least predicted power among those predicted to keep both
 * tails under the SLA target times a margin, with the busy share a lower
 * clock would cause (u(f) = u (f_now / f)^-a1) under a ceiling. */
#ifndef GOVD_GOVERNOR_GOVD_PREDICT_H
#define GOVD_GOVERNOR_GOVD_PREDICT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "governor/policy/opoint.h"

#define GP_MAX_K 5

struct gp_rls {
	size_t k;
	double theta[GP_MAX_K];
	double p[GP_MAX_K][GP_MAX_K];
	double p0_trace;     /* the prior's trace: P never grows past it (no wind-up) */
	double lambda;       /* forgetting factor per update */
	double resid_var;    /* EWMA of the squared a-priori residual */
	uint64_t n;
};

/* theta0: the prior mean; var0: its diagonal covariance. */
void gp_rls_init(struct gp_rls *r, size_t k, const double *theta0, const double *var0,
		 double lambda, double resid_var0);
double gp_rls_predict(const struct gp_rls *r, const double *x);
void gp_rls_update(struct gp_rls *r, const double *x, double y);

struct gp_model {
	struct gp_rls tbt[2], ttft[2]; /* [0] BF16, [1] INT8 on some slice */
	struct gp_rls power;
	double fmin_mhz, fmax_mhz, fseen_lo_mhz, fseen_hi_mhz;
};

/* Priors: TBT ~ f^-0.8 (tbt_exponent), TTFT ~ f^-1; the power model starts
 * flat and knows nothing (the controller then takes the lowest feasible
 * clock until it has seen clocks spread over power_spread_mhz). */
void gp_model_init(struct gp_model *m, double fmin_mhz, double fmax_mhz, double tbt_exponent);

struct gp_obs {
	int mode;                /* 0 BF16, 1 mix */
	double clk_mhz;          /* effective clock this period */
	double running, queue;
	double util;             /* busy share 0..1, NAN if unknown */
	double power_w;          /* accelerator, NAN if unknown */
	double tbt_p99_ms, ttft_p99_ms; /* this period's, NAN when none */
};
void gp_observe(struct gp_model *m, const struct gp_obs *o);

struct gp_query {
	int mode;
	double clk_now_mhz, running, queue, util;
	double tbt_target_ms, ttft_target_ms; /* 0: not a target */
	double margin;       /* predicted tail <= target * margin */
	double sigmas;       /* ... after adding this many residual sd (log) */
	double util_max;     /* busy share a lower clock may cause */
	double step_mhz;     /* candidate spacing */
	double floor_mhz;    /* lowest candidate */
	double power_spread_mhz; /* clocks seen over this span before power decides */
};
struct gp_choice {
	double clk_mhz;
	double tbt_pred_ms, ttft_pred_ms, power_pred_w;
	bool feasible;       /* some candidate met the query; else clk_mhz = fmax */
	bool by_power;       /* the power model chose among the feasible ones */
	/* The next lower candidate (clk_mhz - step): what was predicted there and
	 * why it was not taken (lower_mhz NaN, limit FLOOR: none above the floor). */
	double lower_mhz, tbt_lower_ms, ttft_lower_ms;
	enum gov_why_limit lower_limit;
};
void gp_choose(const struct gp_model *m, const struct gp_query *q, struct gp_choice *c);

/* The clock exponents the model has learned (-d ln p99 / d ln f) for one
 * precision mode, kept to a plausible range: TBT between memory-bound
 * decode (0.3) and compute-bound (1.2), TTFT (prefill and its queue) 0.3-1.5. */
void gp_clock_exponents(const struct gp_model *m, int mode, double *tbt, double *ttft);

#endif
