/* Control socket: allow-list, request parsing, the non-blocking server and
 * the blocking client. Protocol and roles: docs/control-socket.md. */
/* struct ucred, accept4 */
#define _GNU_SOURCE
#include "governor/daemon/ctlsock.h"

#include <errno.h>
#include <grp.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/ratelimit.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux 4.13 */
#endif

/* A client that stops reading its replies is dropped past this. */
#define CTL_OUT_MAX (1u << 20)
/* Requests answered per client and wakeup. */
#define CTL_LINES_PER_CALL 8

/* ---- allow-list ---------------------------------------------------------- */

static bool has_uid(const struct ctlsock_acl_list *l, uid_t u)
{
	for (size_t i = 0; i < l->n_uids; i++)
		if (l->uids[i] == u)
			return true;
	return false;
}

static bool has_gid(const struct ctlsock_acl_list *l, const struct ctlsock_peer *p)
{
	for (size_t i = 0; i < l->n_gids; i++) {
		if (l->gids[i] == p->gid)
			return true;
		for (size_t k = 0; k < p->n_groups && k < CTL_PEER_GROUPS; k++)
			if (l->gids[i] == p->groups[k])
				return true;
	}
	return false;
}

static bool listed(const struct ctlsock_acl_list *l, const struct ctlsock_peer *p)
{
	return has_uid(l, p->uid) || has_gid(l, p);
}

enum ctlsock_role ctlsock_acl_role(const struct ctlsock_acl *acl, const struct ctlsock_peer *peer)
{
	if (listed(&acl->op, peer))
		return CTLSOCK_ROLE_OPERATOR;
	if (listed(&acl->read, peer))
		return CTLSOCK_ROLE_READ;
	return CTLSOCK_ROLE_NONE;
}

const char *ctlsock_role_name(enum ctlsock_role r)
{
	switch (r) {
	case CTLSOCK_ROLE_READ: return "read";
	case CTLSOCK_ROLE_OPERATOR: return "operator";
	default: return "none";
	}
}

static bool parse_id(const char *s, unsigned long *out)
{
	char *end;
	if (!*s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return !errno && !*end && *out < (unsigned long)UINT32_MAX;
}

int ctlsock_acl_add(struct ctlsock_acl *acl, enum ctlsock_role role, bool group, const char *name,
		const char *file, int line, int col, struct diag_list *diags)
{
	struct ctlsock_acl_list *l = role == CTLSOCK_ROLE_OPERATOR ? &acl->op : &acl->read;
	const char *what = group ? "group" : "user";
	char path[32];
	unsigned long id;
	char buf[4096];

	snprintf(path, sizeof(path), "control.%s.%ss", role == CTLSOCK_ROLE_OPERATOR ? "operator" : "read",
		 what);
	if (role == CTLSOCK_ROLE_NONE || !name || !*name) {
		diag_add(diags, DIAG_ERROR, file, line, col, path, "bad-value",
			 "expected a %s name or numeric id", what);
		return -EINVAL;
	}
	if ((group ? l->n_gids : l->n_uids) >= CTL_ACL_MAX) {
		diag_add(diags, DIAG_ERROR, file, line, col, path, "too-many",
			 "at most %d %ss per role", CTL_ACL_MAX, what);
		return -ENOSPC;
	}
	if (!parse_id(name, &id)) {
		bool found;
		int rc;
		if (group) {
			struct group gr, *res = NULL;
			rc = getgrnam_r(name, &gr, buf, sizeof(buf), &res);
			if ((found = res != NULL))
				id = res->gr_gid;
		} else {
			struct passwd pw, *res = NULL;
			rc = getpwnam_r(name, &pw, buf, sizeof(buf), &res);
			if ((found = res != NULL))
				id = res->pw_uid;
		}
		if (!found) {
			diag_add(diags, DIAG_ERROR, file, line, col, path, "unknown-name",
				 "no %s named '%s'%s%s", what, name, rc ? ": " : "",
				 rc ? strerror(rc) : "");
			return -ENOENT;
		}
	}
	if (group)
		l->gids[l->n_gids++] = (gid_t)id;
	else
		l->uids[l->n_uids++] = (uid_t)id;
	return 0;
}

/* ---- requests ------------------------------------------------------------ */

static const char *const cmd_names[CTLSOCK_CMD_N] = { "status", "set budget-w", "hold", "resume",
						  "reload" };

const char *ctlsock_cmd_name(enum ctlsock_cmd c)
{
	return (unsigned)c < CTLSOCK_CMD_N ? cmd_names[c] : "?";
}

enum ctlsock_role ctlsock_cmd_role(enum ctlsock_cmd c)
{
	return c == CTLSOCK_CMD_STATUS ? CTLSOCK_ROLE_READ : CTLSOCK_ROLE_OPERATOR;
}

static bool only_keys(json_t *o, const char *const *keys, size_t n, char *err, size_t errlen)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		bool ok = false;
		for (size_t i = 0; i < n; i++)
			ok |= !strcmp(k, keys[i]);
		if (!ok) {
			snprintf(err, errlen, "unknown key '%.64s'", k);
			return false;
		}
	}
	return true;
}

