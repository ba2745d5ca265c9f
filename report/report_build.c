/* The perf-per-watt report's analysis (docs/report.md): loaded runs ->
 * one JSON document (report.json); report_render.c renders the Markdown and
 * HTML from it, so the three never disagree. No I/O: govctl report loads the
 * runs, writes the outputs and signs them. */
#include "report/report.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "governor/policy/opoint.h"
#include "governor/sim/sim.h"

static bool same_demand(const struct rp_run *a, const struct rp_run *b)
{
	/* Windows start at t = 0 and last window_s whatever the control
	 * period, so window k of both runs saw the same arrivals. */
	return a != b && !strcmp(a->scenario, b->scenario) && a->seed == b->seed &&
	       a->window_s == b->window_s && strcmp(a->scenario, "live");
}

static bool same_slices(const struct rp_run *a, const struct rp_run *b)
{
	if (a->n_slices != b->n_slices)
		return false;
	for (size_t i = 0; i < a->n_slices; i++)
		if (strcmp(a->slices[i].name, b->slices[i].name))
			return false;
	return true;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Clock sensitivity per window from the run of the same demand whose clock
 * differs most; windows without such a pair get the run's median (or the
 * median over its scenario's runs). */
static void sensitivities(struct rp_run **runs, size_t n, const struct rp_thresholds *th)
{
	for (size_t i = 0; i < n; i++) {
		struct rp_run *r = runs[i];
		for (size_t k = 0; k < r->nw; k++) {
			struct rp_wstats *w = &r->w[k];
			double best = 0;
			for (size_t j = 0; j < n; j++) {
				if (!same_demand(r, runs[j]) || k >= runs[j]->nw)
					continue;
				const struct rp_wstats *o = &runs[j]->w[k];
				double e = rp_clock_sensitivity(w->mean_util, w->mean_clk_mhz, w->int8_share,
								o->mean_util, o->mean_clk_mhz, o->int8_share, th);
				double d = fabs(log(w->mean_clk_mhz / o->mean_clk_mhz));
				if (isfinite(e) && d > best) {
					best = d;
					w->clock_sens = e;
				}
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct rp_run *r = runs[i];
		double *v = malloc((r->nw + 1) * sizeof(*v));
		size_t m = 0;
		if (!v)
			continue;
		for (size_t k = 0; k < r->nw; k++)
			if (isfinite(r->w[k].clock_sens) && r->w[k].busy)
				v[m++] = r->w[k].clock_sens;
		double med = median(v, m);
		free(v);
		if (!isfinite(med)) {
			size_t tot = 0;
			for (size_t j = 0; j < n; j++)
				if (j == i || same_demand(r, runs[j]))
					tot += runs[j]->nw;
			v = malloc((tot + 1) * sizeof(*v));
			m = 0;
			if (!v)
				continue;
			for (size_t j = 0; j < n; j++)
				if (j == i || same_demand(r, runs[j]))
					for (size_t k = 0; k < runs[j]->nw; k++)
						if (isfinite(runs[j]->w[k].clock_sens) && runs[j]->w[k].busy)
							v[m++] = runs[j]->w[k].clock_sens;
			med = median(v, m);
			free(v);
		}
		for (size_t k = 0; k < r->nw; k++)
			if (!isfinite(r->w[k].clock_sens) && isfinite(med)) {
				r->w[k].clock_sens = med;
				r->w[k].sens_pooled = true;
			}
	}
}

/* Cost of each window against the best tokens/J another run reached for the
 * same demand, floored by the run's own 90th-percentile window (so the run
 * that is best in every window still shows what its slow windows cost). */
static void costs(struct rp_run **runs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct rp_run *r = runs[i];
		double *v = malloc((r->nw + 1) * sizeof(*v));
		for (size_t k = 0; k < r->nw; k++) {
			struct rp_wstats *w = &r->w[k];
			double peer = NAN;
			for (size_t j = 0; j < n; j++)
				if (same_demand(r, runs[j]) && k < runs[j]->nw && runs[j]->w[k].busy &&
				    isfinite(runs[j]->w[k].tpj) && !(runs[j]->w[k].tpj <= peer))
					peer = runs[j]->w[k].tpj;
			size_t m = 0;
			for (size_t q = 0; v && q < r->nw; q++)
				if (r->w[q].busy)
					v[m++] = r->w[q].tpj;
			double best = v ? rp_reference_tpj(peer, v, m) : peer;
			w->cost_j = w->busy ? rp_window_cost_j(w->energy_j, w->tokens, best) : 0;
		}
		free(v);
	}
}

static const char *owner_of(enum rp_class c)
{
	switch (c) {
	case RP_C_THERMAL:
	case RP_C_POWER_CAP:
	case RP_C_MEMORY:
		return "power modeling";
	case RP_C_QUEUEING:
	case RP_C_HOST:
		return "runtime scheduler";
	default:
		return "systems performance";
	}
}

static const char *intervention_of(enum rp_class c)
{
	switch (c) {
	case RP_C_THERMAL:
		return "predictive thermal cap: lower the power limit / clock before the junction reaches "
		       "the soft ceiling, so the hardware clamp never fires";
	case RP_C_POWER_CAP:
		return "lock the clock below the point where the power limit regulates (same work, less "
		       "voltage) or raise the limit within the rack budget";
	case RP_C_QUEUEING:
		return "raise the clock on queue growth (queue surge) and bound the prefill budget so "
		       "waiting requests drain";
	case RP_C_HOST:
		return "host-side: larger decode batches, asynchronous output processing, CPU pinning of "
		       "the scheduler thread";
	case RP_C_COMPUTE:
		return "INT8 on the slices whose quality gate is open (compute-bound kernels gain most)";
	case RP_C_MEMORY:
		return "lower the SM clock in memory-bound decode (throughput holds, power falls)";
	default:
		return "measure clock sensitivity: add a run of the same scenario at a locked lower clock "
		       "(static policy)";
	}
}

struct runinfo {
	struct rp_rank rank[RP_C_N];
	size_t nrank;
	enum rp_class cls;
	struct rp_side side;
	struct rp_decision dec; /* against the baseline */
};

static json_t *jstr_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

static void side_of(const struct rp_run *r, struct rp_side *s)
{
	memset(s, 0, sizeof(*s));
	s->failed = r->failed;
	s->tpj = r->tpj;
	s->attainment = r->attainment;
	s->attainment_goal = isfinite(r->attainment_goal) ? r->attainment_goal : 0.99;
	s->latency_ok = true;
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		if (r->targets[i] > 0 && isfinite(r->q_ms[i]) && r->q_ms[i] > r->targets[i])
			s->latency_ok = false;
	s->breaches = r->breaches;
	s->quality_ok = true;
	for (size_t i = 0; i < r->n_slices; i++)
		if (isfinite(r->slices[i].max_drop) && r->slices[i].max_drop_upper_int8 > r->slices[i].max_drop)
			s->quality_ok = r->have_summary; /* the ground truth decides when we have it */
	s->clamp_events = r->clamp_events;
	s->max_tj_c = r->max_tj_c;
	s->slowdown_c = r->slowdown_c;
	s->telemetry_faults = r->telemetry_faults;
	s->rollbacks = r->rollbacks;
	s->guard_sla = r->have_triggers && r->trig_sla_n > 0;
	s->guard_quality = r->have_triggers && r->trig_quality;
	s->guard_thermal = r->have_triggers && r->trig_clamps > 0;
	s->recomputed = !r->have_summary;
}

static json_t *point(const struct rp_run *r)
{
	json_t *o = json_object();
	json_object_set_new(o, "tokens_per_joule", jsonx_real(r->tpj));
	json_object_set_new(o, "tokens_per_joule_under_sla", jsonx_real(r->tpj_sla));
	json_object_set_new(o, "sla_attainment", jsonx_real(r->attainment));
	json_object_set_new(o, "ttft_p99_ms", jsonx_real(r->q_ms[SLA_INDEX(SLA_TTFT, SLA_P99)]));
	json_object_set_new(o, "tbt_p99_ms", jsonx_real(r->q_ms[SLA_INDEX(SLA_TBT, SLA_P99)]));
	json_object_set_new(o, "clamp_events", jsonx_real(r->clamp_events));
	json_object_set_new(o, "quality_breaches", jsonx_real(r->breaches));
	json_object_set_new(o, "int8_token_fraction", jsonx_real(r->int8_token_frac));
	return o;
}

static json_t *handoff(const struct rp_run *r, const char *role)
{
	json_t *o = json_object();
	json_object_set_new(o, "run", json_string(r->label));
	json_object_set_new(o, "role", json_string(role));
	json_object_set_new(o, "source", json_string(r->dir));
	json_object_set_new(o, "source_kind",
			    json_string(r->have_summary ? "govctl sim run" : "decision log (recomputed)"));
	json_object_set_new(o, "scenario", json_string(r->scenario));
	json_object_set_new(o, "workload_profile", jstr_or_null(r->workload_profile));
	json_object_set_new(o, "device", json_sprintf("%s (%s)", r->dev_model, r->dev_name));
	json_object_set_new(o, "model_revision", jstr_or_null(r->model_revision));
	json_object_set_new(o, "driver_version", jstr_or_null(r->driver));
	json_object_set_new(o, "firmware_version", jstr_or_null(r->firmware));
	/* What built the run when it says so; else the policy's validated_with. */
	json_object_set_new(o, "compiler", jstr_or_null(r->build_compiler[0] ? r->build_compiler
									 : r->v_compiler));
	json_object_set_new(o, "compiler_source",
			    json_string(r->build_compiler[0] ? "run (versions.compiler)"
				       : r->v_compiler[0] ? "policy metadata.validated_with"
							  : "unknown"));
	json_object_set_new(o, "runtime", json_sprintf("govd %s%s%s", r->govd_version,
						       r->v_runtime[0] ? "; policy validated with " : "",
						       r->v_runtime));
	json_object_set_new(o, "power_mode", jstr_or_null(r->power_mode));
	json_object_set_new(o, "policy", json_string(r->policy));
	json_object_set_new(o, "controller", json_string(r->controller));
	json_object_set_new(o, "policy_path", jstr_or_null(r->policy_path));
	json_object_set_new(o, "policy_hash", json_string(r->policy_hash));
	static const char *const states[] = { "matches the file at policy_path",
					      "policy file not found or not loadable: metadata unknown",
					      "policy file changed since the run: metadata not used" };
	json_object_set_new(o, "policy_hash_check", json_string(states[r->policy_state]));
	json_object_set_new(o, "owners", jstr_or_null(r->owners));
	json_object_set_new(o, "objective", jstr_or_null(r->objective));
	json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
	json_object_set_new(o, "duration_s", jsonx_real(r->duration_s));
	if (r->command[0]) {
		/* The recorded command, into the run's own directory: rerunning it
		 * must give the same bytes. */
		char cmd[sizeof(r->command) + 1100];
		snprintf(cmd, sizeof(cmd), "%s --out", r->command);
		sim_shell_append(cmd, sizeof(cmd), r->dir);
		json_object_set_new(o, "reproduce", json_string(cmd));
	} else if (strcmp(r->scenario, "live")) {
		/* Quoted like the recorded command: paths with spaces or shell
		 * characters must reproduce, not run something else. */
		char cmd[3400] = "govctl sim --scenario";
		sim_shell_append(cmd, sizeof(cmd), r->scenario_path);
		size_t l = strlen(cmd);
		snprintf(cmd + l, sizeof(cmd) - l, " --policy");
		sim_shell_append(cmd, sizeof(cmd), r->policy_path[0] ? r->policy_path : "?");
		l = strlen(cmd);
		snprintf(cmd + l, sizeof(cmd) - l, " --seed %llu --duration %.0f --out",
			 (unsigned long long)r->seed, r->duration_s);
		sim_shell_append(cmd, sizeof(cmd), r->dir);
		json_object_set_new(o, "reproduce", json_string(cmd));
	} else
		json_object_set_new(o, "reproduce",
				    json_string("live run: not reproducible by command; replay needs the "
						"request trace of the serving window"));
	json_object_set_new(o, "scenario_path", json_string(r->scenario_path));
	json_object_set_new(o, "scenario_path_inferred", json_boolean(!r->scenario_path_recorded));
	json_object_set_new(o, "command_recorded", json_boolean(r->command[0] != '\0'));
	json_object_set_new(o, "scenario_path_exists", json_boolean(r->scenario_path_exists));
	return o;
}

static json_t *thresholds_json(const struct rp_thresholds *th)
{
	json_t *o = json_object();
	json_object_set_new(o, "busy_util", json_real(th->busy_util));
	json_object_set_new(o, "cap_ratio", json_real(th->cap_ratio));
	json_object_set_new(o, "cap_share", json_real(th->cap_share));
	json_object_set_new(o, "queue_depth", json_real(th->queue_depth));
	json_object_set_new(o, "host_share", json_real(th->host_share));
	json_object_set_new(o, "host_util", json_real(th->host_util));
	json_object_set_new(o, "compute_sens", json_real(th->compute_sens));
	json_object_set_new(o, "clk_spread", json_real(th->clk_spread));
	json_object_set_new(o, "int8_match", json_real(th->int8_match));
	json_object_set_new(o, "min_gain", json_real(th->min_gain));
	json_object_set_new(o, "tj_margin_c", json_real(th->tj_margin_c));
	return o;
}

static json_t *primary(const struct rp_run *r, const struct rp_run *b, const char *role)
{
	json_t *o = json_object();
	json_object_set_new(o, "run", json_string(r->label));
	json_object_set_new(o, "role", json_string(role));
	json_object_set_new(o, "source", json_string(r->have_summary ? "summary.json (ground truth)"
								     : "recomputed from the decision log"));
	json_object_set_new(o, "tokens", jsonx_real(r->tokens));
	json_t *e = json_object();
	json_object_set_new(e, "accel", jsonx_real(r->e_accel));
	json_object_set_new(e, "memory", jsonx_real(r->e_mem));
	json_object_set_new(e, "host", jsonx_real(r->e_host));
	json_object_set_new(e, "total", jsonx_real(r->e_total));
	json_object_set_new(o, "energy_j", e);
	json_object_set_new(o, "tokens_per_joule", jsonx_real(r->tpj));
	json_object_set_new(o, "tokens_per_joule_under_sla", jsonx_real(r->tpj_sla));
	json_object_set_new(o, "ratio_vs_baseline", jsonx_real(r->tpj / b->tpj));
	json_object_set_new(o, "ratio_under_sla_vs_baseline", jsonx_real(r->tpj_sla / b->tpj_sla));
	json_object_set_new(o, "sla_attainment", jsonx_real(r->attainment));
	json_object_set_new(o, "windows_judged", jsonx_real(r->windows));
	json_object_set_new(o, "windows_met", jsonx_real(r->windows_met));
	if (r->have_summary) {
		json_t *c = json_object();
		json_object_set_new(c, "tokens_from_log", jsonx_real(r->recomputed_tokens));
		json_object_set_new(c, "tokens_rel_err", jsonx_real(r->recomputed_tokens / r->tokens - 1));
		json_object_set_new(c, "energy_j_from_log", jsonx_real(r->recomputed_energy_j));
		json_object_set_new(c, "energy_rel_err",
				    jsonx_real(r->recomputed_energy_j / r->e_total - 1));
		json_object_set_new(o, "recompute_check", c);
	}
	/* Trend: tokens/J of busy windows against time. */
	double *x = calloc(r->nw + 1, sizeof(*x)), *y = calloc(r->nw + 1, sizeof(*y));
	json_t *ws = json_array();
	size_t m = 0;
	for (size_t k = 0; x && y && k < r->nw; k++) {
		const struct rp_wstats *w = &r->w[k];
		json_t *wj = json_object();
		json_object_set_new(wj, "t0_s", json_real(w->t0_s));
		json_object_set_new(wj, "t1_s", json_real(w->t1_s));
		json_object_set_new(wj, "tokens_per_joule", w->busy ? jsonx_real(w->tpj) : json_null());
		json_object_set_new(wj, "sla_met", w->judged ? json_boolean(w->sla_met) : json_null());
		json_array_append_new(ws, wj);
		if (w->busy && isfinite(w->tpj)) {
			x[m] = w->t0_s / 3600.0;
			y[m++] = w->tpj;
		}
	}
	json_t *t = json_object();
	double slope = x && y ? rp_slope(x, y, m) : NAN;
	double f = 0, l = 0;
	size_t third = m / 3;
	for (size_t i = 0; i < third; i++) {
		f += y[i];
		l += y[m - third + i];
	}
	double first = third ? f / (double)third : NAN, last = third ? l / (double)third : NAN;
	json_object_set_new(t, "busy_windows", json_integer((json_int_t)m));
	json_object_set_new(t, "slope_tpj_per_hour", jsonx_real(slope));
	json_object_set_new(t, "first_third_mean", jsonx_real(first));
	json_object_set_new(t, "last_third_mean", jsonx_real(last));
	json_object_set_new(t, "change", jsonx_real(last / first - 1));
	json_object_set_new(o, "trend", t);
	json_object_set_new(o, "windows", ws);
	free(x);
	free(y);
	return o;
}

/* Window evidence rows: the text with each number replaced by '#', and the
 * numbers' ranges over the windows that share that text. */
#define EV_NUMS 24
struct ev_group {
	enum rp_class cls;
	char tmpl[512];
	size_t nn, count;
	char lo[EV_NUMS][24], hi[EV_NUMS][24];
	json_t *spans;
	double tmin, tmax, energy_j, cost_j;
};

static size_t ev_template(const char *s, char *tmpl, size_t len, char tok[][24])
{
	size_t n = 0, o = 0;
	for (size_t i = 0; s[i] && o + 2 < len;) {
		bool neg = s[i] == '-' && isdigit((unsigned char)s[i + 1]) &&
			   (i == 0 || s[i - 1] == ' ' || s[i - 1] == '(');
		if ((isdigit((unsigned char)s[i]) || neg) && n < EV_NUMS) {
			size_t j = i + 1;
			while (isdigit((unsigned char)s[j]) ||
			       (s[j] == '.' && isdigit((unsigned char)s[j + 1])))
				j++;
			snprintf(tok[n++], 24, "%.*s", (int)(j - i < 23 ? j - i : 23), s + i);
			tmpl[o++] = '#';
			i = j;
		} else {
			tmpl[o++] = s[i++];
		}
	}
	tmpl[o] = '\0';
	return n;
}

static void ev_fill(const struct ev_group *g, char *out, size_t len)
{
	size_t o = 0, k = 0;
	for (const char *p = g->tmpl; *p && o + 1 < len; p++) {
		int w;
		if (*p == '#' && k < g->nn) {
			w = strcmp(g->lo[k], g->hi[k]) ? snprintf(out + o, len - o, "%s..%s", g->lo[k], g->hi[k])
							: snprintf(out + o, len - o, "%s", g->lo[k]);
			k++;
		} else {
			w = snprintf(out + o, len - o, "%c", *p);
		}
		if (w < 0 || (size_t)w >= len - o)
			break;
		o += (size_t)w;
	}
	out[o < len ? o : len - 1] = '\0';
}

static json_t *bottlenecks(const struct rp_run *r, const struct runinfo *ri, const char *role)
{
	json_t *o = json_object();
	json_object_set_new(o, "run", json_string(r->label));
	json_object_set_new(o, "role", json_string(role));
	json_object_set_new(o, "run_class", json_string(rp_class_name(ri->cls)));
	json_object_set_new(o, "run_class_rule",
			    json_string(r->clamp_events > 0
						? "entered hardware slowdown: thermal-bound whatever the energy ranking"
						: "the class with the largest share of the busy windows' energy"));
	json_t *rk = json_array();
	for (size_t i = 0; i < ri->nrank; i++) {
		json_t *x = json_object();
		json_object_set_new(x, "class", json_string(rp_class_name(ri->rank[i].cls)));
		json_object_set_new(x, "windows", json_integer((json_int_t)ri->rank[i].windows));
		json_object_set_new(x, "energy_j", jsonx_real(ri->rank[i].energy_j));
		json_object_set_new(x, "share_of_busy_energy", jsonx_real(ri->rank[i].share_of_busy));
		json_object_set_new(x, "cost_j", jsonx_real(ri->rank[i].cost_j));
		json_object_set_new(x, "share_of_energy", jsonx_real(ri->rank[i].share_of_energy));
		json_object_set_new(x, "tokens_per_joule_if_removed", jsonx_real(ri->rank[i].tpj_if_removed));
		json_array_append_new(rk, x);
	}
	json_object_set_new(o, "ranking", rk);
	json_t *ws = json_array(), *groups = json_array();
	struct ev_group *grp = calloc(r->nw + 1, sizeof(*grp));
	size_t idle = 0, ngr = 0;
	for (size_t k = 0; k < r->nw; k++) {
		const struct rp_wstats *w = &r->w[k];
		char why[512];
		enum rp_class c = rp_classify(w, &rp_default_thresholds, why, sizeof(why));
		if (c == RP_C_IDLE) {
			idle++;
			continue;
		}
		json_t *x = json_object();
		json_object_set_new(x, "t0_s", json_real(w->t0_s));
		json_object_set_new(x, "t1_s", json_real(w->t1_s));
		json_object_set_new(x, "class", json_string(rp_class_name(c)));
		json_object_set_new(x, "evidence", json_string(why));
		json_object_set_new(x, "tokens_per_joule", jsonx_real(w->tpj));
		json_object_set_new(x, "energy_j", jsonx_real(w->energy_j));
		json_object_set_new(x, "cost_j", jsonx_real(w->cost_j));
		json_object_set_new(x, "max_junction_c", jsonx_real(w->max_tj_c));
		json_object_set_new(x, "clamp_periods", json_integer((json_int_t)w->clamp_periods));
		json_object_set_new(x, "power_vs_limit", jsonx_real(w->power_ratio));
		json_object_set_new(x, "host_share", jsonx_real(w->host_share));
		json_object_set_new(x, "queue_mean", jsonx_real(w->mean_queue));
		json_object_set_new(x, "clock_mhz_mean", jsonx_real(w->mean_clk_mhz));
		json_object_set_new(x, "clock_sensitivity", jsonx_real(w->clock_sens));
		json_object_set_new(x, "utilisation", jsonx_real(w->mean_util));
		json_object_set_new(x, "ttft_p99_ms", jsonx_real(w->q_ms[SLA_INDEX(SLA_TTFT, SLA_P99)]));
		json_object_set_new(x, "tbt_p99_ms", jsonx_real(w->q_ms[SLA_INDEX(SLA_TBT, SLA_P99)]));
		json_object_set_new(x, "tail", json_boolean(w->tail));
		json_array_append_new(ws, x);
		/* Evidence that differs only in its numbers collapses into one
		 * row with a count and each number's range. */
		char tmpl[512], tok[EV_NUMS][24];
		size_t nn = ev_template(why, tmpl, sizeof(tmpl), tok);
		struct ev_group *gr = NULL;
		for (size_t q = 0; q < ngr && !gr; q++)
			if (grp[q].cls == c && grp[q].nn == nn && !strcmp(grp[q].tmpl, tmpl))
				gr = &grp[q];
		if (!gr && grp) {
			gr = &grp[ngr++];
			memset(gr, 0, sizeof(*gr));
			gr->cls = c;
			gr->nn = nn;
			snprintf(gr->tmpl, sizeof(gr->tmpl), "%s", tmpl);
			gr->spans = json_array();
			gr->tmin = INFINITY;
			gr->tmax = -INFINITY;
			for (size_t q = 0; q < nn; q++) {
				snprintf(gr->lo[q], sizeof(gr->lo[q]), "%.23s", tok[q]);
				snprintf(gr->hi[q], sizeof(gr->hi[q]), "%.23s", tok[q]);
			}
		}
		if (!gr)
			continue;
		gr->count++;
		for (size_t q = 0; q < nn; q++) {
			if (strtod(tok[q], NULL) < strtod(gr->lo[q], NULL))
				snprintf(gr->lo[q], sizeof(gr->lo[q]), "%.23s", tok[q]);
			if (strtod(tok[q], NULL) > strtod(gr->hi[q], NULL))
				snprintf(gr->hi[q], sizeof(gr->hi[q]), "%.23s", tok[q]);
		}
		json_t *span = json_array();
		json_array_append_new(span, json_real(w->t0_s));
		json_array_append_new(span, json_real(w->t1_s));
		json_array_append_new(gr->spans, span);
		if (isfinite(w->tpj)) {
			gr->tmin = fmin(gr->tmin, w->tpj);
			gr->tmax = fmax(gr->tmax, w->tpj);
		}
		gr->energy_j += isfinite(w->energy_j) ? w->energy_j : 0;
		gr->cost_j += isfinite(w->cost_j) ? w->cost_j : 0;
	}
	for (size_t q = 0; q < ngr; q++) {
		json_t *x = json_object();
		char ev[1024];
		ev_fill(&grp[q], ev, sizeof(ev));
		json_object_set_new(x, "class", json_string(rp_class_name(grp[q].cls)));
		json_object_set_new(x, "evidence", json_string(ev));
		json_object_set_new(x, "count", json_integer((json_int_t)grp[q].count));
		json_object_set_new(x, "windows", grp[q].spans);
		json_object_set_new(x, "tokens_per_joule_min", jsonx_real(grp[q].tmin));
		json_object_set_new(x, "tokens_per_joule_max", jsonx_real(grp[q].tmax));
		json_object_set_new(x, "energy_j", jsonx_real(grp[q].energy_j));
		json_object_set_new(x, "cost_j", jsonx_real(grp[q].cost_j));
		json_array_append_new(groups, x);
	}
	free(grp);
	json_object_set_new(o, "window_groups", groups);
	json_object_set_new(o, "idle_windows", json_integer((json_int_t)idle));
	json_object_set_new(o, "windows", ws);
	json_t *sl = json_array();
	for (size_t s = 0; s < r->n_slices; s++) {
		const struct rp_slice *x = &r->slices[s];
		json_t *j = json_object();
		json_object_set_new(j, "slice", json_string(x->name));
		json_object_set_new(j, "int8_share", jsonx_real(x->int8_req_frac));
		json_object_set_new(j, "max_drop", jsonx_real(x->max_drop));
		json_object_set_new(j, "true_drop_end", jsonx_real(x->true_drop_end));
		json_object_set_new(j, "worst_drop_bound_while_int8", jsonx_real(x->max_drop_upper_int8));
		const char *st;
		if (isfinite(x->true_drop_end) && isfinite(x->max_drop))
			st = x->true_drop_end > x->max_drop ? "quality-bound: INT8 drop over the threshold, BF16 only"
				: x->int8_req_frac > 0 ? "INT8 eligible and served"
						       : "INT8 eligible, not served: precision headroom left";
		else
			st = "quality evidence from shadow samples only (see quality monitor)";
		json_object_set_new(j, "status", json_string(st));
		json_array_append_new(sl, j);
	}
	json_object_set_new(o, "slices", sl);
	return o;
}

static void vrow(json_t *rows, const char *run, const char *slice, const char *check,
		 const char *threshold, json_t *value, const char *result, const char *guard)
{
	json_t *o = json_object();
	json_object_set_new(o, "run", json_string(run));
	json_object_set_new(o, "slice", json_string(slice));
	json_object_set_new(o, "check", json_string(check));
	json_object_set_new(o, "threshold", json_string(threshold));
	json_object_set_new(o, "value", value);
	json_object_set_new(o, "result", json_string(result));
	json_object_set_new(o, "rollback_trigger", json_string(guard));
	json_array_append_new(rows, o);
}

static void validation(json_t *rows, const struct rp_run *r, const struct rp_run *b, bool is_base)
{
	char sla_g[160], q_g[120], t_g[120], thr[160];
	if (!r->have_triggers)
		snprintf(sla_g, sizeof(sla_g), "unknown (policy file unavailable)");
	else if (r->trig_sla_n)
		snprintf(sla_g, sizeof(sla_g), "rollback.triggers.sla_violated_windows: %u of %u windows",
			 r->trig_sla_n, r->trig_sla_m);
	else
		snprintf(sla_g, sizeof(sla_g), "none (sla_violated_windows off)");
	snprintf(q_g, sizeof(q_g), "%s",
		 !r->have_triggers ? "unknown (policy file unavailable)"
		 : r->trig_quality ? "rollback.triggers.quality_breach"
				   : "none (quality_breach off)");
	if (!r->have_triggers)
		snprintf(t_g, sizeof(t_g), "unknown (policy file unavailable)");
	else if (r->trig_clamps)
		snprintf(t_g, sizeof(t_g), "rollback.triggers.thermal_clamp_events: %u", r->trig_clamps);
	else
		snprintf(t_g, sizeof(t_g), "none (thermal_clamp_events off)");

	double goal = isfinite(r->attainment_goal) ? r->attainment_goal : 0.99;
	snprintf(thr, sizeof(thr), ">= %.2f of windows", goal);
	vrow(rows, r->label, "all", "SLA attainment", thr, jsonx_real(r->attainment),
	     r->attainment >= goal ? "PASS" : "FAIL", sla_g);
	for (size_t i = 0; i < SLA_N_ROWS; i++) {
		const double *v = r->q_ms;
		/* Every target the policy sets is a row; a figure the run lacks
		 * is a FAIL, not a silent skip. */
		if (!(r->targets[i] > 0))
			continue;
		snprintf(thr, sizeof(thr), "<= %.0f ms%s", r->targets[i],
			 r->have_summary ? "" : " (worst window)");
		vrow(rows, r->label, "all", sla_rows[i].label, thr, jsonx_real(v[i]),
		     v[i] <= r->targets[i] ? "PASS" : isnan(v[i]) ? "FAIL (not measured)" : "FAIL", sla_g);
	}
	for (size_t s = 0; s < r->n_slices; s++) {
		const struct rp_slice *x = &r->slices[s];
		if (r->have_summary) {
			snprintf(thr, sizeof(thr), "0 breach requests (max_drop %.3f)", x->max_drop);
			vrow(rows, r->label, x->name, "quality", thr, jsonx_real(x->breaches),
			     x->breaches == 0 ? "PASS" : "FAIL", q_g);
		} else {
			snprintf(thr, sizeof(thr), "drop bound <= %.3f while INT8", x->max_drop);
			bool ok = !(x->max_drop_upper_int8 > x->max_drop);
			vrow(rows, r->label, x->name, "quality", thr, jsonx_real(x->max_drop_upper_int8),
			     isfinite(x->max_drop) ? (ok ? "PASS" : "FAIL") : "n/a", q_g);
		}
	}
	vrow(rows, r->label, "all", "clamp events", "0 hardware slowdown entries",
	     jsonx_real(r->clamp_events), r->clamp_events == 0 ? "PASS" : "FAIL", t_g);
	vrow(rows, r->label, "all", "thermal shutdown", "none", json_boolean(r->failed),
	     r->failed ? "FAIL" : "PASS", t_g);
	if (is_base)
		vrow(rows, r->label, "all", "tokens/J vs baseline", "reference", jsonx_real(1.0), "n/a",
		     "perf-per-watt trend monitor (alert only)");
	else {
		double ratio = r->tpj / b->tpj;
		vrow(rows, r->label, "all", "tokens/J vs baseline", ">= 1.000x baseline",
		     jsonx_real(ratio), ratio >= 1.0 ? "PASS" : "FAIL",
		     "perf-per-watt trend monitor (alert only; no automatic rollback)");
	}
}

/* Monitor: the precision-mode mix. */
static json_t *mon_mix(const struct rp_run *r)
{
	json_t *x = json_object();
	json_object_set_new(x, "run", json_string(r->label));
	json_object_set_new(x, "int8_token_fraction", jsonx_real(r->int8_token_frac));
	if (isfinite(r->fp8_token_frac)) /* the precision ladder's FP8 rung, of those */
		json_object_set_new(x, "fp8_token_fraction", jsonx_real(r->fp8_token_frac));
	double lo = INFINITY, hi = -INFINITY;
	for (size_t k = 0; k < r->nw; k++)
		if (r->w[k].busy && isfinite(r->w[k].int8_share)) {
			lo = fmin(lo, r->w[k].int8_share);
			hi = fmax(hi, r->w[k].int8_share);
		}
	json_object_set_new(x, "window_int8_share_min", jsonx_real(lo));
	json_object_set_new(x, "window_int8_share_max", jsonx_real(hi));
	json_t *ps = json_object();
	for (size_t s = 0; s < r->n_slices; s++)
		json_object_set_new(ps, r->slices[s].name, jsonx_real(r->slices[s].int8_req_frac));
	json_object_set_new(x, "per_slice_int8_share", ps);
	return x;
}

/* Monitor: perf-per-watt against the baseline, window by window (alert: 3
 * busy windows in a row below it). */
static json_t *mon_trend(const struct rp_run *r, const struct rp_run *b)
{
	size_t below = 0, run = 0, longest = 0, cmp = 0;
	for (size_t k = 0; k < r->nw && r != b && same_demand(r, b) && k < b->nw; k++) {
		if (!r->w[k].busy || !isfinite(r->w[k].tpj) || !isfinite(b->w[k].tpj))
			continue;
		cmp++;
		if (r->w[k].tpj < b->w[k].tpj) {
			below++;
			run++;
			if (run > longest)
				longest = run;
		} else {
			run = 0;
		}
	}
	json_t *x = json_object();
	json_object_set_new(x, "run", json_string(r->label));
	json_object_set_new(x, "windows_compared", json_integer((json_int_t)cmp));
	json_object_set_new(x, "windows_below_baseline", json_integer((json_int_t)below));
	json_object_set_new(x, "longest_run_below_baseline", json_integer((json_int_t)longest));
	json_object_set_new(x, "alert_rule", json_string("3 consecutive busy windows below the "
							 "baseline's tokens/J"));
	json_object_set_new(x, "alert", json_boolean(longest >= 3));
	return x;
}

/* Monitor: thermal clamp frequency. */
static json_t *mon_clamp(const struct rp_run *r)
{
	size_t cw = 0;
	for (size_t k = 0; k < r->nw; k++)
		cw += r->w[k].clamp_periods > 0;
	json_t *x = json_object();
	json_object_set_new(x, "run", json_string(r->label));
	json_object_set_new(x, "clamp_events", jsonx_real(r->clamp_events));
	json_object_set_new(x, "clamps_per_hour",
			    jsonx_real(r->duration_s > 0 ? r->clamp_events * 3600 / r->duration_s : NAN));
	json_object_set_new(x, "clamp_time_s", jsonx_real(r->clamp_time_s));
	json_object_set_new(x, "windows_with_clamps", json_integer((json_int_t)cw));
	json_object_set_new(x, "time_above_ceiling_s", jsonx_real(r->above_ceiling_s));
	json_object_set_new(x, "max_junction_c", jsonx_real(r->max_tj_c));
	json_object_set_new(x, "alert_rule", json_string("any hardware clamp"));
	json_object_set_new(x, "alert", json_boolean(r->clamp_events > 0));
	return x;
}

/* Monitor: quality by slice, a row each. */
static void mon_quality(const struct rp_run *r, json_t *qual)
{
	for (size_t s = 0; s < r->n_slices; s++) {
		const struct rp_slice *sl = &r->slices[s];
		json_t *x = json_object();
		json_object_set_new(x, "run", json_string(r->label));
		json_object_set_new(x, "slice", json_string(sl->name));
		json_object_set_new(x, "max_drop", jsonx_real(sl->max_drop));
		json_object_set_new(x, "true_drop_end", jsonx_real(sl->true_drop_end));
		json_object_set_new(x, "worst_drop_bound_while_int8", jsonx_real(sl->max_drop_upper_int8));
		json_object_set_new(x, "int8_share", jsonx_real(sl->int8_req_frac));
		json_object_set_new(x, "breach_requests", jsonx_real(sl->breaches));
		bool reg = sl->breaches > 0 || (!r->have_summary && sl->max_drop_upper_int8 > sl->max_drop);
		json_object_set_new(x, "regression", json_boolean(reg));
		json_array_append_new(qual, x);
	}
}

/* Monitor: thermal events against latency tails (correlations, each clamp
 * event with its window's tails). */
static json_t *mon_thermal_latency(const struct rp_run *r)
{
	json_t *x = json_object();
	json_object_set_new(x, "run", json_string(r->label));
	double *cp = calloc(r->nw + 1, sizeof(double)), *tt = calloc(r->nw + 1, sizeof(double)),
	       *tb = calloc(r->nw + 1, sizeof(double)), *med = calloc(r->nw + 1, sizeof(double));
	size_t nj = 0, nm = 0;
	for (size_t k = 0; cp && tt && tb && med && k < r->nw; k++)
		if (r->w[k].judged && r->w[k].requests > 0) {
			cp[nj] = (double)r->w[k].clamp_periods + (r->w[k].max_tj_c >= r->ceiling_c);
			tt[nj] = r->w[k].q_ms[SLA_INDEX(SLA_TTFT, SLA_P99)];
			tb[nj++] = r->w[k].q_ms[SLA_INDEX(SLA_TBT, SLA_P99)];
			if (!r->w[k].clamp_periods)
				med[nm++] = r->w[k].q_ms[SLA_INDEX(SLA_TBT, SLA_P99)];
		}
	double c1 = cp ? rp_pearson(cp, tt, nj) : NAN, c2 = cp ? rp_pearson(cp, tb, nj) : NAN;
	double stress = 0;
	for (size_t k = 0; cp && k < nj; k++)
		stress += cp[k];
	json_object_set_new(x, "corr_thermal_vs_ttft_p99", jsonx_real(c1));
	json_object_set_new(x, "corr_thermal_vs_tbt_p99", jsonx_real(c2));
	/* An empty correlation says why, not a dash. */
	json_object_set_new(x, "correlation_note",
			    isfinite(c1) && isfinite(c2) ? json_null()
			    : !(stress > 0) ? json_string("no clamp, nothing to correlate (no judged window "
							  "clamped or reached the soft ceiling)")
			    : nj < 3 ? json_string("fewer than 3 judged windows served requests: "
						   "nothing to correlate")
				     : json_string("thermal stress or latency constant over the judged "
						   "windows: no correlation defined"));
	json_object_set_new(x, "median_tbt_p99_ms_without_clamp", jsonx_real(med ? median(med, nm) : NAN));
	for (size_t k = 0; med && k < nj; k++)
		med[k] = tt[k];
	json_object_set_new(x, "median_ttft_p99_ms_all_windows", jsonx_real(med ? median(med, nj) : NAN));
	free(cp);
	free(tt);
	free(tb);
	free(med);
	json_t *ev = json_array();
	double period_s = r->period_s > 0 ? r->period_s : 1;
	size_t per = (size_t)llround(r->window_s / period_s);
	for (size_t p = 0; p < r->np; p++) {
		if (!(r->p[p].throttle & HAL_THR_HW_SLOWDOWN) ||
		    (p && (r->p[p - 1].throttle & HAL_THR_HW_SLOWDOWN)))
			continue;
		size_t e = p;
		double tj = r->p[p].tj_c, clk = r->p[p].clk_mhz;
		while (e < r->np && (r->p[e].throttle & HAL_THR_HW_SLOWDOWN)) {
			tj = fmax(tj, r->p[e].tj_c);
			clk = fmin(clk, r->p[e].clk_mhz);
			e++;
		}
		const struct rp_wstats *w = &r->w[per ? p / per : 0];
		json_t *ej = json_object();
		json_object_set_new(ej, "t_s", json_real(r->p[p].t_s));
		json_object_set_new(ej, "duration_s", json_real((double)(e - p) * period_s));
		json_object_set_new(ej, "max_junction_c", jsonx_real(tj));
		json_object_set_new(ej, "min_clock_mhz", jsonx_real(clk));
		json_object_set_new(ej, "window_ttft_p99_ms",
				    jsonx_real(w->q_ms[SLA_INDEX(SLA_TTFT, SLA_P99)]));
		json_object_set_new(ej, "window_tbt_p99_ms",
				    jsonx_real(w->q_ms[SLA_INDEX(SLA_TBT, SLA_P99)]));
		json_object_set_new(ej, "window_sla_met", json_boolean(w->sla_met));
		json_array_append_new(ev, ej);
	}
	json_object_set_new(x, "clamp_events", ev);
	return x;
}

/* Monitor: precision fallbacks, every period that lowered a slice's INT8
 * share, and the periods per reason. */
static json_t *mon_fallbacks(const struct rp_run *r)
{
	json_t *x = json_object();
	json_object_set_new(x, "run", json_string(r->label));
	size_t counts[4] = { 0 };
	const uint32_t bits[4] = { GOV_R_INT8_GATE_CLOSED, GOV_R_ROLLBACK, GOV_R_PREC_SATURATED,
				   GOV_R_SAFE_POINT };
	json_t *evs = json_array();
	for (size_t p = 0; p < r->np; p++) {
		const struct declog_period *pp = &r->p[p];
		for (int k = 0; k < 4; k++)
			counts[k] += !!(pp->reasons & bits[k]);
		json_t *sls = json_array();
		for (size_t s = 0; s < r->n_slices; s++)
			if (pp->int8_after[s] < pp->int8_before[s]) {
				json_t *sj = json_object();
				json_object_set_new(sj, "slice", json_string(r->slices[s].name));
				json_object_set_new(sj, "int8_before", jsonx_real(pp->int8_before[s]));
				json_object_set_new(sj, "int8_after", jsonx_real(pp->int8_after[s]));
				json_object_set_new(sj, "drop_upper", jsonx_real(pp->q_drop_upper[s]));
				json_object_set_new(sj, "samples", jsonx_real(pp->q_samples[s]));
				json_array_append_new(sls, sj);
			}
		if (!json_array_size(sls)) {
			json_decref(sls);
			continue;
		}
		char rs[512];
		json_t *ej = json_object();
		json_object_set_new(ej, "t_s", json_real(pp->t_s));
		json_object_set_new(ej, "seq", json_integer((json_int_t)p));
		json_object_set_new(ej, "reasons", json_string(gov_reasons_join(pp->reasons, rs, sizeof(rs))));
		json_object_set_new(ej, "faults", json_integer((json_int_t)pp->n_faults));
		json_object_set_new(ej, "slices", sls);
		json_array_append_new(evs, ej);
	}
	json_t *cj = json_object();
	json_object_set_new(cj, "int8_gate_closed", json_integer((json_int_t)counts[0]));
	json_object_set_new(cj, "rollback", json_integer((json_int_t)counts[1]));
	json_object_set_new(cj, "prec_saturated", json_integer((json_int_t)counts[2]));
	json_object_set_new(cj, "safe_point", json_integer((json_int_t)counts[3]));
	json_object_set_new(x, "periods_with_reason", cj);
	json_object_set_new(x, "fallbacks", evs);
	return x;
}

static json_t *monitors(struct rp_run **runs, size_t n, const struct rp_run *b)
{
	json_t *m = json_object(), *mix = json_array(), *trend = json_array(), *clamp = json_array(),
	       *qual = json_array(), *tl = json_array(), *audit = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct rp_run *r = runs[i];
		json_array_append_new(mix, mon_mix(r));
		json_array_append_new(trend, mon_trend(r, b));
		json_array_append_new(clamp, mon_clamp(r));
		mon_quality(r, qual);
		json_array_append_new(tl, mon_thermal_latency(r));
		json_array_append_new(audit, mon_fallbacks(r));
	}
	json_object_set_new(m, "precision_mix", mix);
	json_object_set_new(m, "perf_per_watt_trend", trend);
	json_object_set_new(m, "thermal_clamp_frequency", clamp);
	json_object_set_new(m, "quality_by_slice", qual);
	json_object_set_new(m, "thermal_latency", tl);
	json_object_set_new(m, "precision_fallback_audit", audit);
	return m;
}

static json_t *decision_json(const struct rp_decision *d)
{
	json_t *o = json_object(), *rs = json_array();
	json_object_set_new(o, "verdict", json_string(rp_verdict_name(d->verdict)));
	json_object_set_new(o, "gain", jsonx_real(d->gain));
	json_object_set_new(o, "summary", json_string(d->summary));
	for (size_t i = 0; i < d->n; i++) {
		json_t *x = json_object();
		json_object_set_new(x, "kind", json_string(d->reasons[i].blocker ? "blocker" : "condition"));
		json_object_set_new(x, "text", json_string(d->reasons[i].text));
		json_array_append_new(rs, x);
	}
	json_object_set_new(o, "reasons", rs);
	return o;
}

/* The class whose cost fell most from the baseline's run to this one:
 * what an intervention addressed. */
static enum rp_class addressed_class(const struct runinfo *base, const struct runinfo *run)
{
	enum rp_class addressed = RP_C_UNRESOLVED;
	double best = 0;
	for (size_t k = 0; k < base->nrank; k++) {
		double after = 0;
		for (size_t q = 0; q < run->nrank; q++)
			if (run->rank[q].cls == base->rank[k].cls)
				after = run->rank[q].cost_j;
		double d = base->rank[k].cost_j - after;
		if (d > best) {
			best = d;
			addressed = base->rank[k].cls;
		}
	}
	return addressed;
}

/* A measured alternative that lost, with why: its blockers, its place
 * against the candidate or the baseline, its verdict alone. */
static json_t *rejected_json(const struct rp_run *r, const struct rp_decision *dec,
			     const struct rp_run *b, const struct rp_run *c, bool lost_to_cand)
{
	char why[2048] = "";
	size_t l;
	for (size_t k = 0; k < dec->n; k++)
		if (dec->reasons[k].blocker) {
			l = strlen(why);
			snprintf(why + l, sizeof(why) - l, "%s%s", l ? "; " : "", dec->reasons[k].text);
		}
	l = strlen(why);
	if (lost_to_cand)
		snprintf(why + l, sizeof(why) - l,
			 "%stokens/J %.4f against the candidate's %.4f (%+.2f%%)%s", l ? "; " : "",
			 r->tpj, c->tpj, 100 * (r->tpj / c->tpj - 1),
			 dec->verdict == RP_NOGO ? ""
			 : r->tpj >= c->tpj	 ? ": within the noise margin of the candidate, "
						   "no measured advantage"
						 : ": a smaller gain for the same demand");
	else if (!(r->tpj > b->tpj) && !strstr(why, "below the baseline"))
		snprintf(why + l, sizeof(why) - l, "%sno perf-per-watt gain over the baseline "
						   "(tokens/J %.4f vs %.4f)",
			 l ? "; " : "", r->tpj, b->tpj);
	l = strlen(why);
	if (dec->verdict != RP_NOGO) {
		size_t nc = 0;
		for (size_t k = 0; k < dec->n; k++)
			nc += !dec->reasons[k].blocker;
		snprintf(why + l, sizeof(why) - l, "; against the baseline alone it would be %s "
						   "(%zu condition(s))",
			 rp_verdict_name(dec->verdict), nc);
	}
	json_t *x = json_object();
	json_object_set_new(x, "alternative", json_sprintf("policy %s (controller %s)", r->policy,
							   r->controller));
	json_object_set_new(x, "run", json_string(r->label));
	json_object_set_new(x, "label", json_string("measured"));
	json_object_set_new(x, "tokens_per_joule", jsonx_real(r->tpj));
	json_object_set_new(x, "gain_vs_baseline", jsonx_real(r->tpj / b->tpj - 1));
	json_object_set_new(x, "verdict_vs_baseline", json_string(rp_verdict_name(dec->verdict)));
	json_object_set_new(x, "why", json_string(why));
	return x;
}

/* Predicted: the candidate's breaching slices served in BF16. */
static json_t *quality_gate_row(const struct rp_run *c, int rank)
{
	char names[256] = "";
	for (size_t s = 0; s < c->n_slices; s++)
		if (c->slices[s].breaches > 0) {
			size_t l = strlen(names);
			snprintf(names + l, sizeof(names) - l, "%s%s", l ? ", " : "", c->slices[s].name);
		}
	json_t *x = json_object();
	json_object_set_new(x, "rank", json_integer(rank));
	json_object_set_new(x, "intervention",
			    json_sprintf("quality gate: serve slice(s) %s in BF16 until the shadow "
					 "drop bound is under the threshold", names));
	json_object_set_new(x, "addresses", json_string("quality breaches"));
	json_object_set_new(x, "owner", json_string("runtime scheduler"));
	json_object_set_new(x, "label", json_string("predicted"));
	json_object_set_new(x, "before", point(c));
	json_t *a = json_object();
	json_object_set_new(a, "quality_breaches", json_integer(0));
	json_object_set_new(a, "basis", json_string("breaches come only from INT8 on the named "
						    "slices; their tokens move to BF16, so tokens/J "
						    "falls toward the BF16 baseline's in proportion to "
						    "their INT8 token share"));
	json_object_set_new(x, "after", a);
	json_object_set_new(x, "gain", json_null());
	return x;
}

static json_t *mitigation(struct rp_run **runs, size_t n, size_t bi, const struct runinfo *ri,
			  const struct rp_thresholds *th)
{
	json_t *o = json_object(), *iv = json_array(), *rej = json_array();
	const struct rp_run *b = runs[bi], *c = runs[0];
	/* Measured: every other run of the baseline's demand is an intervention
	 * tried; the class whose cost fell most is what it addressed. */
	size_t order[RP_MAX_RUNS + 1], m = 0;
	for (size_t i = 0; i < n; i++)
		if (i != bi && same_demand(runs[i], b))
			order[m++] = i;
	for (size_t a = 1; a < m; a++) {
		size_t x = order[a], j = a;
		while (j > 0 && runs[order[j - 1]]->tpj < runs[x]->tpj) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = x;
	}
	int rank = 1;
	for (size_t a = 0; a < m; a++) {
		size_t i = order[a];
		const struct rp_run *r = runs[i];
		enum rp_class addressed = addressed_class(&ri[bi], &ri[i]);
		/* An alternative that lost (blocked, no gain over the baseline, or
		 * not better than the candidate's by more than the noise margin,
		 * thresholds min_gain:
		 * 0.07 % ahead ranked "switch to slo-dvfs" over the candidate the
		 * report recommends) is a rejected alternative, with why. */
		bool lost_to_cand = i != 0 && !(r->tpj > c->tpj * (1 + th->min_gain));
		if (ri[i].dec.verdict == RP_NOGO || !(r->tpj > b->tpj) || lost_to_cand) {
			json_array_append_new(rej, rejected_json(r, &ri[i].dec, b, c, lost_to_cand));
			continue;
		}
		json_t *x = json_object();
		json_object_set_new(x, "rank", json_integer(rank++));
		json_object_set_new(x, "intervention",
				    json_sprintf("switch to policy %s (controller %s)", r->policy, r->controller));
		json_object_set_new(x, "addresses", json_string(rp_class_name(addressed)));
		json_object_set_new(x, "owner", json_string(owner_of(addressed)));
		json_object_set_new(x, "label", json_string("measured"));
		json_object_set_new(x, "before", point(b));
		json_object_set_new(x, "after", point(r));
		json_object_set_new(x, "gain", jsonx_real(r->tpj / b->tpj - 1));
		json_object_set_new(x, "verdict", json_string(rp_verdict_name(ri[i].dec.verdict)));
		json_array_append_new(iv, x);
	}
	/* Predicted: recover each bottleneck class's cost in the candidate. */
	for (size_t k = 0; k < ri[0].nrank; k++) {
		const struct rp_rank *rk = &ri[0].rank[k];
		if (!(rk->cost_j > 0))
			continue;
		json_t *x = json_object();
		json_object_set_new(x, "rank", json_integer(rank++));
		json_object_set_new(x, "intervention", json_string(intervention_of(rk->cls)));
		json_object_set_new(x, "addresses", json_string(rp_class_name(rk->cls)));
		json_object_set_new(x, "owner", json_string(owner_of(rk->cls)));
		json_object_set_new(x, "label", json_string("predicted"));
		json_object_set_new(x, "before", point(c));
		json_t *a = json_object();
		json_object_set_new(a, "tokens_per_joule", jsonx_real(rk->tpj_if_removed));
		json_object_set_new(a, "basis",
				    json_sprintf("the %zu %s window(s) run at the best tokens/J observed for "
						 "the same demand (saves %.0f J, %.1f%% of the run's energy)",
						 rk->windows, rp_class_name(rk->cls), rk->cost_j,
						 100 * rk->share_of_energy));
		json_object_set_new(x, "after", a);
		json_object_set_new(x, "gain", jsonx_real(rk->tpj_if_removed / c->tpj - 1));
		json_array_append_new(iv, x);
	}
	if (c->breaches > 0)
		json_array_append_new(iv, quality_gate_row(c, rank++));
	if (ri[0].cls == RP_C_THERMAL) {
		json_t *x = json_object();
		json_object_set_new(x, "alternative", json_string("raise the hardware slowdown threshold or "
								  "the fan curve from software"));
		json_object_set_new(x, "label", json_string("not run"));
		json_object_set_new(x, "tokens_per_joule", json_null());
		json_object_set_new(x, "why", json_string("the slowdown is the device's own protection and "
							  "cooling is the facility's: neither is the "
							  "governor's to move"));
		json_array_append_new(rej, x);
	}
	json_object_set_new(o, "interventions", iv);
	json_object_set_new(o, "rejected", rej);
	json_object_set_new(o, "alternatives_tried", json_integer((json_int_t)(m > 0 ? m - 1 : 0)));
	return o;
}

/* Runs of one arm: the same policy (file and controller) on the same scenario. */
static bool same_arm(const struct rp_run *a, const struct rp_run *b)
{
	return !strcmp(a->scenario, b->scenario) && !strcmp(a->policy, b->policy) &&
	       !strcmp(a->controller, b->controller) && !strcmp(a->policy_hash, b->policy_hash);
}

static enum rp_evidence evidence_of(const struct rp_run *r, char *detail, size_t len)
{
	if (r->have_summary || !strncmp(r->driver, "sim", 3)) {
		snprintf(detail, len, "plant preset %s, sim backend %s, firmware %s", r->dev_model,
			 r->driver[0] ? r->driver : "?", r->firmware[0] ? r->firmware : "?");
		return RP_EV_SIMULATED;
	}
	snprintf(detail, len, "device %s (%s), driver %s, firmware %s", r->dev_model, r->dev_name,
		 r->driver[0] ? r->driver : "?", r->firmware[0] ? r->firmware : "?");
	return r->dry_run ? RP_EV_DRY_RUN : RP_EV_GOVERNED;
}

static json_t *spread_json(const struct rp_spread *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "n", json_integer((json_int_t)s->n));
	json_object_set_new(o, "min", jsonx_real(s->min));
	json_object_set_new(o, "median", jsonx_real(s->median));
	json_object_set_new(o, "max", jsonx_real(s->max));
	return o;
}

