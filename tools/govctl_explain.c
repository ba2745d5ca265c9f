/* govctl explain: why the clock sat where it did, from a decision log's
 * "why" records (docs/decision-log.md): per stretch of a run, the clock the
 * controller asked for, how often it changed, which term set it (the model,
 * the observed tail, a floor, a surge, idle, infeasible, the window search),
 * what the model picked and predicted at that clock and at the next lower one
 * and why that one lost.
 * Reads the log with its own reader (governor/loop/declog_read.c). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/hist.h"
#include "governor/loop/declog_read.h"
#include "tools/govctl.h"

#define EXPLAIN_LOG_MAX_BYTES (4ull << 30)
#define EXPLAIN_MAX_EVERY_S 86400.0

static void ex_usage(FILE *f)
{
	fprintf(f, "usage: govctl explain RUN [--from S] [--to S] [--every S]\n"
		   "  RUN: a govctl sim run directory (its decisions.jsonl) or a decision log.\n"
		   "  One row per --every seconds (default 60; 0: one row for the whole\n"
		   "  stretch) between --from and --to (seconds into the run): the mean\n"
		   "  clock asked for, clock changes per minute, the share of busy periods\n"
		   "  each term set the clock, the model's median pick, the median\n"
		   "  predicted TBT / TTFT p99 at the chosen clock and at the next lower\n"
		   "  one, and why that one lost; for the window search (whose window\n"
		   "  tails the model scales to its clock and one step lower) its base\n"
		   "  clock at the stretch's end and its moves;\n"
		   "  the share of periods the thermal limit was held at its floor\n"
		   "  (thermal_floor_share) over the heatsink prediction's deeper cut\n");
}

/* One stretch's tallies. */
struct ex_acc {
	double t0, t1;
	unsigned n, busy, changes;
	double clk_sum, clk_min, clk_max, last_clk;
	unsigned bound[GOV_WHY_N], limit[GOV_WHY_L_N];
	/* The window search: its base at the stretch's end, and its moves (a
	 * move is counted where the base or the last move changed). */
	unsigned moves[GOV_WHY_M_N];
	double base; /* the last record's (NaN: none yet) */
	int prev_move;
	/* With load classes (why.load): each class's base and last move, and
	 * the busy periods at the heavy one. */
	double cls_base[2];
	int cls_move[2];
	bool classes;
	unsigned heavy;
	/* Periods the thermal limit was held at its floor over the heatsink
	 * prediction's cut (why.heat_floor_w), and the last such floor. */
	unsigned heat_floor;
	double heat_floor_w;
	/* predictions and the model's pick, for their medians (2 % buckets) */
	struct hist tbt, ttft, tbt_lo, model;
	/* Periods the expected-value gate held each slice's open quality gate
	 * shut (quality[].detect_held_s), those a slice waited in BF16 for the
	 * others (quality[].mix_held), and the slices' names. */
	unsigned held[HAL_MAX_SLICES], mix_held[HAL_MAX_SLICES];
	size_t n_slices;
	const char (*slice)[HAL_NAME_LEN];
};

struct ex_ctx {
	double from, to, every;
	struct ex_acc a, total;
	struct declog_head head;
	unsigned with_why, periods;
	bool header_done;
	FILE *out; /* the table, printed only when the log explains something */
};

static void acc_reset(struct ex_acc *a, double t0, const struct declog_head *h)
{
	memset(a, 0, sizeof(*a));
	a->n_slices = h->n_slices;
	a->slice = h->slice;
	hist_reset(&a->tbt);
	hist_reset(&a->ttft);
	hist_reset(&a->tbt_lo);
	hist_reset(&a->model);
	a->t0 = a->t1 = t0;
	a->clk_min = INFINITY;
	a->clk_max = -INFINITY;
	a->last_clk = NAN;
	a->base = NAN;
	a->prev_move = -1;
	a->cls_base[0] = a->cls_base[1] = NAN;
	a->cls_move[0] = a->cls_move[1] = -1;
	a->heat_floor_w = NAN;
}

/* The bucket's interpolation may pass the largest value seen (a pick at
 * the max clock printed as 1993 MHz): no median is over it. These
 * histograms are filled here, never deltas, so max_ms holds. */
