/* The oracle: candidate grid, per-window feasibility and selection (pure),
 * the sim's forced-point windows, and a short end-to-end run that does not
 * depend on the number of workers. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "governor/controllers/controller.h"
#include "governor/sim/oracle.h"
#include "governor/policy/policy.h"
#include "governor/sim/sim.h"

static struct policy *load(const char *text)
{
	struct policy *p = NULL;
	struct diag_list d = { 0 };
	int rc = policy_load_string("t.yaml", text, strlen(text), &p, &d);
	if (rc)
		diag_print(&d, stdout);
	diag_clear(&d);
	assert_int_equal(rc, 0);
	return p;
}

static const char pol_text[] =
	"name: t\n"
	"control: {controller: static, period_ms: 500}\n"
	"sla: {window_s: 60, ttft_p99_ms: 2000, tbt_p99_ms: 100}\n"
	"thermal: {ceiling_c: 83}\n"
	"power: {cap_w: 600}\n"
	"frequency: {min_mhz: 600, max_mhz: 1500}\n"
	"precision: {modes: [bf16, int8], int8_max_fraction: 1}\n"
	"quality: {default_max_drop: 0.01}\n";

static struct hal_limits limits(void)
{
	struct hal_limits l = { 0 };
	l.clk_min_khz = 345000;
	l.clk_max_khz = l.clk_default_max_khz = 1980000;
	l.clk_step_khz = 15000;
	l.power_limit_min_mw = 200000;
	l.power_limit_max_mw = l.power_limit_default_mw = 700000;
	return l;
}

/* Two slices; chat drifts over the threshold at 900 s. */
static void scen(struct scenario *sc, struct scenario_event *ev)
{
	memset(sc, 0, sizeof(*sc));
	memset(ev, 0, sizeof(*ev));
	sc->n_slices = 3;
	snprintf(sc->slices[0].name, sizeof(sc->slices[0].name), "code");
	sc->slices[0].int8_drop = 0.004;
	snprintf(sc->slices[1].name, sizeof(sc->slices[1].name), "chat");
	sc->slices[1].int8_drop = 0.006;
	snprintf(sc->slices[2].name, sizeof(sc->slices[2].name), "math");
	sc->slices[2].int8_drop = 0.018;
	ev->at_s = 900;
	ev->kind = EV_QUALITY_DRIFT;
	ev->slice = 1;
	ev->value = 0.015;
	sc->events = ev;
	sc->n_events = 1;
}

