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

#include "governor/loop/governor.h"
#include "governor/policy/opoint.h"
#include "governor/telemetry/validate.h"
#include "hal/hal.h"

/* Every device the daemon config allows (CONFIG_MAX_DEVICES, asserted in
 * config.c). Measured before the latency histograms: the 84 KB snapshot
 * was copied under the mutex in 0.7 us (publish; a scrape's copy-out is the
 * same memcpy) and 64 devices rendered in ~1.1 ms on the HTTP thread. With
 * them all 64 slots are 161 KB (only the devices in use are copied). */
#define METRICS_MAX_DEVICES 64
#define METRICS_DEFAULT_LISTEN "127.0.0.1:9464"
/* Upper bounds (s) of the request latency histogram buckets
 * (govd_request_latency_seconds); +Inf is implied. */
#define METRICS_LAT_BUCKETS 16
extern const double metrics_lat_bounds_s[METRICS_LAT_BUCKETS];
#define METRICS_LAT_KINDS 3 /* ttft, tbt, e2e */
/* Upper bounds (s) of the tick duration histogram buckets; +Inf is implied. */
#define METRICS_TICK_BUCKETS 12
extern const double metrics_tick_bounds_s[METRICS_TICK_BUCKETS];

/* The loop's bookkeeping to turn per-period values into counters; not rendered. */
struct metrics_dev_acc {
	bool started;
	enum gov_fault prev_fault[GOV_SIG_N];
	bool prev_gate_open[HAL_MAX_SLICES];
	bool have_energy[HAL_RAIL_N];
	double prev_energy_mj[HAL_RAIL_N];
	bool have_tokens;
	uint64_t prev_tokens;
	bool have_clamp, have_clamp_time;
	uint64_t prev_clamp_events, prev_clamp_time_ms;
	uint64_t win_start_ms;
	uint64_t prev_t_ms;
	/* The server's cumulative latency histograms at the last good read,
	 * summed to the exported bounds. */
	bool have_lat;
	uint64_t prev_lat_le[METRICS_LAT_KINDS][METRICS_LAT_BUCKETS];
	uint64_t prev_lat_n[METRICS_LAT_KINDS];
	double prev_lat_sum_ms[METRICS_LAT_KINDS];
};

/* A request latency histogram as exported: cumulative counts per bound. */
struct metrics_lat_hist {
	uint64_t le[METRICS_LAT_BUCKETS];
	uint64_t count;
	double sum_s;
};

/* One device. Gauges are NaN when unknown (not rendered). */
struct metrics_device {
	char name[HAL_NAME_LEN];
	/* The policy this device runs (govd_policy_info; "" before the first). */
	char policy_name[64];
	char policy_hash[32];
	/* Identity for joins with dcgm-exporter ("": unknown, label left out). */
	char uuid[HAL_NAME_LEN], pci_bus_id[HAL_NAME_LEN], model[HAL_NAME_LEN];
	char mig_uuid[HAL_NAME_LEN], gi_id[16]; /* a MIG instance's; "" otherwise */
	bool mig_enabled;
	bool have_index;
	uint32_t index;
	uint64_t periods;
	/* Operating point in force after the period. Unlocked clocks report the
	 * device's range (firmware default). */
	bool clk_locked;
	double clk_min_hz, clk_max_hz;
	double power_limit_w;
	size_t n_slices;
	char slice_name[HAL_MAX_SLICES][HAL_NAME_LEN];
	double int8_share[HAL_MAX_SLICES]; /* 8-bit request share set per slice */
	bool fp8_rung[HAL_MAX_SLICES];     /* the share is served in FP8 (the precision ladder) */
	enum gov_binding binding;
	/* A dry run: the fields above are what the device runs (firmware
	 * clocks, its own limit) and these what govd would set. */
	bool would_clk_locked;
	double would_clk_max_hz, would_power_limit_w;
	bool outside_envelope; /* the policy's envelope excludes the device: safe point */
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
	double latency_s[SLA_N_ROWS]; /* by SLA_INDEX(); NaN: unknown */
	/* Request latency since govd started, from the server's histograms:
	 * [0] ttft, [1] tbt, [2] e2e. */
	struct metrics_lat_hist lat[METRICS_LAT_KINDS];
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
	uint64_t oob_changes; /* another writer changed the power limit (governor.c) */
	/* INT8 quality gate per slice: open now, and open -> closed transitions. */
	bool gate_open[HAL_MAX_SLICES];
	uint64_t gate_closures[HAL_MAX_SLICES];
	bool fp8_gate_open[HAL_MAX_SLICES]; /* the FP8 rung's own gate (est_q_row) */
	uint64_t log_write_errors;         /* decision-log writes that failed (daemon) */
	struct metrics_dev_acc acc;
};

struct metrics_snapshot {
	uint64_t seq;                      /* set by metrics_publish: 1, 2, ... */
	char hostname[64];                 /* gethostname() at init: dcgm-exporter's Hostname */
	double node_budget_w;              /* NaN: no node budget */
	bool held, dry_run;
	uint64_t loop_overruns;
	struct {
		uint64_t bucket[METRICS_TICK_BUCKETS]; /* non-cumulative counts */
		uint64_t count;
		double sum_s;
	} tick;
	struct {                           /* fleet budget (docs/fleet.md); absent unless enabled */
		bool enabled, allocating, etcd_ok;
		int mode;                  /* enum fleet_mode: 0 no grant yet, 1 granted, 2 safe */
		double budget_w, grant_w, draw_w; /* grant_w NaN: none received */
		uint64_t fallbacks;
	} fleet;
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
/* The device's policy (name, hash) for govd_policy_info; updates set it
 * too, this is for the time before the first period and after a reload. */
void metrics_device_set_policy(struct metrics_device *d, const struct policy *pol);
/* The device's identity from its limits (model, UUID, PCI bus id, index). */
void metrics_device_set_identity(struct metrics_device *d, const struct hal_limits *lim);

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
/* The endpoint's connection bounds (governor/daemon/connguard.h): any number of
 * slow or idle connections cannot keep a scrape out. */
#define METRICS_CONN_MAX 64
#define METRICS_CONN_PER_PEER 16
#define METRICS_REQUEST_DEADLINE_MS 5000
struct connguard_stats;
void metrics_conn_stats(struct metrics_server *m, struct connguard_stats *out);

#endif