/* The one place report outputs are opened (mode 0644, truncated). */

/* Every run's windows classified and costed, its classes ranked, its
 * verdict against the baseline; runs of the same scenario and seed with
 * other slices refused (the scenario file changed between them: window k
 * of each did not see the same demand). */
static int classify_runs(struct rp_run **runs, size_t n, size_t bi, const struct rp_thresholds *th,
			 struct runinfo *ri, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		const struct rp_run *r = runs[i], *bl = runs[bi];
		if (i == bi || strcmp(r->scenario, bl->scenario) || r->seed != bl->seed ||
		    same_slices(r, bl))
			continue;
		snprintf(err, errlen,
			 "%s:%zu:1: error: slices differ from the baseline's (%s:%zu:1) "
			 "for the same scenario and seed: not runs of the same demand",
			 r->log_path, r->header_line, bl->log_path, bl->header_line);
		return -EINVAL;
	}
	sensitivities(runs, n, th);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < runs[i]->nw; k++)
			runs[i]->w[k].cls = rp_classify(&runs[i]->w[k], th, NULL, 0);
	costs(runs, n);
	for (size_t i = 0; i < n; i++) {
		ri[i].nrank = rp_rank_classes(runs[i]->w, runs[i]->nw, runs[i]->tokens, runs[i]->e_total,
					      ri[i].rank, RP_C_N);
		ri[i].cls = rp_run_class(ri[i].rank, ri[i].nrank, runs[i]->clamp_events);
		side_of(runs[i], &ri[i].side);
	}
	for (size_t i = 0; i < n; i++)
		rp_recommend(&ri[i].side, &ri[bi].side, th, &ri[i].dec);
	return 0;
}

