/* govd's deployment config (configs/sim.yaml, docs/daemon.md, the language of
 * configs/schema/govd-config.schema.json): devices and their backends, the
 * policy each runs, the node power budget, where the state file and the
 * decision logs go, the metrics endpoint and the control socket.
 *
 * Loading is strict and a transaction like the policy loader: unknown keys,
 * wrong types and out-of-range values are errors with file:line:col and the
 * key path; every problem of the file is reported in one pass; on error
 * nothing is returned. Relative paths of `policy`, `state_file` and
 * `decision_log.dir` are resolved against the config file's directory;
 * backend `options` are handed to the backend verbatim. */
#ifndef GOVD_GOVERNOR_CONFIG_H
#define GOVD_GOVERNOR_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"
#include "common/log.h"
#include "governor/daemon/ctlsock.h"
#include "governor/fleet/fleet_cfg.h"
#include "hal/hal.h"

#define CONFIG_MAX_DEVICES 64 /* BUDGET_MAX_DEVICES */
#define CONFIG_MAX_OPTS 32
#define CONFIG_PATH_LEN 4096

struct config_device {
	char name[HAL_NAME_LEN];
	char backend[32];
	char policy_path[CONFIG_PATH_LEN]; /* resolved; the node's policy unless overridden */
	double weight;                     /* share of the node budget, by request x weight */
	double time_scale;                 /* sim only: plant seconds per real second */
	size_t n_opts;
	char *keys[CONFIG_MAX_OPTS], *values[CONFIG_MAX_OPTS];
	int line, col;                     /* of the entry, for messages about it */
	int policy_line, policy_col;       /* of the policy key that names its policy */
};

struct config {
	char path[CONFIG_PATH_LEN];
	char node[HAL_NAME_LEN];
	char policy_path[CONFIG_PATH_LEN]; /* resolved; "" when every device names its own */
	double budget_w; /* node power budget over all devices' power limits; 0: none */
	bool dry_run;
	/* Reload when a file in the config's folder changes (a Kubernetes
	 * ConfigMap's update swaps its ..data link there): as SIGHUP does. */
	bool reload_on_change;
	enum log_level log_level;
	char state_file[CONFIG_PATH_LEN];
	struct {
		char dir[CONFIG_PATH_LEN]; /* "": no decision log */
		uint64_t max_bytes;
		unsigned keep;
		/* compact writes a decision record only when
		 * the decision changes, plus one every heartbeat_s; compress gzips
		 * rotated files (docs/decision-log.md, "Size and retention"). */
		bool compact;
		unsigned heartbeat_s;
		bool compress;
	} declog;
	struct {
		bool enabled;
		char listen[64]; /* "ADDR:PORT" or "[V6ADDR]:PORT", numeric */
	} metrics;
	struct {
		bool enabled;
		char socket[CONFIG_PATH_LEN];
		uint32_t mode;
		gid_t group;        /* socket file's group; (gid_t)-1: as created */
		struct ctlsock_acl acl; /* names resolved at load (an unknown one is an error) */
	} control;
	size_t n_devices;
	struct config_device dev[CONFIG_MAX_DEVICES];
	struct fleet_config fleet; /* fleet.enabled: a `fleet:` section (docs/fleet.md) */
};

#define CONFIG_DEFAULT_STATE_FILE "/var/lib/govd/state.json"
#define CONFIG_DEFAULT_LOG_DIR "/var/log/govd"
#define CONFIG_DEFAULT_LOG_MAX_BYTES (64ull * 1024 * 1024)
#define CONFIG_DEFAULT_LOG_KEEP 4
#define CONFIG_DEFAULT_LOG_HEARTBEAT_S 10

int config_load(const char *path, struct config **out, struct diag_list *diags);
int config_load_string(const char *name, const char *text, size_t len, struct config **out,
		       struct diag_list *diags);
void config_free(struct config *c);
/* A reload may change policies, budget, weights, logging; not the devices
 * (name, backend, options, order) nor the state file. false + why when it
 * would. */
bool config_reloadable(const struct config *old, const struct config *neu, char *why, size_t len);
/* The same, with where in neu's file the change is (a device entry); 0:0
 * when it is not one entry. */
bool config_reloadable_at(const struct config *old, const struct config *neu, char *why,
			  size_t len, int *line, int *col);
/* Entries that select several devices (nvml `all: true`) replaced by one
 * entry per device, named by it (hal_expand: reads the hardware, writes
 * nothing). govd runs it before it plans; --check does not (it touches no
 * device). 0, or a negative errno with diags at the entry; on error c is
 * only fit for config_free. */
int config_expand(struct config *c, struct diag_list *diags);
/* The device's options as hal_dev_cfg wants them. */
void config_dev_cfg(const struct config_device *d, struct hal_dev_cfg *out);

#endif
