/* The haproxy precision actuator (router_haproxy.h). One connection per
 * runtime API command: the stats socket in non-interactive mode answers
 * one command and closes, so a restarted HAProxy is never talked to over a
 * stale connection. */
#include "hal/router_haproxy.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"

#define HAP_ANSWER_MAX (1u << 20)

/* ---- parsing ---- */

/* The next line of text[*off..len): start and length, without '\n'. */
static bool next_line(const char *t, size_t len, size_t *off, const char **ls, size_t *ll)
{
	if (*off >= len)
		return false;
	const char *s = t + *off, *e = memchr(s, '\n', len - *off);
	size_t n = e ? (size_t)(e - s) : len - *off;
	*ls = s;
	*ll = n;
	*off += n + (e ? 1 : 0);
	return true;
}

/* Splits a line on spaces into at most max fields (pointers into buf). */
static size_t split(char *buf, char **f, size_t max)
{
	size_t n = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
		if (n == max)
			return max + 1;
		f[n++] = tok;
	}
	return n;
}

#define HAP_MAX_COLS 64
#define HAP_LINE_MAX 2048

int hap_parse_servers_state(const char *text, size_t len, struct hap_server_row *out, size_t max,
			    size_t *n, char *error, size_t elen)
{
	size_t off = 0, ll = 0, lineno = 0;
	const char *ls = "";
	char buf[HAP_LINE_MAX];
	char *f[HAP_MAX_COLS + 1];
	int c_be = -1, c_srv = -1, c_w = -1;
	size_t ncols = 0;
	*n = 0;
	error[0] = '\0';
	if (!next_line(text, len, &off, &ls, &ll) || ll != 1 || ls[0] != '1') {
		snprintf(error, elen, "line 1: want the format version 1, got '%.*s'",
			 (int)(ll > 40 ? 40 : ll), ls);
		return -EBADMSG;
	}
	lineno = 1;
	while (next_line(text, len, &off, &ls, &ll)) {
		lineno++;
		if (ll == 0)
			continue; /* the answer ends with an empty line */
		if (ll >= sizeof(buf)) {
			snprintf(error, elen, "line %zu: longer than %zu bytes", lineno, sizeof(buf) - 1);
			return -EBADMSG;
		}
		memcpy(buf, ls, ll);
		buf[ll] = '\0';
		size_t nf = split(buf, f, HAP_MAX_COLS);
		if (nf > HAP_MAX_COLS) {
			snprintf(error, elen, "line %zu: more than %d fields", lineno, HAP_MAX_COLS);
			return -EBADMSG;
		}
		if (nf && !strcmp(f[0], "#")) {
			ncols = nf - 1;
			for (size_t i = 1; i < nf; i++) {
				if (!strcmp(f[i], "be_name"))
					c_be = (int)i - 1;
				else if (!strcmp(f[i], "srv_name"))
					c_srv = (int)i - 1;
				else if (!strcmp(f[i], "srv_uweight"))
					c_w = (int)i - 1;
			}
			if (c_be < 0 || c_srv < 0 || c_w < 0) {
				snprintf(error, elen, "line %zu: header lacks be_name, srv_name or srv_uweight",
					 lineno);
				return -EBADMSG;
			}
			continue;
		}
		if (!ncols) {
			snprintf(error, elen, "line %zu: a row before the '# be_id be_name ...' header", lineno);
			return -EBADMSG;
		}
		if (nf < ncols) {
			snprintf(error, elen, "line %zu: %zu fields, the header names %zu", lineno, nf, ncols);
			return -EBADMSG;
		}
		char *end;
		errno = 0;
		long w = strtol(f[c_w], &end, 10);
		if (errno || *end || end == f[c_w] || w < 0 || w > HAP_WEIGHT_MAX) {
			snprintf(error, elen, "line %zu: srv_uweight '%.20s' is not an integer in 0..%d", lineno,
				 f[c_w], HAP_WEIGHT_MAX);
			return -EBADMSG;
		}
		if (strlen(f[c_be]) >= HAP_NAME_LEN || strlen(f[c_srv]) >= HAP_NAME_LEN) {
			snprintf(error, elen, "line %zu: a name longer than %d bytes", lineno, HAP_NAME_LEN - 1);
			return -EBADMSG;
		}
		if (*n == max) {
			snprintf(error, elen, "more than %zu servers", max);
			return -E2BIG;
		}
		snprintf(out[*n].backend, HAP_NAME_LEN, "%s", f[c_be]);
		snprintf(out[*n].server, HAP_NAME_LEN, "%s", f[c_srv]);
		out[*n].uweight = (int)w;
		(*n)++;
	}
	if (!ncols) {
		snprintf(error, elen, "no '# be_id be_name ...' header");
		return -EBADMSG;
	}
	return 0;
}

