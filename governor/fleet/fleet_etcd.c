#include "governor/fleet/fleet_etcd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/curl_util.h"

#define ETCD_MAX_RESPONSE (8u << 20) /* a range of every node record fits easily */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void etcd_b64_encode(const void *in, size_t n, char *out)
{
	const unsigned char *p = in;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = b64[(v >> 18) & 63];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = '\0';
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;
	return p ? (int)(p - b64) : -1;
}

long etcd_b64_decode(const char *in, unsigned char *out)
{
	size_t n = strlen(in), o = 0;
	if (n % 4)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		for (int k = 0; k < 4; k++) {
			v[k] = in[i + k] == '=' ? -2 : b64_val(in[i + k]);
			if (v[k] == -1 || (v[k] == -2 && (i + 4 < n || k < 2)))
				return -1;
		}
		if (v[2] == -2 && v[3] != -2)
			return -1;
		uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
			     (uint32_t)(v[2] < 0 ? 0 : v[2]) << 6 | (uint32_t)(v[3] < 0 ? 0 : v[3]);
		out[o++] = (unsigned char)(x >> 16);
		if (v[2] >= 0)
			out[o++] = (unsigned char)(x >> 8);
		if (v[3] >= 0)
			out[o++] = (unsigned char)x;
	}
	out[o] = '\0';
	return (long)o;
}

static json_t *b64_json(const char *s, size_t n)
{
	char *buf = malloc(4 * ((n + 2) / 3) + 1);
	if (!buf)
		return NULL;
	etcd_b64_encode(s, n, buf);
	json_t *j = json_string(buf);
	free(buf);
	return j;
}

static char *b64_dup(const char *in, size_t *len)
{
	unsigned char *out = malloc(strlen(in) * 3 / 4 + 1);
	if (!out)
		return NULL;
	long n = etcd_b64_decode(in, out);
	if (n < 0) {
		free(out);
		return NULL;
	}
	if (len)
		*len = (size_t)n;
	return (char *)out;
}

/* int64 fields: strings from the gateway, absent when zero. */
static int64_t i64(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return 0;
}

static json_t *i64_json(int64_t v)
{
	char s[32];
	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_string(s);
}

int etcd_init(struct etcd *e, const char *endpoints, long timeout_ms)
{
	memset(e, 0, sizeof(*e));
	e->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
	const char *p = endpoints;
	while (p && *p) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		if (n) {
			if (e->n_ep == ETCD_MAX_ENDPOINTS || n >= ETCD_URL_LEN) {
				snprintf(e->err, sizeof(e->err), "at most %d endpoints of < %d characters",
					 ETCD_MAX_ENDPOINTS, ETCD_URL_LEN);
				return -EINVAL;
			}
			memcpy(e->ep[e->n_ep], p, n);
			e->ep[e->n_ep][n] = '\0';
			/* a trailing slash would double in the path */
			while (n > 0 && e->ep[e->n_ep][n - 1] == '/')
				e->ep[e->n_ep][--n] = '\0';
			if (strncmp(e->ep[e->n_ep], "http://", 7) && strncmp(e->ep[e->n_ep], "https://", 8)) {
				snprintf(e->err, sizeof(e->err), "endpoint '%s' is not an http(s) URL",
					 e->ep[e->n_ep]);
				return -EINVAL;
			}
			e->n_ep++;
		}
		p = c ? c + 1 : NULL;
	}
	if (!e->n_ep) {
		snprintf(e->err, sizeof(e->err), "no endpoints");
		return -EINVAL;
	}
	return 0;
}

void etcd_set_tls(struct etcd *e, const char *ca_file, const char *cert_file,
		  const char *key_file)
{
	snprintf(e->tls_ca, sizeof(e->tls_ca), "%s", ca_file ? ca_file : "");
	snprintf(e->tls_cert, sizeof(e->tls_cert), "%s", cert_file ? cert_file : "");
	snprintf(e->tls_key, sizeof(e->tls_key), "%s", key_file ? key_file : "");
}

