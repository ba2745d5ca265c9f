/* govctl report: the plots, drawn by gnuplot (Debian's gnuplot-nox, svg
 * terminal) from the figures of report.json (report_figures.c) through
 * data files in a temporary directory; the SVGs are read back to be inlined.
 * gnuplot's SVG output has no timestamps, so the same runs give the same
 * bytes. */
#include "report/report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fsafe.h"
#include "common/jsonx.h"
#include "hal/hal.h"

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

static const char *js(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "";
}

/* A colour from the figure: "#rrggbb" only, anything else black (it goes
 * into the script). */
static const char *color(json_t *o)
{
	const char *c = js(o, "color");
	if (strlen(c) != 7 || c[0] != '#' || strspn(c + 1, "0123456789abcdefABCDEF") != 6)
		return "#000000";
	return c;
}

/* Data blocks of one figure: each series, then each event row, as a gnuplot
 * index; returns the next index. */
static int write_xy(FILE *d, json_t *xs, json_t *ys, int *idx)
{
	size_t n = json_array_size(xs);
	for (size_t i = 0; i < n; i++) {
		double x = json_number_value(json_array_get(xs, i));
		json_t *yv = ys ? json_array_get(ys, i) : NULL;
		if (!json_is_number(json_array_get(xs, i)))
			continue;
		if (ys && !json_is_number(yv))
			fprintf(d, "%.6g NaN\n", x);
		else
			fprintf(d, "%.6g %.6g\n", x, ys ? json_number_value(yv) : 0.0);
	}
	if (!n)
		fprintf(d, "NaN NaN\n");
	fprintf(d, "\n\n");
	return (*idx)++;
}

/* A block of one row, for lines drawn from using-expressions alone. */
static int one_row(FILE *d, int *idx)
{
	fprintf(d, "0 0\n\n\n");
	return (*idx)++;
}

static bool has_point(json_t *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(s, "y"), i, v)
	{
		if (json_is_number(v) && json_is_number(json_array_get(json_object_get(s, "x"), i)))
			return true;
	}
	return false;
}

/* At most about six x tics on a half-width scatter panel (gnuplot's own
 * choice crowded a 200..2400 ms axis into overlapping labels): a step of
 * 1, 2, 2.5 or 5 times a power of ten over the data's x range. */
static void x_tics(FILE *gp, json_t *panel)
{
	double lo = INFINITY, hi = -INFINITY;
	size_t si, i;
	json_t *s, *x;
	json_array_foreach(json_object_get(panel, "series"), si, s)
		json_array_foreach(json_object_get(s, "x"), i, x)
			if (json_is_number(x)) {
				lo = fmin(lo, json_number_value(x));
				hi = fmax(hi, json_number_value(x));
			}
	json_array_foreach(json_object_get(panel, "vlines"), si, s)
	{
		double v = jsonx_num(s, "x");
		if (isfinite(v)) {
			lo = fmin(lo, v);
			hi = fmax(hi, v);
		}
	}
	/* the offsets widen the range by 15 % a side */
	double span = (hi - lo) * 1.3;
	if (!isfinite(span) || span <= 0) {
		fprintf(gp, "set xtics autofreq\n");
		return;
	}
	double raw = span / 5, mag = pow(10, floor(log10(raw))), step = 10 * mag;
	static const double m[] = { 1, 2, 2.5, 5 };
	for (size_t k = 0; k < 4; k++)
		if (m[k] * mag >= raw) {
			step = m[k] * mag;
			break;
		}
	fprintf(gp, "set xtics %.6g\n", step);
}

