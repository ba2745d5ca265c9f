/* Policies: the YAML file users edit to tell the governor what to optimise
 * and within which limits. Every key, its unit, default and range:
 * docs/policy.md (the same language as policies/schema/policy.schema.json).
 *
 * Loading is a transaction: parse + validate into a new object; on any error
 * nothing is returned and every problem of the file is in the diag list with
 * file:line:col, the key path and what is allowed. Warnings (legal but risky
 * settings) go to the same list and do not fail the load.
 *
 * For controllers: read the resolved per-slice view with policy_slice_rule()
 * rather than walking slices[] (a slice the policy does not name gets the
 * policy-wide values). Zero means "not set" for the optional limits (the
 * device's own limit applies) unless a field says otherwise. */
#ifndef GOVD_GOVERNOR_POLICY_H
#define GOVD_GOVERNOR_POLICY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/sla.h"
#include "hal/hal.h"

#define POLICY_MAX_PARAMS 48
#define POLICY_MAX_SLICES HAL_MAX_SLICES
#define POLICY_NAME_LEN 64
#define POLICY_TEXT_LEN 128    /* metadata strings */
#define POLICY_MAX_OWNERS 8
#define POLICY_MAX_PATTERNS 8  /* envelope version patterns per list */
#define POLICY_PATTERN_LEN HAL_NAME_LEN

enum policy_objective {
	POLICY_OBJ_PERF_PER_WATT,  /* max tokens per joule within the SLA */
	POLICY_OBJ_MIN_ENERGY,     /* min joules at the SLA's throughput floor */
	POLICY_OBJ_MAX_THROUGHPUT, /* max tokens/s within power and thermal limits */
	POLICY_OBJ_N
};

/* objective.power_rails: bit (1u << enum hal_rail). */
#define POLICY_RAIL_BIT(r) (1u << (r))
#define POLICY_RAILS_ALL ((1u << HAL_RAIL_N) - 1u)

/* FP8 in precision.modes makes it the first rung of each slice's ladder
 * (bf16 -> fp8 -> int8; docs/govd-controller.md, "The precision ladder"). */
enum policy_prec { POLICY_PREC_BF16, POLICY_PREC_INT8, POLICY_PREC_FP8, POLICY_PREC_N };
#define POLICY_PREC_BIT(m) (1u << (m))

/* What the rollback manager returns to before any operating point has
 * qualified as last known good. */
enum policy_lkg_fallback { POLICY_LKG_SAFE_POINT, POLICY_LKG_FIRMWARE_DEFAULT, POLICY_LKG_N };

/* A control.params entry as written (a located raw value): the loader
 * checks only that it is a number; policy_bind_controller() checks the name
 * and the range against the controller's table and sets value. */
struct policy_param {
	char name[32];
	char text[48];          /* the scalar as written, for messages */
	int key_line, key_col;  /* of the key, 1-based, in the policy's path */
	int line, col;          /* of the value */
	double value;           /* as written; valid once bound */
	bool is_number;         /* false: the loader reported it */
};

/* A slice the policy names (precision.slices and/or quality.slices). Negative
 * means "not set here": the policy-wide value applies. */
struct policy_slice {
	char name[HAL_NAME_LEN];
	double int8_fraction;
	double int8_min_fraction, int8_max_fraction;
	double max_drop;
	double confidence;
	double shadow_rate;
	int64_t min_samples;
	/* Evidence from the precision qualification run (offline eval of the
	 * slice in both precisions): the gate's prior. 0/0: none. */
	uint32_t offline_samples, offline_mismatches;
	uint32_t fp8_offline_samples, fp8_offline_mismatches; /* the same for FP8 */
};

