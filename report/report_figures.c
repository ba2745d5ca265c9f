/* govctl report: the figures as data. Every figure report.html shows is one
 * element of report.json's "figures" (id, title, panels of series with their
 * points, reference lines, events), and the SVG is drawn from that element
 * alone (report_plot.c): the JSON carries every figure by
 * construction. Time series overlay the candidate and the baseline on shared
 * axes; events (rollbacks, safe points, clamps, gate changes) are marked on
 * every panel. */
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "governor/policy/opoint.h"

#define FIG_POINTS 400   /* per series: a 1 h run at 0.5 s is thinned to 9 s buckets */
#define FIG_EVENTS 200   /* per kind and run; the label says how many there were */

static const char *const role_colors[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
					   "#9467bd", "#8c564b", "#e377c2", "#17becf" };

static const char *color_of(size_t i)
{
	return role_colors[i % (sizeof(role_colors) / sizeof(role_colors[0]))];
}

static json_t *num(double v)
{
	/* 6 significant digits: the picture needs no more, and report.json
	 * stays small and byte-stable. */
	if (!isfinite(v))
		return json_null();
	char b[32];
	snprintf(b, sizeof(b), "%.6g", v);
	return json_real(strtod(b, NULL));
}

static json_t *figure(json_t *figs, const char *id, const char *kind, const char *title,
		      const char *caption, const char *xlabel)
{
	json_t *f = json_object();
	json_object_set_new(f, "id", json_string(id));
	json_object_set_new(f, "kind", json_string(kind));
	json_object_set_new(f, "title", json_string(title));
	json_object_set_new(f, "caption", json_string(caption));
	json_object_set_new(f, "xlabel", json_string(xlabel));
	json_object_set_new(f, "panels", json_array());
	json_object_set_new(f, "events", json_array());
	json_array_append_new(figs, f);
	return f;
}

static json_t *panel(json_t *fig, const char *ylabel, double ymin, double ymax)
{
	json_t *p = json_object();
	json_object_set_new(p, "ylabel", json_string(ylabel));
	json_object_set_new(p, "ymin", num(ymin));
	json_object_set_new(p, "ymax", num(ymax));
	json_object_set_new(p, "series", json_array());
	json_object_set_new(p, "hlines", json_array());
	json_object_set_new(p, "vlines", json_array());
	json_array_append_new(json_object_get(fig, "panels"), p);
	return p;
}

static json_t *series(json_t *pnl, const char *label, const char *role, const char *color,
		      const char *style)
{
	json_t *s = json_object();
	json_object_set_new(s, "label", json_string(label));
	json_object_set_new(s, "role", json_string(role));
	json_object_set_new(s, "color", json_string(color));
	json_object_set_new(s, "style", json_string(style));
	json_object_set_new(s, "x", json_array());
	json_object_set_new(s, "y", json_array());
	json_array_append_new(json_object_get(pnl, "series"), s);
	return s;
}

static void pt(json_t *s, double x, double y)
{
	json_array_append_new(json_object_get(s, "x"), num(x));
	json_array_append_new(json_object_get(s, "y"), num(y));
}

static void refline(json_t *pnl, const char *which, double v, const char *label)
{
	if (!isfinite(v))
		return;
	json_t *l = json_object();
	json_object_set_new(l, which[0] == 'h' ? "y" : "x", num(v));
	json_object_set_new(l, "label", json_string(label));
	json_array_append_new(json_object_get(pnl, which), l);
}

/* A per-period quantity of a run. */
typedef double (*pget)(const struct declog_period *p, size_t arg);
static double g_clk(const struct declog_period *p, size_t a) { return p->clk_mhz; }
static double g_lim(const struct declog_period *p, size_t a) { return p->power_limit_w; }
static double g_acc(const struct declog_period *p, size_t a) { return p->p_accel_w; }
static double g_mem(const struct declog_period *p, size_t a) { return p->p_mem_w; }
static double g_host(const struct declog_period *p, size_t a) { return p->p_host_w; }
static double g_tj(const struct declog_period *p, size_t a) { return p->tj_c; }
static double g_queue(const struct declog_period *p, size_t a) { return p->queue_len; }
static double g_int8(const struct declog_period *p, size_t s) { return p->int8_after[s]; }

/* The run's series, thinned to FIG_POINTS buckets: the bucket's mean, or
 * its peak (junction: a short excursion must survive the thinning). */
