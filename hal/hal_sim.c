/* The sim backend: a struct plant behind the HAL ops. Unit conversion and
 * fault mapping are in docs/hal.md ("The sim backend"). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/datapath.h"
#include "hal/hal.h"
#include "hal/hal_backends.h"
#include "hal/hal_sim.h"
#include "hal/backend_opts.h"
#include "plant_models/plant.h"
#include "plant_models/scenario.h"

struct sim {
	struct plant *plant;
	struct scenario *sc; /* owned when we loaded it */
	bool own_plant;
	double orig_limit_w; /* the plant's power limit at open */
};

static struct sim *sim_of(struct hal_dev *dev)
{
	return dev->priv;
}

static uint64_t to_ms(double t_s)
{
	return t_s > 0 ? (uint64_t)llround(t_s * 1000.0) : 0;
}

static int64_t milli(double v)
{
	return (int64_t)llround(v * 1000.0);
}

static const struct hal_ops hal_sim_ops_fp8;

static int sim_open(struct hal_dev *dev, const struct hal_dev_cfg *cfg, struct diag_list *diags)
{
	static const char *const keys[] = { "scenario", "seed", NULL };
	struct bopts o;
	bopts_init(&o, cfg, diags, "sim");
	bopts_check_keys(&o, keys);
	const char *scenario_path = bopts_str(&o, "scenario", NULL);
	bool have_seed = bopts_has(&o, "seed");
	uint64_t seed = 0;
	bopts_u64(&o, "seed", 0, UINT64_MAX, 0, &seed);
	if (!cfg->plant && !scenario_path)
		bopts_error(&o, "scenario", "missing-option",
			    "the sim backend needs a scenario (option 'scenario': path to a scenario YAML)");
	if (o.errors)
		return -EINVAL;
	int rc;

	struct sim *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (cfg->plant) {
		s->plant = cfg->plant;
	} else {
		/* Relative to the working directory, else the installed data
		 * (common/datapath.h): an installed config's scenarios/default.yaml. */
		char found[4096];
		if (scenario_path[0] != '/' && access(scenario_path, R_OK) != 0 &&
		    govd_data_find(scenario_path, found, sizeof(found)) == 0)
			scenario_path = found;
		rc = scenario_load(scenario_path, &s->sc, diags);
		if (rc)
			goto free_sim;
		rc = plant_create(s->sc, have_seed ? seed : s->sc->default_seed, &s->plant, diags);
		if (rc)
			goto free_scenario;
		s->own_plant = true;
	}
	s->orig_limit_w = s->plant->dev.power_limit_w;
	dev->priv = s;
	if (s->plant->sc->server.fp8_engine)
		dev->ops = &hal_sim_ops_fp8;
	return 0;

free_scenario:
	scenario_free(s->sc);
free_sim:
	free(s);
	return rc;
}

static void sim_close(struct hal_dev *dev)
{
	struct sim *s = sim_of(dev);
	if (!s)
		return;
	if (s->own_plant)
		plant_destroy(s->plant);
	scenario_free(s->sc);
	free(s);
	dev->priv = NULL;
}

static int sim_get_limits(struct hal_dev *dev, struct hal_limits *out)
{
	const struct plant_preset *pp = sim_of(dev)->plant->dev.p;
	memset(out, 0, sizeof(*out));
	out->clk_min_khz = pp->dvfs.min_mhz * 1000u;
	out->clk_max_khz = pp->dvfs.max_mhz * 1000u;
	out->clk_step_khz = pp->dvfs.step_mhz * 1000u;
	out->clk_default_max_khz = pp->dvfs.max_mhz * 1000u;
	out->power_limit_min_mw = (uint32_t)llround(pp->power.tgp_min_w * 1000.0);
	out->power_limit_max_mw = (uint32_t)llround(pp->power.tgp_max_w * 1000.0);
	out->power_limit_default_mw = (uint32_t)llround(pp->power.tgp_default_w * 1000.0);
	out->slowdown_mc = (int32_t)llround(pp->fw.slowdown_c * 1000.0);
	out->shutdown_mc = (int32_t)llround(pp->fw.shutdown_c * 1000.0);
	snprintf(out->model, sizeof(out->model), "%s", pp->name);
	snprintf(out->driver_version, sizeof(out->driver_version), "sim-%s", GOVD_VERSION);
	snprintf(out->firmware_version, sizeof(out->firmware_version), "sim-%s", GOVD_VERSION);
	/* Not a GPU UUID (it never joins a real exporter's series), but unique
	 * per device so the identity path is exercised on the sim. */
	snprintf(out->uuid, sizeof(out->uuid), "SIM-%.43s", dev->name);
	return 0;
}

/* One sensor reading in milli-units (kilo for the clock: MHz -> kHz is x1000 too). */
/* Fields set one by one into the zeroed sample: a struct copy may carry
 * indeterminate padding, and callers compare samples bytewise. */
