#include "governor/daemon/connguard.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"

struct cg_conn {
	int fd;           /* -1: free */
	bool busy;
	bool shut;        /* shut down, waiting for the server's close */
	uint8_t peer[17]; /* family byte + address */
	uint64_t start_ms;
};

struct connguard {
	struct connguard_cfg cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thr;
	bool stopping;
	size_t n;           /* table size: shut ones wait here for their close */
	struct cg_conn *c;
	struct connguard_stats st;
};

static void peer_key(const struct sockaddr *sa, uint8_t key[17])
{
	memset(key, 0, 17);
	if (!sa)
		return;
	key[0] = (uint8_t)sa->sa_family;
	if (sa->sa_family == AF_INET)
		memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(key + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static void shut(struct connguard *g, struct cg_conn *c)
{
	(void)g;
	shutdown(c->fd, SHUT_RDWR); /* the server sees EOF and closes it */
	c->shut = true;
	g->st.open--;
}

static struct cg_conn *find(struct connguard *g, int fd)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->c[i].fd == fd)
			return &g->c[i];
	return NULL;
}

/* The oldest open connection not being answered, of one peer (key) or of
 * all (key NULL); NULL when every one is busy. */
static struct cg_conn *victim(struct connguard *g, const uint8_t *key, const struct cg_conn *keep)
{
	struct cg_conn *v = NULL;
	for (size_t i = 0; i < g->n; i++) {
		struct cg_conn *c = &g->c[i];
		if (c->fd < 0 || c->shut || c->busy || c == keep)
			continue;
		if (key && memcmp(c->peer, key, 17))
			continue;
		if (!v || c->start_ms < v->start_ms)
			v = c;
	}
	return v;
}

static void *reaper(void *arg)
{
	struct connguard *g = arg;
	pthread_mutex_lock(&g->mu);
	while (!g->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts); /* the condvar's clock */
		uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)g->cfg.tick_ms * 1000000u;
		ts.tv_sec += (time_t)(ns / 1000000000u);
		ts.tv_nsec = (long)(ns % 1000000000u);
		pthread_cond_timedwait(&g->cv, &g->mu, &ts);
		uint64_t now = govd_mono_ms();
		for (size_t i = 0; i < g->n; i++) {
			struct cg_conn *c = &g->c[i];
			if (c->fd >= 0 && !c->shut && now - c->start_ms >= g->cfg.deadline_ms) {
				shut(g, c);
				g->st.expired++;
			}
		}
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

int connguard_start(struct connguard **out, const struct connguard_cfg *cfg)
{
	*out = NULL;
	if (!cfg->max_conns || !cfg->max_per_peer || !cfg->deadline_ms || !cfg->tick_ms)
		return -EINVAL;
	struct connguard *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->cfg = *cfg;
	/* Room for the open ones and as many again shut but not yet closed. */
	g->n = 2 * (size_t)cfg->max_conns;
	g->c = calloc(g->n, sizeof(*g->c));
	int rc = -ENOMEM;
	if (!g->c)
		goto free_g;
	for (size_t i = 0; i < g->n; i++)
		g->c[i].fd = -1;
	if ((rc = -pthread_mutex_init(&g->mu, NULL)))
		goto free_c;
	if ((rc = -pthread_cond_init(&g->cv, NULL)))
		goto destroy_mu;
	if ((rc = -pthread_create(&g->thr, NULL, reaper, g)))
		goto destroy_cv;
	*out = g;
	return 0;

destroy_cv:
	pthread_cond_destroy(&g->cv);
destroy_mu:
	pthread_mutex_destroy(&g->mu);
free_c:
	free(g->c);
free_g:
	free(g);
	return rc;
}

void connguard_stop(struct connguard *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->mu);
	g->stopping = true;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->thr, NULL);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	free(g->c);
	free(g);
}

void connguard_opened(struct connguard *g, int fd, const struct sockaddr *peer)
{
	uint8_t key[17];
	peer_key(peer, key);
	pthread_mutex_lock(&g->mu);
	g->st.opened++;
	struct cg_conn *c = find(g, -1);
	if (!c) {
		/* Every slot open or awaiting its close: this one goes at once. */
		shutdown(fd, SHUT_RDWR);
		g->st.evicted_total++;
		pthread_mutex_unlock(&g->mu);
		return;
	}
	*c = (struct cg_conn){ .fd = fd, .start_ms = govd_mono_ms() };
	memcpy(c->peer, key, sizeof(key));
	g->st.open++;
	unsigned same = 0;
	for (size_t i = 0; i < g->n; i++)
		same += g->c[i].fd >= 0 && !g->c[i].shut && !memcmp(g->c[i].peer, key, 17);
	struct cg_conn *v;
	if (same > g->cfg.max_per_peer && (v = victim(g, key, c))) {
		shut(g, v);
		g->st.evicted_peer++;
	}
	if (g->st.open > g->cfg.max_conns && (v = victim(g, NULL, c))) {
		shut(g, v);
		g->st.evicted_total++;
	}
	pthread_mutex_unlock(&g->mu);
}

void connguard_busy(struct connguard *g, int fd)
{
	pthread_mutex_lock(&g->mu);
	struct cg_conn *c = find(g, fd);
	if (c)
		c->busy = true;
	pthread_mutex_unlock(&g->mu);
}

void connguard_done(struct connguard *g, int fd)
{
	pthread_mutex_lock(&g->mu);
	struct cg_conn *c = find(g, fd);
	if (c) {
		c->busy = false;
		c->start_ms = govd_mono_ms();
	}
	pthread_mutex_unlock(&g->mu);
}

void connguard_closed(struct connguard *g, int fd)
{
	pthread_mutex_lock(&g->mu);
	struct cg_conn *c = find(g, fd);
	if (c) {
		if (!c->shut)
			g->st.open--;
		c->fd = -1;
	}
	pthread_mutex_unlock(&g->mu);
}

void connguard_get_stats(struct connguard *g, struct connguard_stats *out)
{
	pthread_mutex_lock(&g->mu);
	*out = g->st;
	pthread_mutex_unlock(&g->mu);
}
