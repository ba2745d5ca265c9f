#include "governor/sim/fleet_sim.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "governor/fleet/budget.h"
#include "governor/fleet/fleet_alloc.h"

const char *const fleet_policy_names[FLEET_POLICY_N] = { "static", "polca", "govd" };

/* ---- trace ---- */

static double parse_ts(const char *s, bool *ok)
{
	int y, mo, d, h, mi;
	double sec;
	*ok = sscanf(s, "%d-%d-%d %d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) == 6;
	if (!*ok)
		return 0;
	/* days from civil (proleptic Gregorian): only differences matter */
	y -= mo <= 2;
	long era = (y >= 0 ? y : y - 399) / 400;
	long yoe = y - era * 400;
	long doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	long days = era * 146097 + doe;
	return (double)days * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
}

int fleet_trace_load(const char *path, struct fleet_trace *t, struct diag_list *diags)
{
	FILE *f = fopen(path, "r");
	char line[512];
	double *ts = NULL, *w = NULL, t0 = 0, tmax = 0;
	size_t n = 0, cap = 0;
	int lineno = 0, rc = 0;

	memset(t, 0, sizeof(*t));
	if (!f) {
		rc = -errno;
		diag_add(diags, DIAG_ERROR, path, 0, 0, "", "io", "cannot open: %s", strerror(errno));
		return rc;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			diag_add(diags, DIAG_ERROR, path, lineno, 1, "", "range", "line longer than %zu",
				 sizeof(line) - 1);
			rc = -EINVAL;
			break;
		}
		if (lineno == 1 && !strncmp(line, "TIMESTAMP", 9))
			continue;
		char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
		bool ok = false;
		char *e1 = NULL, *e2 = NULL;
		double ctx = 0, gen = 0, tsv = 0;
		if (c1 && c2) {
			*c1 = '\0';
			tsv = parse_ts(line, &ok);
			ctx = strtod(c1 + 1, &e1);
			gen = strtod(c2 + 1, &e2);
			ok = ok && e1 == c2 && (*e2 == '\n' || *e2 == '\r' || *e2 == '\0') && ctx >= 0 &&
			     gen >= 0 && isfinite(ctx) && isfinite(gen);
		}
		if (!ok) {
			diag_add(diags, DIAG_ERROR, path, lineno, 1, "", "format",
				 "expected TIMESTAMP,ContextTokens,GeneratedTokens");
			rc = -EINVAL;
			break;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			double *a = realloc(ts, cap * sizeof(*a)), *b = a ? realloc(w, cap * sizeof(*b)) : NULL;
			if (a)
				ts = a;
			if (!a || !b) {
				rc = -ENOMEM;
				break;
			}
			w = b;
		}
		if (n == 0)
			t0 = tsv;
		if (tsv < t0) {
			diag_add(diags, DIAG_ERROR, path, lineno, 1, "", "order",
				 "timestamp before the first request");
			rc = -EINVAL;
			break;
		}
		if (tsv - t0 > 30 * 86400.0) {
			diag_add(diags, DIAG_ERROR, path, lineno, 1, "", "range", "trace longer than 30 days");
			rc = -EINVAL;
			break;
		}
		ts[n] = tsv - t0;
		w[n] = gen + ctx / 8.0;
		if (ts[n] > tmax)
			tmax = ts[n];
		n++;
	}
	fclose(f);
	if (!rc && n < 2) {
		diag_add(diags, DIAG_ERROR, path, lineno, 1, "", "empty", "fewer than two requests");
		rc = -EINVAL;
	}
	if (!rc) {
		t->n_s = (size_t)tmax + 1;
		t->work = calloc(t->n_s, sizeof(*t->work));
		if (!t->work)
			rc = -ENOMEM;
		double sum = 0;
		for (size_t i = 0; !rc && i < n; i++) {
			t->work[(size_t)ts[i]] += w[i];
			sum += w[i];
		}
		t->mean = sum / (double)t->n_s;
		t->n_requests = n;
	}
	free(ts);
	free(w);
	if (rc)
		fleet_trace_free(t);
	return rc;
}

void fleet_trace_free(struct fleet_trace *t)
{
	free(t->work);
	memset(t, 0, sizeof(*t));
}

/* ---- model ---- */

