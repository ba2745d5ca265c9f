/* The haproxy precision actuator: each slice is a HAProxy backend whose
 * servers are the replicas of each precision ("bf16", "fp8"); the
 * low-precision share of a slice becomes the servers' weights, set through
 * HAProxy's runtime API on its stats socket (`set weight be/srv W`, read
 * back with `show servers state be`; `show info` names the process).
 * Weights move in bounded steps (at most max_step per server per call of
 * hap_apply / hap_check, one per control period). The weights found before
 * the first write are the originals: hap_restore puts them back, and
 * hap_original_json gives them for the crash-safety state file. */
#ifndef GOVD_HAL_ROUTER_HAPROXY_H
#define GOVD_HAL_ROUTER_HAPROXY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HAP_MAX_SLICES 8
#define HAP_NAME_LEN 64
#define HAP_WEIGHT_MAX 256 /* HAProxy's own bound on a server weight */

/* One row of `show servers state`: only what the actuator needs. */
struct hap_server_row {
	char backend[HAP_NAME_LEN];
	char server[HAP_NAME_LEN];
	int uweight; /* srv_uweight: the weight set by config or `set weight` */
};

/* Parses the text of `show servers state [backend]`: a version line ("1"),
 * a "# be_id be_name ..." header naming the columns, then one row per
 * server. The columns are found by name in the header. Rows go to out (at
 * most max; *n is how many). 0; -EBADMSG (error says what and on which
 * line) for an unknown version, a missing header or column, a row with
 * too few fields or a weight that is not an integer in 0..256; -E2BIG over
 * max rows. */
int hap_parse_servers_state(const char *text, size_t len, struct hap_server_row *out, size_t max,
			    size_t *n, char *error, size_t error_len);
/* From the text of `show info`: Pid and Uptime_sec. 0 or -EBADMSG. */
int hap_parse_info(const char *text, size_t len, long *pid, uint64_t *uptime_s);

struct hap_slice_cfg {
	const char *backend;    /* HAProxy backend of this slice */
	const char *server_hi;  /* the full-precision replica (bf16) */
	const char *server_lo;  /* the low-precision replica (fp8, int8) */
};

struct hap_cfg {
	const char *socket_path;
	size_t n_slices;
	struct hap_slice_cfg slice[HAP_MAX_SLICES];
	unsigned total_weight; /* the two servers' weights add up to this (1..256) */
	unsigned max_step;     /* at most this change of one server's weight per step */
	uint32_t timeout_ms;   /* one runtime API command, connect to answer */
	/* every command of one period (hap_check, then hap_apply) within this
	 * (0: timeout_ms): a slow HAProxy costs the period at most this */
	uint32_t period_budget_ms;
	bool read_only;        /* a dry run: reads only; no step, fallback or restore writes */
};

struct hap_orig {
	int w_hi, w_lo;
};

struct hap {
	struct hap_cfg cfg;
	char path[108];
	char real[4096]; /* the socket path resolved at open: where govd's originals live */
	char names[HAP_MAX_SLICES][3][HAP_NAME_LEN];
	bool have_orig, wrote;
	struct hap_orig orig[HAP_MAX_SLICES];
	int cur_hi[HAP_MAX_SLICES], cur_lo[HAP_MAX_SLICES];  /* last written / read */
	int want_hi[HAP_MAX_SLICES], want_lo[HAP_MAX_SLICES]; /* target of the steps */
	bool have_want;
	long pid;
	uint64_t uptime_s;
	uint64_t deadline_ms; /* monotonic end of this period's budget; 0: none (restore) */
	bool stepped;         /* a weight moved this period: the next step waits for the next */
	bool fault_latched; /* a fault seen; the fallback was applied */
	uint64_t fault_count; /* detected (lost socket, restart, weight drift) */
	char err[640];
};

/* Connects once: records the HAProxy process (show info) and every slice's
 * weights as the originals (before any write). 0 or -errno, err says why
 * (a missing backend or server is -ENOENT). */
/* The configuration judged without I/O: 0, or -EINVAL with why in err and
 * the option it comes from in *key ("haproxy_server_low", ...). */
int hap_cfg_check(const struct hap_cfg *cfg, const char **key, char *err, size_t len);
int hap_open(struct hap *h, const struct hap_cfg *cfg);
/* Takes recorded originals (from hap_original_json) instead of what open
 * found, and marks the router written so hap_restore puts them back. */
int hap_adopt_original(struct hap *h, const char *json);
/* {"socket":..., "servers":[{"backend","server","weight"}...]} (malloc'd). */
char *hap_original_json(const struct hap *h);
/* Sets the target share of the low-precision server per slice (each in
 * [0,1]) and takes one bounded step toward it, unless a step was already
 * taken this period (max_step bounds a period, not a call). 0 or -errno. */
int hap_apply(struct hap *h, const double *lo_frac, size_t n);
/* Once per period (it starts the period's budget, which hap_apply then
 * shares): checks the process (pid, uptime) and that the weights read back
 * as written, then takes the next bounded step. A command past the budget
 * is not sent (-ETIMEDOUT, err says so). 0 when healthy;
 * -ECONNREFUSED/-ENOENT/-ETIMEDOUT (socket lost), -ESTALE (HAProxy
 * restarted or weights changed behind govd: the slices are moved to the
 * full-precision server, their fallback), err says which. */
int hap_check(struct hap *h);
/* The originals back, every server in one write each. 0 or -errno. */
int hap_restore(struct hap *h);
/* The weights in force now per slice, as read by the last check. */
double hap_share_lo(const struct hap *h, size_t slice);
/* One runtime API command; the answer (malloc'd, NUL terminated) in *out. */
int hap_command(const char *path, const char *cmd, uint32_t timeout_ms, char **out, size_t *len);

#endif
