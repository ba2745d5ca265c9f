/* The composite plant: scenario events, arrivals, serving, device, sensors,
 * stepped in PLANT_TICK_S ticks. Semantics and the per-tick order are in
 * docs/hal.md ("The sim backend"). */
#include "plant_models/plant.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rng_fork stream ids: fixed so that adding a consumer never moves another. */
enum { STREAM_WORKLOAD = 1, STREAM_QUALITY = 2, STREAM_PRECISION = 3 };

/* Half a tick: event times and targets land on the nearest tick boundary
 * instead of being pushed one tick late by float rounding. */
#define TICK_EPS_S (PLANT_TICK_S * 1e-6)

static void names_list(char *buf, size_t len, const char *const *names)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; names && names[i] && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

static double end_of(const struct scenario_event *e)
{
	return e->duration_s > 0 ? e->at_s + e->duration_s : INFINITY;
}

static void update_next_expiry(struct plant *p)
{
	double m = p->load_scale_end_s;
	if (p->inlet_end_s < m)
		m = p->inlet_end_s;
	if (p->cooling_end_s < m)
		m = p->cooling_end_s;
	for (uint32_t i = 0; i < p->q.n_slices; i++)
		if (p->drift_end_s[i] < m)
			m = p->drift_end_s[i];
	for (int s = 0; s < SENSOR_N; s++)
		if (p->fault_active[s] && p->fault_end_s[s] < m)
			m = p->fault_end_s[s];
	p->next_expiry_s = m;
}

static double true_value(const struct plant *p, enum sensor_id s)
{
	switch (s) {
	case SENSOR_JUNCTION: return p->dev.tj_c;
	case SENSOR_MEMORY_TEMP: return p->dev.tmem_c + p->sc->memory_c_offset;
	case SENSOR_INLET: return p->dev.inlet_c;
	case SENSOR_POWER_ACCEL: return p->dev.power_w;
	case SENSOR_POWER_MEMORY: return p->dev.mem_power_w;
	case SENSOR_POWER_HOST: return p->dev.host_power_w;
	case SENSOR_CLOCK: return (double)p->dev.clk_mhz;
	case SENSOR_N: break;
	}
	assert(!"sensor id out of range");
	return 0;
}

static void start_fault(struct plant *p, enum sensor_id s, enum fault_kind k, double value,
			double end_s)
{
	assert((unsigned)s < SENSOR_N);
	p->fault_active[s] = true;
	p->fault_kind[s] = k;
	p->fault_value[s] = value;
	p->fault_stuck[s] = true_value(p, s);
	p->fault_start_s[s] = p->t_s;
	p->fault_end_s[s] = end_s;
}

static void apply_event(struct plant *p, const struct scenario_event *e)
{
	double end = end_of(e);
	switch (e->kind) {
	case EV_INLET_C:
		p->dev.inlet_c = e->value;
		p->inlet_end_s = end;
		break;
	case EV_COOLING:
		p->dev.cooling_factor = e->value;
		p->cooling_end_s = end;
		break;
	case EV_LOAD_SCALE:
		workload_set_rate_scale(p->wl, p->t_s, e->value);
		p->load_scale_end_s = end;
		break;
	case EV_QUALITY_DRIFT:
		assert(e->slice < p->q.n_slices);
		if (e->fp8)
			quality_set_drop_fp8(&p->q, e->slice, e->value);
		else
			quality_set_drop(&p->q, e->slice, e->value);
		p->drift_end_s[e->slice] = end;
		break;
	case EV_SENSOR_FAULT:
		start_fault(p, e->sensor, e->fault, e->value, end);
		break;
	case EV_METER_LOSS:
		/* The meter gives nothing: same as a dropout of that rail's sensor. */
		start_fault(p, e->sensor, FAULT_DROPOUT, 0, end);
		break;
	}
}