int hap_parse_info(const char *text, size_t len, long *pid, uint64_t *uptime_s)
{
	size_t off = 0, ll;
	const char *ls;
	bool have_pid = false, have_up = false;
	while (next_line(text, len, &off, &ls, &ll)) {
		char buf[128];
		if (ll >= sizeof(buf))
			continue;
		memcpy(buf, ls, ll);
		buf[ll] = '\0';
		char *end;
		if (!strncmp(buf, "Pid: ", 5)) {
			errno = 0;
			long p = strtol(buf + 5, &end, 10);
			if (errno || *end || end == buf + 5 || p <= 0)
				return -EBADMSG;
			*pid = p;
			have_pid = true;
		} else if (!strncmp(buf, "Uptime_sec: ", 12)) {
			errno = 0;
			unsigned long long u = strtoull(buf + 12, &end, 10);
			if (errno || *end || end == buf + 12 || buf[12] == '-')
				return -EBADMSG;
			*uptime_s = u;
			have_up = true;
		}
	}
	return have_pid && have_up ? 0 : -EBADMSG;
}

/* ---- the socket ---- */

int hap_command(const char *path, const char *cmd, uint32_t timeout_ms, char **out, size_t *olen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	*out = NULL;
	*olen = 0;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	uint64_t deadline = govd_mono_ms() + timeout_ms;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int rc = 0;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS &&
	    errno != EAGAIN) {
		rc = -errno;
		goto out_close;
	}
	size_t cl = strlen(cmd), sent = 0;
	char line[512];
	if (cl + 2 > sizeof(line)) {
		rc = -E2BIG;
		goto out_close;
	}
	memcpy(line, cmd, cl);
	line[cl++] = '\n';
	while (sent < cl || 1) {
		uint64_t now = govd_mono_ms();
		if (now >= deadline) {
			rc = -ETIMEDOUT;
			goto out_close;
		}
		struct pollfd p = { .fd = fd, .events = sent < cl ? POLLOUT : POLLIN };
		int pr = poll(&p, 1, (int)(deadline - now));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			rc = -errno;
			goto out_close;
		}
		if (pr == 0)
			continue; /* the deadline check above ends it */
		if (sent < cl) {
			ssize_t w = send(fd, line + sent, cl - sent, MSG_NOSIGNAL);
			if (w < 0) {
				if (errno == EINTR || errno == EAGAIN)
					continue;
				rc = -errno;
				goto out_close;
			}
			sent += (size_t)w;
			continue;
		}
		if (cap - len < 4097) {
			size_t nc = cap ? cap * 2 : 8192;
			if (nc > HAP_ANSWER_MAX + 4097) {
				rc = -EFBIG;
				goto out_close;
			}
			char *nb = realloc(buf, nc);
			if (!nb) {
				rc = -ENOMEM;
				goto out_close;
			}
			buf = nb;
			cap = nc;
		}
		ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			rc = -errno;
			goto out_close;
		}
		if (r == 0)
			break; /* answered and closed */
		len += (size_t)r;
	}
	if (!buf && !(buf = malloc(1))) {
		rc = -ENOMEM;
		goto out_close;
	}
	buf[len] = '\0';
	*out = buf;
	*olen = len;
	buf = NULL;
out_close:
	free(buf);
	close(fd);
	return rc;
}

/* ---- the actuator ---- */

static int cmd_err(struct hap *h, const char *cmd, int rc)
{
	snprintf(h->err, sizeof(h->err), "haproxy %s: '%s': %s", h->path, cmd, strerror(-rc));
	return rc;
}

/* One command within the period's budget: its timeout is what is left of
 * it, and past it nothing is sent. */
static int hcmd(struct hap *h, const char *cmd, char **a, size_t *n)
{
	uint32_t t = h->cfg.timeout_ms;
	if (h->deadline_ms) {
		uint64_t now = govd_mono_ms();
		if (now >= h->deadline_ms) {
			snprintf(h->err, sizeof(h->err),
				 "haproxy %s: '%s' not sent: the period's budget of %u ms is spent",
				 h->path, cmd, h->cfg.period_budget_ms);
			return -ETIMEDOUT;
		}
		if (h->deadline_ms - now < t)
			t = (uint32_t)(h->deadline_ms - now);
	}
	/* To the socket the link led to at open, never through the link again:
	 * a link swapped between same_router()'s look and the connect would
	 * hand this command to another HAProxy. */
	int rc = hap_command(h->real, cmd, t, a, n);
	return rc ? cmd_err(h, cmd, rc) : 0;
}

