/* govctl sim: scenario + policy + seed -> summary.json, timeseries.csv,
 * decisions.jsonl. Figures come from the plant's ground truth (true energy,
 * true junction temperature, true INT8 drop), not from the telemetry the
 * governor sees, so a faulty sensor cannot flatter a policy. */
#include "governor/controllers/controller.h"
#include "governor/sim/sim.h"

#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fsafe.h"
#include "common/hist.h"
#include "governor/loop/governor.h"
#include "governor/telemetry/estimate.h"
#include "common/jsonx.h"
#include "hal/hal.h"
#include "hal/hal_sim.h"
#include "plant_models/plant.h"
#include "plant_models/scenario.h"

#define SUMMARY_REAL_PRECISION 10

int sim_shell_append(char *buf, size_t len, const char *s)
{
	size_t n = strlen(buf);
	bool bare = *s != '\0';
	for (const char *c = s; *c && bare; c++)
		bare = strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=+,@%-",
			      *c) != NULL;
	if (n + 2 >= len) /* room for ' ' and an opening quote */
		return -ENAMETOOLONG;
	buf[n++] = ' ';
	if (!bare)
		buf[n++] = '\'';
	for (const char *c = s; *c; c++) {
		/* ' ends the quote, an escaped ' follows, the quote reopens */
		const char *w = *c == '\'' && !bare ? "'\\''" : NULL;
		size_t wl = w ? 4 : 1;
		if (n + wl >= len) {
			buf[n] = '\0';
			return -ENAMETOOLONG;
		}
		if (w)
			memcpy(buf + n, w, wl);
		else
			buf[n] = *c;
		n += wl;
	}
	if (!bare) {
		if (n + 1 >= len) {
			buf[n] = '\0';
			return -ENAMETOOLONG;
		}
		buf[n++] = '\'';
	}
	buf[n] = '\0';
	return 0;
}

/* Shortest %g that reads back as the same double, without an exponent for
 * ordinary durations (120, not 1.2e+02). */
static void fmt_double(double v, char *buf, size_t len)
{
	bool plain = fabs(v) >= 1e-4 && fabs(v) < 1e15;
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v && (!plain || !strchr(buf, 'e')))
			return;
	}
}

int sim_command(const struct sim_opts *o, const char *policy_path, uint64_t seed, char *buf,
		size_t len)
{
	char num[40];
	int rc = 0;

	if (len == 0)
		return -ENAMETOOLONG;
	snprintf(buf, len, "govctl sim");
	rc = rc ? rc : sim_shell_append(buf, len, "--scenario");
	rc = rc ? rc : sim_shell_append(buf, len, o->scenario_path);
	rc = rc ? rc : sim_shell_append(buf, len, "--policy");
	rc = rc ? rc : sim_shell_append(buf, len, policy_path);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)seed);
	rc = rc ? rc : sim_shell_append(buf, len, "--seed");
	rc = rc ? rc : sim_shell_append(buf, len, num);
	if (o->duration_s > 0) {
		fmt_double(o->duration_s, num, sizeof(num));
		rc = rc ? rc : sim_shell_append(buf, len, "--duration");
		rc = rc ? rc : sim_shell_append(buf, len, num);
	}
	return rc;
}

/* SLA targets of the policy checked on one window's histograms. */
struct sla_win {
	uint64_t start_ms;
	uint32_t index;
	uint64_t tokens;                  /* tokens generated at the window start */
	/* Ground truth at the window start, for struct sim_window. */
	double energy_j[HAL_RAIL_N];
	uint64_t clamp_events, breach;
	double clamp_time_s, max_tj_c;
	uint32_t over_threshold, over_threshold_fp8;
	struct hist at_start[SLA_N_METRICS]; /* cumulative snapshots at the window start */
	struct hist delta[SLA_N_METRICS];    /* scratch for the window's own histograms */
};

static const struct hist *metric_hist(const struct server_stats *st, enum sla_metric m)
{
	switch (m) {
	case SLA_TTFT: return &st->ttft;
	case SLA_TBT: return &st->tbt;
	default: return &st->e2e;
	}
}

