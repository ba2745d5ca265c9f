/* The serving backend's quality evidence: the evaluator's datagrams on a
 * unix socket (and the scrape's counters), per slice. */
#include "hal/hal_serving.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hal/serving_internal.h"

int sv_quality_socket_open(struct sv *s, const struct hal_dev_cfg *cfg, const char *path,
			   struct diag_list *diags)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.quality_socket", "bad-value",
			 "path longer than %zu bytes", sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.quality_socket", "bad-value",
				 "%s exists and is not a socket", path);
			return -EEXIST;
		}
		unlink(path); /* a stale socket of an earlier run */
	}
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		diag_add(diags, DIAG_ERROR, SRC(cfg), 0, 0, "options.quality_socket", "io",
			 "bind %s: %s", path, strerror(e));
		return -e;
	}
	s->qpath = strdup(path);
	if (!s->qpath) {
		close(fd);
		unlink(path);
		return -ENOMEM;
	}
	s->qfd = fd;
	return 0;
}

static int slice_index(const struct sv *s, const char *name)
{
	for (size_t i = 0; i < s->n_slices; i++)
		if (!strcmp(s->slice_name[i], name))
			return (int)i;
	return -1;
}

/* One evaluator datagram; false (and qfault_msg) if malformed or, with
 * *implausible, over the read's bound. */
static bool quality_msg(struct sv *s, const char *buf, size_t len, bool *implausible)
{
	json_error_t jerr;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	bool ok = false;
	if (!root) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg), "quality datagram: %s at column %d",
			 jerr.text, jerr.column);
		return false;
	}
	json_t *js = json_object_get(root, "slice");
	json_t *jn = json_object_get(root, "samples"), *jm = json_object_get(root, "mismatches");
	json_t *jd = json_object_get(root, "delta");
	json_t *jmode = json_object_get(root, "mode"); /* whose answers: int8 (default) or fp8 */
	int idx = json_is_string(js) ? slice_index(s, json_string_value(js)) : -1;
	if (!json_is_object(root) || !json_is_string(js)) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg), "quality datagram: needs a \"slice\" string");
		goto out_free;
	}
	if (idx < 0) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg), "quality datagram: unknown slice '%.48s'",
			 json_string_value(js));
		goto out_free;
	}
	int mode = jmode ? -1 : HAL_LOW_INT8;
	for (int m = 0; jmode && json_is_string(jmode) && m < HAL_LOW_N; m++)
		if (!strcmp(json_string_value(jmode), hal_low_mode_names[m]))
			mode = m;
	bool fp8 = mode == HAL_LOW_FP8;
	if (mode < 0) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg),
			 "quality datagram: mode must be \"int8\" or \"fp8\"");
		goto out_free;
	}
	if (fp8 && jd) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg),
			 "quality datagram: delta is INT8's; not with mode fp8");
		goto out_free;
	}
	if (!jn && !jd) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg),
			 "quality datagram: needs \"samples\" (and \"mismatches\") or \"delta\"");
		goto out_free;
	}
	json_int_t n = 0, m = 0;
	if (jn || jm) {
		if (!json_is_integer(jn) || (jm && !json_is_integer(jm)) ||
		    (n = json_integer_value(jn)) < 0 || (m = jm ? json_integer_value(jm) : 0) < 0 ||
		    m > n) {
			snprintf(s->qfault_msg, sizeof(s->qfault_msg),
				 "quality datagram: samples and mismatches must be integers, 0 <= mismatches <= samples");
			goto out_free;
		}
	}
	if (jd && (!json_is_number(jd) || !isfinite(json_number_value(jd)))) {
		snprintf(s->qfault_msg, sizeof(s->qfault_msg), "quality datagram: delta must be a number");
		goto out_free;
	}
	/* Bounded before it counts: one read (one period) takes at most
	 * quality_max_samples per slice from the datagrams together; a datagram
	 * that would pass it is dropped whole. The bound keeps the sums far
	 * from wrapping; the adds saturate all the same. */
	uint64_t *read = fp8 ? &s->q_read_fp8[idx] : &s->q_read_sock[idx];
	if ((uint64_t)n > s->q_max_samples - *read) {
		*implausible = true;
		snprintf(s->qfault_msg, sizeof(s->qfault_msg),
			 "quality datagram: slice %s: %lld samples would pass quality_max_samples "
			 "(%llu) this read (%llu so far): dropped", s->slice_name[idx], (long long)n,
			 (unsigned long long)s->q_max_samples, (unsigned long long)*read);
		goto out_free;
	}
	*read += (uint64_t)n;
	uint64_t *qs = fp8 ? s->qs_fp8_sock : s->qs_sock, *qm = fp8 ? s->qm_fp8_sock : s->qm_sock;
	qs[idx] = sat_add_u64(qs[idx], (uint64_t)n);
	qm[idx] = sat_add_u64(qm[idx], (uint64_t)m);
	if (jd)
		s->qdelta[idx] = json_number_value(jd);
	ok = true;