static int read_info(struct hap *h, long *pid, uint64_t *up)
{
	char *a;
	size_t n;
	int rc = hcmd(h, "show info", &a, &n);
	if (rc)
		return rc;
	rc = hap_parse_info(a, n, pid, up);
	free(a);
	if (rc)
		snprintf(h->err, sizeof(h->err), "haproxy %s: 'show info' has no Pid / Uptime_sec",
			 h->path);
	return rc;
}

/* Both servers' weights of slice s. */
static int read_weights(struct hap *h, size_t s, int *w_hi, int *w_lo)
{
	char cmd[HAP_NAME_LEN + 32], *a;
	size_t n, rows = 0;
	snprintf(cmd, sizeof(cmd), "show servers state %s", h->names[s][0]);
	int rc = hcmd(h, cmd, &a, &n);
	if (rc)
		return rc;
	struct hap_server_row *r = calloc(256, sizeof(*r));
	char perr[160];
	if (!r) {
		free(a);
		return -ENOMEM;
	}
	rc = hap_parse_servers_state(a, n, r, 256, &rows, perr, sizeof(perr));
	if (rc) {
		/* HAProxy answers an unknown backend with a message, not a table */
		snprintf(h->err, sizeof(h->err), "haproxy %s: '%s': %s (answer: %.60s)", h->path, cmd,
			 perr, a);
		goto out_free;
	}
	*w_hi = *w_lo = -1;
	for (size_t i = 0; i < rows; i++) {
		if (strcmp(r[i].backend, h->names[s][0]))
			continue;
		if (!strcmp(r[i].server, h->names[s][1]))
			*w_hi = r[i].uweight;
		if (!strcmp(r[i].server, h->names[s][2]))
			*w_lo = r[i].uweight;
	}
	if (*w_hi < 0 || *w_lo < 0) {
		snprintf(h->err, sizeof(h->err), "haproxy %s: backend %s has no server %s", h->path,
			 h->names[s][0], *w_hi < 0 ? h->names[s][1] : h->names[s][2]);
		rc = -ENOENT;
	}
out_free:
	free(r);
	free(a);
	return rc;
}

static int set_weight(struct hap *h, size_t s, int which, int w)
{
	char cmd[2 * HAP_NAME_LEN + 32], *a;
	size_t n;
	snprintf(cmd, sizeof(cmd), "set weight %s/%s %d", h->names[s][0], h->names[s][which], w);
	if (h->cfg.read_only) {
		/* the one writer: nothing reaches HAProxy in a dry run */
		snprintf(h->err, sizeof(h->err), "haproxy %s: '%s' not sent: dry run", h->path, cmd);
		return -EROFS;
	}
	int rc = hcmd(h, cmd, &a, &n);
	if (rc)
		return rc;
	/* success is an empty answer; anything else is HAProxy's refusal */
	bool ok = true;
	for (size_t i = 0; i < n; i++)
		ok &= a[i] == '\n' || a[i] == '\r' || a[i] == ' ';
	if (!ok) {
		char *nl = strchr(a, '\n');
		if (nl)
			*nl = '\0';
		snprintf(h->err, sizeof(h->err), "haproxy %s: '%s': %.120s", h->path, cmd, a);
		rc = -EIO;
	}
	free(a);
	return rc;
}