static void ts(json_t *pnl, const struct rp_run *r, const char *role, const char *color, pget get,
	       size_t arg, bool peak)
{
	json_t *s = series(pnl, role, role, color, "lines");
	size_t k = (r->np + FIG_POINTS - 1) / FIG_POINTS;
	if (k < 1)
		k = 1;
	for (size_t i = 0; i < r->np; i += k) {
		double acc = peak ? -INFINITY : 0;
		size_t n = 0;
		for (size_t j = i; j < i + k && j < r->np; j++) {
			double v = get(&r->p[j], arg);
			if (!isfinite(v))
				continue;
			acc = peak ? fmax(acc, v) : acc + v;
			n++;
		}
		pt(s, r->p[i].t_s / 60.0, n ? (peak ? acc : acc / (double)n) : NAN);
	}
}

/* Onsets of a condition over the periods of a run, as one event row. */
static void events_of(json_t *evs, const struct rp_run *r, const char *role, const char *color,
		      const char *kind, int which)
{
	json_t *xs = json_array();
	size_t total = 0;
	for (size_t i = 0; i < r->np; i++) {
		const struct declog_period *p = &r->p[i], *q = i ? &r->p[i - 1] : NULL;
		bool on;
		switch (which) {
		case 0: /* hardware clamp */
			on = (p->throttle & HAL_THR_HW_SLOWDOWN) && !(q && (q->throttle & HAL_THR_HW_SLOWDOWN));
			break;
		case 1:
			on = (p->reasons & GOV_R_ROLLBACK) && !(q && (q->reasons & GOV_R_ROLLBACK));
			break;
		case 2:
			on = (p->reasons & GOV_R_SAFE_POINT) && !(q && (q->reasons & GOV_R_SAFE_POINT));
			break;
		default: /* a slice's quality gate opened or closed */
			on = q && p->gate_open != q->gate_open;
			break;
		}
		if (!on)
			continue;
		if (total++ < FIG_EVENTS)
			json_array_append_new(xs, num(p->t_s / 60.0));
	}
	if (!total) {
		json_decref(xs);
		return;
	}
	char label[160];
	if (total > FIG_EVENTS)
		snprintf(label, sizeof(label), "%s %s (%zu, first %d marked)", role, kind, total,
			 FIG_EVENTS);
	else
		snprintf(label, sizeof(label), "%s %s (%zu)", role, kind, total);
	json_t *e = json_object();
	json_object_set_new(e, "kind", json_string(kind));
	json_object_set_new(e, "role", json_string(role));
	json_object_set_new(e, "color", json_string(color));
	json_object_set_new(e, "label", json_string(label));
	json_object_set_new(e, "count", json_integer((json_int_t)total));
	json_object_set_new(e, "x", xs);
	json_array_append_new(evs, e);
}

/* fig-points: every run the report was given, tokens/J against the TTFT
 * and TBT p99, an arrow from the baseline to the candidate. */
static void fig_points(json_t *figs, const struct rp_run *c, const struct rp_run *b,
		       struct rp_run *const *all, const char *const *roles, size_t n)
{
	json_t *f, *p;
	char l[128];
	f = figure(figs, "fig-points", "scatter", "Operating points: tokens per joule against p99",
		   "every run of the report; the arrow goes from the baseline (before) to the "
		   "candidate (after)",
		   "p99 (ms)");
	for (int q = 1; q <= 3; q += 2) {
		snprintf(l, sizeof(l), "%s (ms)", sla_rows[q].label);
		p = panel(f, "tokens/J (all rails)", NAN, NAN);
		json_object_set_new(p, "xlabel", json_string(l));
		for (size_t i = 0; i < n; i++) {
			const struct rp_run *r = all[i];
			char lab[260];
			snprintf(lab, sizeof(lab), "%s (%s)", r->label, roles[i]);
			json_t *s = series(p, lab, roles[i],
					   r == c ? color_of(0) : r == b ? color_of(1) : color_of(i + 2),
					   "points");
			pt(s, r->q_ms[q], r->tpj);
		}
		if (c != b) {
			json_t *a = json_object();
			json_object_set_new(a, "x0", num(b->q_ms[q]));
			json_object_set_new(a, "y0", num(b->tpj));
			json_object_set_new(a, "x1", num(c->q_ms[q]));
			json_object_set_new(a, "y1", num(c->tpj));
			json_object_set_new(p, "arrow", a);
		}
		double tgt = c->targets[q];
		snprintf(l, sizeof(l), "target %.0f ms", tgt);
		refline(p, "vlines", tgt > 0 ? tgt : NAN, l);
	}

}

