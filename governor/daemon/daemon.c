#include "governor/controllers/controller.h"
#include "governor/daemon/daemon.h"
#include "governor/daemon/devlock.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
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

static int gov_new(struct daemon *d, struct daemon_dev *dd, struct policy *pol, FILE *log,
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

static void notify(struct daemon *d, const char *state)
{
	if (d->hooks.notify)
		d->hooks.notify(d->hooks.ctx, state);
}

static int arm_timer(struct daemon *d)
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

static int watch_config(struct daemon *d, struct diag_list *diags);

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
	return gov_new(d, dd, d->plan.pol[i], dd->log ? logrot_file(dd->log) : NULL, &dd->g,
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
	if ((rc = arm_timer(d)))
		goto err_fds;
	if ((rc = watch_config(d, diags)))
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

/* ---- reload ---- */

/* ---- reload: parsing off the loop ---- */

/* A reload's parse runs in a thread: a huge or hostile policy costs that
 * thread, not the periods. The loop waits for it while still ticking and
 * reading signals; SIGTERM abandons it (the thread frees its own result),
 * and so does the time bound. */
struct reload_job {
	pthread_mutex_t mu;
	bool done, abandoned;
	int efd;
	char *path;
	struct daemon_plan plan;
	struct diag_list diags;
	int rc;
};

static void job_free(struct reload_job *j)
{
	if (j->rc == 0)
		daemon_plan_free(&j->plan);
	diag_clear(&j->diags);
	close(j->efd);
	free(j->path);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

static void *reload_thread(void *arg)
{
	struct reload_job *j = arg;
	int rc = daemon_plan_load(j->path, true, &j->plan, &j->diags);
	pthread_mutex_lock(&j->mu);
	j->rc = rc;
	j->done = true;
	bool abandoned = j->abandoned;
	uint64_t one = 1;
	if (!abandoned) {
		ssize_t w = write(j->efd, &one, sizeof(one)); /* cannot fail: a counter */
		(void)w;
	}
	pthread_mutex_unlock(&j->mu);
	if (abandoned)
		job_free(j);
	return NULL;
}

/* The loop's own work while it waits: periods and signals. */
static void on_timer(struct daemon *d);

static int plan_load_off_loop(struct daemon *d, const char *path, struct daemon_plan *out,
			      struct diag_list *diags)
{
	struct reload_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->mu, NULL);
	j->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	j->path = strdup(path);
	j->rc = -EINTR;
	pthread_t th;
	pthread_attr_t at;
	if (j->efd < 0 || !j->path || pthread_attr_init(&at)) {
		j->rc = -ENOMEM;
		job_free(j);
		return -ENOMEM;
	}
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int e = pthread_create(&th, &at, reload_thread, j);
	pthread_attr_destroy(&at);
	if (e) {
		job_free(j);
		return -e;
	}
	uint64_t t0 = govd_mono_ms();
	int rc = 0;
	for (;;) {
		struct pollfd pfd[3] = { { .fd = j->efd, .events = POLLIN },
					 { .fd = d->tfd, .events = POLLIN },
					 { .fd = d->sfd, .events = POLLIN } };
		uint64_t now = govd_mono_ms();
		if (now - t0 >= DAEMON_RELOAD_PARSE_MAX_MS) {
			diag_add(diags, DIAG_ERROR, path, 0, 0, "", "reload-timeout",
				 "parsing the config and its policies took longer than %d ms; "
				 "reload abandoned",
				 DAEMON_RELOAD_PARSE_MAX_MS);
			rc = -ETIMEDOUT;
			break;
		}
		int n = poll(pfd, d->tfd >= 0 ? 3 : 1, (int)(DAEMON_RELOAD_PARSE_MAX_MS - (now - t0)));
		if (n < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		if (n <= 0)
			continue;
		if (pfd[0].revents & POLLIN)
			break;
		if (d->tfd >= 0 && (pfd[2].revents & POLLIN)) {
			struct signalfd_siginfo si;
			while (read(d->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
					log_notice("%s from pid %u during a reload: abandoning it, "
						   "restoring and stopping",
						   si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT",
						   si.ssi_pid);
					d->stop = true;
				} else if (si.ssi_signo == SIGHUP) {
					log_notice("SIGHUP from pid %u: a reload is already running",
						   si.ssi_pid);
				}
			}
			if (d->stop) {
				diag_add(diags, DIAG_ERROR, path, 0, 0, "", "reload-abandoned",
					 "stopping: reload abandoned");
				rc = -ECANCELED;
				break;
			}
		}
		if (d->tfd >= 0 && (pfd[1].revents & POLLIN))
			on_timer(d); /* periods go on while the thread parses */
	}
	pthread_mutex_lock(&j->mu);
	bool done = j->done;
	if (!done || rc)
		j->abandoned = true;
	pthread_mutex_unlock(&j->mu);
	if (!done)
		return rc; /* the thread frees the job when it ends */
	if (rc) {
		job_free(j);
		return rc;
	}
	for (size_t i = 0; i < j->diags.n; i++) {
		const struct diag *g = &j->diags.v[i];
		diag_add(diags, g->sev, g->file, g->line, g->col, g->path, g->code, "%s", g->msg);
	}
	rc = j->rc;
	if (rc == 0) {
		*out = j->plan;
		j->rc = -1; /* ownership moved: job_free must not free it */
	}
	job_free(j);
	return rc;
}

int daemon_reload(struct daemon *d, struct diag_list *diags)
{
	struct daemon_plan np;
	struct governor *ng[CONFIG_MAX_DEVICES] = { 0 };
	char why[512];
	int rc;

	rc = plan_load_off_loop(d, d->plan.cfg->path, &np, diags);
	if (rc)
		return rc;
	const struct config *oc = d->plan.cfg, *nc = np.cfg;
	int wl, wc;
	if (!config_reloadable_at(oc, nc, why, sizeof(why), &wl, &wc)) {
		diag_add(diags, DIAG_ERROR, nc->path, wl, wc, "", "not-reloadable", "%s", why);
		rc = -EINVAL;
		goto err_plan;
	}
	if ((d->dry_run_cli || nc->dry_run) != d->dry_run) {
		diag_add(diags, DIAG_ERROR, nc->path, 0, 0, "dry_run", "not-reloadable",
			 "dry_run changed: restart govd to switch between observing and acting");
		rc = -EINVAL;
		goto err_plan;
	}
	/* Check every new governor against its device before any swap. */
	for (size_t i = 0; i < d->n; i++) {
		struct governor *t;
		if ((rc = gov_new(d, &d->dev[i], np.pol[i], NULL, &t, diags)))
			goto err_plan;
		governor_free(t); /* never ticked: nothing to restore */
	}
	for (size_t i = 0; i < d->n; i++) {
		struct daemon_dev *dd = &d->dev[i];
		rc = gov_new(d, dd, np.pol[i], dd->log ? logrot_file(dd->log) : NULL, &ng[i], diags);
		if (rc)
			goto err_new;
	}
	/* Commit: nothing below fails. */
	for (size_t i = 0; i < d->n; i++) {
		struct daemon_dev *dd = &d->dev[i];
		governor_handover(ng[i], dd->g);
		governor_free(dd->g);
		dd->g = ng[i];
		dd->cfg = &nc->dev[i];
		/* govctl hold outlasts a reload: the new governor starts held */
		governor_hold(dd->g, d->held);
		if (dd->has_grant)
			governor_set_power_budget_mw(dd->g, dd->grant_mw);
	}
	bool period_changed = np.period_ms != d->plan.period_ms;
	struct daemon_plan old = d->plan;
	d->plan = np;
	daemon_plan_free(&old);
	log_set_level(d->log_level_cli_set ? d->log_level_cli : d->plan.cfg->log_level);
	for (size_t i = 0; d->snap && i < d->n; i++)
		if (d->dev[i].metrics_idx >= 0)
			metrics_device_set_policy(&d->snap->dev[d->dev[i].metrics_idx], d->plan.pol[i]);
	if (d->cs)
		ctlsock_set_acl(d->cs, &d->plan.cfg->control.acl);
	if (period_changed && (rc = arm_timer(d)))
		log_err("re-arming the timer at %u ms failed: %s", d->plan.period_ms, strerror(-rc));
	return 0;

err_new:
	for (size_t i = 0; i < d->n; i++) {
		if (ng[i])
			governor_abandon(ng[i]); /* the old one still runs the device */
		governor_free(ng[i]);
	}
err_plan:
	daemon_plan_free(&np);
	return rc;
}

/* A reload with every diagnostic logged; the first error's text in
 * first_err (the control socket's reply). */
int daemon_reload_logged(struct daemon *d, char *first_err, size_t len)
{
	struct diag_list dl = { 0 };
	notify(d, "RELOADING=1");
	int rc = daemon_reload(d, &dl);
	for (size_t i = 0; i < dl.n; i++) {
		char line[1200];
		diag_format(&dl.v[i], line, sizeof(line));
		if (dl.v[i].sev == DIAG_ERROR) {
			log_err("reload: %s", line);
			if (first_err && !first_err[0])
				snprintf(first_err, len, "%.*s", (int)(len - 1), line);
		} else {
			log_warn("reload: %s", line);
		}
	}
	diag_clear(&dl);
	if (rc) {
		d->st.reload_failures++;
		log_err("reload refused: the running config and policies stay in force");
	} else {
		d->st.reloads++;
		char pols[512] = "";
		size_t off = 0;
		for (size_t i = 0; i < d->n && off < sizeof(pols); i++)
			off += (size_t)snprintf(pols + off, sizeof(pols) - off, "%s%s=%s (%s)",
						i ? ", " : "", d->dev[i].cfg->name,
						d->plan.pol[i]->name, d->plan.pol[i]->hash_hex);
		log_notice("reloaded %s: %s", d->plan.cfg->path, pols);
	}
	notify(d, "READY=1");
	return rc;
}

static void do_reload(struct daemon *d)
{
	daemon_reload_logged(d, NULL, 0);
}

/* reload_on_change: a burst of events in the config's folder (an editor's
 * save, a ConfigMap's ..data swap) is one reload; the reload is the same
 * transaction as SIGHUP's, so a half-written file is refused and the next
 * event retries. */
/* A name in the config's folder whose change is a config change: a YAML file
 * (the config, a policy) or a ConfigMap's ..data link; not govd's own files
 * there (a state file, its lock, a socket), which would reload in a loop. */
static bool config_name(const char *name)
{
	size_t n = strlen(name);
	return !strcmp(name, "..data") || (n > 5 && !strcmp(name + n - 5, ".yaml")) ||
	       (n > 4 && !strcmp(name + n - 4, ".yml"));
}

static void on_config_change(void *ctx, int fd)
{
	struct daemon *d = ctx;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any = false;
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= r;) {
			const struct inotify_event *ev = (const void *)(buf + off);
			if (ev->len && config_name(ev->name))
				any = true;
			off += (ssize_t)(sizeof(*ev) + ev->len);
		}
	if (!any)
		return;
	log_notice("config folder changed: reloading");
	do_reload(d);
}

static int watch_config(struct daemon *d, struct diag_list *diags)
{
	const struct config *c = d->plan.cfg;
	d->wfd = -1;
	if (!c->reload_on_change)
		return 0;
	char dir[CONFIG_PATH_LEN];
	snprintf(dir, sizeof(dir), "%s", c->path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0 || inotify_add_watch(fd, dir, IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE |
							 IN_DELETE | IN_ATTRIB) < 0) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		diag_add(diags, DIAG_ERROR, c->path, 0, 0, "reload_on_change", "watch",
			 "cannot watch %s: %s", dir, strerror(err));
		return -err;
	}
	int rc = daemon_add_fd(d, fd, on_config_change, d);
	if (rc) {
		close(fd);
		return rc;
	}
	d->wfd = fd;
	log_notice("reloading on changes in %s", dir);
	return 0;
}

/* ---- the loop ---- */

/* The brake outputs follow the alert lines: asserted while any alert is,
 * released when none is. A failed write is logged and retried at the next
 * change; close drives each line to its brake_safe level. In a dry run the
 * device's write ops are no-ops, so the decision is logged, not driven. */
static void drive_brakes(struct daemon *d)
{
	bool want = false;
	for (size_t i = 0; i < d->n; i++)
		want |= d->dev[i].alert_on;
	for (size_t i = 0; i < d->n; i++) {
		struct daemon_dev *dd = &d->dev[i];
		if (!hal_can_brake(dd->dev) || dd->brake_on == want)
			continue;
		int rc = dd->dev->ops->set_brake(dd->dev, want);
		if (rc) {
			log_err("%s: brake output: %s", dd->cfg->name, strerror(-rc));
			continue;
		}
		dd->brake_on = want;
		if (want)
			log_warn("%s: brake asserted (an alert line is asserted)%s", dd->cfg->name,
				 d->dry_run ? " [dry run: not driven]" : "");
		else
			log_notice("%s: brake released (no alert line asserted)%s", dd->cfg->name,
				   d->dry_run ? " [dry run: not driven]" : "");
	}
}

static void on_alert(struct daemon *d, struct daemon_dev *dd)
{
	struct hal_alert ev;
	int rc;
	while ((rc = dd->hw.ops->alert_read(&dd->hw, &ev)) == 1) {
		if (ev.kind != HAL_ALERT_ASSERTED) {
			log_notice("%s: alert cleared (seq %llu)", dd->cfg->name,
				   (unsigned long long)ev.seq);
			dd->alert_on = false;
			continue;
		}
		dd->alert_on = true;
		log_warn("%s: alert asserted (seq %llu): emergency on every device", dd->cfg->name,
			 (unsigned long long)ev.seq);
		for (size_t i = 0; i < d->n; i++) {
			int r = governor_emergency(d->dev[i].g, "alert line asserted");
			if (r)
				log_err("%s: emergency path failed: %s", d->dev[i].cfg->name,
					strerror(-r));
		}
	}
	if (rc < 0)
		log_err("%s: reading the alert line: %s", dd->cfg->name, strerror(-rc));
	drive_brakes(d);
}

void daemon_handle_alerts(struct daemon *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (hal_can_alert(&d->dev[i].hw))
			on_alert(d, &d->dev[i]);
}

static void on_timer(struct daemon *d)
{
	uint64_t exp;
	ssize_t n = read(d->tfd, &exp, sizeof(exp));
	if (n != (ssize_t)sizeof(exp))
		return; /* EAGAIN: spurious wake-up */
	d->st.periods += exp;
	if (exp > 1) {
		d->st.overruns += exp - 1;
		/* once per doubling of the count (a steady overload of several
		 * periods each time must not log every period) */
		uint64_t o = d->st.overruns, prev = o - (exp - 1);
		if (prev == 0 || __builtin_clzll(o) < __builtin_clzll(prev))
			log_warn("loop overrun: %llu period(s) missed (%llu in total)",
				 (unsigned long long)(exp - 1), (unsigned long long)o);
	}
	daemon_tick(d);
	notify(d, "WATCHDOG=1");
}

static void on_signal(struct daemon *d)
{
	struct signalfd_siginfo si;
	while (read(d->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			log_notice("SIGHUP from pid %u: reloading", si.ssi_pid);
			do_reload(d);
			break;
		case SIGTERM:
		case SIGINT:
			log_notice("%s from pid %u: restoring and stopping",
				   si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT", si.ssi_pid);
			d->stop = true;
			break;
		default:
			break;
		}
	}
}

int daemon_run(struct daemon *d)
{
	struct pollfd pfd[2 + CONFIG_MAX_DEVICES + DAEMON_MAX_FDS];
	struct daemon_dev *alert_dev[CONFIG_MAX_DEVICES];
	char status[160];

	snprintf(status, sizeof(status), "STATUS=%zu device(s), %u ms period%s", d->n,
		 d->plan.period_ms, d->dry_run ? ", dry run" : "");
	notify(d, "READY=1");
	notify(d, status);
	while (!d->stop) {
		size_t n = 0, n_alert = 0;
		pfd[n++] = (struct pollfd){ .fd = d->tfd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = d->sfd, .events = POLLIN };
		for (size_t i = 0; i < d->n; i++) {
			if (!hal_can_alert(&d->dev[i].hw))
				continue;
			int fd = d->dev[i].hw.ops->alert_fd(&d->dev[i].hw);
			if (fd < 0)
				continue;
			alert_dev[n_alert++] = &d->dev[i];
			pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
		}
		size_t first_extra = n;
		for (size_t i = 0; i < d->n_fds; i++)
			pfd[n++] = (struct pollfd){ .fd = d->fds[i].fd, .events = POLLIN };
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_err("poll: %s", strerror(errno));
			d->exit_code = 1;
			break;
		}
		/* The alert path first: it must not wait behind a period. */
		for (size_t i = 0; i < n_alert; i++)
			if (pfd[2 + i].revents & POLLIN)
				on_alert(d, alert_dev[i]);
		if (pfd[1].revents & POLLIN)
			on_signal(d);
		if (d->stop)
			break;
		if (pfd[0].revents & POLLIN)
			on_timer(d);
		for (size_t i = 0; i < d->n_fds; i++)
			if (pfd[first_extra + i].revents & (POLLIN | POLLHUP | POLLERR))
				d->fds[i].cb(d->fds[i].ctx, d->fds[i].fd);
	}
	notify(d, "STOPPING=1");
	int rc = daemon_restore_all(d);
	/* The histogram's p99 is a bucket edge (2 % wide) and can sit just
	 * above the largest tick seen. */
	double p99 = hist_quantile(&d->st.tick_ms, 0.99);
	if (p99 > d->st.tick_ms.max_ms)
		p99 = d->st.tick_ms.max_ms;
	log_notice("stopped after %llu period(s), %llu overrun(s), %llu reload(s) (%llu refused), "
		   "tick p99 %.3f ms max %.3f ms%s",
		   (unsigned long long)d->st.periods, (unsigned long long)d->st.overruns,
		   (unsigned long long)d->st.reloads, (unsigned long long)d->st.reload_failures,
		   p99, d->st.tick_ms.max_ms,
		   rc ? "; RESTORE FAILED: the state file stays for `govctl restore`" : "");
	if (rc)
		return 1;
	return d->exit_code;
}
