#include "governor/telemetry/validate.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <string.h>

static const char *const signal_names[GOV_SIG_N] = {
	"power_accel", "power_memory", "power_host", "temp_junction", "temp_memory",
	"temp_inlet",  "clock",        "power_limit", "util",       "energy_accel",
	"energy_memory", "energy_host",
};

static const char *const fault_names[GOV_FAULT_N] = {
	"none", "dropout", "nan", "stale", "out_of_range", "stuck", "backwards",
};

/* Physically possible range per signal (W, C, MHz, %, J). Below absolute zero
 * or negative power cannot be measured; the upper bounds are far beyond any
 * accelerator so a plausible-but-wrong value is not called a fault here. */
static const double range_min[GOV_SIG_N] = { 0, 0, 0, HAL_TEMP_MIN_MC / 1e3, HAL_TEMP_MIN_MC / 1e3,
					     HAL_TEMP_MIN_MC / 1e3, 0, 0, 0, 0, 0, 0 };
static const double range_max[GOV_SIG_N] = {
	HAL_POWER_MAX_MW / 1e3, HAL_POWER_MAX_MW / 1e3, HAL_POWER_MAX_MW / 1e3, HAL_TEMP_MAX_MC / 1e3,
	HAL_TEMP_MAX_MC / 1e3,	HAL_TEMP_INLET_MAX_MC / 1e3, HAL_CLK_MAX_KHZ / 1e3, HAL_POWER_MAX_MW / 1e3,
	HAL_UTIL_MAX_PCT,	INFINITY, INFINITY, INFINITY
};

/* Stuck needs a witness: a signal that must move when this one is alive.
 * Signals without one (inlet, clock, limit, counters) are never called stuck:
 * a locked clock or a steady inlet is legitimately constant. */
static const int witness[GOV_SIG_N] = {
	[GOV_SIG_POWER_ACCEL] = GOV_SIG_UTIL,
	[GOV_SIG_POWER_MEMORY] = GOV_SIG_UTIL,
	[GOV_SIG_POWER_HOST] = -1,
	[GOV_SIG_TEMP_JUNCTION] = GOV_SIG_POWER_ACCEL,
	[GOV_SIG_TEMP_MEMORY] = GOV_SIG_POWER_MEMORY,
	[GOV_SIG_TEMP_INLET] = -1,
	[GOV_SIG_CLOCK] = -1,
	[GOV_SIG_POWER_LIMIT] = -1,
	[GOV_SIG_UTIL] = -1,
	[GOV_SIG_ENERGY_ACCEL] = -1,
	[GOV_SIG_ENERGY_MEMORY] = -1,
	[GOV_SIG_ENERGY_HOST] = -1,
};

static bool is_counter(int s)
{
	return s >= GOV_SIG_ENERGY_ACCEL && s <= GOV_SIG_ENERGY_HOST;
}

bool gov_signal_critical(enum gov_signal s)
{
	return s == GOV_SIG_POWER_ACCEL || s == GOV_SIG_TEMP_JUNCTION || s == GOV_SIG_TEMP_MEMORY ||
	       s == GOV_SIG_CLOCK;
}

bool gov_signal_required(enum gov_signal s)
{
	return s == GOV_SIG_POWER_ACCEL || s == GOV_SIG_TEMP_JUNCTION || s == GOV_SIG_CLOCK;
}

const char *gov_signal_name(enum gov_signal s)
{
	return (unsigned)s < GOV_SIG_N ? signal_names[s] : "?";
}

const char *gov_fault_name(enum gov_fault f)
{
	return (unsigned)f < GOV_FAULT_N ? fault_names[f] : "?";
}

int validate_init(struct validator *v, const struct validate_cfg *cfg)
{
	if (!cfg->stuck_periods || !cfg->stale_ms)
		return -EINVAL;
	memset(v, 0, sizeof(*v));
	v->cfg = *cfg;
	return 0;
}

void validate_fini(struct validator *v)
{
	memset(v, 0, sizeof(*v));
}

static struct gov_reading conv(const struct hal_value *hv, double scale)
{
	struct gov_reading r = { .t_ms = hv->t_ms, .valid = hv->valid, .offered = true };

	r.v = hv->nan || hv->v == HAL_V_NAN ? NAN : (double)hv->v * scale;
	return r;
}

