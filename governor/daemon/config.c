#include "governor/daemon/config.h"

#include <errno.h>
#include <grp.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/datapath.h"
#include "common/fsafe.h"
#include "common/ycfg.h"
#include "governor/fleet/budget.h"
#include "governor/daemon/metrics.h"

_Static_assert(CONFIG_MAX_DEVICES == BUDGET_MAX_DEVICES, "one device limit");
_Static_assert(CONFIG_MAX_DEVICES == METRICS_MAX_DEVICES, "every configured device has metrics");

static const char *const root_keys[] = { "node",	 "policy",	 "budget_w", "dry_run",
					 "log_level",	 "state_file",	 "decision_log",
					 "metrics",	 "control",	 "devices",  "fleet",
					 "reload_on_change", NULL };
static const char *const declog_keys[] = { "dir", "max_bytes", "keep", "mode", "heartbeat_s",
					   "compress", NULL };
static const char *const declog_modes[] = { "full", "compact", NULL };
static const char *const metrics_keys[] = { "enabled", "listen", NULL };
static const char *const control_keys[] = { "enabled", "socket", "mode", "group", "read",
					    "operator", NULL };
static const char *const role_keys[] = { "users", "groups", NULL };
static const char *const dev_keys[] = { "name",	  "backend",	"policy", "weight",
					"time_scale", "options", NULL };
static const char *const log_names[] = { "error", "warning", "notice", "info", "debug", NULL };

#define BUDGET_MAX_W 1000000.0 /* 1 MW: far beyond a node */
#define TIME_SCALE_MAX 1000.0
#define WEIGHT_MAX 1000.0

struct ctx {
	struct ycfg *y;
	struct config *c;
	bool have_node_policy;
	int node_policy_line, node_policy_col;
};

static void where(const yaml_node_t *n, int *line, int *col)
{
	*line = n ? (int)n->start_mark.line + 1 : 0;
	*col = n ? (int)n->start_mark.column + 1 : 0;
}

static int path_key(struct ctx *x, yaml_node_t *map, const char *path, const char *key,
		    bool required, char *out, size_t len)
{
	char raw[CONFIG_PATH_LEN], kp[128];
	raw[0] = '\0';
	int rc = ycfg_string(x->y, map, path, key, required, raw, sizeof(raw));
	if (rc || !raw[0])
		return rc;
	if (ycfg_resolve_path(x->y, raw, out, len)) {
		ycfg_error(x->y, ycfg_get(x->y, map, key), ycfg_join(kp, sizeof(kp), path, key),
			   "range", "path too long once resolved against the config's directory");
		return -EINVAL;
	}
	return 0;
}

/* A policy path: relative to the config's folder, else (when not there and
 * relative) the installed-data search path (common/datapath.h), so an
 * installed config's `policies/default.yaml` finds /usr/share/govd's. When
 * neither has it the config-relative path stays, and the policy loader names it. */
static int policy_key(struct ctx *x, yaml_node_t *map, const char *path, char *out, size_t len)
{
	int rc = path_key(x, map, path, "policy", false, out, len);
	yaml_node_t *n = ycfg_get(x->y, map, "policy");
	if (rc || !out[0] || access(out, R_OK) == 0 || !n || n->type != YAML_SCALAR_NODE)
		return rc;
	char found[CONFIG_PATH_LEN];
	if (govd_data_find((const char *)n->data.scalar.value, found, sizeof(found)) == 0)
		snprintf(out, len, "%s", found);
	return 0;
}

/* control.read / control.operator: {users: [...], groups: [...]}, names or
 * numeric ids, resolved now (ctlsock_acl_add: an unknown name is an error here). */
static void read_role(struct ctx *x, yaml_node_t *map, const char *key, enum ctlsock_role role)
{
	char kp[64], lp[96], ip[128];
	yaml_node_t *r = ycfg_get(x->y, map, key);
	ycfg_join(kp, sizeof(kp), "control", key);
	if (!r || !ycfg_is_map(x->y, r, kp))
		return;
	ycfg_check_keys(x->y, r, kp, role_keys);
	for (int grp = 0; grp < 2; grp++) {
		yaml_node_t *seq = ycfg_get(x->y, r, role_keys[grp]);
		ycfg_join(lp, sizeof(lp), kp, role_keys[grp]);
		if (!seq || !ycfg_is_seq(x->y, seq, lp))
			continue;
		for (size_t i = 0; i < ycfg_seq_len(seq); i++) {
			yaml_node_t *e = ycfg_seq_at(x->y, seq, i);
			ycfg_index(ip, sizeof(ip), lp, i);
			if (!e || e->type != YAML_SCALAR_NODE) {
				ycfg_error(x->y, e ? e : seq, ip, "type", "expected a name or numeric id");
				continue;
			}
			int line, col;
			where(e, &line, &col);
			ctlsock_acl_add(&x->c->control.acl, role, grp == 1, (const char *)e->data.scalar.value,
				    x->y->file, line, col, x->y->diags);
		}
	}
}