struct acc {
	const struct policy *pol;
	struct plant *plant;
	FILE *ts;
	double period_s;
	size_t n_slices;
	double max_drop[PLANT_MAX_SLICES];
	/* Per 8-bit mode ([0] INT8, [1] FP8: the precision ladder's rung). */
	uint64_t prev_low_completed[2][PLANT_MAX_SLICES];
	uint64_t breach[PLANT_MAX_SLICES];
	/* Breach requests served after the slice's documented detection delay
	 * (estimate_detect_samples: shadow samples since the true drop rose over
	 * max_drop) had passed: what the gate should have prevented. */
	uint64_t breach_late[PLANT_MAX_SLICES];
	uint32_t prior_n[2][PLANT_MAX_SLICES], prior_k[2][PLANT_MAX_SLICES];
	bool over[2][PLANT_MAX_SLICES];
	uint64_t onset_samples[2][PLANT_MAX_SLICES]; /* shadow samples at the onset */
	double max_tj_c;
	double above_ceiling_s;
	uint64_t fault_periods;
	uint64_t periods;
	/* The locked clock ceiling as applied: its changes between periods (the
	 * churn a real device sees) and its mean. */
	uint32_t prev_lock_mhz;
	uint64_t clock_changes;
	double lock_mhz_sum;
	struct sla_win *win;
	uint64_t windows, windows_met, windows_idle;
	sim_window_cb on_window;
	void *window_ctx;
	json_t *per_window;   /* summary.json sla.per_window rows; NULL: not written */
	bool io_error;
};

static uint64_t breach_total(const struct acc *a)
{
	uint64_t n = 0;
	for (size_t s = 0; s < a->n_slices; s++)
		n += a->breach[s];
	return n;
}

static void win_snapshot(struct acc *a, uint64_t t_ms)
{
	const struct server_stats *st = server_get_stats(a->plant->srv);
	const struct device *d = &a->plant->dev;
	a->win->start_ms = t_ms;
	a->win->tokens = st->tokens_generated;
	for (int m = 0; m < SLA_N_METRICS; m++)
		a->win->at_start[m] = *metric_hist(st, (enum sla_metric)m);
	a->win->energy_j[HAL_RAIL_ACCEL] = d->energy_j;
	a->win->energy_j[HAL_RAIL_MEMORY] = d->mem_energy_j;
	a->win->energy_j[HAL_RAIL_HOST] = d->host_energy_j;
	a->win->clamp_events = d->clamp_events;
	a->win->clamp_time_s = d->clamp_time_s;
	a->win->breach = breach_total(a);
	a->win->max_tj_c = d->tj_c;
	a->win->over_threshold = 0;
	a->win->over_threshold_fp8 = 0;
}

/* Whether a window [start, now] met every target the policy sets, judged
 * by sla_judge() on the window's ground-truth histograms (a window with no
 * latency sample has nothing served). Fills w; counts nothing. */
static void win_judge(struct acc *a, uint64_t t_ms, struct sim_window *w)
{
	const struct server_stats *st = server_get_stats(a->plant->srv);
	const struct device *dv = &a->plant->dev;
	const struct policy *p = a->pol;
	struct hist *d = a->win->delta;
	uint64_t samples = 0;

	memset(w, 0, sizeof(*w));
	w->index = a->win->index;
	w->start_s = (double)a->win->start_ms / 1000.0;
	w->end_s = (double)t_ms / 1000.0;
	w->tokens = st->tokens_generated - a->win->tokens;
	w->energy_j[HAL_RAIL_ACCEL] = dv->energy_j - a->win->energy_j[HAL_RAIL_ACCEL];
	w->energy_j[HAL_RAIL_MEMORY] = dv->mem_energy_j - a->win->energy_j[HAL_RAIL_MEMORY];
	w->energy_j[HAL_RAIL_HOST] = dv->host_energy_j - a->win->energy_j[HAL_RAIL_HOST];
	w->max_junction_c = fmax(a->win->max_tj_c, dv->tj_c);
	w->clamp_events = dv->clamp_events - a->win->clamp_events;
	w->clamp_time_s = dv->clamp_time_s - a->win->clamp_time_s;
	w->breach_requests = breach_total(a) - a->win->breach;
	w->over_threshold = a->win->over_threshold;
	w->over_threshold_fp8 = a->win->over_threshold_fp8;
	w->failed = a->plant->failed;
	for (int m = 0; m < SLA_N_METRICS; m++) {
		hist_delta(&d[m], metric_hist(st, (enum sla_metric)m), &a->win->at_start[m]);
		samples += d[m].n;
	}
	struct sla_window_obs o = {
		.served = samples,
		.waiting = st->queue_len > 0,
		.busy = st->queue_len + st->running > 0,
	};
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		w->quantile_ms[i] = o.quantile_ms[i] = d[sla_rows[i].metric].n
							       ? hist_quantile(&d[sla_rows[i].metric],
									       sla_rows[i].q)
							       : NAN;
	double dur_s = w->end_s - w->start_s;
	o.tokens_per_s = dur_s > 0 ? (double)w->tokens / dur_s : NAN;
	enum sla_verdict v = sla_judge(p->sla.latency_ms, p->sla.min_tokens_per_s, &o, &w->sla_ratio);
	w->idle = v == SLA_IDLE;
	w->sla_met = v != SLA_MISSED;
}

