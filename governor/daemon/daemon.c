/* govd: the devices opened (one writer each, a dry run's view), their
 * governors and decision logs, the state file, start and stop, and one
 * period of every device with the node budget divided. The reload is in
 * daemon_reload.c, the loop in daemon_loop.c, the endpoints in
 * daemon_ctl.c. */
#include "governor/daemon/daemon.h"

#include "governor/controllers/controller.h"
#include "governor/daemon/devlock.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "common/fsafe.h"
#include "common/log.h"
#include "hal/hal_sim.h"

#define HEADER_PREFIX "{\"type\":\"header\""

/* ---- clock ---- */

static uint64_t mono_now_ms(void *ctx)
{
	return govd_mono_ms();
}

static int mono_wait_until(void *ctx, uint64_t t_ms)
{
	struct timespec ts = { .tv_sec = (time_t)(t_ms / 1000), .tv_nsec = (long)(t_ms % 1000) * 1000000 };
	int rc;
	while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR)
		;
	return -rc;
}

static const struct govd_clock_ops mono_ops = { .now_ms = mono_now_ms,
						.wait_until = mono_wait_until };

/* ---- dry run: the HAL boundary itself refuses to write ---- */

static int dry_clock_range(struct hal_dev *dev, uint32_t lo, uint32_t hi)
{
	return 0;
}
static int dry_reset_clocks(struct hal_dev *dev)
{
	return 0;
}
static int dry_power_limit(struct hal_dev *dev, uint32_t mw)
{
	return 0;
}
static int dry_precision(struct hal_dev *dev, const double *f, size_t n)
{
	return 0;
}
static int dry_low_mode(struct hal_dev *dev, const uint8_t *m, size_t n)
{
	return 0;
}
static int dry_shadow_rate(struct hal_dev *dev, const double *r, size_t n)
{
	return 0;
}
static int dry_brake(struct hal_dev *dev, bool on)
{
	return 0;
}
static int dry_restore(struct hal_dev *dev)
{
	return 0;
}

/* The device as the governor sees it in a dry run: a view of hw whose reads
 * forward to it and whose writes succeed without touching it, so every
 * decision is computed and logged as if applied. */
static void make_dry(struct daemon_dev *dd)
{
	hal_fwd_init(&dd->dry_fwd, &dd->hw);
	struct hal_ops *o = &dd->dry_fwd.ops;
	if (o->set_clock_range)
		o->set_clock_range = dry_clock_range;
	if (o->reset_clocks)
		o->reset_clocks = dry_reset_clocks;
	if (o->set_power_limit)
		o->set_power_limit = dry_power_limit;
	if (o->set_precision)
		o->set_precision = dry_precision;
	if (o->set_low_mode)
		o->set_low_mode = dry_low_mode;
	if (o->set_shadow_rate)
		o->set_shadow_rate = dry_shadow_rate;
	if (o->set_brake)
		o->set_brake = dry_brake;
	if (o->restore)
		o->restore = dry_restore;
	dd->dry = (struct hal_dev){ .ops = o, .priv = &dd->dry_fwd };
	memcpy(dd->dry.name, dd->hw.name, sizeof(dd->dry.name));
	dd->dev = &dd->dry;
}

/* ---- governors ---- */

/* The decision log's write health, once per episode in the journal: the
 * first failed write warns, the first good one after says how many records
 * were lost (logrot drops them whole, so the file stays valid JSONL). */
static void log_health(struct daemon_dev *dd)
{
	if (!dd->log)
		return;
	bool failing = logrot_failing(dd->log);
	if (failing && !dd->log_failing)
		log_warn("%s: decision log: writes failing (%s); records are dropped whole until "
			 "they succeed (govd_decision_log_write_errors_total)",
			 dd->cfg->name, strerror(-logrot_last_error(dd->log)));
	else if (!failing && dd->log_failing)
		log_notice("%s: decision log: writes succeed again; %llu record(s) lost in all",
			   dd->cfg->name, (unsigned long long)logrot_dropped(dd->log));
	dd->log_failing = failing;
}

/* After each period of a device: its metrics from the governor's state. */
static int on_period(void *ctx, const struct gov_period *p)
{
	struct daemon_dev *dd = ctx;
	struct daemon *d = dd->d;
	log_health(dd);
	if (d->snap && dd->metrics_idx >= 0) {
		metrics_device_update(&d->snap->dev[dd->metrics_idx], dd->g, p, 0);
		if (dd->log)
			d->snap->dev[dd->metrics_idx].log_write_errors = logrot_errors(dd->log);
	}
	fault_episodes_period(&dd->episodes, dd->cfg->name, p);
	return 0;
}

