/* Unit tests for hal/precision_act: the document, the atomic file writer
 * (content, generations, no temp files left), the exec hook (stdin, exit
 * status, timeout kills it) and reading an applied generation back. The
 * http actuator is tested against the test server (serving_http.sh). */
#include <errno.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hal/hal.h"
#include "hal/precision_act.h"

static const char *const NAMES[] = { "code", "chat" };

static char *mkdtemp_dir(void)
{
	char *d = strdup("/tmp/govd-pact-XXXXXX");
	assert_non_null(d);
	assert_non_null(mkdtemp(d));
	return d;
}

static void rm_rf(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[512];
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	if (d)
		closedir(d);
	return n;
}

static json_t *load(const char *path)
{
	json_error_t err;
	json_t *j = json_load_file(path, 0, &err);
	if (!j)
		print_error("%s: %s\n", path, err.text);
	return j;
}

static void check_doc(json_t *j, uint64_t gen, double code, double chat, uint64_t updated)
{
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "generation")), gen);
	assert_int_equal(json_integer_value(json_object_get(j, "updated_ms")), updated);
	json_t *s = json_object_get(j, "slices");
	assert_true(json_is_object(s));
	assert_int_equal(json_object_size(s), 2);
	assert_float_equal(json_number_value(json_object_get(s, "code")), code, 1e-12);
	assert_float_equal(json_number_value(json_object_get(s, "chat")), chat, 1e-12);
}

static void test_document(void **state)
{
	(void)state;
	const double frac[] = { 0.5, 0.25 };
	char *doc = pact_document(3, NAMES, frac, NULL, NULL, 2, 1700000000123);
	assert_non_null(doc);
	json_error_t err;
	json_t *j = json_loads(doc, 0, &err);
	check_doc(j, 3, 0.5, 0.25, 1700000000123);
	json_decref(j);
	free(doc);
	/* out of range and NaN shares are clamped to [0,1] (NaN -> 0: full precision) */
	const double bad[] = { NAN, 1.7 };
	doc = pact_document(1, NAMES, bad, NULL, NULL, 2, 5);
	j = json_loads(doc, 0, &err);
	check_doc(j, 1, 0.0, 1.0, 5);
	assert_null(json_object_get(j, "shadow_rate")); /* nothing asked: no key */
	json_decref(j);
	free(doc);
	/* shadow-rate asks: only the slices asked (> 0), clamped to 1 */
	const double ask[] = { 0.0, 0.25 }, over[] = { 1.5, 0.0 };
	doc = pact_document(2, NAMES, frac, NULL, ask, 2, 6);
	j = json_loads(doc, 0, &err);
	check_doc(j, 2, 0.5, 0.25, 6);
	json_t *sr = json_object_get(j, "shadow_rate");
	assert_int_equal(json_object_size(sr), 1);
	assert_float_equal(json_number_value(json_object_get(sr, NAMES[1])), 0.25, 1e-12);
	json_decref(j);
	free(doc);
	doc = pact_document(3, NAMES, frac, NULL, over, 2, 7);
	j = json_loads(doc, 0, &err);
	assert_float_equal(json_number_value(json_object_get(json_object_get(j, "shadow_rate"),
							     NAMES[0])),
			   1.0, 1e-12);
	assert_null(json_object_get(j, "low_mode")); /* no rung given: no key */
	json_decref(j);
	free(doc);
	/* the precision ladder's rung: only the slices at FP8 */
	const uint8_t int8_only[] = { HAL_LOW_INT8, HAL_LOW_INT8 }, rung[] = { HAL_LOW_INT8, HAL_LOW_FP8 };
	doc = pact_document(4, NAMES, frac, int8_only, NULL, 2, 8);
	j = json_loads(doc, 0, &err);
	assert_null(json_object_get(j, "low_mode"));
	json_decref(j);
	free(doc);
	doc = pact_document(5, NAMES, frac, rung, NULL, 2, 9);
	j = json_loads(doc, 0, &err);
	check_doc(j, 5, 0.5, 0.25, 9);
	json_t *lm = json_object_get(j, "low_mode");
	assert_int_equal(json_object_size(lm), 1);
	assert_string_equal(json_string_value(json_object_get(lm, NAMES[1])), "fp8");
	json_decref(j);
	free(doc);
}