int ctlsock_parse_request(const char *line, size_t len, struct ctlsock_request *out, char *err,
		      size_t errlen)
{
	json_error_t je;
	int rc = -EINVAL;
	json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);

	memset(out, 0, sizeof(*out));
	if (!o) {
		snprintf(err, errlen, "not JSON: %s (column %d)", je.text, je.column);
		return -EINVAL;
	}
	if (!json_is_object(o)) {
		snprintf(err, errlen, "expected a JSON object");
		goto out;
	}
	const char *cmd = json_string_value(json_object_get(o, "cmd"));
	if (!cmd) {
		snprintf(err, errlen, "missing string member 'cmd'");
		goto out;
	}
	static const char *const plain[] = { "cmd" };
	static const char *const set[] = { "cmd", "name", "value" };
	if (!strcmp(cmd, "status") || !strcmp(cmd, "hold") || !strcmp(cmd, "resume") ||
	    !strcmp(cmd, "reload")) {
		if (!only_keys(o, plain, 1, err, errlen))
			goto out;
		out->cmd = !strcmp(cmd, "status") ? CTLSOCK_CMD_STATUS
			 : !strcmp(cmd, "hold")   ? CTLSOCK_CMD_HOLD
			 : !strcmp(cmd, "resume") ? CTLSOCK_CMD_RESUME
						  : CTLSOCK_CMD_RELOAD;
		rc = 0;
	} else if (!strcmp(cmd, "set")) {
		if (!only_keys(o, set, 3, err, errlen))
			goto out;
		const char *name = json_string_value(json_object_get(o, "name"));
		json_t *v = json_object_get(o, "value");
		if (!name || strcmp(name, "budget-w")) {
			snprintf(err, errlen, "set: unknown parameter '%.64s' (settable: budget-w)",
				 name ? name : "");
			goto out;
		}
		if (!json_is_number(v) || !(json_number_value(v) > 0) ||
		    !isfinite(json_number_value(v))) {
			snprintf(err, errlen, "set budget-w: value must be a number of watts > 0");
			goto out;
		}
		out->cmd = CTLSOCK_CMD_SET_BUDGET_W;
		out->value = json_number_value(v);
		rc = 0;
	} else {
		snprintf(err, errlen, "unknown command '%.64s' (status, set, hold, resume, reload)", cmd);
	}
out:
	json_decref(o);
	return rc;
}

/* ---- server -------------------------------------------------------------- */

/* Kinds of peer-triggered warnings, each rate-limited on its own. */
enum { CTL_RL_NOT_LISTED, CTL_RL_BAD_REQUEST, CTL_RL_ROLE, CTL_RL_LONG_LINE, CTL_RL_CREDS,
       CTL_RL_FULL, CTL_RL_N };

struct client {
	int fd;              /* -1: free slot */
	struct ctlsock_peer peer;
	enum ctlsock_role role;  /* at accept, for eviction (requests are judged on the list in force) */
	uint64_t active;     /* cs->tick when last heard from */
	char in[CTL_LINE_MAX + 1];
	size_t in_n;
	char *out;
	size_t out_n, out_off;
	bool closing;        /* close once out is flushed */
	uint32_t events;     /* registered with epoll */
};

