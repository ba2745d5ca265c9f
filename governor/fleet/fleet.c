#include "governor/fleet/fleet.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"

void fleet_prefix(const char *cluster, const char *group, char *out, size_t len)
{
	snprintf(out, len, "/govd/%s/%s", cluster, group);
}

static void key_of(const char *prefix, const char *leaf, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", prefix, leaf);
}

static uint64_t u64_of(const json_t *o, const char *k, uint64_t dflt)
{
	const json_t *v = json_object_get(o, k);
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		return (uint64_t)json_integer_value(v);
	return dflt;
}

static json_t *load_value(const struct etcd_kv *kv)
{
	json_error_t je;
	json_t *j = json_loadb(kv->value, kv->value_len, 0, &je);
	if (!json_is_object(j)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* How long a node may go on enforcing its last grant after it last reached
 * etcd, for records that do not say (hold_ms): the allocator holds a gone
 * node's grant that long before its reserve falls to the safe budget. */
#define FLEET_HOLD_DEFAULT_MS 60000u

static uint64_t real_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A node's entry of the grants value's {name: mW} map `map`; FLEET_NO_GRANT
 * when it has none. */
static uint64_t map_mw(const json_t *grants, const char *map, const char *name)
{
	const json_t *v = json_object_get(json_object_get(grants, map), name);
	return json_is_integer(v) && json_integer_value(v) >= 0 &&
			       (uint64_t)json_integer_value(v) <= FLEET_MW_MAX
		       ? (uint64_t)json_integer_value(v)
		       : FLEET_NO_GRANT;
}

/* The grants in force (by node name) from the grants value. */
static uint64_t prev_grant(const json_t *grants, const char *name)
{
	return map_mw(grants, "grants", name);
}

/* A node record -> fleet_rec; false when it is not one. A record is a
 * live node's only while it is bound to a lease (lease != 0: it expires with
 * the node); one without is not any node's. Every figure is within
 * FLEET_MW_MAX, so no sum overflows; what a node applies is counted up to
 * its maximum (it cannot draw more). */
static bool rec_parse(const char *name, const json_t *j, int64_t lease, struct fleet_rec *r,
		      uint64_t *safe_mw, uint64_t *hold_ms, char *state, size_t slen)
{
	memset(r, 0, sizeof(*r));
	if (!j || !*name || strlen(name) >= sizeof(r->name) || strchr(name, '/') || lease == 0)
		return false;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->floor_mw = u64_of(j, "floor_mw", FLEET_MW_MAX + 1);
	r->max_mw = u64_of(j, "max_mw", FLEET_MW_MAX + 1);
	r->demand_mw = u64_of(j, "demand_mw", 0);
	r->draw_mw = u64_of(j, "draw_mw", 0);
	r->applied_mw = u64_of(j, "applied_mw", FLEET_MW_MAX + 1);
	json_t *p = json_object_get(j, "priority");
	r->priority = json_is_integer(p) && json_integer_value(p) >= -1000 && json_integer_value(p) <= 1000
			      ? (int)json_integer_value(p)
			      : 0;
	uint64_t safe = u64_of(j, "safe_mw", FLEET_MW_MAX + 1);
	if (safe_mw)
		*safe_mw = safe;
	if (hold_ms)
		*hold_ms = u64_of(j, "hold_ms", FLEET_HOLD_DEFAULT_MS);
	if (state) {
		const char *s = json_string_value(json_object_get(j, "state"));
		snprintf(state, slen, "%s", s ? s : "?");
	}
	if (r->max_mw == 0 || r->floor_mw > r->max_mw || r->max_mw > FLEET_MW_MAX ||
	    r->demand_mw > FLEET_MW_MAX || r->draw_mw > FLEET_MW_MAX || r->applied_mw > FLEET_MW_MAX ||
	    safe > FLEET_MW_MAX)
		return false;
	if (r->applied_mw > r->max_mw)
		r->applied_mw = r->max_mw;
	return true;
}

/* ---- a node's grant ---- */

/* Sum over a {name: x} object of x (field NULL: the grants' mW) or of
 * x[field] (the reserves' "mw"); false when one is not a non-negative
 * integer within FLEET_MW_MAX. */
static bool sum_mw(const json_t *o, const char *field, uint64_t *sum)
{
	const char *k;
	json_t *v;
	*sum = 0;
	if (o && !json_is_object(o))
		return false;
	json_object_foreach((json_t *)o, k, v) {
		const json_t *m = field ? json_object_get(v, field) : v;
		if (!json_is_integer(m) || json_integer_value(m) < 0 ||
		    (uint64_t)json_integer_value(m) > FLEET_MW_MAX)
			return false;
		*sum += (uint64_t)json_integer_value(m);
	}
	return true;
}

int fleet_grant_judge(const struct fleet_grant_read *rd, const char *node, uint64_t *grant_mw,
		      char *why, size_t len)
{
	int rc = -EBADMSG;
	json_t *g = NULL, *l = NULL, *b = NULL;

	snprintf(why, len, "%s", "");
	if (!rd->grants)
		return 0;
	g = load_value(rd->grants);
	if (!g) {
		snprintf(why, len, "the grants are not a JSON object");
		goto out_free;
	}
	if (!rd->leader) {
		snprintf(why, len, "no allocator is elected (no leader key)");
		goto out_free;
	}
	l = load_value(rd->leader);
	const char *lid = json_string_value(json_object_get(l, "id"));
	const char *gid = json_string_value(json_object_get(g, "allocator"));
	const json_t *ep = json_object_get(g, "epoch");
	if (!json_is_integer(ep) || json_integer_value(ep) != rd->leader->create_rev) {
		snprintf(why, len, "the grants' epoch is not the elected allocator's term (%" PRId64 ")",
			 rd->leader->create_rev);
		goto out_free;
	}
	if (!lid || !gid || strcmp(lid, gid)) {
		snprintf(why, len, "the grants name allocator '%s', the leader key '%s'",
			 gid ? gid : "?", lid ? lid : "?");
		goto out_free;
	}
	/* the allocator writes its grants bound to its leadership lease (they
	 * go with it); a plain put, which any client can make, has none */
	if (rd->grants->lease == 0 || rd->grants->lease != rd->leader->lease) {
		snprintf(why, len, "the grants are not bound to the allocator's lease");
		goto out_free;
	}
	if (rd->grants->mod_rev < rd->leader->create_rev) {
		snprintf(why, len, "the grants were written before the allocator's election");
		goto out_free;
	}
	if (!rd->budget) {
		snprintf(why, len, "no group budget beside the grants");
		goto out_free;
	}
	b = load_value(rd->budget);
	uint64_t budget = u64_of(b, "budget_mw", FLEET_NO_GRANT);
	uint64_t for_budget = u64_of(g, "budget_mw", FLEET_NO_GRANT);
	uint64_t sum = 0, res = 0;
	if (budget == FLEET_NO_GRANT || for_budget == FLEET_NO_GRANT) {
		snprintf(why, len, "the budget or the grants' budget_mw is not a number");
		goto out_free;
	}
	if (!sum_mw(json_object_get(g, "grants"), NULL, &sum) ||
	    !sum_mw(json_object_get(g, "reserved"), "mw", &res)) {
		snprintf(why, len, "a grant or a reserve is not a number of mW");
		goto out_free;
	}
	/* the grants fit in what the reserves leave of the budget they name
	 * (nothing, when the reserves alone exceed it: then every grant is 0) */
	if (sum > (for_budget > res ? for_budget - res : 0)) {
		snprintf(why, len,
			 "the grants (%.1f W, %.1f W reserved) exceed the budget they name (%.1f W)",
			 (double)sum / 1000.0, (double)res / 1000.0, (double)for_budget / 1000.0);
		goto out_free;
	}
	uint64_t mine = prev_grant(g, node);
	rc = mine == FLEET_NO_GRANT ? 0 : 1;
	if (rc && sum + res > budget) {
		/* computed for a budget lowered since: every node that reads the
		 * new budget scales its grant by what the reserves (gone nodes,
		 * which read nothing) leave of it, the same factor for all, so
		 * the sum meets it before the allocator's next round does */
		uint64_t room = budget > res ? budget - res : 0;
		*grant_mw = sum ? (uint64_t)((unsigned __int128)mine * room / sum) : 0;
		snprintf(why, len, "grants of %.1f W computed for %.1f W, scaled to the budget %.1f W",
			 (double)(sum + res) / 1000.0, (double)for_budget / 1000.0,
			 (double)budget / 1000.0);
	} else if (rc) {
		*grant_mw = mine;
	}
out_free:
	json_decref(g);
	json_decref(l);
	json_decref(b);
	return rc;
}

/* ---- allocator ---- */

void fleet_allocator_init(struct fleet_allocator *al, struct etcd *e, const char *prefix,
			  const char *id, uint32_t ttl_s, const struct fleet_params *p)
{
	memset(al, 0, sizeof(*al));
	al->e = e;
	snprintf(al->prefix, sizeof(al->prefix), "%s", prefix);
	snprintf(al->id, sizeof(al->id), "%s", id);
	al->ttl_s = ttl_s;
	al->params = *p;
}

static void lose(struct fleet_allocator *al, const char *why)
{
	if (al->leader)
		log_warn("fleet %s: no longer allocating (%s)", al->prefix, why);
	al->leader = false;
	al->epoch = 0;
	json_decref(al->last_grants); /* a later term starts from the key */
	al->last_grants = NULL;
}

static void leader_id_of(const struct etcd_kv *kv, char *out, size_t len)
{
	json_t *j = load_value(kv);
	const char *id = json_string_value(json_object_get(j, "id"));
	snprintf(out, len, "%s", id ? id : "?");
	json_decref(j);
}

/* Create the leader key if absent, bound to a lease of our own. A lease is
 * taken only when the key looks free (a campaigner holds none while another
 * leads) and revoked when the race is lost. */
static int campaign(struct fleet_allocator *al, uint64_t now)
{
	char key[FLEET_PREFIX_LEN + 16], val[256];
	struct etcd_kv kv;
	int ok = 0, found = 0;
	int64_t rev = 0;

	key_of(al->prefix, "leader", key, sizeof(key));
	if (etcd_get(al->e, key, &kv, &found, NULL))
		return -EIO;
	if (found) {
		leader_id_of(&kv, al->leader_id, sizeof(al->leader_id));
		etcd_kv_free(&kv);
		return 0;
	}
	if (etcd_lease_grant(al->e, al->ttl_s, &al->lease))
		return -EIO;
	al->keepalive_ms = now;
	snprintf(val, sizeof(val), "{\"id\":\"%s\",\"since_unix_ms\":%" PRIu64 "}", al->id, real_ms());
	json_t *cmp = json_array(), *succ = json_array();
	json_array_append_new(cmp, etcd_cmp_create(key, 0));
	json_array_append_new(succ, etcd_op_put(key, val, al->lease));
	int rc = etcd_txn(al->e, cmp, succ, NULL, &ok, NULL, &rev);
	if (rc || !ok) {
		etcd_lease_revoke(al->e, al->lease); /* best effort: it expires anyway */
		al->lease = 0;
		return rc;
	}
	al->leader = true;
	al->epoch = rev; /* the put's revision is the key's create_revision */
	snprintf(al->leader_id, sizeof(al->leader_id), "%s", al->id);
	log_notice("fleet %s: %s is the allocator (epoch %" PRId64 ")", al->prefix, al->id, al->epoch);
	return 0;
}

static int keepalive(struct fleet_allocator *al, uint64_t now)
{
	if (now - al->keepalive_ms < al->ttl_s * 1000u / 3)
		return 0;
	int64_t ttl = 0;
	if (etcd_lease_keepalive(al->e, al->lease, &ttl)) {
		/* leadership outlives a failed keepalive only until the lease
		 * runs out; the txn's compare decides */
		return -EIO;
	}
	al->keepalive_ms = now;
	if (ttl <= 0) {
		al->lease = 0;
		lose(al, "its lease expired");
	}
	return 0;
}

/* Reserves for nodes gone from the group (no record) that may still be
 * running: a node cut off from etcd keeps enforcing its last grant until it
 * sees it stale (its hold_ms: grant_ttl_ms and a margin, counted from when it
 * last reached etcd, which is before its record expired), then its safe
 * budget (never above that grant) for as long as it is cut off. So a gone
 * node's last grant stays reserved for its hold_ms after its record went,
 * then min(grant, safe) until it registers again or an operator says it is
 * off (govctl fleet forget). hold_ms counts down on this allocator's clock;
 * a new allocator continues from what the grants say (a failover only makes
 * the hold longer). */
static json_t *carry_reserves(const json_t *prev, const struct fleet_rec *r, size_t n,
			      const json_t *forget, uint64_t elapsed_ms, uint64_t *sum)
{
	json_t *out = json_object();
	const char *k;
	json_t *v;
	*sum = 0;

	/* grants of the last round whose node has no record now: a new reserve
	 * of what it may be running, its exposure (fleet_phase: its grant, what
	 * it acknowledged, grants it may have read without saying so) */
	json_object_foreach(json_object_get((json_t *)prev, "grants"), k, v) {
		uint64_t mw = prev_grant(prev, k), ex = map_mw(prev, "exposed", k);
		if (mw == FLEET_NO_GRANT)
			continue;
		if (ex != FLEET_NO_GRANT && ex > mw)
			mw = ex;
		uint64_t safe = map_mw(prev, "safe", k), hold = map_mw(prev, "hold_ms", k);
		json_object_set_new(out, k,
				    json_pack("{s:I, s:I, s:I}", "mw", (json_int_t)mw, "safe_mw",
					      (json_int_t)(safe == FLEET_NO_GRANT ? mw : safe),
					      "hold_ms",
					      (json_int_t)(hold == FLEET_NO_GRANT ? FLEET_HOLD_DEFAULT_MS
										  : hold)));
	}
	/* the reserves already held, their hold counting down */
	json_object_foreach(json_object_get((json_t *)prev, "reserved"), k, v) {
		const json_t *m = json_object_get(v, "mw"), *sf = json_object_get(v, "safe_mw"),
			     *h = json_object_get(v, "hold_ms");
		if (!json_is_integer(m) || json_integer_value(m) < 0 ||
		    (uint64_t)json_integer_value(m) > FLEET_MW_MAX)
			continue; /* not ours to keep: the judge refuses such grants */
		uint64_t mw = (uint64_t)json_integer_value(m);
		uint64_t safe = json_is_integer(sf) && json_integer_value(sf) >= 0
					? (uint64_t)json_integer_value(sf)
					: mw;
		uint64_t hold = json_is_integer(h) && json_integer_value(h) > 0
					? (uint64_t)json_integer_value(h)
					: 0;
		hold = hold > elapsed_ms ? hold - elapsed_ms : 0;
		if (hold == 0 && safe < mw)
			mw = safe;
		json_object_set_new(out, k,
				    json_pack("{s:I, s:I, s:I}", "mw", (json_int_t)mw, "safe_mw",
					      (json_int_t)safe, "hold_ms", (json_int_t)hold));
	}
	/* a node with a record is counted by its record; a forgotten one is off */
	for (size_t i = 0; i < n; i++)
		json_object_del(out, r[i].name);
	json_object_foreach((json_t *)forget, k, v) json_object_del(out, k);
	json_object_foreach(out, k, v) *sum += (uint64_t)json_integer_value(json_object_get(v, "mw"));
	return out;
}

/* The forget/<node> keys under prefix: {node: true}. */
static json_t *read_forget(struct fleet_allocator *al, int *rc)
{
	char fk[FLEET_PREFIX_LEN + 16];
	struct etcd_kv *kvs = NULL;
	size_t nkv = 0;
	json_t *out = json_object();
	key_of(al->prefix, "forget/", fk, sizeof(fk));
	*rc = etcd_get_prefix(al->e, fk, &kvs, &nkv, FLEET_MAX_NODES) ? -EIO : 0;
	for (size_t i = 0; i < nkv; i++)
		json_object_set_new(out, kvs[i].key + strlen(fk), json_true());
	etcd_kvs_free(kvs, nkv);
	return out;
}

/* Node records that do not parse, said at most once a minute: a bad
 * record must not flood the journal. */
static void warn_malformed(struct fleet_allocator *al, uint64_t now, size_t n_malformed,
			   const char *first_bad)
{
	if (n_malformed && (!al->malformed_log_ms || now - al->malformed_log_ms >= 60000)) {
		log_warn("fleet %s: %zu malformed record(s) ignored (no lease, a figure out of range, "
			 "or not JSON), e.g. %s",
			 al->prefix, n_malformed, first_bad);
		al->malformed_log_ms = now;
	}
}

/* The group's budget: 0 and *budget_mw; 1 when there is none usable (no
 * grants; said once until one is there); -EIO. */
static int read_budget(struct fleet_allocator *al, uint64_t *budget_mw)
{
	char key[FLEET_PREFIX_LEN + 16];
	struct etcd_kv kv;
	int found = 0;
	key_of(al->prefix, "budget", key, sizeof(key));
	if (etcd_get(al->e, key, &kv, &found, NULL))
		return -EIO;
	if (!found) {
		if (!al->warned_no_budget)
			log_warn("fleet %s: no budget at %s (govctl fleet set-budget): no grants",
				 al->prefix, key);
		al->warned_no_budget = true;
		return 1;
	}
	json_t *bj = load_value(&kv);
	etcd_kv_free(&kv);
	uint64_t budget = u64_of(bj, "budget_mw", FLEET_NO_GRANT);
	json_decref(bj);
	if (budget == FLEET_NO_GRANT || budget > FLEET_MW_MAX * FLEET_MAX_NODES) {
		if (!al->warned_no_budget)
			log_err("fleet %s: %s is not {\"budget_mw\": N}: no grants", al->prefix, key);
		al->warned_no_budget = true;
		return 1;
	}
	al->warned_no_budget = false;
	*budget_mw = budget;
	return 0;
}

/* The allocation's state: the ledger at key, a copy of the grants that
 * outlives the allocator's lease (the grants go with it). The allocation
 * in force is what this allocator wrote last: a ledger of another term or
 * author is a forgery (or a deposed allocator's), so its own copy counts.
 * A new allocator has none and takes the ledger as its predecessor left
 * it. *prev (may be NULL) to decref. */
static int ledger_in_force(struct fleet_allocator *al, const char *key, json_t **prev)
{
	struct etcd_kv kv;
	int found = 0;
	*prev = NULL;
	if (etcd_get(al->e, key, &kv, &found, NULL))
		return -EIO;
	if (found) {
		*prev = load_value(&kv);
		etcd_kv_free(&kv);
	}
	const json_t *pe = json_object_get(*prev, "epoch");
	const char *pa = json_string_value(json_object_get(*prev, "allocator"));
	if (al->last_grants && (!json_is_integer(pe) || json_integer_value(pe) != al->epoch ||
				!pa || strcmp(pa, al->id))) {
		json_decref(*prev);
		*prev = json_incref(al->last_grants);
	}
	return 0;
}

/* The grants and the ledger (at ledger_key) in one txn, only while the
 * leader key is the one this allocator created: a deposed allocator (lease
 * gone, key re-created) cannot write. The forget keys it acted on go in
 * the same txn. *ok: the compare held. */
static int write_grants(struct fleet_allocator *al, const char *txt, const char *ledger_key,
			json_t *forget, int *ok)
{
	char lkey[FLEET_PREFIX_LEN + 16], gkey[FLEET_PREFIX_LEN + 16];
	char fkey[FLEET_PREFIX_LEN + FLEET_NAME_LEN + 16];
	key_of(al->prefix, "leader", lkey, sizeof(lkey));
	key_of(al->prefix, "grants", gkey, sizeof(gkey));
	json_t *cmp = json_array(), *succ = json_array();
	json_array_append_new(cmp, etcd_cmp_create(lkey, al->epoch));
	json_array_append_new(succ, etcd_op_put(gkey, txt, al->lease));
	json_array_append_new(succ, etcd_op_put(ledger_key, txt, 0)); /* the ledger */
	const char *fk;
	json_t *fv;
	json_object_foreach(forget, fk, fv) {
		snprintf(fkey, sizeof(fkey), "%s/forget/%s", al->prefix, fk);
		json_array_append_new(succ, etcd_op_delete(fkey));
	}
	return etcd_txn(al->e, cmp, succ, NULL, ok, NULL, NULL) ? -EIO : 0;
}

int fleet_allocator_round(struct fleet_allocator *al, uint64_t now, struct fleet_round *out)
{
	char key[FLEET_PREFIX_LEN + 16];
	int rc = 0;
	struct etcd_kv *kvs = NULL;
	size_t nkv = 0;
	json_t *prev = NULL, *forget = NULL, *reserved = NULL;
	struct fleet_rec *r = NULL;
	uint64_t *cur = NULL, *tgt = NULL, *w = NULL, *safe = NULL, *hold = NULL, *pex = NULL,
		 *ex = NULL;

	memset(out, 0, sizeof(*out));
	if (!al->leader) {
		if (campaign(al, now))
			return -EIO;
		if (!al->leader)
			return 0;
		al->last_round_ms = 0;
	} else if (keepalive(al, now)) {
		return -EIO;
	}
	if (!al->leader)
		return 0;
	uint64_t elapsed = al->last_round_ms && now > al->last_round_ms ? now - al->last_round_ms : 0;

	uint64_t budget;
	if ((rc = read_budget(al, &budget)) < 0)
		return rc;
	if (rc > 0)
		return 0; /* no budget: no grants (said once) */
	key_of(al->prefix, "ledger", key, sizeof(key));
	if ((rc = ledger_in_force(al, key, &prev)))
		return rc;
	forget = read_forget(al, &rc);
	if (rc)
		goto out_free;
	char nodes[FLEET_PREFIX_LEN + 16];
	key_of(al->prefix, "nodes/", nodes, sizeof(nodes));
	if (etcd_get_prefix(al->e, nodes, &kvs, &nkv, FLEET_MAX_NODES)) {
		rc = -EIO;
		goto out_free;
	}
	r = calloc(nkv + 1, sizeof(*r));
	cur = calloc(nkv + 1, sizeof(*cur));
	tgt = calloc(nkv + 1, sizeof(*tgt));
	w = calloc(nkv + 1, sizeof(*w));
	safe = calloc(nkv + 1, sizeof(*safe));
	hold = calloc(nkv + 1, sizeof(*hold));
	pex = calloc(nkv + 1, sizeof(*pex));
	ex = calloc(nkv + 1, sizeof(*ex));
	if (!r || !cur || !tgt || !w || !safe || !hold || !pex || !ex) {
		rc = -ENOMEM;
		goto out_free;
	}
	size_t n = 0, n_malformed = 0;
	const char *first_bad = NULL;
	for (size_t i = 0; i < nkv; i++) {
		json_t *j = load_value(&kvs[i]);
		const char *name = kvs[i].key + strlen(nodes);
		if (rec_parse(name, j, kvs[i].lease, &r[n], &safe[n], &hold[n], NULL, 0)) {
			cur[n] = prev_grant(prev, name);
			pex[n] = map_mw(prev, "exposed", name);
			n++;
		} else {
			n_malformed++;
			if (!first_bad)
				first_bad = kvs[i].key;
		}
		json_decref(j);
	}
	warn_malformed(al, now, n_malformed, first_bad);
	uint64_t res_sum = 0;
	reserved = carry_reserves(prev, r, n, forget, elapsed, &res_sum);
	uint64_t avail = budget > res_sum ? budget - res_sum : 0;
	struct fleet_target_result tr;
	if (fleet_target(avail, r, n, cur, &al->params, tgt, &tr)) {
		rc = -EINVAL;
		goto out_free;
	}
	size_t pending = fleet_phase(avail, r, n, cur, pex, tgt, w, ex);
	json_t *g = json_object(), *t = json_object(), *sj = json_object(), *hj = json_object();
	json_t *xj = json_object();
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		json_object_set_new(g, r[i].name, json_integer((json_int_t)w[i]));
		json_object_set_new(xj, r[i].name, json_integer((json_int_t)ex[i]));
		json_object_set_new(t, r[i].name, json_integer((json_int_t)tgt[i]));
		json_object_set_new(sj, r[i].name, json_integer((json_int_t)safe[i]));
		json_object_set_new(hj, r[i].name, json_integer((json_int_t)hold[i]));
		sum += w[i];
	}
	assert(sum <= avail); /* and avail + res_sum <= budget unless the reserves alone exceed it */
	al->round++;
	json_t *val = json_pack("{s:I, s:s, s:I, s:I, s:I, s:b, s:I, s:o, s:o, s:o, s:o, s:o, s:O}",
				"epoch",
				(json_int_t)al->epoch, "allocator", al->id, "budget_mw",
				(json_int_t)budget, "round", (json_int_t)al->round, "pending",
				(json_int_t)pending, "infeasible", tr.infeasible || res_sum > budget,
				"written_unix_ms", (json_int_t)real_ms(), "grants", g, "targets", t,
				"safe", sj, "hold_ms", hj, "exposed", xj, "reserved", reserved);
	char *txt = json_dumps(val, JSON_COMPACT | JSON_SORT_KEYS);
	if (!txt) {
		json_decref(val);
		rc = -ENOMEM;
		goto out_free;
	}
	int ok = 0;
	int wrc = write_grants(al, txt, key, forget, &ok);
	free(txt);
	if (wrc) {
		json_decref(val);
		rc = -EIO;
		goto out_free;
	}
	if (!ok) {
		json_decref(val);
		al->lease = 0;
		lose(al, "the leader key is no longer its own");
		goto out_free;
	}
	json_decref(al->last_grants);
	al->last_grants = val;
	const char *fk;
	json_t *fv;
	json_object_foreach(forget, fk, fv)
		log_notice("fleet %s: node %s forgotten: its reserve is released", al->prefix, fk);
	al->last_round_ms = now;
	out->wrote = true;
	out->budget_mw = budget;
	out->granted_mw = sum;
	out->n_nodes = n;
	out->pending = pending;
out_free:
	free(r);
	free(cur);
	free(tgt);
	free(w);
	free(safe);
	free(hold);
	free(pex);
	free(ex);
	etcd_kvs_free(kvs, nkv);
	json_decref(prev);
	json_decref(forget);
	json_decref(reserved);
	return rc;
}

void fleet_allocator_resign(struct fleet_allocator *al)
{
	if (al->lease)
		etcd_lease_revoke(al->e, al->lease);
	al->lease = 0;
	al->leader = false;
	json_decref(al->last_grants);
	al->last_grants = NULL;
}

/* ---- node agent ---- */

/* What keeps a node off its last valid grant (or notes why it was refused). */
enum fleet_fault {
	FLEET_FAULT_NONE,
	FLEET_FAULT_INVALID,   /* the last grants read failed fleet_grant_judge */
	FLEET_FAULT_DUPLICATE, /* another process holds this node's record: budget 0 (minimums) */
};

struct fleet_agent {
	struct fleet_config cfg;
	char node[FLEET_NAME_LEN];
	char prefix[FLEET_PREFIX_LEN];
	bool dry_run;
	struct etcd e;
	struct fleet_allocator al;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	/* from the daemon (mu) */
	uint64_t floor_mw, max_mw, draw_mw, demand_mw;
	uint64_t applied_mw;        /* the node budget its devices have; FLEET_NO_GRANT: none yet */
	bool observed;
	/* the agent's last valid read (mu); judged against the reader's clock */
	bool have_grant;            /* the valid grants name this node */
	uint64_t grant_mw;
	uint64_t fresh_ms;          /* monotonic: when the valid grants last changed; 0: never */
	enum fleet_fault fault;     /* invalid grants or a duplicate name (else NONE) */
	char why[256];              /* the fault's reason */
	bool etcd_ok;
	/* the judgement (mu) */
	struct fleet_status st;
	bool have_last_grant;
	uint64_t last_grant_mw;
	bool was_etcd_ok;
	bool allocating;            /* the agent's allocator leads */
	char etcd_err[256];         /* the agent's last etcd error */
	/* thread-only */
	int64_t lease;
	uint64_t keepalive_ms;
	int64_t grants_mod;
	int64_t rec_create;         /* our record's create_revision; 0: none yet */
	uint64_t puts_due;          /* rounds until the record is rewritten */
	char last_rec[512];
	char last_why[200];         /* the invalid-grants reason last logged */
};

uint64_t fleet_demand_mw(uint64_t draw_mw, uint64_t budget_mw, bool capped)
{
	if (capped && budget_mw)
		return budget_mw + budget_mw / 4;
	return draw_mw + draw_mw / 10;
}

static const char *mode_name(enum fleet_mode m)
{
	return m == FLEET_GRANTED ? "grant" : m == FLEET_SAFE ? "safe" : "no-grant";
}

static uint64_t safe_mw(const struct fleet_agent *a)
{
	return (uint64_t)(a->cfg.safe_budget_w * 1000.0);
}

/* How long this node may still enforce its last grant after it last reached
 * etcd (the allocator holds a gone node's grant that long): the grant TTL,
 * the agent's and the daemon's periods to notice and apply, and a second. */
static uint64_t hold_ms(const struct fleet_agent *a)
{
	return (uint64_t)a->cfg.grant_ttl_ms + 2u * a->cfg.period_ms + 1000u;
}

/* Node lease: granted once, kept alive every third of its TTL; a lease
 * that expired (etcd said TTL 0) is replaced and the record rewritten. */
static int node_lease(struct fleet_agent *a, uint64_t now)
{
	if (!a->lease) {
		if (etcd_lease_grant(&a->e, a->cfg.lease_ttl_s, &a->lease))
			return -EIO;
		a->keepalive_ms = now;
		a->last_rec[0] = '\0';
		return 0;
	}
	if (now - a->keepalive_ms < a->cfg.lease_ttl_s * 1000u / 3)
		return 0;
	int64_t ttl = 0;
	if (etcd_lease_keepalive(&a->e, a->lease, &ttl))
		return -EIO;
	a->keepalive_ms = now;
	if (ttl <= 0) {
		log_warn("fleet %s: node %s's lease expired; registering again", a->prefix, a->node);
		a->lease = 0;
		a->rec_create = 0; /* the record went with it */
		return node_lease(a, now);
	}
	return 0;
}

/* The judgement, under mu: the budget in force at `now` from the last valid
 * read's age: a fresh grant, else the safe budget but never above the last
 * grant (a grant of 0 is a grant: every device at its minimum). */
static void judge_locked(struct fleet_agent *a, uint64_t now)
{
	/* refused grants do not refresh the last valid one, which stays in
	 * force until it is stale (a leader handover refuses a round or two);
	 * a duplicate name never runs on the other's grant */
	bool fresh = a->fault != FLEET_FAULT_DUPLICATE && a->have_grant && a->fresh_ms &&
		     now - a->fresh_ms <= a->cfg.grant_ttl_ms;
	enum fleet_mode m;
	uint64_t b;
	if (fresh) {
		m = FLEET_GRANTED;
		b = a->grant_mw;
		a->last_grant_mw = b;
		a->have_last_grant = true;
	} else if (a->fault == FLEET_FAULT_DUPLICATE) {
		/* two processes under one name share one record and one grant:
		 * the one without the record runs every device at its minimum
		 * (exiting would put the devices' original, uncapped limits back) */
		m = FLEET_SAFE;
		b = 0;
	} else if (!a->have_last_grant) {
		/* never granted: nobody holds a share for it, so every device
		 * runs at its minimum until the allocator admits the node */
		m = FLEET_NO_GRANT_YET;
		b = 0;
	} else {
		m = FLEET_SAFE;
		b = safe_mw(a);
		if (a->last_grant_mw < b)
			b = a->last_grant_mw;
	}
	enum fleet_mode old = a->st.mode;
	uint64_t old_b = a->st.budget_mw;
	a->st.mode = m;
	a->st.budget_mw = b;
	a->st.have_grant = a->have_grant;
	a->st.grant_mw = a->have_grant ? a->grant_mw : 0;
	a->st.etcd_ok = a->etcd_ok;
	a->st.allocating = a->allocating;
	if (m == FLEET_SAFE && old != FLEET_SAFE) {
		a->st.fallbacks++;
		log_warn("fleet %s: node %s on its safe budget %.1f W: %s", a->prefix, a->node,
			 (double)b / 1000.0,
			 a->fault != FLEET_FAULT_NONE ? a->why
			 : a->etcd_ok                 ? "grant not refreshed within grant_ttl_ms"
						      : a->etcd_err);
	} else if (m == FLEET_GRANTED && old == FLEET_SAFE) {
		log_notice("fleet %s: node %s recovered: grant %.1f W", a->prefix, a->node,
			   (double)b / 1000.0);
	} else if (m == FLEET_GRANTED && b != old_b) {
		log_info("fleet %s: node %s grant %.1f W", a->prefix, a->node, (double)b / 1000.0);
	}
	if (a->etcd_ok != a->was_etcd_ok)
		log_notice("fleet %s: etcd %s%s%s", a->prefix, a->etcd_ok ? "reachable" : "unreachable",
			   a->etcd_ok ? "" : ": ", a->etcd_ok ? "" : a->etcd_err);
	a->was_etcd_ok = a->etcd_ok;
}

/* The leader, the budget and the grants in one snapshot; the grants count
 * only when fleet_grant_judge passes them: anything else is a fault that
 * keeps the node on its last valid grant until that goes stale, then on its
 * safe budget. */
static int read_grant(struct fleet_agent *a, uint64_t now)
{
	char kl[FLEET_PREFIX_LEN + 16], kb[FLEET_PREFIX_LEN + 16], kg[FLEET_PREFIX_LEN + 16];
	const char *keys[3] = { kl, kb, kg };
	struct etcd_kv kv[3];
	int found[3];
	key_of(a->prefix, "leader", kl, sizeof(kl));
	key_of(a->prefix, "budget", kb, sizeof(kb));
	key_of(a->prefix, "grants", kg, sizeof(kg));
	if (etcd_get_many(&a->e, keys, 3, kv, found, NULL))
		return -EIO;
	if (!found[2] || kv[2].mod_rev == a->grants_mod)
		goto out_free;
	struct fleet_grant_read rd = {
		.leader = found[0] ? &kv[0] : NULL,
		.budget = found[1] ? &kv[1] : NULL,
		.grants = &kv[2],
	};
	uint64_t g = 0;
	char why[200];
	int v = fleet_grant_judge(&rd, a->node, &g, why, sizeof(why));
	bool first = a->grants_mod == 0;
	a->grants_mod = kv[2].mod_rev;
	if (v == 1 && why[0])
		log_info("fleet %s: node %s: %s", a->prefix, a->node, why);
	pthread_mutex_lock(&a->mu);
	if (v < 0) {
		if (a->fault != FLEET_FAULT_DUPLICATE) {
			a->fault = FLEET_FAULT_INVALID;
			snprintf(a->why, sizeof(a->why), "grants refused: %s", why);
		}
	} else {
		if (a->fault == FLEET_FAULT_INVALID)
			a->fault = FLEET_FAULT_NONE;
		/* fresh only once seen to change: what is there at start may
		 * be a dead allocator's last word */
		if (!first)
			a->fresh_ms = now;
		a->have_grant = v == 1;
		if (a->have_grant)
			a->grant_mw = g;
	}
	pthread_mutex_unlock(&a->mu);
	if (v < 0 && strcmp(why, a->last_why)) /* once per reason, not every round */
		log_err("fleet %s: node %s refuses the grants at revision %" PRId64 ": %s", a->prefix,
			a->node, kv[2].mod_rev, why);
	snprintf(a->last_why, sizeof(a->last_why), "%s", v < 0 ? why : "");
out_free:
	for (int i = 0; i < 3; i++)
		if (found[i])
			etcd_kv_free(&kv[i]);
	return 0;
}

/* The record is this process's: written in a txn that requires the key to
 * be absent (first write) or still the one it created. Another create
 * revision is another process under this node's name (or this node's
 * previous run, until its lease expires): the node runs every device at its
 * minimum (budget 0) and says so, and the other's record is left alone. */
static int put_record(struct fleet_agent *a)
{
	char key[FLEET_PREFIX_LEN + FLEET_NAME_LEN + 16], val[640];
	pthread_mutex_lock(&a->mu);
	uint64_t fl = a->floor_mw, mx = a->max_mw, dr = a->draw_mw, de = a->demand_mw;
	/* what the devices have (the daemon applies the judged budget at its
	 * next period); before its first, what was judged */
	uint64_t ap = a->applied_mw != FLEET_NO_GRANT ? a->applied_mw : a->st.budget_mw;
	enum fleet_mode m = a->st.mode;
	bool dup = a->fault == FLEET_FAULT_DUPLICATE;
	pthread_mutex_unlock(&a->mu);
	if (a->cfg.floor_w > 0)
		fl = (uint64_t)(a->cfg.floor_w * 1000.0);
	if (a->cfg.max_w > 0)
		mx = (uint64_t)(a->cfg.max_w * 1000.0);
	if (fl > mx)
		fl = mx;
	/* a dry run enforces nothing: the allocator must count the node at
	 * its maximum, not at a grant it does not apply */
	const char *state = a->dry_run ? "dry-run" : mode_name(m);
	if (a->dry_run)
		ap = mx;
	snprintf(val, sizeof(val),
		 "{\"floor_mw\":%" PRIu64 ",\"max_mw\":%" PRIu64 ",\"demand_mw\":%" PRIu64
		 ",\"draw_mw\":%" PRIu64 ",\"applied_mw\":%" PRIu64 ",\"safe_mw\":%" PRIu64
		 ",\"hold_ms\":%" PRIu64 ",\"priority\":%d,\"state\":\"%s\"}",
		 fl, mx, de, dr, ap, safe_mw(a), hold_ms(a), a->cfg.priority, state);
	/* What the allocator must see at once is the applied budget (its
	 * acknowledgement) and the mode; the rest may wait for the refresh. */
	char sig[64];
	snprintf(sig, sizeof(sig), "%" PRIu64 "/%s", ap, state);
	if (!dup && a->puts_due > 0 && !strcmp(sig, a->last_rec)) {
		a->puts_due--;
		return 0;
	}
	snprintf(key, sizeof(key), "%s/nodes/%s", a->prefix, a->node);
	json_t *cmp = json_array(), *succ = json_array(), *fail = json_array(), *resp = NULL;
	json_array_append_new(cmp, etcd_cmp_create(key, a->rec_create));
	json_array_append_new(succ, etcd_op_put(key, val, a->lease));
	json_array_append_new(fail, etcd_op_get(key));
	int ok = 0;
	int64_t rev = 0;
	if (etcd_txn(&a->e, cmp, succ, fail, &ok, &resp, &rev))
		return -EIO;
	if (ok) {
		if (!a->rec_create)
			a->rec_create = rev; /* the put's revision is the key's create_revision */
		snprintf(a->last_rec, sizeof(a->last_rec), "%s", sig);
		a->puts_due = a->cfg.refresh_periods - 1;
		pthread_mutex_lock(&a->mu);
		if (a->fault == FLEET_FAULT_DUPLICATE) {
			a->fault = FLEET_FAULT_NONE;
			log_notice("fleet %s: node %s holds its record again", a->prefix, a->node);
		}
		pthread_mutex_unlock(&a->mu);
		json_decref(resp);
		return 0;
	}
	/* the compare failed: whose is the record now? */
	struct etcd_kv kv;
	const json_t *kvs = json_object_get(
		json_object_get(json_array_get(json_object_get(resp, "responses"), 0), "response_range"),
		"kvs");
	bool present = json_array_size(kvs) > 0 && etcd_kv_parse(json_array_get(kvs, 0), &kv) == 0;
	json_decref(resp);
	if (!present) {
		/* ours expired (or was deleted): register afresh next round */
		a->rec_create = 0;
		return 0;
	}
	bool mine = a->lease && kv.lease == a->lease;
	if (mine) /* written by this process in a round whose reply was lost */
		a->rec_create = kv.create_rev;
	else
		a->rec_create = 0;
	etcd_kv_free(&kv);
	if (mine)
		return 0;
	pthread_mutex_lock(&a->mu);
	bool was = a->fault == FLEET_FAULT_DUPLICATE;
	a->fault = FLEET_FAULT_DUPLICATE;
	snprintf(a->why, sizeof(a->why),
		 "another process holds node %s's record (a second govd with this node name, or "
		 "this node's previous run until its lease expires)",
		 a->node);
	pthread_mutex_unlock(&a->mu);
	if (!was)
		log_err("fleet %s: %s: every device at its minimum limit until it is gone", a->prefix,
			a->why);
	return 0;
}

/* A budget just judged reaches the devices at the daemon's next period;
 * the record acknowledges what they have (put_record), so wait for that
 * period (at most one round) rather than acknowledge it a round late. */
static void wait_applied(struct fleet_agent *a)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t ns = (uint64_t)a->cfg.period_ms * 1000000u;
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec += (long)(ns % 1000000000u);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&a->mu);
	while (!a->stop && !a->dry_run && a->applied_mw != a->st.budget_mw &&
	       pthread_cond_timedwait(&a->cv, &a->mu, &ts) == 0)
		;
	pthread_mutex_unlock(&a->mu);
}

