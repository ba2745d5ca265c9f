#include "governor/fleet/fleet_cfg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "governor/fleet/fleet_etcd.h"

static const char *const fleet_keys[] = {
	"endpoints",   "cluster",    "group",	     "priority",      "safe_budget_w",
	"floor_w",     "max_w",	     "period_ms",    "lease_ttl_s",   "grant_ttl_ms",
	"refresh_periods", "timeout_ms", "allocator", "hysteresis", "tls", "auth", NULL
};
static const char *const auth_keys[] = { "user", "password_file", NULL };
static const char *const hyst_keys[] = { "up", "down", NULL };
static const char *const tls_keys[] = { "ca_file", "cert_file", "key_file", NULL };

/* fleet.tls: files govd reads at start (so --check judges them): readable
 * regular files; a certificate and its key together. */
static void read_tls(struct ycfg *y, yaml_node_t *m, struct fleet_config *f)
{
	yaml_node_t *t = ycfg_get(y, m, "tls");
	if (!t || !ycfg_is_map(y, t, "fleet.tls"))
		return;
	ycfg_check_keys(y, t, "fleet.tls", tls_keys);
	ycfg_string(y, t, "fleet.tls", "ca_file", false, f->tls_ca, sizeof(f->tls_ca));
	ycfg_string(y, t, "fleet.tls", "cert_file", false, f->tls_cert, sizeof(f->tls_cert));
	ycfg_string(y, t, "fleet.tls", "key_file", false, f->tls_key, sizeof(f->tls_key));
	static const char *const keys[] = { "ca_file", "cert_file", "key_file" };
	const char *vals[] = { f->tls_ca, f->tls_cert, f->tls_key };
	for (int i = 0; i < 3; i++) {
		struct stat st;
		char kp[64];
		snprintf(kp, sizeof(kp), "fleet.tls.%s", keys[i]);
		if (vals[i][0] && (stat(vals[i], &st) || !S_ISREG(st.st_mode) || access(vals[i], R_OK)))
			ycfg_error(y, ycfg_get(y, t, keys[i]), kp, "file",
				   "'%s': not a readable file", vals[i]);
	}
	if (!f->tls_cert[0] != !f->tls_key[0])
		ycfg_error(y, t, "fleet.tls", "missing-key",
			   "cert_file and key_file go together (the client certificate and its key)");
}

int fleet_read_password(const char *path, char *out, size_t len, char *err, size_t errlen)
{
	struct stat st;
	out[0] = '\0';
	/* a FIFO or a device would block or never end */
	if (stat(path, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "'%s': not a regular file", path);
		return -EINVAL;
	}
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "'%s': %s", path, strerror(errno));
		return -errno;
	}
	int rc = 0;
	if (!fgets(out, (int)len, f)) {
		snprintf(err, errlen, "'%s': empty", path);
		rc = -EINVAL;
		goto out_close;
	}
	size_t n = strcspn(out, "\r\n");
	if (n == strlen(out) && !feof(f) && fgetc(f) != EOF) {
		snprintf(err, errlen, "'%s': the password is longer than %zu characters", path, len - 1);
		rc = -E2BIG;
	} else if (n == 0) {
		snprintf(err, errlen, "'%s': the first line (the password) is empty", path);
		rc = -EINVAL;
	}
	out[n] = '\0';
out_close:
	fclose(f);
	if (rc)
		explicit_bzero(out, len);
	return rc;
}

int fleet_etcd_auth(struct etcd *e, const char *user, const char *password_file, char *err,
		    size_t errlen)
{
	if (!user || !user[0])
		return 0;
	char pw[256], why[FLEET_PATH_LEN + 64];
	int rc = fleet_read_password(password_file, pw, sizeof(pw), why, sizeof(why));
	if (rc)
		snprintf(err, errlen, "fleet.auth.password_file: %s", why);
	else if ((rc = etcd_set_auth(e, user, pw)))
		snprintf(err, errlen, "fleet.auth: %s", e->err);
	explicit_bzero(pw, sizeof(pw));
	return rc;
}

