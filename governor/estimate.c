#include "governor/estimate.h"

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

int estimate_init(struct estimator *e, const struct estimate_cfg *cfg)
{
	if (!(cfg->period_s > 0) || !(cfg->window_s > 0) || !(cfg->ewma_tau_s > 0) ||
	    !(cfg->trend_tau_s > 0))
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	e->cfg = *cfg;
	/* Discrete EWMA with time constant tau sampled every period. */
	e->alpha = 1.0 - exp(-cfg->period_s / cfg->ewma_tau_s);
	e->trend_alpha = 1.0 - exp(-cfg->period_s / cfg->trend_tau_s);
	e->ring_len = (size_t)ceil(cfg->window_s / cfg->period_s - 1e-9);
	if (e->ring_len < 1)
		e->ring_len = 1;
	e->ring = calloc(e->ring_len, sizeof(*e->ring));
	if (!e->ring)
		return -ENOMEM;
	for (size_t i = 0; i < e->ring_len; i++)
		for (int h = 0; h < 3; h++) {
			e->ring[i].h[h] = calloc(1, sizeof(struct est_sparse));
			if (!e->ring[i].h[h]) {
				estimate_fini(e);
				return -ENOMEM;
			}
		}
	for (int h = 0; h < 3; h++)
		hist_reset(&e->win[h]);
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
			for (int h = 0; h < 3; h++) {
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

static void sparse_clear(struct est_sparse *s)
{
	s->n = 0;
	s->obs = 0;
	s->sum_ms = 0;
}

/* Drops the oldest period from the running window sums. */
static void ring_pop(struct estimator *e)
{
	size_t tail = (e->ring_head + e->ring_len - e->ring_n) % e->ring_len;
	struct est_period *p = &e->ring[tail];

	for (int h = 0; h < 3; h++)
		sparse_apply(&e->win[h], p->h[h], -1);
	e->win_requests -= p->requests;
	e->win_tokens -= p->tokens;
	e->win_tokens_int8 -= p->tokens_int8;
	for (int s = 0; s < HAL_MAX_SLICES; s++) {
		e->win_q_samples[s] -= p->q_samples[s];
		e->win_q_mismatches[s] -= p->q_mismatches[s];
	}
	e->ring_n--;
}

static int window_update(struct estimator *e, uint64_t now_ms, const struct hal_serving *sv,
			 const struct hal_quality *q)
{
	if (e->ring_n == e->ring_len)
		ring_pop(e);
	struct est_period *p = &e->ring[e->ring_head];
	int rc = 0;

	p->t_ms = now_ms;
	p->requests = p->tokens = p->tokens_int8 = 0;
	memset(p->q_samples, 0, sizeof(p->q_samples));
	memset(p->q_mismatches, 0, sizeof(p->q_mismatches));
	for (int h = 0; h < 3; h++)
		sparse_clear(p->h[h]);

	if (sv && sv->valid && sv->ttft && sv->tbt && sv->e2e) {
		const struct hist *now[3] = { sv->ttft, sv->tbt, sv->e2e };
		if (e->have_prev) {
			for (int h = 0; h < 3 && !rc; h++)
				rc = sparse_from_delta(p->h[h], now[h], &e->prev[h]);
			if (!rc) {
				p->requests = sv->requests_completed - e->prev_requests;
				p->tokens = sv->tokens_generated - e->prev_tokens;
				p->tokens_int8 = sv->tokens_int8 - e->prev_tokens_int8;
			}
		}
		/* On failure keep the old snapshot: the next period's delta then
		 * carries this period's requests instead of losing them. */
		if (!rc) {
			for (int h = 0; h < 3; h++)
				e->prev[h] = *now[h];
			e->prev_requests = sv->requests_completed;
			e->prev_tokens = sv->tokens_generated;
			e->prev_tokens_int8 = sv->tokens_int8;
			e->have_prev = true;
		}
	}
	if (q && q->valid) {
		size_t n = q->n_slices < HAL_MAX_SLICES ? q->n_slices : HAL_MAX_SLICES;
		if (e->have_prev_q)
			for (size_t s = 0; s < n; s++) {
				p->q_samples[s] = q->samples[s] - e->prev_q_samples[s];
				p->q_mismatches[s] = q->mismatches[s] - e->prev_q_mismatches[s];
			}
		memcpy(e->prev_q_samples, q->samples, sizeof(e->prev_q_samples));
		memcpy(e->prev_q_mismatches, q->mismatches, sizeof(e->prev_q_mismatches));
		e->have_prev_q = true;
	}
	if (rc) {
		for (int h = 0; h < 3; h++)
			sparse_clear(p->h[h]);
	}
	for (int h = 0; h < 3; h++)
		sparse_apply(&e->win[h], p->h[h], +1);
	e->win_requests += p->requests;
	e->win_tokens += p->tokens;
	e->win_tokens_int8 += p->tokens_int8;
	for (int s = 0; s < HAL_MAX_SLICES; s++) {
		e->win_q_samples[s] += p->q_samples[s];
		e->win_q_mismatches[s] += p->q_mismatches[s];
	}
	e->ring_head = (e->ring_head + 1) % e->ring_len;
	e->ring_n++;
	return rc;
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
	o->ttft_p95_ms = hist_quantile(&e->win[0], 0.95);
	o->ttft_p99_ms = hist_quantile(&e->win[0], 0.99);
	o->tbt_p95_ms = hist_quantile(&e->win[1], 0.95);
	o->tbt_p99_ms = hist_quantile(&e->win[1], 0.99);
	o->e2e_p95_ms = hist_quantile(&e->win[2], 0.95);
	o->e2e_p99_ms = hist_quantile(&e->win[2], 0.99);
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
	for (size_t s = 0; s < HAL_MAX_SLICES; s++) {
		o->q_samples[s] = e->win_q_samples[s];
		o->q_mismatches[s] = e->win_q_mismatches[s];
		o->q_drop_est[s] = o->q_samples[s] ? (double)o->q_mismatches[s] / (double)o->q_samples[s]
						   : NAN;
		o->q_drop_upper[s] = wilson_upper(o->q_mismatches[s], o->q_samples[s]);
	}
	return o;
}
