/* govctl fleet: the group's state (status), its budget (set-budget) and the
 * allocator as a service (allocate); docs/fleet.md. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "governor/daemon/config.h"
#include "governor/fleet/fleet.h"
#include "tools/govctl.h"

static void fleet_usage(FILE *f)
{
	fprintf(f,
		"usage: govctl fleet status [--json] TARGET\n"
		"       govctl fleet set-budget WATTS TARGET\n"
		"       govctl fleet forget NODE TARGET   (a gone node is off: release its reserve)\n"
		"       govctl fleet allocate [--id NAME] [--period-ms N] [--ttl-s N] TARGET\n"
		"  TARGET: --config FILE (a govd config's fleet section), or\n"
		"          --endpoints URL[,URL...] --group NAME [--cluster NAME] [--timeout-ms N]\n");
}

struct target {
	char endpoints[FLEET_ENDPOINTS_LEN];
	char cluster[FLEET_ID_LEN], group[FLEET_ID_LEN];
	uint64_t timeout_ms, period_ms, ttl_s;
	double up, down;
	char id[FLEET_NAME_LEN];
	bool json;
	char tls_ca[FLEET_PATH_LEN], tls_cert[FLEET_PATH_LEN], tls_key[FLEET_PATH_LEN];
	char auth_user[64], auth_password_file[FLEET_PATH_LEN];
};

enum { O_CONFIG = 256, O_ENDPOINTS, O_CLUSTER, O_GROUP, O_TIMEOUT, O_JSON, O_ID, O_PERIOD, O_TTL };

static const struct option opts[] = {
	{ "config", required_argument, NULL, O_CONFIG },
	{ "endpoints", required_argument, NULL, O_ENDPOINTS },
	{ "cluster", required_argument, NULL, O_CLUSTER },
	{ "group", required_argument, NULL, O_GROUP },
	{ "timeout-ms", required_argument, NULL, O_TIMEOUT },
	{ "json", no_argument, NULL, O_JSON },
	{ "id", required_argument, NULL, O_ID },
	{ "period-ms", required_argument, NULL, O_PERIOD },
	{ "ttl-s", required_argument, NULL, O_TTL },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static int from_config(const char *path, struct target *t)
{
	struct diag_list d = { 0 };
	struct config *c = NULL;
	int rc = config_load(path, &c, &d);
	govctl_print_diags(&d);
	diag_clear(&d);
	if (rc)
		return GOVCTL_EXIT_FAIL;
	if (!c->fleet.enabled) {
		fprintf(stderr, "govctl fleet: %s has no fleet section\n", path);
		config_free(c);
		return GOVCTL_EXIT_FAIL;
	}
	snprintf(t->endpoints, sizeof(t->endpoints), "%s", c->fleet.endpoints);
	snprintf(t->cluster, sizeof(t->cluster), "%s", c->fleet.cluster);
	snprintf(t->group, sizeof(t->group), "%s", c->fleet.group);
	t->timeout_ms = c->fleet.timeout_ms;
	t->period_ms = c->fleet.period_ms;
	t->ttl_s = c->fleet.lease_ttl_s;
	t->up = c->fleet.up_frac;
	t->down = c->fleet.down_frac;
	snprintf(t->tls_ca, sizeof(t->tls_ca), "%s", c->fleet.tls_ca);
	snprintf(t->tls_cert, sizeof(t->tls_cert), "%s", c->fleet.tls_cert);
	snprintf(t->tls_key, sizeof(t->tls_key), "%s", c->fleet.tls_key);
	snprintf(t->auth_user, sizeof(t->auth_user), "%s", c->fleet.auth_user);
	snprintf(t->auth_password_file, sizeof(t->auth_password_file), "%s",
		 c->fleet.auth_password_file);
	config_free(c);
	return 0;
}

static bool segment_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

static bool copy_arg(char *dst, size_t len, const char *src, const char *what)
{
	if (strlen(src) >= len) {
		fprintf(stderr, "govctl fleet: %s too long (at most %zu characters)\n", what, len - 1);
		return false;
	}
	snprintf(dst, len, "%s", src);
	return true;
}

/* Parses the flags into t; argv[optind...] left for the caller. */
static int parse(int argc, char **argv, struct target *t)
{
	const char *config = NULL;
	int c;
	memset(t, 0, sizeof(*t));
	snprintf(t->cluster, sizeof(t->cluster), "default");
	t->timeout_ms = 1000;
	t->period_ms = 500;
	t->ttl_s = 5;
	t->up = FLEET_PARAMS_DEFAULT.up_frac;
	t->down = FLEET_PARAMS_DEFAULT.down_frac;
	struct target cli = { 0 };
	bool set_ep = false, set_cl = false, set_gr = false, set_to = false, set_pe = false, set_ttl = false;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_CONFIG: config = optarg; break;
		case O_ENDPOINTS:
			if (!copy_arg(cli.endpoints, sizeof(cli.endpoints), optarg, "--endpoints"))
				return GOVCTL_EXIT_USAGE;
			set_ep = true;
			break;
		case O_CLUSTER:
			if (!copy_arg(cli.cluster, sizeof(cli.cluster), optarg, "--cluster"))
				return GOVCTL_EXIT_USAGE;
			set_cl = true;
			break;
		case O_GROUP:
			if (!copy_arg(cli.group, sizeof(cli.group), optarg, "--group"))
				return GOVCTL_EXIT_USAGE;
			set_gr = true;
			break;
		case O_TIMEOUT:
			if (!govctl_parse_u64(optarg, &cli.timeout_ms) || cli.timeout_ms < 10 ||
			    cli.timeout_ms > 60000) {
				fprintf(stderr, "govctl fleet: --timeout-ms: 10..60000\n");
				return GOVCTL_EXIT_USAGE;
			}
			set_to = true;
			break;
		case O_JSON: t->json = true; break;
		case O_ID:
			if (!copy_arg(t->id, sizeof(t->id), optarg, "--id"))
				return GOVCTL_EXIT_USAGE;
			break;
		case O_PERIOD:
			if (!govctl_parse_u64(optarg, &cli.period_ms) || cli.period_ms < 50 ||
			    cli.period_ms > 60000) {
				fprintf(stderr, "govctl fleet: --period-ms: 50..60000\n");
				return GOVCTL_EXIT_USAGE;
			}
			set_pe = true;
			break;
		case O_TTL:
			if (!govctl_parse_u64(optarg, &cli.ttl_s) || cli.ttl_s < 2 || cli.ttl_s > 3600) {
				fprintf(stderr, "govctl fleet: --ttl-s: 2..3600\n");
				return GOVCTL_EXIT_USAGE;
			}
			set_ttl = true;
			break;
		case 'h': fleet_usage(stdout); exit(0);
		default: fleet_usage(stderr); return GOVCTL_EXIT_USAGE;
		}
	}
	if (config) {
		int rc = from_config(config, t);
		if (rc)
			return rc;
	}
	if (set_ep)
		snprintf(t->endpoints, sizeof(t->endpoints), "%s", cli.endpoints);
	if (set_cl)
		snprintf(t->cluster, sizeof(t->cluster), "%s", cli.cluster);
	if (set_gr)
		snprintf(t->group, sizeof(t->group), "%s", cli.group);
	if (set_to)
		t->timeout_ms = cli.timeout_ms;
	if (set_pe)
		t->period_ms = cli.period_ms;
	if (set_ttl)
		t->ttl_s = cli.ttl_s;
	if (!t->endpoints[0] || !t->group[0]) {
		fprintf(stderr, "govctl fleet: no etcd: give --config FILE or --endpoints and --group\n");
		return GOVCTL_EXIT_USAGE;
	}
	if (!segment_ok(t->cluster) || !segment_ok(t->group)) {
		fprintf(stderr, "govctl fleet: cluster and group: letters, digits, '-', '_', '.'\n");
		return GOVCTL_EXIT_USAGE;
	}
	return 0;
}