/* fleet.auth: a user and a readable, non-empty password file (read to judge
 * it, not kept). Over http:// the password crosses the network in clear. */
static void read_auth(struct ycfg *y, yaml_node_t *m, struct fleet_config *f)
{
	yaml_node_t *a = ycfg_get(y, m, "auth");
	if (!a || !ycfg_is_map(y, a, "fleet.auth"))
		return;
	ycfg_check_keys(y, a, "fleet.auth", auth_keys);
	ycfg_string(y, a, "fleet.auth", "user", true, f->auth_user, sizeof(f->auth_user));
	ycfg_string(y, a, "fleet.auth", "password_file", true, f->auth_password_file,
		    sizeof(f->auth_password_file));
	if (f->auth_password_file[0]) {
		char pw[256], why[FLEET_PATH_LEN + 64];
		if (fleet_read_password(f->auth_password_file, pw, sizeof(pw), why, sizeof(why)))
			ycfg_error(y, ycfg_get(y, a, "password_file"), "fleet.auth.password_file",
				   "file", "%s", why);
		explicit_bzero(pw, sizeof(pw));
	}
	if (f->auth_user[0] && strstr(f->endpoints, "http://"))
		ycfg_warning(y, a, "fleet.auth", "cleartext",
			     "an http:// endpoint: the password and token cross the network "
			     "unencrypted (use https:// and fleet.tls)");
}

void fleet_config_defaults(struct fleet_config *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->cluster, sizeof(f->cluster), "default");
	f->period_ms = 500;
	f->lease_ttl_s = 5;
	f->grant_ttl_ms = 3000;
	f->refresh_periods = 4;
	f->timeout_ms = 400;
	f->up_frac = 0.05;
	f->down_frac = 0.10;
}

/* A name that is one path segment of a key. */
static void segment(struct ycfg *y, yaml_node_t *m, const char *key, const char *val)
{
	char kp[64];
	for (const char *p = val; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '_' || *p == '.')) {
			ycfg_error(y, ycfg_get(y, m, key), ycfg_join(kp, sizeof(kp), "fleet", key), "range",
				   "'%s': letters, digits, '-', '_' and '.' only (it is a key segment)",
				   val);
			return;
		}
}

