#include "governor/policy/opoint.h"

#include <stdio.h>
#include <string.h>

#include "common/strjoin.h"

static const char *const reason_names[GOV_R_COUNT] = {
	"init",          "firmware_default", "static",       "int8_all",
	"util_high",     "util_keep",        "util_scale",   "util_unknown",
	"ipa_idle",      "ipa_pid",          "clamp_device", "clamp_policy_freq",
	"clamp_power_cap", "step_limit",     "safe_point",   "safe_hold",
	"actuate_error", "restore",
	"sla_raise",     "sla_lower",        "sla_keep",     "queue_surge",
	"thermal_predict", "int8_gate_open", "int8_gate_closed", "prec_saturated",
	"rollback",      "rollback_hold",    "rollback_recover", "envelope",
	"canary",        "prec_no_gain",
};

static const char *const trigger_names[GOV_T_COUNT] = { "sla", "quality", "thermal", "telemetry" };

static const char *const binding_names[GOV_B_N] = {
	"none", "utilisation", "thermal", "policy", "device_limit",
	"policy_freq", "power_cap", "step_limit", "safe_point",
	"sla", "ceiling", "quality", "rollback", "envelope",
};

const char *gov_reason_name(uint32_t bit)
{
	for (int i = 0; i < GOV_R_COUNT; i++)
		if (bit == 1u << i)
			return reason_names[i];
	return NULL;
}

const char *gov_binding_name(enum gov_binding b)
{
	return (unsigned)b < GOV_B_N ? binding_names[b] : "?";
}

/* The why names as tables: names and parsers share them. */
static const char *const why_bound_names[GOV_WHY_N] = {
	"model", "observed_tail", "load_floor", "policy_floor", "queue_surge",
	"idle", "infeasible", "latency_loop", "objective", "window_search",
	"risk_surge",
};
static const char *const why_limit_names[GOV_WHY_L_N] = { "none", "tbt",   "ttft",
							  "util", "power", "floor",
							  "window" };
static const char *const why_move_names[GOV_WHY_M_N] = { "none",   "down",     "up",
							 "short_up", "barred", "overload",
							 "thermal", "aftermath", "wait_up",
							 "pooled", "surged", "spike_up",
							 "judged",   "max_miss", "unbarred" };

static const char *const why_load_names[GOV_WHY_LOAD_N] = { "none", "light", "heavy" };

static int name_index(const char *const *names, int n, const char *name)
{
	for (int i = 0; name && i < n; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -1;
}

const char *gov_why_bound_name(enum gov_why_bound b)
{
	return (unsigned)b < GOV_WHY_N ? why_bound_names[b] : "?";
}

const char *gov_why_limit_name(enum gov_why_limit l)
{
	return (unsigned)l < GOV_WHY_L_N ? why_limit_names[l] : "?";
}

const char *gov_why_move_name(enum gov_why_move m)
{
	return (unsigned)m < GOV_WHY_M_N ? why_move_names[m] : "?";
}

const char *gov_evidence_name(enum gov_evidence e)
{
	static const char *const names[GOV_EV_N] = { "none", "probation", "detect", "held" };
	return (unsigned)e < GOV_EV_N ? names[e] : "?";
}

int gov_why_bound_parse(const char *name)
{
	return name_index(why_bound_names, GOV_WHY_N, name);
}

int gov_why_limit_parse(const char *name)
{
	return name_index(why_limit_names, GOV_WHY_L_N, name);
}

int gov_why_move_parse(const char *name)
{
	return name_index(why_move_names, GOV_WHY_M_N, name);
}

const char *gov_why_load_name(enum gov_why_load l)
{
	return l > GOV_WHY_LOAD_NONE && l < GOV_WHY_LOAD_N ? why_load_names[l] : NULL;
}

enum gov_why_load gov_why_load_parse(const char *name)
{
	int i = name_index(why_load_names, GOV_WHY_LOAD_N, name);
	return i < 0 ? GOV_WHY_LOAD_NONE : (enum gov_why_load)i;
}

const char *gov_trigger_name(uint32_t bit)
{
	for (int i = 0; i < GOV_T_COUNT; i++)
		if (bit == 1u << i)
			return trigger_names[i];
	return NULL;
}

const char *gov_triggers_join(uint32_t triggers, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	for (int i = 0; i < GOV_T_COUNT; i++)
		if ((triggers & (1u << i)) && !strjoin_add(buf, len, "|", trigger_names[i]))
			break;
	return buf;
}

const char *gov_reasons_join(uint32_t reasons, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	for (int i = 0; i < GOV_R_COUNT; i++)
		if ((reasons & (1u << i)) && !strjoin_add(buf, len, "|", reason_names[i]))
			break;
	return buf;
}

bool gov_opoint_any_fp8(const struct gov_opoint *op)
{
	for (size_t s = 0; s < op->n_slices && s < HAL_MAX_SLICES; s++)
		if (op->low_mode[s] == HAL_LOW_FP8)
			return true;
	return false;
}

bool gov_opoint_equal(const struct gov_opoint *a, const struct gov_opoint *b)
{
	if (a->clk_locked != b->clk_locked || a->power_limit_mw != b->power_limit_mw ||
	    a->n_slices != b->n_slices)
		return false;
	if (a->clk_locked && (a->clk_min_khz != b->clk_min_khz || a->clk_max_khz != b->clk_max_khz))
		return false;
	for (size_t i = 0; i < a->n_slices; i++)
		if (a->int8_frac[i] != b->int8_frac[i] || a->low_mode[i] != b->low_mode[i])
			return false;
	return true;
}
