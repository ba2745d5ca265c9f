/* The plan: a config and its policies loaded as one transaction (govd's
 * start, a reload, --check), and what --check judges without opening a
 * device. */
#include "governor/daemon/daemon.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "governor/controllers/controller.h"

/* A file named by several devices is one object: free each once. */
static void free_policies(struct policy **pol, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		bool shared = false;
		for (size_t j = 0; j < i && !shared; j++)
			shared = pol[j] == pol[i];
		if (!shared)
			policy_free(pol[i]);
	}
	for (size_t i = 0; i < n; i++)
		pol[i] = NULL;
}

void daemon_plan_free(struct daemon_plan *p)
{
	if (!p->cfg)
		return;
	free_policies(p->pol, p->cfg->n_devices);
	config_free(p->cfg);
	p->cfg = NULL;
}

int daemon_plan_load(const char *config_path, bool expand, struct daemon_plan *out,
		     struct diag_list *diags)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = config_load(config_path, &out->cfg, diags);
	if (rc)
		return rc;
	if (expand && (rc = config_expand(out->cfg, diags))) {
		config_free(out->cfg);
		out->cfg = NULL;
		return rc;
	}
	struct config *c = out->cfg;
	for (size_t i = 0; i < c->n_devices; i++) {
		for (size_t j = 0; j < i && !out->pol[i]; j++)
			if (!strcmp(c->dev[j].policy_path, c->dev[i].policy_path))
				out->pol[i] = out->pol[j];
		if (out->pol[i])
			continue;
		int r = policy_load(c->dev[i].policy_path, &out->pol[i], diags);
		if (r && !rc)
			rc = r;
	}
	/* One loop runs every device: one period. */
	for (size_t i = 0; i < c->n_devices && !rc; i++) {
		uint32_t p = out->pol[i]->control.period_ms;
		if (i == 0) {
			out->period_ms = p;
		} else if (p != out->period_ms) {
			char path[64];
			snprintf(path, sizeof(path), "devices[%zu].policy", i);
			diag_add(diags, DIAG_ERROR, c->path, c->dev[i].policy_line, c->dev[i].policy_col,
				 path, "period-mismatch",
				 "policy %s runs at control.period_ms %u but devices[0]'s at %u; one "
				 "loop ticks every device, so their policies must share the period",
				 out->pol[i]->name, p, out->period_ms);
			rc = -EINVAL;
		}
	}
	if (rc) {
		free_policies(out->pol, c->n_devices);
		config_free(out->cfg);
		out->cfg = NULL;
	}
	return rc;
}

/* The backend's own option checks (hal_check_options), placed at the
 * device in the config: hal/ never sees the YAML, so its diags name the
 * device and the key only. */
static int dev_opts_check(const struct config *c, size_t i, struct diag_list *diags)
{
	struct hal_dev_cfg hc;
	struct diag_list local = { 0 };
	config_dev_cfg(&c->dev[i], &hc);
	int rc = hal_check_options(&hc, &local);
	for (size_t k = 0; k < local.n; k++) {
		const struct diag *g = &local.v[k];
		char kp[160];
		snprintf(kp, sizeof(kp), "devices[%zu]%s%s", i, g->path[0] ? "." : "", g->path);
		diag_add(diags, g->sev, c->path, c->dev[i].line, c->dev[i].col, kp, g->code, "%s",
			 g->msg);
	}
	diag_clear(&local);
	return rc;
}

/* What would fail at start, judged without opening a device (govd --check
 * runs as ExecStartPre, beside nothing it may disturb). */
int daemon_plan_check(const struct daemon_plan *p, struct diag_list *diags)
{
	const struct config *c = p->cfg;
	int rc = 0;
	for (size_t i = 0; i < c->n_devices; i++) {
		const struct config_device *d = &c->dev[i];
		char kp[64];
		if (dev_opts_check(c, i, diags))
			rc = -EINVAL;
		/* A meter (modbus) offers nothing settable: its limits are all
		 * zero, and a controller that needs a clock range refuses them. */
		const struct controller_ops *ctl = controller_find(p->pol[i]->control.controller);
		if (!strcmp(d->backend, "modbus") && ctl && ctl->init) {
			struct hal_limits zero;
			void *st = NULL;
			memset(&zero, 0, sizeof(zero));
			if (ctl->init(&st, p->pol[i], &zero)) {
				snprintf(kp, sizeof(kp), "devices[%zu].backend", i);
				diag_add(diags, DIAG_ERROR, c->path, d->line, d->col, kp, "meter-controller",
					 "device %s is a modbus meter (nothing settable) but its policy %s "
					 "runs controller %s, which needs a settable clock range",
					 d->name, p->pol[i]->name, ctl->name);
				rc = -EINVAL;
			} else if (ctl->fini) {
				ctl->fini(st);
			}
		}
	}
	return rc;
}
