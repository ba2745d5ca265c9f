/* Fleet power budgets on etcd (docs/fleet.md): the node agent (registration,
 * grant, safe fallback) and the allocator (leader election, phased grant
 * writes conditioned on leadership). Keys under /govd/<cluster>/<group>/:
 *   budget          {"budget_mw": N}                    govctl fleet set-budget
 *   leader          {"id": ..., "since_unix_ms": ...}   lease-bound, made only if absent
 *   nodes/<node>    {"floor_mw", "max_mw", "demand_mw", "draw_mw", "applied_mw",
 *                    "safe_mw", "priority", "state"}    lease-bound
 *   grants          {"epoch", "allocator", "budget_mw", "round", "pending",
 *                    "infeasible", "written_unix_ms", "grants": {node: mW},
 *                    "targets": {node: mW}}  written only while the leader key's
 *                                             create_revision is the allocator's epoch
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

/* ---- node agent (a thread of govd) ---- */

enum fleet_mode { FLEET_NO_GRANT_YET, FLEET_GRANTED, FLEET_SAFE };

struct fleet_status {
	enum fleet_mode mode;
	uint64_t budget_mw;         /* what the node enforces now */
	uint64_t grant_mw;          /* last grant received; 0: none */
	uint64_t draw_mw;
	bool etcd_ok;               /* last request succeeded */
	bool allocating;            /* this node is the allocator */
	uint64_t fallbacks;         /* times it fell back to the safe budget */
};

struct fleet_agent;

/* Starts the agent thread for node `node`. 0 or -errno (err says why). */
int fleet_agent_start(struct fleet_agent **out, const struct fleet_config *c, const char *node,
		      char *err, size_t len);
/* Stops the thread, revokes its leases (the record and any leadership go at
 * once). NULL is fine. */
void fleet_agent_stop(struct fleet_agent *a);
/* The daemon's view, each period: the node's budget range, what it draws,
 * what it asks for (mW). */
void fleet_agent_observe(struct fleet_agent *a, uint64_t floor_mw, uint64_t max_mw, uint64_t draw_mw,
			 uint64_t demand_mw);
void fleet_agent_status(struct fleet_agent *a, struct fleet_status *s);

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
};

int fleet_view_read(struct etcd *e, const char *prefix, struct fleet_view *v);
void fleet_view_free(struct fleet_view *v);
int fleet_set_budget(struct etcd *e, const char *prefix, uint64_t budget_mw);

#endif
