/* Policy loader (keys and ranges: docs/summary.md). Strict: unknown keys,
 * wrong types and out-of-range values are errors with file:line:col, and
 * every error of the file is reported in one pass. Parse + validate into a
 * new object; the caller's current policy is untouched on failure. */
#include "governor/policy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ycfg.h"
#include "governor/controller.h"

static const char *const root_keys[] = { "name", "description", "control", "sla", "thermal",
					 "power", "frequency", "precision", "quality", "safe_point",
					 "telemetry", NULL };
static const char *const control_keys[] = { "controller", "period_ms", "params", NULL };
static const char *const sla_keys[] = { "window_s", "ttft_p99_ms", "tbt_p99_ms", "e2e_p99_ms",
					"ttft_p95_ms", "tbt_p95_ms", "attainment", NULL };
static const char *const thermal_keys[] = { "ceiling_c", "hysteresis_c", NULL };
static const char *const power_keys[] = { "cap_w", NULL };
static const char *const freq_keys[] = { "min_mhz", "max_mhz", "max_step_mhz", NULL };
static const char *const precision_keys[] = { "int8_fraction", "slices", NULL };
static const char *const quality_keys[] = { "slices", "default_max_drop", NULL };
static const char *const qslice_keys[] = { "max_drop", NULL };
static const char *const safe_keys[] = { "clk_max_mhz", "power_cap_w", "int8_fraction",
					 "hold_periods", NULL };
static const char *const telemetry_keys[] = { "ewma_tau_s", "stale_ms", "stuck_periods", NULL };

/* A section: absent is fine; present must be a mapping with known keys. */
static yaml_node_t *section(struct ycfg *y, yaml_node_t *root, const char *key,
			    const char *const *allowed, int *bad)
{
	yaml_node_t *n = ycfg_get(y, root, key);

	if (!n)
		return NULL;
	if (!ycfg_is_map(y, n, key)) {
		(*bad)++;
		return NULL;
	}
	*bad += ycfg_check_keys(y, n, key, allowed);
	return n;
}

#define D(map, path, key, req, lo, hi, out) bad += ycfg_double(y, map, path, key, req, lo, hi, out) != 0

static struct policy_slice *slice_get(struct policy *p, const char *name)
{
	for (size_t i = 0; i < p->n_slices; i++)
		if (!strcmp(p->slices[i].name, name))
			return &p->slices[i];
	if (p->n_slices == POLICY_MAX_SLICES)
		return NULL;
	struct policy_slice *s = &p->slices[p->n_slices++];
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->int8_fraction = -1;
	s->max_drop = -1;
	return s;
}

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int read_control(struct ycfg *y, yaml_node_t *root, struct policy *p)
{
	int bad = 0;
	yaml_node_t *c = ycfg_get(y, root, "control");

	if (!c) {
		ycfg_error(y, root, "control", "missing-key",
			   "'control' is required (control: {controller: NAME})");
		return 1;
	}
	if (!ycfg_is_map(y, c, "control"))
		return 1;
	bad += ycfg_check_keys(y, c, "control", control_keys);
	if (ycfg_string(y, c, "control", "controller", true, p->control.controller,
			sizeof(p->control.controller)))
		return bad + 1;
	const struct controller_ops *ops = controller_find(p->control.controller);
	if (!ops) {
		char names[256];
		ycfg_error(y, ycfg_get(y, c, "controller"), "control.controller", "unknown-controller",
			   "unknown controller '%s'; valid: %s", p->control.controller,
			   controller_names_joined(names, sizeof(names)));
		bad++;
	}
	long long period = p->control.period_ms;
	bad += ycfg_int(y, c, "control", "period_ms", false, 10, 60000, &period) != 0;
	p->control.period_ms = (uint32_t)period;

	yaml_node_t *params = ycfg_get(y, c, "params");
	if (!params)
		return bad;
	if (!ycfg_is_map(y, params, "control.params"))
		return bad + 1;
	if (!ops)
		return bad;
	/* The controller's own parameter table gives the allowed keys and ranges. */
	const char *allowed[POLICY_MAX_PARAMS + 1];
	size_t na = 0;
	for (const struct ctl_param *cp = ops->params; cp && cp->name && na < POLICY_MAX_PARAMS; cp++)
		allowed[na++] = cp->name;
	allowed[na] = NULL;
	bad += ycfg_check_keys(y, params, "control.params", allowed);
	for (size_t i = 0; i < na; i++) {
		const struct ctl_param *cp = controller_param(ops, allowed[i]);
		double v = NAN;
		if (!ycfg_get(y, params, cp->name))
			continue;
		if (ycfg_double(y, params, "control.params", cp->name, true, cp->min, cp->max, &v)) {
			bad++;
			continue;
		}
		struct policy_param *pp = &p->control.params[p->control.n_params++];
		snprintf(pp->name, sizeof(pp->name), "%s", cp->name);
		pp->value = v;
	}
	return bad;
}