static bool stopping(struct fleet_agent *a)
{
	pthread_mutex_lock(&a->mu);
	bool s = a->stop;
	pthread_mutex_unlock(&a->mu);
	return s;
}

static void set_etcd_ok(struct fleet_agent *a, bool ok)
{
	pthread_mutex_lock(&a->mu);
	a->etcd_ok = ok;
	a->allocating = a->al.leader;
	snprintf(a->etcd_err, sizeof(a->etcd_err), "%s", a->e.err);
	judge_locked(a, govd_mono_ms());
	pthread_mutex_unlock(&a->mu);
}

static void *agent_main(void *arg)
{
	struct fleet_agent *a = arg;
	uint64_t next = govd_mono_ms();
	bool logged_alloc_err = false;

	for (;;) {
		uint64_t now = govd_mono_ms();
		pthread_mutex_lock(&a->mu);
		bool observed = a->observed;
		pthread_mutex_unlock(&a->mu);
		bool ok = true;
		if (observed) { /* register once the daemon knows the devices' range */
			ok = node_lease(a, now) == 0;
			ok = ok && read_grant(a, now) == 0;
			set_etcd_ok(a, ok);
			if (ok)
				wait_applied(a);
			ok = ok && put_record(a) == 0;
		}
		/* a stop waits for at most the round's current request (etcd
		 * down: timeout_ms per endpoint), not for the whole round */
		if (a->cfg.allocator && !stopping(a)) {
			struct fleet_round fr;
			if (fleet_allocator_round(&a->al, govd_mono_ms(), &fr)) {
				if (!logged_alloc_err)
					log_warn("fleet %s: allocator round failed: %s", a->prefix,
						 a->e.err);
				logged_alloc_err = true;
			} else {
				logged_alloc_err = false;
			}
		}
		if (observed && !ok)
			set_etcd_ok(a, false);
		next += a->cfg.period_ms;
		now = govd_mono_ms();
		if (next < now)
			next = now; /* a slow etcd: no burst of catch-up rounds */
		pthread_mutex_lock(&a->mu);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t wait = next - now;
		ts.tv_sec += (time_t)(wait / 1000);
		ts.tv_nsec += (long)(wait % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!a->stop && pthread_cond_timedwait(&a->cv, &a->mu, &ts) == 0)
			;
		bool stop = a->stop;
		pthread_mutex_unlock(&a->mu);
		if (stop)
			break;
	}
	return NULL;
}

