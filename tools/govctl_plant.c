/* govctl plant: what the simulator believes, one row per locked clock or
 * power limit (plant_query_point(), docs/plant-models.md "The plant's
 * predictions"). Table, CSV (--csv) and a gnuplot SVG (--plot). The CSV
 * columns are an interface: scripts depend on them; add, never rename. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsafe.h"
#include "plant_models/plant_query.h"
#include "tools/govctl.h"

#define MAX_ROWS 512

static void plant_usage(FILE *f)
{
	fprintf(f,
		"usage: govctl plant --preset NAME --model NAME [--precision bf16|int8|fp8]\n"
		"                    --phase decode|prefill --batch N [--context N] [--prompt N]\n"
		"                    (--clocks all|MHZ,... | --power-limits W,...) [--csv]\n"
		"                    [--plot FILE.svg] [--stack NAME] [--inlet C]\n"
		"  Steady state of back-to-back steps as the simulator models them (simulated,\n"
		"  not measured): decode = one iteration of N sequences with --context tokens\n"
		"  each (default 1024); prefill = N prompts of --prompt tokens (default 2048) in\n"
		"  one pass, step_ms the whole prompt, tokens the prompt tokens. Fixed-cost\n"
		"  models (resnet50, bert-large): a batch of N requests. --clocks locks the\n"
		"  clock (the firmware may settle lower under the default power limit: clock_mhz);\n"
		"  --power-limits leaves it unlocked and reports the clock it settles at.\n"
		"  fp8 is the 8-bit engine (same as int8). Inlet air default 30 C.\n"
		"  CSV columns: clock_mhz,power_limit_w,phase,batch,step_ms,tokens_per_s,\n"
		"  power_accel_w,power_memory_w,power_host_w,power_w,j_per_token,lock_mhz,\n"
		"  context,prompt,precision,gpu_j_per_token,tj_c,capped\n");
}

static void list_names(const char *what, const char *bad, const char *const *names)
{
	fprintf(stderr, "govctl plant: unknown %s '%s'; known:", what, bad);
	for (size_t i = 0; names[i]; i++)
		fprintf(stderr, "%s %s", i ? "," : "", names[i]);
	fputc('\n', stderr);
}

/* "a,b,c" of positive numbers; false (with a message) on junk. */
static bool parse_list(const char *flag, const char *s, double *v, size_t cap, size_t *n)
{
	char buf[4096];
	if (strlen(s) >= sizeof(buf)) {
		fprintf(stderr, "govctl plant: %s: list too long\n", flag);
		return false;
	}
	strcpy(buf, s);
	*n = 0;
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (*n >= cap) {
			fprintf(stderr, "govctl plant: %s: more than %zu values\n", flag, cap);
			return false;
		}
		if (!govctl_parse_double(t, &v[*n]) || !(v[*n] > 0)) {
			fprintf(stderr, "govctl plant: %s: '%s' is not a positive number\n", flag, t);
			return false;
		}
		(*n)++;
	}
	if (*n == 0) {
		fprintf(stderr, "govctl plant: %s: empty list\n", flag);
		return false;
	}
	return true;
}

