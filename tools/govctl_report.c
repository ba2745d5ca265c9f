/* govctl report: runs (govctl sim directories or a live govd's decision log)
 * -> report.json, report.md, report.html (docs/report.md). The command: its
 * arguments, finding and loading the runs, writing and signing the outputs.
 * The analysis is the report library's (report/report_build.c). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fsafe.h"
#include "govd_commit.h"
#include "common/jsonx.h"
#include "governor/policy/opoint.h"
#include "governor/sim/sim.h"
#include "tools/govctl.h"
#include "report/report.h"


static void rep_usage(FILE *f)
{
	fprintf(f, "usage: govctl report RUN... --baseline RUN [--alternatives PATH]... [-o DIR]\n"
		   "                     [--sign KEYFILE]\n"
		   "  RUN: a govctl sim output directory (summary.json, timeseries.csv,\n"
		   "  decisions.jsonl) or a live govd's decisions.jsonl; the first RUN is the\n"
		   "  candidate, runs of the candidate's or the baseline's policy with other seeds\n"
		   "  are their seeds. --alternatives: runs that were tried instead (a run, a\n"
		   "  directory of runs or a govctl compare output directory). Writes\n"
		   "  report.html, report.md, report.json (and with --sign report.manifest, their\n"
		   "  SHA-256s, and report.json.sig, its signature)\n"
		   "  into DIR (default out/report).\n");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_run(const char *path)
{
	struct stat st;
	char p[1200];
	if (stat(path, &st))
		return false;
	if (S_ISREG(st.st_mode))
		return true;
	snprintf(p, sizeof(p), "%s/decisions.jsonl", path);
	return !stat(p, &st) && S_ISREG(st.st_mode);
}

/* The runs an --alternatives PATH names, in name order: PATH itself when it
 * is a run, else every run directory under PATH/runs (govctl compare's
 * layout) or under PATH. */
static int alternatives_of(const char *path, char **out, size_t *n, size_t cap)
{
	if (is_run(path)) {
		if (*n == cap)
			return -E2BIG;
		out[(*n)++] = strdup(path);
		return out[*n - 1] ? 0 : -ENOMEM;
	}
	char dir[1200];
	snprintf(dir, sizeof(dir), "%s/runs", path);
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(dir, sizeof(dir), "%s", path);
		d = opendir(dir);
	}
	if (!d)
		return -errno;
	size_t first = *n;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		char p[2400];
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (!is_run(p))
			continue;
		if (*n == cap) {
			rc = -E2BIG;
			break;
		}
		if (!(out[(*n)++] = strdup(p))) {
			rc = -ENOMEM;
			break;
		}
	}
	closedir(d);
	if (!rc && *n == first)
		rc = -ENOENT;
	qsort(out + first, *n - first, sizeof(*out), cmp_str);
	return rc;
}

static FILE *open_output(const char *dir, const char *name, char *path, size_t len)
{
	/* -o is a path the user names: a planted symlink there is replaced,
	 * never followed */
	struct fsafe_err fe;
	snprintf(path, len, "%s/%s", dir, name);
	return fsafe_fcreate(path, 0644, true, &fe);
}

/* report.json, report.md, report.html (and with a key report.manifest and
 * report.json.sig) into
 * out. 0, or 1 with the error printed. */
static int write_outputs(const char *out, json_t *rep, const struct rp_plots *plots, const char *key)
{
	char path[4200];
	int bad = 0;
	FILE *f = open_output(out, "report.json", path, sizeof(path));
	if (!f || json_dumpf(rep, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10)) || fputc('\n', f) == EOF) {
		fprintf(stderr, "govctl report: cannot write %s\n", path);
		bad = 1;
	}
	if (f && fclose(f) && !bad) {
		fprintf(stderr, "govctl report: cannot write %s\n", path);
		bad = 1;
	}
	for (int html = 0; html <= 1; html++) {
		f = open_output(out, html ? "report.html" : "report.md", path, sizeof(path));
		int rc = f ? rp_render(rep, plots, NULL, f, html) : -errno;
		if (f && fclose(f) && !rc)
			rc = -errno;
		if (rc) {
			fprintf(stderr, "govctl report: cannot write %s\n", path);
			bad = 1;
		}
	}
	if (!bad && key) {
		char err[600];
		if (govctl_sign_report(out, key, err, sizeof(err))) {
			fprintf(stderr, "govctl report: signing failed: %s\n", err);
			bad = 1;
		}
	}
	return bad;
}

