/* govctl compare: a grid of scenarios x policies x seeds, run by N forked
 * workers (each runs the same code as govctl sim), then one table against a
 * baseline policy: printed, compare.json and compare.md. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fsafe.h"
#include "governor/controllers/controller.h"
#include "governor/sim/honest.h"
#include "common/jsonx.h"
#include "governor/sim/oracle.h"
#include "governor/policy/policy.h"
#include "governor/sim/sim.h"
#include "governor/sim/summary_read.h"
#include "plant_models/scenario.h"
#include "tools/govctl.h"

#define MAX_ITEMS 64
#define ORACLE_DEFAULT_POLICY "policies/balanced.yaml"

struct list {
	size_t n;
	char *v[MAX_ITEMS];
	char found[MAX_ITEMS][512]; /* installed copies of file items (govctl_data_file) */
};

struct job {
	size_t si, pi, ki; /* scenario, policy, seed index */
	uint64_t seed;
	char dir[4096];
};

static void cmp_usage(FILE *f)
{
	fprintf(f, "usage: govctl compare --scenarios A,B --policies P,Q [--seeds 1,2] "
		   "[--baseline NAME] [-j N] [--out DIR] [--duration S]\n"
		   "                      [--oracle] [--oracle-policy FILE]\n"
		   "  runs every scenario x policy x seed; prints tokens/J against the baseline\n"
		   "  policy (default: the first) and writes compare.json, compare.md and runs/ into\n"
		   "  DIR (default out/compare). --oracle adds an oracle row per scenario (the best\n"
		   "  feasible static point per SLA window under FILE's targets, default\n"
		   "  " ORACLE_DEFAULT_POLICY "; docs/oracle.md) and a %% of oracle column, and\n"
		   "  the same for the BF16-only oracle (the DVFS-only limit: no INT8 point)\n");
}

/* Splits a comma list in place; empty items are errors. Items of a file list
 * not found as given may be installed ones. */
static bool split(char *s, struct list *l, bool files)
{
	l->n = 0;
	for (char *tok = s;;) {
		char *c = strchr(tok, ',');
		if (c)
			*c = '\0';
		if (!*tok || l->n == MAX_ITEMS)
			return false;
		l->v[l->n] = files ? (char *)govctl_data_file(tok, l->found[l->n], sizeof(l->found[0]))
				   : tok;
		l->n++;
		if (!c)
			return true;
		tok = c + 1;
	}
}

struct row {
	double tpj, att, ttft, tbt, e2e, clamps, breach, breach_late, int8;
	double clk_changes, clk_mean; /* per minute; MHz (NAN when a run did not record it) */
	size_t n;
	bool failed;
};

static void row_add(struct row *r, const struct sim_summary *s)
{
	r->tpj += s->tokens_per_joule;
	r->att += s->attainment;
	r->ttft += s->q_ms[SLA_INDEX(SLA_TTFT, SLA_P99)];
	r->tbt += s->q_ms[SLA_INDEX(SLA_TBT, SLA_P99)];
	r->e2e += s->q_ms[SLA_INDEX(SLA_E2E, SLA_P99)];
	r->clamps += s->clamp_events;
	r->breach += s->breach_requests;
	r->breach_late += s->breach_requests_beyond_delay;
	r->int8 += s->int8_token_fraction;
	r->clk_changes += s->clock_changes_per_min;
	r->clk_mean += s->mean_locked_mhz;
	r->failed |= s->failed;
	r->n++;
}

static void row_mean(struct row *r)
{
	double n = r->n ? (double)r->n : NAN;
	r->tpj /= n;
	r->att /= n;
	r->ttft /= n;
	r->tbt /= n;
	r->e2e /= n;
	r->clamps /= n;
	r->breach /= n;
	r->breach_late /= n;
	r->int8 /= n;
	r->clk_changes /= n;
	r->clk_mean /= n;
}

/* The oracle of one scenario, averaged over the seeds like the policy rows;
 * SLA attainment is over the windows it judged, p99s and INT8 share unknown. */
/* The policy runs' windows.csv of scenario si, seed k, added to the equal-SLA
 * totals of every comparable policy (docs/oracle.md). */
static int honest_collect(const struct oracle_result *res, const struct job *jobs, size_t njobs,
			  size_t si, size_t ki, const bool *comparable, struct honest_totals *ht,
			  size_t npol)
{
	int bad = 0;
	for (size_t i = 0; i < njobs; i++) {
		const struct job *j = &jobs[i];
		if (j->si != si || j->ki != ki || !comparable[j->pi])
			continue;
		char path[4200];
		struct honest_window *w = NULL;
		size_t n = 0;
		struct diag_list d = { 0 };
		snprintf(path, sizeof(path), "%s/windows.csv", j->dir);
		if (honest_windows_load(path, &w, &n, &d)) {
			govctl_print_diags(&d);
			bad = 1;
		} else {
			honest_add(&ht[si * npol + j->pi], res->pick, res->n_windows, w, n,
				   res->ceiling_c);
		}
		diag_clear(&d);
		free(w);
	}
	return bad;
}

