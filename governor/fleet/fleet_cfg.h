/* The `fleet:` section of govd's config (docs/fleet.md): which etcd, which
 * group, this node's priority and safe budget, and the timings. Read by
 * governor/fleet/fleet_cfg.c for config.c; used by governor/fleet/fleet.c. */
#ifndef GOVD_GOVERNOR_FLEET_CFG_H
#define GOVD_GOVERNOR_FLEET_CFG_H
#include <stdbool.h>
#include <stdint.h>

#include "common/ycfg.h"

#define FLEET_ENDPOINTS_LEN 1024
#define FLEET_ID_LEN 64

#define FLEET_PATH_LEN 256

struct fleet_config {
	bool enabled;                         /* the section is there */
	char endpoints[FLEET_ENDPOINTS_LEN];  /* comma-joined http(s) URLs */
	char cluster[FLEET_ID_LEN], group[FLEET_ID_LEN];
	int priority;                         /* higher is served first */
	double safe_budget_w;                 /* when the grant is stale or etcd gone (<= last grant) */
	double floor_w, max_w;                /* 0: the devices' power-limit range */
	uint32_t period_ms;                   /* the agent's round */
	uint32_t lease_ttl_s;                 /* node record and allocator leadership */
	uint32_t grant_ttl_ms;                /* a grant not refreshed for this long is stale */
	uint32_t refresh_periods;             /* record rewritten at least every N rounds */
	uint32_t timeout_ms;                  /* one etcd request, per endpoint */
	bool allocator;                       /* may be elected allocator */
	double up_frac, down_frac;            /* allocator hysteresis */
	/* TLS to etcd (https:// endpoints): the CA that signed etcd's server
	 * certificate, and this node's client certificate and key where etcd
	 * asks for one (--client-cert-auth). "": the system's CAs, no client
	 * certificate. */
	char tls_ca[FLEET_PATH_LEN], tls_cert[FLEET_PATH_LEN], tls_key[FLEET_PATH_LEN];
	/* etcd's user/password authentication: the user, and the file that
	 * holds its password (a mounted Secret; read when the client starts,
	 * never kept in the config). "": none. */
	char auth_user[64], auth_password_file[FLEET_PATH_LEN];
};

void fleet_config_defaults(struct fleet_config *f);
/* The section at node `fleet` (a map): errors with file:line:col into the
 * ycfg's diags. */
void fleet_config_read(struct ycfg *y, yaml_node_t *node, struct fleet_config *f);
/* The password in fleet.auth.password_file: its first line, without the
 * newline. 0, or a negative errno with err saying why (unreadable, empty,
 * too long). */
int fleet_read_password(const char *path, char *out, size_t len, char *err, size_t errlen);
/* fleet.auth on a client: the password read from its file and handed to
 * e (etcd_set_auth), never kept beyond. No user: nothing. 0, or a negative
 * errno with err saying why (the file, or the name's length). */
struct etcd;
int fleet_etcd_auth(struct etcd *e, const char *user, const char *password_file, char *err,
		    size_t errlen);

#endif
