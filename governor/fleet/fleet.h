/* Fleet power budgets on etcd (docs/fleet.md): the node agent (registration,
 * grant, safe fallback) and the allocator (leader election, phased grant
 * writes conditioned on leadership). Keys under /govd/<cluster>/<group>/:
 *   budget          {"budget_mw": N}                    govctl fleet set-budget
 *   leader          {"id": ..., "since_unix_ms": ...}   lease-bound, made only if absent
 *   nodes/<node>    {"floor_mw", "max_mw", "demand_mw", "draw_mw", "applied_mw",
 *                    "safe_mw", "hold_ms", "priority", "state"}  lease-bound,
 *                                   written only on its own create_revision
 *   grants          {"epoch", "allocator", "budget_mw", "round", "pending",
 *                    "infeasible", "written_unix_ms", "grants": {node: mW},
 *                    "targets": {node: mW}, "safe": {node: mW},
 *                    "exposed": {node: mW (fleet_phase)},
 *                    "hold_ms": {node: ms}, "reserved": {node: {"mw", "safe_mw",
 *                    "hold_ms"}}}  bound to the allocator's lease, written
 *                                   only while the leader key's
 *                                   create_revision is the allocator's epoch
 *   ledger          the same value, no lease: the next allocator's state
 *   forget/<node>   {"unix_ms": T}  govctl fleet forget: drop a gone node's reserve
 * This file owns that format (writer and reader). */
#ifndef GOVD_GOVERNOR_FLEET_H
#define GOVD_GOVERNOR_FLEET_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "governor/fleet/fleet_alloc.h"
#include "governor/fleet/fleet_cfg.h"
#include "governor/fleet/fleet_etcd.h"

#define FLEET_PREFIX_LEN 160
/* No node budget, floor or draw is above this (1 GW): a record beyond it is
 * malformed, so no sum can overflow. */
#define FLEET_MW_MAX 1000000000000ull

void fleet_prefix(const char *cluster, const char *group, char *out, size_t len);

/* ---- allocator ---- */

struct fleet_allocator {
	struct etcd *e;
	char prefix[FLEET_PREFIX_LEN];
	char id[FLEET_NAME_LEN];
	uint32_t ttl_s;
	struct fleet_params params;
	bool leader;
	int64_t lease, epoch;       /* epoch: the leader key's create_revision */
	uint64_t keepalive_ms;      /* last keepalive */
	uint64_t round;
	bool warned_no_budget;
	char leader_id[FLEET_NAME_LEN]; /* who leads, as last seen */
	uint64_t last_round_ms;     /* monotonic; 0: none yet (reserve holds count from it) */
	json_t *last_grants;        /* what it wrote last (owned): the grants key may be forged */
	uint64_t malformed_log_ms;  /* malformed records are logged at most once a minute */
};

struct fleet_round {
	bool wrote;                 /* grants written this round */
	uint64_t budget_mw, granted_mw;
	size_t n_nodes, pending;
};

void fleet_allocator_init(struct fleet_allocator *al, struct etcd *e, const char *prefix,
			  const char *id, uint32_t ttl_s, const struct fleet_params *p);
/* One round: campaign if not leader; else keep the lease, read budget and
 * records, compute and write grants. 0, or -EIO (etcd; e->err). Logs
 * leadership changes. */
int fleet_allocator_round(struct fleet_allocator *al, uint64_t now_ms, struct fleet_round *out);
/* Steps down: revokes the lease (the leader key goes with it). */
void fleet_allocator_resign(struct fleet_allocator *al);

/* ---- a node's grant ---- */

/* What a node reads, in one snapshot, to take its grant: the leader key, the
 * budget key and the grants key (NULL: absent). */
struct fleet_grant_read {
	const struct etcd_kv *leader, *budget, *grants;
};

/* Whether the grants may be enforced (pure): written by the elected
 * allocator in its current term (epoch == the leader key's create_revision,
 * the allocator's name the leader's, written after the election) and
 * summing, with what is reserved for gone nodes, to no more than the budget
 * beside them nor than the budget they were computed for. 1: valid, with a
 * grant for `node` (*grant_mw); 0: no grants yet, or valid without one for
 * node; -EBADMSG: not to be enforced (why says which check failed). Grants
 * computed for a budget lowered since are valid, the node's scaled by
 * budget / sum (why says so), so nodes reading the new budget meet it at
 * once. */
