/* govd's endpoints: the Prometheus metrics server and the control socket
 * with its commands (status, set budget-w, hold/resume, reload), and the
 * fleet agent started beside them. */
#include "governor/daemon/daemon.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"


/* The node budget in force: the fleet's grant, else govctl's, else the
 * config's. Under a fleet there is always one (0 W runs every device at its
 * minimum); otherwise 0 means none. */
double daemon_budget_w(const struct daemon *d)
{
	if (d->fleet)
		return daemon_fleet_budget_w(d);
	return d->budget_override_w > 0 ? d->budget_override_w : d->plan.cfg->budget_w;
}

static int sock_status(void *ctx, json_t *out)
{
	struct daemon *d = ctx;
	const struct config *c = d->plan.cfg;
	double bw = daemon_budget_w(d);
	json_t *devs = json_array();
	for (size_t i = 0; i < d->n; i++) {
		const struct daemon_dev *dd = &d->dev[i];
		const struct governor *g = dd->g;
		const struct gov_opoint *cur = governor_point(g);
		struct governor_status gs;
		governor_status(g, &gs);
		json_array_append_new(
			devs, json_pack("{s:s, s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I}", "name",
					dd->cfg->name, "backend", dd->cfg->backend, "policy",
					d->plan.pol[i]->name, "policy_hash", d->plan.pol[i]->hash_hex,
					"clk_locked", cur->clk_locked, "clk_max_khz",
					(json_int_t)cur->clk_max_khz, "power_limit_mw",
					(json_int_t)cur->power_limit_mw, "budget_grant_mw",
					(json_int_t)dd->grant_mw, "periods", (json_int_t)gs.periods,
					"actuate_errors", (json_int_t)gs.actuate_errors));
		json_t *dj = json_array_get(devs, json_array_size(devs) - 1);
		/* Outside the policy's envelope the governor holds the safe point:
		 * why, or null (docs/metrics.md, govd_outside_envelope). */
		json_object_set_new(dj, "envelope",
				    gs.envelope ? json_string(gs.envelope) : json_null());
		json_object_set_new(dj, "out_of_band_changes", json_integer((json_int_t)gs.oob_changes));
		/* A dry run wrote nothing: in force is the device's own (firmware
		 * clocks, the limit it reports); the decision is would_set. */
		struct gov_opoint in_force;
		if (governor_in_force(g, &in_force)) {
			json_object_set_new(dj, "would_set",
					    json_pack("{s:b, s:I, s:I}", "clk_locked", cur->clk_locked,
						      "clk_max_khz", (json_int_t)cur->clk_max_khz,
						      "power_limit_mw",
						      (json_int_t)cur->power_limit_mw));
			json_object_set_new(dj, "clk_locked", json_boolean(in_force.clk_locked));
			json_object_set_new(dj, "clk_max_khz", json_integer(in_force.clk_max_khz));
			json_object_set_new(dj, "power_limit_mw",
					    json_integer(in_force.power_limit_mw));
		}
	}
	json_object_set_new(out, "node", json_string(c->node));
	json_object_set_new(out, "config", json_string(c->path));
	json_object_set_new(out, "dry_run", json_boolean(d->dry_run));
	json_object_set_new(out, "held", json_boolean(d->held));
	json_object_set_new(out, "period_ms", json_integer(d->plan.period_ms));
	json_object_set_new(out, "budget_w", d->fleet || bw > 0 ? json_real(bw) : json_null());
	json_object_set_new(out, "budget_overridden", json_boolean(d->budget_override_w > 0));
	json_object_set_new(out, "periods", json_integer((json_int_t)d->st.periods));
	json_object_set_new(out, "overruns", json_integer((json_int_t)d->st.overruns));
	json_object_set_new(out, "reloads", json_integer((json_int_t)d->st.reloads));
	json_object_set_new(out, "reloads_refused", json_integer((json_int_t)d->st.reload_failures));
	json_object_set_new(out, "devices", devs);
	return 0;
}

#define CTL_BUDGET_MAX_W 1000000.0