void fleet_sim_defaults(struct fleet_sim_cfg *c)
{
	*c = (struct fleet_sim_cfg){
		.nodes = 125, .per_node = 8, .hours = 24, .step_s = 10,
		.budget_w = 125 * 8 * 420.0, /* provisioned at 420 W an accelerator */
		.idle_w = 90, .min_w = 200, .max_w = 700,
		.mean_util = 0.3, .diurnal_amp = 0.5, .phase_spread_h = 4, .high_share = 0.5,
		.sla_delay_s = 2.0,
		.polca_t1 = 0.85, .polca_t2 = 0.95, .polca_low = 0.75, .polca_step = 0.05,
		.seed = 1,
	};
}

/* Throughput (share of full-power capacity) at a power cap (share of
 * max_w): compute-bound clock sweeps, shared/data/README.md (A100-SXM
 * GPT-3 stages, V100 DGEMM): power 0.50/0.56/0.64/0.84/1.0 of max-clock
 * power at throughput 0.65/0.75/0.85/0.95/1.0; zero at idle power. */
static const double curve_p[] = { 0.50, 0.56, 0.64, 0.84, 1.0 };
static const double curve_t[] = { 0.65, 0.75, 0.85, 0.95, 1.0 };
#define CURVE_N 5

static double thr_at(double p, double idle)
{
	if (p <= idle)
		return 0;
	if (p < curve_p[0])
		return curve_t[0] * (p - idle) / (curve_p[0] - idle);
	for (int i = 1; i < CURVE_N; i++)
		if (p <= curve_p[i])
			return curve_t[i - 1] + (curve_t[i] - curve_t[i - 1]) * (p - curve_p[i - 1]) /
							(curve_p[i] - curve_p[i - 1]);
	return 1.0;
}

static double power_for(double thr, double idle)
{
	if (thr <= 0)
		return idle;
	if (thr < curve_t[0])
		return idle + (curve_p[0] - idle) * thr / curve_t[0];
	for (int i = 1; i < CURVE_N; i++)
		if (thr <= curve_t[i])
			return curve_p[i - 1] + (curve_p[i] - curve_p[i - 1]) * (thr - curve_t[i - 1]) /
							(curve_t[i] - curve_t[i - 1]);
	return 1.0;
}

struct acc {
	double q;       /* backlog, work units (the node's, in its first accelerator) */
	double cap_w;   /* power cap in force */
	double need_w;  /* what it asks for next step */
	size_t off;     /* its start in the trace, s */
};

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* govd's allocator over the nodes (two rounds a step: the real one runs
 * every 500 ms, so a lowered node acknowledges within a step), then each
 * node's grant divided among its accelerators as govd divides it. */
static void govd_caps(const struct fleet_sim_cfg *c, struct acc *a, const bool *high,
		      struct fleet_rec *rec, uint64_t *grant, uint64_t *tgt, uint64_t *w,
		      uint64_t budget_mw, const struct fleet_params *pfp)
{
	size_t N = c->nodes, M = c->per_node;
	const struct fleet_params fp = *pfp;
	for (size_t i = 0; i < N; i++) {
		double need = 0;
		for (size_t j = 0; j < M; j++)
			need += a[i * M + j].need_w;
		rec[i] = (struct fleet_rec){
			.floor_mw = (uint64_t)(M * c->min_w * 1000.0),
			.max_mw = (uint64_t)(M * c->max_w * 1000.0),
			.demand_mw = (uint64_t)(need * 1000.0),
			.applied_mw = grant[i] == FLEET_NO_GRANT ? 0 : grant[i],
			.priority = high[i],
		};
	}
	for (int round = 0; round < 2; round++) {
		struct fleet_target_result tr;
		fleet_target(budget_mw, rec, N, grant, &fp, tgt, &tr);
		/* nodes acknowledge at once here: no exposure carried */
		fleet_phase(budget_mw, rec, N, grant, NULL, tgt, w, NULL);
		for (size_t i = 0; i < N; i++) {
			grant[i] = w[i];
			rec[i].applied_mw = w[i];
		}
	}
	for (size_t i = 0; i < N; i++) {
		struct budget_actor ba[BUDGET_MAX_DEVICES];
		struct budget_result br;
		for (size_t j = 0; j < M; j++)
			ba[j] = (struct budget_actor){
				.min_mw = (uint32_t)(c->min_w * 1000.0),
				.max_mw = (uint32_t)(c->max_w * 1000.0),
				.request_mw = (uint32_t)(a[i * M + j].need_w * 1000.0),
				.weight = 1.0 };
		budget_divvy(grant[i], ba, M, &br);
		for (size_t j = 0; j < M; j++)
			a[i * M + j].cap_w = (double)br.granted_mw[j] / 1000.0;
	}
}

