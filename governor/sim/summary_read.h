/* summary.json's reader, beside its writer (sim.c summary_json()): the keys
 * are docs/summary.md's. Used by govctl report (report/report_load.c) and
 * govctl compare. NaN: a figure the file does not carry. */
#ifndef GOVD_GOVERNOR_SUMMARY_READ_H
#define GOVD_GOVERNOR_SUMMARY_READ_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/sla.h"
#include "hal/hal.h"

struct sim_summary_window { /* sla.per_window[] */
	bool idle, tail, sla_met;
	double tokens;
	double q_ms[SLA_N_ROWS];
};

struct sim_summary_slice { /* precision.per_slice and quality.per_slice, by name */
	char name[HAL_NAME_LEN];
	bool in_quality;  /* quality.per_slice has it */
	double int8_request_fraction, int8_token_share_of_all;
	double max_drop, true_drop_end, breach_requests;
};

struct sim_summary {
	json_t *doc; /* the whole document (owned), for callers that embed it */
	char scenario_path[1024]; /* "" when not recorded */
	char command[8192], compiler[128];
	double duration_s, tokens_generated, tokens_per_joule;
	double energy_accel_j, energy_memory_j, energy_host_j, energy_total_j;
	double window_s, windows, windows_met, attainment;
	double q_ms[SLA_N_ROWS];       /* sla.<row key>: over the whole run */
	double targets_ms[SLA_N_ROWS]; /* sla.targets; 0: none */
	double min_tokens_per_s;       /* 0: none */
	double attainment_goal;
	struct sim_summary_window *win; /* owned */
	size_t n_win;
	double ceiling_c, max_junction_c, clamp_events, clamp_time_s, time_above_ceiling_s;
	double int8_token_fraction, breach_requests, breach_requests_beyond_delay;
	double fp8_token_fraction; /* the FP8 ones among the 8-bit tokens; NaN: no FP8 engine */
	double rollbacks, telemetry_faults;
	double clock_changes_per_min, mean_locked_mhz; /* clock.*; NAN: not recorded */
	bool failed;
	char fail_reason[256];
	size_t n_slices;
	struct sim_summary_slice slice[HAL_MAX_SLICES];
};

/* Reads path (at most max_bytes). 0, or a negative errno with err set to
 * "path:line:col: error: ..." (not JSON) or "path: error: ..." (not an
 * object, or a figure a verdict rests on missing: tokens_generated,
 * tokens_per_joule, energy_j.total, sla.attainment, thermal.clamp_events,
 * quality.breach_requests). */
int sim_summary_load(const char *path, size_t max_bytes, struct sim_summary *s, char *err,
		     size_t errlen);
/* The slice of that name, NULL if neither per_slice table has it. */
const struct sim_summary_slice *sim_summary_slice(const struct sim_summary *s, const char *name);
void sim_summary_free(struct sim_summary *s);

#endif