static void expire(struct plant *p)
{
	double t = p->t_s + TICK_EPS_S;
	if (p->load_scale_end_s <= t) {
		workload_set_rate_scale(p->wl, p->t_s, 1.0);
		p->load_scale_end_s = INFINITY;
	}
	if (p->inlet_end_s <= t) {
		p->dev.inlet_c = p->sc->inlet_c;
		p->inlet_end_s = INFINITY;
	}
	if (p->cooling_end_s <= t) {
		p->dev.cooling_factor = p->sc->cooling_factor > 0 ? p->sc->cooling_factor : 1.0;
		p->cooling_end_s = INFINITY;
	}
	for (uint32_t i = 0; i < p->q.n_slices; i++) {
		if (p->drift_end_s[i] <= t) {
			quality_set_drop(&p->q, i, p->sc->slices[i].int8_drop);
			quality_set_drop_fp8(&p->q, i, p->sc->slices[i].fp8_drop);
			p->drift_end_s[i] = INFINITY;
		}
	}
	for (int s = 0; s < SENSOR_N; s++)
		if (p->fault_active[s] && p->fault_end_s[s] <= t)
			p->fault_active[s] = false;
}

/* Events due at or before now, then whatever ended by now. A timed event
 * that starts and ends within one call still ends here, after it started. */
static void apply_due(struct plant *p)
{
	double t = p->t_s + TICK_EPS_S;
	bool changed = false;
	while (p->next_event < p->sc->n_events && p->sc->events[p->next_event].at_s <= t) {
		apply_event(p, &p->sc->events[p->next_event++]);
		changed = true;
	}
	if (changed || p->next_expiry_s <= t) {
		expire(p);
		update_next_expiry(p);
	}
}

static void on_done(void *ctx, const struct request *r, double t_done_s)
{
	(void)t_done_s;
	struct plant *p = ctx;
	if (r->shadow)
		return;
	/* Shadow evaluation compares a sampled request's answer in both
	 * precisions, so it samples every completed request whatever it was
	 * served in: the monitor keeps seeing a slice's drop while the governor
	 * serves it in BF16. The server's own evaluator is outside the run
	 * (the same for every policy); what a governor asks for beyond it is
	 * re-run on this device. */
	/* An asked sample scores the served answer where the slice's next
	 * decision lies (docs/serving-model.md, "Shadow evaluation's cost"):
	 * served in BF16, in the slice's rung (FP8 or INT8) alone; served in a
	 * low precision, in BF16 (the reference), and from FP8 in INT8 too (the
	 * next rung). Without an FP8 engine that is the other precision. */
	bool fp8_engine = p->sc->server.fp8_engine, served_fp8 = r->int8 && r->fp8;
	unsigned rows = !r->int8 ? (fp8_engine && p->low_fp8[r->slice] ? QUALITY_ROW_FP8
								     : QUALITY_ROW_INT8)
			: served_fp8 ? QUALITY_ROW_FP8 | QUALITY_ROW_INT8
				     : QUALITY_ROW_INT8;
	if (quality_on_complete(&p->q, r->slice, rows) != QUALITY_SAMPLED_ASKED)
		return;
	/* Its cost: each scoring a re-run, teacher forced: an LLM prefills
	 * prompt + answer and stops at one token; a fixed-cost model runs the
	 * request again. */
	struct {
		bool int8, fp8;
	} rerun[2];
	size_t n = 0;
	if (!r->int8) {
		rerun[n].int8 = true, rerun[n++].fp8 = (rows & QUALITY_ROW_FP8) != 0;
	} else {
		rerun[n].int8 = false, rerun[n++].fp8 = false; /* BF16, the reference */
		if (served_fp8)
			rerun[n].int8 = true, rerun[n++].fp8 = false;
	}
	for (size_t i = 0; i < n; i++) {
		if (p->n_shadow == PLANT_SHADOW_Q) {
			p->shadow_lost++;
			return;
		}
		struct request sh = *r;
		sh.int8 = rerun[i].int8;
		sh.fp8 = rerun[i].fp8;
		sh.shadow = true;
		if (p->srv_kind == SERVER_LLM) {
			uint64_t ntok = (uint64_t)r->ctx_tokens + r->gen_tokens;
			sh.ctx_tokens = ntok > UINT32_MAX ? UINT32_MAX : (uint32_t)ntok;
			sh.gen_tokens = 1;
		}
		p->shadow_q[p->n_shadow++] = sh;
	}
}

static void submit_shadows(struct plant *p)
{
	for (uint32_t i = 0; i < p->n_shadow; i++) {
		p->shadow_q[i].arrival_s = p->t_s;
		server_submit(p->srv, &p->shadow_q[i]);
	}
	p->n_shadow = 0;
}