/* Everything a controller needs about one slice, resolved. */
struct policy_slice_rule {
	/* An 8-bit share may serve the slice: int8 or fp8 in precision.modes and
	 * int8_max_fraction > 0 (the int8_* shares are the 8-bit share, served
	 * in the slice's rung); and which rungs its ladder has. */
	bool low_allowed;
	bool int8_allowed;        /* low_allowed and int8 in precision.modes */
	bool fp8_allowed;         /* low_allowed and fp8 in precision.modes: the first rung */
	double int8_fraction;     /* starting / open-loop INT8 share */
	double int8_min_fraction; /* guard bounds on the INT8 share */
	double int8_max_fraction;
	double max_drop;          /* accuracy drop allowed for INT8 (fraction, 0.01 = 1 point) */
	double confidence;        /* one-sided level of the drop's upper bound */
	uint32_t min_samples;     /* shadow samples before INT8 may serve the slice */
	double shadow_rate;       /* share of the slice's requests shadow-evaluated */
	uint32_t offline_samples, offline_mismatches; /* qualification evidence (prior) */
	uint32_t fp8_offline_samples, fp8_offline_mismatches; /* FP8's */
	uint32_t confirm_samples; /* quality.confirm_samples */
};

/* The device's slices (as the serving side names them) with the policy's
 * rule for each, resolved once per governor: what every stage that
 * steers or judges a slice reads. */
struct policy_slices {
	size_t n;
	char name[HAL_MAX_SLICES][HAL_NAME_LEN];
	struct policy_slice_rule rule[HAL_MAX_SLICES];
};

struct policy {
	char name[POLICY_NAME_LEN];
	char description[256];
	char path[4096];
	uint64_t hash;        /* FNV-1a 64 of the file bytes */
	char hash_hex[32];    /* "fnv1a64:0123456789abcdef" */
	struct {
		size_t n_owners;
		char owners[POLICY_MAX_OWNERS][POLICY_TEXT_LEN];
		char workload_profile[POLICY_TEXT_LEN];
		char model_revision[POLICY_TEXT_LEN];
		char power_mode[POLICY_TEXT_LEN]; /* platform power mode validated in */
		struct {
			char compiler[POLICY_TEXT_LEN], runtime[POLICY_TEXT_LEN];
			char driver[POLICY_TEXT_LEN], firmware[POLICY_TEXT_LEN];
		} validated_with; /* provenance; envelope.* is what is enforced */
	} metadata;
	struct {
		enum policy_objective kind;
		uint32_t rails; /* POLICY_RAIL_BIT(HAL_RAIL_*) counted in energy/power */
	} objective;
	struct {
		char controller[32];
		int controller_line, controller_col; /* where it was named (0: not) */
		int params_line, params_col;         /* control.params (0: absent) */
		uint32_t period_ms;
		size_t n_params;
		struct policy_param params[POLICY_MAX_PARAMS];
	} control;
	struct {
		double window_s;
		double latency_ms[SLA_N_ROWS]; /* by SLA_INDEX() (common/sla.h); 0: no target */
		double min_tokens_per_s; /* throughput floor per window; 0: none */
		double attainment; /* target share of windows meeting every target */
	} sla;
	struct {
		double ceiling_c, hysteresis_c;
	} thermal;
	struct {
		double cap_w;           /* upper bound on the device power limit; 0: device max */
		double budget_w;        /* mean power of objective.rails over budget_window_s; 0: none */
		double budget_window_s;
	} power;
	struct {
		double min_mhz, max_mhz, max_step_mhz; /* 0: device limit / unlimited step */
	} frequency;
	struct {
		uint32_t modes;              /* POLICY_PREC_BIT(POLICY_PREC_*) */
		enum policy_prec fallback;   /* served when INT8 is denied or on rollback */
		double int8_fraction;        /* default for slices not named */
		double int8_min_fraction, int8_max_fraction;
	} precision;
	struct {
		double default_max_drop;
		double confidence;
		uint32_t min_samples;
		double shadow_rate;
		/* Online shadow samples of a slice before its offline prior
		 * counts (the prior describes the qualification set, not this
		 * deployment, until online evidence agrees); 0: at once. */
		uint32_t confirm_samples;
		/* Evidence on demand (docs/govd-controller.md, "Evidence on
		 * demand"): the shadow rate govd asks the serving side for on a
		 * slice whose gate is undecided; the detection delay (seconds,
		 * a drift to 3 x max_drop) it keeps on a slice INT8 serves; the
		 * share of all requests those asks may add to the re-runs. */
		double probation_rate;
		double max_detect_s;
		double shadow_budget;
	} quality;
	size_t n_slices; /* union of slices named in precision.slices and quality.slices */
	struct policy_slice slices[POLICY_MAX_SLICES];
	struct {
		double clk_max_mhz;   /* 0: clocks unlocked (firmware default) */
		double power_cap_w;   /* 0: device default limit */
		double int8_fraction;
		uint32_t hold_periods; /* clean periods before leaving the safe point */
	} safe_point;
	/* What the policy was validated on; outside it the governor falls back to
	 * the safe point (policy_envelope_check). */
	struct policy_envelope {
		double inlet_min_c, inlet_max_c;             /* -inf / +inf: no assumption */
		double power_limit_min_w, power_limit_max_w; /* device must accept this range; 0: any */
		double clk_min_mhz, clk_max_mhz;             /* device must reach this range; 0: any */
		double slowdown_c;                           /* hardware slowdown assumed */
		size_t n_driver, n_firmware;                 /* 0: any version */
		char driver_versions[POLICY_MAX_PATTERNS][POLICY_PATTERN_LEN];   /* fnmatch(3) */
		char firmware_versions[POLICY_MAX_PATTERNS][POLICY_PATTERN_LEN];
	} envelope;
	struct policy_rollback {
		uint32_t sla_violated_windows; /* N of the last M SLA windows missed: 0 off */
		uint32_t sla_of_windows;       /* M */
		bool quality_breach;           /* a slice's drop upper bound above its max_drop */
		uint32_t thermal_clamp_events; /* hardware slowdown entries in the canary; 0 off */
		uint32_t telemetry_faults;     /* fault onsets in the canary; 0 off */
		double canary_s;               /* watch window after a change */
		double hold_s;                 /* stay at last known good at least this long */
		double backoff_factor;         /* hold_s multiplier per repeated rollback */
		double max_hold_s;
		uint32_t lkg_min_clean_windows; /* clean SLA windows before a point is "good" */
		enum policy_lkg_fallback lkg_fallback;
	} rollback;
	struct {
		double ewma_tau_s;    /* rail power filter time constant */
		uint32_t stale_ms;    /* a reading older than this is stale */
		uint32_t stuck_periods;
	} telemetry;
};


