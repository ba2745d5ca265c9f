/* The serving backend's parts (hal/hal_serving.c: options, precision
 * writer, the power side and the ops; serving_scrape.c: the metrics
 * scrape; serving_quality.c: the quality listener) share this: the
 * device's state and the few calls that cross between them. Not for any
 * other file. */
#ifndef GOVD_HAL_SERVING_INTERNAL_H
#define GOVD_HAL_SERVING_INTERNAL_H
#include <curl/curl.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "hal/hal.h"
#include "hal/hal_fwd.h"
#include "hal/precision_act.h"
#include "hal/promtext.h"
#include "hal/router_haproxy.h"

enum fmt { FMT_VLLM, FMT_SGLANG, FMT_TRITON, FMT_GENERIC, FMT_N };

/* Metrics the backend reads; option key "<key>_metric" names each. The
 * histograms come first (H_N of them, in the order of hal_serving's). */
enum metric {
	M_TTFT,
	M_TBT,
	M_E2E,
	M_QTIME, /* time waiting to be scheduled */
	M_REQ,
	M_TOK,
	M_RUN,
	M_WAIT,
	M_KV,    /* KV cache in use, 0..1 */
	M_DUR,   /* cumulative request time counter (Triton, us) */
	M_QDUR,  /* cumulative queue time counter (Triton, us) */
	M_INT8_TOK,
	M_SLICE_REQ,
	M_SLICE_INT8_REQ,
	M_SLICE_INT8_TOK,
	M_Q_SAMPLES,
	M_Q_MISM,
	M_CONFIRM,
	M_N
};
#define H_N 4
#define BIT(m) (1u << (m))

#define SV_MAX_REPLICAS 4
#define SV_MAX_ALT 4

/* One endpoint of the device (url, then each of replica_urls) and what its
 * scrapes left: each replica's counters and histograms are followed on
 * their own, so a restart of one is a reset of that one only. */
struct replica {
	char *url;
	/* the previous scrape's histograms as served (n == 0: none yet) */
	struct prom_buckets last[H_N];
	struct prom_buckets last_dur[2]; /* Triton: request and queue time over the requests */
	struct prom_counter c_req, c_tok, c_int8_tok;
	struct prom_counter c_slice[3][HAL_MAX_SLICES]; /* req, int8 req, int8 tok */
	struct prom_counter c_qs[HAL_MAX_SLICES], c_qm[HAL_MAX_SLICES];
};

#define Q_DGRAM_MAX 4096
#define Q_DRAIN_MAX 1024

struct sv {
	/* First: the power side's view (hal_fwd.h finds inner through priv). */
	struct hal_fwd pw;
	size_t n_rep;
	struct replica rep[SV_MAX_REPLICAS];
	enum fmt fmt;
	struct prom_matcher match;
	uint32_t timeout_ms;
	size_t max_bytes;
	char *mname[M_N]; /* "a|b": alternatives, the first family present wins */
	bool required[M_N];
	double alt_unit_ms[M_N][SV_MAX_ALT]; /* unit of each alternative, ms per unit */
	char *slice_label;
	size_t n_slices;
	char slice_name[HAL_MAX_SLICES][HAL_NAME_LEN];

	CURL *curl;
	char *body;
	size_t body_len, body_cap;
	bool body_over;

	/* cumulative state, committed per good scrape */
	bool have_scrape, last_ok, scraped_since_quality;
	/* Each scrape's increase (of every replica) goes into the cumulative
	 * h[], whose windows the governor takes (hist_delta + hist_quantile). */
	struct hist *h[H_N]; /* ttft, tbt, e2e, queue time */
	bool have_h[H_N];    /* ever read: queue_time is offered only then */
	uint64_t queue_len, running;
	bool kv_valid;
	double kv_frac;
	uint32_t unmerged; /* BIT(histogram) merged replica by replica: bounds differ */