/* One row of summary.json's sla.per_window: the judgement the run's
 * attainment counts (the tail is listed, marked, and not counted), so a
 * report plots exactly the windows the summary judged. */
static void win_record(struct acc *a, const struct sim_window *w)
{
	if (!a->per_window)
		return;
	json_t *o = json_object();
	json_object_set_new(o, "index", json_integer(w->index));
	json_object_set_new(o, "start_s", jsonx_real(w->start_s));
	json_object_set_new(o, "end_s", jsonx_real(w->end_s));
	json_object_set_new(o, "idle", json_boolean(w->idle));
	json_object_set_new(o, "tail", json_boolean(w->tail));
	json_object_set_new(o, "sla_met", json_boolean(w->sla_met));
	json_object_set_new(o, "tokens", json_integer((json_int_t)w->tokens));
	json_object_set_new(o, "energy_j", jsonx_real(w->energy_j[HAL_RAIL_ACCEL] +
						      w->energy_j[HAL_RAIL_MEMORY] +
						      w->energy_j[HAL_RAIL_HOST]));
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		json_object_set_new(o, sla_rows[i].key, jsonx_real(w->quantile_ms[i]));
	json_array_append_new(a->per_window, o);
}

static void win_close(struct acc *a, uint64_t t_ms)
{
	struct sim_window w;

	win_judge(a, t_ms, &w);
	win_record(a, &w);
	if (w.idle) {
		a->windows_idle++;
	} else {
		a->windows++;
		a->windows_met += w.sla_met;
	}
	if (a->on_window)
		a->on_window(a->window_ctx, &w);
	a->win->index++;
}

/* 8-bit completions since the last call on a slice whose true drop in the
 * mode they were served in (INT8, or FP8 on the ladder) is over its
 * threshold are quality breaches. */
static void count_breaches(struct acc *a)
{
	const struct server_stats *st = server_get_stats(a->plant->srv);

	for (size_t m = 0; m < 2; m++)
	for (size_t s = 0; s < a->n_slices; s++) {
		uint64_t fp8 = st->slice_fp8_completed[s];
		uint64_t now = m ? fp8 : st->slice_int8_completed[s] - fp8;
		uint64_t samples = m ? a->plant->q.samples_fp8[s] : a->plant->q.samples[s];
		double p_true = plant_true_drop(a->plant, (uint32_t)s, m);
		if (p_true > a->max_drop[s]) {
			uint64_t n = now - a->prev_low_completed[m][s];
			if (!a->over[m][s]) {
				a->over[m][s] = true;
				a->onset_samples[m][s] = samples;
			}
			a->breach[s] += n;
			*(m ? &a->win->over_threshold_fp8 : &a->win->over_threshold) |= 1u << s;
			/* The delay at the current drop: a drift that grows is held
			 * to the shorter delay of its larger drop. */
			double allow = estimate_detect_samples(p_true, a->prior_n[m][s],
							       a->prior_k[m][s], a->max_drop[s]);
			if ((double)(samples - a->onset_samples[m][s]) > allow)
				a->breach_late[s] += n;
		} else {
			a->over[m][s] = false;
		}
		a->prev_low_completed[m][s] = now;
	}
}

static double mhz(uint32_t khz)
{
	return khz / 1000.0;
}

/* Ground-truth accounting of one control period at t_ms. */
static void account_period(struct acc *a, uint64_t t_ms, unsigned n_faults)
{
	struct plant *pl = a->plant;

	if (a->periods && pl->dev.lock_max_mhz != a->prev_lock_mhz)
		a->clock_changes++;
	a->prev_lock_mhz = pl->dev.lock_max_mhz;
	a->lock_mhz_sum += pl->dev.lock_max_mhz;
	a->periods++;
	if (pl->dev.tj_c > a->max_tj_c)
		a->max_tj_c = pl->dev.tj_c;
	if (pl->dev.tj_c > a->win->max_tj_c)
		a->win->max_tj_c = pl->dev.tj_c;
	if (pl->dev.tj_c > a->pol->thermal.ceiling_c)
		a->above_ceiling_s += a->period_s;
	if (n_faults)
		a->fault_periods++;
	count_breaches(a);
	if (t_ms >= a->win->start_ms + (uint64_t)llround(a->pol->sla.window_s * 1000.0)) {
		win_close(a, t_ms);
		win_snapshot(a, t_ms);
	}
}