static void submit_due(struct plant *p, double t_end_s)
{
	while (p->have_pending && p->pending.arrival_s < t_end_s - TICK_EPS_S) {
		assert(p->pending.slice < p->q.n_slices);
		/* One draw per request whatever the fraction, so the precision stream
		 * stays aligned across policies (common random numbers). */
		p->pending.int8 = rng_bernoulli(&p->rng_precision, p->int8_frac[p->pending.slice]);
		p->pending.fp8 = p->pending.int8 && p->low_fp8[p->pending.slice];
		server_submit(p->srv, &p->pending);
		if (workload_next(p->wl, &p->pending) != 0)
			p->have_pending = false;
	}
}

static void tick(struct plant *p)
{
	const double dt = PLANT_TICK_S;
	apply_due(p);
	submit_shadows(p);
	submit_due(p, p->t_s + dt);
	struct device_load load = { 0 };
	server_advance(p->srv, p->t_s, dt, p->dev.clk_mhz, &load, on_done, p);
	device_advance(&p->dev, dt, &load);
	p->last_util = load.busy;
	p->tick++;
	p->t_s = (double)p->tick * dt;
	if (p->dev.shut_down) {
		p->failed = true;
		snprintf(p->fail_reason, sizeof(p->fail_reason),
			 "thermal shutdown at %.0f C at t=%.2f s (junction %.1f C)",
			 p->dev.p->fw.shutdown_c, p->t_s, p->dev.tj_c);
	}
}

void plant_advance_to(struct plant *p, double t_s)
{
	double ticks = ceil(t_s / PLANT_TICK_S - 1e-6);
	if (!(ticks > (double)p->tick))
		return;
	uint64_t target = (uint64_t)ticks;
	while (p->tick < target && !p->failed)
		tick(p);
	if (p->failed) {
		/* The run is over: time moves so clocks do not stall, nothing else. */
		p->tick = target;
		p->t_s = (double)target * PLANT_TICK_S;
		return;
	}
	apply_due(p); /* readings at t_s show events due at t_s */
}

int plant_create(const struct scenario *sc, uint64_t seed, struct plant **out,
		 struct diag_list *diags)
{
	char names[512];
	const char *file = sc->path[0] ? sc->path : sc->name;
	int rc;
	*out = NULL;

	const struct plant_preset *preset = plant_preset_find(sc->preset);
	if (!preset) {
		names_list(names, sizeof(names), plant_preset_names());
		diag_add(diags, DIAG_ERROR, file, 0, 0, "preset", "unknown-preset",
			 "unknown device preset '%s'; valid: %s", sc->preset, names);
		return -EINVAL;
	}
	struct server_cfg scfg = sc->server;
	if (sc->model[0] || !scfg.model)
		scfg.model = model_spec_find(sc->model);
	if (!scfg.model) {
		names_list(names, sizeof(names), model_spec_names());
		diag_add(diags, DIAG_ERROR, file, 0, 0, "model", "unknown-model",
			 "unknown model '%s'; valid: %s", sc->model, names);
		return -EINVAL;
	}
	if (sc->n_slices < 1 || sc->n_slices > PLANT_MAX_SLICES) {
		diag_add(diags, DIAG_ERROR, file, 0, 0, "slices", "slice-count",
			 "%u slices; expected 1..%d", sc->n_slices, PLANT_MAX_SLICES);
		return -EINVAL;
	}
	if (sc->workload.n_slices > sc->n_slices) {
		diag_add(diags, DIAG_ERROR, file, 0, 0, "workload", "slice-count",
			 "the workload routes to %u slices but the scenario has %u",
			 sc->workload.n_slices, sc->n_slices);
		return -EINVAL;
	}
	scfg.n_slices = sc->n_slices;

	struct plant *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->sc = sc;
	device_init(&p->dev, preset, sc->inlet_c);
	if (sc->cooling_factor > 0)
		p->dev.cooling_factor = sc->cooling_factor;