int etcd_set_auth(struct etcd *e, const char *user, const char *password)
{
	e->auth_user[0] = e->auth_password[0] = e->token[0] = '\0';
	if (!user || !user[0])
		return 0;
	if (strlen(user) >= sizeof(e->auth_user) || !password ||
	    strlen(password) >= sizeof(e->auth_password)) {
		snprintf(e->err, sizeof(e->err), "etcd user name (< %zu) or password (< %zu) too long",
			 sizeof(e->auth_user), sizeof(e->auth_password));
		return -EINVAL;
	}
	snprintf(e->auth_user, sizeof(e->auth_user), "%s", user);
	snprintf(e->auth_password, sizeof(e->auth_password), "%s", password);
	return 0;
}

void etcd_fini(struct etcd *e)
{
	/* the password does not outlive the client */
	explicit_bzero(e->auth_password, sizeof(e->auth_password));
	explicit_bzero(e->token, sizeof(e->token));
	if (e->curl && hal_curl())
		hal_curl()->easy_cleanup(e->curl);
	e->curl = NULL;
}

struct buf {
	char *p;
	size_t n;
	bool over;
};

static size_t on_data(char *d, size_t sz, size_t nm, void *ctx)
{
	struct buf *b = ctx;
	size_t n = sz * nm;
	if (b->n + n > ETCD_MAX_RESPONSE) {
		b->over = true;
		return 0;
	}
	char *q = realloc(b->p, b->n + n + 1);
	if (!q)
		return 0;
	memcpy(q + b->n, d, n);
	b->p = q;
	b->n += n;
	b->p[b->n] = '\0';
	return n;
}

/* POST body to path on each endpoint in turn from the last good one, with
 * the token when there is one; the parsed reply, or NULL with e->err and
 * *unauth when etcd refused the token (HTTP 401). */
static json_t *post(struct etcd *e, const char *path, const char *body, bool *unauth)
{
	json_t *out = NULL;
	*unauth = false;
	if (hal_curl_load(e->err, sizeof(e->err)))
		return NULL;
	const struct hal_curl *cu = hal_curl();
	if (!e->curl && !(e->curl = cu->easy_init())) {
		snprintf(e->err, sizeof(e->err), "curl_easy_init failed");
		return NULL;
	}
	struct curl_slist *hdr = cu->slist_append(NULL, "Content-Type: application/json");
	if (hdr && e->token[0]) {
		char h[sizeof(e->token) + 32];
		snprintf(h, sizeof(h), "Authorization: %s", e->token);
		struct curl_slist *h2 = cu->slist_append(hdr, h);
		explicit_bzero(h, sizeof(h));
		if (h2)
			hdr = h2;
	}
	for (size_t t = 0; t < e->n_ep && !out; t++) {
		size_t i = (e->cur + t) % e->n_ep;
		char url[ETCD_URL_LEN + 64];
		struct buf b = { 0 };
		long code = 0;
		snprintf(url, sizeof(url), "%s%s", e->ep[i], path);
		hal_curl_reset(e->curl, url, e->timeout_ms);
		if (e->tls_ca[0])
			cu->easy_setopt(e->curl, CURLOPT_CAINFO, e->tls_ca);
		if (e->tls_cert[0]) {
			cu->easy_setopt(e->curl, CURLOPT_SSLCERT, e->tls_cert);
			cu->easy_setopt(e->curl, CURLOPT_SSLKEY, e->tls_key);
		}
		cu->easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
		cu->easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdr);
		cu->easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_data);
		cu->easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
		CURLcode cc = cu->easy_perform(e->curl);
		cu->easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
		json_error_t je;
		json_t *j = b.p ? json_loadb(b.p, b.n, 0, &je) : NULL;
		if (cc != CURLE_OK) {
			/* etcd with --client-cert-auth drops a handshake without a
			 * client certificate: curl sees only a failed receive */
			bool tls = !strncmp(e->ep[i], "https://", 8);
			snprintf(e->err, sizeof(e->err), "%s: %s%s", e->ep[i],
				 b.over ? "reply too large" : cu->easy_strerror(cc),
				 tls && !e->tls_cert[0]
					 ? " (TLS without a client certificate: does etcd ask for one? "
					   "fleet.tls.cert_file)"
					 : "");
		} else if (code != 200 || !json_is_object(j)) {
			const char *msg = json_string_value(json_object_get(j, "error"));
			if (!msg)
				msg = json_string_value(json_object_get(j, "message"));
			snprintf(e->err, sizeof(e->err), "%s%s: HTTP %ld%s%s", e->ep[i], path, code,
				 msg ? ": " : "", msg ? msg : "");
			if (code == 401) {
				/* the same token fails on every member: trade it first */
				*unauth = true;
				json_decref(j);
				free(b.p);
				break;
			}
		} else {
			out = j;
			j = NULL;
			e->cur = i;
		}
		json_decref(j);
		free(b.p);
	}
	cu->slist_free_all(hdr);
	return out;
}