static int on_period(void *ctx, const struct gov_period *p)
{
	struct acc *a = ctx;
	struct plant *pl = a->plant;
	const struct gov_estimates *e = p->rec.est;

	account_period(a, p->rec.t_ms, e->n_faults);
	if (a->ts) {
		char reasons[512];
		double int8 = 0;
		for (size_t s = 0; s < p->rec.after->n_slices; s++)
			int8 += p->rec.after->int8_frac[s] * pl->sc->slices[s].fraction;
		int n = fprintf(a->ts,
				"%.3f,%.0f,%d,%.0f,%.0f,%.1f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.1f,%.2f,"
				"%.2f,%.2f,%.4f,%.4f,%u,%u,%s,%s\n",
				(double)p->rec.t_ms / 1000.0, isfinite(e->clk_mhz) ? e->clk_mhz : -1,
				p->rec.after->clk_locked, mhz(p->rec.after->clk_min_khz),
				mhz(p->rec.after->clk_max_khz), p->rec.after->power_limit_mw / 1000.0,
				e->power_w[HAL_RAIL_ACCEL], e->power_w[HAL_RAIL_MEMORY],
				e->power_w[HAL_RAIL_HOST], e->temp_c[HAL_TEMP_JUNCTION],
				e->temp_c[HAL_TEMP_MEMORY], e->temp_c[HAL_TEMP_INLET], e->tokens_per_s,
				e->quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)],
				e->quantile_ms[SLA_INDEX(SLA_TBT, SLA_P99)],
				e->quantile_ms[SLA_INDEX(SLA_E2E, SLA_P99)], e->int8_token_share, int8,
				e->throttle, e->n_faults, gov_binding_name(p->rec.binding),
				gov_reasons_join(p->rec.reasons, reasons, sizeof(reasons)));
		if (n < 0 || ferror(a->ts))
			a->io_error = true;
	}
	/* a failed write ends the run: nothing after it would be kept */
	return pl->failed || a->io_error ? 1 : 0;
}

static const char ts_header[] =
	"t_s,clk_mhz,clk_locked,clk_min_mhz,clk_max_mhz,power_limit_w,power_accel_w,"
	"power_memory_w,power_host_w,temp_junction_c,temp_memory_c,temp_inlet_c,tokens_per_s,"
	"ttft_p99_ms,tbt_p99_ms,e2e_p99_ms,int8_token_share,int8_request_share_set,throttle,"
	"faults,binding,reason\n";

/* Run metadata: the scenario and policy files as given, the command that
 * reproduces the run and the compiler; nothing machine- or time-dependent
 * beyond what the caller gave. */
struct run_meta {
	const char *scenario_path, *policy_path, *command;
};