/* fig-seeds: both arms' tokens/J per seed and the paired gain, with medians. */
static void fig_seeds(json_t *figs, const struct rp_seed_pair *seeds, size_t n_seeds)
{
	json_t *f;
	char l[128];
	f = figure(figs, "fig-seeds", "seeds", "Spread over seeds",
		   "tokens/J of candidate and baseline per seed, and the paired gain; lines: "
		   "medians",
		   "seed");
	json_t *pa = panel(f, "tokens/J (all rails)", NAN, NAN), *pg = panel(f, "gain (%)", NAN, NAN);
	json_t *sc = series(pa, "candidate", "candidate", color_of(0), "points");
	json_t *sb = series(pa, "baseline", "baseline", color_of(1), "points");
	json_t *sg = series(pg, "candidate vs baseline", "gain", color_of(2), "points");
	double *v = calloc(3 * n_seeds, sizeof(*v));
	for (size_t i = 0; i < n_seeds; i++) {
		double x = (double)seeds[i].seed;
		pt(sc, x, seeds[i].cand_tpj);
		pt(sb, x, seeds[i].base_tpj);
		pt(sg, x, 100 * (seeds[i].cand_tpj / seeds[i].base_tpj - 1));
		if (v) {
			v[i] = seeds[i].cand_tpj;
			v[n_seeds + i] = seeds[i].base_tpj;
			v[2 * n_seeds + i] = 100 * (seeds[i].cand_tpj / seeds[i].base_tpj - 1);
		}
	}
	if (v) {
		struct rp_spread a = rp_spread_of(v, n_seeds), bb = rp_spread_of(v + n_seeds, n_seeds),
				 g = rp_spread_of(v + 2 * n_seeds, n_seeds);
		snprintf(l, sizeof(l), "candidate median %.4f", a.median);
		refline(pa, "hlines", a.median, l);
		snprintf(l, sizeof(l), "baseline median %.4f", bb.median);
		refline(pa, "hlines", bb.median, l);
		snprintf(l, sizeof(l), "median gain %+.1f%%", g.median);
		refline(pg, "hlines", g.median, l);
		refline(pg, "hlines", 0, "no gain");
	}
	free(v);
}

