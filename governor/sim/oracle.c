/* The oracle (docs/oracle.md): every candidate static point runs the whole
 * scenario with perfect knowledge (ground truth, no telemetry), then each
 * SLA window takes the feasible candidate with the most tokens per joule. */
#include "governor/controllers/controller.h"
#include "governor/sim/oracle.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/strjoin.h"
#include "common/jsonx.h"
#include "hal/hal_sim.h"
#include "plant_models/plant.h"

static uint32_t safe_mask(const double *drop, const double *max_drop, size_t n_slices)
{
	uint32_t m = 0;
	for (size_t s = 0; s < n_slices; s++)
		if (drop[s] <= max_drop[s])
			m |= 1u << s;
	return m;
}

/* A set of slices served at 8 bits: int8 in INT8, fp8 in FP8 (disjoint). */
struct low_set {
	uint32_t int8, fp8;
};

/* The slices that may serve 8 bits at the drops given, and in which mode:
 * INT8 where the policy allows it and its true drop is within the
 * threshold, else FP8 where the policy's ladder has it (with an FP8 engine)
 * and FP8's is. */
static struct low_set safe_set(const double (*drop)[HAL_MAX_SLICES], const double *max_drop,
			       uint32_t allowed8, uint32_t allowedf, size_t n_slices)
{
	uint32_t i8 = safe_mask(drop[0], max_drop, n_slices) & allowed8;
	uint32_t f8 = safe_mask(drop[1], max_drop, n_slices) & allowedf & ~i8;
	return (struct low_set){ i8, f8 };
}

/* Distinct non-empty sets of slices (bit per scenario slice) that may serve
 * 8 bits at some time: the policy allows it and the slice's TRUE drop in that
 * mode is within its threshold at t = 0, after each quality drift, and
 * throughout. */
static size_t low_sets(const struct policy *pol, const struct scenario *sc, size_t n_slices,
		       struct low_set *sets, size_t max)
{
	double drop[2][HAL_MAX_SLICES], max_drop[HAL_MAX_SLICES];
	uint32_t allowed8 = 0, allowedf = 0;
	struct low_set cand[66];
	size_t nc = 0, n = 0;

	for (size_t s = 0; s < n_slices; s++) {
		struct policy_slice_rule r;
		policy_slice_rule(pol, sc->slices[s].name, &r);
		if (r.int8_allowed)
			allowed8 |= 1u << s;
		if (r.fp8_allowed && sc->server.fp8_engine)
			allowedf |= 1u << s;
		max_drop[s] = r.max_drop;
		drop[0][s] = sc->slices[s].int8_drop;
		drop[1][s] = sc->slices[s].fp8_drop;
	}
	struct low_set always = safe_set(drop, max_drop, allowed8, allowedf, n_slices);
	cand[nc++] = always;
	for (size_t e = 0; e < sc->n_events && nc < 65; e++) {
		const struct scenario_event *ev = &sc->events[e];
		if (ev->kind != EV_QUALITY_DRIFT || ev->slice >= n_slices)
			continue;
		double before = drop[ev->fp8][ev->slice];
		drop[ev->fp8][ev->slice] = ev->value;
		struct low_set m = safe_set(drop, max_drop, allowed8, allowedf, n_slices);
		cand[nc++] = m;
		always.int8 &= m.int8;
		always.fp8 &= m.fp8;
		if (ev->duration_s > 0)
			drop[ev->fp8][ev->slice] = before; /* a timed drift reverts */
	}
	cand[nc++] = always;
	for (size_t i = 0; i < nc && n < max; i++) {
		bool dup = !cand[i].int8 && !cand[i].fp8;
		for (size_t k = 0; k < n && !dup; k++)
			dup = sets[k].int8 == cand[i].int8 && sets[k].fp8 == cand[i].fp8;
		if (!dup)
			sets[n++] = cand[i];
	}
	return n;
}

static uint32_t snap_khz(uint32_t khz, uint32_t lo_khz, uint32_t step_khz)
{
	if (!step_khz || khz <= lo_khz)
		return khz < lo_khz ? lo_khz : khz;
	return lo_khz + (uint32_t)llround((double)(khz - lo_khz) / step_khz) * step_khz;
}

