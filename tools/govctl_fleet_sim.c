/* govctl sim --fleet: the fleet simulation (governor/sim/fleet_sim.h,
 * docs/fleet.md). Simulated figures: say so wherever they go. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "governor/sim/fleet_sim.h"
#include "tools/govctl.h"

#define TRACE_NAME "AzureLLMInferenceTrace2023_code.csv"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: govctl sim --fleet [--nodes N] [--per-node M] [--hours H] [--budget-w W]\n"
		"                  [--trace FILE] [--seed N] [--high-share F] [--step-s S]\n"
		"                  [--mean-util F] [--fit] [--json]\n"
		"  N nodes x M simulated accelerators, each node its own slice of the trace\n"
		"  (default $GOVD_SHARED_DATA or ../shared/data/" TRACE_NAME "), under one\n"
		"  group budget (default N x M x 420 W), for the static split, POLCA-style\n"
		"  two-threshold capping and govd's allocator. --fit: for each policy the most\n"
		"  nodes that keep high-priority SLA loss <= 1 %% with no step over budget.\n"
		"  SIMULATED (reduced-fidelity model, docs/fleet.md).\n");
}

static json_t *res_json(const struct fleet_sim_result *r)
{
	return json_pack("{s:I, s:f, s:f, s:f, s:f, s:I, s:f, s:f}", "accelerators",
			 (json_int_t)r->accelerators, "hp_sla_loss", r->hp_loss, "lp_sla_loss",
			 r->lp_loss, "hp_served", r->hp_served, "lp_served", r->lp_served,
			 "over_budget_steps", (json_int_t)r->over_budget_steps, "max_draw_w",
			 r->max_draw_w, "mean_draw_w", r->mean_draw_w);
}

/* --fit: the most nodes policy p serves at <= 1 % high-priority SLA loss,
 * against static's (the first). */
static void fit_one(const struct fleet_sim_cfg *c, const struct fleet_trace *t, int p,
		    size_t *fit_static, json_t *pol, bool json, clock_t c0)
{
	struct fleet_sim_result r;
	size_t n = fleet_sim_fit(c, t, (enum fleet_policy)p, 0.01, 4 * c->nodes, &r);
	if (p == FLEET_STATIC)
		*fit_static = n;
	double more = *fit_static ? 100.0 * ((double)n / (double)*fit_static - 1) : 0;
	json_t *j = res_json(&r);
	json_object_set_new(j, "fit_nodes", json_integer((json_int_t)n));
	json_object_set_new(j, "fit_accelerators", json_integer((json_int_t)(n * c->per_node)));
	json_object_set_new(j, "more_than_static_pct", json_real(more));
	json_object_set_new(pol, fleet_policy_names[p], j);
	if (!json)
		printf("  %-7s fits %5zu accelerators (%4zu nodes) at <= 1 %% high-priority SLA "
		       "loss: %+.1f %% vs static; there hp loss %.3f %%, lp loss %.2f %%, "
		       "max draw %.0f W (%.1f s CPU)\n",
		       fleet_policy_names[p], n * c->per_node, n, more, 100 * r.hp_loss,
		       100 * r.lp_loss, r.max_draw_w, (double)(clock() - c0) / CLOCKS_PER_SEC);
}