int hap_cfg_check(const struct hap_cfg *cfg, const char **key, char *err, size_t len)
{
	static const char *const name_key[3] = { "haproxy_backends", "haproxy_server_full",
						 "haproxy_server_low" };
	if (!cfg->socket_path || !*cfg->socket_path ||
	    strlen(cfg->socket_path) >= sizeof(((struct hap *)0)->path)) {
		*key = "precision_target";
		snprintf(err, len, "the stats socket path must be 1..%zu characters",
			 sizeof(((struct hap *)0)->path) - 1);
		return -EINVAL;
	}
	if (!cfg->n_slices || cfg->n_slices > HAP_MAX_SLICES || !cfg->total_weight ||
	    cfg->total_weight > HAP_WEIGHT_MAX || !cfg->max_step) {
		*key = "haproxy_total_weight";
		snprintf(err, len, "1..%d slices, a total weight of 1..%d and a step of at least 1",
			 HAP_MAX_SLICES, HAP_WEIGHT_MAX);
		return -EINVAL;
	}
	for (size_t s = 0; s < cfg->n_slices; s++) {
		const char *nm[3] = { cfg->slice[s].backend, cfg->slice[s].server_hi,
				      cfg->slice[s].server_lo };
		for (int k = 0; k < 3; k++)
			/* a name goes into a command line: no spaces, slashes or controls */
			if (!nm[k] || !*nm[k] || strlen(nm[k]) >= HAP_NAME_LEN ||
			    strpbrk(nm[k], " /\t\r\n;")) {
				*key = name_key[k];
				snprintf(err, len, "slice %zu: '%s' is not a HAProxy backend/server name "
						   "(1..%d characters, no spaces, '/' or ';')",
					 s, nm[k] ? nm[k] : "", HAP_NAME_LEN - 1);
				return -EINVAL;
			}
		if (!strcmp(nm[1], nm[2])) {
			*key = name_key[2];
			snprintf(err, len, "slice %zu: the low-precision server '%s' is also the "
					   "full-precision one", s, nm[2]);
			return -EINVAL;
		}
		/* two slices on one backend would each steer the other's traffic */
		for (size_t t = 0; t < s; t++)
			if (!strcmp(cfg->slice[t].backend, nm[0])) {
				*key = name_key[0];
				snprintf(err, len, "slices %zu and %zu share the backend '%s': each slice "
						   "needs its own", t, s, nm[0]);
				return -EINVAL;
			}
	}
	return 0;
}

int hap_open(struct hap *h, const struct hap_cfg *cfg)
{
	memset(h, 0, sizeof(*h));
	h->cfg = *cfg;
	char err[sizeof(h->err) - 10];
	const char *key;
	if (hap_cfg_check(cfg, &key, err, sizeof(err))) {
		snprintf(h->err, sizeof(h->err), "haproxy: %s", err);
		return -EINVAL;
	}
	if (!h->cfg.timeout_ms)
		h->cfg.timeout_ms = 1000;
	if (!h->cfg.period_budget_ms)
		h->cfg.period_budget_ms = h->cfg.timeout_ms;
	snprintf(h->path, sizeof(h->path), "%s", cfg->socket_path);
	for (size_t s = 0; s < cfg->n_slices; s++) {
		const char *nm[3] = { cfg->slice[s].backend, cfg->slice[s].server_hi,
				      cfg->slice[s].server_lo };
		for (int k = 0; k < 3; k++)
			snprintf(h->names[s][k], HAP_NAME_LEN, "%s", nm[k]);
	}
	h->cfg.socket_path = h->path;
	if (!realpath(h->path, h->real))
		snprintf(h->real, sizeof(h->real), "%s", h->path);
	int rc = read_info(h, &h->pid, &h->uptime_s);
	for (size_t s = 0; !rc && s < cfg->n_slices; s++) {
		rc = read_weights(h, s, &h->orig[s].w_hi, &h->orig[s].w_lo);
		h->cur_hi[s] = h->orig[s].w_hi;
		h->cur_lo[s] = h->orig[s].w_lo;
	}
	h->have_orig = rc == 0;
	return rc;
}

char *hap_original_json(const struct hap *h)
{
	json_t *srv = json_array();
	for (size_t s = 0; s < h->cfg.n_slices; s++) {
		json_array_append_new(srv, json_pack("{s:s,s:s,s:i}", "backend", h->names[s][0], "server",
						     h->names[s][1], "weight", h->orig[s].w_hi));
		json_array_append_new(srv, json_pack("{s:s,s:s,s:i}", "backend", h->names[s][0], "server",
						     h->names[s][2], "weight", h->orig[s].w_lo));
	}
	/* the socket as resolved at open: a crash restore (hap_adopt_original)
	 * refuses to give these originals to another HAProxy a link leads to */
	json_t *o = json_pack("{s:s,s:o}", "socket", h->real, "servers", srv);
	char *t = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	return t;
}

