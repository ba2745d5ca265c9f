/* The hardware abstraction: one ops table per backend, the device holds
 * ops + priv (like libmodbus's modbus_backend_t or the kernel's
 * struct thermal_governor). Optional capabilities are NULL members, tested
 * with hal_can_*(). Units are in the names: _mw, _mc (milli-Celsius), _khz,
 * _mj, _ms. Every sampled value carries its own timestamp and validity so the
 * governor's validator can name stale and missing data.
 *
 * Backends: sim (plant_models/), sysfs, nvml, modbus, gpio, serving. A
 * backend compiled out is still in the registry and fails with
 * "not compiled in". Nothing here includes governor/. */
#ifndef GOVD_HAL_H
#define GOVD_HAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/diag.h"
#include "common/hist.h"

#define HAL_MAX_SLICES 8
#define HAL_NAME_LEN 48
#define HAL_FAULT_LEN 64

enum hal_rail { HAL_RAIL_ACCEL, HAL_RAIL_MEMORY, HAL_RAIL_HOST, HAL_RAIL_N };
enum hal_temp { HAL_TEMP_JUNCTION, HAL_TEMP_MEMORY, HAL_TEMP_INLET, HAL_TEMP_N };
/* A slice's low-precision mode (set_low_mode); zero is INT8, the one mode
 * before the ladder. */
enum hal_low_mode { HAL_LOW_INT8, HAL_LOW_FP8, HAL_LOW_N };
/* Their names in documents, datagrams and configs, by enum; NULL-terminated. */
extern const char *const hal_low_mode_names[HAL_LOW_N + 1];

/* Throttle (clocks-event) reasons, NVML-like bits. */
enum hal_throttle {
	HAL_THR_POWER_CAP = 1u << 0,   /* firmware holds the power limit */
	HAL_THR_SW_THERMAL = 1u << 1,  /* firmware thermal target trims boost */
	HAL_THR_HW_SLOWDOWN = 1u << 2, /* hardware thermal slowdown (clamp) */
	HAL_THR_APP_CLOCKS = 1u << 3,  /* clocks locked below max by software */
	HAL_THR_IDLE = 1u << 4,
};

/* Physical plausibility: what no sensor of a working device can report
 * (below absolute zero, negative power) or what lies far beyond any
 * accelerator. The one table of these limits: backends reject a reading
 * outside (valid = false, a fault), the governor's validator calls it
 * out_of_range; the same reading must not pass one and fail the other. */
#define HAL_TEMP_MIN_MC (-273150)       /* absolute zero */
#define HAL_TEMP_MAX_MC 250000          /* junction, memory */
#define HAL_TEMP_INLET_MAX_MC 100000    /* inlet air or coolant */
#define HAL_POWER_MAX_MW 5000000        /* any rail, and the power limit */
#define HAL_CLK_MAX_KHZ 10000000
#define HAL_UTIL_MAX_PCT 100

static inline int64_t hal_temp_max_mc(enum hal_temp t)
{
	return t == HAL_TEMP_INLET ? HAL_TEMP_INLET_MAX_MC : HAL_TEMP_MAX_MC;
}

/* One reading: value in the unit of the field that holds it. */
struct hal_value {
	int64_t v;
	uint64_t t_ms; /* when the value was measured (backend clock) */
	bool valid;    /* false: the source gave nothing (dropout, meter lost) */
	bool nan;      /* the source gave a non-number (NaN/Inf): valid stays true,
			* v = HAL_V_NAN so a range check rejects it as well */
};
#define HAL_V_NAN INT64_MIN

