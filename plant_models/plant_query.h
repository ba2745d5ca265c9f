/* What the simulator believes about one operating point: a step (decode
 * iteration, whole prefill or dynamic batch) run back to back at a locked
 * clock and/or under a power limit, in steady state (junction temperature
 * settled, the firmware's clock settled under the limit). The same step-cost
 * and power equations as the closed-loop plant (server_step_cost(),
 * device.c); `govctl plant` prints it. Pure, no I/O.
 * docs/plant-models.md, "The plant's predictions". */
#ifndef GOVD_PLANT_QUERY_H
#define GOVD_PLANT_QUERY_H
#include <stdbool.h>
#include <stdint.h>

#include "plant_models/device.h"
#include "plant_models/server.h"

struct plant_query {
	const struct plant_preset *preset;
	const struct model_spec *model;
	const struct serving_stack *stack; /* NULL: the model's default */
	bool int8;                         /* 8-bit engine (INT8/FP8) instead of BF16 */
	bool prefill;                      /* LLM: prefill of `batch` prompts, else decode */
	uint32_t batch, context, prompt;
	double inlet_c;
};

struct plant_point {
	uint32_t lock_mhz;       /* requested ceiling (max_mhz when unlocked) */
	uint32_t clock_mhz;      /* clock the firmware settles at */
	double power_limit_w;
	double step_ms;          /* decode: one iteration; prefill: the whole prompt(s) */
	double tokens_per_s;     /* decode: output tokens; prefill: prompt tokens */
	double power_accel_w, power_memory_w, power_host_w, power_w; /* power_w: the sum */
	double j_per_token;      /* power_w / tokens_per_s */
	double gpu_j_per_token;  /* (accel + memory) / tokens_per_s: what NVML energy counts */
	double tj_c;
	uint32_t throttle;       /* DEV_THR_POWER_CAP / DEV_THR_SW_THERMAL / DEV_THR_APP_CLOCKS */
	struct device_load load;
};

/* HBM the query's weights and KV cache need, bytes (0 for fixed-cost models). */
double plant_query_hbm_need_b(const struct plant_query *q);

/* Steady state at ceiling lock_mhz (snapped to the table; 0 = unlocked) under
 * limit_w (0 = the default TGP). -EINVAL on a bad query, a clock outside the
 * table or a limit outside the preset's range; -ENOSPC when weights and KV
 * (batch x context, or x prompt) do not fit 90 % of HBM. */
int plant_query_point(const struct plant_query *q, uint32_t lock_mhz, double limit_w,
		      struct plant_point *out);

#endif
