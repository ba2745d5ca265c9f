/* Equal-SLA comparison with the oracle and windows.csv (governor/sim/honest.h). */
#include "governor/sim/honest.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HONEST_HEADER                                                                              \
	"index,tail,idle,sla_met,tokens,energy_j,clamp_events,breach_requests,failed,max_junction_c"
/* Written before max_junction_c: still read, the junction not judged. */
#define HONEST_HEADER_V0 "index,tail,idle,sla_met,tokens,energy_j,clamp_events,breach_requests,failed"
#define HONEST_MAX_WINDOWS 10000000u

void honest_from_sim(const struct sim_window *w, struct honest_window *out)
{
	memset(out, 0, sizeof(*out));
	out->index = w->index;
	out->tail = w->tail;
	out->idle = w->idle;
	out->sla_met = w->sla_met;
	out->tokens = w->tokens;
	for (int r = 0; r < HAL_RAIL_N; r++)
		out->energy_all_j += w->energy_j[r];
	out->clamp_events = w->clamp_events;
	out->breach_requests = w->breach_requests;
	out->failed = w->failed;
	out->max_junction_c = w->max_junction_c;
}

bool honest_window_good(const struct honest_window *w, double ceiling_c)
{
	return w->sla_met && w->clamp_events == 0 && !(w->max_junction_c > ceiling_c) &&
	       w->breach_requests == 0 && !w->failed;
}

int honest_windows_write(FILE *f, const struct honest_window *w, size_t n)
{
	if (fprintf(f, "%s\n", HONEST_HEADER) < 0)
		return -EIO;
	for (size_t i = 0; i < n; i++)
		if (fprintf(f, "%" PRIu32 ",%d,%d,%d,%" PRIu64 ",%.17g,%" PRIu64 ",%" PRIu64 ",%d,%.17g\n",
			    w[i].index, w[i].tail, w[i].idle, w[i].sla_met, w[i].tokens,
			    w[i].energy_all_j, w[i].clamp_events, w[i].breach_requests,
			    w[i].failed, w[i].max_junction_c) < 0)
			return -EIO;
	return fflush(f) ? -errno : 0;
}

static bool parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "0") && strcmp(s, "1"))
		return false;
	*out = s[0] == '1';
	return true;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!*s || *s == '-')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool parse_real(const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return !errno && end != s && !*end;
}

/* One row of nf_want fields (10, or 9 in a file from before
 * max_junction_c) into w; false with a message in why. */
static bool parse_row(char *line, size_t nf_want, struct honest_window *w, const char **why)
{
	char *f[10];
	size_t nf = 1;
	for (const char *c = line; *c; c++)
		nf += *c == ',';
	if (nf != nf_want) {
		*why = nf_want == 10 ? "expected 10 comma-separated fields (" HONEST_HEADER ")"
				     : "expected 9 comma-separated fields (" HONEST_HEADER_V0 ")";
		return false;
	}
	f[0] = line;
	for (size_t i = 1; i < nf; i++) {
		char *c = strchr(f[i - 1], ',');
		*c = '\0';
		f[i] = c + 1;
	}
	uint64_t idx;
	memset(w, 0, sizeof(*w));
	w->max_junction_c = NAN;
	if (!parse_u64(f[0], &idx) || idx > UINT32_MAX) {
		*why = "index: expected a whole number 0..4294967295";
		return false;
	}
	w->index = (uint32_t)idx;
	if (!parse_bool(f[1], &w->tail) || !parse_bool(f[2], &w->idle) ||
	    !parse_bool(f[3], &w->sla_met) || !parse_bool(f[8], &w->failed)) {
		*why = "tail, idle, sla_met, failed: expected 0 or 1";
		return false;
	}
	if (!parse_u64(f[4], &w->tokens) || !parse_u64(f[6], &w->clamp_events) ||
	    !parse_u64(f[7], &w->breach_requests)) {
		*why = "tokens, clamp_events, breach_requests: expected whole numbers >= 0";
		return false;
	}
	if (!parse_real(f[5], &w->energy_all_j) || !isfinite(w->energy_all_j) ||
	    w->energy_all_j < 0) {
		*why = "energy_j: expected a finite number >= 0";
		return false;
	}
	/* nan: a run whose junction was never read (none written today) */
	if (nf == 10 && (!parse_real(f[9], &w->max_junction_c) || isinf(w->max_junction_c) ||
			 w->max_junction_c < -273.15)) {
		*why = "max_junction_c: expected a temperature in C (>= -273.15) or nan";
		return false;
	}
	return true;
}