/* Each candidate-arm run paired with the baseline-arm run of its seed; the
 * other seeds' verdicts merged into dec. The number of pairs. */
static size_t pair_seeds(struct rp_run **runs, size_t n, size_t bi, const char **roles,
			 const struct runinfo *ri, const struct rp_thresholds *th,
			 struct rp_seed_pair *pairs, struct rp_decision *dec)
{
	size_t npairs = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(i == 0 || !strncmp(roles[i], "candidate seed", 14)))
			continue;
		for (size_t j = 0; j < n; j++) {
			if (!(j == bi || !strncmp(roles[j], "baseline seed", 13)) || runs[j]->seed != runs[i]->seed ||
			    strcmp(runs[j]->scenario, runs[i]->scenario))
				continue;
			pairs[npairs++] = (struct rp_seed_pair){ .seed = runs[i]->seed,
								 .cand_tpj = runs[i]->tpj,
								 .base_tpj = runs[j]->tpj };
			if (i != 0) {
				struct rp_decision o;
				rp_recommend(&ri[i].side, &ri[j].side, th, &o);
				rp_merge_seed(dec, &o, runs[i]->seed);
			}
			break;
		}
	}
	return npairs;
}

/* Roles: the candidate's and the baseline's other seeds, alternatives. */
static void assign_roles(struct rp_run **runs, size_t n, size_t bi, char (*role_buf)[64],
			 const char **roles)
{
	const struct rp_run *b = runs[bi];
	for (size_t i = 0; i < n; i++) {
		if (i == bi)
			snprintf(role_buf[i], sizeof(role_buf[i]), "baseline");
		else if (i == 0)
			snprintf(role_buf[i], sizeof(role_buf[i]), "candidate");
		else if (same_arm(runs[i], runs[0]) && runs[i]->seed != runs[0]->seed)
			snprintf(role_buf[i], sizeof(role_buf[i]), "candidate seed %llu",
				 (unsigned long long)runs[i]->seed);
		else if (same_arm(runs[i], b) && runs[i]->seed != b->seed)
			snprintf(role_buf[i], sizeof(role_buf[i]), "baseline seed %llu",
				 (unsigned long long)runs[i]->seed);
		else
			snprintf(role_buf[i], sizeof(role_buf[i]), "%s", "alternative");
		roles[i] = role_buf[i];
	}
}