struct ctlsock {
	int listen_fd, ep_fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;
	ino_t ino;
	struct ctlsock_acl acl;
	uint64_t tick;
	struct client cl[CTL_MAX_CLIENTS];
	struct ratelimit rl[CTL_RL_N];
};

int ctlsock_fd(const struct ctlsock *cs)
{
	return cs->ep_fd;
}

void ctlsock_set_acl(struct ctlsock *cs, const struct ctlsock_acl *acl)
{
	cs->acl = *acl;
}

static void client_close(struct ctlsock *cs, struct client *c)
{
	if (c->fd < 0)
		return;
	epoll_ctl(cs->ep_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->out);
	c->out = NULL;
	c->out_n = c->out_off = c->in_n = 0;
	c->fd = -1;
}

static int read_peer(int fd, struct ctlsock_peer *p)
{
	struct ucred uc;
	socklen_t l = sizeof(uc);
	memset(p, 0, sizeof(*p));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l))
		return -errno;
	p->pid = uc.pid;
	p->uid = uc.uid;
	p->gid = uc.gid;
	/* Supplementary groups where the kernel offers them; when a peer has
	 * more than fit, ERANGE: match on the primary group only. */
	socklen_t gl = sizeof(p->groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, p->groups, &gl) == 0)
		p->n_groups = gl / sizeof(gid_t);
	return 0;
}

static bool line_pending(const struct client *c)
{
	return c->in_n && memchr(c->in, '\n', c->in_n);
}

/* Level-triggered interest from the client's state. Input is read only
 * while nothing waits to be sent or answered (backpressure: a client that
 * does not read its replies fills its own socket, not our memory or our
 * loop). EPOLLOUT also stands for "lines left to answer": the socket is
 * writable at once unless the client lags. A closing client is never
 * watched for input: its EOF or further data would wake the loop forever. */
static void ep_update(struct ctlsock *cs, struct client *c)
{
	bool out = c->out_off < c->out_n, pending = !c->closing && line_pending(c);
	uint32_t want = (!c->closing && !out && !pending ? EPOLLIN : 0) |
			(out || pending ? EPOLLOUT : 0);
	if (c->events == want)
		return;
	struct epoll_event ev = { .events = want, .data.u32 = (uint32_t)(c - cs->cl) + 1 };
	epoll_ctl(cs->ep_fd, EPOLL_CTL_MOD, c->fd, &ev);
	c->events = want;
}

/* Who gives way when all slots are taken (one judgement): the idlest
 * connection of the lowest role present, never one of a higher role than
 * the newcomer's; and peers without the operator role hold at most
 * CTL_MAX_CLIENTS - CTL_OPERATOR_RESERVE slots, so a read-role or unknown
 * peer churning connections cannot evict an operator before its request
 * is read, nor keep one out. NULL (with *free_slot NULL): the newcomer is
 * refused. */
static struct client *pick_slot(struct ctlsock *cs, enum ctlsock_role role, struct client **free_slot)
{
	struct client *victim = NULL;
	size_t non_op = 0;
	*free_slot = NULL;
	for (size_t i = 0; i < CTL_MAX_CLIENTS; i++) {
		struct client *c = &cs->cl[i];
		if (c->fd < 0) {
			if (!*free_slot)
				*free_slot = c;
			continue;
		}
		non_op += c->role < CTLSOCK_ROLE_OPERATOR;
		if (c->role > role)
			continue;
		if (!victim || c->role < victim->role ||
		    (c->role == victim->role && c->active < victim->active))
			victim = c;
	}
	if (*free_slot && (role == CTLSOCK_ROLE_OPERATOR ||
			   non_op < CTL_MAX_CLIENTS - CTL_OPERATOR_RESERVE))
		return NULL;
	*free_slot = NULL;
	/* At the non-operator share a non-operator evicts only its own kind. */
	if (victim && role < CTLSOCK_ROLE_OPERATOR && victim->role >= CTLSOCK_ROLE_OPERATOR)
		victim = NULL;
	return victim;
}