int fleet_agent_start(struct fleet_agent **out, const struct fleet_config *c, const char *node,
		      bool dry_run, char *err, size_t len)
{
	struct fleet_agent *a = calloc(1, sizeof(*a));
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->cfg = *c;
	a->dry_run = dry_run;
	if (node && *node) {
		snprintf(a->node, sizeof(a->node), "%s", node);
	} else if (gethostname(a->node, sizeof(a->node) - 1)) {
		snprintf(err, len, "fleet: no node name and gethostname failed");
		rc = -EINVAL;
		goto out_free;
	}
	for (const char *p = a->node; *p; p++)
		if (*p == '/') {
			snprintf(err, len, "fleet: node name '%s' has a '/'", a->node);
			rc = -EINVAL;
			goto out_free;
		}
	fleet_prefix(c->cluster, c->group, a->prefix, sizeof(a->prefix));
	rc = etcd_init(&a->e, c->endpoints, c->timeout_ms);
	if (!rc)
		etcd_set_tls(&a->e, c->tls_ca, c->tls_cert, c->tls_key);
	if (rc) {
		snprintf(err, len, "fleet: %s", a->e.err);
		goto out_free;
	}
	if ((rc = fleet_etcd_auth(&a->e, c->auth_user, c->auth_password_file, err, len)))
		goto out_fini;
	const struct fleet_params p = { .up_frac = c->up_frac, .down_frac = c->down_frac };
	fleet_allocator_init(&a->al, &a->e, a->prefix, a->node, c->lease_ttl_s, &p);
	a->st.budget_mw = 0;
	a->applied_mw = FLEET_NO_GRANT;
	a->etcd_ok = a->was_etcd_ok = true;
	pthread_mutex_init(&a->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cv, &ca);
	pthread_condattr_destroy(&ca);
	rc = -pthread_create(&a->thr, NULL, agent_main, a);
	if (rc) {
		snprintf(err, len, "fleet: cannot start its thread: %s", strerror(-rc));
		goto out_sync;
	}
	log_notice("fleet %s: node %s, safe budget %.0f W, etcd %s%s%s", a->prefix, a->node,
		   c->safe_budget_w, c->endpoints, c->allocator ? ", may allocate" : "",
		   dry_run ? ", dry run (counted at its maximum)" : "");
	*out = a;
	return 0;
out_sync:
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
out_fini:
	etcd_fini(&a->e);
out_free:
	free(a);
	return rc;
}

