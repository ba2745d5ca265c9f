/* Policy accessors, the envelope check and the file hash: no YAML here, so
 * controllers and their tests link without the loader. */
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>

#include "governor/policy/policy.h"
#include "governor/policy/opoint.h"

void policy_defaults(struct policy *p)
{
	memset(p, 0, sizeof(*p));
	/* Numbers, booleans, enums and sets: their rows (policy_keys.c). INT8
	 * is in the default modes: a controller may choose it, but only
	 * through the quality gate. */
	policy_key_defaults(p);
	p->telemetry.stale_ms = policy_default_stale_ms(p->control.period_ms);
}

uint64_t fnv1a64(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

const struct policy_param *policy_param_find(const struct policy *p, const char *name)
{
	for (size_t i = 0; i < p->control.n_params; i++)
		if (!strcmp(p->control.params[i].name, name))
			return &p->control.params[i];
	return NULL;
}

double policy_param(const struct policy *p, const char *name, double def)
{
	const struct policy_param *pp = policy_param_find(p, name);
	return pp ? pp->value : def;
}

static const struct policy_slice *slice_find(const struct policy *p, const char *name)
{
	for (size_t i = 0; i < p->n_slices; i++)
		if (!strcmp(p->slices[i].name, name))
			return &p->slices[i];
	return NULL;
}

static double pick(double slice_v, double policy_v)
{
	return slice_v >= 0 ? slice_v : policy_v;
}

void policy_slice_rule(const struct policy *p, const char *slice, struct policy_slice_rule *out)
{
	const struct policy_slice *s = slice_find(p, slice);

	out->int8_fraction = p->precision.int8_fraction;
	out->int8_min_fraction = p->precision.int8_min_fraction;
	out->int8_max_fraction = p->precision.int8_max_fraction;
	out->max_drop = p->quality.default_max_drop;
	out->confidence = p->quality.confidence;
	out->min_samples = p->quality.min_samples;
	out->shadow_rate = p->quality.shadow_rate;
	out->offline_samples = out->offline_mismatches = 0;
	out->fp8_offline_samples = out->fp8_offline_mismatches = 0;
	out->confirm_samples = p->quality.confirm_samples;
	if (s) {
		out->offline_samples = s->offline_samples;
		out->offline_mismatches = s->offline_mismatches;
		out->fp8_offline_samples = s->fp8_offline_samples;
		out->fp8_offline_mismatches = s->fp8_offline_mismatches;
		out->int8_fraction = pick(s->int8_fraction, out->int8_fraction);
		out->int8_min_fraction = pick(s->int8_min_fraction, out->int8_min_fraction);
		out->int8_max_fraction = pick(s->int8_max_fraction, out->int8_max_fraction);
		out->max_drop = pick(s->max_drop, out->max_drop);
		out->confidence = pick(s->confidence, out->confidence);
		out->shadow_rate = pick(s->shadow_rate, out->shadow_rate);
		if (s->min_samples >= 0)
			out->min_samples = (uint32_t)s->min_samples;
	}
	uint32_t low_modes = POLICY_PREC_BIT(POLICY_PREC_INT8) | POLICY_PREC_BIT(POLICY_PREC_FP8);
	out->low_allowed = (p->precision.modes & low_modes) && out->int8_max_fraction > 0;
	out->int8_allowed = out->low_allowed &&
			    (p->precision.modes & POLICY_PREC_BIT(POLICY_PREC_INT8));
	out->fp8_allowed = out->low_allowed &&
			   (p->precision.modes & POLICY_PREC_BIT(POLICY_PREC_FP8));
	if (!out->low_allowed)
		out->int8_fraction = out->int8_min_fraction = out->int8_max_fraction = 0;
}

void policy_slices_resolve(const struct policy *p, const char (*names)[HAL_NAME_LEN], size_t n,
			   struct policy_slices *out)
{
	memset(out, 0, sizeof(*out));
	out->n = n < HAL_MAX_SLICES ? n : HAL_MAX_SLICES;
	for (size_t s = 0; s < out->n; s++) {
		memcpy(out->name[s], names[s], HAL_NAME_LEN);
		policy_slice_rule(p, out->name[s], &out->rule[s]);
	}
}

double policy_slice_max_drop(const struct policy *p, const char *slice)
{
	struct policy_slice_rule r;
	policy_slice_rule(p, slice, &r);
	return r.max_drop;
}

/* Appends one reason to why, "; "-separated; silently truncates. */
static void why_add(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void why_add(char *why, size_t len, const char *fmt, ...)
{
	if (!why || !len)
		return;
	size_t off = strlen(why);
	if (off && off + 2 < len) {
		memcpy(why + off, "; ", 3);
		off += 2;
	}
	if (off + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why + off, len - off, fmt, ap);
	va_end(ap);
}

static bool version_ok(const char pats[][POLICY_PATTERN_LEN], size_t n, const char *version)
{
	if (!n)
		return true;
	if (!version || !version[0])
		return false;
	for (size_t i = 0; i < n; i++)
		if (fnmatch(pats[i], version, 0) == 0)
			return true;
	return false;
}

bool policy_envelope_check(const struct policy *p, const struct hal_limits *lim, double inlet_c,
			   char *why, size_t len)
{
	const struct policy_envelope *e = &p->envelope;
	bool in = true;

	if (why && len)
		why[0] = '\0';
	if (isfinite(e->inlet_min_c) || isfinite(e->inlet_max_c)) {
		if (isnan(inlet_c)) {
			in = false;
			why_add(why, len, "inlet temperature unknown (envelope %g..%g C)", e->inlet_min_c,
				e->inlet_max_c);
		} else if (inlet_c < e->inlet_min_c || inlet_c > e->inlet_max_c) {
			in = false;
			why_add(why, len, "inlet %.1f C outside %g..%g C", inlet_c, e->inlet_min_c,
				e->inlet_max_c);
		}
	}
	/* The device must accept every limit the policy was validated with. */
	if (e->power_limit_min_w > 0 && lim->power_limit_min_mw > gov_w_to_mw(e->power_limit_min_w)) {
		in = false;
		why_add(why, len, "device power limit minimum %.0f W above the envelope's %g W",
			lim->power_limit_min_mw / 1000.0, e->power_limit_min_w);
	}
	if (e->power_limit_max_w > 0 && lim->power_limit_max_mw < gov_w_to_mw(e->power_limit_max_w)) {
		in = false;
		why_add(why, len, "device power limit maximum %.0f W below the envelope's %g W",
			lim->power_limit_max_mw / 1000.0, e->power_limit_max_w);
	}
	if (e->clk_min_mhz > 0 && lim->clk_min_khz > gov_mhz_to_khz(e->clk_min_mhz)) {
		in = false;
		why_add(why, len, "device clock minimum %.0f MHz above the envelope's %g MHz",
			lim->clk_min_khz / 1000.0, e->clk_min_mhz);
	}
	if (e->clk_max_mhz > 0 && lim->clk_max_khz < gov_mhz_to_khz(e->clk_max_mhz)) {
		in = false;
		why_add(why, len, "device clock maximum %.0f MHz below the envelope's %g MHz",
			lim->clk_max_khz / 1000.0, e->clk_max_mhz);
	}
	/* A lower slowdown than assumed eats the ceiling's headroom; higher is fine. */
	if (lim->slowdown_mc > 0 && lim->slowdown_mc < e->slowdown_c * 1000.0) {
		in = false;
		why_add(why, len, "device hardware slowdown %.1f C below the envelope's %g C",
			lim->slowdown_mc / 1000.0, e->slowdown_c);
	}
	if (!version_ok(e->driver_versions, e->n_driver, lim->driver_version)) {
		in = false;
		why_add(why, len, "driver version '%s' matches no envelope.driver_versions pattern",
			lim->driver_version);
	}
	if (!version_ok(e->firmware_versions, e->n_firmware, lim->firmware_version)) {
		in = false;
		why_add(why, len, "firmware version '%s' matches no envelope.firmware_versions pattern",
			lim->firmware_version);
	}
	return in;
}

/* One table per enum: the loader reads the keys with them and the name
 * functions print them, so the spellings cannot drift apart. */
const char *const policy_objective_names[] = { "perf_per_watt", "min_energy", "max_throughput",
					       NULL };
const char *const policy_prec_names[] = { "bf16", "int8", "fp8", NULL };
const char *const policy_lkg_names[] = { "safe_point", "firmware_default", NULL };
_Static_assert(sizeof(policy_objective_names) / sizeof(policy_objective_names[0]) ==
		       POLICY_OBJ_N + 1,
	       "one name per objective");
_Static_assert(sizeof(policy_prec_names) / sizeof(policy_prec_names[0]) == POLICY_PREC_N + 1,
	       "one name per precision");
_Static_assert(sizeof(policy_lkg_names) / sizeof(policy_lkg_names[0]) == POLICY_LKG_N + 1,
	       "one name per fallback");

const char *policy_prec_name(enum policy_prec m)
{
	return (unsigned)m < POLICY_PREC_N ? policy_prec_names[m] : "?";
}

