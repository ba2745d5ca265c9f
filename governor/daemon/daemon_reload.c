/* govd's reload: the config and its policies parsed off the loop (a thread,
 * bounded in time; periods and signals go on meanwhile), checked against
 * every device, then swapped in as one transaction; and the config folder's
 * watch (reload_on_change). */
#include "governor/daemon/daemon.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/log.h"

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
			daemon_on_timer(d); /* periods go on while the thread parses */
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
		if ((rc = daemon_gov_new(d, &d->dev[i], np.pol[i], NULL, &t, diags)))
			goto err_plan;
		governor_free(t); /* never ticked: nothing to restore */
	}
	for (size_t i = 0; i < d->n; i++) {
		struct daemon_dev *dd = &d->dev[i];
		rc = daemon_gov_new(d, dd, np.pol[i], dd->log ? logrot_file(dd->log) : NULL, &ng[i], diags);
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
	if (period_changed && (rc = daemon_arm_timer(d)))
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
	daemon_notify(d, "RELOADING=1");
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
	daemon_notify(d, "READY=1");
	return rc;
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
	daemon_reload_logged(d, NULL, 0);
}

int daemon_watch_config(struct daemon *d, struct diag_list *diags)
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
