/* govctl report: the plots, drawn by gnuplot (Debian's gnuplot-nox, svg
 * terminal) from data files in a temporary directory; the SVGs are read back
 * to be inlined. gnuplot's SVG output has no timestamps, so the same runs give
 * the same bytes. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsafe.h"
#include "hal/hal.h"
#include "tools/govctl_report.h"

#define MAX_POINTS 1500

static char *slurp(const char *path)
{
	struct fsafe_err e;
	char *buf;
	size_t len;
	return fsafe_read_all(path, FSAFE_MAX_BYTES, 0, &buf, &len, &e) ? NULL : buf;
}

/* Count occurrences of pat in s. */
static size_t count(const char *s, const char *pat)
{
	size_t n = 0, l = strlen(pat);
	for (const char *p = strstr(s, pat); p; p = strstr(p + l, pat))
		n++;
	return n;
}

/* The SVG element of gnuplot's file, with every id and #reference prefixed
 * so several plots can live in one HTML document. */
static char *inline_svg(const char *svg, int idx)
{
	const char *start = strstr(svg, "<svg");
	if (!start)
		return NULL;
	static const char *const pats[] = { "id='", "id=\"", "href='#", "href=\"#", "url(#" };
	char pre[16];
	snprintf(pre, sizeof(pre), "p%d_", idx);
	size_t extra = 0;
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
		extra += count(start, pats[i]) * strlen(pre);
	char *out = malloc(strlen(start) + extra + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *s = start; *s;) {
		size_t hit = 0;
		for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
			if (!strncmp(s, pats[i], strlen(pats[i]))) {
				hit = strlen(pats[i]);
				break;
			}
		if (hit) {
			memcpy(o, s, hit);
			o += hit;
			s += hit;
			memcpy(o, pre, strlen(pre));
			o += strlen(pre);
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

/* A string in the gnuplot script: single quotes, where gnuplot expands
 * neither backslash escapes nor `command` substitution (it does both inside
 * double quotes, so a run label could run a shell command); a quote is
 * doubled. A control character would end the command line: a space. */
static void gp_str(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s, f);
	}
	fputc('\'', f);
}

/* A string field in a data file: double quotes, which a data file cannot
 * escape (nor does it run anything): quotes and control characters become
 * spaces so the row keeps its columns. */
static void dat_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f || *s == '"' ? ' ' : *s, f);
	fputc('"', f);
}

static const char *const colors[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
				      "#9467bd", "#8c564b", "#e377c2", "#17becf" };
#define N_COLORS (sizeof(colors) / sizeof(colors[0]))

static int run_gnuplot(const char *dir, const char *script, char *why, size_t len)
{
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		if (chdir(dir))
			_exit(126);
		int fd = open("gnuplot.err", O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		/* Number formatting must not follow the caller's locale. */
		setenv("LC_ALL", "C", 1);
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
		snprintf(why, len, "gnuplot not found (apt-get install gnuplot-nox)");
		return -ENOENT;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		char p[600];
		snprintf(p, sizeof(p), "%s/gnuplot.err", dir);
		char *e = slurp(p);
		snprintf(why, len, "gnuplot failed: %.300s", e ? e : "?");
		free(e);
		return -EIO;
	}
	return 0;
}

static void common_head(FILE *gp, const char *out, int w, int h)
{
	fprintf(gp, "reset\nset terminal svg size %d,%d font \"sans,11\" background rgb \"white\"\n", w,
		h);
	fprintf(gp, "set output \"%s\"\nset encoding utf8\nset datafile missing \"NaN\"\n"
		    "set grid lc rgb \"#dddddd\"\nset key noenhanced\n",
		out);
}