static void sensor_value(const struct plant_readings *r, enum sensor_id s, struct hal_value *hv)
{
	hv->t_ms = to_ms(r->t_meas_s[s]);
	hv->valid = r->valid[s];
	if (!r->valid[s])
		return; /* v = 0, t_ms = when it last gave data */
	if (!isfinite(r->value[s])) {
		hv->nan = true;
		hv->v = HAL_V_NAN;
		return;
	}
	hv->v = milli(r->value[s]);
}

static void put_value(struct hal_value *hv, int64_t v, uint64_t t_ms, bool valid)
{
	hv->v = v;
	hv->t_ms = t_ms;
	hv->valid = valid;
}

static const enum sensor_id rail_sensor[HAL_RAIL_N] = {
	[HAL_RAIL_ACCEL] = SENSOR_POWER_ACCEL,
	[HAL_RAIL_MEMORY] = SENSOR_POWER_MEMORY,
	[HAL_RAIL_HOST] = SENSOR_POWER_HOST,
};
static const enum sensor_id temp_sensor[HAL_TEMP_N] = {
	[HAL_TEMP_JUNCTION] = SENSOR_JUNCTION,
	[HAL_TEMP_MEMORY] = SENSOR_MEMORY_TEMP,
	[HAL_TEMP_INLET] = SENSOR_INLET,
};

static int sim_sample(struct hal_dev *dev, struct hal_sample *out)
{
	struct plant_readings r;
	plant_read(sim_of(dev)->plant, &r);
	uint64_t now = to_ms(r.t_s);
	memset(out, 0, sizeof(*out));
	out->t_ms = now;
	for (int i = 0; i < HAL_RAIL_N; i++) {
		sensor_value(&r, rail_sensor[i], &out->power_mw[i]);
		/* The energy counter is read from the same meter: lost with it,
		 * and it keeps its last count time while lost. */
		bool ok = r.valid[rail_sensor[i]];
		put_value(&out->energy_mj[i], ok ? milli(r.energy_j[i]) : 0, out->power_mw[i].t_ms, ok);
	}
	for (int i = 0; i < HAL_TEMP_N; i++)
		sensor_value(&r, temp_sensor[i], &out->temp_mc[i]);
	sensor_value(&r, SENSOR_CLOCK, &out->clk_khz);
	put_value(&out->power_limit_mw, milli(r.power_limit_w), now, true);
	put_value(&out->util_pct, llround(r.util * 100.0), now, true);
	out->throttle = r.throttle;
	out->clamp_events = r.clamp_events;
	out->clamp_time_ms = to_ms(r.clamp_time_s);
	return 0;
}

static int sim_set_clock_range(struct hal_dev *dev, uint32_t min_khz, uint32_t max_khz)
{
	if (min_khz > max_khz)
		return -EINVAL;
	/* Whole MHz: the table steps are MHz; device_* snaps to the table. */
	return device_set_clock_range(&sim_of(dev)->plant->dev, (min_khz + 500u) / 1000u,
				      (max_khz + 500u) / 1000u);
}

static int sim_reset_clocks(struct hal_dev *dev)
{
	device_reset_clocks(&sim_of(dev)->plant->dev);
	return 0;
}

static int sim_set_power_limit(struct hal_dev *dev, uint32_t limit_mw)
{
	return device_set_power_limit(&sim_of(dev)->plant->dev, limit_mw / 1000.0);
}

static int sim_read_serving(struct hal_dev *dev, struct hal_serving *out)
{
	const struct plant *p = sim_of(dev)->plant;
	const struct server_stats *st = server_get_stats(p->srv);
	memset(out, 0, sizeof(*out));
	out->t_ms = to_ms(p->t_s);
	out->valid = true;
	out->requests_completed = st->completed;
	out->tokens_generated = st->tokens_generated;
	out->tokens_int8 = st->tokens_int8;
	out->queue_len = st->queue_len;
	out->running = st->running;
	out->ttft = &st->ttft;
	out->tbt = &st->tbt;
	out->e2e = &st->e2e;
	out->n_slices = p->sc->n_slices;
	for (size_t i = 0; i < out->n_slices && i < HAL_MAX_SLICES; i++) {
		snprintf(out->slice_name[i], sizeof(out->slice_name[i]), "%s", p->sc->slices[i].name);
		out->slice_completed[i] = st->slice_completed[i];
		out->slice_int8_completed[i] = st->slice_int8_completed[i];
		out->slice_tokens_int8[i] = st->slice_tokens_int8[i];
	}
	return 0;
}

static int sim_read_quality(struct hal_dev *dev, struct hal_quality *out)
{
	const struct plant *p = sim_of(dev)->plant;
	memset(out, 0, sizeof(*out));
	out->t_ms = to_ms(p->t_s);
	out->valid = true;
	out->n_slices = p->q.n_slices;
	for (size_t i = 0; i < out->n_slices && i < HAL_MAX_SLICES; i++) {
		out->samples[i] = p->q.samples[i];
		out->mismatches[i] = p->q.mismatches[i];
		out->samples_fp8[i] = p->q.samples_fp8[i];
		out->mismatches_fp8[i] = p->q.mismatches_fp8[i];
	}
	return 0;
}

