/* Policies: the YAML file users edit to tell the governor what to optimise
 * and within which limits. Loading is a transaction: parse + validate into a
 * new object; on any error nothing is returned and every problem is in the
 * diag list with file:line:col. Keys (table in docs/summary.md): name,
 * description, control, sla, thermal, power, frequency, precision, quality,
 * safe_point, telemetry. Zero means "not set" for the
 * optional limits (the device's own limit applies). */
#ifndef GOVD_GOVERNOR_POLICY_H
#define GOVD_GOVERNOR_POLICY_H
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "hal/hal.h"

#define POLICY_MAX_PARAMS 16
#define POLICY_MAX_SLICES HAL_MAX_SLICES
#define POLICY_NAME_LEN 64

struct policy_param {
	char name[32];
	double value;
};

struct policy_slice {
	char name[HAL_NAME_LEN];
	double int8_fraction; /* < 0: not set (precision.int8_fraction applies) */
	double max_drop;      /* < 0: not set (quality.default_max_drop applies) */
};

struct policy {
	char name[POLICY_NAME_LEN];
	char description[256];
	char path[4096];
	uint64_t hash;        /* FNV-1a 64 of the file bytes */
	char hash_hex[32];    /* "fnv1a64:0123456789abcdef" */
	struct {
		char controller[32];
		uint32_t period_ms;
		size_t n_params;
		struct policy_param params[POLICY_MAX_PARAMS];
	} control;
	struct {
		double window_s;
		double ttft_p99_ms, tbt_p99_ms, e2e_p99_ms, ttft_p95_ms, tbt_p95_ms; /* 0: no target */
		double attainment; /* target share of windows meeting every target */
	} sla;
	struct {
		double ceiling_c, hysteresis_c;
	} thermal;
	struct {
		double cap_w; /* 0: device default limit */
	} power;
	struct {
		double min_mhz, max_mhz, max_step_mhz; /* 0: device limit / unlimited step */
	} frequency;
	struct {
		double int8_fraction; /* default for slices not named */
	} precision;
	struct {
		double default_max_drop;
	} quality;
	size_t n_slices; /* union of slices named in precision.slices and quality.slices */
	struct policy_slice slices[POLICY_MAX_SLICES];
	struct {
		double clk_max_mhz;   /* 0: clocks unlocked (firmware default) */
		double power_cap_w;   /* 0: device default limit */
		double int8_fraction;
		uint32_t hold_periods; /* clean periods before leaving the safe point */
	} safe_point;
	struct {
		double ewma_tau_s;    /* rail power filter time constant */
		uint32_t stale_ms;    /* a reading older than this is stale */
		uint32_t stuck_periods;
	} telemetry;
};

int policy_load(const char *path, struct policy **out, struct diag_list *diags);
/* Same from memory (tests); name is used in diags and as path. */
int policy_load_string(const char *name, const char *text, size_t len, struct policy **out,
		       struct diag_list *diags);
void policy_free(struct policy *p);
/* The values a policy has for every key it leaves out (no name, no controller). */
void policy_defaults(struct policy *p);
/* Controller parameter by name (validated at load), or def when absent. */
double policy_param(const struct policy *p, const char *name, double def);
/* Per device slice, by name: INT8 share and quality threshold. */
double policy_slice_int8(const struct policy *p, const char *slice);
double policy_slice_max_drop(const struct policy *p, const char *slice);
uint64_t fnv1a64(const void *data, size_t len);

#endif