int daemon_gov_new(struct daemon *d, struct daemon_dev *dd, struct policy *pol, FILE *log,
		   struct governor **out, struct diag_list *diags)
{
	struct governor_cfg gc = {
		.pol = pol,
		.dev = dd->dev,
		.clock = dd->is_sim ? &dd->sim_clk : &d->clock,
		.declog = log,
		.declog_heartbeat_ms = d->plan.cfg->declog.compact
					       ? d->plan.cfg->declog.heartbeat_s * 1000u : 0,
		.on_period = on_period,
		.cb_ctx = dd,
		/* Dry run is the device wrapper's (writes succeed without
		 * reaching the hardware), so the governor's op point is what it
		 * would have applied and the canary logic runs as it would;
		 * the log header still says it is a dry run. */
		.dry_run_device = d->dry_run,
	};
	return governor_new(&gc, out, diags);
}

/* ---- state file ---- */

static int write_state(struct daemon *d, struct diag_list *diags)
{
	const struct config *c = d->plan.cfg;
	json_t *orig[CONFIG_MAX_DEVICES] = { 0 };
	int rc = 0;

	for (size_t i = 0; i < d->n && !rc; i++)
		rc = statefile_original(&d->dev[i].hw, &orig[i], diags);
	if (rc) {
		for (size_t i = 0; i < d->n; i++)
			json_decref(orig[i]);
		return rc;
	}
	json_t *doc = statefile_build(c, orig);
	if (!doc)
		return -ENOMEM;
	rc = statefile_write(c->state_file, doc);
	json_decref(doc);
	if (rc)
		diag_add(diags, DIAG_ERROR, c->state_file, 0, 0, "", "io",
			 "cannot write the state file: %s (it must exist before the first write)",
			 strerror(-rc));
	return rc;
}

/* ---- init / fini ---- */

int daemon_block_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

void daemon_notify(struct daemon *d, const char *state)
{
	if (d->hooks.notify)
		d->hooks.notify(d->hooks.ctx, state);
}

int daemon_arm_timer(struct daemon *d)
{
	uint32_t p = d->plan.period_ms;
	struct itimerspec its = {
		.it_interval = { .tv_sec = p / 1000, .tv_nsec = (long)(p % 1000) * 1000000 },
		.it_value = { .tv_sec = p / 1000, .tv_nsec = (long)(p % 1000) * 1000000 },
	};
	return timerfd_settime(d->tfd, 0, &its, NULL) ? -errno : 0;
}

static int open_log(struct daemon *d, struct daemon_dev *dd, struct diag_list *diags)
{
	const struct config *c = d->plan.cfg;
	char path[CONFIG_PATH_LEN + HAL_NAME_LEN + 16];
	if (!c->declog.dir[0])
		return 0;
	snprintf(path, sizeof(path), "%s/%s.jsonl", c->declog.dir, dd->cfg->name);
	struct logrot_cfg lc = { .path = path, .max_bytes = c->declog.max_bytes,
				 .keep = c->declog.keep, .header_prefix = HEADER_PREFIX,
				 .compress = c->declog.compress };
	int rc = logrot_open(&dd->log, &lc);
	if (rc)
		diag_add(diags, DIAG_ERROR, path, 0, 0, "", "io", "cannot open the decision log: %s",
			 strerror(-rc));
	return rc;
}

/* The device's writer locks (governor/daemon/devlock.h): a second govd on
 * the same GPU, sysfs device or router, under another state file, is
 * refused here, before its first period could record the first one's
 * governed settings as originals. */
static int lock_writers(const struct config *c, struct daemon_dev *dd, struct diag_list *diags)
{
	char ids[HAL_MAX_WRITER_IDS][HAL_ID_LEN];
	if (!dd->hw.ops->writer_ids)
		return 0;
	size_t n = dd->hw.ops->writer_ids(&dd->hw, ids, HAL_MAX_WRITER_IDS);
	for (size_t k = 0; k < n; k++) {
		char err[HAL_ID_LEN + 160];
		int fd = devlock_take(ids[k], err, sizeof(err));
		if (fd < 0) {
			diag_add(diags, DIAG_ERROR, c->path, dd->cfg->line, dd->cfg->col, "devices",
				 "device-busy", "device %s: %s", dd->cfg->name, err);
			return fd;
		}
		dd->lock_fd[k] = fd;
	}
	return 0;
}

static void unlock_writers(struct daemon_dev *dd)
{
	for (size_t k = 0; k < HAL_MAX_WRITER_IDS; k++)
		if (dd->lock_fd[k] >= 0) {
			close(dd->lock_fd[k]);
			dd->lock_fd[k] = -1;
		}
}