/* Each run's kind of evidence; the report's is the weakest of the
 * candidate's and the baseline's arms (*ev, detail). */
static json_t *evidence_runs(struct rp_run **runs, size_t n, size_t bi, const char **roles,
			     enum rp_evidence *ev, char *detail, size_t len)
{
	json_t *evr = json_array();
	for (size_t i = 0; i < n; i++) {
		char det[512];
		enum rp_evidence e = evidence_of(runs[i], det, sizeof(det));
		json_t *x = json_object();
		json_object_set_new(x, "run", json_string(runs[i]->label));
		json_object_set_new(x, "role", json_string(roles[i]));
		json_object_set_new(x, "kind", json_string(rp_evidence_name(e)));
		json_object_set_new(x, "detail", json_string(det));
		json_array_append_new(evr, x);
		bool arm = i == 0 || i == bi || !strncmp(roles[i], "candidate seed", 14) ||
			   !strncmp(roles[i], "baseline seed", 13);
		if (arm && (e < *ev || !detail[0])) {
			*ev = e;
			snprintf(detail, len, "%s", det);
		}
	}
	return evr;
}

static json_t *seeds_json(const struct rp_seed_pair *pairs, size_t npairs,
			  const struct rp_spread *csp, const struct rp_spread *bsp,
			  const struct rp_spread *gsp)
{
	json_t *sj = json_object(), *pj = json_array();
	for (size_t i = 0; i < npairs; i++) {
		json_t *x = json_object();
		json_object_set_new(x, "seed", json_integer((json_int_t)pairs[i].seed));
		json_object_set_new(x, "candidate_tokens_per_joule", jsonx_real(pairs[i].cand_tpj));
		json_object_set_new(x, "baseline_tokens_per_joule", jsonx_real(pairs[i].base_tpj));
		json_object_set_new(x, "gain", jsonx_real(pairs[i].cand_tpj / pairs[i].base_tpj - 1));
		json_array_append_new(pj, x);
	}
	json_object_set_new(sj, "paired_seeds", json_integer((json_int_t)npairs));
	json_object_set_new(sj, "pairs", pj);
	json_object_set_new(sj, "candidate_tokens_per_joule", spread_json(csp));
	json_object_set_new(sj, "baseline_tokens_per_joule", spread_json(bsp));
	json_object_set_new(sj, "gain", spread_json(gsp));
	json_object_set_new(sj, "rule", json_string("with 2 or more paired seeds the gain is the median "
						    "over seeds; a seed that loses, or a spread wider "
						    "than the median gain, is a condition; under 3 "
						    "seeds the verdict is at most GO WITH CONDITIONS"));
	return sj;
}

