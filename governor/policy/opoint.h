/* The operating point a controller proposes and the guard hands to the
 * actuator, with the reason codes and the binding constraint that explain it.
 * Reason codes are a documented enum (docs/decision-log.md): bits, so one
 * period can carry several (e.g. util_scale + step_limit). */
#ifndef GOVD_GOVERNOR_OPOINT_H
#define GOVD_GOVERNOR_OPOINT_H
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hal/hal.h"

struct gov_opoint {
	bool clk_locked;             /* false: firmware default clocks (reset_clocks) */
	uint32_t clk_min_khz, clk_max_khz; /* meaningful when clk_locked */
	uint32_t power_limit_mw;
	size_t n_slices;
	double int8_frac[HAL_MAX_SLICES]; /* the 8-bit share, served in low_mode */
	/* The slice's rung (enum hal_low_mode): what its 8-bit share is served
	 * in. Zero, INT8, unless the policy's ladder has FP8. */
	uint8_t low_mode[HAL_MAX_SLICES];
	/* Shadow-evaluation rate asked of the serving side per slice; 0: none
	 * asked (the server's own). Set by the controller only, outside the
	 * rollback and the guard (evidence, not an operating point: the loop
	 * drops the asks in the safe point). */
	double shadow_rate[HAL_MAX_SLICES];
};

/* Why a shadow rate was asked for a slice (decision-log quality "ask"). */
enum gov_evidence {
	GOV_EV_NONE,      /* nothing asked: the server's own rate */
	GOV_EV_PROBATION, /* the gate is undecided: evidence to decide it */
	GOV_EV_DETECT,    /* INT8 serves the slice: the rate that keeps the detection delay */
	GOV_EV_HELD,      /* the gate is open but the detection delay holds the rung shut:
			   * the rate that opens it, asked only where the budget buys it */
	GOV_EV_N
};
const char *gov_evidence_name(enum gov_evidence e);

enum gov_reason {
	GOV_R_INIT = 1u << 0,             /* first period: device state adopted */
	GOV_R_FIRMWARE_DEFAULT = 1u << 1, /* firmware-default controller */
	GOV_R_STATIC = 1u << 2,           /* fixed point from the policy */
	GOV_R_INT8_ALL = 1u << 3,         /* naive-int8: INT8 on every slice */
	GOV_R_UTIL_HIGH = 1u << 4,        /* ondemand: busy > upthreshold -> max */
	GOV_R_UTIL_KEEP = 1u << 5,        /* ondemand: inside the hysteresis band */
	GOV_R_UTIL_SCALE = 1u << 6,       /* ondemand: f = f_cur * util / (up - down/2) */
	GOV_R_UTIL_UNKNOWN = 1u << 7,     /* ondemand: no utilisation -> max */
	GOV_R_IPA_IDLE = 1u << 8,         /* ipa: below switch-on, PID reset, max power */
	GOV_R_IPA_PID = 1u << 9,          /* ipa: PID granted power -> power limit */
	GOV_R_CLAMP_DEVICE = 1u << 10,    /* guard: device clock/power range */
	GOV_R_CLAMP_POLICY_FREQ = 1u << 11, /* guard: policy frequency range */
	GOV_R_CLAMP_POWER_CAP = 1u << 12, /* guard: policy power cap */
	GOV_R_STEP_LIMIT = 1u << 13,      /* guard: max clock step per period */
	GOV_R_SAFE_POINT = 1u << 14,      /* guard: telemetry fault -> safe point */
	GOV_R_SAFE_HOLD = 1u << 15,       /* guard: faults cleared, holding safe point */
	GOV_R_ACTUATE_ERROR = 1u << 16,   /* a HAL write failed; op point unchanged */
	GOV_R_RESTORE = 1u << 17,         /* end of run: original settings restored */
	/* govd / slo-dvfs controllers (governor/controllers/ctl_govd.c). */
	GOV_R_SLA_RAISE = 1u << 18,       /* latency slack short: clock up */
	GOV_R_SLA_LOWER = 1u << 19,       /* latency slack ample: clock down toward efficiency */
	GOV_R_SLA_KEEP = 1u << 20,        /* slack inside the dead band: clock kept */
	GOV_R_QUEUE_SURGE = 1u << 21,     /* queue growing faster than service: clock to max */
	GOV_R_THERMAL_PREDICT = 1u << 22, /* predicted junction over the ceiling: power/clock cut */
	GOV_R_INT8_GATE_OPEN = 1u << 23,  /* a slice's drop upper bound under threshold: INT8 */
	GOV_R_INT8_GATE_CLOSED = 1u << 24,/* a slice's drop bound over threshold (or too few samples): BF16 */
	GOV_R_PREC_SATURATED = 1u << 25,  /* mixed precision cannot meet the SLA at max clock: BF16 */
	/* Rollback manager and envelope (governor/loop/rollback.c, governor.c). */
	GOV_R_ROLLBACK = 1u << 26,        /* a canary trigger fired: back to last known good */
	GOV_R_ROLLBACK_HOLD = 1u << 27,   /* holding last known good (backoff) */
	GOV_R_ROLLBACK_RECOVER = 1u << 28,/* hold over: controller resumes */
	GOV_R_ENVELOPE = 1u << 29,        /* outside the policy's envelope: safe point */
	GOV_R_CANARY = 1u << 30,          /* a change is being watched */
	GOV_R_PREC_NO_GAIN = 1u << 31,    /* low precision measured no better than BF16 at this batch: BF16 */
};
#define GOV_R_COUNT 32

