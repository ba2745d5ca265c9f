/* Request arrivals: Azure-format trace replay and the fitted generator.
 * Equations and the fit are in docs/workload-fit.md.
 *
 * Both kinds run in "operational time" op (seconds of the undisturbed
 * workload): trace seconds after start_offset_s, or generator seconds at the
 * base rate. Output (plant) time t maps onto op piecewise:
 *   op(t) = op_k + factor_k * (G(t) - G(t_k))
 * with G(t) = time_scale * t for traces and time_scale * M(t) for the
 * generator, M(t) = integral of the diurnal multiplier 1 + a sin(2 pi (t+phase)/P).
 * workload_set_rate_scale starts a new piece, so bursts and the diurnal shape
 * are pure time changes that keep the arrival process's burst structure. */
#include "plant_models/workload.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsafe.h"

/* Regenerate with tools/fit-workload.py (Azure LLM inference trace 2023, code;
 * Splitwise, ISCA'24; Azure Public Dataset, CC-BY-4.0). */
const struct generator_params generator_azure_code_fit = {
	.rate_rps = 2.5667,
	.burst_cv = 13.151,
	.burst_on_fraction = 0.2826,
	.diurnal_amplitude = 0.0,
	.diurnal_period_s = 86400.0,
	.diurnal_phase_s = 0.0,
	.ctx_mu = 6.9986,
	.ctx_sigma = 1.3602,
	.gen_mu = 2.7882,
	.gen_sigma = 0.8472,
	.ctx_max = 7437,
	.gen_max = 2048,
};

/* ---------------------------------------------------------------- trace file */

#define TRACE_MAX_ERRORS 20
#define TRACE_HEADER "TIMESTAMP,ContextTokens,GeneratedTokens"

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	/* Howard Hinnant's algorithm: proleptic Gregorian, no locale or timezone. */
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool digits(const char *s, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* "YYYY-MM-DD HH:MM:SS[.f{1,9}]" -> ns since 1970-01-01 (the trace's own clock,
 * taken as UTC: only differences matter). */
static bool parse_timestamp(const char *s, size_t len, int64_t *ns)
{
	int y, mo, d, h, mi, se;
	if (len < 19 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
	    !digits(s + 8, 2, &d) || (s[10] != ' ' && s[10] != 'T') || !digits(s + 11, 2, &h) ||
	    s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &se))
		return false;
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (y < 1900 || y > 2200 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || se > 59)
		return false;
	int64_t frac_ns = 0;
	if (len > 19) {
		if (s[19] != '.' || len == 20 || len > 29)
			return false;
		int64_t scale = 100000000;
		for (size_t i = 20; i < len; i++, scale /= 10) {
			if (s[i] < '0' || s[i] > '9')
				return false;
			frac_ns += (s[i] - '0') * scale;
		}
	}
	int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
	*ns = ((days * 24 + h) * 60 + mi) * 60 * INT64_C(1000000000) + se * INT64_C(1000000000) +
	      frac_ns;
	return true;
}

