/* libcurl for hal/ (serving scrapes and confirmations, the precision POST),
 * loaded with dlopen on first use: a govd that never talks HTTP to a server
 * does not map libcurl and its TLS, Kerberos and LDAP dependencies (3 MiB
 * resident, bench/rss-breakdown). The curl headers are still used at build
 * time for the types; docs/serving-integration.md. */
#ifndef GOVD_HAL_CURL_UTIL_H
#define GOVD_HAL_CURL_UTIL_H
#include <stddef.h>
#include <curl/curl.h>

/* The libcurl calls hal/ makes, named after the curl_* functions. */
struct hal_curl {
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *c);
	void (*easy_reset)(CURL *c);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode cc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
};

#define HAL_CURL_LIBRARY "libcurl.so.4"

/* Loads libcurl (once per process, thread safe) and runs curl_global_init.
 * 0, or with why in err (if err): -ENOENT "libcurl not found (...)", -ENOSYS
 * (a symbol missing), -ENOMEM (curl_global_init failed). A failure is not
 * remembered: the next call tries again. Never unloaded. */
int hal_curl_load(char *err, size_t len);
/* The table after a successful hal_curl_load, else NULL. */
const struct hal_curl *hal_curl(void);
/* The library hal_curl_load opens (default HAL_CURL_LIBRARY); for tests, no
 * effect once loaded. The string is not copied. */
void hal_curl_set_library(const char *name);

/* curl_easy_reset, then: url; no signals (a timeout must not raise SIGALRM
 * in the daemon); http and https only (a config URL must not reach file:// or
 * other schemes); timeout_ms bounds the connect and the whole transfer.
 * Only after a successful hal_curl_load. */
void hal_curl_reset(CURL *c, const char *url, long timeout_ms);

#endif
