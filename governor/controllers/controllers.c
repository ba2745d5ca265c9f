/* Controller registry and the three open-loop baselines: firmware-default,
 * static and naive-int8 (sources: docs/baselines.md). */
#include "governor/controllers/controller.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strjoin.h"

static const struct controller_ops *const registry[] = {
	&ctl_firmware_default, &ctl_static, &ctl_naive_int8, &ctl_ondemand, &ctl_ipa,
	&ctl_slo_dvfs, &ctl_govd,
};

#define N_CONTROLLERS (sizeof(registry) / sizeof(registry[0]))

const struct controller_ops *controller_find(const char *name)
{
	for (size_t i = 0; i < N_CONTROLLERS; i++)
		if (!strcmp(registry[i]->name, name))
			return registry[i];
	return NULL;
}

size_t controller_count(void)
{
	return N_CONTROLLERS;
}

const struct controller_ops *controller_at(size_t i)
{
	return i < N_CONTROLLERS ? registry[i] : NULL;
}

const char *controller_names_joined(char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < N_CONTROLLERS && strjoin_add(buf, len, ", ", registry[i]->name); i++)
		;
	return buf;
}

const struct ctl_param *controller_param(const struct controller_ops *c, const char *name)
{
	for (const struct ctl_param *p = c->params; p && p->name; p++)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

double ctl_param_value(const struct policy *pol, const struct controller_ops *c, const char *name)
{
	const struct ctl_param *p = controller_param(c, name);

	assert(p);
	return policy_param(pol, name, p->def);
}

/* Binds a parsed policy to the registry: its controller by name, its
 * control.params against that controller's table (policy.c judges them). */
static int bind(struct policy *p, int rc, size_t first, struct policy **out,
		struct diag_list *diags)
{
	if (!p)
		return rc;
	const struct controller_ops *c = controller_find(p->control.controller);
	char names[512];
	int brc = policy_bind_controller(p, c != NULL, controller_names_joined(names, sizeof(names)),
					 c ? c->params : NULL, diags, first);
	if (!brc && c && c->check)
		brc = c->check(p, diags);
	if (rc || brc) {
		policy_free(p);
		return -EINVAL;
	}
	*out = p;
	return 0;
}

int policy_load(const char *path, struct policy **out, struct diag_list *diags)
{
	struct policy *p;
	size_t first = diags->n;
	int rc = policy_parse(path, &p, diags);
	*out = NULL;
	return bind(p, rc, first, out, diags);
}

int policy_load_string(const char *name, const char *text, size_t len, struct policy **out,
		       struct diag_list *diags)
{
	struct policy *p;
	size_t first = diags->n;
	int rc = policy_parse_string(name, text, len, &p, diags);
	*out = NULL;
	return bind(p, rc, first, out, diags);
}

void ctl_default_op(const struct ctl_input *in, struct gov_opoint *op)
{
	memset(op, 0, sizeof(*op));
	op->clk_locked = false;
	op->clk_min_khz = in->lim->clk_min_khz;
	op->clk_max_khz = in->lim->clk_default_max_khz;
	op->power_limit_mw = in->lim->power_limit_default_mw;
	op->n_slices = in->slices->n;
}

/* firmware-default: what an unmanaged GPU does (max boost, default TGP, BF16). */
static void fw_step(void *state, const struct ctl_input *in, struct ctl_output *out)
{
	ctl_default_op(in, &out->op);
	out->reasons = GOV_R_FIRMWARE_DEFAULT;
	out->binding = GOV_B_NONE;
}

const struct controller_ops ctl_firmware_default = {
	.name = "firmware-default",
	.description = "max boost (clocks unlocked), default power limit, BF16 everywhere",
	.step = fw_step,
};

/* static: clock range, power cap and precision fixed by the policy. */
static void static_step(void *state, const struct ctl_input *in, struct ctl_output *out)
{
	const struct policy *p = in->pol;

	ctl_default_op(in, &out->op);
	out->op.clk_locked = true;
	if (p->frequency.min_mhz > 0)
		out->op.clk_min_khz = gov_mhz_to_khz(p->frequency.min_mhz);
	if (p->frequency.max_mhz > 0)
		out->op.clk_max_khz = gov_mhz_to_khz(p->frequency.max_mhz);
	if (p->power.cap_w > 0)
		out->op.power_limit_mw = gov_w_to_mw(p->power.cap_w);
	for (size_t s = 0; s < in->slices->n; s++)
		out->op.int8_frac[s] = in->slices->rule[s].int8_fraction;
	out->reasons = GOV_R_STATIC;
	out->binding = GOV_B_POLICY;
}

const struct controller_ops ctl_static = {
	.name = "static",
	.description = "fixed clock range, power cap and per-slice INT8 share from the policy",
	.step = static_step,
};

/* naive-int8: every slice in INT8, clocks and power as the firmware likes. */
static void int8_step(void *state, const struct ctl_input *in, struct ctl_output *out)
{
	ctl_default_op(in, &out->op);
	for (size_t s = 0; s < in->slices->n; s++)
		out->op.int8_frac[s] = 1.0;
	out->reasons = GOV_R_INT8_ALL;
	out->binding = GOV_B_POLICY;
}

const struct controller_ops ctl_naive_int8 = {
	.name = "naive-int8",
	.description = "INT8 on every slice at default clocks and power limit",
	.step = int8_step,
};