out_free:
	json_decref(root);
	return ok;
}

static uint32_t quality_drain(struct sv *s)
{
	if (s->qfd < 0)
		return 0;
	uint32_t f = 0;
	char buf[Q_DGRAM_MAX];
	for (int i = 0; i < Q_DRAIN_MAX; i++) {
		ssize_t n = recv(s->qfd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break; /* EAGAIN: drained */
		}
		bool ok, implausible = false;
		if ((size_t)n > sizeof(buf)) {
			snprintf(s->qfault_msg, sizeof(s->qfault_msg),
				 "quality datagram of %zd bytes (at most %d)", n, Q_DGRAM_MAX);
			ok = false;
		} else {
			ok = quality_msg(s, buf, (size_t)n, &implausible);
		}
		if (implausible) {
			s->implausible++;
			f |= HAL_SVF_IMPLAUSIBLE;
		} else if (!ok) {
			s->malformed++;
			f |= HAL_SVF_QUALITY_MSG;
		}
	}
	return f;
}

bool sv_quality_from_scrape(const struct sv *s)
{
	return s->mname[M_Q_SAMPLES] || s->mname[M_Q_MISM];
}

int sv_read_quality(struct hal_dev *dev, struct hal_quality *out)
{
	struct sv *s = dev->priv;
	if (!s || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	s->qfault_msg[0] = '\0';
	uint32_t f = 0;
	bool valid = true;
	memset(s->q_read_sock, 0, sizeof(s->q_read_sock));
	memset(s->q_read_fp8, 0, sizeof(s->q_read_fp8));
	if (sv_quality_from_scrape(s)) {
		/* read_serving usually scraped this period already */
		if (!s->scraped_since_quality)
			f |= sv_scrape(s, govd_mono_ms() + s->timeout_ms) & ~HAL_SVF_RESET;
		valid = s->last_ok;
		if (!valid)
			snprintf(s->qfault_msg, sizeof(s->qfault_msg), "%.180s", s->fault_msg);
		s->scraped_since_quality = false;
	} else if (s->qfd < 0) {
		valid = false;
		snprintf(s->qfault_msg, sizeof(s->qfault_msg),
			 "no quality source (quality_socket or quality_*_metric)");
	}
	if (s->q_scrape_implausible) {
		f |= HAL_SVF_IMPLAUSIBLE;
		if (!s->qfault_msg[0])
			snprintf(s->qfault_msg, sizeof(s->qfault_msg), "%.180s", s->fault_msg);
		s->q_scrape_implausible = false;
	}
	f |= quality_drain(s);
	out->t_ms = govd_clock_now_or_mono_ms(s->clock);
	out->valid = valid;
	out->n_slices = s->n_slices;
	for (size_t i = 0; i < s->n_slices; i++) {
		size_t qs = offsetof(struct replica, c_qs) + i * sizeof(struct prom_counter);
		size_t qm = offsetof(struct replica, c_qm) + i * sizeof(struct prom_counter);
		out->samples[i] = sat_add_u64(sv_rep_total(s, qs), s->qs_sock[i]);
		out->mismatches[i] = sat_add_u64(sv_rep_total(s, qm), s->qm_sock[i]);
		out->samples_fp8[i] = s->qs_fp8_sock[i];
		out->mismatches_fp8[i] = s->qm_fp8_sock[i];
		out->delta[i] = s->qdelta[i];
		if (!isnan(s->qdelta[i]))
			out->delta_valid |= 1u << i;
	}
	for (size_t i = s->n_slices; i < HAL_MAX_SLICES; i++)
		out->delta[i] = NAN;
	out->malformed = s->malformed;
	out->fault_bits = f;
	out->fault_msg = s->qfault_msg[0] ? s->qfault_msg : NULL;
	return 0;
}