/* The user's password for a token (POST /v3/auth/authenticate). */
static int authenticate(struct etcd *e)
{
	json_t *req = json_pack("{s:s, s:s}", "name", e->auth_user, "password", e->auth_password);
	char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!body) {
		snprintf(e->err, sizeof(e->err), "out of memory");
		return -ENOMEM;
	}
	bool unauth;
	e->token[0] = '\0';
	json_t *r = post(e, "/v3/auth/authenticate", body, &unauth);
	explicit_bzero(body, strlen(body));
	free(body);
	const char *tok = json_string_value(json_object_get(r, "token"));
	int rc = 0;
	if (!r) {
		char why[sizeof(e->err)];
		snprintf(why, sizeof(why), "%s", e->err);
		snprintf(e->err, sizeof(e->err), "etcd authentication as '%.32s' failed: %.180s",
			 e->auth_user, why);
		rc = -EACCES;
	} else if (!tok || !tok[0] || strlen(tok) >= sizeof(e->token)) {
		snprintf(e->err, sizeof(e->err),
			 "etcd authentication as '%s': no usable token in the reply (is auth enabled? "
			 "etcdctl auth enable)",
			 e->auth_user);
		rc = -EPROTO;
	} else {
		snprintf(e->token, sizeof(e->token), "%s", tok);
	}
	json_decref(r);
	return rc;
}

/* One request: with etcd's authentication, a token first, and a new one
 * once when etcd no longer takes the old. The parsed reply, or NULL with
 * e->err. Steals req. */
static json_t *call(struct etcd *e, const char *path, json_t *req)
{
	char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_t *out = NULL;
	json_decref(req);
	if (!body) {
		snprintf(e->err, sizeof(e->err), "out of memory");
		return NULL;
	}
	bool unauth = false;
	if (e->auth_user[0] && !e->token[0] && authenticate(e))
		goto out;
	out = post(e, path, body, &unauth);
	if (!out && unauth && e->auth_user[0] && authenticate(e) == 0)
		out = post(e, path, body, &unauth);
out:
	free(body);
	return out;
}

int etcd_kv_parse(const json_t *o, struct etcd_kv *kv)
{
	memset(kv, 0, sizeof(*kv));
	const char *k = json_string_value(json_object_get(o, "key"));
	const char *v = json_string_value(json_object_get(o, "value"));
	if (!k || !(kv->key = b64_dup(k, NULL)))
		return -EINVAL;
	kv->value = b64_dup(v ? v : "", &kv->value_len);
	if (!kv->value) {
		etcd_kv_free(kv);
		return -EINVAL;
	}
	kv->create_rev = i64(o, "create_revision");
	kv->mod_rev = i64(o, "mod_revision");
	kv->lease = i64(o, "lease");
	return 0;
}

void etcd_kv_free(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	kv->key = kv->value = NULL;
}

void etcd_kvs_free(struct etcd_kv *kv, size_t n)
{
	for (size_t i = 0; kv && i < n; i++)
		etcd_kv_free(&kv[i]);
	free(kv);
}

static json_t *key_req(const char *key)
{
	json_t *r = json_object();
	json_object_set_new(r, "key", b64_json(key, strlen(key)));
	return r;
}

int etcd_get(struct etcd *e, const char *key, struct etcd_kv *kv, int *found, int64_t *rev)
{
	json_t *r = call(e, "/v3/kv/range", key_req(key));
	*found = 0;
	if (!r)
		return -EIO;
	if (rev)
		*rev = i64(json_object_get(r, "header"), "revision");
	json_t *kvs = json_object_get(r, "kvs");
	int rc = 0;
	if (json_array_size(kvs) > 0) {
		rc = etcd_kv_parse(json_array_get(kvs, 0), kv);
		if (rc) {
			snprintf(e->err, sizeof(e->err), "%s: malformed kv in the reply", key);
		} else if (strcmp(kv->key, key)) {
			/* a wrong or hostile endpoint: never take another key's value */
			snprintf(e->err, sizeof(e->err), "%s: the reply is for another key", key);
			etcd_kv_free(kv);
			rc = -EPROTO;
		} else {
			*found = 1;
		}
	}
	json_decref(r);
	return rc;
}

