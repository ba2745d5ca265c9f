/* govd's loop (docs/daemon.md): several devices, one governor each, ticked
 * together on a CLOCK_MONOTONIC timerfd; the node power budget re-divided
 * among them every period; SIGHUP (reload), SIGTERM/SIGINT (restore and
 * stop) through a signalfd; overruns counted; the original settings in a
 * state file before the first write. The daemon prints through common/log;
 * systemd notification goes through hooks so this library needs no
 * libsystemd (govd_main.c has it). */
#ifndef GOVD_GOVERNOR_DAEMON_H
#define GOVD_GOVERNOR_DAEMON_H
#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/diag.h"
#include "common/hist.h"
#include "governor/fleet/budget.h"
#include "governor/daemon/config.h"
#include "governor/daemon/ctlsock.h"
#include "governor/daemon/metrics.h"
#include "governor/daemon/faultlog.h"
#include "hal/hal_fwd.h"
#include "governor/loop/governor.h"
#include "governor/daemon/logrot.h"
#include "governor/policy/policy.h"
#include "governor/daemon/statefile.h"

#define DAEMON_MAX_FDS 16

struct daemon_hooks {
	void *ctx;
	/* sd_notify(0, state): "READY=1", "WATCHDOG=1", "RELOADING=1",
	 * "STOPPING=1", "STATUS=..."; may be NULL. */
	void (*notify)(void *ctx, const char *state);
};

/* Extra pollable input (metrics, control socket): cb runs when fd is
 * readable. */
typedef void (*daemon_fd_cb)(void *ctx, int fd);

struct daemon;
struct fleet_agent;

struct daemon_dev {
	struct daemon *d;
	size_t idx;
	int metrics_idx;            /* in d->snap, -1: beyond METRICS_MAX_DEVICES */
	struct hal_dev hw;          /* the open device */
	struct hal_dev dry;         /* dry run: a view of hw whose writes are no-ops */
	struct hal_fwd dry_fwd;     /* that view's forwarders (hal/hal_fwd.h) */
	struct hal_dev *dev;        /* what the governor drives: &hw or &dry */
	struct govd_clock sim_clk;  /* sim: plant time, advanced to real time x time_scale */
	bool is_sim;
	struct governor *g;         /* NULL until initialised */
	const struct config_device *cfg; /* in d->plan.cfg */
	struct logrot *log;
	bool log_failing;           /* a decision-log write-failure episode is on */
	bool has_grant;             /* a node budget share is in force */
	uint32_t grant_mw;          /* that share (0 is a share of 0) */
	struct fault_episodes episodes; /* peer and sensor faults in the journal (faultlog.h) */
	bool alert_on;              /* its alert line is asserted (last event read) */
	bool brake_on;              /* its brake output is driven asserted */
	int lock_fd[HAL_MAX_WRITER_IDS]; /* its writer locks (devlock.h), -1: none */
};

struct daemon_stats {
	uint64_t periods;        /* timer expirations handled */
	uint64_t overruns;       /* expirations missed while a period ran late */
	uint64_t ticks, tick_errors;
	uint64_t reloads, reload_failures;
	uint64_t budget_infeasible; /* periods the budget was below the floors */
	struct hist tick_ms;     /* governor_tick duration over all devices of a period */
	struct hist advance_ms;  /* sim plant advance per period (not part of the tick) */
};

/* A config with its policies, loaded and checked as one (the SIGHUP
 * transaction and --check): every file's problems in diags. */
struct daemon_plan {
	struct config *cfg;
	struct policy *pol[CONFIG_MAX_DEVICES]; /* per device (a file named twice is loaded once) */
	uint32_t period_ms;                      /* common to every policy */
};

struct daemon {
	struct daemon_plan plan;
	bool dry_run;               /* --dry-run or config dry_run */
	bool dry_run_cli;           /* --dry-run given */
	bool log_level_cli_set;     /* --log-level given: it outlasts a reload */
	enum log_level log_level_cli;
	bool budget_was_infeasible;
	bool budget_unusable;       /* budget_divvy refused the limits (logged once) */
	double budget_override_w;   /* govctl set budget-w; 0: the config's budget_w */
	struct fleet_agent *fleet;  /* config fleet section: the grant is the budget (daemon_fleet.c) */
	bool held;                  /* govctl hold */
	struct metrics_snapshot *snap;
	struct metrics_server *msrv;
	struct ctlsock *cs;
	struct daemon_hooks hooks;
	size_t n;
	struct daemon_dev *dev;     /* n */
	struct govd_clock clock;    /* CLOCK_MONOTONIC, ms */
	uint64_t start_ms;
	int tfd, sfd;
	int wfd; /* inotify on the config's folder (reload_on_change), else -1 */
	int lock_fd; /* the instance lock on the state file (statefile_lock) */
	bool state_written;
	bool stop;
	int exit_code;
	struct daemon_stats st;
	size_t n_fds;
	struct {
		int fd;
		daemon_fd_cb cb;
		void *ctx;
	} fds[DAEMON_MAX_FDS];
};

/* expand: the config's multi-device entries made one per device
 * (config_expand: reads the hardware); false for --check. */
int daemon_plan_load(const char *config_path, bool expand, struct daemon_plan *out,
		     struct diag_list *diags);
void daemon_plan_free(struct daemon_plan *p);