static void set_name(struct oracle_cand *c, const char *point, const struct scenario *sc,
		     size_t n_slices)
{
	char prec[64] = "bf16";

	if (c->int8_slices || c->fp8_slices) {
		prec[0] = '\0';
		const char *sep = "";
		for (int m = 0; m < 2; m++) {
			uint32_t set = m ? c->fp8_slices : c->int8_slices;
			if (!set)
				continue;
			strjoin_add(prec, sizeof(prec), sep, m ? "f8:" : "i8:");
			sep = "";
			for (size_t s = 0; s < n_slices; s++)
				if (set & (1u << s)) {
					strjoin_add(prec, sizeof(prec), sep, sc->slices[s].name);
					sep = "+";
				}
			sep = "-";
		}
	}
	snprintf(c->name, sizeof(c->name), "%s-%s", point, prec);
}

int oracle_grid(const struct policy *pol, const struct hal_limits *lim, const struct scenario *sc,
		double clk_step_mhz, unsigned power_levels, bool bf16_only, struct oracle_cand *out,
		size_t max, size_t *n, size_t *fallback)
{
	size_t n_slices = sc->n_slices < HAL_MAX_SLICES ? sc->n_slices : HAL_MAX_SLICES;
	struct low_set sets[1 + ORACLE_MAX_INT8_SETS] = { { 0, 0 } };
	size_t n_sets = 1 + (bf16_only ? 0 : low_sets(pol, sc, n_slices, sets + 1,
						       ORACLE_MAX_INT8_SETS));
	double frac[HAL_MAX_SLICES];

	for (size_t s = 0; s < n_slices; s++) {
		struct policy_slice_rule r;
		policy_slice_rule(pol, sc->slices[s].name, &r);
		frac[s] = r.int8_max_fraction;
	}
	if (clk_step_mhz <= 0)
		clk_step_mhz = ORACLE_DEFAULT_CLK_STEP_MHZ;
	if (power_levels == 0)
		power_levels = ORACLE_DEFAULT_POWER_LEVELS;
	else if (power_levels == ORACLE_NO_POWER_LEVELS)
		power_levels = 0;

	/* Clock locks over the range the policy and the device share. */
	uint32_t lo = lim->clk_min_khz, hi = lim->clk_max_khz;
	if (pol->frequency.min_mhz > 0 && gov_mhz_to_khz(pol->frequency.min_mhz) > lo)
		lo = gov_mhz_to_khz(pol->frequency.min_mhz);
	if (pol->frequency.max_mhz > 0 && gov_mhz_to_khz(pol->frequency.max_mhz) < hi)
		hi = gov_mhz_to_khz(pol->frequency.max_mhz);
	if (hi < lo)
		hi = lo;
	uint32_t clk[64];
	size_t n_clk = 0;
	long steps = lround((double)(hi - lo) / (clk_step_mhz * 1000.0));
	if (steps < 1)
		steps = 1;
	if (steps > 63)
		steps = 63;
	for (long i = 0; i <= steps; i++) {
		uint32_t k = i == steps ? hi
					: snap_khz(lo + (uint32_t)llround((double)(hi - lo) * i / steps),
						   lim->clk_min_khz, lim->clk_step_khz);
		if (k > hi)
			k = hi;
		if (n_clk == 0 || clk[n_clk - 1] != k)
			clk[n_clk++] = k;
	}
	/* Power limits with clocks unlocked, up to the policy's cap. */
	uint32_t pmax = lim->power_limit_default_mw;
	uint32_t cap = gov_w_to_mw(pol->power.cap_w);
	if (cap && cap < pmax)
		pmax = cap;
	uint32_t plo = lim->power_limit_min_mw;
	if (plo > pmax)
		plo = pmax;
	uint32_t pw[33];
	size_t n_pw = 0;
	if (power_levels > 32)
		power_levels = 32;
	for (unsigned i = 0; i < power_levels; i++) {
		/* Whole watts: names and the device's interface are in W. */
		uint32_t p = (uint32_t)(llround((plo + (double)(pmax - plo) * i / power_levels) / 1000.0) *
					1000);
		if (p < pmax && (n_pw == 0 || pw[n_pw - 1] != p))
			pw[n_pw++] = p;
	}
	pw[n_pw++] = pmax;

	size_t k = 0;
	*fallback = 0;
	for (size_t si = 0; si < n_sets; si++) {
		for (size_t i = 0; i < n_clk + n_pw; i++) {
			if (k == max)
				return -E2BIG;
			struct oracle_cand *c = &out[k];
			char point[32];
			memset(c, 0, sizeof(*c));
			c->int8_slices = sets[si].int8;
			c->fp8_slices = sets[si].fp8;
			c->op.n_slices = n_slices;
			for (size_t s = 0; s < n_slices; s++) {
				uint32_t b = 1u << s;
				c->op.int8_frac[s] = ((sets[si].int8 | sets[si].fp8) & b) ? frac[s] : 0;
				c->op.low_mode[s] = (sets[si].fp8 & b) ? HAL_LOW_FP8 : HAL_LOW_INT8;
			}
			if (i < n_clk) {
				c->op.clk_locked = true;
				c->op.clk_min_khz = lo;
				c->op.clk_max_khz = clk[i];
				c->op.power_limit_mw = pmax;
				c->clk_max_mhz = clk[i] / 1000.0;
				snprintf(point, sizeof(point), "clk%u", clk[i] / 1000u);
			} else {
				uint32_t p = pw[i - n_clk];
				c->op.clk_locked = false;
				c->op.clk_min_khz = lim->clk_min_khz;
				c->op.clk_max_khz = lim->clk_default_max_khz;
				c->op.power_limit_mw = p;
				if (p == pmax) {
					snprintf(point, sizeof(point), "max");
					if (si == 0)
						*fallback = k;
				} else {
					snprintf(point, sizeof(point), "pl%u", p / 1000u);
				}
			}
			c->power_limit_w = c->op.power_limit_mw / 1000.0;
			set_name(c, point, sc, n_slices);
			k++;
		}
	}
	*n = k;
	return 0;
}