static double median(const struct hist *h)
{
	return h->n ? fmin(hist_quantile(h, 0.5), h->max_ms) : NAN;
}

static void acc_add(struct ex_acc *a, const struct declog_period *p, double period_s)
{
	const struct gov_why *w = &p->why;
	a->t1 = p->t_s + period_s;
	a->n++;
	for (size_t i = 0; i < a->n_slices && i < HAL_MAX_SLICES; i++) {
		a->held[i] += (p->detect_held >> i) & 1u;
		a->mix_held[i] += (p->mix_held >> i) & 1u;
	}
	if (w->valid && isfinite(w->base_mhz)) {
		/* Two bases take turns period by period: a move is judged
		 * against the same class's last record. */
		int c = w->load == GOV_WHY_LOAD_HEAVY;
		double *base = w->load != GOV_WHY_LOAD_NONE ? &a->cls_base[c] : &a->base;
		int *prev = w->load != GOV_WHY_LOAD_NONE ? &a->cls_move[c] : &a->prev_move;
		bool moved = isfinite(*base) &&
			     (fabs(w->base_mhz - *base) > 0.5 || (int)w->move != *prev);
		if (moved && w->move != GOV_WHY_M_NONE)
			a->moves[w->move]++;
		*base = w->base_mhz;
		*prev = (int)w->move;
		a->base = w->base_mhz;
		if (w->load != GOV_WHY_LOAD_NONE)
			a->classes = true;
		if (w->load == GOV_WHY_LOAD_HEAVY && w->bound != GOV_WHY_IDLE)
			a->heavy++;
	}
	if (w->valid && isfinite(w->heat_floor_w)) {
		a->heat_floor++;
		a->heat_floor_w = w->heat_floor_w;
	}
	if (!w->valid || w->bound == GOV_WHY_IDLE)
		return;
	a->busy++;
	a->bound[w->bound]++;
	a->limit[w->lower_limit]++;
	double f = w->clk_mhz;
	if (isfinite(f)) {
		if (isfinite(a->last_clk) && fabs(f - a->last_clk) > 0.5)
			a->changes++;
		a->last_clk = f;
		a->clk_sum += f;
		a->clk_min = fmin(a->clk_min, f);
		a->clk_max = fmax(a->clk_max, f);
	}
	if (isfinite(w->tbt_pred_ms))
		hist_add(&a->tbt, w->tbt_pred_ms, 1);
	if (isfinite(w->ttft_pred_ms))
		hist_add(&a->ttft, w->ttft_pred_ms, 1);
	if (isfinite(w->tbt_lower_ms))
		hist_add(&a->tbt_lo, w->tbt_lower_ms, 1);
	if (isfinite(w->model_mhz))
		hist_add(&a->model, w->model_mhz, 1);
}

/* "%8.1f", or "-" when unknown. */
static const char *num(char *buf, size_t len, double v)
{
	if (isfinite(v))
		snprintf(buf, len, "%8.1f", v);
	else
		snprintf(buf, len, "%8s", "-");
	return buf;
}

/* Appends "<lead>slice N%, ..." for the slices with periods in count[]. */
static void held_shares(char *buf, size_t len, const struct ex_acc *a, const unsigned *count,
			const char *lead)
{
	for (size_t i = 0, k = 0; i < a->n_slices && i < HAL_MAX_SLICES; i++) {
		if (!count[i])
			continue;
		size_t used = strlen(buf);
		snprintf(buf + used, len - used, "%s%s %.0f%%", k++ ? ", " : lead, a->slice[i],
			 100.0 * count[i] / a->n);
	}
}