static void test_grid(void **state)
{
	(void)state;
	struct policy *p = load(pol_text);
	struct hal_limits lim = limits();
	struct scenario sc;
	struct scenario_event ev;
	struct oracle_cand c[ORACLE_MAX_CANDIDATES];
	size_t n, fb;

	scen(&sc, &ev);
	assert_int_equal(oracle_grid(p, &lim, &sc, 150, 3, false, c, ORACLE_MAX_CANDIDATES, &n, &fb), 0);
	/* Precision sets: BF16, {code, chat} before the drift, {code} after. */
	uint32_t seen = 0;
	size_t per_set = 0, n_bf16 = 0;
	uint32_t lo = 600000, hi = 1500000;
	bool have_lo = false, have_hi = false;
	for (size_t i = 0; i < n; i++) {
		uint32_t m = c[i].int8_slices;
		assert_true(m == 0 || m == 0x3 || m == 0x1); /* math (1.8 %) never */
		seen |= 1u << m;
		n_bf16 += m == 0;
		for (size_t s = 0; s < 3; s++)
			assert_true(c[i].op.int8_frac[s] == ((m >> s) & 1 ? 1.0 : 0.0));
		assert_int_equal(c[i].op.n_slices, 3);
		assert_true(c[i].op.power_limit_mw <= 600000 && c[i].op.power_limit_mw >= 200000);
		if (c[i].op.clk_locked) {
			assert_true(c[i].op.clk_max_khz >= lo && c[i].op.clk_max_khz <= hi);
			assert_int_equal((c[i].op.clk_max_khz - 345000) % 15000, 0);
			have_lo |= c[i].op.clk_max_khz == lo;
			have_hi |= c[i].op.clk_max_khz == hi;
			assert_int_equal(c[i].op.power_limit_mw, 600000);
		}
		for (size_t k = 0; k < i; k++)
			assert_string_not_equal(c[i].name, c[k].name);
	}
	assert_int_equal(seen, (1u << 0) | (1u << 3) | (1u << 1));
	assert_true(have_lo && have_hi);
	per_set = n / 3;
	assert_int_equal(n_bf16, per_set);
	/* 900 MHz span in ~150 MHz steps: 7 locks; 3 power levels + the max. */
	assert_int_equal(per_set, 7 + 4);
	/* The fallback: clocks unlocked at the policy's cap, BF16. */
	assert_false(c[fb].op.clk_locked);
	assert_int_equal(c[fb].op.power_limit_mw, 600000);
	assert_int_equal(c[fb].int8_slices, 0);
	assert_string_equal(c[fb].name, "max-bf16");
	/* The DVFS-only limit: the same BF16 points, no INT8 set, same fallback. */
	struct oracle_cand c16[ORACLE_MAX_CANDIDATES];
	size_t n16, fb16;
	assert_int_equal(oracle_grid(p, &lim, &sc, 150, 3, true, c16, ORACLE_MAX_CANDIDATES, &n16,
				     &fb16), 0);
	assert_int_equal(n16, per_set);
	for (size_t i = 0; i < n16; i++)
		assert_int_equal(c16[i].int8_slices, 0);
	assert_string_equal(c16[fb16].name, "max-bf16");
	/* Too small an array. */
	assert_int_equal(oracle_grid(p, &lim, &sc, 150, 3, false, c, 5, &n, &fb), -E2BIG);
	policy_free(p);
	/* The precision ladder: with an FP8 engine and fp8 in the modes, math
	 * (INT8 1.8 %, FP8 0.5 %) joins the sets in FP8, and the FP8 engine alone
	 * is not enough without the policy's rung. */
	sc.server.fp8_engine = true;
	sc.slices[0].fp8_drop = 0.002;
	sc.slices[1].fp8_drop = 0.003;
	sc.slices[2].fp8_drop = 0.005;
	p = load(pol_text);
	assert_int_equal(oracle_grid(p, &lim, &sc, 150, 3, false, c, ORACLE_MAX_CANDIDATES, &n, &fb), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(c[i].fp8_slices, 0);
	policy_free(p);
	static const char ladder_text[] =
		"name: t\n"
		"control: {controller: static, period_ms: 500}\n"
		"sla: {window_s: 60, ttft_p99_ms: 2000, tbt_p99_ms: 100}\n"
		"power: {cap_w: 600}\n"
		"frequency: {min_mhz: 600, max_mhz: 1500}\n"
		"precision: {modes: [bf16, fp8, int8], int8_max_fraction: 1}\n"
		"quality: {default_max_drop: 0.01}\n";
	p = load(ladder_text);
	assert_int_equal(oracle_grid(p, &lim, &sc, 150, 3, false, c, ORACLE_MAX_CANDIDATES, &n, &fb), 0);
	bool have_math_fp8 = false;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(c[i].int8_slices & c[i].fp8_slices, 0);
		assert_false(c[i].int8_slices & 0x4); /* math never INT8 */
		if (c[i].fp8_slices == 0x4) {
			have_math_fp8 = true;
			assert_int_equal(c[i].op.low_mode[2], HAL_LOW_FP8);
			assert_int_equal(c[i].op.low_mode[0], HAL_LOW_INT8);
			assert_true(c[i].op.int8_frac[2] == 1.0);
			assert_non_null(strstr(c[i].name, "-f8:math"));
		}
	}
	assert_true(have_math_fp8);
	policy_free(p);

	/* A BF16-only policy has no INT8 candidates. */
	p = load("name: b\ncontrol: {controller: static}\nprecision: {modes: [bf16]}\n");
	assert_int_equal(oracle_grid(p, &lim, &sc, 0, ORACLE_NO_POWER_LEVELS, false, c,
				     ORACLE_MAX_CANDIDATES, &n, &fb),
			 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(c[i].int8_slices, 0);
	assert_string_equal(c[n - 1].name, "max-bf16");
	assert_int_equal(fb, n - 1);
	policy_free(p);
}

static struct sim_window win(uint64_t tokens, double energy_j)
{
	struct sim_window w = { 0 };
	w.tokens = tokens;
	w.energy_j[HAL_RAIL_ACCEL] = energy_j * 0.8;
	w.energy_j[HAL_RAIL_MEMORY] = energy_j * 0.1;
	w.energy_j[HAL_RAIL_HOST] = energy_j * 0.1;
	w.sla_met = true;
	w.max_junction_c = 60;
	return w;
}

static void test_feasible(void **state)
{
	(void)state;
	struct policy *p = load(pol_text);
	struct sim_window w = win(10, 10);

	assert_true(oracle_window_feasible(&w, p, 0, 0));
	w.sla_met = false;
	assert_false(oracle_window_feasible(&w, p, 0, 0));
	w = win(10, 10);
	w.max_junction_c = 83.01;
	assert_false(oracle_window_feasible(&w, p, 0, 0));
	w.max_junction_c = 83;
	assert_true(oracle_window_feasible(&w, p, 0, 0));
	w.clamp_events = 1;
	assert_false(oracle_window_feasible(&w, p, 0, 0));
	w = win(10, 10);
	w.clamp_time_s = 0.01; /* a clamp that began in an earlier window */
	assert_false(oracle_window_feasible(&w, p, 0, 0));
	w = win(10, 10);
	w.breach_requests = 1;
	assert_false(oracle_window_feasible(&w, p, 0, 0));
	w = win(10, 10);
	w.over_threshold = 0x2; /* slice 1 over its threshold: only a point serving it INT8 fails */
	assert_true(oracle_window_feasible(&w, p, 0x1, 0));
	assert_false(oracle_window_feasible(&w, p, 0x3, 0));
	/* FP8 is judged by its own drop: slice 1 served FP8 over INT8's threshold is fine,
	 * over FP8's it is not */
	assert_true(oracle_window_feasible(&w, p, 0x1, 0x2));
	w.over_threshold_fp8 = 0x2;
	assert_false(oracle_window_feasible(&w, p, 0x1, 0x2));
	assert_true(oracle_window_feasible(&w, p, 0x1, 0));
	w = win(10, 10);
	w.failed = true;
	assert_false(oracle_window_feasible(&w, p, 0, 0));
	/* Energy over the objective's rails only. */
	assert_true(fabs(oracle_window_energy(&w, POLICY_RAILS_ALL) - 10) < 1e-9);
	assert_true(fabs(oracle_window_energy(&w, POLICY_RAIL_BIT(HAL_RAIL_ACCEL)) - 8) < 1e-9);
	policy_free(p);
}

static void test_select(void **state)
{
	(void)state;
	struct policy *p = load(pol_text);
	enum { NC = 3, NW = 6 };
	struct oracle_cand cand[NC] = { 0 };
	struct oracle_pick pick[NW];
	struct oracle_cell cells[NC * NW] = { 0 };
	struct oracle_result r = { .n_cand = NC, .cand = cand, .n_windows = NW, .pick = pick,
				   .fallback = 2 };
#define CELL(c, w) cells[(c) * NW + (w)]
	for (size_t c = 0; c < NC; c++)
		for (size_t w = 0; w < NW; w++)
			CELL(c, w).present = true;
	/* w0: candidate 1 has the most tokens per joule. */
	CELL(0, 0).w = win(100, 100);
	CELL(1, 0).w = win(100, 80);
	CELL(2, 0).w = win(100, 120);
	/* w1: candidate 1 is better but hot (over the ceiling), 0 wins. */
	CELL(0, 1).w = win(100, 100);
	CELL(1, 1).w = win(100, 50);
	CELL(1, 1).w.max_junction_c = 90;
	CELL(2, 1).w = win(100, 120);
	/* w2: nothing safe: the fallback (2), and said so. */
	CELL(0, 2).w = win(100, 100);
	CELL(0, 2).w.sla_met = false;
	CELL(0, 2).w.max_junction_c = 85;
	CELL(1, 2).w = win(100, 50);
	CELL(1, 2).w.breach_requests = 3;
	CELL(2, 2).w = win(100, 120);
	CELL(2, 2).w.clamp_events = 1;
	/* w3: idle everywhere: least energy (candidate 0). */
	CELL(0, 3).w = win(0, 30);
	CELL(1, 3).w = win(0, 40);
	CELL(2, 3).w = win(0, 50);
	for (size_t c = 0; c < NC; c++)
		CELL(c, 3).w.idle = true;
	/* w4: candidate 1's run ended (absent); 0 and 2 tie on tokens/J: lower index. */
	CELL(0, 4).w = win(50, 50);
	CELL(1, 4).present = false;
	CELL(2, 4).w = win(100, 100);
	/* w5: nobody meets the SLA; of the safe ones 1 comes closest (0 has
	 * more tokens per joule, 2 is closer still but clamps). */
	CELL(0, 5).w = win(100, 50);
	CELL(0, 5).w.sla_ratio = 1.5;
	CELL(1, 5).w = win(120, 100);
	CELL(1, 5).w.sla_ratio = 1.2;
	CELL(2, 5).w = win(150, 100);
	CELL(2, 5).w.sla_ratio = 1.1;
	CELL(2, 5).w.clamp_events = 2;
	for (size_t c = 0; c < NC; c++)
		CELL(c, 5).w.sla_met = false;

	oracle_select(cells, p, &r);
	assert_int_equal(pick[0].cand, 1);
	assert_int_equal(pick[1].cand, 0);
	assert_int_equal(pick[2].cand, 2);
	assert_false(pick[2].feasible);
	assert_int_equal(pick[3].cand, 0);
	assert_int_equal(pick[4].cand, 0);
	assert_int_equal(pick[5].cand, 1);
	assert_true(pick[5].relaxed && !pick[5].feasible);
	assert_false(pick[2].relaxed);
	assert_int_equal(r.windows_feasible, 4);
	assert_int_equal(r.windows_relaxed, 1);
	assert_int_equal(r.windows_fallback, 1);
	assert_int_equal(r.windows_judged, 5);
	assert_int_equal(r.tokens, 100 + 100 + 100 + 0 + 50 + 120);
	double e = 80 + 100 + 120 + 30 + 50 + 100;
	assert_true(fabs(r.energy_all_j - e) < 1e-9);
	assert_true(fabs(r.tokens_per_joule - 470 / e) < 1e-12);
	assert_int_equal(r.clamp_events, 1); /* the fallback's clamp is counted */
	/* The honest limit: only the feasible windows 0, 1, 3, 4. */
	assert_int_equal(r.feasible_tokens, 100 + 100 + 0 + 50);
	assert_true(fabs(r.feasible_energy_all_j - (80 + 100 + 30 + 50)) < 1e-9);
	assert_true(fabs(r.tokens_per_joule_feasible_all_rails - 250.0 / 260) < 1e-12);
	assert_int_equal(cand[0].chosen + cand[1].chosen + cand[2].chosen, NW);
	assert_int_equal(cand[0].windows_feasible, 4);
	assert_int_equal(cand[1].windows_feasible, 2);
	assert_int_equal(cand[2].windows_feasible, 4);
	assert_int_equal(r.best_static, 0);
#undef CELL
	policy_free(p);
}

static const char *scenario = "configs/scenarios/quality-drift.yaml";

struct wsum {
	size_t n, tails;
	uint64_t tokens;
	double energy_j, last_end_s, max_tj_c;
	bool contiguous;
};

static void on_win(void *ctx, const struct sim_window *w)
{
	struct wsum *s = ctx;
	s->contiguous &= w->index == s->n && fabs(w->start_s - s->last_end_s) < 1e-9;
	s->last_end_s = w->end_s;
	s->n++;
	s->tails += w->tail;
	s->tokens += w->tokens;
	s->energy_j += oracle_window_energy(w, POLICY_RAILS_ALL);
	s->max_tj_c = fmax(s->max_tj_c, w->max_junction_c);
}

/* A forced point: windows tile the run and add up to its totals; the point
 * is what runs (a low clock lock runs cooler than unlocked clocks). */
static void test_forced_windows(void **state)
{
	(void)state;
	/* shipped with the repository: absent is a failure, not a skip */
	assert_int_equal(access(scenario, R_OK), 0);
	struct policy *p = load(pol_text);
	double maxtj[2];
	for (int k = 0; k < 2; k++) {
		struct gov_opoint op = { .clk_locked = k == 0, .clk_min_khz = 345000,
					 .clk_max_khz = k == 0 ? 600000 : 1980000,
					 .power_limit_mw = 700000, .n_slices = 2 };
		struct wsum s = { .contiguous = true };
		struct sim_opts o = { .scenario_path = scenario, .seed = 2, .have_seed = true,
				      .duration_s = 330, .no_output = true, .policy = p,
				      .force_op = &op, .on_window = on_win, .window_ctx = &s };
		struct sim_result r;
		struct diag_list d = { 0 };
		assert_int_equal(sim_run(&o, &r, &d), 0);
		diag_clear(&d);
		assert_true(s.contiguous);
		assert_int_equal(s.n, 6); /* 5 windows of 60 s + a 30 s tail */
		assert_int_equal(s.tails, 1);
		assert_true(fabs(s.last_end_s - 330) < 0.011);
		assert_int_equal(s.tokens, r.tokens_generated);
		assert_true(fabs((double)s.tokens / s.energy_j - r.tokens_per_joule) <
			    1e-9 * r.tokens_per_joule);
		assert_string_equal(r.out_dir, ""); /* forced runs write nothing */
		maxtj[k] = s.max_tj_c;
	}
	assert_true(maxtj[0] < maxtj[1]);
	policy_free(p);
}

static void test_oracle_run(void **state)
{
	(void)state;
	/* shipped with the repository: absent is a failure, not a skip */
	assert_int_equal(access(scenario, R_OK), 0);
	char tmpl[] = "/tmp/govd-oracle-XXXXXX";
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	char path[4200];
	snprintf(path, sizeof(path), "%s/p.yaml", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(pol_text, f);
	fclose(f);

	struct oracle_result r[2];
	for (int k = 0; k < 2; k++) {
		struct oracle_opts o = { .scenario_path = scenario, .policy_path = path, .seed = 4,
					 .have_seed = true, .duration_s = 1200, .jobs = k ? 3 : 1,
					 .clk_step_mhz = 300 };
		struct diag_list d = { 0 };
		int rc = oracle_run(&o, &r[k], &d);
		if (rc)
			diag_print(&d, stdout);
		diag_clear(&d);
		assert_int_equal(rc, 0);
	}
	/* Workers change nothing. */
	assert_int_equal(r[0].n_cand, r[1].n_cand);
	assert_int_equal(r[0].n_windows, r[1].n_windows);
	assert_int_equal(r[0].tokens, r[1].tokens);
	assert_true(r[0].tokens_per_joule == r[1].tokens_per_joule);
	for (size_t w = 0; w < r[0].n_windows; w++)
		assert_int_equal(r[0].pick[w].cand, r[1].pick[w].cand);

	const struct oracle_result *o = &r[0];
	assert_int_equal(o->n_windows, 20); /* 19 closed + the tail */
	assert_int_equal(o->windows_feasible + o->windows_relaxed + o->windows_fallback, o->n_windows);
	size_t chosen = 0;
	for (size_t c = 0; c < o->n_cand; c++) {
		chosen += o->cand[c].chosen;
		assert_false(o->cand[c].failed);
	}
	assert_int_equal(chosen, o->n_windows);
	assert_true(o->tokens_per_joule > 0);
	/* Quality: after the drift (900 s) no feasible pick serves chat in INT8;
	 * before it some pick does (INT8 on chat is the cheaper point). */
	bool chat_before = false;
	for (size_t w = 0; w < o->n_windows; w++) {
		const struct oracle_pick *p = &o->pick[w];
		uint32_t m = o->cand[p->cand].int8_slices;
		if (p->feasible && p->start_s >= 900)
			assert_false(m & 0x2);
		if (p->feasible && p->end_s <= 900 && !p->idle)
			chat_before |= (m & 0x2) != 0;
		if (p->feasible)
			assert_int_equal(p->breach_requests, 0);
	}
	assert_true(chat_before);
	json_t *j = oracle_json(o);
	assert_non_null(j);
	assert_true(json_is_object(json_object_get(j, "best_static")));
	assert_int_equal(json_array_size(json_object_get(j, "windows_chosen")), o->n_windows);
	json_decref(j);
	oracle_result_free(&r[0]);
	oracle_result_free(&r[1]);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grid),
		cmocka_unit_test(test_feasible),
		cmocka_unit_test(test_select),
		cmocka_unit_test(test_forced_windows),
		cmocka_unit_test(test_oracle_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