static int open_etcd(const struct target *t, struct etcd *e, char *prefix, size_t len)
{
	if (etcd_init(e, t->endpoints, (long)t->timeout_ms)) {
		fprintf(stderr, "govctl fleet: --endpoints: %s\n", e->err);
		return GOVCTL_EXIT_USAGE;
	}
	etcd_set_tls(e, t->tls_ca, t->tls_cert, t->tls_key);
	char err[FLEET_PATH_LEN + 128];
	if (fleet_etcd_auth(e, t->auth_user, t->auth_password_file, err, sizeof(err))) {
		fprintf(stderr, "govctl fleet: %s\n", err);
		etcd_fini(e);
		return GOVCTL_EXIT_USAGE;
	}
	fleet_prefix(t->cluster, t->group, prefix, len);
	return 0;
}

static json_t *mw_json(uint64_t mw)
{
	return mw == FLEET_NO_GRANT ? json_null() : json_real((double)mw / 1000.0);
}

static int cmd_status(const struct target *t)
{
	struct etcd e;
	struct fleet_view v;
	char prefix[FLEET_PREFIX_LEN];
	int rc = open_etcd(t, &e, prefix, sizeof(prefix));
	if (rc)
		return rc;
	if (fleet_view_read(&e, prefix, &v)) {
		fprintf(stderr, "govctl fleet status: %s\n", e.err);
		etcd_fini(&e);
		return GOVCTL_EXIT_FAIL;
	}
	uint64_t draw = 0;
	for (size_t i = 0; i < v.n; i++)
		draw += v.node[i].rec.draw_mw;
	if (t->json) {
		json_t *nodes = json_array();
		for (size_t i = 0; i < v.n; i++) {
			const struct fleet_view_node *n = &v.node[i];
			json_array_append_new(
				nodes, json_pack("{s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s}",
						 "node", n->rec.name, "priority", n->rec.priority,
						 "grant_w", mw_json(n->grant_mw), "target_w",
						 mw_json(n->target_mw), "applied_w",
						 mw_json(n->rec.applied_mw), "draw_w",
						 mw_json(n->rec.draw_mw), "demand_w",
						 mw_json(n->rec.demand_mw), "floor_w",
						 mw_json(n->rec.floor_mw), "max_w", mw_json(n->rec.max_mw),
						 "safe_w", mw_json(n->safe_mw), "state", n->state));
		}
		json_t *res = json_array();
		for (size_t i = 0; i < v.n_reserved; i++)
			json_array_append_new(
				res, json_pack("{s:s, s:o, s:o, s:I}", "node", v.reserved[i].name, "reserved_w",
					       mw_json(v.reserved[i].mw), "safe_w",
					       mw_json(v.reserved[i].safe_mw), "hold_ms",
					       (json_int_t)v.reserved[i].hold_ms));
		json_t *o = json_pack("{s:s, s:o, s:s?, s:I, s:I, s:I, s:b, s:o, s:o, s:o, s:o, s:o, s:o}",
				      "prefix",
				      prefix, "budget_w",
				      v.have_budget ? mw_json(v.budget_mw) : json_null(), "allocator",
				      v.leader[0] ? v.leader : NULL, "epoch", (json_int_t)v.epoch,
				      "round", (json_int_t)v.round, "pending", (json_int_t)v.pending,
				      "infeasible", v.infeasible, "grants_sum_w",
				      v.have_grants ? mw_json(v.grants_sum_mw) : json_null(),
				      "grants_budget_w",
				      v.have_grants ? mw_json(v.grants_budget_mw) : json_null(),
				      "draw_sum_w", mw_json(draw), "nodes", nodes, "reserved_sum_w",
				      mw_json(v.reserved_sum_mw), "reserved", res);
		char *s = json_dumps(o, JSON_COMPACT);
		puts(s ? s : "{}");
		free(s);
		json_decref(o);
	} else {
		printf("group %s\n", prefix);
		if (v.have_budget)
			printf("  budget %.1f W, granted %.1f W, drawn %.1f W\n", (double)v.budget_mw / 1000.0,
			       (double)v.grants_sum_mw / 1000.0, (double)draw / 1000.0);
		else
			printf("  no budget set (govctl fleet set-budget)\n");
		printf("  allocator %s", v.leader[0] ? v.leader : "none");
		if (v.have_grants)
			printf(" (grants of epoch %" PRId64 ", round %" PRIu64 ", %" PRIu64
			       " node(s) still rising%s)",
			       v.epoch, v.round, v.pending, v.infeasible ? ", budget below the floors" : "");
		printf("\n  %-20s %4s %9s %9s %9s %9s %9s %9s %s\n", "node", "prio", "grant_W", "target_W",
		       "applied_W", "draw_W", "demand_W", "safe_W", "state");
		for (size_t i = 0; i < v.n; i++) {
			const struct fleet_view_node *n = &v.node[i];
			printf("  %-20s %4d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %s\n", n->rec.name,
			       n->rec.priority,
			       n->grant_mw == FLEET_NO_GRANT ? NAN : (double)n->grant_mw / 1000.0,
			       n->target_mw == FLEET_NO_GRANT ? NAN : (double)n->target_mw / 1000.0,
			       (double)n->rec.applied_mw / 1000.0, (double)n->rec.draw_mw / 1000.0,
			       (double)n->rec.demand_mw / 1000.0, (double)n->safe_mw / 1000.0, n->state);
		}
		for (size_t i = 0; i < v.n_reserved; i++)
			printf("  %-20s reserved %.1f W (gone; may still run: %s), safe %.1f W; "
			       "govctl fleet forget %s once it is off\n",
			       v.reserved[i].name, (double)v.reserved[i].mw / 1000.0,
			       v.reserved[i].hold_ms ? "its last grant" : "its safe budget",
			       (double)v.reserved[i].safe_mw / 1000.0, v.reserved[i].name);
	}
	fleet_view_free(&v);
	etcd_fini(&e);
	return 0;
}