/* What the runs' outputs do not record, said per run (older runs and
 * govd's logs lack the run metadata). */
static json_t *missing_json(struct rp_run **runs, size_t n)
{
	json_t *missing = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct rp_run *r = runs[i];
		if (!r->command[0] && strcmp(r->scenario, "live"))
			json_array_append_new(missing, json_sprintf(
				"%s: the run does not record the scenario file's path nor the command "
				"line: the reproduce command infers %s from the scenario name",
				r->label, r->scenario_path));
		if (!r->build_compiler[0])
			json_array_append_new(missing, json_sprintf(
				"%s: the compiler that built the run is not recorded: the compiler "
				"shown is the policy's metadata.validated_with", r->label));
		if (r->have_summary && !r->nsw)
			json_array_append_new(missing, json_sprintf(
				"%s: summary.json has no sla.per_window (written before it was): "
				"windows are judged from the decision log's quantiles", r->label));
	}
	json_array_append_new(missing, json_string("the decision-log header carries no SLA targets, "
						   "thermal ceiling or rollback triggers: for a live log "
						   "they come from the policy file at policy_path when its "
						   "hash matches"));
	for (size_t i = 0; i < n; i++)
		if (runs[i]->policy_state)
			json_array_append_new(missing, json_sprintf("%s: policy file %s %s", runs[i]->label,
								    runs[i]->policy_path,
								    runs[i]->policy_state == 1
									    ? "not found: metadata and triggers unknown"
									    : "changed since the run"));
	return missing;
}

