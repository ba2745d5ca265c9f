/* govctl restore: put back the original device settings a govd run recorded
 * in its state file and did not restore (crash, kill -9, failed restore).
 * systemd runs it as ExecStopPost, so it must be quiet and succeed when
 * there is nothing to do. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "governor/config.h"
#include "governor/daemon.h"
#include "tools/govctl.h"

static void restore_usage(FILE *f)
{
	fprintf(f, "usage: govctl restore [--state FILE | --config FILE]\n"
		   "  restores every device recorded in govd's state file (default %s,\n"
		   "  or the config's state_file), then removes the file; nothing to do is success\n",
		   CONFIG_DEFAULT_STATE_FILE);
}

int govctl_restore(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL, *config = NULL;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			state = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'h':
			restore_usage(stdout);
			return GOVCTL_EXIT_OK;
		default:
			restore_usage(stderr);
			return GOVCTL_EXIT_USAGE;
		}
	}
	if (optind < argc || (state && config)) {
		fprintf(stderr, "govctl restore: %s\n",
			optind < argc ? "unexpected argument" : "give --state or --config, not both");
		restore_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}

	struct diag_list d = { 0 };
	struct config *cfg = NULL;
	char path[CONFIG_PATH_LEN];
	snprintf(path, sizeof(path), "%s", state ? state : CONFIG_DEFAULT_STATE_FILE);
	if (config) {
		if (config_load(config, &cfg, &d)) {
			govctl_print_diags(&d);
			diag_clear(&d);
			return GOVCTL_EXIT_FAIL;
		}
		snprintf(path, sizeof(path), "%s", cfg->state_file);
		config_free(cfg);
	}
	bool found;
	struct statefile_result res;
	int rc = daemon_restore_state(path, &found, &res, &d);
	govctl_print_diags(&d);
	diag_clear(&d);
	if (rc) {
		fprintf(stderr, "govctl restore: %s: %zu of %zu device(s) not restored (%s); the state "
				"file stays\n",
			path, res.failed, res.devices, strerror(rc < 0 ? -rc : rc));
		return GOVCTL_EXIT_FAIL;
	}
	if (!found)
		printf("%s: no state file, nothing to restore\n", path);
	else
		printf("%s: restored %zu device(s), state file removed\n", path, res.restored);
	return GOVCTL_EXIT_OK;
}