static json_t *summary_json(const struct acc *a, const struct scenario *sc, const struct policy *pol,
			    uint64_t seed, const struct governor *g, double sim_s,
			    const struct run_meta *m)
{
	const struct plant *pl = a->plant;
	const struct server_stats *st = server_get_stats(pl->srv);
	double ea = pl->dev.energy_j, em = pl->dev.mem_energy_j, eh = pl->dev.host_energy_j;
	double total = ea + em + eh;
	json_t *o = json_object();

	json_object_set_new(o, "scenario", json_string(sc->name));
	json_object_set_new(o, "scenario_path", json_string(m->scenario_path));
	json_object_set_new(o, "policy", json_string(pol->name));
	json_object_set_new(o, "policy_path", json_string(m->policy_path));
	json_object_set_new(o, "policy_hash", json_string(pol->hash_hex));
	json_object_set_new(o, "controller", json_string(pol->control.controller));
	json_object_set_new(o, "seed", json_integer((json_int_t)seed));
	json_object_set_new(o, "command", json_string(m->command));
	json_object_set_new(o, "govd_version", json_string(GOVD_VERSION));
	json_object_set_new(o, "compiler", json_string(declog_compiler()));
	json_object_set_new(o, "duration_s", jsonx_real(sim_s));
	json_object_set_new(o, "periods", json_integer((json_int_t)a->periods));
	json_object_set_new(o, "requests_arrived", json_integer((json_int_t)st->arrived));
	json_object_set_new(o, "requests_rejected", json_integer((json_int_t)st->rejected));
	json_object_set_new(o, "requests_completed", json_integer((json_int_t)st->completed));
	json_object_set_new(o, "tokens_generated", json_integer((json_int_t)st->tokens_generated));

	json_t *en = json_object();
	json_object_set_new(en, "accel", jsonx_real(ea));
	json_object_set_new(en, "memory", jsonx_real(em));
	json_object_set_new(en, "host", jsonx_real(eh));
	json_object_set_new(en, "total", jsonx_real(total));
	json_object_set_new(o, "energy_j", en);
	json_object_set_new(o, "tokens_per_joule",
			    jsonx_real(total > 0 ? (double)st->tokens_generated / total : 0));
	json_t *pw = json_object();
	json_object_set_new(pw, "accel", jsonx_real(sim_s > 0 ? ea / sim_s : 0));
	json_object_set_new(pw, "memory", jsonx_real(sim_s > 0 ? em / sim_s : 0));
	json_object_set_new(pw, "host", jsonx_real(sim_s > 0 ? eh / sim_s : 0));
	json_object_set_new(o, "mean_power_w", pw);

	json_t *sla = json_object();
	json_t *tg = json_object();
	json_object_set_new(sla, "window_s", jsonx_real(pol->sla.window_s));
	json_object_set_new(sla, "windows", json_integer((json_int_t)a->windows));
	json_object_set_new(sla, "windows_met", json_integer((json_int_t)a->windows_met));
	json_object_set_new(sla, "windows_idle", json_integer((json_int_t)a->windows_idle));
	json_object_set_new(sla, "attainment",
			    jsonx_real(a->windows ? (double)a->windows_met / (double)a->windows : 1.0));
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		json_object_set_new(sla, sla_rows[i].key,
				    jsonx_real(hist_quantile(metric_hist(st, sla_rows[i].metric),
							     sla_rows[i].q)));
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		json_object_set_new(tg, sla_rows[i].key, jsonx_real(pol->sla.latency_ms[i]));
	json_object_set_new(tg, "min_tokens_per_s", jsonx_real(pol->sla.min_tokens_per_s));
	json_object_set_new(tg, "attainment", jsonx_real(pol->sla.attainment));
	json_object_set_new(sla, "targets", tg);
	if (a->per_window)
		json_object_set_new(sla, "per_window", json_incref(a->per_window));
	json_object_set_new(o, "sla", sla);

	json_t *ck = json_object();
	json_object_set_new(ck, "changes", json_integer((json_int_t)a->clock_changes));
	json_object_set_new(ck, "changes_per_min",
			    jsonx_real(sim_s > 0 ? (double)a->clock_changes * 60.0 / sim_s : 0));
	json_object_set_new(ck, "mean_locked_mhz",
			    jsonx_real(a->periods ? a->lock_mhz_sum / (double)a->periods : 0));
	json_object_set_new(o, "clock", ck);

	json_t *th = json_object();
	json_object_set_new(th, "ceiling_c", jsonx_real(pol->thermal.ceiling_c));
	json_object_set_new(th, "max_junction_c", jsonx_real(a->max_tj_c));
	json_object_set_new(th, "clamp_events", json_integer((json_int_t)pl->dev.clamp_events));
	json_object_set_new(th, "clamp_time_s", jsonx_real(pl->dev.clamp_time_s));
	json_object_set_new(th, "time_above_ceiling_s", jsonx_real(a->above_ceiling_s));
	json_object_set_new(o, "thermal", th);

	json_t *pr = json_object(), *prs = json_object();
	json_t *q = json_object(), *qs = json_object();
	uint64_t breach = 0, breach_late = 0;
	json_object_set_new(pr, "int8_token_fraction",
			    jsonx_real(st->tokens_generated ? (double)st->tokens_int8 / (double)st->tokens_generated
						       : 0));
	if (sc->server.fp8_engine)
		json_object_set_new(pr, "fp8_token_fraction",
				    jsonx_real(st->tokens_generated ? (double)st->tokens_fp8 /
								 (double)st->tokens_generated
							       : 0));
	for (size_t s = 0; s < a->n_slices; s++) {
		json_t *ps = json_object(), *qq = json_object();
		uint64_t c = st->slice_completed[s], c8 = st->slice_int8_completed[s];
		json_object_set_new(ps, "requests_completed", json_integer((json_int_t)c));
		json_object_set_new(ps, "int8_requests", json_integer((json_int_t)c8));
		if (sc->server.fp8_engine) /* the FP8 ones among them (the ladder's rung) */
			json_object_set_new(ps, "fp8_requests",
					    json_integer((json_int_t)st->slice_fp8_completed[s]));
		json_object_set_new(ps, "int8_request_fraction", jsonx_real(c ? (double)c8 / (double)c : 0));
		json_object_set_new(ps, "int8_tokens", json_integer((json_int_t)st->slice_tokens_int8[s]));
		json_object_set_new(ps, "int8_token_share_of_all",
				    jsonx_real(st->tokens_generated ? (double)st->slice_tokens_int8[s] /
								 (double)st->tokens_generated
							       : 0));
		json_object_set_new(prs, sc->slices[s].name, ps);
		json_object_set_new(qq, "max_drop", jsonx_real(a->max_drop[s]));
		json_object_set_new(qq, "true_drop_end", jsonx_real(plant_true_drop(pl, (uint32_t)s, false)));
		if (sc->server.fp8_engine)
			json_object_set_new(qq, "fp8_true_drop_end",
					    jsonx_real(plant_true_drop(pl, (uint32_t)s, true)));
		json_object_set_new(qq, "breach_requests", json_integer((json_int_t)a->breach[s]));
		json_object_set_new(qq, "breach_requests_beyond_delay",
				    json_integer((json_int_t)a->breach_late[s]));
		json_object_set_new(qs, sc->slices[s].name, qq);
		breach += a->breach[s];
		breach_late += a->breach_late[s];
	}
	json_object_set_new(pr, "per_slice", prs);
	json_object_set_new(o, "precision", pr);
	json_object_set_new(q, "breach_requests", json_integer((json_int_t)breach));
	json_object_set_new(q, "breach_requests_beyond_delay", json_integer((json_int_t)breach_late));
	json_object_set_new(q, "per_slice", qs);
	/* Only where govd asked for evidence: the re-runs the plant charged. */
	if (st->shadow_arrived) {
		json_t *ar = json_object();
		json_object_set_new(ar, "requests", json_integer((json_int_t)st->shadow_arrived));
		json_object_set_new(ar, "rejected", json_integer((json_int_t)st->shadow_rejected));
		json_object_set_new(ar, "tokens", json_integer((json_int_t)st->shadow_tokens));
		/* sampled, but more in one tick than the plant queues: not re-run */
		json_object_set_new(ar, "lost", json_integer((json_int_t)pl->shadow_lost));
		json_object_set_new(ar, "share_of_requests",
				    jsonx_real(st->completed ? (double)st->shadow_arrived /
								 (double)st->completed
							     : 0));
		json_object_set_new(q, "asked_reruns", ar);
	}
	json_object_set_new(o, "quality", q);
	struct governor_status gs = { 0 };
	if (g)
		governor_status(g, &gs);
	json_object_set_new(o, "rollbacks", json_integer((json_int_t)gs.rollbacks));
	json_object_set_new(o, "telemetry_faults", json_integer((json_int_t)gs.fault_onsets));
	json_object_set_new(o, "telemetry_fault_periods", json_integer((json_int_t)a->fault_periods));
	json_object_set_new(o, "actuate_errors", json_integer((json_int_t)gs.actuate_errors));
	json_object_set_new(o, "failed", json_boolean(pl->failed));
	json_object_set_new(o, "fail_reason", json_string(pl->failed ? pl->fail_reason : ""));
	return o;
}