/* UTC, ISO 8601; SOURCE_DATE_EPOCH when set (reproducible builds' convention). */
static void generated_at(char *buf, size_t len)
{
	time_t t = time(NULL);
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	uint64_t v;
	if (sde && govctl_parse_u64(sde, &v) && v < (uint64_t)1 << 40)
		t = (time_t)v;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The command that made the report, in canonical order (getopt permutes
 * argv), without the output directory or the key file: the same runs give
 * the same bytes wherever the report is written. */
static void command_line(char *cmd, size_t len, char *const *args, size_t nargs,
			 const char *baseline, const char *const *alt_args, size_t n_alt_args)
{
	snprintf(cmd, len, "govctl report");
	for (size_t i = 0; i < nargs; i++)
		sim_shell_append(cmd, len, args[i]);
	size_t l = strlen(cmd);
	snprintf(cmd + l, len - l, " --baseline");
	sim_shell_append(cmd, len, baseline);
	for (size_t a = 0; a < n_alt_args; a++) {
		l = strlen(cmd);
		snprintf(cmd + l, len - l, " --alternatives");
		sim_shell_append(cmd, len, alt_args[a]);
	}
}

/* Alternatives: each run once, those given already skipped. */
static int add_alternatives(char *const *alts, size_t n_alts, struct rp_run *store,
			    struct rp_run **runs, size_t *n)
{
	for (size_t a = 0; a < n_alts; a++) {
		char ra[PATH_MAX], rb[PATH_MAX];
		bool dup = false;
		for (size_t j = 0; j < *n && !dup; j++)
			dup = realpath(alts[a], ra) && realpath(runs[j]->dir, rb) && !strcmp(ra, rb);
		if (dup)
			continue;
		if (*n == RP_MAX_RUNS) {
			fprintf(stderr, "govctl report: at most %d runs with the alternatives\n", RP_MAX_RUNS);
			return GOVCTL_EXIT_USAGE;
		}
		char err[1400];
		if (rp_run_load(alts[a], &store[*n], err, sizeof(err))) {
			fprintf(stderr, "govctl report: %s\n", err);
			return GOVCTL_EXIT_FAIL;
		}
		runs[*n] = &store[*n];
		(*n)++;
	}
	return GOVCTL_EXIT_OK;
}

/* -o made, and itself a real directory of this user, never a planted link
 * to another user's report folder. */
static bool out_dir_ok(const char *out)
{
	int mk = fsafe_mkdirs(out);
	if (mk) {
		fprintf(stderr, "govctl report: cannot create %s: %s\n", out, strerror(-mk));
		return false;
	}
	struct stat ost = { 0 };
	if (lstat(out, &ost) || !S_ISDIR(ost.st_mode) || ost.st_uid != geteuid()) {
		fprintf(stderr, "govctl report: -o %s: %s; refusing to write there\n", out,
			S_ISLNK(ost.st_mode) ? "a symbolic link (it may lead to another user's folder)"
			: !S_ISDIR(ost.st_mode) ? "not a directory"
						: "owned by another user");
		return false;
	}
	return true;
}

int govctl_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "baseline", required_argument, NULL, 'b' },
		{ "alternatives", required_argument, NULL, 'a' },
		{ "out", required_argument, NULL, 'o' },
		{ "sign", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *baseline = NULL, *out = "out/report", *key = NULL;
	const char *alt_args[RP_MAX_RUNS];
	size_t n_alt_args = 0;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			baseline = optarg;
			break;
		case 'a':
			if (n_alt_args == RP_MAX_RUNS) {
				fprintf(stderr, "govctl report: at most %d --alternatives\n", RP_MAX_RUNS);
				return GOVCTL_EXIT_USAGE;
			}
			alt_args[n_alt_args++] = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 'h':
			rep_usage(stdout);
			return GOVCTL_EXIT_OK;
		default:
			rep_usage(stderr);
			return GOVCTL_EXIT_USAGE;
		}
	}
	size_t nargs = (size_t)(argc - optind);
	if (!nargs || !baseline) {
		fprintf(stderr, "govctl report: at least one RUN and --baseline RUN are required\n");
		rep_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}
	if (nargs + 1 > RP_MAX_RUNS) {
		fprintf(stderr, "govctl report: at most %d runs\n", RP_MAX_RUNS - 1);
		return GOVCTL_EXIT_USAGE;
	}

	struct rp_run *store = calloc(RP_MAX_RUNS, sizeof(*store));
	struct rp_run *runs[RP_MAX_RUNS];
	char *alts[RP_MAX_RUNS];
	size_t n_alts = 0;
	int ret = GOVCTL_EXIT_FAIL;
	size_t n = 0, bi = 0;
	if (!store)
		goto free_all;
	for (size_t a = 0; a < n_alt_args; a++) {
		int rc = alternatives_of(alt_args[a], alts, &n_alts, RP_MAX_RUNS);
		if (rc) {
			fprintf(stderr, "govctl report: --alternatives %s: %s\n", alt_args[a],
				rc == -ENOENT ? "no run there (a run directory, a directory of runs or a "
						"govctl compare output directory)"
				: rc == -E2BIG ? "too many runs" : strerror(-rc));
			ret = GOVCTL_EXIT_USAGE;
			goto free_all;
		}
	}
	for (size_t i = 0; i <= nargs; i++) {
		const char *path = i < nargs ? argv[optind + i] : baseline;
		if (i == nargs) {
			bool dup = false;
			for (size_t j = 0; j < nargs; j++)
				if (!strcmp(argv[optind + j], baseline)) {
					bi = j;
					dup = true;
				}
			if (dup)
				break;
			bi = n;
		}
		char err[1400];
		if (rp_run_load(path, &store[n], err, sizeof(err))) {
			fprintf(stderr, "govctl report: %s\n", err);
			goto free_runs;
		}
		runs[n] = &store[n];
		n++;
	}
	size_t n_cmdline = n;
	if ((ret = add_alternatives(alts, n_alts, store, runs, &n)) != GOVCTL_EXIT_OK)
		goto free_runs;
	ret = GOVCTL_EXIT_FAIL;
	char cmd[8192];
	command_line(cmd, sizeof(cmd), argv + optind, nargs, baseline, alt_args, n_alt_args);
	char ts[64];
	generated_at(ts, sizeof(ts));
	const struct rp_build_meta meta = { .command = cmd,
					    .generated_by = "govctl report " GOVD_VERSION,
					    .generated_at = ts,
					    .source_commit = GOVD_SOURCE_COMMIT };
	struct rp_build_result res;
	char berr[1400];
	int brc = rp_build(runs, n, bi, n_cmdline, &meta, &res, berr, sizeof(berr));
	if (brc) {
		fprintf(stderr, "govctl report: %s\n", berr);
		goto free_runs;
	}
	size_t wi;
	json_t *w;
	json_array_foreach(res.warnings, wi, w)
		fprintf(stderr, "govctl report: warning: %s\n", json_string_value(w));
	bi = res.bi;
	const struct rp_run *b = runs[bi];
	json_t *rep = res.report;

	if (!out_dir_ok(out)) {
		rp_build_result_free(&res);
		goto free_runs;
	}
	struct rp_plots plots;
	rp_make_plots(json_object_get(rep, "figures"), &plots);
	if (plots.n && !plots.svg[0])
		fprintf(stderr, "govctl report: warning: no plots: %s\n", plots.why[0]);
	int bad = write_outputs(out, rep, &plots, key);
	rp_plots_free(&plots);
	if (!bad) {
		printf("%s: %s vs %s: tokens/J %.4f vs %.4f (%+.1f%%), %s; %s evidence, %zu paired seed(s)\n",
		       rp_verdict_name(res.verdict), runs[0]->label, b->label, runs[0]->tpj, b->tpj,
		       100 * res.gain, rp_class_name(res.run_class), rp_evidence_name(res.evidence),
		       res.paired_seeds);
		printf("report: %s/report.html, %s/report.md, %s/report.json%s\n", out, out, out,
		       key ? " (signed: report.json.sig)" : "");
	}
	rp_build_result_free(&res);
	ret = bad ? GOVCTL_EXIT_FAIL : GOVCTL_EXIT_OK;
free_runs:
	for (size_t i = 0; i < RP_MAX_RUNS && store; i++)
		rp_run_free(&store[i]);
free_all:
	for (size_t a = 0; a < n_alts; a++)
		free(alts[a]);
	free(store);
	return ret;
}