static int read_precision(struct ycfg *y, yaml_node_t *root, struct policy *p)
{
	int bad = 0;
	yaml_node_t *n = section(y, root, "precision", precision_keys, &bad);

	if (!n)
		return bad;
	D(n, "precision", "int8_fraction", false, 0, 1, &p->precision.int8_fraction);
	yaml_node_t *sl = ycfg_get(y, n, "slices");
	if (!sl)
		return bad;
	if (!ycfg_is_map(y, sl, "precision.slices"))
		return bad + 1;
	for (yaml_node_pair_t *pr = sl->data.mapping.pairs.start; pr < sl->data.mapping.pairs.top; pr++) {
		const char *name = scalar(yaml_document_get_node(&y->doc, pr->key));
		if (!name)
			continue;
		struct policy_slice *s = slice_get(p, name);
		if (!s) {
			ycfg_error(y, yaml_document_get_node(&y->doc, pr->key), "precision.slices",
				   "too-many", "at most %d slices", POLICY_MAX_SLICES);
			return bad + 1;
		}
		D(sl, "precision.slices", name, true, 0, 1, &s->int8_fraction);
	}
	return bad;
}

static int read_quality(struct ycfg *y, yaml_node_t *root, struct policy *p)
{
	int bad = 0;
	yaml_node_t *n = section(y, root, "quality", quality_keys, &bad);

	if (!n)
		return bad;
	D(n, "quality", "default_max_drop", false, 0, 1, &p->quality.default_max_drop);
	yaml_node_t *sl = ycfg_get(y, n, "slices");
	if (!sl)
		return bad;
	if (!ycfg_is_map(y, sl, "quality.slices"))
		return bad + 1;
	for (yaml_node_pair_t *pr = sl->data.mapping.pairs.start; pr < sl->data.mapping.pairs.top; pr++) {
		const char *name = scalar(yaml_document_get_node(&y->doc, pr->key));
		yaml_node_t *v = yaml_document_get_node(&y->doc, pr->value);
		char path[128];
		if (!name)
			continue;
		ycfg_join(path, sizeof(path), "quality.slices", name);
		if (!ycfg_is_map(y, v, path)) {
			bad++;
			continue;
		}
		bad += ycfg_check_keys(y, v, path, qslice_keys);
		struct policy_slice *s = slice_get(p, name);
		if (!s) {
			ycfg_error(y, v, path, "too-many", "at most %d slices", POLICY_MAX_SLICES);
			return bad + 1;
		}
		D(v, path, "max_drop", true, 0, 1, &s->max_drop);
	}
	return bad;
}

