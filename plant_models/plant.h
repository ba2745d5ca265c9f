/* The simulated plant: one scenario's device, server, workload, quality
 * model and events, advanced in virtual time. hal_sim.c is its only user in
 * the HAL. Deterministic for (scenario, seed). */
#ifndef GOVD_PLANT_PLANT_H
#define GOVD_PLANT_PLANT_H
#include <stdbool.h>
#include <stdint.h>

#include "common/rng.h"
#include "plant_models/device.h"
#include "plant_models/quality.h"
#include "plant_models/scenario.h"
#include "plant_models/server.h"
#include "plant_models/workload.h"

#define PLANT_TICK_S 0.01 /* physics / firmware / serving integration step */
#define PLANT_SHADOW_Q 256

/* What sensors report, after scenario sensor faults are applied. */
struct plant_readings {
	double t_s;
	double value[SENSOR_N]; /* C, W, MHz; NaN where FAULT_NAN; 0 where invalid */
	bool valid[SENSOR_N];   /* false on dropout / meter loss */
	double t_meas_s[SENSOR_N]; /* when the value was measured: t_s, or the
				    * dropout's start while a sensor gives nothing */
	double energy_j[3];     /* accel, memory, host counters (true) */
	double util;            /* busy share of the last tick */
	double power_limit_w;
	uint32_t throttle;
	uint64_t clamp_events;
	double clamp_time_s;
};

struct plant {
	const struct scenario *sc;  /* not owned */
	struct device dev;
	struct server *srv;
	enum server_kind srv_kind;
	struct workload *wl;
	struct trace *trace;
	struct quality_model q;
	struct rng rng_precision;
	double int8_frac[PLANT_MAX_SLICES];
	bool low_fp8[PLANT_MAX_SLICES];          /* plant_set_low_mode */
	double t_s;
	uint64_t tick;              /* t_s == tick * PLANT_TICK_S (no float drift) */
	struct request pending;     /* next arrival not yet due */
	bool have_pending;
	/* Shadow re-runs of this tick's sampled completions, submitted at the
	 * next tick's start (arrivals stay in time order); beyond the ring a
	 * re-run is not made and the sample still counts (shadow_lost). */
	struct request shadow_q[PLANT_SHADOW_Q];
	uint32_t n_shadow;
	uint64_t shadow_lost;
	size_t next_event;
	/* active faults and their end times per sensor */
	bool fault_active[SENSOR_N];
	enum fault_kind fault_kind[SENSOR_N];
	double fault_value[SENSOR_N], fault_stuck[SENSOR_N], fault_end_s[SENSOR_N];
	double fault_start_s[SENSOR_N];
	double load_scale_end_s;
	double inlet_end_s, cooling_end_s; /* timed environment steps revert here */
	double drift_end_s[PLANT_MAX_SLICES]; /* timed quality drifts revert here */
	double next_expiry_s;       /* earliest of the end times above (O(1) per tick) */
	double last_util;
	bool failed;                /* shutdown reached */
	char fail_reason[128];
};

int plant_create(const struct scenario *sc, uint64_t seed, struct plant **out,
		 struct diag_list *diags);
void plant_destroy(struct plant *p);
/* Advance to t_s in PLANT_TICK_S steps; ends on the first tick boundary at
 * or after t_s (so p->t_s >= t_s afterwards). Earlier times are a no-op. After
 * a thermal shutdown only the time moves (p->failed, p->fail_reason). */
void plant_advance_to(struct plant *p, double t_s);
void plant_read(const struct plant *p, struct plant_readings *out);
void plant_set_int8_fraction(struct plant *p, uint32_t slice, double frac);
/* The shadow rate a governor asked for on a slice (<= 0: the scenario's). */
void plant_set_shadow_rate(struct plant *p, uint32_t slice, double rate);
/* True INT8 (fp8: FP8) drop per slice right now (for breach accounting in
 * summaries). */
double plant_true_drop(const struct plant *p, uint32_t slice, bool fp8);
/* The slice's low mode: what its low-precision share (int8_frac) is served
 * in, FP8 (the ladder's first rung) or INT8. Shadow evaluation scores both
 * where the FP8 engine is loaded. -EOPNOTSUPP: FP8 without server.fp8_engine. */
int plant_set_low_mode(struct plant *p, uint32_t slice, bool fp8);

#endif