static bool parse_u32(const char *s, size_t len, uint32_t *out)
{
	if (len == 0 || len > 10)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

struct trace_reader {
	const char *path;
	struct diag_list *diags;
	int errors;
};

static bool row_error(struct trace_reader *rd, long line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Returns false once the cap is reached (the caller stops reading). */
static bool row_error(struct trace_reader *rd, long line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag_add(rd->diags, DIAG_ERROR, rd->path, (int)line, 0, "", "trace-row", "%s", msg);
	if (++rd->errors >= TRACE_MAX_ERRORS) {
		diag_add(rd->diags, DIAG_ERROR, rd->path, (int)line, 0, "", "trace-row",
			 "too many errors (%d); stopped reading", rd->errors);
		return false;
	}
	return true;
}

/* The text of a bad field, shortened for messages. */
static const char *shown(const char *s, size_t len, char *buf, size_t blen)
{
	size_t n = len < blen - 4 ? len : blen - 4;
	memcpy(buf, s, n);
	if (n < len)
		memcpy(buf + n, "...", 3), n += 3;
	buf[n] = '\0';
	return buf;
}

/* A row's three fields: 1 and the values (l1: the timestamp's length, for
 * messages); 0 when the row is refused (an error recorded, go on); -1 when
 * the errors are too many (stop). */
static int parse_fields(struct trace_reader *rd, long lineno, const char *line, size_t len,
			int64_t *ns, uint32_t *ctx, uint32_t *gen, size_t *l1_out)
{
	char fbuf[48];
	const char *c1 = memchr(line, ',', len);
	const char *c2 = c1 ? memchr(c1 + 1, ',', len - (size_t)(c1 + 1 - line)) : NULL;
	const char *c3 = c2 ? memchr(c2 + 1, ',', len - (size_t)(c2 + 1 - line)) : NULL;
	if (!c2 || c3) {
		size_t nf = 1;
		for (size_t i = 0; i < len; i++)
			nf += line[i] == ',';
		return row_error(rd, lineno,
				 "expected 3 fields TIMESTAMP,ContextTokens,GeneratedTokens, got %zu", nf)
			       ? 0
			       : -1;
	}
	size_t l1 = (size_t)(c1 - line), l2 = (size_t)(c2 - c1 - 1),
	       l3 = len - (size_t)(c2 + 1 - line);
	*l1_out = l1;
	if (!parse_timestamp(line, l1, ns))
		return row_error(rd, lineno,
				 "expected TIMESTAMP like 2023-11-16 18:17:03.9799600, got '%s'",
				 shown(line, l1, fbuf, sizeof(fbuf)))
			       ? 0
			       : -1;
	if (!parse_u32(c1 + 1, l2, ctx))
		return row_error(rd, lineno,
				 "expected ContextTokens as a whole number 0..4294967295, got '%s'",
				 shown(c1 + 1, l2, fbuf, sizeof(fbuf)))
			       ? 0
			       : -1;
	if (!parse_u32(c2 + 1, l3, gen))
		return row_error(rd, lineno,
				 "expected GeneratedTokens as a whole number 0..4294967295, got '%s'",
				 shown(c2 + 1, l3, fbuf, sizeof(fbuf)))
			       ? 0
			       : -1;
	return 1;
}

static int push_row(struct trace *t, size_t *cap, struct trace_row row)
{
	if (t->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;
		struct trace_row *nr = realloc(t->rows, ncap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		t->rows = nr;
		*cap = ncap;
	}
	t->rows[t->n++] = row;
	return 0;
}

/* The file as a whole: a header, no refused row, at least one row. */
static int whole_file_ok(const struct trace_reader *rd, bool header_seen, size_t n, long lineno)
{
	if (!header_seen) {
		diag_add(rd->diags, DIAG_ERROR, rd->path, 0, 0, "", "trace-row",
			 "empty file; expected the header '" TRACE_HEADER "' and at least one row");
		return -EINVAL;
	}
	if (rd->errors)
		return -EINVAL;
	if (n == 0) {
		diag_add(rd->diags, DIAG_ERROR, rd->path, (int)lineno, 0, "", "trace-row",
			 "expected at least one row after the header");
		return -EINVAL;
	}
	return 0;
}

/* Zeros are served as 1 token, said in one warning per column. */
static void warn_zeros(struct diag_list *diags, const char *path, const char *column, size_t n,
		       long first)
{
	if (n)
		diag_add(diags, DIAG_WARNING, path, (int)first, 0, "", "trace-zero",
			 "%zu row(s) with %s 0 (first here); replayed as 1 token", n, column);
}

int trace_load(const char *path, struct trace **out, struct diag_list *diags)
{
	*out = NULL;
	struct fsafe_err fe;
	FILE *f = fsafe_fopen_read(path, TRACE_MAX_BYTES, &fe);
	if (!f) {
		int err = errno;
		diag_add(diags, DIAG_ERROR, path, 0, 0, "", "file", "%s", fe.msg);
		return -err;
	}
	int rc = 0;
	struct trace *t = calloc(1, sizeof(*t));
	if (!t) {
		rc = -ENOMEM;
		goto close_file;
	}
	t->path = strdup(path);
	if (!t->path) {
		rc = -ENOMEM;
		goto free_trace;
	}
	struct trace_reader rd = {.path = path, .diags = diags};
	char *line = NULL, fbuf[48];
	size_t lcap = 0, cap = 0;
	long lineno = 0, blank_line = 0, zero_gen_first = 0, zero_ctx_first = 0;
	size_t zero_gen = 0, zero_ctx = 0;
	int64_t first_ns = 0, prev_ns = 0;
	long prev_line = 0;
	bool header_seen = false;
	long got;
	while ((got = fsafe_getline(f, &line, &lcap, TRACE_MAX_LINE)) >= 0 || got == -E2BIG) {
		lineno++;
		if (got == -E2BIG) {
			diag_add(diags, DIAG_ERROR, path, (int)lineno, 0, "", "line-length",
				 "line longer than %u bytes", TRACE_MAX_LINE);
			rc = -EFBIG;
			goto free_line;
		}
		size_t len = (size_t)got;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		line[len] = '\0';
		if (!header_seen) {
			header_seen = true;
			const char *h = line;
			if (len >= 3 && memcmp(h, "\xEF\xBB\xBF", 3) == 0)
				h += 3; /* UTF-8 byte-order mark from spreadsheet exports */
			if (strcmp(h, TRACE_HEADER) != 0 &&
			    !row_error(&rd, lineno, "expected the header '" TRACE_HEADER "', got '%s'",
				       shown(h, strlen(h), fbuf, sizeof(fbuf))))
				break;
			continue;
		}
		if (len == 0) {
			/* Blank lines are fine at the end of the file only. */
			if (!blank_line)
				blank_line = lineno;
			continue;
		}
		if (blank_line) {
			if (!row_error(&rd, blank_line,
				       "expected TIMESTAMP,ContextTokens,GeneratedTokens, got an empty line"))
				break;
			blank_line = 0;
		}
		if (strlen(line) != len) {
			if (!row_error(&rd, lineno, "expected text, got a NUL byte"))
				break;
			continue;
		}
		int64_t ns;
		uint32_t ctx, gen;
		size_t l1;
		int pr = parse_fields(&rd, lineno, line, len, &ns, &ctx, &gen, &l1);
		if (pr < 0)
			break;
		if (pr == 0)
			continue;
		if (prev_line && ns < prev_ns) {
			if (!row_error(&rd, lineno,
				       "expected a timestamp not before the previous row's (line %ld); "
				       "got %s, %.7f s earlier",
				       prev_line, shown(line, l1, fbuf, sizeof(fbuf)),
				       ((double)prev_ns - (double)ns) * 1e-9)) /* 1900..2200 spans more than int64 ns */
				break;
			continue;
		}
		if (t->n == 0)
			first_ns = ns;
		int64_t since_ns;
		if (__builtin_sub_overflow(ns, first_ns, &since_ns)) {
			if (!row_error(&rd, lineno,
				       "expected a timestamp within 292 years of the first row's; got %s",
				       shown(line, l1, fbuf, sizeof(fbuf))))
				break;
			continue;
		}
		prev_ns = ns;
		prev_line = lineno;
		/* A request always produces at least one token, and a prompt has at
		 * least one; zeros are served as 1 (counted in one warning). */
		if (gen == 0) {
			gen = 1;
			if (!zero_gen++)
				zero_gen_first = lineno;
		}
		if (ctx == 0) {
			ctx = 1;
			if (!zero_ctx++)
				zero_ctx_first = lineno;
		}
		if ((rc = push_row(t, &cap, (struct trace_row){ .t_s = (double)since_ns * 1e-9,
								  .ctx_tokens = ctx,
								  .gen_tokens = gen })))
			goto free_line;
	}
	if (got == -ENOMEM || ferror(f)) {
		int err = got == -ENOMEM ? ENOMEM : errno ? errno : EIO;
		diag_add(diags, DIAG_ERROR, path, (int)lineno, 0, "", "file", "cannot read: %s",
			 strerror(err));
		rc = -err;
		goto free_line;
	}
	if ((rc = whole_file_ok(&rd, header_seen, t->n, lineno)))
		goto free_line;
	warn_zeros(diags, path, "GeneratedTokens", zero_gen, zero_gen_first);
	warn_zeros(diags, path, "ContextTokens", zero_ctx, zero_ctx_first);
	t->span_s = t->rows[t->n - 1].t_s;
	free(line);
	fclose(f);
	*out = t;
	return 0;

free_line:
	free(line);
	free(t->rows);
	free(t->path);
free_trace:
	free(t);
close_file:
	fclose(f);
	return rc;
}

void trace_free(struct trace *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->path);
	free(t);
}

/* ---------------------------------------------------------------- workload */

/* rng_fork stream ids: one stream per random quantity, so e.g. changing the
 * slice fractions never shifts arrival times. */
enum { STREAM_ARRIVAL = 0x61727276, STREAM_TOKENS = 0x746f6b6e, STREAM_SLICE = 0x736c6963 };

struct workload {
	struct workload_cfg cfg;
	const struct trace *tr;
	struct rng rng_arr, rng_tok, rng_slice;
	/* time change: current piece starts at (t0_s, op0), op speed factor */
	double t0_s, op0, factor;
	double last_t_s, last_op; /* last arrival handed out */
	/* trace */
	size_t idx;
	double loop_base_op; /* op of trace time 0 of the current loop */
	double loop_period_s;
	bool done;
	/* generator: op time of the last arrival, on/off state (cv > 1) */
	double op_now;
	bool on;
	double state_left_s; /* op seconds left in the current on/off state */
	double lam_on, mean_on_s, mean_off_s;
};

static double diurnal_integral(const struct generator_params *g, double t)
{
	double a = g->diurnal_amplitude;
	if (a == 0)
		return t;
	double w = 2 * M_PI / g->diurnal_period_s;
	return t + a / w * (cos(w * g->diurnal_phase_s) - cos(w * (t + g->diurnal_phase_s)));
}

static double g_of_t(const struct workload *w, double t)
{
	if (w->cfg.kind == WORKLOAD_TRACE)
		return w->cfg.time_scale * t;
	return w->cfg.time_scale * diurnal_integral(&w->cfg.gen, t);
}

/* Inverse of G: monotone (diurnal amplitude <= 1), so a safeguarded Newton
 * search on the bracket |M(t) - t| <= a P / pi always converges. */
static double g_inverse(const struct workload *w, double gv, double t_lo)
{
	double x = gv / w->cfg.time_scale;
	if (w->cfg.kind == WORKLOAD_TRACE || w->cfg.gen.diurnal_amplitude == 0)
		return x;
	const struct generator_params *g = &w->cfg.gen;
	double spread = g->diurnal_amplitude * g->diurnal_period_s / M_PI;
	double lo = fmax(x - spread, t_lo), hi = x + spread;
	if (diurnal_integral(g, lo) >= x)
		return lo;
	double t = fmin(fmax(x, lo), hi), wv = 2 * M_PI / g->diurnal_period_s;
	for (int i = 0; i < 200; i++) {
		double f = diurnal_integral(g, t) - x;
		if (fabs(f) <= 1e-12 * fmax(1.0, fabs(x)))
			break;
		if (f > 0)
			hi = t;
		else
			lo = t;
		double d = 1 + g->diurnal_amplitude * sin(wv * (t + g->diurnal_phase_s));
		double nt = d > 1e-12 ? t - f / d : 0.5 * (lo + hi);
		if (fabs(nt - t) <= 1e-12 * fmax(1.0, fabs(t)))
			return nt; /* Newton converged */
		t = (nt > lo && nt < hi) ? nt : 0.5 * (lo + hi);
		if (hi - lo <= 1e-12 * fmax(1.0, fabs(hi)))
			break;
	}
	return t;
}

static double op_to_t(const struct workload *w, double op)
{
	double d = op - w->op0;
	if (d <= 0)
		return w->t0_s;
	return g_inverse(w, g_of_t(w, w->t0_s) + d / w->factor, w->t0_s);
}

static uint32_t draw_tokens(struct rng *r, double mu, double sigma, uint32_t max)
{
	/* Clamped, not resampled: the code trace itself is cut at its max (7437). */
	double v = rint(rng_lognormal(r, mu, sigma));
	if (!(v >= 1))
		return 1;
	if (v > (double)max)
		return max;
	return (uint32_t)v;
}

static uint8_t draw_slice(struct workload *w)
{
	if (w->cfg.n_slices <= 1)
		return 0;
	double u = rng_uniform(&w->rng_slice), acc = 0;
	for (uint32_t i = 0; i + 1 < w->cfg.n_slices; i++) {
		acc += w->cfg.slice_fraction[i];
		if (u < acc)
			return (uint8_t)i;
	}
	return (uint8_t)(w->cfg.n_slices - 1);
}

static bool gen_params_ok(const struct generator_params *g)
{
	return g->rate_rps > 0 && isfinite(g->rate_rps) && g->burst_cv > 0 &&
	       isfinite(g->burst_cv) && (g->burst_cv <= 1 ||
	       (g->burst_on_fraction > 0 && g->burst_on_fraction < 1)) &&
	       g->diurnal_amplitude >= 0 && g->diurnal_amplitude <= 1 &&
	       (g->diurnal_amplitude == 0 || g->diurnal_period_s > 0) && isfinite(g->ctx_mu) &&
	       isfinite(g->gen_mu) && g->ctx_sigma >= 0 && g->gen_sigma >= 0 && g->ctx_max >= 1 &&
	       g->gen_max >= 1;
}

int workload_open(const struct workload_cfg *cfg, const struct trace *trace,
		  const struct rng *parent, struct workload **out)
{
	*out = NULL;
	if (!(cfg->time_scale > 0) || !isfinite(cfg->time_scale) || !(cfg->start_offset_s >= 0) ||
	    cfg->n_slices > PLANT_MAX_SLICES)
		return -EINVAL;
	if (cfg->kind == WORKLOAD_TRACE && (!trace || trace->n == 0))
		return -EINVAL;
	if (cfg->kind == WORKLOAD_GENERATOR && !gen_params_ok(&cfg->gen))
		return -EINVAL;
	if (cfg->kind == WORKLOAD_GENERATOR && cfg->lengths_path[0] && (!trace || trace->n == 0))
		return -EINVAL;
	struct workload *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->cfg = *cfg;
	w->tr = trace;
	w->rng_arr = rng_fork(parent, STREAM_ARRIVAL);
	w->rng_tok = rng_fork(parent, STREAM_TOKENS);
	w->rng_slice = rng_fork(parent, STREAM_SLICE);
	w->factor = 1;

	if (cfg->kind == WORKLOAD_TRACE) {
		/* The next loop starts one mean gap after the last row, so a looped
		 * trace keeps its mean rate; a zero-span trace repeats every second. */
		w->loop_period_s = trace->span_s > 0 && trace->n > 1
					   ? trace->span_s * (double)trace->n / (double)(trace->n - 1)
					   : 1.0;
		double off = cfg->start_offset_s;
		if (cfg->loop)
			off = fmod(off, w->loop_period_s);
		w->loop_base_op = -off;
		while (w->idx < trace->n && trace->rows[w->idx].t_s < off)
			w->idx++;
		if (w->idx == trace->n) {
			if (cfg->loop) {
				w->idx = 0;
				w->loop_base_op += w->loop_period_s;
			} else {
				w->done = true;
			}
		}
	} else {
		const struct generator_params *g = &cfg->gen;
		if (g->burst_cv > 1) {
			/* Interrupted Poisson process matched to rate, CV and on-fraction. */
			double rho = g->burst_on_fraction, c2 = g->burst_cv * g->burst_cv;
			double s = 2 * g->rate_rps * (1 - rho) / (rho * (c2 - 1));
			w->lam_on = g->rate_rps / rho;
			w->mean_on_s = 1 / ((1 - rho) * s);
			w->mean_off_s = 1 / (rho * s);
			w->on = rng_uniform(&w->rng_arr) < rho; /* stationary start */
			w->state_left_s = rng_exp(&w->rng_arr, w->on ? w->mean_on_s : w->mean_off_s);
		}
	}
	*out = w;
	return 0;
}

void workload_close(struct workload *w)
{
	free(w);
}

static double next_generator_op(struct workload *w)
{
	const struct generator_params *g = &w->cfg.gen;
	if (g->burst_cv > 1) {
		for (;;) {
			if (w->on) {
				double e = rng_exp(&w->rng_arr, 1 / w->lam_on);
				if (e < w->state_left_s) {
					w->state_left_s -= e;
					w->op_now += e;
					return w->op_now;
				}
				w->op_now += w->state_left_s;
				w->on = false;
				w->state_left_s = rng_exp(&w->rng_arr, w->mean_off_s);
			} else {
				w->op_now += w->state_left_s;
				w->on = true;
				w->state_left_s = rng_exp(&w->rng_arr, w->mean_on_s);
			}
		}
	}
	/* cv <= 1: gamma renewal (shape 1/cv^2; cv = 1 is Poisson). */
	double shape = 1 / (g->burst_cv * g->burst_cv);
	w->op_now += rng_gamma(&w->rng_arr, shape, 1 / (g->rate_rps * shape));
	return w->op_now;
}

int workload_next(struct workload *w, struct request *r)
{
	double op;
	memset(r, 0, sizeof(*r));
	if (w->cfg.kind == WORKLOAD_TRACE) {
		if (w->done)
			return 1;
		const struct trace_row *row = &w->tr->rows[w->idx];
		op = w->loop_base_op + row->t_s;
		r->ctx_tokens = row->ctx_tokens;
		r->gen_tokens = row->gen_tokens;
		if (++w->idx == w->tr->n) {
			if (w->cfg.loop) {
				w->idx = 0;
				w->loop_base_op += w->loop_period_s;
			} else {
				w->done = true;
			}
		}
	} else {
		const struct generator_params *g = &w->cfg.gen;
		op = next_generator_op(w);
		if (w->tr) {
			/* Lengths from the trace: one row, so context and output
			 * keep their joint distribution. */
			size_t i = (size_t)(rng_uniform(&w->rng_tok) * (double)w->tr->n);
			if (i >= w->tr->n)
				i = w->tr->n - 1;
			r->ctx_tokens = w->tr->rows[i].ctx_tokens;
			r->gen_tokens = w->tr->rows[i].gen_tokens;
		} else {
			r->ctx_tokens = draw_tokens(&w->rng_tok, g->ctx_mu, g->ctx_sigma, g->ctx_max);
			r->gen_tokens = draw_tokens(&w->rng_tok, g->gen_mu, g->gen_sigma, g->gen_max);
		}
	}
	double t = op_to_t(w, op);
	assert(t >= w->last_t_s - 1e-9 * fmax(1.0, t));
	if (t < w->last_t_s) /* rounding in g_inverse only */
		t = w->last_t_s;
	w->last_t_s = t;
	w->last_op = op;
	r->arrival_s = t;
	r->slice = draw_slice(w);
	r->int8 = false;
	return 0;
}

void workload_set_rate_scale(struct workload *w, double now_s, double factor)
{
	assert(factor > 0 && isfinite(factor));
	if (now_s >= w->last_t_s && now_s >= w->t0_s) {
		w->op0 += w->factor * (g_of_t(w, now_s) - g_of_t(w, w->t0_s));
		w->t0_s = now_s;
	} else {
		/* The caller already holds an arrival after now_s (the plant keeps one
		 * pending): the new rate applies from that arrival on, so the map stays
		 * continuous and no arrivals pile up at its time. */
		w->t0_s = w->last_t_s;
		w->op0 = w->last_op;
	}
	w->factor = factor;
}
