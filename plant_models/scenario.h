/* A scenario: which device preset and model, the environment, the workload
 * and the events at given times. Loaded from YAML (configs/scenarios/), paths
 * resolved relative to the scenario file. Every error carries file:line:col. */
#ifndef GOVD_PLANT_SCENARIO_H
#define GOVD_PLANT_SCENARIO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "plant_models/server.h"
#include "plant_models/workload.h"

enum event_kind {
	EV_INLET_C,        /* inlet temperature steps to value (C) */
	EV_COOLING,        /* cooling factor (r_ha multiplier) becomes value */
	EV_LOAD_SCALE,     /* arrival rate multiplied by value (burst); duration ends it */
	EV_QUALITY_DRIFT,  /* slice's true INT8 (fp8: FP8) drop becomes value */
	EV_SENSOR_FAULT,   /* sensor misbehaves for duration */
	EV_METER_LOSS,     /* a power rail's meter gives nothing for duration */
};

enum sensor_id { SENSOR_JUNCTION, SENSOR_MEMORY_TEMP, SENSOR_INLET, SENSOR_POWER_ACCEL,
		 SENSOR_POWER_MEMORY, SENSOR_POWER_HOST, SENSOR_CLOCK, SENSOR_N };
enum fault_kind { FAULT_STUCK, FAULT_NAN, FAULT_DROPOUT, FAULT_VALUE };

struct scenario_event {
	double at_s;
	double duration_s;    /* 0: permanent */
	enum event_kind kind;
	double value;         /* C, factor, drop, or the implausible value for FAULT_VALUE */
	uint32_t slice;       /* EV_QUALITY_DRIFT */
	bool fp8;             /* EV_QUALITY_DRIFT: the FP8 drop drifts, not the INT8 one */
	enum sensor_id sensor;/* EV_SENSOR_FAULT, EV_METER_LOSS (a power sensor) */
	enum fault_kind fault;
	int line;             /* where it was declared, for messages */
};

struct scenario_slice {
	char name[48];
	double fraction;      /* share of requests */
	double int8_drop;     /* true INT8 accuracy drop, 0..1 */
	double fp8_drop;      /* true FP8 accuracy drop (server.fp8_engine); default int8_drop */
	double shadow_rate;   /* share of requests shadow-evaluated */
};

struct scenario {
	char name[64];
	char path[4096];
	char description[256];
	char preset[32];        /* plant_preset_find() */
	char model[48];         /* model_spec_find() */
	struct server_cfg server; /* model pointer filled from `model` */
	double duration_s;
	double inlet_c;
	double cooling_factor;
	double memory_c_offset; /* unused by default (0) */
	struct workload_cfg workload;
	uint32_t n_slices;
	struct scenario_slice slices[PLANT_MAX_SLICES];
	size_t n_events;
	struct scenario_event *events; /* sorted by at_s */
	uint64_t default_seed;
};

/* Parse + validate into a new object. On error returns -EINVAL/-errno and
 * *out is NULL; diags hold every problem found. */
int scenario_load(const char *path, struct scenario **out, struct diag_list *diags);
void scenario_free(struct scenario *s);
const char *event_kind_name(enum event_kind k);
const char *sensor_name(enum sensor_id s);

#endif