static void read_options(struct ctx *x, yaml_node_t *opts, const char *path,
			 struct config_device *d)
{
	char kp[160];
	if (!opts)
		return;
	if (!ycfg_is_map(x->y, opts, path))
		return;
	for (yaml_node_pair_t *p = opts->data.mapping.pairs.start; p < opts->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&x->y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(&x->y->doc, p->value);
		if (!k || k->type != YAML_SCALAR_NODE) {
			ycfg_error(x->y, k, path, "type", "option names must be strings");
			continue;
		}
		const char *ks = (const char *)k->data.scalar.value;
		ycfg_join(kp, sizeof(kp), path, ks);
		bool dup = false;
		for (size_t i = 0; i < d->n_opts && !dup; i++)
			dup = !strcmp(d->keys[i], ks);
		if (dup) {
			ycfg_error(x->y, k, kp, "duplicate-key", "option '%s' given twice", ks);
			continue;
		}
		if (!v || v->type != YAML_SCALAR_NODE) {
			ycfg_error(x->y, v ? v : k, kp, "type",
				   "option values are scalars (strings or numbers), handed to the "
				   "backend as text");
			continue;
		}
		if (d->n_opts == CONFIG_MAX_OPTS) {
			ycfg_error(x->y, k, kp, "range", "more than %d options", CONFIG_MAX_OPTS);
			return;
		}
		d->keys[d->n_opts] = strdup(ks);
		d->values[d->n_opts] = strdup((const char *)v->data.scalar.value);
		d->n_opts++;
		if (!d->keys[d->n_opts - 1] || !d->values[d->n_opts - 1])
			ycfg_error(x->y, k, kp, "memory", "out of memory");
	}
}

static void read_device(struct ctx *x, yaml_node_t *e, const char *path, struct config_device *d)
{
	struct config *c = x->c;
	char kp[160];
	const char *known[17];
	known[hal_backend_names(known, 16)] = NULL;

	where(e, &d->line, &d->col);
	d->weight = 1.0;
	d->time_scale = 1.0;
	if (!ycfg_is_map(x->y, e, path))
		return;
	ycfg_check_keys(x->y, e, path, dev_keys);
	struct fsafe_err fe;
	if (ycfg_string(x->y, e, path, "name", true, d->name, sizeof(d->name)) == 0 && d->name[0] &&
	    !fsafe_name_ok(d->name, sizeof(d->name) - 1, &fe)) {
		/* it names the decision log file and metrics labels */
		ycfg_error(x->y, ycfg_get(x->y, e, "name"), ycfg_join(kp, sizeof(kp), path, "name"),
			   "range", "device name %s", fe.msg);
		d->name[0] = '\0';
	}
	int b = -1;
	if (ycfg_enum(x->y, e, path, "backend", true, known, &b) == 0 && b >= 0)
		snprintf(d->backend, sizeof(d->backend), "%s", known[b]);
	yaml_node_t *pn = ycfg_get(x->y, e, "policy");
	if (pn) {
		policy_key(x, e, path, d->policy_path, sizeof(d->policy_path));
		where(pn, &d->policy_line, &d->policy_col);
	} else if (x->have_node_policy) {
		snprintf(d->policy_path, sizeof(d->policy_path), "%s", c->policy_path);
		d->policy_line = x->node_policy_line;
		d->policy_col = x->node_policy_col;
	} else {
		ycfg_error(x->y, e, ycfg_join(kp, sizeof(kp), path, "policy"), "missing-key",
			   "no policy: set `policy` here or at the top of the file");
	}
	ycfg_double(x->y, e, path, "weight", false, 0.001, WEIGHT_MAX, &d->weight);
	if (ycfg_get(x->y, e, "weight") && d->weight <= 0)
		ycfg_error(x->y, ycfg_get(x->y, e, "weight"), ycfg_join(kp, sizeof(kp), path, "weight"),
			   "range", "weight must be > 0");
	yaml_node_t *ts = ycfg_get(x->y, e, "time_scale");
	if (ts) {
		ycfg_double(x->y, e, path, "time_scale", false, 0.01, TIME_SCALE_MAX, &d->time_scale);
		if (d->backend[0] && strcmp(d->backend, "sim") != 0)
			ycfg_error(x->y, ts, ycfg_join(kp, sizeof(kp), path, "time_scale"),
				   "sim-only", "time_scale applies to the sim backend only (a real "
				   "device runs in real time)");
	}
	read_options(x, ycfg_get(x->y, e, "options"), ycfg_join(kp, sizeof(kp), path, "options"), d);
}