int hap_adopt_original(struct hap *h, const char *text)
{
	json_t *o = json_loads(text, 0, NULL);
	json_t *srv = json_object_get(o, "servers");
	struct hap_orig got[HAP_MAX_SLICES];
	bool seen[HAP_MAX_SLICES][2] = { { false } };
	int rc = 0;
	size_t i;
	json_t *e;
	if (!json_is_array(srv)) {
		rc = -EINVAL;
		goto out;
	}
	/* recorded where the socket led then: a link since swapped to another
	 * HAProxy must not receive these originals */
	const char *was = json_string_value(json_object_get(o, "socket"));
	if (was && strcmp(was, h->real) && strcmp(was, h->path)) {
		snprintf(h->err, sizeof(h->err),
			 "haproxy %s now leads to %.200s; the recorded weights are %.200s's: not "
			 "restored to another HAProxy",
			 h->path, h->real, was);
		rc = -ESTALE;
		goto out;
	}
	json_array_foreach(srv, i, e) {
		const char *be = json_string_value(json_object_get(e, "backend"));
		const char *sv = json_string_value(json_object_get(e, "server"));
		json_t *w = json_object_get(e, "weight");
		if (!be || !sv || !json_is_integer(w) || json_integer_value(w) < 0 ||
		    json_integer_value(w) > HAP_WEIGHT_MAX) {
			rc = -EINVAL;
			goto out;
		}
		bool known = false;
		for (size_t s = 0; s < h->cfg.n_slices; s++)
			for (int k = 0; k < 2; k++)
				if (!strcmp(be, h->names[s][0]) && !strcmp(sv, h->names[s][1 + k])) {
					(k ? &got[s].w_lo : &got[s].w_hi)[0] = (int)json_integer_value(w);
					seen[s][k] = known = true;
				}
		if (!known) {
			rc = -ENODEV; /* the record names a server this config does not govern */
			goto out;
		}
	}
	for (size_t s = 0; s < h->cfg.n_slices; s++)
		if (!seen[s][0] || !seen[s][1])
			rc = -EINVAL;
	if (!rc) {
		memcpy(h->orig, got, sizeof(got));
		h->have_orig = true;
		h->wrote = true;
	}
out:
	if (rc)
		snprintf(h->err, sizeof(h->err), "haproxy: the recorded weights %s",
			 rc == -ENODEV ? "name a server this configuration does not govern"
				       : "are malformed or incomplete");
	json_decref(o);
	return rc;
}

static int step_toward(int cur, int want, unsigned max_step)
{
	int d = want - cur, m = (int)max_step;
	return cur + (d > m ? m : d < -m ? -m : d);
}

/* One bounded step of every slice toward its target. The server losing
 * weight is written first, so the pair never adds up to more than either
 * end: no step sends a replica more share than both states around it. */
static int step(struct hap *h)
{
	int rc = 0;
	if (!h->have_want || h->cfg.read_only || h->stepped)
		return 0;
	for (size_t s = 0; s < h->cfg.n_slices; s++) {
		int nh = step_toward(h->cur_hi[s], h->want_hi[s], h->cfg.max_step);
		int nl = step_toward(h->cur_lo[s], h->want_lo[s], h->cfg.max_step);
		int first = nh < h->cur_hi[s] ? 1 : 2;
		for (int k = 0; k < 2 && !rc; k++) {
			int which = k == 0 ? first : 3 - first;
			int *cur = which == 1 ? &h->cur_hi[s] : &h->cur_lo[s];
			int nw = which == 1 ? nh : nl;
			if (nw == *cur)
				continue;
			h->wrote = true;
			h->stepped = true;
			rc = set_weight(h, s, which, nw);
			if (!rc)
				*cur = nw;
		}
	}
	return rc;
}

/* The socket path still leads where it led at open: a link swapped to
 * another HAProxy is not that HAProxy restarting, and govd's originals and
 * fallback are not that one's to write. */
static bool same_router(struct hap *h)
{
	char now[4096];
	if (!realpath(h->path, now))
		return true; /* gone: the commands fail and say so */
	if (!strcmp(now, h->real))
		return true;
	snprintf(h->err, sizeof(h->err),
		 "haproxy %s now leads to %.200s, not %.200s (another HAProxy): nothing is "
		 "written there, and the original weights are not restored to it",
		 h->path, now, h->real);
	return false;
}

int hap_apply(struct hap *h, const double *lo_frac, size_t n)
{
	if (n != h->cfg.n_slices)
		return -EINVAL;
	for (size_t s = 0; s < n; s++) {
		double f = lo_frac[s];
		if (!(f >= 0.0 && f <= 1.0))
			return -EINVAL;
		int lo = (int)lround(f * h->cfg.total_weight);
		h->want_lo[s] = lo;
		h->want_hi[s] = (int)h->cfg.total_weight - lo;
	}
	h->have_want = true;
	h->err[0] = '\0';
	if (!same_router(h))
		return -ESTALE;
	return step(h);
}