static int sock_set_budget(void *ctx, double w, json_t *reply)
{
	struct daemon *d = ctx;
	char msg[160];
	if (d->fleet) {
		/* the fleet's grant is the node budget: an override would be
		 * ignored (or break the group's sum), so it is refused */
		json_object_set_new(reply, "error",
				    json_string("the node budget comes from the fleet's grant: use "
						"govctl fleet set-budget for the group"));
		return -EPERM;
	}
	if (!(w > 0) || w > CTL_BUDGET_MAX_W) {
		json_object_set_new(reply, "error", json_string("budget-w must be in (0, 1000000] W"));
		return -EINVAL;
	}
	d->budget_override_w = w;
	snprintf(msg, sizeof(msg), "node budget %.0f W from the next period (until restart)", w);
	log_notice("control: %s", msg);
	json_object_set_new(reply, "message", json_string(msg));
	return 0;
}

void daemon_hold(struct daemon *d, bool on)
{
	for (size_t i = 0; i < d->n; i++)
		governor_hold(d->dev[i].g, on);
	d->held = on;
}

static int sock_hold(void *ctx, bool on, json_t *reply)
{
	struct daemon *d = ctx;
	daemon_hold(d, on);
	log_notice("control: %s", on ? "held: operating points frozen" : "resumed");
	json_object_set_new(reply, "message", json_string(on ? "held" : "resumed"));
	return 0;
}

static int sock_reload(void *ctx, json_t *reply)
{
	struct daemon *d = ctx;
	char err[1200] = "";
	int rc = daemon_reload_logged(d, err, sizeof(err));
	if (rc && err[0])
		json_object_set_new(reply, "error", json_string(err));
	else if (!rc)
		json_object_set_new(reply, "message", json_string("reloaded"));
	return rc;
}

static const struct ctlsock_ops sock_ops = {
	.status = sock_status,
	.set_budget_w = sock_set_budget,
	.hold = sock_hold,
	.reload = sock_reload,
};

static void on_ctlsock(void *ctx, int fd)
{
	struct daemon *d = ctx;
	int rc = ctlsock_handle(d->cs, &sock_ops, d);
	if (rc)
		log_err("control socket: %s", strerror(-rc));
}

void daemon_stop_endpoints(struct daemon *d)
{
	daemon_fleet_stop(d);
	if (d->msrv)
		metrics_stop(d->msrv);
	d->msrv = NULL;
	if (d->cs)
		ctlsock_close(d->cs);
	d->cs = NULL;
	free(d->snap);
	d->snap = NULL;
}

int daemon_start_endpoints(struct daemon *d, struct diag_list *diags)
{
	const struct config *c = d->plan.cfg;
	int rc;
	if (c->metrics.enabled) {
		if (!(d->snap = calloc(1, sizeof(*d->snap))))
			return -ENOMEM;
		metrics_snapshot_init(d->snap);
		for (size_t i = 0; i < d->n; i++) {
			d->dev[i].metrics_idx = metrics_add_device(d->snap, d->dev[i].cfg->name);
			if (d->dev[i].metrics_idx >= 0)
				metrics_device_set_policy(&d->snap->dev[d->dev[i].metrics_idx],
							  d->plan.pol[i]);
			if (d->dev[i].metrics_idx < 0 && i == METRICS_MAX_DEVICES)
				log_warn("metrics cover the first %d devices only", METRICS_MAX_DEVICES);
		}
		struct metrics_cfg mc = { .listen = c->metrics.listen };
		if ((rc = metrics_start(&d->msrv, &mc, diags)))
			goto err;
		log_notice("metrics on http://%.*s:%u/metrics",
			   (int)(strrchr(c->metrics.listen, ':') - c->metrics.listen), c->metrics.listen,
			   metrics_port(d->msrv));
	}
	if (c->control.enabled) {
		struct ctlsock_cfg cc = { .path = c->control.socket, .mode = c->control.mode,
					  .group = c->control.group, .acl = c->control.acl };
		if ((rc = ctlsock_open(&d->cs, &cc, diags)))
			goto err;
		if ((rc = daemon_add_fd(d, ctlsock_fd(d->cs), on_ctlsock, d)))
			goto err;
		log_notice("control socket %s", c->control.socket);
	}
	if ((rc = daemon_fleet_start(d, diags)))
		goto err;
	return 0;
err:
	daemon_stop_endpoints(d);
	return rc;
}
