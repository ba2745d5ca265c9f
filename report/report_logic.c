/* The report's rules: window classification, perf-per-watt cost ranking and
 * the release recommendation. Pure (no I/O); thresholds and their reasons in
 * docs/report.md. tests/unit/test_report_*.c include this file directly
 * because govctl's sources are not in a library. */
#include "report/report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/hal.h"

const struct rp_thresholds rp_default_thresholds = {
	.busy_util = 0.02,
	.cap_ratio = 0.95,
	.cap_share = 0.20,
	.queue_depth = 4.0,
	.host_share = 0.35,
	.host_util = 0.50,
	.compute_sens = 0.50,
	.clk_spread = 0.05,
	.int8_match = 0.05,
	.min_gain = 0.02,
	.tj_margin_c = 2.0,
	.attain_tol = 0.0,
};

static const char *const class_names[RP_C_N] = {
	"idle",         "thermal-bound",  "power-cap-bound", "queueing-bound",
	"host-orchestration-bound", "compute-bound", "memory-bound",
	"compute/memory (unresolved)",
};
static const char *const class_keys[RP_C_N] = {
	"idle", "thermal", "power_cap", "queueing", "host", "compute", "memory", "unresolved",
};

const char *rp_class_name(enum rp_class c)
{
	return (unsigned)c < RP_C_N ? class_names[c] : "?";
}

const char *rp_class_key(enum rp_class c)
{
	return (unsigned)c < RP_C_N ? class_keys[c] : "?";
}

