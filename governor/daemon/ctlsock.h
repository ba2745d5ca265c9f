/* The control socket: a Unix stream socket (mode 0660) on which govctl asks
 * govd for its status and operators change its budget, hold it or reload it.
 * Every request's peer credentials (SO_PEERCRED, plus SO_PEERGROUPS for
 * supplementary groups, as the kernel recorded them at connect) are matched
 * against the allow-list in force, with two roles:
 * read (status) and operator (everything; implies read). Anything else, or
 * anyone else, is refused with a reply and logged.
 *
 * Protocol: one JSON object per line each way (docs/control-socket.md).
 *   {"cmd":"status"}
 *   {"cmd":"set","name":"budget-w","value":450}
 *   {"cmd":"hold"}  {"cmd":"resume"}  {"cmd":"reload"}
 * Reply: {"ok":true,...} or {"ok":false,"code":"denied|bad-request|failed",
 * "error":"..."}.
 *
 * The daemon polls one fd (ctlsock_fd, an epoll fd holding the listening
 * socket and its clients) and calls ctlsock_handle when it is readable;
 * handle never blocks. It calls back into the daemon through struct
 * ctlsock_ops, so this file knows nothing about the daemon. */
#ifndef GOVD_GOVERNOR_CTLSOCK_H
#define GOVD_GOVERNOR_CTLSOCK_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/diag.h"

#define CTLSOCK_DEFAULT_PATH "/run/govd/govd.sock"
#define CTL_ACL_MAX 32          /* users (or groups) per role */
#define CTL_PEER_GROUPS 64      /* supplementary groups looked at */
#define CTL_LINE_MAX 4096       /* longest request line */
#define CTL_MAX_CLIENTS 8       /* more: the idlest of the lowest role gives way */
#define CTL_OPERATOR_RESERVE 2  /* slots peers without the operator role never hold */

enum ctlsock_role { CTLSOCK_ROLE_NONE, CTLSOCK_ROLE_READ, CTLSOCK_ROLE_OPERATOR };

struct ctlsock_acl_list {
	size_t n_uids, n_gids;
	uid_t uids[CTL_ACL_MAX];
	gid_t gids[CTL_ACL_MAX];
};

/* Who may do what. Nobody is implicit, root included: an empty list
 * refuses everyone. */
struct ctlsock_acl {
	struct ctlsock_acl_list read, op;
};

/* A connected peer as the kernel reports it. */
struct ctlsock_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	size_t n_groups;
	gid_t groups[CTL_PEER_GROUPS];
};

/* The strongest role the peer has (pure). */
enum ctlsock_role ctlsock_acl_role(const struct ctlsock_acl *acl, const struct ctlsock_peer *peer);
/* Adds a user (group = false) or group by name or numeric id to the role's
 * list; an unknown name or a full list is an error in diags at
 * file:line:col (the config entry). */
int ctlsock_acl_add(struct ctlsock_acl *acl, enum ctlsock_role role, bool group, const char *name,
		const char *file, int line, int col, struct diag_list *diags);
const char *ctlsock_role_name(enum ctlsock_role r);

enum ctlsock_cmd { CTLSOCK_CMD_STATUS, CTLSOCK_CMD_SET_BUDGET_W, CTLSOCK_CMD_HOLD, CTLSOCK_CMD_RESUME, CTLSOCK_CMD_RELOAD,
	       CTLSOCK_CMD_N };

struct ctlsock_request {
	enum ctlsock_cmd cmd;
	double value; /* set budget-w: W, finite and > 0 */
};

/* One request line (without its newline); 0, or -EINVAL with the reason in
 * err (pure). Unknown commands, parameters and keys are errors. */
int ctlsock_parse_request(const char *line, size_t len, struct ctlsock_request *out, char *err,
		      size_t errlen);
enum ctlsock_role ctlsock_cmd_role(enum ctlsock_cmd c); /* the role a command needs */
const char *ctlsock_cmd_name(enum ctlsock_cmd c);   /* "status", "set budget-w", ... */

/* The daemon's side. Return 0, or -errno to fail the command (the reply
 * says "failed" with strerror, or the "error" member the callback set in
 * reply). A NULL member fails its command as not supported. */
struct ctlsock_ops {
	int (*status)(void *ctx, json_t *out);               /* fill the object */
	int (*set_budget_w)(void *ctx, double budget_w, json_t *reply);
	int (*hold)(void *ctx, bool hold, json_t *reply);    /* false: resume */
	int (*reload)(void *ctx, json_t *reply);
};

struct ctlsock_cfg {
	const char *path;  /* NULL: CTLSOCK_DEFAULT_PATH */
	mode_t mode;       /* 0: 0660 */
	gid_t group;       /* socket file's group; (gid_t)-1: leave as created */
	struct ctlsock_acl acl;
};

struct ctlsock;
/* Creates and listens. A stale socket at path (nobody listening) is
 * replaced; a live one is -EADDRINUSE; anything else at path is left alone
 * (-EEXIST). Errors in diags. */
int ctlsock_open(struct ctlsock **out, const struct ctlsock_cfg *cfg, struct diag_list *diags);
/* Poll this fd for POLLIN (it is an epoll fd). */
int ctlsock_fd(const struct ctlsock *cs);
/* Accepts, reads, answers whatever is ready; never blocks. 0 or -errno
 * (only for a failure of the socket itself; client errors are handled). */
int ctlsock_handle(struct ctlsock *cs, const struct ctlsock_ops *ops, void *ctx);
/* A new allow-list (after a reload): every request from now on, on
 * connections already open too (roles are judged per request). */
void ctlsock_set_acl(struct ctlsock *cs, const struct ctlsock_acl *acl);
/* Closes every connection and removes the socket file if it is still ours. */
void ctlsock_close(struct ctlsock *cs);

/* The client's side (govctl): one request, one reply. 0, or -errno with a
 * message in err (socket missing, permission, timeout, garbled reply). */
int ctlsock_request(const char *path, const json_t *req, json_t **reply, int timeout_ms, char *err,
		size_t errlen);

#endif
