/* govctl report: report.md and report.html, both rendered from report.json's
 * document so they say the same thing. The HTML is self-contained (inline CSS
 * and SVG, no scripts, no external references). */
#include "report/report.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/fsafe.h"

struct doc {
	FILE *f;
	bool html;
	bool in_table;
};

static void put_esc(struct doc *d, const char *s)
{
	for (; *s; s++) {
		if (d->html) {
			switch (*s) {
			case '<':
				fputs("&lt;", d->f);
				continue;
			case '>':
				fputs("&gt;", d->f);
				continue;
			case '&':
				fputs("&amp;", d->f);
				continue;
			case '"':
				fputs("&quot;", d->f);
				continue;
			}
		} else if (d->in_table && *s == '|') {
			fputs("\\|", d->f);
			continue;
		} else if (d->in_table && *s == '\n') {
			fputc(' ', d->f);
			continue;
		}
		fputc(*s, d->f);
	}
}

/* The report's sections, in order: one table for their headings and the
 * table of contents. */
enum rp_sec {
	SEC_RECOMMENDATION, SEC_TIMESERIES, SEC_HANDOFF, SEC_PRIMARY, SEC_BOTTLENECKS,
	SEC_MITIGATION, SEC_VALIDATION, SEC_MONITORS, SEC_SIGNOFF, SEC_N
};
static const struct {
	const char *id, *title;
} sections[SEC_N] = {
	[SEC_RECOMMENDATION] = { "recommendation", "Release recommendation" },
	[SEC_TIMESERIES] = { "timeseries", "What the governor did over time" },
	[SEC_HANDOFF] = { "handoff", "Handoff packet" },
	[SEC_PRIMARY] = { "primary", "Primary metric: tokens per joule under the SLA" },
	[SEC_BOTTLENECKS] = { "bottlenecks", "Bottleneck classification" },
	[SEC_MITIGATION] = { "mitigation", "Mitigation proposal" },
	[SEC_VALIDATION] = { "validation", "Validation matrix" },
	[SEC_MONITORS] = { "monitors", "Monitors" },
	[SEC_SIGNOFF] = { "signoff", "Sign-off" },
};

static void h(struct doc *d, int lvl, const char *text, const char *id);

static void sec_h(struct doc *d, enum rp_sec s)
{
	h(d, 2, sections[s].title, sections[s].id);
}

static void h(struct doc *d, int lvl, const char *text, const char *id)
{
	if (d->html) {
		if (id)
			fprintf(d->f, "<h%d id=\"%s\">", lvl, id);
		else
			fprintf(d->f, "<h%d>", lvl);
		put_esc(d, text);
		fprintf(d->f, "</h%d>\n", lvl);
	} else {
		fprintf(d->f, "\n%.*s ", lvl, "######");
		put_esc(d, text);
		fputs("\n\n", d->f);
	}
}