double oracle_window_energy(const struct sim_window *w, uint32_t rails)
{
	double e = 0;
	for (int r = 0; r < HAL_RAIL_N; r++)
		if (rails & POLICY_RAIL_BIT(r))
			e += w->energy_j[r];
	return e;
}

bool oracle_window_safe(const struct sim_window *w, const struct policy *pol, uint32_t int8_slices,
			uint32_t fp8_slices)
{
	return !w->failed && w->clamp_events == 0 && w->clamp_time_s <= 0 &&
	       w->max_junction_c <= pol->thermal.ceiling_c && w->breach_requests == 0 &&
	       !(w->over_threshold & int8_slices) && !(w->over_threshold_fp8 & fp8_slices);
}

bool oracle_window_feasible(const struct sim_window *w, const struct policy *pol,
			    uint32_t int8_slices, uint32_t fp8_slices)
{
	return w->sla_met && oracle_window_safe(w, pol, int8_slices, fp8_slices);
}

/* a better than b (both feasible): more tokens per joule; with no tokens on
 * either side, less energy. */
static bool better(const struct sim_window *a, const struct sim_window *b, uint32_t rails)
{
	double ea = oracle_window_energy(a, rails), eb = oracle_window_energy(b, rails);
	if (a->tokens == 0 && b->tokens == 0)
		return ea < eb;
	/* tokens_a / ea > tokens_b / eb without dividing by a zero energy */
	return (double)a->tokens * eb > (double)b->tokens * ea;
}

void oracle_select(const struct oracle_cell *cells, const struct policy *pol,
		   struct oracle_result *r)
{
	uint32_t rails = pol->objective.rails;
	size_t nw = r->n_windows;