static int cmd_set_budget(const struct target *t, const char *watts)
{
	double w;
	struct etcd e;
	char prefix[FLEET_PREFIX_LEN];
	if (!watts || !govctl_parse_double(watts, &w) || !(w > 0) || w > 1e9) {
		fprintf(stderr, "govctl fleet set-budget: WATTS must be a number in (0, 1e9]\n");
		return GOVCTL_EXIT_USAGE;
	}
	uint64_t mw = (uint64_t)llround(w * 1000.0);
	if (mw == 0) {
		fprintf(stderr, "govctl fleet set-budget: %s W rounds to 0 mW: a budget is at least "
				"1 mW (and at least the group's floors)\n", watts);
		return GOVCTL_EXIT_USAGE;
	}
	int rc = open_etcd(t, &e, prefix, sizeof(prefix));
	if (rc)
		return rc;
	/* Below the registered nodes' floors no node can follow its grant (each
	 * device stays at its minimum limit): refused, not written. */
	struct fleet_view v;
	rc = fleet_view_read(&e, prefix, &v);
	if (rc) {
		fprintf(stderr, "govctl fleet set-budget: reading the group: %s\n", e.err);
		etcd_fini(&e);
		return GOVCTL_EXIT_FAIL;
	}
	uint64_t floors = 0;
	for (size_t i = 0; i < v.n; i++)
		floors += v.node[i].rec.floor_mw;
	size_t n_nodes = v.n;
	fleet_view_free(&v);
	if (mw < floors) {
		fprintf(stderr,
			"govctl fleet set-budget: %.3f W is below the group's floors: %zu registered "
			"node(s) cannot run below %.3f W in all (their devices' minimum power limits); "
			"not written\n",
			(double)mw / 1000.0, n_nodes, (double)floors / 1000.0);
		etcd_fini(&e);
		return GOVCTL_EXIT_FAIL;
	}
	rc = fleet_set_budget(&e, prefix, mw);
	if (rc)
		fprintf(stderr, "govctl fleet set-budget: %s\n", e.err);
	else
		printf("%s: budget %.1f W (the allocator applies it next round)\n", prefix, w);
	etcd_fini(&e);
	return rc ? GOVCTL_EXIT_FAIL : 0;
}