static int oracle_row(const char *scenario, const char *policy, bool bf16_only,
		      const uint64_t *seeds, size_t nseeds, bool have_seeds, unsigned jobs,
		      double duration_s, struct row *r, json_t *all, const struct job *pjobs,
		      size_t njobs, size_t si, const bool *comparable, struct honest_totals *ht,
		      size_t npol)
{
	memset(r, 0, sizeof(*r));
	r->ttft = r->tbt = r->e2e = r->int8 = NAN;
	for (size_t k = 0; k < nseeds; k++) {
		struct oracle_opts oo = { .scenario_path = scenario, .policy_path = policy,
					  .seed = have_seeds ? seeds[k] : 0, .have_seed = have_seeds,
					  .duration_s = duration_s, .jobs = jobs,
					  .bf16_only = bf16_only };
		struct oracle_result res;
		struct diag_list d = { 0 };
		int rc = oracle_run(&oo, &res, &d);
		govctl_print_diags(&d);
		diag_clear(&d);
		if (rc) {
			fprintf(stderr, "govctl compare: oracle of %s failed (%s)\n", scenario,
				strerror(-rc));
			return rc;
		}
		size_t judged = 0, met = 0;
		for (size_t w = 0; w < res.n_windows; w++) {
			const struct oracle_pick *p = &res.pick[w];
			if (p->idle || p->tail)
				continue;
			judged++;
			met += p->sla_met;
		}
		/* The honest limit: feasible windows only (docs/oracle.md). */
		r->tpj += res.tokens_per_joule_feasible_all_rails;
		r->att += judged ? (double)met / (double)judged : 1.0;
		if (honest_collect(&res, pjobs, njobs, si, k, comparable, ht, npol)) {
			oracle_result_free(&res);
			return -EINVAL;
		}
		r->clamps += (double)res.clamp_events;
		r->breach += (double)res.breach_requests;
		r->n++;
		json_t *j = oracle_json(&res);
		json_object_del(j, "windows_chosen"); /* oracle.json from govctl sim --oracle has them */
		json_object_set_new(j, "bf16_only", json_boolean(bf16_only));
		json_array_append_new(all, j);
		oracle_result_free(&res);
	}
	double n = (double)r->n;
	r->tpj /= n;
	r->att /= n;
	r->clamps /= n;
	r->breach /= n;
	return 0;
}

/* Workers report to the parent through one pipe, one write per record (each
 * under PIPE_BUF, so records of different workers never interleave):
 * "P<job index>\n" when a run is done, "D<line>\n" for each diagnostic line. */
static void send_rec(int fd, char kind, const char *text)
{
	char buf[1024];
	int w = snprintf(buf, sizeof(buf), "%c%s", kind, text);
	if (w < 0)
		return;
	if ((size_t)w >= sizeof(buf) - 1)
		w = (int)sizeof(buf) - 2;
	buf[w++] = '\n';
	ssize_t r;
	while ((r = write(fd, buf, (size_t)w)) < 0 && errno == EINTR)
		;
}

static void send_diags(int fd, const struct diag_list *d)
{
	char line[2048];
	for (size_t i = 0; i < d->n; i++) {
		diag_format(&d->v[i], line, sizeof(line));
		for (char *p = line; *p; p++)
			if (*p == '\n')
				*p = ' ';
		send_rec(fd, 'D', line);
	}
}

struct win_sink {
	struct honest_window *w;
	size_t n, cap;
	bool oom;
};

static void keep_window(void *ctx, const struct sim_window *sw)
{
	struct win_sink *k = ctx;
	if (k->n == k->cap) {
		size_t nc = k->cap ? k->cap * 2 : 256;
		struct honest_window *nw = realloc(k->w, nc * sizeof(*nw));
		if (!nw) {
			k->oom = true;
			return;
		}
		k->w = nw;
		k->cap = nc;
	}
	honest_from_sim(sw, &k->w[k->n++]);
}

/* Every window of the run, for the equal-SLA comparison with the oracle. */
static int write_windows(const char *dir, const struct win_sink *k)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/windows.csv", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	int rc = honest_windows_write(f, k->w, k->n);
	if (fclose(f) && !rc)
		rc = -EIO;
	return rc;
}