static void w_power(FILE *gp, const char *dir, const struct rp_run *r, int idx)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/pw%d.dat", dir, idx);
	FILE *d = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/cl%d.dat", dir, idx);
	FILE *c = fopen(path, "w");
	if (!d || !c) {
		if (d)
			fclose(d);
		if (c)
			fclose(c);
		return;
	}
	size_t k = (r->np + MAX_POINTS - 1) / MAX_POINTS;
	if (k < 1)
		k = 1;
	/* Buckets keep the mean power and the peak junction, so a short peak
	 * survives the thinning. */
	for (size_t i = 0; i < r->np; i += k) {
		double a = 0, m = 0, h = 0, tj = -INFINITY;
		size_t n = 0;
		for (size_t j = i; j < i + k && j < r->np; j++, n++) {
			a += r->p[j].p_accel_w;
			m += r->p[j].p_mem_w;
			h += r->p[j].p_host_w;
			tj = fmax(tj, r->p[j].tj_c);
		}
		fprintf(d, "%.3f %.2f %.2f %.2f %.2f\n", r->p[i].t_s / 60.0, a / (double)n, m / (double)n,
			h / (double)n, tj);
	}
	size_t clamps = 0;
	for (size_t i = 0; i < r->np; i++)
		if ((r->p[i].throttle & HAL_THR_HW_SLOWDOWN) &&
		    !(i && (r->p[i - 1].throttle & HAL_THR_HW_SLOWDOWN))) {
			fprintf(c, "%.3f %.2f\n", r->p[i].t_s / 60.0, r->p[i].tj_c);
			clamps++;
		}
	fclose(d);
	fclose(c);
	char out[64];
	snprintf(out, sizeof(out), "plot%d.svg", idx);
	common_head(gp, out, 900, 340);
	fprintf(gp, "set title ");
	char t[300];
	snprintf(t, sizeof(t), "Power and junction: %s", r->label);
	gp_str(gp, t);
	fprintf(gp, " noenhanced\nset xlabel \"time (min)\"\nset ylabel \"rail power (W)\"\n"
		    "set y2label \"junction (C)\"\nset ytics nomirror\nset y2tics\n"
		    "set key outside bottom center horizontal\n");
	double top = isfinite(r->slowdown_c) ? r->slowdown_c + 3 : r->ceiling_c + 10;
	fprintf(gp, "set y2range [*:%.1f]\nset yrange [0:*]\n", top);
	fprintf(gp,
		"plot \"pw%d.dat\" u 1:2 w l lc rgb \"%s\" t \"accel\", \"\" u 1:3 w l lc rgb \"%s\" t "
		"\"memory\", \"\" u 1:4 w l lc rgb \"%s\" t \"host\", \"\" u 1:5 axes x1y2 w l lw 1.5 lc "
		"rgb \"%s\" t \"junction\", %.2f axes x1y2 w l dt 2 lc rgb \"#444444\" t \"ceiling "
		"%.1f C\"",
		idx, colors[0], colors[2], colors[5], colors[1], r->ceiling_c, r->ceiling_c);
	if (isfinite(r->slowdown_c))
		fprintf(gp, ", %.2f axes x1y2 w l dt 3 lc rgb \"#000000\" t \"slowdown %.1f C\"",
			r->slowdown_c, r->slowdown_c);
	if (clamps)
		fprintf(gp, ", \"cl%d.dat\" u 1:2 axes x1y2 w p pt 9 ps 1.2 lc rgb \"#000000\" t "
			    "\"hardware clamp (%zu)\"",
			idx, clamps);
	fprintf(gp, "\n");
}

static void w_p99(FILE *gp, const char *dir, struct rp_run *const *runs, size_t n, int idx)
{
	for (size_t i = 0; i < n; i++) {
		char path[600];
		snprintf(path, sizeof(path), "%s/w%zu.dat", dir, i);
		FILE *d = fopen(path, "w");
		if (!d)
			return;
		const struct rp_run *r = runs[i];
		for (size_t k = 0; k < r->nw; k++) {
			const struct rp_wstats *w = &r->w[k];
			if (w->judged && w->requests > 0)
				fprintf(d, "%.3f %.2f %.3f\n", w->t1_s / 60.0, w->ttft_p99, w->tbt_p99);
			else
				fprintf(d, "%.3f NaN NaN\n", w->t1_s / 60.0);
		}
		fclose(d);
	}
	char out[64];
	snprintf(out, sizeof(out), "plot%d.svg", idx);
	common_head(gp, out, 900, 560);
	fprintf(gp, "set multiplot layout 2,1 title \"Window p99 against the SLA\"\n"
		    "set key outside right top vertical\nset xlabel \"time (min)\"\n");
	const char *col[2] = { "2", "3" };
	const char *lab[2] = { "TTFT p99 (ms)", "TBT p99 (ms)" };
	const int ti[2] = { 1, 3 };
	/* A panel without one drawable point (no window served a request; log
	 * scale needs > 0) is an error to gnuplot: fixed range and a note. */
	bool have[2] = { false, false };
	double xmax = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < runs[i]->nw; k++) {
			const struct rp_wstats *w = &runs[i]->w[k];
			if (isfinite(w->t1_s))
				xmax = fmax(xmax, w->t1_s / 60.0);
			if (!w->judged || !(w->requests > 0))
				continue;
			have[0] |= isfinite(w->ttft_p99) && w->ttft_p99 > 0;
			have[1] |= isfinite(w->tbt_p99);
		}
	for (int pnl = 0; pnl < 2; pnl++) {
		fprintf(gp, "set ylabel \"%s\"\n%s", lab[pnl], pnl == 0 ? "set logscale y\n" : "unset logscale y\n");
		if (have[pnl])
			fprintf(gp, "set autoscale xy\nunset label 1\n");
		else
			fprintf(gp, "set xrange [0:%.3f]\nset yrange [1:10]\nset label 1 \"no window "
				    "served a request\" at graph 0.5,0.5 center\n",
				xmax > 0 ? xmax : 1.0);
		fprintf(gp, "plot ");
		for (size_t i = 0; i < n; i++) {
			fprintf(gp, "%s\"w%zu.dat\" u 1:%s w lp pt 7 ps 0.4 lc rgb \"%s\" t ", i ? ", " : "", i,
				col[pnl], colors[i % N_COLORS]);
			gp_str(gp, runs[i]->label);
		}
		double tgt = runs[0]->targets[ti[pnl]];
		if (tgt > 0)
			fprintf(gp, ", %.2f w l dt 2 lw 1.5 lc rgb \"#000000\" t \"target %.0f ms\"", tgt, tgt);
		fprintf(gp, "\n");
	}
	fprintf(gp, "unset multiplot\n");
}