static int cmd_forget(const struct target *t, const char *node)
{
	struct etcd e;
	char prefix[FLEET_PREFIX_LEN];
	int rc = open_etcd(t, &e, prefix, sizeof(prefix));
	if (rc)
		return rc;
	rc = fleet_forget(&e, prefix, node);
	if (rc)
		fprintf(stderr, "govctl fleet forget: %s\n", e.err);
	else
		printf("%s: %s forgotten: the allocator releases its reserve next round (only for a "
		       "node that is off: a running one may exceed the budget)\n",
		       prefix, node);
	etcd_fini(&e);
	return rc == -EINVAL ? GOVCTL_EXIT_USAGE : rc ? GOVCTL_EXIT_FAIL : 0;
}

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = sig; }

static int cmd_allocate(struct target *t)
{
	struct etcd e;
	struct fleet_allocator al;
	char prefix[FLEET_PREFIX_LEN];
	int rc = open_etcd(t, &e, prefix, sizeof(prefix));
	if (rc)
		return rc;
	if (!t->id[0]) {
		char host[48] = "host";
		gethostname(host, sizeof(host) - 1);
		snprintf(t->id, sizeof(t->id), "govctl@%s:%d", host, (int)getpid());
	}
	log_init(LOG_NOTICE, stderr);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	const struct fleet_params p = { .up_frac = t->up, .down_frac = t->down };
	fleet_allocator_init(&al, &e, prefix, t->id, (uint32_t)t->ttl_s, &p);
	log_notice("fleet %s: %s campaigns for allocation every %" PRIu64 " ms", prefix, t->id,
		   t->period_ms);
	bool failing = false;
	while (!stop_flag) {
		struct fleet_round fr;
		if (fleet_allocator_round(&al, govd_mono_ms(), &fr)) {
			if (!failing)
				log_warn("fleet %s: round failed: %s", prefix, e.err);
			failing = true;
		} else if (failing) {
			log_notice("fleet %s: etcd answers again", prefix);
			failing = false;
		}
		struct timespec ts = { .tv_sec = (time_t)(t->period_ms / 1000),
				       .tv_nsec = (long)(t->period_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL); /* a signal cuts it short */
	}
	fleet_allocator_resign(&al);
	log_notice("fleet %s: %s stopped (signal %d)", prefix, t->id, (int)stop_flag);
	etcd_fini(&e);
	log_fini();
	return 0;
}

int govctl_fleet(int argc, char **argv)
{
	struct target t;
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fleet_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? GOVCTL_EXIT_USAGE : 0;
	}
	const char *sub = argv[1];
	int rc = parse(argc - 1, argv + 1, &t);
	if (rc)
		return rc;
	char **rest = argv + 1 + optind;
	int nrest = argc - 1 - optind;
	if (!strcmp(sub, "status") && nrest == 0)
		return cmd_status(&t);
	if (!strcmp(sub, "set-budget") && nrest == 1)
		return cmd_set_budget(&t, rest[0]);
	if (!strcmp(sub, "allocate") && nrest == 0)
		return cmd_allocate(&t);
	if (!strcmp(sub, "forget") && nrest == 1)
		return cmd_forget(&t, rest[0]);
	fprintf(stderr, "govctl fleet: unknown subcommand or extra arguments: '%s'\n", sub);
	fleet_usage(stderr);
	return GOVCTL_EXIT_USAGE;
}
