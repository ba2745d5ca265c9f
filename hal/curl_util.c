#include "hal/curl_util.h"

#include <dlfcn.h>
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hal_curl api;
static _Atomic(const struct hal_curl *) loaded;
static const char *libname = HAL_CURL_LIBRARY;

#define SYM(f, name) { offsetof(struct hal_curl, f), name }
static const struct {
	size_t off;
	const char *name;
} symbols[] = {
	SYM(easy_init, "curl_easy_init"),
	SYM(easy_cleanup, "curl_easy_cleanup"),
	SYM(easy_reset, "curl_easy_reset"),
	SYM(easy_setopt, "curl_easy_setopt"),
	SYM(easy_perform, "curl_easy_perform"),
	SYM(easy_getinfo, "curl_easy_getinfo"),
	SYM(easy_strerror, "curl_easy_strerror"),
	SYM(slist_append, "curl_slist_append"),
	SYM(slist_free_all, "curl_slist_free_all"),
};
#undef SYM

__attribute__((format(printf, 3, 4))) static void say(char *err, size_t len, const char *fmt, ...)
{
	if (!err || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

void hal_curl_set_library(const char *name)
{
	pthread_mutex_lock(&load_lock);
	libname = name ? name : HAL_CURL_LIBRARY;
	pthread_mutex_unlock(&load_lock);
}

const struct hal_curl *hal_curl(void)
{
	return atomic_load(&loaded);
}

int hal_curl_load(char *err, size_t len)
{
	if (atomic_load(&loaded))
		return 0;
	int rc = 0;
	pthread_mutex_lock(&load_lock);
	if (atomic_load(&loaded))
		goto out_unlock;
	void *lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *why = dlerror();
		say(err, len, "libcurl not found (dlopen %s: %s)", libname, why ? why : "?");
		rc = -ENOENT;
		goto out_unlock;
	}
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		void *sym = dlsym(lib, symbols[i].name);
		if (!sym) {
			say(err, len, "libcurl: %s has no symbol %s", libname, symbols[i].name);
			rc = -ENOSYS;
			goto out_close;
		}
		/* POSIX dlsym: an object pointer that holds a function address. */
		memcpy((char *)&api + symbols[i].off, &sym, sizeof(sym));
	}
	CURLcode (*global_init)(long) = NULL;
	void *gi = dlsym(lib, "curl_global_init");
	memcpy(&global_init, &gi, sizeof(gi));
	if (!global_init) {
		say(err, len, "libcurl: %s has no symbol %s", libname, "curl_global_init");
		rc = -ENOSYS;
		goto out_close;
	}
	/* hal_curl_reset restricts schemes with CURLOPT_PROTOCOLS_STR (7.85);
	 * an older libcurl would ignore it silently and let a config URL reach
	 * file:// and the rest: refused here instead. */
	curl_version_info_data *(*version_info)(CURLversion) = NULL;
	void *vi = dlsym(lib, "curl_version_info");
	memcpy(&version_info, &vi, sizeof(vi));
	curl_version_info_data *ver = version_info ? version_info(CURLVERSION_NOW) : NULL;
	if (!ver || ver->version_num < 0x075500) {
		say(err, len, "libcurl: %s is version %s; govd needs 7.85.0 or newer", libname,
		    ver && ver->version ? ver->version : "unknown");
		rc = -ENOSYS;
		goto out_close;
	}
	/* once per process; never cleaned up (process lifetime) */
	if (global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		say(err, len, "libcurl: curl_global_init failed");
		rc = -ENOMEM;
		goto out_close;
	}
	atomic_store(&loaded, &api);
	goto out_unlock;
out_close:
	dlclose(lib);
out_unlock:
	pthread_mutex_unlock(&load_lock);
	return rc;
}

void hal_curl_reset(CURL *c, const char *url, long timeout_ms)
{
	const struct hal_curl *cu = hal_curl();
	assert(cu);
	cu->easy_reset(c);
	cu->easy_setopt(c, CURLOPT_URL, url);
	cu->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	cu->easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	cu->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
}