static void read_devices(struct ctx *x, yaml_node_t *root)
{
	struct config *c = x->c;
	char ip[64];
	yaml_node_t *seq = ycfg_get(x->y, root, "devices");

	if (!seq) {
		ycfg_error(x->y, root, "devices", "missing-key", "no devices: list at least one");
		return;
	}
	if (!ycfg_is_seq(x->y, seq, "devices"))
		return;
	size_t n = ycfg_seq_len(seq);
	if (n == 0 || n > CONFIG_MAX_DEVICES) {
		ycfg_error(x->y, seq, "devices", "range", "%zu devices; 1..%d allowed", n,
			   CONFIG_MAX_DEVICES);
		return;
	}
	c->n_devices = n;
	for (size_t i = 0; i < n; i++) {
		struct config_device *d = &c->dev[i];
		yaml_node_t *e = ycfg_seq_at(x->y, seq, i);
		ycfg_index(ip, sizeof(ip), "devices", i);
		read_device(x, e, ip, d);
		for (size_t j = 0; j < i; j++) {
			if (d->name[0] && !strcmp(c->dev[j].name, d->name)) {
				char kp[96];
				ycfg_error(x->y, ycfg_get(x->y, e, "name"),
					   ycfg_join(kp, sizeof(kp), ip, "name"), "duplicate-name",
					   "device name '%s' already used by devices[%zu]", d->name, j);
			}
		}
	}
}