/* The end of a prefix range: the prefix with its last byte + 1. */
static void prefix_end(const char *prefix, char *out, size_t len)
{
	snprintf(out, len, "%s", prefix);
	size_t n = strlen(out);
	while (n > 0 && (unsigned char)out[n - 1] == 0xff)
		out[--n] = '\0';
	if (n > 0)
		out[n - 1] = (char)((unsigned char)out[n - 1] + 1);
}

int etcd_get_prefix(struct etcd *e, const char *prefix, struct etcd_kv **out, size_t *n,
		    size_t limit)
{
	char end[512];
	*out = NULL;
	*n = 0;
	prefix_end(prefix, end, sizeof(end));
	json_t *q = key_req(prefix);
	json_object_set_new(q, "range_end", b64_json(end, strlen(end)));
	if (limit)
		json_object_set_new(q, "limit", i64_json((int64_t)limit));
	json_t *r = call(e, "/v3/kv/range", q);
	if (!r)
		return -EIO;
	json_t *kvs = json_object_get(r, "kvs");
	size_t m = json_array_size(kvs);
	int rc = 0;
	if (limit && m > limit) {
		snprintf(e->err, sizeof(e->err), "%s: %zu keys in the reply, limit %zu", prefix, m, limit);
		json_decref(r);
		return -EPROTO;
	}
	if (m) {
		*out = calloc(m, sizeof(**out));
		if (!*out)
			rc = -ENOMEM;
		for (size_t i = 0; !rc && i < m; i++) {
			rc = etcd_kv_parse(json_array_get(kvs, i), &(*out)[i]);
			if (rc) {
				snprintf(e->err, sizeof(e->err), "%s: malformed kv in the reply", prefix);
			} else {
				(*n)++;
				/* callers slice the prefix off: a key that does not
				 * start with it (a wrong or hostile endpoint) is refused */
				if (strncmp((*out)[i].key, prefix, strlen(prefix))) {
					snprintf(e->err, sizeof(e->err),
						 "%s: the reply has a key outside the prefix", prefix);
					rc = -EPROTO;
				}
			}
		}
		if (rc) {
			etcd_kvs_free(*out, *n);
			*out = NULL;
			*n = 0;
		}
	}
	json_decref(r);
	return rc;
}

json_t *etcd_op_put(const char *key, const char *value, int64_t lease)
{
	json_t *r = key_req(key);
	json_object_set_new(r, "value", b64_json(value, strlen(value)));
	if (lease)
		json_object_set_new(r, "lease", i64_json(lease));
	return r;
}

int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease)
{
	json_t *r = call(e, "/v3/kv/put", etcd_op_put(key, value, lease));
	json_decref(r);
	return r ? 0 : -EIO;
}

int etcd_delete(struct etcd *e, const char *key)
{
	json_t *r = call(e, "/v3/kv/deleterange", key_req(key));
	json_decref(r);
	return r ? 0 : -EIO;
}

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id)
{
	json_t *q = json_object();
	json_object_set_new(q, "TTL", i64_json(ttl_s));
	json_t *r = call(e, "/v3/lease/grant", q);
	if (!r)
		return -EIO;
	*id = i64(r, "ID");
	const char *err = json_string_value(json_object_get(r, "error"));
	int rc = 0;
	if (!*id || (err && *err)) {
		snprintf(e->err, sizeof(e->err), "lease grant refused%s%s", err ? ": " : "",
			 err ? err : "");
		rc = -EIO;
	}
	json_decref(r);
	return rc;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl)
{
	json_t *q = json_object();
	json_object_set_new(q, "ID", i64_json(id));
	/* a stream endpoint: one request, one {"result": ...} line back */
	json_t *r = call(e, "/v3/lease/keepalive", q);
	if (!r)
		return -EIO;
	json_t *res = json_object_get(r, "result");
	int rc = 0;
	if (!json_is_object(res)) {
		snprintf(e->err, sizeof(e->err), "lease keepalive: no result in the reply");
		rc = -EIO;
	} else {
		*ttl = i64(res, "TTL");
	}
	json_decref(r);
	return rc;
}

