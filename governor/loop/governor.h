/* The control loop: per period sample -> validate -> estimate -> decide ->
 * guard -> actuate -> log (../shared/design.md). Time comes from a struct
 * govd_clock: virtual in govctl sim, monotonic in govd; the loop never reads
 * the time or sleeps by itself. The device's original settings are recorded
 * before the first write and restored by governor_restore()/governor_fini(). */
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
#include "governor/loop/guard.h"
#include "governor/policy/opoint.h"
#include "governor/policy/policy.h"
#include "governor/loop/rollback.h"
#include "governor/telemetry/validate.h"
#include "hal/hal.h"

/* What one period saw and did, for observers (sim summary, metrics). */
struct gov_period {
	uint64_t t_ms;
	uint64_t seq;
	const struct hal_sample *sample;
	const struct hal_serving *serving; /* NULL if not offered or invalid */
	const struct gov_estimates *est;
	const enum gov_fault *faults;      /* GOV_SIG_N */
	const struct gov_opoint *before, *after;
	uint32_t reasons;
	enum gov_binding binding;
	uint32_t armed, fired;             /* rollback triggers (enum gov_trigger bits) */
	enum rb_state rb_state;
	const char *envelope;              /* NULL: inside the policy's envelope; else why */
	/* The serving and quality reads' faults (enum hal_serving_fault) and
	 * messages, also when the read was invalid. */
	uint32_t serving_faults, quality_faults;
	const char *serving_fault_msg, *quality_fault_msg;
};

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

struct governor {
	struct governor_cfg cfg;
	const struct controller_ops *ctl;
	void *ctl_state;
	struct hal_limits lim;
	struct validator val;
	struct estimator est;
	struct guard guard;
	struct rollback rb;
	struct declog log;
	double period_s;
	size_t n_slices;
	char slice_name[HAL_MAX_SLICES][HAL_NAME_LEN];
	double policy_int8[HAL_MAX_SLICES], max_drop[HAL_MAX_SLICES];
	struct policy_slice_rule rule[HAL_MAX_SLICES];
	struct gov_opoint cur;   /* in force */
	bool started;            /* first period done (cur adopted from the device) */
	bool wrote;              /* a HAL write happened: restore needed */
	bool restored;
	uint32_t orig_power_limit_mw;
	uint64_t seq;
	uint64_t actuate_errors;
	/* Out-of-band power-limit changes: the device reported a limit govd did
	 * not set on two periods in a row (nvidia-smi -pl, a BMC cap); counted,
	 * logged, and govd's own decision is applied again. */
	uint64_t oob_changes;
	unsigned oob_streak;
	uint32_t oob_found_mw, oob_expected_mw; /* the last one, for the log */
	uint64_t emergencies;
	bool safety;             /* the last applied point was forced by safety (not canaried) */
	bool operator_hold;      /* governor_hold */
	bool outside_envelope;
	char envelope_why[512];
	struct hal_sample sample;
	struct hal_serving serving;
	struct hal_quality quality;
	enum gov_fault faults[GOV_SIG_N];
};

/* Checks the policy's controller against the registry and the device's
 * capabilities; diags get the problems. */
int governor_init(struct governor *g, const struct governor_cfg *cfg, struct diag_list *diags);
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
void governor_fini(struct governor *g);

#endif