static int run_worker(const struct job *jobs, size_t njobs, size_t w, size_t nw,
		      char *const *scen, char *const *pols, double duration_s, int fd)
{
	int bad = 0;
	char msg[4400], idx[32];
	for (size_t i = w; i < njobs; i += nw) {
		const struct job *j = &jobs[i];
		struct win_sink k = { 0 };
		struct sim_opts o = { .scenario_path = scen[j->si], .policy_path = pols[j->pi],
				      .seed = j->seed, .have_seed = true, .duration_s = duration_s,
				      .out_dir = j->dir, .on_window = keep_window, .window_ctx = &k };
		struct sim_result r;
		struct diag_list d = { 0 };
		int rc = sim_run(&o, &r, &d);
		send_diags(fd, &d);
		diag_clear(&d);
		if (!rc)
			rc = k.oom ? -ENOMEM : write_windows(j->dir, &k);
		free(k.w);
		if (rc) {
			snprintf(msg, sizeof(msg), "govctl compare: run %s failed (%s)", j->dir,
				 strerror(-rc));
			send_rec(fd, 'D', msg);
			bad = 1;
		}
		snprintf(idx, sizeof(idx), "%zu", i);
		send_rec(fd, 'P', idx);
	}
	return bad;
}

/* The parent's side: diagnostics printed once each however many runs repeat
 * them; "[k/N] scenario/policy/seed" on stderr while it is a terminal. */
struct progress {
	bool tty;
	/* Not a terminal (a CI log): a plain "k/N runs done" line at most every
	 * this many seconds (GOVCTL_PROGRESS_S, default 10), so a long compare
	 * is not silent; 0: after every run. */
	double every_s;
	double last_s;
	size_t done, total, repeats;
	size_t n_seen, cap_seen;
	char **seen;
};

static void progress_diag(struct progress *pg, const char *line)
{
	for (size_t i = 0; i < pg->n_seen; i++)
		if (!strcmp(pg->seen[i], line)) {
			pg->repeats++;
			return;
		}
	if (pg->n_seen == pg->cap_seen) {
		size_t cap = pg->cap_seen ? 2 * pg->cap_seen : 16;
		char **v = realloc(pg->seen, cap * sizeof(*v));
		if (v) {
			pg->seen = v;
			pg->cap_seen = cap;
		}
	}
	if (pg->n_seen < pg->cap_seen) {
		char *dup = strdup(line);
		if (dup)
			pg->seen[pg->n_seen++] = dup;
	}
	fprintf(stderr, "%s%s\n", pg->tty ? "\r\033[K" : "", line);
}

static void progress_step(struct progress *pg, const struct job *j, const char (*sname)[64],
			  const char (*pname)[64])
{
	pg->done++;
	if (pg->tty) {
		fprintf(stderr, "\r\033[K[%zu/%zu] %s/%s/%llu", pg->done, pg->total, sname[j->si],
			pname[j->pi], (unsigned long long)j->seed);
		return;
	}
	double now = govd_mono_ms() / 1000.0;
	if (pg->done < pg->total && now - pg->last_s >= pg->every_s) {
		fprintf(stderr, "govctl compare: %zu/%zu runs done (last %s/%s/%llu)\n", pg->done,
			pg->total, sname[j->si], pname[j->pi], (unsigned long long)j->seed);
		pg->last_s = now;
	}
}

static void progress_free(struct progress *pg)
{
	for (size_t i = 0; i < pg->n_seen; i++)
		free(pg->seen[i]);
	free(pg->seen);
	pg->seen = NULL;
	pg->n_seen = pg->cap_seen = 0;
}

/* Reads the workers' records until every worker has closed its end. */
static void progress_run(struct progress *pg, int fd, const struct job *jobs, size_t njobs,
			 const char (*sname)[64], const char (*pname)[64])
{
	char buf[8192], line[1100];
	size_t ll = 0;
	ssize_t r;
	for (;;) {
		r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = '\0';
			ll = 0;
			if (line[0] == 'D') {
				progress_diag(pg, line + 1);
			} else if (line[0] == 'P') {
				uint64_t k;
				if (govctl_parse_u64(line + 1, &k) && k < njobs)
					progress_step(pg, &jobs[k], sname, pname);
			}
		}
	}
	if (pg->tty && pg->done)
		fprintf(stderr, "\r\033[K");
	if (pg->repeats)
		fprintf(stderr, "govctl compare: %zu repeated diagnostic line(s) of other runs not shown\n",
			pg->repeats);
	progress_free(pg);
}

/* Whether a policy's SLA is the oracle policy's (same window, targets and
 * throughput floor): only then are its windows judged at equal SLA. */
static bool same_sla(const struct policy *a, const struct policy *b)
{
	if (a->sla.window_s != b->sla.window_s || a->sla.min_tokens_per_s != b->sla.min_tokens_per_s)
		return false;
	for (size_t i = 0; i < SLA_N_ROWS; i++)
		if (a->sla.latency_ms[i] != b->sla.latency_ms[i])
			return false;
	return true;
}

/* ---- govctl compare: parse -> load -> run -> collect -> emit ---- */