static bool parse_u32(const char *flag, const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v;
	if (!govctl_parse_u64(s, &v) || v < lo || v > hi) {
		fprintf(stderr, "govctl plant: %s: '%s' is not an integer in %u..%u\n", flag, s, lo,
			hi);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

struct row_ctx {
	const char *phase, *precision;
	uint32_t batch, context, prompt;
};

static void print_csv(const struct row_ctx *c, const struct plant_point *r, size_t n)
{
	printf("clock_mhz,power_limit_w,phase,batch,step_ms,tokens_per_s,power_accel_w,"
	       "power_memory_w,power_host_w,power_w,j_per_token,lock_mhz,context,prompt,precision,"
	       "gpu_j_per_token,tj_c,capped\n");
	for (size_t i = 0; i < n; i++)
		printf("%u,%.1f,%s,%u,%.4f,%.2f,%.2f,%.2f,%.2f,%.2f,%.6f,%u,%u,%u,%s,%.6f,%.2f,%d\n",
		       r[i].clock_mhz, r[i].power_limit_w, c->phase, c->batch, r[i].step_ms,
		       r[i].tokens_per_s, r[i].power_accel_w, r[i].power_memory_w, r[i].power_host_w,
		       r[i].power_w, r[i].j_per_token, r[i].lock_mhz, c->context, c->prompt,
		       c->precision, r[i].gpu_j_per_token, r[i].tj_c,
		       (r[i].throttle & (DEV_THR_POWER_CAP | DEV_THR_SW_THERMAL)) ? 1 : 0);
}

static void print_table(const struct plant_query *q, const struct row_ctx *c,
			const struct plant_point *r, size_t n)
{
	printf("# simulated: %s, %s %s, %s, batch %u", q->preset->name, q->model->name,
	       c->precision, c->phase, c->batch);
	if (q->model->kind == SERVER_LLM)
		printf(", %s %u tokens", q->prefill ? "prompt" : "context",
		       q->prefill ? c->prompt : c->context);
	printf(", inlet %.0f C\n", q->inlet_c);
	printf("%5s %5s %6s %9s %10s %7s %6s %6s %7s %8s %8s %5s\n", "lock", "clock", "limit",
	       "step_ms", "tokens/s", "accel_W", "mem_W", "host_W", "power_W", "J/token", "GPU_J/t",
	       "Tj_C");
	for (size_t i = 0; i < n; i++)
		printf("%5u %5u %6.0f %9.3f %10.1f %7.1f %6.1f %6.1f %7.1f %8.5f %8.5f %5.1f%s\n",
		       r[i].lock_mhz, r[i].clock_mhz, r[i].power_limit_w, r[i].step_ms,
		       r[i].tokens_per_s, r[i].power_accel_w, r[i].power_memory_w, r[i].power_host_w,
		       r[i].power_w, r[i].j_per_token, r[i].gpu_j_per_token, r[i].tj_c,
		       (r[i].throttle & DEV_THR_POWER_CAP) ? " capped" :
		       (r[i].throttle & DEV_THR_SW_THERMAL) ? " thermal" : "");
}

/* A string in a gnuplot script: single quotes (no escapes, no `command`
 * substitution there); a quote doubled, control characters as spaces. */
static void gp_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s, f);
	}
	fputc('\'', f);
}

#define PLOT_MAX_BYTES (16u << 20) /* an SVG of a few dozen points is ~20 KiB */

/* gnuplot reads the script (data inline as a datablock) on its stdin and
 * writes the SVG to its stdout; govctl writes the file itself (never
 * through a planted link or onto a device, every write checked), so a
 * failed write is an error, not gnuplot's silence. *err says what failed. */