int honest_windows_load(const char *path, struct honest_window **out, size_t *n,
			struct diag_list *diags)
{
	*out = NULL;
	*n = 0;
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		diag_add(diags, DIAG_ERROR, path, 0, 0, "", "file", "cannot open: %s", strerror(e));
		return -e;
	}
	char *line = NULL;
	size_t cap = 0, len = 0, ncap = 0, nf = 0;
	ssize_t got;
	long lineno = 0;
	int rc = 0;
	struct honest_window *w = NULL;
	while ((got = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (got > 0 && line[got - 1] == '\n')
			line[--got] = '\0';
		if ((size_t)got != strlen(line)) {
			diag_add(diags, DIAG_ERROR, path, (int)lineno, 0, "", "windows-row",
				 "expected text, got a NUL byte");
			rc = -EINVAL;
			goto done;
		}
		if (lineno == 1) {
			if (!strcmp(line, HONEST_HEADER)) {
				nf = 10;
			} else if (!strcmp(line, HONEST_HEADER_V0)) {
				nf = 9;
			} else {
				diag_add(diags, DIAG_ERROR, path, 1, 1, "", "windows-row",
					 "expected the header '" HONEST_HEADER "'");
				rc = -EINVAL;
				goto done;
			}
			continue;
		}
		if (len == HONEST_MAX_WINDOWS) {
			diag_add(diags, DIAG_ERROR, path, (int)lineno, 0, "", "range",
				 "more than %u windows", HONEST_MAX_WINDOWS);
			rc = -EINVAL;
			goto done;
		}
		if (len == ncap) {
			size_t nc = ncap ? ncap * 2 : 256;
			struct honest_window *nw = realloc(w, nc * sizeof(*nw));
			if (!nw) {
				rc = -ENOMEM;
				goto done;
			}
			w = nw;
			ncap = nc;
		}
		const char *why = NULL;
		if (!parse_row(line, nf, &w[len], &why)) {
			diag_add(diags, DIAG_ERROR, path, (int)lineno, 1, "", "windows-row", "%s", why);
			rc = -EINVAL;
			goto done;
		}
		len++;
	}
	if (ferror(f)) {
		rc = -EIO;
		diag_add(diags, DIAG_ERROR, path, (int)lineno, 0, "", "file", "read error");
	} else if (lineno == 0) {
		rc = -EINVAL;
		diag_add(diags, DIAG_ERROR, path, 0, 0, "", "windows-row",
			 "empty file; expected the header '" HONEST_HEADER "'");
	}
done:
	free(line);
	fclose(f);
	if (rc) {
		free(w);
		return rc;
	}
	*out = w;
	*n = len;
	return 0;
}

void honest_add(struct honest_totals *t, const struct oracle_pick *pick, size_t n_pick,
		const struct honest_window *w, size_t n_w, double ceiling_c)
{
	for (size_t i = 0; i < n_pick; i++) {
		const struct oracle_pick *p = &pick[i];
		if (p->tail)
			continue;
		t->windows++;
		if (!p->feasible) {
			t->infeasible++;
			continue;
		}
		t->feasible++;
		t->oracle_tokens += p->tokens;
		t->oracle_energy_j += p->energy_all_j;
		const struct honest_window *x = NULL;
		if (i < n_w && w[i].index == i)
			x = &w[i];
		for (size_t k = 0; !x && k < n_w; k++)
			if (w[k].index == i)
				x = &w[k];
		if (!x || x->tail) {
			t->missed_tokens_windows++;
			t->feasible_busy += !p->idle;
			continue;
		}
		t->policy_energy_j += x->energy_all_j;
		bool busy = !x->idle || !p->idle;
		t->feasible_busy += busy;
		t->feasible_met += busy && x->sla_met;
		if (honest_window_good(x, ceiling_c)) {
			t->policy_tokens += x->tokens;
		} else {
			t->missed_tokens_windows++;
			/* good but for the ceiling */
			t->over_ceiling += honest_window_good(x, INFINITY);
		}
	}
}

double honest_oracle_tpj(const struct honest_totals *t)
{
	return t->oracle_energy_j > 0 ? (double)t->oracle_tokens / t->oracle_energy_j : NAN;
}

double honest_policy_tpj(const struct honest_totals *t)
{
	return t->policy_energy_j > 0 ? (double)t->policy_tokens / t->policy_energy_j : NAN;
}

double honest_pct(const struct honest_totals *t)
{
	double o = honest_oracle_tpj(t), p = honest_policy_tpj(t);
	return isfinite(o) && o > 0 && isfinite(p) ? 100.0 * p / o : NAN;
}

double honest_attainment(const struct honest_totals *t)
{
	return t->feasible_busy ? (double)t->feasible_met / (double)t->feasible_busy : NAN;
}