/* A panel's axes: labels, x and y ranges, the before -> after arrow. */
static void w_axes(FILE *gp, json_t *fig, json_t *p, size_t pi, size_t np, bool scatter)
{
	double xmax = jsonx_num(fig, "xmax");
	fprintf(gp, "unset arrow\nunset label\nunset logscale\nset autoscale\nset xlabel ");
	gp_str(gp, scatter ? js(p, "xlabel") : pi + 1 == np ? js(fig, "xlabel") : "");
	fprintf(gp, "\nset ylabel ");
	gp_str(gp, js(p, "ylabel"));
	fprintf(gp, "\n");
	if (!scatter && isfinite(xmax))
		fprintf(gp, "set xrange [0:%.6g]\n", xmax);
	if (scatter)
		x_tics(gp, p);
	double y0 = jsonx_num(p, "ymin"), y1 = jsonx_num(p, "ymax");
	if (isfinite(y0) && isfinite(y1))
		fprintf(gp, "set yrange [%.6g:%.6g]\n", y0, y1);
	else if (isfinite(y0))
		fprintf(gp, "set yrange [%.6g:*]\n", y0);
	else if (isfinite(y1))
		fprintf(gp, "set yrange [*:%.6g]\n", y1);
	else
		fprintf(gp, "set yrange [*:*]\n");
	json_t *a = json_object_get(p, "arrow");
	if (a && isfinite(jsonx_num(a, "x0")) && isfinite(jsonx_num(a, "y0")) && isfinite(jsonx_num(a, "x1")) &&
	    isfinite(jsonx_num(a, "y1")))
		fprintf(gp, "set arrow 1 from %.6g,%.6g to %.6g,%.6g head filled lw 1.5 lc rgb "
			    "\"#555555\" front\n",
			jsonx_num(a, "x0"), jsonx_num(a, "y0"), jsonx_num(a, "x1"), jsonx_num(a, "y1"));
}

/* A panel's runs: data blocks into d, plot clauses into gp. */
static void w_series(FILE *gp, FILE *d, json_t *p, size_t pi, bool scatter, int *idx, bool *drawn)
{
	size_t si;
	json_t *s;
	/* The baseline first, wider and dashed, under the candidate: where
	 * the two agree (an INT8 share of 0 in both) both stay in view. */
	for (int pass = 0; pass < 2; pass++)
	json_array_foreach(json_object_get(p, "series"), si, s)
	{
		bool base = !strcmp(js(s, "role"), "baseline");
		if (base != (pass == 0))
			continue;
		int ix = write_xy(d, json_object_get(s, "x"), json_object_get(s, "y"), idx);
		if (!has_point(s))
			continue;
		const char *st = js(s, "style");
		fprintf(gp, "%s\"fig.dat\" index %d u 1:2 ", *drawn ? ", " : "", ix);
		/* shapes as well as colours: colours repeat (an alternative's
		 * seed 1 took the candidate's blue); five shapes against the
		 * eight colours tell 40 runs apart */
		static const int pts[] = { 7, 5, 9, 11, 13 };
		if (!strcmp(st, "points") && scatter)
			fprintf(gp, "w p pt %d ps 1.6", pts[si % 5]);
		else if (!strcmp(st, "points"))
			fprintf(gp, "w p pt 7 ps 1.6");
		else if (!strcmp(st, "linespoints"))
			fprintf(gp, "w lp pt 7 ps 0.5 lw %s", base ? "2.6 dt 2" : "1.5");
		else
			fprintf(gp, "w l lw %s", base ? "2.6 dt 2" : "1.5");
		fprintf(gp, " lc rgb \"%s\" ", color(s));
		/* a label beside each point overlapped the next: the legend
		 * names them */
		if (scatter && pi > 0) {
			fprintf(gp, "notitle");
		} else {
			fprintf(gp, "t ");
			gp_str(gp, js(s, "label"));
		}
		*drawn = true;
	}
}

/* A panel's targets and limits: horizontal and vertical lines. */
static void w_lines(FILE *gp, FILE *d, json_t *p, int *idx, bool *drawn)
{
	size_t li;
	json_t *ln;
	json_array_foreach(json_object_get(p, "hlines"), li, ln)
	{
		fprintf(gp, "%s%.6g w l dt 3 lw 1.5 lc rgb \"%s\" t ", *drawn ? ", " : "", jsonx_num(ln, "y"),
			li % 2 ? "#000000" : "#555555");
		gp_str(gp, js(ln, "label"));
		*drawn = true;
	}
	json_array_foreach(json_object_get(p, "vlines"), li, ln)
	{
		double x = jsonx_num(ln, "x");
		fprintf(gp, "%s\"fig.dat\" index %d u (%.6g):(0):(0):(1) axes x1y2 w vectors "
			    "nohead dt 3 lw 1.5 lc rgb \"#000000\" t ",
			*drawn ? ", " : "", one_row(d, idx), x);
		gp_str(gp, js(ln, "label"));
		*drawn = true;
	}
}

/* The figure's events on every panel, a row per kind near the top (the
 * second axis, 0..1); named in the first panel's legend. */