struct cmp_args {
	struct list scen, pols, seeds_s;
	const char *baseline, *out, *oracle_policy;
	uint64_t nworkers;
	double duration_s;
	bool have_seeds, oracle;
	uint64_t seeds[MAX_ITEMS];
	char obuf[512];
};

/* What the files say: names label the runs; the grid of jobs. */
struct cmp_plan {
	char sname[MAX_ITEMS][64], pname[MAX_ITEMS][64];
	uint64_t sdefault_seed[MAX_ITEMS];
	bool comparable[MAX_ITEMS]; /* same SLA as the oracle's policy */
	size_t base;                /* the baseline policy's index */
	size_t nseeds, njobs;
	struct job *jobs;
};

struct cmp_results {
	struct row *rows;           /* scenario x policy, means over the seeds */
	struct row *orows;          /* [0]: the full oracle, [1]: the BF16-only one */
	struct honest_totals *ht, *ht16;
	json_t *runs, *oracles;
	bool failed;
};

#define CMP_GO -1 /* parse: carry on (else an exit code) */

static int cmp_bad_list(const char *arg)
{
	fprintf(stderr, "govctl compare: empty item or more than %d items in '%s'\n", MAX_ITEMS, arg);
	cmp_usage(stderr);
	return GOVCTL_EXIT_USAGE;
}