json_t *rp_figures(const struct rp_run *c, const struct rp_run *b, struct rp_run *const *all,
		   const char *const *roles, size_t n, const struct rp_seed_pair *seeds,
		   size_t n_seeds)
{
	json_t *figs = json_array();
	const struct rp_run *two[2] = { c, b };
	const char *rl[2] = { "candidate", "baseline" };
	size_t nt = c == b ? 1 : 2;
	double xmax = 0;
	for (size_t i = 0; i < nt; i++)
		if (two[i]->np)
			xmax = fmax(xmax, (two[i]->p[two[i]->np - 1].t_s + two[i]->period_s) / 60.0);
	char cap[1024];
	snprintf(cap, sizeof(cap), "candidate %s (blue) and baseline %s (red) on shared axes; marks: "
				   "hardware clamps, rollbacks, safe points, quality-gate changes",
		 c->label, b->label);

	json_t *f = figure(figs, "fig-clock", "timeseries", "Clock and power limit", cap, "time (min)");
	json_object_set_new(f, "xmax", num(xmax));
	json_t *p1 = panel(f, "SM clock (MHz)", 0, NAN), *p2 = panel(f, "power limit (W)", 0, NAN);
	for (size_t i = 0; i < nt; i++) {
		ts(p1, two[i], rl[i], color_of(i), g_clk, 0, false);
		ts(p2, two[i], rl[i], color_of(i), g_lim, 0, false);
	}
	json_t *evs = json_object_get(f, "events");
	static const char *const kinds[4] = { "hardware clamp", "rollback", "safe point",
					      "gate change" };
	for (size_t i = 0; i < nt; i++)
		for (int k = 0; k < 4; k++)
			events_of(evs, two[i], rl[i], color_of(i), kinds[k], k);
	/* The same events on every time series figure. */
#define SAME_EVENTS(fig) json_object_set_new(fig, "events", json_deep_copy(evs))

	f = figure(figs, "fig-power", "timeseries", "Power per rail", cap, "time (min)");
	json_object_set_new(f, "xmax", num(xmax));
	SAME_EVENTS(f);
	pget rails[3] = { g_acc, g_mem, g_host };
	const char *rn[3] = { "accelerator (W)", "memory (W)", "host (W)" };
	for (int k = 0; k < 3; k++) {
		json_t *p = panel(f, rn[k], 0, NAN);
		for (size_t i = 0; i < nt; i++)
			ts(p, two[i], rl[i], color_of(i), rails[k], 0, false);
	}

	f = figure(figs, "fig-thermal", "timeseries", "Junction temperature", cap, "time (min)");
	json_object_set_new(f, "xmax", num(xmax));
	SAME_EVENTS(f);
	json_t *p = panel(f, "junction (C), bucket peak", NAN,
			  isfinite(c->slowdown_c) ? c->slowdown_c + 3 : NAN);
	for (size_t i = 0; i < nt; i++)
		ts(p, two[i], rl[i], color_of(i), g_tj, 0, true);
	char l[128];
	snprintf(l, sizeof(l), "soft ceiling %.1f C", c->ceiling_c);
	refline(p, "hlines", c->ceiling_c, l);
	snprintf(l, sizeof(l), "hardware slowdown %.1f C", c->slowdown_c);
	refline(p, "hlines", c->slowdown_c, l);

	f = figure(figs, "fig-int8", "timeseries", "INT8 share set per slice", cap, "time (min)");
	json_object_set_new(f, "xmax", num(xmax));
	SAME_EVENTS(f);
	for (size_t s = 0; s < c->n_slices; s++) {
		snprintf(l, sizeof(l), "INT8 share: %.40s", c->slices[s].name);
		p = panel(f, l, -0.05, 1.05);
		ts(p, c, rl[0], color_of(0), g_int8, s, false);
		for (size_t t = 0; nt > 1 && t < b->n_slices; t++)
			if (!strcmp(b->slices[t].name, c->slices[s].name))
				ts(p, b, rl[1], color_of(1), g_int8, t, false);
	}

	f = figure(figs, "fig-queue", "timeseries", "Queue length", cap, "time (min)");
	json_object_set_new(f, "xmax", num(xmax));
	SAME_EVENTS(f);
	p = panel(f, "requests waiting", 0, NAN);
	for (size_t i = 0; i < nt; i++)
		ts(p, two[i], rl[i], color_of(i), g_queue, 0, false);

	f = figure(figs, "fig-tpj", "timeseries", "Tokens per joule per SLA window", cap, "time (min)");
	json_object_set_new(f, "xmax", num(xmax));
	SAME_EVENTS(f);
	p = panel(f, "tokens/J (all rails)", 0, NAN);
	for (size_t i = 0; i < nt; i++) {
		json_t *s = series(p, rl[i], rl[i], color_of(i), "linespoints");
		for (size_t k = 0; k < two[i]->nw; k++) {
			const struct rp_wstats *w = &two[i]->w[k];
			if (w->tail)
				continue;
			pt(s, 0.5 * (w->t0_s + w->t1_s) / 60.0, w->busy ? w->tpj : NAN);
		}
	}

	f = figure(figs, "fig-p99", "timeseries", "Window latency quantiles against the SLA", cap,
		   "time (min)");
	json_object_set_new(f, "xmax", num(xmax));
	SAME_EVENTS(f);
	bool any = false;
	for (int q = 0; q < 6; q++)
		any |= c->targets[q] > 0 || b->targets[q] > 0;
	for (int q = 0; q < 6; q++) {
		double tgt = c->targets[q] > 0 ? c->targets[q] : b->targets[q];
		if (any ? !(tgt > 0) : (q != 1 && q != 3))
			continue;
		snprintf(l, sizeof(l), "%s (ms)", sla_rows[q].label);
		p = panel(f, l, 0, NAN);
		for (size_t i = 0; i < nt; i++) {
			json_t *s = series(p, rl[i], rl[i], color_of(i), "linespoints");
			/* Exactly the windows the attainment counts: the judged ones. */
			for (size_t k = 0; k < two[i]->nw; k++) {
				const struct rp_wstats *w = &two[i]->w[k];
				if (w->tail)
					continue;
				pt(s, w->t1_s / 60.0, w->judged ? w->q_ms[q] : NAN);
			}
		}
		snprintf(l, sizeof(l), "target %.0f ms", tgt);
		refline(p, "hlines", tgt > 0 ? tgt : NAN, l);
	}

	fig_points(figs, c, b, all, roles, n);
	if (n_seeds >= 2)
		fig_seeds(figs, seeds, n_seeds);
	return figs;
}