static void w_events(FILE *gp, json_t *evs, int ev0, size_t pi, bool *drawn)
{
	size_t ne = json_array_size(evs);
	for (size_t e = 0; e < ne; e++) {
		json_t *ev = json_array_get(evs, e);
		static const char *const kinds[] = { "hardware clamp", "rollback", "safe point",
						     "gate change" };
		int k = 0;
		for (int q = 0; q < 4; q++)
			if (!strcmp(js(ev, "kind"), kinds[q]))
				k = q;
		static const int ptype[4] = { 9, 11, 5, 2 };
		double y = 0.97 - 0.06 * k - (strcmp(js(ev, "role"), "baseline") ? 0 : 0.03);
		fprintf(gp, "%s\"fig.dat\" index %d u 1:(%.3f) axes x1y2 w p pt %d ps 1.1 lc rgb \"%s\" ",
			*drawn ? ", " : "", ev0 + (int)e, y, ptype[k], color(ev));
		if (pi == 0) {
			fprintf(gp, "t ");
			gp_str(gp, js(ev, "label"));
		} else {
			fprintf(gp, "notitle");
		}
		*drawn = true;
	}
}

/* The figure's size: 14 px text at 1000 px, panels tall enough for their
 * legends (a scatter's below both, a time series' above each). */
static int w_size(json_t *fig, bool scatter, size_t *n_key, int *key_h)
{
	json_t *panels = json_object_get(fig, "panels"), *evs = json_object_get(fig, "events");
	size_t np = json_array_size(panels);
	int ph = scatter ? 400 : 220;
	/* A scatter's legend (a run a row, two columns) sits below both panels
	 * and takes its own height: it once squeezed the panels to a strip. */
	*n_key = scatter ? json_array_size(json_object_get(json_array_get(panels, 0), "series")) +
				   json_array_size(json_object_get(json_array_get(panels, 0), "vlines"))
			 : 0;
	*key_h = scatter ? (int)(*n_key + 1) / 2 * 22 + 16 : 0;
	/* A time series' legend above its panel wraps after about three
	 * entries: each further row gets its own height, not the data's. */
	size_t most = 0;
	for (size_t i = 0; !scatter && i < np; i++) {
		json_t *pp = json_array_get(panels, i);
		size_t e = json_array_size(json_object_get(pp, "series")) +
			   json_array_size(json_object_get(pp, "hlines")) +
			   json_array_size(json_object_get(pp, "vlines")) + json_array_size(evs);
		most = e > most ? e : most;
	}
	if (most > 3)
		ph += (int)((most - 1) / 3) * 22;
	return scatter ? ph + 40 + *key_h : (int)np * ph + 60;
}

/* One figure: a multiplot of its panels, stacked, on one x range for time
 * series, with fixed margins so the panels line up. */
static void w_figure(FILE *gp, FILE *d, json_t *fig, const char *out)
{
	json_t *panels = json_object_get(fig, "panels"), *evs = json_object_get(fig, "events");
	size_t np = json_array_size(panels);
	bool scatter = !strcmp(js(fig, "kind"), "scatter");
	size_t n_key;
	int key_h, width = 1000;
	/* 14 px at 1000 px: 14 px on screen, 10 px on an A4 page (about 720 px
	 * wide), where 11 px fell to 8 */
	int h = w_size(fig, scatter, &n_key, &key_h);
	fprintf(gp,
		"reset\nset terminal svg size %d,%d font \"sans,%d\" background rgb \"white\"\n",
		width, h, REPORT_PLOT_FONT_PX);
	fprintf(gp, "set output \"%s\"\nset encoding utf8\nset datafile missing \"NaN\"\n"
		    "set grid lc rgb \"#dddddd\"\nset key noenhanced\nset termoption noenhanced\n",
		out);
	if (scatter)
		fprintf(gp, "set multiplot layout 1,%zu title ", np);
	else
		fprintf(gp, "set multiplot layout %zu,1 title ", np);
	gp_str(gp, js(fig, "title"));
	fprintf(gp, "\n");
	if (!scatter)
		/* Fixed margins line the panels up; the offsets keep a line at the
		 * range's top or bottom (a constant limit) off the frame. The
		 * legend above each panel, not beside it: a right-hand legend
		 * took 30 % of the width from the data. */
		fprintf(gp, "set lmargin 11\nset rmargin 3\n"
			    "set key outside top right horizontal samplen 3 spacing 1 width 1\n"
			    "set offsets 0, 0, graph 0.08, graph 0.04\n");
	else
		fprintf(gp, "set tmargin at screen %.4f\nset bmargin at screen %.4f\n"
			    "set offsets graph 0.15, graph 0.15, graph 0.15, graph 0.15\n",
			1.0 - 40.0 / h, (key_h + 60.0) / h);
	int idx = 0;
	/* Event rows first, shared by every panel. */
	int ev0 = idx;
	size_t ne = json_array_size(evs);
	for (size_t e = 0; e < ne; e++)
		write_xy(d, json_object_get(json_array_get(evs, e), "x"), NULL, &idx);
	size_t pi;
	json_t *p;
	json_array_foreach(panels, pi, p)
	{
		if (scatter && pi == 0)
			fprintf(gp, "set key at screen 0.02, screen 0.01 left bottom vertical Left reverse maxrows %d "
				    "samplen 1 width 2\n",
				(int)(n_key + 1) / 2);
		else if (scatter)
			/* the runs are the first panel's legend; this one names its lines */
			fprintf(gp, "set key inside top left opaque box\n");
		w_axes(gp, fig, p, pi, np, scatter);
		/* Events on a second axis 0..1, one row per kind near the top. */
		fprintf(gp, "set y2range [0:1]\nunset y2tics\n");
		bool drawn = false;
		fprintf(gp, "plot ");
		w_series(gp, d, p, pi, scatter, &idx, &drawn);
		w_lines(gp, d, p, &idx, &drawn);
		if (!scatter)
			w_events(gp, evs, ev0, pi, &drawn);
		if (!drawn) /* nothing to draw: an empty frame that says so */
			fprintf(gp, "0 w l lc rgb \"#ffffff\" t 'no data'");
		fprintf(gp, "\n");
	}
	fprintf(gp, "unset multiplot\n");
}

