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

static uint64_t real_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A node record -> fleet_rec; false when it is not one. */
static bool rec_parse(const char *name, const json_t *j, struct fleet_rec *r, uint64_t *safe_mw,
		      char *state, size_t slen)
{
	memset(r, 0, sizeof(*r));
	if (!j || strlen(name) >= sizeof(r->name))
		return false;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->floor_mw = u64_of(j, "floor_mw", 0);
	r->max_mw = u64_of(j, "max_mw", 0);
	r->demand_mw = u64_of(j, "demand_mw", 0);
	r->draw_mw = u64_of(j, "draw_mw", 0);
	r->applied_mw = u64_of(j, "applied_mw", 0);
	json_t *p = json_object_get(j, "priority");
	r->priority = json_is_integer(p) ? (int)json_integer_value(p) : 0;
	if (safe_mw)
		*safe_mw = u64_of(j, "safe_mw", 0);
	if (state) {
		const char *s = json_string_value(json_object_get(j, "state"));
		snprintf(state, slen, "%s", s ? s : "?");
	}
	return r->floor_mw <= r->max_mw && r->max_mw > 0;
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

/* The previous grants (by node name) from the grants value. */
static uint64_t prev_of(const json_t *grants, const char *name)
{
	const json_t *v = json_object_get(json_object_get(grants, "grants"), name);
	return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t)json_integer_value(v)
							      : FLEET_NO_GRANT;
}

int fleet_allocator_round(struct fleet_allocator *al, uint64_t now, struct fleet_round *out)
{
	char key[FLEET_PREFIX_LEN + 16];
	struct etcd_kv kv;
	int found = 0, rc = 0;
	struct etcd_kv *kvs = NULL;
	size_t nkv = 0;
	json_t *prev = NULL;
	struct fleet_rec *r = NULL;
	uint64_t *cur = NULL, *tgt = NULL, *w = NULL;

	memset(out, 0, sizeof(*out));
	if (!al->leader) {
		if (campaign(al, now))
			return -EIO;
		if (!al->leader)
			return 0;
	} else if (keepalive(al, now)) {
		return -EIO;
	}
	if (!al->leader)
		return 0;

	key_of(al->prefix, "budget", key, sizeof(key));
	if (etcd_get(al->e, key, &kv, &found, NULL))
		return -EIO;
	if (!found) {
		if (!al->warned_no_budget)
			log_warn("fleet %s: no budget at %s (govctl fleet set-budget): no grants",
				 al->prefix, key);
		al->warned_no_budget = true;
		return 0;
	}
	json_t *bj = load_value(&kv);
	etcd_kv_free(&kv);
	uint64_t budget = u64_of(bj, "budget_mw", FLEET_NO_GRANT);
	json_decref(bj);
	if (budget == FLEET_NO_GRANT) {
		if (!al->warned_no_budget)
			log_err("fleet %s: %s is not {\"budget_mw\": N}: no grants", al->prefix, key);
		al->warned_no_budget = true;
		return 0;
	}
	al->warned_no_budget = false;

	key_of(al->prefix, "grants", key, sizeof(key));
	if (etcd_get(al->e, key, &kv, &found, NULL))
		return -EIO;
	if (found) {
		prev = load_value(&kv);
		etcd_kv_free(&kv);
	}
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
	if (!r || !cur || !tgt || !w) {
		rc = -ENOMEM;
		goto out_free;
	}
	size_t n = 0;
	for (size_t i = 0; i < nkv; i++) {
		json_t *j = load_value(&kvs[i]);
		const char *name = kvs[i].key + strlen(nodes);
		if (rec_parse(name, j, &r[n], NULL, NULL, 0)) {
			cur[n] = prev_of(prev, name);
			n++;
		} else {
			log_warn("fleet %s: record %s is malformed: ignored", al->prefix, kvs[i].key);
		}
		json_decref(j);
	}
	struct fleet_target_result tr;
	if (fleet_target(budget, r, n, cur, &al->params, tgt, &tr)) {
		rc = -EINVAL;
		goto out_free;
	}
	size_t pending = fleet_phase(budget, r, n, cur, tgt, w);
	json_t *g = json_object(), *t = json_object();
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		json_object_set_new(g, r[i].name, json_integer((json_int_t)w[i]));
		json_object_set_new(t, r[i].name, json_integer((json_int_t)tgt[i]));
		sum += w[i];
	}
	assert(sum <= budget);
	al->round++;
	json_t *val = json_pack("{s:I, s:s, s:I, s:I, s:I, s:b, s:I, s:o, s:o}", "epoch",
				(json_int_t)al->epoch, "allocator", al->id, "budget_mw",
				(json_int_t)budget, "round", (json_int_t)al->round, "pending",
				(json_int_t)pending, "infeasible", tr.infeasible, "written_unix_ms",
				(json_int_t)real_ms(), "grants", g, "targets", t);
	char *txt = json_dumps(val, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(val);
	if (!txt) {
		rc = -ENOMEM;
		goto out_free;
	}
	/* Only while the leader key is the one this allocator created: a
	 * deposed allocator (lease gone, key re-created) cannot write. */
	char lkey[FLEET_PREFIX_LEN + 16];
	key_of(al->prefix, "leader", lkey, sizeof(lkey));
	json_t *cmp = json_array(), *succ = json_array();
	json_array_append_new(cmp, etcd_cmp_create(lkey, al->epoch));
	json_array_append_new(succ, etcd_op_put(key, txt, 0));
	free(txt);
	int ok = 0;
	if (etcd_txn(al->e, cmp, succ, NULL, &ok, NULL, NULL)) {
		rc = -EIO;
		goto out_free;
	}
	if (!ok) {
		al->lease = 0;
		lose(al, "the leader key is no longer its own");
		goto out_free;
	}
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
	etcd_kvs_free(kvs, nkv);
	json_decref(prev);
	return rc;
}