/* A state file left behind: a run ended without restoring. Its originals
 * are the true ones; recording the devices as they are now would lose them,
 * so a failed restore stops the start. A dry run restores nothing. */
static int restore_previous(struct daemon *d, struct diag_list *diags)
{
	const struct config *c = d->plan.cfg;
	if (d->dry_run) {
		if (access(c->state_file, F_OK) == 0)
			log_warn("%s exists: a run ended without restoring; a dry run does not "
				 "restore it (run `govctl restore --state %s`)",
				 c->state_file, c->state_file);
		return 0;
	}
	bool found;
	struct statefile_result res;
	int rc = daemon_restore_for(c->state_file, c, &found, &res, diags);
	if (rc && !found) {
		/* Damaged or unreadable: its originals are unknown, so recording
		 * the devices as they are now could make a governed setting the
		 * "original". */
		diag_add(diags, DIAG_ERROR, c->state_file, 0, 0, "", "restore",
			 "a state file is there but cannot be used (%s); check the devices' "
			 "settings, then remove it; not starting",
			 strerror(-rc));
		return rc;
	}
	if (rc) {
		diag_add(diags, DIAG_ERROR, c->state_file, 0, 0, "", "restore",
			 "the previous run's settings could not be restored (%zu of %zu "
			 "devices); not starting over them",
			 res.failed, res.devices);
		return rc;
	}
	if (found)
		log_warn("restored %zu device(s) from %s, left by a run that did not exit cleanly",
			 res.restored, c->state_file);
	return 0;
}

/* Device i: opened, its writer locks taken, its log and governor made.
 * d->n counts it from its open on (the caller's unwind closes it). */
static int open_device(struct daemon *d, size_t i, struct diag_list *diags)
{
	const struct config *c = d->plan.cfg;
	struct daemon_dev *dd = &d->dev[i];
	struct hal_dev_cfg hc;
	int rc;
	dd->d = d;
	dd->idx = i;
	dd->metrics_idx = -1;
	dd->cfg = &c->dev[i];
	config_dev_cfg(dd->cfg, &hc);
	hc.clock = &d->clock;
	hc.read_only = d->dry_run;
	for (size_t k = 0; k < HAL_MAX_WRITER_IDS; k++)
		dd->lock_fd[k] = -1;
	if ((rc = hal_open(&dd->hw, &hc, diags)))
		return rc;
	d->n = i + 1;
	/* before anything is written (open writes nothing): one writer per
	 * device, machine-wide; a dry run writes nothing and takes none */
	if (!d->dry_run && (rc = lock_writers(c, dd, diags)))
		return rc;
	dd->dev = &dd->hw;
	dd->is_sim = !strcmp(dd->cfg->backend, "sim");
	if (dd->is_sim && (rc = hal_sim_clock(&dd->hw, &dd->sim_clk)))
		return rc;
	if (d->dry_run)
		make_dry(dd);
	if ((rc = open_log(d, dd, diags)))
		return rc;
	return daemon_gov_new(d, dd, d->plan.pol[i], dd->log ? logrot_file(dd->log) : NULL, &dd->g,
		       diags);
}