struct hal_sample {
	uint64_t t_ms;
	struct hal_value power_mw[HAL_RAIL_N];
	struct hal_value energy_mj[HAL_RAIL_N]; /* monotonic counters where offered */
	struct hal_value temp_mc[HAL_TEMP_N];
	struct hal_value clk_khz;               /* current effective SM clock */
	struct hal_value power_limit_mw;        /* limit in force */
	struct hal_value util_pct;              /* busy share of the last interval */
	uint32_t throttle;                      /* enum hal_throttle bits */
	/* Cumulative firmware counters (sim and NVML violation counters). */
	uint64_t clamp_events;                  /* hardware slowdown entries */
	uint64_t clamp_time_ms;
	/* Readings the backend could not read (file gone, NVML error) or
	 * rejected as absurd (negative power, below absolute zero, counter
	 * backwards; limits HAL_*_MIN/MAX above): cumulative count and the
	 * latest reason, e.g.
	 * "hwmon3/temp2_input: -274000 mC out of [-273.15, 250] C". The value
	 * itself has valid=false. sim leaves both zero. */
	uint32_t fault_count;
	char fault[HAL_FAULT_LEN];
};

/* A real backend's readings it could not take or rejected, kept across
 * samples (hal_fault) and copied into each sample (hal_faults_put). */
