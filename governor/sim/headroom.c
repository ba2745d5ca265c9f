/* Scenario headroom at fixed clocks: see headroom.h. */
#include "governor/sim/headroom.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/sla.h"
#include "governor/controllers/controller.h"
#include "governor/sim/sim.h"
#include "hal/hal.h"
#include "plant_models/scenario.h"

/* One whole run with the clock locked at khz (BF16 everywhere, max limit). */
static int run_at(const struct headroom_opts *o, const struct hal_limits *lim, size_t n_slices,
		  uint32_t khz, struct sim_result *r, struct diag_list *diags)
{
	struct gov_opoint op;
	memset(&op, 0, sizeof(op));
	op.clk_locked = true;
	op.clk_min_khz = lim->clk_min_khz;
	op.clk_max_khz = khz;
	op.power_limit_mw = lim->power_limit_max_mw;
	op.n_slices = n_slices;
	struct sim_opts so = {
		.scenario_path = o->scenario_path,
		.policy_path = o->policy_path,
		.seed = o->seed,
		.have_seed = o->have_seed,
		.duration_s = o->duration_s,
		.no_output = true,
		.force_op = &op,
	};
	memset(r, 0, sizeof(*r));
	int rc = sim_run(&so, r, diags);
	if (rc == 0 && r->failed)
		rc = -EIO;
	return rc;
}

static double attainment(const struct sim_result *r)
{
	return r->windows ? (double)r->windows_met / (double)r->windows : 1.0;
}

static double share(double p99_ms, double target_ms)
{
	return target_ms > 0 && isfinite(p99_ms) ? p99_ms / target_ms : NAN;
}

int headroom_measure(const struct headroom_opts *o, struct headroom *out,
		     struct diag_list *diags)
{
	struct scenario *sc = NULL;
	struct policy *pol = NULL;
	struct hal_limits lim;
	int rc = scenario_load(o->scenario_path, &sc, diags);
	int rc2 = policy_load(o->policy_path, &pol, diags);
	memset(out, 0, sizeof(*out));
	if (rc || rc2) {
		rc = rc ? rc : rc2;
		goto free_inputs;
	}
	out->seed = o->have_seed ? o->seed : sc->default_seed;
	snprintf(out->scenario, sizeof(out->scenario), "%s", sc->name);
	rc = sim_device_limits(sc, out->seed, &lim, diags);
	if (rc)
		goto free_inputs;
	size_t n_slices = sc->n_slices < HAL_MAX_SLICES ? sc->n_slices : HAL_MAX_SLICES;
	out->ttft_target_ms = pol->sla.latency_ms[SLA_INDEX(SLA_TTFT, SLA_P99)];
	out->tbt_target_ms = pol->sla.latency_ms[SLA_INDEX(SLA_TBT, SLA_P99)];
	out->goal = pol->sla.attainment;
	out->max_mhz = lim.clk_max_khz / 1000;
	out->min_mhz = lim.clk_min_khz / 1000;

	struct sim_result r;
	rc = run_at(o, &lim, n_slices, lim.clk_max_khz, &r, diags);
	out->runs++;
	if (rc)
		goto run_failed;
	out->ttft_p99_ms = r.quantile_ms[SLA_INDEX(SLA_TTFT, SLA_P99)];
	out->tbt_p99_ms = r.quantile_ms[SLA_INDEX(SLA_TBT, SLA_P99)];
	out->ttft_share = share(out->ttft_p99_ms, out->ttft_target_ms);
	out->tbt_share = share(out->tbt_p99_ms, out->tbt_target_ms);
	out->windows = r.windows;
	out->attainment_max = attainment(&r);
	if (out->attainment_max < out->goal - 1e-12)
		goto free_inputs; /* lowest_mhz 0: even the max clock misses */

	/* Bisection over table indices: hi meets the goal, lo - 1 is below. */
	uint32_t step = lim.clk_step_khz ? lim.clk_step_khz : 1000;
	uint32_t lo = 0, hi = (lim.clk_max_khz - lim.clk_min_khz) / step;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		rc = run_at(o, &lim, n_slices, lim.clk_min_khz + mid * step, &r, diags);
		out->runs++;
		if (rc == -EIO) {
			lo = mid + 1; /* shut down there: too low to count as met */
			rc = 0;
			continue;
		}
		if (rc)
			goto run_failed;
		if (attainment(&r) >= out->goal - 1e-12)
			hi = mid;
		else
			lo = mid + 1;
	}
	/* The top index may sit under the max when the range is not whole steps. */
	uint32_t low_khz = lim.clk_min_khz + hi * step;
	if (hi == (lim.clk_max_khz - lim.clk_min_khz) / step)
		low_khz = lim.clk_max_khz;
	out->lowest_mhz = low_khz / 1000;
	goto free_inputs;

run_failed:
	diag_add(diags, DIAG_ERROR, o->scenario_path, 0, 0, "", "headroom",
		 rc == -EIO ? "the plant shut down at the maximum clock" : "a run failed");
free_inputs:
	policy_free(pol);
	scenario_free(sc);
	return rc;
}