void fleet_agent_stop(struct fleet_agent *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->thr, NULL);
	/* leave at once rather than after the TTL: the grant is freed */
	fleet_allocator_resign(&a->al);
	if (a->lease)
		etcd_lease_revoke(&a->e, a->lease);
	etcd_fini(&a->e);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

void fleet_agent_applied(struct fleet_agent *a, uint64_t applied_mw)
{
	pthread_mutex_lock(&a->mu);
	if (a->applied_mw != applied_mw)
		pthread_cond_broadcast(&a->cv); /* wait_applied: the devices have it */
	a->applied_mw = applied_mw;
	pthread_mutex_unlock(&a->mu);
}

void fleet_agent_observe(struct fleet_agent *a, uint64_t floor_mw, uint64_t max_mw, uint64_t draw_mw,
			 uint64_t demand_mw)
{
	pthread_mutex_lock(&a->mu);
	a->floor_mw = floor_mw;
	a->max_mw = max_mw;
	a->draw_mw = draw_mw;
	a->demand_mw = demand_mw;
	a->observed = true;
	pthread_mutex_unlock(&a->mu);
}

void fleet_agent_status(struct fleet_agent *a, uint64_t now_ms, struct fleet_status *s)
{
	pthread_mutex_lock(&a->mu);
	judge_locked(a, now_ms);
	*s = a->st;
	s->draw_mw = a->draw_mw;
	pthread_mutex_unlock(&a->mu);
}

