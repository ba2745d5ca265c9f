/* The perf-per-watt report reviewers sign (docs/report.md): the library
 * behind govctl report / verify / signoff (tools/govctl_report.c,
 * tools/govctl_verify.c). The classification, ranking and recommendation
 * rules are pure functions (report_logic.c, unit tested); loading, plotting
 * and rendering live beside them in report/report_*.c. */
#ifndef GOVD_REPORT_REPORT_H
#define GOVD_REPORT_REPORT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/sla.h"
#include "governor/loop/declog_read.h"
#include "governor/sim/summary_read.h"
#include "hal/hal.h"

/* ---- classification (pure) ---- */

enum rp_class {
	RP_C_IDLE,       /* nothing to serve: not judged, not ranked */
	RP_C_THERMAL,    /* hardware slowdown, firmware thermal trim or junction over the ceiling */
	RP_C_POWER_CAP,  /* accelerator power held at the limit */
	RP_C_QUEUEING,   /* requests waiting: arrivals exceed service */
	RP_C_HOST,       /* host rail large while the accelerator idles between steps */
	RP_C_COMPUTE,    /* throughput follows the SM clock */
	RP_C_MEMORY,     /* throughput insensitive to the SM clock */
	RP_C_UNRESOLVED, /* busy, none of the above, clock sensitivity not measurable */
	RP_C_N
};
const char *rp_class_name(enum rp_class c); /* "thermal-bound", ... */
const char *rp_class_key(enum rp_class c);  /* "thermal", ... (JSON) */

/* Thresholds of the rules (docs/report.md lists them with their reasons). */
struct rp_thresholds {
	double busy_util;        /* mean utilisation at or above: busy (or requests completed) */
	double cap_ratio;        /* mean accel power / limit at or above: power-cap-bound */
	double cap_share;        /* share of periods with the power-cap throttle bit */
	double queue_depth;      /* mean waiting requests at or above: queueing-bound */
	double host_share;       /* host rail share of total power at or above ... */
	double host_util;        /* ... while mean utilisation is below: host-bound */
	double compute_sens;     /* clock sensitivity at or above: compute-, else memory-bound */
	double clk_spread;       /* relative clock difference needed to measure sensitivity */
	double int8_match;       /* max INT8-share difference of a sensitivity pair */
	double min_gain;         /* tokens/J gain below which GO becomes conditional */
	double tj_margin_c;      /* junction margin to slowdown below which: condition */
	double attain_tol;       /* attainment tolerance when comparing against the baseline */
};
extern const struct rp_thresholds rp_default_thresholds;

/* The evidence of one window (docs/report.md). */
struct rp_wstats {
	double t0_s, t1_s;
	size_t periods;
	double tokens, energy_j, tpj;     /* tokens / (accel + memory + host) J of the window */
	double mean_util, mean_clk_mhz, min_clk_mhz;
	double max_tj_c, ceiling_c, slowdown_c;
	size_t clamp_periods, swtherm_periods, cap_periods;
	double mean_accel_w, mean_limit_w, power_ratio; /* mean accel / mean limit */
	double host_share;                /* host / (accel + memory + host) */
	double mean_queue, max_queue;
	double int8_share;
	/* The window's quantiles (ms): the simulator's own per-window histograms
	 * when the run has sla.per_window, else the estimator's at the close. */
	double q_ms[SLA_N_ROWS];          /* by SLA_INDEX() (common/sla.h) */
	double requests;                  /* requests in the latency window at the close */
	bool busy, judged, sla_met;
	bool tail;                        /* shorter than window_s after a full one: not judged */
	bool judged_by_sim;               /* judged/sla_met are summary.json's per_window */
	double clock_sens;                /* NaN: not measured */
	bool sens_pooled;                 /* from the run-wide median, not this window's pair */
	enum rp_class cls;
	double cost_j;                    /* energy above the best observed efficiency */
};

/* First matching rule wins: idle, thermal, power cap, queueing, host,
 * compute/memory by clock sensitivity, else unresolved. why: the evidence. */
enum rp_class rp_classify(const struct rp_wstats *w, const struct rp_thresholds *th, char *why,
			  size_t len);

/* Clock sensitivity of a window from two runs of the same demand: the
 * elasticity of busy time to the clock, -dln(util)/dln(clk) (1: busy time
 * scales with 1/f, compute-bound; 0: memory-bound). NaN when the clocks are
 * within clk_spread, the INT8 shares differ by more than int8_match, or a
 * utilisation is not positive. */
