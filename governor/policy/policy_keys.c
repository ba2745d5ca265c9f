/* Every key of the policy language, one row each: its path, type, unit,
 * default, range and meaning. The rows drive the loader's allowed keys and
 * its checks of every number and boolean (policy.c), the defaults
 * (policy_defaults), and through `govctl lint --keys` the JSON Schema's
 * types, ranges, defaults and descriptions and the key tables of
 * docs/policy.md (tools/gen-policy-keys writes both; CI checks them). */
#include "governor/policy/policy.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define P(field) offsetof(struct policy, field), false, 0, 0, 0
#define S(field) offsetof(struct policy_slice, field), true, 0, 0, 0
#define NONE 0, false, 0, 0, 0
/* a text: its buffer; a list of texts: its items and their count */
#define T(field) offsetof(struct policy, field), false, sizeof(((struct policy *)0)->field), 0, 0
#define L(field, count)                                                                         \
	offsetof(struct policy, field), false, sizeof(((struct policy *)0)->field[0]),            \
		sizeof(((struct policy *)0)->field) / sizeof(((struct policy *)0)->field[0]),     \
		offsetof(struct policy, count)

const char *const policy_rail_names[] = { "accel", "memory", "host", NULL };

static const struct policy_key keys[] = {
	/* top level */
	{ "name", POLICY_KEY_TEXT, "", NAN, "required", 0, 0, "name, <= 63 chars", NONE,
	  "labels runs, logs and output directories", NULL },
	{ "description", POLICY_KEY_TEXT, "", NAN, "\"\"", 0, 0, "<= 255 chars", T(description),
	  "one line on the purpose", NULL },
	{ "metadata", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "objective", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "control", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "sla", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "thermal", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "power", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "frequency", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "precision", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "quality", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "envelope", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "safe_point", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "rollback", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "telemetry", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },

	/* metadata */
	{ "metadata.owners", POLICY_KEY_LIST, "", NAN, "none (warning)", 0, 0,
	  "list of 1..8 strings", L(metadata.owners, metadata.n_owners), "who answers for the policy", NULL },
	{ "metadata.workload_profile", POLICY_KEY_TEXT, "", NAN, "\"\"", 0, 0, "string", T(metadata.workload_profile),
	  "workload it was tuned on (scenario, trace, traffic class)", NULL },
	{ "metadata.model_revision", POLICY_KEY_TEXT, "", NAN, "\"\"", 0, 0, "string", T(metadata.model_revision),
	  "model and revision served", NULL },
	{ "metadata.validated_with", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "metadata.power_mode", POLICY_KEY_TEXT, "", NAN, "\"\"", 0, 0, "string", T(metadata.power_mode),
	  "platform power mode validated in (MaxQ, MaxP, default ...)", NULL },
	{ "metadata.validated_with.compiler", POLICY_KEY_TEXT, "", NAN, "\"\"", 0, 0, "string", T(metadata.validated_with.compiler),
	  "compiler version of the perf-per-watt workflow the policy was validated with (provenance "
	  "only; what is enforced is `envelope`)", NULL },
	{ "metadata.validated_with.runtime", POLICY_KEY_TEXT, "", NAN, "\"\"", 0, 0, "string", T(metadata.validated_with.runtime),
	  "runtime version it was validated with (provenance only)", NULL },
	{ "metadata.validated_with.driver", POLICY_KEY_TEXT, "", NAN, "\"\"", 0, 0, "string", T(metadata.validated_with.driver),
	  "driver version it was validated with (provenance only; one that no "
	  "`envelope.driver_versions` pattern matches is a warning)", NULL },
	{ "metadata.validated_with.firmware", POLICY_KEY_TEXT, "", NAN, "\"\"", 0, 0, "string", T(metadata.validated_with.firmware),
	  "firmware version it was validated with (provenance only)", NULL },

	/* objective */
	{ "objective.kind", POLICY_KEY_ENUM, "", POLICY_OBJ_PERF_PER_WATT, NULL, 0, 0, NULL,
	  P(objective.kind),
	  "perf_per_watt: most tokens per joule while the SLA holds; min_energy: least energy while "
	  "the SLA (incl. `min_tokens_per_s`) holds; max_throughput: most tokens/s within the power "
	  "and thermal limits",
	  policy_objective_names },
	{ "objective.power_rails", POLICY_KEY_SET, "", POLICY_RAILS_ALL, NULL, 0, 0, NULL,
	  P(objective.rails), "which power counts in tokens per joule and in `power.budget_w`",
	  policy_rail_names },

	/* control */
	{ "control.controller", POLICY_KEY_TEXT, "", NAN, "required", 0, 0,
	  "a name in the governor's controller registry", NONE,
	  "the closed-loop `govd` (docs/govd-controller.md) and the baselines: firmware-default, "
	  "static, naive-int8, ondemand, ipa, slo-dvfs (`govctl lint --controllers` lists them with "
	  "their parameters, ranges and defaults). The loader asks the registry, so a new controller "
	  "needs no loader change", NULL },
	{ "control.period_ms", POLICY_KEY_UINT, "ms", 500, NULL, 10, 60000, NULL,
	  P(control.period_ms), "control period (warning under 50 ms)", NULL },
	{ "control.params", POLICY_KEY_MAP, "per parameter", NAN, "the controller's", 0, 0,
	  "the controller's table", NONE,
	  "controller gains and parameters, `params.<name>`: the controller's own table (`struct "
	  "ctl_param`) gives names, ranges and defaults (the controller reads its defaults from there "
	  "too); docs/baselines.md. A controller without parameters rejects the section. Every value "
	  "must be a plain number whatever its key (`expected a number` even beside `unknown key`); "
	  "the name and the range are checked when the policy is bound to its controller, with the "
	  "same file:line:col", NULL },

	/* sla */
	{ "sla.window_s", POLICY_KEY_NUMBER, "s", 60, NULL, 1, 3600, ">= one period",
	  P(sla.window_s), "SLA window: latency quantiles and attainment are judged per window", NULL },
	{ "sla.attainment", POLICY_KEY_NUMBER, "", 0.99, NULL, 0, 1, NULL, P(sla.attainment),
	  "share of windows that must meet every target", NULL },
	{ "sla.<latency>", POLICY_KEY_SLA_ROWS, "ms", 0, "0 (none)", 0, 0, NULL, NONE,
	  "target of that quantile of that latency (common/sla.h's rows)", NULL },
	{ "sla.min_tokens_per_s", POLICY_KEY_NUMBER, "tokens/s", 0, "0 (none)", 0, 1e9, NULL,
	  P(sla.min_tokens_per_s),
	  "throughput floor of a window; meant for windows where demand exceeds it (a window with "
	  "less offered load cannot meet a floor and is judged by the governor on latency only)", NULL },

	/* thermal, power, frequency */
	{ "thermal.ceiling_c", POLICY_KEY_NUMBER, "C", 83, NULL, 20, 150, "< `envelope.slowdown_c`",
	  P(thermal.ceiling_c),
	  "soft junction ceiling the governor keeps below the hardware slowdown (warning within 2 C "
	  "of it: one period of a load step can climb that far)", NULL },
	{ "thermal.hysteresis_c", POLICY_KEY_NUMBER, "C", 2, NULL, 0, 30, NULL,
	  P(thermal.hysteresis_c),
	  "a controller that backs off at the ceiling resumes below `ceiling_c - hysteresis_c` "
	  "(warning at 0)", NULL },
	{ "power.cap_w", POLICY_KEY_NUMBER, "W", 0, "0 (device max)", 0, 5000,
	  "inside the envelope's power-limit range", P(power.cap_w),
	  "upper bound on the device power limit any controller may set", NULL },
	{ "power.budget_w", POLICY_KEY_NUMBER, "W", 0, "0 (none)", 0, 100000, NULL, P(power.budget_w),
	  "mean power of `objective.power_rails` over `budget_window_s`, enforced by the guard for "
	  "every controller: each period the accelerator's power limit is capped at the budget less "
	  "what the other counted rails draw now, less the excess the window (an EWMA with that time "
	  "constant) has accumulated, so an overshoot is paid back (`guard_policy_budget`). It holds "
	  "through rollbacks and the safe point. A budget below the device's minimum power limit plus "
	  "the other rails cannot be met: the minimum applies (azure-code-30c with 230 W: the 60 s "
	  "means stay at or under 273 W = 200 W minimum + host and memory, against 577 W without the "
	  "budget). The daemon's node `budget_w` (docs/daemon.md) is a separate cap on each device's "
	  "limit, split among the devices", NULL },
	{ "power.budget_window_s", POLICY_KEY_NUMBER, "s", 60, NULL, 1, 86400, NULL,
	  P(power.budget_window_s), "averaging window (EWMA time constant) of `power.budget_w`", NULL },
	{ "frequency.min_mhz", POLICY_KEY_NUMBER, "MHz", 0, "0 (device)", 0, 10000,
	  "<= `max_mhz`, inside the envelope's clock range", P(frequency.min_mhz),
	  "lowest clock the guard allows", NULL },
	{ "frequency.max_mhz", POLICY_KEY_NUMBER, "MHz", 0, "0 (device)", 0, 10000,
	  "inside the envelope's clock range", P(frequency.max_mhz), "highest clock the guard allows", NULL },
	{ "frequency.max_step_mhz", POLICY_KEY_NUMBER, "MHz", 0, "0 (none)", 0, 10000, NULL,
	  P(frequency.max_step_mhz), "largest clock change per period", NULL },

	/* precision */
	{ "precision.modes", POLICY_KEY_SET, "", POLICY_PREC_BIT(POLICY_PREC_BF16) |
	  POLICY_PREC_BIT(POLICY_PREC_INT8), NULL, 0, 0, NULL, P(precision.modes),
	  "precisions the governor may serve. Without `int8` and `fp8` every INT8 share must be 0 "
	  "(load error) and the govd controller serves BF16 only (`policy_slice_rule` closes every "
	  "slice). With `fp8` the `int8_*` shares are the 8-bit share and each slice climbs down a "
	  "ladder: FP8 behind its own gate, then INT8 (if listed) behind INT8's",
	  policy_prec_names },
	{ "precision.fallback", POLICY_KEY_ENUM, "", POLICY_PREC_BF16, NULL, 0, 0, "one of `modes`",
	  P(precision.fallback),
	  "meant to be served when the quality gate denies INT8 and after a rollback (warning if "
	  "`int8`). What runs today is BF16 in both cases whatever this says: the govd controller "
	  "writes share 0 on a closed gate and the rollback manager writes 0 on a breached slice",
	  policy_prec_names },
	{ "precision.int8_fraction", POLICY_KEY_NUMBER, "", 0, NULL, 0, 1, "within min..max",
	  P(precision.int8_fraction),
	  "INT8 share of requests for slices not named: what open-loop controllers (static) serve", NULL },
	{ "precision.int8_min_fraction", POLICY_KEY_NUMBER, "", 0, NULL, 0, 1, NULL,
	  P(precision.int8_min_fraction),
	  "lowest INT8 share while a slice's quality gate is open: the loop raises any controller's "
	  "share to it then, never past a closed gate (warning `int8-forced` above 0); it also bounds "
	  "`int8_fraction` at load", NULL },
	{ "precision.int8_max_fraction", POLICY_KEY_NUMBER, "", 1, NULL, 0, 1, NULL,
	  P(precision.int8_max_fraction),
	  "highest INT8 share: the loop lowers any controller's share to it (the naive-int8 "
	  "baseline's 1 everywhere included), and it is the share the govd controller serves on a "
	  "slice whose quality gate is open; 0 forbids INT8. It bounds `int8_fraction` at load", NULL },
	{ "precision.slices", POLICY_KEY_MAP, "", NAN, "none", 0, 0, "up to 8 slices",
	  NONE,
	  "per-slice override, `slices.<slice>`: a number is the slice's `int8_fraction`; a mapping "
	  "has the keys below (unset ones inherit the policy-wide value)", NULL },
	{ "precision.slices.*.int8_fraction", POLICY_KEY_NUMBER, "", NAN, "policy-wide", 0, 1, NULL,
	  S(int8_fraction), "the slice's INT8 share", NULL },
	{ "precision.slices.*.int8_min_fraction", POLICY_KEY_NUMBER, "", NAN, "policy-wide", 0, 1,
	  NULL, S(int8_min_fraction), "the slice's lowest INT8 share", NULL },
	{ "precision.slices.*.int8_max_fraction", POLICY_KEY_NUMBER, "", NAN, "policy-wide", 0, 1,
	  NULL, S(int8_max_fraction), "the slice's highest INT8 share", NULL },

	/* quality */
	{ "quality.default_max_drop", POLICY_KEY_NUMBER, "", 0.01, NULL, 0, 1, NULL,
	  P(quality.default_max_drop),
	  "allowed drop for slices not named (0.01 = 1 point; MLPerf's 99 %-of-reference target)", NULL },
	{ "quality.confidence", POLICY_KEY_NUMBER, "", 0.95, NULL, 0.5, 0.9999, NULL,
	  P(quality.confidence), "one-sided level of the upper bound (warning under 0.9)", NULL },
	{ "quality.min_samples", POLICY_KEY_UINT, "samples", 200, NULL, 1, 1e9, NULL,
	  P(quality.min_samples), "shadow samples before INT8 may serve a slice", NULL },
	{ "quality.shadow_rate", POLICY_KEY_NUMBER, "", 0.02, NULL, 0, 1, NULL, P(quality.shadow_rate),
	  "share of a slice's requests also run in the reference precision (warning at 0 with INT8 "
	  "allowed: the bound never moves)", NULL },
	{ "quality.slices", POLICY_KEY_MAP, "", NAN, "none", 0, 0, "up to 8 slices", NONE,
	  "per-slice quality settings, `slices.<slice>`: a mapping of the keys below", NULL },
	{ "quality.confirm_samples", POLICY_KEY_UINT, "samples", 0, NULL, 0, 1e9, NULL,
	  P(quality.confirm_samples),
	  "online shadow samples of a slice before its offline prior counts; meanwhile, and whenever "
	  "the online mismatches reject the prior's rate (Poisson tail < 0.001), only online "
	  "evidence counts (docs/govd-controller.md, \"Wrong priors\"). balanced: 50", NULL },
	{ "quality.probation_rate", POLICY_KEY_NUMBER, "", 0, NULL, 0, 1, NULL,
	  P(quality.probation_rate),
	  "evidence on demand: the shadow rate govd asks the serving side for on a slice INT8 may "
	  "serve whose gate is undecided (closed, the drop's lower bound not over `max_drop`); 0: none "
	  "asked. Nothing is asked while the queue surges, the tail is over its target or the heat "
	  "binds, nor, beside the govd controller's `int8_max_detect_s`, where the rate the budget "
	  "allows cannot open the rung (docs/govd-controller.md, \"Evidence on demand\")", NULL },
	{ "quality.max_detect_s", POLICY_KEY_NUMBER, "s", 0, NULL, 0, 86400, NULL,
	  P(quality.max_detect_s),
	  "on a slice INT8 serves, the shadow rate that lets the detectors catch a drift to 3 x "
	  "`max_drop` within this many seconds at the slice's measured request rate (at most 1), and "
	  "on one the govd controller's `int8_max_detect_s` holds shut the same rate; 0: none asked",
	  NULL },
	{ "quality.shadow_budget", POLICY_KEY_NUMBER, "", 0.1, NULL, 0, 1, NULL,
	  P(quality.shadow_budget),
	  "the asks' extra re-runs (over each slice's `shadow_rate`) together, as a share of all "
	  "requests (a slice's share counts as all of them while the SLA window holds no request "
	  "yet); over it every ask is scaled down by the same factor", NULL },
	{ "quality.slices.*.max_drop", POLICY_KEY_NUMBER, "", NAN, "policy-wide", 0, 1, NULL,
	  S(max_drop), "the slice's allowed INT8 accuracy drop", NULL },
	{ "quality.slices.*.confidence", POLICY_KEY_NUMBER, "", NAN, "policy-wide", 0.5, 0.9999, NULL,
	  S(confidence), "the slice's confidence level", NULL },
	{ "quality.slices.*.min_samples", POLICY_KEY_INT64, "samples", NAN, "policy-wide", 1, 1e9, NULL,
	  S(min_samples), "the slice's shadow samples before INT8 may serve it", NULL },
	{ "quality.slices.*.shadow_rate", POLICY_KEY_NUMBER, "", NAN, "policy-wide", 0, 1, NULL,
	  S(shadow_rate), "the slice's shadow-evaluated share", NULL },
	{ "quality.slices.*.offline_samples", POLICY_KEY_UINT, "samples", NAN, "0", 0, 1e9, NULL,
	  S(offline_samples),
	  "evidence from the precision qualification run (the slice's held-out set run in both "
	  "precisions): samples compared, the prior the online shadow samples add to. Without it a "
	  "slice needs `min_samples` online samples first, which at a 2 % shadow rate takes hours "
	  "(docs/govd-controller.md)", NULL },
	{ "quality.slices.*.offline_mismatches", POLICY_KEY_UINT, "samples", NAN, "0", 0, 1e9,
	  "<= `offline_samples`", S(offline_mismatches),
	  "of those, the samples whose INT8 answer differed from the reference", NULL },
	{ "quality.slices.*.fp8_offline_samples", POLICY_KEY_UINT, "samples", NAN, "0", 0, 1e9, NULL,
	  S(fp8_offline_samples),
	  "the qualification run's evidence for FP8 (the ladder's first rung, `fp8` in "
	  "`precision.modes`): samples compared", NULL },
	{ "quality.slices.*.fp8_offline_mismatches", POLICY_KEY_UINT, "samples", NAN, "0", 0, 1e9,
	  "<= `fp8_offline_samples`", S(fp8_offline_mismatches),
	  "of those, the samples whose FP8 answer differed from the reference", NULL },

	/* envelope */
	{ "envelope.inlet_min_c", POLICY_KEY_NUMBER, "C", -INFINITY, "none", -40, 80,
	  "<= `inlet_max_c`", P(envelope.inlet_min_c),
	  "outside when the inlet temperature is below it, or unknown (NaN) while a range is set", NULL },
	{ "envelope.inlet_max_c", POLICY_KEY_NUMBER, "C", INFINITY, "none", -40, 80, NULL,
	  P(envelope.inlet_max_c),
	  "outside when the inlet temperature is above it, or unknown (NaN) while a range is set", NULL },
	{ "envelope.power_limit_min_w", POLICY_KEY_NUMBER, "W", 0, "0 (any)", 0, 5000,
	  "<= `power_limit_max_w`", P(envelope.power_limit_min_w),
	  "outside when the device cannot set limits that low", NULL },
	{ "envelope.power_limit_max_w", POLICY_KEY_NUMBER, "W", 0, "0 (any)", 0, 5000, NULL,
	  P(envelope.power_limit_max_w), "outside when the device cannot set limits that high", NULL },
	{ "envelope.clk_min_mhz", POLICY_KEY_NUMBER, "MHz", 0, "0 (any)", 0, 10000, "<= `clk_max_mhz`",
	  P(envelope.clk_min_mhz), "outside when the device cannot clock that low", NULL },
	{ "envelope.clk_max_mhz", POLICY_KEY_NUMBER, "MHz", 0, "0 (any)", 0, 10000, NULL,
	  P(envelope.clk_max_mhz), "outside when the device cannot clock that high", NULL },
	{ "envelope.slowdown_c", POLICY_KEY_NUMBER, "C", 89, "89 (Hopper)", 50, 150, NULL,
	  P(envelope.slowdown_c),
	  "outside when the device's hardware slowdown is lower (a higher one only adds headroom)", NULL },
	{ "envelope.driver_versions", POLICY_KEY_LIST, "", NAN, "any", 0, 0,
	  "1..8 fnmatch(3) patterns, <= 47 chars", L(envelope.driver_versions, envelope.n_driver),
	  "outside when the device's driver version matches none (or is unknown)", NULL },
	{ "envelope.firmware_versions", POLICY_KEY_LIST, "", NAN, "any", 0, 0,
	  "1..8 fnmatch(3) patterns, <= 47 chars", L(envelope.firmware_versions, envelope.n_firmware),
	  "outside when the device's firmware version matches none (or is unknown)", NULL },

	/* safe_point */
	{ "safe_point.clk_max_mhz", POLICY_KEY_NUMBER, "MHz", 0, "0 (unlocked)", 0, 10000,
	  "<= `frequency.max_mhz`", P(safe_point.clk_max_mhz), "clock cap", NULL },
	{ "safe_point.power_cap_w", POLICY_KEY_NUMBER, "W", 0, "0 (device default)", 0, 5000,
	  "<= `power.cap_w`", P(safe_point.power_cap_w), "power limit", NULL },
	{ "safe_point.int8_fraction", POLICY_KEY_NUMBER, "", 0, NULL, 0, 1, "<= `int8_max_fraction`",
	  P(safe_point.int8_fraction),
	  "INT8 share (warning above 0: quality cannot be watched while telemetry is faulty)", NULL },
	{ "safe_point.hold_periods", POLICY_KEY_UINT, "periods", 5, NULL, 0, 100000, NULL,
	  P(safe_point.hold_periods), "clean periods before leaving the safe point", NULL },

	/* rollback */
	{ "rollback.triggers", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "rollback.canary_s", POLICY_KEY_NUMBER, "s", 300, NULL, 0, 86400, NULL, P(rollback.canary_s),
	  "watch window after a change (warning if it cannot hold N SLA windows)", NULL },
	{ "rollback.hold_s", POLICY_KEY_NUMBER, "s", 600, NULL, 0, 604800, "<= `max_hold_s`",
	  P(rollback.hold_s),
	  "after a rollback, stay at the last known good at least this long", NULL },
	{ "rollback.backoff_factor", POLICY_KEY_NUMBER, "", 2, NULL, 1, 10, NULL,
	  P(rollback.backoff_factor), "`hold_s` multiplier for each further rollback of the same change", NULL },
	{ "rollback.max_hold_s", POLICY_KEY_NUMBER, "s", 3600, NULL, 0, 604800, NULL,
	  P(rollback.max_hold_s), "longest hold", NULL },
	{ "rollback.last_known_good", POLICY_KEY_MAP, "", NAN, NULL, 0, 0, NULL, NONE, NULL, NULL },
	{ "rollback.triggers.sla_violated_windows", POLICY_KEY_UINT, "windows", 3, NULL, 0, 1000,
	  "0 off, <= `sla_of_windows`", P(rollback.sla_violated_windows),
	  "N of the N-of-M SLA trigger", NULL },
	{ "rollback.triggers.sla_of_windows", POLICY_KEY_UINT, "windows", 5, NULL, 1, 1000, NULL,
	  P(rollback.sla_of_windows), "M: the last M SLA windows", NULL },
	{ "rollback.triggers.quality_breach", POLICY_KEY_BOOL, "", 1, "true", 0, 0, NULL,
	  P(rollback.quality_breach), "a slice's drop upper bound above its `max_drop`", NULL },
	{ "rollback.triggers.thermal_clamp_events", POLICY_KEY_UINT, "events", 1, NULL, 0, 1e6,
	  "0 off", P(rollback.thermal_clamp_events), "hardware slowdown entries within the canary", NULL },
	{ "rollback.triggers.telemetry_faults", POLICY_KEY_UINT, "faults", 3, NULL, 0, 1e6, "0 off",
	  P(rollback.telemetry_faults), "fault onsets within the canary", NULL },
	{ "rollback.last_known_good.min_clean_windows", POLICY_KEY_UINT, "windows", 5, NULL, 1, 10000,
	  NULL, P(rollback.lkg_min_clean_windows),
	  "consecutive SLA windows met with no trigger armed before an operating point counts as "
	  "last known good", NULL },
	{ "rollback.last_known_good.fallback", POLICY_KEY_ENUM, "", POLICY_LKG_SAFE_POINT, NULL, 0, 0,
	  NULL, P(rollback.lkg_fallback), "where to roll back to before anything qualified",
	  policy_lkg_names },

	/* telemetry */
	{ "telemetry.ewma_tau_s", POLICY_KEY_NUMBER, "s", 2, NULL, 0.01, 600, NULL,
	  P(telemetry.ewma_tau_s), "rail power filter time constant", NULL },
	{ "telemetry.stale_ms", POLICY_KEY_UINT, "ms", NAN, "3 periods", 1, 600000, ">= `period_ms`",
	  P(telemetry.stale_ms), "age at which a reading is stale", NULL },
	{ "telemetry.stuck_periods", POLICY_KEY_UINT, "periods", 10, NULL, 2, 100000, NULL,
	  P(telemetry.stuck_periods), "identical readings before a signal is stuck", NULL },
};

