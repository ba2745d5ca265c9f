/* govctl qualify: the offline precision qualification run, simulated. Each
 * slice's held-out set is served in both precisions and compared; every
 * prompt is a mismatch with the slice's true INT8 drop (the scenario's, at
 * --at seconds, quality drift events applied). Prints the prior a policy
 * carries (quality.slices.<name>.offline_samples / offline_mismatches) with
 * the command that measured it, so no policy copies a true drop. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "common/rng.h"
#include "plant_models/quality.h"
#include "plant_models/scenario.h"
#include "tools/govctl.h"

#define QUALIFY_MAX_SAMPLES 100000000ull

static void q_usage(FILE *f)
{
	fprintf(f, "usage: govctl qualify --scenario FILE [--samples N] [--seed N] [--at S]\n"
		   "  draws each slice's offline qualification samples (N per slice, default\n"
		   "  5000) from its true INT8 drop at time S (default 0) and prints the\n"
		   "  quality.slices prior for a policy, with this command as a comment\n");
}

/* One stream per slice name, so adding a slice never changes another's draw. */
static uint64_t name_stream(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

int govctl_qualify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "scenario", required_argument, NULL, 's' }, { "samples", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 'S' },     { "at", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },	      { NULL, 0, NULL, 0 },
	};
	const char *scen = NULL;
	uint64_t n = 5000, seed = 1;
	double at_s = 0;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			scen = optarg;
			break;
		case 'n':
			if (!govctl_parse_u64(optarg, &n) || n < 1 || n > QUALIFY_MAX_SAMPLES) {
				fprintf(stderr, "govctl qualify: --samples wants 1..%llu, got '%s'\n",
					QUALIFY_MAX_SAMPLES, optarg);
				return GOVCTL_EXIT_USAGE;
			}
			break;
		case 'S':
			if (!govctl_parse_u64(optarg, &seed)) {
				fprintf(stderr, "govctl qualify: --seed wants an unsigned integer, got '%s'\n",
					optarg);
				return GOVCTL_EXIT_USAGE;
			}
			break;
		case 'a':
			if (!govctl_parse_double(optarg, &at_s) || at_s < 0) {
				fprintf(stderr, "govctl qualify: --at wants seconds >= 0, got '%s'\n", optarg);
				return GOVCTL_EXIT_USAGE;
			}
			break;
		case 'h':
			q_usage(stdout);
			return GOVCTL_EXIT_OK;
		default:
			q_usage(stderr);
			return GOVCTL_EXIT_USAGE;
		}
	}
	if (optind < argc || !scen) {
		fprintf(stderr, optind < argc ? "govctl qualify: unexpected argument '%s'\n"
					      : "govctl qualify: --scenario is required\n",
			optind < argc ? argv[optind] : "");
		q_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}
	struct scenario *s = NULL;
	struct diag_list d = { 0 };
	int rc = scenario_load(scen, &s, &d);
	govctl_print_diags(&d);
	diag_clear(&d);
	if (rc)
		return GOVCTL_EXIT_FAIL;
	double drop[2][PLANT_MAX_SLICES]; /* [1]: FP8, where the server loads it */
	for (uint32_t i = 0; i < s->n_slices; i++) {
		drop[0][i] = s->slices[i].int8_drop;
		drop[1][i] = s->slices[i].fp8_drop;
	}
	for (size_t e = 0; e < s->n_events; e++)
		if (s->events[e].kind == EV_QUALITY_DRIFT && s->events[e].at_s <= at_s &&
		    (s->events[e].duration_s == 0 || s->events[e].at_s + s->events[e].duration_s > at_s))
			drop[s->events[e].fp8][s->events[e].slice] = s->events[e].value;
	struct rng root;
	rng_seed(&root, seed);
	char at[48] = "";
	if (at_s > 0)
		snprintf(at, sizeof(at), " --at %g", at_s);
	printf("# govctl qualify --scenario %s --samples %llu --seed %llu%s\n", scen,
	       (unsigned long long)n, (unsigned long long)seed, at);
	printf("quality:\n  slices:\n");
	for (uint32_t i = 0; i < s->n_slices; i++) {
		struct rng r = rng_fork(&root, name_stream(s->slices[i].name));
		uint64_t k = quality_qualify(drop[0][i], n, &r);
		printf("    %s: {offline_samples: %llu, offline_mismatches: %llu", s->slices[i].name,
		       (unsigned long long)n, (unsigned long long)k);
		/* FP8 on the same held-out set, after INT8 (INT8's draws unchanged). */
		if (s->server.fp8_engine)
			printf(", fp8_offline_samples: %llu, fp8_offline_mismatches: %llu",
			       (unsigned long long)n,
			       (unsigned long long)quality_qualify(drop[1][i], n, &r));
		printf("}\n");
	}
	scenario_free(s);
	return GOVCTL_EXIT_OK;
}
