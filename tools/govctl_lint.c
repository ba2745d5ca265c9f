/* govctl lint: checks policy files with the governor's own loader (the same
 * code govd and govctl sim use), so "lint passes" means "loads". Findings as
 * text (file:line:col: severity: path: message) or JSON for editors and CI.
 * Exit: 0 no errors (warnings allowed unless --strict), 1 any error, 2 usage. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "governor/controllers/controller.h"
#include "governor/policy/policy.h"
#include "tools/govctl.h"

static void lint_usage(FILE *f)
{
	fprintf(f, "usage: govctl lint [--format text|json] [--strict] FILE...\n"
		   "       govctl lint --controllers | --keys\n"
		   "  checks policy files; exit 0 valid, 1 any error (or warning with --strict),\n"
		   "  2 usage. --controllers prints the controller registry and its parameters\n"
		   "  (range, default: null when the controller derives it) as JSON (what\n"
		   "  control.controller and control.params accept). --keys prints every key of\n"
		   "  the policy language (type, unit, default, range, meaning) as JSON.\n");
}

static json_t *finding_json(const struct diag *d)
{
	json_t *o = json_object();
	json_object_set_new(o, "file", json_string(d->file));
	json_object_set_new(o, "line", json_integer(d->line));
	json_object_set_new(o, "col", json_integer(d->col));
	json_object_set_new(o, "severity", json_string(d->sev == DIAG_ERROR ? "error" : "warning"));
	json_object_set_new(o, "code", json_string(d->code));
	json_object_set_new(o, "path", json_string(d->path));
	json_object_set_new(o, "message", json_string(d->msg));
	return o;
}

static int print_controllers(void)
{
	json_t *root = json_object();
	for (size_t i = 0; i < controller_count(); i++) {
		const struct controller_ops *c = controller_at(i);
		json_t *params = json_object();
		for (const struct ctl_param *p = c->params; p && p->name; p++) {
			json_t *o = json_object();
			json_object_set_new(o, "min", json_real(p->min));
			json_object_set_new(o, "max", json_real(p->max));
			/* NaN: no fixed default, the controller derives one (doc says how). */
			json_object_set_new(o, "default", isnan(p->def) ? json_null() : json_real(p->def));
			json_object_set_new(o, "doc", json_string(p->doc ? p->doc : ""));
			json_object_set_new(params, p->name, o);
		}
		json_t *co = json_object();
		json_object_set_new(co, "description", json_string(c->description ? c->description : ""));
		json_object_set_new(co, "params", params);
		json_object_set_new(root, c->name, co);
	}
	json_dumpf(root, stdout, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(10));
	fputc('\n', stdout);
	json_decref(root);
	return GOVCTL_EXIT_OK;
}

static const char *const key_type_names[] = {
	[POLICY_KEY_NUMBER] = "number", [POLICY_KEY_UINT] = "integer",
	[POLICY_KEY_INT64] = "integer", [POLICY_KEY_BOOL] = "boolean",
	[POLICY_KEY_TEXT] = "string",   [POLICY_KEY_ENUM] = "enum", [POLICY_KEY_SET] = "set",
	[POLICY_KEY_LIST] = "list",     [POLICY_KEY_MAP] = "map",
	[POLICY_KEY_SLA_ROWS] = "number",
};

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* An enum's default as its name, a set's as the list of its names. */
static json_t *named_default(const struct policy_key *k)
{
	if (k->type == POLICY_KEY_ENUM)
		return json_string(k->names[(int)k->def]);
	json_t *a = json_array();
	for (size_t i = 0; k->names[i]; i++)
		if ((uint32_t)k->def & (1u << i))
			json_array_append_new(a, json_string(k->names[i]));
	return a;
}

static json_t *key_json(const struct policy_key *k, const char *path, double hi, const char *doc)
{
	bool named = k->type == POLICY_KEY_ENUM || k->type == POLICY_KEY_SET;
	bool scalar = k->type == POLICY_KEY_NUMBER || k->type == POLICY_KEY_UINT ||
		      k->type == POLICY_KEY_INT64 || k->type == POLICY_KEY_BOOL ||
		      k->type == POLICY_KEY_SLA_ROWS;
	json_t *o = json_object();
	json_object_set_new(o, "path", json_string(path));
	json_object_set_new(o, "type", json_string(key_type_names[k->type]));
	json_object_set_new(o, "unit", json_string(k->unit));
	json_t *def = json_null();
	if (k->type == POLICY_KEY_BOOL)
		def = json_boolean(k->def != 0);
	else if (named)
		def = named_default(k);
	else if (scalar)
		def = num_or_null(k->def);
	json_object_set_new(o, "default", def);
	json_object_set_new(o, "default_doc", k->def_doc ? json_string(k->def_doc) : json_null());
	json_t *values = json_null();
	if (named) {
		values = json_array();
		for (size_t i = 0; k->names[i]; i++)
			json_array_append_new(values, json_string(k->names[i]));
	}
	json_object_set_new(o, "values", values);
	bool ranged = scalar && k->type != POLICY_KEY_BOOL;
	json_object_set_new(o, "min", ranged ? json_real(k->lo) : json_null());
	json_object_set_new(o, "max", ranged ? json_real(hi) : json_null());
	json_object_set_new(o, "range_doc", k->range_doc ? json_string(k->range_doc) : json_null());
	json_object_set_new(o, "doc", doc ? json_string(doc) : json_null());
	return o;
}