static void read_root(struct ctx *x, yaml_node_t *root)
{
	struct config *c = x->c;
	char mode[16] = "";

	if (!root) {
		ycfg_error(x->y, NULL, "", "empty", "the config is empty; it needs `devices`");
		return;
	}
	if (!ycfg_is_map(x->y, root, ""))
		return;
	ycfg_check_keys(x->y, root, "", root_keys);
	ycfg_string(x->y, root, "", "node", false, c->node, sizeof(c->node));
	/* Unset: GOVD_NODE (the DaemonSet sets it to spec.nodeName, which
	 * survives a rollout; a pod's hostname does not), else the hostname
	 * (the fleet agent's default). */
	const char *env_node = getenv("GOVD_NODE");
	if (!c->node[0] && env_node && env_node[0] && strlen(env_node) < sizeof(c->node) &&
	    !strchr(env_node, '/'))
		snprintf(c->node, sizeof(c->node), "%s", env_node);
	yaml_node_t *pn = ycfg_get(x->y, root, "policy");
	if (pn && policy_key(x, root, "", c->policy_path, sizeof(c->policy_path)) == 0) {
		x->have_node_policy = true;
		where(pn, &x->node_policy_line, &x->node_policy_col);
	}
	ycfg_double(x->y, root, "", "budget_w", false, 0, BUDGET_MAX_W, &c->budget_w);
	ycfg_bool(x->y, root, "", "dry_run", false, &c->dry_run);
	ycfg_bool(x->y, root, "", "reload_on_change", false, &c->reload_on_change);
	int lv = (int)c->log_level;
	if (ycfg_enum(x->y, root, "", "log_level", false, log_names, &lv) == 0)
		c->log_level = (enum log_level)lv;
	path_key(x, root, "", "state_file", false, c->state_file, sizeof(c->state_file));

	yaml_node_t *dl = ycfg_get(x->y, root, "decision_log");
	if (dl && ycfg_is_map(x->y, dl, "decision_log")) {
		long long mb = (long long)c->declog.max_bytes, keep = c->declog.keep;
		ycfg_check_keys(x->y, dl, "decision_log", declog_keys);
		if (ycfg_get(x->y, dl, "dir")) {
			c->declog.dir[0] = '\0';
			path_key(x, dl, "decision_log", "dir", false, c->declog.dir,
				 sizeof(c->declog.dir));
		}
		ycfg_int(x->y, dl, "decision_log", "max_bytes", false, 0, 1ll << 40, &mb);
		ycfg_int(x->y, dl, "decision_log", "keep", false, 0, 1000, &keep);
		c->declog.max_bytes = (uint64_t)mb;
		c->declog.keep = (unsigned)keep;
		/* compact mode and compressed rotation */
		int dl_mode = c->declog.compact;
		long long hb = c->declog.heartbeat_s;
		if (ycfg_enum(x->y, dl, "decision_log", "mode", false, declog_modes, &dl_mode) == 0)
			c->declog.compact = dl_mode == 1;
		ycfg_int(x->y, dl, "decision_log", "heartbeat_s", false, 1, 3600, &hb);
		c->declog.heartbeat_s = (unsigned)hb;
		ycfg_bool(x->y, dl, "decision_log", "compress", false, &c->declog.compress);
	}
	yaml_node_t *m = ycfg_get(x->y, root, "metrics");
	if (m && ycfg_is_map(x->y, m, "metrics")) {
		ycfg_check_keys(x->y, m, "metrics", metrics_keys);
		ycfg_bool(x->y, m, "metrics", "enabled", false, &c->metrics.enabled);
		if (ycfg_string(x->y, m, "metrics", "listen", false, c->metrics.listen,
				sizeof(c->metrics.listen)) == 0) {
			struct sockaddr_storage ss;
			unsigned len;
			if (metrics_parse_listen(c->metrics.listen, &ss, &len))
				ycfg_error(x->y, ycfg_get(x->y, m, "listen"), "metrics.listen", "range",
					   "'%s': expected ADDR:PORT or [V6ADDR]:PORT with a numeric "
					   "address (127.0.0.1:9464)",
					   c->metrics.listen);
		}
	}
	yaml_node_t *k = ycfg_get(x->y, root, "control");
	if (k && ycfg_is_map(x->y, k, "control")) {
		char group[64] = "";
		ycfg_check_keys(x->y, k, "control", control_keys);
		ycfg_bool(x->y, k, "control", "enabled", false, &c->control.enabled);
		path_key(x, k, "control", "socket", false, c->control.socket,
			 sizeof(c->control.socket));
		/* Octal as chmod(1) writes it; quote it ("0660") so YAML 1.1 tools
		 * read a string too. */
		if (ycfg_string(x->y, k, "control", "mode", false, mode, sizeof(mode)) == 0 && mode[0]) {
			char *end;
			unsigned long v = strtoul(mode, &end, 8);
			if (*end || mode[0] != '0' || v > 0777)
				ycfg_error(x->y, ycfg_get(x->y, k, "mode"), "control.mode", "range",
					   "'%s' is not an octal mode such as \"0660\"", mode);
			else
				c->control.mode = (uint32_t)v;
		}
		if (ycfg_string(x->y, k, "control", "group", false, group, sizeof(group)) == 0 &&
		    group[0]) {
			struct group *gr = getgrnam(group);
			if (gr)
				c->control.group = gr->gr_gid;
			else
				ycfg_error(x->y, ycfg_get(x->y, k, "group"), "control.group",
					   "unknown-name", "no group named '%s'", group);
		}
		read_role(x, k, "read", CTLSOCK_ROLE_READ);
		read_role(x, k, "operator", CTLSOCK_ROLE_OPERATOR);
	}
	read_devices(x, root);
	yaml_node_t *fl = ycfg_get(x->y, root, "fleet"); /* docs/fleet.md */
	if (fl)
		fleet_config_read(x->y, fl, &c->fleet);
}

