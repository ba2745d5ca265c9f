/* govctl report: reading a run (summary.json + decisions.jsonl of govctl sim,
 * or a live govd's decisions.jsonl alone) into per-period and per-window
 * evidence. Figures a live log lacks are recomputed from it (docs/report.md). */
#include "report/report.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fsafe.h"
#include "common/jsonx.h"
#include "governor/controllers/controller.h"
#include "governor/loop/declog_read.h"
#include "governor/policy/opoint.h"
#include "governor/policy/policy.h"

/* A decision log is MiBs; rotated files stay under max_bytes. */
#define RP_LOG_MAX_BYTES (2048ul * 1024 * 1024)

/* The run's fields from the decision log's header. */
static void take_header(struct rp_run *r, const struct declog_head *h)
{
	jsonx_copy_utf8(r->govd_version, sizeof(r->govd_version), h->govd_version);
	jsonx_copy_utf8(r->scenario, sizeof(r->scenario), h->scenario[0] ? h->scenario : "live");
	jsonx_copy_utf8(r->policy, sizeof(r->policy), h->policy);
	jsonx_copy_utf8(r->policy_path, sizeof(r->policy_path), h->policy_path);
	jsonx_copy_utf8(r->policy_hash, sizeof(r->policy_hash), h->policy_hash);
	jsonx_copy_utf8(r->controller, sizeof(r->controller), h->controller);
	if (h->scenario_path[0]) {
		jsonx_copy_utf8(r->scenario_path, sizeof(r->scenario_path), h->scenario_path);
		r->scenario_path_recorded = true;
	}
	jsonx_copy_utf8(r->command, sizeof(r->command), h->command);
	jsonx_copy_utf8(r->build_compiler, sizeof(r->build_compiler), h->compiler);
	r->period_s = h->period_ms / 1000.0;
	r->dry_run = h->dry_run;
	r->seed = h->seed;
	jsonx_copy_utf8(r->dev_name, sizeof(r->dev_name), h->dev_name);
	jsonx_copy_utf8(r->dev_model, sizeof(r->dev_model), h->dev_model);
	jsonx_copy_utf8(r->driver, sizeof(r->driver), h->driver);
	jsonx_copy_utf8(r->firmware, sizeof(r->firmware), h->firmware);
	r->slowdown_c = h->slowdown_mc / 1000.0;
	r->shutdown_c = h->shutdown_mc / 1000.0;
	for (size_t i = 0; i < h->n_slices && r->n_slices < HAL_MAX_SLICES; i++) {
		struct rp_slice *s = &r->slices[r->n_slices++];
		snprintf(s->name, sizeof(s->name), "%s", h->slice[i]);
		s->max_drop = s->int8_req_frac = s->int8_tokens_share = s->breaches = s->true_drop_end = NAN;
		s->max_drop_upper_int8 = NAN;
	}
	r->header_line = h->line;
}

struct log_ctx {
	struct rp_run *r;
	size_t cap;
};

static int on_header(void *ctx, const struct declog_head *h)
{
	take_header(((struct log_ctx *)ctx)->r, h);
	return 0;
}

static int on_period(void *ctx, const struct declog_period *p, bool copied)
{
	(void)copied;
	struct log_ctx *c = ctx;
	struct rp_run *r = c->r;
	if (r->np == c->cap) {
		size_t nc = c->cap ? 2 * c->cap : 4096;
		struct declog_period *np = realloc(r->p, nc * sizeof(*np));
		if (!np)
			return -ENOMEM;
		r->p = np;
		c->cap = nc;
	}
	r->p[r->np++] = *p;
	return 0;
}

/* The decision log through its reader (governor/loop/declog_read.h). */
static int read_log(struct rp_run *r, const char *path, char *err, size_t errlen)
{
	static const struct declog_read_cb cb = { .header = on_header, .period = on_period };
	struct log_ctx c = { .r = r };
	return declog_read(path, RP_LOG_MAX_BYTES, &cb, &c, err, errlen);
}

/* The run's figures from summary.json (its reader: governor/sim/summary_read.h).
 * The windows move into r; the rest is copied. */