	r->windows_feasible = r->windows_relaxed = r->windows_fallback = r->windows_judged = 0;
	r->tokens = 0;
	r->energy_j = r->energy_all_j = 0;
	r->clamp_events = r->breach_requests = 0;
	r->feasible_tokens = 0;
	r->feasible_energy_j = r->feasible_energy_all_j = 0;
	for (size_t c = 0; c < r->n_cand; c++)
		r->cand[c].windows_feasible = r->cand[c].chosen = 0;
	for (size_t w = 0; w < nw; w++) {
		size_t best = SIZE_MAX;
		for (size_t c = 0; c < r->n_cand; c++) {
			const struct oracle_cell *x = &cells[c * nw + w];
			if (!x->present || !oracle_window_feasible(&x->w, pol, r->cand[c].int8_slices,
								    r->cand[c].fp8_slices))
				continue;
			r->cand[c].windows_feasible++;
			if (best == SIZE_MAX || better(&x->w, &cells[best * nw + w].w, rails))
				best = c;
		}
		struct oracle_pick *p = &r->pick[w];
		memset(p, 0, sizeof(*p));
		p->feasible = best != SIZE_MAX;
		for (size_t c = 0; !p->feasible && c < r->n_cand; c++) {
			const struct oracle_cell *x = &cells[c * nw + w];
			if (!x->present || !oracle_window_safe(&x->w, pol, r->cand[c].int8_slices,
								r->cand[c].fp8_slices))
				continue;
			/* Not the most tokens: a point working off its own backlog
			 * makes the most, and stitching would count that work twice. */
			const struct sim_window *b = best == SIZE_MAX ? NULL : &cells[best * nw + w].w;
			if (!b || x->w.sla_ratio < b->sla_ratio ||
			    (x->w.sla_ratio == b->sla_ratio && better(&x->w, b, rails)))
				best = c;
		}
		p->relaxed = !p->feasible && best != SIZE_MAX;
		p->cand = best != SIZE_MAX ? best : r->fallback;
		const struct oracle_cell *x = &cells[p->cand * nw + w];
		r->cand[p->cand].chosen++;
		r->windows_feasible += p->feasible;
		r->windows_relaxed += p->relaxed;
		r->windows_fallback += !p->feasible && !p->relaxed;
		if (!x->present)
			continue; /* the fallback itself ended early: the window adds nothing */
		p->start_s = x->w.start_s;
		p->end_s = x->w.end_s;
		p->tail = x->w.tail;
		p->idle = x->w.idle;
		p->tokens = x->w.tokens;
		p->energy_j = oracle_window_energy(&x->w, rails);
		p->energy_all_j = oracle_window_energy(&x->w, POLICY_RAILS_ALL);
		p->sla_met = x->w.sla_met;
		p->clamp_events = x->w.clamp_events;
		p->breach_requests = x->w.breach_requests;
		r->windows_judged += !p->idle;
		r->tokens += p->tokens;
		r->energy_j += p->energy_j;
		r->energy_all_j += p->energy_all_j;
		r->clamp_events += p->clamp_events;
		r->breach_requests += p->breach_requests;
		if (p->feasible && !p->tail) {
			r->feasible_tokens += p->tokens;
			r->feasible_energy_j += p->energy_j;
			r->feasible_energy_all_j += p->energy_all_j;
		}
	}
	r->tokens_per_joule_feasible =
		r->feasible_energy_j > 0 ? (double)r->feasible_tokens / r->feasible_energy_j : 0;
	r->tokens_per_joule_feasible_all_rails =
		r->feasible_energy_all_j > 0 ? (double)r->feasible_tokens / r->feasible_energy_all_j
					     : 0;
	r->demand_tokens = r->cand[r->fallback].tokens;
	r->tokens_per_joule = r->energy_j > 0 ? (double)r->tokens / r->energy_j : 0;
	r->tokens_per_joule_all_rails = r->energy_all_j > 0 ? (double)r->tokens / r->energy_all_j : 0;
	size_t bs = 0;
	for (size_t c = 1; c < r->n_cand; c++) {
		const struct oracle_cand *a = &r->cand[c], *b = &r->cand[bs];
		double ta = a->energy_j > 0 ? (double)a->tokens / a->energy_j : 0;
		double tb = b->energy_j > 0 ? (double)b->tokens / b->energy_j : 0;
		if (a->windows_feasible > b->windows_feasible ||
		    (a->windows_feasible == b->windows_feasible && ta > tb))
			bs = c;
	}
	r->best_static = bs;
}

/* Shared between the workers and the parent (MAP_SHARED): each candidate's
 * windows and status. */
struct run_out {
	int rc;
	bool done;
};

struct cell_sink {
	struct oracle_cell *row;
	size_t max;
};

static void store_window(void *ctx, const struct sim_window *w)
{
	struct cell_sink *k = ctx;
	if (w->index < k->max) {
		k->row[w->index].present = true;
		k->row[w->index].w = *w;
	}
}

static void run_candidate(const struct oracle_opts *o, const struct policy *pol,
			  const struct oracle_cand *c, uint64_t seed, struct oracle_cell *row,
			  size_t max_win, struct run_out *out)
{
	struct cell_sink sink = { .row = row, .max = max_win };
	struct sim_opts so = { .scenario_path = o->scenario_path, .seed = seed, .have_seed = true,
			       .duration_s = o->duration_s, .no_output = true, .policy = pol,
			       .force_op = &c->op, .on_window = store_window, .window_ctx = &sink };
	struct sim_result sr;
	struct diag_list d = { 0 };

	out->rc = sim_run(&so, &sr, &d);
	diag_clear(&d);
	out->done = true;
}