static void test_parse_applied(void **state)
{
	(void)state;
	uint64_t g = 0;
	const char *a = "{\"generation\": 12, \"x\": 1}";
	assert_int_equal(pact_parse_applied(a, strlen(a), "generation", &g), 0);
	assert_int_equal(g, 12);
	const char *b = "{\"precision\": {\"generation\": 4}}";
	assert_int_equal(pact_parse_applied(b, strlen(b), "precision.generation", &g), 0);
	assert_int_equal(g, 4);
	assert_int_equal(pact_parse_applied(b, strlen(b), "generation", &g), -ENOENT);
	const char *c = "{\"generation\": \"4\"}";
	assert_int_equal(pact_parse_applied(c, strlen(c), "generation", &g), -EBADMSG);
	assert_int_equal(pact_parse_applied("{oops", 5, "generation", &g), -EBADMSG);
}

static void test_file_atomic_generations(void **state)
{
	(void)state;
	char *dir = mkdtemp_dir();
	char path[256];
	snprintf(path, sizeof(path), "%s/precision.json", dir);
	struct pact a;
	struct pact_cfg cfg = { .kind = PACT_FILE, .target = path };
	assert_int_equal(pact_init(&a, &cfg), 0);
	const double f1[] = { 0.5, 0.0 }, f2[] = { 0.75, 0.125 };
	assert_int_equal(pact_apply(&a, NAMES, f1, NULL, NULL, 2, 1000), 0);
	json_t *j = load(path);
	check_doc(j, 1, 0.5, 0.0, 1000);
	json_decref(j);
	assert_int_equal(pact_apply(&a, NAMES, f2, NULL, NULL, 2, 2000), 0);
	j = load(path);
	check_doc(j, 2, 0.75, 0.125, 2000);
	json_decref(j);
	/* only the target is left: the temp file was renamed, not copied */
	assert_int_equal(count_entries(dir), 1);
	pact_fini(&a);
	/* a new run continues the sequence found in the file */
	assert_int_equal(pact_init(&a, &cfg), 0);
	assert_int_equal(a.generation, 2);
	assert_int_equal(pact_apply(&a, NAMES, f1, NULL, NULL, 2, 3000), 0);
	j = load(path);
	check_doc(j, 3, 0.5, 0.0, 3000);
	json_decref(j);
	pact_fini(&a);
	/* a directory that does not exist: an error, generation still spent */
	char bad[300];
	snprintf(bad, sizeof(bad), "%s/missing/precision.json", dir);
	struct pact_cfg bcfg = { .kind = PACT_FILE, .target = bad };
	assert_int_equal(pact_init(&a, &bcfg), 0);
	assert_int_equal(pact_apply(&a, NAMES, f1, NULL, NULL, 2, 1), -ENOENT);
	assert_non_null(strstr(a.err, "missing"));
	assert_int_equal(a.generation, 1);
	pact_fini(&a);
	rm_rf(dir);
	free(dir);
}