static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t len, const char *fmt, ...)
{
	if (!buf || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

enum rp_class rp_classify(const struct rp_wstats *w, const struct rp_thresholds *th, char *why,
			  size_t len)
{
	double n = w->periods ? (double)w->periods : 1.0;
	if (!w->busy) {
		say(why, len, "utilisation %.3f < %.2f and no requests", w->mean_util, th->busy_util);
		return RP_C_IDLE;
	}
	if (w->clamp_periods || w->swtherm_periods ||
	    (isfinite(w->ceiling_c) && w->max_tj_c >= w->ceiling_c)) {
		say(why, len,
		    "junction max %.1f C vs ceiling %.1f C (slowdown %.1f C); hardware slowdown in %zu "
		    "period(s), firmware thermal trim in %zu; clock min %.0f MHz (mean %.0f)",
		    w->max_tj_c, w->ceiling_c, w->slowdown_c, w->clamp_periods, w->swtherm_periods,
		    w->min_clk_mhz, w->mean_clk_mhz);
		return RP_C_THERMAL;
	}
	double cap_share = (double)w->cap_periods / n;
	if (cap_share >= th->cap_share || w->power_ratio >= th->cap_ratio) {
		say(why, len,
		    "accelerator power %.1f W vs limit %.1f W (%.2f of the limit, rule >= %.2f); power-cap "
		    "throttle in %.0f%% of periods (rule >= %.0f%%)",
		    w->mean_accel_w, w->mean_limit_w, w->power_ratio, th->cap_ratio, 100 * cap_share,
		    100 * th->cap_share);
		return RP_C_POWER_CAP;
	}
	if (w->mean_queue >= th->queue_depth) {
		say(why, len,
		    "queue depth mean %.1f, max %.0f requests waiting (rule: mean >= %.1f); TTFT p99 %.0f ms",
		    w->mean_queue, w->max_queue, th->queue_depth, w->q_ms[SLA_INDEX(SLA_TTFT, SLA_P99)]);
		return RP_C_QUEUEING;
	}
	if (w->host_share >= th->host_share && w->mean_util < th->host_util) {
		say(why, len,
		    "host rail %.0f%% of power (rule >= %.0f%%) while the accelerator is busy %.0f%% "
		    "(rule < %.0f%%)",
		    100 * w->host_share, 100 * th->host_share, 100 * w->mean_util, 100 * th->host_util);
		return RP_C_HOST;
	}
	if (isfinite(w->clock_sens)) {
		const char *src = w->sens_pooled ? "run-wide median" : "this window vs another run";
		if (w->clock_sens >= th->compute_sens) {
			/* No per-window numbers here (utilisation and clock are
			 * their own columns): identical evidence collapses. */
			say(why, len, "clock sensitivity %.2f (%s; rule >= %.2f): busy time scales with 1/f",
			    w->clock_sens, src, th->compute_sens);
			return RP_C_COMPUTE;
		}
		say(why, len,
		    "clock sensitivity %.2f (%s; rule < %.2f): busy time barely moves with the clock",
		    w->clock_sens, src, th->compute_sens);
		return RP_C_MEMORY;
	}
	say(why, len,
	    "no thermal, cap, queue or host evidence; clock sensitivity not measurable (no run of the "
	    "same demand at a clock >= %.0f%% apart with the same INT8 share)",
	    100 * th->clk_spread);
	return RP_C_UNRESOLVED;
}

double rp_clock_sensitivity(double util_a, double clk_a, double int8_a, double util_b,
			    double clk_b, double int8_b, const struct rp_thresholds *th)
{
	if (!(util_a > 0) || !(util_b > 0) || !(clk_a > 0) || !(clk_b > 0))
		return NAN;
	if (!(fabs(int8_a - int8_b) <= th->int8_match))
		return NAN;
	double dl = log(clk_a / clk_b);
	if (fabs(dl) < log1p(th->clk_spread))
		return NAN;
	return -(log(util_a / util_b)) / dl;
}

double rp_window_cost_j(double energy_j, double tokens, double best_tpj)
{
	if (!(best_tpj > 0) || !(energy_j > 0))
		return 0;
	double c = energy_j - tokens / best_tpj;
	return c > 0 ? c : 0;
}

size_t rp_rank_classes(const struct rp_wstats *w, size_t n, double run_tokens, double run_energy_j,
		       struct rp_rank *out, size_t cap)
{
	struct rp_rank r[RP_C_N];
	memset(r, 0, sizeof(r));
	for (int c = 0; c < RP_C_N; c++)
		r[c].cls = (enum rp_class)c;
	double busy_e = 0;
	for (size_t i = 0; i < n; i++) {
		if (w[i].cls == RP_C_IDLE || (unsigned)w[i].cls >= RP_C_N)
			continue;
		r[w[i].cls].windows++;
		r[w[i].cls].cost_j += w[i].cost_j;
		if (w[i].energy_j > 0) {
			r[w[i].cls].energy_j += w[i].energy_j;
			busy_e += w[i].energy_j;
		}
	}
	size_t k = 0;
	struct rp_rank sorted[RP_C_N];
	for (int c = 1; c < RP_C_N; c++)
		if (r[c].windows)
			sorted[k++] = r[c];
	for (size_t i = 0; i < k; i++)
		sorted[i].share_of_busy = busy_e > 0 ? sorted[i].energy_j / busy_e : 0;
	/* insertion sort: energy share descending, stable on the enum order */
	for (size_t i = 1; i < k; i++) {
		struct rp_rank x = sorted[i];
		size_t j = i;
		while (j > 0 && sorted[j - 1].share_of_busy < x.share_of_busy) {
			sorted[j] = sorted[j - 1];
			j--;
		}
		sorted[j] = x;
	}
	for (size_t i = 0; i < k; i++) {
		sorted[i].share_of_energy = run_energy_j > 0 ? sorted[i].cost_j / run_energy_j : NAN;
		double e = run_energy_j - sorted[i].cost_j;
		sorted[i].tpj_if_removed = e > 0 ? run_tokens / e : NAN;
	}
	if (k > cap)
		k = cap;
	memcpy(out, sorted, k * sizeof(*out));
	return k;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double rp_reference_tpj(double peer_best, double *own, size_t n)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(own[i]))
			own[m++] = own[i];
	double p90 = NAN;
	if (m) {
		qsort(own, m, sizeof(*own), cmp_dbl);
		p90 = own[(size_t)floor(0.9 * (double)(m - 1))];
	}
	if (!isfinite(peer_best))
		return p90;
	return isfinite(p90) && p90 > peer_best ? p90 : peer_best;
}

struct rp_spread rp_spread_of(double *v, size_t n)
{
	struct rp_spread s = { .n = 0, .min = NAN, .median = NAN, .max = NAN };
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(v[i]))
			v[m++] = v[i];
	if (!m)
		return s;
	qsort(v, m, sizeof(*v), cmp_dbl);
	s.n = m;
	s.min = v[0];
	s.max = v[m - 1];
	s.median = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
	return s;
}

enum rp_class rp_run_class(const struct rp_rank *r, size_t n, double clamp_events)
{
	if (clamp_events > 0)
		return RP_C_THERMAL;
	return n ? r[0].cls : RP_C_IDLE;
}