double rp_clock_sensitivity(double util_a, double clk_a, double int8_a, double util_b,
			    double clk_b, double int8_b, const struct rp_thresholds *th);

/* Energy a window spends above the best efficiency seen for the same demand:
 * E - tokens / best_tpj (>= 0; 0 when best_tpj is not positive). */
double rp_window_cost_j(double energy_j, double tokens, double best_tpj);

struct rp_rank {
	enum rp_class cls;
	size_t windows;
	double energy_j;         /* of the class's busy windows */
	double share_of_busy;    /* energy_j / energy of all busy windows: the ranking key */
	double cost_j;
	double share_of_energy;  /* cost / run energy */
	double tpj_if_removed;   /* run tokens / (energy - cost) */
};
/* Sums energy and cost per class over busy windows, sorted by the class's
 * share of the busy windows' energy, descending (ties: enum order); idle is
 * left out. Returns the number of ranks written. */
size_t rp_rank_classes(const struct rp_wstats *w, size_t n, double run_tokens, double run_energy_j,
		       struct rp_rank *out, size_t cap);
/* The efficiency a window's cost is measured against: the best tokens/J
 * another run reached in the same window of the same demand (peer_best, NaN
 * when none), floored by the 90th percentile of the run's own busy windows
 * (own[], n; reordered) so that the run that is best in every window still
 * shows what its slow windows cost. NaN when neither exists. */
double rp_reference_tpj(double peer_best, double *own, size_t n);

/* The run's bottleneck: thermal when the run entered hardware slowdown (a
 * protection event outranks any energy share), else the top of the ranking
 * (largest share of busy energy), else idle. */
enum rp_class rp_run_class(const struct rp_rank *r, size_t n, double clamp_events);

/* Least-squares slope of y over x; NaN with fewer than 2 distinct x. */
double rp_slope(const double *x, const double *y, size_t n);
/* Pearson correlation; NaN when either side is constant or n < 3. */
double rp_pearson(const double *x, const double *y, size_t n);

/* ---- recommendation (pure) ---- */

enum rp_verdict { RP_GO, RP_GO_COND, RP_NOGO };
const char *rp_verdict_name(enum rp_verdict v); /* "GO", "GO WITH CONDITIONS", "NO-GO" */

/* One side (candidate or baseline) as the recommendation sees it. */
struct rp_side {
	bool failed;
	double tpj;
	double attainment, attainment_goal;
	bool latency_ok;          /* every p95/p99 target met over the run */
	double breaches;          /* quality breach requests; NaN: unknown */
	bool quality_ok;          /* no slice served INT8 over its threshold */
	double clamp_events;
	double max_tj_c, slowdown_c;
	double telemetry_faults, rollbacks;
	bool guard_sla, guard_quality, guard_thermal; /* rollback triggers armed */
	bool recomputed;          /* figures from a decision log, not a simulator's ground truth */
};

#define RP_MAX_REASONS 16
struct rp_decision {
	enum rp_verdict verdict;
	double gain;              /* candidate tpj / baseline tpj - 1 */
	size_t n;
	struct {
		bool blocker;     /* true: NO-GO reason; false: a condition */
		char text[256];
	} reasons[RP_MAX_REASONS];
	char summary[256];        /* the deciding line when GO */
};
void rp_recommend(const struct rp_side *cand, const struct rp_side *base,
		  const struct rp_thresholds *th, struct rp_decision *out);

/* Where the evidence comes from, weakest first. */
enum rp_evidence { RP_EV_SIMULATED, RP_EV_DRY_RUN, RP_EV_GOVERNED };
const char *rp_evidence_name(enum rp_evidence e); /* "simulated", "live dry-run", "live governed" */

/* min / median / max of n values (sorted in place); NaN when n is 0. */
struct rp_spread {
	size_t n;
	double min, median, max;
};
struct rp_spread rp_spread_of(double *v, size_t n);

/* Adds the blockers of another seed's decision (prefixed "seed N: ") to d
 * and makes d NO-GO when that seed's is. */
void rp_merge_seed(struct rp_decision *d, const struct rp_decision *other, uint64_t seed);