static int run_all(const struct oracle_opts *o, const struct policy *pol, struct oracle_result *r,
		   uint64_t seed, struct oracle_cell *cells, size_t max_win, struct run_out *outs)
{
	unsigned nw = o->jobs > 1 ? o->jobs : 1;
	if (nw > r->n_cand)
		nw = (unsigned)r->n_cand;
	if (nw <= 1) {
		for (size_t c = 0; c < r->n_cand; c++)
			run_candidate(o, pol, &r->cand[c], seed, &cells[c * max_win], max_win, &outs[c]);
		return 0;
	}
	pid_t pids[256];
	unsigned started = 0;
	int rc = 0;
	if (nw > 256)
		nw = 256;
	fflush(NULL);
	for (unsigned w = 0; w < nw; w++) {
		pid_t pid = fork();
		if (pid < 0) {
			rc = -errno;
			break;
		}
		if (pid == 0) {
			for (size_t c = w; c < r->n_cand; c += nw)
				run_candidate(o, pol, &r->cand[c], seed, &cells[c * max_win], max_win,
					      &outs[c]);
			_exit(0);
		}
		pids[started++] = pid;
	}
	for (unsigned w = 0; w < started; w++) {
		int st;
		while (waitpid(pids[w], &st, 0) < 0 && errno == EINTR)
			;
	}
	return rc;
}

