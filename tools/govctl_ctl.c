/* govctl status / set budget-w / hold / resume / reload: one request on
 * govd's control socket (governor/daemon/ctlsock.h, docs/control-socket.md).
 * Exit 0 when govd did it, 1 when it refused or failed (or cannot be
 * reached), 2 on bad usage. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "governor/daemon/ctlsock.h"
#include "tools/govctl.h"

#define CTL_TIMEOUT_MS 10000

static const char *default_socket(void)
{
	const char *env = getenv("GOVD_SOCKET");
	return env && *env ? env : CTLSOCK_DEFAULT_PATH;
}

/* Takes --socket PATH (anywhere) and --json (status only) out of argv;
 * the rest stays in order in pos[]. */
struct ctlsock_args {
	const char *socket;
	bool json;
	int n_pos;
	char *pos[4];
};

static int parse(int argc, char **argv, bool allow_json, struct ctlsock_args *a)
{
	memset(a, 0, sizeof(*a));
	a->socket = default_socket();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket")) {
			if (++i >= argc) {
				fprintf(stderr, "govctl %s: --socket needs a PATH\n", argv[0]);
				return -1;
			}
			a->socket = argv[i];
		} else if (!strncmp(argv[i], "--socket=", 9)) {
			a->socket = argv[i] + 9;
		} else if (allow_json && !strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (argv[i][0] == '-' && argv[i][1] && !(argv[i][1] >= '0' && argv[i][1] <= '9')) {
			fprintf(stderr, "govctl %s: unknown option '%s'\n", argv[0], argv[i]);
			return -1;
		} else if (a->n_pos < 4) {
			a->pos[a->n_pos++] = argv[i];
		} else {
			fprintf(stderr, "govctl %s: too many arguments\n", argv[0]);
			return -1;
		}
	}
	return 0;
}

/* Sends req (consumed); prints the outcome; the exit code. */
static int exchange(const char *what, const char *socket, json_t *req, json_t **reply_out)
{
	char err[512];
	json_t *reply = NULL;
	if (!req) {
		fprintf(stderr, "govctl %s: out of memory\n", what);
		return GOVCTL_EXIT_FAIL;
	}
	int rc = ctlsock_request(socket, req, &reply, CTL_TIMEOUT_MS, err, sizeof(err));
	json_decref(req);
	if (rc) {
		fprintf(stderr, "govctl %s: %s\n", what, err);
		return GOVCTL_EXIT_FAIL;
	}
	if (!json_is_true(json_object_get(reply, "ok"))) {
		const char *code = json_string_value(json_object_get(reply, "code"));
		const char *msg = json_string_value(json_object_get(reply, "error"));
		fprintf(stderr, "govctl %s: %s: %s\n", what,
			code && !strcmp(code, "denied") ? "refused" : "failed", msg ? msg : "(no reason given)");
		json_decref(reply);
		return GOVCTL_EXIT_FAIL;
	}
	if (reply_out)
		*reply_out = reply;
	else
		json_decref(reply);
	return GOVCTL_EXIT_OK;
}

/* A mutating command's reply: "ok" and whatever govd added to it. */
static void print_done(const char *what, json_t *reply)
{
	const char *msg = json_string_value(json_object_get(reply, "message"));
	printf("%s: ok%s%s\n", what, msg ? ": " : "", msg ? msg : "");
}

static int simple(int argc, char **argv, const char *cmd)
{
	struct ctlsock_args a;
	json_t *reply;
	if (parse(argc, argv, false, &a))
		return GOVCTL_EXIT_USAGE;
	if (a.n_pos) {
		fprintf(stderr, "govctl %s: takes no arguments (only --socket PATH)\n", cmd);
		return GOVCTL_EXIT_USAGE;
	}
	int rc = exchange(cmd, a.socket, json_pack("{s:s}", "cmd", cmd), &reply);
	if (rc == GOVCTL_EXIT_OK) {
		print_done(cmd, reply);
		json_decref(reply);
	}
	return rc;
}