/* Judges the gain against its spread over paired seeds and caps what the
 * evidence can support: from simulation alone, from a dry-run, or from
 * fewer than 3 seeds the verdict is at most GO WITH CONDITIONS, with the
 * condition naming what would lift it. gain: the paired candidate/baseline
 * gains over seeds (n 0 or 1: one run, no spread). */
void rp_cap_evidence(struct rp_decision *d, enum rp_evidence ev, const char *ev_detail,
		     const struct rp_spread *gain, const struct rp_thresholds *th);

/* ---- runs (report_load.c) ---- */

/* A period is the decision log reader's record (governor/loop/declog_read.h). */

struct rp_slice {
	char name[HAL_NAME_LEN];
	double max_drop;          /* NaN: unknown */
	double int8_req_frac;     /* served share (sim) or mean set share (log) */
	double int8_tokens_share; /* of all tokens; NaN for logs */
	double breaches;          /* NaN: unknown (live log) */
	double true_drop_end;     /* NaN: unknown */
	double max_drop_upper_int8; /* worst drop bound while INT8 was set on it */
};

struct rp_run {
	char dir[1024];
	char label[200];          /* scenario/policy/seed */
	bool have_summary;        /* false: live decision log, figures recomputed */
	char scenario[64], policy[64], controller[32], policy_hash[40], policy_path[1024];
	char govd_version[32];
	bool dry_run;             /* header dry_run: the governor observed, did not actuate */
	uint64_t seed;
	double period_s;
	char dev_name[HAL_NAME_LEN], dev_model[HAL_NAME_LEN], driver[HAL_NAME_LEN], firmware[HAL_NAME_LEN];
	double slowdown_c, shutdown_c;
	/* policy file (loaded from policy_path when its hash matches) */
	int policy_state;         /* 0 matches, 1 not found/unloadable, 2 hash differs */
	char owners[256], workload_profile[128], model_revision[128], power_mode[128];
	char v_compiler[128], v_runtime[128], v_driver[128], v_firmware[128];
	char objective[32];
	double targets[SLA_N_ROWS]; /* by SLA_INDEX(); 0: none */
	double min_tokens_per_s;  /* throughput floor; 0: none */
	double attainment_goal, ceiling_c, window_s;
	bool have_policy_sla;     /* targets from summary.json or the policy file */
	uint32_t trig_sla_n, trig_sla_m, trig_clamps, trig_faults;
	bool trig_quality, have_triggers;
	/* run figures (summary.json, or recomputed from the log) */
	double duration_s, tokens, e_accel, e_mem, e_host, e_total, tpj, tpj_sla;
	double attainment, windows, windows_met;
	double q_ms[SLA_N_ROWS];  /* run-wide quantiles (summary), or the worst judged window's */
	double max_tj_c, clamp_events, clamp_time_s, above_ceiling_s;
	double int8_token_frac, breaches, rollbacks, telemetry_faults;
	double fp8_token_frac; /* NaN: the run had no FP8 engine (no precision ladder) */
	bool failed;
	char fail_reason[128];
	size_t n_slices;
	struct rp_slice slices[HAL_MAX_SLICES];
	/* summary.json sla.per_window (sim runs since it was written): the
	 * simulator's own judgement of each window, tail included */
	struct sim_summary_window *sw; /* summary.json sla.per_window (its reader's rows) */
	size_t nsw;
	/* per period, per window */
	struct declog_period *p;
	size_t np;
	struct rp_wstats *w;
	size_t nw;
	double recomputed_tokens, recomputed_energy_j; /* from the log, for sim runs a check */
	/* Recorded by runs since the run-metadata change (summary.json, header);
	 * older runs: scenario_path inferred as configs/scenarios/<scenario>.yaml,
	 * command and build_compiler empty. */
	char scenario_path[1024];
	bool scenario_path_recorded, scenario_path_exists;
	char command[8192];       /* govctl sim command that reproduces the run, without --out */
	char build_compiler[128]; /* versions.compiler / compiler: what built the governor */
	size_t header_line;       /* of the decision log's header record */
	char log_path[1200];      /* the decision log read */
};

/* Loads a run: a directory with decisions.jsonl (summary.json optional), or a
 * decisions.jsonl file. 0, or -errno / -EINVAL with a message in err. */
int rp_run_load(const char *path, struct rp_run *r, char *err, size_t errlen);
void rp_run_free(struct rp_run *r);
/* Windows (policy SLA window) and their evidence, without sensitivity/cost. */
int rp_run_windows(struct rp_run *r);