int daemon_init(struct daemon *d, const char *config_path, bool dry_run,
		const struct daemon_hooks *hooks, struct diag_list *diags)
{
	int rc;

	memset(d, 0, sizeof(*d));
	d->tfd = d->sfd = d->lock_fd = d->wfd = -1;
	if (hooks)
		d->hooks = *hooks;
	d->clock.ops = &mono_ops;
	hist_reset(&d->st.tick_ms);
	hist_reset(&d->st.advance_ms);
	rc = daemon_plan_load(config_path, true, &d->plan, diags);
	if (rc)
		return rc;
	const struct config *c = d->plan.cfg;
	log_set_level(c->log_level);
	d->dry_run_cli = dry_run;
	d->dry_run = dry_run || c->dry_run;

	/* Nothing is read, restored or created before these: the directories
	 * are govd's alone, and no live instance runs these devices. */
	if ((rc = daemon_check_dirs(c, diags)))
		goto err_plan;
	long holder;
	if ((rc = statefile_lock(c->state_file, &d->lock_fd, &holder, diags)))
		goto err_plan;

	if ((rc = restore_previous(d, diags)))
		goto err_plan;

	d->dev = calloc(c->n_devices, sizeof(*d->dev));
	if (!d->dev) {
		rc = -ENOMEM;
		goto err_plan;
	}
	for (size_t i = 0; i < c->n_devices; i++)
		if ((rc = open_device(d, i, diags)))
			goto err_devs;
	/* Before the first write: the first period may write. */
	if (!d->dry_run) {
		if ((rc = write_state(d, diags)))
			goto err_devs;
		d->state_written = true;
	}
	if ((rc = daemon_start_endpoints(d, diags)))
		goto err_endpoints;
	d->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	d->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (d->tfd < 0 || d->sfd < 0) {
		rc = -errno;
		goto err_fds;
	}
	d->start_ms = govd_mono_ms();
	if ((rc = daemon_arm_timer(d)))
		goto err_fds;
	if ((rc = daemon_watch_config(d, diags)))
		goto err_fds;
	char budget[48] = "";
	if (c->budget_w > 0)
		snprintf(budget, sizeof(budget), ", node budget %.0f W", c->budget_w);
	log_notice("running %zu device(s) every %u ms%s%s", d->n, d->plan.period_ms, budget,
		   d->dry_run ? ", DRY RUN (nothing is written to any device)" : "");
	return 0;

err_fds:
	if (d->tfd >= 0)
		close(d->tfd);
	if (d->sfd >= 0)
		close(d->sfd);
	d->tfd = d->sfd = -1;
	diag_add(diags, DIAG_ERROR, "govd", 0, 0, "", "io", "timerfd/signalfd: %s", strerror(-rc));
	daemon_stop_endpoints(d);
err_endpoints:
err_devs:
	/* Nothing was written yet (the loop never ran): close without restore. */
	for (size_t i = 0; i < d->n; i++) {
		struct daemon_dev *dd = &d->dev[i];
		governor_free(dd->g);
		logrot_close(dd->log);
		hal_close(&dd->hw);
		unlock_writers(dd);
	}
	if (d->state_written)
		statefile_remove(c->state_file);
	free(d->dev);
	d->dev = NULL;
	d->n = 0;
err_plan:
	statefile_unlock(d->lock_fd);
	d->lock_fd = -1;
	daemon_plan_free(&d->plan);
	return rc;
}

int daemon_restore_all(struct daemon *d)
{
	int failed = 0;
	for (size_t i = 0; i < d->n; i++) {
		struct daemon_dev *dd = &d->dev[i];
		if (!dd->g)
			continue;
		int rc = governor_restore(dd->g);
		if (rc) {
			const char *why = dd->hw.ops->last_error ? dd->hw.ops->last_error(&dd->hw) : "";
			log_err("%s: restoring the original settings failed: %s%s%s", dd->cfg->name,
				strerror(-rc), why && why[0] ? ": " : "", why ? why : "");
			failed++;
		}
		if (dd->log) {
			fflush(logrot_file(dd->log));
			log_health(dd);
			if (dd->log_failing)
				log_err("%s: decision log: the restore record could not be written",
					dd->cfg->name);
		}
	}
	if (failed)
		return -EIO;
	if (d->state_written) {
		int rc = statefile_remove(d->plan.cfg->state_file);
		if (rc)
			log_warn("cannot remove %s: %s", d->plan.cfg->state_file, strerror(-rc));
		d->state_written = false;
	}
	return 0;
}

void daemon_fini(struct daemon *d)
{
	daemon_stop_endpoints(d);
	for (size_t i = 0; i < d->n; i++) {
		struct daemon_dev *dd = &d->dev[i];
		governor_free(dd->g); /* restores if daemon_restore_all did not */
		dd->g = NULL;
		if (dd->log) {
			int rc = logrot_close(dd->log);
			if (rc)
				log_err("%s: decision log: %s", dd->cfg->name, strerror(-rc));
			dd->log = NULL;
		}
		hal_close(&dd->hw);
		unlock_writers(dd); /* after close: its restore was the last write */
	}
	free(d->dev);
	d->dev = NULL;
	d->n = 0;
	if (d->tfd >= 0)
		close(d->tfd);
	if (d->sfd >= 0)
		close(d->sfd);
	d->tfd = d->sfd = -1;
	if (d->wfd >= 0)
		close(d->wfd);
	d->wfd = -1;
	statefile_unlock(d->lock_fd); /* after the restore: the devices are free */
	d->lock_fd = -1;
	daemon_plan_free(&d->plan);
}

int daemon_add_fd(struct daemon *d, int fd, daemon_fd_cb cb, void *ctx)
{
	if (d->n_fds == DAEMON_MAX_FDS)
		return -ENOSPC;
	d->fds[d->n_fds].fd = fd;
	d->fds[d->n_fds].cb = cb;
	d->fds[d->n_fds].ctx = ctx;
	d->n_fds++;
	return 0;
}

