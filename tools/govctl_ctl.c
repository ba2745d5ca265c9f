/* govctl status / set budget-w / hold / resume / reload: one request on
 * govd's control socket (governor/ctlsock.h, docs/control-socket.md).
 * Exit 0 when govd did it, 1 when it refused or failed (or cannot be
 * reached), 2 on bad usage. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "governor/ctlsock.h"
#include "tools/govctl.h"

#define CTL_TIMEOUT_MS 10000

static const char *default_socket(void)
{
	const char *env = getenv("GOVD_SOCKET");
	return env && *env ? env : CTLSOCK_DEFAULT_PATH;
}

/* Takes --socket PATH (anywhere) and --json (status only) out of argv;
 * the rest stays in order in pos[]. */
struct ctl_args {
	const char *socket;
	bool json;
	int n_pos;
	char *pos[4];
};

static int parse(int argc, char **argv, bool allow_json, struct ctl_args *a)
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
	int rc = ctl_request(socket, req, &reply, CTL_TIMEOUT_MS, err, sizeof(err));
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
	struct ctl_args a;
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

int govctl_status(int argc, char **argv)
{
	struct ctl_args a;
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
	/* One line for scripts, indented for people. */
	char *s = json_dumps(st ? st : json_null(),
			     a.json ? JSON_COMPACT : JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	json_decref(reply);
	if (!s)
		return GOVCTL_EXIT_FAIL;
	puts(s);
	free(s);
	return GOVCTL_EXIT_OK;
}

int govctl_set(int argc, char **argv)
{
	struct ctl_args a;
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