int oracle_run(const struct oracle_opts *o, struct oracle_result *res, struct diag_list *diags)
{
	struct scenario *sc = NULL;
	struct policy *pol = NULL;
	struct hal_limits lim;
	struct oracle_cell *cells = MAP_FAILED;
	struct run_out *outs = MAP_FAILED;
	size_t cells_len = 0, outs_len = 0;
	int rc, rc2;

	memset(res, 0, sizeof(*res));
	rc = scenario_load(o->scenario_path, &sc, diags);
	rc2 = policy_load(o->policy_path, &pol, diags);
	if (rc || rc2) {
		rc = rc ? rc : rc2;
		goto err_load;
	}
	uint64_t seed = o->have_seed ? o->seed : sc->default_seed;
	double duration_s = o->duration_s > 0 ? o->duration_s : sc->duration_s;
	snprintf(res->scenario, sizeof(res->scenario), "%s", sc->name);
	snprintf(res->policy, sizeof(res->policy), "%s", pol->name);
	snprintf(res->policy_hash, sizeof(res->policy_hash), "%s", pol->hash_hex);
	res->seed = seed;
	res->window_s = pol->sla.window_s;
	res->ceiling_c = pol->thermal.ceiling_c;
	res->duration_s = duration_s;
	res->n_slices = sc->n_slices < HAL_MAX_SLICES ? sc->n_slices : HAL_MAX_SLICES;
	for (size_t s = 0; s < res->n_slices; s++)
		snprintf(res->slice_name[s], HAL_NAME_LEN, "%s", sc->slices[s].name);

	rc = sim_device_limits(sc, seed, &lim, diags);
	if (rc)
		goto err_load;
	res->cand = calloc(ORACLE_MAX_CANDIDATES, sizeof(*res->cand));
	if (!res->cand) {
		rc = -ENOMEM;
		goto err_load;
	}
	rc = oracle_grid(pol, &lim, sc, o->clk_step_mhz, o->power_levels, o->bf16_only, res->cand,
			 ORACLE_MAX_CANDIDATES, &res->n_cand, &res->fallback);
	if (rc) {
		diag_add(diags, DIAG_ERROR, pol->path, 0, 0, "", "oracle",
			 "more than %d candidate points: use a coarser clock step",
			 ORACLE_MAX_CANDIDATES);
		goto err_load;
	}
	/* Windows close at the first period at or after each boundary: one per
	 * window_s, plus the tail. */
	size_t max_win = (size_t)ceil(duration_s / pol->sla.window_s) + 2;
	cells_len = res->n_cand * max_win * sizeof(*cells);
	outs_len = res->n_cand * sizeof(*outs);
	cells = mmap(NULL, cells_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	outs = mmap(NULL, outs_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (cells == MAP_FAILED || outs == MAP_FAILED) {
		rc = -ENOMEM;
		goto err_map;
	}
	rc = run_all(o, pol, res, seed, cells, max_win, outs);
	if (rc) {
		diag_add(diags, DIAG_ERROR, o->scenario_path, 0, 0, "", "oracle",
			 "cannot start workers: %s", strerror(-rc));
		goto err_map;
	}
	size_t ok = 0;
	for (size_t c = 0; c < res->n_cand; c++) {
		struct oracle_cand *cd = &res->cand[c];
		const struct run_out *ro = &outs[c];
		if (!ro->done || ro->rc) {
			diag_add(diags, DIAG_WARNING, o->scenario_path, 0, 0, "", "oracle",
				 "candidate %s did not run: %s", cd->name,
				 ro->done ? strerror(-ro->rc) : "worker died");
			cd->failed = true;
			memset(&cells[c * max_win], 0, max_win * sizeof(*cells));
			continue;
		}
		ok++;
		for (size_t w = 0; w < max_win; w++) {
			const struct oracle_cell *x = &cells[c * max_win + w];
			if (!x->present)
				continue;
			if (w + 1 > res->n_windows)
				res->n_windows = w + 1;
			cd->tokens += x->w.tokens;
			cd->energy_j += oracle_window_energy(&x->w, pol->objective.rails);
			cd->energy_all_j += oracle_window_energy(&x->w, POLICY_RAILS_ALL);
			cd->failed |= x->w.failed;
		}
	}
	if (!ok) {
		diag_add(diags, DIAG_ERROR, o->scenario_path, 0, 0, "", "oracle", "no candidate ran");
		rc = -EIO;
		goto err_map;
	}
	/* Rows are max_win apart; select over the first n_windows of each. */
	struct oracle_cell *packed = malloc(res->n_cand * (res->n_windows ? res->n_windows : 1) *
					    sizeof(*packed));
	res->pick = calloc(res->n_windows ? res->n_windows : 1, sizeof(*res->pick));
	if (!packed || !res->pick) {
		free(packed);
		rc = -ENOMEM;
		goto err_map;
	}
	for (size_t c = 0; c < res->n_cand; c++)
		memcpy(&packed[c * res->n_windows], &cells[c * max_win],
		       res->n_windows * sizeof(*packed));
	oracle_select(packed, pol, res);
	free(packed);
	rc = 0;
err_map:
	if (cells != MAP_FAILED)
		munmap(cells, cells_len);
	if (outs != MAP_FAILED)
		munmap(outs, outs_len);
err_load:
	if (rc)
		oracle_result_free(res);
	policy_free(pol);
	scenario_free(sc);
	return rc;
}

void oracle_result_free(struct oracle_result *r)
{
	free(r->cand);
	free(r->pick);
	r->cand = NULL;
	r->pick = NULL;
	r->n_cand = r->n_windows = 0;
}

static json_t *int8_names(const struct oracle_result *r, uint32_t mask)
{
	json_t *a = json_array();
	for (size_t s = 0; s < r->n_slices; s++)
		if (mask & (1u << s))
			json_array_append_new(a, json_string(r->slice_name[s]));
	return a;
}

json_t *oracle_json(const struct oracle_result *r)
{
	json_t *o = json_object();
	const struct oracle_cand *bs = &r->cand[r->best_static];

	json_object_set_new(o, "scenario", json_string(r->scenario));
	json_object_set_new(o, "policy", json_string(r->policy));
	json_object_set_new(o, "policy_hash", json_string(r->policy_hash));
	json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
	json_object_set_new(o, "govd_version", json_string(GOVD_VERSION));
	json_object_set_new(o, "duration_s", jsonx_real(r->duration_s));
	json_object_set_new(o, "window_s", jsonx_real(r->window_s));
	json_object_set_new(o, "tokens_per_joule", jsonx_real(r->tokens_per_joule));
	json_object_set_new(o, "tokens_per_joule_all_rails", jsonx_real(r->tokens_per_joule_all_rails));
	json_object_set_new(o, "tokens", json_integer((json_int_t)r->tokens));
	json_object_set_new(o, "tokens_per_joule_feasible", jsonx_real(r->tokens_per_joule_feasible));
	json_object_set_new(o, "tokens_per_joule_feasible_all_rails",
			    jsonx_real(r->tokens_per_joule_feasible_all_rails));
	json_object_set_new(o, "feasible_tokens", json_integer((json_int_t)r->feasible_tokens));
	json_object_set_new(o, "feasible_energy_all_rails_j", jsonx_real(r->feasible_energy_all_j));
	json_object_set_new(o, "demand_tokens", json_integer((json_int_t)r->demand_tokens));
	json_object_set_new(o, "stitch_error",
			    jsonx_real(r->demand_tokens ? (double)r->tokens / (double)r->demand_tokens - 1
							: NAN));
	json_object_set_new(o, "energy_j", jsonx_real(r->energy_j));
	json_object_set_new(o, "energy_all_rails_j", jsonx_real(r->energy_all_j));
	json_object_set_new(o, "windows", json_integer((json_int_t)r->n_windows));
	json_object_set_new(o, "windows_judged", json_integer((json_int_t)r->windows_judged));
	json_object_set_new(o, "windows_feasible", json_integer((json_int_t)r->windows_feasible));
	json_object_set_new(o, "windows_relaxed", json_integer((json_int_t)r->windows_relaxed));
	json_object_set_new(o, "windows_fallback", json_integer((json_int_t)r->windows_fallback));
	json_object_set_new(o, "fallback_candidate", json_string(r->cand[r->fallback].name));
	json_object_set_new(o, "clamp_events", json_integer((json_int_t)r->clamp_events));
	json_object_set_new(o, "breach_requests", json_integer((json_int_t)r->breach_requests));

	json_t *b = json_object();
	json_object_set_new(b, "name", json_string(bs->name));
	json_object_set_new(b, "windows_feasible", json_integer((json_int_t)bs->windows_feasible));
	json_object_set_new(b, "tokens_per_joule",
			    jsonx_real(bs->energy_j > 0 ? (double)bs->tokens / bs->energy_j : 0));
	json_object_set_new(b, "tokens_per_joule_all_rails",
			    jsonx_real(bs->energy_all_j > 0 ? (double)bs->tokens / bs->energy_all_j : 0));
	json_object_set_new(o, "best_static", b);

	json_t *hist = json_object();
	json_t *cands = json_array();
	for (size_t c = 0; c < r->n_cand; c++) {
		const struct oracle_cand *cd = &r->cand[c];
		if (cd->chosen)
			json_object_set_new(hist, cd->name, json_integer((json_int_t)cd->chosen));
		json_t *j = json_object();
		json_object_set_new(j, "name", json_string(cd->name));
		json_object_set_new(j, "clk_locked", json_boolean(cd->op.clk_locked));
		json_object_set_new(j, "clk_max_mhz", jsonx_real(cd->op.clk_max_khz / 1000.0));
		json_object_set_new(j, "power_limit_w", jsonx_real(cd->power_limit_w));
		json_object_set_new(j, "int8_slices", int8_names(r, cd->int8_slices));
		if (cd->fp8_slices) /* the ladder's FP8 rung (an FP8 engine) */
			json_object_set_new(j, "fp8_slices", int8_names(r, cd->fp8_slices));
		json_object_set_new(j, "tokens", json_integer((json_int_t)cd->tokens));
		json_object_set_new(j, "tokens_per_joule",
				    jsonx_real(cd->energy_j > 0 ? (double)cd->tokens / cd->energy_j : 0));
		json_object_set_new(j, "windows_feasible", json_integer((json_int_t)cd->windows_feasible));
		json_object_set_new(j, "chosen", json_integer((json_int_t)cd->chosen));
		json_object_set_new(j, "failed", json_boolean(cd->failed));
		json_array_append_new(cands, j);
	}
	json_object_set_new(o, "chosen", hist);
	json_object_set_new(o, "candidates", cands);

	json_t *wins = json_array();
	for (size_t w = 0; w < r->n_windows; w++) {
		const struct oracle_pick *p = &r->pick[w];
		json_t *j = json_object();
		json_object_set_new(j, "start_s", jsonx_real(p->start_s));
		json_object_set_new(j, "end_s", jsonx_real(p->end_s));
		json_object_set_new(j, "candidate", json_string(r->cand[p->cand].name));
		json_object_set_new(j, "feasible", json_boolean(p->feasible));
		json_object_set_new(j, "relaxed", json_boolean(p->relaxed));
		json_object_set_new(j, "idle", json_boolean(p->idle));
		json_object_set_new(j, "tail", json_boolean(p->tail));
		json_object_set_new(j, "tokens", json_integer((json_int_t)p->tokens));
		json_object_set_new(j, "energy_j", jsonx_real(p->energy_j));
		json_array_append_new(wins, j);
	}
	json_object_set_new(o, "windows_chosen", wins);
	return o;
}