/* A warning any peer can trigger: rate-limited per kind (common/ratelimit.h). */
#define CTL_WARN(cs, kind, fmt, ...)                                                       \
	do {                                                                               \
		uint64_t n_;                                                               \
		if (ratelimit_hit(&(cs)->rl[kind], govd_mono_ms(), &n_)) {                 \
			char sfx_[48] = "";                                                \
			if (n_ > 1)                                                        \
				snprintf(sfx_, sizeof(sfx_), " (%llu such in this episode)", \
					 (unsigned long long)n_);                          \
			log_warn(fmt "%s", __VA_ARGS__, sfx_);                             \
		}                                                                          \
	} while (0)

static void do_accept(struct ctlsock *cs)
{
	/* Bounded: a peer connecting in a loop cannot keep us here. */
	for (int k = 0; k < CTL_MAX_CLIENTS; k++) {
		int fd = accept4(cs->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_warn("ctl: accept: %s", strerror(errno));
			if (errno == EINTR)
				continue;
			return;
		}
		struct ctlsock_peer peer;
		if (read_peer(fd, &peer)) {
			CTL_WARN(cs, CTL_RL_CREDS, "ctl: no peer credentials: %s; connection closed",
				 strerror(errno));
			close(fd);
			continue;
		}
		enum ctlsock_role role = ctlsock_acl_role(&cs->acl, &peer);
		struct client *c, *victim = pick_slot(cs, role, &c);
		if (!c && !victim) {
			CTL_WARN(cs, CTL_RL_FULL, "ctl: %d connections open, uid %u (role %s) gives way to none "
				 "of them: refused", CTL_MAX_CLIENTS, (unsigned)peer.uid, ctlsock_role_name(role));
			close(fd);
			continue;
		}
		if (!c) {
			CTL_WARN(cs, CTL_RL_FULL, "ctl: %d connections open: dropping uid %u's idlest one "
				 "(role %s) for uid %u (role %s)", CTL_MAX_CLIENTS,
				 (unsigned)victim->peer.uid, ctlsock_role_name(victim->role), (unsigned)peer.uid,
				 ctlsock_role_name(role));
			client_close(cs, victim);
			c = victim;
		}
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->peer = peer;
		c->role = role;
		c->active = ++cs->tick;
		c->events = EPOLLIN;
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)(c - cs->cl) + 1 };
		if (epoll_ctl(cs->ep_fd, EPOLL_CTL_ADD, fd, &ev)) {
			log_warn("ctl: epoll: %s", strerror(errno));
			close(fd);
			c->fd = -1;
		}
	}
}

static void queue_reply(struct client *c, json_t *reply)
{
	char *s = json_dumps(reply, JSON_COMPACT);
	json_decref(reply);
	if (!s) {
		c->closing = true;
		return;
	}
	size_t n = strlen(s);
	if (c->out_n - c->out_off + n + 1 > CTL_OUT_MAX) {
		free(s);
		log_warn("ctl: uid %u does not read its replies; connection closed",
			 (unsigned)c->peer.uid);
		c->closing = true;
		c->out_n = c->out_off = 0;
		return;
	}
	char *o = realloc(c->out, c->out_n + n + 1);
	if (!o) {
		free(s);
		c->closing = true;
		return;
	}
	memcpy(o + c->out_n, s, n);
	o[c->out_n + n] = '\n';
	c->out = o;
	c->out_n += n + 1;
	free(s);
}

static json_t *error_reply(const char *code, const char *msg)
{
	return json_pack("{s:b, s:s, s:s}", "ok", 0, "code", code, "error", msg);
}

/* Printable, bounded copy of what a peer sent, for the log. */
static void sanitize(const char *in, size_t n, char *out, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 4 < len; i++)
		out[o++] = (in[i] >= 0x20 && in[i] < 0x7f) ? in[i] : '?';
	if (n && o + 4 >= len) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