/* The key table (governor/policy/policy_keys.c), sla's latency rows
 * expanded from common/sla.h: what tools/gen-policy-keys writes the
 * schema and docs/policy.md from. */
static int print_keys(void)
{
	json_t *root = json_array();
	for (size_t i = 0; i < policy_key_count(); i++) {
		const struct policy_key *k = policy_key_at(i);
		if (k->type != POLICY_KEY_SLA_ROWS) {
			json_array_append_new(root, key_json(k, k->path, k->hi, k->doc));
			continue;
		}
		for (size_t r = 0; r < SLA_N_ROWS; r++) {
			char path[64], doc[128];
			snprintf(path, sizeof(path), "sla.%s", sla_rows[r].key);
			snprintf(doc, sizeof(doc), "%s target", sla_rows[r].label);
			json_array_append_new(root, key_json(k, path, sla_rows[r].max_ms, doc));
		}
	}
	json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	fputc('\n', stdout);
	json_decref(root);
	return GOVCTL_EXIT_OK;
}

int govctl_lint(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "strict", no_argument, NULL, 's' },
		{ "controllers", no_argument, NULL, 'c' },
		{ "keys", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, strict = false, controllers = false, keys = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "json")) {
				json = true;
			} else if (strcmp(optarg, "text")) {
				fprintf(stderr, "govctl lint: --format wants text or json, got '%s'\n",
					optarg);
				lint_usage(stderr);
				return GOVCTL_EXIT_USAGE;
			}
			break;
		case 's':
			strict = true;
			break;
		case 'c':
			controllers = true;
			break;
		case 'k':
			keys = true;
			break;
		case 'h':
			lint_usage(stdout);
			return GOVCTL_EXIT_OK;
		default:
			lint_usage(stderr);
			return GOVCTL_EXIT_USAGE;
		}
	}
	if (controllers || keys) {
		if (optind < argc || (controllers && keys)) {
			fprintf(stderr, "govctl lint: --controllers and --keys take no files, one at a time\n");
			return GOVCTL_EXIT_USAGE;
		}
		return controllers ? print_controllers() : print_keys();
	}
	if (optind >= argc) {
		fprintf(stderr, "govctl lint: no files given\n");
		lint_usage(stderr);
		return GOVCTL_EXIT_USAGE;
	}

	struct diag_list d = { 0 };
	size_t files = 0, bad_files = 0;
	for (int i = optind; i < argc; i++) {
		struct policy *p = NULL;
		size_t before = diag_count(&d, DIAG_ERROR);
		policy_load(argv[i], &p, &d);
		policy_free(p);
		files++;
		bad_files += diag_count(&d, DIAG_ERROR) > before;
	}
	size_t errors = diag_count(&d, DIAG_ERROR), warnings = diag_count(&d, DIAG_WARNING);
	if (json) {
		json_t *root = json_object(), *arr = json_array();
		for (size_t i = 0; i < d.n; i++)
			json_array_append_new(arr, finding_json(&d.v[i]));
		json_object_set_new(root, "files", json_integer((json_int_t)files));
		json_object_set_new(root, "errors", json_integer((json_int_t)errors));
		json_object_set_new(root, "warnings", json_integer((json_int_t)warnings));
		json_object_set_new(root, "findings", arr);
		json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		fputc('\n', stdout);
		json_decref(root);
	} else {
		diag_print(&d, stdout);
		printf("%zu file%s checked: %zu with errors, %zu error%s, %zu warning%s\n", files,
		       files == 1 ? "" : "s", bad_files, errors, errors == 1 ? "" : "s", warnings,
		       warnings == 1 ? "" : "s");
	}
	diag_clear(&d);
	if (errors || (strict && warnings))
		return GOVCTL_EXIT_FAIL;
	return GOVCTL_EXIT_OK;
}