int etcd_lease_revoke(struct etcd *e, int64_t id)
{
	json_t *q = json_object();
	json_object_set_new(q, "ID", i64_json(id));
	json_t *r = call(e, "/v3/lease/revoke", q);
	json_decref(r);
	return r ? 0 : -EIO;
}

json_t *etcd_cmp_create(const char *key, int64_t create_rev)
{
	json_t *c = key_req(key);
	json_object_set_new(c, "target", json_string("CREATE"));
	json_object_set_new(c, "result", json_string("EQUAL"));
	json_object_set_new(c, "create_revision", i64_json(create_rev));
	return c;
}

json_t *etcd_op_delete(const char *key)
{
	json_t *o = json_object();
	json_object_set_new(o, "request_delete_range", key_req(key));
	return o;
}

json_t *etcd_op_get(const char *key)
{
	json_t *o = json_object();
	json_object_set_new(o, "request_range", key_req(key));
	return o;
}

static json_t *wrap_put(json_t *op)
{
	/* etcd_op_put's object is also etcd_put's request: wrap it for a txn */
	if (json_object_get(op, "request_put") || json_object_get(op, "request_range") ||
	    json_object_get(op, "request_delete_range"))
		return op;
	json_t *o = json_object();
	json_object_set_new(o, "request_put", op);
	return o;
}

static json_t *wrap_ops(json_t *ops)
{
	json_t *out = json_array();
	size_t i;
	json_t *v;
	json_array_foreach(ops, i, v) json_array_append_new(out, wrap_put(json_incref(v)));
	json_decref(ops);
	return out;
}

int etcd_txn(struct etcd *e, json_t *cmp, json_t *succ, json_t *fail, int *ok, json_t **resp,
	     int64_t *rev)
{
	json_t *q = json_object();
	json_object_set_new(q, "compare", cmp ? cmp : json_array());
	json_object_set_new(q, "success", wrap_ops(succ ? succ : json_array()));
	json_object_set_new(q, "failure", wrap_ops(fail ? fail : json_array()));
	json_t *r = call(e, "/v3/kv/txn", q);
	if (resp)
		*resp = NULL;
	if (!r)
		return -EIO;
	*ok = json_is_true(json_object_get(r, "succeeded"));
	if (rev)
		*rev = i64(json_object_get(r, "header"), "revision");
	if (resp)
		*resp = r;
	else
		json_decref(r);
	return 0;
}

int etcd_get_many(struct etcd *e, const char *const *keys, size_t n, struct etcd_kv *kv, int *found,
		  int64_t *rev)
{
	json_t *succ = json_array(), *resp = NULL;
	int ok = 0, rc;

	for (size_t i = 0; i < n; i++) {
		found[i] = 0;
		memset(&kv[i], 0, sizeof(kv[i]));
		json_array_append_new(succ, etcd_op_get(keys[i]));
	}
	/* no compare: the ranges are served at one revision, one snapshot */
	rc = etcd_txn(e, NULL, succ, NULL, &ok, &resp, rev);
	if (rc)
		return rc;
	json_t *rs = json_object_get(resp, "responses");
	if (!ok || json_array_size(rs) != n) {
		snprintf(e->err, sizeof(e->err), "%s: a read of %zu keys came back with %zu answers",
			 keys[0], n, json_array_size(rs));
		rc = -EPROTO;
		goto out_free;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		json_t *kvs = json_object_get(
			json_object_get(json_array_get(rs, i), "response_range"), "kvs");
		if (json_array_size(kvs) == 0)
			continue;
		if (etcd_kv_parse(json_array_get(kvs, 0), &kv[i])) {
			snprintf(e->err, sizeof(e->err), "%s: malformed kv in the reply", keys[i]);
			rc = -EPROTO;
		} else if (strcmp(kv[i].key, keys[i])) {
			snprintf(e->err, sizeof(e->err), "%s: the reply is for another key", keys[i]);
			etcd_kv_free(&kv[i]);
			rc = -EPROTO;
		} else {
			found[i] = 1;
		}
	}
	if (rc)
		for (size_t i = 0; i < n; i++)
			if (found[i]) {
				etcd_kv_free(&kv[i]);
				found[i] = 0;
			}
out_free:
	json_decref(resp);
	return rc;
}