static void acc_print(FILE *out, struct ex_acc *a, const char *label)
{
	char b1[16], b2[16], b3[16], b4[16];
	char terms[160] = "", *q = terms;
	/* The terms that set the clock, largest share first. */
	bool used[GOV_WHY_N] = { false };
	for (int k = 0; k < 3; k++) {
		int best = -1;
		for (int b = 0; b < GOV_WHY_N; b++)
			if (!used[b] && a->bound[b] && (best < 0 || a->bound[b] > a->bound[best]))
				best = b;
		if (best < 0)
			break;
		used[best] = true;
		q += snprintf(q, sizeof(terms) - (size_t)(q - terms), "%s%s %.0f%%", k ? ", " : "",
			      gov_why_bound_name((enum gov_why_bound)best),
			      100.0 * a->bound[best] / a->busy);
	}
	int lim = -1;
	for (int l = 1; l < GOV_WHY_L_N; l++)
		if (a->limit[l] && (lim < 0 || a->limit[l] > a->limit[lim]))
			lim = l;
	double mins = (a->t1 - a->t0) / 60.0;
	if (!a->busy) {
		fprintf(out, "%-13s %6u %5u %s\n", label, a->n, 0u, "idle");
		return;
	}
	char search[224] = "";
	if (isfinite(a->base)) {
		char *sq = search;
		char l[16] = "-", h[16] = "-";
		if (isfinite(a->cls_base[0]))
			snprintf(l, sizeof(l), "%.0f", a->cls_base[0]);
		if (isfinite(a->cls_base[1]))
			snprintf(h, sizeof(h), "%.0f", a->cls_base[1]);
		if (a->classes)
			sq += snprintf(sq, sizeof(search),
				       "; search base %s light, %s heavy (%.0f %% of busy)", l, h,
				       100.0 * a->heavy / a->busy);
		else
			sq += snprintf(sq, sizeof(search), "; search base %.0f", a->base);
		for (int m = 1; m < GOV_WHY_M_N; m++)
			if (a->moves[m])
				sq += snprintf(sq, sizeof(search) - (size_t)(sq - search), ", %s %u",
					       gov_why_move_name((enum gov_why_move)m), a->moves[m]);
	}
	char held[400] = "";
	if (a->heat_floor)
		snprintf(held, sizeof(held),
			 "; thermal limit held at its floor over the prediction %.0f %% (last %.0f W)",
			 100.0 * a->heat_floor / a->n, a->heat_floor_w);
	held_shares(held, sizeof(held), a, a->held, "; 8-bit held by the detection delay: ");
	held_shares(held, sizeof(held), a, a->mix_held, "; 8-bit held for the other slices: ");
	fprintf(out, "%-13s %6u %5u %6.0f %5.0f-%-5.0f %6.1f %s %s %s %s  %-8s %s%s%s\n", label,
	       a->n, a->busy, a->clk_sum / a->busy, a->clk_min, a->clk_max,
	       mins > 0 ? a->changes / mins : 0.0, num(b4, sizeof(b4), median(&a->model)),
	       num(b1, sizeof(b1), median(&a->tbt)),
	       num(b2, sizeof(b2), median(&a->ttft)), num(b3, sizeof(b3), median(&a->tbt_lo)),
	       lim < 0 ? "-" : gov_why_limit_name((enum gov_why_limit)lim), terms, search, held);
}

static void row_label(char *buf, size_t len, double t0, double t1)
{
	snprintf(buf, len, "%.0f-%.0f", t0, t1);
}

static int on_header(void *ctx, const struct declog_head *h)
{
	struct ex_ctx *x = ctx;
	if (x->header_done)
		return 0; /* a reload's new header: same run */
	x->head = *h;
	x->header_done = true;
	fprintf(x->out, "%s: policy %s, controller %s, period %.0f ms%s\n",
	       h->scenario[0] ? h->scenario : h->dev_name, h->policy, h->controller, h->period_ms,
	       h->compact_gap ? " (compact log: left-out periods repeat the record before)" : "");
	fprintf(x->out, "%-13s %6s %5s %6s %11s %6s %8s %8s %8s %8s  %-8s %s\n", "seconds", "periods",
	       "busy", "clock", "min-max", "chg/min", "model", "TBT pred", "TTFT prd", "TBT lowr",
	       "lower", "set by");
	return 0;
}

static int on_period(void *ctx, const struct declog_period *p, bool copied)
{
	(void)copied;
	struct ex_ctx *x = ctx;
	double ps = x->head.period_ms / 1000.0;
	if (p->t_s < x->from - 1e-9 || (x->to > 0 && p->t_s >= x->to - 1e-9))
		return 0;
	x->periods++;
	x->with_why += p->why.valid;
	if (x->a.n == 0)
		acc_reset(&x->a, p->t_s, &x->head);
	if (x->total.n == 0)
		acc_reset(&x->total, p->t_s, &x->head);
	if (x->every > 0 && p->t_s >= x->a.t0 + x->every - 1e-9) {
		char l[48];
		row_label(l, sizeof(l), x->a.t0, x->a.t1);
		acc_print(x->out, &x->a, l);
		acc_reset(&x->a, p->t_s, &x->head);
	}
	acc_add(&x->a, p, ps);
	acc_add(&x->total, p, ps);
	return 0;
}