size_t policy_key_count(void)
{
	return sizeof(keys) / sizeof(keys[0]);
}

const struct policy_key *policy_key_at(size_t i)
{
	return i < policy_key_count() ? &keys[i] : NULL;
}

bool policy_key_defaulted(const struct policy_key *k)
{
	return k->type == POLICY_KEY_NUMBER || k->type == POLICY_KEY_UINT ||
	       k->type == POLICY_KEY_INT64 || k->type == POLICY_KEY_BOOL ||
	       k->type == POLICY_KEY_ENUM || k->type == POLICY_KEY_SET;
}

/* Whether k is a direct child of section ("" for the top level). */
static bool child_of(const struct policy_key *k, const char *section)
{
	size_t n = strlen(section);
	const char *rest = k->path;
	if (n) {
		if (strncmp(k->path, section, n) || k->path[n] != '.')
			return false;
		rest = k->path + n + 1;
	}
	return !strchr(rest, '.');
}

const char *policy_key_name(const struct policy_key *k)
{
	const char *dot = strrchr(k->path, '.');
	return dot ? dot + 1 : k->path;
}

size_t policy_section_keys(const char *section, const struct policy_key **out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < policy_key_count(); i++)
		if (child_of(&keys[i], section) && n < max)
			out[n++] = &keys[i];
	return n;
}

/* The defaults the rows give, in place (a slice key's is its policy-wide
 * value, resolved by policy_slice_rule; NaN: derived by the caller). */
void policy_key_defaults(struct policy *p)
{
	for (size_t i = 0; i < policy_key_count(); i++) {
		const struct policy_key *k = &keys[i];
		if (!policy_key_defaulted(k) || k->slice || isnan(k->def))
			continue;
		char *at = (char *)p + k->off;
		switch (k->type) {
		case POLICY_KEY_NUMBER:
			*(double *)(void *)at = k->def;
			break;
		case POLICY_KEY_UINT:
			*(uint32_t *)(void *)at = (uint32_t)k->def;
			break;
		case POLICY_KEY_INT64:
			*(int64_t *)(void *)at = (int64_t)k->def;
			break;
		case POLICY_KEY_BOOL:
			*(bool *)(void *)at = k->def != 0;
			break;
		case POLICY_KEY_ENUM:
			*(int *)(void *)at = (int)k->def;
			break;
		case POLICY_KEY_SET:
			*(uint32_t *)(void *)at = (uint32_t)k->def;
			break;
		default:
			break;
		}
	}
}
