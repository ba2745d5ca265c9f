/* The control loop: per period sample -> validate -> estimate -> decide ->
 * roll back -> guard -> actuate -> log (../shared/design.md). Time comes
 * from a struct govd_clock: virtual in govctl sim, monotonic in govd; the
 * loop never reads the time or sleeps by itself. The device's original
 * settings are recorded before the first write and restored by
 * governor_restore()/governor_free(). The governor is opaque: its users
 * read it through the functions below and the period record (struct
 * gov_period, governor/loop/stage.h), which the stages fill and every
 * observer (on_period) reads. */
#ifndef GOVD_GOVERNOR_GOVERNOR_H
#define GOVD_GOVERNOR_GOVERNOR_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/clock.h"
#include "common/diag.h"
#include "governor/controllers/controller.h"
#include "governor/loop/declog.h"
#include "governor/telemetry/estimate.h"
#include "governor/policy/opoint.h"
#include "governor/policy/policy.h"
#include "governor/loop/rollback.h"
#include "governor/loop/stage.h"
#include "governor/telemetry/validate.h"
#include "hal/hal.h"

/* Return nonzero to stop the run after this period. */
typedef int (*gov_period_cb)(void *ctx, const struct gov_period *p);

struct governor_cfg {
	const struct policy *pol;
	struct hal_dev *dev;
	const struct govd_clock *clock;
	FILE *declog;            /* NULL: no decision log */
	uint32_t declog_heartbeat_ms; /* 0: a record every period; else compact (declog.h) */
	const char *scenario;    /* for the log header; may be NULL */
	/* For the log header (govctl sim): the scenario file as given and the
	 * command that reproduces the run; NULL: absent. */
	const char *scenario_path, *command;
	uint64_t seed;
	gov_period_cb on_period; /* may be NULL */
	void *cb_ctx;
	/* Observe mode: every decision computed and logged, nothing written to
	 * the device; "after" is what would have been applied and cur stays
	 * what the device runs. */
	bool dry_run;
	/* Dry run done by the caller's device view instead (govd --dry-run:
	 * the write ops succeed without reaching the hardware, so the loop,
	 * its canary and rollback run as they would when acting). The loop is
	 * unchanged; the decision-log header says "dry_run": true. */
	bool dry_run_device;
};

/* The loop's state: opaque (governor/loop/governor.c). The daemon, the sim,
 * metrics and the fleet read it through the functions below. */
struct governor;

/* What the governor has counted and where it stands, for observers (status,
 * metrics, the sim's summary). */
struct governor_status {
	bool started;             /* first period done (the point adopted from the device) */
	bool hold;                /* governor_hold */
	bool restored;            /* the originals are back (governor_restore) */
	uint64_t periods;         /* decision records written (the seq of the last) */
	uint64_t actuate_errors;
	uint64_t oob_changes;     /* power limit set by another writer */
	uint64_t emergencies;
	uint64_t rollbacks, recoveries;
	enum rb_state rb_state;
	uint64_t fault_onsets;    /* telemetry none -> fault transitions, all signals */
	uint32_t orig_power_limit_mw; /* the limit restore puts back */
	const char *envelope;     /* NULL: inside the policy's envelope; else why */
	const char *controller;   /* the controller running (firmware-default when observed) */
};

/* A governor for cfg's device and policy: checks the policy's controller
 * against the registry and the device's capabilities (diags get the
 * problems), writes the decision log's header. 0 and *out, or -errno. */
int governor_new(const struct governor_cfg *cfg, struct governor **out, struct diag_list *diags);
/* Restores the device (governor_restore) and frees; NULL is a no-op. */
void governor_free(struct governor *g);
/* A reload's new governor takes over what old knows of the device: the
 * point in force, the originals it restores, whether it wrote, the
 * period count and errors; old then restores nothing when freed.
 * Controller and estimator state start afresh with the new policy. */
void governor_handover(struct governor *neu, struct governor *old);
/* Leaves the device as it is when g is freed: what a crash leaves (the
 * state file's restore is then the next start's; tests use it). */
void governor_abandon(struct governor *g);
/* The device now runs op, set from outside the loop: the next write is
 * judged against it (bench/bench_gpio_alert.c re-arms the emergency path
 * with it, so each emergency writes). */
void governor_assume_point(struct governor *g, const struct gov_opoint *op);

const struct policy *governor_policy(const struct governor *g);
const struct hal_limits *governor_limits(const struct governor *g);
/* What govd set (or in a dry run would set); governor_in_force for what
 * the device runs. */
const struct gov_opoint *governor_point(const struct governor *g);
const struct gov_estimates *governor_estimates(const struct governor *g);
/* The telemetry faults of the last period, GOV_SIG_N of them. */
const enum gov_fault *governor_faults(const struct governor *g);
/* The serving side's slices (read at init), as the decision log names them. */
size_t governor_slices(const struct governor *g, const char (**names)[HAL_NAME_LEN]);
void governor_status(const struct governor *g, struct governor_status *out);
/* What the device asks of a shared power budget: its filtered accelerator
 * power; all it may take (its maximum limit) before its first period or
 * while its firmware holds it at the limit (it wants more). */
uint32_t governor_power_request_mw(const struct governor *g);
/* One control period at the clock's current time. */
int governor_tick(struct governor *g);
/* Periods until end_ms (clock time) or until on_period asks to stop; the
 * clock's wait advances the plant in sim. */
int governor_run(struct governor *g, uint64_t end_ms);
/* External power cap (node budget share) the guard applies on top of the
 * policy's; never below the device minimum, and 0 is a cap (at that minimum),
 * never "no cap": governor_clear_power_budget removes it. From the next
 * period (or emergency). 0 or -EINVAL. */
int governor_set_power_budget_mw(struct governor *g, uint32_t cap_mw);
void governor_clear_power_budget(struct governor *g);
/* hold: keep the op point in force; the controller still runs and logs, the
 * guard's safe point (faults, envelope) still applies. */
/* What the device runs before govd sets anything: firmware clocks, the
 * power limit it reports (else its default), BF16. */
void governor_device_point(const struct governor *g, struct gov_opoint *op);
/* The point in force on the device: what govd set, or in a dry run (nothing
 * set) the device's own (governor_device_point). True in a dry run, where
 * g->cur is only what govd would set. */
bool governor_in_force(const struct governor *g, struct gov_opoint *op);
void governor_hold(struct governor *g, bool hold);
/* Apply the policy's safe point now, outside the period (GPIO thermal
 * alert), logged as a decision record with reason safe_point and the
 * emergency's why; held for safe_point.hold_periods periods. */
int governor_emergency(struct governor *g, const char *why);
/* Restore the original settings (idempotent). */
int governor_restore(struct governor *g);

#endif
