/* govd: the governor daemon (docs/daemon.md). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/ycfg.h"
#include "governor/daemon/daemon.h"

#define EXIT_USAGE 2

struct notifier {
	uint64_t watchdog_every_ms; /* 0: no watchdog */
	uint64_t last_watchdog_ms;
};

/* WATCHDOG=1 at most twice per WatchdogSec, as sd_watchdog_enabled(3)
 * suggests; every other state goes out as is. */
static void notify(void *ctx, const char *state)
{
	struct notifier *n = ctx;
	if (!strcmp(state, "WATCHDOG=1")) {
		uint64_t now = govd_mono_ms();
		if (!n->watchdog_every_ms || now - n->last_watchdog_ms < n->watchdog_every_ms)
			return;
		n->last_watchdog_ms = now;
	}
	sd_notify(0, state);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: govd --config FILE [--dry-run] [--check] [--log-level LEVEL]\n"
		   "       govd --help | --version\n"
		   "  --dry-run    compute and log every decision, write nothing to any device\n"
		   "  --check      load and check the config and its policies, then exit\n"
		   "  --log-level  error|warning|notice|info|debug (overrides the config)\n"
		   "More: man govd, man govd.yaml, man govd-policy.\n");
}

static void print_diags(const struct diag_list *d)
{
	diag_print(d, stderr);
}

static int check(const char *path)
{
	struct diag_list dl = { 0 };
	struct daemon_plan p;
	int rc = daemon_plan_load(path, false, &p, &dl);
	if (rc == 0) {
		for (size_t i = 0; i < p.cfg->n_devices; i++)
			if (!hal_backend_find(p.cfg->dev[i].backend, &dl))
				rc = -ENOTSUP;
		if (!rc)
			rc = daemon_plan_check(&p, &dl);
	}
	print_diags(&dl);
	diag_clear(&dl);
	if (rc) {
		daemon_plan_free(&p);
		fprintf(stderr, "govd: %s: not valid\n", path);
		return 1;
	}
	printf("%s: ok: %zu device(s), period %u ms, budget %s", path, p.cfg->n_devices,
	       p.period_ms, p.cfg->budget_w > 0 ? "" : "none");
	if (p.cfg->budget_w > 0)
		printf("%.0f W", p.cfg->budget_w);
	printf("\n");
	for (size_t i = 0; i < p.cfg->n_devices; i++)
		printf("  %s: %s, policy %s (%s)\n", p.cfg->dev[i].name, p.cfg->dev[i].backend,
		       p.pol[i]->name, p.pol[i]->hash_hex);
	daemon_plan_free(&p);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "check", no_argument, NULL, 'k' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL;
	bool dry_run = false, only_check = false, have_level = false;
	enum log_level level = LOG_NOTICE;
	int c;

	opterr = 0; /* our messages: a missing argument, or the nearest option */
	while ((c = getopt_long(argc, argv, ":c:nhV", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'n':
			dry_run = true;
			break;
		case 'k':
			only_check = true;
			break;
		case 'l':
			if (log_level_parse(optarg, &level) < 0) {
				fprintf(stderr, "govd: unknown log level '%s'\n", optarg);
				usage(stderr);
				return EXIT_USAGE;
			}
			have_level = true;
			break;
		case 'V':
			printf("govd %s\n", GOVD_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			fprintf(stderr, "govd: option '%s' needs an argument\n",
				optopt == 'c' ? "--config" : argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		default: {
			static const char *const names[] = { "--config",  "--dry-run", "--check",
							     "--log-level", "--version", "--help",
							     NULL };
			/* optopt: an unknown short option (maybe inside "-nx"); 0: a long one. */
			char shortopt[3] = { '-', (char)optopt, '\0' };
			const char *bad = optopt ? shortopt : argv[optind - 1];
			const char *near = optopt ? NULL : ycfg_closest(bad, names);
			fprintf(stderr, "govd: unknown option '%s'%s%s%s\n", bad,
				near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
			usage(stderr);
			return EXIT_USAGE;
		}
		}
	}
	if (optind < argc || !config) {
		if (optind < argc)
			fprintf(stderr, "govd: unexpected argument '%s'\n", argv[optind]);
		else
			fprintf(stderr, "govd: --config is required\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	log_init(LOG_NOTICE, NULL);
	if (only_check)
		return check(config);

	int rc = daemon_block_signals();
	if (rc) {
		log_err("blocking signals: %s", strerror(-rc));
		return 1;
	}
	struct notifier nt = { 0 };
	uint64_t usec = 0;
	if (sd_watchdog_enabled(0, &usec) > 0)
		nt.watchdog_every_ms = usec / 2000;
	struct daemon_hooks hooks = { .ctx = &nt, .notify = notify };
	struct diag_list dl = { 0 };
	struct daemon *d = calloc(1, sizeof(*d));
	if (!d)
		return 1;
	rc = daemon_init(d, config, dry_run, &hooks, &dl);
	print_diags(&dl);
	diag_clear(&dl);
	if (rc) {
		log_err("not started: %s", strerror(-rc));
		free(d);
		return 1;
	}
	if (have_level) {
		d->log_level_cli_set = true;
		d->log_level_cli = level;
		log_set_level(level);
	}
	int code = daemon_run(d);
	daemon_fini(d);
	free(d);
	log_fini();
	return code;
}