static int parse(struct ycfg *y, struct policy *p)
{
	int bad = 0;
	yaml_node_t *root = ycfg_root(y);
	yaml_node_t *n;

	if (!root) {
		ycfg_error(y, NULL, "", "empty", "empty policy; expected a mapping with name and control");
		return 1;
	}
	if (!ycfg_is_map(y, root, ""))
		return 1;
	bad += ycfg_check_keys(y, root, "", root_keys);
	bad += ycfg_string(y, root, "", "name", true, p->name, sizeof(p->name)) != 0;
	bad += ycfg_string(y, root, "", "description", false, p->description,
			   sizeof(p->description)) != 0;
	bad += read_control(y, root, p);

	if ((n = section(y, root, "sla", sla_keys, &bad))) {
		D(n, "sla", "window_s", false, 1, 3600, &p->sla.window_s);
		D(n, "sla", "ttft_p99_ms", false, 0, 1e7, &p->sla.ttft_p99_ms);
		D(n, "sla", "tbt_p99_ms", false, 0, 1e7, &p->sla.tbt_p99_ms);
		D(n, "sla", "e2e_p99_ms", false, 0, 1e8, &p->sla.e2e_p99_ms);
		D(n, "sla", "ttft_p95_ms", false, 0, 1e7, &p->sla.ttft_p95_ms);
		D(n, "sla", "tbt_p95_ms", false, 0, 1e7, &p->sla.tbt_p95_ms);
		D(n, "sla", "attainment", false, 0, 1, &p->sla.attainment);
	}
	if ((n = section(y, root, "thermal", thermal_keys, &bad))) {
		D(n, "thermal", "ceiling_c", false, 20, 150, &p->thermal.ceiling_c);
		D(n, "thermal", "hysteresis_c", false, 0, 30, &p->thermal.hysteresis_c);
	}
	if ((n = section(y, root, "power", power_keys, &bad)))
		D(n, "power", "cap_w", false, 0, 5000, &p->power.cap_w);
	if ((n = section(y, root, "frequency", freq_keys, &bad))) {
		D(n, "frequency", "min_mhz", false, 0, 10000, &p->frequency.min_mhz);
		D(n, "frequency", "max_mhz", false, 0, 10000, &p->frequency.max_mhz);
		D(n, "frequency", "max_step_mhz", false, 0, 10000, &p->frequency.max_step_mhz);
		if (p->frequency.min_mhz > 0 && p->frequency.max_mhz > 0 &&
		    p->frequency.min_mhz > p->frequency.max_mhz) {
			ycfg_error(y, ycfg_get(y, n, "min_mhz"), "frequency.min_mhz", "range",
				   "min_mhz (%g) must not exceed max_mhz (%g)", p->frequency.min_mhz,
				   p->frequency.max_mhz);
			bad++;
		}
	}
	bad += read_precision(y, root, p);
	bad += read_quality(y, root, p);
	if ((n = section(y, root, "safe_point", safe_keys, &bad))) {
		long long hold = p->safe_point.hold_periods;
		D(n, "safe_point", "clk_max_mhz", false, 0, 10000, &p->safe_point.clk_max_mhz);
		D(n, "safe_point", "power_cap_w", false, 0, 5000, &p->safe_point.power_cap_w);
		D(n, "safe_point", "int8_fraction", false, 0, 1, &p->safe_point.int8_fraction);
		bad += ycfg_int(y, n, "safe_point", "hold_periods", false, 0, 100000, &hold) != 0;
		p->safe_point.hold_periods = (uint32_t)hold;
	}
	long long stale = 0, stuck = p->telemetry.stuck_periods;
	if ((n = section(y, root, "telemetry", telemetry_keys, &bad))) {
		D(n, "telemetry", "ewma_tau_s", false, 0.01, 600, &p->telemetry.ewma_tau_s);
		bad += ycfg_int(y, n, "telemetry", "stale_ms", false, 1, 600000, &stale) != 0;
		bad += ycfg_int(y, n, "telemetry", "stuck_periods", false, 2, 100000, &stuck) != 0;
	}
	/* A reading may be up to three periods old before it is called stale. */
	p->telemetry.stale_ms = stale ? (uint32_t)stale : 3 * p->control.period_ms;
	p->telemetry.stuck_periods = (uint32_t)stuck;
	return bad;
}

int policy_load_string(const char *name, const char *text, size_t len, struct policy **out,
		       struct diag_list *diags)
{
	struct ycfg y = { 0 };
	struct policy *p;
	size_t before = diag_count(diags, DIAG_ERROR);
	int rc;

	*out = NULL;
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	policy_defaults(p);
	snprintf(p->path, sizeof(p->path), "%s", name);
	p->hash = fnv1a64(text, len);
	snprintf(p->hash_hex, sizeof(p->hash_hex), "fnv1a64:%016llx", (unsigned long long)p->hash);

	rc = ycfg_load_string(&y, name, text, len, diags);
	if (rc) {
		ycfg_fini(&y); /* a failed load still owns its file name */
		goto err_load;
	}
	parse(&y, p);
	ycfg_fini(&y);
	if (diag_count(diags, DIAG_ERROR) > before) {
		rc = -EINVAL;
		goto err_load;
	}
	*out = p;
	return 0;

err_load:
	free(p);
	return rc ? rc : -EINVAL;
}

int policy_load(const char *path, struct policy **out, struct diag_list *diags)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc;

	*out = NULL;
	if (!f) {
		rc = -errno;
		diag_add(diags, DIAG_ERROR, path, 0, 0, "", "io", "cannot open policy: %s",
			 strerror(-rc));
		return rc;
	}
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			char *nb = realloc(buf, cap);
			if (!nb) {
				rc = -ENOMEM;
				goto err_read;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		rc = -EIO;
		diag_add(diags, DIAG_ERROR, path, 0, 0, "", "io", "cannot read policy");
		goto err_read;
	}
	fclose(f);
	rc = policy_load_string(path, buf, len, out, diags);
	free(buf);
	return rc;

err_read:
	fclose(f);
	free(buf);
	return rc;
}

void policy_free(struct policy *p)
{
	free(p);
}