static json_t *signoff_json(void)
{
	json_t *so = json_array();
	for (int i = 0; i < 3; i++) {
		json_t *x = json_object();
		json_object_set_new(x, "role", json_string(rp_roles[i]));
		json_object_set_new(x, "command",
				    json_sprintf("govctl signoff REPORT_DIR/report.json --role '%s' --decision "
						 "GO|GO-WITH-CONDITIONS|NO-GO --key KEYFILE",
						 rp_roles[i]));
		json_array_append_new(so, x);
	}
	return so;
}

static int build(struct rp_run **runs, size_t n, size_t bi, size_t n_cmdline,
		 const struct rp_build_meta *m, struct rp_build_result *res, struct runinfo *ri,
		 char *err, size_t errlen)
{
	const struct rp_thresholds *th = &rp_default_thresholds;
	int rc = classify_runs(runs, n, bi, th, ri, err, errlen);
	if (rc)
		return rc;
	const struct rp_run *b = runs[bi];
	/* The candidate is the first RUN that is not the baseline: runs[0]. */
	if (bi == 0 && n > 1) {
		struct rp_run *t = runs[0];
		runs[0] = runs[1];
		runs[1] = t;
		struct runinfo tr = ri[0];
		ri[0] = ri[1];
		ri[1] = tr;
		bi = 1;
	}
	char role_buf[RP_MAX_RUNS][64];
	const char *roles[RP_MAX_RUNS];
	assign_roles(runs, n, bi, role_buf, roles);
	/* (A compare directory holds every seed: only runs named on the
	 * command line are warned about.) */
	for (size_t i = 0; i < n_cmdline; i++)
		if (i != bi && !strncmp(roles[i], "alternative", 11) &&
		    (strcmp(runs[i]->scenario, b->scenario) || runs[i]->seed != b->seed))
			json_array_append_new(res->warnings,
					      json_sprintf("%s and the baseline %s differ in scenario or "
							   "seed: the comparison is not like for like",
							   runs[i]->label, b->label));
	if (strcmp(runs[0]->scenario, b->scenario) || runs[0]->seed != b->seed)
		json_array_append_new(res->warnings,
				      json_sprintf("the candidate %s and the baseline %s differ in scenario "
						   "or seed: the comparison is not like for like",
						   runs[0]->label, b->label));

	/* Seeds: each candidate-arm run paired with the baseline-arm run of its
	 * seed; the gain is judged over the pairs. */
	struct rp_seed_pair pairs[RP_MAX_RUNS];
	struct rp_decision dec = ri[0].dec;
	size_t npairs = pair_seeds(runs, n, bi, roles, ri, th, pairs, &dec);
	double gains[RP_MAX_RUNS], ctpj[RP_MAX_RUNS], btpj[RP_MAX_RUNS];
	for (size_t i = 0; i < npairs; i++) {
		gains[i] = pairs[i].cand_tpj / pairs[i].base_tpj - 1;
		ctpj[i] = pairs[i].cand_tpj;
		btpj[i] = pairs[i].base_tpj;
	}
	struct rp_spread gsp = rp_spread_of(gains, npairs), csp = rp_spread_of(ctpj, npairs),
			 bsp = rp_spread_of(btpj, npairs);
	/* The evidence: the weakest of the candidate's and the baseline's runs. */
	enum rp_evidence ev = RP_EV_GOVERNED;
	char ev_detail[512] = "";
	json_t *evr = evidence_runs(runs, n, bi, roles, &ev, ev_detail, sizeof(ev_detail));
	rp_cap_evidence(&dec, ev, ev_detail, &gsp, th);
	if (npairs >= 2)
		snprintf(dec.summary, sizeof(dec.summary),
			 "tokens/J gain over %zu paired seeds: median %+.1f%% (min %+.1f%%, max %+.1f%%); "
			 "seed %llu: tokens/J %.4f vs %.4f",
			 npairs, 100 * gsp.median, 100 * gsp.min, 100 * gsp.max,
			 (unsigned long long)runs[0]->seed, runs[0]->tpj, b->tpj);
	else
		snprintf(dec.summary, sizeof(dec.summary), "%s", ri[0].dec.summary);

	json_t *rep = json_object();
	json_object_set_new(rep, "report_version", json_integer(2));
	json_object_set_new(rep, "generated_by", json_string(m->generated_by));
	json_object_set_new(rep, "generated_at", json_string(m->generated_at));
	json_object_set_new(rep, "govd_version", json_string(GOVD_VERSION));
	json_object_set_new(rep, "source_commit", json_string(m->source_commit));
	json_object_set_new(rep, "command", json_string(m->command));
	json_object_set_new(rep, "candidate", json_string(runs[0]->label));
	json_object_set_new(rep, "baseline", json_string(b->label));
	json_t *evo = json_object();
	json_object_set_new(evo, "kind", json_string(rp_evidence_name(ev)));
	json_object_set_new(evo, "detail", json_string(ev_detail));
	json_object_set_new(evo, "statement",
			    json_sprintf("%s%s", ev_detail,
					 ev == RP_EV_SIMULATED ? ". Nothing here was measured on hardware."
					 : ev == RP_EV_DRY_RUN ? ". The governor observed the device but did "
								 "not actuate it."
							       : "."));
	json_object_set_new(evo, "runs", evr);
	json_object_set_new(rep, "evidence", evo);
	json_object_set_new(rep, "seeds", seeds_json(pairs, npairs, &csp, &bsp, &gsp));
	json_t *rec = decision_json(&dec);
	json_object_set_new(rec, "candidate", json_string(runs[0]->label));
	json_object_set_new(rec, "baseline", json_string(b->label));
	json_object_set_new(rec, "evidence", json_string(rp_evidence_name(ev)));
	json_object_set_new(rec, "run_class", json_string(rp_class_name(ri[0].cls)));
	json_object_set_new(rep, "recommendation", rec);

	json_t *hand = json_array(), *prim = json_array(), *bott = json_array(), *vm = json_array();
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(hand, handoff(runs[i], roles[i]));
		json_array_append_new(prim, primary(runs[i], b, roles[i]));
		json_array_append_new(bott, bottlenecks(runs[i], &ri[i], roles[i]));
		validation(vm, runs[i], b, i == bi);
	}
	json_t *ho = json_object();
	json_object_set_new(ho, "runs", hand);
	json_object_set_new(ho, "missing_from_run_outputs", missing_json(runs, n));
	json_object_set_new(rep, "handoff", ho);
	json_t *pm = json_object();
	json_object_set_new(pm, "definition",
			    json_string("tokens per joule, accelerator + memory + host energy; 'under SLA' "
					"counts only the tokens of SLA windows that met every target, "
					"against all the energy"));
	json_object_set_new(pm, "runs", prim);
	json_object_set_new(rep, "primary_metric", pm);
	json_t *bo = json_object();
	json_object_set_new(bo, "thresholds", thresholds_json(th));
	json_object_set_new(bo, "runs", bott);
	json_object_set_new(rep, "bottlenecks", bo);
	json_object_set_new(rep, "mitigation", mitigation(runs, n, bi, ri, th));
	json_t *vmo = json_object();
	json_object_set_new(vmo, "rows", vm);
	json_t *verdicts = json_array();
	for (size_t i = 0; i < n; i++) {
		if (i == bi)
			continue;
		json_t *d = decision_json(&ri[i].dec);
		json_object_set_new(d, "run", json_string(runs[i]->label));
		json_array_append_new(verdicts, d);
	}
	json_object_set_new(vmo, "verdicts", verdicts);
	json_object_set_new(rep, "validation_matrix", vmo);
	json_object_set_new(rep, "monitors", monitors(runs, n, b));
	json_object_set_new(rep, "signoff", signoff_json());
	json_object_set_new(rep, "figures",
			    rp_figures(runs[0], b, runs, roles, n, pairs, npairs));
	res->report = rep;
	res->bi = bi;
	res->verdict = dec.verdict;
	res->gain = ri[0].dec.gain;
	res->run_class = ri[0].cls;
	res->evidence = ev;
	res->paired_seeds = npairs;
	return 0;
}

int rp_build(struct rp_run **runs, size_t n, size_t bi, size_t n_cmdline,
	     const struct rp_build_meta *m, struct rp_build_result *res, char *err, size_t errlen)
{
	assert(n >= 1 && n <= RP_MAX_RUNS && bi < n && n_cmdline <= n);
	memset(res, 0, sizeof(*res));
	struct runinfo *ri = calloc(RP_MAX_RUNS, sizeof(*ri));
	res->warnings = json_array();
	if (!ri || !res->warnings) {
		free(ri);
		json_decref(res->warnings);
		res->warnings = NULL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = build(runs, n, bi, n_cmdline, m, res, ri, err, errlen);
	free(ri);
	if (rc) {
		json_decref(res->warnings);
		res->warnings = NULL;
	}
	return rc;
}

void rp_build_result_free(struct rp_build_result *res)
{
	json_decref(res->report);
	json_decref(res->warnings);
	res->report = res->warnings = NULL;
}
