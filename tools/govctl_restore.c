/* govctl restore: put back the original device settings a govd run recorded
 * in its state file and did not restore (crash, kill -9, failed restore).
 * systemd runs it as ExecStopPost, so it must be quiet and succeed when
 * there is nothing to do. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "common/fsafe.h"

#include "governor/daemon/config.h"
#include "governor/daemon/daemon.h"
#include "governor/daemon/statefile.h"
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
		/* as govd named the devices: one per GPU of an `all` entry */
		if (config_load(config, &cfg, &d) || config_expand(cfg, &d)) {
			govctl_print_diags(&d);
			diag_clear(&d);
			config_free(cfg);
			return GOVCTL_EXIT_FAIL;
		}
		snprintf(path, sizeof(path), "%s", cfg->state_file);
	}
	bool found = false;
	struct statefile_result res = { 0 };
	int rc = 0, lock_fd = -1;
	long holder;
	struct fsafe_err fe;
	/* Nothing there: nothing to lock or restore (ExecStopPost's usual case).
	 * Otherwise the file must be trusted (it directs root writes) and no
	 * live govd may hold it: one writer per device. */
	int t = fsafe_trusted_file(path, &fe);
	if (t == -ENOENT)
		goto done;
	if (t) {
		fprintf(stderr, "govctl restore: %s: refused: %s\n", path, fe.msg);
		config_free(cfg);
		return GOVCTL_EXIT_FAIL;
	}
	if ((rc = statefile_lock(path, &lock_fd, &holder, &d)) == 0)
		rc = daemon_restore_for(path, cfg, &found, &res, &d);
	statefile_unlock(lock_fd);
done:
	config_free(cfg);
	govctl_print_diags(&d);
	diag_clear(&d);
	if (rc == -EBUSY) {
		fprintf(stderr, "govctl restore: %s: govd pid %ld is running on it; nothing restored\n",
			path, holder);
		return GOVCTL_EXIT_FAIL;
	}
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
