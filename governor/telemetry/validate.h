/* Telemetry validation: every sampled signal is checked each period and a
 * problem is named (docs/decision-log.md lists the faults and thresholds).
 * Pure: readings in, named faults out; no I/O. */
#ifndef GOVD_GOVERNOR_VALIDATE_H
#define GOVD_GOVERNOR_VALIDATE_H
#include <stdbool.h>
#include <stdint.h>

#include "hal/hal.h"

enum gov_signal {
	GOV_SIG_POWER_ACCEL, GOV_SIG_POWER_MEMORY, GOV_SIG_POWER_HOST,
	GOV_SIG_TEMP_JUNCTION, GOV_SIG_TEMP_MEMORY, GOV_SIG_TEMP_INLET,
	GOV_SIG_CLOCK, GOV_SIG_POWER_LIMIT, GOV_SIG_UTIL,
	GOV_SIG_ENERGY_ACCEL, GOV_SIG_ENERGY_MEMORY, GOV_SIG_ENERGY_HOST,
	GOV_SIG_N
};

enum gov_fault {
	GOV_FAULT_NONE,
	GOV_FAULT_DROPOUT,   /* source gave nothing (valid == false) */
	GOV_FAULT_NAN,       /* not a number */
	GOV_FAULT_STALE,     /* timestamp too old, or going backwards */
	GOV_FAULT_RANGE,     /* outside the physically possible range */
	GOV_FAULT_STUCK,     /* identical for N periods while its witness moved */
	GOV_FAULT_BACKWARDS, /* monotonic counter decreased */
	GOV_FAULT_N
};

/* A reading in display units: W, C, MHz, percent, J. NaN where the backend
 * reported not-a-number (hal_value.nan, or v == HAL_V_NAN). */
struct gov_reading {
	double v;
	uint64_t t_ms;
	bool valid;
	bool offered; /* false: the backend does not provide this signal at all */
};

struct validate_cfg {
	uint64_t stale_ms;       /* older than this at sample time: stale */
	uint32_t stuck_periods;  /* identical this many periods: stuck (if witness moved) */
	double stuck_witness_w;  /* witness must have moved this much (W or %) */
};

struct validator {
	struct validate_cfg cfg;
	double last_v[GOV_SIG_N];
	uint64_t last_t_ms[GOV_SIG_N];
	bool have_last[GOV_SIG_N];   /* a good value was seen: the signal is offered */
	uint32_t same_count[GOV_SIG_N];
	double wit_min[GOV_SIG_N], wit_max[GOV_SIG_N]; /* witness range while unchanged */
	enum gov_fault fault[GOV_SIG_N];  /* current */
	uint64_t onsets;                   /* none -> fault transitions, all signals */
};

int validate_init(struct validator *v, const struct validate_cfg *cfg);
void validate_fini(struct validator *v);
/* Converts a HAL sample (mW, mC, kHz, mJ) into readings. */
void gov_readings_from_sample(const struct hal_sample *s, struct gov_reading out[GOV_SIG_N]);
/* Checks one period's readings; fills out[] and returns the number of
 * faulted signals. now_ms: the sample's time. */
unsigned validate_step(struct validator *v, uint64_t now_ms, const struct gov_reading in[GOV_SIG_N],
		       enum gov_fault out[GOV_SIG_N]);
/* Signals whose faults send the guard to the safe point (the others are
 * counted and logged; the estimator holds their last good value). */
bool gov_signal_critical(enum gov_signal s);
/* Required signals are faults from the first period when invalid; optional
 * ones only after they have once been valid (a backend may not offer them). */
bool gov_signal_required(enum gov_signal s);
const char *gov_signal_name(enum gov_signal s);
const char *gov_fault_name(enum gov_fault f);

#endif
