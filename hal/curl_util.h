/* What every HTTP exchange of hal/ (serving scrapes and confirmations,
 * the precision POST) sets up the same way. */
#ifndef GOVD_HAL_CURL_UTIL_H
#define GOVD_HAL_CURL_UTIL_H
#include <curl/curl.h>

/* curl_easy_reset, then: url; no signals (a timeout must not raise SIGALRM
 * in the daemon); http and https only (a config URL must not reach file:// or
 * other schemes); timeout_ms bounds the connect and the whole transfer. */
void hal_curl_reset(CURL *c, const char *url, long timeout_ms);

#endif