/* Blocks SIGHUP/SIGTERM/SIGINT (signalfd takes them) and ignores SIGPIPE:
 * call before any thread starts. 0 or -errno. */
int daemon_block_signals(void);
/* Loads, restores what a previous run left in the state file, opens the
 * devices, records their originals (not in dry run), arms the timer. */
int daemon_init(struct daemon *d, const char *config_path, bool dry_run,
		const struct daemon_hooks *hooks, struct diag_list *diags);
/* Until SIGTERM/SIGINT (or d->stop); then restores every device. Returns
 * the process exit code: 0 after a clean restore, 1 when a device could not
 * be restored (the state file stays for `govctl restore`). */
int daemon_run(struct daemon *d);
/* One period over all devices (the loop calls it on each expiration;
 * tests and benchmarks call it directly). */
int daemon_tick(struct daemon *d);
/* Reads every alert line's pending events, as the run loop does when one is
 * readable: an asserted alert takes every device to its safe point
 * (governor_emergency) and asserts every brake output; the brakes are
 * released when no alert is asserted any more. Never blocks. */
void daemon_handle_alerts(struct daemon *d);
/* SIGHUP: config + policies as a transaction; the old stay on any error
 * (diags say why). 0 or -errno. */
int daemon_reload(struct daemon *d, struct diag_list *diags);
/* A reload parses its files in a thread for at most this long; the loop
 * keeps ticking and a SIGTERM meanwhile abandons the reload and stops. */
#define DAEMON_RELOAD_PARSE_MAX_MS 10000
/* Restores every device, removes the state file when all were restored.
 * 0 or -EIO. Idempotent. */
int daemon_restore_all(struct daemon *d);
void daemon_fini(struct daemon *d);
/* govctl hold/resume: every governor keeps (or leaves) its operating point;
 * a reload keeps it. */
void daemon_hold(struct daemon *d, bool on);
int daemon_add_fd(struct daemon *d, int fd, daemon_fd_cb cb, void *ctx);

/* govctl restore and govd's start: restore from a state file if there is
 * one, then remove it. 0 when nothing was there or all was restored; *found
 * says whether there was a file. Diags name what failed. */
int daemon_restore_state(const char *state_file, bool *found, struct statefile_result *res,
			 struct diag_list *diags);
/* The same with the config whose devices the entries must name (their
 * backend and options come from cfg, never from the file alone); NULL: the
 * recorded ones (a state file the caller checked). */
int daemon_restore_for(const char *state_file, const struct config *cfg, bool *found,
		       struct statefile_result *res, struct diag_list *diags);
/* Checks of a loaded plan that would otherwise fail only at start (a slice
 * listed twice in a device's options, a meter under a controller that needs
 * clocks), without opening any device; govd --check. 0 or -EINVAL + diags. */
int daemon_plan_check(const struct daemon_plan *p, struct diag_list *diags);
/* The directories govd writes (state file's, decision log, control
 * socket's): created private when absent, else owned by govd's user and not
 * writable by group/others; a diag names the one that is not. */
int daemon_check_dirs(const struct config *c, struct diag_list *diags);

/* Between daemon.c and daemon_ctl.c (the endpoints). */
/* The node budget in force (W): the fleet's grant, else govctl's, else the
 * config's budget_w; 0: none (under a fleet 0 W is a budget). */
double daemon_budget_w(const struct daemon *d);
/* The metrics server, the control socket and the fleet agent, as the
 * config asks; stop undoes what start did. */
int daemon_start_endpoints(struct daemon *d, struct diag_list *diags);
void daemon_stop_endpoints(struct daemon *d);
/* A reload with every diagnostic logged; the first error's text in
 * first_err (may be NULL): what the control socket replies. */
int daemon_reload_logged(struct daemon *d, char *first_err, size_t len);

/* Between daemon.c, daemon_reload.c and daemon_loop.c. */
/* A governor for dd's device under pol, logging to log (NULL: none). */
int daemon_gov_new(struct daemon *d, struct daemon_dev *dd, struct policy *pol, FILE *log,
		   struct governor **out, struct diag_list *diags);
/* sd_notify(3) where systemd is there. */
void daemon_notify(struct daemon *d, const char *state);
/* The period timer at the plan's period. 0 or -errno. */
int daemon_arm_timer(struct daemon *d);
/* The timer fired: the periods it counts, one tick. */
void daemon_on_timer(struct daemon *d);
/* reload_on_change: watch the config's folder. 0 or -errno + diags. */
int daemon_watch_config(struct daemon *d, struct diag_list *diags);

/* govd's side of the fleet (docs/fleet.md, daemon_fleet.c): the agent started
 * with the endpoints, the node's range, draw and demand handed to it each
 * period, and the budget it grants used as the node budget. */
/* Starts the agent when the config has a fleet section. 0 or -errno. */
int daemon_fleet_start(struct daemon *d, struct diag_list *diags);
void daemon_fleet_stop(struct daemon *d);
/* Each period before the budget is divided: observe, publish metrics. */
void daemon_fleet_period(struct daemon *d);
/* The node budget the fleet grants (W); 0 without a fleet. */
double daemon_fleet_budget_w(const struct daemon *d);
/* After the node budget was applied to the devices this period: the fleet
 * record acknowledges it (not before). */
void daemon_fleet_applied(struct daemon *d, uint64_t budget_mw);

#endif