/* ---- reading the group ---- */

static int cmp_view(const void *x, const void *y)
{
	return strcmp(((const struct fleet_view_node *)x)->rec.name,
		      ((const struct fleet_view_node *)y)->rec.name);
}

int fleet_view_read(struct etcd *e, const char *prefix, struct fleet_view *v)
{
	char key[FLEET_PREFIX_LEN + 16];
	struct etcd_kv kv, *kvs = NULL;
	int found;
	size_t nkv = 0;
	json_t *grants = NULL;

	memset(v, 0, sizeof(*v));
	key_of(prefix, "budget", key, sizeof(key));
	if (etcd_get(e, key, &kv, &found, NULL))
		return -EIO;
	if (found) {
		json_t *j = load_value(&kv);
		v->budget_mw = u64_of(j, "budget_mw", 0);
		v->have_budget = j != NULL;
		json_decref(j);
		etcd_kv_free(&kv);
	}
	key_of(prefix, "leader", key, sizeof(key));
	if (etcd_get(e, key, &kv, &found, NULL))
		return -EIO;
	if (found) {
		json_t *j = load_value(&kv);
		const char *id = json_string_value(json_object_get(j, "id"));
		snprintf(v->leader, sizeof(v->leader), "%s", id ? id : "?");
		json_decref(j);
		etcd_kv_free(&kv);
	}
	key_of(prefix, "grants", key, sizeof(key));
	if (etcd_get(e, key, &kv, &found, NULL))
		return -EIO;
	if (found) {
		grants = load_value(&kv);
		etcd_kv_free(&kv);
		v->have_grants = grants != NULL;
		v->epoch = (int64_t)u64_of(grants, "epoch", 0);
		v->round = u64_of(grants, "round", 0);
		v->pending = u64_of(grants, "pending", 0);
		v->grants_budget_mw = u64_of(grants, "budget_mw", 0);
		v->infeasible = json_is_true(json_object_get(grants, "infeasible"));
		const char *k;
		json_t *x;
		json_object_foreach(json_object_get(grants, "grants"), k, x)
			if (json_is_integer(x))
				v->grants_sum_mw += (uint64_t)json_integer_value(x);
	}
	char nodes[FLEET_PREFIX_LEN + 16];
	key_of(prefix, "nodes/", nodes, sizeof(nodes));
	if (etcd_get_prefix(e, nodes, &kvs, &nkv, FLEET_MAX_NODES)) {
		json_decref(grants);
		return -EIO;
	}
	v->node = calloc(nkv + 1, sizeof(*v->node));
	if (!v->node) {
		etcd_kvs_free(kvs, nkv);
		json_decref(grants);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nkv; i++) {
		struct fleet_view_node *n = &v->node[v->n];
		json_t *j = load_value(&kvs[i]);
		const char *name = kvs[i].key + strlen(nodes);
		if (rec_parse(name, j, kvs[i].lease, &n->rec, &n->safe_mw, NULL, n->state,
			      sizeof(n->state))) {
			n->grant_mw = prev_grant(grants, name);
			const json_t *t = json_object_get(json_object_get(grants, "targets"), name);
			n->target_mw = json_is_integer(t) ? (uint64_t)json_integer_value(t) : FLEET_NO_GRANT;
			v->n++;
		}
		json_decref(j);
	}
	qsort(v->node, v->n, sizeof(*v->node), cmp_view);
	etcd_kvs_free(kvs, nkv);
	const json_t *res = json_object_get(grants, "reserved");
	if (json_object_size(res)) {
		v->reserved = calloc(json_object_size(res), sizeof(*v->reserved));
		if (!v->reserved) {
			json_decref(grants);
			fleet_view_free(v);
			return -ENOMEM;
		}
		const char *k;
		json_t *x;
		json_object_foreach((json_t *)res, k, x) {
			struct fleet_view_reserve *rv = &v->reserved[v->n_reserved++];
			snprintf(rv->name, sizeof(rv->name), "%s", k);
			rv->mw = u64_of(x, "mw", 0);
			rv->safe_mw = u64_of(x, "safe_mw", 0);
			rv->hold_ms = u64_of(x, "hold_ms", 0);
			v->reserved_sum_mw += rv->mw;
		}
	}
	json_decref(grants);
	return 0;
}