/* After a fault: the full-precision server takes the whole slice at once
 * (the fallback is not rate-limited: it is the safe side). */
static void fallback(struct hap *h)
{
	if (h->cfg.read_only)
		return; /* a dry run reports the fault and leaves the operator's weights */
	for (size_t s = 0; s < h->cfg.n_slices; s++) {
		h->want_hi[s] = (int)h->cfg.total_weight;
		h->want_lo[s] = 0;
		char keep[sizeof(h->err)];
		memcpy(keep, h->err, sizeof(keep));
		if (!set_weight(h, s, 2, 0))
			h->cur_lo[s] = 0;
		if (!set_weight(h, s, 1, (int)h->cfg.total_weight))
			h->cur_hi[s] = (int)h->cfg.total_weight;
		memcpy(h->err, keep, sizeof(keep));
	}
	h->have_want = true;
	h->wrote = true;
}

int hap_check(struct hap *h)
{
	long pid = 0;
	uint64_t up = 0;
	h->err[0] = '\0';
	h->deadline_ms = govd_mono_ms() + h->cfg.period_budget_ms;
	h->stepped = false;
	if (!same_router(h)) {
		h->fault_count++;
		h->fault_latched = true;
		return -ESTALE;
	}
	int rc = read_info(h, &pid, &up);
	if (rc) {
		h->fault_count++;
		h->fault_latched = true;
		return rc; /* lost: nothing can be written; HAProxy keeps what it has */
	}
	if (pid != h->pid || up < h->uptime_s) {
		snprintf(h->err, sizeof(h->err),
			 "haproxy %s restarted (pid %ld -> %ld, uptime %llu s -> %llu s): weights back "
			 "to its configuration; slices to the full-precision server",
			 h->path, h->pid, pid, (unsigned long long)h->uptime_s, (unsigned long long)up);
		h->pid = pid;
		h->uptime_s = up;
		h->fault_count++;
		h->fault_latched = true;
		fallback(h);
		return -ESTALE;
	}
	h->uptime_s = up;
	for (size_t s = 0; s < h->cfg.n_slices; s++) {
		int wh, wl;
		if ((rc = read_weights(h, s, &wh, &wl))) {
			h->fault_count++;
			return rc;
		}
		if (h->wrote && (wh != h->cur_hi[s] || wl != h->cur_lo[s])) {
			snprintf(h->err, sizeof(h->err),
				 "haproxy %s: backend %s reads back %s=%d %s=%d, govd wrote %d/%d: changed "
				 "behind govd; slices to the full-precision server",
				 h->path, h->names[s][0], h->names[s][1], wh, h->names[s][2], wl,
				 h->cur_hi[s], h->cur_lo[s]);
			h->cur_hi[s] = wh;
			h->cur_lo[s] = wl;
			h->fault_count++;
			h->fault_latched = true;
			fallback(h);
			return -ESTALE;
		}
		h->cur_hi[s] = wh;
		h->cur_lo[s] = wl;
	}
	return step(h);
}

int hap_restore(struct hap *h)
{
	int rc = 0;
	if (!h->have_orig || !h->wrote || h->cfg.read_only)
		return 0;
	if (!same_router(h))
		return -ESTALE;
	h->deadline_ms = 0; /* on the way out: each command its own timeout */
	for (size_t s = 0; s < h->cfg.n_slices; s++) {
		/* the lower one first, as in step(): no moment above both ends */
		int first = h->orig[s].w_hi < h->cur_hi[s] ? 1 : 2;
		for (int k = 0; k < 2; k++) {
			int which = k == 0 ? first : 3 - first;
			int w = which == 1 ? h->orig[s].w_hi : h->orig[s].w_lo;
			int r = set_weight(h, s, which, w);
			if (r && !rc)
				rc = r;
			if (!r)
				(which == 1 ? h->cur_hi : h->cur_lo)[s] = w;
		}
	}
	if (!rc) {
		h->wrote = false;
		h->have_want = false;
	}
	return rc;
}

double hap_share_lo(const struct hap *h, size_t s)
{
	int t = h->cur_hi[s] + h->cur_lo[s];
	return t > 0 ? (double)h->cur_lo[s] / t : 0.0;
}