static FILE *open_out(const char *dir, const char *name, struct diag_list *diags)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct fsafe_err fe;
	FILE *f = fsafe_fcreate(path, 0644, true, &fe);
	if (!f)
		diag_add(diags, DIAG_ERROR, path, 0, 0, "", "io", "%s", fe.msg);
	return f;
}

/* Oracle candidates: one operating point written through the HAL at t = 0
 * and held; the plant advances period by period with the same ground-truth
 * accounting as a governed run, but no telemetry, guard or controller. */
static int run_forced(struct hal_dev *dev, const struct govd_clock *clk, const struct gov_opoint *op,
		      struct acc *a, uint64_t period_ms, uint64_t end_ms)
{
	const struct hal_ops *ops = dev->ops;
	int rc = 0;

	if (op->clk_locked)
		rc = ops->set_clock_range ? ops->set_clock_range(dev, op->clk_min_khz, op->clk_max_khz)
					  : -EOPNOTSUPP;
	if (!rc && op->power_limit_mw)
		rc = ops->set_power_limit ? ops->set_power_limit(dev, op->power_limit_mw) : -EOPNOTSUPP;
	if (!rc && gov_opoint_any_fp8(op)) /* the rung before the share, as the governor writes them */
		rc = ops->set_low_mode ? ops->set_low_mode(dev, op->low_mode, op->n_slices)
				       : -EOPNOTSUPP;
	if (!rc && op->n_slices)
		rc = ops->set_precision ? ops->set_precision(dev, op->int8_frac, op->n_slices)
					: -EOPNOTSUPP;
	if (rc)
		return rc;
	for (;;) {
		uint64_t now = govd_clock_now_ms(clk);
		if (now >= end_ms)
			return 0;
		account_period(a, now, 0);
		if (a->plant->failed)
			return 0;
		uint64_t next = now + period_ms < end_ms ? now + period_ms : end_ms;
		rc = govd_clock_wait_until(clk, next);
		if (rc < 0)
			return rc;
	}
}