void fleet_view_free(struct fleet_view *v)
{
	free(v->node);
	free(v->reserved);
	v->node = NULL;
	v->reserved = NULL;
	v->n = v->n_reserved = 0;
}

int fleet_set_budget(struct etcd *e, const char *prefix, uint64_t budget_mw)
{
	char key[FLEET_PREFIX_LEN + 16], val[128];
	key_of(prefix, "budget", key, sizeof(key));
	snprintf(val, sizeof(val), "{\"budget_mw\":%" PRIu64 ",\"set_unix_ms\":%" PRIu64 "}", budget_mw,
		 real_ms());
	return etcd_put(e, key, val, 0);
}

int fleet_forget(struct etcd *e, const char *prefix, const char *node)
{
	char key[FLEET_PREFIX_LEN + FLEET_NAME_LEN + 16], val[64];
	if (!*node || strchr(node, '/') || strlen(node) >= FLEET_NAME_LEN) {
		snprintf(e->err, sizeof(e->err), "'%s' is not a node name", node);
		return -EINVAL;
	}
	snprintf(key, sizeof(key), "%s/forget/%s", prefix, node);
	snprintf(val, sizeof(val), "{\"unix_ms\":%" PRIu64 "}", real_ms());
	return etcd_put(e, key, val, 0);
}
