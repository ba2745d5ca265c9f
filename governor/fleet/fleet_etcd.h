/* A small etcd v3 client over the JSON gateway (etcd 3.4: POST /v3/kv/range,
 * /v3/kv/put, /v3/kv/txn, /v3/kv/deleterange, /v3/lease/grant,
 * /v3/lease/keepalive, /v3/lease/revoke), with libcurl loaded on demand
 * (hal/curl_util.c) and jansson. Keys and values are base64 on the wire;
 * 64-bit integers come back as JSON strings. Every call is bounded by the
 * client's timeout per endpoint; on a transport error or a 5xx the next
 * endpoint is tried, so one dead member does not stop a client. Reads are
 * linearizable (etcd's default): a member without quorum fails them rather
 * than serve stale data. Blocking: run it off the control loop. */
#ifndef GOVD_GOVERNOR_FLEET_ETCD_H
#define GOVD_GOVERNOR_FLEET_ETCD_H
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define ETCD_MAX_ENDPOINTS 8
#define ETCD_URL_LEN 256

struct etcd {
	char ep[ETCD_MAX_ENDPOINTS][ETCD_URL_LEN];
	size_t n_ep, cur;    /* cur: the endpoint that answered last */
	long timeout_ms;
	/* TLS (etcd_set_tls): CA file, client certificate and key; "": none */
	char tls_ca[ETCD_URL_LEN], tls_cert[ETCD_URL_LEN], tls_key[ETCD_URL_LEN];
	/* etcd's own authentication (etcd_set_auth): a user and its password,
	 * traded for a token on first use and again when etcd says the token is
	 * no longer valid (it expires, a member restarted); "": none */
	char auth_user[64], auth_password[256], token[512];
	void *curl;          /* CURL *, made on first use */
	char err[256];       /* why the last call failed */
};

struct etcd_kv {
	char *key;           /* decoded, NUL-terminated */
	char *value;
	size_t value_len;
	int64_t create_rev, mod_rev, lease;
};

/* endpoints: comma-separated http(s) URLs. 0 or -EINVAL (err says why). */
int etcd_init(struct etcd *e, const char *endpoints, long timeout_ms);
void etcd_fini(struct etcd *e);
/* TLS for https:// endpoints: the CA that signed etcd's certificate, and a
 * client certificate and key for etcd's --client-cert-auth (NULL or "": the
 * system's CAs / none). After etcd_init. */
void etcd_set_tls(struct etcd *e, const char *ca_file, const char *cert_file,
		  const char *key_file);
/* etcd's user/password authentication (etcdctl user add, auth enable):
 * every request carries the token POST /v3/auth/authenticate gave for
 * them. NULL or "" user: none. 0, or -EINVAL when a name or password is too
 * long. After etcd_init. */
int etcd_set_auth(struct etcd *e, const char *user, const char *password);

/* One key: 0 and *found; -EIO etc. (e->err). kv is filled when found;
 * free with etcd_kv_free. *rev: the store's revision (may be NULL). */
int etcd_get(struct etcd *e, const char *key, struct etcd_kv *kv, int *found, int64_t *rev);
/* Every key under prefix, sorted by key: *out (n) to free with
 * etcd_kvs_free. At most limit (0: no limit). */
int etcd_get_prefix(struct etcd *e, const char *prefix, struct etcd_kv **out, size_t *n,
		    size_t limit);
/* n keys read at one revision (a txn of ranges: one consistent snapshot):
 * found[i], kv[i] (free each found one with etcd_kv_free). A reply for
 * another key than asked is refused (-EPROTO). */
int etcd_get_many(struct etcd *e, const char *const *keys, size_t n, struct etcd_kv *kv, int *found,
		  int64_t *rev);
void etcd_kv_free(struct etcd_kv *kv);
void etcd_kvs_free(struct etcd_kv *kv, size_t n);
int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease);
int etcd_delete(struct etcd *e, const char *key);

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id);
/* *ttl: what is left; 0 when the lease is gone (expired or revoked). */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl);
int etcd_lease_revoke(struct etcd *e, int64_t id);

/* Transactions: build compare and request arrays with these, then
 * etcd_txn. */
json_t *etcd_cmp_create(const char *key, int64_t create_rev); /* create_revision == */
json_t *etcd_op_put(const char *key, const char *value, int64_t lease);
json_t *etcd_op_delete(const char *key);
json_t *etcd_op_get(const char *key);
/* Steals cmp, succ and fail (fail may be NULL). *ok: the compare held.
 * *resp (may be NULL): the response to free with json_decref. *rev: the
 * revision after it (may be NULL). */
int etcd_txn(struct etcd *e, json_t *cmp, json_t *succ, json_t *fail, int *ok, json_t **resp,
	     int64_t *rev);

/* Decodes one kv object of a range response (as etcd_get does): 0 or
 * -EINVAL. */
int etcd_kv_parse(const json_t *o, struct etcd_kv *kv);

/* base64 (RFC 4648, with padding): out must hold 4 * ceil(n / 3) + 1. */
void etcd_b64_encode(const void *in, size_t n, char *out);
/* Decoded length, or -1 on bad input; out must hold strlen(in) * 3 / 4 + 1 and is
 * NUL-terminated. */
long etcd_b64_decode(const char *in, unsigned char *out);

#endif
