/* The govd controller's online model (governor/controllers/govd_predict.h). Pure. */
#include "governor/controllers/govd_predict.h"

#include <assert.h>
#include <math.h>
#include <string.h>

void gp_rls_init(struct gp_rls *r, size_t k, const double *theta0, const double *var0,
		 double lambda, double resid_var0)
{
	assert(k <= GP_MAX_K);
	memset(r, 0, sizeof(*r));
	r->k = k;
	r->lambda = lambda;
	r->resid_var = resid_var0;
	for (size_t i = 0; i < k; i++) {
		r->theta[i] = theta0[i];
		r->p[i][i] = var0[i];
		r->p0_trace += var0[i];
	}
}

double gp_rls_predict(const struct gp_rls *r, const double *x)
{
	double y = 0;
	for (size_t i = 0; i < r->k; i++)
		y += r->theta[i] * x[i];
	return y;
}

void gp_rls_update(struct gp_rls *r, const double *x, double y)
{
	size_t k = r->k;
	double px[GP_MAX_K] = { 0 }, den = r->lambda;
	if (!isfinite(y))
		return;
	for (size_t i = 0; i < k; i++) {
		for (size_t j = 0; j < k; j++)
			px[i] += r->p[i][j] * x[j];
		den += x[i] * px[i];
	}
	double err = y - gp_rls_predict(r, x);
	r->resid_var += 0.02 * (err * err - r->resid_var);
	for (size_t i = 0; i < k; i++)
		r->theta[i] += px[i] / den * err;
	double trace = 0;
	for (size_t i = 0; i < k; i++)
		for (size_t j = 0; j < k; j++) {
			r->p[i][j] -= px[i] * px[j] / den;
			if (i == j)
				trace += r->p[i][j];
		}
	/* Forget only while the covariance is under the prior's: without
	 * excitation (one clock for an hour) P would otherwise blow up. */
	if (trace / r->lambda < r->p0_trace)
		for (size_t i = 0; i < k; i++)
			for (size_t j = 0; j < k; j++)
				r->p[i][j] /= r->lambda;
	r->n++;
}

void gp_model_init(struct gp_model *m, double fmin_mhz, double fmax_mhz, double tbt_exponent)
{
	memset(m, 0, sizeof(*m));
	m->fmin_mhz = fmin_mhz;
	m->fmax_mhz = fmax_mhz;
	m->fseen_lo_mhz = INFINITY;
	m->fseen_hi_mhz = -INFINITY;
	/* Weak priors: a 30 ms TBT p99 and a 300 ms TTFT p99 at the max clock
	 * with one request running; they are overwritten within minutes. */
	const double tbt0[3] = { log(30.0), -tbt_exponent, 0.3 }, tbtv[3] = { 4, 0.05, 0.2 };
	const double ttft0[3] = { log(300.0), -1.0, 0.5 }, ttftv[3] = { 4, 0.1, 0.5 };
	for (int i = 0; i < 2; i++) {
		gp_rls_init(&m->tbt[i], 3, tbt0, tbtv, 0.999, 0.05);
		gp_rls_init(&m->ttft[i], 3, ttft0, ttftv, 0.999, 0.2);
	}
	const double p0[5] = { 0, 0, 0, 0, 0 }, pv[5] = { 1e5, 1e5, 1e5, 1e5, 1e5 };
	gp_rls_init(&m->power, 5, p0, pv, 0.9995, 100);
}

static void lat_x(double x[3], double f_mhz, double fmax_mhz, double load)
{
	x[0] = 1;
	x[1] = log(f_mhz / fmax_mhz);
	x[2] = log1p(load > 0 ? load : 0);
}

static void pow_x(double x[5], double f_mhz, double fmax_mhz, double u)
{
	double phi = f_mhz / fmax_mhz;
	x[0] = 1;
	x[1] = phi;
	x[2] = u;
	x[3] = u * phi;
	x[4] = u * phi * phi;
}

void gp_observe(struct gp_model *m, const struct gp_obs *o)
{
	if (!(o->clk_mhz > 0))
		return;
	int mode = o->mode ? 1 : 0;
	double x[5];
	if (o->tbt_p99_ms > 0 && isfinite(o->tbt_p99_ms)) {
		lat_x(x, o->clk_mhz, m->fmax_mhz, o->running);
		gp_rls_update(&m->tbt[mode], x, log(o->tbt_p99_ms));
	}
	if (o->ttft_p99_ms > 0 && isfinite(o->ttft_p99_ms)) {
		lat_x(x, o->clk_mhz, m->fmax_mhz, o->running + o->queue);
		gp_rls_update(&m->ttft[mode], x, log(o->ttft_p99_ms));
	}
	if (isfinite(o->power_w) && isfinite(o->util)) {
		pow_x(x, o->clk_mhz, m->fmax_mhz, o->util);
		gp_rls_update(&m->power, x, o->power_w);
		m->fseen_lo_mhz = fmin(m->fseen_lo_mhz, o->clk_mhz);
		m->fseen_hi_mhz = fmax(m->fseen_hi_mhz, o->clk_mhz);
	}
}