static int cmp_parse(int argc, char **argv, struct cmp_args *a)
{
	static const struct option opts[] = {
		{ "scenarios", required_argument, NULL, 's' },
		{ "policies", required_argument, NULL, 'p' },
		{ "seeds", required_argument, NULL, 'S' },
		{ "baseline", required_argument, NULL, 'b' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "out", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "oracle", no_argument, NULL, 'O' },
		{ "oracle-policy", required_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	a->out = "out/compare";
	a->nworkers = 1;
	a->oracle_policy = ORACLE_DEFAULT_POLICY;
	optind = 1;
	while ((c = getopt_long(argc, argv, "j:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!split(optarg, &a->scen, true))
				return cmp_bad_list(optarg);
			break;
		case 'p':
			if (!split(optarg, &a->pols, true))
				return cmp_bad_list(optarg);
			break;
		case 'S':
			if (!split(optarg, &a->seeds_s, false))
				return cmp_bad_list(optarg);
			a->have_seeds = true;
			break;
		case 'b':
			a->baseline = optarg;
			break;
		case 'O':
			a->oracle = true;
			break;
		case 'Q':
			a->oracle_policy = optarg;
			a->oracle = true;
			break;
		case 'j':
			if (!govctl_parse_u64(optarg, &a->nworkers) || a->nworkers < 1 ||
			    a->nworkers > 256) {
				fprintf(stderr, "govctl compare: -j wants 1..256, got '%s'\n", optarg);
				cmp_usage(stderr);
				return GOVCTL_EXIT_USAGE;
			}
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'd':
			if (!govctl_parse_double(optarg, &a->duration_s) || a->duration_s <= 0) {
				fprintf(stderr, "govctl compare: --duration wants seconds > 0\n");
				cmp_usage(stderr);
				return GOVCTL_EXIT_USAGE;
			}
			break;
		case 'h':
			cmp_usage(stdout);
			return GOVCTL_EXIT_OK;
		default:
			cmp_usage(stderr);
			return GOVCTL_EXIT_USAGE;
		}
	}
	a->oracle_policy = govctl_data_file(a->oracle_policy, a->obuf, sizeof(a->obuf));
	if (optind < argc) {
		fprintf(stderr, "govctl compare: unexpected argument '%s'\n", argv[optind]);
		cmp_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}
	if (!a->scen.n || !a->pols.n) {
		fprintf(stderr, "govctl compare: --scenarios and --policies are required\n");
		cmp_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}
	for (size_t i = 0; i < a->seeds_s.n; i++)
		if (!govctl_parse_u64(a->seeds_s.v[i], &a->seeds[i])) {
			fprintf(stderr, "govctl compare: seed '%s' is not an unsigned integer\n",
				a->seeds_s.v[i]);
			cmp_usage(stderr);
			return GOVCTL_EXIT_USAGE;
		}
	return CMP_GO;
}

/* Every file loaded once up front: bad files fail before any run starts,
 * with all their diagnostics, and the names label the runs. */
static int cmp_load(const struct cmp_args *a, struct progress *pg, struct cmp_plan *p)
{
	struct diag_list d = { 0 };
	int bad = 0;
	for (size_t i = 0; i < a->scen.n; i++) {
		struct scenario *s = NULL;
		if (scenario_load(a->scen.v[i], &s, &d)) {
			bad = 1;
			continue;
		}
		snprintf(p->sname[i], sizeof(p->sname[i]), "%s", s->name);
		p->sdefault_seed[i] = s->default_seed;
		scenario_free(s);
	}
	struct policy *opol = NULL, *lp[MAX_ITEMS] = { 0 };
	for (size_t i = 0; i < a->pols.n; i++) {
		if (policy_load(a->pols.v[i], &lp[i], &d)) {
			bad = 1;
			continue;
		}
		snprintf(p->pname[i], sizeof(p->pname[i]), "%s", lp[i]->name);
	}
	if (a->oracle && policy_load(a->oracle_policy, &opol, &d))
		bad = 1;
	for (size_t i = 0; i < a->pols.n; i++) {
		p->comparable[i] = opol && lp[i] && same_sla(lp[i], opol);
		if (opol && lp[i] && !p->comparable[i])
			fprintf(stderr, "govctl compare: note: %s's SLA differs from %s's; its %% of "
					"oracle is not given (the comparison is at equal SLA)\n",
				p->pname[i], a->oracle_policy);
		policy_free(lp[i]);
	}
	/* Through the dedup: the runs repeat these files' warnings. */
	char line[2048];
	for (size_t i = 0; i < d.n; i++) {
		diag_format(&d.v[i], line, sizeof(line));
		progress_diag(pg, line);
	}
	policy_free(opol);
	diag_clear(&d);
	if (bad)
		return GOVCTL_EXIT_FAIL;
	for (size_t i = 0; i < a->pols.n; i++)
		for (size_t k = 0; k < i; k++)
			if (!strcmp(p->pname[i], p->pname[k])) {
				fprintf(stderr, "govctl compare: two policies are named '%s' (%s, %s)\n",
					p->pname[i], a->pols.v[k], a->pols.v[i]);
				return GOVCTL_EXIT_USAGE;
			}
	for (size_t i = 0; i < a->scen.n; i++)
		for (size_t k = 0; k < i; k++)
			if (!strcmp(p->sname[i], p->sname[k])) {
				fprintf(stderr, "govctl compare: two scenarios are named '%s'\n",
					p->sname[i]);
				return GOVCTL_EXIT_USAGE;
			}
	p->base = 0;
	if (a->baseline) {
		p->base = a->pols.n;
		for (size_t i = 0; i < a->pols.n; i++)
			if (!strcmp(p->pname[i], a->baseline))
				p->base = i;
		if (p->base == a->pols.n) {
			fprintf(stderr, "govctl compare: --baseline '%s' is none of the policies:",
				a->baseline);
			for (size_t i = 0; i < a->pols.n; i++)
				fprintf(stderr, " %s", p->pname[i]);
			fprintf(stderr, "\n");
			return GOVCTL_EXIT_USAGE;
		}
	}
	return CMP_GO;
}

/* The grid, run by forked workers (each the same code as govctl sim); the
 * parent shows their progress. */
static int cmp_run(const struct cmp_args *a, struct cmp_plan *p, struct progress *pg, bool *failed)
{
	p->nseeds = a->have_seeds ? a->seeds_s.n : 1;
	p->njobs = a->scen.n * a->pols.n * p->nseeds;
	p->jobs = calloc(p->njobs, sizeof(*p->jobs));
	if (!p->jobs)
		return GOVCTL_EXIT_FAIL;
	size_t n = 0;
	for (size_t si = 0; si < a->scen.n; si++)
		for (size_t pi = 0; pi < a->pols.n; pi++)
			for (size_t ki = 0; ki < p->nseeds; ki++) {
				struct job *j = &p->jobs[n++];
				j->si = si;
				j->pi = pi;
				j->ki = ki;
				j->seed = a->have_seeds ? a->seeds[ki] : p->sdefault_seed[si];
				snprintf(j->dir, sizeof(j->dir), "%s/runs/%s-%s-%llu", a->out,
					 p->sname[si], p->pname[pi], (unsigned long long)j->seed);
			}

	size_t nworkers = a->nworkers > p->njobs ? p->njobs : (size_t)a->nworkers;
	fflush(stdout);
	fflush(stderr);
	int pfd[2];
	if (pipe(pfd) < 0) {
		fprintf(stderr, "govctl compare: pipe: %s\n", strerror(errno));
		return GOVCTL_EXIT_FAIL;
	}
	pid_t pids[256];
	size_t started = 0;
	for (size_t w = 0; w < nworkers; w++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "govctl compare: fork: %s\n", strerror(errno));
			*failed = true;
			break;
		}
		if (pid == 0) {
			close(pfd[0]);
			int rc = run_worker(p->jobs, p->njobs, w, nworkers, a->scen.v, a->pols.v,
					    a->duration_s, pfd[1]);
			fflush(stdout);
			fflush(stderr);
			_exit(rc);
		}
		pids[started++] = pid;
	}
	close(pfd[1]);
	pg->total = p->njobs;
	progress_run(pg, pfd[0], p->jobs, p->njobs, (const char(*)[64])p->sname,
		     (const char(*)[64])p->pname);
	close(pfd[0]);
	for (size_t w = 0; w < started; w++) {
		int st;
		while (waitpid(pids[w], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			*failed = true;
	}
	if (*failed && started < nworkers)
		return GOVCTL_EXIT_FAIL;
	int mk = fsafe_mkdirs(a->out);
	if (mk) {
		fprintf(stderr, "govctl compare: cannot create %s: %s\n", a->out, strerror(-mk));
		return GOVCTL_EXIT_FAIL;
	}
	return CMP_GO;
}

/* The runs' summaries into the rows, and the oracles with the equal-SLA
 * totals of every comparable policy. */
static int cmp_collect(const struct cmp_args *a, const struct cmp_plan *p, const struct progress *pg,
		       struct cmp_results *r)
{
	size_t ns = a->scen.n, np = a->pols.n;
	r->rows = calloc(ns * np, sizeof(*r->rows));
	r->runs = json_array();
	for (size_t i = 0; i < p->njobs; i++) {
		char path[4200], err[1400];
		snprintf(path, sizeof(path), "%s/summary.json", p->jobs[i].dir);
		struct sim_summary s;
		if (sim_summary_load(path, FSAFE_MAX_BYTES, &s, err, sizeof(err))) {
			fprintf(stderr, "govctl compare: %s\n", err);
			r->failed = true;
			continue;
		}
		row_add(&r->rows[p->jobs[i].si * np + p->jobs[i].pi], &s);
		json_t *rj = json_object();
		json_object_set_new(rj, "dir", json_string(p->jobs[i].dir));
		json_object_set_new(rj, "summary", json_incref(s.doc));
		json_array_append_new(r->runs, rj);
		sim_summary_free(&s);
	}
	for (size_t i = 0; i < ns * np; i++)
		row_mean(&r->rows[i]);
	r->orows = calloc(2 * ns, sizeof(*r->orows));
	r->oracles = json_array();
	r->ht = calloc(2 * ns * np, sizeof(*r->ht));
	if (!r->orows || !r->ht)
		return GOVCTL_EXIT_FAIL;
	r->ht16 = r->ht + ns * np;
	for (size_t si = 0; a->oracle && si < ns; si++)
		for (int b = 0; b < 2; b++) {
			if (pg->tty)
				fprintf(stderr, "\r\033[K[oracle%s %zu/%zu] %s", b ? " BF16" : "",
					si + 1, ns, p->sname[si]);
			if (oracle_row(a->scen.v[si], a->oracle_policy, b, a->seeds, p->nseeds,
				       a->have_seeds, (unsigned)a->nworkers, a->duration_s,
				       &r->orows[b * ns + si], r->oracles, p->jobs, p->njobs, si,
				       p->comparable, b ? r->ht16 : r->ht, np))
				r->failed = true;
		}
	if (pg->tty && a->oracle)
		fprintf(stderr, "\r\033[K");
	return CMP_GO;
}

static void cmp_results_free(struct cmp_results *r)
{
	free(r->ht);
	free(r->rows);
	free(r->orows);
	json_decref(r->runs);
	json_decref(r->oracles);
}

/* compare.md's head: what the columns mean. */
static void emit_md_head(FILE *md, const struct cmp_args *a, const struct cmp_plan *p)
{
	fprintf(md, "# govctl compare\n\nBaseline: `%s`; means over %zu seed(s).", p->pname[p->base],
		p->nseeds);
	if (a->oracle)
		fprintf(md, " Oracle: best feasible static point per SLA window under `%s`'s "
			    "targets, over the windows where one exists (docs/oracle.md). "
			    "%% of oracle is at equal SLA: infeasible windows left out, a "
			    "policy window that misses the SLA, clamps, runs over the thermal "
			    "ceiling or serves a breach request counts its energy with zero "
			    "tokens; SLA att. feasible is "
			    "the policy's attainment over the busy feasible windows. %% of BF16 "
			    "oracle: the same against the oracle without INT8 points (the "
			    "DVFS-only limit).",
			a->oracle_policy);
	fprintf(md, "\n\n| scenario | policy | tokens/J | vs %s | SLA attainment | TTFT p99 ms | "
		    "TBT p99 ms | e2e p99 ms | clamp events | quality breaches | INT8 share |%s\n",
		p->pname[p->base], a->oracle ? " % of oracle | SLA att. feasible | % of BF16 oracle |" : "");
	fprintf(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n",
		a->oracle ? "---:|---:|---:|" : "");
}

/* One policy row: printed, in compare.md and in compare.json's rows. */
static void emit_row(const struct cmp_args *a, const struct cmp_plan *p, const struct cmp_results *r,
		     size_t si, size_t pi, FILE *md, json_t *jrows)
{
	size_t np = a->pols.n;
	const struct row *w = &r->rows[si * np + pi];
	double ratio = w->tpj / r->rows[si * np + p->base].tpj;
	const struct honest_totals *h = &r->ht[si * np + pi];
	double pct = NAN, hatt = NAN, pct16 = NAN;
	if (a->oracle && p->comparable[pi]) {
		pct = honest_pct(h);
		hatt = honest_attainment(h);
		pct16 = honest_pct(&r->ht16[si * np + pi]);
	}
	char pcts[64] = "";
	if (a->oracle)
		snprintf(pcts, sizeof(pcts), " %8.1f %9.3f %11.1f", pct, hatt, pct16);
	printf("%-16s %-20s %9.4f %8.3f %8.3f %11.1f %10.2f %10.1f %7.1f %9.1f %10.3f%s%s\n",
	       p->sname[si], p->pname[pi], w->tpj, ratio, w->att, w->ttft, w->tbt, w->e2e, w->clamps,
	       w->breach, w->int8, pcts, w->failed ? "  FAILED" : "");
	if (md) {
		fprintf(md, "| %s | %s | %.4f | %.3f | %.3f | %.1f | %.2f | %.1f | %.1f | %.1f | %.3f |",
			p->sname[si], p->pname[pi], w->tpj, ratio, w->att, w->ttft, w->tbt, w->e2e,
			w->clamps, w->breach, w->int8);
		if (a->oracle)
			fprintf(md, " %.1f | %.3f | %.1f |", pct, hatt, pct16);
		fputc('\n', md);
	}
	json_t *o = json_object();
	json_object_set_new(o, "scenario", json_string(p->sname[si]));
	json_object_set_new(o, "policy", json_string(p->pname[pi]));
	json_object_set_new(o, "seeds", json_integer((json_int_t)w->n));
	json_object_set_new(o, "tokens_per_joule", jsonx_real(w->tpj));
	json_object_set_new(o, "ratio_vs_baseline", jsonx_real(ratio));
	json_object_set_new(o, "sla_attainment", jsonx_real(w->att));
	json_object_set_new(o, "ttft_p99_ms", jsonx_real(w->ttft));
	json_object_set_new(o, "tbt_p99_ms", jsonx_real(w->tbt));
	json_object_set_new(o, "e2e_p99_ms", jsonx_real(w->e2e));
	json_object_set_new(o, "clamp_events", jsonx_real(w->clamps));
	json_object_set_new(o, "quality_breaches", jsonx_real(w->breach));
	json_object_set_new(o, "quality_breaches_beyond_delay", jsonx_real(w->breach_late));
	json_object_set_new(o, "int8_token_fraction", jsonx_real(w->int8));
	json_object_set_new(o, "clock_changes_per_min", jsonx_real(w->clk_changes));
	json_object_set_new(o, "mean_locked_mhz", jsonx_real(w->clk_mean));
	json_object_set_new(o, "failed", json_boolean(w->failed));
	if (a->oracle) {
		json_object_set_new(o, "pct_of_oracle", jsonx_real(pct));
		json_object_set_new(o, "pct_of_oracle_bf16", jsonx_real(pct16));
		json_object_set_new(o, "sla_attainment_feasible", jsonx_real(hatt));
		json_object_set_new(o, "tokens_per_joule_feasible",
				    jsonx_real(p->comparable[pi] ? honest_policy_tpj(h) : NAN));
		json_object_set_new(o, "windows_feasible", json_integer((json_int_t)h->feasible));
		json_object_set_new(o, "windows_infeasible", json_integer((json_int_t)h->infeasible));
		json_object_set_new(o, "windows_lost",
				    json_integer((json_int_t)h->missed_tokens_windows));
		json_object_set_new(o, "windows_over_ceiling",
				    json_integer((json_int_t)h->over_ceiling));
		/* The attainment's own counts, so a set's windows can be pooled. */
		json_object_set_new(o, "windows_feasible_busy",
				    json_integer((json_int_t)h->feasible_busy));
		json_object_set_new(o, "windows_feasible_met",
				    json_integer((json_int_t)h->feasible_met));
	}
	json_array_append_new(jrows, o);
}

/* A scenario's two oracle rows (full, BF16-only), after its policies. */
static void emit_oracle_rows(const struct cmp_args *a, const struct cmp_plan *p,
			     const struct cmp_results *r, size_t si, FILE *md, json_t *jrows)
{
	size_t ns = a->scen.n;
	for (int b = 0; b < 2; b++) {
		const struct row *orw = &r->orows[b * ns + si];
		const char *oname = b ? "oracle-bf16" : "oracle";
		double oratio = orw->tpj / r->rows[si * a->pols.n + p->base].tpj;
		printf("%-16s %-20s %9.4f %8.3f %8.3f %11s %10s %10s %7.1f %9.1f %10s %8s "
		       "%9.3f %11s\n",
		       p->sname[si], oname, orw->tpj, oratio, orw->att, "-", "-", "-", orw->clamps,
		       orw->breach, "-", b ? "-" : "100.0", 1.0, b ? "100.0" : "-");
		if (md)
			fprintf(md, "| %s | **%s** | %.4f | %.3f | %.3f | - | - | - | %.1f | "
				    "%.1f | - | %s | 1.000 | %s |\n",
				p->sname[si], oname, orw->tpj, oratio, orw->att, orw->clamps,
				orw->breach, b ? "-" : "100.0", b ? "100.0" : "-");
		json_t *o = json_object();
		json_object_set_new(o, "scenario", json_string(p->sname[si]));
		json_object_set_new(o, "policy", json_string(oname));
		json_object_set_new(o, "oracle_policy", json_string(a->oracle_policy));
		json_object_set_new(o, "seeds", json_integer((json_int_t)orw->n));
		json_object_set_new(o, "tokens_per_joule", jsonx_real(orw->tpj));
		json_object_set_new(o, "ratio_vs_baseline", jsonx_real(oratio));
		json_object_set_new(o, "sla_attainment", jsonx_real(orw->att));
		json_object_set_new(o, "clamp_events", jsonx_real(orw->clamps));
		json_object_set_new(o, "quality_breaches", jsonx_real(orw->breach));
		json_object_set_new(o, b ? "pct_of_oracle_bf16" : "pct_of_oracle", jsonx_real(100.0));
		json_array_append_new(jrows, o);
	}
}

/* The table: printed, compare.md and compare.json. */
static void cmp_emit(const struct cmp_args *a, const struct cmp_plan *p, struct cmp_results *r)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/compare.md", a->out);
	struct fsafe_err mfe;
	FILE *md = fsafe_fcreate(path, 0644, true, &mfe);
	if (!md) {
		fprintf(stderr, "govctl compare: %s: %s\n", path, mfe.msg);
		r->failed = true;
	}
	/* units in the header: latencies in ms, INT8 as the share of tokens */
	printf("%-16s %-20s %9s %8s %8s %11s %10s %10s %7s %9s %10s%s\n", "scenario", "policy",
	       "tokens/J", "ratio", "SLA att", "TTFT p99 ms", "TBT p99 ms", "e2e p99 ms", "clamps",
	       "breaches", "INT8 share", a->oracle ? " % oracle  att feas  % BF16 or" : "");
	if (md)
		emit_md_head(md, a, p);
	json_t *jrows = json_array();
	for (size_t si = 0; si < a->scen.n; si++) {
		for (size_t pi = 0; pi < a->pols.n; pi++)
			emit_row(a, p, r, si, pi, md, jrows);
		if (a->oracle)
			emit_oracle_rows(a, p, r, si, md, jrows);
	}
	if (md && fclose(md))
		r->failed = true;
	json_t *cj = json_object();
	json_object_set_new(cj, "baseline", json_string(p->pname[p->base]));
	json_object_set_new(cj, "rows", jrows);
	json_object_set_new(cj, "runs", r->runs);
	r->runs = NULL;
	if (a->oracle) {
		json_object_set_new(cj, "oracles", r->oracles);
		r->oracles = NULL;
	}
	snprintf(path, sizeof(path), "%s/compare.json", a->out);
	if (jsonx_dump_file(cj, path, JSON_INDENT(2) | JSON_REAL_PRECISION(10))) {
		fprintf(stderr, "govctl compare: cannot write %s\n", path);
		r->failed = true;
	}
	json_decref(cj);
	printf("compare: %s/compare.md, %s/compare.json\n", a->out, a->out);
}

int govctl_compare(int argc, char **argv)
{
	/* static: the lists and names are large for a stack */
	static struct cmp_args a;
	static struct cmp_plan p;
	struct cmp_results r = { 0 };
	memset(&a, 0, sizeof(a));
	memset(&p, 0, sizeof(p));
	int rc = cmp_parse(argc, argv, &a);
	if (rc != CMP_GO)
		return rc;
	struct progress pg = { .tty = isatty(STDERR_FILENO) == 1, .every_s = 10 };
	const char *every = getenv("GOVCTL_PROGRESS_S");
	double ev;
	if (every && govctl_parse_double(every, &ev) && ev >= 0)
		pg.every_s = ev;
	pg.last_s = govd_mono_ms() / 1000.0;
	if ((rc = cmp_load(&a, &pg, &p)) != CMP_GO) {
		progress_free(&pg);
		return rc;
	}
	bool failed = false;
	rc = cmp_run(&a, &p, &pg, &failed);
	if (rc == CMP_GO)
		rc = cmp_collect(&a, &p, &pg, &r);
	if (rc == CMP_GO) {
		r.failed |= failed;
		cmp_emit(&a, &p, &r);
		rc = r.failed ? GOVCTL_EXIT_FAIL : GOVCTL_EXIT_OK;
	}
	cmp_results_free(&r);
	progress_free(&pg);
	free(p.jobs);
	return rc;
}
