/* govd's loop: one poll over the period timer, the signals, the devices'
 * alert lines and the endpoints' fds; the alert path first. */
#include "governor/daemon/daemon.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/log.h"

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

void daemon_on_timer(struct daemon *d)
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
	daemon_notify(d, "WATCHDOG=1");
}

static void on_signal(struct daemon *d)
{
	struct signalfd_siginfo si;
	while (read(d->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			log_notice("SIGHUP from pid %u: reloading", si.ssi_pid);
			daemon_reload_logged(d, NULL, 0);
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
	daemon_notify(d, "READY=1");
	daemon_notify(d, status);
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
			daemon_on_timer(d);
		for (size_t i = 0; i < d->n_fds; i++)
			if (pfd[first_extra + i].revents & (POLLIN | POLLHUP | POLLERR))
				d->fds[i].cb(d->fds[i].ctx, d->fds[i].fd);
	}
	daemon_notify(d, "STOPPING=1");
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