int govctl_fleet_sim(int argc, char **argv)
{
	enum { O_FLEET = 256, O_NODES, O_PER, O_HOURS, O_BUDGET, O_TRACE, O_SEED, O_HIGH, O_FIT, O_JSON, O_STEP, O_UTIL };
	static const struct option lo[] = {
		{ "fleet", no_argument, NULL, O_FLEET },	 { "nodes", required_argument, NULL, O_NODES },
		{ "per-node", required_argument, NULL, O_PER }, { "hours", required_argument, NULL, O_HOURS },
		{ "budget-w", required_argument, NULL, O_BUDGET },
		{ "trace", required_argument, NULL, O_TRACE },	 { "seed", required_argument, NULL, O_SEED },
		{ "high-share", required_argument, NULL, O_HIGH },
		{ "fit", no_argument, NULL, O_FIT },
		{ "step-s", required_argument, NULL, O_STEP },
		{ "mean-util", required_argument, NULL, O_UTIL },		 { "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },		 { 0 },
	};
	struct fleet_sim_cfg c;
	char trace[4096];
	bool fit = false, json = false, budget_set = false;
	uint64_t u;
	double d;
	int o;

	fleet_sim_defaults(&c);
	const char *sd = getenv("GOVD_SHARED_DATA");
	snprintf(trace, sizeof(trace), "%s/" TRACE_NAME, sd && *sd ? sd : "../shared/data");
	optind = 1;
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case O_FLEET: break;
		case O_NODES:
			if (!govctl_parse_u64(optarg, &u) || u < 1 || u > 4096)
				goto bad;
			c.nodes = u;
			break;
		case O_PER:
			if (!govctl_parse_u64(optarg, &u) || u < 1 || u > 64)
				goto bad;
			c.per_node = u;
			break;
		case O_HOURS:
			if (!govctl_parse_double(optarg, &d) || !(d > 0) || d > 24 * 30)
				goto bad;
			c.hours = d;
			break;
		case O_BUDGET:
			if (!govctl_parse_double(optarg, &d) || !(d > 0) || d > 1e9)
				goto bad;
			c.budget_w = d;
			budget_set = true;
			break;
		case O_TRACE: snprintf(trace, sizeof(trace), "%s", optarg); break;
		case O_SEED:
			if (!govctl_parse_u64(optarg, &u))
				goto bad;
			c.seed = u;
			break;
		case O_HIGH:
			if (!govctl_parse_double(optarg, &d) || d < 0 || d > 1)
				goto bad;
			c.high_share = d;
			break;
		case O_FIT: fit = true; break;
		case O_STEP:
			if (!govctl_parse_double(optarg, &d) || d < 1 || d > 600 || d != (double)(long)d)
				goto bad;
			c.step_s = d;
			break;
		case O_UTIL:
			if (!govctl_parse_double(optarg, &d) || !(d > 0) || d > 1)
				goto bad;
			c.mean_util = d;
			break;
		case O_JSON: json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return GOVCTL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "govctl sim --fleet: unexpected argument '%s'\n", argv[optind]);
		return GOVCTL_EXIT_USAGE;
	}
	if (!budget_set)
		c.budget_w = (double)(c.nodes * c.per_node) * 420.0;

	struct diag_list dl = { 0 };
	struct fleet_trace t;
	if (fleet_trace_load(trace, &t, &dl)) {
		govctl_print_diags(&dl);
		diag_clear(&dl);
		return GOVCTL_EXIT_FAIL;
	}
	json_t *out = json_pack("{s:s, s:s, s:I, s:I, s:f, s:f, s:f, s:I}", "simulated",
				"reduced-fidelity fleet model (docs/fleet.md); not measured on hardware",
				"trace", trace, "nodes", (json_int_t)c.nodes, "per_node",
				(json_int_t)c.per_node, "hours", c.hours, "budget_w", c.budget_w,
				"high_share", c.high_share, "seed", (json_int_t)c.seed);
	json_t *pol = json_object();
	if (!json)
		printf("SIMULATED fleet: %zu nodes x %zu accelerators, %.0f h, budget %.0f W, trace %s "
		       "(%zu requests over %zu s, looped)\n",
		       c.nodes, c.per_node, c.hours, c.budget_w, trace, t.n_requests, t.n_s);
	size_t fit_static = 0;
	int rc = 0;
	for (int p = 0; p < FLEET_POLICY_N; p++) {
		struct fleet_sim_result r;
		clock_t c0 = clock();
		if (fit) {
			fit_one(&c, &t, p, &fit_static, pol, json, c0);
		} else {
			if (fleet_sim_run(&c, &t, (enum fleet_policy)p, &r)) {
				fprintf(stderr, "govctl sim --fleet: bad parameters\n");
				rc = GOVCTL_EXIT_USAGE;
				break;
			}
			json_object_set_new(pol, fleet_policy_names[p], res_json(&r));
			if (!json)
				printf("  %-7s hp SLA loss %.3f %%, lp SLA loss %.2f %%, served hp %.2f %% lp "
				       "%.2f %%, steps over budget %zu, draw max %.0f W mean %.0f W (%.1f s "
				       "CPU)\n",
				       fleet_policy_names[p], 100 * r.hp_loss, 100 * r.lp_loss,
				       100 * r.hp_served, 100 * r.lp_served, r.over_budget_steps,
				       r.max_draw_w, r.mean_draw_w, (double)(clock() - c0) / CLOCKS_PER_SEC);
		}
	}
	json_object_set_new(out, "policies", pol);
	if (json && !rc) {
		char *s = json_dumps(out, JSON_INDENT(1));
		puts(s ? s : "{}");
		free(s);
	}
	json_decref(out);
	fleet_trace_free(&t);
	return rc;
bad:
	for (const struct option *x = lo; x->name; x++)
		if (x->val == o)
			fprintf(stderr, "govctl sim --fleet: bad value for --%s: '%s'\n", x->name, optarg);
	return GOVCTL_EXIT_USAGE;
}