static int sim_set_precision(struct hal_dev *dev, const double *int8_frac, size_t n_slices)
{
	struct plant *p = sim_of(dev)->plant;
	if (n_slices != p->sc->n_slices)
		return -EINVAL;
	for (size_t i = 0; i < n_slices; i++)
		if (!(int8_frac[i] >= 0.0 && int8_frac[i] <= 1.0))
			return -EINVAL; /* NaN too; nothing applied */
	for (size_t i = 0; i < n_slices; i++)
		plant_set_int8_fraction(p, (uint32_t)i, int8_frac[i]);
	return 0;
}

static int sim_set_low_mode(struct hal_dev *dev, const uint8_t *mode, size_t n_slices)
{
	struct plant *p = sim_of(dev)->plant;
	if (n_slices != p->sc->n_slices)
		return -EINVAL;
	for (size_t i = 0; i < n_slices; i++)
		if (mode[i] >= HAL_LOW_N || (mode[i] == HAL_LOW_FP8 && !p->sc->server.fp8_engine))
			return -EINVAL; /* nothing applied */
	for (size_t i = 0; i < n_slices; i++)
		plant_set_low_mode(p, (uint32_t)i, mode[i] == HAL_LOW_FP8);
	return 0;
}

static int sim_set_shadow_rate(struct hal_dev *dev, const double *rate, size_t n_slices)
{
	struct plant *p = sim_of(dev)->plant;
	if (n_slices != p->sc->n_slices)
		return -EINVAL;
	for (size_t i = 0; i < n_slices; i++)
		if (!(rate[i] >= 0.0 && rate[i] <= 1.0))
			return -EINVAL;
	for (size_t i = 0; i < n_slices; i++)
		plant_set_shadow_rate(p, (uint32_t)i, rate[i]);
	return 0;
}

/* The plant as open found it: firmware clocks, its power limit, BF16, the
 * server's own shadow rates. */
static int sim_restore(struct hal_dev *dev)
{
	struct sim *s = sim_of(dev);
	device_reset_clocks(&s->plant->dev);
	int rc = device_set_power_limit(&s->plant->dev, s->orig_limit_w);
	for (size_t i = 0; i < s->plant->sc->n_slices; i++) {
		plant_set_int8_fraction(s->plant, (uint32_t)i, 0.0);
		plant_set_low_mode(s->plant, (uint32_t)i, false);
		plant_set_shadow_rate(s->plant, (uint32_t)i, 0.0);
	}
	return rc;
}

#define SIM_OPS(low_mode)                          \
	{                                          \
		.name = "sim",                     \
		.open = sim_open,                  \
		.close = sim_close,                \
		.get_limits = sim_get_limits,      \
		.sample = sim_sample,              \
		.set_clock_range = sim_set_clock_range, \
		.reset_clocks = sim_reset_clocks,  \
		.set_power_limit = sim_set_power_limit, \
		.read_serving = sim_read_serving,  \
		.read_quality = sim_read_quality,  \
		.set_precision = sim_set_precision, \
		.set_low_mode = low_mode,          \
		.set_shadow_rate = sim_set_shadow_rate, \
		.restore = sim_restore,            \
	}
const struct hal_ops hal_sim_ops = SIM_OPS(NULL);
/* A scenario whose server loads an FP8 engine offers the ladder's actuator. */
static const struct hal_ops hal_sim_ops_fp8 = SIM_OPS(sim_set_low_mode);

static uint64_t clock_now_ms(void *ctx)
{
	const struct sim *s = ctx;
	return to_ms(s->plant->t_s);
}

static int clock_wait_until(void *ctx, uint64_t t_ms)
{
	struct sim *s = ctx;
	if (s->plant->failed)
		return -EHOSTDOWN;
	plant_advance_to(s->plant, (double)t_ms / 1000.0);
	return s->plant->failed ? -EHOSTDOWN : 0;
}

static const struct govd_clock_ops sim_clock_ops = {
	.now_ms = clock_now_ms,
	.wait_until = clock_wait_until,
};

int hal_sim_clock(struct hal_dev *dev, struct govd_clock *out)
{
	if ((dev->ops != &hal_sim_ops && dev->ops != &hal_sim_ops_fp8) || !dev->priv)
		return -EINVAL;
	out->ops = &sim_clock_ops;
	out->ctx = dev->priv;
	return 0;
}

struct plant *hal_sim_plant(struct hal_dev *dev)
{
	if ((dev->ops != &hal_sim_ops && dev->ops != &hal_sim_ops_fp8) || !dev->priv)
		return NULL;
	return sim_of(dev)->plant;
}