/* The device's limits as the sim backend reports them for this scenario. */
int sim_device_limits(const struct scenario *sc, uint64_t seed, struct hal_limits *lim,
		      struct diag_list *diags)
{
	struct plant *plant = NULL;
	struct hal_dev dev = { 0 };
	int rc = plant_create(sc, seed, &plant, diags);
	if (rc)
		return rc;
	struct hal_dev_cfg cfg = { .name = "limits", .backend = "sim", .plant = plant };
	rc = hal_open(&dev, &cfg, diags);
	if (rc)
		goto err_plant;
	rc = dev.ops->get_limits(&dev, lim);
	hal_close(&dev);
err_plant:
	plant_destroy(plant);
	return rc;
}

/* The run's accumulator: the policy's per-slice quality rules against the
 * scenario's slices, the first SLA window open at 0. */
static int acc_init(struct acc *a, const struct sim_opts *o, const struct scenario *sc,
		    const struct policy *pol, struct plant *plant, bool output)
{
	a->pol = pol;
	a->plant = plant;
	a->period_s = pol->control.period_ms / 1000.0;
	a->on_window = o->on_window;
	a->window_ctx = o->window_ctx;
	a->n_slices = sc->n_slices < PLANT_MAX_SLICES ? sc->n_slices : PLANT_MAX_SLICES;
	for (size_t s = 0; s < a->n_slices; s++) {
		struct policy_slice_rule rule;
		a->max_drop[s] = policy_slice_max_drop(pol, sc->slices[s].name);
		policy_slice_rule(pol, sc->slices[s].name, &rule);
		a->prior_n[0][s] = rule.offline_samples;
		a->prior_k[0][s] = rule.offline_mismatches;
		a->prior_n[1][s] = rule.fp8_offline_samples;
		a->prior_k[1][s] = rule.fp8_offline_mismatches;
	}
	a->max_tj_c = plant->dev.tj_c;
	a->per_window = output ? json_array() : NULL;
	a->win = calloc(1, sizeof(*a->win));
	if (!a->win)
		return -ENOMEM;
	win_snapshot(a, 0);
	return 0;
}

/* After the last period: the completions since, and the last partial SLA
 * window, which counts only when no full one closed. */
static void acc_finish(struct acc *a)
{
	const struct plant *plant = a->plant;
	count_breaches(a); /* completions after the last period */
	if (plant->dev.tj_c > a->max_tj_c)
		a->max_tj_c = plant->dev.tj_c;
	uint64_t t_end_ms = (uint64_t)llround(plant->t_s * 1000.0);
	if (a->windows + a->windows_idle == 0) {
		win_close(a, t_end_ms);
	} else if ((a->on_window || a->per_window) && t_end_ms > a->win->start_ms) {
		struct sim_window w;
		win_judge(a, t_end_ms, &w);
		w.tail = true;
		win_record(a, &w);
		if (a->on_window)
			a->on_window(a->window_ctx, &w);
	}
}

static void fill_result(struct sim_result *res, const struct acc *a)
{
	const struct plant *plant = a->plant;
	res->sim_s = plant->t_s;
	res->periods = a->periods;
	res->failed = plant->failed;
	const struct server_stats *st = server_get_stats(plant->srv);
	double total = plant->dev.energy_j + plant->dev.mem_energy_j + plant->dev.host_energy_j;
	res->tokens_generated = st->tokens_generated;
	res->tokens_per_joule = total > 0 ? (double)st->tokens_generated / total : 0;
	for (size_t i = 0; i < SLA_N_ROWS; i++) {
		const struct hist *h = metric_hist(st, sla_rows[i].metric);
		res->quantile_ms[i] = h->n ? hist_quantile(h, sla_rows[i].q) : NAN;
	}
	res->windows = a->windows;
	res->windows_met = a->windows_met;
}