/* ---- one period ---- */

static void divide_budget(struct daemon *d)
{
	struct budget_actor a[CONFIG_MAX_DEVICES];
	struct budget_result r;
	double bw = daemon_budget_w(d);

	if (!d->fleet && !(bw > 0)) {
		for (size_t i = 0; i < d->n; i++) {
			if (d->dev[i].has_grant) {
				governor_clear_power_budget(d->dev[i].g);
				d->dev[i].has_grant = false;
				d->dev[i].grant_mw = 0;
			}
		}
		return;
	}
	if (!(bw > 0))
		bw = 0; /* a fleet grant of 0: below every floor, each device at its minimum */
	for (size_t i = 0; i < d->n; i++) {
		const struct governor *g = d->dev[i].g;
		a[i].min_mw = governor_limits(g)->power_limit_min_mw;
		a[i].max_mw = governor_limits(g)->power_limit_max_mw;
		a[i].request_mw = governor_power_request_mw(g);
		a[i].weight = d->dev[i].cfg->weight;
	}
	if (budget_divvy((uint64_t)llround(bw * 1000.0), a, d->n, &r)) {
		if (!d->budget_unusable) /* once, not every period */
			log_err("node budget: device limits unusable (min above max); budget not "
				"applied");
		d->budget_unusable = true;
		return;
	}
	d->budget_unusable = false;
	if (r.infeasible) {
		d->st.budget_infeasible++;
		if (!d->budget_was_infeasible)
			log_warn("node budget %.0f W is %.0f W below the devices' lowest power limits; "
				 "each runs at its minimum",
				 bw, (double)r.short_mw / 1000.0);
	}
	d->budget_was_infeasible = r.infeasible;
	for (size_t i = 0; i < d->n; i++) {
		if (!d->dev[i].has_grant || r.granted_mw[i] != d->dev[i].grant_mw) {
			governor_set_power_budget_mw(d->dev[i].g, r.granted_mw[i]);
			d->dev[i].grant_mw = r.granted_mw[i];
			d->dev[i].has_grant = true;
		}
	}
	/* the fleet's acknowledgement: the budget the devices have from this
	 * period on (the agent writes it into the record) */
	daemon_fleet_applied(d, (uint64_t)llround(bw * 1000.0));
}

int daemon_tick(struct daemon *d)
{
	uint64_t now = govd_mono_ms();
	uint64_t tick_ns = 0, adv_ns = 0;
	int first_err = 0;

	daemon_fleet_period(d);
	divide_budget(d);
	for (size_t i = 0; i < d->n; i++) {
		struct daemon_dev *dd = &d->dev[i];
		if (dd->is_sim) {
			/* The plant stands in for the device: its advance is the
			 * device's own time, not the governor's. */
			uint64_t t = (uint64_t)llround((double)(now - d->start_ms) * dd->cfg->time_scale);
			uint64_t a0 = govd_mono_ns();
			int rc = govd_clock_wait_until(&dd->sim_clk, t);
			adv_ns += govd_mono_ns() - a0;
			if (rc == -EHOSTDOWN) {
				log_err("%s: the simulated device shut down (thermal); stopping",
					dd->cfg->name);
				d->stop = true;
				d->exit_code = 1;
				return rc;
			}
		}
		uint64_t t0 = govd_mono_ns();
		int rc = governor_tick(dd->g);
		tick_ns += govd_mono_ns() - t0;
		if (rc < 0) {
			d->st.tick_errors++;
			/* the log once per doubling: a broken disk must not flood it */
			if ((d->st.tick_errors & (d->st.tick_errors - 1)) == 0)
				log_err("%s: period failed: %s (%llu so far)", dd->cfg->name,
					strerror(-rc), (unsigned long long)d->st.tick_errors);
			if (!first_err)
				first_err = rc;
		}
	}
	d->st.ticks++;
	hist_add(&d->st.tick_ms, (double)tick_ns / 1e6, 1);
	if (adv_ns)
		hist_add(&d->st.advance_ms, (double)adv_ns / 1e6, 1);
	if (d->snap) {
		double bw = daemon_budget_w(d);
		metrics_observe_tick(d->snap, (double)tick_ns * 1e-9);
		d->snap->loop_overruns = d->st.overruns;
		d->snap->held = d->held;
		d->snap->dry_run = d->dry_run;
		d->snap->node_budget_w = d->fleet || bw > 0 ? bw : NAN;
		metrics_publish(d->msrv, d->snap);
	}
	return first_err;
}