/* Rollback triggers (bits), armed while a canary window watches a change;
 * the decision log lists the armed ones and the one that fired. */
enum gov_trigger {
	GOV_T_SLA = 1u << 0,       /* rollback.triggers.sla_violated_windows of sla_of_windows */
	GOV_T_QUALITY = 1u << 1,   /* a slice served in INT8 with drop upper bound > max_drop */
	GOV_T_THERMAL = 1u << 2,   /* hardware slowdown entries >= thermal_clamp_events */
	GOV_T_TELEMETRY = 1u << 3, /* telemetry fault onsets >= telemetry_faults */
};
#define GOV_T_COUNT 4

enum gov_binding {
	GOV_B_NONE,         /* nothing limits the controller's wish */
	GOV_B_UTILISATION,  /* clock follows demand */
	GOV_B_THERMAL,      /* thermal headroom sets the power */
	GOV_B_POLICY,       /* fixed by the policy (static, naive-int8) */
	GOV_B_DEVICE_LIMIT, /* device clock/power range */
	GOV_B_POLICY_FREQ,  /* policy frequency range */
	GOV_B_POWER_CAP,    /* policy power cap */
	GOV_B_STEP_LIMIT,   /* per-period clock step */
	GOV_B_SAFE_POINT,   /* telemetry fault */
	GOV_B_SLA,          /* latency SLA sets the clock (govd, slo-dvfs) */
	GOV_B_CEILING,      /* predicted junction vs the soft ceiling */
	GOV_B_QUALITY,      /* quality gate keeps a slice in BF16 */
	GOV_B_ROLLBACK,     /* rollback manager holds last known good */
	GOV_B_ENVELOPE,     /* outside the policy's envelope */
	GOV_B_N
};

/* Policy values (double MHz, W) to device units, rounded to nearest: one
 * conversion everywhere, so a controller's wish and the guard's clamp of the
 * same policy value agree (truncation turned 1799.9999 MHz into 1799999 kHz). */
static inline uint32_t gov_mhz_to_khz(double mhz)
{
	return mhz > 0 ? (uint32_t)llround(mhz * 1000.0) : 0;
}
static inline uint32_t gov_w_to_mw(double w)
{
	return w > 0 ? (uint32_t)llround(w * 1000.0) : 0;
}

/* Why a controller chose its clock (decision-log key "why",
 * docs/decision-log.md): what it saw and weighed. The term that set it: */