/* One key of the policy language (governor/policy/policy_keys.c has them
 * all): what drives the loader's allowed keys and number checks, the
 * defaults, the JSON Schema and the doc's key tables. */
enum policy_key_type {
	POLICY_KEY_NUMBER,   /* double */
	POLICY_KEY_UINT,     /* uint32_t */
	POLICY_KEY_INT64,    /* int64_t (a slice's, -1 unset) */
	POLICY_KEY_BOOL,
	POLICY_KEY_ENUM,     /* one of names: an enum (int-sized) */
	POLICY_KEY_SET,      /* a non-empty list of names, each once: uint32_t bits */
	POLICY_KEY_TEXT,     /* a string (size > 0; else read by its own code) */
	POLICY_KEY_LIST,     /* a list of strings (size > 0; else its own code) */
	POLICY_KEY_MAP,      /* a section, or a map of slices: its own code */
	POLICY_KEY_SLA_ROWS, /* stands for common/sla.h's rows (sla.ttft_p99_ms, ...) */
};

struct policy_key {
	const char *path;  /* "thermal.ceiling_c"; "quality.slices.*.max_drop": per slice */
	enum policy_key_type type;
	const char *unit;  /* "C", "W", "tokens/s"; "" */
	double def;        /* what policy_defaults sets; NaN: derived or inherited (def_doc) */
	const char *def_doc; /* the default as the doc shows it; NULL: def */
	double lo, hi;     /* allowed range of a number */
	const char *range_doc; /* what else bounds it (a number), or the range (other types) */
	size_t off;        /* in struct policy, or struct policy_slice where slice */
	bool slice;
	/* A text's buffer size, or a list's item size, its most items and
	 * where its count is; 0: read by its own code in policy.c. */
	size_t size, max_items, count_off;
	const char *doc;   /* its meaning; NULL: a section, documented by its keys */
	const char *const *names; /* an enum's or a set's values, NULL-terminated */
};

