#include "governor/telemetry/estimate.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct est_sparse {
	size_t n, cap;
	uint16_t *idx;
	uint64_t *cnt;
	uint64_t obs;
	double sum_ms;
};

double wilson_upper(uint64_t k, uint64_t n)
{
	if (n == 0)
		return 1.0;
	const double z = 1.96;
	double nn = (double)n, p = (double)k / nn;
	double den = 1 + z * z / nn;
	double c = p + z * z / (2 * nn);
	double r = z * sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn));
	return fmin(1.0, (c + r) / den);
}

double normal_quantile(double p)
{
	static const double a[] = { -3.969683028665376e+01, 2.209460984245205e+02,
				    -2.759285104469687e+02, 1.383577518672690e+02,
				    -3.066479806614716e+01, 2.506628277459239e+00 };
	static const double b[] = { -5.447609879822406e+01, 1.615858368580409e+02,
				    -1.556989798598866e+02, 6.680131188771972e+01,
				    -1.328068155288572e+01 };
	static const double c[] = { -7.784894002430293e-03, -3.223964580411365e-01,
				    -2.400758277161838e+00, -2.549732539343734e+00,
				    4.374664141464968e+00,  2.938163982698783e+00 };
	static const double d[] = { 7.784695709041462e-03, 3.224671290700398e-01,
				    2.445134137142996e+00, 3.754408661907416e+00 };
	const double lo = 0.02425;

	if (!(p > 0))
		return -INFINITY;
	if (!(p < 1))
		return INFINITY;
	if (p < lo) {
		double q = sqrt(-2 * log(p));
		return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		       ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	if (p > 1 - lo)
		return -normal_quantile(1 - p);
	double q = p - 0.5, r = q * q;
	return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
	       (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double wilson_upper_conf(double k, double n, double confidence)
{
	return wilson_upper_z(k, n, normal_quantile(confidence));
}

/* The Wilson score interval's bound, side +1 upper, -1 lower (n > 0). */
static double wilson_bound(double k, double n, double z, double side)
{
	double p = k / n;
	double den = 1 + z * z / n;
	double c = p + z * z / (2 * n);
	double r = z * sqrt(fmax(0, p * (1 - p)) / n + z * z / (4 * n * n));
	return (c + side * r) / den;
}

double wilson_upper_z(double k, double n, double z)
{
	return n > 0 ? fmin(1.0, wilson_bound(k, n, z, +1)) : 1.0;
}

double wilson_lower_z(double k, double n, double z)
{
	return n > 0 ? fmax(0.0, wilson_bound(k, n, z, -1)) : 0.0;
}

int estimate_init(struct estimator *e, const struct estimate_cfg *cfg)
{
	if (!(cfg->period_s > 0) || !(cfg->window_s > 0) || !(cfg->ewma_tau_s > 0) ||
	    !(cfg->trend_tau_s > 0))
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	e->cfg = *cfg;
	/* Once, not per period; an FP8 row the policy gives no rung has no gate. */
	for (size_t s = 0; s < cfg->n_q && s < HAL_MAX_SLICES; s++) {
		e->q_z[s] = normal_quantile(cfg->q[s].confidence);
		size_t f8 = est_q_row(s, HAL_LOW_FP8);
		if (cfg->q[f8].max_drop > 0)
			e->q_z[f8] = normal_quantile(cfg->q[f8].confidence);
	}
	/* Discrete EWMA with time constant tau sampled every period. */
	e->alpha = 1.0 - exp(-cfg->period_s / cfg->ewma_tau_s);
	e->trend_alpha = 1.0 - exp(-cfg->period_s / cfg->trend_tau_s);
	e->ring_len = (size_t)ceil(cfg->window_s / cfg->period_s - 1e-9);
	if (e->ring_len < 1)
		e->ring_len = 1;
	double sw = cfg->short_window_s > 0 ? cfg->short_window_s : ESTIMATE_SHORT_WINDOW_S;
	e->short_len = (size_t)ceil(sw / cfg->period_s - 1e-9);
	if (e->short_len < 1)
		e->short_len = 1;
	if (e->short_len > e->ring_len)
		e->short_len = e->ring_len;
	e->ring = calloc(e->ring_len, sizeof(*e->ring));
	if (!e->ring)
		return -ENOMEM;
	for (size_t i = 0; i < e->ring_len; i++)
		for (int h = 0; h < SLA_N_METRICS; h++) {
			e->ring[i].h[h] = calloc(1, sizeof(struct est_sparse));
			if (!e->ring[i].h[h]) {
				estimate_fini(e);
				return -ENOMEM;
			}
		}
	for (int h = 0; h < SLA_N_METRICS; h++) {
		hist_reset(&e->win[h]);
		hist_reset(&e->win_short[h]);
	}
	for (int r = 0; r < HAL_RAIL_N; r++)
		e->est.power_w[r] = NAN;
	for (int t = 0; t < HAL_TEMP_N; t++)
		e->est.temp_c[t] = NAN;
	e->est.util = NAN;
	return 0;
}

void estimate_fini(struct estimator *e)
{
	if (e->ring) {
		for (size_t i = 0; i < e->ring_len; i++)
			for (int h = 0; h < SLA_N_METRICS; h++) {
				if (!e->ring[i].h[h])
					continue;
				free(e->ring[i].h[h]->idx);
				free(e->ring[i].h[h]->cnt);
				free(e->ring[i].h[h]);
			}
		free(e->ring);
	}
	memset(e, 0, sizeof(*e));
}

static int sparse_from_delta(struct est_sparse *s, const struct hist *now, const struct hist *prev)
{
	s->n = 0;
	s->obs = now->n - prev->n;
	s->sum_ms = now->sum_ms - prev->sum_ms;
	for (int i = 0; i < HIST_NBUCKETS; i++) {
		uint64_t d = now->count[i] - prev->count[i];
		if (!d)
			continue;
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 32;
			uint16_t *idx = realloc(s->idx, cap * sizeof(*idx));
			if (!idx)
				return -ENOMEM;
			s->idx = idx;
			uint64_t *cnt = realloc(s->cnt, cap * sizeof(*cnt));
			if (!cnt)
				return -ENOMEM;
			s->cnt = cnt;
			s->cap = cap;
		}
		s->idx[s->n] = (uint16_t)i;
		s->cnt[s->n] = d;
		s->n++;
	}
	return 0;
}

static void sparse_apply(struct hist *w, const struct est_sparse *s, int sign)
{
	for (size_t i = 0; i < s->n; i++) {
		if (sign > 0)
			w->count[s->idx[i]] += s->cnt[i];
		else
			w->count[s->idx[i]] -= s->cnt[i];
	}
	if (sign > 0) {
		w->n += s->obs;
		w->sum_ms += s->sum_ms;
	} else {
		w->n -= s->obs;
		w->sum_ms -= s->sum_ms;
	}
}

/* Quantile of one period's delta (buckets are in increasing order); the
 * bucket's upper edge, NAN when empty. */
static double sparse_quantile(const struct est_sparse *s, double q)
{
	if (!s->obs)
		return NAN;
	double want = q * (double)s->obs, acc = 0;
	for (size_t i = 0; i < s->n; i++) {
		acc += (double)s->cnt[i];
		if (acc >= want)
			return hist_bucket_upper_ms(s->idx[i]);
	}
	return s->n ? hist_bucket_upper_ms(s->idx[s->n - 1]) : NAN;
}

/* Observations in buckets that may hold a value over value_ms (bucket
 * resolution: the bucket holding value_ms counts, so a share over a target
 * errs high); 0 for value_ms 0 (no threshold). */
static uint64_t sparse_over(const struct est_sparse *s, double value_ms)
{
	uint64_t n = 0;
	if (!(value_ms > 0))
		return 0;
	for (size_t i = 0; i < s->n; i++)
		if (hist_bucket_upper_ms(s->idx[i]) > value_ms)
			n += s->cnt[i];
	return n;
}

static void sparse_clear(struct est_sparse *s)
{
	s->n = 0;
	s->obs = 0;
	s->sum_ms = 0;
}

/* One slice's shadow-sample increase since the previous read. A pair
 * restarts together: either going back means both count from zero. More
 * than a period can hold is no evidence: dropped whole (the backend bounds
 * its peers; this bounds any backend, and keeps the window sums from
 * wrapping). */
static void q_delta(struct estimator *e, uint64_t n_now, uint64_t k_now, uint64_t n_prev,
		    uint64_t k_prev, uint64_t *dn_out, uint64_t *dk_out)
{
	bool reset = n_now < n_prev || k_now < k_prev;
	uint64_t dn = reset ? n_now : n_now - n_prev;
	uint64_t dk = reset ? k_now : k_now - k_prev;
	if (dn > ESTIMATE_Q_MAX_PER_PERIOD) {
		dn = dk = 0;
		e->est.q_rejected_periods++;
	}
	*dn_out = dn;
	*dk_out = dk < dn ? dk : dn;
}

/* Drops the oldest period from the running window sums. */
static void ring_pop(struct estimator *e)
{
	size_t tail = (e->ring_head + e->ring_len - e->ring_n) % e->ring_len;
	struct est_period *p = &e->ring[tail];

	for (int h = 0; h < SLA_N_METRICS; h++)
		sparse_apply(&e->win[h], p->h[h], -1);
	e->win_requests -= p->requests;
	e->win_tokens -= p->tokens;
	e->win_tokens_int8 -= p->tokens_int8;
	for (int s = 0; s < HAL_MAX_SLICES; s++) {
		e->win_q_samples[s] -= p->q_samples[s];
		e->win_slice_requests[s] -= p->slice_requests[s];
		e->win_q_mismatches[s] -= p->q_mismatches[s];
	}
	e->ring_n--;
}

/* A cumulative counter below its last snapshot restarted (server or
 * exporter restart): what it holds now was counted since the restart, so
 * the delta is taken against zero. Unsigned now - prev would wrap to ~2^64
 * and flood the window, the throughput and the quality gate's totals. */
static uint64_t counter_delta(uint64_t now, uint64_t prev)
{
	return now >= prev ? now - prev : now;
}

static bool hist_went_back(const struct hist *now, const struct hist *prev)
{
	if (now->n < prev->n)
		return true;
	for (int i = 0; i < HIST_NBUCKETS; i++)
		if (now->count[i] < prev->count[i])
			return true;
	return false;
}

static int window_update(struct estimator *e, uint64_t now_ms, const struct hal_serving *sv,
			 const struct hal_quality *q)
{
	static const struct hist zero_hist;

	/* The period short_len back leaves the short window (before ring_pop
	 * and the overwrite below, which may reuse its slot). */
	if (e->ring_n >= e->short_len) {
		size_t out = (e->ring_head + e->ring_len - e->short_len) % e->ring_len;
		for (int h = 0; h < SLA_N_METRICS; h++)
			sparse_apply(&e->win_short[h], e->ring[out].h[h], -1);
		e->short_requests -= e->ring[out].requests;
	}
	if (e->ring_n == e->ring_len)
		ring_pop(e);
	struct est_period *p = &e->ring[e->ring_head];
	int rc = 0;

	p->t_ms = now_ms;
	p->requests = p->tokens = p->tokens_int8 = 0;
	memset(p->q_samples, 0, sizeof(p->q_samples));
	memset(p->q_mismatches, 0, sizeof(p->q_mismatches));
	memset(p->q_samples_fp8, 0, sizeof(p->q_samples_fp8));
	memset(p->q_mismatches_fp8, 0, sizeof(p->q_mismatches_fp8));
	memset(p->slice_requests, 0, sizeof(p->slice_requests));
	for (int h = 0; h < SLA_N_METRICS; h++)
		sparse_clear(p->h[h]);

	if (sv && sv->valid && sv->ttft && sv->tbt && sv->e2e) {
		const struct hist *now[SLA_N_METRICS] = { [SLA_TTFT] = sv->ttft,
						    [SLA_TBT] = sv->tbt,
						    [SLA_E2E] = sv->e2e };
		if (e->have_prev) {
			for (int h = 0; h < SLA_N_METRICS && !rc; h++)
				rc = sparse_from_delta(p->h[h], now[h],
						       hist_went_back(now[h], &e->prev[h]) ? &zero_hist
											   : &e->prev[h]);
			if (!rc) {
				p->requests = counter_delta(sv->requests_completed, e->prev_requests);
				p->tokens = counter_delta(sv->tokens_generated, e->prev_tokens);
				p->tokens_int8 = counter_delta(sv->tokens_int8, e->prev_tokens_int8);
				if (p->tokens_int8 > p->tokens)
					p->tokens_int8 = p->tokens;
				for (size_t i = 0; i < sv->n_slices && i < HAL_MAX_SLICES; i++) {
					uint64_t d = counter_delta(sv->slice_completed[i],
								   e->prev_slice_requests[i]);
					p->slice_requests[i] = d < p->requests ? d : p->requests;
				}
			}
		}
		/* On failure keep the old snapshot: the next period's delta then
		 * carries this period's requests instead of losing them. */
		if (!rc) {
			for (int h = 0; h < SLA_N_METRICS; h++)
				e->prev[h] = *now[h];
			e->prev_requests = sv->requests_completed;
			e->prev_tokens = sv->tokens_generated;
			e->prev_tokens_int8 = sv->tokens_int8;
			for (size_t i = 0; i < sv->n_slices && i < HAL_MAX_SLICES; i++)
				e->prev_slice_requests[i] = sv->slice_completed[i];
			e->have_prev = true;
		}
	}
	if (q && q->valid) {
		size_t n = q->n_slices < HAL_MAX_SLICES ? q->n_slices : HAL_MAX_SLICES;
		if (e->have_prev_q)
			for (size_t s = 0; s < n; s++) {
				q_delta(e, q->samples[s], q->mismatches[s], e->prev_q_samples[s],
					e->prev_q_mismatches[s], &p->q_samples[s], &p->q_mismatches[s]);
				q_delta(e, q->samples_fp8[s], q->mismatches_fp8[s],
					e->prev_q_samples_fp8[s], e->prev_q_mismatches_fp8[s],
					&p->q_samples_fp8[s], &p->q_mismatches_fp8[s]);
			}
		memcpy(e->prev_q_samples, q->samples, sizeof(e->prev_q_samples));
		memcpy(e->prev_q_mismatches, q->mismatches, sizeof(e->prev_q_mismatches));
		memcpy(e->prev_q_samples_fp8, q->samples_fp8, sizeof(e->prev_q_samples_fp8));
		memcpy(e->prev_q_mismatches_fp8, q->mismatches_fp8, sizeof(e->prev_q_mismatches_fp8));
		e->have_prev_q = true;
	}
	if (rc) {
		for (int h = 0; h < SLA_N_METRICS; h++)
			sparse_clear(p->h[h]);
	}
	for (int h = 0; h < SLA_N_METRICS; h++) {
		sparse_apply(&e->win[h], p->h[h], +1);
		sparse_apply(&e->win_short[h], p->h[h], +1);
	}
	e->short_requests += p->requests;
	e->win_requests += p->requests;
	e->win_tokens += p->tokens;
	e->win_tokens_int8 += p->tokens_int8;
	for (int s = 0; s < HAL_MAX_SLICES; s++) {
		e->win_slice_requests[s] += p->slice_requests[s];
		e->win_q_samples[s] += p->q_samples[s];
		e->win_q_mismatches[s] += p->q_mismatches[s];
	}
	e->ring_head = (e->ring_head + 1) % e->ring_len;
	e->ring_n++;
	return rc;
}

static uint64_t sat_add_u64(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The gate of one slice after this period's shadow samples (dn, dk). The
 * prior makes INT8 usable from the start where qualification evidence
 * exists; a one-sided CUSUM (Page 1954) between p0 (the prior's rate, or
 * max_drop/2) and p1 = ESTIMATE_CUSUM_P1_RATIO * max_drop catches a shift
 * the large prior would hide, and drops the prior for good. */
/* P(K >= k) for K ~ Poisson(lambda) (binomial with a small rate). */
static double poisson_tail(double lambda, uint64_t k)
{
	if (k == 0)
		return 1.0;
	if (k > 10000) /* far past any rate a gate works at: normal approximation */
		return 0.5 * erfc(((double)k - 0.5 - lambda) / sqrt(2 * fmax(lambda, 1e-9)));
	double term = exp(-lambda), sum = term;
	for (uint64_t i = 1; i < k; i++) {
		term *= lambda / (double)i;
		sum += term;
	}
	return fmax(0, 1 - sum);
}

bool estimate_prior_rejected(uint64_t n_online, uint64_t k_online, uint32_t prior_n,
			     uint32_t prior_k)
{
	if (!prior_n || !k_online)
		return false;
	double p = ((double)prior_k + 0.5) / ((double)prior_n + 1.0);
	return poisson_tail(p * (double)n_online, k_online) < ESTIMATE_PRIOR_REJECT_P;
}

/* The two CUSUMs' rates: p0 the prior's (or max_drop / 2 without one),
 * kept under max_drop; p1 and p1s the drifts each is tuned to catch. */
static void cusum_rates(uint32_t prior_n, uint32_t prior_k, double max_drop, double *p0,
			double *p1, double *p1s)
{
	*p0 = prior_n ? (prior_k + 0.5) / (prior_n + 1.0) : max_drop / 2;
	*p0 = fmin(*p0, max_drop * 0.9);
	*p1 = fmin(0.999, max_drop * ESTIMATE_CUSUM_P1_RATIO);
	*p1s = fmin(0.999, max_drop * ESTIMATE_CUSUM_SMALL_P1_RATIO);
}

static double cusum_wald_samples(double p, double p0, double p1, double h)
{
	double drift = p * log(p1 / p0) + (1 - p) * log((1 - p1) / (1 - p0));
	return drift > 0 ? h / drift : INFINITY;
}

double estimate_detect_samples(double p_true, uint32_t prior_n, uint32_t prior_k, double max_drop)
{
	if (!(max_drop > 0) || !(p_true > 0) || p_true >= 1)
		return INFINITY;
	double p0, p1, p1s;
	cusum_rates(prior_n, prior_k, max_drop, &p0, &p1, &p1s);
	double n = fmin(cusum_wald_samples(p_true, p0, p1, ESTIMATE_CUSUM_H),
			cusum_wald_samples(p_true, p0, p1s, ESTIMATE_CUSUM_SMALL_H));
	return ESTIMATE_DETECT_ALLOWANCE * n;
}

static void quality_gate(struct estimator *e, size_t s, uint64_t dn, uint64_t dk)
{
	struct gov_estimates *o = &e->est;

	o->q_total_samples[s] = sat_add_u64(o->q_total_samples[s], dn);
	o->q_total_mismatches[s] = sat_add_u64(o->q_total_mismatches[s], dk);
	/* A slice the policy does not name, or an FP8 row the policy gives no
	 * rung (est_q_row): no gate. */
	if (s % HAL_MAX_SLICES >= e->cfg.n_q ||
	    (s >= HAL_MAX_SLICES && !(e->cfg.q[s].max_drop > 0))) {
		o->q_evidence_n[s] = o->q_total_samples[s];
		o->q_drop_upper[s] = 1.0;
		o->q_drop_lower[s] = o->q_drop_lower_prior[s] = 0.0;
		o->q_gate_open[s] = o->q_gate_open_prior[s] = false;
		return;
	}
	const struct est_quality_cfg *qc = &e->cfg.q[s];
	if (dn && qc->max_drop > 0) {
		double p0, p1, p1s;
		cusum_rates(qc->prior_samples, qc->prior_mismatches, qc->max_drop, &p0, &p1, &p1s);
		double llr = (double)dk * log(p1 / p0) + (double)(dn - dk) * log((1 - p1) / (1 - p0));
		double llrs =
			(double)dk * log(p1s / p0) + (double)(dn - dk) * log((1 - p1s) / (1 - p0));
		o->q_cusum[s] = fmax(0, o->q_cusum[s] + llr);
		e->q_cusum_small[s] = fmax(0, e->q_cusum_small[s] + llrs);
		if (o->q_cusum[s] > ESTIMATE_CUSUM_H ||
		    e->q_cusum_small[s] > ESTIMATE_CUSUM_SMALL_H) {
			e->q_cusum_small[s] = 0;
			/* Evidence from before the shift no longer describes the
			 * slice: the gate starts over from here, without the prior. */
			o->q_alarm[s] = true;
			e->q_prior_dropped[s] = true;
			e->q_base_samples[s] = o->q_total_samples[s];
			e->q_base_mismatches[s] = o->q_total_mismatches[s];
			o->q_cusum[s] = 0;
		}
	}
	/* The prior describes the qualification set; online mismatches far
	 * above its rate (Poisson tail under ESTIMATE_PRIOR_REJECT_P) say this
	 * deployment is another: drop it as on an alarm. */
	if (dn && !e->q_prior_dropped[s] &&
	    estimate_prior_rejected(o->q_total_samples[s], o->q_total_mismatches[s],
				    qc->prior_samples, qc->prior_mismatches)) {
		o->q_alarm[s] = true;
		e->q_prior_dropped[s] = true;
		e->q_base_samples[s] = o->q_total_samples[s];
		e->q_base_mismatches[s] = o->q_total_mismatches[s];
		o->q_cusum[s] = 0;
		e->q_cusum_small[s] = 0;
	}
	double n = (double)(o->q_total_samples[s] - e->q_base_samples[s]);
	double k = (double)(o->q_total_mismatches[s] - e->q_base_mismatches[s]);
	/* ... and counts only once confirm_samples online samples agree. */
	if (!e->q_prior_dropped[s] && o->q_total_samples[s] >= qc->confirm_samples) {
		n += qc->prior_samples;
		k += qc->prior_mismatches;
	}
	o->q_evidence_n[s] = n < 1.8e19 ? (uint64_t)n : UINT64_MAX; /* no out-of-range conversion */
	o->q_drop_upper[s] = wilson_upper_z(k, n, e->q_z[s]);
	o->q_drop_lower[s] = wilson_lower_z(k, n, e->q_z[s]);
	o->q_gate_open[s] = n >= qc->min_samples && o->q_drop_upper[s] <= qc->max_drop;
	/* The same gate with the prior counted before it is confirmed (still
	 * dropped on an alarm or a rejection): what a controller may act on
	 * when waiting costs more than a wrong prior can (docs/govd-controller.md). */
	if (!e->q_prior_dropped[s] && o->q_total_samples[s] < qc->confirm_samples) {
		double np = n + qc->prior_samples, kp = k + qc->prior_mismatches;
		o->q_gate_open_prior[s] =
			np >= qc->min_samples && wilson_upper_z(kp, np, e->q_z[s]) <= qc->max_drop;
		o->q_drop_lower_prior[s] = wilson_lower_z(kp, np, e->q_z[s]);
	} else {
		o->q_gate_open_prior[s] = o->q_gate_open[s];
		o->q_drop_lower_prior[s] = o->q_drop_lower[s];
	}
}

static bool good(const enum gov_fault f[GOV_SIG_N], const struct gov_reading in[GOV_SIG_N], int s)
{
	return f[s] == GOV_FAULT_NONE && in[s].valid && isfinite(in[s].v);
}

const struct gov_estimates *estimate_step(struct estimator *e, uint64_t now_ms,
					  const struct gov_reading in[GOV_SIG_N],
					  const enum gov_fault faults[GOV_SIG_N], unsigned n_faults,
					  uint32_t throttle,
					  const struct hal_serving *serving,
					  const struct hal_quality *quality)
{
	struct gov_estimates *o = &e->est;
	double t_s = (double)now_ms / 1000.0;

	o->t_s = t_s;
	o->n_faults = n_faults;
	o->critical_fault = false;
	for (int s = 0; s < GOV_SIG_N; s++)
		if (faults[s] != GOV_FAULT_NONE)
			o->critical_fault |= gov_signal_critical((enum gov_signal)s);

	o->power_total_w = 0;
	for (int r = 0; r < HAL_RAIL_N; r++) {
		int s = GOV_SIG_POWER_ACCEL + r;
		if (good(faults, in, s)) {
			o->power_w[r] = e->have_power[r] ? o->power_w[r] + e->alpha * (in[s].v - o->power_w[r])
							 : in[s].v;
			e->have_power[r] = true;
		}
		if (e->have_power[r])
			o->power_total_w += o->power_w[r];
	}
	for (int t = 0; t < HAL_TEMP_N; t++) {
		int s = GOV_SIG_TEMP_JUNCTION + t;
		if (good(faults, in, s)) {
			o->temp_c[t] = in[s].v;
			e->have_temp[t] = true;
		}
	}
	if (good(faults, in, GOV_SIG_CLOCK))
		o->clk_mhz = in[GOV_SIG_CLOCK].v;
	if (good(faults, in, GOV_SIG_POWER_LIMIT))
		o->power_limit_w = in[GOV_SIG_POWER_LIMIT].v;
	o->util = good(faults, in, GOV_SIG_UTIL) ? in[GOV_SIG_UTIL].v / 100.0 : NAN;
	o->throttle = throttle;

	if (e->have_temp[HAL_TEMP_JUNCTION]) {
		double h = e->cfg.ceiling_c - o->temp_c[HAL_TEMP_JUNCTION];
		if (e->have_headroom && t_s > e->last_headroom_t_s) {
			double d = (h - e->last_headroom) / (t_s - e->last_headroom_t_s);
			o->headroom_trend_c_per_s += e->trend_alpha * (d - o->headroom_trend_c_per_s);
		}
		o->headroom_c = h;
		e->last_headroom = h;
		e->last_headroom_t_s = t_s;
		e->have_headroom = true;
	} else {
		o->headroom_c = NAN;
	}

	if (window_update(e, now_ms, serving, quality))
		o->window_errors++;
	o->serving_ok = serving && serving->valid;
	o->window_s = (double)e->ring_n * e->cfg.period_s;
	o->window_requests = e->win_requests;
	o->window_tokens = e->win_tokens;
	o->window_tokens_int8 = e->win_tokens_int8;
	for (int m = 0; m < SLA_N_METRICS; m++)
		hist_quantiles(&e->win[m], sla_quantile_q, &o->quantile_ms[SLA_INDEX(m, 0)],
			       SLA_N_QUANTILES);
	o->tokens_per_s = o->window_s > 0 ? (double)e->win_tokens / o->window_s : 0;
	o->requests_per_s = o->window_s > 0 ? (double)e->win_requests / o->window_s : 0;
	o->int8_token_share = e->win_tokens ? (double)e->win_tokens_int8 / (double)e->win_tokens : 0;
	if (o->serving_ok) {
		o->queue_len = serving->queue_len;
		o->running = serving->running;
		o->n_slices = serving->n_slices < HAL_MAX_SLICES ? serving->n_slices : HAL_MAX_SLICES;
	}
	if (quality && quality->valid && quality->n_slices > o->n_slices)
		o->n_slices = quality->n_slices < HAL_MAX_SLICES ? quality->n_slices : HAL_MAX_SLICES;
	o->short_window_s = (double)(e->ring_n < e->short_len ? e->ring_n : e->short_len) *
			    e->cfg.period_s;
	o->short_requests = e->short_requests;
	for (int m = 0; m < SLA_N_METRICS; m++)
		hist_quantiles(&e->win_short[m], sla_quantile_q, &o->short_quantile_ms[SLA_INDEX(m, 0)],
			       SLA_N_QUANTILES);
	{
		const struct est_period *last = &e->ring[(e->ring_head + e->ring_len - 1) % e->ring_len];
		o->period_requests = last->requests;
		o->period_tokens = last->tokens;
		for (int m = 0; m < SLA_N_METRICS; m++) {
			o->period_p99_ms[m] = sparse_quantile(last->h[m], sla_quantile_q[SLA_P99]);
			o->period_over[m] = sparse_over(last->h[m], e->cfg.over_ms[m]);
			o->period_n[m] = last->h[m]->obs;
		}
		for (size_t s = 0; s < HAL_MAX_SLICES; s++) {
			quality_gate(e, est_q_row(s, HAL_LOW_INT8), last->q_samples[s],
				     last->q_mismatches[s]);
			quality_gate(e, est_q_row(s, HAL_LOW_FP8), last->q_samples_fp8[s],
				     last->q_mismatches_fp8[s]);
		}
	}
	for (size_t s = 0; s < HAL_MAX_SLICES; s++) {
		o->q_samples[s] = e->win_q_samples[s];
		o->q_mismatches[s] = e->win_q_mismatches[s];
		o->slice_requests[s] = e->win_slice_requests[s];
		o->q_drop_est[s] = o->q_samples[s] ? (double)o->q_mismatches[s] / (double)o->q_samples[s]
						   : NAN;
	}
	return o;
}

struct sla_window_obs estimate_sla_obs(const struct gov_estimates *e)
{
	struct sla_window_obs o = {
		.served = e->window_requests,
		.waiting = e->queue_len > 0,
		.busy = e->queue_len + e->running > 0,
		.tokens_per_s = e->tokens_per_s,
	};
	memcpy(o.quantile_ms, e->quantile_ms, sizeof(o.quantile_ms));
	return o;
}