/* The clock exponent the TBT model learned, kept to a plausible range:
 * decode is between memory-bound (0.3) and compute-bound (1.2). */
static double tbt_exponent(const struct gp_model *m, int mode)
{
	double a = -m->tbt[mode].theta[1];
	return a < 0.3 ? 0.3 : a > 1.2 ? 1.2 : a;
}

/* One candidate clock: its predicted tails (with the risk term), the busy
 * share it would cause, and the first constraint it breaks (NONE: feasible). */
struct gp_eval {
	double tbt_ms, ttft_ms, util;
	enum gov_why_limit limit;
};

static void gp_eval_at(const struct gp_model *m, const struct gp_query *q, double fr,
		       struct gp_eval *ev)
{
	int mode = q->mode ? 1 : 0;
	double x[3];
	double sd_tbt = sqrt(fmax(m->tbt[mode].resid_var, 0));
	double sd_ttft = sqrt(fmax(m->ttft[mode].resid_var, 0));
	double u_now = isfinite(q->util) ? q->util : 0;
	lat_x(x, fr, m->fmax_mhz, q->running);
	ev->tbt_ms = exp(gp_rls_predict(&m->tbt[mode], x) + q->sigmas * sd_tbt);
	lat_x(x, fr, m->fmax_mhz, q->running + q->queue);
	ev->ttft_ms = exp(gp_rls_predict(&m->ttft[mode], x) + q->sigmas * sd_ttft);
	ev->util = u_now * pow(q->clk_now_mhz / fr, tbt_exponent(m, mode));
	ev->limit = q->tbt_target_ms > 0 && ev->tbt_ms > q->tbt_target_ms * q->margin ? GOV_WHY_L_TBT
		    : q->ttft_target_ms > 0 && ev->ttft_ms > q->ttft_target_ms * q->margin
			? GOV_WHY_L_TTFT
		    : ev->util > q->util_max ? GOV_WHY_L_UTIL
					     : GOV_WHY_L_NONE;
}

void gp_choose(const struct gp_model *m, const struct gp_query *q, struct gp_choice *c)
{
	double x[5];
	bool power_known = m->fseen_hi_mhz - m->fseen_lo_mhz >= q->power_spread_mhz &&
			   m->power.n > 100;
	double lo = fmax(q->floor_mhz, m->fmin_mhz);
	memset(c, 0, sizeof(*c));
	c->clk_mhz = m->fmax_mhz;
	double best_p = INFINITY;
	double step = q->step_mhz > 0 ? q->step_mhz : 30;
	/* From the top down so that, power unknown, the last feasible clock
	 * is the lowest; a clock below an infeasible one is still tried (the
	 * TTFT model is not monotone in load, the TBT one is in f). */
	for (double f = m->fmax_mhz; f >= lo - 1e-9; f -= step) {
		double fr = fmax(f, lo);
		struct gp_eval ev;
		gp_eval_at(m, q, fr, &ev);
		if (ev.limit == GOV_WHY_L_NONE) {
			pow_x(x, fr, m->fmax_mhz, fmin(ev.util, 1));
			double p = power_known ? gp_rls_predict(&m->power, x) : fr;
			if (p < best_p) {
				best_p = p;
				c->clk_mhz = fr;
				c->tbt_pred_ms = ev.tbt_ms;
				c->ttft_pred_ms = ev.ttft_ms;
				c->power_pred_w = power_known ? p : NAN;
				c->feasible = true;
				c->by_power = power_known;
			}
		}
		if (fr <= lo)
			break;
	}
	if (!c->feasible) {
		/* At fmax by default: what the model predicts there. */
		struct gp_eval ev;
		gp_eval_at(m, q, c->clk_mhz, &ev);
		c->tbt_pred_ms = ev.tbt_ms;
		c->ttft_pred_ms = ev.ttft_ms;
		c->power_pred_w = NAN;
	}
	/* The explanation: the next lower candidate and why it lost. */
	double fl = c->clk_mhz - step;
	if (c->clk_mhz <= lo + 1e-9) {
		c->lower_mhz = c->tbt_lower_ms = c->ttft_lower_ms = NAN;
		c->lower_limit = GOV_WHY_L_FLOOR;
		return;
	}
	struct gp_eval ev;
	c->lower_mhz = fmax(fl, lo);
	gp_eval_at(m, q, c->lower_mhz, &ev);
	c->tbt_lower_ms = ev.tbt_ms;
	c->ttft_lower_ms = ev.ttft_ms;
	c->lower_limit = ev.limit != GOV_WHY_L_NONE ? ev.limit : GOV_WHY_L_POWER;
}

void gp_clock_exponents(const struct gp_model *m, int mode, double *tbt, double *ttft)
{
	double b = -m->ttft[mode ? 1 : 0].theta[1];
	*tbt = tbt_exponent(m, mode ? 1 : 0);
	*ttft = b < 0.3 ? 0.3 : b > 1.5 ? 1.5 : b;
}