void rp_make_plots(json_t *figs, struct rp_plots *out)
{
	memset(out, 0, sizeof(*out));
	char dir[] = "/tmp/govctl-report-XXXXXX";
	size_t n = json_array_size(figs);
	if (n > RP_MAX_PLOTS)
		n = RP_MAX_PLOTS;
	out->n = n;
	for (size_t i = 0; i < n; i++) {
		out->id[i] = js(json_array_get(figs, i), "id");
		out->title[i] = js(json_array_get(figs, i), "title");
	}
	char why[400] = "";
	if (!mkdtemp(dir)) {
		snprintf(why, sizeof(why), "mkdtemp: %s", strerror(errno));
		goto set_why;
	}
	/* One gnuplot run per figure: a figure gnuplot refuses costs that
	 * figure, not the others. */
	char path[600];
	for (size_t i = 0; i < n; i++) {
		char pwhy[400] = "";
		snprintf(path, sizeof(path), "%s/fig.gp", dir);
		FILE *gp = fopen(path, "w");
		snprintf(path, sizeof(path), "%s/fig.dat", dir);
		FILE *d = fopen(path, "w");
		if (!gp || !d) {
			snprintf(why, sizeof(why), "%.200s: %s", dir, strerror(errno));
			if (gp)
				fclose(gp);
			if (d)
				fclose(d);
			goto remove_dir;
		}
		w_figure(gp, d, json_array_get(figs, i), "fig.svg");
		bool bad = fclose(d) != 0;
		bad |= fclose(gp) != 0;
		if (bad) {
			snprintf(why, sizeof(why), "%.200s: %s", dir, strerror(errno));
			goto remove_dir;
		}
		int rc = run_gnuplot(dir, "fig.gp", pwhy, sizeof(pwhy));
		if (rc == -ENOENT) { /* no gnuplot: the same for every plot */
			snprintf(why, sizeof(why), "%s", pwhy);
			goto remove_dir;
		}
		snprintf(path, sizeof(path), "%s/fig.svg", dir);
		char *svg = rc ? NULL : slurp(path);
		if (svg)
			out->svg[i] = inline_svg(svg, (int)i);
		free(svg);
		unlink(path);
		if (!out->svg[i])
			out->why[i] = strdup(pwhy[0] ? pwhy : "plot not produced");
	}
remove_dir:
	/* Remove what we wrote: plain files, one level, then the directory. */
	{
		DIR *dd = opendir(dir);
		struct dirent *e;
		while (dd && (e = readdir(dd)))
			if (e->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
				unlink(path);
			}
		if (dd)
			closedir(dd);
		rmdir(dir);
	}
set_why:
	for (size_t i = 0; i < n; i++)
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