static int take_summary(struct rp_run *r, struct sim_summary *s, const char *path, char *err,
			size_t errlen)
{
	for (size_t i = 0; i < r->n_slices; i++) {
		const struct sim_summary_slice *x = sim_summary_slice(s, r->slices[i].name);
		if (!x || !x->in_quality)
			return jsonx_fail(err, errlen, -EINVAL,
					  "%s: error: slice '%.48s' of the decision log's header is not in "
					  "quality.per_slice (summary and log of different runs?)",
					  path, r->slices[i].name);
	}
	r->have_summary = true;
	if (s->scenario_path[0]) {
		jsonx_copy_utf8(r->scenario_path, sizeof(r->scenario_path), s->scenario_path);
		r->scenario_path_recorded = true;
	}
	if (s->command[0])
		jsonx_copy_utf8(r->command, sizeof(r->command), s->command);
	if (!r->build_compiler[0])
		jsonx_copy_utf8(r->build_compiler, sizeof(r->build_compiler), s->compiler);
	r->duration_s = s->duration_s;
	r->tokens = s->tokens_generated;
	r->e_accel = s->energy_accel_j;
	r->e_mem = s->energy_memory_j;
	r->e_host = s->energy_host_j;
	r->e_total = s->energy_total_j;
	r->tpj = s->tokens_per_joule;
	r->window_s = s->window_s;
	r->windows = s->windows;
	r->windows_met = s->windows_met;
	r->attainment = s->attainment;
	memcpy(r->q_ms, s->q_ms, sizeof(r->q_ms));
	memcpy(r->targets, s->targets_ms, sizeof(r->targets));
	r->min_tokens_per_s = s->min_tokens_per_s;
	r->sw = s->win;
	r->nsw = s->n_win;
	s->win = NULL;
	s->n_win = 0;
	r->attainment_goal = s->attainment_goal;
	r->have_policy_sla = true;
	r->ceiling_c = s->ceiling_c;
	r->max_tj_c = s->max_junction_c;
	r->clamp_events = s->clamp_events;
	r->clamp_time_s = s->clamp_time_s;
	r->above_ceiling_s = s->time_above_ceiling_s;
	r->int8_token_frac = s->int8_token_fraction;
	r->fp8_token_frac = s->fp8_token_fraction;
	r->breaches = s->breach_requests;
	r->rollbacks = s->rollbacks;
	r->telemetry_faults = s->telemetry_faults;
	r->failed = s->failed;
	jsonx_copy_utf8(r->fail_reason, sizeof(r->fail_reason), s->fail_reason);
	for (size_t i = 0; i < r->n_slices; i++) {
		struct rp_slice *sl = &r->slices[i];
		const struct sim_summary_slice *x = sim_summary_slice(s, sl->name);
		sl->int8_req_frac = x->int8_request_fraction;
		sl->int8_tokens_share = x->int8_token_share_of_all;
		sl->max_drop = x->max_drop;
		sl->true_drop_end = x->true_drop_end;
		sl->breaches = x->breach_requests;
	}
	return 0;
}

static void join_owners(const struct policy *p, char *out, size_t len)
{
	char buf[1024] = "";
	for (size_t i = 0; i < p->metadata.n_owners; i++) {
		size_t l = strlen(buf);
		snprintf(buf + l, sizeof(buf) - l, "%s%s", i ? ", " : "", p->metadata.owners[i]);
	}
	jsonx_copy_utf8(out, len, buf);
}