static void w_int8(FILE *gp, const char *dir, struct rp_run *const *runs, size_t n, int idx)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/i8.dat", dir);
	FILE *d = fopen(path, "w");
	if (!d)
		return;
	fprintf(d, "slice");
	for (size_t i = 0; i < n; i++) {
		fprintf(d, " ");
		dat_str(d, runs[i]->label);
	}
	fprintf(d, "\n");
	/* Slices of the first run; runs of other scenarios may name others. */
	const struct rp_run *r0 = runs[0];
	for (size_t s = 0; s < r0->n_slices; s++) {
		dat_str(d, r0->slices[s].name);
		for (size_t i = 0; i < n; i++) {
			double v = NAN;
			for (size_t t = 0; t < runs[i]->n_slices; t++)
				if (!strcmp(runs[i]->slices[t].name, r0->slices[s].name))
					v = runs[i]->slices[t].int8_req_frac;
			fprintf(d, isfinite(v) ? " %.4f" : " 0", v);
		}
		fprintf(d, "\n");
	}
	fclose(d);
	char out[64];
	snprintf(out, sizeof(out), "plot%d.svg", idx);
	common_head(gp, out, 900, 340);
	fprintf(gp, "set title \"INT8 share of requests by slice\"\nset ylabel \"INT8 share\"\n"
		    "set yrange [0:1.05]\nset style data histograms\n"
		    "set style histogram clustered gap 1\nset style fill solid 0.85 border -1\n"
		    "set key outside right top vertical noenhanced\n");
	fprintf(gp, "plot for [i=2:%zu] \"i8.dat\" u i:xtic(1) t columnheader(i)\n", n + 1);
	fprintf(gp, "# colours cycle per run\n");
}

static void w_scatter(FILE *gp, const char *dir, struct rp_run *const *runs, size_t n, int idx)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/sc.dat", dir);
	FILE *d = fopen(path, "w");
	if (!d)
		return;
	for (size_t i = 0; i < n; i++) {
		dat_str(d, runs[i]->policy);
		fprintf(d, " %.3f %.3f %.6f %zu\n", runs[i]->ttft_p99, runs[i]->tbt_p99, runs[i]->tpj, i);
	}
	fclose(d);
	char out[64];
	snprintf(out, sizeof(out), "plot%d.svg", idx);
	common_head(gp, out, 900, 360);
	fprintf(gp, "set multiplot layout 1,2 title \"Tokens per joule against p99, per policy\"\n"
		    "set ylabel \"tokens/J (all rails)\"\nunset key\nset offsets graph 0.1, graph 0.1, "
		    "graph 0.1, graph 0.1\n");
	const char *lab[2] = { "TTFT p99 (ms)", "TBT p99 (ms)" };
	const int ti[2] = { 1, 3 };
	/* Target lines as data (arrows are not clipped to their panel), so the
	 * x range also stretches to show where the target lies. */
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < n; i++)
		if (isfinite(runs[i]->tpj)) {
			lo = fmin(lo, runs[i]->tpj);
			hi = fmax(hi, runs[i]->tpj);
		}
	for (int pnl = 0; pnl < 2; pnl++) {
		fprintf(gp, "set xlabel \"%s\"\n", lab[pnl]);
		double tgt = runs[0]->targets[ti[pnl]];
		fprintf(gp, "plot \"sc.dat\" u %d:4:5 w p pt 7 ps 1.5 lc variable, \"\" u %d:4:1 w labels "
			    "offset 0,1 noenhanced",
			pnl + 2, pnl + 2);
		if (tgt > 0 && isfinite(lo)) {
			snprintf(path, sizeof(path), "%s/tg%d.dat", dir, pnl);
			FILE *t = fopen(path, "w");
			if (t) {
				fprintf(t, "%.3f %.6f\n%.3f %.6f\n", tgt, lo, tgt, hi);
				fclose(t);
				fprintf(gp, ", \"tg%d.dat\" u 1:2 w l dt 2 lc rgb \"#000000\"", pnl);
			}
		}
		fprintf(gp, "\n");
	}
	fprintf(gp, "unset multiplot\n");
}