enum gov_why_bound {
	GOV_WHY_MODEL,        /* the online model's least-power clock meeting the tails */
	GOV_WHY_OBSERVED,     /* the observed tail over slack_high raised it above that */
	GOV_WHY_LOAD_FLOOR,   /* the load floor (remembered TBT peak) held it up */
	GOV_WHY_POLICY_FLOOR, /* the policy's / floor_mhz lowest clock held it up */
	GOV_WHY_SURGE,        /* the queue surge rule sent it to the max */
	GOV_WHY_IDLE,         /* nothing running: the idle clock or hold */
	GOV_WHY_INFEASIBLE,   /* no clock predicted to meet the tails: the max */
	GOV_WHY_LOOP,         /* the latency loop (predict: 0), no model */
	GOV_WHY_OBJECTIVE,    /* objective max_throughput: the top of the range */
	GOV_WHY_SEARCH,       /* the window search's base clock (param search) */
	GOV_WHY_RISK_SURGE,   /* the risk budget spent: a waiting request took the max
			       * (search_risk_surge) */
	GOV_WHY_N
};
/* Why the next lower candidate clock was not taken. */
enum gov_why_limit {
	GOV_WHY_L_NONE,  /* not asked */
	GOV_WHY_L_TBT,   /* its predicted TBT p99 (with the risk term) over target x margin */
	GOV_WHY_L_TTFT,  /* its predicted TTFT p99 over target x margin */
	GOV_WHY_L_UTIL,  /* the busy share it would cause over util_max */
	GOV_WHY_L_POWER, /* it met the tails but the model predicts more power there */
	GOV_WHY_L_FLOOR, /* under the floor: not a candidate */
	GOV_WHY_L_WINDOW, /* beside the window search: the window's tails scaled
			   * there meet the step-down threshold; the search moves
			   * only when a window closes (its move says how) */
	GOV_WHY_L_N
};
/* What the window search (param search) last did to its base clock. */
enum gov_why_move {
	GOV_WHY_M_NONE,     /* not the search, or the base has not moved yet */
	GOV_WHY_M_DOWN,     /* a window closed under search_low: a step down */
	GOV_WHY_M_UP,       /* a window closed over search_high: a step up */
	GOV_WHY_M_SHORT,    /* the short window's tail passed the target: a step up */
	GOV_WHY_M_BARRED,   /* a step down stopped above a clock that failed lately */
	GOV_WHY_M_OVERLOAD, /* a window over search_high was overload (queue surge): kept */
	GOV_WHY_M_THERMAL,  /* the thermal limit held in the window: a step down */
	GOV_WHY_M_AFTERMATH, /* a light short-window raise held: the tail was a burst's */
	GOV_WHY_M_WAIT_UP,  /* a TTFT miss: the class that held its waiting steps up */
	GOV_WHY_M_POOLED,   /* thin quiet windows pooled (search_thin_low): a step down */
	GOV_WHY_M_SURGED,   /* a heavy window met with surges (search_heavy_surge_share): a step up */
	GOV_WHY_M_SPIKE,    /* a short-window raise on a TBT spike (search_spike_unbarred): nothing barred */
	GOV_WHY_M_JUDGED,   /* a light window's heavy periods met their tail (search_heavy_judge_share): heavy base down */
	GOV_WHY_M_MAX_MISS, /* a window missed with its base at the max (search_miss_at_max): no budget spent, no bar */
	GOV_WHY_M_UNBARRED, /* a window under search_bar_lift lifted its bar: a step down */
	GOV_WHY_M_N
};
/* The window search's load class in force (search_heavy_running). */
enum gov_why_load {
	GOV_WHY_LOAD_NONE,  /* one base (or not the search) */
	GOV_WHY_LOAD_LIGHT, /* the light base */
	GOV_WHY_LOAD_HEAVY, /* the heavy base */
	GOV_WHY_LOAD_N
};
struct gov_why {
	bool valid;                    /* false: the controller explains nothing */
	enum gov_why_bound bound;
	double clk_mhz;                /* the clock the controller asked for (before the guard) */
	double model_mhz;              /* the model's pick (NaN: not asked) */
	double tbt_pred_ms, ttft_pred_ms;   /* predicted p99 at the model's pick, risk term in */
	double lower_mhz;              /* the next lower candidate (NaN: none) */
	double tbt_lower_ms, ttft_lower_ms; /* predicted there */
	enum gov_why_limit lower_limit;
	double margin, sigmas;         /* predicted tail <= target x margin after sigmas sd */
	double floor_mhz;              /* the floor in force; floor_load: it is the load floor */
	bool floor_load;
	double tail_ratio;             /* the observed tail / target the raise rule saw */
	/* The window search (NaN / none otherwise): its base clock, the clock
	 * barred from its descent, and its last move. */
	double base_mhz, bar_mhz;
	enum gov_why_move move;
	enum gov_why_load load;
	/* The power the thermal limit was held at instead of the heatsink
	 * prediction's deeper cut (thermal_floor_share; NaN: it was not). */
	double heat_floor_w;
};

const char *gov_reason_name(uint32_t bit); /* one bit; NULL if unknown */
const char *gov_binding_name(enum gov_binding b);
const char *gov_why_bound_name(enum gov_why_bound b);
const char *gov_why_limit_name(enum gov_why_limit l);
const char *gov_why_move_name(enum gov_why_move m);
/* Names back to values (decision-log readers); -1 when unknown. */
int gov_why_bound_parse(const char *name);
int gov_why_limit_parse(const char *name);
int gov_why_move_parse(const char *name);
/* The load class as the decision log writes it (NULL for none: one base)
 * and back (none for NULL or an unknown name). */
const char *gov_why_load_name(enum gov_why_load l);
enum gov_why_load gov_why_load_parse(const char *name);
const char *gov_trigger_name(uint32_t bit); /* one bit; NULL if unknown */
const char *gov_triggers_join(uint32_t triggers, char *buf, size_t len);
/* "a|b|c" into buf (empty string for 0). */
const char *gov_reasons_join(uint32_t reasons, char *buf, size_t len);
bool gov_opoint_equal(const struct gov_opoint *a, const struct gov_opoint *b);
/* Whether some slice's rung is FP8 (the precision ladder in use). */
bool gov_opoint_any_fp8(const struct gov_opoint *op);

#endif