struct hal_faults {
	uint32_t n;
	char msg[HAL_FAULT_LEN];
};
void hal_fault(struct hal_faults *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hal_faults_put(const struct hal_faults *f, struct hal_sample *out);

/* What the device accepts: the governor's envelope comes from here. */
struct hal_limits {
	uint32_t clk_min_khz, clk_max_khz, clk_step_khz;
	uint32_t clk_default_max_khz;           /* max boost the firmware uses unlocked */
	uint32_t power_limit_min_mw, power_limit_max_mw, power_limit_default_mw;
	int32_t slowdown_mc, shutdown_mc;        /* hardware thermal thresholds */
	char model[HAL_NAME_LEN];               /* "h200-sxm", "NVIDIA H200", ... */
	char driver_version[HAL_NAME_LEN];
	char firmware_version[HAL_NAME_LEN];
	/* Identity, as dcgm-exporter labels the same GPU ("" / false: not known):
	 * NVML UUID ("GPU-..."), PCI bus id ("00000000:3B:00.0"), NVML index. */
	char uuid[HAL_NAME_LEN];
	char pci_bus_id[HAL_NAME_LEN];
	bool have_index;
	uint32_t index;
	/* MIG: a child (a GPU instance) carries its own UUID ("MIG-...") here,
	 * uuid above being its parent's as dcgm-exporter labels it, and its GPU
	 * instance id (mig_gi_id, meaningful when mig_uuid is set); a parent in
	 * MIG mode has mig_enabled. */
	char mig_uuid[HAL_NAME_LEN];
	int32_t mig_gi_id;
	bool mig_enabled;
};

/* Serving telemetry: cumulative like Prometheus counters and histograms. */
struct hal_serving {
	uint64_t t_ms;
	bool valid;
	uint64_t requests_completed;
	uint64_t tokens_generated;
	uint64_t tokens_int8;
	uint64_t queue_len;      /* waiting requests now */
	uint64_t running;        /* requests in the batch now */
	const struct hist *ttft; /* cumulative; owned by the backend, valid until next call */
	const struct hist *tbt;
	const struct hist *e2e;
	size_t n_slices;
	char slice_name[HAL_MAX_SLICES][HAL_NAME_LEN];
	uint64_t slice_completed[HAL_MAX_SLICES];
	uint64_t slice_int8_completed[HAL_MAX_SLICES];
	uint64_t slice_tokens_int8[HAL_MAX_SLICES];
	/* Added for the serving backend (a scraped server); the sim leaves them
	 * zero. Latency quantiles are not here: the governor takes them from
	 * the cumulative ttft/tbt/e2e histograms (hist_delta + hist_quantile). */
	uint32_t fault_bits;               /* enum hal_serving_fault bits of this read */
	const char *fault_msg;             /* owned by the backend, valid until the next call; NULL if none */
	uint64_t precision_gen_set;        /* generation of the last precision document sent */
	uint64_t precision_gen_applied;    /* generation the server reports applied (0: not reported) */
	/* Added with the current server metrics (docs/serving-integration.md,
	 * "Metric names"); the sim leaves them zero. */
	const struct hist *queue_time; /* cumulative time requests waited to be scheduled; NULL: none */
	bool kv_usage_valid;           /* the server reports its KV cache use */
	double kv_usage_frac;          /* KV cache in use, 0..1: the fullest of the series and replicas */
	size_t n_replicas;             /* endpoints merged into this read (url and replica_urls) */
};

/* Named faults of a serving read (bits in hal_serving.faults / hal_quality.faults). */
enum hal_serving_fault {
	HAL_SVF_CONNECT = 1u << 0,     /* refused, unreachable, reset mid-transfer */
	HAL_SVF_TIMEOUT = 1u << 1,     /* scrape exceeded timeout_ms */
	HAL_SVF_HTTP = 1u << 2,        /* HTTP status other than 2xx */
	HAL_SVF_PARSE = 1u << 3,       /* malformed, truncated or oversized exposition text */
	HAL_SVF_MISSING = 1u << 4,     /* a configured metric absent or matched by no series */
	HAL_SVF_RESET = 1u << 5,       /* counter reset seen (data still valid) */
	HAL_SVF_ACTUATION = 1u << 6,   /* applied precision generation differs from the one sent */
	HAL_SVF_QUALITY_MSG = 1u << 7, /* malformed or unknown-slice quality datagram */
	HAL_SVF_IMPLAUSIBLE = 1u << 8, /* a value no healthy peer reports: NaN, +-Inf, negative,
					* over its bound; nothing of that read is counted */
};

/* Shadow-evaluation outcomes per slice, cumulative. */
struct hal_quality {
	uint64_t t_ms;
	bool valid;
	size_t n_slices;
	uint64_t samples[HAL_MAX_SLICES];
	uint64_t mismatches[HAL_MAX_SLICES]; /* INT8 answer worse than BF16 */
	/* The same sampled requests' FP8 answers against BF16, where the
	 * server evaluates FP8 too (the precision ladder); zero otherwise. */
	uint64_t samples_fp8[HAL_MAX_SLICES];
	uint64_t mismatches_fp8[HAL_MAX_SLICES];
	/* Added for the serving backend: evaluator-reported quality delta
	 * (INT8 score - BF16 score, last value; meaningful where bit i of
	 * delta_valid is set), malformed messages (cumulative) and the faults
	 * of this read (enum hal_serving_fault). The sim leaves all zero. */
	double delta[HAL_MAX_SLICES];
	uint32_t delta_valid;
	uint64_t malformed;
	uint32_t fault_bits;
	const char *fault_msg; /* owned by the backend, valid until the next call */
};

/* An edge on an alert line after debouncing (gpio backend). */
enum hal_alert_kind { HAL_ALERT_ASSERTED = 1, HAL_ALERT_CLEARED = 2 };

struct hal_alert {
	enum hal_alert_kind kind;
	uint64_t t_ms; /* CLOCK_MONOTONIC time of the edge */
	uint64_t seq;  /* 1, 2, ... per accepted edge since open; a gap = events dropped */
};

struct hal_dev;

/* Backend configuration, opaque string pairs so hal/ needs no YAML; the
 * config loader fills it. The sim backend takes "scenario" and "seed". */
struct hal_dev_cfg {
	const char *name;      /* device name in logs: "gpu0" */
	const char *backend;   /* registry name */
	size_t n_opts;
	const char *const *keys;
	const char *const *values;
	void *plant;           /* sim only: an already created struct plant (optional) */
	/* Timestamps of real backends (sysfs, nvml, modbus, gpio, serving);
	 * NULL: CLOCK_MONOTONIC (govd_clock_now_or_mono_ms). The daemon passes
	 * its own clock so every t_ms shares one time base, tests pass a
	 * scripted one. Timeouts stay real time (govd_mono_ms). */
	const struct govd_clock *clock;
	/* A dry run: the backend writes nothing to its device, router or
	 * actuator on any path (reads, faults, close), not only in the set
	 * ops the daemon's dry view already refuses. */
	bool read_only;
};

#define HAL_ID_LEN 256
#define HAL_MAX_WRITER_IDS 12
#define HAL_MAX_EXPAND 64 /* CONFIG_MAX_DEVICES */

/* One config entry that selects several devices (nvml's `all: true`), as
 * the devices it stands for: n copies of the entry, each without the
 * option drop_key and with set_key = value[i]; value[i] names the copy
 * too (a GPU's UUID). n = 0: the entry is one device. */
struct hal_expansion {
	size_t n;
	char drop_key[32], set_key[32];
	char value[HAL_MAX_EXPAND][HAL_NAME_LEN];
};

struct hal_ops {
	const char *name;
	int (*open)(struct hal_dev *dev, const struct hal_dev_cfg *cfg, struct diag_list *diags);
	void (*close)(struct hal_dev *dev);
	/* Optional: the options judged as open would judge them, opening
	 * nothing (govd --check places the diags at the config's device). */
	int (*check_options)(const struct hal_dev_cfg *cfg, struct diag_list *diags);
	/* Optional: the devices an entry selects (struct hal_expansion), found
	 * by reading only (nvml: nvmlInit and the device list, no write). */
	int (*expand)(const struct hal_dev_cfg *cfg, struct hal_expansion *out,
		      struct diag_list *diags);
	int (*get_limits)(struct hal_dev *dev, struct hal_limits *out);
	/* Fills every field of *out (clear it first): the governor does not. */
	int (*sample)(struct hal_dev *dev, struct hal_sample *out);
	/* Optional capabilities. */
	int (*set_clock_range)(struct hal_dev *dev, uint32_t min_khz, uint32_t max_khz);
	int (*reset_clocks)(struct hal_dev *dev); /* back to firmware default */
	int (*set_power_limit)(struct hal_dev *dev, uint32_t limit_mw);
	int (*read_serving)(struct hal_dev *dev, struct hal_serving *out);
	int (*read_quality)(struct hal_dev *dev, struct hal_quality *out);
	/* INT8 share per slice in [0,1]; slices in read_serving order. */
	int (*set_precision)(struct hal_dev *dev, const double *int8_frac, size_t n_slices);
	/* The low mode per slice (enum hal_low_mode): what its low-precision
	 * share (set_precision) is served in and what shadow evaluation
	 * compares with BF16. The precision ladder's actuator; NULL where the
	 * backend serves one 8-bit mode (INT8). Slices as set_precision. */
	int (*set_low_mode)(struct hal_dev *dev, const uint8_t *mode, size_t n_slices);
	/* Shadow-evaluation rate per slice asked of the serving side, in [0,1]
	 * (share of the slice's completed requests re-run in the other
	 * precision); 0: the server's own rate. Slices as set_precision. */
	int (*set_shadow_rate)(struct hal_dev *dev, const double *rate, size_t n_slices);
	/* The settings the backend found before its first write (taken now if no
	 * write happened yet), as one JSON object for the daemon's crash-safety
	 * state file; close() restores them. 0, or -ENOSPC when len is short. */
	int (*get_original)(struct hal_dev *dev, char *json, size_t len);
	/* Why the last failed op failed ("nvml: nvmlDeviceSetGpuLockedClocks:
	 * Insufficient Permissions"), "" when none did. Valid until the next op. */
	const char *(*last_error)(struct hal_dev *dev);
	/* Out-of-period alert input: a pollable fd (POLLIN when alert_read has
	 * something); alert_read returns 1 with *ev filled, 0 when nothing is
	 * pending (never blocks), -errno on failure. */
	int (*alert_fd)(struct hal_dev *dev);
	int (*alert_read)(struct hal_dev *dev, struct hal_alert *ev);
	/* Power-brake / throttle request output (true = brake asserted). */
	int (*set_brake)(struct hal_dev *dev, bool on);
	/* Restore after a crash: take json, a get_original() object an earlier
	 * run recorded in the state file, as this device's originals instead of
	 * what open() found (the governed settings), and treat the device as
	 * written, so close() puts the recorded settings back even without a
	 * write here. Call right after open, before any write. 0; -EINVAL when
	 * the record is malformed or not this backend's; -ENODEV when it names
	 * another device (index, model): nothing adopted, last_error says why.
	 * Optional: backends whose record is a replayable write list (sysfs)
	 * or that write nothing lasting (sim) leave it NULL. */
	int (*adopt_original)(struct hal_dev *dev, const char *json);
	/* Puts back, now, the settings this backend found before its first
	 * write (or adopted): a device's one restore. governor_restore() calls
	 * it at the end of a run, close() for whatever is still changed.
	 * Idempotent; the device may be written again after. 0 or -errno
	 * (last_error says why). NULL: the backend writes nothing lasting. */
	int (*restore)(struct hal_dev *dev);
	/* What this device writes, as machine-wide names ("gpu:GPU-8c1e...",
	 * "sysfs:/sys/devices/pci0000:00/.../0000:03:00.0",
	 * "haproxy:/run/haproxy/admin.sock#be_code", one per backend written):
	 * the daemon holds each as a lock,
	 * so a device has one writer however configs name it. Up to max into
	 * ids; how many. NULL: the backend writes nothing outside its process
	 * (sim). */
	size_t (*writer_ids)(struct hal_dev *dev, char (*ids)[HAL_ID_LEN], size_t max);
};

/* open() may point ops at a per-device copy of its table in priv, with the
 * capabilities this device lacks set to NULL, so hal_can_*() tell the truth
 * (sysfs, nvml do); hal_open must not overwrite ops after open returns. */
struct hal_dev {
	const struct hal_ops *ops;
	void *priv;
	char name[HAL_NAME_LEN];
};

/* Registry (static table). Unknown name: -ENOENT with a diag listing the
 * valid names; known but compiled out: -ENOTSUP, "not compiled in". */
const struct hal_ops *hal_backend_find(const char *name, struct diag_list *diags);
size_t hal_backend_names(const char **names, size_t max);
int hal_open(struct hal_dev *dev, const struct hal_dev_cfg *cfg, struct diag_list *diags);
/* The backend's check_options where it has one (0 where it has none);
 * -ENOENT / -ENOTSUP for a backend unknown or compiled out. */
int hal_check_options(const struct hal_dev_cfg *cfg, struct diag_list *diags);
/* The backend's expand where it has one (out->n = 0 where it has none). */
int hal_expand(const struct hal_dev_cfg *cfg, struct hal_expansion *out, struct diag_list *diags);
void hal_close(struct hal_dev *dev);

static inline bool hal_can_set_clocks(const struct hal_dev *d) { return d->ops->set_clock_range != NULL; }
static inline bool hal_can_set_power_limit(const struct hal_dev *d) { return d->ops->set_power_limit != NULL; }
static inline bool hal_can_read_serving(const struct hal_dev *d) { return d->ops->read_serving != NULL; }
static inline bool hal_can_read_quality(const struct hal_dev *d) { return d->ops->read_quality != NULL; }
static inline bool hal_can_set_precision(const struct hal_dev *d) { return d->ops->set_precision != NULL; }
static inline bool hal_can_set_low_mode(const struct hal_dev *d) { return d->ops->set_low_mode != NULL; }
static inline bool hal_can_set_shadow_rate(const struct hal_dev *d) { return d->ops->set_shadow_rate != NULL; }
static inline bool hal_can_alert(const struct hal_dev *d) { return d->ops->alert_fd != NULL && d->ops->alert_read != NULL; }
static inline bool hal_can_brake(const struct hal_dev *d) { return d->ops->set_brake != NULL; }
static inline bool hal_can_adopt_original(const struct hal_dev *d) { return d->ops->adopt_original != NULL; }
static inline bool hal_can_restore(const struct hal_dev *d) { return d->ops->restore != NULL; }

#endif