static int write_plot(const char *path, const struct plant_query *q, const struct row_ctx *c,
		      const struct plant_point *r, size_t n, bool by_limit, char *err, size_t elen)
{
	int in[2], out[2];
	snprintf(err, elen, "gnuplot failed");
	if (pipe(in))
		return -errno;
	if (pipe(out)) {
		int e = errno;
		close(in[0]);
		close(in[1]);
		return -e;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		return -e;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		setenv("LC_ALL", "C", 1);
		execlp("gnuplot", "gnuplot", "-", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	FILE *gp = fdopen(in[1], "w");
	if (!gp) {
		close(in[1]);
		close(out[0]);
		waitpid(pid, NULL, 0);
		return -EIO;
	}
	fprintf(gp, "set terminal svg size 800,480 font 'sans,11' background rgb 'white'\n"
		    "set output\n");
	fprintf(gp, "set grid lc rgb '#dddddd'\nset key noenhanced top center\n"
		    "set title noenhanced\n");
	char title[512];
	snprintf(title, sizeof(title), "simulated: %s, %s %s, %s batch %u (plant model, not measured)",
		 q->preset->name, q->model->name, c->precision, c->phase, c->batch);
	fprintf(gp, "set title ");
	gp_quote(gp, title);
	fprintf(gp, "\nset xlabel '%s'\nset ylabel 'J per token'\nset y2label 'tokens/s'\n"
		    "set ytics nomirror\nset y2tics\n$d << EOD\n",
		by_limit ? "power limit (W)" : "locked clock (MHz)");
	for (size_t i = 0; i < n; i++)
		fprintf(gp, "%.3f %.6f %.6f %.3f\n",
			by_limit ? r[i].power_limit_w : (double)r[i].lock_mhz, r[i].j_per_token,
			r[i].gpu_j_per_token, r[i].tokens_per_s);
	fprintf(gp, "EOD\nplot $d using 1:2 with linespoints lc rgb '#1f77b4' title 'J/token, all rails', "
		    "$d using 1:3 with linespoints lc rgb '#2ca02c' title 'J/token, GPU (accel + HBM)', "
		    "$d using 1:4 axes x1y2 with lines lc rgb '#d62728' title 'tokens/s'\n");
	bool wr_err = ferror(gp) != 0;
	fclose(gp); /* the script is small: gnuplot has it all before it writes */
	char *svg = NULL;
	size_t len = 0, cap = 0;
	bool too_big = false;
	for (;;) {
		if (len == cap) {
			if (cap >= PLOT_MAX_BYTES) {
				too_big = true;
				break;
			}
			char *nb = realloc(svg, cap = cap ? 2 * cap : 65536);
			if (!nb) {
				too_big = true;
				break;
			}
			svg = nb;
		}
		ssize_t k = read(out[0], svg + len, cap - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(out[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	int rc = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		rc = -ENOENT;
	else if (wr_err || too_big || !WIFEXITED(st) || WEXITSTATUS(st) || len == 0)
		rc = -EIO;
	if (!rc) {
		struct fsafe_err fe;
		FILE *f = fsafe_fcreate(path, 0644, true, &fe);
		if (!f) {
			snprintf(err, elen, "%s: %s", path, fe.msg);
			rc = -EIO;
		} else {
			bool bad = fwrite(svg, 1, len, f) != len;
			bad |= fflush(f) != 0;
			int e = errno;
			bad |= fclose(f) != 0;
			if (bad) {
				snprintf(err, elen, "%s: write failed: %s", path, strerror(errno ? errno : e));
				rc = -EIO;
			}
		}
	}
	free(svg);
	return rc;
}

/* The names of the query (preset, model, stack, precision, phase) into
 * its tables; false with the valid names on stderr. */
static bool resolve_query(struct plant_query *q, const char *preset, const char *model,
			  const char *stack, const char *precision, const char *phase)
{
	q->preset = plant_preset_find(preset);
	if (!q->preset) {
		list_names("preset", preset, plant_preset_names());
		return false;
	}
	q->model = model_spec_find(model);
	if (!q->model) {
		list_names("model", model, model_spec_names());
		return false;
	}
	if (stack && !(q->stack = serving_stack_find(stack))) {
		list_names("stack", stack, serving_stack_names());
		return false;
	}
	if (!strcmp(precision, "bf16") || !strcmp(precision, "fp16")) {
		q->int8 = false;
	} else if (!strcmp(precision, "int8") || !strcmp(precision, "fp8")) {
		q->int8 = true;
	} else {
		fprintf(stderr, "govctl plant: --precision: '%s'; known: bf16, fp16, int8, fp8\n",
			precision);
		return false;
	}
	if (!strcmp(phase, "prefill")) {
		q->prefill = true;
	} else if (strcmp(phase, "decode")) {
		fprintf(stderr, "govctl plant: --phase: '%s'; known: decode, prefill\n", phase);
		return false;
	}
	return true;
}

int govctl_plant(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "preset", required_argument, NULL, 'P' },
		{ "model", required_argument, NULL, 'm' },
		{ "precision", required_argument, NULL, 'r' },
		{ "phase", required_argument, NULL, 'p' },
		{ "batch", required_argument, NULL, 'b' },
		{ "context", required_argument, NULL, 'c' },
		{ "prompt", required_argument, NULL, 'n' },
		{ "clocks", required_argument, NULL, 'k' },
		{ "power-limits", required_argument, NULL, 'l' },
		{ "csv", no_argument, NULL, 'C' },
		{ "plot", required_argument, NULL, 'o' },
		{ "stack", required_argument, NULL, 's' },
		{ "inlet", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *preset = NULL, *model = NULL, *precision = "bf16", *phase = NULL;
	const char *clocks = NULL, *limits = NULL, *plot = NULL, *stack = NULL;
	uint32_t batch = 0, context = 1024, prompt = 2048;
	bool csv = false, have_batch = false;
	double inlet = 30.0;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'P': preset = optarg; break;
		case 'm': model = optarg; break;
		case 'r': precision = optarg; break;
		case 'p': phase = optarg; break;
		case 'b':
			if (!parse_u32("--batch", optarg, 1, 65536, &batch))
				return GOVCTL_EXIT_USAGE;
			have_batch = true;
			break;
		case 'c':
			if (!parse_u32("--context", optarg, 0, 10000000, &context))
				return GOVCTL_EXIT_USAGE;
			break;
		case 'n':
			if (!parse_u32("--prompt", optarg, 1, 10000000, &prompt))
				return GOVCTL_EXIT_USAGE;
			break;
		case 'k': clocks = optarg; break;
		case 'l': limits = optarg; break;
		case 'C': csv = true; break;
		case 'o': plot = optarg; break;
		case 's': stack = optarg; break;
		case 'i':
			if (!govctl_parse_double(optarg, &inlet) || inlet < -20 || inlet > 60) {
				fprintf(stderr, "govctl plant: --inlet: '%s' is not in -20..60 C\n", optarg);
				return GOVCTL_EXIT_USAGE;
			}
			break;
		case 'h': plant_usage(stdout); return GOVCTL_EXIT_OK;
		default: plant_usage(stderr); return GOVCTL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "govctl plant: unexpected argument '%s'\n", argv[optind]);
		return GOVCTL_EXIT_USAGE;
	}
	if (!preset || !model || !phase || !have_batch || (!clocks == !limits)) {
		fprintf(stderr, "govctl plant: --preset, --model, --phase, --batch and exactly one "
				"of --clocks / --power-limits are required\n");
		plant_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}
	struct plant_query q = { .inlet_c = inlet, .batch = batch, .context = context,
				 .prompt = prompt };
	if (!resolve_query(&q, preset, model, stack, precision, phase))
		return GOVCTL_EXIT_USAGE;
	const struct dvfs_params *v = &q.preset->dvfs;
	const struct power_params *pw = &q.preset->power;
	double vals[MAX_ROWS];
	size_t n = 0;
	if (clocks && !strcmp(clocks, "all")) {
		for (uint32_t f = v->min_mhz; f <= v->max_mhz && n < MAX_ROWS; f += v->step_mhz)
			vals[n++] = f;
	} else if (!parse_list(clocks ? "--clocks" : "--power-limits", clocks ? clocks : limits,
			       vals, MAX_ROWS, &n)) {
		return GOVCTL_EXIT_USAGE;
	}
	static struct plant_point rows[MAX_ROWS];
	for (size_t i = 0; i < n; i++) {
		int rc;
		if (clocks) {
			if (vals[i] < v->min_mhz || vals[i] > v->max_mhz) {
				fprintf(stderr, "govctl plant: --clocks: %g MHz is outside %s's table "
						"%u..%u MHz\n", vals[i], q.preset->name, v->min_mhz,
					v->max_mhz);
				return GOVCTL_EXIT_USAGE;
			}
			rc = plant_query_point(&q, (uint32_t)vals[i], 0, &rows[i]);
		} else {
			if (vals[i] < pw->tgp_min_w || vals[i] > pw->tgp_max_w) {
				fprintf(stderr, "govctl plant: --power-limits: %g W is outside %s's "
						"range %.0f..%.0f W\n", vals[i], q.preset->name,
					pw->tgp_min_w, pw->tgp_max_w);
				return GOVCTL_EXIT_USAGE;
			}
			rc = plant_query_point(&q, 0, vals[i], &rows[i]);
		}
		if (rc == -ENOSPC) {
			fprintf(stderr, "govctl plant: %s weights and KV for %u x %u tokens need %.1f GB; "
					"%s has %.1f GB usable (90 %% of %.0f GB)\n",
				q.model->name, batch, q.prefill ? prompt : context,
				plant_query_hbm_need_b(&q) / 1e9, q.preset->name,
				q.preset->hbm_gb * 0.9, q.preset->hbm_gb);
			return GOVCTL_EXIT_USAGE;
		}
		if (rc < 0) {
			fprintf(stderr, "govctl plant: cannot evaluate this point (%s)\n", strerror(-rc));
			return GOVCTL_EXIT_FAIL;
		}
	}
	struct row_ctx rc = { .phase = phase, .precision = precision, .batch = batch,
			      .context = q.prefill ? 0 : context, .prompt = q.prefill ? prompt : 0 };
	if (csv)
		print_csv(&rc, rows, n);
	else
		print_table(&q, &rc, rows, n);
	if (plot) {
		char perr[400];
		int e = write_plot(plot, &q, &rc, rows, n, limits != NULL, perr, sizeof(perr));
		if (e == -ENOENT) {
			fprintf(stderr, "govctl plant: gnuplot not found (apt-get install gnuplot-nox)\n");
			return GOVCTL_EXIT_FAIL;
		}
		if (e < 0) {
			fprintf(stderr, "govctl plant: --plot: %s\n", perr);
			return GOVCTL_EXIT_FAIL;
		}
		if (!csv)
			printf("plot: %s\n", plot);
	}
	return GOVCTL_EXIT_OK;
}
