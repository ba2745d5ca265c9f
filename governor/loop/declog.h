/* Decision log: JSON Lines via jansson. A header record first (run
 * metadata), then one decision record per control period, then a restore
 * record. Fields are documented in docs/decision-log.md; the reader is
 * declog_read.h. Deterministic:
 * fixed key order, fixed real precision, no wall-clock time. */
#ifndef GOVD_GOVERNOR_DECLOG_H
#define GOVD_GOVERNOR_DECLOG_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "governor/loop/rollback.h"
#include "governor/telemetry/estimate.h"
#include "governor/policy/opoint.h"
#include "governor/telemetry/validate.h"
#include "hal/hal.h"

#define DECLOG_REAL_PRECISION 7
/* The schema docs/decision-log.md describes; the header's schema_version.
 * Bumped when a key changes meaning or goes away (a new key is not a bump:
 * readers ignore keys they do not know). */
#define DECLOG_SCHEMA_VERSION 1

struct declog_header {
	const char *scenario;     /* may be NULL (govd) */
	/* govctl sim's scenario file as given and the command that reproduces
	 * the run (docs/decision-log.md); NULL: the key is left out (govd). */
	const char *scenario_path, *command;
	const char *policy_name, *policy_path, *policy_hash;
	const char *controller;
	uint32_t period_ms;
	uint64_t seed;
	const struct hal_limits *lim;
	const char *device_name;
	size_t n_slices;
	const char (*slice_name)[HAL_NAME_LEN];
	bool dry_run;             /* observe mode: "after" is what would have been applied */
	/* The policy's metadata (may be NULL or empty). */
	const char *workload_profile, *model_revision, *power_mode;
};

struct declog_record {
	uint64_t t_ms;
	uint64_t seq;
	const struct gov_estimates *est;
	const enum gov_fault *faults; /* GOV_SIG_N */
	const struct gov_opoint *before, *after;
	uint32_t reasons;
	enum gov_binding binding;
	const char *policy_name, *policy_hash;
	uint64_t seed;
	/* The serving backend's enum hal_serving_fault bits of this period's
	 * reads and their messages (may be NULL); logged when bits are set. */
	uint32_t serving_faults, quality_faults;
	const char *serving_fault_msg, *quality_fault_msg;
	/* Rollback manager (docs/rollback.md). */
	uint32_t armed, fired;        /* enum gov_trigger bits */
	enum rb_state rb_state;       /* logged as "normal", "canary", "hold" */
	const struct gov_opoint *lkg; /* NULL: no last known good yet */
	double hold_left_s;
	uint64_t rollbacks;
	const char *envelope;         /* NULL: inside the policy's envelope; else why not */
	bool operator_hold;           /* governor_hold(): the op point in force is kept */
	bool power_budget_on;         /* an external budget is in force (0 W is one) */
	uint32_t power_budget_mw;     /* that budget */
	const char *emergency;        /* non-NULL: an emergency record (governor_emergency) */
	const struct gov_why *why;    /* the controller's explanation; NULL or !valid: none */
	/* Why each slice's shadow rate in after was asked (NULL: none was);
	 * evidence_budget: the asks were scaled to quality.shadow_budget. */
	const enum gov_evidence *evidence;
	bool evidence_budget;
	uint32_t heat_prior; /* bit per slice: first rung open on the unconfirmed prior (heat) */
	uint32_t mix_held;   /* bit per slice: rung open, held in BF16 until every slice's is */
	const double *detect_held_s; /* per slice, 0: not held by the detection delay (NULL: none) */
	/* Non-zero found: another writer set the power limit (governor.c,
	 * check_out_of_band): what the device reported and what govd had set. */
	uint32_t oob_found_mw, oob_expected_mw;
};

/* What a compact log compares: a decision record is skipped while all of
 * this equals the last written record's (docs/decision-log.md, "Compact
 * mode"). Zeroed before filling, so memcmp compares it. */
struct declog_key {
	struct gov_opoint after;
	uint32_t reasons, armed, fired;
	enum gov_binding binding;
	enum gov_fault faults[GOV_SIG_N];
	uint32_t serving_faults, quality_faults;
	char rb_state[16];
	bool have_lkg, operator_hold;
	struct gov_opoint lkg;
	uint64_t rollbacks;
	char envelope[64];
	bool power_budget_on;
	uint32_t power_budget_mw;
	bool serving; /* the SLA window has requests, a queue or running work */
};

struct declog {
	FILE *f; /* not owned; NULL: logging off */
	char *buf; /* one record, encoded before a single write (owned) */
	size_t cap;
	/* Compact mode: heartbeat_ms 0 writes every period. */
	uint32_t heartbeat_ms;
	bool have_last;
	uint64_t last_t_ms;
	struct declog_key last;
	uint64_t skipped;
	bool have_seen;
	uint64_t last_seen_seq; /* of the last decision, written or not */
};

/* The compiler that built the governor library, named: "gcc 12.2.0",
 * "Debian Clang 14.0.6" (header versions.compiler, summary.json compiler). */
const char *declog_compiler(void);
int declog_init(struct declog *d, FILE *f);
/* Compact mode (call before declog_header, which records it): decision
 * records only when the decision changes, and at least every heartbeat_ms;
 * 0: every period (full). */
void declog_set_compact(struct declog *d, uint32_t heartbeat_ms);
void declog_fini(struct declog *d);
int declog_header(struct declog *d, const struct declog_header *h);
int declog_decision(struct declog *d, const struct declog_record *r);
/* Final record after restoring the device's original settings. */
int declog_restore(struct declog *d, uint64_t t_ms, const struct gov_opoint *restored, int rc);

#endif