static void defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->log_level = LOG_NOTICE;
	snprintf(c->state_file, sizeof(c->state_file), "%s", CONFIG_DEFAULT_STATE_FILE);
	snprintf(c->declog.dir, sizeof(c->declog.dir), "%s", CONFIG_DEFAULT_LOG_DIR);
	c->declog.max_bytes = CONFIG_DEFAULT_LOG_MAX_BYTES;
	c->declog.keep = CONFIG_DEFAULT_LOG_KEEP;
	c->declog.heartbeat_s = CONFIG_DEFAULT_LOG_HEARTBEAT_S;
	c->metrics.enabled = true;
	snprintf(c->metrics.listen, sizeof(c->metrics.listen), "%s", METRICS_DEFAULT_LISTEN);
	c->control.enabled = true;
	snprintf(c->control.socket, sizeof(c->control.socket), "%s", CTLSOCK_DEFAULT_PATH);
	c->control.mode = 0660;
	c->control.group = (gid_t)-1;
	fleet_config_defaults(&c->fleet);
}

static int finish(struct ycfg *y, struct config **out, struct diag_list *diags, size_t first)
{
	struct config *c = calloc(1, sizeof(*c));
	int rc = 0;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	defaults(c);
	snprintf(c->path, sizeof(c->path), "%s", y->file ? y->file : "");
	struct ctx x = { .y = y, .c = c };
	read_root(&x, ycfg_root(y));
	for (size_t i = first; i < diags->n; i++)
		if (diags->v[i].sev == DIAG_ERROR)
			rc = -EINVAL;
	if (rc) {
		config_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int config_load(const char *path, struct config **out, struct diag_list *diags)
{
	struct ycfg y;
	size_t first = diags->n;
	int rc = ycfg_load_file(&y, path, diags);
	if (rc == 0)
		rc = finish(&y, out, diags, first);
	else
		*out = NULL;
	ycfg_fini(&y);
	return rc;
}

int config_load_string(const char *name, const char *text, size_t len, struct config **out,
		       struct diag_list *diags)
{
	struct ycfg y;
	size_t first = diags->n;
	int rc = ycfg_load_string(&y, name, text, len, diags);
	if (rc == 0)
		rc = finish(&y, out, diags, first);
	else
		*out = NULL;
	ycfg_fini(&y);
	return rc;
}

void config_free(struct config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < CONFIG_MAX_DEVICES; i++) {
		for (size_t k = 0; k < c->dev[i].n_opts; k++) {
			free(c->dev[i].keys[k]);
			free(c->dev[i].values[k]);
		}
	}
	free(c);
}

bool config_reloadable(const struct config *a, const struct config *b, char *why, size_t len)
{
	int line, col;
	return config_reloadable_at(a, b, why, len, &line, &col);
}

bool config_reloadable_at(const struct config *a, const struct config *b, char *why, size_t len,
			  int *line, int *col)
{
	*line = *col = 0;
	if (strcmp(a->declog.dir, b->declog.dir) || a->declog.max_bytes != b->declog.max_bytes ||
	    a->declog.keep != b->declog.keep || a->declog.compact != b->declog.compact ||
	    a->declog.heartbeat_s != b->declog.heartbeat_s || a->declog.compress != b->declog.compress) {
		snprintf(why, len, "decision_log changed: restart govd");
		return false;
	}
	if (strcmp(a->state_file, b->state_file)) {
		snprintf(why, len, "state_file changed (%s -> %s): restart govd", a->state_file,
			 b->state_file);
		return false;
	}
	if (a->n_devices != b->n_devices) {
		snprintf(why, len, "number of devices changed (%zu -> %zu): restart govd",
			 a->n_devices, b->n_devices);
		return false;
	}
	for (size_t i = 0; i < a->n_devices; i++) {
		const struct config_device *x = &a->dev[i], *y = &b->dev[i];
		bool same = !strcmp(x->name, y->name) && !strcmp(x->backend, y->backend) &&
			    x->n_opts == y->n_opts && x->time_scale == y->time_scale;
		for (size_t k = 0; same && k < x->n_opts; k++)
			same = !strcmp(x->keys[k], y->keys[k]) && !strcmp(x->values[k], y->values[k]);
		if (!same) {
			*line = y->line;
			*col = y->col;
			snprintf(why, len,
				 "devices[%zu] (%s) changed name, backend, options or time_scale: "
				 "restart govd",
				 i, x->name);
			return false;
		}
	}
	if (a->metrics.enabled != b->metrics.enabled || strcmp(a->metrics.listen, b->metrics.listen) ||
	    a->control.enabled != b->control.enabled || strcmp(a->control.socket, b->control.socket) ||
	    a->control.mode != b->control.mode || a->control.group != b->control.group) {
		snprintf(why, len, "metrics or control socket address changed: restart govd");
		return false;
	}
	if (memcmp(&a->fleet, &b->fleet, sizeof(a->fleet))) {
		snprintf(why, len, "fleet section changed: restart govd");
		return false;
	}
	return true;
}

/* Entry i as copy k of its expansion: the selector option dropped, the
 * device's own one set, named by it. */
static int expand_copy(const struct config_device *src, const struct hal_expansion *x, size_t k,
		       struct config_device *dst)
{
	*dst = *src;
	dst->n_opts = 0;
	snprintf(dst->name, sizeof(dst->name), "%s", x->value[k]);
	for (size_t o = 0; o <= src->n_opts; o++) {
		/* the entry's options but the selector, then the device's own */
		bool own = o == src->n_opts;
		if (!own && (!strcmp(src->keys[o], x->drop_key) || !strcmp(src->keys[o], x->set_key)))
			continue;
		char *key = strdup(own ? x->set_key : src->keys[o]);
		char *val = strdup(own ? x->value[k] : src->values[o]);
		if (!key || !val) {
			free(key);
			free(val);
			return -ENOMEM;
		}
		dst->keys[dst->n_opts] = key;
		dst->values[dst->n_opts++] = val;
	}
	return 0;
}

int config_expand(struct config *c, struct diag_list *diags)
{
	struct config_device *out = calloc(CONFIG_MAX_DEVICES, sizeof(*out));
	struct hal_expansion *x = malloc(sizeof(*x));
	size_t n = 0;
	int rc = out && x ? 0 : -ENOMEM;
	for (size_t i = 0; i < c->n_devices && !rc; i++) {
		struct hal_dev_cfg hc;
		struct diag_list local = { 0 };
		config_dev_cfg(&c->dev[i], &hc);
		rc = hal_expand(&hc, x, &local);
		for (size_t k = 0; k < local.n; k++) {
			char kp[160];
			snprintf(kp, sizeof(kp), "devices[%zu]%s%s", i, local.v[k].path[0] ? "." : "",
				 local.v[k].path);
			diag_add(diags, local.v[k].sev, c->path, c->dev[i].line, c->dev[i].col, kp,
				 local.v[k].code, "%s", local.v[k].msg);
		}
		diag_clear(&local);
		if (rc)
			break;
		if (x->n == 0) {
			/* one device: moved as is (its option strings change owner) */
			out[n++] = c->dev[i];
			c->dev[i].n_opts = 0;
			continue;
		}
		if (n + x->n > CONFIG_MAX_DEVICES) {
			diag_add(diags, DIAG_ERROR, c->path, c->dev[i].line, c->dev[i].col, "devices",
				 "range", "devices[%zu] stands for %zu devices: %zu in all, at most %d",
				 i, x->n, n + x->n, CONFIG_MAX_DEVICES);
			rc = -E2BIG;
			break;
		}
		for (size_t k = 0; k < x->n && !rc; k++)
			rc = expand_copy(&c->dev[i], x, k, &out[n++]);
	}
	for (size_t i = 0; i < n && !rc; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(out[i].name, out[j].name)) {
				diag_add(diags, DIAG_ERROR, c->path, out[i].line, out[i].col, "devices",
					 "duplicate", "device '%s' twice (an entry that selects every "
					 "device and one that names it)", out[i].name);
				rc = -EINVAL;
				break;
			}
	if (!rc) {
		/* the old entries are empty or moved: free what is left */
		for (size_t i = 0; i < c->n_devices; i++)
			for (size_t k = 0; k < c->dev[i].n_opts; k++) {
				free(c->dev[i].keys[k]);
				free(c->dev[i].values[k]);
			}
		memcpy(c->dev, out, n * sizeof(*out));
		for (size_t i = n; i < CONFIG_MAX_DEVICES; i++)
			c->dev[i].n_opts = 0;
		c->n_devices = n;
	} else if (out) {
		/* c is only fit for config_free now: what moved is freed here */
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < out[i].n_opts; k++) {
				free(out[i].keys[k]);
				free(out[i].values[k]);
			}
	}
	free(out);
	free(x);
	return rc;
}

void config_dev_cfg(const struct config_device *d, struct hal_dev_cfg *out)
{
	memset(out, 0, sizeof(*out));
	out->name = d->name;
	out->backend = d->backend;
	out->n_opts = d->n_opts;
	out->keys = (const char *const *)d->keys;
	out->values = (const char *const *)d->values;
}