static void run_cmd(struct client *c, const struct ctlsock_request *rq, const struct ctlsock_ops *ops,
		    void *ctx)
{
	json_t *reply = json_pack("{s:b, s:s}", "ok", 1, "cmd", ctlsock_cmd_name(rq->cmd));
	json_t *st = NULL;
	int rc;

	if (!reply) {
		c->closing = true;
		return;
	}
	switch (rq->cmd) {
	case CTLSOCK_CMD_STATUS:
		st = json_object();
		rc = ops->status ? ops->status(ctx, st) : -EOPNOTSUPP;
		if (!rc)
			json_object_set(reply, "status", st);
		json_decref(st);
		break;
	case CTLSOCK_CMD_SET_BUDGET_W:
		rc = ops->set_budget_w ? ops->set_budget_w(ctx, rq->value, reply) : -EOPNOTSUPP;
		break;
	case CTLSOCK_CMD_HOLD:
	case CTLSOCK_CMD_RESUME:
		rc = ops->hold ? ops->hold(ctx, rq->cmd == CTLSOCK_CMD_HOLD, reply) : -EOPNOTSUPP;
		break;
	case CTLSOCK_CMD_RELOAD:
		rc = ops->reload ? ops->reload(ctx, reply) : -EOPNOTSUPP;
		break;
	default:
		rc = -EINVAL;
	}
	if (rc) {
		json_object_set_new(reply, "ok", json_false());
		json_object_set_new(reply, "code", json_string("failed"));
		if (!json_is_string(json_object_get(reply, "error")))
			json_object_set_new(reply, "error", json_string(strerror(-rc)));
		log_warn("ctl: %s by uid %u (pid %d) failed: %s", ctlsock_cmd_name(rq->cmd),
			 (unsigned)c->peer.uid, (int)c->peer.pid,
			 json_string_value(json_object_get(reply, "error")));
	} else if (rq->cmd != CTLSOCK_CMD_STATUS) {
		if (rq->cmd == CTLSOCK_CMD_SET_BUDGET_W)
			log_notice("ctl: set budget-w %g by uid %u (pid %d)", rq->value,
				   (unsigned)c->peer.uid, (int)c->peer.pid);
		else
			log_notice("ctl: %s by uid %u (pid %d)", ctlsock_cmd_name(rq->cmd),
				   (unsigned)c->peer.uid, (int)c->peer.pid);
	}
	queue_reply(c, reply);
}

static void do_line(struct ctlsock *cs, struct client *c, const char *line, size_t n,
		    const struct ctlsock_ops *ops, void *ctx)
{
	struct ctlsock_request rq;
	char err[256], shown[96];
	int prc = ctlsock_parse_request(line, n, &rq, err, sizeof(err));
	char who[64];
	/* Judged per request on the allow-list in force: a reload that drops
	 * someone applies to connections already open. */
	enum ctlsock_role role = ctlsock_acl_role(&cs->acl, &c->peer);

	snprintf(who, sizeof(who), "uid %u gid %u pid %d", (unsigned)c->peer.uid, (unsigned)c->peer.gid,
		 (int)c->peer.pid);
	/* Not on the list: refused whatever it asked, and nothing more read. */
	if (role == CTLSOCK_ROLE_NONE) {
		if (prc)
			sanitize(line, n, shown, sizeof(shown));
		CTL_WARN(cs, CTL_RL_NOT_LISTED, "ctl: refused '%s' from %s: not on the control allow-list",
			 prc ? shown : ctlsock_cmd_name(rq.cmd), who);
		queue_reply(c, error_reply("denied", "permission denied: not on the allow-list"));
		c->closing = true;
		return;
	}
	if (prc) {
		sanitize(line, n, shown, sizeof(shown));
		CTL_WARN(cs, CTL_RL_BAD_REQUEST, "ctl: refused bad request '%s' from %s: %s", shown, who, err);
		queue_reply(c, error_reply("bad-request", err));
		return;
	}
	if (role < ctlsock_cmd_role(rq.cmd)) {
		char msg[128];
		CTL_WARN(cs, CTL_RL_ROLE, "ctl: refused '%s' from %s: role %s, needs %s", ctlsock_cmd_name(rq.cmd),
			 who, ctlsock_role_name(role), ctlsock_role_name(ctlsock_cmd_role(rq.cmd)));
		snprintf(msg, sizeof(msg), "permission denied: '%s' needs the %s role",
			 ctlsock_cmd_name(rq.cmd), ctlsock_role_name(ctlsock_cmd_role(rq.cmd)));
		queue_reply(c, error_reply("denied", msg));
		return;
	}
	run_cmd(c, &rq, ops, ctx);
}