	/* quality datagrams */
	int qfd;
	char *qpath;
	uint64_t qs_sock[HAL_MAX_SLICES], qm_sock[HAL_MAX_SLICES];
	/* At most this many samples per slice per read_quality, from the
	 * datagrams and from the scrape's counters each (quality_max_samples). */
	uint64_t q_max_samples;
	uint64_t q_read_sock[HAL_MAX_SLICES]; /* datagram samples this read */
	/* The same for FP8's answers (datagrams with "mode": "fp8") */
	uint64_t qs_fp8_sock[HAL_MAX_SLICES], qm_fp8_sock[HAL_MAX_SLICES];
	uint64_t q_read_fp8[HAL_MAX_SLICES];
	bool q_scrape_implausible; /* a scrape since the last read_quality dropped an increase */
	double qdelta[HAL_MAX_SLICES];
	uint64_t malformed;
	uint64_t implausible; /* datagrams dropped over quality_max_samples */

	/* precision */
	struct pact act;
	bool act_on;
	struct hap *hap; /* precision: haproxy (else act) */
	uint8_t hap_low_mode; /* haproxy_low_mode: what the low replica serves (enum hal_low_mode) */
	char hap_be[HAL_MAX_SLICES][HAP_NAME_LEN]; /* haproxy_backends, until hap_open copies them */
	uint64_t gen_set, gen_applied, t_set_ms;
	char *confirm_url, *confirm_file, *confirm_field;
	uint64_t confirm_grace_ms;

	/* timestamps and the confirmation grace on the daemon's clock (NULL:
	 * CLOCK_MONOTONIC); HTTP deadlines are real time (govd_mono_ms) */
	const struct govd_clock *clock;

	/* Power and thermal side (option power_backend): another backend
	 * opened with the power.* options, behind sample, get_limits and the
	 * clock / power-limit writes of this device's own ops table. A sim
	 * plant is advanced here to the clock's elapsed time since open (the
	 * daemon advances only devices whose backend is sim) and its
	 * timestamps are moved onto that clock. */
	bool has_inner, inner_sim, fwd_precision;
	bool prec_written; /* the actuator (file/http/exec) was written since the last restore */
	/* What the last document carried: each write carries both, so a
	 * shadow-rate request keeps the INT8 shares and the reverse. */
	double int8_sent[HAL_MAX_SLICES], shadow_sent[HAL_MAX_SLICES];
	uint8_t mode_sent[HAL_MAX_SLICES]; /* enum hal_low_mode per slice */
	struct hal_dev inner;
	struct govd_clock pclk;
	uint64_t t0_ms;
	const char **okeys, **ovals, **ikeys, **ivals; /* the options split */

	char fault_msg[320];
	char qfault_msg[192];
};

#define SRC(cfg) ((cfg)->name ? (cfg)->name : "serving")

static inline uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline uint64_t sat_add_u64(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* A double accumulator as a count: no out-of-range conversion, whatever
 * it summed (values are checked before they count; this is the backstop). */
static inline uint64_t counter_u64(double v)
{
	if (!(v > 0))
		return 0;
	return v >= 9.2e18 ? UINT64_C(9200000000000000000) : (uint64_t)llround(v);
}

/* serving_scrape.c */
uint32_t sv_scrape(struct sv *s, uint64_t deadline_ms);
uint64_t sv_rep_total(const struct sv *s, size_t off);
int sv_read_serving(struct hal_dev *dev, struct hal_serving *out);
/* serving_quality.c */
int sv_quality_socket_open(struct sv *s, const struct hal_dev_cfg *cfg, const char *path,
			   struct diag_list *diags);
bool sv_quality_from_scrape(const struct sv *s);
int sv_read_quality(struct hal_dev *dev, struct hal_quality *out);
/* hal_serving.c: the server's precision writes and restore. */
int sv_set_precision(struct hal_dev *dev, const double *int8_frac, size_t n_slices);
int sv_set_low_mode(struct hal_dev *dev, const uint8_t *mode, size_t n_slices);
int sv_set_shadow_rate(struct hal_dev *dev, const double *rate, size_t n_slices);
int sv_restore(struct hal_dev *dev);
/* serving_power.c: the ops table with the power side (power_backend)
 * behind it, or the router's record; dev->ops is the server's on entry. */
void sv_power_ops(struct hal_dev *dev, struct sv *s);

#endif