int fleet_sim_run(const struct fleet_sim_cfg *c, const struct fleet_trace *t, enum fleet_policy p,
		  struct fleet_sim_result *out)
{
	memset(out, 0, sizeof(*out));
	size_t N = c->nodes, M = c->per_node, A = N * M;
	if (!N || !M || M > BUDGET_MAX_DEVICES || N > FLEET_MAX_NODES || !(c->step_s >= 1) ||
	    !(c->hours > 0) || !(c->min_w > c->idle_w) || !(c->max_w >= c->min_w) || !(c->budget_w > 0) ||
	    !(c->mean_util > 0) || !t->n_s || (size_t)c->step_s > t->n_s)
		return -EINVAL;
	size_t steps = (size_t)(c->hours * 3600.0 / c->step_s), dt = (size_t)c->step_s;
	struct acc *a = calloc(A, sizeof(*a));
	double *prefix = calloc(t->n_s + 1, sizeof(*prefix)), *phase = calloc(N, sizeof(*phase));
	bool *high = calloc(N, sizeof(*high));
	struct fleet_rec *rec = calloc(N, sizeof(*rec));
	uint64_t *grant = calloc(N, sizeof(*grant)), *tgt = calloc(N, sizeof(*tgt)),
		 *w = calloc(N, sizeof(*w));
	int rc = 0;
	if (!a || !prefix || !phase || !high || !rec || !grant || !tgt || !w) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t s = 0; s < t->n_s; s++)
		prefix[s + 1] = prefix[s] + t->work[s];
	struct rng g;
	rng_seed(&g, c->seed);
	/* capacity at full power: the trace's mean is mean_util of it */
	const double cmax = t->mean / c->mean_util; /* work units / s */
	const double idle = c->idle_w / c->max_w;
	for (size_t i = 0; i < N; i++) {
		phase[i] = (rng_uniform(&g) * 2 - 1) * c->phase_spread_h;
		high[i] = rng_uniform(&g) < c->high_share;
		size_t node_off = (size_t)(rng_uniform(&g) * (double)t->n_s);
		for (size_t j = 0; j < M; j++) {
			struct acc *x = &a[i * M + j];
			x->off = (node_off + j * t->n_s / M) % t->n_s;
			x->cap_w = c->max_w;
			x->need_w = c->max_w;
		}
		grant[i] = FLEET_NO_GRANT;
	}
	const uint64_t budget_mw = (uint64_t)(c->budget_w * 1000.0);
	const struct fleet_params fp = FLEET_PARAMS_DEFAULT;
	double lp_cap = c->max_w, hp_cap = c->max_w, last_draw = 0, draw_sum = 0;
	double off_hp = 0, off_lp = 0, late_hp = 0, late_lp = 0, srv_hp = 0, srv_lp = 0;
	for (size_t k = 0; k < steps; k++) {
		double tsec = (double)(k * dt);
		/* caps for this step, from what the policy knew at its end */
		if (p == FLEET_STATIC) {
			double cap = clampd(c->budget_w / (double)A, c->min_w, c->max_w);
			for (size_t x = 0; x < A; x++)
				a[x].cap_w = cap;
		} else if (p == FLEET_POLCA) {
			double st = c->polca_step * c->max_w, B = c->budget_w;
			if (last_draw > c->polca_t2 * B) {
				hp_cap = fmax(c->min_w, hp_cap - st);
				lp_cap = fmax(c->min_w, lp_cap - st);
			} else if (last_draw > c->polca_t1 * B) {
				lp_cap = fmax(c->min_w, lp_cap - st);
			} else if (last_draw < c->polca_low * B) {
				if (hp_cap < c->max_w)
					hp_cap = fmin(c->max_w, hp_cap + st);
				else
					lp_cap = fmin(c->max_w, lp_cap + st);
			}
			for (size_t i = 0; i < N; i++)
				for (size_t j = 0; j < M; j++)
					a[i * M + j].cap_w = high[i] ? hp_cap : lp_cap;
		} else {
			govd_caps(c, a, high, rec, grant, tgt, w, budget_mw, &fp);
		}
		double draw = 0;
		for (size_t i = 0; i < N; i++) {
			double mult = 1 + c->diurnal_amp *
					      sin(2 * M_PI * ((tsec / 3600.0 - phase[i]) / 24.0 - 0.25));
			/* one queue a node, its accelerators load-balanced: each
			 * brings its own slice of the trace, all share the work */
			double arr = 0, K = 0;
			for (size_t j = 0; j < M; j++) {
				struct acc *x = &a[i * M + j];
				size_t s0 = (x->off + k * dt) % t->n_s, s1 = s0 + dt;
				arr += s1 <= t->n_s ? prefix[s1] - prefix[s0]
						    : prefix[t->n_s] - prefix[s0] + prefix[s1 - t->n_s];
				K += cmax * thr_at(x->cap_w / c->max_w, idle) * (double)dt;
			}
			arr *= mult;
			struct acc *nq = &a[i * M]; /* the node's queue lives in its first accelerator */
			double have = nq->q + arr, served = fmin(have, K);
			nq->q = have - served;
			double u = K > 0 ? served / K : 0;
			for (size_t j = 0; j < M; j++)
				draw += c->idle_w + (fmax(a[i * M + j].cap_w, c->idle_w) - c->idle_w) * u;
			bool late = K <= 0 ? nq->q > 0 : nq->q / (K / (double)dt) > c->sla_delay_s;
			if (high[i]) {
				off_hp += arr;
				srv_hp += served;
				late_hp += late ? arr : 0;
			} else {
				off_lp += arr;
				srv_lp += served;
				late_lp += late ? arr : 0;
			}
			/* next step: serve what came plus the backlog, 10 % margin */
			double needf = (arr + nq->q) / (cmax * (double)(dt * M));
			double need = clampd(1.1 * power_for(fmin(1, needf), idle) * c->max_w, c->min_w,
					     c->max_w);
			for (size_t j = 0; j < M; j++)
				a[i * M + j].need_w = need;
		}
		/* a sum within a milliwatt per accelerator is rounding */
		if (draw > c->budget_w + 1e-3 * (double)A)
			out->over_budget_steps++;
		if (draw > out->max_draw_w)
			out->max_draw_w = draw;
		draw_sum += draw;
		last_draw = draw;
	}
	out->hp_loss = off_hp > 0 ? late_hp / off_hp : 0;
	out->lp_loss = off_lp > 0 ? late_lp / off_lp : 0;
	out->hp_served = off_hp > 0 ? srv_hp / off_hp : 1;
	out->lp_served = off_lp > 0 ? srv_lp / off_lp : 1;
	out->mean_draw_w = steps ? draw_sum / (double)steps : 0;
	out->steps = steps;
	out->accelerators = A;
