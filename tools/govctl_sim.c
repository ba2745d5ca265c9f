/* govctl sim: one scenario + policy + seed in virtual time. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "governor/sim.h"
#include "tools/govctl.h"

static void sim_usage(FILE *f)
{
	fprintf(f, "usage: govctl sim --scenario FILE --policy FILE [--seed N] [--out DIR] "
		   "[--duration S]\n"
		   "  writes summary.json, timeseries.csv, decisions.jsonl into DIR\n"
		   "  (default out/sim/<scenario>-<policy>-<seed>/)\n");
}

int govctl_sim(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "scenario", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "seed", required_argument, NULL, 'S' },
		{ "out", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sim_opts o = { 0 };
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
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
			if (!govctl_parse_double(optarg, &o.duration_s) || o.duration_s <= 0) {
				fprintf(stderr, "govctl sim: --duration wants seconds > 0, got '%s'\n",
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
	if (optind < argc) {
		fprintf(stderr, "govctl sim: unexpected argument '%s'\n", argv[optind]);
		sim_usage(stderr);
		return GOVCTL_EXIT_USAGE;
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