void fleet_allocator_resign(struct fleet_allocator *al)
{
	if (al->lease)
		etcd_lease_revoke(al->e, al->lease);
	al->lease = 0;
	al->leader = false;
}

/* ---- node agent ---- */

struct fleet_agent {
	struct fleet_config cfg;
	char node[FLEET_NAME_LEN];
	char prefix[FLEET_PREFIX_LEN];
	struct etcd e;
	struct fleet_allocator al;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	/* from the daemon (mu) */
	uint64_t floor_mw, max_mw, draw_mw, demand_mw;
	bool observed;
	/* to the daemon (mu) */
	struct fleet_status st;
	/* thread-only */
	int64_t lease;
	uint64_t keepalive_ms;
	int64_t grants_mod;
	uint64_t fresh_ms;          /* when the grants key last changed */
	bool have_grant;
	uint64_t grant_mw, last_grant_mw;
	uint64_t puts_due;          /* rounds until the record is rewritten */
	char last_rec[512];
	bool etcd_was_ok;
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
		return node_lease(a, now);
	}
	return 0;
}

static int read_grant(struct fleet_agent *a, uint64_t now)
{
	char key[FLEET_PREFIX_LEN + 16];
	struct etcd_kv kv;
	int found = 0;
	key_of(a->prefix, "grants", key, sizeof(key));
	if (etcd_get(&a->e, key, &kv, &found, NULL))
		return -EIO;
	if (!found)
		return 0;
	if (kv.mod_rev != a->grants_mod) {
		json_t *j = load_value(&kv);
		/* fresh only once seen to change: what is there at start may
		 * be a dead allocator's last word */
		if (a->grants_mod)
			a->fresh_ms = now;
		a->grants_mod = kv.mod_rev;
		uint64_t g = prev_of(j, a->node);
		a->have_grant = g != FLEET_NO_GRANT;
		if (a->have_grant)
			a->grant_mw = g;
		json_decref(j);
	}
	etcd_kv_free(&kv);
	return 0;
}

/* The budget in force from the grant's age: a fresh grant, else the safe
 * budget but never above the last grant. */
static void decide(struct fleet_agent *a, uint64_t now, bool etcd_ok)
{
	bool fresh = a->have_grant && now - a->fresh_ms <= a->cfg.grant_ttl_ms;
	enum fleet_mode m;
	uint64_t b;
	if (fresh) {
		m = FLEET_GRANTED;
		b = a->grant_mw;
		a->last_grant_mw = b;
	} else {
		m = a->last_grant_mw ? FLEET_SAFE : FLEET_NO_GRANT_YET;
		b = safe_mw(a);
		if (a->last_grant_mw && a->last_grant_mw < b)
			b = a->last_grant_mw;
	}
	pthread_mutex_lock(&a->mu);
	enum fleet_mode old = a->st.mode;
	uint64_t old_b = a->st.budget_mw;
	a->st.mode = m;
	a->st.budget_mw = b;
	a->st.grant_mw = a->have_grant ? a->grant_mw : 0;
	a->st.etcd_ok = etcd_ok;
	a->st.allocating = a->al.leader;
	if (m == FLEET_SAFE && old != FLEET_SAFE)
		a->st.fallbacks++;
	pthread_mutex_unlock(&a->mu);
	if (m == FLEET_SAFE && old != FLEET_SAFE)
		log_warn("fleet %s: node %s on its safe budget %.1f W: %s", a->prefix, a->node,
			 (double)b / 1000.0,
			 etcd_ok ? "grant not refreshed within grant_ttl_ms" : a->e.err);
	else if (m == FLEET_GRANTED && old == FLEET_SAFE)
		log_notice("fleet %s: node %s recovered: grant %.1f W", a->prefix, a->node,
			   (double)b / 1000.0);
	else if (m == FLEET_GRANTED && b != old_b)
		log_info("fleet %s: node %s grant %.1f W", a->prefix, a->node, (double)b / 1000.0);
	if (etcd_ok != a->etcd_was_ok)
		log_notice("fleet %s: etcd %s%s%s", a->prefix, etcd_ok ? "reachable" : "unreachable",
			   etcd_ok ? "" : ": ", etcd_ok ? "" : a->e.err);
	a->etcd_was_ok = etcd_ok;
}