int govctl_explain(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "from", required_argument, NULL, 'f' }, { "to", required_argument, NULL, 't' },
		{ "every", required_argument, NULL, 'e' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ex_ctx x;
	memset(&x, 0, sizeof(x));
	x.every = 60;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		double *dst = c == 'f' ? &x.from : c == 't' ? &x.to : c == 'e' ? &x.every : NULL;
		if (dst) {
			if (!govctl_parse_double(optarg, dst) || *dst < 0 ||
			    (c == 'e' && *dst > EXPLAIN_MAX_EVERY_S)) {
				fprintf(stderr, "govctl explain: --%s wants seconds >= 0%s, got '%s'\n",
					c == 'f' ? "from" : c == 't' ? "to" : "every",
					c == 'e' ? " (at most 86400)" : "", optarg);
				return GOVCTL_EXIT_USAGE;
			}
			continue;
		}
		if (c == 'h') {
			ex_usage(stdout);
			return GOVCTL_EXIT_OK;
		}
		ex_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}
	if (optind + 1 != argc) {
		fprintf(stderr, optind < argc ? "govctl explain: one RUN, got more\n"
					      : "govctl explain: RUN is required\n");
		ex_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}
	if (x.to > 0 && x.to <= x.from) {
		fprintf(stderr, "govctl explain: --to must be after --from\n");
		return GOVCTL_EXIT_USAGE;
	}
	const char *run = argv[optind];
	char path[4200];
	struct stat st;
	if (stat(run, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(path, sizeof(path), "%s/decisions.jsonl", run);
	else
		snprintf(path, sizeof(path), "%s", run);
	struct declog_read_cb cb = { .header = on_header, .period = on_period };
	char err[512], *text = NULL;
	size_t text_len = 0;
	x.out = open_memstream(&text, &text_len);
	if (!x.out)
		return GOVCTL_EXIT_FAIL;
	int rc = declog_read(path, EXPLAIN_LOG_MAX_BYTES, &cb, &x, err, sizeof(err));
	if (rc)
		fprintf(stderr, "govctl explain: %s\n", err);
	else if (!x.periods)
		fprintf(stderr, "govctl explain: %s: no period between %.0f and %.0f s\n", path,
			x.from, x.to);
	else if (!x.with_why)
		fprintf(stderr, "govctl explain: %s: no period carries an explanation (\"why\"): "
				"controller %s gives none, or the log predates the key\n",
			path, x.head.controller);
	if (rc || !x.periods || !x.with_why) {
		fclose(x.out);
		free(text);
		return GOVCTL_EXIT_FAIL;
	}
	if (x.a.n && x.every > 0) {
		char l[48];
		row_label(l, sizeof(l), x.a.t0, x.a.t1);
		acc_print(x.out, &x.a, l);
	}
	acc_print(x.out, &x.total, "all");
	fclose(x.out);
	fputs(text, stdout);
	free(text);
	printf("busy: periods with work; clock: the clock asked for (MHz); model: the model's "
	       "median pick (MHz; beside the window search the lowest clock its window's tails, "
	       "scaled by the learned clock exponents, would still meet the targets at); "
	       "TBT/TTFT pred: the model's median predicted p99 (ms) at the clock asked for, risk "
	       "term included (the window search: the SLA window's tail scaled to it); TBT lowr: "
	       "at the next lower candidate (the search: one step down); lower: why that one lost, "
	       "most often (window: the search waits for its window to close); set by: the term that set "
	       "the clock, share of busy periods (docs/decision-log.md, \"why\"); 8-bit held by the "
	       "detection delay: share of periods a slice's open quality gate stayed shut because "
	       "its drift would be caught too late (quality[].detect_held_s); 8-bit held for the "
	       "other slices: share of periods a slice's open rung waited in BF16 until every "
	       "slice's was (quality[].mix_held)\n");
	return GOVCTL_EXIT_OK;
}