size_t policy_key_count(void);
const struct policy_key *policy_key_at(size_t i);
/* A number, integer, boolean, enum or set: its row gives its default
 * (policy_key_defaults). */
bool policy_key_defaulted(const struct policy_key *k);
/* The last part of the path ("ceiling_c"). */
const char *policy_key_name(const struct policy_key *k);
/* The direct children of section ("" top level, "quality.slices.*"), in
 * table order; returns their count (at most max are stored). */
size_t policy_section_keys(const char *section, const struct policy_key **out, size_t max);
/* The rows' defaults written into p (the rest of policy_defaults). */
void policy_key_defaults(struct policy *p);

/* A numeric parameter a controller accepts under control.params. def is the
 * one place its default lives (NaN: none; the controller derives one). The
 * policy language checks values against it; each controller owns its table. */
struct ctl_param {
	const char *name;
	double min, max, def;
	const char *doc;
};

/* The policy language alone: parses and checks everything but what depends
 * on the controller (its name and control.params, kept as located raw
 * values). *out is set whenever the document parsed, also with errors (0 or
 * -EINVAL), so binding can report its own in the same pass; NULL when not
 * (unreadable, not YAML). governor/controllers/ supplies policy_load and
 * policy_load_string, parse + bind, which most callers use. */
int policy_parse(const char *path, struct policy **out, struct diag_list *diags);
int policy_parse_string(const char *name, const char *text, size_t len, struct policy **out,
			struct diag_list *diags);
/* Binds control.params to a controller: known says whether control.controller
 * names one (valid_names lists them, for the error), params is its table
 * (NULL-terminated; NULL: it takes none). Errors point at the stored
 * locations, in the loader's formats; diags from index first on are put back
 * in file order. 0 or -EINVAL. */
int policy_bind_controller(struct policy *p, bool known, const char *valid_names,
			   const struct ctl_param *params, struct diag_list *diags, size_t first);
void policy_free(struct policy *p);
/* The values a policy has for every key it leaves out (no name, no controller). */
void policy_defaults(struct policy *p);
/* telemetry.stale_ms when the policy leaves it out: a reading may be this
 * many control periods old before it is called stale. */
#define POLICY_STALE_PERIODS 3
static inline uint32_t policy_default_stale_ms(uint32_t period_ms)
{
	return POLICY_STALE_PERIODS * period_ms;
}
/* Controller parameter by name (validated at load), or def when absent. */
double policy_param(const struct policy *p, const char *name, double def);
/* The parameter as written (its value and where), NULL when not set. */
const struct policy_param *policy_param_find(const struct policy *p, const char *name);
/* Per device slice, by name: the quality threshold. */
double policy_slice_max_drop(const struct policy *p, const char *slice);
/* Every per-slice setting resolved against the policy-wide values. */
void policy_slice_rule(const struct policy *p, const char *slice, struct policy_slice_rule *out);
/* n named slices (at most HAL_MAX_SLICES kept) and their rules. */
void policy_slices_resolve(const struct policy *p, const char (*names)[HAL_NAME_LEN], size_t n,
			   struct policy_slices *out);
/* Whether the running system is inside the policy's envelope: device limits
 * (power-limit and clock ranges, slowdown, driver/firmware versions) and the
 * inlet temperature now (NaN: unknown, which is outside when the policy
 * assumes an inlet range). Pure. Outside: false and why gets every reason,
 * "; "-joined (why may be NULL). */
bool policy_envelope_check(const struct policy *p, const struct hal_limits *lim, double inlet_c,
			   char *why, size_t len);
/* The names policies use for the enums, indexed by value, NULL-terminated. */
extern const char *const policy_objective_names[]; /* POLICY_OBJ_N + 1 */
extern const char *const policy_prec_names[];      /* POLICY_PREC_N + 1 */
extern const char *const policy_lkg_names[];       /* POLICY_LKG_N + 1 */
extern const char *const policy_rail_names[];      /* HAL_RAIL_N + 1: objective.power_rails */
const char *policy_prec_name(enum policy_prec m);
uint64_t fnv1a64(const void *data, size_t len);

#endif