static int put_record(struct fleet_agent *a)
{
	char key[FLEET_PREFIX_LEN + FLEET_NAME_LEN + 16], val[512];
	pthread_mutex_lock(&a->mu);
	uint64_t fl = a->floor_mw, mx = a->max_mw, dr = a->draw_mw, de = a->demand_mw;
	uint64_t ap = a->st.budget_mw;
	enum fleet_mode m = a->st.mode;
	pthread_mutex_unlock(&a->mu);
	if (a->cfg.floor_w > 0)
		fl = (uint64_t)(a->cfg.floor_w * 1000.0);
	if (a->cfg.max_w > 0)
		mx = (uint64_t)(a->cfg.max_w * 1000.0);
	if (fl > mx)
		fl = mx;
	snprintf(val, sizeof(val),
		 "{\"floor_mw\":%" PRIu64 ",\"max_mw\":%" PRIu64 ",\"demand_mw\":%" PRIu64
		 ",\"draw_mw\":%" PRIu64 ",\"applied_mw\":%" PRIu64 ",\"safe_mw\":%" PRIu64
		 ",\"priority\":%d,\"state\":\"%s\"}",
		 fl, mx, de, dr, ap, safe_mw(a), a->cfg.priority, mode_name(m));
	/* What the allocator must see at once is the applied budget (its
	 * acknowledgement) and the mode; the rest may wait for the refresh. */
	char sig[64];
	snprintf(sig, sizeof(sig), "%" PRIu64 "/%s", ap, mode_name(m));
	if (a->puts_due > 0 && !strcmp(sig, a->last_rec)) {
		a->puts_due--;
		return 0;
	}
	snprintf(key, sizeof(key), "%s/nodes/%s", a->prefix, a->node);
	if (etcd_put(&a->e, key, val, a->lease))
		return -EIO;
	snprintf(a->last_rec, sizeof(a->last_rec), "%s", sig);
	a->puts_due = a->cfg.refresh_periods - 1;
	return 0;
}

static bool stopping(struct fleet_agent *a)
{
	pthread_mutex_lock(&a->mu);
	bool s = a->stop;
	pthread_mutex_unlock(&a->mu);
	return s;
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
			decide(a, govd_mono_ms(), ok);
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
			decide(a, govd_mono_ms(), false);
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
		      char *err, size_t len)
{
	struct fleet_agent *a = calloc(1, sizeof(*a));
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->cfg = *c;
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
	if (rc) {
		snprintf(err, len, "fleet: %s", a->e.err);
		goto out_free;
	}
	const struct fleet_params p = { .up_frac = c->up_frac, .down_frac = c->down_frac };
	fleet_allocator_init(&a->al, &a->e, a->prefix, a->node, c->lease_ttl_s, &p);
	a->st.budget_mw = safe_mw(a);
	a->etcd_was_ok = true;
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
	log_notice("fleet %s: node %s, safe budget %.0f W, etcd %s%s", a->prefix, a->node,
		   c->safe_budget_w, c->endpoints, c->allocator ? ", may allocate" : "");
	*out = a;
	return 0;
out_sync:
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
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

void fleet_agent_status(struct fleet_agent *a, struct fleet_status *s)
{
	pthread_mutex_lock(&a->mu);
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
		if (rec_parse(name, j, &n->rec, &n->safe_mw, n->state, sizeof(n->state))) {
			n->grant_mw = prev_of(grants, name);
			const json_t *t = json_object_get(json_object_get(grants, "targets"), name);
			n->target_mw = json_is_integer(t) ? (uint64_t)json_integer_value(t) : FLEET_NO_GRANT;
			v->n++;
		}
		json_decref(j);
	}
	qsort(v->node, v->n, sizeof(*v->node), cmp_view);
	etcd_kvs_free(kvs, nkv);
	json_decref(grants);
	return 0;
}

void fleet_view_free(struct fleet_view *v)
{
	free(v->node);
	v->node = NULL;
	v->n = 0;
}

int fleet_set_budget(struct etcd *e, const char *prefix, uint64_t budget_mw)
{
	char key[FLEET_PREFIX_LEN + 16], val[128];
	key_of(prefix, "budget", key, sizeof(key));
	snprintf(val, sizeof(val), "{\"budget_mw\":%" PRIu64 ",\"set_unix_ms\":%" PRIu64 "}", budget_mw,
		 real_ms());
	return etcd_put(e, key, val, 0);
}