/* Answers at most CTL_LINES_PER_CALL complete lines, then reads more only
 * if they are all answered and nothing waits to be sent: one client's
 * burst costs the loop a few requests per wakeup, the rest waits in its
 * socket. */
static void do_read(struct ctlsock *cs, struct client *c, const struct ctlsock_ops *ops, void *ctx)
{
	int budget = CTL_LINES_PER_CALL;
	if (c->out_off < c->out_n)
		return; /* woken writable but still not flushed */
	for (;;) {
		char *nl;
		size_t off = 0;
		while (!c->closing && budget > 0 &&
		       (nl = memchr(c->in + off, '\n', c->in_n - off))) {
			do_line(cs, c, c->in + off, (size_t)(nl - (c->in + off)), ops, ctx);
			off = (size_t)(nl - c->in) + 1;
			budget--;
		}
		memmove(c->in, c->in + off, c->in_n - off);
		c->in_n -= off;
		if (c->closing || budget == 0 || c->out_off < c->out_n)
			return;
		if (c->in_n == CTL_LINE_MAX) {
			CTL_WARN(cs, CTL_RL_LONG_LINE, "ctl: refused a line over %d bytes from uid %u",
				 CTL_LINE_MAX, (unsigned)c->peer.uid);
			queue_reply(c, error_reply("bad-request", "request line too long"));
			c->closing = true;
			return;
		}
		ssize_t r = read(c->fd, c->in + c->in_n, CTL_LINE_MAX - c->in_n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				c->closing = true; /* reset by peer: nothing to flush to */
				c->out_n = c->out_off = 0;
			}
			return;
		}
		if (r == 0) {
			/* Half-closed: a last line without its newline still counts. */
			if (c->in_n)
				do_line(cs, c, c->in, c->in_n, ops, ctx);
			c->in_n = 0;
			c->closing = true;
			return;
		}
		c->in_n += (size_t)r;
	}
}

/* Writes what it can; false when the client is gone. */
static bool do_write(struct ctlsock *cs, struct client *c)
{
	while (c->out_off < c->out_n) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_n - c->out_off, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return true;
			return false;
		}
		c->out_off += (size_t)w;
	}
	c->out_off = c->out_n = 0;
	return !c->closing;
}

int ctlsock_handle(struct ctlsock *cs, const struct ctlsock_ops *ops, void *ctx)
{
	struct epoll_event ev[CTL_MAX_CLIENTS + 1];
	int n = epoll_wait(cs->ep_fd, ev, CTL_MAX_CLIENTS + 1, 0);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		uint32_t id = ev[i].data.u32;
		if (id == 0) {
			do_accept(cs);
			continue;
		}
		struct client *c = &cs->cl[id - 1];
		if (c->fd < 0)
			continue; /* closed earlier in this batch */
		c->active = ++cs->tick;
		/* Flush first: what was waiting goes before new answers. */
		if (!do_write(cs, c)) {
			client_close(cs, c);
			continue;
		}
		do_read(cs, c, ops, ctx);
		if (!do_write(cs, c))
			client_close(cs, c);
		else
			ep_update(cs, c);
	}
	return 0;
}

static bool path_fits(const char *path)
{
	return strlen(path) < sizeof(((struct sockaddr_un *)0)->sun_path);
}

static void set_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path, path, strlen(path) + 1);
}