double rp_slope(const double *x, const double *y, size_t n)
{
	double sx = 0, sy = 0;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(x[i]) && isfinite(y[i])) {
			sx += x[i];
			sy += y[i];
			m++;
		}
	if (m < 2)
		return NAN;
	double mx = sx / (double)m, my = sy / (double)m, sxx = 0, sxy = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(x[i]) && isfinite(y[i])) {
			sxx += (x[i] - mx) * (x[i] - mx);
			sxy += (x[i] - mx) * (y[i] - my);
		}
	return sxx > 0 ? sxy / sxx : NAN;
}

double rp_pearson(const double *x, const double *y, size_t n)
{
	double sx = 0, sy = 0;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(x[i]) && isfinite(y[i])) {
			sx += x[i];
			sy += y[i];
			m++;
		}
	if (m < 3)
		return NAN;
	double mx = sx / (double)m, my = sy / (double)m, sxx = 0, syy = 0, sxy = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(x[i]) && isfinite(y[i])) {
			sxx += (x[i] - mx) * (x[i] - mx);
			syy += (y[i] - my) * (y[i] - my);
			sxy += (x[i] - mx) * (y[i] - my);
		}
	return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

/* ---- recommendation ---- */

static const char *const verdict_names[] = { "GO", "GO WITH CONDITIONS", "NO-GO" };

const char *rp_verdict_name(enum rp_verdict v)
{
	return (unsigned)v <= RP_NOGO ? verdict_names[v] : "?";
}

static void add_reason(struct rp_decision *d, bool blocker, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_reason(struct rp_decision *d, bool blocker, const char *fmt, ...)
{
	if (d->n == RP_MAX_REASONS)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->reasons[d->n].text, sizeof(d->reasons[d->n].text), fmt, ap);
	va_end(ap);
	d->reasons[d->n++].blocker = blocker;
}

static void decide(struct rp_decision *d);

static bool sla_ok(const struct rp_side *s)
{
	return s->latency_ok && s->attainment >= s->attainment_goal;
}

void rp_recommend(const struct rp_side *c, const struct rp_side *b, const struct rp_thresholds *th,
		  struct rp_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->gain = (c->tpj > 0 && b->tpj > 0) ? c->tpj / b->tpj - 1.0 : NAN;

	/* Blockers: anything a reviewer could not sign. */
	if (c->failed)
		add_reason(d, true, "the candidate reached thermal shutdown");
	if (!(c->breaches == 0) && !isnan(c->breaches))
		add_reason(d, true, "%.0f quality breach request(s): INT8 served on a slice whose drop "
				    "exceeds its threshold",
			   c->breaches);
	else if (!c->quality_ok)
		add_reason(d, true, "a slice was served INT8 while its drop bound exceeded its threshold");
	if (c->clamp_events > 0)
		add_reason(d, true, "%.0f hardware thermal clamp event(s) (junction max %.1f C, slowdown "
				    "%.1f C)",
			   c->clamp_events, c->max_tj_c, c->slowdown_c);
	if (!(d->gain >= 0))
		add_reason(d, true, "tokens/J %.4f is below the baseline's %.4f (%+.1f%%)", c->tpj, b->tpj,
			   100 * d->gain);
	if (!sla_ok(c)) {
		bool no_worse = !sla_ok(b) && c->attainment >= b->attainment - th->attain_tol;
		if (no_worse)
			add_reason(d, false,
				   "SLA not met (attainment %.3f, goal %.2f%s) but the baseline misses it "
				   "too (%.3f): capacity, not a regression; add capacity or relax the SLA",
				   c->attainment, c->attainment_goal,
				   c->latency_ok ? "" : ", a p95/p99 target exceeded", b->attainment);
		else
			add_reason(d, true, "SLA not met: attainment %.3f (goal %.2f, baseline %.3f)%s",
				   c->attainment, c->attainment_goal, b->attainment,
				   c->latency_ok ? "" : ", a p95/p99 target exceeded");
	}
	/* Conditions: signable with a named follow-up. */
	if (d->gain >= 0 && d->gain < th->min_gain)
		add_reason(d, false, "gain %+.1f%% is under %.0f%%: within run-to-run noise; confirm on "
				     "more seeds",
			   100 * d->gain, 100 * th->min_gain);
	if (!c->guard_sla)
		add_reason(d, false, "SLA check unguarded: rollback.triggers.sla_violated_windows is off");
	if (!c->guard_quality)
		add_reason(d, false, "quality check unguarded: rollback.triggers.quality_breach is off");
	if (!c->guard_thermal)
		add_reason(d, false, "clamp check unguarded: rollback.triggers.thermal_clamp_events is off");
	if (c->clamp_events <= 0 && isfinite(c->max_tj_c) && isfinite(c->slowdown_c) &&
	    c->slowdown_c - c->max_tj_c < th->tj_margin_c)
		add_reason(d, false, "junction max %.1f C within %.1f C of slowdown (%.1f C)", c->max_tj_c,
			   th->tj_margin_c, c->slowdown_c);
	if (c->telemetry_faults > 0)
		add_reason(d, false, "%.0f telemetry fault onset(s): review the audit", c->telemetry_faults);
	if (c->rollbacks > 0)
		add_reason(d, false, "%.0f rollback(s) during the run: review the audit", c->rollbacks);
	if (c->recomputed)
		add_reason(d, false, "figures recomputed from a decision log (filtered rails, windowed "
				     "throughput), not a simulator's ground truth");

	decide(d);
	snprintf(d->summary, sizeof(d->summary),
		 "tokens/J %.4f vs baseline %.4f (%+.1f%%), SLA attainment %.3f, %.0f clamp event(s), "
		 "%s quality breaches",
		 c->tpj, b->tpj, 100 * d->gain, c->attainment, c->clamp_events,
		 isnan(c->breaches) ? "unknown" : c->breaches == 0 ? "no" : "some");
}