int sim_run(const struct sim_opts *o, struct sim_result *res, struct diag_list *diags)
{
	struct scenario *sc = NULL;
	struct policy *own_pol = NULL;
	const struct policy *pol = o->policy;
	struct plant *plant = NULL;
	struct hal_dev dev = { 0 };
	struct govd_clock clk;
	struct governor *g = NULL; /* none when the point is forced */
	struct acc a = { 0 };
	FILE *dl = NULL;
	/* A forced point has no governor: nothing to log or summarise. */
	bool output = !o->no_output && !o->force_op;
	int rc, rc2 = 0;

	memset(res, 0, sizeof(*res));
	/* Both files are checked before either error returns: all diags at once. */
	rc = scenario_load(o->scenario_path, &sc, diags);
	if (!pol) {
		rc2 = policy_load(o->policy_path, &own_pol, diags);
		pol = own_pol;
	}
	if (rc || rc2) {
		rc = rc ? rc : rc2;
		goto err_load;
	}
	uint64_t seed = o->have_seed ? o->seed : sc->default_seed;
	double duration_s = o->duration_s > 0 ? o->duration_s : sc->duration_s;
	snprintf(res->scenario, sizeof(res->scenario), "%s", sc->name);
	snprintf(res->policy, sizeof(res->policy), "%s", pol->name);
	res->seed = seed;

	rc = plant_create(sc, seed, &plant, diags);
	if (rc)
		goto err_load;
	struct hal_dev_cfg cfg = { .name = "sim0", .backend = "sim", .plant = plant };
	rc = hal_open(&dev, &cfg, diags);
	if (rc)
		goto err_plant;
	rc = hal_sim_clock(&dev, &clk);
	if (rc)
		goto err_dev;

	if (output) {
		if (o->out_dir)
			snprintf(res->out_dir, sizeof(res->out_dir), "%s", o->out_dir);
		else
			snprintf(res->out_dir, sizeof(res->out_dir), "out/sim/%s-%s-%llu", sc->name,
				 pol->name, (unsigned long long)seed);
		rc = fsafe_mkdirs(res->out_dir);
		if (rc) {
			diag_add(diags, DIAG_ERROR, res->out_dir, 0, 0, "", "io",
				 "cannot create output directory: %s", strerror(-rc));
			goto err_dev;
		}
		dl = open_out(res->out_dir, "decisions.jsonl", diags);
		a.ts = open_out(res->out_dir, "timeseries.csv", diags);
		if (!dl || !a.ts) {
			rc = -EIO;
			goto err_files;
		}
		fputs(ts_header, a.ts);
	}

	if ((rc = acc_init(&a, o, sc, pol, plant, output)))
		goto err_files;

	const char *pol_path = o->policy_path ? o->policy_path : pol->path;
	char cmd[8192];
	if (!o->command && sim_command(o, pol_path, seed, cmd, sizeof(cmd))) {
		diag_add(diags, DIAG_ERROR, sc->path, 0, 0, "", "io",
			 "the command line of the run is too long to record");
		rc = -ENAMETOOLONG;
		goto err_win;
	}
	struct run_meta meta = { .scenario_path = o->scenario_path, .policy_path = pol_path,
				 .command = o->command ? o->command : cmd };

	uint64_t end_ms = (uint64_t)llround(duration_s * 1000.0);
	if (o->force_op) {
		rc = run_forced(&dev, &clk, o->force_op, &a, pol->control.period_ms, end_ms);
		if (rc && rc != -EHOSTDOWN)
			diag_add(diags, DIAG_ERROR, sc->path, 0, 0, "", "actuate",
				 "cannot apply the operating point: %s", strerror(-rc));
	} else {
		struct governor_cfg gc = { .pol = pol, .dev = &dev, .clock = &clk, .declog = dl,
					   .scenario = sc->name, .scenario_path = meta.scenario_path,
					   .command = meta.command, .seed = seed, .on_period = on_period,
					   .cb_ctx = &a };
		rc = governor_new(&gc, &g, diags);
		if (rc)
			goto err_win;
		rc = governor_run(g, end_ms);
	}
	if (rc == -EHOSTDOWN || plant->failed)
		rc = 0; /* thermal shutdown ends the run; the summary says failed */
	acc_finish(&a);
	if (!o->force_op)
		governor_restore(g);
	fill_result(res, &a);
	if (rc == 0 && output) {
		json_t *sum = summary_json(&a, sc, pol, seed, g, plant->t_s, &meta);
		char path[4200];
		snprintf(path, sizeof(path), "%s/summary.json", res->out_dir);
		if (!sum || jsonx_dump_file(sum, path, JSON_INDENT(2) |
						      JSON_REAL_PRECISION(SUMMARY_REAL_PRECISION))) {
			diag_add(diags, DIAG_ERROR, path, 0, 0, "", "io", "cannot write summary");
			rc = -EIO;
		}
		json_decref(sum);
	}
	governor_free(g);
	if (a.io_error && !rc) {
		diag_add(diags, DIAG_ERROR, res->out_dir, 0, 0, "", "io", "writing outputs failed");
		rc = -EIO;
	}
err_win:
	free(a.win);
	json_decref(a.per_window);
err_files:
	if (a.ts && fclose(a.ts) && !rc)
		rc = -EIO;
	if (dl && fclose(dl) && !rc)
		rc = -EIO;
err_dev:
	hal_close(&dev);
err_plant:
	plant_destroy(plant);
err_load:
	policy_free(own_pol);
	scenario_free(sc);
	return rc;
}