	rc = server_create(&scfg, preset, &p->srv);
	p->srv_kind = scfg.model->kind;
	if (rc) {
		diag_add(diags, DIAG_ERROR, file, 0, 0, "server", "server-create",
			 "cannot create the %s server: %s", scfg.model->name, strerror(-rc));
		goto free_plant;
	}
	if (sc->workload.kind == WORKLOAD_TRACE || sc->workload.lengths_path[0]) {
		rc = trace_load(sc->workload.kind == WORKLOAD_TRACE ? sc->workload.trace_path
								    : sc->workload.lengths_path,
				&p->trace, diags);
		if (rc)
			goto destroy_server;
	}
	struct rng root;
	rng_seed(&root, seed);
	struct rng wl_rng = rng_fork(&root, STREAM_WORKLOAD);
	rc = workload_open(&sc->workload, p->trace, &wl_rng, &p->wl);
	if (rc) {
		diag_add(diags, DIAG_ERROR, file, 0, 0, "workload", "workload-open",
			 "cannot open the workload: %s", strerror(-rc));
		goto free_trace;
	}
	double drop[PLANT_MAX_SLICES], drop_fp8[PLANT_MAX_SLICES], shadow[PLANT_MAX_SLICES];
	for (uint32_t i = 0; i < sc->n_slices; i++) {
		drop[i] = sc->slices[i].int8_drop;
		shadow[i] = sc->slices[i].shadow_rate;
		p->int8_frac[i] = 0; /* BF16 until a governor says otherwise */
		p->low_fp8[i] = false;  /* the low mode INT8, as before the ladder */
		drop_fp8[i] = sc->slices[i].fp8_drop;
	}
	struct rng q_rng = rng_fork(&root, STREAM_QUALITY);
	quality_init(&p->q, sc->n_slices, drop, shadow, &q_rng);
	if (sc->server.fp8_engine)
		quality_init_fp8(&p->q, drop_fp8);
	p->rng_precision = rng_fork(&root, STREAM_PRECISION);

	p->load_scale_end_s = p->inlet_end_s = p->cooling_end_s = INFINITY;
	for (uint32_t i = 0; i < PLANT_MAX_SLICES; i++)
		p->drift_end_s[i] = INFINITY;
	p->next_expiry_s = INFINITY;
	p->have_pending = workload_next(p->wl, &p->pending) == 0;
	apply_due(p); /* events at t = 0 */
	*out = p;
	return 0;

free_trace:
	trace_free(p->trace);
destroy_server:
	server_destroy(p->srv);
free_plant:
	free(p);
	return rc;
}

void plant_destroy(struct plant *p)
{
	if (!p)
		return;
	workload_close(p->wl);
	trace_free(p->trace);
	server_destroy(p->srv);
	free(p);
}

void plant_read(const struct plant *p, struct plant_readings *out)
{
	out->t_s = p->t_s;
	for (int s = 0; s < SENSOR_N; s++) {
		double v = true_value(p, (enum sensor_id)s);
		bool ok = true;
		double t_meas = p->t_s;
		if (p->fault_active[s]) {
			switch (p->fault_kind[s]) {
			case FAULT_STUCK: v = p->fault_stuck[s]; break;
			case FAULT_NAN: v = NAN; break;
			case FAULT_VALUE: v = p->fault_value[s]; break;
			case FAULT_DROPOUT:
				v = 0;
				ok = false;
				t_meas = p->fault_start_s[s];
				break;
			}
		}
		out->value[s] = v;
		out->valid[s] = ok;
		out->t_meas_s[s] = t_meas;
	}
	out->energy_j[0] = p->dev.energy_j;
	out->energy_j[1] = p->dev.mem_energy_j;
	out->energy_j[2] = p->dev.host_energy_j;
	out->util = p->last_util;
	out->power_limit_w = p->dev.power_limit_w;
	out->throttle = p->dev.throttle;
	out->clamp_events = p->dev.clamp_events;
	out->clamp_time_s = p->dev.clamp_time_s;
}

void plant_set_int8_fraction(struct plant *p, uint32_t slice, double frac)
{
	assert(slice < p->q.n_slices);
	assert(frac >= 0.0 && frac <= 1.0);
	p->int8_frac[slice] = frac;
}

int plant_set_low_mode(struct plant *p, uint32_t slice, bool fp8)
{
	assert(slice < p->q.n_slices);
	if (fp8 && !p->sc->server.fp8_engine)
		return -EOPNOTSUPP;
	p->low_fp8[slice] = fp8;
	return 0;
}

void plant_set_shadow_rate(struct plant *p, uint32_t slice, double rate)
{
	assert(slice < p->q.n_slices);
	quality_set_rate(&p->q, slice, rate);
}

double plant_true_drop(const struct plant *p, uint32_t slice, bool fp8)
{
	assert(slice < p->q.n_slices);
	return fp8 ? p->q.true_drop_fp8[slice] : p->q.true_drop[slice];
}
