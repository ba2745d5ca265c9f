/* govctl sim: one scenario + policy + seed in virtual time, or the oracle
 * for a scenario (--oracle, docs/oracle.md). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/fsafe.h"
#include "common/jsonx.h"
#include "governor/sim/oracle.h"
#include "governor/sim/sim.h"
#include "tools/govctl.h"

#define ORACLE_DEFAULT_POLICY "policies/balanced.yaml"

static void sim_usage(FILE *f)
{
	fprintf(f, "usage: govctl sim --scenario FILE --policy FILE [--seed N] [--out DIR] "
		   "[--duration S]\n"
		   "       govctl sim --oracle SCENARIO [--policy FILE] [--seed N] [-j N] [--out DIR]\n"
		   "                  [--duration S] [--clk-step MHZ] [--power-levels N]\n"
		   "  writes summary.json, timeseries.csv, decisions.jsonl into DIR\n"
		   "  (default out/sim/<scenario>-<policy>-<seed>/); with --oracle, the best\n"
		   "  feasible static point per SLA window into DIR/oracle.json (default\n"
		   "  out/oracle/<scenario>-<policy>-<seed>/, policy " ORACLE_DEFAULT_POLICY ")\n");
}

static void print_oracle(const struct oracle_result *r)
{
	const struct oracle_cand *bs = &r->cand[r->best_static];

	printf("oracle %s, policy %s, seed %llu: %.4f tokens/J (all rails %.4f), %zu candidates\n",
	       r->scenario, r->policy, (unsigned long long)r->seed, r->tokens_per_joule,
	       r->tokens_per_joule_all_rails, r->n_cand);
	printf("  windows: %zu (%zu not idle); a feasible point in %zu; no point met the SLA in %zu "
	       "(took the safe point closest to it); none was safe in %zu (took %s)\n",
	       r->n_windows, r->windows_judged, r->windows_feasible, r->windows_relaxed,
	       r->windows_fallback, r->cand[r->fallback].name);
	printf("  honest limit (feasible windows only, docs/oracle.md): %.4f tokens/J (all rails "
	       "%.4f); %zu infeasible windows left out\n",
	       r->tokens_per_joule_feasible, r->tokens_per_joule_feasible_all_rails,
	       r->n_windows - r->windows_feasible);
	printf("  tokens: %llu stitched from the chosen windows vs %llu demanded (%+.2f %%: windows "
	       "are not independent)\n",
	       (unsigned long long)r->tokens, (unsigned long long)r->demand_tokens,
	       r->demand_tokens ? 100.0 * ((double)r->tokens / (double)r->demand_tokens - 1) : 0);
	printf("  best single static point: %s, feasible in %zu/%zu windows, %.4f tokens/J\n",
	       bs->name, bs->windows_feasible, r->n_windows,
	       bs->energy_j > 0 ? (double)bs->tokens / bs->energy_j : 0);
	printf("  chosen points (windows):\n");
	for (size_t c = 0; c < r->n_cand; c++)
		if (r->cand[c].chosen)
			printf("    %-40s %5zu\n", r->cand[c].name, r->cand[c].chosen);
}

static int run_oracle(const struct oracle_opts *oo, const char *out_dir)
{
	struct diag_list d = { 0 };
	struct oracle_result r;
	char dir[4096], path[4200];
	int rc = oracle_run(oo, &r, &d);

	govctl_print_diags(&d);
	diag_clear(&d);
	if (rc) {
		fprintf(stderr, "govctl sim: oracle failed (%s)\n", strerror(rc < 0 ? -rc : rc));
		return GOVCTL_EXIT_FAIL;
	}
	if (out_dir)
		snprintf(dir, sizeof(dir), "%s", out_dir);
	else
		snprintf(dir, sizeof(dir), "out/oracle/%s-%s-%llu", r.scenario, r.policy,
			 (unsigned long long)r.seed);
	print_oracle(&r);
	int ret = GOVCTL_EXIT_OK;
	json_t *j = oracle_json(&r);
	snprintf(path, sizeof(path), "%s/oracle.json", dir);
	if ((rc = fsafe_mkdirs(dir)) || !j ||
	    jsonx_dump_file(j, path, JSON_INDENT(2) | JSON_REAL_PRECISION(10))) {
		fprintf(stderr, "govctl sim: cannot write %s\n", path);
		ret = GOVCTL_EXIT_FAIL;
	} else {
		printf("outputs: %s\n", path);
	}
	json_decref(j);
	oracle_result_free(&r);
	return ret;
}

int govctl_sim(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) /* the fleet scenario: tools/govctl_fleet_sim.c */
		if (!strcmp(argv[i], "--fleet"))
			return govctl_fleet_sim(argc, argv);
	static const struct option opts[] = {
		{ "scenario", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "seed", required_argument, NULL, 'S' },
		{ "out", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "oracle", required_argument, NULL, 'O' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "clk-step", required_argument, NULL, 'c' },
		{ "power-levels", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sim_opts o = { 0 };
	struct oracle_opts oo = { .jobs = 1 };
	const char *oracle = NULL;
	uint64_t u;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "j:h", opts, NULL)) != -1) {
		switch (c) {
		case 'O':
			oracle = optarg;
			break;
		case 'j':
			if (!govctl_parse_u64(optarg, &u) || u < 1 || u > 256) {
				fprintf(stderr, "govctl sim: -j wants 1..256, got '%s'\n", optarg);
				sim_usage(stderr);
				return GOVCTL_EXIT_USAGE;
			}
			oo.jobs = (unsigned)u;
			break;
		case 'c':
			if (!govctl_parse_double(optarg, &oo.clk_step_mhz) || oo.clk_step_mhz < 15) {
				fprintf(stderr, "govctl sim: --clk-step wants MHz >= 15, got '%s'\n",
					optarg);
				sim_usage(stderr);
				return GOVCTL_EXIT_USAGE;
			}
			break;
		case 'P':
			if (!govctl_parse_u64(optarg, &u) || u > 32) {
				fprintf(stderr, "govctl sim: --power-levels wants 0..32, got '%s'\n",
					optarg);
				sim_usage(stderr);
				return GOVCTL_EXIT_USAGE;
			}
			oo.power_levels = u ? (unsigned)u : ORACLE_NO_POWER_LEVELS;
			break;
		case 's':
			o.scenario_path = optarg;
			break;
		case 'p':
			o.policy_path = optarg;
			break;
		case 'S':
			if (!govctl_parse_u64(optarg, &o.seed)) {
				fprintf(stderr, "govctl sim: --seed wants an unsigned integer, got '%s'\n",
					optarg);
				sim_usage(stderr);
				return GOVCTL_EXIT_USAGE;
			}
			o.have_seed = true;
			break;
		case 'o':
			o.out_dir = optarg;
			break;
		case 'd':
			/* the scenario's own bound (scenario.duration_s) */
			if (!govctl_parse_double(optarg, &o.duration_s) || !(o.duration_s > 0) ||
			    o.duration_s > 30 * 86400.0) {
				fprintf(stderr,
					"govctl sim: --duration wants seconds in (0, 2592000] (30 days), "
					"got '%s'\n",
					optarg);
				sim_usage(stderr);
				return GOVCTL_EXIT_USAGE;
			}
			break;
		case 'h':
			sim_usage(stdout);
			return GOVCTL_EXIT_OK;
		default:
			sim_usage(stderr);
			return GOVCTL_EXIT_USAGE;
		}
	}
	/* Relative paths not found here may be installed ones (/usr/share/govd). */
	char sbuf[512], pbuf[512], obuf[512], dbuf[512];
	o.scenario_path = govctl_data_file(o.scenario_path, sbuf, sizeof(sbuf));
	o.policy_path = govctl_data_file(o.policy_path, pbuf, sizeof(pbuf));
	oracle = govctl_data_file(oracle, obuf, sizeof(obuf));
	if (optind < argc) {
		fprintf(stderr, "govctl sim: unexpected argument '%s'\n", argv[optind]);
		sim_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}
	if (oracle) {
		if (o.scenario_path) {
			fprintf(stderr, "govctl sim: --oracle names the scenario; drop --scenario\n");
			sim_usage(stderr);
			return GOVCTL_EXIT_USAGE;
		}
		oo.scenario_path = oracle;
		oo.policy_path = o.policy_path ? o.policy_path
					       : govctl_data_file(ORACLE_DEFAULT_POLICY, dbuf, sizeof(dbuf));
		oo.seed = o.seed;
		oo.have_seed = o.have_seed;
		oo.duration_s = o.duration_s;
		return run_oracle(&oo, o.out_dir);
	}
	if (!o.scenario_path || !o.policy_path) {
		fprintf(stderr, "govctl sim: --scenario and --policy are required\n");
		sim_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}

	struct diag_list d = { 0 };
	struct sim_result r;
	int rc = sim_run(&o, &r, &d);
	govctl_print_diags(&d);
	diag_clear(&d);
	if (rc) {
		fprintf(stderr, "govctl sim: failed (%s)\n", strerror(rc < 0 ? -rc : rc));
		return GOVCTL_EXIT_FAIL;
	}
	printf("%s %s seed %llu: %.0f s simulated, %llu tokens, %.4f tokens/J%s\n", r.scenario,
	       r.policy, (unsigned long long)r.seed, r.sim_s, (unsigned long long)r.tokens_generated,
	       r.tokens_per_joule, r.failed ? ", FAILED (thermal shutdown)" : "");
	printf("outputs: %s/\n", r.out_dir);
	return GOVCTL_EXIT_OK;
}