static void read_policy(struct rp_run *r)
{
	struct policy *p = NULL;
	struct diag_list d = { 0 };
	if (!r->policy_path[0] || policy_load(r->policy_path, &p, &d)) {
		r->policy_state = 1;
		diag_clear(&d);
		return;
	}
	diag_clear(&d);
	if (strcmp(p->hash_hex, r->policy_hash)) {
		r->policy_state = 2;
		policy_free(p);
		return;
	}
	r->policy_state = 0;
	join_owners(p, r->owners, sizeof(r->owners));
	jsonx_copy_utf8(r->workload_profile, sizeof(r->workload_profile), p->metadata.workload_profile);
	jsonx_copy_utf8(r->model_revision, sizeof(r->model_revision), p->metadata.model_revision);
	jsonx_copy_utf8(r->power_mode, sizeof(r->power_mode), p->metadata.power_mode);
	jsonx_copy_utf8(r->v_compiler, sizeof(r->v_compiler), p->metadata.validated_with.compiler);
	jsonx_copy_utf8(r->v_runtime, sizeof(r->v_runtime), p->metadata.validated_with.runtime);
	jsonx_copy_utf8(r->v_driver, sizeof(r->v_driver), p->metadata.validated_with.driver);
	jsonx_copy_utf8(r->v_firmware, sizeof(r->v_firmware), p->metadata.validated_with.firmware);
	snprintf(r->objective, sizeof(r->objective), "%s", policy_objective_names[p->objective.kind]);
	r->have_triggers = true;
	r->trig_sla_n = p->rollback.sla_violated_windows;
	r->trig_sla_m = p->rollback.sla_of_windows;
	r->trig_quality = p->rollback.quality_breach;
	r->trig_clamps = p->rollback.thermal_clamp_events;
	r->trig_faults = p->rollback.telemetry_faults;
	if (!r->have_policy_sla) {
		memcpy(r->targets, p->sla.latency_ms, sizeof(r->targets));
		r->min_tokens_per_s = p->sla.min_tokens_per_s;
		r->attainment_goal = p->sla.attainment;
		r->ceiling_c = p->thermal.ceiling_c;
		r->window_s = p->sla.window_s;
		r->have_policy_sla = true;
	}
	for (size_t i = 0; i < r->n_slices; i++)
		if (isnan(r->slices[i].max_drop))
			r->slices[i].max_drop = policy_slice_max_drop(p, r->slices[i].name);
	policy_free(p);
}

int rp_run_load(const char *path, struct rp_run *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "%s", path);
	char log[1200], sum[1200];
	struct stat st;
	if (stat(path, &st))
		return jsonx_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	bool is_dir = S_ISDIR(st.st_mode);
	snprintf(log, sizeof(log), is_dir ? "%s/decisions.jsonl" : "%s", path);
	snprintf(r->log_path, sizeof(r->log_path), "%s", log);
	int rc = read_log(r, log, err, errlen);
	if (rc)
		goto undo_periods;
	r->duration_s = r->tokens = r->e_total = r->tpj = NAN;
	r->attainment_goal = r->ceiling_c = r->window_s = NAN;
	r->max_tj_c = r->clamp_events = r->breaches = NAN;
	if (is_dir) {
		snprintf(sum, sizeof(sum), "%s/summary.json", path);
		if (!stat(sum, &st)) {
			struct sim_summary ss;
			rc = sim_summary_load(sum, FSAFE_MAX_BYTES, &ss, err, errlen);
			if (rc)
				goto undo_periods;
			rc = take_summary(r, &ss, sum, err, errlen);
			sim_summary_free(&ss);
			if (rc)
				goto undo_periods;
		}
	}
	read_policy(r);
	if (!isfinite(r->ceiling_c))
		r->ceiling_c = 83.0; /* policy default (docs/policy.md) when nothing says otherwise */
	if (!isfinite(r->window_s) || r->window_s <= 0) {
		double w = 0;
		for (size_t i = 0; i < r->np; i++)
			if (r->p[i].win_s > w)
				w = r->p[i].win_s;
		r->window_s = w > 0 ? w : 60.0;
	}
	snprintf(r->label, sizeof(r->label), "%s/%s/seed%llu", r->scenario, r->policy,
		 (unsigned long long)r->seed);
	if (!r->scenario_path_recorded) /* older runs: the layout's convention */
		snprintf(r->scenario_path, sizeof(r->scenario_path), "configs/scenarios/%s.yaml",
			 r->scenario);
	r->scenario_path_exists = !stat(r->scenario_path, &st);
	return rp_run_windows(r);

undo_periods:
	free(r->p);
	r->p = NULL;
	return rc;
}

void rp_run_free(struct rp_run *r)
{
	free(r->p);
	free(r->w);
	free(r->sw);
	r->p = NULL;
	r->w = NULL;
	r->sw = NULL;
}

/* An SLA window as the report judges it: the simulator's own judgement
 * (summary.json sla.per_window, from the window's ground-truth histograms)
 * when the run has it, else sla_judge() -- the rule every other judge uses --
 * on the quantiles, requests and throughput the log carries at the window's
 * close, busy when a period of it had requests queued or running. A tail
 * (shorter than window_s, after a full window) is not judged, as the summary
 * does not count it. The headline attainment and every plot count these. */