/* Something already at path: a socket nobody listens on is ours to replace. */
static int clear_stale(const char *path, struct diag_list *diags)
{
	struct stat st;
	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		diag_add(diags, DIAG_ERROR, path, 0, 0, "control.socket", "exists",
			 "exists and is not a socket; not removed");
		return -EEXIST;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_un a;
	set_addr(&a, path);
	int rc = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : errno;
	close(fd);
	if (rc == 0) {
		diag_add(diags, DIAG_ERROR, path, 0, 0, "control.socket", "in-use",
			 "another process listens on this socket (is govd already running?)");
		return -EADDRINUSE;
	}
	if (rc != ECONNREFUSED) {
		diag_add(diags, DIAG_ERROR, path, 0, 0, "control.socket", "in-use",
			 "cannot tell whether the socket is in use: %s", strerror(rc));
		return -rc;
	}
	return unlink(path) ? -errno : 0;
}

int ctlsock_open(struct ctlsock **out, const struct ctlsock_cfg *cfg, struct diag_list *diags)
{
	const char *path = cfg->path ? cfg->path : CTLSOCK_DEFAULT_PATH;
	mode_t mode = cfg->mode ? cfg->mode : 0660;
	struct sockaddr_un a;
	struct stat st;
	int rc;

	*out = NULL;
	if (!path_fits(path) || !*path) {
		diag_add(diags, DIAG_ERROR, path, 0, 0, "control.socket", "bad-path",
			 "socket path empty or longer than %zu bytes", sizeof(a.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	struct ctlsock *cs = calloc(1, sizeof(*cs));
	if (!cs)
		return -ENOMEM;
	for (size_t i = 0; i < CTL_MAX_CLIENTS; i++)
		cs->cl[i].fd = -1;
	snprintf(cs->path, sizeof(cs->path), "%s", path);
	cs->acl = cfg->acl;
	if ((rc = clear_stale(path, diags))) {
		if (rc != -EEXIST && rc != -EADDRINUSE && !diag_count(diags, DIAG_ERROR))
			diag_add(diags, DIAG_ERROR, path, 0, 0, "control.socket", "io", "%s",
				 strerror(-rc));
		goto free_cs;
	}
	cs->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (cs->listen_fd < 0) {
		rc = -errno;
		goto free_cs;
	}
	set_addr(&a, path);
	/* bind creates the file with its final mode (umask = the complement),
	 * and the group is set with lchown: no chmod/chown by path that would
	 * follow a symlink swapped in meanwhile. Nobody can connect before
	 * listen() below. */
	mode_t old = umask(~mode & 0777);
	rc = bind(cs->listen_fd, (struct sockaddr *)&a, sizeof(a)) ? -errno : 0;
	umask(old);
	if (rc) {
		diag_add(diags, DIAG_ERROR, path, 0, 0, "control.socket", "bind", "cannot bind: %s",
			 strerror(-rc));
		goto close_listen;
	}
	if (cfg->group != (gid_t)-1 && lchown(path, (uid_t)-1, cfg->group)) {
		rc = -errno;
		diag_add(diags, DIAG_ERROR, path, 0, 0, "control.group", "chown",
			 "cannot give the socket to group %u: %s", (unsigned)cfg->group, strerror(-rc));
		goto unlink_path;
	}
	if (lstat(path, &st)) {
		rc = -errno;
		diag_add(diags, DIAG_ERROR, path, 0, 0, "control.socket", "io", "%s", strerror(-rc));
		goto unlink_path;
	}
	if (!S_ISSOCK(st.st_mode) || (st.st_mode & 0777) != (mode & 0777)) {
		rc = -EPERM;
		diag_add(diags, DIAG_ERROR, path, 0, 0, "control.mode", "chmod",
			 "socket created with mode %o, not %o", (unsigned)(st.st_mode & 07777),
			 (unsigned)mode);
		goto unlink_path;
	}
	cs->dev = st.st_dev;
	cs->ino = st.st_ino;
	if (listen(cs->listen_fd, CTL_MAX_CLIENTS)) {
		rc = -errno;
		goto unlink_path;
	}
	cs->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (cs->ep_fd < 0) {
		rc = -errno;
		goto unlink_path;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
	if (epoll_ctl(cs->ep_fd, EPOLL_CTL_ADD, cs->listen_fd, &ev)) {
		rc = -errno;
		goto close_ep;
	}
	*out = cs;
	return 0;

close_ep:
	close(cs->ep_fd);
unlink_path:
	unlink(path);
close_listen:
	close(cs->listen_fd);
free_cs:
	free(cs);
	return rc;
}

void ctlsock_close(struct ctlsock *cs)
{
	struct stat st;
	if (!cs)
		return;
	for (size_t i = 0; i < CTL_MAX_CLIENTS; i++)
		client_close(cs, &cs->cl[i]);
	close(cs->ep_fd);
	close(cs->listen_fd);
	/* A newer govd may have replaced the file: leave its socket alone. */
	if (lstat(cs->path, &st) == 0 && st.st_dev == cs->dev && st.st_ino == cs->ino)
		unlink(cs->path);
	free(cs);
}

/* ---- client -------------------------------------------------------------- */

int ctlsock_request(const char *path, const json_t *req, json_t **reply, int timeout_ms, char *err,
		size_t errlen)
{
	struct sockaddr_un a;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	char *line = NULL, *buf = NULL;
	size_t n = 0, cap = 0;
	int rc;

	*reply = NULL;
	if (!path_fits(path)) {
		snprintf(err, errlen, "%s: socket path too long", path);
		return -ENAMETOOLONG;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(-rc));
		return rc;
	}
	uint64_t deadline = govd_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	set_addr(&a, path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		rc = -errno;
		if (rc == -ENOENT || rc == -ECONNREFUSED)
			snprintf(err, errlen, "%s: %s (is govd running? --socket PATH)", path,
				 strerror(-rc));
		else if (rc == -EACCES)
			snprintf(err, errlen,
				 "%s: %s (the socket is mode 0660: are you in its group?)", path,
				 strerror(-rc));
		else
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		goto close_fd;
	}
	line = json_dumps(req, JSON_COMPACT);
	if (!line) {
		rc = -ENOMEM;
		snprintf(err, errlen, "cannot encode the request");
		goto close_fd;
	}
	size_t len = strlen(line);
	line[len] = '\n'; /* json_dumps' NUL becomes the newline; length kept below */
	for (size_t off = 0; off < len + 1;) {
		ssize_t w = send(fd, line + off, len + 1 - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = -errno;
			snprintf(err, errlen, "%s: sending: %s", path, strerror(-rc));
			goto free_line;
		}
		off += (size_t)w;
	}
	for (;;) {
		if (n + 4096 > cap) {
			if (cap >= CTL_OUT_MAX) {
				rc = -EMSGSIZE;
				snprintf(err, errlen, "%s: reply too long", path);
				goto free_buf;
			}
			cap = cap ? cap * 2 : 8192;
			char *b = realloc(buf, cap);
			if (!b) {
				rc = -ENOMEM;
				goto free_buf;
			}
			buf = b;
		}
		/* timeout_ms bounds the whole reply, not each read: a peer that
		 * drips it cannot stretch the call */
		uint64_t now = govd_mono_ms();
		if (now >= deadline) {
			rc = -ETIMEDOUT;
			snprintf(err, errlen, "%s: waiting for the reply: %s", path, strerror(-rc));
			goto free_buf;
		}
		uint64_t left = deadline - now;
		struct timeval ltv = { (time_t)(left / 1000), (suseconds_t)(left % 1000) * 1000 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &ltv, sizeof(ltv));
		ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
			snprintf(err, errlen, "%s: waiting for the reply: %s", path, strerror(-rc));
			goto free_buf;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (memchr(buf + n - (size_t)r, '\n', (size_t)r))
			break;
	}
	char *nl = buf ? memchr(buf, '\n', n) : NULL;
	if (!nl) {
		rc = -EPROTO;
		snprintf(err, errlen, "%s: connection closed without a reply", path);
		goto free_buf;
	}
	json_error_t je;
	*reply = json_loadb(buf, (size_t)(nl - buf), 0, &je);
	if (!*reply || !json_is_object(*reply)) {
		json_decref(*reply);
		*reply = NULL;
		rc = -EPROTO;
		snprintf(err, errlen, "%s: garbled reply: %s", path, je.text);
		goto free_buf;
	}
	rc = 0;
free_buf:
	free(buf);
free_line:
	free(line);
close_fd:
	close(fd);
	return rc;
}