void gov_readings_from_sample(const struct hal_sample *s, struct gov_reading out[GOV_SIG_N])
{
	for (int r = 0; r < HAL_RAIL_N; r++) {
		out[GOV_SIG_POWER_ACCEL + r] = conv(&s->power_mw[r], 1e-3);
		out[GOV_SIG_ENERGY_ACCEL + r] = conv(&s->energy_mj[r], 1e-3);
	}
	for (int t = 0; t < HAL_TEMP_N; t++)
		out[GOV_SIG_TEMP_JUNCTION + t] = conv(&s->temp_mc[t], 1e-3);
	out[GOV_SIG_CLOCK] = conv(&s->clk_khz, 1e-3);
	out[GOV_SIG_POWER_LIMIT] = conv(&s->power_limit_mw, 1e-3);
	out[GOV_SIG_UTIL] = conv(&s->util_pct, 1.0);
}

static bool r_in_range(int s, double x)
{
	return x >= range_min[s] && x <= range_max[s];
}

static enum gov_fault check_one(struct validator *v, int s, uint64_t now_ms,
				const struct gov_reading *in)
{
	const struct gov_reading *r = &in[s];

	if (!r->valid)
		return v->have_last[s] || gov_signal_required(s) ? GOV_FAULT_DROPOUT : GOV_FAULT_NONE;
	if (isnan(r->v))
		return GOV_FAULT_NAN;
	/* A timestamp from the future is as wrong as an old one; taken as the
	 * reference it would make every later reading "going backwards". */
	if (r->t_ms + v->cfg.stale_ms < now_ms || r->t_ms > now_ms + v->cfg.stale_ms ||
	    (v->have_last[s] && r->t_ms < v->last_t_ms[s]))
		return GOV_FAULT_STALE;
	if (r->v < range_min[s] || r->v > range_max[s])
		return GOV_FAULT_RANGE;
	if (is_counter(s) && v->have_last[s]) {
		if (r->v < v->last_v[s])
			return GOV_FAULT_BACKWARDS;
		/* An energy counter cannot rise faster than the most power any
		 * rail can draw (plus a joule of rounding). */
		double dt_s = (double)(r->t_ms - v->last_t_ms[s]) / 1e3;
		if (r->v - v->last_v[s] > HAL_POWER_MAX_MW / 1e3 * dt_s + 1.0)
			return GOV_FAULT_RANGE;
	}

	int w = witness[s];
	if (w >= 0 && v->have_last[s] && r->v == v->last_v[s]) {
		double wv = in[w].valid ? in[w].v : NAN;
		if (v->same_count[s] == 0) {
			v->wit_min[s] = v->wit_max[s] = wv;
		} else if (!isnan(wv)) {
			v->wit_min[s] = isnan(v->wit_min[s]) ? wv : fmin(v->wit_min[s], wv);
			v->wit_max[s] = isnan(v->wit_max[s]) ? wv : fmax(v->wit_max[s], wv);
		}
		v->same_count[s]++;
		if (v->same_count[s] >= v->cfg.stuck_periods &&
		    v->wit_max[s] - v->wit_min[s] >= v->cfg.stuck_witness_w)
			return GOV_FAULT_STUCK;
	} else {
		v->same_count[s] = 0;
	}
	return GOV_FAULT_NONE;
}

unsigned validate_step(struct validator *v, uint64_t now_ms, const struct gov_reading in[GOV_SIG_N],
		       enum gov_fault out[GOV_SIG_N])
{
	unsigned n = 0;

	for (int s = 0; s < GOV_SIG_N; s++) {
		enum gov_fault f = GOV_FAULT_NONE;

		if (in[s].offered) {
			f = check_one(v, s, now_ms, in);
			/* A stuck value stays the reference so the run keeps counting;
			 * other faults do not replace the last good value. */
			/* An optional signal the backend does not offer (never
			 * valid) has no last value: it is not "lost" next period. */
			/* A counter that stepped back or jumped is re-based on
			 * what it reads now: the fault names that period and
			 * clears when the counter counts on (a meter that was
			 * reset or swapped must not fault until restart). */
			bool rebase = is_counter(s) &&
				      (f == GOV_FAULT_BACKWARDS ||
				       (f == GOV_FAULT_RANGE && v->have_last[s] && r_in_range(s, in[s].v)));
			if (in[s].valid && (f == GOV_FAULT_NONE || f == GOV_FAULT_STUCK || rebase)) {
				v->last_v[s] = in[s].v;
				v->last_t_ms[s] = in[s].t_ms;
				v->have_last[s] = true;
			}
		}
		if (f != GOV_FAULT_NONE && v->fault[s] == GOV_FAULT_NONE)
			v->onsets++;
		v->fault[s] = f;
		out[s] = f;
		n += f != GOV_FAULT_NONE;
	}
	return n;
}