static const char *const evidence_names[] = { "simulated", "live dry-run", "live governed" };

const char *rp_evidence_name(enum rp_evidence e)
{
	return (unsigned)e <= RP_EV_GOVERNED ? evidence_names[e] : "?";
}

static void decide(struct rp_decision *d)
{
	bool blocked = false;
	for (size_t i = 0; i < d->n; i++)
		blocked |= d->reasons[i].blocker;
	d->verdict = blocked ? RP_NOGO : d->n ? RP_GO_COND : RP_GO;
}

void rp_merge_seed(struct rp_decision *d, const struct rp_decision *o, uint64_t seed)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->reasons[i].blocker)
			add_reason(d, true, "seed %llu: %s", (unsigned long long)seed, o->reasons[i].text);
	decide(d);
}

void rp_cap_evidence(struct rp_decision *d, enum rp_evidence ev, const char *detail,
		     const struct rp_spread *g, const struct rp_thresholds *th)
{
	size_t seeds = g && g->n ? g->n : 1;
	if (g && g->n >= 2) {
		/* The gain is the median over seeds, judged against its spread. */
		d->gain = g->median;
		if (!(g->median >= 0))
			add_reason(d, true, "median tokens/J gain over %zu seeds is %+.1f%% (min %+.1f%%, "
					    "max %+.1f%%)",
				   g->n, 100 * g->median, 100 * g->min, 100 * g->max);
		else if (!(g->min > 0))
			add_reason(d, false, "the gain is not consistent over seeds: median %+.1f%%, min "
					     "%+.1f%%, max %+.1f%%; a seed loses to the baseline",
				   100 * g->median, 100 * g->min, 100 * g->max);
		else if (g->max - g->min > g->median)
			add_reason(d, false, "the seed-to-seed spread of the gain (%+.1f%% .. %+.1f%%) is "
					     "wider than the median gain %+.1f%%",
				   100 * g->min, 100 * g->max, 100 * g->median);
		else if (g->median < th->min_gain)
			add_reason(d, false, "median gain %+.1f%% over %zu seeds is under %.0f%%", 100 * g->median,
				   g->n, 100 * th->min_gain);
	}
	if (seeds < 3)
		add_reason(d, false, "%zu seed(s) only: at least 3 seeds of candidate and baseline "
				     "(govctl compare --seeds 1,2,3) lift this condition",
			   seeds);
	if (ev == RP_EV_SIMULATED)
		add_reason(d, false, "evidence is simulated (%s): a dry-run on the target hardware "
				     "(govd --dry-run) then a live canary lift this condition",
			   detail && *detail ? detail : "plant model");
	else if (ev == RP_EV_DRY_RUN)
		add_reason(d, false, "evidence is a live dry-run (%s): the governor observed but did not "
				     "actuate; a live governed canary lifts this condition",
			   detail && *detail ? detail : "device");
	decide(d);
}