void rp_make_plots(struct rp_run *const *runs, size_t nruns, struct rp_plots *out)
{
	memset(out, 0, sizeof(*out));
	char dir[] = "/tmp/govctl-report-XXXXXX";
	static const char *const titles[] = { "Power and junction", "p99 against the SLA",
					      "INT8 share by slice", "Tokens per joule against p99" };
	size_t np = nruns + 3;
	if (np > sizeof(out->svg) / sizeof(out->svg[0]))
		np = sizeof(out->svg) / sizeof(out->svg[0]);
	out->n = np;
	for (size_t i = 0; i < np; i++)
		out->title[i] = i < np - 3 ? titles[0] : titles[i - (np - 3) + 1];
	char why[400] = "";
	if (!mkdtemp(dir)) {
		snprintf(why, sizeof(why), "mkdtemp: %s", strerror(errno));
		goto set_why;
	}
	/* One gnuplot run per plot: a plot gnuplot refuses (no valid points,
	 * say) costs that plot, not the others. */
	char path[600];
	for (size_t i = 0; i < np; i++) {
		char script[32], pwhy[400] = "";
		snprintf(script, sizeof(script), "plot%zu.gp", i);
		snprintf(path, sizeof(path), "%s/%s", dir, script);
		FILE *gp = fopen(path, "w");
		if (!gp) {
			snprintf(why, sizeof(why), "%.200s: %s", path, strerror(errno));
			goto remove_dir;
		}
		if (i + 3 < np)
			w_power(gp, dir, runs[i], (int)i);
		else if (i + 3 == np)
			w_p99(gp, dir, runs, nruns, (int)i);
		else if (i + 2 == np)
			w_int8(gp, dir, runs, nruns, (int)i);
		else
			w_scatter(gp, dir, runs, nruns, (int)i);
		if (fclose(gp)) {
			snprintf(why, sizeof(why), "%.200s: %s", path, strerror(errno));
			goto remove_dir;
		}
		int rc = run_gnuplot(dir, script, pwhy, sizeof(pwhy));
		if (rc == -ENOENT) { /* no gnuplot: the same for every plot */
			snprintf(why, sizeof(why), "%s", pwhy);
			goto remove_dir;
		}
		snprintf(path, sizeof(path), "%s/plot%zu.svg", dir, i);
		char *svg = rc ? NULL : slurp(path);
		if (svg)
			out->svg[i] = inline_svg(svg, (int)i);
		free(svg);
		if (!out->svg[i])
			out->why[i] = strdup(pwhy[0] ? pwhy : "plot not produced");
	}
remove_dir:
	/* Remove what we wrote (plain files only, one level). */
	{
		static const char *const pre[] = { "pw", "cl", "w", "plot", "plot" };
		static const char *const ext[] = { "dat", "dat", "dat", "svg", "gp" };
		for (size_t i = 0; i < np + 2 * nruns; i++)
			for (size_t k = 0; k < 5; k++) {
				snprintf(path, sizeof(path), "%s/%s%zu.%s", dir, pre[k], i, ext[k]);
				unlink(path);
			}
		static const char *const fixed[] = { "gnuplot.err", "i8.dat", "sc.dat", "tg0.dat",
						     "tg1.dat" };
		for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++) {
			snprintf(path, sizeof(path), "%s/%s", dir, fixed[k]);
			unlink(path);
		}
		rmdir(dir);
	}
set_why:
	for (size_t i = 0; i < np; i++)
		if (!out->svg[i] && !out->why[i])
			out->why[i] = strdup(why[0] ? why : "plot not produced");
}

void rp_plots_free(struct rp_plots *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->svg[i]);
		free(p->why[i]);
	}
	memset(p, 0, sizeof(*p));
}
