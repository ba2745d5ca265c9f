/* Steady-state operating point of the plant (plant_query.h). The clock the
 * firmware settles at is the highest table clock at or below the ceiling
 * whose steady accelerator power fits the limit and, above the software
 * thermal floor, whose junction stays under the software thermal target; the
 * closed-loop firmware dithers around that point (its mean power sits at the
 * limit, this point just under it). */
#include "plant_models/plant_query.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define TJ_ITERS 40

/* Rails and junction temperature of back-to-back steps at clock f. */
static int eval(const struct plant_query *q, uint32_t f, struct plant_point *o)
{
	const struct plant_preset *p = q->preset;
	struct step_cost c;
	int rc = server_step_cost(q->model, q->stack, p, q->int8, q->prefill, q->batch, q->context,
				  q->prompt, f, &c);
	if (rc < 0)
		return rc;
	const struct thermal_params *t = &p->thermal;
	double pm = power_memory_w(p, c.load.mem_tbps);
	double tj = q->inlet_c, pa = 0;
	/* Leakage rises with Tj and Tj with power: a contraction at these sizes. */
	for (int i = 0; i < TJ_ITERS; i++) {
		pa = power_accel_w(p, f, c.load.activity, c.load.busy, tj) +
		     power_uncore_w(p, c.load.mem_tbps, f);
		tj = q->inlet_c + (pa + pm) * t->r_ha_k_per_w + pa * t->r_jh_k_per_w;
	}
	o->clock_mhz = f;
	o->step_ms = c.step_s * 1e3;
	o->tokens_per_s = c.tokens / c.step_s;
	o->power_accel_w = pa;
	o->power_memory_w = pm;
	o->power_host_w = power_host_w(p, c.load.host_busy);
	o->power_w = pa + pm + o->power_host_w;
	o->j_per_token = o->power_w / o->tokens_per_s;
	o->gpu_j_per_token = (pa + pm) / o->tokens_per_s;
	o->tj_c = tj;
	o->load = c.load;
	return 0;
}

double plant_query_hbm_need_b(const struct plant_query *q)
{
	const struct model_spec *m = q->model;
	if (m->kind != SERVER_LLM)
		return 0;
	double kvb = q->int8 && m->kv_bytes_per_token_int8 > 0 ? m->kv_bytes_per_token_int8
							      : m->kv_bytes_per_token;
	double tokens = (double)q->batch * (q->prefill ? q->prompt : q->context);
	return m->params_b * 1e9 * (q->int8 ? 1.0 : 2.0) + kvb * tokens;
}

int plant_query_point(const struct plant_query *q, uint32_t lock_mhz, double limit_w,
		      struct plant_point *out)
{
	if (!q || !q->preset || !q->model || !out || q->batch == 0)
		return -EINVAL;
	const struct plant_preset *p = q->preset;
	const struct dvfs_params *v = &p->dvfs;
	if (limit_w == 0)
		limit_w = p->power.tgp_default_w;
	if (!(limit_w >= p->power.tgp_min_w && limit_w <= p->power.tgp_max_w))
		return -EINVAL;
	if (lock_mhz != 0 && (lock_mhz < v->min_mhz || lock_mhz > v->max_mhz))
		return -EINVAL;
	if (q->model->kind == SERVER_LLM && plant_query_hbm_need_b(q) > p->hbm_gb * 1e9 * 0.9)
		return -ENOSPC;
	uint32_t ceil = lock_mhz ? dvfs_snap_mhz(v, lock_mhz) : v->max_mhz;
	memset(out, 0, sizeof(*out));
	uint32_t thr = ceil < v->max_mhz ? DEV_THR_APP_CLOCKS : 0;
	for (uint32_t f = ceil;; f -= v->step_mhz) {
		int rc = eval(q, f, out);
		if (rc < 0)
			return rc;
		bool over = out->power_accel_w > limit_w;
		bool hot = out->tj_c > p->fw.sw_thermal_target_c && f > p->fw.sw_floor_mhz;
		if ((!over && !hot) || f < v->min_mhz + v->step_mhz)
			break;
		thr |= over ? DEV_THR_POWER_CAP : DEV_THR_SW_THERMAL;
	}
	out->lock_mhz = ceil;
	out->power_limit_w = limit_w;
	out->throttle = thr;
	return 0;
}
