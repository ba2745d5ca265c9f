/* Policy accessors and the file hash: no YAML here, so controllers and
 * their tests link without the loader. */
#include <string.h>

#include "governor/policy.h"

void policy_defaults(struct policy *p)
{
	memset(p, 0, sizeof(*p));
	p->control.period_ms = 500;
	p->sla.window_s = 60;
	p->sla.attainment = 0.99;
	p->thermal.ceiling_c = 83;
	p->thermal.hysteresis_c = 2;
	p->quality.default_max_drop = 0.01;
	p->safe_point.hold_periods = 5;
	p->telemetry.ewma_tau_s = 2.0;
	p->telemetry.stuck_periods = 10;
	p->telemetry.stale_ms = 3 * p->control.period_ms;
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

double policy_param(const struct policy *p, const char *name, double def)
{
	for (size_t i = 0; i < p->control.n_params; i++)
		if (!strcmp(p->control.params[i].name, name))
			return p->control.params[i].value;
	return def;
}

static const struct policy_slice *slice_find(const struct policy *p, const char *name)
{
	for (size_t i = 0; i < p->n_slices; i++)
		if (!strcmp(p->slices[i].name, name))
			return &p->slices[i];
	return NULL;
}

double policy_slice_int8(const struct policy *p, const char *slice)
{
	const struct policy_slice *s = slice_find(p, slice);
	return s && s->int8_fraction >= 0 ? s->int8_fraction : p->precision.int8_fraction;
}

double policy_slice_max_drop(const struct policy *p, const char *slice)
{
	const struct policy_slice *s = slice_find(p, slice);
	return s && s->max_drop >= 0 ? s->max_drop : p->quality.default_max_drop;
}