/* Integer fields of the status object (JSON: the HAL's integer units, named
 * in the key: _mw, _khz; docs/units.md). A missing one prints as "-". */
static bool get_int(json_t *o, const char *key, json_int_t *v)
{
	json_t *j = json_object_get(o, key);
	if (!json_is_integer(j))
		return false;
	*v = json_integer_value(j);
	return true;
}

static const char *yes_no(json_t *o, const char *key)
{
	json_t *j = json_object_get(o, key);
	return json_is_boolean(j) ? (json_is_true(j) ? "yes" : "no") : "-";
}

static const char *str_or(json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s && *s ? s : dflt;
}

/* A power in mW as "W" with one decimal, a clock in kHz as "MHz" (the
 * people's units of docs/units.md), "-" when absent or 0 (= none). */
static const char *fmt_mw(char *buf, size_t len, json_t *o, const char *key)
{
	json_int_t v;
	if (!get_int(o, key, &v) || v <= 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", (double)v / 1000.0);
	return buf;
}

static const char *fmt_khz(char *buf, size_t len, json_t *o, const char *key)
{
	json_int_t v;
	if (!get_int(o, key, &v) || v <= 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%lld", (long long)(v / 1000));
	return buf;
}

static void print_status_table(FILE *f, json_t *st)
{
	json_int_t v;
	json_t *bw = json_object_get(st, "budget_w");
	fprintf(f, "node      %s\n", str_or(st, "node", "-"));
	fprintf(f, "config    %s\n", str_or(st, "config", "-"));
	fprintf(f, "period    %lld ms\n", get_int(st, "period_ms", &v) ? (long long)v : -1LL);
	if (json_is_number(bw))
		fprintf(f, "budget    %.1f W%s\n", json_number_value(bw),
			json_is_true(json_object_get(st, "budget_overridden")) ? " (set by govctl)" : "");
	else
		fprintf(f, "budget    none\n");
	fprintf(f, "dry run   %s\nheld      %s\n", yes_no(st, "dry_run"), yes_no(st, "held"));
	json_int_t p = 0, o = 0, r = 0, rr = 0;
	get_int(st, "periods", &p);
	get_int(st, "overruns", &o);
	get_int(st, "reloads", &r);
	get_int(st, "reloads_refused", &rr);
	fprintf(f, "periods   %lld (%lld overruns), %lld reloads (%lld refused)\n\n", (long long)p,
		(long long)o, (long long)r, (long long)rr);

	json_t *devs = json_object_get(st, "devices");
	int wn = 6, wb = 7, wp = 6; /* DEVICE, BACKEND, POLICY */
	size_t i;
	json_t *d;
	json_array_foreach(devs, i, d) {
		int n = (int)strlen(str_or(d, "name", "-")), b = (int)strlen(str_or(d, "backend", "-")),
		    q = (int)strlen(str_or(d, "policy", "-"));
		wn = n > wn ? n : wn;
		wb = b > wb ? b : wb;
		wp = q > wp ? q : wp;
	}
	fprintf(f, "%-*s  %-*s  %-*s  %8s  %6s  %11s  %9s  %8s  %10s\n", wn, "DEVICE", wb, "BACKEND",
		wp, "POLICY", "CLK MHz", "LOCKED", "LIMIT W", "GRANT W", "PERIODS", "ACT ERRORS");
	json_array_foreach(devs, i, d) {
		char clk[32], lim[32], grant[32];
		json_int_t per = 0, ae = 0;
		get_int(d, "periods", &per);
		get_int(d, "actuate_errors", &ae);
		fprintf(f, "%-*s  %-*s  %-*s  %8s  %6s  %11s  %9s  %8lld  %10lld\n", wn,
			str_or(d, "name", "-"), wb, str_or(d, "backend", "-"), wp,
			str_or(d, "policy", "-"), fmt_khz(clk, sizeof(clk), d, "clk_max_khz"),
			yes_no(d, "clk_locked"), fmt_mw(lim, sizeof(lim), d, "power_limit_mw"),
			fmt_mw(grant, sizeof(grant), d, "budget_grant_mw"), (long long)per,
			(long long)ae);
	}
	/* Loud: outside its policy's envelope a device runs the safe point, not
	 * the policy (a real driver a sim-only policy does not admit, say). */
	json_array_foreach(devs, i, d) {
		const char *why = json_string_value(json_object_get(d, "envelope"));
		if (why)
			fprintf(f, "\n%s: OUTSIDE THE POLICY'S ENVELOPE, holding the safe point: %s\n",
				str_or(d, "name", "-"), why);
	}
	/* A dry run: the table shows what the device runs; this, what govd
	 * would set and did not. */
	json_array_foreach(devs, i, d) {
		json_t *w = json_object_get(d, "would_set");
		if (!w)
			continue;
		char clk[32], lim[32];
		fmt_khz(clk, sizeof(clk), w, "clk_max_khz");
		fmt_mw(lim, sizeof(lim), w, "power_limit_mw");
		if (json_is_true(json_object_get(w, "clk_locked")))
			fprintf(f, "%s: dry run, would set: clock locked at %s MHz, power limit %s W\n",
				str_or(d, "name", "-"), clk, lim);
		else
			fprintf(f, "%s: dry run, would set: firmware clocks, power limit %s W\n",
				str_or(d, "name", "-"), lim);
	}
}

int govctl_status(int argc, char **argv)
{
	struct ctlsock_args a;
	json_t *reply;
	if (parse(argc, argv, true, &a))
		return GOVCTL_EXIT_USAGE;
	if (a.n_pos) {
		fprintf(stderr, "govctl status: takes no arguments (--socket PATH, --json)\n");
		return GOVCTL_EXIT_USAGE;
	}
	int rc = exchange("status", a.socket, json_pack("{s:s}", "cmd", "status"), &reply);
	if (rc)
		return rc;
	json_t *st = json_object_get(reply, "status");
	if (!a.json) {
		print_status_table(stdout, st);
		json_decref(reply);
		return GOVCTL_EXIT_OK;
	}
	/* One line for scripts: the daemon's object as it sent it. */
	char *s = json_dumps(st ? st : json_null(), JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(reply);
	if (!s)
		return GOVCTL_EXIT_FAIL;
	puts(s);
	free(s);
	return GOVCTL_EXIT_OK;
}

int govctl_set(int argc, char **argv)
{
	struct ctlsock_args a;
	double w;
	json_t *reply;
	if (parse(argc, argv, false, &a))
		return GOVCTL_EXIT_USAGE;
	if (a.n_pos != 2 || strcmp(a.pos[0], "budget-w")) {
		fprintf(stderr, "usage: govctl set budget-w WATTS [--socket PATH]\n");
		return GOVCTL_EXIT_USAGE;
	}
	if (!govctl_parse_double(a.pos[1], &w) || !(w > 0)) {
		fprintf(stderr, "govctl set budget-w: '%s' is not a number of watts > 0\n", a.pos[1]);
		return GOVCTL_EXIT_USAGE;
	}
	int rc = exchange("set budget-w", a.socket,
			  json_pack("{s:s, s:s, s:f}", "cmd", "set", "name", "budget-w", "value", w),
			  &reply);
	if (rc == GOVCTL_EXIT_OK) {
		print_done("set budget-w", reply);
		json_decref(reply);
	}
	return rc;
}

int govctl_hold(int argc, char **argv)
{
	return simple(argc, argv, "hold");
}

int govctl_resume(int argc, char **argv)
{
	return simple(argc, argv, "resume");
}

int govctl_reload(int argc, char **argv)
{
	return simple(argc, argv, "reload");
}