static void test_exec_hook_receives_document(void **state)
{
	(void)state;
	char *dir = mkdtemp_dir();
	char cmd[512], out[300];
	snprintf(out, sizeof(out), "%s/got.json", dir);
	snprintf(cmd, sizeof(cmd), "cat > '%s'", out);
	struct pact a;
	struct pact_cfg cfg = { .kind = PACT_EXEC, .target = cmd, .timeout_ms = 10000 };
	assert_int_equal(pact_init(&a, &cfg), 0);
	const double f[] = { 0.25, 1.0 };
	assert_int_equal(pact_apply(&a, NAMES, f, NULL, NULL, 2, 42), 0);
	json_t *j = load(out);
	check_doc(j, 1, 0.25, 1.0, 42);
	json_decref(j);
	pact_fini(&a);

	/* exit status checked */
	struct pact_cfg fail = { .kind = PACT_EXEC, .target = "cat >/dev/null; exit 3", .timeout_ms = 10000 };
	assert_int_equal(pact_init(&a, &fail), 0);
	assert_int_equal(pact_apply(&a, NAMES, f, NULL, NULL, 2, 42), -EIO);
	assert_non_null(strstr(a.err, "status 3"));
	pact_fini(&a);
	/* a hook that never reads stdin and exits 0 is still a success */
	struct pact_cfg noread = { .kind = PACT_EXEC, .target = "exit 0", .timeout_ms = 10000 };
	assert_int_equal(pact_init(&a, &noread), 0);
	assert_int_equal(pact_apply(&a, NAMES, f, NULL, NULL, 2, 42), 0);
	pact_fini(&a);
	rm_rf(dir);
	free(dir);
}

/* The hook hangs: it is killed (with the processes it started) and the
 * apply returns -ETIMEDOUT. No timing is asserted, only the outcome. */
static void test_exec_timeout_kills(void **state)
{
	(void)state;
	char *dir = mkdtemp_dir();
	char cmd[512], pidf[300];
	snprintf(pidf, sizeof(pidf), "%s/pid", dir);
	/* the grandchild sleep is in the hook's process group */
	snprintf(cmd, sizeof(cmd), "sleep 60 & echo $! > '%s'; wait", pidf);
	struct pact a;
	struct pact_cfg cfg = { .kind = PACT_EXEC, .target = cmd, .timeout_ms = 1000 };
	assert_int_equal(pact_init(&a, &cfg), 0);
	const double f[] = { 0.5, 0.5 };
	assert_int_equal(pact_apply(&a, NAMES, f, NULL, NULL, 2, 1), -ETIMEDOUT);
	assert_non_null(strstr(a.err, "killed"));
	FILE *fp = fopen(pidf, "r");
	assert_non_null(fp);
	long pid = 0;
	assert_int_equal(fscanf(fp, "%ld", &pid), 1);
	fclose(fp);
	/* SIGKILL to the group: the sleep is gone or a zombie awaiting init */
	int alive = 0;
	for (int i = 0; i < 200; i++) {
		char st[64], buf[256] = "";
		snprintf(st, sizeof(st), "/proc/%ld/stat", pid);
		FILE *s = fopen(st, "r");
		if (!s) {
			alive = 0;
			break;
		}
		size_t n = fread(buf, 1, sizeof(buf) - 1, s);
		buf[n] = '\0';
		fclose(s);
		char *rp = strrchr(buf, ')');
		alive = !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
		if (!alive)
			break;
		usleep(10000);
	}
	assert_false(alive);
	pact_fini(&a);
	rm_rf(dir);
	free(dir);
}

static void test_kind_parse_and_none(void **state)
{
	(void)state;
	enum pact_kind k;
	assert_int_equal(pact_kind_parse("http", &k), 0);
	assert_int_equal(k, PACT_HTTP);
	assert_int_equal(pact_kind_parse("ftp", &k), -EINVAL);
	struct pact a;
	struct pact_cfg cfg = { .kind = PACT_NONE };
	assert_int_equal(pact_init(&a, &cfg), 0);
	const double f[] = { 0.5, 0.5 };
	assert_int_equal(pact_apply(&a, NAMES, f, NULL, NULL, 2, 1), -ENOTSUP);
	pact_fini(&a);
	struct pact_cfg nt = { .kind = PACT_FILE, .target = NULL };
	assert_int_equal(pact_init(&a, &nt), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_document),
		cmocka_unit_test(test_parse_applied),
		cmocka_unit_test(test_file_atomic_generations),
		cmocka_unit_test(test_exec_hook_receives_document),
		cmocka_unit_test(test_exec_timeout_kills),
		cmocka_unit_test(test_kind_parse_and_none),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