/* ---- figures (report_figures.c) and plots (report_plot.c) ---- */
/* The figures of the report as report.json's "figures" array: every figure
 * the HTML shows, with the data it is drawn from (docs/report.md). c: the
 * candidate, b: the baseline; all: every run (operating points); seeds:
 * paired candidate/baseline tokens/J per seed (n_seeds >= 2: a spread
 * figure). */
struct rp_seed_pair {
	uint64_t seed;
	double cand_tpj, base_tpj;
};
json_t *rp_figures(const struct rp_run *c, const struct rp_run *b, struct rp_run *const *all,
		   const char *const *roles, size_t n, const struct rp_seed_pair *seeds,
		   size_t n_seeds);

struct rp_plots {
#define RP_MAX_PLOTS 16
	char *svg[RP_MAX_PLOTS];   /* NULL when not made */
	char *why[RP_MAX_PLOTS];   /* why not (gnuplot missing, ...) */
	const char *id[RP_MAX_PLOTS];    /* the figure's id (points into the figures JSON) */
	const char *title[RP_MAX_PLOTS];
	size_t n;
};
/* The plots' font at their 1000 px width (tests/integration/report_figures.sh
 * checks that it stays legible printed on A4). */
#define REPORT_PLOT_FONT_PX 14
/* One SVG per figure of figs (rp_figures' array), drawn by gnuplot. */
void rp_make_plots(json_t *figs, struct rp_plots *out);
void rp_plots_free(struct rp_plots *p);

/* ---- rendering (report_render.c) ---- */
/* report.md (html false) or report.html from the report document into f
 * (not closed); signoffs: the entries appended beside the report (NULL:
 * none yet). 0 or -errno. */
int rp_render(json_t *rep, const struct rp_plots *plots, json_t *signoffs, FILE *f, bool html);
/* The sign-off section of report.html alone, between the markers
 * RP_SIGNOFF_BEGIN and RP_SIGNOFF_END, so govctl signoff can rewrite it. */
#define RP_SIGNOFF_BEGIN "<!-- govd:signoff:begin -->"
#define RP_SIGNOFF_END "<!-- govd:signoff:end -->"
void rp_render_signoff(json_t *rep, json_t *signoffs, FILE *f, bool html);

/* ---- sign-off (govctl_verify.c) ---- */
int govctl_signoff(int argc, char **argv);
/* The three roles the workflow asks to sign, in order. */
extern const char *const rp_roles[3];
/* Reads REPORT.signoffs (JSON lines) beside report.json and checks each
 * entry against the report's current bytes and, with a signers file, the
 * keys listed for its role. Returns an array of
 * {role, name, decision, date, key, status} (status "valid", or why not)
 * or NULL with err set when the file cannot be read; *n_bad counts the
 * entries that are not valid. */
json_t *rp_signoffs_check(const char *report_json, const char *signers_path, size_t *n_bad,
			  char *err, size_t errlen);


/* ---- the report document (report_build.c) ---- */
#define RP_MAX_RUNS 32
/* What names the invocation rather than the runs (the tool's to supply). */
struct rp_build_meta {
	const char *command;       /* canonical command line, no output dir or key */
	const char *generated_by;  /* "govctl report 1.2.3" */
	const char *generated_at;  /* ISO 8601 UTC */
	const char *source_commit;
};
struct rp_build_result {
	json_t *report;   /* report.json (owned) */
	json_t *warnings; /* strings: comparisons that are not like for like (owned) */
	size_t bi;        /* the baseline's index in runs[] after the reorder */
	enum rp_verdict verdict;
	double gain;      /* the candidate's tokens/J over the baseline's, - 1 */
	enum rp_class run_class;
	enum rp_evidence evidence;
	size_t paired_seeds;
};
/* Builds the report over runs[0..n) (loaded, rp_run_load), runs[bi] the
 * baseline, the first n_cmdline named by the user (the rest alternatives).
 * Classifies every window, reorders runs[] so the candidate is runs[0], and
 * fills *res. 0, or -EINVAL with err set (runs not of the same demand),
 * -ENOMEM. */
int rp_build(struct rp_run **runs, size_t n, size_t bi, size_t n_cmdline,
	     const struct rp_build_meta *m, struct rp_build_result *res, char *err, size_t errlen);
void rp_build_result_free(struct rp_build_result *res);

#endif