static void window_judge(const struct rp_run *r, size_t k, bool work, const struct declog_period *close,
			 struct rp_wstats *w)
{
	const struct sim_summary_window *s = k < r->nsw ? &r->sw[k] : NULL;
	if (r->nsw) {
		w->judged_by_sim = true;
		w->tail = !s || s->tail;
		w->judged = s && !s->tail && !s->idle;
		w->sla_met = w->judged && s->sla_met;
		if (s)
			memcpy(w->q_ms, s->q_ms, sizeof(w->q_ms));
		return;
	}
	w->tail = k > 0 && k + 1 == r->nw && w->periods * (r->period_s > 0 ? r->period_s : 1) <
							 r->window_s - 1e-9;
	struct sla_window_obs o = {
		.served = w->requests > 0 ? (uint64_t)w->requests : 0,
		.waiting = close->queue_len > 0,
		.busy = work,
		.tokens_per_s = close->tokens_per_s,
	};
	memcpy(o.quantile_ms, w->q_ms, sizeof(o.quantile_ms));
	enum sla_verdict v = sla_judge(r->targets, r->min_tokens_per_s, &o, NULL);
	w->judged = !w->tail && v != SLA_IDLE;
	w->sla_met = w->judged && v == SLA_MET;
}

int rp_run_windows(struct rp_run *r)
{
	double ps = r->period_s > 0 ? r->period_s : 1.0;
	size_t per = (size_t)llround(r->window_s / ps);
	if (per < 1)
		per = 1;
	size_t nw = (r->np + per - 1) / per;
	free(r->w);
	r->w = calloc(nw ? nw : 1, sizeof(*r->w));
	if (!r->w)
		return -ENOMEM;
	r->nw = nw;
	double tok_total = 0, e[3] = { 0 };
	for (size_t k = 0; k < nw; k++) {
		struct rp_wstats *w = &r->w[k];
		size_t i0 = k * per, i1 = i0 + per < r->np ? i0 + per : r->np;
		const struct declog_period *close = &r->p[i1 - 1];
		w->t0_s = r->p[i0].t_s;
		w->t1_s = close->t_s + ps;
		w->periods = i1 - i0;
		w->ceiling_c = r->ceiling_c;
		w->slowdown_c = r->slowdown_c;
		w->min_clk_mhz = INFINITY;
		w->max_tj_c = -INFINITY;
		double ew = 0, host = 0, lim = 0, q = 0;
		bool work = false;
		for (size_t i = i0; i < i1; i++) {
			const struct declog_period *p = &r->p[i];
			double tot = p->p_accel_w + p->p_mem_w + p->p_host_w;
			ew += tot * ps;
			e[0] += p->p_accel_w * ps;
			e[1] += p->p_mem_w * ps;
			e[2] += p->p_host_w * ps;
			host += p->p_host_w * ps;
			w->mean_util += p->util;
			w->mean_clk_mhz += p->clk_mhz;
			if (p->clk_mhz < w->min_clk_mhz)
				w->min_clk_mhz = p->clk_mhz;
			if (p->tj_c > w->max_tj_c)
				w->max_tj_c = p->tj_c;
			w->clamp_periods += !!(p->throttle & HAL_THR_HW_SLOWDOWN);
			w->swtherm_periods += !!(p->throttle & HAL_THR_SW_THERMAL);
			w->cap_periods += !!(p->throttle & HAL_THR_POWER_CAP);
			w->mean_accel_w += p->p_accel_w;
			lim += p->power_limit_w;
			q += p->queue_len;
			if (p->queue_len > w->max_queue)
				w->max_queue = p->queue_len;
			work |= p->queue_len > 0 || p->running > 0;
		}
		double n = (double)w->periods;
		w->mean_util /= n;
		w->mean_clk_mhz /= n;
		w->mean_accel_w /= n;
		w->mean_limit_w = lim / n;
		w->power_ratio = w->mean_limit_w > 0 ? w->mean_accel_w / w->mean_limit_w : NAN;
		w->mean_queue = q / n;
		w->energy_j = ew;
		w->host_share = ew > 0 ? host / ew : NAN;
		/* The estimator's window at the close covers the last ring periods:
		 * tokens_per_s x its length is the window's tokens. */
		double cover = close->win_s > 0 ? close->win_s : n * ps;
		if (cover > n * ps)
			cover = n * ps;
		w->tokens = close->tokens_per_s * cover;
		tok_total += w->tokens;
		w->tpj = ew > 0 ? w->tokens / ew : NAN;
		w->int8_share = close->int8_share;
		memcpy(w->q_ms, close->q_ms, sizeof(w->q_ms));
		w->requests = close->win_requests;
		window_judge(r, k, work, close, w);
		w->busy = w->judged || (!w->tail && w->mean_util >= rp_default_thresholds.busy_util);
		w->clock_sens = NAN;
	}
	r->recomputed_tokens = tok_total;
	r->recomputed_energy_j = e[0] + e[1] + e[2];

	/* Run figures a decision log alone does not carry. */
	double met_tokens = 0, judged = 0, met = 0;
	for (size_t k = 0; k < nw; k++) {
		judged += r->w[k].judged;
		met += r->w[k].sla_met;
		/* The sim's true tokens of the window when it wrote them. */
		if (r->w[k].sla_met)
			met_tokens += k < r->nsw && isfinite(r->sw[k].tokens) ? r->sw[k].tokens : r->w[k].tokens;
	}
	/* Summary and plots count the same windows: the judged ones. */
	if (!r->have_summary || r->nsw) {
		r->windows = judged;
		r->windows_met = met;
		r->attainment = judged > 0 ? met / judged : 1.0;
	}
	if (!r->have_summary) {
		r->duration_s = (double)r->np * ps;
		r->tokens = tok_total;
		r->e_accel = e[0];
		r->e_mem = e[1];
		r->e_host = e[2];
		r->e_total = e[0] + e[1] + e[2];
		r->tpj = r->e_total > 0 ? r->tokens / r->e_total : NAN;
		for (size_t i = 0; i < SLA_N_ROWS; i++)
			r->q_ms[i] = 0;
		double i8 = 0;
		for (size_t k = 0; k < nw; k++) {
			const struct rp_wstats *w = &r->w[k];
			if (!w->judged)
				continue;
			for (size_t i = 0; i < SLA_N_ROWS; i++)
				r->q_ms[i] = fmax(r->q_ms[i], w->q_ms[i]);
			i8 += (isfinite(w->int8_share) ? w->int8_share : 0) * w->tokens;
		}
		r->int8_token_frac = tok_total > 0 ? i8 / tok_total : NAN;
		r->max_tj_c = -INFINITY;
		r->clamp_events = r->clamp_time_s = r->above_ceiling_s = 0;
		r->rollbacks = r->telemetry_faults = 0;
		for (size_t i = 0; i < r->np; i++) {
			const struct declog_period *p = &r->p[i], *prev = i ? &r->p[i - 1] : NULL;
			r->max_tj_c = fmax(r->max_tj_c, p->tj_c);
			bool cl = p->throttle & HAL_THR_HW_SLOWDOWN;
			r->clamp_events += cl && !(prev && (prev->throttle & HAL_THR_HW_SLOWDOWN));
			r->clamp_time_s += cl ? ps : 0;
			r->above_ceiling_s += p->tj_c > r->ceiling_c ? ps : 0;
			r->rollbacks += !!(p->reasons & GOV_R_ROLLBACK);
			r->telemetry_faults += p->n_faults > 0 && !(prev && prev->n_faults > 0);
		}
		r->breaches = NAN;
	}
	r->tpj_sla = r->e_total > 0 ? met_tokens / r->e_total : NAN;
	/* Per slice: the worst drop bound while INT8 was set; the mean set share
	 * stands in for the served share when there is no summary. */
	for (size_t s = 0; s < r->n_slices; s++) {
		struct rp_slice *sl = &r->slices[s];
		double worst = NAN, set = 0;
		for (size_t i = 0; i < r->np; i++) {
			const struct declog_period *p = &r->p[i];
			double f = isfinite(p->int8_after[s]) ? p->int8_after[s] : 0;
			set += f;
			if (f > 0 && isfinite(p->q_drop_upper[s]) && !(p->q_drop_upper[s] <= worst))
				worst = p->q_drop_upper[s];
		}
		sl->max_drop_upper_int8 = worst;
		if (!r->have_summary)
			sl->int8_req_frac = r->np ? set / (double)r->np : NAN;
	}
	return 0;
}