int fleet_grant_judge(const struct fleet_grant_read *rd, const char *node, uint64_t *grant_mw,
		      char *why, size_t len);

/* ---- node agent (a thread of govd) ---- */

enum fleet_mode { FLEET_NO_GRANT_YET, FLEET_GRANTED, FLEET_SAFE };

struct fleet_status {
	enum fleet_mode mode;
	uint64_t budget_mw;         /* what the node enforces now */
	bool have_grant;            /* a grant was received */
	uint64_t grant_mw;          /* the last one (0 is a grant of 0) */
	uint64_t draw_mw;
	bool etcd_ok;               /* last request succeeded */
	bool allocating;            /* this node is the allocator */
	uint64_t fallbacks;         /* times it fell back to the safe budget */
};

struct fleet_agent;

/* Starts the agent thread for node `node`. dry_run: the node enforces no
 * grant, so its record says it may run at its maximum (state "dry-run") and
 * the allocator counts it so. 0 or -errno (err says why). */
int fleet_agent_start(struct fleet_agent **out, const struct fleet_config *c, const char *node,
		      bool dry_run, char *err, size_t len);
/* Stops the thread, revokes its leases (the record and any leadership go at
 * once). NULL is fine. */
void fleet_agent_stop(struct fleet_agent *a);
/* The daemon's view, each period: the node's budget range, what it draws,
 * what it asks for (mW). */
void fleet_agent_observe(struct fleet_agent *a, uint64_t floor_mw, uint64_t max_mw, uint64_t draw_mw,
			 uint64_t demand_mw);
/* The node budget the daemon has just applied to its devices (mW). The
 * record acknowledges that, not the budget judged: a lowered grant counts
 * as applied only once the devices have it, so nobody rises into it
 * before. */
void fleet_agent_applied(struct fleet_agent *a, uint64_t applied_mw);
/* The budget in force, judged now on the caller's monotonic clock (now_ms):
 * a grant goes stale grant_ttl_ms after it last changed however long the
 * agent's etcd request is blocked. */
void fleet_agent_status(struct fleet_agent *a, uint64_t now_ms, struct fleet_status *s);

/* Node demand from its devices: a device held at its limit asks for 25 %
 * more than it has, the others 10 % above what they draw. Pure. */
uint64_t fleet_demand_mw(uint64_t draw_mw, uint64_t budget_mw, bool capped);

/* ---- reading the group (govctl fleet status) ---- */

struct fleet_view_node {
	struct fleet_rec rec;
	uint64_t safe_mw;
	char state[16];
	uint64_t grant_mw, target_mw; /* FLEET_NO_GRANT: none */
};

struct fleet_view_reserve {
	char name[FLEET_NAME_LEN];
	uint64_t mw, safe_mw, hold_ms;
};

struct fleet_view {
	bool have_budget;
	uint64_t budget_mw;
	char leader[FLEET_NAME_LEN];  /* "": none */
	int64_t epoch;                /* of the grants */
	uint64_t round, pending, grants_sum_mw;
	uint64_t grants_budget_mw;    /* the budget the grants were computed for */
	bool have_grants, infeasible;
	size_t n;
	struct fleet_view_node *node; /* n, sorted by name */
	size_t n_reserved;
	struct fleet_view_reserve *reserved; /* gone nodes still held */
	uint64_t reserved_sum_mw;
};

int fleet_view_read(struct etcd *e, const char *prefix, struct fleet_view *v);
void fleet_view_free(struct fleet_view *v);
int fleet_set_budget(struct etcd *e, const char *prefix, uint64_t budget_mw);
/* Asks the allocator to drop the reserve it holds for a node gone from the
 * group (the operator knows it is off): writes forget/<node>. */
int fleet_forget(struct etcd *e, const char *prefix, const char *node);

#endif