out:
	free(a);
	free(prefix);
	free(phase);
	free(high);
	free(rec);
	free(grant);
	free(tgt);
	free(w);
	return rc;
}

static bool fits(const struct fleet_sim_cfg *c, const struct fleet_trace *t, enum fleet_policy p,
		 size_t nodes, double max_loss, struct fleet_sim_result *r)
{
	struct fleet_sim_cfg x = *c;
	x.nodes = nodes;
	return fleet_sim_run(&x, t, p, r) == 0 && r->hp_loss <= max_loss && r->over_budget_steps == 0;
}

size_t fleet_sim_fit(const struct fleet_sim_cfg *c, const struct fleet_trace *t, enum fleet_policy p,
		     double max_loss, size_t max_nodes, struct fleet_sim_result *at_fit)
{
	struct fleet_sim_result r;
	size_t lo = 0, hi = max_nodes; /* fits(lo) (0 trivially), find the last that fits */
	memset(at_fit, 0, sizeof(*at_fit));
	if (max_nodes > FLEET_MAX_NODES)
		hi = FLEET_MAX_NODES;
	if (fits(c, t, p, hi, max_loss, &r)) {
		*at_fit = r;
		return hi;
	}
	/* invariant: lo fits (or is 0), hi does not; a run with more nodes
	 * under the same budget is assumed no better (checked by the caller's
	 * printout, not here) */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (fits(c, t, p, mid, max_loss, &r)) {
			lo = mid;
			*at_fit = r;
		} else {
			hi = mid;
		}
	}
	return lo;
}