static void para(struct doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void para(struct doc *d, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fputs(d->html ? "<p>" : "", d->f);
	put_esc(d, buf);
	fputs(d->html ? "</p>\n" : "\n\n", d->f);
}

static void item(struct doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void item(struct doc *d, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fputs(d->html ? "<li>" : "- ", d->f);
	put_esc(d, buf);
	fputs(d->html ? "</li>\n" : "\n", d->f);
}

static void list_begin(struct doc *d)
{
	if (d->html)
		fputs("<ul>\n", d->f);
}

static void list_end(struct doc *d)
{
	fputs(d->html ? "</ul>\n" : "\n", d->f);
}

static void thead(struct doc *d, const char *const *cols, size_t n)
{
	d->in_table = true;
	if (d->html) {
		fputs("<table>\n<tr>", d->f);
		for (size_t i = 0; i < n; i++) {
			fputs("<th>", d->f);
			put_esc(d, cols[i]);
			fputs("</th>", d->f);
		}
		fputs("</tr>\n", d->f);
	} else {
		fputs("|", d->f);
		for (size_t i = 0; i < n; i++) {
			fputc(' ', d->f);
			put_esc(d, cols[i]);
			fputs(" |", d->f);
		}
		fputs("\n|", d->f);
		for (size_t i = 0; i < n; i++)
			fputs("---|", d->f);
		fputc('\n', d->f);
	}
}

/* cls: CSS class of the row (pass/fail colouring) or NULL. */
static void trow(struct doc *d, const char *const *cells, size_t n, const char *cls)
{
	if (d->html) {
		if (cls)
			fprintf(d->f, "<tr class=\"%s\">", cls);
		else
			fputs("<tr>", d->f);
		for (size_t i = 0; i < n; i++) {
			fputs("<td>", d->f);
			put_esc(d, cells[i] ? cells[i] : "");
			fputs("</td>", d->f);
		}
		fputs("</tr>\n", d->f);
	} else {
		fputs("|", d->f);
		for (size_t i = 0; i < n; i++) {
			fputc(' ', d->f);
			put_esc(d, cells[i] ? cells[i] : "");
			fputs(" |", d->f);
		}
		fputc('\n', d->f);
	}
}

static void tend(struct doc *d)
{
	d->in_table = false;
	fputs(d->html ? "</table>\n" : "\n", d->f);
}

/* The figure with this id, inside an anchored <figure> (the HTML test
 * screenshots each anchor). */
static void plot(struct doc *d, const struct rp_plots *p, const char *id)
{
	size_t i = 0;
	while (i < p->n && strcmp(p->id[i], id))
		i++;
	if (i == p->n)
		return;
	if (d->html) {
		fprintf(d->f, "<figure id=\"%s\">", p->id[i]);
		if (p->svg[i])
			fputs(p->svg[i], d->f);
		else {
			fputs("<p class=\"missing\">plot not available: ", d->f);
			put_esc(d, p->why[i] ? p->why[i] : "?");
			fputs("</p>", d->f);
		}
		fputs("<figcaption>", d->f);
		put_esc(d, p->title[i]);
		fputs("</figcaption></figure>\n", d->f);
	} else if (p->svg[i]) {
		fprintf(d->f, "*Figure %s in report.html: ", p->id[i]);
		put_esc(d, p->title[i]);
		fputs(" (data: report.json figures).*\n\n", d->f);
	} else {
		fprintf(d->f, "*Figure %s not available (%s): ", p->id[i], p->why[i] ? p->why[i] : "?");
		put_esc(d, p->title[i]);
		fputs(".*\n\n", d->f);
	}
}

/* ---- JSON access ---- */

static json_t *g(json_t *o, const char *k)
{
	return json_object_get(o, k);
}

static const char *s_(json_t *o, const char *k)
{
	json_t *v = g(o, k);
	return json_is_string(v) ? json_string_value(v) : "—";
}

/* A value for a table: integers without decimals, else 4 significant digits. */
static const char *v_(json_t *o, const char *k, char *buf, size_t len)
{
	json_t *v = g(o, k);
	if (json_is_boolean(v))
		snprintf(buf, len, "%s", json_is_true(v) ? "yes" : "no");
	else if (!json_is_number(v))
		snprintf(buf, len, "—");
	else if (json_number_value(v) == floor(json_number_value(v)) && fabs(json_number_value(v)) < 1e15)
		snprintf(buf, len, "%.0f", json_number_value(v));
	else
		snprintf(buf, len, "%.4g", json_number_value(v));
	return buf;
}

/* A number of o.k with prec decimals into buf; "—" when null. */
static const char *n_(json_t *o, const char *k, int prec, char *buf, size_t len)
{
	json_t *v = g(o, k);
	if (json_is_boolean(v))
		snprintf(buf, len, "%s", json_is_true(v) ? "yes" : "no");
	else if (!json_is_number(v))
		snprintf(buf, len, "—");
	else
		snprintf(buf, len, "%.*f", prec, json_number_value(v));
	return buf;
}

static const char *pct(json_t *o, const char *k, char *buf, size_t len)
{
	json_t *v = g(o, k);
	if (!json_is_number(v))
		snprintf(buf, len, "—");
	else
		snprintf(buf, len, "%+.1f%%", 100 * json_number_value(v));
	return buf;
}

#define B 96

static void sec_recommendation(struct doc *d, json_t *rep)
{
	json_t *rec = g(rep, "recommendation");
	const char *v = s_(rec, "verdict");
	sec_h(d, SEC_RECOMMENDATION);
	if (d->html) {
		const char *cls = !strcmp(v, "GO") ? "go" : !strcmp(v, "NO-GO") ? "nogo" : "cond";
		fprintf(d->f, "<p class=\"verdict %s\">", cls);
		put_esc(d, v);
		fputs("</p>\n", d->f);
	} else {
		fprintf(d->f, "**%s**\n\n", v);
	}
	para(d, "Candidate %s against baseline %s: %s. Run class: %s.", s_(rec, "candidate"),
	     s_(rec, "baseline"), s_(rec, "summary"), s_(rec, "run_class"));
	json_t *sd = g(rep, "seeds");
	char a[B], b_[B], c[B], e[B];
	if (json_integer_value(g(sd, "paired_seeds")) >= 2)
		para(d, "Over %s paired seeds: gain min %s, median %s, max %s (%s).",
		     n_(sd, "paired_seeds", 0, a, B), pct(g(sd, "gain"), "min", b_, B),
		     pct(g(sd, "gain"), "median", c, B), pct(g(sd, "gain"), "max", e, B), s_(sd, "rule"));
	else
		para(d, "One paired seed: no spread to judge the gain against (%s).", s_(sd, "rule"));
	json_t *rs = g(rec, "reasons");
	if (json_array_size(rs)) {
		para(d, "Deciding reasons (blockers make it NO-GO; conditions make it GO WITH CONDITIONS):");
		list_begin(d);
		size_t i;
		json_t *x;
		json_array_foreach(rs, i, x)
		{
			item(d, "%s: %s", s_(x, "kind"), s_(x, "text"));
		}
		list_end(d);
	} else {
		para(d, "No blocker and no condition: every check passes, every check is guarded by a "
			"rollback trigger and the gain is above the noise threshold.");
	}
	/* A monitor's alert on the candidate belongs in the headline, not only
	 * in its section at the end. */
	size_t i;
	json_t *x;
	json_array_foreach(g(g(rep, "monitors"), "perf_per_watt_trend"), i, x)
	{
		if (!json_is_true(g(x, "alert")) || strcmp(s_(x, "run"), s_(rep, "candidate")))
			continue;
		para(d, "Perf-per-watt trend alert: %s of %s busy windows below the baseline's tokens/J, "
			"%s in a row at the longest (rule: %s; section mon-trend).",
		     n_(x, "windows_below_baseline", 0, a, B), n_(x, "windows_compared", 0, b_, B),
		     n_(x, "longest_run_below_baseline", 0, c, B), s_(x, "alert_rule"));
	}
}

static void sec_timeseries(struct doc *d, json_t *rep, const struct rp_plots *pl)
{
	sec_h(d, SEC_TIMESERIES);
	para(d, "Candidate %s (solid, blue) against baseline %s (dashed, red), on shared axes; marks on "
		"every panel: hardware clamps, rollbacks, safe points and quality-gate changes (the "
		"legend counts them). Long runs are thinned to buckets (mean; junction: the bucket's "
		"peak). Every figure's data is in report.json (figures).",
	     s_(rep, "candidate"), s_(rep, "baseline"));
	static const char *const ids[] = { "fig-clock", "fig-power", "fig-thermal", "fig-int8",
					   "fig-queue", "fig-tpj", "fig-p99" };
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		plot(d, pl, ids[i]);
}

static void sec_handoff(struct doc *d, json_t *rep)
{
	json_t *ho = g(rep, "handoff");
	sec_h(d, SEC_HANDOFF);
	static const char *const keys[][2] = {
		{ "role", "role" },
		{ "source", "source" },
		{ "source_kind", "kind" },
		{ "scenario", "scenario" },
		{ "workload_profile", "workload profile" },
		{ "device", "device" },
		{ "model_revision", "model revision" },
		{ "compiler", "compiler" },
		{ "compiler_source", "compiler from" },
		{ "runtime", "runtime" },
		{ "driver_version", "driver" },
		{ "firmware_version", "firmware" },
		{ "power_mode", "power mode" },
		{ "policy", "policy" },
		{ "controller", "controller" },
		{ "policy_path", "policy file" },
		{ "policy_hash", "policy hash" },
		{ "policy_hash_check", "hash check" },
		{ "owners", "policy owners" },
		{ "objective", "objective" },
		{ "seed", "seed" },
		{ "duration_s", "duration (s)" },
		{ "reproduce", "reproduce" },
	};
	size_t i;
	json_t *r;
	json_array_foreach(g(ho, "runs"), i, r)
	{
		h(d, 3, s_(r, "run"), NULL);
		const char *cols[2] = { "field", "value" };
		thead(d, cols, 2);
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			char buf[B];
			json_t *v = g(r, keys[k][0]);
			const char *val = json_is_string(v)	? json_string_value(v)
					  : json_is_number(v) ? n_(r, keys[k][0], 0, buf, sizeof(buf))
							      : "not recorded";
			const char *cells[2] = { keys[k][1], val };
			trow(d, cells, 2, NULL);
		}
		tend(d);
	}
	para(d, "Not in the run outputs (for the integrator):");
	list_begin(d);
	json_t *x;
	json_array_foreach(g(ho, "missing_from_run_outputs"), i, x)
	{
		item(d, "%s", json_string_value(x));
	}
	list_end(d);
}

static void sec_primary(struct doc *d, json_t *rep, const struct rp_plots *pl)
{
	json_t *pm = g(rep, "primary_metric");
	sec_h(d, SEC_PRIMARY);
	para(d, "%s.", s_(pm, "definition"));
	const char *cols[] = { "run", "role", "tokens/J", "vs baseline", "tokens/J under SLA",
			       "vs baseline", "SLA attainment", "energy J (accel/mem/host)", "source" };
	thead(d, cols, 9);
	size_t i;
	json_t *r;
	json_array_foreach(g(pm, "runs"), i, r)
	{
		char a[B], b_[B], c[B], e[B], f[B], en[3 * B];
		json_t *ej = g(r, "energy_j");
		char x1[B], x2[B], x3[B];
		snprintf(en, sizeof(en), "%s / %s / %s", n_(ej, "accel", 0, x1, B), n_(ej, "memory", 0, x2, B),
			 n_(ej, "host", 0, x3, B));
		const char *cells[] = { s_(r, "run"),
					s_(r, "role"),
					n_(r, "tokens_per_joule", 4, a, B),
					n_(r, "ratio_vs_baseline", 3, b_, B),
					n_(r, "tokens_per_joule_under_sla", 4, c, B),
					n_(r, "ratio_under_sla_vs_baseline", 3, e, B),
					n_(r, "sla_attainment", 3, f, B),
					en,
					s_(r, "source") };
		trow(d, cells, 9, NULL);
	}
	tend(d);
	h(d, 3, "Trend over the run", "trend");
	const char *tc[] = { "run", "busy windows", "slope (tokens/J per hour)", "first third",
			     "last third", "change", "log vs summary: tokens", "log vs summary: energy" };
	thead(d, tc, 8);
	json_array_foreach(g(pm, "runs"), i, r)
	{
		json_t *t = g(r, "trend"), *c = g(r, "recompute_check");
		char a[B], b_[B], cc[B], e[B], f[B], x[B], y[B];
		const char *cells[] = { s_(r, "run"),
					n_(t, "busy_windows", 0, a, B),
					n_(t, "slope_tpj_per_hour", 5, b_, B),
					n_(t, "first_third_mean", 4, cc, B),
					n_(t, "last_third_mean", 4, e, B),
					pct(t, "change", f, B),
					c ? pct(c, "tokens_rel_err", x, B) : "—",
					c ? pct(c, "energy_rel_err", y, B) : "—" };
		trow(d, cells, 8, NULL);
	}
	tend(d);
	para(d, "The per-window series (tokens/J of each SLA window) is figure fig-tpj and "
		"primary_metric.runs[].windows in report.json. The log-vs-summary columns check the "
		"decision-log recomputation a live run relies on against the simulator's ground truth.");
	json_t *sd = g(rep, "seeds");
	if (json_integer_value(g(sd, "paired_seeds")) >= 2) {
		h(d, 3, "Spread over seeds", "seeds");
		const char *sc[] = { "", "min", "median", "max" };
		thead(d, sc, 4);
		static const char *const rows[3][2] = { { "candidate_tokens_per_joule", "candidate tokens/J" },
						       { "baseline_tokens_per_joule", "baseline tokens/J" },
						       { "gain", "gain" } };
		for (int k = 0; k < 3; k++) {
			json_t *x = g(sd, rows[k][0]);
			char p1[B], p2[B], p3[B];
			const char *cells[] = { rows[k][1],
						k == 2 ? pct(x, "min", p1, B) : n_(x, "min", 4, p1, B),
						k == 2 ? pct(x, "median", p2, B) : n_(x, "median", 4, p2, B),
						k == 2 ? pct(x, "max", p3, B) : n_(x, "max", 4, p3, B) };
			trow(d, cells, 4, NULL);
		}
		tend(d);
		plot(d, pl, "fig-seeds");
	}
}

static void sec_bottlenecks(struct doc *d, json_t *rep, const struct rp_plots *pl)
{
	json_t *bo = g(rep, "bottlenecks");
	sec_h(d, SEC_BOTTLENECKS);
	json_t *th = g(bo, "thresholds");
	char a[B], b_[B], c[B], e[B], f[B], x[B], cs[B];
	para(d, "Rules, first match per SLA window (docs/report.md): idle (utilisation < %s, nothing "
		"served); thermal (any hardware slowdown or firmware thermal trim, or junction at/over "
		"the soft ceiling); power cap (mean accelerator power >= %s of the limit, or power-cap "
		"throttle in >= %s of periods); queueing (mean queue >= %s requests); host orchestration "
		"(host rail >= %s of power while utilisation < %s); else compute (clock sensitivity >= %s) "
		"or memory, unresolved when sensitivity cannot be measured.",
	     n_(th, "busy_util", 2, a, B), n_(th, "cap_ratio", 2, b_, B), n_(th, "cap_share", 2, c, B),
	     n_(th, "queue_depth", 1, e, B), n_(th, "host_share", 2, f, B), n_(th, "host_util", 2, x, B),
	     n_(th, "compute_sens", 2, cs, B));
	para(d, "Ranking: each class's share of the energy of the run's busy windows (the headline class "
		"is the largest share; a run that entered hardware slowdown is thermal-bound). Cost: the "
		"energy a window spends above the best tokens/J another run reached for the same demand "
		"(same scenario, seed and window), or the run's own 90th-percentile window when that is "
		"higher, so a class that holds most windows never shows a cost of 0 J by construction.");
	size_t i;
	json_t *r;
	json_array_foreach(g(bo, "runs"), i, r)
	{
		h(d, 3, s_(r, "run"), NULL);
		para(d, "Run classification: %s (%s).", s_(r, "run_class"), s_(r, "run_class_rule"));
		const char *rc[] = { "rank", "class", "windows", "share of busy energy", "cost (J)",
				     "cost share of run energy", "tokens/J if cost removed" };
		thead(d, rc, 7);
		size_t k;
		json_t *y;
		json_array_foreach(g(r, "ranking"), k, y)
		{
			char rk[32], w[B], co[B], sh[B], t[B], eb[B];
			snprintf(rk, sizeof(rk), "%zu", k + 1);
			json_t *s = g(y, "share_of_energy"), *sb = g(y, "share_of_busy_energy");
			snprintf(sh, sizeof(sh), "%.1f%%", json_is_number(s) ? 100 * json_number_value(s) : NAN);
			snprintf(eb, sizeof(eb), "%.1f%%", json_is_number(sb) ? 100 * json_number_value(sb) : NAN);
			const char *cells[] = { rk, s_(y, "class"), n_(y, "windows", 0, w, B), eb,
						n_(y, "cost_j", 0, co, B), sh,
						n_(y, "tokens_per_joule_if_removed", 4, t, B) };
			trow(d, cells, 7, NULL);
		}
		tend(d);
		char idle[B];
		para(d, "Windows by evidence (%s idle or tail window(s) left out; evidence that differs only in "
			"its numbers is one row with its count and each number's range; every window is in "
			"report.json bottlenecks.runs[].windows):",
		     n_(r, "idle_windows", 0, idle, B));
		const char *wc[] = { "windows", "count", "class", "tokens/J (min-max)", "cost (J)",
				     "evidence" };
		thead(d, wc, 6);
		json_array_foreach(g(r, "window_groups"), k, y)
		{
			char t[600] = "", cn[B], tp[2 * B], co[B], lo[B], hi[B];
			size_t q;
			json_t *sp;
			/* Adjacent windows merge into one span. */
			double s0 = NAN, s1 = NAN;
			size_t shown = 0, nsp = json_array_size(g(y, "windows"));
			for (q = 0; q <= nsp; q++) {
				sp = json_array_get(g(y, "windows"), q);
				double a0 = sp ? json_number_value(json_array_get(sp, 0)) : NAN;
				double a1 = sp ? json_number_value(json_array_get(sp, 1)) : NAN;
				if (sp && a0 == s1) {
					s1 = a1;
					continue;
				}
				size_t l = strlen(t);
				if (isfinite(s0) && shown < 8)
					snprintf(t + l, sizeof(t) - l, "%s%.0f-%.0f s", shown ? ", " : "", s0, s1);
				else if (isfinite(s0) && shown == 8)
					snprintf(t + l, sizeof(t) - l, ", ...");
				shown += isfinite(s0);
				s0 = a0;
				s1 = a1;
			}
			snprintf(tp, sizeof(tp), "%s-%s", n_(y, "tokens_per_joule_min", 4, lo, B),
				 n_(y, "tokens_per_joule_max", 4, hi, B));
			const char *cells[] = { t, n_(y, "count", 0, cn, B), s_(y, "class"), tp,
						n_(y, "cost_j", 0, co, B), s_(y, "evidence") };
			trow(d, cells, 6, NULL);
		}
		tend(d);
		para(d, "By slice:");
		const char *sc[] = { "slice", "INT8 share", "max drop", "true drop (end)",
				     "worst drop bound while INT8", "status" };
		thead(d, sc, 6);
		json_array_foreach(g(r, "slices"), k, y)
		{
			char s1[B], s2[B], s3[B], s4[B];
			const char *cells[] = { s_(y, "slice"), n_(y, "int8_share", 3, s1, B),
						n_(y, "max_drop", 3, s2, B), n_(y, "true_drop_end", 3, s3, B),
						n_(y, "worst_drop_bound_while_int8", 4, s4, B), s_(y, "status") };
			trow(d, cells, 6, NULL);
		}
		tend(d);
	}
}

static void point_text(json_t *p, char *buf, size_t len)
{
	char a[B], b_[B], c[B], e[B], f[B];
	if (!p) {
		snprintf(buf, len, "—");
		return;
	}
	if (g(p, "basis")) {
		if (g(p, "quality_breaches"))
			snprintf(buf, len, "quality breaches %s (%s)", n_(p, "quality_breaches", 0, b_, B),
				 s_(p, "basis"));
		else
			snprintf(buf, len, "tokens/J %s (%s)", n_(p, "tokens_per_joule", 4, a, B),
				 s_(p, "basis"));
		return;
	}
	snprintf(buf, len, "tokens/J %s, SLA att. %s, TTFT p99 %s ms, TBT p99 %s ms, clamps %s",
		 n_(p, "tokens_per_joule", 4, a, B), n_(p, "sla_attainment", 3, b_, B),
		 n_(p, "ttft_p99_ms", 0, c, B), n_(p, "tbt_p99_ms", 1, e, B),
		 n_(p, "clamp_events", 0, f, B));
}

static void sec_mitigation(struct doc *d, json_t *rep, const struct rp_plots *pl)
{
	json_t *m = g(rep, "mitigation");
	sec_h(d, SEC_MITIGATION);
	para(d, "Measured interventions are other runs of the baseline's demand (ranked by tokens/J); "
		"predicted ones recover a bottleneck class's cost in the candidate. Each is labelled.");
	const char *cols[] = { "rank", "intervention", "addresses", "owner", "label", "before", "after",
			       "gain" };
	thead(d, cols, 8);
	size_t i;
	json_t *x;
	json_array_foreach(g(m, "interventions"), i, x)
	{
		char rk[B], bf[1024], af[1024], gn[B];
		point_text(g(x, "before"), bf, sizeof(bf));
		point_text(g(x, "after"), af, sizeof(af));
		const char *cells[] = { n_(x, "rank", 0, rk, B), s_(x, "intervention"), s_(x, "addresses"),
					s_(x, "owner"), s_(x, "label"), bf, af, pct(x, "gain", gn, B) };
		trow(d, cells, 8, NULL);
	}
	tend(d);
	plot(d, pl, "fig-points");
	h(d, 3, "Rejected alternatives", "rejected");
	if (!json_array_size(g(m, "rejected")) && json_integer_value(g(m, "alternatives_tried")) > 0)
		para(d, "None rejected: every alternative tried is ranked above.");
	else if (!json_array_size(g(m, "rejected")))
		para(d, "No alternative was tried: pass the other runs (govctl report --alternatives RUN "
			"or a govctl compare output directory) to have each one's reason here.");
	const char *rc[] = { "alternative", "run", "label", "tokens/J", "gain vs baseline",
			     "why rejected" };
	thead(d, rc, 6);
	json_array_foreach(g(m, "rejected"), i, x)
	{
		char t[B], gn[B];
		const char *cells[] = { s_(x, "alternative"), g(x, "run") ? s_(x, "run") : "—",
					s_(x, "label"), n_(x, "tokens_per_joule", 4, t, B),
					pct(x, "gain_vs_baseline", gn, B), s_(x, "why") };
		trow(d, cells, 6, NULL);
	}
	tend(d);
}

static void sec_validation(struct doc *d, json_t *rep, const struct rp_plots *pl)
{
	json_t *vm = g(rep, "validation_matrix");
	sec_h(d, SEC_VALIDATION);
	const char *cols[] = { "run", "slice", "check", "threshold", "value", "result",
			       "rollback trigger" };
	thead(d, cols, 7);
	size_t i;
	json_t *x;
	json_array_foreach(g(vm, "rows"), i, x)
	{
		char v[B];
		const char *res = s_(x, "result");
		const char *cells[] = { s_(x, "run"), s_(x, "slice"), s_(x, "check"), s_(x, "threshold"),
					v_(x, "value", v, B), res, s_(x, "rollback_trigger") };
		trow(d, cells, 7, !strcmp(res, "FAIL") ? "fail" : !strcmp(res, "PASS") ? "pass" : NULL);
	}
	tend(d);
	para(d, "Verdict of every run against the baseline:");
	list_begin(d);
	json_array_foreach(g(vm, "verdicts"), i, x)
	{
		char gn[B];
		item(d, "%s: %s (%s)", s_(x, "run"), s_(x, "verdict"), pct(x, "gain", gn, B));
	}
	list_end(d);
}

/* Monitors: each clamp event against its window's latency tails. */
static void sec_thermal_latency(struct doc *d, json_t *m)
{
	size_t i;
	json_t *x;
	char a[B], b_[B], c[B], e[B], f[B];

	h(d, 3, "Thermal events against latency tails", "mon-thermal-latency");
	json_array_foreach(g(m, "thermal_latency"), i, x)
	{
		if (json_is_string(g(x, "correlation_note")))
			para(d, "%s: %s; median window TBT p99 without a clamp %s ms.", s_(x, "run"),
			     s_(x, "correlation_note"), n_(x, "median_tbt_p99_ms_without_clamp", 1, c, B));
		else
			para(d, "%s: correlation of per-window thermal stress (clamp periods, + 1 when the "
				"junction reached the ceiling) with TTFT p99 %s, with TBT p99 %s; median "
				"window TBT p99 without a clamp %s ms.",
			     s_(x, "run"), n_(x, "corr_thermal_vs_ttft_p99", 2, a, B),
			     n_(x, "corr_thermal_vs_tbt_p99", 2, b_, B),
			     n_(x, "median_tbt_p99_ms_without_clamp", 1, c, B));
		json_t *ev = g(x, "clamp_events");
		if (!json_array_size(ev))
			continue;
		const char *ec[] = { "clamp at (s)", "duration (s)", "max junction (C)", "min clock (MHz)",
				     "window TTFT p99 (ms)", "window TBT p99 (ms)", "window SLA met" };
		thead(d, ec, 7);
		size_t k;
		json_t *z;
		json_array_foreach(ev, k, z)
		{
			char g1[B], g2[B];
			const char *cells[] = { n_(z, "t_s", 0, a, B), n_(z, "duration_s", 0, b_, B),
						n_(z, "max_junction_c", 1, c, B), n_(z, "min_clock_mhz", 0, e, B),
						n_(z, "window_ttft_p99_ms", 0, f, B),
						n_(z, "window_tbt_p99_ms", 1, g1, B),
						n_(z, "window_sla_met", 0, g2, B) };
			trow(d, cells, 7, NULL);
		}
		tend(d);
	}
}

/* Monitors: every decision that lowered a slice's INT8 share. */
static void sec_fallback_audit(struct doc *d, json_t *m)
{
	size_t i;
	json_t *x;
	char a[B], b_[B], c[B], e[B];

	h(d, 3, "Precision fallback audit", "mon-audit");
	para(d, "Every decision that lowered a slice's INT8 share, with its reason codes "
		"(int8_gate_closed, rollback, prec_saturated, safe_point ...) and the quality evidence "
		"it saw.");
	json_array_foreach(g(m, "precision_fallback_audit"), i, x)
	{
		json_t *cn = g(x, "periods_with_reason"), *fb = g(x, "fallbacks");
		para(d, "%s: %zu fallback(s); periods carrying int8_gate_closed %s, rollback %s, "
			"prec_saturated %s, safe_point %s.",
		     s_(x, "run"), json_array_size(fb), n_(cn, "int8_gate_closed", 0, a, B),
		     n_(cn, "rollback", 0, b_, B), n_(cn, "prec_saturated", 0, c, B),
		     n_(cn, "safe_point", 0, e, B));
		if (!json_array_size(fb))
			continue;
		const char *ac[] = { "t (s)", "seq", "slice: INT8 before -> after (drop bound, samples)",
				     "reasons", "faults" };
		thead(d, ac, 5);
		size_t k;
		json_t *z;
		json_array_foreach(fb, k, z)
		{
			char sl[1024] = "", q[B];
			size_t s;
			json_t *w;
			json_array_foreach(g(z, "slices"), s, w)
			{
				char p1[B], p2[B], p3[B], p4[B];
				size_t l = strlen(sl);
				snprintf(sl + l, sizeof(sl) - l, "%s%s: %s -> %s (%s, %s)", l ? "; " : "",
					 s_(w, "slice"), n_(w, "int8_before", 2, p1, B),
					 n_(w, "int8_after", 2, p2, B), n_(w, "drop_upper", 4, p3, B),
					 n_(w, "samples", 0, p4, B));
			}
			const char *cells[] = { n_(z, "t_s", 0, a, B), n_(z, "seq", 0, b_, B), sl,
						s_(z, "reasons"), n_(z, "faults", 0, q, B) };
			trow(d, cells, 5, NULL);
		}
		tend(d);
	}
}

static void sec_monitors(struct doc *d, json_t *rep, const struct rp_plots *pl)
{
	json_t *m = g(rep, "monitors");
	sec_h(d, SEC_MONITORS);
	size_t i;
	json_t *x;
	char a[B], b_[B], c[B], e[B], f[B];

	h(d, 3, "Precision-mode mix", "mon-mix");
	const char *mc[] = { "run", "INT8 token fraction", "window INT8 share min", "max",
			     "INT8 share by slice" };
	thead(d, mc, 5);
	json_array_foreach(g(m, "precision_mix"), i, x)
	{
		char sl[512] = "";
		const char *k;
		json_t *v;
		json_object_foreach(g(x, "per_slice_int8_share"), k, v)
		{
			size_t l = strlen(sl);
			snprintf(sl + l, sizeof(sl) - l, "%s%s %.3f", l ? ", " : "", k,
				 json_is_number(v) ? json_number_value(v) : NAN);
		}
		/* 8-bit tokens; with the precision ladder, FP8's share of all after them */
		char i8[2 * B];
		n_(x, "int8_token_fraction", 3, a, B);
		if (json_is_number(g(x, "fp8_token_fraction")))
			snprintf(i8, sizeof(i8), "%s (FP8 %.3f)", a,
				 json_number_value(g(x, "fp8_token_fraction")));
		else
			snprintf(i8, sizeof(i8), "%s", a);
		const char *cells[] = { s_(x, "run"), i8,
					n_(x, "window_int8_share_min", 3, b_, B),
					n_(x, "window_int8_share_max", 3, c, B), sl };
		trow(d, cells, 5, NULL);
	}
	tend(d);
	para(d, "The INT8 share set on each slice over time is figure fig-int8 (above).");

	h(d, 3, "Perf-per-watt trend", "mon-trend");
	const char *tc[] = { "run", "windows compared", "below baseline", "longest run below",
			     "alert rule", "alert" };
	thead(d, tc, 6);
	json_array_foreach(g(m, "perf_per_watt_trend"), i, x)
	{
		const char *cells[] = { s_(x, "run"), n_(x, "windows_compared", 0, a, B),
					n_(x, "windows_below_baseline", 0, b_, B),
					n_(x, "longest_run_below_baseline", 0, c, B), s_(x, "alert_rule"),
					n_(x, "alert", 0, e, B) };
		trow(d, cells, 6, json_is_true(g(x, "alert")) ? "fail" : NULL);
	}
	tend(d);

	h(d, 3, "Thermal clamp frequency", "mon-clamp");
	const char *cc[] = { "run", "clamp events", "per hour", "clamp time (s)", "windows with clamps",
			     "time above ceiling (s)", "max junction (C)", "alert" };
	thead(d, cc, 8);
	json_array_foreach(g(m, "thermal_clamp_frequency"), i, x)
	{
		char g1[B], g2[B];
		const char *cells[] = { s_(x, "run"), n_(x, "clamp_events", 0, a, B),
					n_(x, "clamps_per_hour", 2, b_, B), n_(x, "clamp_time_s", 1, c, B),
					n_(x, "windows_with_clamps", 0, e, B),
					n_(x, "time_above_ceiling_s", 0, f, B),
					n_(x, "max_junction_c", 1, g1, B), n_(x, "alert", 0, g2, B) };
		trow(d, cells, 8, json_is_true(g(x, "alert")) ? "fail" : NULL);
	}
	tend(d);

	h(d, 3, "Quality regression by slice", "mon-quality");
	const char *qc[] = { "run", "slice", "max drop", "true drop (end)", "worst drop bound while INT8",
			     "INT8 share", "breach requests", "regression" };
	thead(d, qc, 8);
	json_array_foreach(g(m, "quality_by_slice"), i, x)
	{
		char g1[B], g2[B];
		const char *cells[] = { s_(x, "run"), s_(x, "slice"), n_(x, "max_drop", 3, a, B),
					n_(x, "true_drop_end", 3, b_, B),
					n_(x, "worst_drop_bound_while_int8", 4, c, B),
					n_(x, "int8_share", 3, e, B), n_(x, "breach_requests", 0, g1, B),
					n_(x, "regression", 0, g2, B) };
		trow(d, cells, 8, json_is_true(g(x, "regression")) ? "fail" : NULL);
	}
	tend(d);

	sec_thermal_latency(d, m);
	sec_fallback_audit(d, m);
}

/* The sign-off state: every role the workflow asks for, signed or missing,
 * from the entries appended beside the report (checked by the caller). */
static void sec_signoff(struct doc *d, json_t *rep, json_t *signoffs)
{
	sec_h(d, SEC_SIGNOFF);
	para(d, "Each owner signs their decision with their own key: govctl signoff REPORT_DIR/report.json "
		"--role ROLE --decision GO|GO-WITH-CONDITIONS|NO-GO --key KEYFILE appends a signed entry "
		"to report.json.signoffs; govctl verify REPORT_DIR/report.json --signers FILE lists who "
		"signed what and when and refuses an edited report or a key not listed for its role.");
	const char *cols[] = { "role", "state", "owner", "decision", "date (UTC)", "key", "check" };
	thead(d, cols, 7);
	size_t i;
	json_t *x;
	json_array_foreach(g(rep, "signoff"), i, x)
	{
		const char *role = s_(x, "role");
		bool any = false;
		size_t k;
		json_t *e;
		json_array_foreach(signoffs, k, e)
		{
			if (strcmp(s_(e, "role"), role))
				continue;
			any = true;
			char kb[24];
			snprintf(kb, sizeof(kb), "%.16s...", s_(e, "key"));
			/* Valid without a signers list: signed, but whose key it is
			 * was not checked; the check column says so. */
			bool ok = json_is_true(g(e, "valid"));
			const char *state = !ok ? "INVALID"
					    : strcmp(s_(e, "status"), "valid") ? "signed (key not checked)"
									       : "signed";
			const char *cells[] = { role, state, s_(e, "name"),
						s_(e, "decision"), s_(e, "date"), kb, s_(e, "status") };
			trow(d, cells, 7, ok ? "pass" : "fail");
		}
		if (!any) {
			const char *cells[] = { role, "MISSING", "", "", "", "", "not signed yet" };
			trow(d, cells, 7, "fail");
		}
	}
	tend(d);
}

void rp_render_signoff(json_t *rep, json_t *signoffs, FILE *f, bool html)
{
	struct doc d = { .f = f, .html = html };
	fputs(html ? RP_SIGNOFF_BEGIN "\n" : "", f);
	sec_signoff(&d, rep, signoffs);
	fputs(html ? RP_SIGNOFF_END "\n" : "", f);
}

static const char css[] =
	"body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222;"
	"background:#fff}table{border-collapse:collapse;margin:0.5em 0 1em;font-size:0.85em}"
	"th,td{border:1px solid #bbb;padding:3px 6px;text-align:left;vertical-align:top}"
	"th{background:#eef}tr.fail td{background:#fdd}tr.pass td{background:#efe}"
	".verdict{font-size:2em;font-weight:bold;padding:0.3em 0.6em;display:inline-block;"
	"border-radius:6px}.go{background:#2a2;color:#fff}.cond{background:#e90;color:#fff}"
	".nogo{background:#c22;color:#fff}figure{margin:1em 0}figcaption{font-style:italic}"
	"svg{max-width:100%;height:auto}.missing{color:#a00}"
	".evidence{border:3px solid #e90;background:#fff6e6;padding:0.5em 1em;font-size:1.1em}"
	".meta{color:#555;font-size:0.9em}.toc{border:1px solid #ccd;padding:0.3em 1em;"
	"display:inline-block}.toc ol{margin:0.2em 0}"
	/* On paper: the page's full width, colours kept (the verdict and the
	 * pass/fail rows say something), no table or figure split over pages,
	 * each top-level section on a new page. */
	"@media print{body{max-width:none;margin:0;padding:0;font-size:10pt}"
	"*{-webkit-print-color-adjust:exact;print-color-adjust:exact}"
	"table,figure,tr{break-inside:avoid}h2:not(#recommendation){break-before:page}"
	"h2,h3{break-after:avoid}"
	"a{color:inherit;text-decoration:none}svg{width:100%}}";

static void toc(struct doc *d)
{
	if (d->html) {
		fputs("<nav class=\"toc\" id=\"contents\"><b>Contents</b><ol>\n", d->f);
		for (int i = 0; i < SEC_N; i++)
			fprintf(d->f, "<li><a href=\"#%s\">%s</a></li>\n", sections[i].id,
				sections[i].title);
		fputs("</ol></nav>\n", d->f);
		return;
	}
	fputs("Contents:\n\n", d->f);
	for (int i = 0; i < SEC_N; i++)
		fprintf(d->f, "%d. [%s](#%s)\n", i + 1, sections[i].title, sections[i].id);
	fputs("\n", d->f);
}

int rp_render(json_t *rep, const struct rp_plots *plots, json_t *signoffs, FILE *f, bool html)
{
	struct doc d = { .f = f, .html = html };
	const char *title = "Perf-per-watt report";
	if (html) {
		fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
			   "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<h1>%s</h1>\n",
			title, css, title);
	} else {
		fprintf(f, "# %s\n\n", title);
	}
	json_t *ev = g(rep, "evidence");
	if (html) {
		fputs("<p class=\"evidence\" id=\"evidence\"><b>Evidence: ", f);
		put_esc(&d, s_(ev, "kind"));
		fputs("</b>: ", f);
		put_esc(&d, s_(ev, "statement"));
		fputs("</p>\n", f);
	} else {
		fprintf(f, "> **Evidence: %s:** %s\n\n", s_(ev, "kind"), s_(ev, "statement"));
	}
	/* One line each, so a regeneration differs only on the first. */
	char line[9000];
	snprintf(line, sizeof(line), "Generated at %s", s_(rep, "generated_at"));
	fputs(html ? "<p class=\"meta\" id=\"generated\">" : "", f);
	put_esc(&d, line);
	fputs(html ? "</p>\n" : "\n\n", f);
	snprintf(line, sizeof(line), "govd %s, source commit %s; %s: %s", s_(rep, "govd_version"),
		 s_(rep, "source_commit"), s_(rep, "generated_by"), s_(rep, "command"));
	fputs(html ? "<p class=\"meta\">" : "", f);
	put_esc(&d, line);
	fputs(html ? "</p>\n" : "\n\n", f);
	para(&d, "Candidate: %s. Baseline: %s.", s_(rep, "candidate"), s_(rep, "baseline"));
	toc(&d);
	sec_recommendation(&d, rep);
	sec_timeseries(&d, rep, plots);
	sec_handoff(&d, rep);
	sec_primary(&d, rep, plots);
	sec_bottlenecks(&d, rep, plots);
	sec_mitigation(&d, rep, plots);
	sec_validation(&d, rep, plots);
	sec_monitors(&d, rep, plots);
	rp_render_signoff(rep, signoffs, f, html);
	if (html)
		fputs("</body>\n</html>\n", f);
	return ferror(f) ? -EIO : 0;
}