void fleet_config_read(struct ycfg *y, yaml_node_t *m, struct fleet_config *f)
{
	long long v;
	char ip[64];

	fleet_config_defaults(f);
	if (!ycfg_is_map(y, m, "fleet"))
		return;
	f->enabled = true;
	ycfg_check_keys(y, m, "fleet", fleet_keys);
	yaml_node_t *eps = ycfg_get(y, m, "endpoints");
	if (!eps)
		ycfg_error(y, m, "fleet.endpoints", "missing-key", "list the etcd client URLs");
	else if (ycfg_is_seq(y, eps, "fleet.endpoints")) {
		size_t n = ycfg_seq_len(eps);
		if (n == 0 || n > 8)
			ycfg_error(y, eps, "fleet.endpoints", "range", "%zu endpoints; 1..8 allowed", n);
		for (size_t i = 0; i < n && i < 8; i++) {
			yaml_node_t *e = ycfg_seq_at(y, eps, i);
			ycfg_index(ip, sizeof(ip), "fleet.endpoints", i);
			const char *s = e && e->type == YAML_SCALAR_NODE ? (const char *)e->data.scalar.value : NULL;
			if (!s || (strncmp(s, "http://", 7) && strncmp(s, "https://", 8)) || strchr(s, ',') ||
			    strlen(s) >= 200) {
				ycfg_error(y, e ? e : eps, ip, "range",
					   "expected an http:// or https:// URL (< 200 characters, no ',')");
				continue;
			}
			size_t l = strlen(f->endpoints);
			snprintf(f->endpoints + l, sizeof(f->endpoints) - l, "%s%s", l ? "," : "", s);
		}
	}
	ycfg_string(y, m, "fleet", "cluster", false, f->cluster, sizeof(f->cluster));
	ycfg_string(y, m, "fleet", "group", true, f->group, sizeof(f->group));
	segment(y, m, "cluster", f->cluster);
	segment(y, m, "group", f->group);
	v = 0;
	if (ycfg_int(y, m, "fleet", "priority", false, -1000, 1000, &v) == 0)
		f->priority = (int)v;
	ycfg_double(y, m, "fleet", "safe_budget_w", true, 1, 1000000, &f->safe_budget_w);
	ycfg_double(y, m, "fleet", "floor_w", false, 0, 1000000, &f->floor_w);
	ycfg_double(y, m, "fleet", "max_w", false, 0, 1000000, &f->max_w);
	if (f->max_w > 0 && f->floor_w > f->max_w)
		ycfg_error(y, ycfg_get(y, m, "floor_w"), "fleet.floor_w", "range",
			   "floor_w %.0f is above max_w %.0f", f->floor_w, f->max_w);
	v = f->period_ms;
	if (ycfg_int(y, m, "fleet", "period_ms", false, 50, 60000, &v) == 0)
		f->period_ms = (uint32_t)v;
	v = f->lease_ttl_s;
	if (ycfg_int(y, m, "fleet", "lease_ttl_s", false, 2, 3600, &v) == 0)
		f->lease_ttl_s = (uint32_t)v;
	v = f->grant_ttl_ms;
	if (ycfg_int(y, m, "fleet", "grant_ttl_ms", false, 100, 3600000, &v) == 0)
		f->grant_ttl_ms = (uint32_t)v;
	v = f->refresh_periods;
	if (ycfg_int(y, m, "fleet", "refresh_periods", false, 1, 1000, &v) == 0)
		f->refresh_periods = (uint32_t)v;
	v = f->timeout_ms;
	if (ycfg_int(y, m, "fleet", "timeout_ms", false, 10, 60000, &v) == 0)
		f->timeout_ms = (uint32_t)v;
	if (f->grant_ttl_ms < 2 * f->period_ms)
		ycfg_error(y, ycfg_get(y, m, "grant_ttl_ms"), "fleet.grant_ttl_ms", "range",
			   "grant_ttl_ms %u must be at least two periods (%u ms)", f->grant_ttl_ms,
			   2 * f->period_ms);
	/* One request tries every endpoint in turn (timeout_ms each): when it
	 * cannot finish within a grant's TTL, the first dead member would keep
	 * every healthy node off its grant. */
	size_t n_ep = 0;
	for (const char *p = f->endpoints; *p; p++)
		n_ep += p == f->endpoints || *p == ',';
	if (n_ep && (uint64_t)n_ep * f->timeout_ms + f->period_ms > f->grant_ttl_ms)
		ycfg_error(y, ycfg_get(y, m, "timeout_ms") ? ycfg_get(y, m, "timeout_ms") : m,
			   "fleet.timeout_ms", "range",
			   "%zu endpoint(s) x timeout_ms %u + period_ms %u = %llu ms cannot meet "
			   "grant_ttl_ms %u: lower timeout_ms to at most %llu",
			   n_ep, f->timeout_ms, f->period_ms,
			   (unsigned long long)n_ep * f->timeout_ms + f->period_ms, f->grant_ttl_ms,
			   f->grant_ttl_ms > f->period_ms
				   ? (unsigned long long)(f->grant_ttl_ms - f->period_ms) / n_ep
				   : 0ull);
	ycfg_bool(y, m, "fleet", "allocator", false, &f->allocator);
	yaml_node_t *h = ycfg_get(y, m, "hysteresis");
	if (h && ycfg_is_map(y, h, "fleet.hysteresis")) {
		ycfg_check_keys(y, h, "fleet.hysteresis", hyst_keys);
		ycfg_double(y, h, "fleet.hysteresis", "up", false, 0, 1, &f->up_frac);
		ycfg_double(y, h, "fleet.hysteresis", "down", false, 0, 1, &f->down_frac);
	}
	read_tls(y, m, f);
	read_auth(y, m, f);
}
