/* Prometheus metrics: a snapshot the loop fills after each period and an
 * HTTP endpoint (libmicrohttpd, its own polling thread) that renders the
 * text exposition format from the last published snapshot.
 *
 * Consistency: the loop owns a working struct metrics_snapshot, updates it
 * (metrics_device_update once per device and period, metrics_observe_tick,
 * the node fields) and calls metrics_publish(); publish copies it under a
 * mutex and a scrape copies it out under the same mutex, then renders the
 * copy. A scrape therefore never sees half a period. Names, types and labels:
 * docs/metrics.md. */
#ifndef GOVD_GOVERNOR_METRICS_H
#define GOVD_GOVERNOR_METRICS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "governor/governor.h"
#include "governor/opoint.h"
#include "governor/validate.h"
#include "hal/hal.h"

/* Every device the daemon config allows (CONFIG_MAX_DEVICES, asserted in
 * config.c). Measured: the 84 KB snapshot is copied under the mutex in
 * 0.7 us (publish; a scrape's copy-out is the same memcpy); rendering 64
 * devices (377 KB of text) takes ~1.1 ms on the HTTP thread, outside it. */
#define METRICS_MAX_DEVICES 64
#define METRICS_DEFAULT_LISTEN "127.0.0.1:9464"
/* Upper bounds (s) of the tick duration histogram buckets; +Inf is implied. */
#define METRICS_TICK_BUCKETS 12
extern const double metrics_tick_bounds_s[METRICS_TICK_BUCKETS];

/* The loop's bookkeeping to turn per-period values into counters; not rendered. */
struct metrics_dev_acc {
	bool started;
	enum gov_fault prev_fault[GOV_SIG_N];
	bool have_energy[HAL_RAIL_N];
	double prev_energy_mj[HAL_RAIL_N];
	bool have_tokens;
	uint64_t prev_tokens;
	bool have_clamp, have_clamp_time;
	uint64_t prev_clamp_events, prev_clamp_time_ms;
	uint64_t win_start_ms;
	uint64_t prev_t_ms;
};

/* One device. Gauges are NaN when unknown (not rendered). */
struct metrics_device {
	char name[HAL_NAME_LEN];
	uint64_t periods;
	/* Operating point in force after the period. Unlocked clocks report the
	 * device's range (firmware default). */
	bool clk_locked;
	double clk_min_hz, clk_max_hz;
	double power_limit_w;
	size_t n_slices;
	char slice_name[HAL_MAX_SLICES][HAL_NAME_LEN];
	double int8_share[HAL_MAX_SLICES]; /* INT8 request share set per slice */
	enum gov_binding binding;
	/* Measurements and estimates. */
	double clk_hz;
	double power_w[HAL_RAIL_N];        /* filtered */
	double energy_j[HAL_RAIL_N];       /* counter */
	double temp_c[HAL_TEMP_N];
	double headroom_c, headroom_trend_c_per_s;
	bool serving_up;
	double tokens_per_s, tokens_per_joule, int8_token_share;
	uint64_t tokens_total;
	uint64_t queue_len, running;
	double ttft_p99_s, tbt_p99_s, e2e_p99_s;
	double ttft_p95_s, tbt_p95_s, e2e_p95_s;
	/* SLA windows judged on the estimator's window quantiles. */
	uint64_t sla_windows, sla_windows_met;
	/* Counters. */
	uint64_t clamp_events;             /* hardware thermal slowdown entries */
	double clamp_s;
	uint64_t rollbacks[GOV_T_COUNT];
	uint64_t rollbacks_unattributed;   /* rollback reason without a fired trigger */
	uint64_t decisions[GOV_R_COUNT];   /* periods carrying each reason bit */
	uint64_t telemetry_faults[GOV_SIG_N]; /* fault onsets (none -> fault) */
	uint64_t actuate_errors;
	uint64_t log_write_errors;         /* decision-log writes that failed (daemon) */
	struct metrics_dev_acc acc;
};

struct metrics_snapshot {
	uint64_t seq;                      /* set by metrics_publish: 1, 2, ... */
	char policy_name[64];
	char policy_hash[32];
	double node_budget_w;              /* NaN: no node budget */
	bool held, dry_run;
	uint64_t loop_overruns;
	struct {
		uint64_t bucket[METRICS_TICK_BUCKETS]; /* non-cumulative counts */
		uint64_t count;
		double sum_s;
	} tick;
	size_t n_devices;
	struct metrics_device dev[METRICS_MAX_DEVICES];
};

/* Empty snapshot: every gauge unknown, every counter zero. */
void metrics_snapshot_init(struct metrics_snapshot *s);
/* Adds device name (truncated to HAL_NAME_LEN - 1); its index or -ENOSPC. */
int metrics_add_device(struct metrics_snapshot *s, const char *name);
/* One period of one device, from the governor's state (g->lim, g->val) and
 * the period it reported. fired_triggers: enum gov_trigger bits that caused
 * a rollback this period (0 if none or not known; a GOV_R_ROLLBACK period
 * without them counts as trigger "unknown"). */
void metrics_device_update(struct metrics_device *d, const struct governor *g,
			   const struct gov_period *p, uint32_t fired_triggers);
/* The same from the parts (tests, and a loop that has no struct governor):
 * lim gives the unlocked clock range; sla_window_s and the policy's targets
 * judge SLA windows (pol may be NULL: no windows judged). */
void metrics_device_update_from(struct metrics_device *d, const struct hal_limits *lim,
				const struct policy *pol, const struct gov_period *p,
				uint32_t fired_triggers);
void metrics_observe_tick(struct metrics_snapshot *s, double tick_s);
/* Node-level fields from the policy (name, hash). */
void metrics_set_policy(struct metrics_snapshot *s, const struct policy *pol);

/* Text exposition format 0.0.4 of s into f; 0 or -EIO. */
int metrics_render(const struct metrics_snapshot *s, FILE *f);
/* The same into a malloc'ed NUL-terminated buffer (*len without the NUL). */
int metrics_render_alloc(const struct metrics_snapshot *s, char **out, size_t *len);
/* Prometheus label value escaping (\\, \", \n) into buf; false if truncated. */
bool metrics_escape_label(const char *in, char *buf, size_t len);

/* The HTTP endpoint. */
struct metrics_server;
struct metrics_cfg {
	const char *listen; /* "ADDR:PORT", "[V6ADDR]:PORT"; NULL: METRICS_DEFAULT_LISTEN; port 0: any */
};
/* Parses "127.0.0.1:9464" / "[::1]:9464" into sockaddr storage; -EINVAL. */
struct sockaddr_storage;
int metrics_parse_listen(const char *listen, struct sockaddr_storage *ss, unsigned *len);
/* Starts serving GET /metrics (everything else 404, other methods 405) from
 * an internal thread; diags get what went wrong (bind failure etc.). */
int metrics_start(struct metrics_server **out, const struct metrics_cfg *cfg,
		  struct diag_list *diags);
/* The port bound (useful with port 0). */
unsigned metrics_port(const struct metrics_server *m);
/* Copies s for the scrapes to come. */
void metrics_publish(struct metrics_server *m, const struct metrics_snapshot *s);
uint64_t metrics_scrapes(const struct metrics_server *m);
void metrics_stop(struct metrics_server *m);

#endif
